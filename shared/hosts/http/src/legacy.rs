//! The older protocol versions at the edge: A2A 0.3 and the early protocol (before 0.2),
//! turned on and off by [`a2a_core::OlderVersions`].
//!
//! Each old method is one 1.0 operation: its params are translated to the 1.0 request
//! ([`a2a_protocol::compat::inbound`]), the operation runs through [`crate::invoke`] (so auth,
//! owner scoping, idempotency and limits are those of 1.0), and its result or events are written
//! back in the old dialect ([`Dialect`]). Nothing here decides anything about tasks.
//!
//! Which dialect answers: 0.3 methods answer in 0.3, early-only methods in the early dialect.
//! The names both versions share (`tasks/get`, `tasks/cancel`, `tasks/resubscribe`) answer on
//! the generic JSON-RPC endpoint in 0.3 carrying the early fields too ([`Dialect::V03AndEarly`]),
//! and on the early paths (`POST /tasks`, …) in the early dialect.

use a2a_core::{CallContext, OlderVersions, Principal, Reply};
use a2a_protocol::compat::{self, inbound, Dialect};
use a2a_protocol::A2AError;
use a2a_protocol::Operation;
use axum::http::{HeaderMap, Uri};
use serde_json::{json, Value};

use crate::context::{call_context, requested_version};
use crate::App;

/// Where a JSON-RPC request came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// The JSON-RPC endpoint of the card (`/jsonrpc`): every version.
    Generic,
    /// Hexagon's early paths (`POST /tasks`, `/tasks/sendSubscribe`, `/tasks/resubscribe`):
    /// the early protocol only.
    Early,
}

/// The older version(s) that spell an old method name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SpeltIn {
    V03,
    Early,
    /// Spelt the same in 0.3 and in the early protocol.
    Both,
}

/// What an old method does beyond running its operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Special {
    None,
    /// Early `tasks/send`/`tasks/sendSubscribe`: a client-chosen task id and `sessionId`.
    EarlySend,
    /// A push-config get that may name no config (the early one never does).
    PushGet,
    /// Hexagon's `tasks/list` by `sessionId`.
    ListBySession,
}

/// The old JSON-RPC methods: name, the versions that spell it, the 1.0 operation, and what else it needs.
const METHODS: &[(&str, SpeltIn, Operation, Special)] = {
    use Operation as O;
    use Special as S;
    use SpeltIn::{Both, Early, V03};
    &[
        ("message/send", V03, O::SendMessage, S::None),
        ("message/stream", V03, O::SendStreamingMessage, S::None),
        ("tasks/get", Both, O::GetTask, S::None),
        ("tasks/cancel", Both, O::CancelTask, S::None),
        ("tasks/resubscribe", Both, O::SubscribeToTask, S::None),
        (
            "tasks/pushNotificationConfig/set",
            V03,
            O::CreateTaskPushNotificationConfig,
            S::None,
        ),
        (
            "tasks/pushNotificationConfig/get",
            V03,
            O::GetTaskPushNotificationConfig,
            S::PushGet,
        ),
        (
            "tasks/pushNotificationConfig/list",
            V03,
            O::ListTaskPushNotificationConfigs,
            S::None,
        ),
        (
            "tasks/pushNotificationConfig/delete",
            V03,
            O::DeleteTaskPushNotificationConfig,
            S::None,
        ),
        (
            "agent/getAuthenticatedExtendedCard",
            V03,
            O::GetExtendedAgentCard,
            S::None,
        ),
        ("tasks/send", Early, O::SendMessage, S::EarlySend),
        (
            "tasks/sendSubscribe",
            Early,
            O::SendStreamingMessage,
            S::EarlySend,
        ),
        (
            "tasks/pushNotification/set",
            Early,
            O::CreateTaskPushNotificationConfig,
            S::None,
        ),
        (
            "tasks/pushNotification/get",
            Early,
            O::GetTaskPushNotificationConfig,
            S::PushGet,
        ),
        ("tasks/list", Early, O::ListTasks, S::ListBySession),
    ]
};

