//! Loading the defaults, the layers over them, and every refusal naming its key.

use std::collections::BTreeSet;

use ontoloop_core::Severity;
use ontoloop_org::Scope;

use super::*;

fn load_with(vars: &[(&str, &str)]) -> Result<Settings, SettingsError> {
    Loader::new()
        .env_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
        .load()
}

/// The key settings loaded with `vars` are refused for, as the error names it.
fn refused_key(vars: &[(&str, &str)]) -> String {
    match load_with(vars) {
        Err(SettingsError::Invalid { key, .. }) => key,
        other => panic!("refused for an invalid key: {other:?}"),
    }
}

#[test]
fn otlp_is_off_by_default_and_refusals_name_their_key() {
    let settings = load_with(&[]).expect("defaults are valid");
    assert!(!settings.telemetry.otlp.enabled());
    let on = load_with(&[(
        "ONTOLOOP__TELEMETRY__OTLP__ENDPOINT",
        "http://127.0.0.1:4317",
    )])
    .expect("an http endpoint is valid");
    assert!(on.telemetry.otlp.enabled());
    for (key, value, named) in [
        (
            "ONTOLOOP__TELEMETRY__OTLP__ENDPOINT",
            "127.0.0.1:4317",
            "telemetry.otlp.endpoint",
        ),
        (
            "ONTOLOOP__TELEMETRY__OTLP__ENDPOINT",
            "https://collector:4317",
            "telemetry.otlp.endpoint",
        ),
        (
            "ONTOLOOP__TELEMETRY__OTLP__ENDPOINT",
            "http://",
            "telemetry.otlp.endpoint",
        ),
        (
            "ONTOLOOP__TELEMETRY__OTLP__SAMPLING_RATIO",
            "1.5",
            "telemetry.otlp.sampling_ratio",
        ),
        (
            "ONTOLOOP__TELEMETRY__OTLP__EXPORT_TIMEOUT_MS",
            "0",
            "telemetry.otlp.export_timeout_ms",
        ),
        (
            "ONTOLOOP__TELEMETRY__OTLP__MAX_QUEUE_SIZE",
            "0",
            "telemetry.otlp.max_queue_size",
        ),
    ] {
        let err = load_with(&[(key, value)]).expect_err(value).to_string();
        assert!(err.contains(named), "{key}={value}: {err}");
    }
}

#[test]
fn defaults_load() {
    let settings = load_with(&[]).expect("defaults are valid");
    assert!(settings.store.url.starts_with("sqlite://"));
    assert_eq!(settings.queue.backend(), QueueBackend::Memory);
    assert_eq!(settings.services.port_of("analyst"), Some(50054));
    assert_eq!(
        Settings::defaults().services.port_of("analyst"),
        Some(50054)
    );
    // Core reads its `[extract]` defaults from this same file (it cannot depend on this crate).
    assert_eq!(
        settings.extract,
        ontoloop_core::knowledge::ExtractSettings::default()
    );
}

#[test]
fn limits_load_and_refusals_name_their_key() {
    let settings = load_with(&[]).expect("defaults are valid");
    assert_eq!(
        settings.services.max_message_bytes,
        MAX_MESSAGE_BYTES_CEILING
    );
    assert_eq!(settings.firewall.max_claims, 1000);
    for (var, value, key) in [
        (
            "ONTOLOOP__SERVICES__MAX_MESSAGE_BYTES",
            "4194305",
            "services.max_message_bytes",
        ),
        (
            "ONTOLOOP__SERVICES__REQUEST_TIMEOUT_MS",
            "0",
            "services.request_timeout_ms",
        ),
        (
            "ONTOLOOP__SERVICES__MAX_CONCURRENT_REQUESTS",
            "0",
            "services.max_concurrent_requests",
        ),
        (
            "ONTOLOOP__SERVICES__MAX_HTTP_BODY_BYTES",
            "0",
            "services.max_http_body_bytes",
        ),
        (
            "ONTOLOOP__SERVICES__MAX_STREAM_MESSAGES",
            "0",
            "services.max_stream_messages",
        ),
        ("ONTOLOOP__FIREWALL__MAX_CLAIMS", "0", "firewall.max_claims"),
    ] {
        let err = load_with(&[(var, value)]).expect_err("invalid");
        assert!(err.to_string().contains(key), "{err} should name {key}");
    }
}

