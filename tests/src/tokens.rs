//! Bearer tokens for tests that run the system with `auth.mode = "jwt"`: the settings that turn
//! it on, tokens signed with them, and requests that carry one.

use std::collections::BTreeSet;

use ontoloop_auth::{AuthSettings, Identity, Role};

/// The issuer every jwt test system checks.
pub const ISSUER: &str = "https://issuer.test";
/// The audience every jwt test system checks.
pub const AUDIENCE: &str = "ontoloop";

/// Settings overrides for `auth.mode = "jwt"` with the HS256 `secret` (at least 32 bytes).
pub fn jwt(secret: &'static str) -> Vec<(&'static str, &'static str)> {
    vec![
        ("auth.mode", "jwt"),
        ("auth.hs256_secret", secret),
        ("auth.issuer", ISSUER),
        ("auth.audience", AUDIENCE),
    ]
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// Who a token names.
#[derive(Debug, Clone, Copy)]
pub struct Holder<'a> {
    /// Tenant.
    pub tenant: &'a str,
    /// Principal.
    pub principal: &'a str,
    /// Groups the token carries.
    pub groups: &'a [&'a str],
    /// Roles the token carries.
    pub roles: &'a [Role],
}

impl Holder<'_> {
    /// A token for this holder signed with `auth` (the system's settings, or altered ones for a
    /// bad token), issued at `issued_at` for `ttl` seconds.
    pub fn token_at(&self, auth: &AuthSettings, issued_at: u64, ttl: u64) -> String {
        let identity = Identity {
            tenant: self.tenant.to_owned(),
            principal: self.principal.to_owned(),
            groups: self.groups.iter().map(|g| (*g).to_owned()).collect(),
            roles: self.roles.iter().copied().collect::<BTreeSet<_>>(),
        };
        ontoloop_auth::issue(auth, &identity, issued_at, ttl).expect("issue a token")
    }

    /// A token for this holder, issued now for an hour.
    pub fn token(&self, auth: &AuthSettings) -> String {
        self.token_at(auth, now(), 3_600)
    }
}

/// `message` carrying `token` as its bearer; without a token, no `authorization` header.
pub fn bearer<T>(message: T, token: Option<&str>) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    if let Some(token) = token {
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {token}").parse().expect("header value"),
        );
    }
    request
}
