//! Old requests as the 1.0 request object of the same operation.
//!
//! Every function takes the old `params` (JSON-RPC) or body (REST) and returns the 1.0 JSON the
//! operation decodes, so the 1.0 validation applies unchanged; a shape that cannot be translated
//! is `InvalidParams` naming the field in the old version's terms.

use serde_json::{json, Map, Value};

use super::outbound::DATA_PART_COMPAT;
use crate::error::A2AError;

/// The longest task id a client may choose (the early protocol's `tasks/send`).
pub const MAX_CLIENT_TASK_ID_LEN: usize = 128;

/// Ids a client may not choose because a REST path naming the task would reach something
/// else: the early protocol's method-named paths (`/tasks/send`, `/tasks/get`, …, served as
/// static routes, which win over `/tasks/{id}`), and the dot segments that URL libraries
/// resolve away (`/tasks/..` becomes `/`). Refused whether or not the early paths are served, so
/// that an id accepted once stays reachable whatever the configuration.
pub const RESERVED_CLIENT_TASK_IDS: [&str; 9] = [
    "send",
    "get",
    "cancel",
    "sendSubscribe",
    "resubscribe",
    "stream",
    "pushNotification",
    ".",
    "..",
];

/// Checks a task id chosen by a client: 1 to 128 characters out of letters, digits, `-`, `_`
/// and `.`. No `:` (REST routes split `{id}:cancel` on it), no `/`, and none of
/// [`RESERVED_CLIENT_TASK_IDS`].
pub fn validate_client_task_id(id: &str) -> Result<(), A2AError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_CLIENT_TASK_ID_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        return Err(A2AError::invalid_params(format!(
            "Task id {id:?} is not accepted: use 1 to {MAX_CLIENT_TASK_ID_LEN} letters, digits, \
             '-', '_' or '.' (a UUID is best)"
        )));
    }
    if RESERVED_CLIENT_TASK_IDS.contains(&id) {
        return Err(A2AError::invalid_params(format!(
            "Task id {id:?} is not accepted: GET /tasks/{id} names a route of this server, not \
             a task, so the task could not be read back; choose another id (a UUID is best)"
        )));
    }
    Ok(())
}

fn object(value: Value, field: &str) -> Result<Map<String, Value>, A2AError> {
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        _ => Err(A2AError::invalid_params(format!(
            "{field} must be an object"
        ))),
    }
}

fn role(value: Option<Value>, field: &str) -> Result<Value, A2AError> {
    match value.as_ref().and_then(Value::as_str) {
        Some("user" | "ROLE_USER") => Ok("ROLE_USER".into()),
        Some("agent" | "ROLE_AGENT") => Ok("ROLE_AGENT".into()),
        _ => Err(A2AError::invalid_params(format!(
            "{field}.role must be \"user\" or \"agent\""
        ))),
    }
}

