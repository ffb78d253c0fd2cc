//! The HTTP+JSON (REST) binding: the routes of the operation table ([`a2a_protocol::OPERATIONS`],
//! after `a2a.proto`'s `google.api.http` annotations), each also under a `/{tenant}` prefix.
//!
//! One handler serves every route: it picks the operation by method, path and the `:action`
//! suffix of the last segment, turns path parameters, typed query parameters and the body into
//! the operation's JSON request object, and calls the service, as JSON-RPC does. Errors are
//! `google.rpc.Status` bodies with the status of the A2A error table; a stream that fails before
//! it starts is an ordinary error response.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use a2a_core::Reply;
use a2a_protocol::compat::{self, inbound, Dialect};
use a2a_protocol::{A2AError, TaskState, Timestamp};
use a2a_protocol::{HttpVerb, Operation, QueryKind, RestRoute};
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method as HttpMethod, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;
use serde_json::{Map, Value};

use crate::context::{authenticate, call_context, check_version};
use crate::errors::{self, json_response, json_text_response, HttpError};
use crate::legacy;
use crate::sse::{self, Framed, Framing, Legacy};
use crate::{App, OperationSet};

type AppRouter = Router<Arc<App>>;

/// A route of the table as axum matches it: the path with an `{param}:action` last segment
/// reduced to `{param}` (matchit cannot match inside a segment), and the action apart.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    operation: Operation,
    route: &'static RestRoute,
    /// The `:action` suffix the last path segment must carry (`cancel`, `subscribe`), if any.
    action: Option<&'static str>,
    /// The name of the path parameter the action is attached to.
    action_param: Option<&'static str>,
}

/// Splits a table path into the path axum routes and the action of its last segment.
fn axum_path(path: &'static str) -> (String, Option<&'static str>, Option<&'static str>) {
    match path.rsplit_once('/') {
        Some((prefix, last)) if last.starts_with('{') && last.contains("}:") => {
            let (param, action) = last.split_once(':').expect("contains ':'");
            let name = param.trim_start_matches('{').trim_end_matches('}');
            (format!("{prefix}/{param}"), Some(action), Some(name))
        }
        _ => (path.to_string(), None, None),
    }
}

fn filter(verb: HttpVerb) -> MethodFilter {
    match verb {
        HttpVerb::Get => MethodFilter::GET,
        HttpVerb::Post => MethodFilter::POST,
        HttpVerb::Delete => MethodFilter::DELETE,
    }
}

/// Adds the REST routes of the served operations, with and without the tenant prefix. A path
/// whose operations are all absent is not routed at all (404); a served path answers other
/// HTTP methods with 405, and an operation of the table that this router does not serve with
/// 404.
pub(crate) fn mount(router: AppRouter, ops: &OperationSet) -> AppRouter {
    mount_dialect(router, ops, None)
}

/// Adds the A2A 0.3 HTTP+JSON routes of the served operations: each 1.0 route under `/v1`
/// (0.3 has no ListTasks), the extended card at `/v1/card`, no tenant prefix. Their bodies and
/// results are the 0.3 proto's ProtoJSON.
pub(crate) fn mount_v03(router: AppRouter, ops: &OperationSet) -> AppRouter {
    mount_dialect(router, ops, Some(Dialect::V03Rest))
}

/// The 0.3 path of a 1.0 route, if 0.3 has the operation.
fn v03_path(operation: Operation, path: &str) -> Option<String> {
    match operation {
        Operation::ListTasks => None,
        Operation::GetExtendedAgentCard => Some(V03_CARD_PATH.to_string()),
        _ => Some(format!("{V03_PREFIX}{path}")),
    }
}

/// The prefix of the 0.3 HTTP+JSON routes.
pub const V03_PREFIX: &str = "/v1";
/// The 0.3 HTTP+JSON card route (0.3's GetAgentCard).
pub const V03_CARD_PATH: &str = "/v1/card";

