//! The trust boundary of every gRPC server: a tower layer that verifies the bearer token,
//! checks the role the method needs, and hands the [`Identity`] to the service in the request's
//! extensions (where `ontoloop_proto::caller_from` reads it). Health and reflection stay open.
//! The [`Authenticator`] behind it holds the keys, and with `auth.jwks_url` keeps them fresh.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ontoloop_auth::{
    Access, AuthError, AuthMode, AuthSettings, Denied, Identity, RefreshGate, Verifier,
};
use ontoloop_proto::status_from;
use ontoloop_settings::TlsSettings;

use crate::jwks::JwksSource;

/// Verifies bearer tokens. With `auth.jwks_url` its public keys are fetched again every
/// `auth.jwks_refresh_seconds`, and when a token names a `kid` the set lacks (at most once per
/// [`ontoloop_auth::UNKNOWN_KID_REFETCH`]); a failed fetch keeps the last good keys.
#[derive(Debug)]
pub struct Authenticator {
    verifier: Verifier,
    remote: Option<Remote>,
}

#[derive(Debug)]
struct Remote {
    source: JwksSource,
    /// Fetches for unknown `kid`s pass here.
    gate: RefreshGate,
    /// One fetch at a time; a call that waited on it looks at the new keys before fetching.
    fetching: tokio::sync::Mutex<()>,
}

impl Authenticator {
    /// Verifies `token` and reads its identity; see [`Verifier::verify`].
    pub async fn verify(&self, token: &str) -> Result<Identity, AuthError> {
        self.verify_until(token).await.map(|(identity, _)| identity)
    }

    /// Verifies `token`, with its `exp`; see [`Verifier::verify_until`]. A token naming a key
    /// the set lacks makes the JWKS be fetched again first, when its URL is set and the last
    /// such fetch is old enough.
    pub async fn verify_until(&self, token: &str) -> Result<(Identity, u64), AuthError> {
        let first = self.verifier.verify_until(token);
        let (Err(AuthError::UnknownKey(_)), Some(remote)) = (&first, &self.remote) else {
            return first;
        };
        let _fetching = remote.fetching.lock().await;
        // A fetch that ended while this call waited may have brought the key.
        let again = self.verifier.verify_until(token);
        if !matches!(again, Err(AuthError::UnknownKey(_))) {
            return again;
        }
        if !remote.gate.try_pass(Instant::now()) {
            tracing::debug!("token names an unknown key; the jwks was fetched for one lately");
            return again;
        }
        self.refresh_locked(remote, "unknown kid").await;
        self.verifier.verify_until(token)
    }

    /// Fetches the JWKS again (with `auth.jwks_url`); a failure keeps the keys held.
    async fn refresh(&self) {
        if let Some(remote) = &self.remote {
            let _fetching = remote.fetching.lock().await;
            self.refresh_locked(remote, "periodic").await;
        }
    }

    async fn refresh_locked(&self, remote: &Remote, why: &'static str) {
        let outcome = remote
            .source
            .fetch()
            .await
            .and_then(|set| Ok(self.verifier.replace_keys(&set)?));
        match outcome {
            Ok(keys) => {
                tracing::debug!(keys, why, url = %ontoloop_core::redact_url(remote.source.url()), "jwks fetched")
            }
            Err(err) => tracing::warn!(
                error = format!("{err:#}"),
                why,
                url = remote.source.url(),
                "jwks refresh failed; keeping the last good keys"
            ),
        }
    }
}

