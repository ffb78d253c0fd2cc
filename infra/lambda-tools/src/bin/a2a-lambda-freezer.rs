//! Lambda's freeze, locally: a proxy in front of `cargo lambda watch` that stops a function's
//! process (SIGSTOP) once it has no invocation in flight, and lets it go on (SIGCONT) when the
//! next one arrives, as Lambda freezes an execution environment between invocations.
//!
//! Under `cargo lambda watch` alone a function's process keeps running after its answer, so
//! work a function leaves running past its response (a lease given back, a push fan-out, a
//! write) happens locally and never on AWS, where it waits for the next invocation or is lost
//! with the instance. Behind this proxy it is frozen there too, and a test that depends on it
//! fails. Every caller of the functions (the router, the pollers, the tests) goes through it:
//! Function URL requests (`/lambda-url/<function>/…`) and the Invoke API
//! (`/2015-03-31/functions/<function>/invocations`).
//!
//! It also plays an invocation that did its work but failed to answer (a runtime that died after
//! its writes, an answer past the caller's timeout): `POST /faults` with
//! `{"function": "worker", "lose": 1}` makes the next invocation of that function run to its
//! end, then answers its caller 502, as Lambda reports a function error. Its caller retries as
//! Lambda would: SQS hands the batch out again after its visibility timeout, a stream's batch
//! is retried. `GET /faults` says how many answers are still to be lost and how many were.
//!
//! And it ends an invocation at its function's `Timeout` (`--env-dir`: each function's local
//! environment file carries it), as Lambda does: the caller gets 502 with Lambda's
//! `Sandbox.Timedout` error, or its stream breaks off. Each one is counted (`timed_out` in
//! `GET /faults`), and the Lambda suite fails when any happened: work that would be killed on
//! AWS fails a test here. (The process itself runs on: `cargo lambda watch` cannot start one
//! function again.)
//!
//! An invocation lasts until its whole answer has been passed on (a stream to its last byte).
//! The function's process is found among the descendants of watch's process by its
//! executable's name (watch runs `cargo run --bin <function>`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use clap::Parser;
use futures::TryStreamExt;

#[derive(Debug, Parser)]
#[command(about = "Freeze the functions under `cargo lambda watch` between invocations")]
struct Options {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9300")]
    addr: SocketAddr,
    /// Where `cargo lambda watch` listens.
    #[arg(long, default_value = "http://127.0.0.1:9200")]
    watch: String,
    /// The file holding the process id of `cargo lambda watch`, whose descendants are the
    /// functions: read at each invocation, so a restarted watch is followed.
    #[arg(long)]
    watch_pid_file: std::path::PathBuf,
    /// The directory of each function's environment file (`<function>.env`), whose
    /// `A2A_LOCAL_INVOCATION_TIMEOUT_SECS` is the function's `Timeout`: read at each invocation,
    /// so a restart with other settings is followed. Without it, no invocation times out.
    #[arg(long)]
    env_dir: Option<std::path::PathBuf>,
}

struct App {
    watch: String,
    watch_pid_file: std::path::PathBuf,
    env_dir: Option<std::path::PathBuf>,
    http: reqwest::Client,
    /// Invocations in flight, per function.
    in_flight: Mutex<HashMap<String, usize>>,
    /// Answers to lose, and answers lost, per function (`POST /faults`).
    faults: Mutex<Faults>,
}

/// The answers the proxy loses (see the module's doc).
#[derive(Debug, Default, serde::Serialize)]
struct Faults {
    /// Answers still to be lost, per function.
    pending: HashMap<String, u32>,
    /// Answers lost so far, per function.
    lost: HashMap<String, u32>,
    /// Invocations ended at their function's timeout, per function.
    timed_out: HashMap<String, u32>,
}

/// `POST /faults`: lose the next `lose` answers of `function`.
#[derive(Debug, serde::Deserialize)]
struct LoseAnswers {
    function: String,
    lose: u32,
}

impl App {
    /// The processes of `function` now.
    fn processes(&self, function: &str) -> Vec<u32> {
        std::fs::read_to_string(&self.watch_pid_file)
            .ok()
            .and_then(|pid| pid.trim().parse().ok())
            .map_or_else(Vec::new, |watch| processes_of(watch, function))
    }

