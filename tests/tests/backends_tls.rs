//! The whole system on PostgreSQL and RabbitMQ over TLS, black box. The test makes a CA, server
//! and client certificates (rcgen), then starts private servers of its own, so the machine's
//! shared ones are never touched: a PostgreSQL 15 cluster (initdb as `postgres` in a temporary
//! directory, `ssl = on`, a pg_hba.conf with only `hostssl ... clientcert=verify-ca` lines) and a
//! RabbitMQ node (its own node name, data and log directories, `listeners.tcp = none`, one TLS
//! listener with `verify_peer` and `fail_if_no_peer_cert`). Plaintext clients, clients trusting
//! another CA and clients without a certificate are refused by both; the system, configured with
//! `sslmode=verify-full&sslrootcert=...&sslcert=...&sslkey=...` in `store.url` and an `amqps://`
//! `queue.url` with `queue.tls_*`, takes an ontology and a document through the intake, answers
//! from them with provenance and validates a claim. Both servers are stopped and their
//! directories removed when the test ends, passing or failing. It needs root (to run PostgreSQL
//! as `postgres`) and fails, never skips, when a binary is missing.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ontoloop_proto::v1;
use ontoloop_queue::{AmqpQueue, Queue, QueueError};
use ontoloop_store::Backend;
use ontoloop_tests::pki::Pki;
use ontoloop_tests::{Sandbox, caller, doc, ontology, settings, wait_until};

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
const RABBITMQ_BIN: &str = "/usr/lib/rabbitmq/bin";
const TENANT: &str = "acme";
// The wiki is the slot's source of truth (authority 3): one page suffices for the firewall.
const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"project","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"wiki":3,"default":1}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_runs_on_postgres_and_rabbitmq_over_tls() {
    let started = Instant::now();
    let pki = Pki::new();
    // RabbitMQ boots in the background while PostgreSQL is set up.
    let rabbit = PrivateRabbit::spawn(&pki);
    let postgres = PrivatePostgres::start(&pki);
    rabbit.wait_ready(Duration::from_secs(45)).await;
    eprintln!("private servers up after {:?}", started.elapsed());

    // PostgreSQL: plaintext, another CA and no client certificate are refused.
    let client_cert = format!(
        "&sslcert={}&sslkey={}",
        pki.path("client.pem"),
        pki.path("client.key")
    );
    let verified = |ca: &str| format!("sslmode=verify-full&sslrootcert={ca}");
    let refused = [
        (
            "a plaintext client",
            "sslmode=disable".to_owned(),
            "no encryption",
        ),
        (
            "a client trusting another CA",
            verified(&pki.other().path("ca.pem")) + &client_cert,
            "UnknownIssuer",
        ),
        (
            "a client without a certificate",
            verified(&pki.path("ca.pem")),
            "requires a valid client certificate",
        ),
    ];
    for (who, query, why) in refused {
        let err = sea_orm::Database::connect(postgres.url(&query))
            .await
            .expect_err(who);
        assert!(err.to_string().contains(why), "PostgreSQL, {who}: {err}");
    }

    // RabbitMQ: the same three, and a CA file that cannot be read names its setting.
    let amqps = format!("amqps://guest:guest@127.0.0.1:{}/%2f", rabbit.port);
    let queue_settings = |url: &str, files: &[(&'static str, String)]| {
        let mut all = vec![("queue.url", url), ("queue.connect_attempts", "1")];
        all.extend(files.iter().map(|(key, value)| (*key, value.as_str())));
        settings(&all).queue
    };
    let ca = |pki: &Pki| ("queue.tls_ca_file", pki.path("ca.pem"));
    let identity = [
        ("queue.tls_client_cert_file", pki.path("client.pem")),
        ("queue.tls_client_key_file", pki.path("client.key")),
    ];
    let plaintext = format!("amqp://guest:guest@127.0.0.1:{}/%2f", rabbit.port);
    let with_other_ca = [&[ca(pki.other())][..], &identity].concat();
    // The plaintext client's greeting is not a TLS handshake: the broker drops the connection
    // (how that shows, reset or end of stream, is the OS's business). Under TLS 1.3 the client
    // finishes its half of the handshake before the broker checks its certificate, so a client
    // without one learns it either from the broker's alert or from the connection it then drops,
    // whichever reaches it first.
    let refused: [(&str, _, &[&str]); 3] = [
        ("a plaintext client", queue_settings(&plaintext, &[]), &[""]),
        (
            "a client trusting another CA",
            queue_settings(&amqps, &with_other_ca),
            &["UnknownIssuer"],
        ),
        (
            "a client without a certificate",
            queue_settings(&amqps, &[ca(&pki)]),
            &[
                "CertificateRequired",
                "reset by peer",
                "end of file",
                "closed",
            ],
        ),
    ];
    for (who, settings, why) in refused {
        let err = AmqpQueue::connect(&settings.url, &settings)
            .await
            .expect_err(who);
        let text = err.to_string();
        assert!(
            matches!(err, QueueError::Unreachable { attempts: 1, .. })
                && why.iter().any(|w| text.contains(w)),
            "RabbitMQ, {who}: {err}"
        );
    }
    let missing = queue_settings(&amqps, &[("queue.tls_ca_file", pki.path("absent.pem"))]);
    let err = AmqpQueue::connect(&missing.url, &missing)
        .await
        .expect_err("no CA to read");
    assert!(err.to_string().contains("queue.tls_ca_file"), "{err}");
    // The one the system uses is served.
    let good = queue_settings(&amqps, &[&[ca(&pki)][..], &identity].concat());
    AmqpQueue::connect(&good.url, &good)
        .await
        .expect("a client trusting the CA, with its certificate, is served")
        .declare("backends-tls.probe")
        .await
        .expect("a queue is declared over TLS");

    // The system on both, over TLS.
    let store_url = postgres.url(&(verified(&pki.path("ca.pem")) + &client_cert));
    let (ca_file, cert_file, key_file) = (
        pki.path("ca.pem"),
        pki.path("client.pem"),
        pki.path("client.key"),
    );
    let sandbox = Sandbox::start(settings(&[
        ("store.url", &store_url),
        ("queue.url", &amqps),
        ("queue.tls_ca_file", &ca_file),
        ("queue.tls_client_cert_file", &cert_file),
        ("queue.tls_client_key_file", &key_file),
        ("queue.namespace", "backends-tls."),
    ]))
    .await
    .expect("the system starts on PostgreSQL and RabbitMQ over TLS");
    assert_eq!(sandbox.ctx.store.backend(), Backend::Postgres);
    assert_eq!(sandbox.ctx.queue.kind(), "amqp");

    let last = sandbox
        .clients()
        .push_all(
            TENANT,
            "integration",
            [
                ontology(ONTOLOGY),
                doc(
                    "kite",
                    "wiki",
                    "Project Kite is owned by the Atlas team.",
                    &[],
                    0.0,
                ),
            ],
        )
        .await;
    let answer = sandbox
        .clients()
        .retrieval
        .ask(v1::AskRequest {
            caller: caller(TENANT, "alice"),
            text: "Who owns Project Kite?".into(),
            min_sequence: last,
            ..Default::default()
        })
        .await
        .expect("Ask, once the analyst applied the document")
        .into_inner();
    assert_eq!(
        answer.status,
        v1::AnswerStatus::Answered as i32,
        "{answer:?}"
    );
    assert_eq!(answer.value, "Atlas", "{answer:?}");
    assert!(answer.applied_sequence >= last, "{answer:?}");
    let evidence = answer.evidence.first().expect("the answer's provenance");
    assert_eq!(
        (evidence.origin.as_str(), evidence.value.as_str()),
        ("wiki", "Atlas"),
        "{evidence:?}"
    );
    assert!(evidence.source_id.contains("kite"), "{evidence:?}");
    // The facts are in the private PostgreSQL, read back through the store.
    let knowledge = sandbox
        .ctx
        .store
        .load_knowledge(TENANT)
        .await
        .expect("the knowledge in PostgreSQL");
    assert!(
        knowledge.facts.iter().any(|f| f.object == "Atlas"),
        "the fact is stored"
    );

    let firewall = sandbox.clients().firewall;
    let verdict = |claim: &'static str| {
        let mut firewall = firewall.clone();
        async move {
            firewall
                .validate(v1::ValidateRequest {
                    caller: caller(TENANT, "alice"),
                    input: Some(v1::validate_request::Input::Text(claim.into())),
                    ..Default::default()
                })
                .await
                .map(|r| r.into_inner().overall)
        }
    };
    let passes = wait_until(Duration::from_secs(10), || async {
        verdict("Project Kite is owned by the Atlas team.")
            .await
            .is_ok_and(|overall| overall == v1::Verdict::Pass as i32)
    })
    .await;
    assert!(passes, "the supported claim passes the firewall");
    let blocked = verdict("Project Kite is owned by the Borealis team.")
        .await
        .expect("a verdict");
    assert_eq!(
        blocked,
        v1::Verdict::Block as i32,
        "a contradicted claim is blocked"
    );
    sandbox.shutdown().await.expect("clean shutdown");
    eprintln!("test done after {:?}", started.elapsed());
}

