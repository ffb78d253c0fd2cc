//! The HTTP+JSON (REST) binding: the routes of `a2a.proto`'s `google.api.http` annotations,
//! each also under a `/{tenant}` prefix.
//!
//! Each handler turns its path, query and body into the operation's JSON request object and
//! hands it to [`crate::ops`], the same path JSON-RPC takes. Errors are `google.rpc.Status`
//! bodies with the status of the A2A error table; a stream that fails before it starts is an
//! ordinary error response.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use a2a_protocol::jsonrpc::Method;
use a2a_protocol::{A2AError, TaskState, Timestamp};
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method as HttpMethod, StatusCode, Uri};
use axum::response::Response;
use axum::routing::MethodRouter;
use axum::Router;
use serde_json::{Map, Value};

use crate::context::{authenticate, call_context, check_version, last_event_id};
use crate::errors::{self, json_response, HttpError};
use crate::ops::{invoke, OpRequest, Outcome};
use crate::sse::{self, Framing};
use crate::{App, OperationSet};

type AppRouter = Router<Arc<App>>;

/// Adds the REST routes of the served operations, with and without the tenant prefix. A path
/// whose operations are all absent is not routed at all (404); a served path answers other
/// HTTP methods with 405.
pub(crate) fn mount(mut router: AppRouter, ops: &OperationSet) -> AppRouter {
    use Method as M;
    let mut add = |path: &str, methods: MethodRouter<Arc<App>>| {
        let prefixed = format!("/{{tenant}}{path}");
        let r = std::mem::take(&mut router);
        router = r.route(path, methods.clone()).route(&prefixed, methods);
    };
    if ops.contains(M::SendMessage) {
        add("/message:send", MethodRouter::new().post(message_send));
    }
    if ops.contains(M::SendStreamingMessage) {
        add("/message:stream", MethodRouter::new().post(message_stream));
    }
    if ops.contains(M::ListTasks) {
        add("/tasks", MethodRouter::new().get(list_tasks));
    }
    // `{id}:cancel` cannot be matched inside one segment: route the segment and split it.
    let mut task = MethodRouter::new();
    if ops.any(&[M::GetTask, M::SubscribeToTask]) {
        task = task.get(task_get);
    }
    if ops.any(&[M::CancelTask, M::SubscribeToTask]) {
        task = task.post(task_post);
    }
    if ops.any(&[M::GetTask, M::SubscribeToTask, M::CancelTask]) {
        add("/tasks/{rest}", task);
    }
    let mut configs = MethodRouter::new();
    if ops.contains(M::CreateTaskPushNotificationConfig) {
        configs = configs.post(push_create);
    }
    if ops.contains(M::ListTaskPushNotificationConfigs) {
        configs = configs.get(push_list);
    }
    if ops.any(&[
        M::CreateTaskPushNotificationConfig,
        M::ListTaskPushNotificationConfigs,
    ]) {
        add("/tasks/{taskId}/pushNotificationConfigs", configs);
    }
    let mut config = MethodRouter::new();
    if ops.contains(M::GetTaskPushNotificationConfig) {
        config = config.get(push_get);
    }
    if ops.contains(M::DeleteTaskPushNotificationConfig) {
        config = config.delete(push_delete);
    }
    if ops.any(&[
        M::GetTaskPushNotificationConfig,
        M::DeleteTaskPushNotificationConfig,
    ]) {
        add("/tasks/{taskId}/pushNotificationConfigs/{id}", config);
    }
    if ops.contains(M::GetExtendedAgentCard) {
        add("/extendedAgentCard", MethodRouter::new().get(extended_card));
    }
    router
}

/// The path parameters of the matched route (none on the unprefixed static routes).
struct PathParams(HashMap<String, String>);

impl PathParams {
    fn get(&self, name: &str) -> String {
        self.0.get(name).cloned().unwrap_or_default()
    }

