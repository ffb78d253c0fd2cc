//! The JSON-RPC binding: one POST endpoint for every method.
//!
//! Every A2A error, including the transport checks (Content-Type, size, version), is a JSON-RPC
//! error object in an HTTP 200 response, as the Python and Go servers do. For the streaming
//! methods an error found before the stream starts is sent as the only event of an event
//! stream, because the Go client reads nothing but `data:` lines once it asked for a stream.
//!
//! Authentication and authorization failures are the exception: HTTP 401 (missing or invalid
//! credentials, JSON-RPC code -31401) or 403 (a permission is missing, -31403), with the
//! JSON-RPC error object as the body and a `WWW-Authenticate` challenge, for every method
//! including the streaming ones. This is what the Go server does, and what the spec asks of
//! every HTTP binding (§3.3.2, §7.4): HTTP clients, proxies and token-refreshing middleware
//! all recognise a 401, none of them read it out of a 200 body or an event stream.

use std::future::Future;
use std::sync::Arc;

use a2a_core::{CallContext, OperationRequest, Principal, Reply};
use a2a_protocol::jsonrpc::{self, Call, Params};
use a2a_protocol::operation::is_legacy_method_name;
use a2a_protocol::A2AError;
use a2a_protocol::Operation;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;

use crate::context::{authenticate, call_context, check_version};
use crate::errors::{is_auth_failure, json_response, json_text_response, with_challenge};
use crate::legacy::{self, Endpoint, LegacyMethod, LegacyReply};
use crate::sse::{self, Framed, Framing, Legacy};
use crate::App;

/// The answer to an authentication or authorization failure: HTTP 401/403 with the JSON-RPC
/// error as the body and the deployment's challenge.
fn auth_answer(app: &App, id: &Value, error: &A2AError, method: Option<Operation>) -> Response {
    let status = StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::UNAUTHORIZED);
    let response = json_response(status, &jsonrpc::failure(id, error));
    with_challenge(response, &app.service.config().auth, error, method)
}

fn answer(id: &Value, error: &A2AError) -> Response {
    tracing::debug!(
        code = error.json_rpc_code(),
        reason = error.reason(),
        "JSON-RPC error"
    );
    json_response(StatusCode::OK, &jsonrpc::failure(id, error))
}