#[test]
fn environment_overrides_defaults() {
    let settings = load_with(&[
        (
            "ONTOLOOP__STORE__URL",
            "postgres://postgres@127.0.0.1:5432/ontoloop",
        ),
        (
            "ONTOLOOP__QUEUE__URL",
            "amqp://guest:guest@127.0.0.1:5672/%2f",
        ),
        ("ONTOLOOP__SERVICES__RETRIEVAL_PORT", "6000"),
    ])
    .expect("valid overrides");
    assert!(settings.store.url.starts_with("postgres://"));
    assert!(matches!(settings.queue.backend(), QueueBackend::Amqp(_)));
    assert_eq!(settings.services.retrieval_port, 6000);
}

#[test]
fn unknown_key_is_named() {
    let err = load_with(&[("ONTOLOOP__STORE__URLL", "sqlite://x.db")]).expect_err("unknown key");
    let text = err.to_string();
    assert!(text.contains("urll"), "error should name the key: {text}");
}

#[test]
fn unknown_section_is_named() {
    let err = load_with(&[("ONTOLOOP__CACHE__SIZE", "3")]).expect_err("unknown section");
    assert!(err.to_string().contains("cache"), "{err}");
}

#[test]
fn bad_store_url_is_named() {
    assert_eq!(
        refused_key(&[("ONTOLOOP__STORE__URL", "mysql://db")]),
        "store.url",
        "bad scheme"
    );
    let err = load_with(&[("ONTOLOOP__STORE__URL", "not a url")]).expect_err("not a url");
    assert!(err.to_string().contains("store.url"), "{err}");
}

#[test]
fn bad_queue_url_is_named() {
    assert_eq!(
        refused_key(&[("ONTOLOOP__QUEUE__URL", "http://rabbit")]),
        "queue.url",
        "bad scheme"
    );
}

#[test]
fn a_password_in_a_bad_url_stays_out_of_the_error() {
    let err =
        load_with(&[("ONTOLOOP__STORE__URL", "mysql://app:hunter2@db/x")]).expect_err("bad scheme");
    assert!(!err.to_string().contains("hunter2"), "{err}");
    let err = load_with(&[("ONTOLOOP__STORE__URL", "postgres://app@/x?password=hunter2")])
        .expect_err("no host");
    assert!(!err.to_string().contains("hunter2"), "{err}");
    let err =
        load_with(&[("ONTOLOOP__QUEUE__URL", "amqps://app:hunter2@/%2f")]).expect_err("no host");
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

#[test]
fn queue_tls_files_go_with_amqps_and_errors_name_the_key() {
    let amqps = (
        "ONTOLOOP__QUEUE__URL",
        "amqps://guest:guest@rabbit:5671/%2f",
    );
    // The variables set, and the key refused (None: the settings load).
    type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>);
    let cases: [Case; 6] = [
        (&[amqps], Some("queue.tls_ca_file")),
        (&[amqps, ("ONTOLOOP__QUEUE__TLS_CA_FILE", "ca.pem")], None),
        (
            &[
                amqps,
                ("ONTOLOOP__QUEUE__TLS_CA_FILE", "ca.pem"),
                ("ONTOLOOP__QUEUE__TLS_CLIENT_CERT_FILE", "client.pem"),
            ],
            Some("queue.tls_client_key_file"),
        ),
        (
            &[
                amqps,
                ("ONTOLOOP__QUEUE__TLS_CA_FILE", "ca.pem"),
                ("ONTOLOOP__QUEUE__TLS_CLIENT_KEY_FILE", "client.key"),
            ],
            Some("queue.tls_client_cert_file"),
        ),
        (
            &[
                amqps,
                ("ONTOLOOP__QUEUE__TLS_CA_FILE", "ca.pem"),
                ("ONTOLOOP__QUEUE__TLS_CLIENT_CERT_FILE", "client.pem"),
                ("ONTOLOOP__QUEUE__TLS_CLIENT_KEY_FILE", "client.key"),
            ],
            None,
        ),
        (
            &[
                ("ONTOLOOP__QUEUE__URL", "amqp://guest:guest@rabbit:5672/%2f"),
                ("ONTOLOOP__QUEUE__TLS_CA_FILE", "ca.pem"),
            ],
            Some("queue.tls_ca_file"),
        ),
    ];
    for (vars, refused) in cases {
        match (load_with(vars), refused) {
            (Ok(_), None) => {}
            (Err(SettingsError::Invalid { key, .. }), Some(expected)) => {
                assert_eq!(key, expected, "{vars:?}");
            }
            (other, _) => panic!("{vars:?}: {other:?}"),
        }
    }
}

