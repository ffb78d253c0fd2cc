//! The HTTP listener: the address bound (with an error that says what to do when it cannot
//! be), connections served within limits, and the graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::sync::Semaphore;

/// How long a graceful shutdown waits for open requests and streams.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Listens on `addr` (`--addr`); the error names the address, the cause and the way out.
pub(crate) async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        let next = match e.kind() {
            std::io::ErrorKind::AddrInUse => format!(
                "another process listens on port {} (another a2a-local?): stop it, or choose \
                 another address with --addr (or A2A_ADDR), e.g. --addr {}:{}",
                addr.port(),
                addr.ip(),
                addr.port().wrapping_add(1).max(1024)
            ),
            std::io::ErrorKind::PermissionDenied => {
                "ports below 1024 need privileges: choose a higher one with --addr (or \
                 A2A_ADDR)"
                    .to_string()
            }
            std::io::ErrorKind::AddrNotAvailable => format!(
                "{} is no address of this machine: choose one with --addr (or A2A_ADDR), e.g. \
                 --addr 127.0.0.1:{}",
                addr.ip(),
                addr.port()
            ),
            _ => "choose another address with --addr (or A2A_ADDR)".to_string(),
        };
        format!("cannot listen on {addr}: {e}; {next}")
    })
}

/// What one connection may take from the server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    pub(crate) header_timeout: Duration,
    pub(crate) max_connections: usize,
}

/// Serves `app` over HTTP/1 until `shutdown` resolves, then stops accepting, runs `stopping`
/// (which ends the open streams cleanly), lets open connections finish for
/// [`SHUTDOWN_GRACE`] and drops the rest.
///
/// A loop of our own rather than `axum::serve`, which sets no header read timeout: without one,
/// a client that sends half a request holds its connection (and a task) forever.
pub(crate) async fn serve_http(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
    stopping: impl Future<Output = ()>,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    // A permit per open connection: at the cap, the next one is not accepted (it waits in
    // the kernel's backlog) until one closes.
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = slots.clone().acquire_owned() => {
                permit.expect("the connection semaphore is never closed")
            }
        };
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(err) => {
                    // Out of file descriptors and the like: back off a little rather than
                    // spin on an error that the next accept would give again.
                    tracing::warn!("cannot accept a connection: {err}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let connection =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!("connection ended: {err}");
            }
            drop(permit);
        });
    }
    tracing::info!("shutting down");
    drop(listener);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, stopping).await;
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::info!("open connections did not finish in time: closing them");
    }
}
