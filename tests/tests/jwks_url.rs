//! `auth.jwks_url`, black box: the test serves a JWKS over HTTP itself (and counts the fetches),
//! runs the system with `auth.mode = "jwt"` and no HS256 secret, and signs ES256 tokens with the
//! matching private keys. A token of the served key is accepted; after the key is rotated on the
//! server, a token with the new `kid` is accepted at once (the unknown `kid` fetches the set
//! again), the retired key's tokens are refused, and a made-up `kid` right after is
//! UNAUTHENTICATED without another fetch (at most one per 30 s). With a short
//! `auth.jwks_refresh_seconds` the set is fetched again unasked, and a failing server leaves the
//! last good keys in use. A URL that cannot be fetched stops the start, naming the setting.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use http_body_util::Full;
use hyper::body::Bytes;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ontoloop_proto::v1;
use ontoloop_tests::tokens::{AUDIENCE, ISSUER, bearer, now};
use ontoloop_tests::{Sandbox, settings, wait_until};
use serde_json::{Value, json};
use tonic::Code;

/// One ES256 key pair: its private half signs, its public half is served as a JWK.
struct Key {
    kid: &'static str,
    signing: EncodingKey,
    jwk: Value,
}

impl Key {
    fn new(kid: &'static str) -> Self {
        let pair = rcgen::KeyPair::generate().expect("a P-256 key");
        // The uncompressed point: 0x04, then x and y of 32 bytes each.
        let point = pair.public_key_raw();
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        Self {
            kid,
            signing: EncodingKey::from_ec_der(&pair.serialize_der()),
            jwk: json!({
                "kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
                "x": b64(&point[1..33]), "y": b64(&point[33..65]),
            }),
        }
    }

    /// An agent's token of tenant acme, signed with this key under `kid`.
    fn token_as(&self, kid: &str) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.to_owned());
        let claims = json!({
            "iss": ISSUER, "aud": AUDIENCE, "exp": now() + 600,
            "tenant": "acme", "sub": "agent-7", "roles": ["agent"],
        });
        jsonwebtoken::encode(&header, &claims, &self.signing).expect("sign")
    }

    fn token(&self) -> String {
        self.token_as(self.kid)
    }
}

/// What the test's identity provider answers, and how often it was asked.
struct Provider {
    answer: Mutex<(u16, String)>,
    fetches: AtomicUsize,
}

