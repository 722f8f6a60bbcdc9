//! Every service's `/metrics` as Prometheus reads it, on the machine's PostgreSQL and RabbitMQ:
//! the test loads a small world through the intake (PushEvent), asks (Ask), validates an answer
//! (Validate) and reports a signal, then scrapes the four `/metrics` endpoints and parses each
//! with the official Prometheus Python client's parser (`prometheus_client`, in the project's
//! `.venv/`, made by `scripts/python-env.sh`, which `make test` runs first;
//! `tests/python/metrics_parse.py`). Each must parse, and hold the latency histograms — with
//! `_bucket`, `_count` and `_sum` series — of its gRPC methods (a non-zero count for the calls
//! made), and the analyst's those of event apply, event → visible and consumer lag, and the
//! depth of the queues it consumes.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use ontoloop_core::{ServiceKind, topics};
use ontoloop_proto::v1;
use ontoloop_tests::{Sandbox, caller, doc, ontology};
use serde_json::Value;

const TENANT: &str = "metrics";
const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]}],
  "authority":{"pricing-page":3,"default":1}}"#;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The project environment's Python, which must hold what this test imports.
fn python(root: &Path) -> PathBuf {
    ontoloop_testkit::python::venv_python(root, "prometheus_client.parser", "scripts/python-env.sh")
}

/// The families `prometheus_client` parsed from each service's text, by service name.
fn parse(python: &Path, texts: &serde_json::Map<String, Value>) -> serde_json::Map<String, Value> {
    let mut child = Command::new(python)
        .arg(root().join("tests/python/metrics_parse.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the parser");
    let input = serde_json::to_vec(texts).expect("encode the texts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("hand the texts to the parser");
    let output = child.wait_with_output().expect("the parser ends");
    assert!(
        output.status.success(),
        "prometheus_client refused a /metrics text: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    match serde_json::from_slice(&output.stdout).expect("the parser prints JSON") {
        Value::Object(parsed) => parsed,
        other => panic!("the parser printed {other}"),
    }
}

/// The samples of `family` (a histogram) in `families`, asserting its type.
fn histogram<'a>(families: &'a Value, family: &str, service: &str) -> &'a Vec<Value> {
    let found = &families[family];
    assert_eq!(
        found["type"], "histogram",
        "{service}: {family} is a histogram in {families}"
    );
    found["samples"].as_array().expect("samples")
}

/// The value of the `name` sample whose labels include every pair of `labels`.
fn sample(samples: &[Value], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s[0] == name
                && labels
                    .iter()
                    .all(|(key, value)| s[1][*key].as_str() == Some(*value))
        })
        .and_then(|s| s[2].as_f64())
}

