//! The server process: locating and building the `a2a-local` binary, starting it on a free
//! port with its own data directory, restarting and killing it, and its log.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use reqwest::header::HeaderMap;

use crate::*;

/// The workspace root (the parent of this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Where the `a2a-local` binary is expected: `$A2A_LOCAL_BIN`, else
/// `$CARGO_TARGET_DIR/debug/a2a-local`, else `<workspace>/target/debug/a2a-local`.
pub fn binary_path() -> PathBuf {
    if let Some(bin) = std::env::var_os("A2A_LOCAL_BIN") {
        return PathBuf::from(bin);
    }
    target_binary("a2a-local")
}

/// `$CARGO_TARGET_DIR/debug/<name>`, else `<workspace>/target/debug/<name>`.
pub fn target_binary(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| {
            if p.is_relative() {
                workspace_root().join(p)
            } else {
                p
            }
        })
        .unwrap_or_else(|| workspace_root().join("target"));
    target
        .join("debug")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// Returns the binary, building it once (`cargo build -p a2a-local --features dynamodb`, for
/// both stores) if it is missing. A file lock keeps concurrent test processes (nextest runs one
/// per test) from building it twice.
pub fn ensure_built() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| build_if_missing(binary_path(), "a2a-local", &["--features", "dynamodb"]))
        .clone()
}

/// Builds `package` (`cargo build -p package` with `extra` arguments) unless `bin` exists,
/// under a file lock.
pub(crate) fn build_if_missing(bin: PathBuf, package: &str, extra: &[&str]) -> PathBuf {
    if bin.exists() {
        return bin;
    }
    let dir = bin
        .parent()
        .expect("binary path has a parent")
        .to_path_buf();
    std::fs::create_dir_all(&dir).expect("create the target directory");
    let lock =
        std::fs::File::create(dir.join(".a2a-e2e-build.lock")).expect("create the build lock file");
    lock.lock().expect("take the build lock");
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-p", package])
            .args(extra)
            .current_dir(workspace_root())
            .status()
            .unwrap_or_else(|e| panic!("run cargo build -p {package}: {e}"));
        assert!(status.success(), "cargo build -p {package} failed");
    }
    let _ = lock.unlock();
    assert!(bin.exists(), "{} is missing after the build", bin.display());
    bin
}

/// If the binary is older than a source file of the workspace, says which (shown with the log
/// of a failing test: the tests may have run against an outdated server).
pub fn staleness_note() -> Option<String> {
    fn newest(dir: &Path, best: &mut Option<(std::time::SystemTime, PathBuf)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if name != "target" && !name.to_string_lossy().starts_with('.') {
                    newest(&path, best);
                }
            } else if path.extension().is_some_and(|e| e == "rs" || e == "toml") {
                if let Ok(modified) = entry.metadata().and_then(|m| m.modified()) {
                    if best.as_ref().is_none_or(|(t, _)| modified > *t) {
                        *best = Some((modified, path));
                    }
                }
            }
        }
    }
    let built = std::fs::metadata(binary_path())
        .and_then(|m| m.modified())
        .ok()?;
    let mut best = None;
    newest(&workspace_root().join("shared"), &mut best);
    let (modified, path) = best?;
    (modified > built).then(|| {
        format!(
            "note: {} is older than {}; run `cargo build -p a2a-local` to test the current code",
            binary_path().display(),
            path.display()
        )
    })
}

/// One `a2a-local` process with its own data directory. Killed on drop; its log is printed
/// if the test is failing.
pub struct Server {
    child: Option<Child>,
    data_dir: tempfile::TempDir,
    logs: Arc<Mutex<String>>,
    /// Woken at each line the server logs ([`Server::logs_once_containing`]).
    logged: Arc<tokio::sync::Notify>,
    /// Talks to the server with no credentials; [`Server`] derefs to it.
    client: Client,
    /// Extra environment for the server process.
    env: Vec<(String, String)>,
}

impl std::ops::Deref for Server {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

/// Removes ANSI colour sequences (`ESC [ … letter`) from a log line.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Pulls `http://HOST:PORT` out of the line `a2a-local serving on http://…; agent card at …`.
fn parse_base(line: &str) -> Option<String> {
    let start = line.find("serving on http://")? + "serving on ".len();
    let rest = &line[start..];
    let end = rest
        .find(|c: char| c == ';' || c.is_whitespace())
        .unwrap_or(rest.len());
    Some(rest[..end].trim_end_matches('/').to_string())
}

/// A reqwest client with no proxy and no overall timeout (streams may last).
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .expect("build the HTTP client")
}

