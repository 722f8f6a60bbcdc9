//! HTTPS on the HTTP ports, black box: with `[tls]` (a CA and a server certificate made here) and
//! `auth.mode = "jwt"`, every service's `/metrics` and the analyst's dashboard answer over TLS
//! to a client trusting the CA; a plaintext request, and a client trusting another CA, get no
//! answer, and the port goes on serving the next client; a reviewer's sign-in cookie is
//! `Secure`; the system then shuts down cleanly.

use std::net::SocketAddr;
use std::sync::Arc;

use ontoloop_auth::Role;
use ontoloop_core::ServiceKind;
use ontoloop_tests::Sandbox;
use ontoloop_tests::http::{Answer, request};
use ontoloop_tests::pki::Pki;
use ontoloop_tests::tokens::{Holder, jwt};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};

const SECRET: &str = "http-tls-suite-secret-0123456789abcdef";

/// A rustls client trusting only the CA in `ca_pem`.
fn client(ca_pem: &str) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("a PEM certificate")).expect("a CA");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// One request over TLS to `addr`, checking the certificate names `localhost`; the handshake's
/// error when it fails.
async fn https(
    connector: &tokio_rustls::TlsConnector,
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> std::io::Result<Answer> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost").expect("a DNS name");
    let mut stream = connector.connect(name, tcp).await?;
    stream
        .write_all(request(addr, method, path, &[], body).as_bytes())
        .await?;
    let mut bytes = Vec::new();
    match stream.read_to_end(&mut bytes).await {
        Ok(_) => {}
        // A close without TLS's close_notify, after the whole answer, is the end of it too.
        Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof && !bytes.is_empty() => {}
        Err(err) => return Err(err),
    }
    Ok(Answer::parse(&String::from_utf8_lossy(&bytes)))
}

/// What a plaintext HTTP request to `addr` reads back before the server closes the connection.
async fn plaintext(addr: SocketAddr) -> Vec<u8> {
    let mut tcp = tokio::net::TcpStream::connect(addr)
        .await
        .expect("the port accepts TCP");
    tcp.write_all(request(addr, "GET", "/metrics", &[], None).as_bytes())
        .await
        .expect("send the request");
    let mut bytes = Vec::new();
    // A reset is as good an answer as a close: either way no HTTP comes back.
    let _ = tcp.read_to_end(&mut bytes).await;
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_ports_serve_https_only_and_the_session_cookie_is_secure() {
    let pki = Pki::new();
    let mut overrides = pki.settings(false);
    overrides.extend(jwt(SECRET).into_iter().map(|(k, v)| (k, v.to_owned())));
    let overrides: Vec<(&str, &str)> = overrides.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let sandbox = Sandbox::embedded(&overrides).await;
    let trusting = client(&pki.read("ca.pem"));

    for kind in ServiceKind::ALL {
        let addr = sandbox.http_addr(kind);
        let answer = https(&trusting, addr, "GET", "/metrics", None)
            .await
            .unwrap_or_else(|err| panic!("{} serves /metrics over https: {err}", kind.name()));
        assert_eq!(answer.status, 200, "{}: {answer:?}", kind.name());
        assert_eq!(
            answer.header("content-type"),
            Some("text/plain; version=0.0.4"),
            "{}",
            kind.name()
        );
    }

    let dashboard = sandbox.http_addr(ServiceKind::Analyst);
    let page = https(&trusting, dashboard, "GET", "/", None)
        .await
        .expect("the dashboard's page over https");
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.body.contains("<html"), "the page: {}", page.body);

    // Plaintext gets no HTTP answer; neither does a client trusting another CA (its handshake
    // fails). Each time the port goes on serving the next client.
    let clear = plaintext(dashboard).await;
    assert!(
        !String::from_utf8_lossy(&clear).contains("HTTP/1."),
        "a plaintext request is not answered: {:?}",
        String::from_utf8_lossy(&clear)
    );
    let stranger = client(&pki.other().read("ca.pem"));
    let err = https(&stranger, dashboard, "GET", "/", None)
        .await
        .expect_err("a client trusting another CA");
    assert!(format!("{err:?}").contains("UnknownIssuer"), "{err:?}");
    let again = https(&trusting, dashboard, "GET", "/api/session", None)
        .await
        .expect("still serving after failed handshakes");
    assert_eq!(again.status, 401, "no session yet: {again:?}");

    let auth = sandbox.ctx.settings.auth.clone();
    let reviewer = Holder {
        tenant: "acme",
        principal: "rita",
        groups: &[],
        roles: &[Role::Reviewer],
    }
    .token(&auth);
    let signed_in = https(
        &trusting,
        dashboard,
        "POST",
        "/api/session",
        Some(&format!(r#"{{"token":"{reviewer}"}}"#)),
    )
    .await
    .expect("sign in over https");
    assert_eq!(signed_in.status, 200, "{signed_in:?}");
    let cookie = signed_in.header("set-cookie").expect("a session cookie");
    assert!(cookie.starts_with("ontoloop_session="), "{cookie}");
    let attributes: Vec<&str> = cookie.split(';').map(str::trim).collect();
    assert!(attributes.contains(&"Secure"), "{cookie}");
    assert!(attributes.contains(&"HttpOnly"), "{cookie}");

    sandbox.shutdown().await.expect("clean shutdown");
}
