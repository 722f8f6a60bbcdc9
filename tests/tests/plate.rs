//! Plate and the ephemeral org graphs end to end, through the real services over gRPC.
//!
//! On a generated world of 10,000 people and 100,000 work items (plus a second, smaller tenant):
//! Plate equals the independent oracle for 1,000 random users (same items, same order, same
//! weights and counts); 10,000 random (caller, tenant) probes never show an item the caller may
//! not read, although the hierarchy and dependency dimensions reach such items; and an
//! `employee.transferred` pushed through the telemetry intake makes the next answer about that
//! person's manager the new one (the event-to-visible latency is printed). The same runs on
//! PostgreSQL and RabbitMQ. A small world covers docs pushes (product graph, coverage signal),
//! work items and HR events through the intake, refusals, and project context graphs. With
//! `auth.mode = "jwt"`, an item shared with a group is on the plate of a caller whose token
//! carries the group and on no one else's.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use ontoloop_auth::Role;
use ontoloop_core::topics;
use ontoloop_org::Caller;
use ontoloop_org::filters::{PlateContext, PlateSettings};
use ontoloop_org::hr::{HrEvent, apply};
use ontoloop_org::items::WorkItem;
use ontoloop_proto::v1;
use ontoloop_proto::v1::retrieval_service_client::RetrievalServiceClient;
use ontoloop_testkit::generate::{World, WorldSpec, generate};
use ontoloop_testkit::oracle::oracle_plate;
use ontoloop_testkit::plate::{
    Graphs, matches_oracle, oracle_for, plate_request, random_user, random_users,
};
use ontoloop_tests::tokens::{Holder, bearer, jwt};
use ontoloop_tests::{Clients, Sandbox, caller, settings, wait_until};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use tonic::Code;
use tonic::transport::Channel;

type Retrieval = RetrievalServiceClient<Channel>;

/// The large world: one tenant (`tenant-0`) of 10,000 people and 100,000 items.
fn large_world(items: usize) -> World {
    generate(&WorldSpec {
        seed: 7,
        tenants: 1,
        people: 10_000,
        services: 1_000,
        items,
        ..WorldSpec::default()
    })
}

/// A second tenant (`tenant-1`, 1,000 people, 5,000 items) whose person and service ids repeat
/// the first's, so a plate that mixed tenants up would show.
fn second_world() -> World {
    let mut world = generate(&WorldSpec {
        seed: 8,
        tenants: 2,
        people: 2_000,
        services: 200,
        items: 10_000,
        ..WorldSpec::default()
    });
    world.tenants.retain(|t| t.tenant == "tenant-1");
    world.items.retain(|i| i.tenant == "tenant-1");
    world
}

fn plate_settings() -> PlateSettings {
    settings(&[]).plate
}

/// The plates of `callers` at the world's instant with `limit` items, four requests at a time.
async fn plates(
    retrieval: &Retrieval,
    world: &World,
    callers: Vec<Caller>,
    limit: u32,
) -> Vec<(Caller, v1::PlateResponse)> {
    futures::stream::iter(callers)
        .map(|caller| {
            let mut client = retrieval.clone();
            let request = plate_request(&caller, world.now, limit);
            async move {
                let plate = client.plate(request).await.expect("plate").into_inner();
                (caller, plate)
            }
        })
        .buffered(4)
        .collect()
        .await
}

/// Plates of `users` random users of the world's first tenant equal the oracle's.
async fn plates_equal_the_oracle(retrieval: &Retrieval, world: &World, users: usize, seed: u64) {
    let tenant = &world.tenants[0];
    let settings = plate_settings();
    let callers = random_users(users, seed, tenant);
    let results = plates(retrieval, world, callers, 0).await;
    let (mut nonempty, mut reasons) = (0, HashSet::new());
    for (caller, got) in &results {
        let want = oracle_for(world, tenant, caller, None, &settings);
        if let Err(difference) = matches_oracle(got, &want) {
            panic!("plate of {caller:?} differs from the oracle: {difference}");
        }
        if !got.items.is_empty() {
            nonempty += 1;
        }
        for item in &got.items {
            reasons.extend(item.admitted_by.iter().cloned());
        }
    }
    assert!(
        nonempty * 10 > users * 7,
        "only {nonempty} of {users} plates had items"
    );
    assert_eq!(
        reasons.len(),
        3,
        "every admission dimension shows up: {reasons:?}"
    );
}

