//! The command line as a person uses it: `ontoloop up` in one process, `ontoloop status --json`
//! from another, SIGTERM (what Ctrl-C's SIGINT also does) stops everything cleanly; bad settings
//! fail at start-up naming the key.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ontoloop");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn env_for(dir: &std::path::Path) -> Vec<(String, String)> {
    vec![
        (
            "ONTOLOOP__STORE__URL".into(),
            format!("sqlite://{}/data/ontoloop.db?mode=rwc", dir.display()),
        ),
        (
            "ONTOLOOP__SERVICES__RETRIEVAL_PORT".into(),
            free_port().to_string(),
        ),
        (
            "ONTOLOOP__SERVICES__FIREWALL_PORT".into(),
            free_port().to_string(),
        ),
        (
            "ONTOLOOP__SERVICES__TELEMETRY_PORT".into(),
            free_port().to_string(),
        ),
        (
            "ONTOLOOP__SERVICES__ANALYST_PORT".into(),
            free_port().to_string(),
        ),
        (
            "ONTOLOOP__SERVICES__HTTP_PORTS".into(),
            (0..4)
                .map(|_| free_port().to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
    ]
}

#[test]
fn up_status_and_a_clean_stop() {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = env_for(dir.path());
    let mut up = Command::new(BIN)
        .arg("up")
        .envs(env.iter().cloned())
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ontoloop up");
    let stdout = up.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut printed = Vec::new();
    while !printed.iter().any(|l: &String| l.starts_with("ready")) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => printed.push(line),
            Err(_) => {
                let _ = up.kill();
                panic!("ontoloop up never said ready: {printed:?}");
            }
        }
    }
    for name in ["retrieval", "firewall", "telemetry", "analyst"] {
        assert!(
            printed
                .iter()
                .any(|l| l.contains(name) && l.contains("listening on 127.0.0.1:")),
            "{printed:?}"
        );
    }

    let status = Command::new(BIN)
        .args(["status", "--json"])
        .envs(env.iter().cloned())
        .output()
        .expect("run ontoloop status");
    assert!(
        status.status.success(),
        "status: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&status.stdout).expect("status prints JSON");
    let services = report["services"].as_array().expect("services array");
    let names: Vec<_> = services
        .iter()
        .map(|s| s["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["retrieval", "firewall", "telemetry", "analyst"]);
    for service in services {
        assert_eq!(service["status"], "SERVING", "{service}");
        assert!(
            service["addr"]
                .as_str()
                .is_some_and(|a| a.starts_with("127.0.0.1:"))
        );
    }

    let killed = Command::new("kill")
        .args(["-TERM", &up.id().to_string()])
        .status()
        .expect("send SIGTERM");
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(exit) = up.try_wait().expect("wait") {
            break exit;
        }
        assert!(
            Instant::now() < deadline,
            "ontoloop up did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(exit.success(), "clean exit after SIGTERM: {exit:?}");
    let rest: Vec<String> = rx.try_iter().collect();
    assert!(rest.iter().any(|l| l == "ontoloop stopped"), "{rest:?}");

    // Nothing listens any more.
    let after = Command::new(BIN)
        .args(["status", "--json"])
        .envs(env)
        .output()
        .expect("status");
    assert!(!after.status.success());
    let report: serde_json::Value = serde_json::from_slice(&after.stdout).expect("JSON");
    assert!(
        report["services"]
            .as_array()
            .expect("array")
            .iter()
            .all(|s| s["status"] == "UNREACHABLE")
    );
}

#[test]
fn bad_settings_fail_at_start_up_naming_the_key() {
    let unknown = Command::new(BIN)
        .arg("up")
        .env("ONTOLOOP__STORE__URLL", "sqlite://x.db")
        .output()
        .expect("run");
    assert!(!unknown.status.success());
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(stderr.contains("urll"), "{stderr}");

    let bad_url = Command::new(BIN)
        .args(["up", "--database-url", "mysql://db/x"])
        .output()
        .expect("run");
    assert!(!bad_url.status.success());
    let stderr = String::from_utf8_lossy(&bad_url.stderr);
    assert!(stderr.contains("store.url"), "{stderr}");

    let bad_amqp = Command::new(BIN)
        .args(["up", "--amqp-url", "http://rabbit"])
        .output()
        .expect("run");
    assert!(!bad_amqp.status.success());
    assert!(String::from_utf8_lossy(&bad_amqp.stderr).contains("queue.url"));
}

#[test]
fn status_names_an_unknown_service() {
    let out = Command::new(BIN)
        .args(["status", "--service", "gateway"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("gateway"));
}