#[test]
fn mistyped_value_is_named() {
    let err = load_with(&[("ONTOLOOP__QUEUE__PREFETCH", "many")]).expect_err("not a number");
    assert!(err.to_string().contains("prefetch"), "{err}");
}

#[test]
fn retention_defaults_load_and_errors_name_the_key() {
    let settings = load_with(&[]).expect("defaults are valid");
    let retention = &settings.retention;
    assert_eq!(retention.every(), std::time::Duration::from_secs(3600));
    assert_eq!(
        RetentionSettings::keep(retention.inbox_days),
        Some(std::time::Duration::from_secs(7 * 86_400))
    );
    assert_eq!(RetentionSettings::keep(0), None, "0 days keeps forever");
    let forever = load_with(&[("ONTOLOOP__RETENTION__SIGNAL_INTAKE_DAYS", "0")])
        .expect("0 keeps signals forever");
    assert_eq!(forever.retention.signal_intake_days, 0);
    for (vars, key) in [
        (
            &[("ONTOLOOP__RETENTION__EVERY_MINUTES", "0")][..],
            "retention.every_minutes",
        ),
        (
            &[("ONTOLOOP__RETENTION__MAX_ROWS_PER_PASS", "0")][..],
            "retention.max_rows_per_pass",
        ),
        (
            &[
                ("ONTOLOOP__RETENTION__SIGNAL_INTAKE_DAYS", "1"),
                ("ONTOLOOP__SIGNALS__WINDOW_SECS", "172800"),
            ][..],
            "retention.signal_intake_days",
        ),
    ] {
        match load_with(vars) {
            Err(SettingsError::Invalid { key: named, .. }) => assert_eq!(named, key),
            other => panic!("{vars:?}: expected {key} refused, got {other:?}"),
        }
    }
}