/// A free TCP port on 127.0.0.1 (free when asked; the servers bind it right after).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Fails the test with a clear message when a binary it needs is not installed.
fn require(binary: &Path) {
    assert!(
        binary.exists(),
        "{} is missing: this test starts its own PostgreSQL 15 and RabbitMQ",
        binary.display()
    );
}

/// Runs `command` to completion; its output in the panic message if it fails.
fn run(command: &mut Command, what: &str) {
    let output = command
        .output()
        .unwrap_or_else(|err| panic!("{what}: {err}"));
    assert!(
        output.status.success(),
        "{what}: {}\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A numeric user id: `id -u [USER]` (this process's without a user).
fn uid_of(user: Option<&str>) -> u32 {
    let output = Command::new("id")
        .arg("-u")
        .args(user)
        .output()
        .expect("run id");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no user {user:?} on this machine"))
}

/// A PostgreSQL 15 cluster of the test's own on a free port, TLS only, stopped on drop.
struct PrivatePostgres {
    /// Removed after the server stops (fields drop after `Drop::drop`).
    dir: tempfile::TempDir,
    port: u16,
}

impl PrivatePostgres {
    fn start(pki: &Pki) -> Self {
        let (initdb, pg_ctl) = (
            Path::new(PG_BIN).join("initdb"),
            Path::new(PG_BIN).join("pg_ctl"),
        );
        require(&initdb);
        require(&pg_ctl);
        assert_eq!(
            uid_of(None),
            0,
            "this test runs PostgreSQL as the postgres user through runuser, which needs root"
        );
        let postgres = uid_of(Some("postgres"));
        let dir = tempfile::tempdir().expect("temp dir");
        // The server reads its files as `postgres`; its key must be its own and 0600.
        for file in ["server.pem", "server.key", "ca.pem"] {
            let to = dir.path().join(file);
            std::fs::copy(pki.path(file), &to).expect("copy a PEM file");
            std::os::unix::fs::chown(&to, Some(postgres), None).expect("chown a PEM file");
        }
        set_mode(&dir.path().join("server.key"), 0o600);
        std::os::unix::fs::chown(dir.path(), Some(postgres), None).expect("chown the temp dir");
        set_mode(dir.path(), 0o700);
        let data = dir.path().join("data");
        run(
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&initdb)
                .args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"])
                .arg(&data),
            "initdb a private PostgreSQL cluster",
        );
        // Only TLS connections that present a certificate of the CA are let in.
        std::fs::write(
            data.join("pg_hba.conf"),
            "hostssl all all 127.0.0.1/32 trust clientcert=verify-ca\n",
        )
        .expect("write pg_hba.conf");
        let port = free_port();
        let file = |name: &str| dir.path().join(name).display().to_string();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c ssl=on -c ssl_cert_file={} \
             -c ssl_key_file={} -c ssl_ca_file={} -c fsync=off",
            dir.path().display(),
            file("server.pem"),
            file("server.key"),
            file("ca.pem"),
        );
        let server = Self { dir, port };
        run(
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&pg_ctl)
                .arg("-D")
                .arg(&data)
                .args(["-w", "-t", "30", "-l"])
                .arg(server.dir.path().join("postgres.log"))
                .args(["-o", &options, "start"]),
            "start the private PostgreSQL",
        );
        server
    }

    /// The URL of its `postgres` database with `query`.
    fn url(&self, query: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?{query}",
            self.port
        )
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let stopped = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(Path::new(PG_BIN).join("pg_ctl"))
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .status();
        if !stopped.is_ok_and(|s| s.success()) {
            eprintln!("the private PostgreSQL on port {} did not stop", self.port);
        }
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A RabbitMQ node of the test's own, TLS only (with client certificates), stopped on drop.
struct PrivateRabbit {
    dir: tempfile::TempDir,
    node: String,
    port: u16,
    child: Child,
}

