//! Traces over OTLP: `ontoloop up` (a child process, so its global tracer is its own) exports to
//! an OTLP/gRPC receiver this test runs. A client sends one `traceparent` with a PushEvent and
//! with the Ask that reads it (`min_sequence`); the receiver must collect, under that one trace
//! id, the telemetry intake's call, the queue consumer and the analyst's apply, and retrieval's
//! Ask, the intake's call a child of the client's span and the apply a descendant of the intake's
//! call (the context crossed the queue in the message headers). Once on the embedded default (the
//! in-process queue) and once on RabbitMQ (AMQP headers). A log line of the child carries the
//! trace id. A ReportSignal with its own `traceparent` reaches the analyst's signal batch and its
//! pattern work (the heal) in that trace. With no collector listening, requests are as quick and the failed export is logged.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ontoloop_proto::v1;
use ontoloop_proto::v1::retrieval_service_client::RetrievalServiceClient;
use ontoloop_proto::v1::telemetry_service_client::TelemetryServiceClient;
use ontoloop_testkit::process::ports_env;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};

const BIN: &str = env!("CARGO_BIN_EXE_ontoloop");
const TENANT: &str = "otlp";
const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"project","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"wiki":3,"default":1}}"#;

/// One exported span, flattened.
#[derive(Debug, Clone)]
struct Got {
    resource_service: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    name: String,
    attributes: BTreeMap<String, String>,
}

/// The OTLP/gRPC receiver: keeps every span it is sent.
#[derive(Clone, Default)]
struct Receiver {
    spans: Arc<Mutex<Vec<Got>>>,
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut got = Vec::new();
        for resource_spans in request.into_inner().resource_spans {
            let resource = resource_spans
                .resource
                .map(|r| strings(&r.attributes))
                .unwrap_or_default();
            let service = resource.get("service.name").cloned().unwrap_or_default();
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    got.push(Got {
                        resource_service: service.clone(),
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_span_id: hex(&span.parent_span_id),
                        name: span.name,
                        attributes: strings(&span.attributes),
                    });
                }
            }
        }
        self.spans.lock().expect("spans").extend(got);
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

fn strings(attributes: &[KeyValue]) -> BTreeMap<String, String> {
    attributes
        .iter()
        .filter_map(|kv| match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(s) => Some((kv.key.clone(), s.clone())),
            any_value::Value::IntValue(i) => Some((kv.key.clone(), i.to_string())),
            _ => None,
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `ontoloop up` with `env`, its stderr (the log lines) in `log`; waits until it prints `ready`.
fn up(env: &[(String, String)], log: &std::path::Path) -> Child {
    let mut child = Command::new(BIN)
        .arg("up")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().cloned())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("start ontoloop up");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut printed = Vec::new();
    while !printed.iter().any(|l: &String| l.starts_with("ready")) {
        match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => printed.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "ontoloop up never said ready: {printed:?}\n{}",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
        }
    }
    child
}

fn port(env: &[(String, String)], service: &str) -> String {
    let key = format!("ONTOLOOP__SERVICES__{service}_PORT");
    env.iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.clone())
        .expect("port")
}

fn channel(port: &str) -> tonic::transport::Channel {
    tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .expect("endpoint")
        .timeout(Duration::from_secs(30))
        .connect_lazy()
}

fn traced<T>(message: T, traceparent: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("traceparent", traceparent.parse().expect("metadata value"));
    request
}

fn event(key: &str, kind: v1::event::Kind) -> v1::Event {
    v1::Event {
        caller: Some(v1::Caller {
            tenant: TENANT.into(),
            principal: "loader".into(),
        }),
        idempotency_key: key.into(),
        kind: Some(kind),
        ..Default::default()
    }
}

