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
    /// Tokens as with `jwt`, signed with a secret `ontoloop up` generates and keeps in
    /// `dev_secret_file`, from which the CLI signs its own: `make run`. Loopback addresses only.
    Dev,
}

/// The `[auth]` section. `Debug` shows `hs256_secret` as `***` and `jwks_url` without a password.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    /// `off` or `jwt`.
    pub mode: AuthMode,
    /// Shared secret of HS256 tokens (at least 32 bytes); empty: HS256 tokens are refused.
    pub hs256_secret: String,
    /// Path of a JWKS file with the RS256/ES256 public keys tokens may be signed with; empty:
    /// none.
    pub jwks_file: String,
    /// `http://` or `https://` URL of the identity provider's JWKS, fetched at start and
    /// refreshed (instead of `jwks_file`); empty: none.
    pub jwks_url: String,
    /// How often the JWKS of `jwks_url` is fetched again, in seconds.
    pub jwks_refresh_seconds: u64,
    /// The `iss` every token must carry.
    pub issuer: String,
    /// The `aud` every token must carry.
    pub audience: String,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    pub leeway_seconds: u64,
    /// Where `mode = "dev"` keeps its generated secret (and the CLI finds it).
    pub dev_secret_file: String,
    /// Origins (`scheme://host[:port]`) the dashboard is reached at besides its own bound
    /// address (a public name, a TLS proxy in front); a browser request from any other origin,
    /// or for any other Host, is refused.
    pub dashboard_origins: Vec<String>,
    /// Which claims carry the tenant, principal, groups and roles.
    pub claims: ClaimNames,
}

impl std::fmt::Debug for AuthSettings {
    // The HS256 secret never reaches a log or an error.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            mode,
            hs256_secret,
            jwks_file,
            jwks_url,
            jwks_refresh_seconds,
            issuer,
            audience,
            leeway_seconds,
            dev_secret_file,
            dashboard_origins,
            claims,
        } = self;
        f.debug_struct("AuthSettings")
            .field("mode", mode)
            .field(
                "hs256_secret",
                &if hs256_secret.is_empty() { "" } else { "***" },
            )
            .field("jwks_file", jwks_file)
            .field("jwks_url", &ontoloop_core::redact_url(jwks_url))
            .field("jwks_refresh_seconds", jwks_refresh_seconds)
            .field("issuer", issuer)
            .field("audience", audience)
            .field("leeway_seconds", leeway_seconds)
            .field("dev_secret_file", dev_secret_file)
            .field("dashboard_origins", dashboard_origins)
            .field("claims", claims)
            .finish()
    }
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
        for origin in &self.dashboard_origins {
            if origin_host(origin).is_none() {
                return Err(InvalidSetting::new(
                    "dashboard_origins",
                    format!("{origin:?} is not scheme://host[:port] (http or https, no path)"),
                ));
            }
        }
        let jwks_url = self.jwks_url.trim();
        if !jwks_url.is_empty() {
            if !self.jwks_file.trim().is_empty() {
                return Err(InvalidSetting::new(
                    "jwks_url",
                    "set jwks_file or jwks_url, not both",
                ));
            }
            if jwks_url_host(jwks_url).is_none() {
                return Err(InvalidSetting::new(
                    "jwks_url",
                    format!(
                        "{:?} is not an http:// or https:// URL with a host",
                        ontoloop_core::redact_url(jwks_url)
                    ),
                ));
            }
            if self.jwks_refresh_seconds == 0 {
                return Err(InvalidSetting::new(
                    "jwks_refresh_seconds",
                    "must be at least 1",
                ));
            }
        }
        if !self.hs256_secret.is_empty() && self.hs256_secret.len() < MIN_SECRET_BYTES {
            return Err(InvalidSetting::new(
                "hs256_secret",
                format!("must be at least {MIN_SECRET_BYTES} bytes"),
            ));
        }
        match self.mode {
            AuthMode::Off => return Ok(()),
            AuthMode::Dev if self.dev_secret_file.trim().is_empty() => {
                return Err(InvalidSetting::new(
                    "dev_secret_file",
                    "required when auth.mode = \"dev\"",
                ));
            }
            AuthMode::Dev => return Ok(()),
            AuthMode::Jwt => {}
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
        if self.hs256_secret.is_empty()
            && self.jwks_file.trim().is_empty()
            && self.jwks_url.trim().is_empty()
        {
            return Err(InvalidSetting::new(
                "hs256_secret",
                "auth.mode = \"jwt\" needs hs256_secret, jwks_file or jwks_url",
            ));
        }
        Ok(())
    }
}

