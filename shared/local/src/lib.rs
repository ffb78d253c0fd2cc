//! The local server: the full A2A router on one address, the embedded store in one file under
//! a data directory, and the worker and push-delivery loops running in-process on the same job
//! types the Lambda worker and push functions consume.

mod backend;
mod loops;

pub use backend::StoreKind;

use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{
    A2aService, Agent, KeyFile, PushPolicy, PushSigner, ServiceConfig, SigningAlgorithm,
};
use a2a_http::{router, HttpOptions};
use a2a_protocol::{AgentInterface, BINDING_HTTP_JSON, BINDING_JSONRPC, PROTOCOL_VERSION};
use a2a_reference_agent::ReferenceAgent;
use clap::Parser;
use tokio::sync::watch;

/// How long a graceful shutdown waits for open requests and streams.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Command-line options (each with an environment variable).
#[derive(Debug, Clone, Parser)]
#[command(
    name = "a2a-local",
    version,
    about = "Run an A2A 1.0 agent locally on an embedded store"
)]
pub struct Options {
    /// Address to listen on.
    #[arg(long, env = "A2A_ADDR", default_value = "127.0.0.1:9000")]
    pub addr: SocketAddr,
    /// Directory holding the store file (created if missing).
    #[arg(long, env = "A2A_DATA_DIR", default_value = "./.a2a")]
    pub data_dir: PathBuf,
    /// Webhook hosts push notifications may be sent to (comma-separated). Loopback by default.
    #[arg(
        long,
        env = "A2A_PUSH_ALLOW_HOSTS",
        value_delimiter = ',',
        default_value = "127.0.0.1,localhost,::1"
    )]
    pub push_allow_hosts: Vec<String>,
    /// Algorithm of the push signing key generated on first start (ES256 or RS256). The key
    /// lives in `<data-dir>/push-signing-keys.json`; an existing file is used as it is.
    #[arg(long, env = "A2A_PUSH_SIGNING_ALG", default_value = "ES256")]
    pub push_signing_alg: SigningAlgorithm,
    /// Where tasks and queues live: `embedded` (one SQLite file under --data-dir) or
    /// `dynamodb` (DynamoDB + SQS, named by A2A_TABLE, A2A_WORK_QUEUE_URL and
    /// A2A_PUSH_QUEUE_URL, or created with --create-resources).
    #[arg(long, env = "A2A_STORE", value_enum, default_value = "embedded")]
    pub store: StoreKind,
    /// With `--store dynamodb`: create a table and queues whose names start with this prefix
    /// (for emulators such as moto) instead of reading their names from the environment.
    #[arg(long, env = "A2A_CREATE_RESOURCES")]
    pub create_resources: Option<String>,
    /// Days tasks are kept.
    #[arg(long, env = "A2A_RETENTION_DAYS", default_value_t = 30)]
    pub retention_days: u64,
    /// Seconds a queued job stays invisible to other workers while it runs; a job whose worker
    /// died is redelivered after this.
    #[arg(long, env = "A2A_WORK_VISIBILITY_SECS", default_value_t = 60)]
    pub work_visibility_secs: u64,
    /// Seconds one SSE stream may last before it ends (the client resubscribes).
    #[arg(long, env = "A2A_MAX_STREAM_SECS", default_value_t = 3600)]
    pub max_stream_secs: u64,
}

/// Logs to stderr; `RUST_LOG` sets the level (default `info`).
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

/// Serves the reference agent until `shutdown` resolves.
pub async fn run(
    options: Options,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    serve(options, Arc::new(ReferenceAgent), shutdown).await
}

/// Serves `agent` until `shutdown` resolves, then stops accepting requests and the loops.
pub async fn serve(
    options: Options,
    agent: Arc<dyn Agent>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let backend = backend::Backend::open(&options).await?;
    // Before the listener: a bad key file stops the start with a clear error.
    let key_file = KeyFile::in_dir(&options.data_dir, options.push_signing_alg);
    let keys = key_file
        .load_or_create()
        .map_err(|e| format!("cannot load the push signing keys: {e}"))?;
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", options.addr))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let base = format!("http://{addr}");
    let http_options = HttpOptions::default();
    let config = ServiceConfig {
        interfaces: vec![
            AgentInterface {
                url: format!("{base}{}", http_options.jsonrpc_path),
                protocol_binding: BINDING_JSONRPC.into(),
                protocol_version: PROTOCOL_VERSION.into(),
                tenant: String::new(),
            },
            AgentInterface {
                url: base.clone(),
                protocol_binding: BINDING_HTTP_JSON.into(),
                protocol_version: PROTOCOL_VERSION.into(),
                tenant: String::new(),
            },
        ],
        retention: Duration::from_secs(options.retention_days.max(1) * 24 * 3600),
        max_stream_duration: Duration::from_secs(options.max_stream_secs.max(1)),
        background_inline: true,
        push_policy: PushPolicy {
            allowed_hosts: options.push_allow_hosts.clone(),
            require_https: false,
        },
        // The issuer is the base URL: receivers find the JWKS at `{iss}/.well-known/jwks.json`.
        push_signer: Some(PushSigner::new(keys, base.clone())),
        // The lease on a task must not outlive the job's visibility, or a redelivered job
        // would wait for a lease that nobody renews.
        lease_duration: Duration::from_secs(options.work_visibility_secs.max(1)),
        ..ServiceConfig::default()
    };
    let service = A2aService::new(
        config,
        agent,
        backend.store.clone(),
        backend.work.clone(),
        backend.push.clone(),
    );
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut loops = vec![
        tokio::spawn(loops::worker_loop(
            service.clone(),
            backend.work_queue.clone(),
            Duration::from_secs(options.work_visibility_secs.max(1)),
            stop_rx.clone(),
        )),
        tokio::spawn(loops::push_loop(
            service.clone(),
            backend.push_queue.clone(),
            stop_rx.clone(),
        )),
    ];
    if let Some(store) = &backend.embedded {
        loops.push(tokio::spawn(loops::purge_loop(
            store.clone(),
            stop_rx.clone(),
        )));
    }
    tracing::info!(
        "a2a-local serving on {base}; agent card at {base}/.well-known/agent-card.json, push \
         signing keys at {base}/.well-known/jwks.json ({})",
        backend.description
    );
    let app = router(service.clone(), http_options);
    // Open SSE streams would hold a graceful shutdown for as long as they last: once the signal
    // came, give in-flight requests a moment, then stop regardless.
    let signalled = Arc::new(tokio::sync::Notify::new());
    let notify = signalled.clone();
    let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
        shutdown.await;
        tracing::info!("shutting down");
        notify.notify_one();
    });
    let served = tokio::select! {
        served = serve.into_future() => served.map_err(|e| format!("server error: {e}")),
        _ = async {
            signalled.notified().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => Ok(()),
    };
    let _ = stop_tx.send(true);
    service.shutdown().await;
    for handle in loops {
        let _ = handle.await;
    }
    tracing::info!("a2a-local stopped");
    served
}
