//! The local front door: serves `shared/hosts/lambda/routes.json` on 127.0.0.1 and forwards each request to
//! its function's Function URL under `cargo lambda watch` (`/lambda-url/<function>/<path>`),
//! streaming the response back, as API Gateway does in front of the deployed functions. With
//! `--front-door function-url` it forwards every request to the one front function instead, as
//! the front door `FunctionUrl` does; with `--function relay` too, to the relay function, as
//! that function's own Function URL does. As API Gateway, a buffered route (a function that does
//! not stream, `routes.json`) gets at most 29 s for its whole answer, then its caller gets 504
//! (`--buffered-timeout-secs`), and an answer over Lambda's 6 MB is API Gateway's 502
//! `{"message": "Internal server error"}`. AWS's request limits are applied before any function is
//! invoked (API Gateway's 10 MiB body, Lambda's 6 MB event: 413), and a streamed answer is cut
//! at Lambda's 200 MiB (`--streamed-limit-bytes`).

use std::net::SocketAddr;
use std::sync::Arc;

use a2a_lambda_tools::{FrontDoor, Invocation, RouteTable};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use clap::Parser;
use futures::TryStreamExt;

#[derive(Debug, Parser)]
#[command(about = "Route REST requests to the functions under `cargo lambda watch`")]
struct Options {
    /// Address to listen on.
    #[arg(long, env = "A2A_ROUTER_ADDR", default_value = "127.0.0.1:9100")]
    addr: SocketAddr,
    /// Where `cargo lambda watch` listens.
    #[arg(long, env = "A2A_WATCH_URL", default_value = "http://127.0.0.1:9000")]
    watch: String,
    /// The route table.
    #[arg(long, default_value = "shared/hosts/lambda/routes.json")]
    routes: std::path::PathBuf,
    /// With `function-url`: the function whose Function URL this router plays (default: the
    /// front function; `relay` for the relay function's own URL).
    #[arg(long)]
    function: Option<String>,
    /// The front door to stand in for (the template's `FrontDoor`).
    #[arg(
        long,
        value_enum,
        env = "A2A_FRONT_DOOR",
        default_value = "api-gateway"
    )]
    front_door: FrontDoor,
    /// With `api-gateway`: the stage every URL starts with (`/a2a`), taken off before routing
    /// as API Gateway does (the functions run with AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH): the
    /// API's base path. Ignored with `function-url`, whose function serves its own base path
    /// (`A2A_BASE_PATH`). Default: none.
    #[arg(long, env = "A2A_ROUTER_STAGE", default_value = "")]
    stage: String,
    /// With `api-gateway`: how long a buffered route's whole answer may take before the caller
    /// gets 504, as API Gateway's integration timeout. Default: API Gateway's 29 s.
    #[arg(long, default_value_t = a2a_lambda_tools::BUFFERED_INTEGRATION_TIMEOUT.as_secs())]
    buffered_timeout_secs: u64,
    /// The most a streamed answer may carry before it is cut, as Lambda cuts a streaming
    /// function's response. Default: Lambda's 200 MiB.
    #[arg(long, default_value_t = a2a_lambda_tools::LAMBDA_MAX_STREAMED_RESPONSE)]
    streamed_limit_bytes: u64,
}

struct App {
    routes: RouteTable,
    /// The function behind this Function URL, when not the front one.
    function: Option<String>,
    front_door: FrontDoor,
    stage: String,
    watch: String,
    http: reqwest::Client,
    buffered_timeout: std::time::Duration,
    streamed_limit: u64,
}

async fn forward(State(app): State<Arc<App>>, request: Request) -> Response {
    let full = request.uri().path();
    let path = match app.front_door {
        FrontDoor::ApiGateway if !app.stage.is_empty() => full
            .strip_prefix(app.stage.as_str())
            .filter(|rest| rest.starts_with('/'))
            .unwrap_or("/no-such-stage")
            .to_owned(),
        _ => full.to_owned(),
    };
    let behind = match (&app.function, app.front_door) {
        (Some(function), FrontDoor::FunctionUrl) => Some(function.as_str()),
        _ => app
            .routes
            .function_behind(app.front_door, request.method().as_str(), &path),
    };
    let Some(function) = behind else {
        let body = serde_json::json!({"error": {"code": 404, "status": "NOT_FOUND",
            "message": format!("no route for {} {path}", request.method())}});
        return (StatusCode::NOT_FOUND, axum::Json(body)).into_response();
    };
    let query = request
        .uri()
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    let url = format!("{}/lambda-url/{function}{path}{query}", app.watch);
    // The task a relayed push is for (the relay route's first segment), for the log.
    let task = path
        .strip_prefix("/a2a-relay/")
        .and_then(|rest| rest.split('/').next())
        .unwrap_or("-");
    // AWS's request limits: API Gateway's 10 MiB, Lambda's 6 MB event. The function is not
    // invoked; its caller gets what AWS answers.
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, a2a_lambda_tools::MAX_FORWARDED_BODY).await else {
        // Past both limits.
        return a2a_lambda_tools::request_too_large(app.front_door);
    };
    if let Some(refusal) = a2a_lambda_tools::refused_request(app.front_door, &parts, &body) {
        tracing::warn!(%function, %path, bytes = body.len(), "request refused as AWS would refuse it");
        return refusal;
    }
    let request = Request::from_parts(parts, Body::from(body));
    let invocation = Invocation::start(function, task);
    let buffered = app.front_door == FrontDoor::ApiGateway
        && app
            .routes
            .functions
            .get(function)
            .is_some_and(|f| !f.streaming);
    let answer = if buffered {
        let timeout = app.buffered_timeout;
        a2a_lambda_tools::forward_buffered(&app.http, &url, request, timeout).await
    } else {
        a2a_lambda_tools::forward(&app.http, &url, request).await
    };
    match answer {
        // The invocation lasts until the function's answer is complete: the guard goes with
        // the stream and logs when it is dropped, after the last byte (or the client left).
        Ok(response) => response.map(|body| {
            // A streamed answer is cut at Lambda's limit (buffered ones were read whole, and
            // one over Lambda's 6 MB answered 502 as API Gateway does).
            let body = if buffered {
                body
            } else {
                a2a_lambda_tools::cut_streamed_response(body, app.streamed_limit)
            };
            Body::from_stream(body.into_data_stream().map_err(move |err| {
                let _ = &invocation;
                err
            }))
        }),
        Err(err) => {
            // Not the URL: its query may hold an API key.
            tracing::error!(
                %function,
                watch = %app.watch,
                %path,
                error = %err.without_url(),
                "function is not reachable"
            );
            (StatusCode::BAD_GATEWAY, "function not reachable").into_response()
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), String> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let options = Options::parse();
    let text = std::fs::read_to_string(&options.routes)
        .map_err(|e| format!("cannot read {}: {e}", options.routes.display()))?;
    let app = Arc::new(App {
        routes: RouteTable::parse(&text)?,
        function: options.function.clone(),
        front_door: options.front_door,
        stage: options.stage.trim_end_matches('/').to_owned(),
        watch: options.watch.trim_end_matches('/').to_owned(),
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?,
        buffered_timeout: std::time::Duration::from_secs(options.buffered_timeout_secs),
        streamed_limit: options.streamed_limit_bytes,
    });
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", options.addr))?;
    tracing::info!(
        addr = %options.addr,
        watch = %app.watch,
        front_door = ?app.front_door,
        "a2a-lambda-router listening"
    );
    let router = axum::Router::new().fallback(forward).with_state(app);
    axum::serve(listener, router)
        .await
        .map_err(|e| e.to_string())
}