/// Random callers probe random tenants; nothing unreadable ever shows, and the probes do reach
/// unreadable items through the hierarchy and dependency dimensions.
async fn probes_never_leak(retrieval: &Retrieval, worlds: &[&World], probes: usize) {
    let settings = plate_settings();
    let now = worlds[0].now;
    let graphs: HashMap<&str, Graphs> = worlds
        .iter()
        // Each world has one tenant: its graphs are the first.
        .map(|w| (w.tenants[0].tenant.as_str(), Graphs::build(w)))
        .collect();
    let items: HashMap<(&str, &str), &WorkItem> = worlds
        .iter()
        .flat_map(|w| w.items.iter())
        .map(|i| ((i.tenant.as_str(), i.id.as_str()), i))
        .collect();
    let mut rng = StdRng::seed_from_u64(31);
    let callers: Vec<Caller> = (0..probes)
        .map(|_| {
            let home = worlds.choose(&mut rng).expect("worlds");
            let probed = worlds.choose(&mut rng).expect("worlds");
            let principal = random_user(&mut rng, "x", &home.tenants[0].org);
            Caller::new(&probed.tenants[0].tenant, principal.principal()).expect("caller")
        })
        .collect();
    let results = plates(retrieval, worlds[0], callers, u32::MAX).await;
    let (mut shown, mut via_hierarchy, mut via_dependency) = (0, 0, 0);
    for (caller, plate) in &results {
        let tenant = caller.tenant();
        let mut ids = HashSet::new();
        for entry in &plate.items {
            let item = items
                .get(&(tenant, entry.item_id.as_str()))
                .unwrap_or_else(|| panic!("{} is not an item of {tenant}", entry.item_id));
            assert!(
                item.acl.is_empty() || item.acl.iter().any(|a| a == caller.principal()),
                "ACL leak: {item:?} shown to {caller:?}"
            );
            ids.insert(entry.item_id.as_str());
            shown += 1;
        }
        let graphs = &graphs[tenant];
        let context =
            PlateContext::new(caller, &settings, now, &graphs.orgs[0], &graphs.products[0]);
        let Some(partition) = graphs.index.tenant(tenant) else {
            continue;
        };
        for position in context.reach(partition) {
            let Some(item) = partition.at(position) else {
                continue;
            };
            if item.readable_by(caller) {
                continue;
            }
            assert!(!ids.contains(item.id.as_str()), "unreadable {item:?} shown");
            let assignee = item.assignee.as_deref().unwrap_or_default();
            if context.reports.contains(assignee)
                && settings.report_severities.contains(&item.severity)
            {
                via_hierarchy += 1;
            }
            if item
                .service
                .as_deref()
                .is_some_and(|s| context.dependencies.contains(s))
                && settings.dependency_severities.contains(&item.severity)
            {
                via_dependency += 1;
            }
        }
    }
    println!(
        "{probes} permission probes: {shown} items shown, none unreadable; withheld {via_hierarchy} \
         unreadable items the hierarchy and {via_dependency} the dependency dimension would admit"
    );
    assert!(shown > 10 * probes, "only {shown} items shown");
    assert!(
        via_hierarchy > 0,
        "no probe reached an unreadable report's item"
    );
    assert!(
        via_dependency > 0,
        "no probe reached an unreadable dependency item"
    );
}

async fn ask(retrieval: &Retrieval, tenant: &str, text: &str, min_sequence: u64) -> v1::Answer {
    let mut client = retrieval.clone();
    client
        .ask(v1::AskRequest {
            caller: caller(tenant, "agent"),
            text: text.to_owned(),
            min_sequence,
            ..Default::default()
        })
        .await
        .expect("ask")
        .into_inner()
}

fn manager_in(answer: &v1::Answer) -> &str {
    answer.hops.first().map_or("", |hop| hop.value.as_str())
}

async fn push(c: &Clients, tenant: &str, kind: v1::event::Kind) -> Result<u64, tonic::Status> {
    c.push(tenant, "hr-system", kind).await
}

fn transfer(person: &str, team: &str, manager: &str) -> v1::event::Kind {
    v1::event::Kind::Hr(v1::HrEvent {
        r#type: v1::HrEventType::EmployeeTransferred as i32,
        person_id: person.to_owned(),
        team: team.to_owned(),
        manager_id: manager.to_owned(),
        ..Default::default()
    })
}

