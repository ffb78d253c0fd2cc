//! The JSON-RPC 2.0 envelope of the A2A JSON-RPC binding.

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

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
        let value: Value =
            serde_json::from_slice(body).map_err(|e| (Value::Null, invalid_json(e)))?;
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

/// The error of a body (or params) that is not JSON.
fn invalid_json(e: serde_json::Error) -> A2AError {
    A2AError::ParseError(format!("Invalid JSON: {e}"))
}

/// A JSON-RPC request as [`Call::parse`] reads it: the envelope checked as [`Request::parse`]
/// checks it, and the params left as the text they were sent as, so that an operation's params
/// are parsed once, straight into their type. Building them as a [`Value`] first, and the
/// request from that, cost a blocking echo about 8,000 more of its ≈ 250,000 instructions.
#[derive(Debug)]
pub struct Call<'a> {
    /// The request id (string, number or null), echoed in the response.
    pub id: Value,
    /// The method name as sent.
    pub method: Cow<'a, str>,
    /// The params object.
    pub params: Params<'a>,
}

/// The params object of a [`Call`].
#[derive(Debug)]
pub enum Params<'a> {
    /// As sent: one JSON object.
    Text(&'a RawValue),
    /// Already a value: `{}` for absent or null params, or what [`Request::parse`] read when
    /// the envelope needed its full reading.
    Parsed(Value),
}

impl Params<'_> {
    /// The params as a JSON value, for an edge that rewrites them. Only nesting deeper than
    /// serde_json's limit (128), which the text's reading does not look at, fails, as it fails
    /// [`Request::parse`].
    pub fn into_value(self) -> Result<Value, A2AError> {
        match self {
            Self::Parsed(value) => Ok(value),
            Self::Text(text) => serde_json::from_str(text.get()).map_err(invalid_json),
        }
    }
}

impl<'a> Call<'a> {
    /// Reads the envelope of `body`, with the same answers as [`Request::parse`]: a well-formed
    /// request (an object with `"jsonrpc": "2.0"`, an id of the allowed kinds, a non-empty
    /// method, object or absent params, each member once) is read without parsing its params;
    /// anything else goes through [`Request::parse`], which says what is wrong, or reads what a
    /// plain typed reading refuses but JSON allows (a member given twice: the last counts).
    pub fn parse(body: &'a [u8]) -> Result<Self, (Value, A2AError)> {
        if let Some(call) = Self::well_formed(body) {
            return Ok(call);
        }
        let Request { id, method, params } = Request::parse(body)?;
        Ok(Self {
            id,
            method: Cow::Owned(method),
            params: Params::Parsed(params),
        })
    }

    /// `body` as a call, if it is a well-formed one ([`Call::parse`]).
    fn well_formed(body: &'a [u8]) -> Option<Self> {
        #[derive(serde::Deserialize)]
        struct Envelope<'a> {
            #[serde(borrow)]
            jsonrpc: Option<Cow<'a, str>>,
            id: Option<Value>,
            #[serde(borrow)]
            method: Option<Cow<'a, str>>,
            #[serde(borrow)]
            params: Option<&'a RawValue>,
        }
        // A typed reading also takes an array as the struct's members in order: only an
        // object is a request (an array is a batch, which `Request::parse` refuses).
        if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return None;
        }
        let envelope: Envelope<'a> = serde_json::from_slice(body).ok()?;
        let id = envelope.id.unwrap_or(Value::Null);
        let method = envelope.method.filter(|m| !m.is_empty())?;
        let well_formed = matches!(id, Value::String(_) | Value::Number(_) | Value::Null)
            && envelope.jsonrpc.as_deref() == Some("2.0");
        let params = match envelope.params {
            None => Params::Parsed(Value::Object(Map::new())),
            Some(text) if text.get().starts_with('{') => Params::Text(text),
            Some(_) => return None,
        };
        well_formed.then_some(Self { id, method, params })
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

    /// A well-formed call's params stay text; whatever else JSON allows reads as
    /// `Request::parse` reads it, and every refusal is the same.
    #[test]
    fn a_call_is_read_as_the_full_reading_reads_it() {
        let call = Call::parse(
            b" \n{\"params\":{\"id\":\"t\"},\"method\":\"Get\\u0054ask\",\"id\":\"7\",\"jsonrpc\":\"2.0\"}",
        )
        .unwrap();
        assert_eq!((call.id, call.method.as_ref()), (json!("7"), "GetTask"));
        assert!(matches!(call.params, Params::Text(t) if t.get() == r#"{"id":"t"}"#));
        for absent in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"GetTask"}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":null}"#,
        ] {
            let call = Call::parse(absent).unwrap();
            assert_eq!(call.params.into_value().unwrap(), json!({}));
        }
        // A member given twice: JSON allows it, the last counts, as it always did.
        let twice = br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"GetTask","params":{"id":"a"}}"#;
        let call = Call::parse(twice).unwrap();
        assert_eq!(call.id, json!(2));
        assert_eq!(call.params.into_value().unwrap(), json!({"id": "a"}));
        for bad in [
            &b"{"[..],
            b"[]",
            br#"["2.0", 1, "GetTask", {}]"#,
            br#"{"jsonrpc":"1.0","id":"7","method":"GetTask"}"#,
            br#"{"jsonrpc":"2.0","id":true,"method":"GetTask"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":""}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"GetTask"} x"#,
        ] {
            let (id, error) = Call::parse(bad).unwrap_err();
            let (want_id, want) = Request::parse(bad).unwrap_err();
            assert_eq!((id, error.to_string()), (want_id, want.to_string()));
        }
    }
}
