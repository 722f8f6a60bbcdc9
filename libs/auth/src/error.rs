//! Why a token was not accepted or a key could not be used: the one error type of verifying
//! ([`crate::Verifier`]), issuing and reading a JWKS ([`crate::parse_jwks`]).

/// Why a token was not accepted, or a key could not be used. The texts never quote the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// Not a JWT ontoloop can read (not three parts, bad base64 or JSON).
    #[error("token is malformed: {0}")]
    Malformed(String),
    /// `exp` has passed (beyond the leeway).
    #[error("token has expired")]
    Expired,
    /// `nbf` is still ahead (beyond the leeway).
    #[error("token is not valid yet")]
    NotYetValid,
    /// The signature does not verify with the configured key.
    #[error("token signature does not verify")]
    BadSignature,
    /// `iss` is not the configured issuer.
    #[error("token issuer is not the configured issuer")]
    WrongIssuer,
    /// `aud` does not name the configured audience.
    #[error("token audience is not the configured audience")]
    WrongAudience,
    /// The token's algorithm is not one ontoloop accepts with its keys.
    #[error("token algorithm {0} is not accepted")]
    UnsupportedAlgorithm(String),
    /// No configured key matches the token's `kid` and algorithm.
    #[error("no configured key matches the token (kid {0})")]
    UnknownKey(String),
    /// A claim every token must carry is missing or blank.
    #[error("token lacks the `{0}` claim")]
    MissingClaim(String),
    /// A claim has the wrong shape.
    #[error("token claim `{claim}` is invalid: {reason}")]
    BadClaim {
        /// The claim's name.
        claim: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Issuing needs `auth.hs256_secret`.
    #[error("auth.hs256_secret is not set, so no token can be issued")]
    NoSecret,
    /// The JWKS file could not be read or holds no usable key.
    #[error("jwks: {0}")]
    Jwks(String),
}
