//! The glue between the A2A core and AWS Lambda: everything a function needs beyond its few
//! lines of `main.rs`.
//!
//! - [`Settings`]: the environment a function reads (set by `template.yaml`, or by the env file
//!   of `cargo lambda watch` locally);
//! - [`Init`]: what a function builds once, in the init phase: the AWS clients, the adapters,
//!   the service configuration and (for the functions that need them) the push signing keys;
//! - [`serve_http`]: an HTTP function, serving the slice of the A2A surface of its
//!   [`HttpFunction`] through `lambda_http`, buffered, or with response streaming (SSE) handed
//!   to the Runtime API in as few writes as it takes (`streamed.rs`);
//! - [`run_worker`] and [`run_push`]: the SQS functions, with partial batch failures;
//! - [`run_fanout`]: the consumer of the task table's stream, which turns each write of a task
//!   with push configs into its push jobs;
//! - [`run`]: the one entry point of every function's binary, which picks the [`Function`]
//!   from the environment (`A2A_FUNCTION`).
//!
//! The routes of the front door and which functions stream live in `shared/hosts/lambda/routes.json`, shared
//! by the template test and the local router; [`HttpFunction`] is the Rust side of it.

mod buffered;
mod channel;
mod fanout;
mod function;
mod http;
pub mod metrics;
mod remote;
mod role;
mod secret;
mod settings;
mod spans;
mod sqs;
mod streamed;

pub use channel::{lite_settings_from, LiteSource, ENV_LITE_SECRET_ARN};
pub use fanout::{run_fanout, FanoutBatch};
pub use function::run;
pub use http::serve_http;
pub use lambda_runtime::Error;
pub use metrics::EmfObserver;
/// The allocator the functions are measured with (docs/lambda.md): declare it once in the
/// program, as the `a2a-function` crate and a generated project's `src/bin/lambda.rs` do:
/// `#[global_allocator] static ALLOCATOR: a2a_lambda_glue::Allocator =
/// a2a_lambda_glue::Allocator;`. A warm request allocates and frees a few thousand small
/// blocks (the SDK's requests, the event, the task's JSON): glibc's allocator spent about a
/// fifth of a warm send's CPU on them, `malloc_consolidate` included.
pub use mimalloc::MiMalloc as Allocator;
pub use remote::RemoteSettings;
pub use role::{
    Function, HttpFunction, KeyUse, UnknownFunction, ENV_FUNCTION, ENV_LAMBDA_FUNCTION_NAME,
};
pub use settings::{agent_credentials_source, build_auth, key_source, load_keys, Init, Settings};
pub use spans::{ENV_SIGN_FOR, EXPORT_TIMEOUT};
pub use sqs::{
    hand_over_at, run_push, run_worker, PushBatch, WorkBatch, HANDOVER_MARGIN,
    LOCAL_TIMEOUT_VARIABLE,
};

/// Logs to stdout in the form CloudWatch keeps, no colours; exports spans over OTLP when the
/// environment asks for it (`src/spans.rs`, docs/tracing.md).
///
/// With Lambda's JSON log format (`AWS_LAMBDA_LOG_FORMAT=JSON`, the template's
/// `LoggingConfig`), each line is one JSON object with `timestamp`, `level` and `message` (what
/// Lambda needs to filter by `ApplicationLogLevel`), the event's fields, and under `span` the
/// invocation's `requestId` and `xrayTraceId` (set by `lambda_runtime` on every line logged
/// while it handles an invocation). Otherwise, plain text without timestamps (Lambda adds
/// them). The level is `AWS_LAMBDA_LOG_LEVEL` (Lambda sets it from `ApplicationLogLevel`),
/// else `RUST_LOG`, else `info`; it applies to the log lines only (the exported spans are the
/// kit's, at TRACE).
pub fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;
    let filter = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .ok()
        .and_then(|level| tracing_subscriber::EnvFilter::try_new(level.to_lowercase()).ok())
        .or_else(|| tracing_subscriber::EnvFilter::try_from_default_env().ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("info"));
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let failed = match spans::layer() {
        // The level filters the log lines only: the exported spans are at TRACE.
        Ok(Some(spans)) => {
            let _ = tracing_subscriber::registry()
                .with(log_lines(json).with_filter(filter))
                .with(spans)
                .try_init();
            None
        }
        // No spans: one global filter, as cheap per event as before spans were exported.
        other => {
            let _ = tracing_subscriber::registry()
                .with(filter)
                .with(log_lines(json))
                .try_init();
            other.err()
        }
    };
    if let Some(err) = failed {
        tracing::warn!(error = %err, "spans are not exported");
    }
}

/// The log lines' layer: Lambda's JSON form, or plain text (see [`init_logging`]).
fn log_lines<S>(json: bool) -> Box<dyn tracing_subscriber::Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer as _;
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_target(false);
    if json {
        fmt.json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .boxed()
    } else {
        fmt.without_time().boxed()
    }
}

/// One-off set-up the first request would otherwise pay, done in the init phase (which Lambda
/// gives a full CPU and does not bill to the caller's latency): aws-lc's CPU feature detection
/// and random generator seeding, which every TLS handshake and signature needs. No network.
pub fn warm_up() {
    aws_lc_rs::init();
    let mut seed = [0u8; 32];
    let _ = aws_lc_rs::rand::fill(&mut seed);
}
