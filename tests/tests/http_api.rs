//! The HTTP/JSON API (`libs/runtime/src/gateway.rs`) against the running system with
//! `auth.mode = "jwt"`: a world pushed and asked over HTTP alone, in the proto3 JSON mapping; the
//! gRPC errors as HTTP statuses with the code and reason (no token, a role that may not call, a
//! body that does not read, a field the message lacks); `/openapi.json` on every service's HTTP
//! port; then schemathesis (from the project's Python environment, `.venv/`, which
//! `scripts/python-env.sh` fills from `scripts/requirements-tools.txt`) against each service's
//! document with an admin token: no 5xx, every reply matching its schema and content type.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use ontoloop_auth::{AuthSettings, Role};
use ontoloop_core::ServiceKind;
use ontoloop_tests::Sandbox;
use ontoloop_tests::http::{Answer, send};
use ontoloop_tests::tokens::{Holder, jwt};
use serde_json::{Value, json};

const SECRET: &str = "http-api-suite-secret-0123456789abcdef";
const TENANT: &str = "acme";

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]}],
  "authority":{"pricing-page":3,"default":1}}"#;

fn token(auth: &AuthSettings, principal: &str, roles: &[Role]) -> String {
    Holder {
        tenant: TENANT,
        principal,
        groups: &[],
        roles,
    }
    .token(auth)
}

/// `POST path` with `body` as JSON and the bearer `token`.
async fn post(addr: SocketAddr, path: &str, token: Option<&str>, body: &str) -> Answer {
    let authorization = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = authorization
        .as_deref()
        .map(|value| vec![("Authorization", value)])
        .unwrap_or_default();
    send(addr, "POST", path, &headers, Some(body)).await
}

