//! The trust boundary, black box: the four services with `auth.mode = "jwt"` and an HS256
//! secret, served exactly as `ontoloop up` serves them (`Sandbox`: the same `serve_all`), called
//! over gRPC. Every RPC without a token, or with an expired, wrongly signed or wrong-audience
//! token, is UNAUTHENTICATED; with a token lacking the RPC's role it is PERMISSION_DENIED naming
//! the role; a body `caller` of another tenant or principal is PERMISSION_DENIED; a correct token
//! is served, and an empty body caller is the token's. Health stays open, and `ontology.set`
//! needs admin.

use ontoloop_auth::{AuthSettings, Role};
use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_tests::tokens::{Holder, bearer, jwt, now};
use ontoloop_tests::{Clients, Sandbox, caller, doc, ontology};
use tonic::{Code, Status};

const SECRET: &str = "security-suite-secret-0123456789abcdef";
const TENANT: &str = "acme";
const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"project","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"wiki":2,"default":1}}"#;

fn auth_overrides() -> Vec<(&'static str, &'static str)> {
    let mut overrides = jwt(SECRET);
    overrides.push(("auth.leeway_seconds", "0"));
    overrides
}

/// A token for `principal` of `tenant` in `roles`, signed with `auth` (the system's settings,
/// or altered ones for the bad tokens), issued at `issued_at` for `ttl` seconds.
fn token_with(
    auth: &AuthSettings,
    tenant: &str,
    principal: &str,
    roles: &[Role],
    issued_at: u64,
    ttl: u64,
) -> String {
    let holder = Holder {
        tenant,
        principal,
        groups: &[],
        roles,
    };
    holder.token_at(auth, issued_at, ttl)
}

/// Every RPC of the four services.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rpc {
    Ask,
    Lookup,
    Plate,
    ProjectContext,
    Search,
    Validate,
    ReportSignal,
    ReportSignals,
    PushEvent,
    NextReview,
    Decide,
    ListPatterns,
    ListMaintenanceRuns,
    TenantSummary,
    ListPages,
}

const ALL: [Rpc; 15] = [
    Rpc::Ask,
    Rpc::Lookup,
    Rpc::Plate,
    Rpc::ProjectContext,
    Rpc::Search,
    Rpc::Validate,
    Rpc::ReportSignal,
    Rpc::ReportSignals,
    Rpc::PushEvent,
    Rpc::NextReview,
    Rpc::Decide,
    Rpc::ListPatterns,
    Rpc::ListMaintenanceRuns,
    Rpc::TenantSummary,
    Rpc::ListPages,
];

impl Rpc {
    /// The role the RPC needs, and one it does not accept.
    fn roles(self) -> (Role, Role) {
        match self {
            Rpc::PushEvent | Rpc::ListPages => (Role::Integration, Role::Agent),
            Rpc::NextReview
            | Rpc::Decide
            | Rpc::ListPatterns
            | Rpc::ListMaintenanceRuns
            | Rpc::TenantSummary => (Role::Reviewer, Role::Agent),
            _ => (Role::Agent, Role::Reviewer),
        }
    }
}

fn request<T>(message: T, token: Option<&str>) -> tonic::Request<T> {
    bearer(message, token)
}

fn signal(who: Option<v1::Caller>, key: &str) -> v1::Signal {
    v1::Signal {
        caller: who,
        r#type: v1::SignalType::EntityMissing as i32,
        query: "who owns kite?".into(),
        entity: "kite".into(),
        agent_id: "agent-1".into(),
        idempotency_key: key.into(),
        ..Default::default()
    }
}

