//! Authentication with the real binary: `ontoloop up` refuses a non-loopback address with
//! `auth.mode = "off"` naming the setting; with `auth.mode = "jwt"` a token from
//! `ontoloop token issue`, handed to the CLI as `$ONTOLOOP_TOKEN`, opens the services, and the CLI
//! without it, or acting for another tenant, is refused; with `auth.mode = "dev"` (`make run`)
//! the CLI signs its own tokens from the secret `ontoloop up` generated, nothing else gets in, and
//! the dashboard signs in a reviewer's token from `ontoloop token issue` (not an agent's); with
//! `jwt` on `0.0.0.0` the dashboard is served (it signs reviewers in), to its own Host only.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use ontoloop_testkit::process::{Up, ports_env};

const BIN: &str = env!("CARGO_BIN_EXE_ontoloop");
const SECRET: &str = "cli-auth-test-secret-0123456789abcdef";

fn env_for(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut env = vec![(
        "ONTOLOOP__STORE__URL".to_owned(),
        format!("sqlite://{}/data/ontoloop.db?mode=rwc", dir.display()),
    )];
    env.extend(ports_env());
    env
}

fn jwt_env(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut env = env_for(dir);
    for (key, value) in [
        ("ONTOLOOP__AUTH__MODE", "jwt"),
        ("ONTOLOOP__AUTH__HS256_SECRET", SECRET),
        ("ONTOLOOP__AUTH__ISSUER", "https://issuer.test"),
        ("ONTOLOOP__AUTH__AUDIENCE", "ontoloop"),
    ] {
        env.push((key.to_owned(), value.to_owned()));
    }
    env
}

/// `GET path` from `addr` (`host:port`) naming `host` in the Host header; the whole answer.
fn get_as(addr: &str, host: &str, path: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to the dashboard");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    answer
}

#[test]
fn with_jwt_the_dashboard_is_served_on_every_address() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut env = jwt_env(dir.path());
    env.push(("ONTOLOOP__SERVICES__HOST".to_owned(), "0.0.0.0".to_owned()));
    let mut up = Command::new(BIN);
    up.arg("up")
        .envs(env.iter().cloned())
        .env_remove("RUST_LOG");
    let Up {
        mut child, printed, ..
    } = Up::start(up);
    let port = printed
        .iter()
        .find_map(|l| l.split("dashboard http://").nth(1))
        .and_then(|rest| rest.trim_end_matches('/').rsplit(':').next())
        .map(str::to_owned)
        .expect("the dashboard's address is printed");
    let local = format!("127.0.0.1:{port}");
    let page = get_as(&local, &local, "/");
    let queue = get_as(&local, &local, "/api/queue");
    let rebound = get_as(&local, &format!("evil.example:{port}"), "/");
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        page.starts_with("HTTP/1.1 200") && page.contains("Review queue"),
        "{page}"
    );
    assert!(queue.starts_with("HTTP/1.1 401"), "{queue}");
    assert!(rebound.starts_with("HTTP/1.1 403"), "{rebound}");
}

/// `POST path` with a JSON body to `addr` (`host:port`); the whole answer, headers included.
fn post_json(addr: &str, path: &str, body: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to the dashboard");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    answer
}

/// Runs the binary with `args` and `env`, without any token of the test's own environment.
fn run(args: &[&str], env: &[(String, String)], token: Option<&str>) -> Output {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .envs(env.iter().cloned())
        .env_remove("ONTOLOOP_TOKEN")
        .env_remove("RUST_LOG");
    if let Some(token) = token {
        command.env("ONTOLOOP_TOKEN", token);
    }
    command.output().expect("run ontoloop")
}

#[test]
fn up_refuses_a_non_loopback_address_without_auth() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(BIN)
        .arg("up")
        .envs(env_for(dir.path()))
        .env("ONTOLOOP__SERVICES__HOST", "0.0.0.0")
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start ontoloop up");
    let deadline = Instant::now() + Duration::from_secs(60);
    let exit = loop {
        if let Some(exit) = child.try_wait().expect("wait") {
            break exit;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("ontoloop up kept running on 0.0.0.0 with auth off");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!exit.success());
    let stderr = std::io::read_to_string(child.stderr.take().expect("stderr")).expect("stderr");
    assert!(stderr.contains("auth.mode"), "{stderr}");
    assert!(stderr.contains("0.0.0.0"), "{stderr}");
}