/// Every old JSON-RPC method name this edge knows, with the version that spells it (`"0.3"`,
/// `"early"` or `"0.3+early"`) and the 1.0 operation it runs: for docs and tests.
pub fn legacy_methods() -> impl Iterator<Item = (&'static str, &'static str, Operation)> {
    METHODS.iter().map(|(name, spelt_in, op, _)| {
        let spelt_in = match spelt_in {
            SpeltIn::V03 => "0.3",
            SpeltIn::Early => "early",
            SpeltIn::Both => "0.3+early",
        };
        (*name, spelt_in, *op)
    })
}

/// An old method as this request may call it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LegacyMethod {
    name: &'static str,
    /// The operation it runs.
    pub(crate) operation: Operation,
    special: Special,
    /// The dialect of its result or events.
    dialect: Dialect,
}

impl LegacyMethod {
    /// Looks `name` up for a request at `endpoint`, given the older versions served. `Err` is the
    /// answer to a name that is not served: -32009 for a method of a version that is off (or
    /// of the wrong endpoint's version), -32601 for a name no version has.
    pub(crate) fn find(
        name: &str,
        older_versions: OlderVersions,
        endpoint: Endpoint,
    ) -> Result<Self, A2AError> {
        let Some(&(name, spelt_in, operation, special)) = METHODS.iter().find(|(n, ..)| *n == name)
        else {
            return Err(if older_versions == OlderVersions::NONE {
                A2AError::VersionNotSupported(format!(
                    "{name} is not an A2A 1.0 method; this server speaks A2A 1.0 (PascalCase \
                     methods such as SendMessage)"
                ))
            } else {
                A2AError::MethodNotFound(format!("Method {name:?} not found"))
            });
        };
        let v03 = older_versions.v0_3 && endpoint == Endpoint::Generic;
        let early = older_versions.early;
        let dialect = match spelt_in {
            SpeltIn::V03 if v03 => Dialect::V03,
            SpeltIn::Early if early => Dialect::Early,
            SpeltIn::Both if endpoint == Endpoint::Early && early => Dialect::Early,
            SpeltIn::Both if v03 && early => Dialect::V03AndEarly,
            SpeltIn::Both if v03 => Dialect::V03,
            SpeltIn::Both if early => Dialect::Early,
            _ => return Err(not_served(name, spelt_in, older_versions, endpoint)),
        };
        Ok(Self {
            name,
            operation,
            special,
            dialect,
        })
    }
}

fn not_served(
    name: &str,
    spelt_in: SpeltIn,
    older_versions: OlderVersions,
    endpoint: Endpoint,
) -> A2AError {
    let which = match spelt_in {
        SpeltIn::V03 => "an A2A 0.3 method",
        SpeltIn::Early => "a method of the early A2A protocol (before 0.2)",
        SpeltIn::Both => "a method of A2A 0.3 and of the early protocol",
    };
    let served = match (endpoint, older_versions.v0_3, older_versions.early) {
        (Endpoint::Early, ..) => "this path serves the early protocol only",
        (_, true, false) => "this server speaks A2A 1.0 and 0.3",
        (_, false, true) => "this server speaks A2A 1.0 and the early protocol",
        _ => "this server speaks A2A 1.0 (PascalCase methods such as SendMessage)",
    };
    A2AError::VersionNotSupported(format!("{name} is {which}; {served}"))
}

/// Checks that an old method is not sent as 1.0: `A2A-Version` absent (which means 0.3) or of
/// major version 0.
pub(crate) fn check_version(headers: &HeaderMap, uri: &Uri, name: &str) -> Result<(), A2AError> {
    let Some(requested) = requested_version(headers, uri) else {
        return Ok(());
    };
    let major = requested.split('.').next().unwrap_or_default().trim();
    if major.parse::<u32>() == Ok(0) {
        Ok(())
    } else {
        Err(A2AError::VersionNotSupported(format!(
            "{name} is a method of A2A 0.3 or earlier, but the request says {}: {requested}; \
             send the A2A 1.0 method (PascalCase, such as SendMessage) or drop the header",
            crate::context::VERSION
        )))
    }
}

