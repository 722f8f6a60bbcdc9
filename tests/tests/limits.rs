//! Every bounded resource a caller can drive, against the running system (the embedded
//! `Sandbox`): each is driven just under its limit (accepted) and just over it (refused with the
//! code and a message naming the setting), and the table "resource | limit | behaviour at the
//! limit" is printed. Limits are lowered by settings where the default would make the test slow
//! in a debug build; the code paths are the same. Time and memory of the largest accepted
//! Validate at the default limits are `make bench`'s (`ontoloop bench firewall`).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_tests::{Sandbox, caller, doc, ontology, wait_until};
use prost::Message as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tonic::Code;

const T: &str = "acme";
const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]}],
  "authority":{"pricing-page":3,"default":2}}"#;

const MAX_CLAIMS: usize = 200;
const MAX_TEXT_BYTES: usize = 16 * 1024;
const MAX_MESSAGE_BYTES: usize = 64 * 1024;
const MAX_STREAM: usize = 20;
const MAX_CONCURRENT: usize = 2;
const TIMEOUT_MS: u64 = 3000;
const MAX_HTTP_BODY: usize = 65536;
const MAX_QUEUE_BODY: usize = 8 * 1024;

/// One row of the printed table.
struct Row {
    resource: &'static str,
    limit: String,
    behaviour: String,
}

fn claims(n: usize) -> v1::validate_request::Input {
    v1::validate_request::Input::Claims(v1::ClaimList {
        claims: (0..n)
            .map(|i| v1::Claim {
                subject: "Pro".into(),
                predicate: "price".into(),
                object: i.to_string(),
                chain: Vec::new(),
                scope: String::new(),
            })
            .collect(),
    })
}

fn validate(input: v1::validate_request::Input) -> v1::ValidateRequest {
    v1::ValidateRequest {
        caller: caller(T, "alice"),
        input: Some(input),
        ..Default::default()
    }
}

fn signal(n: usize) -> v1::Signal {
    v1::Signal {
        caller: caller(T, "agent"),
        r#type: v1::SignalType::EntityMissing as i32,
        query: format!("What is project {n}?"),
        entity: format!("Project {n}"),
        agent_id: "agent".into(),
        idempotency_key: format!("limits-{n}"),
        ..Default::default()
    }
}

/// Asserts a refusal: its code, and a message naming `setting`.
fn refused(
    result: Result<impl std::fmt::Debug, tonic::Status>,
    code: Code,
    setting: &str,
) -> String {
    let status = result.expect_err("over the limit is refused");
    assert_eq!(status.code(), code, "{}", status.message());
    assert!(
        status.message().contains(setting),
        "the refusal names {setting}: {}",
        status.message()
    );
    format!("{:?}: {}", status.code(), status.message())
}

/// `POST path` with a body of `len` bytes over HTTP/1.1; the response's status code.
async fn http_post(addr: SocketAddr, path: &str, len: usize) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {len}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.expect("write head");
    // The server may answer 413 before reading the body: a failed write is its refusal.
    let _ = stream.write_all(&vec![b' '; len]).await;
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response).await;
    let response = String::from_utf8_lossy(&response);
    response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("an HTTP response: {response:?}"))
}

type Telemetry = v1::telemetry_service_client::TelemetryServiceClient<tonic::transport::Channel>;
type HeldCall = tokio::task::JoinHandle<Result<tonic::Response<v1::SignalBatchAck>, tonic::Status>>;