fn mount_dialect(mut router: AppRouter, ops: &OperationSet, dialect: Option<Dialect>) -> AppRouter {
    // Every route of the table, grouped by the path axum sees and by method.
    let mut paths: BTreeMap<String, BTreeMap<&'static str, (HttpVerb, Vec<Candidate>)>> =
        BTreeMap::new();
    for operation in Operation::ALL {
        for route in operation.rest_routes() {
            let (path, action, action_param) = axum_path(route.path);
            let path = match dialect {
                None => path,
                Some(_) => match v03_path(operation, &path) {
                    Some(path) => path,
                    None => continue,
                },
            };
            paths
                .entry(path)
                .or_default()
                .entry(route.verb.as_str())
                .or_insert_with(|| (route.verb, Vec::new()))
                .1
                .push(Candidate {
                    operation,
                    route,
                    action,
                    action_param,
                });
        }
    }
    for (path, verbs) in paths {
        let mut methods = MethodRouter::new();
        let mut served = false;
        for (_, (verb, candidates)) in verbs {
            if !candidates.iter().any(|c| ops.contains(c.operation)) {
                continue;
            }
            served = true;
            let candidates = Arc::new(candidates);
            methods = methods.merge(on(
                filter(verb),
                move |state: State<Arc<App>>,
                      http_method: HttpMethod,
                      params: PathParams,
                      headers: HeaderMap,
                      uri: Uri,
                      body: Body| {
                    let candidates = candidates.clone();
                    async move {
                        let request = RestRequest {
                            http_method,
                            path: params,
                            headers,
                            uri,
                            body,
                        };
                        handle(state, &candidates, request, dialect).await
                    }
                },
            ));
        }
        if served {
            router = router.route(&path, methods.clone());
            if dialect.is_none() {
                let prefixed = format!("/{{tenant}}{path}");
                router = router.route(&prefixed, methods);
            }
        }
    }
    router
}

/// The candidate the request names: its path's last segment carries the candidate's action, or
/// no known action when the candidate has none. The path parameters come back with the action
/// taken off.
fn pick(
    candidates: &[Candidate],
    mut params: HashMap<String, String>,
) -> Option<(Candidate, HashMap<String, String>)> {
    // Every action of the table is known on every method: `GET /tasks/t1:cancel` is the
    // cancel route with the wrong method (405), not the task `t1:cancel`.
    let known = |action: &str| {
        Operation::ALL
            .iter()
            .flat_map(|op| op.rest_routes())
            .any(|r| axum_path(r.path).1 == Some(action))
    };
    for candidate in candidates {
        let Some(name) = candidate.action_param.or_else(|| {
            // A route without an action: the last parameter must carry no known action.
            candidates.iter().find_map(|c| c.action_param)
        }) else {
            return Some((*candidate, params));
        };
        let value = params.get(name).cloned().unwrap_or_default();
        let (id, action) = match value.rsplit_once(':') {
            Some((id, action)) if known(action) => (id.to_string(), Some(action)),
            _ => (value, None),
        };
        if action == candidate.action {
            params.insert(name.to_string(), id);
            return Some((*candidate, params));
        }
    }
    None
}

/// Runs one REST call: picks the operation, authenticates, checks the version, builds the
/// operation's JSON request from path, query and body, and calls the service.
/// The parts of a REST request the handler reads.
struct RestRequest {
    http_method: HttpMethod,
    path: PathParams,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
}