/// What an old method answered: a JSON result, or events with the dialect to write them in.
pub(crate) enum LegacyReply {
    Json(Value),
    Stream(a2a_core::EventStream, Dialect),
}

/// Runs old method `method` with its `params` for `principal`.
pub(crate) async fn call(
    app: &App,
    principal: &Principal,
    headers: &HeaderMap,
    method: LegacyMethod,
    params: Value,
) -> Result<LegacyReply, A2AError> {
    let mut ctx = call_context(principal, headers, "");
    let dialect = method.dialect;
    ctx.version = dialect.version().into();
    let op = method.operation;
    let params = match (method.special, op) {
        (Special::EarlySend, _) => {
            let sent = inbound::early_send(params, &a2a_core::new_id())?;
            ctx.requested_task_id = sent.task_id;
            sent.request
        }
        (_, Operation::SendMessage | Operation::SendStreamingMessage) => {
            inbound::send_message(params, false, &a2a_core::new_id())?
        }
        (_, Operation::CreateTaskPushNotificationConfig) => inbound::set_push_config(params)?,
        (Special::PushGet, _) => return push_get(app, &ctx, headers, dialect, &params).await,
        (Special::ListBySession, _) => {
            let session = params.get("sessionId").cloned().unwrap_or_default();
            let mut request = json!({ "includeArtifacts": true, "pageSize": 100 });
            if session.is_string() {
                request["contextId"] = session;
            }
            request
        }
        (
            _,
            Operation::ListTaskPushNotificationConfigs
            | Operation::DeleteTaskPushNotificationConfig,
        ) => {
            let (task_id, config_id) = inbound::push_config_ref(&params)?;
            json!({ "taskId": task_id, "id": config_id.unwrap_or_default() })
        }
        (_, Operation::GetExtendedAgentCard) => json!({}),
        _ => without_nulls(params),
    };
    tracing::debug!(rpc_method = method.name, "legacy JSON-RPC call");
    let resubscribed = (op == Operation::SubscribeToTask && dialect == Dialect::Early)
        .then(|| params["id"].as_str().map(str::to_owned))
        .flatten();
    let reply = match (
        crate::invoke(app, &ctx, op, params, headers).await,
        resubscribed,
    ) {
        // An early client resubscribing to a task that ended reads its final state, as
        // python-a2a's own server sends it, where 1.0 refuses (there is nothing to follow).
        (Err(A2AError::UnsupportedOperation(why)), Some(task_id)) => {
            return match ended_task(app, &ctx, headers, &task_id).await? {
                Some(events) => Ok(LegacyReply::Stream(events, dialect)),
                None => Err(A2AError::UnsupportedOperation(why)),
            };
        }
        (other, _) => other?,
    };
    match reply {
        Reply::Json(result) => {
            let mut result = Reply::value(&result);
            // A direct reply to an early send becomes a completed Task: under the chosen id.
            if let (Some(id), Some(message)) = (
                &ctx.requested_task_id,
                result.get_mut("message").and_then(Value::as_object_mut),
            ) {
                message
                    .entry("taskId")
                    .or_insert_with(|| Value::String(id.clone()));
            }
            Ok(LegacyReply::Json(result_in(
                dialect,
                op,
                method.special,
                result,
            )))
        }
        Reply::Stream(events) => Ok(LegacyReply::Stream(events, dialect)),
    }
}