/// An old part: 0.3's `{kind, …}`, the early `{type, …}`, or the 0.3 proto's
/// `{text}|{file{fileWithUri|fileWithBytes}}|{data{data}}`.
pub fn part(value: Value, field: &str) -> Result<Value, A2AError> {
    let mut p = object(value, field)?;
    let tag = match p.remove("kind").or_else(|| p.remove("type")) {
        Some(Value::String(tag)) => Some(tag),
        None | Some(Value::Null) => None,
        Some(_) => {
            return Err(A2AError::invalid_params(format!(
                "{field}.kind must be a string: text, file or data"
            )))
        }
    };
    // The 0.3 proto's parts carry no tag: only they nest a data part's Struct.
    let proto = tag.is_none();
    let tag = tag.or_else(|| {
        ["text", "file", "data"]
            .into_iter()
            .find(|k| p.contains_key(*k))
            .map(str::to_owned)
    });
    let mut out = Map::new();
    let mut metadata = p.remove("metadata").filter(|m| !m.is_null());
    match tag.as_deref() {
        Some("text") => {
            let text = p.remove("text").filter(Value::is_string).ok_or_else(|| {
                A2AError::invalid_params(format!("{field}.text must be a string"))
            })?;
            out.insert("text".into(), text);
        }
        Some("file") => {
            let mut file = object(
                p.remove("file").unwrap_or_default(),
                &format!("{field}.file"),
            )?;
            if let Some(bytes) = file
                .remove("bytes")
                .or_else(|| file.remove("fileWithBytes"))
            {
                out.insert("raw".into(), bytes);
            } else if let Some(uri) = file.remove("uri").or_else(|| file.remove("fileWithUri")) {
                out.insert("url".into(), uri);
            } else {
                return Err(A2AError::invalid_params(format!(
                    "{field}.file needs bytes or uri"
                )));
            }
            if let Some(m) = file.remove("mimeType").filter(|v| !v.is_null()) {
                out.insert("mediaType".into(), m);
            }
            if let Some(n) = file.remove("name").filter(|v| !v.is_null()) {
                out.insert("filename".into(), n);
            }
        }
        Some("data") => {
            let mut data = p.remove("data").unwrap_or_default();
            // The 0.3 proto nests the Struct: `{"data": {"data": {…}}}`.
            if proto && tag_is_proto_data(&data) {
                data = data.get("data").cloned().unwrap_or_default();
            }
            // A non-object value the 0.3 compat layer wrapped as `{"value": x}`.
            let wrapped = metadata
                .as_mut()
                .and_then(Value::as_object_mut)
                .and_then(|m| m.remove(DATA_PART_COMPAT))
                .is_some_and(|v| v == Value::Bool(true));
            if wrapped {
                data = data.get("value").cloned().unwrap_or_default();
            }
            if metadata
                .as_ref()
                .and_then(Value::as_object)
                .is_some_and(Map::is_empty)
            {
                metadata = None;
            }
            out.insert("data".into(), data);
        }
        other => {
            return Err(A2AError::invalid_params(format!(
                "{field} has an unknown kind {other:?}: expected text, file or data"
            )))
        }
    }
    if let Some(m) = metadata {
        out.insert("metadata".into(), m);
    }
    Ok(Value::Object(out))
}

/// Whether `data` is the 0.3 proto's DataPart wrapper `{"data": {…}}` and nothing else.
fn tag_is_proto_data(data: &Value) -> bool {
    data.as_object()
        .is_some_and(|o| o.len() == 1 && o.get("data").is_some_and(Value::is_object))
}

/// The one `content` of a python-a2a message (its own, non-"Google" shape) as an early part:
/// `{type: "text", text}` already is one; function calls, their results and errors become data
/// parts the way python-a2a itself writes them in its "Google A2A" mode, so that it reads them
/// back the same.
fn python_a2a_part(mut content: Map<String, Value>) -> Value {
    let kind = content
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut take = |key: &str| content.remove(key).unwrap_or_default();
    let data = match kind.as_str() {
        "function_call" => {
            json!({"function_call": {"name": take("name"), "parameters": take("parameters")}})
        }
        "function_response" => {
            json!({"function_response": {"name": take("name"), "response": take("response")}})
        }
        "error" => json!({"error": take("message")}),
        // Text, or a kind the part translation names in its error.
        _ => return Value::Object(content),
    };
    json!({"type": "data", "data": data})
}

