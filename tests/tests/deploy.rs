//! No container engine runs on these machines, so the deploy files are checked against the code
//! instead (`scripts/check-deploy.sh`, run by `make test`, checks them against the Kubernetes and
//! Compose schemas): every service they run exists, with its binary, its configured gRPC and
//! HTTP (metrics, dashboard) ports and its gRPC health name; every `ONTOLOOP__...` variable they
//! set is a settings key the code accepts; every service of the code is deployed, with replicas,
//! health probes, a disruption budget and a network policy; no password or secret is written in
//! the files, and every Kubernetes secret they read is one the README says how to create.

use std::collections::{BTreeMap, BTreeSet};
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
        "ONTOLOOP__QUEUE__URL" => "amqp://u:p@mq:5672/%2f".to_owned(),
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

/// What compose makes of `${NAME}`, `${NAME:?message}` and `${NAME:-default}`: each replaced by
/// a value an operator could export (hex, long enough for the token secret).
fn interpolate(value: &str) -> String {
    const EXPORTED: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else {
            panic!("unterminated interpolation in {value}");
        };
        out.push_str(EXPORTED);
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

/// The password of a URL's user info (`scheme://user:password@host/...`), if it has one.
fn url_password(value: &str) -> Option<&str> {
    let (_, rest) = value.split_once("://")?;
    let at = rest.rfind('@')?;
    let (_, password) = rest[..at].split_once(':')?;
    Some(password)
}

/// A password or secret written into a deploy file: a variable named like one with a literal
/// value, or a URL with a literal password. `from_env` says whether a compose interpolation
/// (`${...}`) counts as not literal (in Kubernetes files nothing is interpolated).
fn literal_secret(key: &str, value: &str, from_env: bool) -> bool {
    let interpolated = |v: &str| from_env && v.starts_with("${");
    let upper = key.to_ascii_uppercase();
    let named_secret = ["PASSWORD", "PASS", "SECRET"]
        .iter()
        .any(|word| upper.ends_with(word) || upper.contains(&format!("_{word}_")));
    (named_secret && !value.is_empty() && !interpolated(value))
        || url_password(value).is_some_and(|p| !p.is_empty() && !interpolated(p))
}

#[test]
fn literal_secrets_are_recognised() {
    assert!(literal_secret(
        "ONTOLOOP__QUEUE__URL",
        "amqp://guest:guest@mq/%2f",
        true
    ));
    assert!(literal_secret("POSTGRES_PASSWORD", "ontoloop", true));
    assert!(literal_secret(
        "RABBITMQ_DEFAULT_PASS",
        "${X:?set X}",
        false
    ));
    assert!(!literal_secret(
        "RABBITMQ_DEFAULT_PASS",
        "${X:?set X}",
        true
    ));
    assert!(!literal_secret(
        "ONTOLOOP__STORE__URL",
        "postgres://postgres:${PG:?export PG (openssl rand -hex 16)}@db:5432/x",
        true
    ));
    assert!(!literal_secret(
        "ONTOLOOP__STORE__URL",
        "postgres://postgres@db/x",
        false
    ));
    assert!(!literal_secret("ONTOLOOP__AUTH__MODE", "jwt", false));
    assert_eq!(
        interpolate("a:${X:?m (n)}@b"),
        format!("a:{}@b", "0123456789abcdef".repeat(4))
    );
}

/// The secrets (name → keys) the README's `kubectl create secret generic NAME --from-literal=KEY=`
/// commands create (continued lines joined).
fn readme_secrets() -> BTreeMap<String, BTreeSet<String>> {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README");
    let joined = readme.replace("\\\n", " ");
    let mut secrets: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in joined.lines() {
        let Some((_, command)) = line.split_once("kubectl create secret generic ") else {
            continue;
        };
        let mut words = command.split_whitespace();
        let Some(name) = words.next() else { continue };
        let name = name.trim_matches('`').to_owned();
        let keys = secrets.entry(name).or_default();
        for word in words {
            if let Some(literal) = word.strip_prefix("--from-literal=")
                && let Some((key, _)) = literal.split_once('=')
            {
                keys.insert(key.to_owned());
            }
        }
    }
    secrets
}

/// Whether every `matchLabels` pair of `selector` is among `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    let Some(wanted) = selector.get("matchLabels").and_then(Value::as_mapping) else {
        return false;
    };
    !wanted.is_empty() && wanted.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The `port` entries (names or numbers, as strings) of a list of network policy rules.