/// The task `task_id` as the one event of a stream, if it is terminal.
async fn ended_task(
    app: &App,
    ctx: &CallContext,
    headers: &HeaderMap,
    task_id: &str,
) -> Result<Option<a2a_core::EventStream>, A2AError> {
    let request = json!({ "id": task_id });
    let Reply::Json(task) = crate::invoke(app, ctx, Operation::GetTask, request, headers).await?
    else {
        return Ok(None);
    };
    let task: a2a_protocol::Task = serde_json::from_str(task.get())
        .map_err(|e| crate::errors::internal("reading back a task", e))?;
    if !task.status.state.is_terminal() {
        return Ok(None);
    }
    let item = a2a_core::StreamItem {
        seq: 0,
        response: a2a_protocol::StreamResponse::Task(task),
    };
    Ok(Some(Box::pin(futures::stream::once(
        async move { Ok(item) },
    ))))
}

/// Old params that are already 1.0-shaped (`{id, historyLength?, metadata?}`), with JSON nulls
/// (which old clients send for absent members) taken out.
fn without_nulls(params: Value) -> Value {
    match params {
        Value::Object(mut map) => {
            map.retain(|_, v| !v.is_null());
            Value::Object(map)
        }
        other => other,
    }
}

/// A push-config get: the named config, or (the early protocol, and 0.3 without
/// `pushNotificationConfigId`) the task's first one. A 0.3 get naming `default`, which the
/// task does not have, answers the task's first config too, as a2a-python's 0.3 server does
/// (it reads no config id): the A2A TCK 0.3 sets a config without an id and reads it back as
/// `default`. Any other id the task does not have is PushConfigNotFound (a config deleted is
/// gone).
async fn push_get(
    app: &App,
    ctx: &CallContext,
    headers: &HeaderMap,
    dialect: Dialect,
    params: &Value,
) -> Result<LegacyReply, A2AError> {
    let (task_id, config_id) = inbound::push_config_ref(params)?;
    let named = match config_id {
        Some(id) => get_push_config(app, ctx, headers, &task_id, &id).await,
        None => Err(A2AError::PushConfigNotFound {
            task_id: task_id.clone(),
            config_id: String::new(),
        }),
    };
    let config = match named {
        Err(A2AError::PushConfigNotFound { config_id, .. })
            if config_id.is_empty()
                || (dialect.version() == compat::OlderVersion::V03 && config_id == "default") =>
        {
            let listed = json!({ "taskId": task_id });
            let reply = crate::invoke(
                app,
                ctx,
                Operation::ListTaskPushNotificationConfigs,
                listed,
                headers,
            )
            .await?;
            let first = match reply {
                Reply::Json(list) => Reply::value(&list)["configs"][0]["id"]
                    .as_str()
                    .map(str::to_owned),
                Reply::Stream(_) => None,
            };
            // None at all: the get of the id asked for (or of the task's id) says what is
            // missing.
            let id = first.unwrap_or_else(|| {
                Some(config_id)
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| task_id.clone())
            });
            get_push_config(app, ctx, headers, &task_id, &id).await?
        }
        other => other?,
    };
    Ok(LegacyReply::Json(dialect.push_config(config)))
}

/// The 1.0 GetTaskPushNotificationConfig of config `id` of task `task_id`.
async fn get_push_config(
    app: &App,
    ctx: &CallContext,
    headers: &HeaderMap,
    task_id: &str,
    id: &str,
) -> Result<Value, A2AError> {
    let request = json!({ "taskId": task_id, "id": id });
    match crate::invoke(
        app,
        ctx,
        Operation::GetTaskPushNotificationConfig,
        request,
        headers,
    )
    .await?
    {
        Reply::Json(config) => Ok(Reply::value(&config)),
        Reply::Stream(_) => Err(crate::errors::internal(
            "a push config get answered with a stream",
            "",
        )),
    }
}

