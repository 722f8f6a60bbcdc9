//! The settings file layer, read from a real file.

use ontoloop_settings::Loader;

#[test]
fn a_file_layer_sits_between_defaults_and_environment() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("settings.toml");
    std::fs::write(&path, "[log]\njson = true\nfilter = \"debug\"\n").expect("write file");
    let settings = Loader::new()
        .file(&path)
        .env_vars([("ONTOLOOP__LOG__FILTER".to_string(), "warn".to_string())])
        .load()
        .expect("valid file");
    assert!(settings.log.json);
    assert_eq!(settings.log.filter, "warn");
}

#[test]
fn an_unknown_key_in_the_file_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("settings.toml");
    std::fs::write(&path, "[store]\nmax_conections = 3\n").expect("write file");
    let err = Loader::new()
        .file(&path)
        .env_vars([])
        .load()
        .expect_err("typo");
    assert!(err.to_string().contains("max_conections"), "{err}");
}

#[test]
fn a_missing_file_is_an_error() {
    let err = Loader::new()
        .file("/nonexistent/ontoloop.toml")
        .env_vars([])
        .load();
    assert!(err.is_err());
}
