//! Browser tests: headless Chromium, driven through `ontoloop_tests::browser`, clicks through a
//! page served from the test. The first checks the driver itself on a one-button page; the
//! second runs the analyst's review dashboard against a fake JSON API and checks which
//! decisions reach it. Screenshots land in `target/test-artifacts/`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use ontoloop_tests::browser::{Browser, artifact_path};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);

const SMOKE_PAGE: &str = r#"<!doctype html>
<title>smoke</title>
<button id="go" type="button">Go</button>
<p id="out">waiting</p>
<script>
  document.getElementById("go").addEventListener("click", () => {
    document.getElementById("out").textContent = "clicked";
  });
</script>
"#;

const DASHBOARD: &str = include_str!("../../services/analyst/assets/dashboard.html");

#[tokio::test]
async fn browser_clicks_a_button_and_reads_the_result() {
    let addr = serve(Arc::new(|_: &Method, uri: &Uri, _: &[u8]| {
        match uri.path() {
            "/" => html(SMOKE_PAGE),
            _ => json_response(StatusCode::NOT_FOUND, json!({ "error": "not found" })),
        }
    }))
    .await;
    let browser = Browser::launch().await.expect("browser launches");

    browser
        .goto(&format!("http://{addr}/"))
        .await
        .expect("page loads");
    assert_eq!(browser.text("#out").await.expect("read #out"), "waiting");
    browser.click("#go").await.expect("click #go");
    browser
        .wait_for_text("#out", "clicked", WAIT)
        .await
        .expect("text changes");
    assert_eq!(browser.text("#out").await.expect("read #out"), "clicked");
    let title = browser
        .execute("return document.title;", vec![])
        .await
        .expect("run a script");
    assert_eq!(title, json!("smoke"));
    let missing = browser.find("#nowhere").await.expect_err("no such element");
    assert!(
        format!("{missing:#}").contains("no such element"),
        "{missing:#}"
    );

    let shot = artifact_path("browser-smoke.png").expect("artifact dir");
    browser.screenshot(&shot).await.expect("screenshot");
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "not a PNG: {}",
        shot.display()
    );
    browser.close().await.expect("browser closes");
}