/// `ontoloop up` on a fresh SQLite store exporting to `endpoint`, with `extra` settings.
struct Running {
    child: Child,
    env: Vec<(String, String)>,
    log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Running {
    fn start(endpoint: &str, extra: &[(&str, String)]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut env = ports_env();
        for (key, value) in [
            (
                "ONTOLOOP__STORE__URL",
                format!("sqlite://{}/otlp.db?mode=rwc", dir.path().display()),
            ),
            ("ONTOLOOP__TELEMETRY__OTLP__ENDPOINT", endpoint.to_owned()),
            // The intake's "event accepted" line is at debug.
            (
                "ONTOLOOP__LOG__FILTER",
                "info,ontoloop_telemetry=debug".to_owned(),
            ),
        ] {
            env.push((key.to_owned(), value));
        }
        env.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
        let log = dir.path().join("up.log");
        let child = up(&env, &log);
        Self {
            child,
            env,
            log,
            _dir: dir,
        }
    }

    fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops it with SIGTERM (so it flushes its spans) and waits for it.
    fn stop(mut self) -> String {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        self.logs()
    }

    /// The ontology, outside any trace; then a document and the Ask that reads it
    /// (`min_sequence`), both with `traceparent`. Returns how long the traced pair took.
    async fn push_and_ask(&self, traceparent: &str) -> Duration {
        self.push_ontology().await;
        let started = Instant::now();
        let sequence = self.push_document(traceparent).await;
        self.ask(sequence, traceparent).await;
        started.elapsed()
    }

    fn telemetry(&self) -> TelemetryServiceClient<tonic::transport::Channel> {
        TelemetryServiceClient::new(channel(&port(&self.env, "TELEMETRY")))
    }

    async fn push_ontology(&self) {
        self.telemetry()
            .push_event(event(
                "ontology",
                v1::event::Kind::OntologySet(v1::OntologySet {
                    ontology_json: ONTOLOGY.into(),
                }),
            ))
            .await
            .expect("ontology accepted");
    }

    /// Pushes the document with `traceparent`; its intake sequence number.
    async fn push_document(&self, traceparent: &str) -> u64 {
        self.telemetry()
            .push_event(traced(
                event(
                    "kite",
                    v1::event::Kind::DocUpsert(v1::DocUpsert {
                        doc_id: "kite".into(),
                        title: "kite".into(),
                        origin: "wiki".into(),
                        body: "Project Kite is owned by the Atlas team.".into(),
                        ..Default::default()
                    }),
                ),
                traceparent,
            ))
            .await
            .expect("document accepted")
            .into_inner()
            .sequence
    }

    /// Asks, with `traceparent`, what the document says once event `sequence` is applied (asked
    /// again while retrieval answers that it is not applied yet, for up to a minute).
    async fn ask(&self, sequence: u64, traceparent: &str) {
        let mut retrieval = RetrievalServiceClient::new(channel(&port(&self.env, "RETRIEVAL")));
        let deadline = Instant::now() + Duration::from_secs(60);
        let answer = loop {
            let asked = retrieval
                .ask(traced(
                    v1::AskRequest {
                        caller: Some(v1::Caller {
                            tenant: TENANT.into(),
                            principal: "alice".into(),
                        }),
                        text: "Who owns Project Kite?".into(),
                        min_sequence: sequence,
                        ..Default::default()
                    },
                    traceparent,
                ))
                .await;
            match asked {
                Err(status)
                    if status.code() == tonic::Code::Unavailable && Instant::now() < deadline => {}
                other => {
                    break other
                        .expect("Ask once the document is applied")
                        .into_inner();
                }
            }
        };
        assert_eq!(
            answer.value, "Atlas",
            "the Ask read the pushed document: {answer:?}"
        );
    }
}

impl Running {
    /// Reports one failure signal with `traceparent`.
    async fn report_signal(&self, traceparent: &str) {
        let mut telemetry = TelemetryServiceClient::new(channel(&port(&self.env, "TELEMETRY")));
        telemetry
            .report_signal(traced(
                v1::Signal {
                    caller: Some(v1::Caller {
                        tenant: TENANT.into(),
                        principal: "agent-1".into(),
                    }),
                    r#type: v1::SignalType::EntityMissing as i32,
                    query: "What is Project Heron?".into(),
                    entity: "Project Heron".into(),
                    agent_id: "agent-1".into(),
                    idempotency_key: "heron-1".into(),
                    ..Default::default()
                },
                traceparent,
            ))
            .await
            .expect("signal accepted");
    }
}

fn new_trace() -> (String, String, String) {
    let trace_id = format!("{:032x}", rand::random::<u128>() | 1);
    let client_span = format!("{:016x}", rand::random::<u64>() | 1);
    let traceparent = format!("00-{trace_id}-{client_span}-01");
    (trace_id, client_span, traceparent)
}

/// Runs the round trip against `ontoloop up` with `extra` settings and checks the spans and logs.
/// Starts an OTLP/gRPC receiver on a free loopback port; it and its endpoint.
async fn start_receiver() -> (Receiver, String) {
    let receiver = Receiver::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the receiver");
    let collector = listener.local_addr().expect("address");
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(receiver.clone()))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    (receiver, format!("http://{collector}"))
}

impl Receiver {
    /// The spans of `trace_id` received so far.
    fn trace(&self, trace_id: &str) -> Vec<Got> {
        self.spans
            .lock()
            .expect("spans")
            .iter()
            .filter(|s| s.trace_id == trace_id)
            .cloned()
            .collect()
    }
}

/// The ids of the spans above `span` in `spans` (its parent, the parent's parent, …).
fn ancestors<'a>(spans: &'a [Got], span: &'a Got) -> Vec<&'a str> {
    let parents: BTreeMap<&str, &str> = spans
        .iter()
        .map(|s| (s.span_id.as_str(), s.parent_span_id.as_str()))
        .collect();
    let mut found = Vec::new();
    let mut at = span.parent_span_id.as_str();
    while let Some(parent) = parents.get(at) {
        found.push(at);
        at = parent;
    }
    found.push(at);
    found
}