/// Calls `rpc` with `token` (none: no header) and the body caller `who`; Ok or the status.
async fn call(
    c: &Clients,
    rpc: Rpc,
    token: Option<&str>,
    who: Option<v1::Caller>,
) -> Result<(), Status> {
    let (mut retrieval, mut firewall, mut telemetry, mut analyst) = (
        c.retrieval.clone(),
        c.firewall.clone(),
        c.telemetry.clone(),
        c.analyst.clone(),
    );
    // A fresh key per call, so a signal is never a duplicate of another case's.
    let key = format!("k{}", now_nanos());
    match rpc {
        Rpc::Ask => retrieval
            .ask(request(
                v1::AskRequest {
                    caller: who,
                    text: "Who owns kite?".into(),
                    ..Default::default()
                },
                token,
            ))
            .await
            .map(drop),
        Rpc::Lookup => retrieval
            .lookup(request(
                v1::LookupRequest {
                    caller: who,
                    entity: "kite".into(),
                    predicate_path: vec!["owned_by".into()],
                    ..Default::default()
                },
                token,
            ))
            .await
            .map(drop),
        Rpc::Plate => retrieval
            .plate(request(
                v1::PlateRequest {
                    caller: who,
                    ..Default::default()
                },
                token,
            ))
            .await
            .map(drop),
        Rpc::ProjectContext => retrieval
            .project_context(request(
                v1::ProjectContextRequest {
                    caller: who,
                    project: "kite".into(),
                    action: v1::ProjectAction::Close as i32,
                    ..Default::default()
                },
                token,
            ))
            .await
            .map(drop),
        Rpc::Search => retrieval
            .search(request(
                v1::SearchRequest {
                    caller: who,
                    query: "Who owns Kite?".into(),
                    ..Default::default()
                },
                token,
            ))
            .await
            .map(drop),
        Rpc::Validate => firewall
            .validate(request(
                v1::ValidateRequest {
                    caller: who,
                    input: Some(v1::validate_request::Input::Text(
                        "Kite is owned by the Atlas team.".into(),
                    )),
                    ..Default::default()
                },
                token,
            ))
            .await
            .map(drop),
        Rpc::ReportSignal => telemetry
            .report_signal(request(signal(who, &key), token))
            .await
            .map(drop),
        Rpc::ReportSignals => telemetry
            .report_signals(request(tokio_stream::iter(vec![signal(who, &key)]), token))
            .await
            .map(drop),
        Rpc::PushEvent => telemetry
            .push_event(request(
                v1::Event {
                    caller: who,
                    kind: Some(doc(
                        "kite",
                        "wiki",
                        "Kite is owned by the Atlas team.",
                        &[],
                        0.0,
                    )),
                    ..Default::default()
                },
                token,
            ))
            .await
            .map(drop),
        Rpc::NextReview => analyst
            .next_review(request(
                v1::NextReviewRequest {
                    caller: who,
                    ..Default::default()
                },
                token,
            ))
            .await
            .map(drop),
        Rpc::Decide => analyst
            .decide(request(
                v1::DecideRequest {
                    caller: who,
                    update_id: "no-such-update".into(),
                    decision: v1::Decision::Reject as i32,
                    ..Default::default()
                },
                token,
            ))
            .await
            .map(drop),
        Rpc::ListPatterns => analyst
            .list_patterns(request(
                v1::ListPatternsRequest {
                    caller: who,
                    limit: 0,
                },
                token,
            ))
            .await
            .map(drop),
        Rpc::ListMaintenanceRuns => analyst
            .list_maintenance_runs(request(
                v1::ListMaintenanceRunsRequest {
                    caller: who,
                    ..Default::default()
                },
                token,
            ))
            .await
            .map(drop),
        Rpc::TenantSummary => analyst
            .tenant_summary(request(
                v1::TenantSummaryRequest {
                    caller: who,
                    ..Default::default()
                },
                token,
            ))
            .await
            .map(drop),
        Rpc::ListPages => analyst
            .list_pages(request(
                v1::ListPagesRequest {
                    caller: who,
                    ..Default::default()
                },
                token,
            ))
            .await
            .map(drop),
    }
}

fn now_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos()
}