/// `POST <jsonrpc_path>`: every version's methods.
///
/// The handlers are plain functions that return [`serve`]'s future rather than `async`
/// functions awaiting it: an `async` layer would move that future (kilobytes) once more per
/// request.
pub(crate) fn handle(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> impl Future<Output = Response> {
    serve(app, headers, uri, body, Endpoint::Generic, false)
}

/// Hexagon's early-protocol paths (`POST /tasks`, `/tasks/sendSubscribe`,
/// `/tasks/resubscribe`): JSON-RPC with the early methods only.
pub(crate) fn handle_early(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> impl Future<Output = Response> {
    serve(app, headers, uri, body, Endpoint::Early, false)
}

/// python-a2a's resubscription path (`/tasks/stream`): the early methods, with its client's
/// own event framing ([`Framing::PythonA2a`]).
pub(crate) fn handle_python_a2a_stream(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> impl Future<Output = Response> {
    serve(app, headers, uri, body, Endpoint::Early, true)
}

/// One JSON-RPC call on `endpoint`; `python_a2a`: old streams in python-a2a's framing.
async fn serve(
    app: Arc<App>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
    endpoint: Endpoint,
    python_a2a: bool,
) -> Response {
    let bytes = match crate::body::read(&headers, body, app.options.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(rejected) => return answer(&Value::Null, &rejected.error),
    };
    let Call {
        id,
        method: name,
        params,
    } = match Call::parse(&bytes) {
        Ok(call) => call,
        Err((id, error)) => return answer(&id, &error),
    };
    // A method this router does not serve is as unknown as a misspelt one.
    let method = Operation::from_name(&name).filter(|m| app.operations.contains(*m));
    // Authentication before anything else about the call is looked at; the body had to be
    // parsed first only so that the error can echo the request id.
    let principal = match authenticate(&app.service.config().auth, &headers, &uri).await {
        Ok(principal) => principal,
        Err(error) => return auth_answer(&app, &id, &error, method),
    };
    if is_legacy_method_name(&name) {
        let call = LegacyCall {
            id,
            name: &name,
            params,
            endpoint,
            python_a2a,
        };
        // Boxed: a rare call, whose future would otherwise size every 1.0 call's.
        return Box::pin(serve_legacy(&app, &headers, &uri, &principal, call)).await;
    }
    if endpoint == Endpoint::Early {
        return answer(
            &id,
            &A2AError::MethodNotFound(format!(
                "Method {name:?} not found: this path serves the early protocol (tasks/send, …)"
            )),
        );
    }
    tracing::debug!(rpc_method = %name, "JSON-RPC call");
    // The service is called here, not in an `async` block or through `crate::invoke`: each
    // such layer would move the call's future once more.
    let outcome = match current_call(&principal, &headers, &uri, method, &name, params) {
        Ok((ctx, request)) => app
            .service
            .call(&ctx, request)
            .await
            .and_then(|r| r.into_reply()),
        Err(error) => Err(error),
    };
    match outcome {
        Ok(Reply::Json(result)) => {
            json_text_response(StatusCode::OK, jsonrpc::success_text(&id, &result))
        }
        Ok(Reply::Stream(events)) => {
            sse::stream_response(events, Framing::JsonRpc(id), app.options.keep_alive)
        }
        Err(error) if is_auth_failure(&error) => auth_answer(&app, &id, &error, method),
        Err(error) if method.is_some_and(Operation::is_streaming) => {
            tracing::debug!(
                code = error.json_rpc_code(),
                reason = error.reason(),
                "JSON-RPC error before the stream"
            );
            sse::json_rpc_error_stream(&id, &error)
        }
        Err(error) => answer(&id, &error),
    }
}

/// A 1.0 call's context and request: the version checked, the method known, the tenant taken
/// from params (where this binding carries it).
fn current_call(
    principal: &Principal,
    headers: &HeaderMap,
    uri: &Uri,
    method: Option<Operation>,
    name: &str,
    params: Params<'_>,
) -> Result<(CallContext, OperationRequest), A2AError> {
    let version = check_version(headers, uri)?;
    let method =
        method.ok_or_else(|| A2AError::MethodNotFound(format!("Method {name:?} not found")))?;
    let mut request = crate::decoded_request(method, params, headers)?;
    // This binding carries the tenant in params: the request has it.
    let mut ctx = call_context(principal, headers, request.tenant_mut());
    ctx.version = version;
    Ok((ctx, request))
}

/// A call of an old version's method, and where it came in.
struct LegacyCall<'a> {
    id: Value,
    name: &'a str,
    params: Params<'a>,
    endpoint: Endpoint,
    /// Whether its stream is framed as python-a2a reads it.
    python_a2a: bool,
}

/// An old version's method (its name has a `/`): looked up, version-checked, translated and
/// run as its 1.0 operation ([`crate::legacy`]).
async fn serve_legacy(
    app: &App,
    headers: &HeaderMap,
    uri: &Uri,
    principal: &Principal,
    call: LegacyCall<'_>,
) -> Response {
    let LegacyCall {
        id,
        name,
        params,
        endpoint,
        python_a2a,
    } = call;
    let older_versions = app.service.config().older_versions;
    let method = LegacyMethod::find(name, older_versions, endpoint).and_then(|m| {
        if app.operations.contains(m.operation) {
            Ok(m)
        } else {
            Err(A2AError::MethodNotFound(format!(
                "Method {name:?} not found"
            )))
        }
    });
    let streaming = method.as_ref().is_ok_and(|m| m.operation.is_streaming());
    let operation = method.as_ref().ok().map(|m| m.operation);
    let outcome = async {
        let method = method?;
        legacy::check_version(headers, uri, name)?;
        legacy::call(app, principal, headers, method, params.into_value()?).await
    }
    .await;
    match outcome {
        Ok(LegacyReply::Json(result)) => {
            json_response(StatusCode::OK, &jsonrpc::success(&id, result))
        }
        Ok(LegacyReply::Stream(events, dialect)) => {
            let legacy = Legacy {
                dialect,
                resubscribe: operation == Some(Operation::SubscribeToTask),
            };
            let framing = if python_a2a {
                Framing::PythonA2a(id)
            } else {
                Framing::JsonRpc(id)
            };
            sse::stream_response(
                events,
                Framed(framing, Some(legacy)),
                app.options.keep_alive,
            )
        }
        Err(error) if is_auth_failure(&error) => auth_answer(app, &id, &error, operation),
        Err(error) if streaming => sse::json_rpc_error_stream(&id, &error),
        Err(error) => answer(&id, &error),
    }
}