/// The authenticator the settings ask for: none with `auth.mode = "off"`. The JWKS file is read,
/// or the JWKS URL fetched, here, once, so a missing or unusable set stops the service at start;
/// with a URL a task fetches it again every `auth.jwks_refresh_seconds` for as long as the
/// authenticator lives. `tls` gives the CA an `https://` JWKS URL is checked with.
pub async fn authenticator(
    settings: &AuthSettings,
    tls: &TlsSettings,
) -> anyhow::Result<Option<Arc<Authenticator>>> {
    match settings.mode {
        AuthMode::Off => return Ok(None),
        AuthMode::Dev if settings.hs256_secret.is_empty() => anyhow::bail!(
            "auth.mode = \"dev\" checks tokens signed with the secret `ontoloop up` generates \
             (make run); run the services with `ontoloop up`, or use auth.mode = \"jwt\""
        ),
        AuthMode::Dev | AuthMode::Jwt => {}
    }
    let (file, url) = (settings.jwks_file.trim(), settings.jwks_url.trim());
    // Errors quote the URL without a password.
    let shown = ontoloop_core::redact_url(url);
    let (jwks, remote) = if !file.is_empty() {
        let jwks =
            ontoloop_auth::load_jwks(std::path::Path::new(file)).context("load auth.jwks_file")?;
        (Some(jwks), None)
    } else if !url.is_empty() {
        let source =
            JwksSource::new(url, tls).with_context(|| format!("auth.jwks_url {shown:?}"))?;
        let jwks = source
            .fetch()
            .await
            .with_context(|| format!("fetch auth.jwks_url {shown:?}"))?;
        let remote = Remote {
            source,
            gate: RefreshGate::new(ontoloop_auth::UNKNOWN_KID_REFETCH),
            fetching: tokio::sync::Mutex::new(()),
        };
        (Some(jwks), Some(remote))
    } else {
        (None, None)
    };
    let verifier = Verifier::new(settings, jwks.as_ref()).with_context(|| {
        if url.is_empty() {
            "set up auth".to_owned()
        } else {
            format!("set up auth: the set at auth.jwks_url {shown:?}")
        }
    })?;
    let periodic = remote.is_some();
    let authenticator = Arc::new(Authenticator { verifier, remote });
    if periodic {
        let every = Duration::from_secs(settings.jwks_refresh_seconds.max(1));
        tokio::spawn(refresh_every(Arc::downgrade(&authenticator), every));
    }
    Ok(Some(authenticator))
}

/// Fetches the JWKS every `every` until the authenticator is dropped.
async fn refresh_every(authenticator: Weak<Authenticator>, every: Duration) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(authenticator) = authenticator.upgrade() else {
            return;
        };
        authenticator.refresh().await;
    }
}

/// Refuses to serve on a non-loopback address without authentication: with `auth.mode = "off"`
/// anyone who reaches the port could name any tenant and principal, and `dev` is for one machine.
pub fn ensure_auth_for(addr: SocketAddr, settings: &AuthSettings) -> anyhow::Result<()> {
    let mode = match settings.mode {
        AuthMode::Jwt => return Ok(()),
        _ if addr.ip().is_loopback() => return Ok(()),
        AuthMode::Off => "off",
        AuthMode::Dev => "dev",
    };
    anyhow::bail!(
        "refusing to serve on {addr} with auth.mode = \"{mode}\": a non-loopback address needs \
         auth.mode = \"jwt\" (with auth.hs256_secret, auth.jwks_file or auth.jwks_url, \
         auth.issuer and auth.audience), or bind services.host to 127.0.0.1"
    )
}

/// The layer of [`Authenticated`]; without an authenticator it lets every call through.
#[derive(Clone)]
pub(crate) struct AuthLayer {
    verifier: Option<Arc<Authenticator>>,
}

impl AuthLayer {
    pub(crate) fn new(verifier: Option<Arc<Authenticator>>) -> Self {
        Self { verifier }
    }
}

impl<S> tower_layer::Layer<S> for AuthLayer {
    type Service = Authenticated<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Authenticated {
            inner,
            verifier: self.verifier.clone(),
        }
    }
}

/// A gRPC server behind the trust boundary.
#[derive(Clone)]
pub(crate) struct Authenticated<S> {
    inner: S,
    verifier: Option<Arc<Authenticator>>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> tower_service::Service<http::Request<B>> for Authenticated<S>
where
    S: tower_service::Service<http::Request<B>, Response = http::Response<tonic::body::Body>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let Some(verifier) = self.verifier.clone() else {
            return Box::pin(self.inner.call(request));
        };
        // The service `poll_ready` readied is the one called, after the (async) check.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        Box::pin(async move {
            match admit(&verifier, request.uri().path(), request.headers()).await {
                Ok(Some(identity)) => {
                    request.extensions_mut().insert(identity);
                }
                Ok(None) => {}
                Err(denied) => {
                    tracing::debug!(path = request.uri().path(), reason = %denied, "call refused");
                    return Ok(status_from(denied).into_http());
                }
            }
            inner.call(request).await
        })
    }
}

/// Whether a call to `path` with these headers may proceed, and as whom (`None` for an open
/// method).
async fn admit(
    verifier: &Authenticator,
    path: &str,
    headers: &http::HeaderMap,
) -> Result<Option<Identity>, Denied> {
    let needed = match ontoloop_auth::access(path) {
        Access::Open => return Ok(None),
        Access::Role(role) => role,
    };
    let token = bearer(headers).ok_or(Denied::NoToken)?;
    let identity = verifier.verify(token).await.map_err(Denied::Token)?;
    let method = path.rsplit('/').next().unwrap_or(path);
    Denied::unless_may(&identity, needed, method)?;
    Ok(Some(identity))
}