    /// The `Timeout` of `function`, from its environment file.
    fn timeout_of(&self, function: &str) -> Option<std::time::Duration> {
        let file = self.env_dir.as_ref()?.join(format!("{function}.env"));
        a2a_lambda_tools::timeout_in_env_file(&std::fs::read_to_string(file).ok()?)
    }

    /// An invocation of `function` reached its timeout.
    fn timed_out(&self, function: &str) {
        tracing::error!(
            function,
            "an invocation reached its function's timeout: Lambda would end it"
        );
        let mut faults = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        *faults.timed_out.entry(function.to_owned()).or_default() += 1;
    }

    /// Whether this invocation of `function` loses its answer (and counts it if so).
    fn loses_answer(&self, function: &str) -> bool {
        let mut faults = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        match faults.pending.get_mut(function) {
            Some(left) if *left > 0 => {
                *left -= 1;
                *faults.lost.entry(function.to_owned()).or_default() += 1;
                true
            }
            _ => false,
        }
    }

    /// An invocation of `function` starts: its process runs (again).
    fn begin(&self, function: &str) {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        let count = in_flight.entry(function.to_owned()).or_default();
        *count += 1;
        // Sent on every start, not only the first: a process watch started meanwhile, or one a
        // signal missed, is never left stopped with an invocation waiting for it.
        signal(&self.processes(function), "CONT");
    }

    /// An invocation of `function` ended: with none left in flight, its process freezes.
    fn end(&self, function: &str) {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        let count = in_flight.entry(function.to_owned()).or_default();
        *count = count.saturating_sub(1);
        if *count == 0 {
            // Under the lock: a new invocation cannot thaw it between the count and the stop.
            signal(&self.processes(function), "STOP");
        }
    }
}

/// Ends its invocation when dropped: after the answer's last byte, or when the caller left.
struct InFlight {
    app: Arc<App>,
    function: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.app.end(&self.function);
    }
}

/// The function a request to watch invokes, from its path.
fn function_of(path: &str) -> Option<&str> {
    let name = if let Some(rest) = path.strip_prefix("/lambda-url/") {
        rest.split('/').next()
    } else {
        path.strip_prefix("/2015-03-31/functions/")
            .and_then(|rest| rest.split('/').next())
    }?;
    (!name.is_empty()).then_some(name)
}

