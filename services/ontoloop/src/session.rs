//! What every subcommand starts from: the settings (defaults, file, environment, then the
//! command's own flags), the caller it acts as, and the service clients, dialled on first use.

use std::future::Future;
use std::path::Path;

use anyhow::Context as _;
use ontoloop::client::{Bearer, Clients};
use ontoloop_auth::AuthMode;
use ontoloop_core::Caller;
use ontoloop_proto::v1;
use ontoloop_settings::{Loader, Settings};

/// Settings, caller and lazily connected clients of one command.
pub struct Session {
    /// Validated settings, flags applied.
    pub settings: Settings,
    caller: Option<Caller>,
    clients: Option<Clients>,
}

impl Session {
    /// Loads the settings: defaults, then `config` if given, then `ONTOLOOP__...` variables, then
    /// each `(key, value)` the command's flags set.
    pub fn load(config: Option<&Path>, overrides: &[(&str, Option<&str>)]) -> anyhow::Result<Self> {
        let settings = Loader::new()
            .file_if_given(config)
            .set_given(overrides)
            .load()
            .context("load settings")?;
        Ok(Self {
            settings,
            caller: None,
            clients: None,
        })
    }

    /// Acts as `spec` (`TENANT/PRINCIPAL`, the `--as` flag).
    pub fn acting_as(mut self, spec: &str) -> anyhow::Result<Self> {
        self.caller = Some(Caller::parse(spec)?);
        Ok(self)
    }

    /// The caller given with `--as`.
    pub fn caller(&self) -> anyhow::Result<&Caller> {
        self.caller
            .as_ref()
            .context("this command needs --as TENANT/PRINCIPAL")
    }

    /// The caller in its wire form, for a request.
    pub fn wire_caller(&self) -> anyhow::Result<Option<v1::Caller>> {
        Ok(Some(v1::Caller::from(self.caller()?)))
    }

    /// The clients of the services the settings name, dialled on first use.
    pub async fn clients(&mut self) -> anyhow::Result<&mut Clients> {
        let clients = match self.clients.take() {
            Some(clients) => clients,
            None => Clients::from_settings_with(&self.settings, self.bearer()?).await?,
        };
        Ok(self.clients.insert(clients))
    }

    /// What the clients send as their bearer: `$ONTOLOOP_TOKEN` when set; else, unless
    /// `auth.mode = "jwt"`, a short-lived token for the `--as` caller signed with the secret of
    /// an `ontoloop up` in dev mode (`auth.dev_secret_file`) when there is one; else nothing.
    fn bearer(&self) -> anyhow::Result<Bearer> {
        let from_env = Bearer::from_env()?;
        if from_env.is_set() || self.settings.auth.mode == AuthMode::Jwt {
            return Ok(from_env);
        }
        let Some(caller) = &self.caller else {
            return Ok(from_env);
        };
        match crate::dev_auth::command_token(&self.settings.auth, caller)? {
            Some(token) => Bearer::new(&token),
            None => Ok(from_env),
        }
    }

    /// Calls a service with the clients (dialled on first use): `call` gets its own copy of
    /// them; a failed call becomes an error naming `what` was asked.
    pub async fn call<T, F, Fut>(&mut self, what: &str, call: F) -> anyhow::Result<T>
    where
        F: FnOnce(Clients) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let clients = self.clients().await?.clone();
        let response = call(clients).await.map_err(rpc(what))?;
        Ok(response.into_inner())
    }
}

/// Turns a failed call into an error naming what was asked (with where a token comes from,
/// when the call had none that verified).
pub fn rpc(what: &str) -> impl FnOnce(tonic::Status) -> anyhow::Error + '_ {
    move |status| {
        let hint = if status.code() == tonic::Code::Unauthenticated {
            " (set ONTOLOOP_TOKEN, e.g. from `ontoloop token issue`; with `make run`, run the \
             command where the CLI finds auth.dev_secret_file)"
        } else {
            ""
        };
        anyhow::anyhow!("{what}: {}: {}{hint}", status.code(), status.message())
    }
}
