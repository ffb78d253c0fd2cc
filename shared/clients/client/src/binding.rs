//! The HTTP bindings of A2A this client speaks.

use a2a_protocol::{BINDING_HTTP_JSON, BINDING_JSONRPC};

/// An HTTP binding of A2A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Binding {
    /// JSON-RPC 2.0 over HTTP POST.
    JsonRpc,
    /// HTTP+JSON (REST).
    HttpJson,
}

impl Binding {
    /// The name in `AgentInterface.protocolBinding`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::JsonRpc => BINDING_JSONRPC,
            Self::HttpJson => BINDING_HTTP_JSON,
        }
    }

    /// The binding of a `protocolBinding` name (case-insensitive), if this client speaks it.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::JsonRpc, Self::HttpJson]
            .into_iter()
            .find(|b| b.as_str().eq_ignore_ascii_case(name))
    }
}
