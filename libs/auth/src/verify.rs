//! Verifying a bearer token into an [`Identity`], and issuing HS256 tokens.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde_json::{Map, Value};

use crate::error::AuthError;
use crate::roles::{Identity, Role};
use crate::settings::{AuthSettings, ClaimNames};

/// One public key of the JWKS.
struct PublicKey {
    kid: Option<String>,
    alg: Algorithm,
    key: DecodingKey,
}

/// Checks bearer tokens against the configured keys, issuer, audience and leeway, and reads the
/// identity from the configured claims. The public keys can be replaced while it is in use
/// ([`Verifier::replace_keys`]: a JWKS fetched again).
pub struct Verifier {
    claims: ClaimNames,
    issuer: String,
    audience: String,
    leeway: u64,
    hs256: Option<DecodingKey>,
    keys: RwLock<Arc<[PublicKey]>>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret stays out of logs.
        f.debug_struct("Verifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("hs256", &self.hs256.is_some())
            .field("public_keys", &self.public_keys().len())
            .finish()
    }
}

/// Reads a JWKS file (`{"keys": [...]}`).
pub fn load_jwks(path: &Path) -> Result<JwkSet, AuthError> {
    let bytes = std::fs::read(path)
        .map_err(|err| AuthError::Jwks(format!("read {}: {err}", path.display())))?;
    crate::jwks::parse_jwks(&bytes, &path.display().to_string())
}

/// The usable public keys of `set` (RS256, and ES256 on P-256; others are skipped); a set with
/// none is an error.
fn public_keys(set: &JwkSet) -> Result<Arc<[PublicKey]>, AuthError> {
    let mut keys = Vec::new();
    for jwk in &set.keys {
        let Some(alg) = public_algorithm(jwk) else {
            continue;
        };
        let key = DecodingKey::from_jwk(jwk).map_err(|err| {
            AuthError::Jwks(format!(
                "key {}: {err}",
                jwk.common.key_id.as_deref().unwrap_or("without kid")
            ))
        })?;
        keys.push(PublicKey {
            kid: jwk.common.key_id.clone(),
            alg,
            key,
        });
    }
    if keys.is_empty() {
        return Err(AuthError::Jwks(
            "no RS256 or ES256 (P-256) key in the set".to_owned(),
        ));
    }
    Ok(keys.into())
}

impl Verifier {
    /// A verifier for `settings` with the public keys of `jwks` (RS256 and ES256 on P-256; keys
    /// of other kinds are skipped). A JWKS with no usable key is an error.
    pub fn new(settings: &AuthSettings, jwks: Option<&JwkSet>) -> Result<Self, AuthError> {
        let hs256 = (!settings.hs256_secret.is_empty())
            .then(|| DecodingKey::from_secret(settings.hs256_secret.as_bytes()));
        let keys = match jwks {
            Some(set) => public_keys(set)?,
            None => Arc::from(Vec::new()),
        };
        Ok(Self {
            claims: settings.claims.clone(),
            issuer: settings.issuer.clone(),
            audience: settings.audience.clone(),
            leeway: settings.leeway_seconds,
            hs256,
            keys: RwLock::new(keys),
        })
    }

    /// Replaces the public keys with those of `jwks` (a set fetched again); the number of keys
    /// now held. A set with no usable key is an error and leaves the keys as they were.
    pub fn replace_keys(&self, jwks: &JwkSet) -> Result<usize, AuthError> {
        let keys = public_keys(jwks)?;
        let count = keys.len();
        *self.keys.write().unwrap_or_else(PoisonError::into_inner) = keys;
        Ok(count)
    }