/// A 1.0 result of `op` in `dialect`.
fn result_in(dialect: Dialect, op: Operation, special: Special, result: Value) -> Value {
    use Operation as O;
    match op {
        O::SendMessage => dialect.send_result(result),
        O::GetTask | O::CancelTask => dialect.task(result),
        O::CreateTaskPushNotificationConfig | O::GetTaskPushNotificationConfig => {
            dialect.push_config(result)
        }
        O::ListTaskPushNotificationConfigs => dialect.push_configs(result),
        O::DeleteTaskPushNotificationConfig if dialect == Dialect::V03Rest => json!({}),
        O::DeleteTaskPushNotificationConfig => Value::Null,
        O::GetExtendedAgentCard => compat::v03_card(result),
        O::ListTasks if special == Special::ListBySession => {
            let tasks = result["tasks"].as_array().cloned().unwrap_or_default();
            Value::Array(tasks.into_iter().map(|t| dialect.task(t)).collect())
        }
        O::ListTasks | O::SendStreamingMessage | O::SubscribeToTask => result,
    }
}

/// The 0.3 HTTP+JSON result of `op`.
pub(crate) fn rest_result(op: Operation, result: Value) -> Value {
    result_in(Dialect::V03Rest, op, Special::None, result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_translation_table_names_every_method() {
        let doc = include_str!("../../../../docs/conformance.md");
        let table = &doc[doc.find("### Translation table").expect("the table")..];
        for (name, _, operation) in legacy_methods() {
            assert!(
                table.contains(&format!("`{name}")),
                "{name} is not in the table"
            );
            assert!(
                table.contains(operation.name()),
                "{operation} is not in the table"
            );
        }
    }

    #[test]
    fn chosen_task_ids_cannot_name_an_early_path() {
        use a2a_protocol::compat::inbound::RESERVED_CLIENT_TASK_IDS;
        for path in crate::EARLY_JSONRPC_PATHS {
            if let Some(rest) = path.strip_prefix("/tasks/") {
                let segment = rest.split('/').next().unwrap_or_default();
                assert!(RESERVED_CLIENT_TASK_IDS.contains(&segment), "{path}");
            }
        }
    }

    #[test]
    fn shared_names_answer_in_the_dialect_of_what_is_on() {
        let all = OlderVersions::default();
        let find =
            |name, gens, endpoint| LegacyMethod::find(name, gens, endpoint).map(|m| m.dialect);
        assert_eq!(
            find("tasks/get", all, Endpoint::Generic).unwrap(),
            Dialect::V03AndEarly
        );
        assert_eq!(
            find("tasks/get", all, Endpoint::Early).unwrap(),
            Dialect::Early
        );
        let v03_only = OlderVersions {
            v0_3: true,
            early: false,
        };
        assert_eq!(
            find("tasks/get", v03_only, Endpoint::Generic).unwrap(),
            Dialect::V03
        );
        let early_only = OlderVersions {
            v0_3: false,
            early: true,
        };
        assert_eq!(
            find("tasks/get", early_only, Endpoint::Generic).unwrap(),
            Dialect::Early
        );
        assert_eq!(
            find("message/send", all, Endpoint::Generic).unwrap(),
            Dialect::V03
        );
        assert_eq!(
            find("tasks/send", all, Endpoint::Generic).unwrap(),
            Dialect::Early
        );
    }

    #[test]
    fn methods_of_a_version_that_is_off_are_version_errors_naming_it() {
        let early_only = OlderVersions {
            v0_3: false,
            early: true,
        };
        let err = LegacyMethod::find("message/send", early_only, Endpoint::Generic).unwrap_err();
        assert_eq!(err.json_rpc_code(), -32009);
        assert!(err.message().contains("0.3"), "{err}");
        let err =
            LegacyMethod::find("tasks/send", OlderVersions::NONE, Endpoint::Generic).unwrap_err();
        assert!(err.message().contains("early"), "{err}");
        assert!(!err.message().contains("0.3 method"), "{err}");
        // 0.3 methods are not served on the early paths.
        let err = LegacyMethod::find("message/send", OlderVersions::default(), Endpoint::Early)
            .unwrap_err();
        assert_eq!(err.json_rpc_code(), -32009);
        let err = LegacyMethod::find("tasks/nothing", OlderVersions::default(), Endpoint::Generic)
            .unwrap_err();
        assert_eq!(err.json_rpc_code(), -32601);
    }
}
