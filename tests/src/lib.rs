//! The end-to-end harness: starts the real `a2a-local` binary on a free port with its own data
//! directory, and talks to it over real sockets with both bindings (JSON-RPC and HTTP+JSON).
//!
//! - [`Server`] owns one server process: [`Server::start`], [`Server::kill_abruptly`],
//!   [`Server::restart`] (same data directory), and the server's log so far ([`Server::logs`]).
//! - Raw helpers ([`Client::rpc`], [`Client::rest`]) return exactly what came over the wire.
//! - Binding-generic helpers ([`Client::send`], [`Client::get_task`], …) take a [`Binding`] and
//!   return `Result<Value, ApiError>`, so a test runs once per binding with the same assertions.
//! - [`SseStream`] reads Server-Sent Events incrementally, as they arrive.
//! - [`Webhook`] is a real HTTP listener on 127.0.0.1 that records push notifications.
//! - [`Client`] holds the request helpers; [`Server`] derefs to its own (no credentials), and
//!   [`Server::client_with_headers`] / [`Server::client_with_bearer`] make callers with
//!   credentials. [`issuer::TestIssuer`] is a test OpenID issuer for bearer tokens.
//!
//! Nothing here sleeps to synchronise: waits are on events, with timeouts that fail the test.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, CONTENT_TYPE};
use reqwest::Method;
use serde_json::{json, Value};

pub mod issuer;

pub use reqwest;
pub use serde_json;

/// The protocol version every request announces.
pub const A2A_VERSION: &str = "1.0";
/// How long the server may take to print its address.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default wait for one SSE event, one push, or one response (generous: debug builds, 2 cores,
/// tests in parallel).
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------------
// Locating and building the binary

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
        .join(format!("a2a-local{}", std::env::consts::EXE_SUFFIX))
}

/// Returns the binary, building it once (`cargo build -p a2a-local`) if it is missing. A file
/// lock keeps concurrent test processes (nextest runs one per test) from building it twice.
pub fn ensure_built() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let bin = binary_path();
            if bin.exists() {
                return bin;
            }
            let dir = bin
                .parent()
                .expect("binary path has a parent")
                .to_path_buf();
            std::fs::create_dir_all(&dir).expect("create the target directory");
            let lock = std::fs::File::create(dir.join(".a2a-e2e-build.lock"))
                .expect("create the build lock file");
            lock.lock().expect("take the build lock");
            if !bin.exists() {
                let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
                let status = Command::new(cargo)
                    .args(["build", "-p", "a2a-local"])
                    .current_dir(workspace_root())
                    .status()
                    .expect("run cargo build -p a2a-local");
                assert!(status.success(), "cargo build -p a2a-local failed");
            }
            let _ = lock.unlock();
            assert!(bin.exists(), "{} is missing after the build", bin.display());
            bin
        })
        .clone()
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

// ---------------------------------------------------------------------------------------------
// The server process

/// One `a2a-local` process with its own data directory. Killed on drop; its log is printed
/// if the test is failing.
pub struct Server {
    child: Option<Child>,
    data_dir: tempfile::TempDir,
    logs: Arc<Mutex<String>>,
    /// Talks to the server with no credentials; [`Server`] derefs to it.
    client: Client,
    /// Extra environment for the server process.
    env: Vec<(String, String)>,
}