impl Provider {
    fn serve(&self, keys: &[&Key]) {
        let set = json!({ "keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>() });
        *self.answer.lock().expect("lock") = (200, set.to_string());
    }

    fn fail(&self) {
        *self.answer.lock().expect("lock") = (503, "down for maintenance".to_owned());
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

/// Serves `provider`'s answer to every request on a loopback port until the test ends.
async fn provider(keys: &[&Key]) -> (Arc<Provider>, SocketAddr) {
    let provider = Arc::new(Provider {
        answer: Mutex::new((500, String::new())),
        fetches: AtomicUsize::new(0),
    });
    provider.serve(keys);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the provider");
    let addr = listener.local_addr().expect("its address");
    let shared = provider.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let provider = shared.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |_request| {
                    provider.fetches.fetch_add(1, Ordering::SeqCst);
                    let (status, body) = provider.answer.lock().expect("lock").clone();
                    async move {
                        hyper::Response::builder()
                            .status(status)
                            .header("content-type", "application/json")
                            .body(Full::new(Bytes::from(body)))
                    }
                });
                let io = hyper_util::rt::TokioIo::new(tcp);
                // A client that goes away mid-request is no concern of the test.
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    (provider, addr)
}

/// The system checking ES256 tokens against the JWKS at `addr`.
async fn system(addr: SocketAddr, refresh_seconds: &str) -> Sandbox {
    let url = format!("http://{addr}/.well-known/jwks.json");
    Sandbox::embedded(&[
        ("auth.mode", "jwt"),
        ("auth.issuer", ISSUER),
        ("auth.audience", AUDIENCE),
        ("auth.jwks_url", &url),
        ("auth.jwks_refresh_seconds", refresh_seconds),
    ])
    .await
}

/// An Ask with `token`: `Ok(())` once the call got past the trust boundary and the service
/// itself answered (tenant acme has pushed nothing, so it abstains, naming why), the refusal
/// otherwise.
async fn call(sandbox: &Sandbox, token: &str) -> Result<(), tonic::Status> {
    let answer = sandbox
        .clients()
        .retrieval
        .clone()
        .ask(bearer(
            v1::AskRequest {
                text: "Who owns Project Kite?".into(),
                ..Default::default()
            },
            Some(token),
        ))
        .await?
        .into_inner();
    assert_eq!(
        answer.status,
        v1::AnswerStatus::Abstained as i32,
        "the service answered: {answer:?}"
    );
    assert!(
        answer.abstain_reason.contains("cannot map the question"),
        "the service answered: {answer:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_is_fetched_for_its_unknown_kid_at_most_once_per_interval() {
    let (first, second) = (Key::new("key-1"), Key::new("key-2"));
    let (idp, addr) = provider(&[&first]).await;
    let sandbox = system(addr, "3600").await;
    assert_eq!(idp.fetches(), 1, "fetched once at start");
    call(&sandbox, &first.token())
        .await
        .expect("key-1 accepted");
    assert_eq!(idp.fetches(), 1, "a known kid fetches nothing");

    idp.serve(&[&second]);
    call(&sandbox, &second.token())
        .await
        .expect("key-2 accepted after the set is fetched again");
    assert_eq!(idp.fetches(), 2, "one fetch for the unknown kid");

    let retired = call(&sandbox, &first.token())
        .await
        .expect_err("key-1 is no longer in the set");
    assert_eq!(retired.code(), Code::Unauthenticated, "{retired:?}");
    let made_up = call(&sandbox, &second.token_as("key-3"))
        .await
        .expect_err("no key-3 anywhere");
    assert_eq!(made_up.code(), Code::Unauthenticated, "{made_up:?}");
    assert!(made_up.message().contains("key-3"), "{made_up:?}");
    for _ in 0..20 {
        let flood = call(&sandbox, &second.token_as("key-3")).await;
        assert_eq!(
            flood.map_err(|s| s.code()),
            Err(Code::Unauthenticated),
            "a flood of unknown kids"
        );
    }
    assert_eq!(idp.fetches(), 2, "within 30 s no further fetch");
    call(&sandbox, &second.token())
        .await
        .expect("key-2 still accepted");
    sandbox.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_set_is_fetched_again_periodically_and_a_failure_keeps_the_last_keys() {
    let (first, second) = (Key::new("key-1"), Key::new("key-2"));
    let (idp, addr) = provider(&[&first]).await;
    let sandbox = system(addr, "1").await;
    idp.serve(&[&second]);
    let before = idp.fetches();
    assert!(
        wait_until(Duration::from_secs(10), || async { idp.fetches() > before }).await,
        "fetched again within a few seconds"
    );
    // Taken unasked: key-1 is gone, so it would be refused; key-2 is held.
    assert!(
        wait_until(Duration::from_secs(10), || async {
            call(&sandbox, &first.token()).await.is_err()
        })
        .await,
        "key-1 retired by the periodic fetch"
    );
    idp.fail();
    let failed = idp.fetches();
    assert!(
        wait_until(Duration::from_secs(10), || async {
            idp.fetches() >= failed + 2
        })
        .await,
        "the failing provider is asked again"
    );
    call(&sandbox, &second.token())
        .await
        .expect("the last good keys stay in use");
    sandbox.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_jwks_url_that_cannot_be_fetched_stops_the_start_naming_the_setting() {
    // A port that was just free: nothing listens there.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("its address")
    };
    let url = format!("http://{closed}/jwks.json");
    let store = tempfile::tempdir().expect("temp dir");
    let store_url = format!("sqlite://{}/ontoloop.db?mode=rwc", store.path().display());
    let err = Sandbox::start(settings(&[
        ("store.url", &store_url),
        ("auth.mode", "jwt"),
        ("auth.issuer", ISSUER),
        ("auth.audience", AUDIENCE),
        ("auth.jwks_url", &url),
    ]))
    .await
    .err()
    .expect("no JWKS, no start");
    let text = format!("{err:#}");
    assert!(text.contains("auth.jwks_url"), "{text}");
    assert!(text.contains(&url), "{text}");

    let (idp, addr) = provider(&[]).await;
    idp.fail();
    let err = Sandbox::start(settings(&[
        ("store.url", &store_url),
        ("auth.mode", "jwt"),
        ("auth.issuer", ISSUER),
        ("auth.audience", AUDIENCE),
        ("auth.jwks_url", &format!("http://{addr}/jwks.json")),
    ]))
    .await
    .err()
    .expect("an error answer, no start");
    let text = format!("{err:#}");
    assert!(
        text.contains("auth.jwks_url") && text.contains("503"),
        "{text}"
    );
}