#[test]
fn org_and_plate_defaults_load_and_errors_name_the_key() {
    let settings = load_with(&[]).expect("defaults are valid");
    assert_eq!(settings.org.safety_ttl_secs, 86_400);
    assert_eq!(settings.org.context_ttl_secs, 30 * 86_400);
    assert_eq!(settings.org.context_idle_secs, 7 * 86_400);
    assert_eq!(settings.plate.min_authority, 0.7);
    assert_eq!(settings.plate.temporal_scale_days, 30.0);
    assert_eq!(
        settings.plate.scopes_by_role["sre"],
        BTreeSet::from([Scope::Code, Scope::Bugs, Scope::Production, Scope::Critical])
    );
    let overridden = load_with(&[
        ("ONTOLOOP__PLATE__MIN_AUTHORITY", "0.5"),
        ("ONTOLOOP__PLATE__DEFAULT_SCOPES", "code,bugs"),
    ])
    .expect("valid overrides");
    assert_eq!(overridden.plate.min_authority, 0.5);
    assert_eq!(
        overridden.plate.default_scopes,
        BTreeSet::from([Scope::Code, Scope::Bugs])
    );
    for (var, value, key) in [
        (
            "ONTOLOOP__PLATE__DEFAULT_SCOPES",
            "code,gossip",
            "plate.default_scopes",
        ),
        (
            "ONTOLOOP__PLATE__TEMPORAL_SCALE_DAYS",
            "0",
            "plate.temporal_scale_days",
        ),
        (
            "ONTOLOOP__ORG__COVERAGE_THRESHOLD",
            "1.5",
            "org.coverage_threshold",
        ),
        (
            "ONTOLOOP__ORG__WATCH_INTERVAL_MS",
            "0",
            "org.watch_interval_ms",
        ),
    ] {
        let err = load_with(&[(var, value)]).expect_err("invalid");
        assert!(err.to_string().contains(key), "{err} should name {key}");
    }
}

#[test]
fn a_mistyped_analyst_severity_fails_at_load() {
    // It used to fall back to critical in the healer; now the typo stops start-up.
    for (var, key) in [
        ("ONTOLOOP__ANALYST__HEAL_AT", "analyst.heal_at"),
        ("ONTOLOOP__ANALYST__PROPOSE_AT", "analyst.propose_at"),
    ] {
        let err = load_with(&[(var, "critcal")]).expect_err("not a severity");
        let text = err.to_string();
        assert!(text.contains(key), "{text} should name {key}");
        assert!(text.contains("critcal"), "{text} should quote the value");
    }
    let settings = load_with(&[("ONTOLOOP__ANALYST__HEAL_AT", "high")]).expect("valid");
    assert_eq!(settings.analyst.heal_at, Severity::High);
}

#[test]
fn extraction_stages_come_from_the_environment_and_a_typo_names_the_key() {
    use ontoloop_core::knowledge::Stage;
    let settings = load_with(&[]).expect("defaults are valid");
    assert_eq!(
        settings.extract.stages,
        vec![Stage::Structured, Stage::Patterns, Stage::Semantic]
    );
    let settings = load_with(&[("ONTOLOOP__EXTRACT__STAGES", "patterns,semantic")]).expect("valid");
    assert_eq!(
        settings.extract.stages,
        vec![Stage::Patterns, Stage::Semantic]
    );
    let err =
        load_with(&[("ONTOLOOP__EXTRACT__STAGES", "patterns,semantc")]).expect_err("not a stage");
    assert!(err.to_string().contains("extract.stages"), "{err}");
    let err = load_with(&[("ONTOLOOP__EXTRACT__STAGES", "patterns,patterns")]).expect_err("twice");
    assert!(err.to_string().contains("extract.stages"), "{err}");
}

#[test]
fn dashboard_origins_come_from_the_environment_and_a_path_names_the_key() {
    let settings = load_with(&[]).expect("defaults are valid");
    assert!(settings.auth.dashboard_origins.is_empty());
    let settings = load_with(&[(
        "ONTOLOOP__AUTH__DASHBOARD_ORIGINS",
        "https://review.example.com,http://10.0.0.5:8484",
    )])
    .expect("valid");
    assert_eq!(
        settings.auth.dashboard_origins,
        vec!["https://review.example.com", "http://10.0.0.5:8484"]
    );
    let err = load_with(&[(
        "ONTOLOOP__AUTH__DASHBOARD_ORIGINS",
        "https://review.example.com/queue",
    )])
    .expect_err("a path");
    assert!(err.to_string().contains("auth.dashboard_origins"), "{err}");
}

