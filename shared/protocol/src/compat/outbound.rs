//! 1.0 results and events written in an older dialect.

use serde_json::{json, Map, Value};

use super::{state_to_kebab, take, Dialect};

/// Metadata key marking a non-object `data` wrapped as `{"value": x}`, the way the official
/// Python SDK's 0.3 compat layer marks it (0.3 data parts hold objects only).
pub const DATA_PART_COMPAT: &str = "data_part_compat";

/// Whether a 1.0 state ends a stream: terminal or interrupted (0.3's `final: true`).
pub fn is_final_state(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
            | "TASK_STATE_INPUT_REQUIRED"
            | "TASK_STATE_AUTH_REQUIRED"
    )
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn map_array(value: Option<Value>, f: impl Fn(Value) -> Value) -> Option<Value> {
    match value {
        Some(Value::Array(items)) => Some(Value::Array(items.into_iter().map(f).collect())),
        other => other,
    }
}

impl Dialect {
    /// A 1.0 `Part` (`{text}|{raw}|{url}|{data}`, `mediaType`, `filename`, `metadata`).
    pub fn part(self, part: Value) -> Value {
        let mut p = object(part);
        let mut out = Map::new();
        let mut metadata = p.remove("metadata");
        let media_type = p.remove("mediaType");
        let filename = p.remove("filename");
        let tag = if let Some(text) = p.remove("text") {
            out.insert("text".into(), text);
            "text"
        } else if let Some(data) = p.remove("data") {
            let data = if data.is_object() {
                data
            } else {
                // Old data parts hold objects only.
                let meta = metadata.get_or_insert_with(|| json!({}));
                if let Some(m) = meta.as_object_mut() {
                    m.insert(DATA_PART_COMPAT.into(), Value::Bool(true));
                }
                json!({ "value": data })
            };
            let data = if self.proto() {
                json!({ "data": data })
            } else {
                data
            };
            out.insert("data".into(), data);
            "data"
        } else {
            let mut file = Map::new();
            let (bytes_key, uri_key) = if self.proto() {
                ("fileWithBytes", "fileWithUri")
            } else {
                ("bytes", "uri")
            };
            if let Some(raw) = p.remove("raw") {
                file.insert(bytes_key.into(), raw);
            } else if let Some(url) = p.remove("url") {
                file.insert(uri_key.into(), url);
            }
            if let Some(m) = media_type {
                file.insert("mimeType".into(), m);
            }
            if let Some(n) = filename {
                file.insert("name".into(), n);
            }
            out.insert("file".into(), Value::Object(file));
            "file"
        };
        if self.kinds() {
            out.insert("kind".into(), tag.into());
        }
        if self.early() {
            out.insert("type".into(), tag.into());
        }
        if let Some(m) = metadata {
            out.insert("metadata".into(), m);
        }
        Value::Object(out)
    }

    fn role(self, role: Value) -> Value {
        if self.proto() {
            return role;
        }
        match role.as_str() {
            Some("ROLE_AGENT") => "agent".into(),
            _ => "user".into(),
        }
    }

    /// A 1.0 `Message`.
    pub fn message(self, message: Value) -> Value {
        let mut m = object(message);
        if let Some(role) = m.remove("role") {
            m.insert("role".into(), self.role(role));
        } else {
            m.insert("role".into(), self.role(Value::Null));
        }
        let parts = map_array(m.remove("parts"), |p| self.part(p)).unwrap_or(json!([]));
        if self.proto() {
            m.insert("content".into(), parts);
            // Not in the 0.3 proto, whose parsers refuse unknown fields.
            m.remove("referenceTaskIds");
        } else {
            m.insert("parts".into(), parts);
        }
        if self.kinds() {
            m.insert("kind".into(), "message".into());
        }
        Value::Object(m)
    }