/// Whether this run asks for the servers on DynamoDB + SQS (`A2A_E2E_STORE=dynamodb`).
pub fn on_dynamodb() -> bool {
    std::env::var("A2A_E2E_STORE").as_deref() == Ok("dynamodb")
}

/// Whether the servers of this run can start, checked first thing by every test: always on
/// the embedded store; with `A2A_E2E_STORE=dynamodb`, only if an emulator is configured.
///
/// Without one the test returns at once, and the first says on stderr that these tests need
/// `infra/test-all.sh` or `eval "$(infra/moto.sh env-start)"` (with `A2A_REQUIRE_EMULATOR=1`,
/// it fails with that message instead), rather than every test waiting for a server that
/// cannot reach AWS.
pub fn store_ready() -> bool {
    !on_dynamodb() || a2a_test_support::emulator_configured("end-to-end (A2A_E2E_STORE=dynamodb)")
}

/// With `A2A_E2E_STORE=dynamodb` the servers run on DynamoDB + SQS (an emulator named by
/// `AWS_ENDPOINT_URL`, e.g. moto started by `infra/moto.sh`), each server on its own table and
/// queues, named after its data directory so a restart finds them again.
fn store_env(data_dir: &Path) -> Vec<(String, String)> {
    if !on_dynamodb() {
        return Vec::new();
    }
    assert!(
        std::env::var("AWS_ENDPOINT_URL").is_ok_and(|url| !url.trim().is_empty()),
        "A2A_E2E_STORE=dynamodb without an emulator: a test must check `store_ready()` before \
         it starts a server"
    );
    let unique = data_dir
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .replace(|c: char| !c.is_ascii_alphanumeric(), "")
        })
        .unwrap_or_default();
    vec![
        ("A2A_STORE".into(), "dynamodb".into()),
        ("A2A_CREATE_RESOURCES".into(), format!("e2e{unique}")),
        // moto's long poll on a FIFO queue does not see a message group freed during the poll
        // (it notes the busy groups when the poll starts), so a task's next push would wait for
        // the poll to end; SQS itself hands it out at once. Short polls here; tests of the
        // default wait set it back (tests/queued.rs).
        ("A2A_QUEUE_WAIT_SECS".into(), "1".into()),
    ]
}

/// How the panic of a start that failed before the server served begins.
const EXITED_BEFORE_SERVING: &str = "a2a-local exited before serving";

impl Server {
    /// Starts a server on `127.0.0.1:0` with a fresh temporary data directory and waits until
    /// it prints its address.
    pub async fn start() -> Server {
        Self::start_with_env(&[]).await
    }

