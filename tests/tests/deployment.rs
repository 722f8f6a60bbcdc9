//! The scaled-out deployment, as processes: two retrieval, two analyst, one telemetry and one
//! firewall process — the per-service binaries (`ontoloop-retrieval`, ...), each with ports of
//! its own — on one fresh PostgreSQL database and one RabbitMQ namespace of this machine, driven
//! through their gRPC ports only. The six start at once on the fresh database, each migrating it
//! as it starts (they take turns under the migrations' lock), and are waited for on gRPC health.
//!
//! Entities are set twice each through the intake (doc.upsert with an idempotency key, retried on
//! error); every few pushes one of the two retrievals (in turn) is asked with `min_sequence` = the
//! acknowledged number and must answer the value just pushed (read-your-writes across
//! processes); now and then the firewall must pass a claim the knowledge supports. A third of the
//! way, analyst A is killed with SIGKILL and restarted on the same ports; two thirds of the way,
//! retrieval B. A call a dead process refuses is retried (an ask meant for B goes to A meanwhile);
//! a wrong answer, or an acknowledged event never applied, fails the test. At the end every
//! acknowledged event must be settled applied in the intake log, and every entity must read its
//! last value through both retrievals.
//!
//! The binaries are found beside this test's executable (`target/debug/`); `cargo test` does not
//! build them: `cargo build --workspace --bins` does (`make test` runs it first).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_proto::v1::firewall_service_client::FirewallServiceClient;
use ontoloop_proto::v1::retrieval_service_client::RetrievalServiceClient;
use ontoloop_proto::v1::telemetry_service_client::TelemetryServiceClient;
use ontoloop_testkit::servers::free_ports;
use ontoloop_tests::{PgDatabase, amqp_namespace, amqp_url, caller, settings};
use tonic::Code;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

const TENANT: &str = "deployment";
/// Entities, each set twice: `2 * ENTITIES` events besides the ontology.
const ENTITIES: usize = 150;
/// An Ask after every this many pushes, a Validate after every `VALIDATE_EVERY`.
const ASK_EVERY: usize = 3;
const VALIDATE_EVERY: usize = 25;
/// The catalog is the source of truth of ownership: one page of it supports a claim alone.
const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}
],"authority":{"catalog":3,"default":1}}"#;
const TEAMS: [&str; 5] = ["Atlas", "Borealis", "Cygnus", "Draco", "Equinox"];

/// How long a process may take to answer SERVING on gRPC health after it is started.
const START_DEADLINE: Duration = Duration::from_secs(60);
/// How long one call is retried while a process is down or an event still pending.
const CALL_DEADLINE: Duration = Duration::from_secs(60);

/// Entity `i`'s value after its `round` (0 or 1): the two always differ.
fn team(i: usize, round: usize) -> &'static str {
    TEAMS[(i + 2 * round) % TEAMS.len()]
}

fn entity(i: usize) -> String {
    format!("Service{i}")
}

/// Where cargo puts this package's test executables' siblings, the workspace's binaries:
/// `target/debug/deps/deployment-HASH` -> `target/debug/`.
fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the test executable's folder");
    let dir = if deps.ends_with("deps") {
        deps.parent().expect("target/debug")
    } else {
        deps
    };
    dir.to_path_buf()
}

/// The per-service binary of `kind`; panics, saying how to build it, when it is missing.
fn binary(kind: ServiceKind) -> PathBuf {
    let path = bin_dir().join(format!("ontoloop-{}", kind.name()));
    assert!(
        path.is_file(),
        "{} is missing: `cargo test` does not build the services' binaries; run \
         `cargo build --workspace --bins` first (`make test` does)",
        path.display()
    );
    path
}

/// One service process of the deployment: its binary, its environment (kept for restarts, so a
/// restarted process has the same ports), its log files. Dropping it kills the process.
struct Proc {
    name: String,
    kind: ServiceKind,
    bin: PathBuf,
    env: Vec<(String, String)>,
    grpc_port: u16,
    logs: PathBuf,
    starts: usize,
    child: Option<Child>,
}

