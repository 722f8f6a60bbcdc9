//! Who is calling and what they may do: bearer-token authentication and roles for every
//! ontoloop gRPC call.
//!
//! Owns the `[auth]` settings section ([`AuthSettings`]: `mode`, the HS256 secret, the JWKS file
//! or URL of RS256/ES256 public keys, `issuer`, `audience`, `leeway_seconds`, and which claims
//! carry the tenant, principal, groups and roles), the verification of a JWT into an
//! [`Identity`] ([`Verifier`], whose keys a fetched JWKS may replace), the rate limit on fetching
//! a JWKS again for an unknown `kid` ([`RefreshGate`]), the four [`Role`]s and which role each
//! RPC needs ([`access`]), and issuing HS256 tokens for operators and tests ([`issue`]), and why
//! a call is refused ([`Denied`]: UNAUTHENTICATED or PERMISSION_DENIED through core's
//! `ServiceError`).
//!
//! It must never do IO beyond reading the JWKS file it is pointed at ([`load_jwks`]; the runtime
//! fetches a JWKS URL and hands the bytes to [`parse_jwks`]), never log or return a token or the
//! secret, never trust a token whose signature, `exp`, `iss` or `aud` failed, and never know
//! tonic: the runtime's gRPC layer turns its answers into statuses.

mod denied;
mod error;
mod jwks;
mod roles;
mod settings;
mod verify;

pub use denied::Denied;
pub use error::AuthError;
/// A JSON Web Key Set (RFC 7517), as the JWKS file holds it.
pub use jsonwebtoken::jwk::JwkSet;
pub use jwks::{RefreshGate, UNKNOWN_KID_REFETCH, parse_jwks};
pub use roles::{Access, Identity, Role, access, rpc_role};
pub use settings::{AuthMode, AuthSettings, ClaimNames, jwks_url_host, origin_host};
pub use verify::{Verifier, issue, load_jwks};