    fn tenant(&self) -> Option<String> {
        self.0.get("tenant").cloned()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for PathParams {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<HashMap<String, String>>::from_request_parts(parts, state).await {
            Ok(Path(map)) => Ok(Self(map)),
            Err(PathRejection::MissingPathParams(_)) => Ok(Self(HashMap::new())),
            Err(err) => Err(HttpError::from(A2AError::invalid_params(format!(
                "Invalid path: {}",
                err.body_text()
            )))
            .rest_response()),
        }
    }
}

/// Runs one REST call: the version check, then `params` (path, query and body as the
/// operation's JSON object), the caller's context, and the operation.
async fn run<F>(
    app: &App,
    method: Method,
    headers: &HeaderMap,
    uri: &Uri,
    path_tenant: Option<String>,
    params: F,
) -> Response
where
    F: Future<Output = Result<Map<String, Value>, HttpError>>,
{
    let outcome = async {
        // Authentication first: an unauthenticated caller learns nothing else, and its body is
        // never read.
        let principal = authenticate(&app.service.config().auth, headers, uri).await?;
        check_version(headers, uri)?;
        // The body is read only once the version is known to be served.
        let mut params = params.await?;
        if let Some(tenant) = path_tenant {
            // The path's tenant binds the request's field, as in gRPC transcoding.
            params.insert("tenant".into(), Value::String(tenant));
        }
        let tenant = params
            .get("tenant")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let ctx = call_context(&principal, headers, &tenant);
        let resume_after = if method == Method::SubscribeToTask {
            last_event_id(headers)?
        } else {
            None
        };
        let request = OpRequest::decode(method, Value::Object(params), resume_after)?;
        Ok::<_, HttpError>(invoke(&app.service, &ctx, request).await?)
    }
    .await;
    match outcome {
        Ok(Outcome::Json(result)) => json_response(StatusCode::OK, &result),
        Ok(Outcome::Stream(events)) => {
            sse::stream_response(events, Framing::Rest, app.options.keep_alive)
        }
        Err(rejected) => {
            tracing::debug!(
                status = rejected.status.as_u16(),
                reason = rejected.error.reason(),
                "REST error"
            );
            let response = rejected.rest_response();
            if errors::is_auth_failure(&rejected.error) {
                errors::with_challenge(
                    response,
                    &app.service.config().auth,
                    &rejected.error,
                    Some(method),
                )
            } else {
                response
            }
        }
    }
}

/// The kind of a query parameter, for a clear error naming it when its value is malformed.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Int,
    Bool,
    State,
    Time,
}

/// Picks `fields` (lowerCamelCase names, snake_case accepted too) out of the query string as
/// typed JSON values; other parameters (such as `A2A-Version`) are ignored.
fn query_params(uri: &Uri, fields: &[(&str, Kind)]) -> Result<Map<String, Value>, HttpError> {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(uri).map_err(|err| {
        HttpError::from(A2AError::invalid_params(format!(
            "The query string is malformed: {}",
            err.body_text()
        )))
    })?;
    let mut params = Map::new();
    for (key, raw) in pairs {
        let Some((name, kind)) = fields
            .iter()
            .find(|(name, _)| key == *name || key == snake_case(name))
        else {
            continue;
        };
        let bad = |expected: &str| {
            HttpError::from(A2AError::invalid_params(format!(
                "Query parameter {name} must be {expected}, got {raw:?}"
            )))
        };
        let value = match kind {
            Kind::Text => Value::String(raw.clone()),
            Kind::Int => Value::from(raw.trim().parse::<i32>().map_err(|_| bad("an integer"))?),
            Kind::Bool => match raw.trim().to_ascii_lowercase().as_str() {
                "true" | "1" => Value::Bool(true),
                "false" | "0" => Value::Bool(false),
                _ => return Err(bad("true or false")),
            },
            Kind::State => {
                let state = TaskState::parse(raw.trim())
                    .ok_or_else(|| bad("a task state such as TASK_STATE_WORKING"))?;
                Value::String(state.as_str().to_string())
            }
            Kind::Time => {
                let time = Timestamp::parse(raw.trim())
                    .map_err(|_| bad("an RFC 3339 timestamp such as 2025-11-09T10:30:00Z"))?;
                Value::String(time.to_string())
            }
        };
        params.insert((*name).to_string(), value);
    }
    Ok(params)
}