    fn public_keys(&self) -> Arc<[PublicKey]> {
        self.keys
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Verifies `token` (signature, `exp`, `nbf`, `iss`, `aud`) and reads its identity.
    pub fn verify(&self, token: &str) -> Result<Identity, AuthError> {
        self.verify_until(token).map(|(identity, _)| identity)
    }

    /// As [`Verifier::verify`], with the token's `exp` (seconds since the epoch), so what the
    /// token opens (a dashboard session) can end no later than the token does.
    pub fn verify_until(&self, token: &str) -> Result<(Identity, u64), AuthError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|err| AuthError::Malformed(err.to_string()))?;
        let keys = self.public_keys();
        let key = self.key_for(&header, &keys)?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation)
            .map_err(|err| from_jwt(err, header.alg))?;
        // `exp` is required and was validated as a number of seconds.
        let exp = data
            .claims
            .get("exp")
            .and_then(Value::as_u64)
            .ok_or_else(|| AuthError::BadClaim {
                claim: "exp".to_owned(),
                reason: "expected whole seconds since the epoch".to_owned(),
            })?;
        Ok((identity_from(&data.claims, &self.claims)?, exp))
    }

    fn key_for<'a>(
        &'a self,
        header: &Header,
        keys: &'a [PublicKey],
    ) -> Result<&'a DecodingKey, AuthError> {
        let kid = header.kid.as_deref();
        match header.alg {
            Algorithm::HS256 => self
                .hs256
                .as_ref()
                .ok_or_else(|| AuthError::UnsupportedAlgorithm("HS256".to_owned())),
            Algorithm::RS256 | Algorithm::ES256 => {
                let mut candidates = keys
                    .iter()
                    .filter(|k| k.alg == header.alg)
                    .filter(|k| kid.is_none() || k.kid.as_deref() == kid);
                match (candidates.next(), candidates.next(), kid) {
                    (Some(key), None, _) | (Some(key), Some(_), Some(_)) => Ok(&key.key),
                    _ => Err(AuthError::UnknownKey(kid.unwrap_or("absent").to_owned())),
                }
            }
            other => Err(AuthError::UnsupportedAlgorithm(format!("{other:?}"))),
        }
    }
}

/// The algorithm a JWK verifies, when ontoloop accepts it.
fn public_algorithm(jwk: &jsonwebtoken::jwk::Jwk) -> Option<Algorithm> {
    match (&jwk.common.key_algorithm, &jwk.algorithm) {
        (Some(KeyAlgorithm::RS256) | None, AlgorithmParameters::RSA(_)) => Some(Algorithm::RS256),
        (Some(KeyAlgorithm::ES256) | None, AlgorithmParameters::EllipticCurve(ec))
            if ec.curve == EllipticCurve::P256 =>
        {
            Some(Algorithm::ES256)
        }
        _ => None,
    }
}

fn from_jwt(err: jsonwebtoken::errors::Error, alg: Algorithm) -> AuthError {
    match err.kind() {
        ErrorKind::ExpiredSignature => AuthError::Expired,
        ErrorKind::ImmatureSignature => AuthError::NotYetValid,
        ErrorKind::InvalidSignature => AuthError::BadSignature,
        ErrorKind::InvalidIssuer => AuthError::WrongIssuer,
        ErrorKind::InvalidAudience => AuthError::WrongAudience,
        ErrorKind::MissingRequiredClaim(claim) => AuthError::MissingClaim(claim.clone()),
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
            AuthError::UnsupportedAlgorithm(format!("{alg:?}"))
        }
        // jsonwebtoken's kinds are non-exhaustive; everything else is an unreadable token.
        _ => AuthError::Malformed(err.to_string()),
    }
}

fn identity_from(claims: &Map<String, Value>, names: &ClaimNames) -> Result<Identity, AuthError> {
    let roles = list_claim(claims, &names.roles)?
        .iter()
        .filter_map(|name| Role::parse(name))
        .collect::<BTreeSet<_>>();
    Ok(Identity {
        tenant: string_claim(claims, &names.tenant)?,
        principal: string_claim(claims, &names.principal)?,
        groups: list_claim(claims, &names.groups)?,
        roles,
    })
}

