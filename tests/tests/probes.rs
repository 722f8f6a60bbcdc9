//! Nothing leaks between tenants or past a page's ACL, probed at random: three tenants with the
//! same page ids, the same entity names, the same signal keys and the same principals, each with
//! values of its own and a page only `cfo` may read, on the four services with `auth.mode =
//! "jwt"`. 10,000 seeded random probes (Ask, Lookup with and without a `min_sequence` wait, Plate,
//! Validate, ListPatterns, NextReview), each as a random principal of a random tenant with its own
//! token; every answer and every error text is searched for what that caller must not see:
//! another tenant's values and entity names, and, for anyone but `cfo`, the restricted page's
//! value and id. The count of probes and of leaks is printed; the test needs 0 leaks.

use ontoloop_auth::{AuthSettings, Role};
use ontoloop_proto::v1;
use ontoloop_tests::tokens::{Holder, bearer, jwt};
use ontoloop_tests::{Clients, Sandbox, caller, doc, ontology};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SECRET: &str = "probe-suite-secret-0123456789abcdef";
const PROBES: usize = 10_000;
const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]},
  {"name":"led_by","subject_type":"team","object_type":"person","patterns":["The {s} team is led by {o}."]}],
  "authority":{"wiki":2,"default":1}}"#;

/// What one tenant holds: a public owner and lead, a restricted owner, and an entity its agents
/// report missing.
struct Tenant {
    name: &'static str,
    public_team: &'static str,
    lead: &'static str,
    secret_team: &'static str,
    missing: &'static str,
}

const TENANTS: [Tenant; 3] = [
    Tenant {
        name: "norrland",
        public_team: "Amberwood",
        lead: "Iris Vale",
        secret_team: "Onyxgate",
        missing: "Falconridge",
    },
    Tenant {
        name: "southmark",
        public_team: "Birchfield",
        lead: "Jonas Pike",
        secret_team: "Pearlmoor",
        missing: "Gannetbay",
    },
    Tenant {
        name: "eastvale",
        public_team: "Cedarholm",
        lead: "Kira Lund",
        secret_team: "Quartzfen",
        missing: "Heronmere",
    },
];

/// The restricted page's id, the same in every tenant.
const RESTRICTED_PAGE: &str = "ledger-ownership-restricted";
const PRINCIPALS: [&str; 3] = ["alice", "bob", "cfo"];

fn token(auth: &AuthSettings, tenant: &str, principal: &str, roles: &[Role]) -> String {
    let holder = Holder {
        tenant,
        principal,
        groups: &[],
        roles,
    };
    holder.token(auth)
}

fn request<T>(message: T, token: &str) -> tonic::Request<T> {
    bearer(message, Some(token))
}

/// What `principal` of `tenant` must never see.
fn forbidden(tenant: &Tenant, principal: &str) -> Vec<&'static str> {
    let mut words = Vec::new();
    for other in TENANTS.iter().filter(|t| t.name != tenant.name) {
        words.extend([
            other.public_team,
            other.lead,
            other.secret_team,
            other.missing,
            other.name,
        ]);
    }
    if principal != "cfo" {
        words.extend([tenant.secret_team, RESTRICTED_PAGE]);
    }
    words
}

/// Loads one tenant: ontology, a public page, the restricted page (the same ids in every
/// tenant), and signals about an entity nobody documented (the same keys in every tenant).
/// Returns the tenant's last intake number.
async fn load(c: &Clients, auth: &AuthSettings, tenant: &Tenant) -> u64 {
    let admin = token(auth, tenant.name, "root", &[Role::Admin]);
    let mut sequence = 0;
    for kind in [
        ontology(ONTOLOGY),
        doc(
            "billing-ownership",
            "wiki",
            &format!(
                "Billing is owned by the {} team. The {} team is led by {}.",
                tenant.public_team, tenant.public_team, tenant.lead
            ),
            &[],
            0.0,
        ),
        doc(
            RESTRICTED_PAGE,
            "wiki",
            &format!("Ledger is owned by the {} team.", tenant.secret_team),
            &["cfo"],
            0.0,
        ),
    ] {
        sequence = c
            .telemetry
            .clone()
            .push_event(request(
                v1::Event {
                    caller: None,
                    kind: Some(kind),
                    ..Default::default()
                },
                &admin,
            ))
            .await
            .expect("push an event")
            .into_inner()
            .sequence;
    }
    let agent = token(auth, tenant.name, "alice", &[Role::Agent]);
    for n in 0..3 {
        c.telemetry
            .clone()
            .report_signal(request(
                v1::Signal {
                    caller: None,
                    r#type: v1::SignalType::EntityMissing as i32,
                    query: format!("who owns {}?", tenant.missing),
                    entity: tenant.missing.into(),
                    agent_id: format!("agent-{n}"),
                    idempotency_key: format!("probe-signal-{n}"),
                    ..Default::default()
                },
                &agent,
            ))
            .await
            .expect("report a signal");
    }
    sequence
}