/// The token of an `authorization: Bearer <token>` header (the scheme in any case).
fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashSet};

    use ontoloop_auth::{AuthError, Role};
    use prost::Message as _;

    use super::*;

    fn settings() -> AuthSettings {
        ontoloop_settings::Loader::new()
            .env_vars([
                ("ONTOLOOP__AUTH__MODE".to_owned(), "jwt".to_owned()),
                (
                    "ONTOLOOP__AUTH__ISSUER".to_owned(),
                    "https://issuer.test".to_owned(),
                ),
                ("ONTOLOOP__AUTH__AUDIENCE".to_owned(), "ontoloop".to_owned()),
                (
                    "ONTOLOOP__AUTH__HS256_SECRET".to_owned(),
                    "0123456789abcdef0123456789abcdef".to_owned(),
                ),
            ])
            .load()
            .expect("settings")
            .auth
    }

    fn headers(token: &str) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::AUTHORIZATION,
            format!("Bearer {token}").parse().expect("header"),
        );
        headers
    }

    async fn verifier(settings: &AuthSettings) -> anyhow::Result<Option<Arc<Authenticator>>> {
        let tls = ontoloop_settings::Loader::new()
            .env_vars([])
            .load()
            .expect("settings")
            .tls;
        authenticator(settings, &tls).await
    }

    #[tokio::test]
    async fn calls_are_admitted_by_token_and_role() {
        let settings = settings();
        let verifier = verifier(&settings)
            .await
            .expect("verifier")
            .expect("jwt mode");
        let agent = Identity {
            tenant: "acme".to_owned(),
            principal: "bot".to_owned(),
            groups: Vec::new(),
            roles: BTreeSet::from([Role::Agent]),
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs();
        let token = ontoloop_auth::issue(&settings, &agent, now, 60).expect("issue");
        let ask = "/ontoloop.v1.RetrievalService/Ask";
        assert_eq!(
            admit(&verifier, ask, &headers(&token)).await,
            Ok(Some(agent))
        );
        assert_eq!(
            admit(&verifier, ask, &http::HeaderMap::new()).await,
            Err(Denied::NoToken)
        );
        assert_eq!(
            admit(
                &verifier,
                "/grpc.health.v1.Health/Check",
                &http::HeaderMap::new()
            )
            .await,
            Ok(None)
        );
        assert!(matches!(
            admit(&verifier, ask, &headers("garbage")).await,
            Err(Denied::Token(AuthError::Malformed(_)))
        ));
        assert_eq!(
            admit(
                &verifier,
                "/ontoloop.v1.AnalystService/Decide",
                &headers(&token)
            )
            .await,
            Err(Denied::Role {
                what: "Decide".to_owned(),
                needed: Role::Reviewer,
                granted: "agent".to_owned(),
            })
        );
    }

    #[tokio::test]
    async fn only_loopback_may_serve_without_auth() {
        let mut settings = settings();
        settings.mode = AuthMode::Off;
        let loopback: SocketAddr = "127.0.0.1:50051".parse().expect("addr");
        let any: SocketAddr = "0.0.0.0:50051".parse().expect("addr");
        assert!(ensure_auth_for(loopback, &settings).is_ok());
        let err = ensure_auth_for(any, &settings).expect_err("refused");
        assert!(err.to_string().contains("auth.mode"), "{err}");
        settings.mode = AuthMode::Jwt;
        assert!(ensure_auth_for(any, &settings).is_ok());
        settings.mode = AuthMode::Dev;
        assert!(ensure_auth_for(loopback, &settings).is_ok());
        let err = ensure_auth_for(any, &settings).expect_err("dev is loopback only");
        assert!(err.to_string().contains("auth.mode = \"dev\""), "{err}");
        settings.hs256_secret.clear();
        let err = verifier(&settings)
            .await
            .expect_err("dev needs the generated secret");
        assert!(err.to_string().contains("ontoloop up"), "{err}");
    }

    /// Every method of every ontoloop service has its own entry in the role table, so none
    /// falls to the admin-only default by omission.
    #[test]
    fn every_rpc_has_a_role() {
        let set = prost_types::FileDescriptorSet::decode(ontoloop_proto::FILE_DESCRIPTOR_SET)
            .expect("descriptor set");
        let mut seen = HashSet::new();
        for file in &set.file {
            for service in &file.service {
                for method in &service.method {
                    let path = format!("/{}.{}/{}", file.package(), service.name(), method.name());
                    assert!(
                        ontoloop_auth::rpc_role(&path).is_some(),
                        "{path} has no role"
                    );
                    seen.insert(path);
                }
            }
        }
        assert_eq!(seen.len(), 16, "{seen:?}");
    }
}