fn string_claim(claims: &Map<String, Value>, name: &str) -> Result<String, AuthError> {
    match claims.get(name) {
        Some(Value::String(text)) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
        None | Some(Value::Null) | Some(Value::String(_)) => {
            Err(AuthError::MissingClaim(name.to_owned()))
        }
        Some(_) => Err(AuthError::BadClaim {
            claim: name.to_owned(),
            reason: "expected a string".to_owned(),
        }),
    }
}

/// An optional list claim: an array of strings or one space-separated string.
fn list_claim(claims: &Map<String, Value>, name: &str) -> Result<Vec<String>, AuthError> {
    let bad = || AuthError::BadClaim {
        claim: name.to_owned(),
        reason: "expected an array of strings or a space-separated string".to_owned(),
    };
    match claims.get(name) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(text)) => Ok(text.split_whitespace().map(str::to_owned).collect()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(text) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
                _ => Err(bad()),
            })
            .collect(),
        Some(_) => Err(bad()),
    }
}

/// An HS256 token for `identity`, signed with `auth.hs256_secret`, carrying the configured
/// issuer and audience, issued at `issued_at` (seconds since the epoch) and valid for
/// `ttl_secs`.
pub fn issue(
    settings: &AuthSettings,
    identity: &Identity,
    issued_at: u64,
    ttl_secs: u64,
) -> Result<String, AuthError> {
    if settings.hs256_secret.is_empty() {
        return Err(AuthError::NoSecret);
    }
    let names = &settings.claims;
    let mut claims = Map::new();
    claims.insert("iss".to_owned(), settings.issuer.clone().into());
    claims.insert("aud".to_owned(), settings.audience.clone().into());
    claims.insert("iat".to_owned(), issued_at.into());
    claims.insert("exp".to_owned(), issued_at.saturating_add(ttl_secs).into());
    claims.insert(names.tenant.clone(), identity.tenant.clone().into());
    claims.insert(names.principal.clone(), identity.principal.clone().into());
    if !identity.groups.is_empty() {
        claims.insert(names.groups.clone(), identity.groups.clone().into());
    }
    let roles: Vec<Value> = identity.roles.iter().map(|r| r.name().into()).collect();
    claims.insert(names.roles.clone(), roles.into());
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(settings.hs256_secret.as_bytes()),
    )
    .map_err(|err| AuthError::Malformed(err.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::jwt_settings;

    fn now() -> u64 {
        jsonwebtoken::get_current_timestamp()
    }

    fn agent() -> Identity {
        Identity {
            tenant: "acme".to_owned(),
            principal: "bot-1".to_owned(),
            groups: vec!["eng".to_owned()],
            roles: BTreeSet::from([Role::Agent]),
        }
    }

    fn verifier(settings: &AuthSettings) -> Verifier {
        Verifier::new(settings, None).expect("verifier")
    }

    /// What the test settings' verifier makes of an hour's token for [`agent`], issued with
    /// those settings as `change` leaves them.
    fn verify_issued_with(change: impl FnOnce(&mut AuthSettings)) -> Result<Identity, AuthError> {
        let mut other = jwt_settings();
        change(&mut other);
        let token = issue(&other, &agent(), now(), 3600).expect("issue");
        verifier(&jwt_settings()).verify(&token)
    }

    /// A token with exactly these claims, HS256 with `secret`.
    fn raw_hs256(claims: Value, secret: &str) -> String {
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(secret.as_bytes()),
        )
        .expect("encode")
    }

    #[test]
    fn an_issued_token_verifies_into_its_identity() {
        let settings = jwt_settings();
        let issued_at = now();
        let token = issue(&settings, &agent(), issued_at, 3600).expect("issue");
        assert_eq!(verifier(&settings).verify(&token), Ok(agent()));
        assert_eq!(
            verifier(&settings).verify_until(&token),
            Ok((agent(), issued_at + 3600))
        );
    }

    #[test]
    fn an_expired_token_is_refused_unless_within_the_leeway() {
        let mut settings = jwt_settings();
        let token = issue(&settings, &agent(), now() - 100, 70).expect("issue");
        assert_eq!(verifier(&settings).verify(&token), Err(AuthError::Expired));
        settings.leeway_seconds = 60;
        assert_eq!(verifier(&settings).verify(&token), Ok(agent()));
        settings.leeway_seconds = 10;
        assert_eq!(verifier(&settings).verify(&token), Err(AuthError::Expired));
    }

    #[test]
    fn a_token_signed_with_another_secret_is_refused() {
        let other_secret = |other: &mut AuthSettings| {
            other.hs256_secret = "another-secret-another-secret-xx".to_owned();
        };
        assert_eq!(
            verify_issued_with(other_secret),
            Err(AuthError::BadSignature)
        );
        // A tampered payload fails the same way.
        let settings = jwt_settings();
        let mut other = jwt_settings();
        other_secret(&mut other);
        let good = issue(&settings, &agent(), now(), 3600).expect("issue");
        let mut parts: Vec<&str> = good.split('.').collect();
        let forged = issue(
            &other,
            &Identity {
                tenant: "globex".to_owned(),
                ..agent()
            },
            now(),
            3600,
        )
        .expect("issue");
        let forged_payload = forged.split('.').nth(1).expect("payload").to_owned();
        parts[1] = &forged_payload;
        assert_eq!(
            verifier(&settings).verify(&parts.join(".")),
            Err(AuthError::BadSignature)
        );
    }

    #[test]
    fn wrong_issuer_or_audience_is_refused() {
        assert_eq!(
            verify_issued_with(|other| other.audience = "someone-else".to_owned()),
            Err(AuthError::WrongAudience)
        );
        assert_eq!(
            verify_issued_with(|other| other.issuer = "https://evil.test".to_owned()),
            Err(AuthError::WrongIssuer)
        );
    }

    #[test]
    fn missing_and_misshapen_claims_are_named() {
        let settings = jwt_settings();
        let base = serde_json::json!({
            "iss": settings.issuer, "aud": settings.audience, "exp": now() + 600,
            "tenant": "acme", "sub": "bot-1", "roles": "agent reviewer", "groups": ["eng"],
        });
        let secret = settings.hs256_secret.clone();
        let v = verifier(&settings);
        let identity = v.verify(&raw_hs256(base.clone(), &secret)).expect("valid");
        assert_eq!(
            identity.roles,
            BTreeSet::from([Role::Agent, Role::Reviewer])
        );
        for (claim, expected) in [
            ("tenant", AuthError::MissingClaim("tenant".to_owned())),
            ("sub", AuthError::MissingClaim("sub".to_owned())),
            ("exp", AuthError::MissingClaim("exp".to_owned())),
            ("aud", AuthError::MissingClaim("aud".to_owned())),
            ("iss", AuthError::MissingClaim("iss".to_owned())),
        ] {
            let mut claims = base.clone();
            claims.as_object_mut().expect("object").remove(claim);
            assert_eq!(
                v.verify(&raw_hs256(claims, &secret)),
                Err(expected),
                "{claim}"
            );
        }
        let mut claims = base.clone();
        claims["tenant"] = Value::from(" ");
        assert_eq!(
            v.verify(&raw_hs256(claims, &secret)),
            Err(AuthError::MissingClaim("tenant".to_owned()))
        );
        let mut claims = base.clone();
        claims["groups"] = Value::from(3);
        assert!(matches!(
            v.verify(&raw_hs256(claims, &secret)),
            Err(AuthError::BadClaim { ref claim, .. }) if claim == "groups"
        ));
        // Without roles the identity holds none (and may call nothing but health).
        let mut claims = base.clone();
        claims.as_object_mut().expect("object").remove("roles");
        let identity = v.verify(&raw_hs256(claims, &secret)).expect("valid");
        assert!(identity.roles.is_empty());
        assert!(matches!(
            v.verify("not-a-token"),
            Err(AuthError::Malformed(_))
        ));
    }

    #[test]
    fn claim_names_come_from_the_settings() {
        let mut settings = jwt_settings();
        settings.claims.tenant = "org_id".to_owned();
        settings.claims.principal = "email".to_owned();
        settings.claims.roles = "scp".to_owned();
        let token = issue(&settings, &agent(), now(), 60).expect("issue");
        let payload = token.split('.').nth(1).expect("payload");
        use base64::Engine as _;
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .expect("base64");
        let claims: Map<String, Value> = serde_json::from_slice(&json).expect("json");
        assert_eq!(claims["org_id"], "acme");
        assert_eq!(claims["email"], "bot-1");
        assert_eq!(verifier(&settings).verify(&token), Ok(agent()));
    }

    #[test]
    fn hs256_is_refused_without_a_secret_and_issuing_needs_one() {
        let mut settings = jwt_settings();
        let token = issue(&settings, &agent(), now(), 60).expect("issue");
        settings.hs256_secret.clear();
        assert_eq!(
            issue(&settings, &agent(), now(), 60),
            Err(AuthError::NoSecret)
        );
        let es = es256_key();
        let v = Verifier::new(&settings, Some(&es.jwks)).expect("verifier");
        assert_eq!(
            v.verify(&token),
            Err(AuthError::UnsupportedAlgorithm("HS256".to_owned()))
        );
        // Only HS256, RS256 and ES256 are accepted, whatever the key.
        let settings = jwt_settings();
        let hs512 = jsonwebtoken::encode(
            &Header::new(Algorithm::HS512),
            &claims_for(&settings, now() + 600),
            &EncodingKey::from_secret(settings.hs256_secret.as_bytes()),
        )
        .expect("encode");
        assert_eq!(
            verifier(&settings).verify(&hs512),
            Err(AuthError::UnsupportedAlgorithm("HS512".to_owned()))
        );
    }

    struct EsKey {
        pkcs8: Vec<u8>,
        jwks: JwkSet,
    }

    /// A fresh P-256 key pair, its public half as a JWKS with `kid` "test-ec".
    fn es256_key() -> EsKey {
        use base64::Engine as _;
        use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("generate");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("parse");
        // Uncompressed point: 0x04, then x and y of 32 bytes each.
        let point = pair.public_key().as_ref();
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let jwks = serde_json::json!({"keys": [{
            "kty": "EC", "crv": "P-256", "kid": "test-ec", "alg": "ES256", "use": "sig",
            "x": b64(&point[1..33]), "y": b64(&point[33..65]),
        }]});
        EsKey {
            pkcs8: pkcs8.as_ref().to_vec(),
            jwks: serde_json::from_value(jwks).expect("jwks"),
        }
    }

    fn claims_for(settings: &AuthSettings, exp: u64) -> Value {
        serde_json::json!({
            "iss": settings.issuer, "aud": settings.audience, "exp": exp,
            "tenant": "acme", "sub": "bot-1", "roles": ["agent"], "groups": ["eng"],
        })
    }

    fn signed(alg: Algorithm, kid: Option<&str>, claims: &Value, key: &EncodingKey) -> String {
        let mut header = Header::new(alg);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, key).expect("sign")
    }

    #[test]
    fn es256_tokens_verify_against_a_jwks_made_here() {
        let mut settings = jwt_settings();
        settings.hs256_secret.clear();
        let key = es256_key();
        let v = Verifier::new(&settings, Some(&key.jwks)).expect("verifier");
        let signing = EncodingKey::from_ec_der(&key.pkcs8);
        let claims = claims_for(&settings, now() + 600);
        let token = signed(Algorithm::ES256, Some("test-ec"), &claims, &signing);
        assert_eq!(v.verify(&token), Ok(agent()));
        // Without a kid the one ES256 key is used.
        let token = signed(Algorithm::ES256, None, &claims, &signing);
        assert_eq!(v.verify(&token), Ok(agent()));
        let token = signed(Algorithm::ES256, Some("other"), &claims, &signing);
        assert_eq!(
            v.verify(&token),
            Err(AuthError::UnknownKey("other".to_owned()))
        );
        // Signed by another key pair under the same kid.
        let stranger = EncodingKey::from_ec_der(&es256_key().pkcs8);
        let token = signed(Algorithm::ES256, Some("test-ec"), &claims, &stranger);
        assert_eq!(v.verify(&token), Err(AuthError::BadSignature));
        let token = signed(
            Algorithm::ES256,
            Some("test-ec"),
            &claims_for(&settings, now() - 600),
            &signing,
        );
        assert_eq!(v.verify(&token), Err(AuthError::Expired));
    }

    #[test]
    fn replaced_keys_take_over_and_an_unusable_set_changes_nothing() {
        let mut settings = jwt_settings();
        settings.hs256_secret.clear();
        let (old, new) = (es256_key(), es256_key());
        let v = Verifier::new(&settings, Some(&old.jwks)).expect("verifier");
        let claims = claims_for(&settings, now() + 600);
        let old_token = signed(
            Algorithm::ES256,
            Some("test-ec"),
            &claims,
            &EncodingKey::from_ec_der(&old.pkcs8),
        );
        let mut rotated = new.jwks.clone();
        rotated.keys[0].common.key_id = Some("rotated".to_owned());
        let new_token = signed(
            Algorithm::ES256,
            Some("rotated"),
            &claims,
            &EncodingKey::from_ec_der(&new.pkcs8),
        );
        assert_eq!(
            v.verify(&new_token),
            Err(AuthError::UnknownKey("rotated".to_owned()))
        );
        assert_eq!(v.replace_keys(&rotated), Ok(1));
        assert_eq!(v.verify(&new_token), Ok(agent()));
        assert_eq!(
            v.verify(&old_token),
            Err(AuthError::UnknownKey("test-ec".to_owned()))
        );
        let empty: JwkSet = serde_json::from_str(r#"{"keys": []}"#).expect("empty set");
        assert!(matches!(v.replace_keys(&empty), Err(AuthError::Jwks(_))));
        assert_eq!(v.verify(&new_token), Ok(agent()), "the keys held stay");
    }

    /// The RS256 pair in tests/keys was made once with openssl (`openssl genrsa 2048`, the
    /// private key as PKCS#1 DER, the public half as a JWKS): ring cannot generate RSA keys.
    #[test]
    fn rs256_tokens_verify_against_a_jwks_file() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/keys");
        let jwks = load_jwks(&dir.join("rsa-public.jwks.json")).expect("jwks");
        let der = std::fs::read(dir.join("rsa-private.der")).expect("private key");
        let mut settings = jwt_settings();
        settings.hs256_secret.clear();
        let v = Verifier::new(&settings, Some(&jwks)).expect("verifier");
        let signing = EncodingKey::from_rsa_der(&der);
        let claims = claims_for(&settings, now() + 600);
        let token = signed(Algorithm::RS256, Some("test-rsa"), &claims, &signing);
        assert_eq!(v.verify(&token), Ok(agent()));
        // An ES256 token finds no ES256 key in an RSA-only set.
        let es = EncodingKey::from_ec_der(&es256_key().pkcs8);
        let token = signed(Algorithm::ES256, Some("test-rsa"), &claims, &es);
        assert_eq!(
            v.verify(&token),
            Err(AuthError::UnknownKey("test-rsa".to_owned()))
        );
        let mut wrong_aud = claims.clone();
        wrong_aud["aud"] = Value::from("elsewhere");
        let token = signed(Algorithm::RS256, Some("test-rsa"), &wrong_aud, &signing);
        assert_eq!(v.verify(&token), Err(AuthError::WrongAudience));
        assert!(matches!(
            load_jwks(&dir.join("absent.json")),
            Err(AuthError::Jwks(_))
        ));
        let empty: JwkSet = serde_json::from_str(r#"{"keys": []}"#).expect("empty set");
        assert!(matches!(
            Verifier::new(&settings, Some(&empty)),
            Err(AuthError::Jwks(_))
        ));
    }
}
