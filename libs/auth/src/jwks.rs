//! The JWKS as bytes become keys: parsing a set, and the rate limit on fetching it again when a
//! token names a key the verifier does not hold. The fetching itself (IO) is the runtime's.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;

use crate::error::AuthError;

/// The shortest time between two fetches a token naming an unknown `kid` may trigger: a flood
/// of tokens with made-up `kid`s costs the identity provider at most one request per interval.
pub const UNKNOWN_KID_REFETCH: Duration = Duration::from_secs(30);

/// Parses a JWKS (`{"keys": [...]}`); `source` names where it came from in the error.
pub fn parse_jwks(bytes: &[u8], source: &str) -> Result<JwkSet, AuthError> {
    serde_json::from_slice(bytes).map_err(|err| AuthError::Jwks(format!("parse {source}: {err}")))
}

/// Lets one event through per interval: the first at once, then none until `every` has passed
/// since the last one let through.
#[derive(Debug)]
pub struct RefreshGate {
    every: Duration,
    last: Mutex<Option<Instant>>,
}

impl RefreshGate {
    /// A gate letting one event through per `every`.
    pub fn new(every: Duration) -> Self {
        Self {
            every,
            last: Mutex::new(None),
        }
    }

    /// Whether an event at `now` may pass; if so, it counts as the last one.
    pub fn try_pass(&self, now: Instant) -> bool {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let open = match *last {
            None => true,
            Some(then) => now.saturating_duration_since(then) >= self.every,
        };
        if open {
            *last = Some(now);
        }
        open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_lets_one_through_per_interval() {
        let gate = RefreshGate::new(Duration::from_secs(30));
        let start = Instant::now();
        assert!(gate.try_pass(start), "the first passes");
        assert!(!gate.try_pass(start));
        assert!(!gate.try_pass(start + Duration::from_secs(29)));
        assert!(gate.try_pass(start + Duration::from_secs(30)));
        // Refused attempts do not push the next opening back.
        assert!(!gate.try_pass(start + Duration::from_secs(45)));
        assert!(gate.try_pass(start + Duration::from_secs(60)));
        // A clock read before the last pass (another thread's) is simply refused.
        assert!(!gate.try_pass(start));
    }

    #[test]
    fn a_set_parses_or_names_its_source() {
        let set = parse_jwks(
            br#"{"keys":[{"kty":"EC","crv":"P-256","kid":"a","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#,
            "test",
        )
        .expect("a set");
        assert_eq!(set.keys.len(), 1);
        assert_eq!(set.keys[0].common.key_id.as_deref(), Some("a"));
        let err = parse_jwks(b"<html>", "https://idp.test/jwks").expect_err("not JSON");
        assert!(
            matches!(&err, AuthError::Jwks(text) if text.contains("https://idp.test/jwks")),
            "{err}"
        );
        assert!(parse_jwks(br#"{"kid":"a"}"#, "test").is_err(), "no keys");
    }
}
