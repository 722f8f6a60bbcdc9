//! The `[plate]` and `[org]` settings as the org crate's parameter types.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ontoloop_org::OrgError;
use ontoloop_org::context::ContextSettings;
use ontoloop_org::filters::PlateSettings;
use ontoloop_org::items::{Scope, Severity};
use ontoloop_settings::{OrgSettings, PlateSection};

/// The plate's parameters from the `[plate]` section, validated; the error names the setting.
pub fn plate_settings(section: &PlateSection) -> Result<PlateSettings, OrgError> {
    let scopes = |name: &'static str, values: &[String]| -> Result<BTreeSet<Scope>, OrgError> {
        values.iter().map(|v| scope(name, v)).collect()
    };
    let severities =
        |name: &'static str, values: &[String]| -> Result<BTreeSet<Severity>, OrgError> {
            values.iter().map(|v| severity(name, v)).collect()
        };
    let settings = PlateSettings {
        scopes_by_role: section
            .scopes_by_role
            .iter()
            .map(|(role, list)| Ok((role.clone(), scopes("scopes_by_role", list)?)))
            .collect::<Result<BTreeMap<_, _>, OrgError>>()?,
        default_scopes: scopes("default_scopes", &section.default_scopes)?,
        report_severities: severities("report_severities", &section.report_severities)?,
        dependency_severities: severities("dependency_severities", &section.dependency_severities)?,
        temporal_scale_days: section.temporal_scale_days,
        authority: section.authority.clone(),
        unknown_source_authority: section.unknown_source_authority,
        min_authority: section.min_authority,
        severity_weights: section
            .severity_weights
            .iter()
            .map(|(name, weight)| Ok((severity("severity_weights", name)?, *weight)))
            .collect::<Result<BTreeMap<_, _>, OrgError>>()?,
        limit: section.limit,
    };
    settings.validate()?;
    Ok(settings)
}

/// Lifetimes of context graphs from the `[org]` section.
pub fn context_settings(org: &OrgSettings) -> ContextSettings {
    ContextSettings {
        ttl: Duration::from_secs(org.context_ttl_secs),
        idle: Duration::from_secs(org.context_idle_secs),
    }
}

fn scope(setting: &'static str, name: &str) -> Result<Scope, OrgError> {
    Scope::ALL
        .into_iter()
        .find(|s| s.as_str() == name)
        .ok_or_else(|| OrgError::InvalidSetting {
            name: setting,
            reason: format!("{name:?} is not a scope"),
        })
}

fn severity(setting: &'static str, name: &str) -> Result<Severity, OrgError> {
    Severity::ALL
        .into_iter()
        .find(|s| s.as_str() == name)
        .ok_or_else(|| OrgError::InvalidSetting {
            name: setting,
            reason: format!("{name:?} is not a severity"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_section_is_the_org_crates_default_plate() {
        let settings = ontoloop_settings::Loader::new()
            .env_vars([])
            .load()
            .expect("defaults load");
        let plate = plate_settings(&settings.plate).expect("defaults convert");
        assert_eq!(plate, PlateSettings::default());
        assert_eq!(
            ontoloop_settings::SCOPES.to_vec(),
            Scope::ALL.map(Scope::as_str).to_vec(),
            "the settings crate names every scope"
        );
        assert_eq!(
            ontoloop_settings::SEVERITIES.to_vec(),
            Severity::ALL.map(Severity::as_str).to_vec()
        );
        assert_eq!(context_settings(&settings.org), ContextSettings::default());
    }

    #[test]
    fn a_bad_name_is_refused_with_the_setting() {
        let mut section = ontoloop_settings::Loader::new()
            .env_vars([])
            .load()
            .expect("defaults load")
            .plate;
        section.default_scopes.push("gossip".into());
        let err = plate_settings(&section).expect_err("unknown scope");
        assert!(err.to_string().contains("default_scopes"), "{err}");
    }
}
