//! No container engine runs on these machines, so the deploy files are checked against the code
//! instead: every service they run exists, with its binary, its configured port and its gRPC
//! health name; every `ONTOLOOP__...` variable they set is a settings key the code accepts; and
//! every service of the code is deployed, with replicas and health probes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ontoloop_core::ServiceKind;
use ontoloop_settings::Loader;
use serde_yaml::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn defaults() -> ontoloop_settings::Settings {
    Loader::new().env_vars([]).load().expect("defaults load")
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut at = value;
    for key in path {
        at = at.get(*key)?;
    }
    at.as_str()
}

/// What an operator supplies beside the files (the token secret comes from a secret): with it,
/// the `auth.mode = "jwt"` the files set validates.
const OPERATOR_VARS: [(&str, &str); 3] = [
    ("ONTOLOOP__AUTH__ISSUER", "ontoloop"),
    ("ONTOLOOP__AUTH__AUDIENCE", "ontoloop"),
    (
        "ONTOLOOP__AUTH__HS256_SECRET",
        "an-operator-secret-of-32-bytes-or-more",
    ),
];

/// A plausible value of a variable the files take from a secret.
fn secret_value(key: &str) -> String {
    match key {
        "ONTOLOOP__STORE__URL" => "postgres://u:p@db/x".to_owned(),
        _ => OPERATOR_VARS
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| (*v).to_owned())
            .unwrap_or_default(),
    }
}

/// Every `ONTOLOOP__...` variable must be accepted by the settings loader, with a plausible
/// value for its type taken from the file itself where it gives one, beside what an operator
/// supplies ([`OPERATOR_VARS`]).
fn assert_known_settings(vars: &[(String, String)], file: &str) {
    assert!(!vars.is_empty(), "{file} sets no ONTOLOOP__ variables");
    for (key, value) in vars {
        let operator = OPERATOR_VARS
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
        let loaded = Loader::new()
            .env_vars(operator.chain([(key.clone(), value.clone())]))
            .load();
        assert!(
            loaded.is_ok(),
            "{file}: {key}={value} is not accepted: {:?}",
            loaded.err()
        );
    }
}

fn binary_exists(binary: &str) {
    let crate_dir = match binary {
        "ontoloop" => "services/ontoloop".to_owned(),
        other => format!("services/{}", other.trim_start_matches("ontoloop-")),
    };
    let manifest = std::fs::read_to_string(root().join(&crate_dir).join("Cargo.toml"))
        .unwrap_or_else(|err| panic!("binary {binary}: no crate at {crate_dir}: {err}"));
    assert!(
        manifest.contains(&format!("name = \"{binary}\"")),
        "{crate_dir} does not build {binary}"
    );
}

