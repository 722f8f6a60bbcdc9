//! The semantic firewall through gRPC: the invariants it must hold, the honest gaps it must not
//! hide, garbage in, failing closed, signals for blocks, the optional model extractor against a
//! fake OpenAI-compatible server, and the labelled claim set of the shared world.

use std::path::PathBuf;
use std::time::Duration;

use ontoloop_core::topics;
use ontoloop_proto::v1;
use ontoloop_proto::v1::firewall_service_client::FirewallServiceClient;
use ontoloop_tests::{PgDatabase, Sandbox, caller, doc, ontology, settings, wait_until};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::Code;
use tonic::transport::Channel;

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]},
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]},
  {"name":"included_in","subject_type":"product","object_type":"plan","patterns":["{s} is included in the {o} plan."]}],
  "authority":{"pricing-page":3,"wiki":2,"meeting-notes":1,"default":2}}"#;

const T: &str = "acme";

/// Loads a small world and waits until it is applied.
async fn load(sandbox: &Sandbox) {
    let events = [
        ontology(ONTOLOGY),
        doc(
            "pricing",
            "pricing-page",
            "The Pro plan costs €49 per month. The Starter plan costs €19 per month.",
            &[],
            0.0,
        ),
        doc(
            "pricing",
            "pricing-page",
            "The Pro plan costs €59 per month. The Starter plan costs €19 per month.",
            &[],
            0.0,
        ),
        doc(
            "faq",
            "wiki",
            "Payments service is owned by the Atlas team.",
            &[],
            0.0,
        ),
        doc(
            "handbook",
            "wiki",
            "Payments service is owned by the Atlas team.",
            &[],
            0.0,
        ),
        doc(
            "notes",
            "meeting-notes",
            "The Starter plan costs €24 per month.",
            &[],
            0.0,
        ),
        doc(
            "scan-1",
            "wiki",
            "Billing service is owned by the Orion team.",
            &[],
            0.8,
        ),
        doc(
            "scan-2",
            "wiki",
            "Billing service is owned by the Orion team.",
            &[],
            0.8,
        ),
        doc(
            "partner",
            "wiki",
            "Tessaly Dock is included in the Pro plan.",
            &[],
            0.0,
        ),
        doc(
            "board",
            "pricing-page",
            "The Secret plan costs €999 per month.",
            &["cfo"],
            0.0,
        ),
        doc("empty", "wiki", "Nothing to see.", &[], 0.0),
    ];
    let last = sandbox.clients().push_all(T, "integration", events).await;
    let store = sandbox.ctx.store.clone();
    let applied =
        ontoloop_runtime::wait_for_sequence(&store, T, last, Duration::from_secs(20)).await;
    assert!(applied.is_ok(), "{applied:?}");
}

/// The embedded system with the small world loaded.
async fn embedded(overrides: &[(&str, &str)]) -> Sandbox {
    let sandbox = Sandbox::embedded(overrides).await;
    load(&sandbox).await;
    sandbox
}

async fn text(
    firewall: &mut FirewallServiceClient<Channel>,
    principal: &str,
    text: &str,
    risk: v1::RiskLevel,
) -> Result<v1::ValidateResponse, tonic::Status> {
    firewall
        .validate(v1::ValidateRequest {
            caller: caller(T, principal),
            input: Some(v1::validate_request::Input::Text(text.into())),
            context: Some(v1::ValidationContext {
                domain: String::new(),
                risk: risk as i32,
            }),
            as_of: None,
        })
        .await
        .map(|r| r.into_inner())
}