/// Moves people with a manager under the top of the organisation through the intake, one after
/// the other, and returns each event-to-visible latency (the first pays for the analyst's first
/// read of the HR records); afterwards the plates of everyone involved equal the oracle on the
/// changed records.
async fn transfers_are_visible(c: &Clients, world: &World, count: usize) -> Vec<Duration> {
    let retrieval = &c.retrieval;
    let tenant = &world.tenants[0];
    let top = tenant
        .org
        .people()
        .find(|p| p.manager.is_none())
        .expect("a top of the organisation");
    let movers: Vec<_> = tenant
        .org
        .people()
        .filter(|p| p.manager.as_ref().is_some_and(|m| *m != top.id))
        .skip(100)
        .take(count)
        .cloned()
        .collect();
    let mut records = tenant.org.clone();
    let mut involved = vec![top.id.clone()];
    let mut latencies = Vec::new();
    for mover in &movers {
        let old = mover.manager.clone().unwrap_or_default();
        let question = format!("Who does {} report to?", mover.id);
        let before = ask(retrieval, &tenant.tenant, &question, 0).await;
        assert_eq!(manager_in(&before), old, "{before:?}");
        assert_eq!(before.status, v1::AnswerStatus::Answered as i32);

        let started = Instant::now();
        let seq = push(c, &tenant.tenant, transfer(&mover.id, &mover.team, &top.id))
            .await
            .expect("transfer accepted");
        let latency = loop {
            let answer = ask(retrieval, &tenant.tenant, &question, 0).await;
            if manager_in(&answer) == top.id {
                break started.elapsed();
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the transfer never became visible: {answer:?}"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        latencies.push(latency);
        let read_your_write = ask(retrieval, &tenant.tenant, &question, seq).await;
        assert_eq!(manager_in(&read_your_write), top.id);
        assert_eq!(read_your_write.applied_sequence, seq);

        let event = HrEvent::Transferred {
            person: mover.id.clone(),
            team: mover.team.clone(),
            manager: Some(top.id.clone()),
            role: None,
        };
        apply(&mut records, &event).expect("the transfer applies");
        involved.extend([old, mover.id.clone()]);
    }
    let settings = plate_settings();
    for principal in &involved {
        let caller = Caller::new(&tenant.tenant, principal).expect("caller");
        let mut client = retrieval.clone();
        let got = client
            .plate(plate_request(&caller, world.now, 0))
            .await
            .expect("plate")
            .into_inner();
        let want = oracle_plate(
            &caller,
            world.now,
            None,
            &records,
            &tenant.facts,
            &world.items,
            &settings,
        );
        if let Err(difference) = matches_oracle(&got, &want) {
            panic!("after the transfers, the plate of {principal} differs: {difference}");
        }
    }
    latencies
}

fn report_latencies(latencies: &[Duration], setup: &str) {
    let ms: Vec<String> = latencies
        .iter()
        .map(|l| format!("{:.1}", l.as_secs_f64() * 1000.0))
        .collect();
    println!(
        "employee.transferred visible after [{}] ms at 10,000 people ({setup}; the first \
         transfer includes the analyst's first read of the HR records)",
        ms.join(", ")
    );
    for latency in latencies {
        assert!(*latency < Duration::from_secs(5), "{latency:?}");
    }
}

async fn load(sandbox: &Sandbox, worlds: &[&World]) {
    for world in worlds {
        ontoloop_testkit::load::load(&sandbox.ctx.store, world)
            .await
            .expect("bulk load");
    }
}

/// Plates load on first use; a caller of each tenant warms them up.
async fn warm_up(retrieval: &Retrieval, worlds: &[&World]) {
    for world in worlds {
        let caller = Caller::new(&world.tenants[0].tenant, "p00000").expect("caller");
        let mut client = retrieval.clone();
        client
            .plate(plate_request(&caller, world.now, 0))
            .await
            .expect("first plate");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plates_equal_the_oracle_never_leak_and_follow_a_transfer() {
    let started = Instant::now();
    let sandbox = Sandbox::embedded(&[]).await;
    let (large, second) = (large_world(100_000), second_world());
    let worlds = [&large, &second];
    load(&sandbox, &worlds).await;
    let c = sandbox.clients();
    let retrieval = c.retrieval.clone();
    warm_up(&retrieval, &worlds).await;
    println!("generated, loaded and warmed up in {:?}", started.elapsed());

    let phase = Instant::now();
    plates_equal_the_oracle(&retrieval, &large, 1_000, 11).await;
    println!("1,000 plates equal the oracle ({:?})", phase.elapsed());
    let phase = Instant::now();
    probes_never_leak(&retrieval, &worlds, 10_000).await;
    println!("10,000 permission probes ({:?})", phase.elapsed());
    let latencies = transfers_are_visible(&c, &large, 3).await;
    report_latencies(&latencies, "SQLite, in-process queue");
    sandbox.shutdown().await.expect("clean shutdown");
    println!("whole test {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_and_rabbitmq_plates_equal_the_oracle_and_a_transfer_is_visible() {
    let started = Instant::now();
    let (sandbox, database) = Sandbox::on_servers("plate", &[]).await;
    let large = large_world(20_000);
    load(&sandbox, &[&large]).await;
    let c = sandbox.clients();
    let retrieval = c.retrieval.clone();
    warm_up(&retrieval, &[&large]).await;
    plates_equal_the_oracle(&retrieval, &large, 200, 12).await;
    let latencies = transfers_are_visible(&c, &large, 3).await;
    report_latencies(&latencies, "PostgreSQL, RabbitMQ");
    sandbox.shutdown().await.expect("clean shutdown");
    database.drop_now().await.expect("drop the test database");
    println!("whole test {:?}", started.elapsed());
}

#[tokio::test]
async fn docs_items_hr_events_and_projects_flow_through_the_intake() {
    let sandbox = Sandbox::embedded(&[]).await;
    let world = generate(&WorldSpec {
        seed: 5,
        tenants: 1,
        people: 200,
        services: 20,
        items: 2_000,
        ..WorldSpec::default()
    });
    load(&sandbox, &[&world]).await;
    let c = sandbox.clients();
    let retrieval = c.retrieval.clone();
    let tenant = world.tenants[0].tenant.clone();

    // A docs push: a new service owned by team-0001 that depends on svc-0000, and an undescribed
    // product. Coverage stays below the threshold, so a temporal_stale signal is raised.
    let contents = [
        (
            "docs/ledger.md".to_owned(),
            "---\nid: svc-ledger\nis_a: service\nname: Ledger API\nowned_by: team-0001\n\
             depends_on: svc-0000\n---\nKeeps the books.\n"
                .to_owned(),
        ),
        (
            "docs/books.md".to_owned(),
            "---\nid: prod-books\nis_a: product\n---\n".to_owned(),
        ),
    ];
    let seq = push(
        &c,
        &tenant,
        v1::event::Kind::DocsPush(v1::DocsPush {
            changed_files: contents.iter().map(|(path, _)| path.clone()).collect(),
            contents: contents.into_iter().collect(),
        }),
    )
    .await
    .expect("docs push accepted");
    let owner = ask(&retrieval, &tenant, "Who owns the Ledger API service?", seq).await;
    assert_eq!(owner.status, v1::AnswerStatus::Answered as i32, "{owner:?}");
    assert_eq!(manager_in(&owner), "team-0001");
    let store = sandbox.ctx.store.clone();
    assert!(
        wait_until(Duration::from_secs(20), || {
            let store = store.clone();
            async move {
                store
                    .inbox(topics::SIGNALS, 1000)
                    .await
                    .is_ok_and(|messages| {
                        messages.iter().any(|m| {
                            m.body.contains(r#""tenant":"tenant-0""#)
                                && m.body
                                    .contains(r#""idempotency_key":"product-docs-coverage-v"#)
                                && m.body.contains("temporal_stale")
                                && m.body.contains("product-docs")
                        })
                    })
            }
        })
        .await,
        "a coverage signal reaches the analyst"
    );

    // A work item through the intake lands on its assignee's plate.
    let assignee = "p00042";
    push(
        &c,
        &tenant,
        v1::event::Kind::WorkItem(v1::WorkItemUpsert {
            item_id: "INC-1".into(),
            title: "Ledger is down".into(),
            assignee: assignee.into(),
            service: "svc-ledger".into(),
            severity: "critical".into(),
            scope: "bugs".into(),
            source_type: "servicenow".into(),
            created_at: None,
            acl: Vec::new(),
        }),
    )
    .await
    .expect("item accepted");
    let request = v1::PlateRequest {
        caller: caller(&tenant, assignee),
        ..Default::default()
    };
    let last = std::sync::Mutex::new(v1::PlateResponse::default());
    let landed = wait_until(Duration::from_secs(20), || {
        let (mut client, request, last) = (retrieval.clone(), request.clone(), &last);
        async move {
            let plate = client.plate(request).await.expect("plate").into_inner();
            let landed = plate.items.first().is_some_and(|i| i.item_id == "INC-1");
            *last.lock().expect("not poisoned") = plate;
            landed
        }
    })
    .await;
    let plate = last.into_inner().expect("not poisoned");
    assert!(landed, "the new item is on its assignee's plate: {plate:?}");
    let top = &plate.items[0];
    assert_eq!(top.admitted_by, vec!["hierarchy"]);
    assert_eq!(top.weights["authority"], 1.0);
    assert_eq!(top.service, "svc-ledger");

    // A hire, then the hire's manager leaves: the hire moves to the skip level.
    let manager = world.tenants[0]
        .org
        .people()
        .find(|p| p.manager.is_some())
        .expect("someone with a manager")
        .clone();
    let skip = manager.manager.clone().unwrap_or_default();
    let hired = push(
        &c,
        &tenant,
        v1::event::Kind::Hr(v1::HrEvent {
            r#type: v1::HrEventType::EmployeeHired as i32,
            person_id: "p-new".into(),
            name: "Nia Newcomer".into(),
            team: manager.team.clone(),
            role: "engineer".into(),
            manager_id: manager.id.clone(),
            ..Default::default()
        }),
    )
    .await
    .expect("hire accepted");
    let answer = ask(
        &retrieval,
        &tenant,
        "Who does Nia Newcomer report to?",
        hired,
    )
    .await;
    assert_eq!(manager_in(&answer), manager.id);
    let left = push(
        &c,
        &tenant,
        v1::event::Kind::Hr(v1::HrEvent {
            r#type: v1::HrEventType::EmployeeTerminated as i32,
            person_id: manager.id.clone(),
            ..Default::default()
        }),
    )
    .await
    .expect("termination accepted");
    let answer = ask(&retrieval, &tenant, "who manages p-new", left).await;
    assert_eq!(manager_in(&answer), skip);

    // An event the records refuse settles as failed, with the reason.
    let refused = push(&c, &tenant, transfer("p-new", "no-such-team", ""))
        .await
        .expect("accepted at the intake");
    let mut client = retrieval.clone();
    let status = client
        .ask(v1::AskRequest {
            caller: caller(&tenant, "agent"),
            text: "Who does p-new report to?".into(),
            min_sequence: refused,
            ..Default::default()
        })
        .await
        .expect_err("refused event");
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert!(
        status.message().contains("no-such-team"),
        "{}",
        status.message()
    );
    let unknown = ask(&retrieval, &tenant, "Who does Nobody Known report to?", 0).await;
    assert_eq!(unknown.status, v1::AnswerStatus::Abstained as i32);
    assert!(
        unknown.abstain_reason.contains("Nobody Known"),
        "{unknown:?}"
    );

    // A project's context graph: opened from its team, extended, closed.
    let project = |action: v1::ProjectAction, extend_secs: u64| v1::ProjectContextRequest {
        caller: caller(&tenant, "p00001"),
        project: "books".into(),
        action: action as i32,
        team: "team-0001".into(),
        services: Vec::new(),
        constraints: vec!["ship before the audit".into()],
        extend_secs,
    };
    let opened = client
        .project_context(project(v1::ProjectAction::Open, 0))
        .await
        .expect("open")
        .into_inner();
    assert!(opened.created);
    assert!(
        opened.dependencies.contains(&"svc-ledger".to_owned()),
        "{opened:?}"
    );
    assert!(
        opened.dependencies.contains(&"svc-0000".to_owned()),
        "transitive: {opened:?}"
    );
    assert_eq!(opened.constraints[0], "ship before the audit");
    let again = client
        .project_context(project(v1::ProjectAction::Open, 0))
        .await
        .expect("open again")
        .into_inner();
    assert!(!again.created);
    let extended = client
        .project_context(project(v1::ProjectAction::Extend, 86_400))
        .await
        .expect("extend")
        .into_inner();
    assert_eq!(extended.members, opened.members);
    let closed = client
        .project_context(project(v1::ProjectAction::Close, 0))
        .await
        .expect("close")
        .into_inner();
    assert!(closed.closed);
    let status = client
        .project_context(project(v1::ProjectAction::Extend, 86_400))
        .await
        .expect_err("closed");
    assert_eq!(status.code(), Code::NotFound);
    let status = client
        .project_context(v1::ProjectContextRequest {
            team: "team-none".into(),
            ..project(v1::ProjectAction::Open, 0)
        })
        .await
        .expect_err("unknown team");
    assert_eq!(status.code(), Code::NotFound);
    assert!(
        status.message().contains("team-none"),
        "{}",
        status.message()
    );

    // Plate refuses a request without a caller, like every RPC.
    let status = client
        .plate(v1::PlateRequest::default())
        .await
        .expect_err("no caller");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().contains("caller"), "{}", status.message());
    sandbox.shutdown().await.expect("clean shutdown");
}

/// Plate reads the caller's groups from the bearer token: an item whose ACL names only a group
/// is on the plate of its assignee when the token carries the group, and not when it carries
/// none or another one (the request body has no groups to claim).
#[tokio::test]
async fn a_group_shared_item_is_on_the_plate_of_the_groups_members_only() {
    const SECRET: &str = "plate-groups-secret-0123456789abcdef";
    let sandbox = Sandbox::embedded(&jwt(SECRET)).await;
    let world = generate(&WorldSpec {
        seed: 5,
        tenants: 1,
        people: 50,
        services: 5,
        items: 100,
        ..WorldSpec::default()
    });
    load(&sandbox, &[&world]).await;
    let c = sandbox.clients();
    let auth = sandbox.ctx.settings.auth.clone();
    let tenant = world.tenants[0].tenant.as_str();
    let assignee = "p00042";
    let token = |principal: &str, groups: &[&str], roles: &[Role]| {
        Holder {
            tenant,
            principal,
            groups,
            roles,
        }
        .token(&auth)
    };
    let feed = token("tracker-sync", &[], &[Role::Integration]);
    let sequence = c
        .telemetry
        .clone()
        .push_event(bearer(
            v1::Event {
                kind: Some(v1::event::Kind::WorkItem(v1::WorkItemUpsert {
                    item_id: "INC-ONCALL".into(),
                    title: "Pager storm".into(),
                    assignee: assignee.into(),
                    service: String::new(),
                    severity: "critical".into(),
                    scope: "bugs".into(),
                    source_type: "servicenow".into(),
                    created_at: None,
                    acl: vec!["oncall".into()],
                })),
                ..Default::default()
            },
            Some(&feed),
        ))
        .await
        .expect("item accepted")
        .into_inner()
        .sequence;
    let retrieval = c.retrieval.clone();
    let item_ids = |token: String| {
        let mut client = retrieval.clone();
        async move {
            client
                .plate(bearer(v1::PlateRequest::default(), Some(&token)))
                .await
                .expect("plate")
                .into_inner()
                .items
                .into_iter()
                .map(|item| item.item_id)
                .collect::<Vec<_>>()
        }
    };
    // The intake accepted the item; the member's plate shows it once the read model has it.
    let member = token(assignee, &["oncall"], &[Role::Agent]);
    let shown = std::sync::Mutex::new(Vec::new());
    let landed = wait_until(Duration::from_secs(20), || {
        let (ids, shown) = (item_ids(member.clone()), &shown);
        async move {
            let ids = ids.await;
            let landed = ids.iter().any(|id| id == "INC-ONCALL");
            *shown.lock().expect("not poisoned") = ids;
            landed
        }
    })
    .await;
    let shown = shown.into_inner().expect("not poisoned");
    assert!(
        landed,
        "a member of oncall sees the item (event {sequence}): {shown:?}"
    );
    for (groups, who) in [(&[][..], "no group"), (&["finance"][..], "another group")] {
        let ids = item_ids(token(assignee, groups, &[Role::Agent])).await;
        assert!(
            !ids.iter().any(|id| id == "INC-ONCALL"),
            "the assignee with {who} is not in oncall: {ids:?}"
        );
    }
    sandbox.shutdown().await.expect("clean shutdown");
}