async fn handle(
    State(app): State<Arc<App>>,
    candidates: &[Candidate],
    request: RestRequest,
    dialect: Option<Dialect>,
) -> Response {
    let RestRequest {
        http_method,
        path,
        headers,
        uri,
        body,
    } = request;
    let Some((candidate, mut path_params)) = pick(candidates, path.0) else {
        return errors::method_not_allowed(http_method, uri).await;
    };
    let operation = candidate.operation;
    if !app.operations.contains(operation) {
        return not_served(&http_method, &uri);
    }
    // The 0.3 routes are the 1.0 routes under `/v1`: a request there that says it speaks a
    // later version (0.3 clients send no `A2A-Version`) is a 1.0 request of the tenant `v1`,
    // answered as 1.0, errors included. So a tenant named `v1` is served like any other.
    let mut path_tenant = path_params.remove("tenant");
    let dialect = match dialect {
        Some(_) if says_later_than_0(&headers, &uri) => {
            if operation == Operation::GetExtendedAgentCard {
                // `/v1/card` is 0.3's alone; 1.0's is `/{tenant}/extendedAgentCard`.
                return not_served(&http_method, &uri);
            }
            path_tenant = Some(V03_PREFIX.trim_start_matches('/').to_owned());
            None
        }
        other => other,
    };
    if dialect.is_some()
        && operation == Operation::GetExtendedAgentCard
        && app.service.agent_card().capabilities.extended_agent_card != Some(true)
    {
        // 0.3's GetAgentCard: without an extended card, the public one.
        let card = serde_json::to_value(app.service.agent_card()).unwrap_or_default();
        return json_response(StatusCode::OK, &compat::v03_card(card));
    }
    let outcome = async {
        // Authentication first: an unauthenticated caller learns nothing else, and its body is
        // never read.
        let principal = authenticate(&app.service.config().auth, &headers, &uri).await?;
        let version = match dialect {
            None => check_version(&headers, &uri)?,
            Some(dialect) => {
                legacy::check_version(&headers, &uri, uri.path())?;
                dialect.version().into()
            }
        };
        // The body is read only once the version is known to be served; a route without body
        // fields (subscribe) does not look at whatever a client sends along.
        let mut params = if candidate.route.body {
            crate::body::read_object(&headers, body, app.options.max_body_bytes).await?
        } else {
            Map::new()
        };
        if dialect.is_some() {
            params = v03_body(operation, params, &path_params)?;
        }
        params.extend(query_params(&uri, candidate.route.query)?);
        for (name, value) in path_params {
            params.insert(name, Value::String(value));
        }
        if let Some(tenant) = path_tenant {
            // The path's tenant binds the request's field, as in gRPC transcoding.
            params.insert("tenant".into(), Value::String(tenant));
        }
        let tenant = params
            .get("tenant")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut ctx = call_context(&principal, &headers, &tenant);
        ctx.version = version;
        // The service is called here rather than through `crate::invoke`, an `async` layer
        // that would move the call's future once more.
        let request = crate::operation_request(&ctx, operation, Value::Object(params), &headers)?;
        Ok::<_, HttpError>(app.service.call(&ctx, request).await?.into_reply()?)
    }
    .await;
    match outcome {
        Ok(Reply::Json(result)) => match dialect {
            None => json_text_response(StatusCode::OK, String::from(Box::<str>::from(result))),
            Some(_) => json_response(
                StatusCode::OK,
                &legacy::rest_result(operation, Reply::value(&result)),
            ),
        },
        Ok(Reply::Stream(events)) => sse::stream_response(
            events,
            Framed(
                Framing::Rest,
                dialect.map(|dialect| Legacy {
                    dialect,
                    resubscribe: operation == Operation::SubscribeToTask,
                }),
            ),
            app.options.keep_alive,
        ),
        Err(rejected) => {
            tracing::debug!(
                status = rejected.status.as_u16(),
                reason = rejected.error.reason(),
                "REST error"
            );
            let response = match dialect {
                Some(_) if !errors::is_auth_failure(&rejected.error) => v03_error(&rejected),
                _ => rejected.rest_response(),
            };
            if errors::is_auth_failure(&rejected.error) {
                errors::with_challenge(
                    response,
                    &app.service.config().auth,
                    &rejected.error,
                    Some(operation),
                )
            } else {
                response
            }
        }
    }
}

/// Whether the request names a protocol version whose major is not 0 (`A2A-Version`, header or
/// query): a request meant for 1.0 (or a version this server refuses in 1.0's terms).
fn says_later_than_0(headers: &HeaderMap, uri: &Uri) -> bool {
    crate::context::requested_version(headers, uri).is_some_and(|v| {
        v.split('.')
            .next()
            .map(str::trim)
            .and_then(|m| m.parse::<u32>().ok())
            != Some(0)
    })
}

/// An error on the 0.3 HTTP+JSON routes as the 0.3 SDKs' servers send it: a flat JSON-RPC-style
/// `{code, message, data}` body (the JS client types the error by `code`), with their statuses
/// (TaskNotCancelable is 409 there). Authentication failures keep the 1.0 answer.
fn v03_error(rejected: &HttpError) -> Response {
    let error = &rejected.error;
    let status = match error {
        A2AError::TaskNotCancelable { .. } => StatusCode::CONFLICT,
        _ => rejected.status,
    };
    let mut body = a2a_protocol::jsonrpc::failure(&Value::Null, error)["error"].take();
    if body.is_null() {
        body = serde_json::json!({"code": error.json_rpc_code(), "message": error.message()});
    }
    json_response(status, &body)
}