fn rule_ports(rules: &Value) -> BTreeSet<String> {
    rules
        .as_sequence()
        .into_iter()
        .flatten()
        .flat_map(|rule| rule["ports"].as_sequence().into_iter().flatten())
        .filter_map(|p| match &p["port"] {
            Value::Number(n) => Some(n.to_string()),
            Value::String(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_sequence()
        .map(|p| {
            p.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
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
    let mut compose: Value = serde_yaml::from_str(&text).expect("compose parses");
    // `<<: *ontoloop-env` merges, as compose does.
    compose.apply_merge().expect("merge keys apply");
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
                let value = v.as_str().map(str::to_owned).unwrap_or_else(|| {
                    serde_yaml::to_string(v)
                        .unwrap_or_default()
                        .trim()
                        .to_owned()
                });
                assert!(
                    !literal_secret(&key, &value, true),
                    "compose.yaml: {name} writes a secret into {key}; take it from the environment"
                );
                if key.starts_with("ONTOLOOP__") {
                    vars.push((key, interpolate(&value)));
                }
            }
        }
        let Some(kind) = ServiceKind::from_name(name) else {
            assert!(
                matches!(name, "postgres" | "rabbitmq" | "migrate"),
                "compose runs unknown service {name}"
            );
            let data_dir = match name {
                "postgres" => Some("/var/lib/postgresql/data"),
                "rabbitmq" => Some("/var/lib/rabbitmq"),
                _ => None,
            };
            if let Some(data_dir) = data_dir {
                let mounts = strings(&service["volumes"]);
                let volume = mounts
                    .iter()
                    .find_map(|m| m.strip_suffix(&format!(":{data_dir}")))
                    .unwrap_or_else(|| panic!("{name} keeps {data_dir} on a volume"));
                assert!(
                    compose["volumes"].get(volume).is_some(),
                    "{name}'s volume {volume} is a named volume"
                );
            }
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
        let http_port = settings.services.http_port_of(name).expect("http port");
        assert_eq!(
            strings(&service["expose"]),
            vec![port.to_string(), http_port.to_string()],
            "{name} exposes its configured gRPC and HTTP (metrics) ports"
        );
        if kind == ServiceKind::Analyst {
            let published = strings(&service["ports"]);
            assert!(
                published
                    .iter()
                    .any(|p| p.starts_with("127.0.0.1:") && p.ends_with(&format!(":{http_port}"))),
                "the analyst publishes its dashboard port {http_port} on loopback: {published:?}"
            );
        }
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

/// One Deployment as the cross-document checks need it.
struct Deployed {
    file: String,
    name: String,
    replicas: u64,
    labels: Value,
    container_ports: BTreeMap<String, u64>,
}

#[test]
fn kubernetes_manifests_match_the_code() {
    let settings = defaults();
    let dir = root().join("deploy/k8s");
    let mut deployments = BTreeSet::new();
    let mut deployed = Vec::new();
    let mut budgets = Vec::new();
    let mut policies = Vec::new();
    let mut secret_refs = BTreeSet::new();
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
            // Every container's literal env values and secret references, whatever the kind.
            let pod = &doc["spec"]["template"]["spec"];
            for container in pod["containers"].as_sequence().into_iter().flatten() {
                for var in container["env"].as_sequence().into_iter().flatten() {
                    let key = var["name"].as_str().unwrap_or_default();
                    if let Some(value) = var["value"].as_str() {
                        assert!(
                            !literal_secret(key, value, false),
                            "{file}: {name} writes a secret into {key}; take it from a Secret"
                        );
                    }
                    let secret = &var["valueFrom"]["secretKeyRef"];
                    if let (Some(secret), Some(key)) =
                        (secret["name"].as_str(), secret["key"].as_str())
                    {
                        secret_refs.insert((secret.to_owned(), key.to_owned(), file.clone()));
                    }
                }
            }
            match kind {
                "ConfigMap" => {
                    for (k, v) in doc.get("data").and_then(Value::as_mapping).expect("data") {
                        let (key, value) = (
                            k.as_str().unwrap_or_default(),
                            v.as_str().unwrap_or_default(),
                        );
                        assert!(
                            !literal_secret(key, value, false),
                            "{file}: the ConfigMap holds a secret in {key}; take it from a Secret"
                        );
                        config_vars.push((key.to_owned(), value.to_owned()));
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
                        .and_then(Value::as_u64)
                        .unwrap_or_default();
                    assert!(replicas >= 2, "{name} runs replicas");
                    let container = &pod["containers"][0];
                    let binary = container["command"][0].as_str().expect("command");
                    assert_eq!(binary, format!("ontoloop-{service}"));
                    binary_exists(binary);
                    let port = u64::from(settings.services.port_of(service).expect("port"));
                    let http_port =
                        u64::from(settings.services.http_port_of(service).expect("http port"));
                    let container_ports: BTreeMap<String, u64> = container["ports"]
                        .as_sequence()
                        .into_iter()
                        .flatten()
                        .filter_map(|p| {
                            Some((p["name"].as_str()?.to_owned(), p["containerPort"].as_u64()?))
                        })
                        .collect();
                    assert_eq!(
                        container_ports,
                        BTreeMap::from([
                            ("grpc".to_owned(), port),
                            ("metrics".to_owned(), http_port)
                        ]),
                        "{name} names its gRPC and HTTP (metrics) ports"
                    );
                    let annotations = &doc["spec"]["template"]["metadata"]["annotations"];
                    assert_eq!(
                        annotations["prometheus.io/scrape"].as_str(),
                        Some("true"),
                        "{name} is scraped"
                    );
                    assert_eq!(
                        annotations["prometheus.io/port"].as_str(),
                        Some(http_port.to_string().as_str()),
                        "{name} is scraped on its HTTP port"
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
                    deployed.push(Deployed {
                        file: file.clone(),
                        name: name.clone(),
                        replicas,
                        labels: doc["spec"]["template"]["metadata"]["labels"].clone(),
                        container_ports,
                    });
                }
                "Service" if name == "ontoloop-dashboard" => {
                    let http_port = u64::from(
                        settings
                            .services
                            .http_port_of("analyst")
                            .expect("http port"),
                    );
                    assert_eq!(
                        doc["spec"]["selector"]["app.kubernetes.io/name"].as_str(),
                        Some("ontoloop-analyst"),
                        "the dashboard is the analyst's"
                    );
                    assert_eq!(
                        doc["spec"]["ports"][0]["port"].as_u64(),
                        Some(http_port),
                        "dashboard port"
                    );
                    assert_eq!(
                        doc["spec"]["sessionAffinity"].as_str(),
                        Some("ClientIP"),
                        "a reviewer's session stays on one analyst replica"
                    );
                }
                "Service" if name.starts_with("ontoloop-") => {
                    let service = &name["ontoloop-".len()..];
                    let port = settings
                        .services
                        .port_of(service)
                        .unwrap_or_else(|| panic!("{file}: unknown service {name}"));
                    let http_port = settings.services.http_port_of(service).expect("http port");
                    let ports: BTreeMap<String, (u64, String)> = doc["spec"]["ports"]
                        .as_sequence()
                        .into_iter()
                        .flatten()
                        .filter_map(|p| {
                            Some((
                                p["name"].as_str()?.to_owned(),
                                (p["port"].as_u64()?, p["targetPort"].as_str()?.to_owned()),
                            ))
                        })
                        .collect();
                    assert_eq!(
                        ports,
                        BTreeMap::from([
                            ("grpc".to_owned(), (u64::from(port), "grpc".to_owned())),
                            (
                                "metrics".to_owned(),
                                (u64::from(http_port), "metrics".to_owned())
                            ),
                        ]),
                        "{name} service ports"
                    );
                }
                "StatefulSet" => {
                    let data_dir = match name.as_str() {
                        "postgres" => "/var/lib/postgresql/data",
                        "rabbitmq" => "/var/lib/rabbitmq",
                        other => panic!("{file}: unknown StatefulSet {other}"),
                    };
                    let claims: BTreeSet<&str> = doc["spec"]["volumeClaimTemplates"]
                        .as_sequence()
                        .into_iter()
                        .flatten()
                        .filter_map(|c| c["metadata"]["name"].as_str())
                        .collect();
                    let mounted = pod["containers"][0]["volumeMounts"]
                        .as_sequence()
                        .into_iter()
                        .flatten()
                        .find(|m| m["mountPath"].as_str() == Some(data_dir))
                        .and_then(|m| m["name"].as_str())
                        .unwrap_or_else(|| panic!("{name} mounts nothing at {data_dir}"));
                    assert!(
                        claims.contains(mounted),
                        "{name} keeps {data_dir} on a persistent volume claim"
                    );
                }
                "PodDisruptionBudget" => budgets.push(doc.clone()),
                "NetworkPolicy" => policies.push(doc.clone()),
                "Job" => {
                    let binary = pod["containers"][0]["command"][0]
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

    for d in &deployed {
        let budget = budgets
            .iter()
            .find(|b| selects(&b["spec"]["selector"], &d.labels))
            .unwrap_or_else(|| panic!("{}: no PodDisruptionBudget selects {}", d.file, d.name));
        let min = budget["spec"]["minAvailable"].as_u64();
        assert!(
            min.is_some_and(|m| m >= 1 && m < d.replicas),
            "{}: {}'s budget keeps one replica up and lets one go: minAvailable {min:?}",
            d.file,
            d.name
        );
        let policy = policies
            .iter()
            .find(|p| selects(&p["spec"]["podSelector"], &d.labels))
            .unwrap_or_else(|| panic!("{}: no NetworkPolicy selects {}", d.file, d.name));
        assert_eq!(
            strings(&policy["spec"]["policyTypes"]),
            vec!["Ingress", "Egress"],
            "{} is limited both ways",
            d.name
        );
        let ingress = rule_ports(&policy["spec"]["ingress"]);
        for port in ["grpc", "metrics"] {
            assert!(ingress.contains(port), "{} admits its {port} port", d.name);
        }
        for port in &ingress {
            assert!(
                d.container_ports.contains_key(port),
                "{}'s policy names port {port}, which its container does not",
                d.name
            );
        }
        // Every service connects to the store and the queue (ontoloop_runtime::Context), and
        // exports its traces to a collector when `[telemetry.otlp]` names one.
        assert_eq!(
            rule_ports(&policy["spec"]["egress"]),
            BTreeSet::from(["53", "5432", "5672", "4317"].map(str::to_owned)),
            "{} reaches DNS, PostgreSQL, RabbitMQ and the OTLP collector, nothing else",
            d.name
        );
    }

    let documented = readme_secrets();
    for (secret, key, file) in &secret_refs {
        assert!(
            documented
                .get(secret)
                .is_some_and(|keys| keys.contains(key)),
            "{file} reads key {key} of secret {secret}, which no `kubectl create secret generic` \
             command in README.md creates (it creates {documented:?})"
        );
    }
}

use serde::Deserialize as _;
