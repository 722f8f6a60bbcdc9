//! Dashboard sessions: a reviewer signs in once with a bearer token and gets a random session id
//! (in an HttpOnly, SameSite=Strict cookie) mapped here, in memory, to the token's [`Identity`],
//! with a CSRF token every state change must echo. A session ends when its token would have
//! expired (never later), after [`MAX_SESSION_SECS`], or on sign-out; at most [`MAX_SESSIONS`]
//! live at once. Sessions do not outlive the process: a restart signs everyone out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ontoloop_auth::Identity;

/// Sessions held at once; past it, expired ones are dropped and then the one ending soonest.
pub const MAX_SESSIONS: usize = 1024;

/// The longest a session lives, however long its token does.
pub const MAX_SESSION_SECS: u64 = 8 * 3600;

/// A signed-in reviewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Who signed in: tenant and principal come from here, never from a request.
    pub identity: Identity,
    /// The token state-changing requests must send in `x-csrf-token`.
    pub csrf: String,
    /// When the session ends, seconds since the epoch.
    pub expires_at: u64,
}

/// The live sessions by id.
#[derive(Clone, Default)]
pub struct Sessions {
    live: Arc<Mutex<HashMap<String, Session>>>,
}

impl Sessions {
    /// Opens a session for `identity` whose token expires at `token_exp`; its id and the session.
    /// `None` when the token has already expired.
    pub fn open(&self, identity: Identity, token_exp: u64, now: u64) -> Option<(String, Session)> {
        let expires_at = token_exp.min(now.saturating_add(MAX_SESSION_SECS));
        if expires_at <= now {
            return None;
        }
        let id = random_token();
        let session = Session {
            identity,
            csrf: random_token(),
            expires_at,
        };
        let mut live = self.lock();
        if live.len() >= MAX_SESSIONS {
            live.retain(|_, s| s.expires_at > now);
        }
        if live.len() >= MAX_SESSIONS
            && let Some(soonest) = live
                .iter()
                .min_by_key(|(_, s)| s.expires_at)
                .map(|(id, _)| id.clone())
        {
            live.remove(&soonest);
        }
        live.insert(id.clone(), session.clone());
        Some((id, session))
    }

    /// The live session `id` names (an expired one is dropped and is none).
    pub fn get(&self, id: &str, now: u64) -> Option<Session> {
        let mut live = self.lock();
        match live.get(id) {
            Some(session) if session.expires_at > now => Some(session.clone()),
            Some(_) => {
                live.remove(id);
                None
            }
            None => None,
        }
    }

    /// Ends session `id`; whether there was one.
    pub fn close(&self, id: &str) -> bool {
        self.lock().remove(id).is_some()
    }

    /// How many sessions are held (expired ones not yet dropped included).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        // A panic while holding the map cannot leave it half-changed: every change is one call.
        self.live
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// 32 bytes from the thread's CSPRNG (ChaCha, seeded by the OS), as hex.
fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `given` equals `expected`, in time that depends only on their lengths.
pub fn same_secret(given: &str, expected: &str) -> bool {
    let (given, expected) = (given.as_bytes(), expected.as_bytes());
    if given.len() != expected.len() {
        return false;
    }
    given
        .iter()
        .zip(expected)
        .fold(0u8, |diff, (a, b)| diff | (a ^ b))
        == 0
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use ontoloop_auth::Role;

    use super::*;

    fn reviewer(principal: &str) -> Identity {
        Identity {
            tenant: "acme".to_owned(),
            principal: principal.to_owned(),
            groups: Vec::new(),
            roles: BTreeSet::from([Role::Reviewer]),
        }
    }

    #[test]
    fn a_session_ends_no_later_than_its_token() {
        let sessions = Sessions::default();
        let (id, session) = sessions
            .open(reviewer("alice"), 1_100, 1_000)
            .expect("open");
        assert_eq!(session.expires_at, 1_100);
        assert_eq!(id.len(), 64);
        assert_ne!(id, session.csrf);
        assert_eq!(sessions.get(&id, 1_099), Some(session));
        assert_eq!(sessions.get(&id, 1_100), None);
        assert!(
            sessions.is_empty(),
            "an expired session is dropped when seen"
        );
        assert!(sessions.open(reviewer("bob"), 1_000, 1_000).is_none());
        let (_, long) = sessions
            .open(reviewer("carol"), u64::MAX, 1_000)
            .expect("open");
        assert_eq!(long.expires_at, 1_000 + MAX_SESSION_SECS);
    }

    #[test]
    fn sign_out_ends_the_session_and_the_count_is_bounded() {
        let sessions = Sessions::default();
        let (id, _) = sessions
            .open(reviewer("alice"), 2_000, 1_000)
            .expect("open");
        assert!(sessions.close(&id));
        assert!(!sessions.close(&id));
        assert_eq!(sessions.get(&id, 1_001), None);
        let (first, _) = sessions
            .open(reviewer("first"), 1_500, 1_000)
            .expect("open");
        for n in 0..MAX_SESSIONS + 10 {
            sessions
                .open(reviewer(&format!("r{n}")), 5_000, 1_000)
                .expect("open");
        }
        assert_eq!(sessions.len(), MAX_SESSIONS);
        assert_eq!(
            sessions.get(&first, 1_001),
            None,
            "the session ending soonest made room"
        );
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abd", "abc"));
        assert!(!same_secret("ab", "abc"));
        assert!(!same_secret("", "abc"));
    }
}