impl PrivateRabbit {
    /// Starts the node in the foreground as a child process; [`Self::wait_ready`] waits for it.
    fn spawn(pki: &Pki) -> Self {
        let server = Path::new(RABBITMQ_BIN).join("rabbitmq-server");
        require(&server);
        require(&Path::new(RABBITMQ_BIN).join("rabbitmqctl"));
        let dir = tempfile::tempdir().expect("temp dir");
        let (port, dist_port) = (free_port(), free_port());
        let config = format!(
            "listeners.tcp = none\n\
             listeners.ssl.default = 127.0.0.1:{port}\n\
             ssl_options.cacertfile = {}\n\
             ssl_options.certfile = {}\n\
             ssl_options.keyfile = {}\n\
             ssl_options.verify = verify_peer\n\
             ssl_options.fail_if_no_peer_cert = true\n",
            pki.path("ca.pem"),
            pki.path("server.pem"),
            pki.path("server.key"),
        );
        std::fs::write(dir.path().join("rabbitmq.conf"), config).expect("write rabbitmq.conf");
        for empty in ["enabled_plugins", "rabbitmq-env.conf"] {
            std::fs::write(dir.path().join(empty), "").expect("write an empty file");
        }
        std::fs::create_dir(dir.path().join("home")).expect("home dir");
        let node = format!("ontoloop-tls-{}@localhost", std::process::id());
        let mut command = Command::new(&server);
        Self::environment(&mut command, dir.path())
            .env("RABBITMQ_NODENAME", &node)
            .env("RABBITMQ_DIST_PORT", dist_port.to_string())
            .env("RABBITMQ_MNESIA_BASE", dir.path().join("mnesia"))
            .env("RABBITMQ_LOG_BASE", dir.path().join("log"))
            .env("RABBITMQ_CONFIG_FILE", dir.path().join("rabbitmq.conf"))
            .env(
                "RABBITMQ_ENABLED_PLUGINS_FILE",
                dir.path().join("enabled_plugins"),
            )
            .env(
                "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
                "-kernel inet_dist_use_interface {127,0,0,1}",
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = command.spawn().expect("start a private RabbitMQ node");
        Self {
            dir,
            node,
            port,
            child,
        }
    }

    /// What the server and `rabbitmqctl` share: the Erlang cookie's home, and an empty
    /// rabbitmq-env.conf in place of the machine's (which names the shared node).
    fn environment<'c>(command: &'c mut Command, dir: &Path) -> &'c mut Command {
        command
            .env("HOME", dir.join("home"))
            .env("RABBITMQ_CONF_ENV_FILE", dir.join("rabbitmq-env.conf"))
            .env("ERL_EPMD_ADDRESS", "127.0.0.1")
    }

    /// Waits until the TLS listener accepts connections; fails with the node's log if it exits
    /// or does not come up in `timeout`.
    async fn wait_ready(&self, timeout: Duration) {
        let addr = format!("127.0.0.1:{}", self.port);
        let up = wait_until(timeout, || async {
            tokio::net::TcpStream::connect(&addr).await.is_ok()
        })
        .await;
        if !up {
            let logs = self.dir.path().join("log");
            let log = std::fs::read_dir(&logs)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
                .collect::<Vec<_>>()
                .join("\n");
            panic!("the private RabbitMQ node did not listen on {addr} in {timeout:?}:\n{log}");
        }
    }
}

impl Drop for PrivateRabbit {
    fn drop(&mut self) {
        let mut ctl = Command::new(Path::new(RABBITMQ_BIN).join("rabbitmqctl"));
        Self::environment(&mut ctl, self.dir.path())
            .args(["-n", &self.node, "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let stopped = ctl.status().is_ok_and(|s| s.success());
        if !stopped {
            // SIGTERM: the rabbitmq-server script stops the node it runs, then exits.
            eprintln!("rabbitmqctl could not stop {}; terminating it", self.node);
            Command::new("kill")
                .arg(self.child.id().to_string())
                .status()
                .ok();
        }
        self.child.wait().ok();
    }
}