/// An old message (0.3 JSON-RPC, 0.3 proto with `content`, early, or python-a2a's own with one
/// `content` object). A message without
/// `messageId` (the early protocol has none) gets `new_message_id`.
pub fn message(value: Value, field: &str, new_message_id: &str) -> Result<Value, A2AError> {
    let mut m = object(value, field)?;
    match m.remove("kind") {
        None | Some(Value::Null) => {}
        Some(kind) if kind == "message" => {}
        Some(_) => {
            return Err(A2AError::invalid_params(format!(
                "{field}.kind must be \"message\""
            )))
        }
    }
    let role = role(m.remove("role"), field)?;
    m.insert("role".into(), role);
    // `parts` is an array in every version; only python-a2a's `content` may be one object.
    let parts = match m.remove("parts") {
        Some(parts) => parts,
        None => match m.remove("content") {
            // python-a2a's own shape: one `content` object and a snake_case `message_id`.
            Some(Value::Object(content)) => {
                if let Some(id) = m.remove("message_id").filter(|id| !id.is_null()) {
                    m.entry("messageId").or_insert(id);
                }
                // Its message threading has no A2A counterpart (the task and session carry it).
                m.remove("parent_message_id");
                m.remove("conversation_id");
                Value::Array(vec![python_a2a_part(content)])
            }
            other => other.unwrap_or_default(),
        },
    };
    let Value::Array(parts) = parts else {
        return Err(A2AError::invalid_params(format!(
            "{field}.parts must be an array"
        )));
    };
    let parts = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| part(p, &format!("{field}.parts[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    m.insert("parts".into(), Value::Array(parts));
    if m.get("messageId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .is_empty()
    {
        m.insert("messageId".into(), new_message_id.into());
    }
    Ok(Value::Object(m))
}

/// An old `PushNotificationConfig` (`{id?, url, token?, authentication?{schemes[],
/// credentials?}}`) as the flat 1.0 config of task `task_id`.
pub fn push_config(value: Value, task_id: Value, field: &str) -> Result<Value, A2AError> {
    let mut c = object(value, field)?;
    let mut out = Map::new();
    out.insert("taskId".into(), task_id);
    for key in ["id", "url", "token"] {
        if let Some(v) = c.remove(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), v);
        }
    }
    if let Some(auth) = c.remove("authentication").filter(|v| !v.is_null()) {
        let mut a = object(auth, &format!("{field}.authentication"))?;
        let scheme = match a.remove("schemes") {
            Some(Value::Array(schemes)) => schemes.into_iter().next(),
            None | Some(Value::Null) => a.remove("scheme"),
            Some(_) => {
                return Err(A2AError::invalid_params(format!(
                    "{field}.authentication.schemes must be an array"
                )))
            }
        }
        .filter(|v| !v.is_null());
        let credentials = a.remove("credentials").filter(|v| !v.is_null());
        // An empty `authentication` (no scheme, no credentials) is the proto3 default of an
        // unset message, which 0.3 REST clients send for "none": it asks for no header.
        if scheme.is_some() || credentials.is_some() {
            let mut auth = json!({ "scheme": scheme.unwrap_or_default() });
            if let Some(credentials) = credentials {
                auth["credentials"] = credentials;
            }
            out.insert("authentication".into(), auth);
        }
    }
    Ok(Value::Object(out))
}

/// 0.3 `MessageSendConfiguration` (JSON-RPC `pushNotificationConfig`, proto
/// `pushNotification`) as the 1.0 `SendMessageConfiguration`. On JSON-RPC a missing `blocking`
/// blocks, as in 1.0; in the proto (`proto`) a configuration without `blocking` is the proto3
/// default `false`, which the 0.3 SDKs rely on (they omit `blocking: false` when serialising).
fn configuration(value: Value, proto: bool) -> Result<Value, A2AError> {
    let push_key = if proto {
        "pushNotification"
    } else {
        "pushNotificationConfig"
    };
    let mut c = object(value, "configuration")?;
    let mut out = Map::new();
    for key in ["acceptedOutputModes", "historyLength"] {
        if let Some(v) = c.remove(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), v);
        }
    }
    if let Some(push) = c.remove(push_key).filter(|v| !v.is_null()) {
        let field = format!("configuration.{push_key}");
        out.insert(
            "taskPushNotificationConfig".into(),
            push_config(push, Value::Null, &field)?,
        );
    }
    let blocking = match c.remove("blocking") {
        Some(Value::Bool(b)) => b,
        None | Some(Value::Null) => !proto,
        Some(_) => {
            return Err(A2AError::invalid_params(
                "configuration.blocking must be a boolean",
            ))
        }
    };
    if !blocking {
        out.insert("returnImmediately".into(), Value::Bool(true));
    }
    Ok(Value::Object(out))
}