/// Asserts `family` has `_bucket` (with `le="+Inf"`), `_count` and `_sum` series for `labels`,
/// with a count of at least one and the `+Inf` bucket equal to it; the count.
fn observed(families: &Value, service: &str, family: &str, labels: &[(&str, &str)]) -> f64 {
    let samples = histogram(families, family, service);
    let count = sample(samples, &format!("{family}_count"), labels)
        .unwrap_or_else(|| panic!("{service}: {family}_count{labels:?} in {samples:?}"));
    assert!(
        count >= 1.0,
        "{service}: {family}{labels:?} counted {count}"
    );
    let sum = sample(samples, &format!("{family}_sum"), labels)
        .unwrap_or_else(|| panic!("{service}: {family}_sum{labels:?} in {samples:?}"));
    assert!(sum >= 0.0, "{service}: {family}_sum {sum}");
    let mut inf = labels.to_vec();
    inf.push(("le", "+Inf"));
    assert_eq!(
        sample(samples, &format!("{family}_bucket"), &inf),
        Some(count),
        "{service}: {family}_bucket{{le=\"+Inf\"}} equals the count"
    );
    let buckets = samples
        .iter()
        .filter(|s| s[0] == format!("{family}_bucket").as_str())
        .count();
    assert!(buckets > 1, "{service}: {family} has latency buckets");
    count
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metrics_endpoint_parses_and_has_latency_histograms() {
    let python = python(&root());
    let (sandbox, database) = Sandbox::on_servers("metrics", &[]).await;
    let c = sandbox.clients();
    let who = || caller(TENANT, "alice");

    // PushEvent: an ontology and a page, through the intake, the queue and the analyst.
    let last = c
        .push_all(
            TENANT,
            "loader",
            [
                ontology(ONTOLOGY),
                doc(
                    "pricing",
                    "pricing-page",
                    "The Pro plan costs €49 per month.",
                    &[],
                    0.0,
                ),
            ],
        )
        .await;
    // Ask, once the page is applied.
    let answer = c
        .retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: who(),
            text: "How much does the Pro plan cost?".into(),
            min_sequence: last,
            ..Default::default()
        })
        .await
        .expect("ask")
        .into_inner();
    assert_eq!(answer.value, "49", "{answer:?}");
    // Validate.
    c.firewall
        .clone()
        .validate(v1::ValidateRequest {
            caller: who(),
            input: Some(v1::validate_request::Input::Text(
                "The Pro plan costs €49 per month.".into(),
            )),
            ..Default::default()
        })
        .await
        .expect("validate");
    // A signal.
    c.telemetry
        .clone()
        .report_signal(v1::Signal {
            caller: who(),
            r#type: v1::SignalType::EntityMissing as i32,
            query: "Who owns the Pro plan?".into(),
            entity: "Pro".into(),
            agent_id: "agent-1".into(),
            idempotency_key: "metrics-signal-1".into(),
            ..Default::default()
        })
        .await
        .expect("signal");

    // The signal reaches the analyst through its queue: it is delivered, so its lag is counted.
    let signals_lag = [("queue", topics::SIGNALS)];
    let delivered = ontoloop_tests::wait_until(Duration::from_secs(30), || async {
        ontoloop_observability::metrics::global()
            .value("ontoloop_queue_consumer_lag_seconds", &signals_lag)
            >= 1.0
    })
    .await;
    assert!(delivered, "the analyst consumed the signal");

    let mut texts = serde_json::Map::new();
    for kind in ServiceKind::ALL {
        let text = ontoloop_tests::http_get(sandbox.http_addr(kind), "/metrics")
            .await
            .unwrap_or_else(|err| panic!("{} serves /metrics: {err}", kind.name()));
        texts.insert(kind.name().to_owned(), Value::String(text));
    }
    let parsed = parse(&python, &texts);

    // Every service: its gRPC latency, by method, for the calls this test made.
    let calls = [
        (ServiceKind::Retrieval, "/ontoloop.v1.RetrievalService/Ask"),
        (
            ServiceKind::Firewall,
            "/ontoloop.v1.FirewallService/Validate",
        ),
        (
            ServiceKind::Telemetry,
            "/ontoloop.v1.TelemetryService/PushEvent",
        ),
        (
            ServiceKind::Telemetry,
            "/ontoloop.v1.TelemetryService/ReportSignal",
        ),
    ];
    for (kind, method) in calls {
        let service = kind.name();
        let family = format!("ontoloop_{service}_rpc_duration_seconds");
        let count = observed(
            &parsed[service],
            service,
            &family,
            &[("service", service), ("method", method)],
        );
        println!("{service}: {method} latency observed {count} times");
    }
    let last_push_count = observed(
        &parsed["telemetry"],
        "telemetry",
        "ontoloop_telemetry_rpc_duration_seconds",
        &[("method", "/ontoloop.v1.TelemetryService/PushEvent")],
    );
    assert_eq!(last_push_count, 2.0, "two events were pushed");
    // The analyst serves gRPC too; each endpoint holds its own service's latency only.
    for kind in ServiceKind::ALL {
        let service = kind.name();
        for other in ServiceKind::ALL.iter().filter(|other| **other != kind) {
            let family = format!("ontoloop_{}_rpc_duration_seconds", other.name());
            assert!(
                parsed[service].get(&family).is_none(),
                "{service}'s /metrics holds {family}"
            );
        }
    }

    // The analyst: event apply (both events, the knowledge writer), event → visible, consumer
    // lag on both queues it consumes, and their depth.
    let analyst = &parsed["analyst"];
    for kind in ["ontology.set", "doc.upsert"] {
        observed(
            analyst,
            "analyst",
            "ontoloop_analyst_event_apply_seconds",
            &[("writer", "knowledge"), ("kind", kind)],
        );
    }
    let visible = observed(
        analyst,
        "analyst",
        "ontoloop_analyst_event_visible_seconds",
        &[("writer", "knowledge")],
    );
    assert!(visible >= 2.0, "both events were made visible: {visible}");
    for queue in [topics::EVENTS, topics::SIGNALS] {
        observed(
            analyst,
            "analyst",
            "ontoloop_queue_consumer_lag_seconds",
            &[("queue", queue)],
        );
    }
    let depth = &analyst["ontoloop_queue_depth"];
    assert_eq!(depth["type"], "gauge", "{analyst}");
    let depths = depth["samples"].as_array().expect("samples");
    for queue in [
        topics::EVENTS.to_owned(),
        ontoloop_queue::dead_letter_queue(topics::EVENTS),
        topics::SIGNALS.to_owned(),
        ontoloop_queue::dead_letter_queue(topics::SIGNALS),
    ] {
        let ready = sample(depths, "ontoloop_queue_depth", &[("queue", &queue)])
            .unwrap_or_else(|| panic!("a depth for {queue} in {depths:?}"));
        assert!(ready >= 0.0, "{queue}: {ready}");
    }

    sandbox.shutdown().await.expect("clean shutdown");
    database.drop_now().await.expect("drop test database");
}