    /// A 1.0 `TaskStatus`.
    pub fn status(self, status: Value) -> Value {
        let mut s = object(status);
        let state = s
            .remove("state")
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "TASK_STATE_UNSPECIFIED".into());
        let state = if self.proto() {
            match state.as_str() {
                "TASK_STATE_CANCELED" => "TASK_STATE_CANCELLED".to_owned(),
                _ => state,
            }
        } else if self == Self::Early {
            // The early protocol has neither `rejected` nor `auth-required`.
            match state.as_str() {
                "TASK_STATE_REJECTED" => "failed".to_owned(),
                "TASK_STATE_AUTH_REQUIRED" => "input-required".to_owned(),
                _ => state_to_kebab(&state),
            }
        } else {
            state_to_kebab(&state)
        };
        s.insert("state".into(), state.into());
        if let Some(message) = s.remove("message") {
            s.insert("message".into(), self.message(message));
        }
        Value::Object(s)
    }

    /// A 1.0 `Artifact`; `index` is its position in the task (the early protocol's `index`).
    pub fn artifact(self, artifact: Value, index: usize) -> Value {
        let mut a = object(artifact);
        if let Some(parts) = map_array(a.remove("parts"), |p| self.part(p)) {
            a.insert("parts".into(), parts);
        }
        if self.early() {
            a.insert("index".into(), index.into());
        }
        Value::Object(a)
    }

    /// A 1.0 `Task`.
    pub fn task(self, task: Value) -> Value {
        let mut t = object(task);
        if let Some(status) = t.remove("status") {
            t.insert("status".into(), self.status(status));
        }
        if let Some(Value::Array(artifacts)) = t.remove("artifacts") {
            let artifacts = artifacts
                .into_iter()
                .enumerate()
                .map(|(i, a)| self.artifact(a, i))
                .collect();
            t.insert("artifacts".into(), Value::Array(artifacts));
        }
        if let Some(history) = map_array(t.remove("history"), |m| self.message(m)) {
            t.insert("history".into(), history);
        }
        if self.early() {
            if let Some(context) = t.get("contextId").cloned() {
                t.insert("sessionId".into(), context);
            }
        }
        if self.kinds() {
            t.insert("kind".into(), "task".into());
        }
        Value::Object(t)
    }

    /// A 1.0 `SendMessageResponse` (`{task}` or `{message}`).
    pub fn send_result(self, response: Value) -> Value {
        let mut r = response;
        if let Some(task) = take(&mut r, "task") {
            let task = self.task(task);
            return if self.proto() {
                json!({ "task": task })
            } else {
                task
            };
        }
        let message = take(&mut r, "message").unwrap_or_default();
        if self == Self::Early {
            // An early `tasks/send` answers with a Task: a direct reply is a completed one.
            return self.task(message_as_task(message));
        }
        let message = self.message(message);
        if self.proto() {
            json!({ "message": message })
        } else {
            message
        }
    }

    /// A 1.0 `StreamResponse`. Status events get `final`: true when the state ends the stream.
    pub fn stream_event(self, event: Value) -> Value {
        let mut e = object(event);
        if let Some(task) = e.remove("task") {
            if self == Self::Early {
                // Early streams carry status and artifact events only: the task's status.
                let t = object(task);
                let status = t.get("status").cloned().unwrap_or_default();
                return self.status_event(json!({
                    "taskId": t.get("id").cloned().unwrap_or_default(),
                    "contextId": t.get("contextId").cloned().unwrap_or_default(),
                    "status": status,
                }));
            }
            let task = self.task(task);
            return self.wrap("task", task);
        }
        if let Some(message) = e.remove("message") {
            if self == Self::Early {
                let task = message_as_task(message);
                return self.stream_event(json!({ "task": task }));
            }
            return self.wrap("message", self.message(message));
        }
        if let Some(update) = e.remove("statusUpdate") {
            return self.status_event(update);
        }
        if let Some(update) = e.remove("artifactUpdate") {
            let mut u = object(update);
            let append = u.get("append").cloned().unwrap_or(Value::Bool(false));
            let last = u.get("lastChunk").cloned().unwrap_or(Value::Bool(false));
            if let Some(artifact) = u.remove("artifact") {
                let mut artifact = self.artifact(artifact, 0);
                if self.early() {
                    if let Some(a) = artifact.as_object_mut() {
                        a.insert("append".into(), append);
                        a.insert("lastChunk".into(), last);
                    }
                }
                u.insert("artifact".into(), artifact);
            }
            return self.event_fields(u, "artifact-update", "artifactUpdate");
        }
        Value::Object(e)
    }

    fn status_event(self, update: Value) -> Value {
        let mut u = object(update);
        let state = u
            .get("status")
            .and_then(|s| s.get("state"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if let Some(status) = u.remove("status") {
            u.insert("status".into(), self.status(status));
        }
        u.insert("final".into(), is_final_state(&state).into());
        self.event_fields(u, "status-update", "statusUpdate")
    }

    fn event_fields(self, mut u: Map<String, Value>, kind: &str, wrapper: &str) -> Value {
        if self.early() {
            if let Some(id) = u.get("taskId").cloned() {
                u.insert("id".into(), id);
            }
        }
        if self == Self::Early {
            u.remove("taskId");
            u.remove("contextId");
        }
        if self.kinds() {
            u.insert("kind".into(), kind.into());
        }
        self.wrap(wrapper, Value::Object(u))
    }

    fn wrap(self, member: &str, value: Value) -> Value {
        if self.proto() {
            json!({ member: value })
        } else {
            value
        }
    }

    /// A 1.0 `TaskPushNotificationConfig` (flat, `authentication{scheme, credentials}`).
    pub fn push_config(self, config: Value) -> Value {
        let mut c = object(config);
        let task_id = c.remove("taskId").unwrap_or_default();
        c.remove("tenant");
        if let Some(auth) = c.remove("authentication") {
            let mut a = object(auth);
            let scheme = a.remove("scheme").unwrap_or_default();
            a.insert("schemes".into(), json!([scheme]));
            c.insert("authentication".into(), Value::Object(a));
        }
        if self == Self::Early {
            c.remove("id");
            return json!({ "id": task_id, "pushNotificationConfig": c });
        }
        if self.proto() {
            let name = format!(
                "tasks/{}/pushNotificationConfigs/{}",
                task_id.as_str().unwrap_or_default(),
                c.get("id").and_then(Value::as_str).unwrap_or_default()
            );
            return json!({ "name": name, "pushNotificationConfig": c });
        }
        json!({ "taskId": task_id, "pushNotificationConfig": c })
    }

    /// A 1.0 `ListTaskPushNotificationConfigsResponse`: 0.3 JSON-RPC answers a bare array.
    pub fn push_configs(self, response: Value) -> Value {
        let mut r = response;
        let configs = map_array(take(&mut r, "configs"), |c| self.push_config(c))
            .unwrap_or_else(|| json!([]));
        if self.proto() {
            let next = take(&mut r, "nextPageToken").unwrap_or_else(|| "".into());
            json!({ "configs": configs, "nextPageToken": next })
        } else {
            configs
        }
    }
}

/// A direct Message reply as the completed Task an early client expects.
fn message_as_task(message: Value) -> Value {
    let m = object(message);
    let id = m
        .get("taskId")
        .or_else(|| m.get("messageId"))
        .cloned()
        .unwrap_or_default();
    let context = m.get("contextId").cloned().unwrap_or_default();
    json!({
        "id": id,
        "contextId": context,
        "status": { "state": "TASK_STATE_COMPLETED", "message": Value::Object(m) },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> Value {
        json!({
            "id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"messageId": "m2", "role": "ROLE_AGENT", "parts": [{"text": "more?"}]}},
            "artifacts": [{"artifactId": "a1", "parts": [
                {"raw": "aGk=", "mediaType": "text/plain", "filename": "hi.txt"},
                {"url": "https://x/y", "mediaType": "image/png"},
                {"data": [1, 2]},
                {"data": {"k": 1}}]}],
            "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}],
                "referenceTaskIds": ["t0"]}]
        })
    }

    #[test]
    fn a_task_in_03_has_kinds_kebab_states_and_file_objects() {
        let t = Dialect::V03.task(task());
        assert_eq!(t["kind"], "task");
        assert_eq!(t["status"]["state"], "input-required");
        assert_eq!(t["status"]["message"]["role"], "agent");
        assert_eq!(t["status"]["message"]["kind"], "message");
        assert_eq!(t["history"][0]["role"], "user");
        assert_eq!(
            t["history"][0]["parts"][0],
            json!({"kind": "text", "text": "hi"})
        );
        let parts = &t["artifacts"][0]["parts"];
        assert_eq!(
            parts[0],
            json!({"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain", "name": "hi.txt"}})
        );
        assert_eq!(
            parts[1]["file"],
            json!({"uri": "https://x/y", "mimeType": "image/png"})
        );
        assert_eq!(
            parts[2],
            json!({"kind": "data", "data": {"value": [1, 2]}, "metadata": {"data_part_compat": true}})
        );
        assert_eq!(parts[3], json!({"kind": "data", "data": {"k": 1}}));
        assert!(t.get("sessionId").is_none());
        assert!(parts[0].get("type").is_none());
    }

    #[test]
    fn a_task_in_the_03_proto_has_content_and_british_cancelled() {
        let mut v = task();
        v["status"]["state"] = "TASK_STATE_CANCELED".into();
        let t = Dialect::V03Rest.task(v);
        assert!(t.get("kind").is_none());
        assert_eq!(t["status"]["state"], "TASK_STATE_CANCELLED");
        assert_eq!(t["history"][0]["role"], "ROLE_USER");
        assert_eq!(t["history"][0]["content"][0], json!({"text": "hi"}));
        assert!(t["history"][0].get("referenceTaskIds").is_none());
        let parts = &t["artifacts"][0]["parts"];
        assert_eq!(parts[0]["file"]["fileWithBytes"], "aGk=");
        assert_eq!(parts[1]["file"]["fileWithUri"], "https://x/y");
        assert_eq!(parts[3], json!({"data": {"data": {"k": 1}}}));
    }

    #[test]
    fn a_task_in_the_early_dialect_has_session_and_typed_parts() {
        let t = Dialect::Early.task(task());
        assert_eq!(t["sessionId"], "c1");
        assert!(t.get("kind").is_none());
        assert_eq!(
            t["history"][0]["parts"][0],
            json!({"type": "text", "text": "hi"})
        );
        assert_eq!(t["artifacts"][0]["index"], 0);
        let both = Dialect::V03AndEarly.task(task());
        assert_eq!(both["kind"], "task");
        assert_eq!(both["sessionId"], "c1");
        assert_eq!(both["history"][0]["parts"][0]["type"], "text");
        assert_eq!(both["history"][0]["parts"][0]["kind"], "text");
        // The early protocol has no rejected state.
        let mut v = task();
        v["status"]["state"] = "TASK_STATE_REJECTED".into();
        assert_eq!(Dialect::Early.task(v.clone())["status"]["state"], "failed");
        assert_eq!(Dialect::V03.task(v)["status"]["state"], "rejected");
    }

    #[test]
    fn results_are_bare_in_json_rpc_and_wrapped_in_the_proto() {
        let sent = json!({"task": task()});
        assert_eq!(Dialect::V03.send_result(sent.clone())["kind"], "task");
        assert_eq!(Dialect::V03Rest.send_result(sent)["task"]["id"], "t1");
        let reply = json!({"message": {"messageId": "m", "contextId": "c", "role": "ROLE_AGENT", "parts": [{"text": "x"}]}});
        assert_eq!(Dialect::V03.send_result(reply.clone())["kind"], "message");
        assert_eq!(
            Dialect::V03Rest.send_result(reply.clone())["message"]["content"][0]["text"],
            "x"
        );
        let early = Dialect::Early.send_result(reply);
        assert_eq!(early["status"]["state"], "completed");
        assert_eq!(early["sessionId"], "c");
    }

    #[test]
    fn status_events_carry_final_and_each_dialects_ids() {
        let ev = |state: &str| json!({"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": state}}});
        let working = Dialect::V03.stream_event(ev("TASK_STATE_WORKING"));
        assert_eq!(working["kind"], "status-update");
        assert_eq!(working["final"], false);
        assert_eq!(working["status"]["state"], "working");
        let done = Dialect::V03.stream_event(ev("TASK_STATE_COMPLETED"));
        assert_eq!(done["final"], true);
        let rest = Dialect::V03Rest.stream_event(ev("TASK_STATE_CANCELED"));
        assert_eq!(rest["statusUpdate"]["final"], true);
        assert_eq!(
            rest["statusUpdate"]["status"]["state"],
            "TASK_STATE_CANCELLED"
        );
        let early = Dialect::Early.stream_event(ev("TASK_STATE_INPUT_REQUIRED"));
        assert_eq!(
            early,
            json!({"id": "t1", "status": {"state": "input-required"}, "final": true})
        );
        // A Task snapshot is a status event to an early client.
        let snapshot = Dialect::Early.stream_event(json!({"task": task()}));
        assert_eq!(snapshot["id"], "t1");
        assert_eq!(snapshot["final"], true);
    }

    #[test]
    fn artifact_events_carry_chunk_flags_on_the_early_artifact() {
        let ev = json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1", "append": true,
            "lastChunk": true, "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}}});
        let v03 = Dialect::V03.stream_event(ev.clone());
        assert_eq!(v03["kind"], "artifact-update");
        assert_eq!(v03["append"], true);
        let early = Dialect::Early.stream_event(ev);
        assert_eq!(early["id"], "t1");
        assert_eq!(early["artifact"]["lastChunk"], true);
        assert_eq!(early["artifact"]["append"], true);
        assert_eq!(early["artifact"]["parts"][0]["type"], "text");
    }

    #[test]
    fn push_configs_nest_the_config_and_list_the_schemes() {
        let c = json!({"tenant": "", "id": "p1", "taskId": "t1", "url": "https://h/x", "token": "tok",
            "authentication": {"scheme": "Bearer", "credentials": "s"}});
        let v03 = Dialect::V03.push_config(c.clone());
        assert_eq!(
            v03,
            json!({"taskId": "t1", "pushNotificationConfig": {"id": "p1", "url": "https://h/x",
                "token": "tok", "authentication": {"schemes": ["Bearer"], "credentials": "s"}}})
        );
        let early = Dialect::Early.push_config(c.clone());
        assert_eq!(early["id"], "t1");
        assert!(early["pushNotificationConfig"].get("id").is_none());
        let rest = Dialect::V03Rest.push_config(c.clone());
        assert_eq!(rest["name"], "tasks/t1/pushNotificationConfigs/p1");
        let list = json!({"configs": [c], "nextPageToken": ""});
        assert!(Dialect::V03.push_configs(list.clone()).is_array());
        assert_eq!(
            Dialect::V03Rest.push_configs(list)["configs"][0]["name"],
            rest["name"]
        );
    }
}
