//! The dashboard's sign-in, over plain HTTP against the system served as `ontoloop up` serves it,
//! with `auth.mode = "jwt"`: without a session every API call is 401; a token without the
//! reviewer role cannot sign in; a signed-in reviewer's state changes need the session's CSRF
//! token (missing or forged: 403); a foreign Origin or Host is 403; a body or query naming
//! another tenant or reviewer is 403; none of those refusals leaves a decision. Then the session
//! approves one update and the store holds exactly that decision, by the token's reviewer; after
//! sign-out the cookie opens nothing. In headless Chromium, the page refuses an agent's token,
//! signs a reviewer in, approves one update as that reviewer and signs out. (`dashboard.rs`, the
//! full browser test, runs with auth off.)

use std::time::Duration;

use ontoloop_auth::{AuthSettings, Role};
use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_tests::browser::{Browser, artifact_path};
use ontoloop_tests::http::send as http;
use ontoloop_tests::tokens::{Holder, jwt, now};
use ontoloop_tests::{Records, Sandbox, ontology, wait_until};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(15);
const TENANT: &str = "acme";
const SECRET: &str = "dashboard-suite-secret-0123456789abcdef";
const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"budget","subject_type":"project","object_type":"number","patterns":["{s} has a budget of {o}."]}],
  "authority":{"project-record":4,"default":2}}"#;

fn token(auth: &AuthSettings, tenant: &str, principal: &str, roles: &[Role], ttl: u64) -> String {
    let holder = Holder {
        tenant,
        principal,
        groups: &[],
        roles,
    };
    holder.token_at(auth, now(), ttl)
}

fn bearer<T>(message: T, token: &str) -> tonic::Request<T> {
    ontoloop_tests::tokens::bearer(message, Some(token))
}

/// A request the dashboard must refuse: what it tries, its headers, its body.
type Refused<'a> = (&'a str, Vec<(&'a str, &'a str)>, String);

