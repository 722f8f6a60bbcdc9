//! Authentication for the benchmarks' "auth on" rows: the run's settings with
//! `auth.mode = "jwt"` and an HS256 secret generated for the run, and tokens issued for the
//! benchmark's callers.

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use ontoloop_auth::{AuthMode, AuthSettings, Identity, Role};
use rand::Rng as _;

/// The issuer the benchmarks' tokens carry and their systems check.
pub const ISSUER: &str = "ontoloop-bench";
/// The audience the benchmarks' tokens carry and their systems check.
pub const AUDIENCE: &str = "ontoloop";
/// How long a benchmark's token is valid, in seconds.
const TTL_SECS: u64 = 3_600;

/// `auth` with `mode = "jwt"`, a fresh random HS256 secret (32 bytes, hex), and the
/// benchmarks' issuer and audience; no JWKS.
pub fn jwt(auth: &AuthSettings) -> AuthSettings {
    let secret: [u8; 32] = rand::rng().random();
    let mut jwt = auth.clone();
    jwt.mode = AuthMode::Jwt;
    jwt.hs256_secret = secret.iter().map(|b| format!("{b:02x}")).collect();
    jwt.jwks_file = String::new();
    jwt.jwks_url = String::new();
    jwt.issuer = ISSUER.to_owned();
    jwt.audience = AUDIENCE.to_owned();
    jwt
}

/// An agent's token for `principal` of `tenant`, signed with `auth`, valid for an hour.
pub fn token(auth: &AuthSettings, tenant: &str, principal: &str) -> anyhow::Result<String> {
    token_with(auth, tenant, principal, Role::Agent)
}

/// A token for `principal` of `tenant` in `role`, signed with `auth`, valid for an hour.
pub fn token_with(
    auth: &AuthSettings,
    tenant: &str,
    principal: &str,
    role: Role,
) -> anyhow::Result<String> {
    let identity = Identity {
        tenant: tenant.to_owned(),
        principal: principal.to_owned(),
        groups: Vec::new(),
        roles: BTreeSet::from([role]),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .context("read the clock")?
        .as_secs();
    ontoloop_auth::issue(auth, &identity, now, TTL_SECS).context("issue a benchmark token")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn off() -> AuthSettings {
        ontoloop_settings::Settings::defaults().auth
    }

    #[test]
    fn a_token_issued_for_the_run_verifies_as_its_caller() {
        let auth = jwt(&off());
        assert_eq!(auth.mode, AuthMode::Jwt);
        assert_eq!(auth.hs256_secret.len(), 64);
        auth.validate().expect("valid jwt settings");
        let token = token(&auth, "acme", "p-1").expect("token");
        let identity = ontoloop_auth::Verifier::new(&auth, None)
            .expect("verifier")
            .verify(&token)
            .expect("verifies");
        assert_eq!(identity.tenant, "acme");
        assert_eq!(identity.principal, "p-1");
        assert!(identity.may(Role::Agent));
    }

    #[test]
    fn each_run_has_its_own_secret() {
        let (a, b) = (jwt(&off()), jwt(&off()));
        assert_ne!(a.hs256_secret, b.hs256_secret);
        let token = token(&a, "acme", "p-1").expect("token");
        assert!(
            ontoloop_auth::Verifier::new(&b, None)
                .expect("verifier")
                .verify(&token)
                .is_err()
        );
    }
}