#[test]
fn compose_matches_the_code() {
    let text = std::fs::read_to_string(root().join("deploy/compose.yaml")).expect("compose file");
    let compose: Value = serde_yaml::from_str(&text).expect("compose parses");
    let services = compose
        .get("services")
        .and_then(Value::as_mapping)
        .expect("services map");
    let settings = defaults();
    let mut deployed = BTreeSet::new();
    for (name, service) in services {
        let name = name.as_str().expect("service name");
        let command: Vec<&str> = service
            .get("command")
            .and_then(Value::as_sequence)
            .map(|c| c.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(binary) = command.first() {
            binary_exists(binary);
        }
        let mut vars = Vec::new();
        if let Some(env) = service.get("environment").and_then(Value::as_mapping) {
            for (k, v) in env {
                let key = k.as_str().expect("env key").to_owned();
                if key.starts_with("ONTOLOOP__") {
                    let value = v.as_str().map(str::to_owned).unwrap_or_else(|| {
                        serde_yaml::to_string(v)
                            .unwrap_or_default()
                            .trim()
                            .to_owned()
                    });
                    vars.push((key, value));
                }
            }
        }
        let Some(kind) = ServiceKind::from_name(name) else {
            assert!(
                matches!(name, "postgres" | "rabbitmq" | "migrate"),
                "compose runs unknown service {name}"
            );
            continue;
        };
        deployed.insert(kind.name());
        assert_eq!(
            command,
            vec![format!("ontoloop-{name}").as_str()],
            "{name} runs its own binary"
        );
        assert_known_settings(&vars, "compose.yaml");
        let port = settings.services.port_of(name).expect("configured port");
        let exposed: Vec<String> = service
            .get("expose")
            .and_then(Value::as_sequence)
            .map(|p| {
                p.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(
            exposed,
            vec![port.to_string()],
            "{name} exposes its configured port"
        );
        let health: Vec<&str> = service
            .get("healthcheck")
            .and_then(|h| h.get("test"))
            .and_then(Value::as_sequence)
            .map(|t| t.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert_eq!(
            health,
            vec!["CMD", "ontoloop", "status", "--service", name],
            "{name} health check"
        );
        let replicas = service
            .get("deploy")
            .and_then(|d| d.get("replicas"))
            .and_then(Value::as_u64);
        assert!(replicas.is_some_and(|r| r >= 2), "{name} runs replicas");
    }
    let all: BTreeSet<_> = ServiceKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(deployed, all, "compose runs every service");
}

#[test]
fn kubernetes_manifests_match_the_code() {
    let settings = defaults();
    let dir = root().join("deploy/k8s");
    let mut deployments = BTreeSet::new();
    let mut config_vars = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("k8s dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("manifest");
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let doc = Value::deserialize(doc).unwrap_or_else(|err| panic!("{file} parses: {err}"));
            let kind = str_at(&doc, &["kind"]).unwrap_or_default();
            let name = str_at(&doc, &["metadata", "name"])
                .unwrap_or_default()
                .to_owned();
            match kind {
                "ConfigMap" => {
                    for (k, v) in doc.get("data").and_then(Value::as_mapping).expect("data") {
                        config_vars.push((
                            k.as_str().unwrap_or_default().to_owned(),
                            v.as_str().unwrap_or_default().to_owned(),
                        ));
                    }
                }
                "Deployment" => {
                    let service = name.strip_prefix("ontoloop-").unwrap_or(&name);
                    let kind = ServiceKind::from_name(service)
                        .unwrap_or_else(|| panic!("{file}: unknown service {name}"));
                    deployments.insert(kind.name());
                    let replicas = doc
                        .get("spec")
                        .and_then(|s| s.get("replicas"))
                        .and_then(Value::as_u64);
                    assert!(replicas.is_some_and(|r| r >= 2), "{name} runs replicas");
                    let container = &doc["spec"]["template"]["spec"]["containers"][0];
                    let binary = container["command"][0].as_str().expect("command");
                    assert_eq!(binary, format!("ontoloop-{service}"));
                    binary_exists(binary);
                    let port = u64::from(settings.services.port_of(service).expect("port"));
                    assert_eq!(
                        container["ports"][0]["containerPort"].as_u64(),
                        Some(port),
                        "{name} port"
                    );
                    for probe in ["readinessProbe", "livenessProbe"] {
                        assert_eq!(
                            container[probe]["grpc"]["port"].as_u64(),
                            Some(port),
                            "{name} {probe} port"
                        );
                        assert_eq!(
                            container[probe]["grpc"]["service"].as_str(),
                            Some(kind.grpc_name()),
                            "{name} {probe} service"
                        );
                    }
                    for var in container["env"].as_sequence().expect("env") {
                        let key = var["name"].as_str().expect("env name");
                        assert_known_settings(&[(key.to_owned(), secret_value(key))], &file);
                    }
                }
                "Service" if name.starts_with("ontoloop-") => {
                    let service = &name["ontoloop-".len()..];
                    let port = u64::from(
                        settings
                            .services
                            .port_of(service)
                            .unwrap_or_else(|| panic!("{file}: unknown service {name}")),
                    );
                    assert_eq!(
                        doc["spec"]["ports"][0]["port"].as_u64(),
                        Some(port),
                        "{name} service port"
                    );
                }
                "Job" => {
                    let binary = doc["spec"]["template"]["spec"]["containers"][0]["command"][0]
                        .as_str()
                        .expect("command");
                    binary_exists(binary);
                }
                _ => {}
            }
        }
    }
    assert_known_settings(&config_vars, "configmap.yaml");
    let all: BTreeSet<_> = ServiceKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(deployments, all, "every service has a Deployment");
}

use serde::Deserialize as _;