/// A client of one server: every request helper ([`Client::send`], [`Client::rpc`], …) lives
/// here. The server's own ([`Server`] derefs to it) sends no credentials;
/// [`Server::client_with_headers`] makes one that sends the given headers (an
/// `Authorization`, an API key) on every request. A client made that way keeps the base URL of
/// the moment it was made: make it again after [`Server::restart`].
#[derive(Clone)]
pub struct Client {
    base: String,
    http: reqwest::Client,
    next_id: Arc<AtomicU64>,
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

/// With `A2A_E2E_STORE=dynamodb` the servers run on DynamoDB + SQS (an emulator named by
/// `AWS_ENDPOINT_URL`, e.g. moto started by `infra/moto.sh`), each server on its own table and
/// queues, named after its data directory so a restart finds them again.
fn store_env(data_dir: &Path) -> Vec<(String, String)> {
    match std::env::var("A2A_E2E_STORE").as_deref() {
        Ok("dynamodb") => {
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
            ]
        }
        _ => Vec::new(),
    }
}

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
            }
        });
        self.child = Some(child);
        match tokio::time::timeout(STARTUP_TIMEOUT, rx).await {
            Ok(Ok(base)) => self.client.base = base,
            Ok(Err(_)) => panic!("a2a-local exited before serving; its log:\n{}", self.logs()),
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

    /// Everything the server wrote to stderr so far (ANSI colours removed).
    pub fn logs(&self) -> String {
        self.logs.lock().unwrap_or_else(|e| e.into_inner()).clone()
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

impl Client {
    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `base + path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// The JSON-RPC endpoint.
    pub fn jsonrpc_url(&self) -> String {
        self.url("/jsonrpc")
    }

    /// The shared HTTP client (for requests the helpers do not cover).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    fn next_request_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
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

// ---------------------------------------------------------------------------------------------
// Raw requests

/// A REST response as it came: status, headers, and the body as JSON (`Null` when empty, a
/// JSON string when it is not JSON).
#[derive(Debug, Clone)]
pub struct RestResponse {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
}

impl RestResponse {
    /// A header as text, if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

async fn into_rest_response(response: reqwest::Response) -> RestResponse {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.expect("read the response body");
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    };
    RestResponse {
        status,
        headers,
        body,
    }
}

impl Client {
    /// A JSON-RPC request builder for `/jsonrpc` with the version header and JSON content type.
    pub fn rpc_request(&self, method: &str, params: Value) -> (u64, reqwest::RequestBuilder) {
        let id = self.next_request_id();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let builder = self
            .http
            .post(self.jsonrpc_url())
            .header("A2A-Version", A2A_VERSION)
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
        (id, builder)
    }

    /// Calls a JSON-RPC method and returns the whole response object (`result` or `error`).
    /// Panics unless the HTTP status is 200 and the envelope echoes the request id.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        let (id, builder) = self.rpc_request(method, params);
        let response = builder.send().await.expect("JSON-RPC request");
        let rest = into_rest_response(response).await;
        assert_eq!(
            rest.status, 200,
            "{method}: JSON-RPC answers with HTTP 200, got {} {}",
            rest.status, rest.body
        );
        assert_eq!(rest.body["jsonrpc"], "2.0", "{method}: {}", rest.body);
        assert_eq!(
            rest.body["id"],
            json!(id),
            "{method}: the id is echoed: {}",
            rest.body
        );
        rest.body
    }

    /// A REST request builder for `base + path` with the version header (and a JSON body).
    pub fn rest_request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> reqwest::RequestBuilder {
        let mut builder = self
            .http
            .request(method, self.url(path))
            .header("A2A-Version", A2A_VERSION);
        if let Some(body) = body {
            builder = builder
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        builder
    }

    /// Calls a REST route and returns what came back.
    pub async fn rest(&self, method: Method, path: &str, body: Option<Value>) -> RestResponse {
        let response = self
            .rest_request(method, path, body.as_ref())
            .send()
            .await
            .expect("REST request");
        into_rest_response(response).await
    }

    /// Sends any request and returns what came back.
    pub async fn send_raw(&self, builder: reqwest::RequestBuilder) -> RestResponse {
        into_rest_response(builder.send().await.expect("HTTP request")).await
    }
}

// ---------------------------------------------------------------------------------------------
// Errors, per binding

/// The two HTTP bindings of the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    Rest,
}

impl Binding {
    pub const ALL: [Binding; 2] = [Binding::JsonRpc, Binding::Rest];
}

/// An error answer from either binding.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub binding: Binding,
    /// The HTTP status (200 for JSON-RPC errors).
    pub http_status: u16,
    /// The JSON-RPC code (JSON-RPC only).
    pub code: Option<i64>,
    /// `ErrorInfo.reason` from `error.data[]` (JSON-RPC) or `error.details[]` (REST).
    pub reason: Option<String>,
    /// The error object: JSON-RPC `error`, or the REST body.
    pub body: Value,
    /// The `WWW-Authenticate` challenge, if the answer had one.
    pub www_authenticate: Option<String>,
}

fn error_info_reason(details: &Value) -> Option<String> {
    details.as_array()?.iter().find_map(|d| {
        (d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")
            .then(|| d["reason"].as_str().map(str::to_string))
            .flatten()
    })
}

impl ApiError {
    fn from_rpc_error(error: &Value) -> Self {
        ApiError {
            binding: Binding::JsonRpc,
            http_status: 200,
            code: error["code"].as_i64(),
            reason: error_info_reason(&error["data"]),
            body: error.clone(),
            www_authenticate: None,
        }
    }

    fn from_rest(status: u16, body: &Value) -> Self {
        ApiError {
            binding: Binding::Rest,
            http_status: status,
            code: None,
            reason: error_info_reason(&body["error"]["details"]),
            body: body.clone(),
            www_authenticate: None,
        }
    }

    /// Asserts the error is the given A2A error on this binding: the JSON-RPC `code`, or the
    /// REST status with a `google.rpc.Status` body whose `code` matches; and in both cases an
    /// `ErrorInfo` with `reason` in domain `a2a-protocol.org`.
    #[track_caller]
    pub fn assert_is(&self, code: i64, http_status: u16, reason: &str) {
        match self.binding {
            Binding::JsonRpc => {
                assert_eq!(self.code, Some(code), "JSON-RPC error code: {}", self.body);
                assert!(
                    self.body["message"].is_string(),
                    "error.message: {}",
                    self.body
                );
                let info = self.body["data"]
                    .as_array()
                    .and_then(|d| d.iter().find(|d| d["reason"].is_string()))
                    .unwrap_or_else(|| panic!("error.data holds an ErrorInfo: {}", self.body));
                assert_eq!(info["domain"], "a2a-protocol.org", "{}", self.body);
            }
            Binding::Rest => {
                assert_eq!(self.http_status, http_status, "HTTP status: {}", self.body);
                let error = &self.body["error"];
                assert_eq!(
                    error["code"],
                    json!(http_status),
                    "error.code: {}",
                    self.body
                );
                assert!(error["status"].is_string(), "error.status: {}", self.body);
                assert!(error["message"].is_string(), "error.message: {}", self.body);
                let info = error["details"]
                    .as_array()
                    .and_then(|d| d.iter().find(|d| d["reason"].is_string()))
                    .unwrap_or_else(|| panic!("error.details holds an ErrorInfo: {}", self.body));
                assert_eq!(info["domain"], "a2a-protocol.org", "{}", self.body);
            }
        }
        assert_eq!(
            self.reason.as_deref(),
            Some(reason),
            "ErrorInfo.reason: {}",
            self.body
        );
    }
}

/// Panics with the error if `result` is one; returns the value otherwise.
#[track_caller]
pub fn ok(result: Result<Value, ApiError>) -> Value {
    match result {
        Ok(v) => v,
        Err(e) => panic!(
            "expected success on {:?}, got {} {}",
            e.binding, e.http_status, e.body
        ),
    }
}

/// Panics with the value if `result` is a success; returns the error otherwise.
#[track_caller]
pub fn err<T: std::fmt::Debug>(result: Result<T, ApiError>) -> ApiError {
    match result {
        Ok(v) => panic!("expected an error, got success: {v:?}"),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------------------------------------
// Binding-generic operations

fn encode_path(segment: &str) -> String {
    let mut out = String::new();
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Turns a flat JSON object into a query string (`?a=1&b=x`), values as text.
pub fn query_string(params: &Value) -> String {
    let mut url = reqwest::Url::parse("http://x/").expect("static URL");
    if let Some(map) = params.as_object() {
        let mut pairs = url.query_pairs_mut();
        for (k, v) in map {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            pairs.append_pair(k, &text);
        }
    }
    match url.query() {
        Some(q) if !q.is_empty() => format!("?{q}"),
        _ => String::new(),
    }
}

impl Client {
    /// A JSON-RPC call as a Result: `result`, or the `error` object.
    pub async fn rpc_call(&self, method: &str, params: Value) -> Result<Value, ApiError> {
        // Authentication failures are HTTP 401/403 with a JSON-RPC error body; anything else
        // must be HTTP 200 (checked by `rpc`).
        let (id, builder) = self.rpc_request(method, params);
        let raw = into_rest_response(builder.send().await.expect("JSON-RPC request")).await;
        if matches!(raw.status, 401 | 403) {
            let error = raw.body.get("error").unwrap_or_else(|| {
                panic!(
                    "{method}: a {} without a JSON-RPC error: {}",
                    raw.status, raw.body
                )
            });
            let mut api = ApiError::from_rpc_error(error);
            api.http_status = raw.status;
            api.www_authenticate = raw.header("www-authenticate").map(str::to_string);
            return Err(api);
        }
        assert_eq!(
            raw.status, 200,
            "{method}: JSON-RPC answers with HTTP 200, got {} {}",
            raw.status, raw.body
        );
        assert_eq!(raw.body["jsonrpc"], "2.0", "{method}: {}", raw.body);
        assert_eq!(
            raw.body["id"],
            json!(id),
            "{method}: the id is echoed: {}",
            raw.body
        );
        let response = raw.body;
        match response.get("error") {
            Some(error) => Err(ApiError::from_rpc_error(error)),
            None => {
                assert!(response.get("result").is_some(), "no result: {response}");
                Ok(response["result"].clone())
            }
        }
    }

    /// A REST call as a Result: the body on 2xx, or the `google.rpc.Status` error.
    pub async fn rest_call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, ApiError> {
        let response = self.rest(method, path, body).await;
        if (200..300).contains(&response.status) {
            let ct = response
                .header("content-type")
                .unwrap_or_default()
                .to_string();
            assert!(
                ct.starts_with("application/json") || ct.starts_with("application/a2a+json"),
                "REST responses are JSON, got Content-Type {ct:?}"
            );
            Ok(response.body)
        } else {
            let mut api = ApiError::from_rest(response.status, &response.body);
            api.www_authenticate = response.header("www-authenticate").map(str::to_string);
            Err(api)
        }
    }

    /// SendMessage / `POST /message:send` with a full `SendMessageRequest`.
    pub async fn send(&self, b: Binding, request: Value) -> Result<Value, ApiError> {
        match b {
            Binding::JsonRpc => self.rpc_call("SendMessage", request).await,
            Binding::Rest => {
                self.rest_call(Method::POST, "/message:send", Some(request))
                    .await
            }
        }
    }

    /// Sends `text` as a new message (blocking) and returns the Task. Panics on errors or on
    /// a Message reply.
    pub async fn send_text(&self, b: Binding, text: &str) -> Value {
        let response = ok(self.send(b, send_request(text)).await);
        task_of(&response).clone()
    }

    /// GetTask / `GET /tasks/{id}`.
    pub async fn get_task(
        &self,
        b: Binding,
        id: &str,
        history_length: Option<i64>,
    ) -> Result<Value, ApiError> {
        match b {
            Binding::JsonRpc => {
                let mut params = json!({"id": id});
                if let Some(n) = history_length {
                    params["historyLength"] = json!(n);
                }
                self.rpc_call("GetTask", params).await
            }
            Binding::Rest => {
                let query = match history_length {
                    Some(n) => format!("?historyLength={n}"),
                    None => String::new(),
                };
                self.rest_call(
                    Method::GET,
                    &format!("/tasks/{}{query}", encode_path(id)),
                    None,
                )
                .await
            }
        }
    }

    /// ListTasks / `GET /tasks?…` with the request fields as a flat JSON object.
    pub async fn list_tasks(&self, b: Binding, params: Value) -> Result<Value, ApiError> {
        match b {
            Binding::JsonRpc => self.rpc_call("ListTasks", params).await,
            Binding::Rest => {
                self.rest_call(
                    Method::GET,
                    &format!("/tasks{}", query_string(&params)),
                    None,
                )
                .await
            }
        }
    }

    /// CancelTask / `POST /tasks/{id}:cancel`.
    pub async fn cancel(&self, b: Binding, id: &str) -> Result<Value, ApiError> {
        match b {
            Binding::JsonRpc => self.rpc_call("CancelTask", json!({"id": id})).await,
            Binding::Rest => {
                self.rest_call(
                    Method::POST,
                    &format!("/tasks/{}:cancel", encode_path(id)),
                    None,
                )
                .await
            }
        }
    }

    /// CreateTaskPushNotificationConfig / `POST /tasks/{taskId}/pushNotificationConfigs`.
    pub async fn create_push(
        &self,
        b: Binding,
        task_id: &str,
        config: Value,
    ) -> Result<Value, ApiError> {
        match b {
            Binding::JsonRpc => {
                let mut params = config;
                params["taskId"] = json!(task_id);
                self.rpc_call("CreateTaskPushNotificationConfig", params)
                    .await
            }
            Binding::Rest => {
                let path = format!("/tasks/{}/pushNotificationConfigs", encode_path(task_id));
                self.rest_call(Method::POST, &path, Some(config)).await
            }
        }
    }

    /// GetTaskPushNotificationConfig / `GET /tasks/{taskId}/pushNotificationConfigs/{id}`.
    pub async fn get_push(&self, b: Binding, task_id: &str, id: &str) -> Result<Value, ApiError> {
        match b {
            Binding::JsonRpc => {
                self.rpc_call(
                    "GetTaskPushNotificationConfig",
                    json!({"taskId": task_id, "id": id}),
                )
                .await
            }
            Binding::Rest => {
                let path = format!(
                    "/tasks/{}/pushNotificationConfigs/{}",
                    encode_path(task_id),
                    encode_path(id)
                );
                self.rest_call(Method::GET, &path, None).await
            }
        }
    }

    /// ListTaskPushNotificationConfigs / `GET /tasks/{taskId}/pushNotificationConfigs`.
    pub async fn list_push(&self, b: Binding, task_id: &str) -> Result<Value, ApiError> {
        match b {
            Binding::JsonRpc => {
                self.rpc_call(
                    "ListTaskPushNotificationConfigs",
                    json!({"taskId": task_id}),
                )
                .await
            }
            Binding::Rest => {
                let path = format!("/tasks/{}/pushNotificationConfigs", encode_path(task_id));
                self.rest_call(Method::GET, &path, None).await
            }
        }
    }

    /// DeleteTaskPushNotificationConfig / `DELETE /tasks/{taskId}/pushNotificationConfigs/{id}`.
    pub async fn delete_push(
        &self,
        b: Binding,
        task_id: &str,
        id: &str,
    ) -> Result<Value, ApiError> {
        match b {
            Binding::JsonRpc => {
                self.rpc_call(
                    "DeleteTaskPushNotificationConfig",
                    json!({"taskId": task_id, "id": id}),
                )
                .await
            }
            Binding::Rest => {
                let path = format!(
                    "/tasks/{}/pushNotificationConfigs/{}",
                    encode_path(task_id),
                    encode_path(id)
                );
                self.rest_call(Method::DELETE, &path, None).await
            }
        }
    }

    /// GetExtendedAgentCard / `GET /extendedAgentCard`.
    pub async fn extended_card(&self, b: Binding) -> Result<Value, ApiError> {
        match b {
            Binding::JsonRpc => self.rpc_call("GetExtendedAgentCard", json!({})).await,
            Binding::Rest => {
                self.rest_call(Method::GET, "/extendedAgentCard", None)
                    .await
            }
        }
    }

    /// SendStreamingMessage / `POST /message:stream`.
    pub async fn stream(&self, b: Binding, request: Value) -> Result<SseStream, ApiError> {
        match b {
            Binding::JsonRpc => {
                let (_, builder) = self.rpc_request("SendStreamingMessage", request);
                open_sse(b, builder.header("Accept", "text/event-stream")).await
            }
            Binding::Rest => {
                let builder = self
                    .rest_request(Method::POST, "/message:stream", Some(&request))
                    .header("Accept", "text/event-stream");
                open_sse(b, builder).await
            }
        }
    }

    /// SubscribeToTask / `GET /tasks/{id}:subscribe`, optionally resuming with `Last-Event-ID`.
    pub async fn subscribe(
        &self,
        b: Binding,
        id: &str,
        last_event_id: Option<u64>,
    ) -> Result<SseStream, ApiError> {
        self.subscribe_with(b, Method::GET, id, last_event_id).await
    }

    /// SubscribeToTask; for REST with the given HTTP method (the spec text says POST, the
    /// proto GET: both are served).
    pub async fn subscribe_with(
        &self,
        b: Binding,
        rest_method: Method,
        id: &str,
        last_event_id: Option<u64>,
    ) -> Result<SseStream, ApiError> {
        let mut builder = match b {
            Binding::JsonRpc => self.rpc_request("SubscribeToTask", json!({"id": id})).1,
            Binding::Rest => self.rest_request(
                rest_method,
                &format!("/tasks/{}:subscribe", encode_path(id)),
                None,
            ),
        };
        builder = builder.header("Accept", "text/event-stream");
        if let Some(last) = last_event_id {
            builder = builder.header("Last-Event-ID", last.to_string());
        }
        open_sse(b, builder).await
    }

    /// Waits, without polling, until the task is terminal (following SubscribeToTask to its end,
    /// resubscribing if a stream ends early at an interrupted state), then returns GetTask.
    pub async fn await_terminal(&self, id: &str, within: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let task = ok(self.get_task(Binding::JsonRpc, id, None).await);
            if is_terminal(state(&task)) {
                return task;
            }
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            assert!(
                !remaining.is_zero(),
                "task {id} is not terminal after {within:?}: {task}"
            );
            match self.subscribe(Binding::JsonRpc, id, None).await {
                Ok(mut stream) => {
                    let _ = stream.collect_to_end(remaining).await;
                }
                Err(e) if e.code == Some(-32004) => {}
                Err(e) => panic!("subscribe to {id} failed: {}", e.body),
            }
            let task = ok(self.get_task(Binding::JsonRpc, id, None).await);
            if !is_terminal(state(&task)) && is_interrupted(state(&task)) {
                panic!(
                    "task {id} is parked in {} and will not end by itself",
                    state(&task)
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Server-Sent Events

/// One SSE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
    /// Which binding sent it (decides how [`SseEvent::payload`] unwraps it).
    pub binding: Binding,
}

impl SseEvent {
    /// `data` as JSON (panics if it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {}", self.data))
    }

    /// The `id:` as a sequence number (panics if absent or not a number).
    #[track_caller]
    pub fn seq(&self) -> u64 {
        self.id
            .as_deref()
            .unwrap_or_else(|| panic!("SSE event without id: {self:?}"))
            .parse()
            .unwrap_or_else(|_| panic!("SSE id is not a number: {self:?}"))
    }

    /// The `StreamResponse`: `result` of a JSON-RPC envelope, or the bare REST data. Panics on
    /// an error event.
    #[track_caller]
    pub fn payload(&self) -> Value {
        let data = self.json();
        match self.binding {
            Binding::JsonRpc => {
                assert_eq!(
                    data["jsonrpc"], "2.0",
                    "SSE data is a JSON-RPC response: {data}"
                );
                assert!(data.get("error").is_none(), "error event: {data}");
                data.get("result")
                    .cloned()
                    .unwrap_or_else(|| panic!("JSON-RPC SSE data without result: {data}"))
            }
            Binding::Rest => {
                assert!(data.get("error").is_none(), "error event: {data}");
                data
            }
        }
    }

    fn as_error(&self) -> Option<ApiError> {
        let data: Value = serde_json::from_str(&self.data).ok()?;
        let error = data.get("error")?;
        Some(match self.binding {
            Binding::JsonRpc => ApiError::from_rpc_error(error),
            Binding::Rest => {
                let status = error["code"].as_u64().unwrap_or(0) as u16;
                ApiError::from_rest(status, &data)
            }
        })
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>;

/// An SSE response read incrementally.
pub struct SseStream {
    pub status: u16,
    pub headers: HeaderMap,
    binding: Binding,
    inner: ByteStream,
    buffer: Vec<u8>,
    ready: VecDeque<SseEvent>,
    current: PartialEvent,
    ended: bool,
}

impl std::fmt::Debug for SseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseStream")
            .field("status", &self.status)
            .field("binding", &self.binding)
            .field("ready", &self.ready)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct PartialEvent {
    id: Option<String>,
    event: Option<String>,
    data: Option<String>,
}

/// What can go wrong while waiting for the next event.
#[derive(Debug)]
pub enum SseWait {
    TimedOut,
    Failed(String),
}

/// Opens a streaming request. An error answer (plain JSON, or an error as the first SSE event)
/// is returned as `Err`.
pub async fn open_sse(
    binding: Binding,
    builder: reqwest::RequestBuilder,
) -> Result<SseStream, ApiError> {
    let response = builder.send().await.expect("streaming request");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    if !content_type.starts_with("text/event-stream") {
        let rest = into_rest_response(response).await;
        let challenge = rest.header("www-authenticate").map(str::to_string);
        let mut api = match binding {
            Binding::JsonRpc => match rest.body.get("error") {
                Some(error) => ApiError {
                    http_status: rest.status,
                    ..ApiError::from_rpc_error(error)
                },
                None => panic!(
                    "a non-SSE answer that is no JSON-RPC error: {} {}",
                    rest.status, rest.body
                ),
            },
            Binding::Rest => {
                assert_ne!(
                    status, 200,
                    "a 200 streaming answer must be text/event-stream"
                );
                ApiError::from_rest(rest.status, &rest.body)
            }
        };
        api.www_authenticate = challenge;
        return Err(api);
    }
    assert_eq!(status, 200, "SSE responses have status 200");
    let headers = response.headers().clone();
    let mut stream = SseStream {
        status,
        headers,
        binding,
        inner: Box::pin(response.bytes_stream()),
        buffer: Vec::new(),
        ready: VecDeque::new(),
        current: PartialEvent::default(),
        ended: false,
    };
    // An error before any data is sent as the first event (the digest's interop advice).
    match stream.next_within(EVENT_TIMEOUT).await {
        Ok(Some(first)) => {
            if let Some(error) = first.as_error() {
                return Err(error);
            }
            stream.ready.push_front(first);
        }
        Ok(None) => {}
        Err(e) => panic!("no first SSE event: {e:?}"),
    }
    Ok(stream)
}

impl SseStream {
    fn parse_line(&mut self, line: &str) {
        if line.is_empty() {
            let current = std::mem::take(&mut self.current);
            if let Some(data) = current.data {
                self.ready.push_back(SseEvent {
                    id: current.id,
                    event: current.event,
                    data,
                    binding: self.binding,
                });
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "id" => self.current.id = Some(value.to_string()),
            "event" => self.current.event = Some(value.to_string()),
            "data" => match &mut self.current.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.current.data = Some(value.to_string()),
            },
            _ => {}
        }
    }

    fn drain_lines(&mut self) {
        while let Some(pos) = self.buffer.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.buffer.drain(..=pos).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line).into_owned();
            self.parse_line(&line);
        }
    }

    /// The next event, `Ok(None)` when the server closed the stream.
    pub async fn next_within(&mut self, timeout: Duration) -> Result<Option<SseEvent>, SseWait> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            if self.ended {
                return Ok(None);
            }
            match tokio::time::timeout_at(deadline, self.inner.next()).await {
                Err(_) => return Err(SseWait::TimedOut),
                Ok(None) => {
                    self.ended = true;
                    // A final event without its blank line is dropped, as the SSE spec says.
                }
                Ok(Some(Err(e))) => return Err(SseWait::Failed(e.to_string())),
                Ok(Some(Ok(bytes))) => {
                    self.buffer.extend_from_slice(&bytes);
                    self.drain_lines();
                }
            }
        }
    }

    /// The next event within [`EVENT_TIMEOUT`]; `None` at the end of the stream. Panics on a
    /// timeout or a broken connection.
    #[track_caller]
    pub fn next_event(&mut self) -> impl std::future::Future<Output = Option<SseEvent>> + '_ {
        let caller = std::panic::Location::caller();
        async move {
            match self.next_within(EVENT_TIMEOUT).await {
                Ok(event) => event,
                Err(e) => panic!("waiting for an SSE event ({caller}): {e:?}"),
            }
        }
    }

    /// The next `n` events; panics if the stream ends or stalls first.
    pub async fn take(&mut self, n: usize) -> Vec<SseEvent> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            match self.next_within(EVENT_TIMEOUT).await {
                Ok(Some(e)) => out.push(e),
                Ok(None) => panic!(
                    "the stream ended after {} of {n} events: {out:#?}",
                    out.len()
                ),
                Err(e) => panic!(
                    "waiting for event {} of {n}: {e:?}; got {out:#?}",
                    out.len() + 1
                ),
            }
        }
        out
    }

    /// Every remaining event until the server closes the stream; panics if that takes longer
    /// than `within` in total.
    pub async fn collect_to_end(&mut self, within: Duration) -> Vec<SseEvent> {
        let deadline = tokio::time::Instant::now() + within;
        let mut out = Vec::new();
        loop {
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_within(remaining).await {
                Ok(Some(e)) => out.push(e),
                Ok(None) => return out,
                Err(e) => panic!(
                    "the stream did not end within {within:?} ({e:?}); events so far: {out:#?}"
                ),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Messages and results

/// A fresh id (UUID v4).
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A user message with one text part and a fresh messageId.
pub fn user_message(text: &str) -> Value {
    json!({"messageId": new_id(), "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// A `SendMessageRequest` for a new task.
pub fn send_request(text: &str) -> Value {
    json!({"message": user_message(text)})
}

/// A `SendMessageRequest` with a `configuration`.
pub fn send_request_with(text: &str, configuration: Value) -> Value {
    json!({"message": user_message(text), "configuration": configuration})
}

/// A follow-up `SendMessageRequest` on `task_id` (no contextId: the server infers it).
pub fn follow_up(task_id: &str, text: &str) -> Value {
    let mut message = user_message(text);
    message["taskId"] = json!(task_id);
    json!({"message": message})
}

/// The Task of a `SendMessageResponse` (panics if it is a Message).
#[track_caller]
pub fn task_of(response: &Value) -> &Value {
    let task = response
        .get("task")
        .unwrap_or_else(|| panic!("SendMessageResponse holds a task: {response}"));
    assert!(
        response.get("message").is_none(),
        "task and message both set: {response}"
    );
    task
}

/// `status.state` of a Task.
#[track_caller]
pub fn state(task: &Value) -> &str {
    task["status"]["state"]
        .as_str()
        .unwrap_or_else(|| panic!("task without status.state: {task}"))
}

/// `id` of a Task.
#[track_caller]
pub fn id_of(task: &Value) -> String {
    task["id"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| panic!("task without id: {task}"))
        .to_string()
}

pub fn is_terminal(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
    )
}

pub fn is_interrupted(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED"
    )
}

/// Which member of a `StreamResponse` is set: `task`, `message`, `statusUpdate` or
/// `artifactUpdate`. Panics unless exactly one is.
#[track_caller]
pub fn kind(response: &Value) -> &'static str {
    let kinds: Vec<&'static str> = ["task", "message", "statusUpdate", "artifactUpdate"]
        .into_iter()
        .filter(|k| response.get(*k).is_some())
        .collect();
    assert_eq!(
        kinds.len(),
        1,
        "a StreamResponse sets exactly one member: {response}"
    );
    assert_eq!(
        response.as_object().map(|o| o.len()),
        Some(1),
        "a StreamResponse has nothing besides its member: {response}"
    );
    kinds[0]
}

/// The state carried by a `task` or `statusUpdate` stream response.
pub fn event_state(response: &Value) -> Option<&str> {
    response
        .get("statusUpdate")
        .or_else(|| response.get("task"))
        .and_then(|v| v["status"]["state"].as_str())
}

/// The texts of a message's text parts, joined.
pub fn message_text(message: &Value) -> String {
    message["parts"]
        .as_array()
        .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect())
        .unwrap_or_default()
}

/// The texts of an artifact's parts, joined.
pub fn artifact_text(artifact: &Value) -> String {
    message_text(artifact)
}

/// The artifacts of a task (empty if none).
pub fn artifacts(task: &Value) -> Vec<Value> {
    task["artifacts"].as_array().cloned().unwrap_or_default()
}

/// The history of a task (empty if none).
pub fn history(task: &Value) -> Vec<Value> {
    task["history"].as_array().cloned().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// A webhook receiver

/// One push notification as the webhook received it.
#[derive(Debug, Clone)]
pub struct Push {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Push {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A real HTTP listener on 127.0.0.1 that answers 200 to every POST and hands each one to the
/// test through a channel.
pub struct Webhook {
    /// `http://127.0.0.1:PORT/hook`.
    pub url: String,
    rx: tokio::sync::mpsc::UnboundedReceiver<Push>,
    task: tokio::task::JoinHandle<()>,
}

impl Webhook {
    pub async fn start() -> Webhook {
        use axum::extract::State;
        use axum::http::{HeaderMap as AxHeaders, StatusCode, Uri};

        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Push>();
        async fn receive(
            State(tx): State<tokio::sync::mpsc::UnboundedSender<Push>>,
            uri: Uri,
            headers: AxHeaders,
            body: axum::body::Bytes,
        ) -> StatusCode {
            let body = serde_json::from_slice(&body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
            let mut converted = HeaderMap::new();
            for (name, value) in headers.iter() {
                if let (Ok(n), Ok(v)) = (
                    reqwest::header::HeaderName::from_bytes(name.as_str().as_bytes()),
                    reqwest::header::HeaderValue::from_bytes(value.as_bytes()),
                ) {
                    converted.append(n, v);
                }
            }
            let _ = tx.send(Push {
                path: uri.path().to_string(),
                headers: converted,
                body,
            });
            StatusCode::OK
        }
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(tx);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the webhook listener");
        let addr = listener.local_addr().expect("webhook address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Webhook {
            url: format!("http://{addr}/hook"),
            rx,
            task,
        }
    }

    /// The next push, or `None` if none arrives within `timeout`.
    pub async fn next_within(&mut self, timeout: Duration) -> Option<Push> {
        tokio::time::timeout(timeout, self.rx.recv())
            .await
            .ok()
            .flatten()
    }

    /// Collects pushes until one satisfies `last` (included); panics after `within`.
    pub async fn until(&mut self, within: Duration, last: impl Fn(&Push) -> bool) -> Vec<Push> {
        let deadline = tokio::time::Instant::now() + within;
        let mut out = Vec::new();
        loop {
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_within(remaining).await {
                Some(push) => {
                    let done = last(&push);
                    out.push(push);
                    if done {
                        return out;
                    }
                }
                None => panic!(
                    "the expected push did not arrive within {within:?}; received: {:#?}",
                    out.iter().map(|p| &p.body).collect::<Vec<_>>()
                ),
            }
        }
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Generates one `#[tokio::test]` per binding for an `async fn(Binding)`:
/// `both_bindings!(name);` makes `name::jsonrpc` and `name::rest`.
#[macro_export]
macro_rules! both_bindings {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn jsonrpc() {
                super::$name($crate::Binding::JsonRpc).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn rest() {
                super::$name($crate::Binding::Rest).await
            }
        }
    )+};
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

    #[test]
    fn query_strings_encode_values() {
        assert_eq!(
            query_string(&json!({"pageSize": 1, "contextId": "a b", "includeArtifacts": true})),
            "?contextId=a+b&includeArtifacts=true&pageSize=1"
        );
        assert_eq!(query_string(&json!({})), "");
    }

    #[tokio::test]
    async fn sse_lines_are_parsed_incrementally() {
        let chunks: Vec<reqwest::Result<axum::body::Bytes>> = vec![
            Ok(axum::body::Bytes::from_static(b": keep-alive\n\nid: 1\nda")),
            Ok(axum::body::Bytes::from_static(
                b"ta: {\"a\":1}\r\n\r\nid: 2\nevent: error\ndata: x\ndata: y\n\n",
            )),
            Ok(axum::body::Bytes::from_static(b"id: 3\ndata: partial")),
        ];
        let mut s = SseStream {
            status: 200,
            headers: HeaderMap::new(),
            binding: Binding::Rest,
            inner: Box::pin(futures::stream::iter(chunks)),
            buffer: Vec::new(),
            ready: VecDeque::new(),
            current: PartialEvent::default(),
            ended: false,
        };
        let first = s.next_event().await.unwrap();
        assert_eq!((first.seq(), first.json()), (1, json!({"a": 1})));
        let second = s.next_event().await.unwrap();
        assert_eq!(second.event.as_deref(), Some("error"));
        assert_eq!(second.data, "x\ny");
        assert_eq!(s.next_event().await, None);
    }
}
