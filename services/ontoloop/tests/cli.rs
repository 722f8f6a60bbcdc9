//! The command line as a person uses it: `ontoloop up` in one process, `ontoloop status --json`
//! from another, SIGTERM (what Ctrl-C's SIGINT also does) stops everything cleanly; bad settings
//! fail at start-up naming the key.

use std::process::Command;
use std::time::{Duration, Instant};

use ontoloop_testkit::process::{Up, ports_env};

const BIN: &str = env!("CARGO_BIN_EXE_ontoloop");

fn env_for(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut env = vec![(
        "ONTOLOOP__STORE__URL".to_owned(),
        format!("sqlite://{}/data/ontoloop.db?mode=rwc", dir.display()),
    )];
    env.extend(ports_env());
    env
}

#[test]
fn up_status_and_a_clean_stop() {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = env_for(dir.path());
    let mut up = Command::new(BIN);
    up.arg("up")
        .envs(env.iter().cloned())
        .env_remove("RUST_LOG");
    let Up {
        child: mut up,
        lines: rx,
        printed,
    } = Up::start(up);
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