/// A 0.3 proto body as the 1.0 request fields of `operation` (before path and query are added).
fn v03_body(
    operation: Operation,
    body: Map<String, Value>,
    path: &HashMap<String, String>,
) -> Result<Map<String, Value>, A2AError> {
    let translated = match operation {
        Operation::SendMessage | Operation::SendStreamingMessage => {
            inbound::send_message(Value::Object(body), true, &a2a_core::new_id())?
        }
        Operation::CreateTaskPushNotificationConfig => {
            let task_id = path.get("taskId").map(String::as_str).unwrap_or_default();
            inbound::rest_create_push_config(Value::Object(body), task_id)?
        }
        // Cancel's `{name: "tasks/…"}` names the task of the path: nothing to take from it.
        _ => return Ok(Map::new()),
    };
    match translated {
        Value::Object(map) => Ok(map),
        _ => Ok(Map::new()),
    }
}

/// The path parameters of the matched route (none on the unprefixed static routes).
struct PathParams(HashMap<String, String>);

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

/// Picks `fields` (lowerCamelCase names, snake_case accepted too) out of the query string as
/// typed JSON values; other parameters (such as `A2A-Version`) are ignored.
fn query_params(uri: &Uri, fields: &[(&str, QueryKind)]) -> Result<Map<String, Value>, HttpError> {
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
            QueryKind::Text => Value::String(raw.clone()),
            QueryKind::Int => {
                Value::from(raw.trim().parse::<i32>().map_err(|_| bad("an integer"))?)
            }
            QueryKind::Bool => match raw.trim().to_ascii_lowercase().as_str() {
                "true" | "1" => Value::Bool(true),
                "false" | "0" => Value::Bool(false),
                _ => return Err(bad("true or false")),
            },
            QueryKind::State => {
                let state = TaskState::parse(raw.trim())
                    .ok_or_else(|| bad("a task state such as TASK_STATE_WORKING"))?;
                Value::String(state.as_str().to_string())
            }
            QueryKind::Time => {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn candidates_of(path: &str, verb: HttpVerb) -> Vec<Candidate> {
        Operation::ALL
            .into_iter()
            .flat_map(|operation| operation.rest_routes().iter().map(move |r| (operation, r)))
            .filter(|(_, r)| r.verb == verb && axum_path(r.path).0 == path)
            .map(|(operation, route)| {
                let (_, action, action_param) = axum_path(route.path);
                Candidate {
                    operation,
                    route,
                    action,
                    action_param,
                }
            })
            .collect()
    }

    fn picked(path: &str, verb: HttpVerb, id: &str) -> Option<(Operation, String)> {
        let params = HashMap::from([("id".to_string(), id.to_string())]);
        pick(&candidates_of(path, verb), params).map(|(c, p)| (c.operation, p["id"].clone()))
    }

    #[test]
    fn actions_are_split_off_the_last_colon() {
        use HttpVerb::{Get, Post};
        let id = |s: &str| s.to_string();
        assert_eq!(
            picked("/tasks/{id}", Post, "t1:cancel"),
            Some((Operation::CancelTask, id("t1")))
        );
        assert_eq!(
            picked("/tasks/{id}", Post, "t1:subscribe"),
            Some((Operation::SubscribeToTask, id("t1")))
        );
        assert_eq!(
            picked("/tasks/{id}", Get, "t1:subscribe"),
            Some((Operation::SubscribeToTask, id("t1")))
        );
        assert_eq!(
            picked("/tasks/{id}", Get, "t1"),
            Some((Operation::GetTask, id("t1")))
        );
        // An unknown suffix is part of the id; a known action on the wrong method is no route.
        assert_eq!(
            picked("/tasks/{id}", Get, "a:b"),
            Some((Operation::GetTask, id("a:b")))
        );
        assert_eq!(picked("/tasks/{id}", Get, "t1:cancel"), None);
        assert_eq!(picked("/tasks/{id}", Post, "t1"), None);
    }

    #[test]
    fn query_values_are_typed_and_named_in_errors() {
        let fields = &[
            ("pageSize", QueryKind::Int),
            ("includeArtifacts", QueryKind::Bool),
        ];
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
