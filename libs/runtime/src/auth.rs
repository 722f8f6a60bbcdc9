//! The trust boundary of every gRPC server: a tower layer that verifies the bearer token,
//! checks the role the method needs, and hands the [`Identity`] to the service in the request's
//! extensions (where `ontoloop_proto::caller_from` reads it). Health and reflection stay open.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use anyhow::Context as _;
use ontoloop_auth::{Access, AuthMode, AuthSettings, Denied, Identity, Verifier};
use ontoloop_proto::status_from;

/// The verifier the settings ask for: none with `auth.mode = "off"`. The JWKS file is read here,
/// once, so a missing or unusable one stops the service at start.
pub fn verifier(settings: &AuthSettings) -> anyhow::Result<Option<Arc<Verifier>>> {
    match settings.mode {
        AuthMode::Off => return Ok(None),
        AuthMode::Dev if settings.hs256_secret.is_empty() => anyhow::bail!(
            "auth.mode = \"dev\" checks tokens signed with the secret `ontoloop up` generates \
             (make run); run the services with `ontoloop up`, or use auth.mode = \"jwt\""
        ),
        AuthMode::Dev | AuthMode::Jwt => {}
    }
    let jwks = if settings.jwks_file.trim().is_empty() {
        None
    } else {
        Some(
            ontoloop_auth::load_jwks(std::path::Path::new(settings.jwks_file.trim()))
                .context("load auth.jwks_file")?,
        )
    };
    let verifier = Verifier::new(settings, jwks.as_ref()).context("set up auth")?;
    Ok(Some(Arc::new(verifier)))
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
         auth.mode = \"jwt\" (with auth.hs256_secret or auth.jwks_file, auth.issuer and \
         auth.audience), or bind services.host to 127.0.0.1"
    )
}

/// The layer of [`Authenticated`]; without a verifier it lets every call through.
#[derive(Clone)]
pub(crate) struct AuthLayer {
    verifier: Option<Arc<Verifier>>,
}

impl AuthLayer {
    pub(crate) fn new(verifier: Option<Arc<Verifier>>) -> Self {
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
    verifier: Option<Arc<Verifier>>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> tower_service::Service<http::Request<B>> for Authenticated<S>
where
    S: tower_service::Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        if let Some(verifier) = &self.verifier {
            match admit(verifier, request.uri().path(), request.headers()) {
                Ok(Some(identity)) => {
                    request.extensions_mut().insert(identity);
                }
                Ok(None) => {}
                Err(denied) => {
                    tracing::debug!(path = request.uri().path(), reason = %denied, "call refused");
                    let response = status_from(denied).into_http();
                    return Box::pin(async move { Ok(response) });
                }
            }
        }
        Box::pin(self.inner.call(request))
    }
}

/// Whether a call to `path` with these headers may proceed, and as whom (`None` for an open
/// method).
fn admit(
    verifier: &Verifier,
    path: &str,
    headers: &http::HeaderMap,
) -> Result<Option<Identity>, Denied> {
    let needed = match ontoloop_auth::access(path) {
        Access::Open => return Ok(None),
        Access::Role(role) => role,
    };
    let token = bearer(headers).ok_or(Denied::NoToken)?;
    let identity = verifier.verify(token).map_err(Denied::Token)?;
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

    #[test]
    fn calls_are_admitted_by_token_and_role() {
        let settings = settings();
        let verifier = verifier(&settings).expect("verifier").expect("jwt mode");
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
        assert_eq!(admit(&verifier, ask, &headers(&token)), Ok(Some(agent)));
        assert_eq!(
            admit(&verifier, ask, &http::HeaderMap::new()),
            Err(Denied::NoToken)
        );
        assert_eq!(
            admit(
                &verifier,
                "/grpc.health.v1.Health/Check",
                &http::HeaderMap::new()
            ),
            Ok(None)
        );
        assert!(matches!(
            admit(&verifier, ask, &headers("garbage")),
            Err(Denied::Token(AuthError::Malformed(_)))
        ));
        assert_eq!(
            admit(
                &verifier,
                "/ontoloop.v1.AnalystService/Decide",
                &headers(&token)
            ),
            Err(Denied::Role {
                what: "Decide".to_owned(),
                needed: Role::Reviewer,
                granted: "agent".to_owned(),
            })
        );
    }

    #[test]
    fn only_loopback_may_serve_without_auth() {
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
        let err = verifier(&settings).expect_err("dev needs the generated secret");
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
        assert_eq!(seen.len(), 12, "{seen:?}");
    }
}
