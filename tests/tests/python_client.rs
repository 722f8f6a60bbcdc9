//! The Python client (`clients/python`) against the running system: this test starts the four
//! services twice — with `auth.mode = "jwt"` and an HS256 secret, and with auth off (the caller
//! named in the request) over mTLS with a CA made here — loads a small world into each (an ontology, a pricing page, a forum
//! post, an architecture page), then runs the client's own pytest suite
//! (`clients/python/tests`, among them a server-reflection client that builds an `Ask` from the
//! served descriptors alone) with the project's Python environment (`.venv/`, made by
//! `scripts/python-client-env.sh`, which `make test` runs first) and asserts it passes. The
//! suite gets the addresses and tokens in `ONTOLOOP_TEST_*` variables; its output is printed.

use std::path::{Path, PathBuf};
use std::process::Command;

use ontoloop_auth::{AuthSettings, Role};
use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_tests::tokens::{Holder, bearer, jwt};
use ontoloop_tests::{Sandbox, caller, doc, ontology};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

const SECRET: &str = "python-client-suite-secret-0123456789";
const TENANT: &str = "acme";
/// The principal of the agent token the suite uses.
const AGENT: &str = "py-agent";

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]},
  {"name":"depends_on","subject_type":"service","object_type":"service","patterns":["{s} depends on {o}."]},
  {"name":"maintained_by","subject_type":"service","object_type":"team","patterns":["{s} is maintained by the {o} team."]}],
  "authority":{"pricing-page":3,"wiki":2,"forum":1,"default":1}}"#;

/// The pages every run starts from: `(id, origin, body)`.
const PAGES: [(&str, &str, &str); 4] = [
    (
        "pricing",
        "pricing-page",
        "The Pro plan costs €49 per month.",
    ),
    (
        "forum-post",
        "forum",
        "The Starter plan costs €9 per month.",
    ),
    (
        "architecture",
        "wiki",
        "Kite depends on Ledger. Ledger is maintained by the Payments team.",
    ),
    (
        "office",
        "wiki",
        "# Office\n\nDesks are free to book.\n\n# Guests\n\nThe guest wifi password is on the fridge.",
    ),
];

/// The repository's root (this crate is `tests/` in it).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The project environment's Python, which must hold what this test imports.
fn python(root: &Path) -> PathBuf {
    ontoloop_testkit::python::venv_python(
        root,
        "ontoloop_client, pytest",
        "scripts/python-client-env.sh",
    )
}

/// Loads the ontology and the pages through the intake as `token`'s holder (none: the request's
/// caller, auth off), and waits until the last event is applied.
async fn load_world(sandbox: &Sandbox, token: Option<&str>) {
    let c = sandbox.clients();
    let who = if token.is_some() {
        None
    } else {
        caller(TENANT, "loader")
    };
    let mut telemetry = c.telemetry.clone();
    let mut last = 0;
    let events = std::iter::once(ontology(ONTOLOGY)).chain(
        PAGES
            .iter()
            .map(|(id, origin, body)| doc(id, origin, body, &[], 0.0)),
    );
    for kind in events {
        let event = v1::Event {
            caller: who.clone(),
            kind: Some(kind),
            ..Default::default()
        };
        last = telemetry
            .push_event(bearer(event, token))
            .await
            .expect("the intake accepts the world's events")
            .into_inner()
            .sequence;
    }
    let answer = c
        .retrieval
        .clone()
        .lookup(bearer(
            v1::LookupRequest {
                caller: who,
                entity: "Pro plan".into(),
                predicate_path: vec!["price".into()],
                min_sequence: last,
                ..Default::default()
            },
            token,
        ))
        .await
        .expect("the world is applied")
        .into_inner();
    assert_eq!(answer.value, "49", "{answer:?}");
}