async fn round_trip(extra: &[(&str, String)]) {
    let (receiver, endpoint) = start_receiver().await;
    let mut extra = extra.to_vec();
    extra.push(("ONTOLOOP__LOG__JSON", "true".to_owned()));
    // The one signal's pattern is healed at once (searched for in the sources, which are none).
    extra.push(("ONTOLOOP__ANALYST__HEAL_AT", "low".to_owned()));
    let system = Running::start(&endpoint, &extra);
    let (trace_id, client_span, traceparent) = new_trace();
    system.push_and_ask(&traceparent).await;
    let (signal_trace, signal_client_span, signal_traceparent) = new_trace();
    system.report_signal(&signal_traceparent).await;

    // The batch processor exports every few seconds.
    let wanted: BTreeSet<&str> = ["telemetry", "analyst", "retrieval"].into();
    let deadline = Instant::now() + Duration::from_secs(30);
    let ours = loop {
        let ours = receiver.trace(&trace_id);
        let services: BTreeSet<&str> = ours
            .iter()
            .filter_map(|s| s.attributes.get("service").map(String::as_str))
            .collect();
        let consumed = ours.iter().any(|s| s.name == "consume");
        let signalled = receiver
            .trace(&signal_trace)
            .iter()
            .filter(|s| s.name == "consume_batch" || s.name == "on_signal")
            .count()
            >= 2;
        if (wanted.is_subset(&services) && consumed && signalled) || Instant::now() > deadline {
            break ours;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let logs = system.stop();
    let summary: Vec<String> = ours
        .iter()
        .map(|s| format!("{} {:?}", s.name, s.attributes.get("service")))
        .collect();

    let by_service = |service: &str| {
        ours.iter()
            .find(|s| s.attributes.get("service").map(String::as_str) == Some(service))
            .unwrap_or_else(|| panic!("no {service} span in trace {trace_id}: {summary:?}\n{logs}"))
    };
    let intake = by_service("telemetry");
    assert_eq!(
        intake.name, "/ontoloop.v1.TelemetryService/PushEvent",
        "{summary:?}"
    );
    assert_eq!(
        intake.parent_span_id, client_span,
        "a child of the client's span"
    );
    assert_eq!(
        intake.attributes.get("rpc.method").map(String::as_str),
        Some("PushEvent")
    );
    let apply = by_service("analyst");
    assert_eq!(apply.name, "apply_event", "{summary:?}");
    let ask = by_service("retrieval");
    assert_eq!(ask.name, "/ontoloop.v1.RetrievalService/Ask", "{summary:?}");
    assert_eq!(
        ask.parent_span_id, client_span,
        "a child of the client's span"
    );
    // apply_event → consume → … → the intake's call: the context crossed the queue.
    let ancestors = ancestors(&ours, apply);
    let consume = ours
        .iter()
        .find(|s| s.name == "consume" && ancestors.contains(&s.span_id.as_str()))
        .unwrap_or_else(|| panic!("apply_event is not under a consume span: {summary:?}"));
    assert_eq!(
        consume
            .attributes
            .get("messaging.destination.name")
            .map(String::as_str),
        Some("ontoloop.events")
    );
    assert!(
        ancestors.contains(&intake.span_id.as_str()),
        "the apply descends from the intake's call across the queue: {summary:?}"
    );
    assert!(
        ours.iter().all(|s| s.resource_service == "ontoloop"),
        "service.name is ontoloop: {:?}",
        ours.iter().map(|s| &s.resource_service).collect::<Vec<_>>()
    );
    // ReportSignal → the signals queue → the analyst's batch: one trace too.
    let signal_spans = receiver.trace(&signal_trace);
    let names: Vec<&str> = signal_spans.iter().map(|s| s.name.as_str()).collect();
    let report = signal_spans
        .iter()
        .find(|s| s.name == "/ontoloop.v1.TelemetryService/ReportSignal")
        .unwrap_or_else(|| panic!("no ReportSignal span in trace {signal_trace}: {names:?}"));
    assert_eq!(report.parent_span_id, signal_client_span, "{names:?}");
    let batch = signal_spans
        .iter()
        .find(|s| s.name == "consume_batch")
        .unwrap_or_else(|| panic!("no consume_batch span in trace {signal_trace}: {names:?}"));
    assert_eq!(
        batch
            .attributes
            .get("messaging.destination.name")
            .map(String::as_str),
        Some("ontoloop.signals")
    );
    assert_eq!(
        batch.parent_span_id, report.span_id,
        "the analyst's batch continues the ReportSignal call across the queue: {names:?}"
    );
    // … and the pattern work on that signal (here: healing it at once) too.
    let heal = signal_spans
        .iter()
        .find(|s| s.name == "on_signal")
        .unwrap_or_else(|| panic!("no on_signal span in trace {signal_trace}: {names:?}"));
    assert_eq!(heal.parent_span_id, report.span_id, "{names:?}");
    for (key, value) in [
        ("pattern.key", "project heron"),
        ("pattern.kind", "missing_entity"),
        ("stage", "heal"),
        ("tenant", TENANT),
    ] {
        assert_eq!(
            heal.attributes.get(key).map(String::as_str),
            Some(value),
            "{key}: {:?}",
            heal.attributes
        );
    }
    // A log line written under the intake's call carries the trace id.
    let line = logs
        .lines()
        .find(|l| l.contains("event accepted") && l.contains(&trace_id))
        .unwrap_or_else(|| panic!("no log line with trace id {trace_id}:\n{logs}"));
    let parsed: serde_json::Value = serde_json::from_str(line).expect("a JSON log line");
    assert_eq!(parsed["span"]["trace_id"], trace_id.as_str(), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_covers_push_event_the_in_process_queue_and_ask() {
    round_trip(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_covers_push_event_rabbitmq_and_ask() {
    round_trip(&[
        (
            "ONTOLOOP__QUEUE__URL",
            ontoloop_testkit::servers::amqp_url(),
        ),
        (
            "ONTOLOOP__QUEUE__NAMESPACE",
            ontoloop_testkit::servers::amqp_namespace("otlp"),
        ),
    ])
    .await;
}

/// A push acknowledged while RabbitMQ was unreachable (a TCP proxy of the test's own, cut) is
/// published later by the outbox relay from the row the intake wrote, and its apply still
/// descends from the intake's call: the request's trace context was kept with the row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_left_to_the_relay_continues_the_requests_trace() {
    let (proxy, proxied) =
        ontoloop_testkit::proxy::amqp_proxy(&ontoloop_testkit::servers::amqp_url())
            .await
            .expect("the proxy listens");
    let (receiver, endpoint) = start_receiver().await;
    let system = Running::start(
        &endpoint,
        &[
            ("ONTOLOOP__QUEUE__URL", proxied),
            (
                "ONTOLOOP__QUEUE__NAMESPACE",
                ontoloop_testkit::servers::amqp_namespace("otlp-relay"),
            ),
        ],
    );
    system.push_ontology().await;

    proxy.cut();
    let (trace_id, _, traceparent) = new_trace();
    let sequence = system.push_document(&traceparent).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    proxy.restore().expect("the proxy listens again");
    system.ask(sequence, &traceparent).await;

    let deadline = Instant::now() + Duration::from_secs(30);
    let ours = loop {
        let ours = receiver.trace(&trace_id);
        if ours.iter().any(|s| s.name == "apply_event") || Instant::now() > deadline {
            break ours;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let logs = system.stop();
    let names: Vec<&str> = ours.iter().map(|s| s.name.as_str()).collect();
    let intake = ours
        .iter()
        .find(|s| s.name == "/ontoloop.v1.TelemetryService/PushEvent")
        .unwrap_or_else(|| panic!("no PushEvent span in trace {trace_id}: {names:?}"));
    let apply = ours
        .iter()
        .find(|s| s.name == "apply_event")
        .unwrap_or_else(|| panic!("no apply_event in trace {trace_id}: {names:?}\n{logs}"));
    assert!(
        ancestors(&ours, apply).contains(&intake.span_id.as_str()),
        "the relayed event's apply descends from the intake's call: {names:?}"
    );
    assert!(
        logs.contains("publish deferred to the relay"),
        "the intake's own publish failed, so the relay published it:\n{logs}"
    );
}

/// A collector that is not there costs requests nothing: the traced round trip is as quick as
/// ever, the failed export is logged, and text log lines carry the trace id too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_collector_fails_no_request_and_is_logged() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().expect("address").port()
    };
    let system = Running::start(&format!("http://127.0.0.1:{closed}"), &[]);
    let (trace_id, _, traceparent) = new_trace();
    let took = system.push_and_ask(&traceparent).await;
    assert!(
        took < Duration::from_secs(5),
        "a push and an Ask took {took:?} with no collector"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !system.logs().contains("BatchSpanProcessor.ExportError") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let logs = system.stop();
    assert!(
        logs.lines()
            .any(|l| l.contains("BatchSpanProcessor.ExportError") && l.contains("ERROR")),
        "the failed export is logged:\n{logs}"
    );
    assert!(
        logs.lines()
            .any(|l| l.contains("event accepted") && l.contains(&format!("trace_id={trace_id}"))),
        "a text line carries trace_id={trace_id}:\n{logs}"
    );
}
