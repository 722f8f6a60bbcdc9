//! The `[auth]` settings section, owned here and held by `ontoloop-settings` as it is.

use ontoloop_core::settings::InvalidSetting;
use serde::Deserialize;

/// Whether calls are authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// No authentication: the `caller` in each request body is trusted. Allowed on loopback
    /// addresses only.
    Off,
    /// Every call carries `authorization: Bearer <JWT>`; the token says who calls and in which
    /// roles.
    Jwt,
}

/// The `[auth]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    /// `off` or `jwt`.
    pub mode: AuthMode,
    /// Shared secret of HS256 tokens (at least 32 bytes); empty: HS256 tokens are refused.
    pub hs256_secret: String,
    /// Path of a JWKS file with the RS256/ES256 public keys tokens may be signed with; empty:
    /// none.
    pub jwks_file: String,
    /// The `iss` every token must carry.
    pub issuer: String,
    /// The `aud` every token must carry.
    pub audience: String,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    pub leeway_seconds: u64,
    /// Which claims carry the tenant, principal, groups and roles.
    pub claims: ClaimNames,
}

/// Names of the claims an [`Identity`](crate::Identity) is read from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimNames {
    /// The tenant (a string). Required in every token.
    pub tenant: String,
    /// The principal (a string). Required in every token.
    pub principal: String,
    /// The groups (an array of strings, or one space-separated string). Optional.
    pub groups: String,
    /// The roles (an array of strings, or one space-separated string). Optional; a token
    /// without roles may call nothing but health and reflection.
    pub roles: String,
}

/// HS256 keys shorter than the hash (RFC 7518 §3.2) are refused.
pub(crate) const MIN_SECRET_BYTES: usize = 32;

impl AuthSettings {
    /// Checks the section; the error names the key within it. With `mode = "jwt"` an issuer, an
    /// audience and at least one key source are required.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        for (key, name) in [
            ("claims.tenant", &self.claims.tenant),
            ("claims.principal", &self.claims.principal),
            ("claims.groups", &self.claims.groups),
            ("claims.roles", &self.claims.roles),
        ] {
            if name.trim().is_empty() {
                return Err(InvalidSetting::new(key, "must name a claim"));
            }
        }
        if !self.hs256_secret.is_empty() && self.hs256_secret.len() < MIN_SECRET_BYTES {
            return Err(InvalidSetting::new(
                "hs256_secret",
                format!("must be at least {MIN_SECRET_BYTES} bytes"),
            ));
        }
        if self.mode == AuthMode::Off {
            return Ok(());
        }
        if self.issuer.trim().is_empty() {
            return Err(InvalidSetting::new(
                "issuer",
                "required when auth.mode = \"jwt\"",
            ));
        }
        if self.audience.trim().is_empty() {
            return Err(InvalidSetting::new(
                "audience",
                "required when auth.mode = \"jwt\"",
            ));
        }
        if self.hs256_secret.is_empty() && self.jwks_file.trim().is_empty() {
            return Err(InvalidSetting::new(
                "hs256_secret",
                "auth.mode = \"jwt\" needs hs256_secret or jwks_file",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A valid `jwt` section with an HS256 secret.
    pub(crate) fn jwt_settings() -> AuthSettings {
        AuthSettings {
            mode: AuthMode::Jwt,
            hs256_secret: "0123456789abcdef0123456789abcdef".to_owned(),
            jwks_file: String::new(),
            issuer: "https://issuer.test".to_owned(),
            audience: "ontoloop".to_owned(),
            leeway_seconds: 0,
            claims: ClaimNames {
                tenant: "tenant".to_owned(),
                principal: "sub".to_owned(),
                groups: "groups".to_owned(),
                roles: "roles".to_owned(),
            },
        }
    }

    #[test]
    fn jwt_mode_needs_issuer_audience_and_a_key() {
        assert_eq!(jwt_settings().validate(), Ok(()));
        let mut s = jwt_settings();
        s.issuer.clear();
        assert_eq!(s.validate().expect_err("no issuer").key, "issuer");
        let mut s = jwt_settings();
        s.audience = " ".to_owned();
        assert_eq!(s.validate().expect_err("no audience").key, "audience");
        let mut s = jwt_settings();
        s.hs256_secret.clear();
        assert_eq!(s.validate().expect_err("no key").key, "hs256_secret");
        s.jwks_file = "keys.json".to_owned();
        assert_eq!(s.validate(), Ok(()));
        let mut s = jwt_settings();
        s.hs256_secret = "short".to_owned();
        assert_eq!(s.validate().expect_err("short").key, "hs256_secret");
        let mut s = jwt_settings();
        s.claims.roles.clear();
        assert_eq!(s.validate().expect_err("no claim").key, "claims.roles");
        let mut s = jwt_settings();
        s.mode = AuthMode::Off;
        s.issuer.clear();
        assert_eq!(s.validate(), Ok(()));
    }
}
