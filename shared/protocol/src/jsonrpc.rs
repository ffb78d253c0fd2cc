//! The JSON-RPC 2.0 envelope of the A2A JSON-RPC binding.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::error::A2AError;

/// A parsed JSON-RPC request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request id (string, number or null), echoed in the response.
    pub id: Value,
    /// The method name as sent.
    pub method: String,
    /// The params object (`{}` when absent).
    pub params: Value,
}

impl Request {
    /// Validates the envelope. On error, returns the id to answer with (null when unknown).
    pub fn parse(body: &[u8]) -> Result<Self, (Value, A2AError)> {
        let value: Value = serde_json::from_slice(body).map_err(|e| {
            (
                Value::Null,
                A2AError::ParseError(format!("Invalid JSON: {e}")),
            )
        })?;
        Self::from_value(value)
    }

    /// Validates an already-parsed envelope.
    pub fn from_value(value: Value) -> Result<Self, (Value, A2AError)> {
        let Value::Object(mut obj) = value else {
            let msg = if value.is_array() {
                "Batch requests are not supported"
            } else {
                "A JSON-RPC request must be an object"
            };
            return Err((Value::Null, A2AError::InvalidRequest(msg.into())));
        };
        let id = obj.remove("id").unwrap_or(Value::Null);
        let id_ok = matches!(id, Value::String(_) | Value::Number(_) | Value::Null);
        if !id_ok {
            return Err((
                Value::Null,
                A2AError::InvalidRequest("id must be a string, a number or null".into()),
            ));
        }
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err((
                id,
                A2AError::InvalidRequest("jsonrpc must be exactly \"2.0\"".into()),
            ));
        }
        let method = match obj.remove("method") {
            Some(Value::String(m)) if !m.is_empty() => m,
            _ => {
                return Err((
                    id,
                    A2AError::InvalidRequest("method must be a non-empty string".into()),
                ))
            }
        };
        let params = match obj.remove("params") {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(p @ Value::Object(_)) => p,
            Some(_) => {
                return Err((
                    id,
                    A2AError::InvalidParams("params must be an object".into()),
                ))
            }
        };
        Ok(Self { id, method, params })
    }
}

/// A success response.
pub fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A success response around an already serialised `result`, serialised: the same document as
/// [`success`] (members in the same order), without building the result as a [`Value`].
pub fn success_text(id: &Value, result: &RawValue) -> String {
    #[derive(serde::Serialize)]
    struct Success<'a> {
        id: &'a Value,
        jsonrpc: &'static str,
        result: &'a RawValue,
    }
    // Serialising an id (a string, number or null) and raw JSON cannot fail.
    serde_json::to_string(&Success {
        id,
        jsonrpc: "2.0",
        result,
    })
    .unwrap_or_default()
}

/// An error response.
pub fn failure(id: &Value, error: &A2AError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_json_rpc_error()})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_errors_are_precise() {
        assert_eq!(Request::parse(b"{").unwrap_err().1.json_rpc_code(), -32700);
        assert_eq!(Request::parse(b"[]").unwrap_err().1.json_rpc_code(), -32600);
        let (id, err) =
            Request::parse(br#"{"jsonrpc":"1.0","id":"7","method":"GetTask"}"#).unwrap_err();
        assert_eq!((id, err.json_rpc_code()), (json!("7"), -32600));
        let (_, err) =
            Request::parse(br#"{"jsonrpc":"2.0","id":true,"method":"GetTask"}"#).unwrap_err();
        assert_eq!(err.json_rpc_code(), -32600);
        let (_, err) =
            Request::parse(br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}"#)
                .unwrap_err();
        assert_eq!(err.json_rpc_code(), -32602);
        let ok = Request::parse(br#"{"jsonrpc":"2.0","id":1,"method":"GetTask"}"#).unwrap();
        assert_eq!(ok.params, json!({}));
    }
}
