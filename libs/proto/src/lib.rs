//! ontoloop's wire types: the one crate that compiles `proto/`, and the conversions at the edge.
//!
//! Owns the generated prost messages and tonic services, the encoded file descriptor set for
//! server reflection, and the conversions between wire types and `ontoloop-core` domain types
//! (`TryFrom<proto::X>` with `tonic::Status` as the error), and the codec every generated service
//! and client uses (`codec`: a request that does not decode is `INVALID_ARGUMENT`), and how the
//! replies read as JSON (`json`: the one shape of an answer for the CLI and the MCP tools). Services use
//! this crate at their gRPC edge only; prost types never travel further in.

pub mod codec;
pub mod convert;
pub mod json;

/// Generated code for package `ontoloop.v1`.
#[allow(clippy::all, missing_docs)]
pub mod v1 {
    tonic::include_proto!("ontoloop.v1");
}

/// The encoded descriptor set of every ontoloop proto, for server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("ontoloop_descriptor");

pub use convert::{caller_from, caller_in, require_role, status_from};