fn strip_null_task_id(request: &mut Value) {
    if let Some(cfg) = request
        .get_mut("configuration")
        .and_then(|c| c.get_mut("taskPushNotificationConfig"))
        .and_then(Value::as_object_mut)
    {
        cfg.remove("taskId");
    }
}

/// The 0.3 proto's field names in lowerCamelCase: a ProtoJSON parser accepts the original
/// (snake_case) proto names too (`message_id`, `push_notification`, `file_with_uri`, …).
/// `metadata` and `data` hold free-form JSON and are left as they are.
pub fn proto_camel_case(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, v)| {
                    let v = if key == "metadata" || key == "data" {
                        v
                    } else {
                        proto_camel_case(v)
                    };
                    (camel(&key), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(proto_camel_case).collect()),
        other => other,
    }
}

fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' && !out.is_empty() {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// 0.3 `message/send` / `message/stream` params (`MessageSendParams`), or the 0.3 proto's
/// `SendMessageRequest` body when `proto` is set (snake_case names accepted), as the 1.0
/// `SendMessageRequest`.
pub fn send_message(params: Value, proto: bool, new_message_id: &str) -> Result<Value, A2AError> {
    let params = if proto {
        proto_camel_case(params)
    } else {
        params
    };
    let mut p = object(params, "params")?;
    let sent = p
        .remove("message")
        .or_else(|| p.remove("request"))
        .ok_or_else(|| A2AError::invalid_params("params.message is required"))?;
    let mut out = json!({ "message": message(sent, "message", new_message_id)? });
    if let Some(cfg) = p.remove("configuration").filter(|v| !v.is_null()) {
        out["configuration"] = configuration(cfg, proto)?;
    }
    if let Some(metadata) = p.remove("metadata").filter(|v| !v.is_null()) {
        out["metadata"] = metadata;
    }
    strip_null_task_id(&mut out);
    Ok(out)
}

/// What an early `tasks/send` or `tasks/sendSubscribe` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct EarlySend {
    /// The 1.0 `SendMessageRequest`.
    pub request: Value,
    /// The task id the client chose (`id`), validated.
    pub task_id: Option<String>,
}

/// Early `TaskSendParams` (`{id, sessionId?, message, acceptedOutputModes?, pushNotification?,
/// historyLength?, metadata?}`): `sessionId` becomes the message's `contextId`, `id` the task id
/// the client chose.
pub fn early_send(params: Value, new_message_id: &str) -> Result<EarlySend, A2AError> {
    let mut p = object(params, "params")?;
    let task_id = match p.remove("id") {
        Some(Value::String(id)) => {
            validate_client_task_id(&id)?;
            Some(id)
        }
        None | Some(Value::Null) => None,
        Some(_) => return Err(A2AError::invalid_params("params.id must be a string")),
    };
    let message_value = p
        .remove("message")
        .ok_or_else(|| A2AError::invalid_params("params.message is required"))?;
    let mut message = message(message_value, "message", new_message_id)?;
    // The task travels as the chosen id, not as the 1.0 `taskId` (which must exist).
    if let Some(m) = message.as_object_mut() {
        m.remove("taskId");
        if let Some(session) = p.remove("sessionId").filter(|v| !v.is_null()) {
            m.insert("contextId".into(), session);
        }
    }
    let mut configuration = Map::new();
    for key in ["acceptedOutputModes", "historyLength"] {
        if let Some(v) = p.remove(key).filter(|v| !v.is_null()) {
            configuration.insert(key.into(), v);
        }
    }
    if let Some(push) = p.remove("pushNotification").filter(|v| !v.is_null()) {
        let mut cfg = push_config(push, Value::Null, "params.pushNotification")?;
        if let Some(c) = cfg.as_object_mut() {
            c.remove("taskId");
        }
        configuration.insert("taskPushNotificationConfig".into(), cfg);
    }
    let mut request = json!({ "message": message });
    if !configuration.is_empty() {
        request["configuration"] = Value::Object(configuration);
    }
    if let Some(metadata) = p.remove("metadata").filter(|v| !v.is_null()) {
        request["metadata"] = metadata;
    }
    Ok(EarlySend { request, task_id })
}