fn snake_case(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The 404 of an operation this router does not serve, like any unknown path.
fn not_served(method: &HttpMethod, uri: &Uri) -> Response {
    HttpError::from(A2AError::MethodNotFound(format!(
        "No A2A operation at {method} {}",
        uri.path()
    )))
    .rest_response()
}

async fn message_send(
    State(app): State<Arc<App>>,
    path: PathParams,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    message(&app, Method::SendMessage, path, headers, uri, body).await
}

async fn message_stream(
    State(app): State<Arc<App>>,
    path: PathParams,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    message(&app, Method::SendStreamingMessage, path, headers, uri, body).await
}

/// SendMessage and SendStreamingMessage: the body is the request.
async fn message(
    app: &App,
    method: Method,
    path: PathParams,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    let params = crate::body::read_object(&headers, body, app.options.max_body_bytes);
    run(app, method, &headers, &uri, path.tenant(), params).await
}

async fn list_tasks(
    State(app): State<Arc<App>>,
    path: PathParams,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    const FIELDS: &[(&str, Kind)] = &[
        ("contextId", Kind::Text),
        ("status", Kind::State),
        ("pageSize", Kind::Int),
        ("pageToken", Kind::Text),
        ("historyLength", Kind::Int),
        ("statusTimestampAfter", Kind::Time),
        ("includeArtifacts", Kind::Bool),
    ];
    let params = async { query_params(&uri, FIELDS) };
    run(
        &app,
        Method::ListTasks,
        &headers,
        &uri,
        path.tenant(),
        params,
    )
    .await
}

/// Splits `{id}:{action}`; an id without a known action suffix is the whole segment.
fn split_action(rest: &str) -> (&str, Option<&str>) {
    match rest.rsplit_once(':') {
        Some((id, action @ ("cancel" | "subscribe"))) => (id, Some(action)),
        _ => (rest, None),
    }
}

/// `GET /tasks/{id}` (GetTask) and `GET /tasks/{id}:subscribe`.
async fn task_get(
    State(app): State<Arc<App>>,
    http_method: HttpMethod,
    path: PathParams,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let rest = path.get("rest");
    let (id, action) = split_action(&rest);
    let (method, fields): (Method, &[(&str, Kind)]) = match action {
        None => (Method::GetTask, &[("historyLength", Kind::Int)]),
        Some("subscribe") => (Method::SubscribeToTask, &[]),
        Some(_) => return errors::method_not_allowed(http_method, uri).await,
    };
    if !app.operations.contains(method) {
        return not_served(&http_method, &uri);
    }
    let params = async {
        let mut params = query_params(&uri, fields)?;
        params.insert("id".into(), Value::String(id.to_string()));
        Ok(params)
    };
    run(&app, method, &headers, &uri, path.tenant(), params).await
}

/// `POST /tasks/{id}:cancel` (optional body `{metadata}`) and `POST /tasks/{id}:subscribe`.
async fn task_post(
    State(app): State<Arc<App>>,
    http_method: HttpMethod,
    path: PathParams,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    let rest = path.get("rest");
    let (id, action) = split_action(&rest);
    let method = match action {
        Some("cancel") => Method::CancelTask,
        Some("subscribe") => Method::SubscribeToTask,
        _ => return errors::method_not_allowed(http_method, uri).await,
    };
    if !app.operations.contains(method) {
        return not_served(&http_method, &uri);
    }
    let limit = app.options.max_body_bytes;
    let params = async {
        let mut params = if method == Method::CancelTask {
            crate::body::read_object(&headers, body, limit).await?
        } else {
            // Subscribe has no body; whatever a client sends along is not looked at.
            Map::new()
        };
        params.insert("id".into(), Value::String(id.to_string()));
        Ok(params)
    };
    run(&app, method, &headers, &uri, path.tenant(), params).await
}

async fn push_create(
    State(app): State<Arc<App>>,
    path: PathParams,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    let limit = app.options.max_body_bytes;
    let task_id = path.get("taskId");
    let params = async {
        let mut params = crate::body::read_object(&headers, body, limit).await?;
        params.insert("taskId".into(), Value::String(task_id));
        Ok(params)
    };
    run(
        &app,
        Method::CreateTaskPushNotificationConfig,
        &headers,
        &uri,
        path.tenant(),
        params,
    )
    .await
}

async fn push_list(
    State(app): State<Arc<App>>,
    path: PathParams,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let task_id = path.get("taskId");
    let params = async {
        let mut params = query_params(&uri, &[("pageSize", Kind::Int), ("pageToken", Kind::Text)])?;
        params.insert("taskId".into(), Value::String(task_id));
        Ok(params)
    };
    run(
        &app,
        Method::ListTaskPushNotificationConfigs,
        &headers,
        &uri,
        path.tenant(),
        params,
    )
    .await
}

fn config_ref(path: &PathParams) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("taskId".into(), Value::String(path.get("taskId")));
    params.insert("id".into(), Value::String(path.get("id")));
    params
}

async fn push_get(
    State(app): State<Arc<App>>,
    path: PathParams,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let params = std::future::ready(Ok(config_ref(&path)));
    run(
        &app,
        Method::GetTaskPushNotificationConfig,
        &headers,
        &uri,
        path.tenant(),
        params,
    )
    .await
}

async fn push_delete(
    State(app): State<Arc<App>>,
    path: PathParams,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let params = std::future::ready(Ok(config_ref(&path)));
    run(
        &app,
        Method::DeleteTaskPushNotificationConfig,
        &headers,
        &uri,
        path.tenant(),
        params,
    )
    .await
}

async fn extended_card(
    State(app): State<Arc<App>>,
    path: PathParams,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let params = std::future::ready(Ok(Map::new()));
    run(
        &app,
        Method::GetExtendedAgentCard,
        &headers,
        &uri,
        path.tenant(),
        params,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_are_split_off_the_last_colon() {
        assert_eq!(split_action("t1:cancel"), ("t1", Some("cancel")));
        assert_eq!(split_action("t1:subscribe"), ("t1", Some("subscribe")));
        assert_eq!(split_action("t1"), ("t1", None));
        assert_eq!(split_action("a:b"), ("a:b", None));
    }

    #[test]
    fn query_values_are_typed_and_named_in_errors() {
        let fields = &[("pageSize", Kind::Int), ("includeArtifacts", Kind::Bool)];
        let uri: Uri = "/tasks?pageSize=5&include_artifacts=true&A2A-Version=1.0"
            .parse()
            .unwrap();
        let params = query_params(&uri, fields).unwrap();
        assert_eq!(params["pageSize"], 5);
        assert_eq!(params["includeArtifacts"], true);
        let uri: Uri = "/tasks?pageSize=abc".parse().unwrap();
        let err = query_params(&uri, fields).unwrap_err();
        assert!(err.error.message().contains("pageSize"), "{}", err.error);
    }
}