/// One random probe as `principal` of `tenant`: what it answered, as text (an answer's debug
/// form, or the error's code and message).
async fn probe(
    c: &Clients,
    rng: &mut StdRng,
    tenant: &Tenant,
    principal: &str,
    token: &str,
    last_sequence: u64,
) -> (String, Option<&'static str>) {
    let who = || caller(tenant.name, principal);
    let entity = ["Billing", "Ledger"][rng.random_range(0..2)];
    let text = |r: Result<String, tonic::Status>| match r {
        Ok(answer) => answer,
        Err(status) => format!("{:?}: {}", status.code(), status.message()),
    };
    match rng.random_range(0..7) {
        0 => {
            let question = format!("Who owns {entity}?");
            let r = c
                .retrieval
                .clone()
                .ask(request(
                    v1::AskRequest {
                        caller: who(),
                        text: question,
                        ..Default::default()
                    },
                    token,
                ))
                .await;
            (text(r.map(|a| format!("{:?}", a.into_inner()))), None)
        }
        1 | 2 => {
            // A wait on a number of this tenant's, or on one it never had.
            let min_sequence = rng.random_range(0..=last_sequence + 3);
            let r = c
                .retrieval
                .clone()
                .lookup(request(
                    v1::LookupRequest {
                        caller: who(),
                        entity: entity.into(),
                        predicate_path: vec!["owned_by".into()],
                        min_sequence,
                        ..Default::default()
                    },
                    token,
                ))
                .await;
            (text(r.map(|a| format!("{:?}", a.into_inner()))), None)
        }
        3 => {
            let r = c
                .retrieval
                .clone()
                .plate(request(
                    v1::PlateRequest {
                        caller: who(),
                        ..Default::default()
                    },
                    token,
                ))
                .await;
            (text(r.map(|a| format!("{:?}", a.into_inner()))), None)
        }
        4 => {
            // A claim naming any tenant's team: the name asked about is echoed, so it is not a
            // leak; what the firewall knows of the real owner must not show.
            let all: Vec<&'static str> = TENANTS
                .iter()
                .flat_map(|t| [t.public_team, t.secret_team])
                .collect();
            let named = all[rng.random_range(0..all.len())];
            let r = c
                .firewall
                .clone()
                .validate(request(
                    v1::ValidateRequest {
                        caller: who(),
                        input: Some(v1::validate_request::Input::Text(format!(
                            "{entity} is owned by the {named} team."
                        ))),
                        ..Default::default()
                    },
                    token,
                ))
                .await;
            (
                text(r.map(|a| format!("{:?}", a.into_inner()))),
                Some(named),
            )
        }
        5 => {
            let r = c
                .analyst
                .clone()
                .list_patterns(request(
                    v1::ListPatternsRequest {
                        caller: who(),
                        limit: 0,
                    },
                    token,
                ))
                .await;
            (text(r.map(|a| format!("{:?}", a.into_inner()))), None)
        }
        _ => {
            let r = c
                .analyst
                .clone()
                .next_review(request(
                    v1::NextReviewRequest {
                        caller: who(),
                        ..Default::default()
                    },
                    token,
                ))
                .await;
            (text(r.map(|a| format!("{:?}", a.into_inner()))), None)
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_random_probes_reveal_nothing_of_another_tenant_or_an_unreadable_page() {
    let sandbox = Sandbox::embedded(&jwt(SECRET)).await;
    let c = sandbox.clients();
    let auth = sandbox.ctx.settings.auth.clone();
    let mut last = Vec::new();
    for tenant in &TENANTS {
        last.push(load(&c, &auth, tenant).await);
    }
    // Each tenant's own answers, once loaded: the probes below would prove nothing if the values
    // were not there to leak.
    for (tenant, &sequence) in TENANTS.iter().zip(&last) {
        for (principal, entity, expected) in [
            ("alice", "Billing", tenant.public_team),
            ("cfo", "Ledger", tenant.secret_team),
        ] {
            let answer = c
                .retrieval
                .clone()
                .lookup(request(
                    v1::LookupRequest {
                        caller: caller(tenant.name, principal),
                        entity: entity.into(),
                        predicate_path: vec!["owned_by".into()],
                        min_sequence: sequence,
                        ..Default::default()
                    },
                    &token(&auth, tenant.name, principal, &[Role::Agent]),
                ))
                .await
                .expect("lookup")
                .into_inner();
            assert_eq!(answer.value, expected, "{} {principal}", tenant.name);
        }
    }
    let tokens: Vec<Vec<String>> = TENANTS
        .iter()
        .map(|t| {
            PRINCIPALS
                .iter()
                .map(|p| token(&auth, t.name, p, &[Role::Agent, Role::Reviewer]))
                .collect()
        })
        .collect();
    let mut rng = StdRng::seed_from_u64(20261201);
    let mut leaks = Vec::new();
    for _ in 0..PROBES {
        let t = rng.random_range(0..TENANTS.len());
        let p = rng.random_range(0..PRINCIPALS.len());
        let (tenant, principal) = (&TENANTS[t], PRINCIPALS[p]);
        let (answer, echoed) = probe(&c, &mut rng, tenant, principal, &tokens[t][p], last[t]).await;
        for word in forbidden(tenant, principal) {
            if Some(word) != echoed && answer.contains(word) {
                leaks.push(format!(
                    "{}/{principal} saw {word:?} in {answer}",
                    tenant.name
                ));
            }
        }
    }
    println!(
        "probes: {PROBES} across {} tenants; leaks: {}",
        TENANTS.len(),
        leaks.len()
    );
    assert!(
        leaks.is_empty(),
        "{} leaks, first: {:?}",
        leaks.len(),
        leaks.first()
    );
}