#[test]
fn domain_sections_load_and_errors_name_the_key() {
    let settings = load_with(&[]).expect("defaults are valid");
    assert_eq!(settings.analyst.heal_at, Severity::Critical);
    assert_eq!(settings.analyst.propose_at, Severity::Medium);
    assert_eq!(settings.signals.window_secs, 3600);
    assert_eq!(settings.supervisor.base_rate, 0.05);
    assert_eq!(settings.firewall.min_independent_sources, 2);
    assert!(!settings.firewall.llm.enabled);
    assert_eq!(
        settings.plate.report_severities,
        BTreeSet::from([Severity::Critical, Severity::High])
    );
    for (var, value, key) in [
        (
            "ONTOLOOP__PLATE__REPORT_SEVERITIES",
            "critical,hihg",
            "plate.report_severities",
        ),
        ("ONTOLOOP__SIGNALS__WINDOW_SECS", "0", "signals.window_secs"),
        (
            "ONTOLOOP__SUPERVISOR__BASE_RATE",
            "1.5",
            "supervisor.base_rate",
        ),
        (
            "ONTOLOOP__SUPERVISOR__REJECT_FACTOR",
            "0.5",
            "supervisor.reject_factor",
        ),
        (
            "ONTOLOOP__FIREWALL__CONFIDENCE_HIGH_RISK",
            "2",
            "firewall.confidence_high_risk",
        ),
        (
            "ONTOLOOP__FIREWALL__MAX_TEXT_BYTES",
            "0",
            "firewall.max_text_bytes",
        ),
        ("ONTOLOOP__PLATE__LIMIT", "0", "plate.limit"),
    ] {
        let err = load_with(&[(var, value)]).expect_err("invalid");
        assert!(err.to_string().contains(key), "{err} should name {key}");
    }
    assert_eq!(
        refused_key(&[
            ("ONTOLOOP__FIREWALL__LLM__ENABLED", "true"),
            ("ONTOLOOP__FIREWALL__LLM__BASE_URL", "https://model"),
        ]),
        "firewall.llm.base_url",
        "not http"
    );
}

#[test]
fn tls_is_off_by_default_and_its_halves_come_in_pairs() {
    let settings = load_with(&[]).expect("defaults are valid");
    assert!(!settings.tls.serves_tls());
    assert!(!settings.tls.dials_tls());
    let invalid_key = |vars: &[(&str, &str)]| match load_with(vars) {
        Err(SettingsError::Invalid { key, .. }) => key,
        other => panic!("expected an invalid setting, got {other:?}"),
    };
    assert_eq!(
        invalid_key(&[("ONTOLOOP__TLS__CERT_FILE", "server.pem")]),
        "tls.key_file"
    );
    assert_eq!(
        invalid_key(&[("ONTOLOOP__TLS__KEY_FILE", "server.key")]),
        "tls.cert_file"
    );
    assert_eq!(
        invalid_key(&[("ONTOLOOP__TLS__CLIENT_CA_FILE", "ca.pem")]),
        "tls.client_ca_file"
    );
    assert_eq!(
        invalid_key(&[
            ("ONTOLOOP__TLS__CA_FILE", "ca.pem"),
            ("ONTOLOOP__TLS__CLIENT_CERT_FILE", "client.pem"),
        ]),
        "tls.client_key_file"
    );
    assert_eq!(
        invalid_key(&[("ONTOLOOP__TLS__DOMAIN", "localhost")]),
        "tls.domain"
    );
    let settings = load_with(&[
        ("ONTOLOOP__TLS__CERT_FILE", "server.pem"),
        ("ONTOLOOP__TLS__KEY_FILE", "server.key"),
        ("ONTOLOOP__TLS__CLIENT_CA_FILE", "ca.pem"),
    ])
    .expect("a server with mTLS");
    assert!(settings.tls.serves_tls());
    assert!(settings.tls.dials_tls());
}

