//! `load_extraction` builds the model stage's client only when `[extract.model]` is enabled and
//! `stages` names `model`; the section is checked once, at load, naming the full key.

use ontoloop_settings::{Loader, Settings, SettingsError};

/// Settings from the defaults and `toml`, without the process environment.
fn settings(name: &str, toml: &str) -> Result<Settings, SettingsError> {
    let path = std::env::temp_dir().join(format!(
        "ontoloop-runtime-extraction-{name}-{}.toml",
        std::process::id()
    ));
    std::fs::write(&path, toml).expect("write the settings file");
    let loaded = Loader::new().file(&path).env_vars(Vec::new()).load();
    let _ = std::fs::remove_file(&path);
    loaded
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_stage_gets_its_client_when_enabled_and_staged() {
    let enabled = settings(
        "on",
        r#"
[extract]
stages = ["structured", "patterns", "model"]
[extract.model]
enabled = true
base_url = "http://127.0.0.1:9/v1"
model = "tiny"
"#,
    )
    .expect("settings load");
    let setup = ontoloop_runtime::load_extraction(&enabled, None).await;
    assert!(
        setup.describe().ends_with("; model: model/tiny/prompt-v1"),
        "{}",
        setup.describe()
    );

    let staged_only = settings(
        "staged",
        r#"
[extract]
stages = ["patterns", "model"]
"#,
    )
    .expect("settings load");
    let setup = ontoloop_runtime::load_extraction(&staged_only, None).await;
    assert!(
        setup.describe().contains("model: off"),
        "{}",
        setup.describe()
    );
}

#[test]
fn an_enabled_model_stage_is_checked_at_load() {
    let error = settings(
        "bad",
        r#"
[extract.model]
enabled = true
base_url = "https://api.example.com/v1"
"#,
    )
    .expect_err("an https endpoint is refused");
    assert!(
        error.to_string().contains("extract.model.base_url"),
        "{error}"
    );
}
