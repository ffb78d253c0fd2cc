//! The glue between the A2A core and AWS Lambda: everything a function needs beyond its few
//! lines of `main.rs`.
//!
//! - [`Settings`]: the environment a function reads (set by `template.yaml`, or by the env file
//!   of `cargo lambda watch` locally);
//! - [`Init`]: what a function builds once, in the init phase: the AWS clients, the adapters,
//!   the service configuration and (for the functions that need them) the push signing keys;
//! - [`serve_http`]: an HTTP function, serving the slice of the A2A surface of its
//!   [`HttpFunction`] through `lambda_http`, buffered or with response streaming (SSE);
//! - [`run_worker`] and [`run_push`]: the SQS functions, with partial batch failures.
//!
//! The routes of the front door and which functions stream live in `infra/routes.json`, shared
//! by the template test and the local router; [`HttpFunction`] is the Rust side of it.

mod http;
mod settings;
mod sqs;

use std::sync::Arc;

pub use http::{serve_http, HttpFunction};
pub use lambda_runtime::Error;
pub use settings::{build_auth, load_keys, Init, Settings};
pub use sqs::{run_push, run_worker, PushBatch, WorkBatch};

/// Logs to stdout in the form CloudWatch keeps (no colours, no timestamps: Lambda adds them).
/// `RUST_LOG` sets the filter (the template sets it from its `LogLevel` parameter).
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .try_init();
}

/// The agent a function serves, as an `Arc` (what [`A2aService`](a2a_core::A2aService) takes).
pub fn agent<A: a2a_core::Agent>(agent: A) -> Arc<dyn a2a_core::Agent> {
    Arc::new(agent)
}
