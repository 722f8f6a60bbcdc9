//! The layers: the embedded `defaults.toml`, then an optional file, then
//! `ONTOLOOP__SECTION__KEY` environment variables, then overrides; validated once.

use std::path::Path;

use crate::{Settings, SettingsError};

const DEFAULTS: &str = include_str!("defaults.toml");
const ENV_PREFIX: &str = "ONTOLOOP";
const ENV_SEPARATOR: &str = "__";

/// Builder for the layers; the environment is passed in so tests need not touch the process's.
#[derive(Debug, Default)]
pub struct Loader {
    file: Option<std::path::PathBuf>,
    env: Option<Vec<(String, String)>>,
    overrides: Vec<(String, String)>,
}

impl Loader {
    /// Starts from the embedded defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a settings file (TOML) above the defaults.
    pub fn file(mut self, path: impl AsRef<Path>) -> Self {
        self.file = Some(path.as_ref().to_path_buf());
        self
    }

    /// Adds the settings file a command was given, if any (`file`).
    pub fn file_if_given(self, path: Option<&Path>) -> Self {
        match path {
            Some(path) => self.file(path),
            None => self,
        }
    }

    /// Uses these variables instead of the process environment.
    pub fn env_vars(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Self {
        self.env = Some(vars.into_iter().collect());
        self
    }

    /// Sets one dotted key above every other layer (command-line flags use this).
    pub fn set(mut self, key: &str, value: impl Into<String>) -> Self {
        self.overrides.push((key.to_owned(), value.into()));
        self
    }

    /// Sets each key whose value is given (a command's optional flags), as [`set`](Self::set).
    pub fn set_given(self, pairs: &[(&str, Option<&str>)]) -> Self {
        pairs.iter().fold(self, |loader, (key, value)| match value {
            Some(value) => loader.set(key, *value),
            None => loader,
        })
    }

    /// Loads and validates.
    pub fn load(self) -> Result<Settings, SettingsError> {
        let mut builder = config::Config::builder()
            .add_source(config::File::from_str(DEFAULTS, config::FileFormat::Toml));
        if let Some(file) = &self.file {
            builder = builder.add_source(config::File::from(file.as_path()).required(true));
        }
        let mut env = config::Environment::with_prefix(ENV_PREFIX)
            .prefix_separator(ENV_SEPARATOR)
            .separator(ENV_SEPARATOR)
            .try_parsing(true)
            // Lists come comma-separated: ONTOLOOP__SERVICES__HTTP_PORTS=9151,9152,9153,8484.
            .list_separator(",")
            .with_list_parse_key("services.http_ports")
            .with_list_parse_key("supervisor.critical_domains")
            .with_list_parse_key("firewall.high_risk_domains")
            .with_list_parse_key("firewall.multi_valued_predicates")
            .with_list_parse_key("plate.default_scopes")
            .with_list_parse_key("plate.report_severities")
            .with_list_parse_key("plate.dependency_severities")
            .with_list_parse_key("extract.stages")
            .with_list_parse_key("auth.dashboard_origins");
        if let Some(vars) = self.env {
            env = env.source(Some(vars.into_iter().collect()));
        }
        builder = builder.add_source(env);
        for (key, value) in self.overrides {
            builder = builder.set_override(key, value)?;
        }
        let settings: Settings = builder.build()?.try_deserialize()?;
        settings.validate()?;
        Ok(settings)
    }
}