/// 0.3 `tasks/pushNotificationConfig/set` params (`{taskId, pushNotificationConfig}`) or the early
/// `tasks/pushNotification/set` params (`{id, pushNotificationConfig}`).
pub fn set_push_config(params: Value) -> Result<Value, A2AError> {
    let mut p = object(params, "params")?;
    let task_id = p
        .remove("taskId")
        .or_else(|| p.remove("id"))
        .filter(Value::is_string)
        .ok_or_else(|| A2AError::invalid_params("params.taskId must be a string"))?;
    let config = p
        .remove("pushNotificationConfig")
        .ok_or_else(|| A2AError::invalid_params("params.pushNotificationConfig is required"))?;
    push_config(config, task_id, "params.pushNotificationConfig")
}

/// The 0.3 proto's `CreateTaskPushNotificationConfigRequest` body (`{parent, configId?,
/// config{name?, pushNotificationConfig}}`, or the bare `TaskPushNotificationConfig`) for the
/// task of the path.
pub fn rest_create_push_config(body: Value, task_id: &str) -> Result<Value, A2AError> {
    let mut b = object(proto_camel_case(body), "body")?;
    let config_id = match b.remove("configId") {
        Some(Value::String(id)) => Some(id),
        None | Some(Value::Null) => None,
        Some(_) => return Err(A2AError::invalid_params("configId must be a string")),
    };
    let mut config = match b.remove("config") {
        Some(c) => object(c, "config")?,
        None => b,
    };
    let inner = config
        .remove("pushNotificationConfig")
        .ok_or_else(|| A2AError::invalid_params("config.pushNotificationConfig is required"))?;
    let mut out = push_config(inner, task_id.into(), "config.pushNotificationConfig")?;
    if let (Some(id), Some(o)) = (config_id, out.as_object_mut()) {
        if !id.is_empty() {
            o.insert("id".into(), id.into());
        }
    }
    Ok(out)
}