#[tokio::test]
async fn dashboard_sends_the_reviewers_decisions() {
    let api = FakeApi::new(vec![
        update("u-1", "acme-corp", "ceo", "Jane Roe", "John Doe", 0.92),
        update(
            "u-2",
            "globex",
            "hq_city",
            "Springfield",
            "Shelbyville",
            0.61,
        ),
        update("u-3", "initech", "employees", "300", "320", 0.55),
    ]);
    let addr = api.serve().await;
    let browser = Browser::launch().await.expect("browser launches");

    browser
        .goto(&format!("http://{addr}/?tenant=acme&reviewer=alice"))
        .await
        .expect("dashboard loads");
    for id in ["u-1", "u-2", "u-3"] {
        browser
            .wait_for(&row(id), WAIT)
            .await
            .expect("queue rows render");
    }
    assert_eq!(
        browser.text("#queue-count").await.expect("read the count"),
        "3"
    );
    let shot = artifact_path("dashboard-fake.png").expect("artifact dir");
    browser.screenshot(&shot).await.expect("screenshot");

    browser
        .click(&action("u-1", "approve"))
        .await
        .expect("approve u-1");
    browser
        .wait_for_text("#status", "approved u-1", WAIT)
        .await
        .expect("status says approved");
    wait_gone(&browser, &row("u-1")).await;

    browser
        .click(&action("u-2", "reject"))
        .await
        .expect("reject u-2");
    browser
        .wait_for_text("#status", "rejected u-2", WAIT)
        .await
        .expect("status says rejected");
    wait_gone(&browser, &row("u-2")).await;

    // Modify without a value is refused on the page and sends nothing.
    browser
        .click(&action("u-3", "modify"))
        .await
        .expect("modify u-3");
    browser
        .wait_for_text("#status", "enter a new value", WAIT)
        .await
        .expect("status asks for a value");
    browser
        .type_text(
            &format!(r#"{} input[data-role="new-value"]"#, row("u-3")),
            "325",
        )
        .await
        .expect("type the new value");
    browser
        .click(&action("u-3", "modify"))
        .await
        .expect("modify u-3");
    browser
        .wait_for_text("#status", "modified u-3", WAIT)
        .await
        .expect("status says modified");
    wait_gone(&browser, &row("u-3")).await;
    browser
        .wait_for_text("#queue", "queue is empty", WAIT)
        .await
        .expect("empty queue");
    assert_eq!(
        browser.text("#queue-count").await.expect("read the count"),
        "0"
    );
    browser
        .wait_for_text("#decisions", "u-3", WAIT)
        .await
        .expect("recent decisions list the new ones");

    let decided: Vec<(String, String, String)> = api
        .decisions()
        .iter()
        .map(|d| {
            assert_eq!(d["tenant"], "acme", "{d}");
            assert_eq!(d["reviewer"], "alice", "{d}");
            let field = |k: &str| d[k].as_str().unwrap_or_default().to_owned();
            (field("update_id"), field("decision"), field("new_value"))
        })
        .collect();
    let expected = [
        ("u-1", "approve", ""),
        ("u-2", "reject", ""),
        ("u-3", "modify", "325"),
    ]
    .map(|(a, b, c)| (a.to_owned(), b.to_owned(), c.to_owned()));
    assert_eq!(decided, expected);

    browser.click("#tab-patterns").await.expect("open patterns");
    browser
        .wait_for_text("#patterns", "acme-corp", WAIT)
        .await
        .expect("patterns render");
    browser
        .screenshot(artifact_path("dashboard-fake-patterns.png").expect("artifact dir"))
        .await
        .expect("screenshot");
    browser
        .click("#tab-freshness")
        .await
        .expect("open freshness");
    browser
        .wait_for_text("#freshness", "eu-west", WAIT)
        .await
        .expect("freshness renders");
    browser
        .screenshot(artifact_path("dashboard-fake-freshness.png").expect("artifact dir"))
        .await
        .expect("screenshot");
    browser.close().await.expect("browser closes");
}

#[tokio::test]
async fn dashboard_shows_api_errors_in_the_status_line() {
    let api = FakeApi::new(vec![update("u-9", "acme-corp", "ceo", "", "John Doe", 0.9)]);
    api.fail_decisions_with("update u-9 belongs to another tenant");
    let addr = api.serve().await;
    let browser = Browser::launch().await.expect("browser launches");

    browser
        .goto(&format!("http://{addr}/"))
        .await
        .expect("dashboard loads");
    browser
        .wait_for(&row("u-9"), WAIT)
        .await
        .expect("row renders");
    browser
        .click(&action("u-9", "defer"))
        .await
        .expect("defer u-9");
    let status = browser
        .wait_for_text("#status", "another tenant", WAIT)
        .await
        .expect("status shows the error");
    assert!(status.contains("u-9"), "{status}");
    // The row stays, usable, and the page used its default tenant and reviewer.
    assert_eq!(
        browser.text("#queue-count").await.expect("read the count"),
        "1"
    );
    let decided = api.decisions();
    assert_eq!(decided.len(), 1);
    assert_eq!(
        (&decided[0]["tenant"], &decided[0]["reviewer"]),
        (&json!("acme"), &json!("reviewer"))
    );
    browser.close().await.expect("browser closes");
}

/// The selector of a queue row.
fn row(id: &str) -> String {
    format!(r#"[data-update-id="{id}"]"#)
}

/// The selector of a decision button in a queue row.
fn action(id: &str, action: &str) -> String {
    format!(r#"#queue {} button[data-action="{action}"]"#, row(id))
}

async fn wait_gone(browser: &Browser, css: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !browser
        .find_all(&format!("#queue {css}"))
        .await
        .expect("find rows")
        .is_empty()
    {
        assert!(tokio::time::Instant::now() < deadline, "{css} still shown");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn update(
    id: &str,
    entity: &str,
    predicate: &str,
    before: &str,
    after: &str,
    confidence: f64,
) -> Value {
    json!({
        "id": id,
        "pattern_id": format!("p-{entity}"),
        "entity": entity,
        "predicate": predicate,
        "before": before,
        "after": after,
        "confidence": confidence,
        "confidence_variance": 0.0009,
        "impact_radius": 4,
        "domain": "financial",
        "sources": [
            { "source_id": "s-annual-report", "version": 3, "title": "Annual report 2025" },
            { "source_id": "s-press", "version": 1, "title": "Press release, 12 March" }
        ],
        "priority": confidence * 10.0,
        "created_at": "2026-01-15T09:30:00Z",
        "affected_queries": [format!("who is the {predicate} of {entity}?"), format!("{entity} {predicate}")],
        "reason": format!("4 agents reported a contradiction on {entity}.{predicate}; the newest source says {after}"),
    })
}

/// The analyst's dashboard API, in memory: serves the page, lists what is still undecided, and
/// records every decision posted to it.
#[derive(Clone)]
struct FakeApi {
    state: Arc<Mutex<FakeState>>,
}

struct FakeState {
    updates: Vec<Value>,
    decisions: Vec<Value>,
    decide_error: Option<String>,
}

impl FakeApi {
    fn new(updates: Vec<Value>) -> Self {
        let state = FakeState {
            updates,
            decisions: Vec::new(),
            decide_error: None,
        };
        FakeApi {
            state: Arc::new(Mutex::new(state)),
        }
    }

    fn fail_decisions_with(&self, error: &str) {
        self.state.lock().expect("state lock").decide_error = Some(error.to_owned());
    }

    /// Every decision posted, in order, including refused ones.
    fn decisions(&self) -> Vec<Value> {
        self.state.lock().expect("state lock").decisions.clone()
    }

    async fn serve(&self) -> SocketAddr {
        let api = self.clone();
        serve(Arc::new(move |method: &Method, uri: &Uri, body: &[u8]| {
            api.handle(method, uri, body)
        }))
        .await
    }

    fn handle(&self, method: &Method, uri: &Uri, body: &[u8]) -> Response<Full<Bytes>> {
        let mut state = self.state.lock().expect("state lock");
        match (method.clone(), uri.path()) {
            (Method::GET, "/") => html(DASHBOARD),
            (Method::GET, "/api/queue") => {
                json_response(StatusCode::OK, json!({ "updates": state.updates }))
            }
            (Method::POST, "/api/decide") => {
                let Ok(decision) = serde_json::from_slice::<Value>(body) else {
                    return json_response(
                        StatusCode::BAD_REQUEST,
                        json!({ "error": "body is not JSON" }),
                    );
                };
                state.decisions.push(decision.clone());
                if let Some(error) = &state.decide_error {
                    return json_response(StatusCode::BAD_REQUEST, json!({ "error": error }));
                }
                let id = decision["update_id"].clone();
                state.updates.retain(|u| u["id"] != id);
                let applied = matches!(decision["decision"].as_str(), Some("approve" | "modify"));
                json_response(
                    StatusCode::OK,
                    json!({ "applied": applied, "already_decided": false }),
                )
            }
            (Method::GET, "/api/patterns") => json_response(
                StatusCode::OK,
                json!({ "patterns": [
                    { "id": "p-acme-corp", "kind": "contradiction", "key": "acme-corp.ceo", "signal_count": 12,
                      "agent_count": 4, "severity": "high", "status": "open",
                      "first_seen": "2026-01-14T08:00:00Z", "last_seen": "2026-01-15T09:00:00Z" },
                    { "id": "p-globex", "kind": "stale_sector", "key": "real-estate", "signal_count": 5,
                      "agent_count": 2, "severity": "medium", "status": "open",
                      "first_seen": "2026-01-10T08:00:00Z", "last_seen": "2026-01-15T07:00:00Z" }
                ] }),
            ),
            (Method::GET, "/api/freshness") => json_response(
                StatusCode::OK,
                json!({ "regions": [
                    { "region": "eu-west", "facts": 1200, "stale": 84, "fresh_share": 0.93, "last_extracted": "2026-01-15T09:00:00Z" },
                    { "region": "us-east", "facts": 860, "stale": 301, "fresh_share": 0.65, "last_extracted": "2026-01-12T18:00:00Z" }
                ] }),
            ),
            (Method::GET, "/api/decisions") => {
                let decided: Vec<Value> = state
                    .decisions
                    .iter()
                    .rev()
                    .map(|d| {
                        json!({ "update_id": d["update_id"], "decision": d["decision"], "reviewer": d["reviewer"],
                                "new_value": d["new_value"], "note": d["note"], "decided_at": "2026-01-15T10:00:00Z" })
                    })
                    .collect();
                json_response(StatusCode::OK, json!({ "decisions": decided }))
            }
            _ => json_response(StatusCode::NOT_FOUND, json!({ "error": "not found" })),
        }
    }
}

type Handler = Arc<dyn Fn(&Method, &Uri, &[u8]) -> Response<Full<Bytes>> + Send + Sync>;

/// Serves `handler` over HTTP/1.1 on a free local port until the test ends.
async fn serve(handler: Handler) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a local port");
    let addr = listener.local_addr().expect("local address");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let handler = handler.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<Incoming>| {
                    let handler = handler.clone();
                    async move {
                        let (parts, body) = request.into_parts();
                        let body = body.collect().await?.to_bytes();
                        Ok::<_, hyper::Error>(handler(&parts.method, &parts.uri, &body))
                    }
                });
                // A connection the browser drops mid-request is not the test's concern.
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

fn html(page: &str) -> Response<Full<Bytes>> {
    response(StatusCode::OK, "text/html; charset=utf-8", page.to_owned())
}

fn json_response(status: StatusCode, body: Value) -> Response<Full<Bytes>> {
    response(status, "application/json", body.to_string())
}

fn response(status: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(hyper::header::CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("valid response")
}