fn codes(verdict: &v1::ClaimVerdict) -> Vec<&str> {
    verdict.reasons.iter().map(|r| r.code.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_invariants_hold_and_the_honest_gaps_show() {
    let sandbox = embedded(&[]).await;
    let mut fw = sandbox.clients().firewall;
    let std = v1::RiskLevel::Unspecified;

    // Supported, current, multi-sourced: passes; an unrecognised sentence passes unchecked and
    // is counted.
    let r = text(&mut fw, "alice", "Payments service is owned by the Atlas team. The Pro plan costs €59 per month. Our customers love us.", std).await.expect("validate");
    assert_eq!(r.overall, v1::Verdict::Pass as i32, "{r:?}");
    let coverage = r.coverage.expect("coverage");
    assert_eq!(
        (
            coverage.sentences,
            coverage.checkable,
            coverage.unrecognised
        ),
        (3, 2, 1)
    );
    assert_eq!(r.verdicts.len(), 2);

    // An expired relationship is blocked with its reason.
    let r = text(&mut fw, "alice", "The Pro plan costs €49 per month.", std)
        .await
        .expect("validate");
    assert_eq!(r.overall, v1::Verdict::Block as i32);
    assert!(
        codes(&r.verdicts[0]).contains(&"expired_relationship"),
        "{r:?}"
    );
    assert!(
        r.verdicts[0]
            .reasons
            .iter()
            .any(|x| x.message.contains("superseded"))
    );

    // An unknown entity is blocked.
    let r = text(
        &mut fw,
        "alice",
        "Ledger service is owned by the Atlas team.",
        std,
    )
    .await
    .expect("validate");
    assert_eq!(codes(&r.verdicts[0]), vec!["unknown_entity"]);

    // Single-sourced: blocked on provenance alone, though everything else is right.
    let r = text(
        &mut fw,
        "alice",
        "Tessaly Dock is included in the Pro plan.",
        std,
    )
    .await
    .expect("validate");
    assert_eq!(codes(&r.verdicts[0]), vec!["single_source"]);

    // A draft from the meeting notes is blocked.
    let r = text(
        &mut fw,
        "alice",
        "The Starter plan costs €24 per month.",
        std,
    )
    .await
    .expect("validate");
    assert!(codes(&r.verdicts[0]).contains(&"contradicted"), "{r:?}");

    // Low confidence: 0.8 passes the standard threshold (0.7), not the high-risk one (0.95).
    let billing = "Billing service is owned by the Orion team.";
    assert_eq!(
        text(&mut fw, "alice", billing, std)
            .await
            .expect("validate")
            .overall,
        v1::Verdict::Pass as i32
    );
    let r = text(&mut fw, "alice", billing, v1::RiskLevel::High)
        .await
        .expect("validate");
    assert_eq!(codes(&r.verdicts[0]), vec!["low_confidence"]);

    // Scope: a claim resting only on facts the caller may not read is blocked exactly as one
    // about a plan nothing names, so the verdict tells nothing of what is hidden.
    let r = text(
        &mut fw,
        "alice",
        "The Secret plan costs €999 per month.",
        std,
    )
    .await
    .expect("validate");
    assert_ne!(r.overall, v1::Verdict::Pass as i32, "{r:?}");
    let never = text(
        &mut fw,
        "alice",
        "The Zircon plan costs €999 per month.",
        std,
    )
    .await
    .expect("validate");
    let told = |r: &v1::ValidateResponse, name: &str| -> Vec<(String, String)> {
        r.verdicts[0]
            .reasons
            .iter()
            .map(|x| (x.code.clone(), x.message.replace(name, "NAME")))
            .collect()
    };
    assert_eq!(told(&r, "Secret"), told(&never, "Zircon"));
    assert!(
        !r.verdicts[0]
            .reasons
            .iter()
            .any(|x| x.message.contains("board"))
    );
    assert_eq!(
        text(&mut fw, "cfo", "The Secret plan costs €999 per month.", std)
            .await
            .expect("validate")
            .overall,
        v1::Verdict::Pass as i32
    );

    // Two values of one slot in one answer cannot hold at once.
    let r = text(
        &mut fw,
        "alice",
        "The Pro plan costs €59 per month. The Pro plan costs €49 per month.",
        std,
    )
    .await
    .expect("validate");
    assert!(codes(&r.verdicts[0]).contains(&"temporal_inconsistency"));

    // A multi-hop claim whose steps do not connect is a broken chain.
    let chain = v1::Claim {
        chain: vec![
            v1::ClaimStep {
                subject: "Tessaly Dock".into(),
                predicate: "included_in".into(),
                object: "Pro".into(),
            },
            v1::ClaimStep {
                subject: "Starter".into(),
                predicate: "price".into(),
                object: "19".into(),
            },
        ],
        ..Default::default()
    };
    let r = fw
        .validate(v1::ValidateRequest {
            caller: caller(T, "alice"),
            input: Some(v1::validate_request::Input::Claims(v1::ClaimList {
                claims: vec![chain],
            })),
            ..Default::default()
        })
        .await
        .expect("validate")
        .into_inner();
    assert_eq!(codes(&r.verdicts[0]), vec!["broken_chain"]);

    // Every block became a signal for the analyst.
    let store = sandbox.ctx.store.clone();
    let signalled = wait_until(Duration::from_secs(10), || {
        let store = store.clone();
        async move {
            store
                .inbox(topics::SIGNALS, 1000)
                .await
                .is_ok_and(|rows| rows.iter().filter(|r| r.body.contains("firewall:")).count() >= 3)
        }
    })
    .await;
    assert!(signalled, "blocks publish signals");
    sandbox.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raising_the_configured_threshold_blocks_a_claim_that_passed() {
    let sandbox = embedded(&[("firewall.confidence_standard", "0.9")]).await;
    let mut fw = sandbox.clients().firewall;
    let r = text(
        &mut fw,
        "alice",
        "Billing service is owned by the Orion team.",
        v1::RiskLevel::Unspecified,
    )
    .await
    .expect("validate");
    assert_eq!(codes(&r.verdicts[0]), vec!["low_confidence"]);
    assert!(r.verdicts[0].reasons[0].message.contains("0.90"));
    sandbox.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_in_gets_a_clear_status() {
    let sandbox = embedded(&[]).await;
    let mut fw = sandbox.clients().firewall;
    let err = text(&mut fw, "alice", "   ", v1::RiskLevel::Unspecified)
        .await
        .expect_err("empty");
    assert_eq!(err.code(), Code::InvalidArgument);
    let huge = "The Pro plan costs €59 per month. ".repeat(32 * 1024);
    let err = text(&mut fw, "alice", &huge, v1::RiskLevel::Unspecified)
        .await
        .expect_err("1 MB");
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(
        err.message().contains("max_text_bytes"),
        "{}",
        err.message()
    );
    let claims = |c: v1::Claim| v1::ValidateRequest {
        caller: caller(T, "alice"),
        input: Some(v1::validate_request::Input::Claims(v1::ClaimList {
            claims: vec![c],
        })),
        ..Default::default()
    };
    let err = fw
        .validate(claims(v1::Claim {
            subject: "Pro".into(),
            predicate: String::new(),
            object: "59".into(),
            chain: Vec::new(),
            scope: String::new(),
        }))
        .await
        .expect_err("no predicate");
    assert!(
        err.message().contains("claims[0].predicate"),
        "{}",
        err.message()
    );
    let err = fw
        .validate(claims(v1::Claim {
            subject: "Pro".into(),
            predicate: "colour".into(),
            object: "red".into(),
            chain: Vec::new(),
            scope: String::new(),
        }))
        .await
        .expect_err("unknown predicate");
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("colour"));
    let err = fw
        .validate(v1::ValidateRequest {
            caller: caller(T, "alice"),
            ..Default::default()
        })
        .await
        .expect_err("no input");
    assert!(err.message().contains("input"));
    let err = fw
        .validate(v1::ValidateRequest {
            caller: caller(T, "alice"),
            input: Some(v1::validate_request::Input::Text("x.".into())),
            context: Some(v1::ValidationContext {
                domain: String::new(),
                risk: 42,
            }),
            as_of: None,
        })
        .await
        .expect_err("bad risk");
    assert!(err.message().contains("context.risk"));
    let err = fw
        .validate(v1::ValidateRequest {
            caller: None,
            input: Some(v1::validate_request::Input::Text("x.".into())),
            ..Default::default()
        })
        .await
        .expect_err("no caller");
    assert!(err.message().contains("caller"));
    sandbox.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_graph_cannot_be_read_every_claim_is_blocked() {
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let sandbox = Sandbox::start(settings(&[
        ("store.url", &database.url),
        ("store.connect_attempts", "1"),
        ("store.connect_timeout_ms", "500"),
    ]))
    .await
    .expect("sandbox");
    load(&sandbox).await;
    let mut fw = sandbox.clients().firewall;
    let ok = "Payments service is owned by the Atlas team.";
    assert_eq!(
        text(&mut fw, "alice", ok, v1::RiskLevel::Unspecified)
            .await
            .expect("validate")
            .overall,
        v1::Verdict::Pass as i32
    );
    // The database disappears under the running system.
    database.drop_now().await.expect("drop the database");
    let r = text(
        &mut fw,
        "alice",
        &format!("{ok} Nothing else."),
        v1::RiskLevel::Unspecified,
    )
    .await
    .expect("a verdict, not an error");
    assert_eq!(r.overall, v1::Verdict::Block as i32);
    assert_eq!(r.verdicts.len(), 2);
    assert!(
        r.verdicts
            .iter()
            .all(|v| codes(v) == vec!["firewall_unavailable"]),
        "{r:?}"
    );
    sandbox.shutdown().await.expect("clean shutdown");
}

/// A fake OpenAI-compatible endpoint: answers every request with `content` as the message.
async fn fake_model(content: &'static str) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(n) = stream.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&request);
                if let Some(head) = text.find("\r\n\r\n") {
                    let length = text[..head]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if request.len() >= head + 4 + length {
                        break;
                    }
                }
            }
            let body =
                serde_json::json!({"choices":[{"message":{"role":"assistant","content":content}}]})
                    .to_string();
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        }
    });
    (format!("http://{addr}/v1"), task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_optional_model_extractor_checks_sentences_the_patterns_miss() {
    let (url, server) = fake_model(r#"[{"subject":"Payments service","predicate":"owned_by","object":"Atlas","sentence":"Atlas runs the Payments service."}]"#).await;
    let sandbox = embedded(&[
        ("firewall.llm.enabled", "true"),
        ("firewall.llm.base_url", &url),
        ("firewall.llm.timeout_ms", "5000"),
    ])
    .await;
    let mut fw = sandbox.clients().firewall;
    let r = text(
        &mut fw,
        "alice",
        "Atlas runs the Payments service.",
        v1::RiskLevel::Unspecified,
    )
    .await
    .expect("validate");
    let coverage = r.coverage.expect("coverage");
    assert_eq!(
        (
            coverage.sentences,
            coverage.checkable,
            coverage.unrecognised
        ),
        (1, 1, 0)
    );
    assert_eq!(r.overall, v1::Verdict::Pass as i32, "{r:?}");
    sandbox.shutdown().await.expect("clean shutdown");
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_labelled_claims_of_the_shared_world_are_judged_without_error() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/bench/tessaly.world.json");
    let world = ontoloop_core::world::World::parse(&std::fs::read_to_string(path).expect("world"))
        .expect("valid");
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/b.db?mode=rwc", dir.path().display());
    let local = ontoloop::up::Local::start(settings(&[("store.url", &url)]))
        .await
        .expect("system");
    let clients = ontoloop::client::Clients::from_addrs(&local.addrs, &local.ctx.settings.tls)
        .await
        .expect("clients");
    let validator =
        ontoloop_firewall::Validator::new(local.ctx.clone(), local.ctx.read_models().await)
            .expect("validator");
    let (mut report, answer) =
        ontoloop_bench::firewall::run(&world, clients, &validator, 20, 2, &mut |_| {})
            .await
            .expect("benchmark");
    local.stop().await.expect("stop");
    // The same store restarted with auth.mode = jwt: the ten-claim answer, carrying the replayed
    // caller's token, gets the verdict it got with authentication off.
    let mut with_auth = settings(&[("store.url", &url)]);
    with_auth.auth = ontoloop_bench::auth::jwt(&with_auth.auth);
    let token = ontoloop_bench::auth::token(
        &with_auth.auth,
        answer.caller.tenant(),
        answer.caller.principal(),
    )
    .expect("token");
    let local = ontoloop::up::Local::start(with_auth.clone())
        .await
        .expect("system with auth");
    let clients = ontoloop::client::Clients::from_addrs_with(
        &local.addrs,
        &local.ctx.settings.tls,
        ontoloop::client::Bearer::new(&token).expect("bearer"),
    )
    .await
    .expect("clients");
    let validator =
        ontoloop_firewall::Validator::new(local.ctx.clone(), local.ctx.read_models().await)
            .expect("validator");
    let verifier = ontoloop_auth::Verifier::new(&with_auth.auth, None).expect("verifier");
    ontoloop_bench::firewall::time_with_auth(
        &mut report,
        &answer,
        &validator,
        &verifier,
        &token,
        clients,
        5,
    )
    .await
    .expect("timed with auth on");
    local.stop().await.expect("stop");
    let l = &report.latency_us;
    assert!(
        l.grpc_auth_p50 > 0 && l.grpc_auth_p99 >= l.grpc_auth_p50,
        "{l:?}"
    );
    assert!(l.inproc_auth_p99 >= l.inproc_auth_p50, "{l:?}");
    let c = &report.confusion;
    assert_eq!(
        (c.false_pass, c.false_block),
        (0, 0),
        "{:?}",
        report.mistakes
    );
    assert!(c.true_pass >= 20 && c.true_block >= 20, "{c:?}");
    for label in ["stale", "draft", "invented", "true"] {
        assert!(
            report.counts.get(label).is_some_and(|n| *n > 0),
            "the set has {label} claims: {:?}",
            report.counts
        );
    }
}
