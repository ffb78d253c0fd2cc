//! A2A 1.0 wire types in their ProtoJSON form, the error type shared by every binding, and the
//! JSON-RPC 2.0 envelope.
//!
//! Pure data: nothing here does I/O. Field names follow `specification/a2a.proto` (package
//! `lf.a2a.v1`) in lowerCamelCase; enums are their full proto names; oneofs are wrapper members.
//! Unknown fields are ignored on input, as the spec recommends. Required fields are checked by
//! the `validate` methods so that a missing field gets a message naming it, rather than a serde
//! error about the Rust type.

pub mod bytes;
pub mod card;
pub mod compat;
pub mod error;
pub mod int64;
pub mod jcs;
pub mod jsonrpc;
pub mod lite;
pub mod operation;
pub mod push;
pub mod requests;
pub mod timeline;
pub mod types;
pub mod version;

pub use card::*;
pub use error::{A2AError, ErrorInfo, A2A_ERROR_DOMAIN};
pub use operation::{HttpVerb, Operation, OperationSpec, QueryKind, RestRoute, OPERATIONS};
pub use requests::*;
pub use types::*;
pub use version::ProtocolVersion;

/// The protocol version this crate speaks, as it appears in `A2A-Version` and in the card.
pub const PROTOCOL_VERSION: &str = "1.0";

/// The A2A 1.1 draft (branch `dev-1.1` of the specification), served to clients that ask for it
/// with `A2A-Version: 1.1`: task generations, long-polling GetTask, `ifGenerationMatch`, the task timeline.
pub const PROTOCOL_VERSION_1_1: &str = "1.1";

/// Not an A2A field: the key of a task's metadata that names the trace the task was created in
/// (its trace id, 32 hex digits), which an a2a-lambda agent that exports spans keeps (what
/// `a2a get --trace` prints; docs/tracing.md).
pub const TRACE_ID_METADATA: &str = "x-a2a-lambda-trace-id";