/// The `host[:port]` of an origin `http://host[:port]` or `https://host[:port]` (what a browser
/// sends as `Host` for it); `None` for anything else, a path or a trailing slash included.
pub fn origin_host(origin: &str) -> Option<&str> {
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))?;
    let valid = !rest.is_empty()
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    valid.then_some(rest)
}

/// The host of a JWKS URL `http://host[:port]/path` or `https://...`; `None` for another scheme
/// or no host.
pub fn jwks_url_host(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let valid = !authority.is_empty()
        && authority
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    valid.then_some(authority)
}

/// Issuer and audience of dev-mode tokens where the settings leave them empty.
const DEV_NAME: &str = "ontoloop-dev";

impl AuthSettings {
    /// Whether calls must carry a token (`jwt` or `dev`).
    pub fn checks_tokens(&self) -> bool {
        self.mode != AuthMode::Off
    }

    /// The settings dev-mode tokens are signed and checked with: `secret`, and issuer and
    /// audience `ontoloop-dev` where unset.
    pub fn with_dev_secret(&self, secret: &str) -> AuthSettings {
        let or_dev = |value: &str| {
            if value.trim().is_empty() {
                DEV_NAME.to_owned()
            } else {
                value.to_owned()
            }
        };
        AuthSettings {
            hs256_secret: secret.to_owned(),
            issuer: or_dev(&self.issuer),
            audience: or_dev(&self.audience),
            ..self.clone()
        }
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
            jwks_url: String::new(),
            jwks_refresh_seconds: 300,
            issuer: "https://issuer.test".to_owned(),
            audience: "ontoloop".to_owned(),
            leeway_seconds: 0,
            dev_secret_file: "data/dev-auth-secret".to_owned(),
            dashboard_origins: Vec::new(),
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
        s.jwks_url = "https://idp.example.com/.well-known/jwks.json".to_owned();
        assert_eq!(s.validate().expect_err("both").key, "jwks_url");
        s.jwks_file.clear();
        assert_eq!(s.validate(), Ok(()));
        s.jwks_refresh_seconds = 0;
        assert_eq!(
            s.validate().expect_err("no refresh").key,
            "jwks_refresh_seconds"
        );
        s.jwks_refresh_seconds = 300;
        for bad in [
            "idp.example.com/jwks",
            "ftp://idp.example.com/jwks",
            "https:///jwks",
        ] {
            s.jwks_url = bad.to_owned();
            assert_eq!(s.validate().expect_err(bad).key, "jwks_url", "{bad}");
        }
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
        s.mode = AuthMode::Dev;
        s.hs256_secret.clear();
        assert_eq!(s.validate(), Ok(()));
        s.dev_secret_file.clear();
        assert_eq!(s.validate().expect_err("no file").key, "dev_secret_file");
    }

    #[test]
    fn jwks_urls_name_a_host() {
        assert_eq!(
            jwks_url_host("https://idp.example.com/.well-known/jwks.json"),
            Some("idp.example.com")
        );
        assert_eq!(
            jwks_url_host("http://127.0.0.1:8080/keys?v=1"),
            Some("127.0.0.1:8080")
        );
        assert_eq!(jwks_url_host("http://[::1]:8080"), Some("[::1]:8080"));
        assert_eq!(jwks_url_host("https://"), None);
        assert_eq!(jwks_url_host("https://user@idp.example.com/"), None);
        assert_eq!(jwks_url_host("file:///etc/jwks.json"), None);
    }

    #[test]
    fn dashboard_origins_are_scheme_host_and_port() {
        assert_eq!(
            origin_host("https://review.example.com"),
            Some("review.example.com")
        );
        assert_eq!(origin_host("http://10.0.0.5:8081"), Some("10.0.0.5:8081"));
        assert_eq!(origin_host("http://[::1]:8081"), Some("[::1]:8081"));
        assert_eq!(origin_host("review.example.com"), None);
        assert_eq!(origin_host("https://review.example.com/"), None);
        assert_eq!(origin_host("ftp://review.example.com"), None);
        assert_eq!(origin_host("https://"), None);
        let mut s = jwt_settings();
        s.dashboard_origins = vec!["https://review.example.com/app".to_owned()];
        assert_eq!(s.validate().expect_err("a path").key, "dashboard_origins");
    }

    #[test]
    fn dev_settings_fill_issuer_and_audience_only_where_unset() {
        let mut s = jwt_settings();
        s.mode = AuthMode::Dev;
        s.issuer.clear();
        let dev = s.with_dev_secret("generated-secret-generated-secret");
        assert_eq!(dev.hs256_secret, "generated-secret-generated-secret");
        assert_eq!(dev.issuer, "ontoloop-dev");
        assert_eq!(dev.audience, "ontoloop");
        assert_eq!(dev.mode, AuthMode::Dev);
        assert!(dev.checks_tokens());
    }
}