#[test]
fn auth_is_off_by_default_and_jwt_needs_its_keys() {
    let settings = load_with(&[]).expect("defaults are valid");
    assert_eq!(settings.auth.mode, ontoloop_auth::AuthMode::Off);
    assert_eq!(settings.auth.claims.principal, "sub");
    assert_eq!(
        refused_key(&[("ONTOLOOP__AUTH__MODE", "jwt")]),
        "auth.issuer",
        "no issuer"
    );
    let settings = load_with(&[
        ("ONTOLOOP__AUTH__MODE", "jwt"),
        ("ONTOLOOP__AUTH__ISSUER", "https://issuer.test"),
        ("ONTOLOOP__AUTH__AUDIENCE", "ontoloop"),
        (
            "ONTOLOOP__AUTH__HS256_SECRET",
            "0123456789abcdef0123456789abcdef",
        ),
    ])
    .expect("valid jwt section");
    assert_eq!(settings.auth.mode, ontoloop_auth::AuthMode::Jwt);
    let err = load_with(&[("ONTOLOOP__AUTH__MODE", "open")]).expect_err("not a mode");
    assert!(err.to_string().contains("mode"), "{err}");
}

#[test]
fn clashing_ports_are_refused() {
    assert_eq!(
        refused_key(&[("ONTOLOOP__SERVICES__FIREWALL_PORT", "50051")]),
        "services.firewall_port",
        "clash"
    );
}

#[test]
fn debug_of_the_settings_shows_no_password_or_secret() {
    let settings = load_with(&[
        (
            "ONTOLOOP__STORE__URL",
            "postgres://app:storepw1@db:5432/x?sslmode=disable&password=storepw2",
        ),
        ("ONTOLOOP__QUEUE__URL", "amqp://guest:queuepw3@mq:5672/%2f"),
        (
            "ONTOLOOP__AUTH__HS256_SECRET",
            "hs256-secret-0123456789abcdef0123456789",
        ),
        ("ONTOLOOP__FIREWALL__LLM__API_KEY", "llmkey4"),
        ("ONTOLOOP__EXTRACT__MODEL__API_KEY", "modelkey5"),
        (
            "ONTOLOOP__EXTRACT__MODEL__BASE_URL",
            "http://user:modelpw6@llm:8000/v1",
        ),
    ])
    .expect("valid settings");
    assert_eq!(settings.auth.hs256_secret.len(), 39, "the secret was set");
    assert_eq!(settings.extract.model.api_key, "modelkey5");
    let shown = format!("{settings:?}");
    for secret in [
        "storepw1",
        "storepw2",
        "queuepw3",
        "hs256-secret",
        "llmkey4",
        "modelkey5",
        "modelpw6",
    ] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    // The rest of each URL is still shown, so the output stays useful.
    assert!(shown.contains("postgres://app:***@db:5432/x?sslmode=disable&password=***"));
    assert!(shown.contains("amqp://guest:***@mq:5672/%2f"));
}

#[test]
fn cache_budgets_load_and_an_empty_one_is_refused_by_key() {
    let settings =
        load_with(&[("ONTOLOOP__CACHE__READ_MODELS__MAX_BYTES", "4096")]).expect("valid settings");
    assert_eq!(settings.cache.read_models.max_entries, 1000);
    assert_eq!(settings.cache.read_models.max_bytes, 4096);
    match load_with(&[("ONTOLOOP__CACHE__READ_MODELS__MAX_ENTRIES", "0")]) {
        Err(SettingsError::Invalid { key, .. }) => {
            assert_eq!(key, "cache.read_models.max_entries");
        }
        other => panic!("expected an invalid key, got {other:?}"),
    }
    match load_with(&[("ONTOLOOP__CACHE__HEAL_STAGES__MAX_ENTRIES", "0")]) {
        Err(SettingsError::Invalid { key, .. }) => {
            assert_eq!(key, "cache.heal_stages.max_entries");
        }
        other => panic!("expected an invalid key, got {other:?}"),
    }
}
