//! The `a2a` command as a subprocess, and an agent built on the official Python SDK's server
//! (`tests/interop/sdk_server.py`) to run it against besides `a2a-local`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use crate::*;

/// Set to `1` to make the SDK server's tests fail, rather than skip, without the interop venv.
pub const REQUIRE_INTEROP: &str = "A2A_REQUIRE_INTEROP";

/// The `a2a` binary, built once (`cargo build -p a2a-cli`) if it is missing.
pub fn cli_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| build_if_missing(target_binary("a2a"), "a2a-cli", &[]))
        .clone()
}

/// What a finished `a2a` run printed, and its exit code.
#[derive(Debug, Clone)]
pub struct CliOutput {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl CliOutput {
    /// stdout as JSON (panics with the output if it is not).
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:#?}"))
    }

    /// Panics with the output unless the exit code is `code`.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "exit code: {self:#?}");
        self
    }
}

/// A command line for `a2a` with the environment cleared of the variables it reads.
pub fn a2a_command(args: &[&str]) -> tokio::process::Command {
    let bin = cli_binary();
    let mut command = tokio::process::Command::new(bin);
    command
        .args(args)
        .env_remove("A2A_URL")
        .env_remove("A2A_API_KEY")
        .env_remove("A2A_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs `a2a args…` to its end (within [`EVENT_TIMEOUT`]).
pub async fn a2a(args: &[&str]) -> CliOutput {
    run_cli(a2a_command(args)).await
}

/// Runs a prepared `a2a` command to its end (within [`EVENT_TIMEOUT`]).
pub async fn run_cli(mut command: tokio::process::Command) -> CliOutput {
    tokio::task::spawn_blocking(cli_binary)
        .await
        .expect("the build task panicked");
    let child = command.spawn().expect("start a2a");
    let output = tokio::time::timeout(EVENT_TIMEOUT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("a2a did not finish within {EVENT_TIMEOUT:?}: {command:?}"))
        .expect("wait for a2a");
    CliOutput {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A running `a2a` whose stdout is read line by line as it comes.
pub struct LiveCli {
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    err_lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStderr>>,
    /// Every line of stdout read so far.
    pub seen: Vec<String>,
}

impl LiveCli {
    /// Starts `a2a args…`.
    pub async fn start(args: &[&str]) -> LiveCli {
        tokio::task::spawn_blocking(cli_binary)
            .await
            .expect("the build task panicked");
        let mut child = a2a_command(args).spawn().expect("start a2a");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        LiveCli {
            child,
            lines: tokio::io::BufReader::new(stdout).lines(),
            err_lines: tokio::io::BufReader::new(stderr).lines(),
            seen: Vec::new(),
        }
    }

    /// The next line of stdout; panics at the end of output or after [`EVENT_TIMEOUT`].
    pub async fn next_line(&mut self) -> String {
        match tokio::time::timeout(EVENT_TIMEOUT, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => {
                self.seen.push(line.clone());
                line
            }
            other => {
                let stderr = self.stderr_now().await;
                panic!(
                    "no next line from a2a ({other:?}); so far: {:#?}; stderr: {stderr}",
                    self.seen
                )
            }
        }
    }

    /// Reads lines until one satisfies `f`, and returns it.
    pub async fn line_where(&mut self, f: impl Fn(&str) -> bool) -> String {
        loop {
            let line = self.next_line().await;
            if f(&line) {
                return line;
            }
        }
    }

    /// Reads stderr until a line satisfies `f`, and returns it.
    pub async fn stderr_line_where(&mut self, f: impl Fn(&str) -> bool) -> String {
        loop {
            match tokio::time::timeout(EVENT_TIMEOUT, self.err_lines.next_line()).await {
                Ok(Ok(Some(line))) if f(&line) => return line,
                Ok(Ok(Some(_))) => {}
                other => panic!(
                    "no such line on stderr ({other:?}); stdout: {:#?}",
                    self.seen
                ),
            }
        }
    }

    /// Sends SIGINT, as Ctrl-C in a terminal does.
    pub fn interrupt(&self) {
        let pid = self.child.id().expect("a2a is running");
        let status = Command::new("kill")
            .arg("-INT")
            .arg(pid.to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -INT {pid} failed");
    }

    async fn stderr_now(&mut self) -> String {
        let _ = self.child.start_kill();
        let mut text = Vec::new();
        let read = async {
            while let Ok(Some(line)) = self.err_lines.next_line().await {
                text.push(line);
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), read).await;
        text.join("\n")
    }

    /// Waits for the command to end; returns its exit code, the rest of stdout and stderr.
    pub async fn finish(mut self) -> CliOutput {
        let mut rest = Vec::new();
        let read = async {
            while let Ok(Some(line)) = self.lines.next_line().await {
                rest.push(line);
            }
        };
        tokio::time::timeout(EVENT_TIMEOUT, read)
            .await
            .unwrap_or_else(|_| panic!("a2a did not end; so far: {:#?}", self.seen));
        let status = tokio::time::timeout(EVENT_TIMEOUT, self.child.wait())
            .await
            .expect("a2a exits after closing stdout")
            .expect("wait for a2a");
        let mut stderr = Vec::new();
        while let Ok(Some(line)) = self.err_lines.next_line().await {
            stderr.push(line);
        }
        let stderr = stderr.join("\n");
        self.seen.extend(rest);
        CliOutput {
            code: status.code().unwrap_or(-1),
            stdout: self.seen.join("\n"),
            stderr,
        }
    }
}

/// The venv of the interop suites (`tests/interop/run.sh` creates it): `$A2A_VENV`, else
/// `<workspace>/.venv-interop`.
pub fn interop_venv() -> PathBuf {
    std::env::var_os("A2A_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv-interop"))
}

/// An A2A server built on the official Python SDK (a2a-sdk 1.3.0): `tests/interop/sdk_server.py`
/// in the interop venv, on a free port of 127.0.0.1. Killed on drop.
pub struct SdkServer {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    logs: Arc<Mutex<String>>,
}

impl SdkServer {
    /// Starts the server; `None` when the interop venv is absent and [`REQUIRE_INTEROP`] is
    /// not set (saying so on stderr: the venv comes from `tests/interop/run.sh` or
    /// `infra/test-all.sh`).
    pub async fn start() -> Option<SdkServer> {
        let python = interop_venv().join("bin").join("python");
        if !python.exists() {
            let why = format!(
                "the SDK server needs the interop venv ({} is missing): create it with \
                 `tests/interop/run.sh --setup` (infra/test-all.sh does)",
                python.display()
            );
            if std::env::var(REQUIRE_INTEROP).as_deref() == Ok("1") {
                panic!("{why} ({REQUIRE_INTEROP}=1)");
            }
            static SKIP_NOTE: std::sync::Once = std::sync::Once::new();
            SKIP_NOTE.call_once(|| {
                // Straight to the process's stderr: the harness captures `eprintln!` of a
                // passing test, and this line must show under plain `cargo test`.
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr(),
                    "SKIPPED: the tests against the Python SDK's server: {why}. \
                     ({REQUIRE_INTEROP}=1 turns this skip into a failure.)"
                );
            });
            return None;
        }
        let script = workspace_root().join("tests/interop/sdk_server.py");
        let mut child = Command::new(&python)
            .arg(&script)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()));
        let stderr = child.stderr.take().expect("stderr is piped");
        let logs = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = tokio::sync::oneshot::channel::<String>();
        let log = logs.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(base) = line.strip_prefix("serving on ") {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(base.trim().to_string());
                    }
                }
                let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
                log.push_str(&line);
                log.push('\n');
            }
        });
        let mut server = SdkServer {
            child,
            base: String::new(),
            logs,
        };
        match tokio::time::timeout(STARTUP_TIMEOUT, rx).await {
            Ok(Ok(base)) => server.base = base,
            _ => panic!("the SDK server did not start; its log:\n{}", server.logs()),
        }
        Some(server)
    }

    /// Its stderr so far.
    pub fn logs(&self) -> String {
        self.logs.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for SdkServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- SDK server log ---\n{}", self.logs());
        }
    }
}