/// The processes below `ancestor` whose executable is named `function`.
fn processes_of(ancestor: u32, function: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut parents = HashMap::new();
    let mut named = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Some(parent) = parent_of(pid) else {
            continue;
        };
        parents.insert(pid, parent);
        let exe = std::fs::read_link(entry.path().join("exe")).ok();
        let name = exe
            .as_ref()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .map(|n| n.trim_end_matches(" (deleted)"));
        if name == Some(function) {
            named.push(pid);
        }
    }
    named
        .into_iter()
        .filter(|pid| {
            let mut at = *pid;
            // Bounded: a cycle cannot happen in /proc, but a racing reuse of ids could.
            for _ in 0..64 {
                match parents.get(&at) {
                    Some(&parent) if parent == ancestor => return true,
                    Some(&parent) if parent > 1 => at = parent,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}

/// The parent of process `pid`, from `/proc/<pid>/stat` (the field after the command's `)`).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Sends SIGSTOP or SIGCONT (`which`) to `pids`.
fn signal(pids: &[u32], which: &str) {
    if pids.is_empty() {
        return;
    }
    let status = std::process::Command::new("kill")
        .arg(format!("-{which}"))
        .args(pids.iter().map(u32::to_string))
        .status();
    if !status.is_ok_and(|s| s.success()) {
        tracing::warn!(?pids, which, "could not signal the function's process");
    }
}

/// `POST /faults`: the answers to lose from now on.
async fn set_faults(
    State(app): State<Arc<App>>,
    axum::Json(lose): axum::Json<LoseAnswers>,
) -> Response {
    let mut faults = app.faults.lock().unwrap_or_else(|e| e.into_inner());
    faults.pending.insert(lose.function, lose.lose);
    axum::Json(&*faults).into_response()
}

/// `GET /faults`: the answers still to lose, and those lost.
async fn faults(State(app): State<Arc<App>>) -> Response {
    let faults = app.faults.lock().unwrap_or_else(|e| e.into_inner());
    axum::Json(&*faults).into_response()
}

async fn forward(State(app): State<Arc<App>>, request: Request) -> Response {
    let path_and_query = request
        .uri()
        .path_and_query()
        .map(|pq| pq.as_str().to_owned())
        .unwrap_or_default();
    let url = format!("{}{path_and_query}", app.watch);
    let function = function_of(request.uri().path()).map(str::to_owned);
    let lose = function.as_deref().is_some_and(|f| app.loses_answer(f));
    // The function's Timeout, and when this invocation reaches it.
    let deadline = function.as_deref().and_then(|f| {
        let timeout = app.timeout_of(f)?;
        Some((f.to_owned(), timeout, tokio::time::Instant::now() + timeout))
    });
    let in_flight = function.map(|function| {
        app.begin(&function);
        InFlight {
            app: app.clone(),
            function,
        }
    });
    let answer = a2a_lambda_tools::forward(&app.http, &url, request);
    let result = match &deadline {
        None => answer.await,
        Some((function, timeout, at)) => match tokio::time::timeout_at(*at, answer).await {
            Ok(result) => result,
            Err(_) => {
                app.timed_out(function);
                drop(in_flight);
                return (
                    StatusCode::BAD_GATEWAY,
                    axum::Json(serde_json::json!({
                        "errorType": "Sandbox.Timedout",
                        "errorMessage": format!("Task timed out after {}.00 seconds", timeout.as_secs()),
                    })),
                )
                    .into_response();
            }
        },
    };
    if lose {
        // The function runs to its end (its whole answer is read), and its caller never hears.
        if let Ok(response) = result {
            let _ = axum::body::to_bytes(response.into_body(), usize::MAX).await;
        }
        drop(in_flight);
        tracing::warn!(url, "lost the invocation's answer (POST /faults)");
        return (
            StatusCode::BAD_GATEWAY,
            "the function's answer was lost (POST /faults)",
        )
            .into_response();
    }
    match result {
        // The invocation lasts until its answer is passed on whole.
        Ok(response) => response.map(|body| {
            let body = match deadline {
                Some((function, _, at)) => {
                    let app = app.clone();
                    a2a_lambda_tools::end_body_at(body, at, move || app.timed_out(&function))
                }
                None => body,
            };
            Body::from_stream(body.into_data_stream().map_err(move |err| {
                let _ = &in_flight;
                err
            }))
        }),
        Err(err) => {
            tracing::error!(watch = %app.watch, error = %err.without_url(), "watch is not reachable");
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
    let app = Arc::new(App {
        watch: options.watch.trim_end_matches('/').to_owned(),
        watch_pid_file: options.watch_pid_file,
        env_dir: options.env_dir,
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?,
        in_flight: Mutex::new(HashMap::new()),
        faults: Mutex::new(Faults::default()),
    });
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", options.addr))?;
    tracing::info!(addr = %options.addr, watch = %app.watch, "a2a-lambda-freezer listening");
    let router = axum::Router::new()
        .route("/faults", axum::routing::post(set_faults).get(faults))
        .fallback(forward)
        .with_state(app);
    axum::serve(listener, router)
        .await
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_function_comes_from_either_path() {
        assert_eq!(function_of("/lambda-url/send/message:send"), Some("send"));
        assert_eq!(
            function_of("/2015-03-31/functions/worker/invocations"),
            Some("worker")
        );
        assert_eq!(function_of("/lambda-url//x"), None);
        assert_eq!(function_of("/other"), None);
    }

    #[test]
    fn this_process_is_found_below_its_parent() {
        let me = std::process::id();
        let parent = parent_of(me).expect("a parent");
        let exe = std::env::current_exe().expect("exe");
        let name = exe.file_name().and_then(|n| n.to_str()).expect("name");
        assert!(processes_of(parent, name).contains(&me));
        assert!(!processes_of(me, name).contains(&me));
    }
}