/// A ReportSignals stream that stays open after its first signal (`n`), until its sender is
/// dropped. The first signal makes the client send the call.
async fn held_stream(
    telemetry: &Telemetry,
    n: usize,
) -> (tokio::sync::mpsc::Sender<v1::Signal>, HeldCall) {
    let (send, receive) = tokio::sync::mpsc::channel(1);
    send.send(signal(n)).await.expect("the stream is open");
    let mut telemetry = telemetry.clone();
    let call = tokio::spawn(async move {
        telemetry
            .report_signals(tokio_stream::wrappers::ReceiverStream::new(receive))
            .await
    });
    (send, call)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_bounded_resource_is_accepted_under_and_refused_over_its_limit() {
    let max_queue_body = MAX_QUEUE_BODY.to_string();
    let (max_claims, max_text, max_message, max_stream, max_concurrent, timeout) = (
        MAX_CLAIMS.to_string(),
        MAX_TEXT_BYTES.to_string(),
        MAX_MESSAGE_BYTES.to_string(),
        MAX_STREAM.to_string(),
        MAX_CONCURRENT.to_string(),
        TIMEOUT_MS.to_string(),
    );
    let sandbox = Sandbox::embedded(&[
        ("firewall.max_claims", max_claims.as_str()),
        ("firewall.max_text_bytes", max_text.as_str()),
        ("services.max_message_bytes", max_message.as_str()),
        ("services.max_stream_messages", max_stream.as_str()),
        ("services.max_concurrent_requests", max_concurrent.as_str()),
        ("services.request_timeout_ms", timeout.as_str()),
        ("queue.max_body_bytes", max_queue_body.as_str()),
    ])
    .await;
    let clients = sandbox.clients();
    let last = clients
        .push_all(
            T,
            "admin",
            [
                ontology(ONTOLOGY),
                doc(
                    "pricing",
                    "pricing-page",
                    "The Pro plan costs €59 per month.",
                    &[],
                    0.0,
                ),
            ],
        )
        .await;
    let applied =
        ontoloop_runtime::wait_for_sequence(&sandbox.ctx.store, T, last, Duration::from_secs(30))
            .await;
    assert!(applied.is_ok(), "the world is applied: {applied:?}");
    let mut rows = Vec::new();
    let mut firewall = clients.firewall.clone();
    let mut telemetry = clients.telemetry.clone();

    // Claims per Validate, all on one slot with distinct values: the worst case of the
    // pairwise check. The response stays within a fixed size per claim.
    let started = Instant::now();
    let response = firewall
        .validate(validate(claims(MAX_CLAIMS)))
        .await
        .expect("the largest claim list is answered")
        .into_inner();
    let took = started.elapsed();
    assert_eq!(response.verdicts.len(), MAX_CLAIMS);
    let inconsistent = |v: &v1::ClaimVerdict| {
        v.reasons
            .iter()
            .filter(|r| r.code == "temporal_inconsistency")
            .count()
    };
    assert!(response.verdicts.iter().all(|v| inconsistent(v) == 1));
    let bytes = response.encoded_len();
    assert!(
        bytes < MAX_CLAIMS * 1024,
        "{bytes} bytes for {MAX_CLAIMS} claims"
    );
    let over = refused(
        firewall.validate(validate(claims(MAX_CLAIMS + 1))).await,
        Code::InvalidArgument,
        "firewall.max_claims",
    );
    rows.push(Row {
        resource: "claims per Validate",
        limit: format!("firewall.max_claims = {MAX_CLAIMS}"),
        behaviour: format!(
            "{MAX_CLAIMS} answered ({bytes} B, {} ms, one temporal_inconsistency reason each); \
             {} → {over}",
            took.as_millis(),
            MAX_CLAIMS + 1
        ),
    });

    // Sentences per answer text.
    let sentences = |n: usize| {
        (0..n)
            .map(|i| format!("The Pro plan costs €{i} per month."))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let text = sentences(MAX_CLAIMS);
    assert!(text.len() <= MAX_TEXT_BYTES, "{} bytes", text.len());
    let response = firewall
        .validate(validate(v1::validate_request::Input::Text(text)))
        .await
        .expect("the longest text of sentences is answered")
        .into_inner();
    assert_eq!(
        response.coverage.as_ref().map(|c| c.sentences),
        Some(MAX_CLAIMS as u32)
    );
    let over = refused(
        firewall
            .validate(validate(v1::validate_request::Input::Text(sentences(
                MAX_CLAIMS + 1,
            ))))
            .await,
        Code::InvalidArgument,
        "firewall.max_claims",
    );
    rows.push(Row {
        resource: "sentences of a Validate text",
        limit: format!("firewall.max_claims = {MAX_CLAIMS}"),
        behaviour: format!(
            "{MAX_CLAIMS} answered ({} B); {} → {over}",
            response.encoded_len(),
            MAX_CLAIMS + 1
        ),
    });

    // Bytes of an answer text (one sentence the patterns read, padded with spaces).
    let long = |n: usize| {
        let mut text = "The Pro plan costs €59 per month.".to_owned();
        text.push_str(&" ".repeat(n - text.len()));
        v1::validate_request::Input::Text(text)
    };
    let response = firewall
        .validate(validate(long(MAX_TEXT_BYTES)))
        .await
        .expect("the longest text is answered")
        .into_inner();
    let over = refused(
        firewall.validate(validate(long(MAX_TEXT_BYTES + 1))).await,
        Code::InvalidArgument,
        "firewall.max_text_bytes",
    );
    rows.push(Row {
        resource: "bytes of a Validate text",
        limit: format!("firewall.max_text_bytes = {MAX_TEXT_BYTES}"),
        behaviour: format!(
            "{MAX_TEXT_BYTES} answered ({} B); {} → {over}",
            response.encoded_len(),
            MAX_TEXT_BYTES + 1
        ),
    });

    // One gRPC message: a claim whose object fills the request to the byte.
    let sized = |bytes: usize| {
        let mut request = validate(claims(1));
        let base = request.encoded_len();
        if let Some(v1::validate_request::Input::Claims(list)) = &mut request.input {
            // The object's length prefix grows by one byte past 127 and 16383 bytes.
            let mut object = "x".repeat(bytes - base);
            list.claims[0].object = object.clone();
            while request.encoded_len() > bytes {
                object.pop();
                if let Some(v1::validate_request::Input::Claims(list)) = &mut request.input {
                    list.claims[0].object = object.clone();
                }
            }
        }
        request
    };
    let under = sized(MAX_MESSAGE_BYTES);
    assert_eq!(under.encoded_len(), MAX_MESSAGE_BYTES);
    firewall
        .validate(under)
        .await
        .expect("a message of the largest size is read");
    let over = refused(
        firewall.validate(sized(MAX_MESSAGE_BYTES + 1)).await,
        Code::ResourceExhausted,
        "services.max_message_bytes",
    );
    rows.push(Row {
        resource: "one gRPC message (every service)",
        limit: format!("services.max_message_bytes = {MAX_MESSAGE_BYTES}"),
        behaviour: format!(
            "{MAX_MESSAGE_BYTES} B read; {} B → {over}",
            MAX_MESSAGE_BYTES + 1
        ),
    });

    // Signals per ReportSignals stream.
    let ack = telemetry
        .report_signals(tokio_stream::iter((0..MAX_STREAM).map(signal)))
        .await
        .expect("the longest stream is accepted")
        .into_inner();
    assert_eq!(ack.accepted + ack.duplicates, MAX_STREAM as u64);
    let over = refused(
        telemetry
            .report_signals(tokio_stream::iter((100..101 + MAX_STREAM).map(signal)))
            .await,
        Code::InvalidArgument,
        "services.max_stream_messages",
    );
    rows.push(Row {
        resource: "signals per ReportSignals stream",
        limit: format!("services.max_stream_messages = {MAX_STREAM}"),
        behaviour: format!("{MAX_STREAM} accepted; {} → {over}", MAX_STREAM + 1),
    });

    // Calls in flight on one service: held open by idle ReportSignals streams.
    let mut held = Vec::new();
    for n in 0..MAX_CONCURRENT - 1 {
        held.push(held_stream(&clients.telemetry, 2000 + n).await);
    }
    let ready = wait_until(Duration::from_secs(5), || {
        let mut telemetry = telemetry.clone();
        async move { telemetry.report_signal(signal(1000)).await.is_ok() }
    })
    .await;
    assert!(
        ready,
        "a call beside {} held ones is served",
        MAX_CONCURRENT - 1
    );
    held.push(held_stream(&clients.telemetry, 3000).await);
    // The last held stream takes the last permit once its call reaches the server.
    // On a loaded machine a held call may outlive `services.request_timeout_ms` before the probe
    // gets through; one that ended is held again, so the permits stay taken.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut again = 4000;
    let refusal = loop {
        for slot in held.iter_mut() {
            if slot.1.is_finished() {
                let (_, ended) =
                    std::mem::replace(slot, held_stream(&clients.telemetry, again).await);
                again += 1;
                // It may only have run out of time, or — a stream held again before the permit
                // of the one it replaced was back — have found every permit taken.
                let ended = ended.await.expect("the call task");
                match ended.as_ref().map_err(tonic::Status::code) {
                    Err(Code::ResourceExhausted) => refused(
                        ended,
                        Code::ResourceExhausted,
                        "services.max_concurrent_requests",
                    ),
                    _ => refused(ended, Code::DeadlineExceeded, "services.request_timeout_ms"),
                };
            }
        }
        match telemetry.report_signal(signal(1001)).await {
            Err(status) if status.code() == Code::ResourceExhausted => break status,
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(20)).await,
            other => panic!("a call beyond {MAX_CONCURRENT} in flight is refused: {other:?}"),
        }
    };
    let over = refused(
        Err::<(), _>(refusal),
        Code::ResourceExhausted,
        "services.max_concurrent_requests",
    );
    // Other services keep their own permits.
    firewall
        .validate(validate(claims(1)))
        .await
        .expect("another service is not affected");
    rows.push(Row {
        resource: "calls in flight per service",
        limit: format!("services.max_concurrent_requests = {MAX_CONCURRENT}"),
        behaviour: format!(
            "{} held + 1 served; {MAX_CONCURRENT} held + 1 → {over}",
            MAX_CONCURRENT - 1
        ),
    });

    // Time per call: the held streams, never ended, run out of time.
    let started = Instant::now();
    let mut outcome = String::new();
    for (sender, call) in held {
        let result = call.await.expect("the call task");
        outcome = refused(
            result,
            Code::DeadlineExceeded,
            "services.request_timeout_ms",
        );
        drop(sender);
    }
    let waited = started.elapsed();
    assert!(waited < Duration::from_millis(TIMEOUT_MS * 2), "{waited:?}");
    telemetry
        .report_signal(signal(1002))
        .await
        .expect("the permits are back once the calls ended");
    rows.push(Row {
        resource: "time per call",
        limit: format!("services.request_timeout_ms = {TIMEOUT_MS}"),
        behaviour: format!("calls answered sooner pass; an idle stream → {outcome}"),
    });

    // HTTP bodies on the HTTP ports (the dashboard's forms).
    let dashboard = sandbox.http_addr(ServiceKind::Analyst);
    let under = http_post(dashboard, "/api/decide", MAX_HTTP_BODY).await;
    assert_ne!(under, 413, "a body of the largest size is read");
    let over = http_post(dashboard, "/api/decide", MAX_HTTP_BODY + 1).await;
    assert_eq!(over, 413);
    rows.push(Row {
        resource: "HTTP request body (metrics, dashboard)",
        limit: format!("services.max_http_body_bytes = {MAX_HTTP_BODY}"),
        behaviour: format!(
            "{MAX_HTTP_BODY} B read (answered {under} by the route); {} B → {over} Payload Too Large",
            MAX_HTTP_BODY + 1
        ),
    });

    // Patterns of an ontology (ontology.set at the intake).
    let with_patterns = |n: usize| {
        let patterns: Vec<String> = (0..n)
            .map(|i| format!("The {{s}} plan costs €{{o:number}} per month ({i})."))
            .collect();
        ontology(
            &serde_json::json!({
                "predicates": [{"name": "price", "subject_type": "plan", "object_type": "number",
                                "patterns": patterns}],
                "authority": {"pricing-page": 3, "default": 2}
            })
            .to_string(),
        )
    };
    let most = ontoloop_core::knowledge::ontology::MAX_PATTERNS_PER_PREDICATE;
    clients
        .push(T, "admin", with_patterns(most))
        .await
        .expect("the most patterns are accepted");
    let over = refused(
        clients.push(T, "admin", with_patterns(most + 1)).await,
        Code::InvalidArgument,
        "MAX_PATTERNS_PER_PREDICATE",
    );
    rows.push(Row {
        resource: "patterns per ontology predicate",
        limit: format!(
            "MAX_PATTERNS_PER_PREDICATE = {most} (also ≤ 500 predicates, ≤ 500 chars each)"
        ),
        behaviour: format!("{most} accepted; {} → {over}", most + 1),
    });

    // Bodies on the queue: the intake refuses an event whose body would be over the cap, and a
    // consumer dead-letters a larger body (published by other ways) before reading it.
    let page = |len: usize| doc("big", "wiki", &"word ".repeat(len / 5), &[], 0.0);
    clients
        .push(T, "admin", page(MAX_QUEUE_BODY / 2))
        .await
        .expect("an event under the cap is accepted");
    let over_intake = refused(
        clients.push(T, "admin", page(MAX_QUEUE_BODY)).await,
        Code::InvalidArgument,
        "queue.max_body_bytes",
    );
    let queue = sandbox.ctx.queue.clone();
    let mut letters = queue
        .consume_dead_letters(ontoloop_core::topics::EVENTS)
        .await
        .expect("consume the dead letters");
    for (id, len) in [("at-cap", MAX_QUEUE_BODY), ("over-cap", MAX_QUEUE_BODY + 1)] {
        queue
            .publish(
                ontoloop_core::topics::EVENTS,
                ontoloop_queue::Message::with_id(id, "x".repeat(len)),
            )
            .await
            .expect("publish");
    }
    let mut reasons = std::collections::BTreeMap::new();
    while reasons.len() < 2 {
        let letter = tokio::time::timeout(Duration::from_secs(30), letters.next())
            .await
            .expect("both bodies are dead-lettered")
            .expect("open")
            .expect("delivery");
        let reason = letter
            .message
            .headers
            .get(ontoloop_queue::REASON_HEADER)
            .cloned();
        reasons.insert(letter.message.id.clone(), reason.unwrap_or_default());
        letter.ack().await.expect("ack");
    }
    assert!(
        !reasons["at-cap"].contains("queue.max_body_bytes"),
        "a body at the cap is read (and refused as the JSON it is not): {}",
        reasons["at-cap"]
    );
    assert_eq!(
        reasons["over-cap"],
        format!(
            "the body is {} bytes, over queue.max_body_bytes ({MAX_QUEUE_BODY})",
            MAX_QUEUE_BODY + 1
        )
    );
    rows.push(Row {
        resource: "message body on a queue",
        limit: format!("queue.max_body_bytes = {MAX_QUEUE_BODY}"),
        behaviour: format!(
            "intake: an event of a {} B page accepted, one of {MAX_QUEUE_BODY} B → {over_intake}; \
             consumer: {MAX_QUEUE_BODY} B read ({}), {} B dead-lettered unread: {}",
            MAX_QUEUE_BODY / 2,
            reasons["at-cap"],
            MAX_QUEUE_BODY + 1,
            reasons["over-cap"]
        ),
    });

    println!("\nresource | limit | behaviour at the limit");
    println!("--- | --- | ---");
    for row in &rows {
        println!("{} | {} | {}", row.resource, row.limit, row.behaviour);
    }
    sandbox.shutdown().await.expect("shutdown");
}