/// The task id and config id of a 0.3 `tasks/pushNotificationConfig/{get,delete}` (`{id,
/// pushNotificationConfigId?}`) or early `tasks/pushNotification/get` (`{id}`) call.
pub fn push_config_ref(params: &Value) -> Result<(String, Option<String>), A2AError> {
    let task_id = params
        .get("id")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .ok_or_else(|| A2AError::invalid_params("params.id (the task id) must be a string"))?;
    let config_id = match params.get("pushNotificationConfigId") {
        Some(Value::String(id)) if !id.is_empty() => Some(id.clone()),
        None | Some(Value::Null) | Some(Value::String(_)) => None,
        Some(_) => {
            return Err(A2AError::invalid_params(
                "params.pushNotificationConfigId must be a string",
            ))
        }
    };
    Ok((task_id.to_owned(), config_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::Dialect;

    #[test]
    fn parts_of_every_dialect_become_1_0_parts() {
        let cases = [
            (json!({"kind": "text", "text": "hi"}), json!({"text": "hi"})),
            (json!({"type": "text", "text": "hi"}), json!({"text": "hi"})),
            (json!({"text": "hi"}), json!({"text": "hi"})),
            (
                json!({"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain", "name": "a"}}),
                json!({"raw": "aGk=", "mediaType": "text/plain", "filename": "a"}),
            ),
            (
                json!({"file": {"fileWithUri": "https://x", "mimeType": "image/png"}}),
                json!({"url": "https://x", "mediaType": "image/png"}),
            ),
            (
                json!({"kind": "data", "data": {"k": 1}}),
                json!({"data": {"k": 1}}),
            ),
            (
                json!({"data": {"data": {"k": 1}}}),
                json!({"data": {"k": 1}}),
            ),
            (
                json!({"kind": "data", "data": {"value": [1]}, "metadata": {"data_part_compat": true}}),
                json!({"data": [1]}),
            ),
        ];
        for (old, new) in cases {
            assert_eq!(part(old.clone(), "p").unwrap(), new, "{old}");
        }
        assert!(part(json!({"kind": "video"}), "p").is_err());
        assert!(part(json!({"kind": "file", "file": {}}), "p").is_err());
    }

    #[test]
    fn parts_round_trip_through_each_dialect() {
        let parts = [
            json!({"text": "hi", "metadata": {"a": 1}}),
            json!({"raw": "aGk=", "mediaType": "text/plain", "filename": "a"}),
            json!({"url": "https://x"}),
            json!({"data": {"k": 1}}),
            json!({"data": 5}),
        ];
        for dialect in [
            Dialect::V03,
            Dialect::V03Rest,
            Dialect::Early,
            Dialect::V03AndEarly,
        ] {
            for p in &parts {
                let old = dialect.part(p.clone());
                assert_eq!(&part(old, "p").unwrap(), p, "{dialect:?}");
            }
        }
    }

    #[test]
    fn a_03_send_becomes_a_1_0_send() {
        let params = json!({
            "message": {"kind": "message", "messageId": "m1", "role": "user",
                "parts": [{"kind": "text", "text": "hi"}]},
            "configuration": {"blocking": false, "historyLength": 2, "acceptedOutputModes": ["text/plain"],
                "pushNotificationConfig": {"url": "https://h/x", "token": "t",
                    "authentication": {"schemes": ["Bearer"], "credentials": "c"}}},
            "metadata": {"k": "v"}
        });
        let r = send_message(params, false, "gen").unwrap();
        assert_eq!(
            r,
            json!({
                "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
                "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 2,
                    "returnImmediately": true,
                    "taskPushNotificationConfig": {"url": "https://h/x", "token": "t",
                        "authentication": {"scheme": "Bearer", "credentials": "c"}}},
                "metadata": {"k": "v"}
            })
        );
        // A missing `blocking` blocks, as in 1.0.
        let r = send_message(
            json!({"message": {"role": "user", "parts": []}, "configuration": {}}),
            false,
            "gen",
        )
        .unwrap();
        assert!(r["configuration"].get("returnImmediately").is_none());
        assert_eq!(r["message"]["messageId"], "gen");
        assert!(send_message(
            json!({"message": {"role": "robot", "parts": []}}),
            false,
            "g"
        )
        .is_err());
    }

    #[test]
    fn a_proto_send_reads_content_and_push_notification() {
        let body = json!({
            "message": {"messageId": "m1", "role": "ROLE_USER", "content": [{"text": "hi"}]},
            "configuration": {"blocking": true, "pushNotification": {"url": "https://h/x"}}
        });
        let r = send_message(body, true, "gen").unwrap();
        assert_eq!(r["message"]["parts"], json!([{"text": "hi"}]));
        assert_eq!(
            r["configuration"]["taskPushNotificationConfig"]["url"],
            "https://h/x"
        );
        assert!(r["configuration"].get("returnImmediately").is_none());
    }

    #[test]
    fn a_proto_configuration_without_blocking_is_non_blocking() {
        let msg = json!({"messageId": "m", "role": "ROLE_USER", "content": [{"text": "x"}]});
        let r = send_message(json!({"message": msg, "configuration": {}}), true, "g").unwrap();
        assert_eq!(r["configuration"]["returnImmediately"], true);
        // No configuration at all blocks, as the 0.3 servers do.
        let r = send_message(json!({"message": msg}), true, "g").unwrap();
        assert!(r.get("configuration").is_none());
        let r = send_message(
            json!({"message": msg, "configuration": {"blocking": true}}),
            true,
            "g",
        )
        .unwrap();
        assert!(r["configuration"].get("returnImmediately").is_none());
    }

    #[test]
    fn proto_bodies_may_use_snake_case_names() {
        let body = json!({
            "message": {"message_id": "m1", "context_id": "c1", "role": "ROLE_USER",
                "content": [{"text": "hi"}, {"file": {"file_with_uri": "https://x", "mime_type": "a/b"}},
                    {"data": {"data": {"keep_me": 1}}}],
                "metadata": {"snake_key": 1}},
            "configuration": {"history_length": 2, "accepted_output_modes": ["text/plain"],
                "push_notification": {"url": "https://h"}, "blocking": true}
        });
        let r = send_message(body, true, "g").unwrap();
        assert_eq!(r["message"]["messageId"], "m1");
        assert_eq!(r["message"]["contextId"], "c1");
        assert_eq!(
            r["message"]["parts"][1],
            json!({"url": "https://x", "mediaType": "a/b"})
        );
        assert_eq!(r["message"]["parts"][2], json!({"data": {"keep_me": 1}}));
        assert_eq!(r["message"]["metadata"], json!({"snake_key": 1}));
        assert_eq!(r["configuration"]["historyLength"], 2);
        assert_eq!(
            r["configuration"]["taskPushNotificationConfig"]["url"],
            "https://h"
        );
        let body =
            json!({"config_id": "c", "config": {"push_notification_config": {"url": "https://h"}}});
        assert_eq!(
            rest_create_push_config(body, "t").unwrap(),
            json!({"taskId": "t", "url": "https://h", "id": "c"})
        );
    }

    #[test]
    fn an_early_send_maps_session_and_chosen_id() {
        let params = json!({
            "id": "task-1", "sessionId": "s1", "historyLength": 1,
            "message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]},
            "pushNotification": {"url": "https://h/x", "authentication": {"schemes": ["Bearer"]}}
        });
        let sent = early_send(params, "gen").unwrap();
        assert_eq!(sent.task_id.as_deref(), Some("task-1"));
        assert_eq!(
            sent.request,
            json!({
                "message": {"role": "ROLE_USER", "parts": [{"text": "hi"}], "messageId": "gen",
                    "contextId": "s1"},
                "configuration": {"historyLength": 1, "taskPushNotificationConfig":
                    {"url": "https://h/x", "authentication": {"scheme": "Bearer"}}}
            })
        );
        for bad in ["", "a:b", "a/b", &"x".repeat(129)] {
            let params = json!({"id": bad, "message": {"role": "user", "parts": []}});
            assert!(early_send(params, "g").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn chosen_ids_that_name_a_route_are_refused() {
        for (id, accepted) in [
            ("task-1", true),
            ("a.b", true),
            ("...", true),
            ("Send", true),
            ("send", false),
            ("get", false),
            ("cancel", false),
            ("stream", false),
            ("sendSubscribe", false),
            ("resubscribe", false),
            ("pushNotification", false),
            (".", false),
            ("..", false),
        ] {
            let checked = validate_client_task_id(id);
            assert_eq!(checked.is_ok(), accepted, "{id:?}: {checked:?}");
            if let Err(e) = checked {
                assert_eq!(e.json_rpc_code(), -32602, "{id:?}");
                assert!(e.message().contains("choose another id"), "{e}");
            }
        }
    }

    #[test]
    fn python_a2a_messages_in_its_own_shape_are_read() {
        let params = json!({
            "id": "t1", "sessionId": "s1", "status": {"state": "submitted"},
            "message": {"content": {"type": "text", "text": "hello"}, "role": "user",
                "message_id": "m-1", "parent_message_id": "m-0", "conversation_id": "c-1"}
        });
        let sent = early_send(params, "gen").unwrap();
        assert_eq!(
            sent.request["message"],
            json!({"role": "ROLE_USER", "parts": [{"text": "hello"}], "messageId": "m-1",
                "contextId": "s1"})
        );
        let call = json!({"content": {"type": "function_call", "name": "f",
            "parameters": [{"name": "x", "value": 1}]}, "role": "user"});
        let call = message(call, "message", "gen").unwrap();
        assert_eq!(
            call["parts"],
            json!([{"data": {"function_call": {"name": "f",
                "parameters": [{"name": "x", "value": 1}]}}}])
        );
        assert_eq!(call["messageId"], "gen");
        let unknown = json!({"content": {"type": "video"}, "role": "user"});
        let e = message(unknown, "message", "gen").unwrap_err();
        assert!(e.message().contains("unknown kind"), "{e}");
    }

    #[test]
    fn early_clients_nulls_are_absent_members() {
        let params = json!({
            "id": "t1", "sessionId": "s1",
            "message": {"role": "user", "parts": [{"type": "text", "text": "hi", "metadata": null}],
                "metadata": {"message_id": "x"}},
            "acceptedOutputModes": ["text", "text/plain"],
            "pushNotification": null, "historyLength": null, "metadata": null
        });
        let sent = early_send(params, "gen").unwrap();
        assert_eq!(
            sent.request,
            json!({
                "message": {"role": "ROLE_USER", "parts": [{"text": "hi"}], "metadata": {"message_id": "x"},
                    "messageId": "gen", "contextId": "s1"},
                "configuration": {"acceptedOutputModes": ["text", "text/plain"]}
            })
        );
    }

    #[test]
    fn push_configs_of_both_versions_are_flattened_and_back() {
        let v03 = json!({"taskId": "t1", "pushNotificationConfig": {"id": "p", "url": "https://h",
            "token": "k", "authentication": {"schemes": ["Bearer"], "credentials": "c"}}});
        let flat = set_push_config(v03.clone()).unwrap();
        assert_eq!(
            flat,
            json!({"taskId": "t1", "id": "p", "url": "https://h", "token": "k",
                "authentication": {"scheme": "Bearer", "credentials": "c"}})
        );
        assert_eq!(Dialect::V03.push_config(flat), v03);
        let early = json!({"id": "t1", "pushNotificationConfig": {"url": "https://h"}});
        let flat = set_push_config(early.clone()).unwrap();
        assert_eq!(flat, json!({"taskId": "t1", "url": "https://h"}));
        assert_eq!(Dialect::Early.push_config(flat), early);
        let body = json!({"parent": "tasks/t1", "configId": "p2",
            "config": {"name": "", "pushNotificationConfig": {"url": "https://h"}}});
        assert_eq!(
            rest_create_push_config(body, "t1").unwrap(),
            json!({"taskId": "t1", "url": "https://h", "id": "p2"})
        );
        assert_eq!(
            push_config_ref(&json!({"id": "t1", "pushNotificationConfigId": "p"})).unwrap(),
            ("t1".to_string(), Some("p".to_string()))
        );
    }

    #[test]
    fn an_empty_push_authentication_means_none() {
        for empty in [
            json!({}),
            json!({"schemes": []}),
            json!({"schemes": [], "credentials": null}),
        ] {
            let config = push_config(
                json!({"url": "https://h/x", "authentication": empty}),
                json!("t1"),
                "pushNotificationConfig",
            )
            .unwrap();
            assert_eq!(
                config,
                json!({"taskId": "t1", "url": "https://h/x"}),
                "{empty}"
            );
        }
        // Credentials without a scheme still reach the 1.0 validation, which names the field.
        let config = push_config(
            json!({"url": "https://h/x", "authentication": {"credentials": "c"}}),
            json!("t1"),
            "pushNotificationConfig",
        )
        .unwrap();
        assert_eq!(
            config["authentication"],
            json!({"scheme": null, "credentials": "c"})
        );
    }
}