/// Pushes one event over HTTP and returns its sequence number.
async fn push(sandbox: &Sandbox, token: &str, event: Value) -> u64 {
    let answer = post(
        sandbox.http_addr(ServiceKind::Telemetry),
        "/ontoloop.v1.TelemetryService/PushEvent",
        Some(token),
        &event.to_string(),
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.header("content-type"), Some("application/json"));
    answer.json()["sequence"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a 64-bit sequence is a JSON string: {answer:?}"))
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rpc_answers_json_over_http_with_the_grpc_errors() {
    let sandbox = Sandbox::embedded(&jwt(SECRET)).await;
    let auth = sandbox.ctx.settings.auth.clone();
    let admin = token(&auth, "loader", &[Role::Admin]);
    let agent = token(&auth, "agent-1", &[Role::Agent]);

    push(
        &sandbox,
        &admin,
        json!({ "ontologySet": { "ontologyJson": ONTOLOGY } }),
    )
    .await;
    let seq = push(
        &sandbox,
        &admin,
        json!({ "docUpsert": { "docId": "pricing", "title": "Pricing", "origin": "pricing-page",
                               "body": "The Pro plan costs €49 per month." } }),
    )
    .await;

    let retrieval = sandbox.http_addr(ServiceKind::Retrieval);
    let lookup =
        json!({ "entity": "Pro plan", "predicatePath": ["price"], "minSequence": seq.to_string() });
    let answer = post(
        retrieval,
        "/ontoloop.v1.RetrievalService/Lookup",
        Some(&agent),
        &lookup.to_string(),
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let body = answer.json();
    assert_eq!(body["value"], "49", "{body}");
    assert_eq!(
        body["evidence"][0]["sourceId"], "pricing",
        "an answer carries its provenance: {body}"
    );

    let asked = post(
        retrieval,
        "/ontoloop.v1.RetrievalService/Ask",
        Some(&agent),
        r#"{"text": "How much does the Pro plan cost?"}"#,
    )
    .await;
    assert_eq!(asked.status, 200, "{asked:?}");
    assert_eq!(asked.json()["value"], "49", "{asked:?}");

    // The errors are the gRPC ones, as HTTP statuses with the code's name and the reason.
    let anonymous = post(
        retrieval,
        "/ontoloop.v1.RetrievalService/Ask",
        None,
        r#"{"text": "x"}"#,
    )
    .await;
    assert_eq!(anonymous.status, 401, "{anonymous:?}");
    assert_eq!(anonymous.json()["code"], "UNAUTHENTICATED", "{anonymous:?}");
    let forbidden = post(
        sandbox.http_addr(ServiceKind::Analyst),
        "/ontoloop.v1.AnalystService/Decide",
        Some(&agent),
        r#"{"updateId": "u-1"}"#,
    )
    .await;
    assert_eq!(forbidden.status, 403, "{forbidden:?}");
    assert_eq!(
        forbidden.json()["code"],
        "PERMISSION_DENIED",
        "{forbidden:?}"
    );
    let unknown = post(
        retrieval,
        "/ontoloop.v1.RetrievalService/Ask",
        Some(&agent),
        r#"{"question": "x"}"#,
    )
    .await;
    assert_eq!(unknown.status, 400, "{unknown:?}");
    assert_eq!(unknown.json()["code"], "INVALID_ARGUMENT", "{unknown:?}");
    assert!(
        unknown.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("question")),
        "the reason names the field: {unknown:?}"
    );
    let broken = post(
        retrieval,
        "/ontoloop.v1.RetrievalService/Ask",
        Some(&agent),
        "{",
    )
    .await;
    assert_eq!(broken.status, 400, "{broken:?}");
    let empty = post(
        retrieval,
        "/ontoloop.v1.RetrievalService/Ask",
        Some(&agent),
        "",
    )
    .await;
    assert_eq!(
        empty.status, 400,
        "an empty question is refused by the service: {empty:?}"
    );
    assert_eq!(empty.json()["code"], "INVALID_ARGUMENT", "{empty:?}");

    // A foreign Host (DNS rebinding) is refused before the API sees the call.
    let rebound = send(
        retrieval,
        "POST",
        "/ontoloop.v1.RetrievalService/Ask",
        &[
            ("Host", "evil.example:80"),
            ("Authorization", &format!("Bearer {agent}")),
        ],
        Some(r#"{"text": "x"}"#),
    )
    .await;
    assert_eq!(rebound.status, 403, "{rebound:?}");

    // Every service describes its own methods; the streaming one is gRPC only.
    for kind in ServiceKind::ALL {
        let spec = send(sandbox.http_addr(kind), "GET", "/openapi.json", &[], None).await;
        assert_eq!(spec.status, 200, "{spec:?}");
        let spec = spec.json();
        let paths = spec["paths"].as_object().expect("paths");
        assert!(!paths.is_empty(), "{spec}");
        assert!(
            paths
                .keys()
                .all(|p| p.starts_with(&format!("/{}/", kind.grpc_name()))),
            "{spec}"
        );
        assert!(
            paths
                .get("/ontoloop.v1.TelemetryService/ReportSignals")
                .is_none(),
            "streams are gRPC only"
        );
    }

    schemathesis(&sandbox, &admin);
    sandbox.shutdown().await.expect("shutdown");
}

/// schemathesis against every service's `/openapi.json` with `token`: it must find no 5xx and
/// no reply off its schema, status or content type.
fn schemathesis(sandbox: &Sandbox, token: &str) {
    let root = repo_root();
    let python =
        ontoloop_testkit::python::venv_python(&root, "schemathesis", "scripts/python-env.sh");
    let cli = python.with_file_name("schemathesis");
    let header = format!("Authorization: Bearer {token}");
    for kind in ServiceKind::ALL {
        let url = format!("http://{}/openapi.json", sandbox.http_addr(kind));
        let output = Command::new(&cli)
            .args([
                "run",
                &url,
                "--header",
                &header,
                "--checks",
                "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
                "--max-examples",
                "15",
                "--workers",
                "1",
                "--request-timeout",
                "30",
            ])
            .env("SCHEMATHESIS_TELEMETRY", "false")
            .env("NO_COLOR", "1")
            .current_dir(std::env::temp_dir())
            .output()
            .expect("run schemathesis");
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        println!("schemathesis {}:\n{text}", kind.name());
        assert!(
            output.status.success(),
            "schemathesis found faults in the {} API:\n{text}",
            kind.name()
        );
    }
}