impl Proc {
    /// A process of `kind` named `name`, on `ports` (eight distinct ones: the four gRPC ports and
    /// the four HTTP ports the settings need to be distinct; the process binds only its own two).
    fn new(
        name: &str,
        kind: ServiceKind,
        ports: &[u16],
        store_url: &str,
        namespace: &str,
        logs: &Path,
    ) -> Self {
        assert_eq!(ports.len(), 8);
        let mut env: Vec<(String, String)> = ServiceKind::ALL
            .iter()
            .zip(ports)
            .map(|(k, p)| {
                (
                    format!("ONTOLOOP__SERVICES__{}_PORT", k.name().to_uppercase()),
                    p.to_string(),
                )
            })
            .collect();
        let http: Vec<String> = ports[4..].iter().map(u16::to_string).collect();
        env.push(("ONTOLOOP__SERVICES__HTTP_PORTS".into(), http.join(",")));
        env.extend(
            [
                ("ONTOLOOP__STORE__URL", store_url),
                ("ONTOLOOP__QUEUE__URL", amqp_url().as_str()),
                ("ONTOLOOP__QUEUE__NAMESPACE", namespace),
                ("ONTOLOOP__SERVICES__HOST", "127.0.0.1"),
                ("ONTOLOOP__AUTH__MODE", "off"),
                ("ONTOLOOP__LOG__FILTER", "info"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned())),
        );
        let index = ServiceKind::ALL
            .iter()
            .position(|k| *k == kind)
            .expect("a kind");
        Self {
            name: name.to_owned(),
            kind,
            bin: binary(kind),
            env,
            grpc_port: ports[index],
            logs: logs.to_path_buf(),
            starts: 0,
            child: None,
        }
    }

    fn log_path(&self, stream: &str) -> PathBuf {
        self.logs
            .join(format!("{}.{}.{stream}", self.name, self.starts))
    }

    /// Starts the process (again): a clean environment but for `PATH`, `HOME` and the
    /// deployment's settings; stdout and stderr to files of this start.
    fn spawn(&mut self) {
        assert!(self.child.is_none(), "{} is already running", self.name);
        self.starts += 1;
        let out = File::create(self.log_path("stdout")).expect("stdout file");
        let err = File::create(self.log_path("stderr")).expect("stderr file");
        let mut command = Command::new(&self.bin);
        command.env_clear();
        for var in ["PATH", "HOME", "ONTOLOOP_MODEL_DIR"] {
            if let Some(value) = std::env::var_os(var) {
                command.env(var, value);
            }
        }
        let child = command
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap_or_else(|e| panic!("start {} ({}): {e}", self.name, self.bin.display()));
        self.child = Some(child);
    }

    /// SIGKILL, and reap.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The last lines this start wrote to stderr and stdout, for a panic message.
    fn output(&self) -> String {
        let tail = |stream: &str| {
            let text = std::fs::read_to_string(self.log_path(stream)).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(30)..].join("\n")
        };
        format!(
            "--- {} stderr ---\n{}\n--- {} stdout ---\n{}",
            self.name,
            tail("stderr"),
            self.name,
            tail("stdout")
        )
    }

    /// Waits until the process answers SERVING on gRPC health for its service; panics with its
    /// output when it exits first or the deadline passes. Returns how long that took.
    async fn wait_serving(&mut self) -> Duration {
        let started = Instant::now();
        let mut health = HealthClient::new(channel(self.grpc_port));
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!(
                    "{} exited before serving ({status}):\n{}",
                    self.name,
                    self.output()
                );
            }
            let last = match health
                .check(HealthCheckRequest {
                    service: self.kind.grpc_name().to_owned(),
                })
                .await
            {
                Ok(r) if r.get_ref().status() == ServingStatus::Serving => {
                    return started.elapsed();
                }
                Ok(r) => format!("{:?}", r.get_ref().status()),
                Err(status) => status.to_string(),
            };
            assert!(
                started.elapsed() < START_DEADLINE,
                "{} not SERVING within {START_DEADLINE:?} (last: {last}):\n{}",
                self.name,
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

fn channel(port: u16) -> Channel {
    tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .expect("endpoint")
        .connect_timeout(Duration::from_secs(1))
        .timeout(Duration::from_secs(15))
        .connect_lazy()
}

/// Codes a call may end with while a process is down, restarting, or still applying: retried.
fn passing(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable
            | Code::Unknown
            | Code::Cancelled
            | Code::DeadlineExceeded
            | Code::ResourceExhausted
            | Code::Aborted
    )
}

fn doc_event(i: usize, round: usize) -> v1::Event {
    v1::Event {
        caller: caller(TENANT, "loader"),
        idempotency_key: format!("doc-{i}-{round}"),
        kind: Some(v1::event::Kind::DocUpsert(v1::DocUpsert {
            doc_id: format!("svc-{i}"),
            title: format!("svc-{i}"),
            origin: "catalog".into(),
            body: format!("{} is owned by the {} team.", entity(i), team(i, round)),
            ..Default::default()
        })),
        ..Default::default()
    }
}