fn assert_code(result: &Result<(), Status>, code: Code, case: &str) {
    match result {
        Err(status) => assert_eq!(status.code(), code, "{case}: {status:?}"),
        Ok(()) => panic!("{case}: served, expected {code:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rpc_is_behind_the_token_and_its_role() {
    let sandbox = Sandbox::embedded(&auth_overrides()).await;
    let c = sandbox.clients();
    let auth = sandbox.ctx.settings.auth.clone();
    let body = || caller(TENANT, "bot-1");

    // Health and reflection stay open.
    let mut health =
        tonic_health::pb::health_client::HealthClient::new(sandbox.channel(ServiceKind::Analyst));
    let served = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: ServiceKind::Analyst.grpc_name().to_owned(),
        })
        .await
        .expect("health needs no token")
        .into_inner();
    assert_eq!(served.status, 1, "SERVING");

    // The tenant has an ontology, so questions are answered rather than refused for lack of one.
    let admin = token_with(&auth, TENANT, "root", &[Role::Admin], now(), 600);
    let sequence = c
        .telemetry
        .clone()
        .push_event(request(
            v1::Event {
                caller: None,
                kind: Some(ontology(ONTOLOGY)),
                ..Default::default()
            },
            Some(&admin),
        ))
        .await
        .expect("an admin sets the ontology")
        .into_inner()
        .sequence;
    c.retrieval
        .clone()
        .ask(request(
            v1::AskRequest {
                text: "Who owns kite?".into(),
                min_sequence: sequence,
                ..Default::default()
            },
            Some(&admin),
        ))
        .await
        .expect("the ontology is applied");

    let expired = token_with(&auth, TENANT, "bot-1", &Role::ALL, now() - 7200, 3600);
    let mut other_secret = auth.clone();
    other_secret.hs256_secret = "not-the-secret-of-this-system-at-all".into();
    let forged = token_with(&other_secret, TENANT, "bot-1", &Role::ALL, now(), 600);
    let mut other_audience = auth.clone();
    other_audience.audience = "someone-else".into();
    let elsewhere = token_with(&other_audience, TENANT, "bot-1", &Role::ALL, now(), 600);

    for rpc in ALL {
        let case = |what: &str| format!("{rpc:?} {what}");
        let none = call(&c, rpc, None, body()).await;
        assert_code(&none, Code::Unauthenticated, &case("without a token"));
        assert!(
            none.as_ref()
                .err()
                .is_some_and(|s| s.message().contains("bearer")),
            "{none:?}"
        );
        let garbage = call(&c, rpc, Some("not.a.jwt"), body()).await;
        assert_code(&garbage, Code::Unauthenticated, &case("with garbage"));
        let result = call(&c, rpc, Some(&expired), body()).await;
        assert_code(&result, Code::Unauthenticated, &case("expired"));
        assert!(
            result
                .err()
                .is_some_and(|s| s.message().contains("expired"))
        );
        let result = call(&c, rpc, Some(&forged), body()).await;
        assert_code(&result, Code::Unauthenticated, &case("wrongly signed"));
        assert!(
            result
                .err()
                .is_some_and(|s| s.message().contains("signature"))
        );
        let result = call(&c, rpc, Some(&elsewhere), body()).await;
        assert_code(&result, Code::Unauthenticated, &case("wrong audience"));
        assert!(
            result
                .err()
                .is_some_and(|s| s.message().contains("audience"))
        );

        let (needed, other) = rpc.roles();
        let wrong_role = token_with(&auth, TENANT, "bot-1", &[other], now(), 600);
        let result = call(&c, rpc, Some(&wrong_role), body()).await;
        assert_code(
            &result,
            Code::PermissionDenied,
            &case("with the wrong role"),
        );
        let message = result
            .err()
            .map(|s| s.message().to_owned())
            .unwrap_or_default();
        assert!(
            message.contains(&format!("`{needed}`")),
            "{rpc:?}: the refusal names the role: {message}"
        );

        let right = token_with(&auth, TENANT, "bot-1", &[needed], now(), 600);
        let result = call(&c, rpc, Some(&right), caller("globex", "bot-1")).await;
        assert_code(&result, Code::PermissionDenied, &case("for another tenant"));
        assert!(
            result
                .err()
                .is_some_and(|s| s.message().contains("caller.tenant")),
            "{rpc:?}"
        );
        let result = call(&c, rpc, Some(&right), caller(TENANT, "cfo")).await;
        assert_code(
            &result,
            Code::PermissionDenied,
            &case("as another principal"),
        );

        // The right token is served: with the token's own caller in the body, with none, and
        // by an admin. Decide's update does not exist: NOT_FOUND, past the boundary.
        let expected = if rpc == Rpc::Decide {
            Some(Code::NotFound)
        } else {
            None
        };
        for (token, who, what) in [
            (&right, body(), "with its caller"),
            (&right, None, "without a body caller"),
            (&admin, None, "as admin"),
        ] {
            let result = call(&c, rpc, Some(token), who).await;
            assert_eq!(
                result.as_ref().err().map(Status::code),
                expected,
                "{}: {result:?}",
                case(what)
            );
        }
    }
    sandbox.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_admin_sets_the_ontology_and_the_caller_is_the_token() {
    let sandbox = Sandbox::embedded(&auth_overrides()).await;
    let c = sandbox.clients();
    let auth = sandbox.ctx.settings.auth.clone();
    let push = |token: String, kind: v1::event::Kind| {
        let mut telemetry = c.telemetry.clone();
        async move {
            telemetry
                .push_event(request(
                    v1::Event {
                        caller: None,
                        kind: Some(kind),
                        ..Default::default()
                    },
                    Some(&token),
                ))
                .await
        }
    };
    let integration = token_with(&auth, TENANT, "wiki-sync", &[Role::Integration], now(), 600);
    let refused = push(integration.clone(), ontology(ONTOLOGY))
        .await
        .expect_err("an integration may not set the ontology");
    assert_eq!(refused.code(), Code::PermissionDenied);
    assert!(refused.message().contains("ontology.set"), "{refused:?}");
    assert!(refused.message().contains("`admin`"), "{refused:?}");
    let admin = token_with(&auth, TENANT, "ops", &[Role::Admin], now(), 600);
    let ack = push(admin, ontology(ONTOLOGY))
        .await
        .expect("an admin sets the ontology")
        .into_inner();
    assert!(ack.sequence > 0);

    // A signal sent without a body caller is the token's: the same key again from the same
    // tenant is a duplicate, from another tenant's token a signal of its own.
    let report = |token: String, who: Option<v1::Caller>| {
        let mut telemetry = c.telemetry.clone();
        async move {
            telemetry
                .report_signal(request(signal(who, "only-one"), Some(&token)))
                .await
                .expect("a signal as the token")
                .into_inner()
                .duplicate
        }
    };
    let agent = token_with(&auth, TENANT, "bot-7", &[Role::Agent], now(), 600);
    assert!(!report(agent.clone(), None).await);
    assert!(report(agent, caller(TENANT, "bot-7")).await);
    let stranger = token_with(&auth, "globex", "bot-7", &[Role::Agent], now(), 600);
    assert!(!report(stranger, None).await);
    sandbox.shutdown().await.expect("clean shutdown");
}