#[test]
fn an_issued_token_opens_the_services_to_the_cli() {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = jwt_env(dir.path());

    let issued = run(
        &[
            "token",
            "issue",
            "--tenant",
            "acme",
            "--principal",
            "rev",
            "--role",
            "reviewer",
            "--ttl",
            "10m",
        ],
        &env,
        None,
    );
    assert!(
        issued.status.success(),
        "{}",
        String::from_utf8_lossy(&issued.stderr)
    );
    let token = String::from_utf8(issued.stdout).expect("utf-8");
    let token = token.trim();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    let unknown = run(
        &[
            "token",
            "issue",
            "--tenant",
            "acme",
            "--principal",
            "x",
            "--role",
            "root",
        ],
        &env,
        None,
    );
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("root"));

    let mut up = Command::new(BIN);
    up.arg("up")
        .envs(env.iter().cloned())
        .env_remove("RUST_LOG");
    let Up { mut child, .. } = Up::start(up);

    let without = run(&["patterns", "--as", "acme/rev"], &env, None);
    let with = run(&["patterns", "--as", "acme/rev"], &env, Some(token));
    let foreign = run(&["patterns", "--as", "globex/rev"], &env, Some(token));
    let wrong_role = run(
        &[
            "signal",
            "--as",
            "acme/rev",
            "--type",
            "entity_missing",
            "--query",
            "q",
            "--entity",
            "e",
        ],
        &env,
        Some(token),
    );
    let _ = child.kill();
    let _ = child.wait();

    assert!(!without.status.success());
    let stderr = String::from_utf8_lossy(&without.stderr);
    assert!(stderr.contains("bearer"), "{stderr}");
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    assert!(!foreign.status.success());
    let stderr = String::from_utf8_lossy(&foreign.stderr);
    assert!(stderr.contains("caller.tenant"), "{stderr}");
    assert!(!wrong_role.status.success());
    let stderr = String::from_utf8_lossy(&wrong_role.stderr);
    assert!(stderr.contains("`agent`"), "{stderr}");
}

#[test]
fn dev_mode_checks_tokens_the_cli_signs_from_the_generated_secret() {
    let dir = tempfile::tempdir().expect("temp dir");
    let secret_file = dir.path().join("data/dev-auth-secret");
    let mut env = env_for(dir.path());
    env.push(("ONTOLOOP__AUTH__MODE".to_owned(), "dev".to_owned()));
    env.push((
        "ONTOLOOP__AUTH__DEV_SECRET_FILE".to_owned(),
        secret_file.display().to_string(),
    ));

    let mut up = Command::new(BIN);
    up.arg("up")
        .envs(env.iter().cloned())
        .env_remove("RUST_LOG");
    let Up {
        mut child, printed, ..
    } = Up::start(up);
    let signed = run(&["patterns", "--as", "acme/rev"], &env, None);
    let issued = run(
        &[
            "token",
            "issue",
            "--tenant",
            "acme",
            "--principal",
            "bot",
            "--role",
            "agent",
        ],
        &env,
        None,
    );
    // A CLI that does not find the secret sends no token and is refused.
    let mut elsewhere = env.clone();
    elsewhere.push((
        "ONTOLOOP__AUTH__DEV_SECRET_FILE".to_owned(),
        dir.path().join("absent").display().to_string(),
    ));
    let unsigned = run(&["patterns", "--as", "acme/rev"], &elsewhere, None);
    // The dashboard signs in with a reviewer's token issued from the same secret.
    let reviewer = run(
        &[
            "token",
            "issue",
            "--tenant",
            "acme",
            "--principal",
            "rev",
            "--role",
            "reviewer",
        ],
        &env,
        None,
    );
    let dashboard = printed
        .iter()
        .find_map(|l| l.split("dashboard http://").nth(1))
        .map(|rest| rest.trim_end_matches('/').to_owned())
        .expect("the dashboard's address is printed");
    let sign_in = |token: &[u8]| {
        post_json(
            &dashboard,
            "/api/session",
            &format!(r#"{{"token":"{}"}}"#, String::from_utf8_lossy(token).trim()),
        )
    };
    let as_reviewer = sign_in(&reviewer.stdout);
    let as_agent = sign_in(&issued.stdout);
    let _ = child.kill();
    let _ = child.wait();

    assert!(
        printed.iter().any(|l| l.contains("dev mode")),
        "{printed:?}"
    );
    let secret = std::fs::read_to_string(&secret_file).expect("the generated secret");
    assert_eq!(secret.trim().len(), 64);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&secret_file)
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "owner-only");
    }
    assert!(
        signed.status.success(),
        "{}",
        String::from_utf8_lossy(&signed.stderr)
    );
    assert!(issued.status.success());
    assert_eq!(
        String::from_utf8_lossy(&issued.stdout)
            .trim()
            .split('.')
            .count(),
        3
    );
    assert!(!unsigned.status.success());
    let stderr = String::from_utf8_lossy(&unsigned.stderr);
    assert!(stderr.contains("bearer"), "{stderr}");
    assert!(
        as_reviewer.starts_with("HTTP/1.1 200")
            && as_reviewer.contains("HttpOnly")
            && as_reviewer.contains(r#""reviewer":"rev""#),
        "{as_reviewer}"
    );
    assert!(as_agent.starts_with("HTTP/1.1 403"), "{as_agent}");

    // Dev mode is for this machine only.
    let mut public = env.clone();
    public.push(("ONTOLOOP__SERVICES__HOST".to_owned(), "0.0.0.0".to_owned()));
    let refused = run(&["up"], &public, None);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("auth.mode = \"dev\""), "{stderr}");
}