/// Pushes `event` until acknowledged (same idempotency key each time); its sequence number and
/// the number of refused tries.
async fn push(telemetry: &mut TelemetryServiceClient<Channel>, event: v1::Event) -> (u64, u64) {
    let deadline = Instant::now() + CALL_DEADLINE;
    let mut refused = 0;
    loop {
        match telemetry.push_event(event.clone()).await {
            Ok(ack) => return (ack.into_inner().sequence, refused),
            Err(status) => {
                assert!(
                    passing(status.code()) && Instant::now() < deadline,
                    "{} not acknowledged: {status}",
                    event.idempotency_key
                );
                refused += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The two retrievals, A and B.
struct Retrievals {
    clients: [RetrievalServiceClient<Channel>; 2],
    /// Calls refused (a process down, an event still pending) and retried.
    refused: u64,
}

#[derive(Clone, Copy)]
enum Question<'a> {
    /// Ask "Who owns ENTITY?".
    Ask(&'a str),
    /// Lookup ENTITY owned_by.
    Lookup(&'a str),
}

impl Retrievals {
    /// Asks retrieval `first` (0: A, 1: B) with `min_sequence`; while it refuses, the other one
    /// and it in turn, until one answers. The answer's value and which retrieval gave it.
    async fn answer(
        &mut self,
        first: usize,
        question: Question<'_>,
        min_sequence: u64,
    ) -> (String, usize) {
        let deadline = Instant::now() + CALL_DEADLINE;
        let mut which = first;
        loop {
            let client = &mut self.clients[which];
            let outcome = match question {
                Question::Ask(entity) => {
                    client
                        .ask(v1::AskRequest {
                            caller: caller(TENANT, "alice"),
                            text: format!("Who owns {entity}?"),
                            min_sequence,
                            ..Default::default()
                        })
                        .await
                }
                Question::Lookup(entity) => {
                    client
                        .lookup(v1::LookupRequest {
                            caller: caller(TENANT, "alice"),
                            entity: entity.into(),
                            predicate_path: vec!["owned_by".into()],
                            min_sequence,
                            ..Default::default()
                        })
                        .await
                }
            };
            match outcome {
                Ok(answer) => return (answer.into_inner().value, which),
                Err(status) => {
                    assert!(
                        passing(status.code()) && Instant::now() < deadline,
                        "retrieval {} refused {:?} after sequence {min_sequence}: {status}",
                        ["A", "B"][which],
                        match question {
                            Question::Ask(e) | Question::Lookup(e) => e,
                        }
                    );
                    self.refused += 1;
                    which = 1 - which;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }

    /// Answers through retrieval `which` only, retrying it until it answers.
    async fn answer_from(
        &mut self,
        which: usize,
        question: Question<'_>,
        min_sequence: u64,
    ) -> String {
        loop {
            let (value, by) = self.answer(which, question, min_sequence).await;
            if by == which {
                return value;
            }
        }
    }
}

/// Validates `claim` until the firewall answers; whether it passed.
async fn validate(firewall: &mut FirewallServiceClient<Channel>, claim: v1::Claim) -> bool {
    let deadline = Instant::now() + CALL_DEADLINE;
    loop {
        let outcome = firewall
            .validate(v1::ValidateRequest {
                caller: caller(TENANT, "alice"),
                input: Some(v1::validate_request::Input::Claims(v1::ClaimList {
                    claims: vec![claim.clone()],
                })),
                context: Some(v1::ValidationContext {
                    domain: String::new(),
                    risk: v1::RiskLevel::Unspecified as i32,
                }),
                as_of: None,
            })
            .await;
        match outcome {
            Ok(r) => return r.get_ref().overall == v1::Verdict::Pass as i32,
            Err(status) => {
                assert!(
                    passing(status.code()) && Instant::now() < deadline,
                    "the firewall refused {claim:?}: {status}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Kills `proc` with SIGKILL, waits `down`, starts it again on the same ports and waits until it
/// serves; hands it back with the time from its restart to SERVING.
async fn kill_and_restart(mut proc: Proc, down: Duration) -> (Proc, Duration) {
    proc.kill();
    tokio::time::sleep(down).await;
    proc.spawn();
    let took = proc.wait_serving().await;
    (proc, took)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_service_processes_survive_a_killed_analyst_and_retrieval() {
    let started = Instant::now();
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let namespace = amqp_namespace("deployment");
    let logs = tempfile::tempdir().expect("a folder for the processes' output");

    let ports = free_ports(6 * 8);
    let layout = [
        ("telemetry", ServiceKind::Telemetry),
        ("firewall", ServiceKind::Firewall),
        ("retrieval-a", ServiceKind::Retrieval),
        ("retrieval-b", ServiceKind::Retrieval),
        ("analyst-a", ServiceKind::Analyst),
        ("analyst-b", ServiceKind::Analyst),
    ];
    let mut procs: Vec<Proc> = layout
        .iter()
        .zip(ports.chunks(8))
        .map(|((name, kind), ports)| {
            Proc::new(name, *kind, ports, &database.url, &namespace, logs.path())
        })
        .collect();
    for proc in &mut procs {
        proc.spawn();
    }
    let mut start_times = Vec::new();
    for proc in &mut procs {
        let took = proc.wait_serving().await;
        start_times.push(format!("{} {:.1} s", proc.name, took.as_secs_f64()));
    }
    let up_at = started.elapsed();
    // The six started together on the fresh database, each migrating it at start: they took
    // turns (the migrations' lock), none failed on another's tables. The test reads the intake
    // log through a store of its own.
    let store =
        ontoloop_store::Store::open(&settings(&[("store.url", database.url.as_str())]).store)
            .await
            .expect("open the store");
    let mut procs = procs.into_iter();
    let (telemetry, firewall, retrieval_a, retrieval_b, analyst_a, analyst_b) = (
        procs.next().expect("telemetry"),
        procs.next().expect("firewall"),
        procs.next().expect("retrieval a"),
        procs.next().expect("retrieval b"),
        procs.next().expect("analyst a"),
        procs.next().expect("analyst b"),
    );
    let mut intake = TelemetryServiceClient::new(channel(telemetry.grpc_port));
    let mut fw = FirewallServiceClient::new(channel(firewall.grpc_port));
    let mut retrievals = Retrievals {
        clients: [
            RetrievalServiceClient::new(channel(retrieval_a.grpc_port)),
            RetrievalServiceClient::new(channel(retrieval_b.grpc_port)),
        ],
        refused: 0,
    };

    let (ontology_seq, _) = push(
        &mut intake,
        v1::Event {
            caller: caller(TENANT, "admin"),
            idempotency_key: "ontology".into(),
            kind: Some(ontoloop_tests::ontology(ONTOLOGY)),
            ..Default::default()
        },
    )
    .await;
    let ready = store
        .wait_settled(TENANT, ontology_seq as i64, Duration::from_secs(30))
        .await
        .expect("read the intake log");
    assert_eq!(ready, ontoloop_store::Settled::Applied, "the ontology");

    // Pushes, asks and validations, one after the other; the kills run beside them.
    let steps = 2 * ENTITIES;
    let mut acked: Vec<u64> = Vec::with_capacity(steps);
    let mut last: Vec<Option<(&str, u64)>> = vec![None; ENTITIES];
    let (mut asked, mut wrong, mut push_refused) = (0u64, Vec::new(), 0u64);
    let (mut validated, mut validate_wrong) = (0u64, Vec::new());
    let mut answered_by = [0u64; 2];
    let mut analyst_a = Some(analyst_a);
    let mut retrieval_b = Some(retrieval_b);
    let mut restarting: Option<tokio::task::JoinHandle<(Proc, Duration)>> = None;
    let mut restarts: Vec<(String, Duration)> = Vec::new();
    let mut kills = 0;
    for k in 0..steps {
        if k == steps / 3 || k == 2 * steps / 3 {
            // Only one restart at a time: the previous one must be serving again.
            if let Some(handle) = restarting.take() {
                let (proc, took) = handle.await.expect("the restart");
                restarts.push((proc.name.clone(), took));
                if proc.kind == ServiceKind::Analyst {
                    analyst_a = Some(proc);
                } else {
                    retrieval_b = Some(proc);
                }
            }
            let victim = if k == steps / 3 {
                analyst_a.take().expect("analyst A")
            } else {
                retrieval_b.take().expect("retrieval B")
            };
            println!("step {k}: SIGKILL {}", victim.name);
            kills += 1;
            restarting = Some(tokio::spawn(kill_and_restart(
                victim,
                Duration::from_millis(500),
            )));
        }
        let (i, round) = (k % ENTITIES, k / ENTITIES);
        let (seq, refused) = push(&mut intake, doc_event(i, round)).await;
        push_refused += refused;
        acked.push(seq);
        last[i] = Some((team(i, round), seq));

        if k % ASK_EVERY == 0 {
            let name = entity(i);
            let (value, by) = retrievals
                .answer(k / ASK_EVERY % 2, Question::Ask(&name), seq)
                .await;
            asked += 1;
            answered_by[by] += 1;
            if value != team(i, round) {
                wrong.push(format!(
                    "step {k}: {name} asked of retrieval {} after {seq}: {value:?}, pushed {:?}",
                    ["A", "B"][by],
                    team(i, round)
                ));
            }
        }
        if k % VALIDATE_EVERY == VALIDATE_EVERY - 1 {
            // An entity whose last push an earlier ask saw applied: its value is supported.
            let j = (k - k % ASK_EVERY) % ENTITIES;
            let (value, seq) = last[j].expect("pushed");
            let _ = retrievals
                .answer(0, Question::Lookup(&entity(j)), seq)
                .await;
            let claim = v1::Claim {
                subject: entity(j),
                predicate: "owned_by".into(),
                object: value.into(),
                chain: Vec::new(),
                scope: String::new(),
            };
            // The firewall rebuilds its read model when the knowledge version moves; give it a
            // moment rather than none.
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut passed = validate(&mut fw, claim.clone()).await;
            while !passed && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
                passed = validate(&mut fw, claim.clone()).await;
            }
            validated += 1;
            if !passed {
                validate_wrong.push(format!("step {k}: {claim:?} did not pass"));
            }
        }
    }
    if let Some(handle) = restarting.take() {
        let (proc, took) = handle.await.expect("the restart");
        restarts.push((proc.name.clone(), took));
        retrieval_b = Some(proc);
    }
    let pushed_at = started.elapsed();

    // Every acknowledged event settles applied (bounded), then each entity reads its last value
    // through both retrievals.
    let settle_deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pending = store
            .intake_pending_before(TENANT, i64::MAX, 1)
            .await
            .expect("read the intake log");
        if pending.is_empty() || Instant::now() >= settle_deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut not_applied = Vec::new();
    for seq in acked.iter().chain([&ontology_seq]) {
        match store.intake_state(TENANT, *seq as i64).await {
            Ok(Some((state, _))) if state == "applied" => {}
            other => not_applied.push(format!("{seq}: {other:?}")),
        }
    }
    let highest = acked.iter().copied().max().unwrap_or(ontology_seq);
    let mut final_wrong = Vec::new();
    for (i, pushed) in last.iter().enumerate() {
        let (value, _) = pushed.expect("every entity pushed");
        let name = entity(i);
        for which in 0..2 {
            let read = retrievals
                .answer_from(which, Question::Lookup(&name), highest)
                .await;
            if read != value {
                final_wrong.push(format!(
                    "{name} through retrieval {}: {read:?}, last pushed {value:?}",
                    ["A", "B"][which]
                ));
            }
        }
    }

    let restart_text: Vec<String> = restarts
        .iter()
        .map(|(name, took)| format!("{name} serving {:.1} s after restart", took.as_secs_f64()))
        .collect();
    println!(
        "deployment: 6 processes up in {:.1} s ({}); events pushed {}, applied {}, {} refused \
         pushes retried; asks answered {asked} (A {}, B {}), wrong {}, {} refused calls \
         retried; validations {validated}, wrong {}; kills {kills}: {}; final reads wrong {}; \
         pushing {:.1} s, total {:.1} s",
        up_at.as_secs_f64(),
        start_times.join(", "),
        acked.len(),
        acked.len() - not_applied.len().min(acked.len()),
        push_refused,
        answered_by[0],
        answered_by[1],
        wrong.len(),
        retrievals.refused,
        validate_wrong.len(),
        restart_text.join(", "),
        final_wrong.len(),
        (pushed_at - up_at).as_secs_f64(),
        started.elapsed().as_secs_f64(),
    );

    // Every process must still be alive at the end (none died on its own).
    let mut everyone = vec![telemetry, firewall, retrieval_a, analyst_b];
    everyone.extend(analyst_a);
    everyone.extend(retrieval_b);
    for proc in &mut everyone {
        let exited = proc
            .child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten());
        assert!(
            exited.is_none(),
            "{} exited on its own ({exited:?}):\n{}",
            proc.name,
            proc.output()
        );
    }
    drop(everyone);
    store.close().await.expect("close the store");
    let _ = database.drop_now().await;

    assert_eq!(kills, 2, "analyst A and retrieval B were killed");
    assert!(wrong.is_empty(), "wrong answers: {wrong:#?}");
    assert!(
        not_applied.is_empty(),
        "acknowledged events not applied: {not_applied:#?}"
    );
    assert!(
        validate_wrong.is_empty(),
        "supported claims not passed: {validate_wrong:#?}"
    );
    assert!(
        final_wrong.is_empty(),
        "final values wrong: {final_wrong:#?}"
    );
}