/// A CA, a server certificate for localhost / 127.0.0.1 and a client certificate, as PEM files
/// in `dir`: `ca.pem`, `server.pem` + `server.key`, `client.pem` + `client.key`.
fn make_pki(dir: &Path) {
    let write = |file: &str, pem: String| {
        std::fs::write(dir.join(file), pem).expect("write a PEM file");
    };
    let ca_key = KeyPair::generate().expect("a CA key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    // Distinct names: BoringSSL (Python's grpcio) takes a leaf named like its issuer for a
    // self-signed certificate, and rcgen names every certificate alike by default.
    ca.distinguished_name
        .push(DnType::CommonName, "ontoloop python-client test CA");
    write("ca.pem", ca.self_signed(&ca_key).expect("a CA").pem());
    let issuer = Issuer::new(ca, ca_key);
    for (file, names, usage) in [
        (
            "server",
            vec!["localhost".to_owned(), "127.0.0.1".to_owned()],
            ExtendedKeyUsagePurpose::ServerAuth,
        ),
        (
            "client",
            vec!["py-agent.acme.test".to_owned()],
            ExtendedKeyUsagePurpose::ClientAuth,
        ),
    ] {
        let key = KeyPair::generate().expect("a key");
        let mut params = CertificateParams::new(names).expect("leaf params");
        params.extended_key_usages = vec![usage];
        params.distinguished_name.push(DnType::CommonName, file);
        let cert = params.signed_by(&key, &issuer).expect("a certificate");
        write(&format!("{file}.pem"), cert.pem());
        write(&format!("{file}.key"), key.serialize_pem());
    }
}

fn token(auth: &AuthSettings, principal: &str, roles: &[Role]) -> String {
    Holder {
        tenant: TENANT,
        principal,
        groups: &[],
        roles,
    }
    .token(auth)
}

/// The suite's variables for one system: its four addresses under `prefix`.
fn addresses(sandbox: &Sandbox, prefix: &str) -> Vec<(String, String)> {
    [
        ("RETRIEVAL", ServiceKind::Retrieval),
        ("FIREWALL", ServiceKind::Firewall),
        ("TELEMETRY", ServiceKind::Telemetry),
        ("ANALYST", ServiceKind::Analyst),
    ]
    .into_iter()
    .map(|(name, kind)| (format!("{prefix}_{name}"), sandbox.endpoint(kind)))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_passes_its_suite_against_the_running_system() {
    let root = repo_root();
    let python = python(&root);

    let secured = Sandbox::embedded(&jwt(SECRET)).await;
    let auth = secured.ctx.settings.auth.clone();
    let admin = token(&auth, "loader", &[Role::Admin]);
    load_world(&secured, Some(&admin)).await;
    // The open system serves mTLS only; the sandbox's own clients use the same CA and client
    // certificate as the suite.
    let pki = tempfile::tempdir().expect("temp dir");
    make_pki(pki.path());
    let pem = |file: &str| pki.path().join(file).display().to_string();
    let (ca, cert, key) = (pem("ca.pem"), pem("client.pem"), pem("client.key"));
    let (server_cert, server_key) = (pem("server.pem"), pem("server.key"));
    let open = Sandbox::embedded(&[
        ("tls.cert_file", server_cert.as_str()),
        ("tls.key_file", server_key.as_str()),
        ("tls.client_ca_file", ca.as_str()),
        ("tls.ca_file", ca.as_str()),
        ("tls.client_cert_file", cert.as_str()),
        ("tls.client_key_file", key.as_str()),
    ])
    .await;
    load_world(&open, None).await;

    let agent = token(&auth, AGENT, &[Role::Agent, Role::Integration]);
    let mut forged_auth = auth.clone();
    forged_auth.hs256_secret = "not-the-secret-of-this-system-at-all".into();
    let forged = token(&forged_auth, AGENT, &[Role::Agent, Role::Integration]);

    let mut env = addresses(&secured, "ONTOLOOP_TEST");
    env.extend(addresses(&open, "ONTOLOOP_TEST_OPEN"));
    env.extend([
        ("ONTOLOOP_TEST_TOKEN".to_owned(), agent),
        ("ONTOLOOP_TEST_FORGED_TOKEN".to_owned(), forged),
        ("ONTOLOOP_TEST_TENANT".to_owned(), TENANT.to_owned()),
        ("ONTOLOOP_TEST_PRINCIPAL".to_owned(), AGENT.to_owned()),
        ("ONTOLOOP_TEST_OPEN_CA_FILE".to_owned(), ca),
        ("ONTOLOOP_TEST_OPEN_CLIENT_CERT".to_owned(), cert),
        ("ONTOLOOP_TEST_OPEN_CLIENT_KEY".to_owned(), key),
    ]);

    // pytest blocks; the services go on serving on the runtime's threads meanwhile.
    let suite = root.join("clients/python/tests");
    let output = tokio::task::spawn_blocking(move || {
        Command::new(&python)
            .args(["-m", "pytest", "-v", "-p", "no:cacheprovider"])
            .arg(&suite)
            .current_dir(&root)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .envs(env)
            .output()
    })
    .await
    .expect("the pytest task finishes")
    .expect("run pytest");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");

    secured.shutdown().await.expect("clean shutdown");
    open.shutdown().await.expect("clean shutdown");
    assert!(
        output.status.success(),
        "clients/python/tests failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(
        stdout.contains(" passed") && !stdout.contains(" skipped"),
        "the suite ran and skipped nothing:\n{stdout}"
    );
}