/// The system with `auth.mode = "jwt"` and two financial updates waiting for review (as in the
/// browser test), reached with tokens; its auth settings and the ids of Kite's and Lark's updates.
async fn two_updates_waiting() -> (Sandbox, AuthSettings, String, String) {
    let records = Records::new(
        TENANT,
        &[
            (
                "kite.md",
                "# Project Kite\nProject Kite has a budget of 40000.\n",
            ),
            (
                "lark.md",
                "# Project Lark\nProject Lark has a budget of 900.\n",
            ),
        ],
    );
    let mut overrides = vec![("supervisor.seed", "11"), ("auth.leeway_seconds", "0")];
    overrides.extend(jwt(SECRET));
    let sandbox = Sandbox::embedded(&records.and(&overrides)).await;
    let auth = sandbox.ctx.settings.auth.clone();
    let c = sandbox.clients();
    let (mut telemetry, mut retrieval) = (c.telemetry.clone(), c.retrieval.clone());

    // Two financial updates wait for review (as in the browser test), reached with tokens.
    let admin = token(&auth, TENANT, "ops", &[Role::Admin], 600);
    let pushed = telemetry
        .push_event(bearer(
            v1::Event {
                kind: Some(ontology(ONTOLOGY)),
                ..Default::default()
            },
            &admin,
        ))
        .await
        .expect("push the ontology")
        .into_inner()
        .sequence;
    retrieval
        .lookup(bearer(
            v1::LookupRequest {
                entity: "Project Kite".into(),
                predicate_path: vec!["budget".into()],
                min_sequence: pushed,
                ..Default::default()
            },
            &admin,
        ))
        .await
        .expect("the ontology is applied");
    for project in ["Project Kite", "Project Lark"] {
        for n in 0..3 {
            let agent = format!("agent-{n}");
            telemetry
                .report_signal(bearer(
                    v1::Signal {
                        r#type: v1::SignalType::EntityMissing as i32,
                        query: format!("what is the budget of {project}?"),
                        entity: project.into(),
                        agent_id: agent.clone(),
                        idempotency_key: format!("{project}-{n}"),
                        ..Default::default()
                    },
                    &token(&auth, TENANT, &agent, &[Role::Agent], 600),
                ))
                .await
                .expect("signal");
        }
    }
    let ids = sandbox
        .review_ids(TENANT, &["Project Kite", "Project Lark"], WAIT)
        .await;
    let (kite, lark) = (ids[0].clone(), ids[1].clone());
    (sandbox, auth, kite, lark)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_needs_a_session_csrf_and_its_own_origin() {
    let (sandbox, auth, kite, _) = two_updates_waiting().await;

    let addr = sandbox.http_addr(ServiceKind::Analyst);
    let own_origin = format!("http://{addr}");
    let approve = format!(r#"{{"update_id":"{kite}","decision":"approve"}}"#);

    // The page itself is public; the API is not without a session.
    let page = http(addr, "GET", "/", &[], None).await;
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("x-frame-options"),
        Some("DENY"),
        "no other site frames the page"
    );
    for path in [
        "/api/session",
        "/api/queue",
        "/api/patterns",
        "/api/freshness",
        "/api/decisions",
    ] {
        let answer = http(addr, "GET", path, &[], None).await;
        assert_eq!(answer.status, 401, "GET {path}: {answer:?}");
    }
    let answer = http(addr, "POST", "/api/decide", &[], Some(&approve)).await;
    assert_eq!(answer.status, 401, "decide without a session: {answer:?}");
    let answer = http(
        addr,
        "GET",
        "/api/queue",
        &[("Cookie", "ontoloop_session=forged")],
        None,
    )
    .await;
    assert_eq!(answer.status, 401, "a forged session id: {answer:?}");

    // Sign-in: a bad token is 401, a token without the reviewer role 403.
    let sign_in = |token: String| format!(r#"{{"token":"{token}"}}"#);
    let answer = http(
        addr,
        "POST",
        "/api/session",
        &[],
        Some(&sign_in("garbage".into())),
    )
    .await;
    assert_eq!(answer.status, 401, "{answer:?}");
    let wrong_secret = AuthSettings {
        hs256_secret: "another-secret-0123456789abcdef-0123".to_owned(),
        ..auth.clone()
    };
    let forged = token(&wrong_secret, TENANT, "alice", &[Role::Reviewer], 600);
    let answer = http(addr, "POST", "/api/session", &[], Some(&sign_in(forged))).await;
    assert_eq!(answer.status, 401, "a wrongly signed token: {answer:?}");
    let agent = token(&auth, TENANT, "bot", &[Role::Agent], 600);
    let answer = http(addr, "POST", "/api/session", &[], Some(&sign_in(agent))).await;
    assert_eq!(answer.status, 403, "an agent is no reviewer: {answer:?}");
    assert!(
        answer.json()["error"]
            .as_str()
            .is_some_and(|e| e.contains("reviewer")),
        "{answer:?}"
    );
    let alice = token(&auth, TENANT, "alice", &[Role::Reviewer], 600);
    let answer = http(
        addr,
        "POST",
        "/api/session",
        &[("Origin", "http://evil.example")],
        Some(&sign_in(alice.clone())),
    )
    .await;
    assert_eq!(
        answer.status, 403,
        "sign-in from a foreign origin: {answer:?}"
    );
    assert!(answer.header("set-cookie").is_none());

    let signed_in = http(
        addr,
        "POST",
        "/api/session",
        &[("Origin", &own_origin)],
        Some(&sign_in(alice)),
    )
    .await;
    assert_eq!(signed_in.status, 200, "{signed_in:?}");
    let cookie_header = signed_in.header("set-cookie").expect("a session cookie");
    assert!(cookie_header.contains("HttpOnly"), "{cookie_header}");
    assert!(cookie_header.contains("SameSite=Strict"), "{cookie_header}");
    let cookie = cookie_header
        .split(';')
        .next()
        .expect("name=value")
        .to_owned();
    assert!(cookie.starts_with("ontoloop_session=") && cookie.len() > 40);
    assert_eq!(signed_in.header("cache-control"), Some("no-store"));
    assert_eq!(signed_in.json()["tenant"], TENANT);
    assert_eq!(signed_in.json()["reviewer"], "alice");
    let expires_at = signed_in.json()["expires_at"].as_u64().expect("expiry");
    assert!(
        expires_at <= now() + 600,
        "the session ends no later than the token"
    );
    let csrf = signed_in.json()["csrf_token"]
        .as_str()
        .expect("a CSRF token")
        .to_owned();
    assert_ne!(csrf, cookie, "the CSRF token is not the session id");

    // Reads take the tenant from the session; naming another is refused.
    let with_cookie = [("Cookie", cookie.as_str())];
    let answer = http(addr, "GET", "/api/queue", &with_cookie, None).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        answer.json()["updates"].as_array().map(Vec::len),
        Some(2),
        "{answer:?}"
    );
    let answer = http(addr, "GET", "/api/session", &with_cookie, None).await;
    assert_eq!(
        (answer.status, &answer.json()["csrf_token"]),
        (200, &Value::from(csrf.clone()))
    );
    for path in [
        "/api/queue?tenant=globex",
        "/api/decisions?tenant=globex&reviewer=alice",
        "/api/patterns?reviewer=mallory",
    ] {
        let answer = http(addr, "GET", path, &with_cookie, None).await;
        assert_eq!(answer.status, 403, "GET {path}: {answer:?}");
    }
    let answer = http(
        addr,
        "GET",
        "/api/queue",
        &[("Cookie", &cookie), ("Host", "evil.example")],
        None,
    )
    .await;
    assert_eq!(answer.status, 403, "DNS rebinding: {answer:?}");

    // State changes: CSRF missing or forged, a foreign origin, another tenant or reviewer.
    let refused: Vec<Refused> = vec![
        (
            "no CSRF token",
            vec![("Cookie", &cookie), ("Origin", &own_origin)],
            approve.clone(),
        ),
        (
            "a forged CSRF token",
            vec![
                ("Cookie", &cookie),
                ("Origin", &own_origin),
                (
                    "X-CSRF-Token",
                    "0000000000000000000000000000000000000000000000000000000000000000",
                ),
            ],
            approve.clone(),
        ),
        (
            "a foreign origin",
            vec![
                ("Cookie", &cookie),
                ("Origin", "http://evil.example"),
                ("X-CSRF-Token", &csrf),
            ],
            approve.clone(),
        ),
        (
            "another tenant in the body",
            vec![("Cookie", &cookie), ("X-CSRF-Token", &csrf)],
            format!(r#"{{"tenant":"globex","update_id":"{kite}","decision":"approve"}}"#),
        ),
        (
            "another reviewer in the body",
            vec![("Cookie", &cookie), ("X-CSRF-Token", &csrf)],
            format!(r#"{{"reviewer":"mallory","update_id":"{kite}","decision":"approve"}}"#),
        ),
    ];
    for (case, headers, body) in &refused {
        let answer = http(addr, "POST", "/api/decide", headers, Some(body)).await;
        assert_eq!(answer.status, 403, "{case}: {answer:?}");
    }
    assert!(
        sandbox
            .ctx
            .store
            .decisions(TENANT, 10)
            .await
            .expect("decisions")
            .is_empty(),
        "no refused request decided anything"
    );

    // The session approves Kite's update; the decision is the token's reviewer's.
    let answer = http(
        addr,
        "POST",
        "/api/decide",
        &[
            ("Cookie", &cookie),
            ("Origin", &own_origin),
            ("X-CSRF-Token", &csrf),
        ],
        Some(&format!(
            r#"{{"tenant":"{TENANT}","reviewer":"alice","update_id":"{kite}","decision":"approve"}}"#
        )),
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.json()["applied"], true, "{answer:?}");
    let decisions: Vec<(String, String, String)> = sandbox
        .ctx
        .store
        .decisions(TENANT, 10)
        .await
        .expect("decisions")
        .into_iter()
        .map(|d| (d.update_id, d.decision, d.reviewer))
        .collect();
    assert_eq!(
        decisions,
        vec![(kite.clone(), "approve".to_owned(), "alice".to_owned())]
    );

    // Sign-out needs the CSRF token too, and ends the session.
    let answer = http(addr, "POST", "/api/signout", &with_cookie, Some("")).await;
    assert_eq!(answer.status, 403, "sign-out without CSRF: {answer:?}");
    let answer = http(
        addr,
        "POST",
        "/api/signout",
        &[("Cookie", &cookie), ("X-CSRF-Token", &csrf)],
        Some(""),
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(
        answer
            .header("set-cookie")
            .is_some_and(|c| c.contains("Max-Age=0")),
        "{answer:?}"
    );
    let answer = http(addr, "GET", "/api/queue", &with_cookie, None).await;
    assert_eq!(
        answer.status, 401,
        "the old cookie opens nothing: {answer:?}"
    );
    sandbox.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_signs_in_with_a_token_in_the_browser() {
    let (sandbox, auth, kite, lark) = two_updates_waiting().await;
    let addr = sandbox.http_addr(ServiceKind::Analyst);
    let browser = Browser::launch()
        .await
        .expect("headless Chromium (run scripts/install-browser.sh)");
    browser
        .goto(&format!("http://{addr}/?tenant=globex&reviewer=mallory"))
        .await
        .expect("the dashboard loads");
    let sign_in_shown = wait_until(WAIT, || async {
        browser
            .execute("return !document.getElementById('signin').hidden", vec![])
            .await
            .is_ok_and(|shown| shown == Value::Bool(true))
    })
    .await;
    assert!(sign_in_shown, "without a session the page asks for a token");

    let agent = token(&auth, TENANT, "bot", &[Role::Agent], 600);
    browser.type_text("#token", &agent).await.expect("type");
    browser.click("#signin-button").await.expect("sign in");
    browser
        .wait_for_text("#status", "could not sign in", WAIT)
        .await
        .expect("an agent's token is refused");

    let alice = token(&auth, TENANT, "alice", &[Role::Reviewer], 600);
    browser.type_text("#token", &alice).await.expect("type");
    browser.click("#signin-button").await.expect("sign in");
    browser
        .wait_for_text("#status", "signed in as alice of acme", WAIT)
        .await
        .expect("signed in");
    let row = |id: &str| format!(r#"#queue [data-update-id="{id}"]"#);
    browser
        .wait_for(&row(&kite), WAIT)
        .await
        .expect("Kite's row");
    browser
        .wait_for(&row(&lark), WAIT)
        .await
        .expect("Lark's row");
    let cookie = browser
        .execute("return document.cookie", vec![])
        .await
        .expect("script");
    assert_eq!(
        cookie,
        Value::from(""),
        "the session cookie is HttpOnly, out of scripts' reach"
    );
    browser
        .click(&format!(r#"{} button[data-action="approve"]"#, row(&kite)))
        .await
        .expect("approve");
    browser
        .wait_for_text("#status", &format!("approved {kite}"), WAIT)
        .await
        .expect("approved");
    browser
        .screenshot(artifact_path("dashboard-signed-in.png").expect("artifact dir"))
        .await
        .expect("screenshot");
    browser.click("#signout").await.expect("sign out");
    browser
        .wait_for_text("#status", "signed out", WAIT)
        .await
        .expect("signed out");
    let queue = browser
        .execute("return fetch('api/queue').then((r) => r.status)", vec![])
        .await
        .expect("script");
    assert_eq!(queue, Value::from(401), "signed out, the API is closed");
    browser.close().await.expect("close the browser");

    let decisions: Vec<(String, String, String)> = sandbox
        .ctx
        .store
        .decisions(TENANT, 10)
        .await
        .expect("decisions")
        .into_iter()
        .map(|d| (d.update_id, d.decision, d.reviewer))
        .collect();
    assert_eq!(
        decisions,
        vec![(kite, "approve".to_owned(), "alice".to_owned())],
        "one decision, by the token's reviewer, whatever the URL named"
    );
    sandbox.shutdown().await.expect("clean shutdown");
}