    /// Like [`Server::start`], with extra environment variables for the server (its options all
    /// have one, e.g. `A2A_WORK_VISIBILITY_SECS`). They apply to restarts too.
    pub async fn start_with_env(env: &[(&str, &str)]) -> Server {
        let data_dir = tempfile::Builder::new()
            .prefix("a2a-e2e-")
            .tempdir()
            .expect("create a temporary data directory");
        let mut server = Server {
            child: None,
            data_dir,
            logs: Arc::new(Mutex::new(String::new())),
            logged: Arc::new(tokio::sync::Notify::new()),
            client: Client {
                base: String::new(),
                http: http_client(),
                next_id: Arc::new(AtomicU64::new(1)),
            },
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        server.spawn().await;
        server
    }

    async fn spawn(&mut self) {
        let bin = tokio::task::spawn_blocking(ensure_built)
            .await
            .expect("the build task panicked");
        let log_level = std::env::var("A2A_E2E_LOG").unwrap_or_else(|_| "info".into());
        let mut child = Command::new(&bin)
            .arg("--addr")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(self.data_dir.path().join("store"))
            .env("RUST_LOG", log_level)
            .env("NO_COLOR", "1")
            .envs(store_env(self.data_dir.path()))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let stderr = child.stderr.take().expect("stderr is piped");
        let (tx, rx) = tokio::sync::oneshot::channel::<String>();
        let logs = self.logs.clone();
        let logged = self.logged.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let line = strip_ansi(&line);
                if tx.is_some() {
                    if let Some(base) = parse_base(&line) {
                        let _ = tx.take().expect("checked").send(base);
                    }
                }
                let mut logs = logs.lock().unwrap_or_else(|e| e.into_inner());
                logs.push_str(&line);
                logs.push('\n');
                drop(logs);
                logged.notify_waiters();
            }
        });
        self.child = Some(child);
        match tokio::time::timeout(STARTUP_TIMEOUT, rx).await {
            Ok(Ok(base)) => self.client.base = base,
            Ok(Err(_)) => panic!("{EXITED_BEFORE_SERVING}; its log:\n{}", self.logs()),
            Err(_) => panic!(
                "a2a-local did not print its address within {STARTUP_TIMEOUT:?}; its log:\n{}",
                self.logs()
            ),
        }
    }

    /// Kills the server with SIGKILL (no graceful shutdown) and reaps it.
    pub fn kill_abruptly(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.logs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_str("---- e2e: server killed (SIGKILL) ----\n");
    }

    /// Sends SIGINT (a graceful stop, like Ctrl-C) to the server.
    pub fn interrupt(&self) {
        let child = self.child.as_ref().expect("the server is running");
        let status = Command::new("kill")
            .arg("-INT")
            .arg(child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -INT failed");
    }

    /// Waits (polling the process with a deadline) until the server exits; its exit status.
    pub async fn wait_for_exit(&mut self, within: std::time::Duration) -> std::process::ExitStatus {
        let deadline = tokio::time::Instant::now() + within;
        let child = self.child.as_mut().expect("the server was started");
        loop {
            if let Some(status) = child.try_wait().expect("wait for the server") {
                self.child = None;
                return status;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the server did not exit within {within:?}; its log:\n{}",
                self.logs()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// The environment that puts another server on this server's store (with
    /// `A2A_E2E_STORE=dynamodb`: its table and queues; empty on the embedded store).
    pub fn store_env(&self) -> Vec<(String, String)> {
        store_env(self.data_dir.path())
    }

    /// Starts the server again on the same data directory (killing it first if it runs). The
    /// port, and so [`Client::base`], changes.
    pub async fn restart(&mut self) {
        if self.child.is_some() {
            self.kill_abruptly();
        }
        self.logs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_str("---- e2e: server restarting ----\n");
        self.spawn().await;
    }

    /// [`Self::restart`], made again (up to `tries` starts in all) while the server exits
    /// before serving: its start failed, as a Lambda instance's init may under AWS's faults
    /// (a2a-local finds its table and queues at start), and Lambda then starts another.
    pub async fn restart_until_serving(&mut self, tries: usize) {
        for _ in 1..tries {
            let started =
                futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(self.restart()))
                    .await;
            let Err(panic) = started else {
                return;
            };
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .unwrap_or_default();
            if !message.starts_with(EXITED_BEFORE_SERVING) {
                std::panic::resume_unwind(panic);
            }
        }
        self.restart().await;
    }

    /// Everything the server wrote to stderr so far (ANSI colours removed).
    pub fn logs(&self) -> String {
        self.logs.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The server's log once it contains `needle`: a line written after the answer it
    /// concerns may reach the log after the client had that answer. Panics after `within`.
    pub async fn logs_once_containing(&self, needle: &str, within: Duration) -> String {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let logged = self.logged.notified();
            tokio::pin!(logged);
            // Registered before the log is read: a line appended in between still wakes it.
            logged.as_mut().enable();
            let logs = self.logs();
            if logs.contains(needle) {
                return logs;
            }
            if tokio::time::timeout_at(deadline, logged).await.is_err() {
                panic!("the server did not log {needle:?} within {within:?}; its log:\n{logs}");
            }
        }
    }

    /// The data directory handed to the server.
    pub fn data_dir(&self) -> &Path {
        self.data_dir.path()
    }

    /// A client that sends `headers` on every request (credentials, typically).
    pub fn client_with_headers(&self, headers: &[(&str, &str)]) -> Client {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                reqwest::header::HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
                reqwest::header::HeaderValue::from_str(value).expect("a header value"),
            );
        }
        let http = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(10))
            .default_headers(map)
            .build()
            .expect("build the HTTP client");
        Client {
            base: self.client.base.clone(),
            http,
            next_id: self.client.next_id.clone(),
        }
    }

    /// A client that sends `Authorization: Bearer <token>` on every request.
    pub fn client_with_bearer(&self, token: &str) -> Client {
        self.client_with_headers(&[("Authorization", &format!("Bearer {token}"))])
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            if let Some(note) = staleness_note() {
                eprintln!("{note}");
            }
            eprintln!(
                "---- a2a-local log ({}) ----\n{}---- end of a2a-local log ----",
                self.base,
                self.logs()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_startup_line_gives_the_base_url() {
        let line = "2026-11-22T05:00:00Z  INFO a2a_local: a2a-local serving on http://127.0.0.1:41234; agent card at http://127.0.0.1:41234/.well-known/agent-card.json (data in /tmp/x)";
        assert_eq!(parse_base(line).as_deref(), Some("http://127.0.0.1:41234"));
        assert_eq!(parse_base("something else"), None);
        assert_eq!(strip_ansi("\u{1b}[32m INFO\u{1b}[0m x"), " INFO x");
    }
}
