//! The cold-start benchmark: runs the functions' one binary (`a2a-function`) in each role
//! (`A2A_FUNCTION`, as the template sets it) against a fake Lambda Runtime API on 127.0.0.1
//! and measures, per function,
//! - **init**: from `exec` to the function's first `GET /runtime/invocation/next` (what Lambda
//!   reports as *Init Duration*, minus loading the binary), and
//! - **first request**: from handing it its first event to the end of its response (the
//!   caller's wait on a cold instance, beyond init),
//! - with `--warm N`, the **warm request CPU**: the CPU time of each of N more requests the same
//!   instance answers after its first (what a warm invocation bills, beside its waits), and
//!   the **warm request** wall time, from its event's hand-over to the end of its answer, and
//! - **peak RSS**: the most memory the process held (`VmHWM`), read after its first answer: what
//!   the function's `MemorySize` must hold (docs/lambda.md, "Memory").
//!
//! With `AWS_ENDPOINT_URL` set (moto: `eval "$(infra/moto.sh env-start)"`), it creates a table,
//! the queues and a push signing secret there, so the first requests do their real AWS calls;
//! without, the functions get a local key file and an endpoint that refuses connections (the
//! requests that need AWS then fail fast, and the table says so). The functions reach the
//! emulator through a relay in this process that keeps their connections open, as the AWS
//! services do (`--direct`: straight to the emulator). Prints a Markdown table.
//!
//! `cargo build -p a2a-function` (or `--release`, or `cargo lambda build --release`) first;
//! `--bin-dir` names where the binary is: a directory holding `a2a-function`, or cargo lambda's
//! `target/lambda/a2a-function` holding `bootstrap` (default `$CARGO_TARGET_DIR/debug`).

// A tool: it may unwrap.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2a_aws::resources::{self, Resources};
use a2a_aws::AwsClients;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use clap::Parser;
use serde_json::{json, Value};
use tokio::sync::Notify;

#[derive(Debug, Parser)]
#[command(about = "Measure each function's init and first request against a fake Runtime API")]
struct Options {
    /// Where the functions' binary is: a directory with `a2a-function`, or with `bootstrap`
    /// (cargo lambda's output). Default: `$CARGO_TARGET_DIR/debug`, else `target/debug`.
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// The functions to run (default: all eleven).
    #[arg(long, value_delimiter = ',')]
    functions: Vec<String>,
    /// Cold starts per function; the table shows the median.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Requests each instance answers after its first, to measure a warm request's CPU time
    /// (the mean over them; 0: no warm column).
    #[arg(long, default_value_t = 0)]
    warm: usize,
    /// Longest wait for a function's init or first response, in seconds.
    #[arg(long, default_value_t = 20)]
    timeout_secs: u64,
    /// Exit non-zero unless every function initialised and answered its first event, and its
    /// `--warm` ones (the response may be an error: without AWS, that is expected). Times are
    /// never checked.
    #[arg(long)]
    check: bool,
    /// Let the functions call the emulator directly. By default they call it through a relay
    /// in this process that keeps their connections open, as DynamoDB and SQS do: moto's
    /// server closes every connection after one answer, which would charge each AWS call a
    /// connect and a close (CPU in the function's process) that the services never cost.
    #[arg(long)]
    direct: bool,
    /// Run each function under Valgrind's callgrind, its profile written into this directory,
    /// and print the instructions each run executed in all (a line `instructions <function>
    /// <warm> <total>` per run): `infra/instructions.py --lambda` takes the difference of two
    /// `--warm` counts. Times and memory are then valgrind's, not the function's.
    #[arg(long)]
    callgrind: Option<PathBuf>,
}

/// The one binary of every function (`functions/`).
const BINARY: &str = "a2a-function";

/// Every role, as `a2a_lambda_glue::Function::ALL` names them.
const ALL: [&str; 12] = [
    "send",
    "get",
    "list",
    "cancel",
    "push-config",
    "card",
    "stream",
    "rpc",
    "channel",
    "front",
    "worker",
    "push",
];

/// An API Gateway REST proxy event for `method path` with `body`.
fn rest_event(method: &str, path: &str, body: Option<Value>) -> Value {
    let host = "abc123.execute-api.us-east-1.amazonaws.com";
    json!({
        "resource": path, "path": path, "httpMethod": method,
        "headers": {"Host": host, "Content-Type": "application/json", "A2A-Version": "1.0"},
        "multiValueHeaders": {"Host": [host], "Content-Type": ["application/json"], "A2A-Version": ["1.0"]},
        "queryStringParameters": null, "multiValueQueryStringParameters": null,
        "pathParameters": {}, "stageVariables": null,
        "requestContext": {
            "accountId": "123456789012", "resourceId": "r1", "stage": "a2a", "requestId": "bench",
            "identity": {"sourceIp": "127.0.0.1"}, "resourcePath": path, "httpMethod": method,
            "apiId": "abc123", "path": format!("/a2a{path}"), "domainName": host,
            "protocol": "HTTP/1.1"
        },
        "body": body.map(|b| b.to_string()), "isBase64Encoded": false
    })
}

/// The event each function gets, first and warm: a representative request of its own (a send
/// carries a new `messageId` each time, so a warm one is not an idempotent repeat).
fn first_event(function: &str) -> Value {
    let message = json!({"message": {"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": "hello"}]}});
    match function {
        // The front function (front door FunctionUrl) answers the same send.
        "send" | "front" => rest_event("POST", "/message:send", Some(message)),
        "stream" => rest_event("POST", "/message:stream", Some(message)),
        "get" => rest_event("GET", "/tasks/cold-start-missing", None),
        "list" => rest_event("GET", "/tasks", None),
        "cancel" => rest_event("POST", "/tasks/cold-start-missing:cancel", None),
        "push-config" => rest_event(
            "GET",
            "/tasks/cold-start-missing/pushNotificationConfigs",
            None,
        ),
        "card" => rest_event("GET", "/.well-known/jwks.json", None),
        // No channel configured here: the init is what is measured; the answer is a 404.
        "channel" => rest_event("POST", "/a2a-lite/webhook", None),
        "rpc" => rest_event(
            "POST",
            "/jsonrpc",
            Some(
                json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "cold-start-missing"}}),
            ),
        ),
        // The scheduled sweep: one query of the table.
        "worker" => json!({"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}),
        // A push job whose config does not exist: one read of the table, then done.
        "push" => json!({"Records": [{
            "messageId": "m1", "receiptHandle": "r1",
            "body": json!({"v": 1, "owner": "anonymous", "taskId": "cold-start-missing", "seq": 1, "configId": "c1"}).to_string(),
            "attributes": {"ApproximateReceiveCount": "1", "MessageGroupId": "cold-start-missing"},
            "messageAttributes": {}, "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:push.fifo", "awsRegion": "us-east-1"
        }]}),
        other => panic!("unknown function {other}"),
    }
}

/// A message id no earlier run used.
fn uuid() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("cold-start-{}-{nanos}", std::process::id())
}

/// What the fake Runtime API saw of one cold start.
#[derive(Default)]
struct Seen {
    /// The first `GET /next`, and the CPU time the process had used by then.
    first_next: Option<(Instant, Option<Duration>)>,
    /// The end of the first response (or error report), what it was, and the CPU time used.
    answered: Option<(Instant, String, Option<Duration>)>,
    /// Events handed over so far, and answers received.
    served: usize,
    answers: usize,
    /// The CPU time used at the first warm event's hand-over, and after the last warm answer,
    /// with when each happened.
    warm_from: Option<(Instant, Option<Duration>)>,
    warm_to: Option<(Instant, Option<Duration>)>,
}

struct Runtime {
    function: String,
    /// Events to hand over after the first.
    warm: usize,
    /// The function's process, once spawned.
    pid: Mutex<Option<u32>>,
    seen: Mutex<Seen>,
    changed: Notify,
}

impl Runtime {
    fn cpu(&self) -> Option<Duration> {
        (*self.pid.lock().unwrap()).and_then(process_cpu)
    }
}

/// The CPU time `pid` has used so far, all its threads together, at nanosecond resolution:
/// the first field of each `/proc/<pid>/task/<tid>/schedstat` (`/proc/<pid>/stat`'s ticks are
/// 10 ms, too coarse for a 15 ms budget). Threads that already exited are not counted; the
/// functions keep theirs (tokio's workers) for the process's life. Linux only.
fn process_cpu(pid: u32) -> Option<Duration> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0u64;
    for task in tasks.flatten() {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

async fn next(State(rt): State<Arc<Runtime>>) -> Response {
    let serve = {
        let at = Instant::now();
        let cpu = rt.cpu();
        let mut seen = rt.seen.lock().unwrap();
        if seen.first_next.is_none() {
            seen.first_next = Some((at, cpu));
        } else if seen.served == 1 {
            seen.warm_from = Some((at, cpu));
        }
        seen.served += 1;
        seen.served <= 1 + rt.warm
    };
    rt.changed.notify_waiters();
    if !serve {
        // Every event handed over: this `next` waits until the process is stopped.
        std::future::pending::<()>().await;
    }
    let mut headers = HeaderMap::new();
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 60_000;
    for (name, value) in [
        (
            "lambda-runtime-aws-request-id",
            "bench-request-1".to_owned(),
        ),
        ("lambda-runtime-deadline-ms", deadline.to_string()),
        (
            "lambda-runtime-invoked-function-arn",
            "arn:aws:lambda:us-east-1:123456789012:function:bench".to_owned(),
        ),
        (
            "lambda-runtime-trace-id",
            "Root=1-6561abcd-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1".to_owned(),
        ),
    ] {
        headers.insert(name, HeaderValue::from_str(&value).unwrap());
    }
    let event = first_event(&rt.function);
    (StatusCode::OK, headers, event.to_string()).into_response()
}

/// The end of the function's answer: a buffered response, a streamed one (read to its end), or
/// an error report.
fn answered(rt: &Runtime, outcome: String) -> StatusCode {
    let at = Instant::now();
    let cpu = rt.cpu();
    {
        let mut seen = rt.seen.lock().unwrap();
        seen.answers += 1;
        if seen.answers == 1 {
            seen.answered = Some((at, outcome, cpu));
        } else if seen.answers == 1 + rt.warm {
            seen.warm_to = Some((at, cpu));
        }
    }
    rt.changed.notify_waiters();
    StatusCode::ACCEPTED
}

async fn response(
    State(rt): State<Arc<Runtime>>,
    UrlPath(_id): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let streamed = headers
        .get("lambda-runtime-function-response-mode")
        .is_some_and(|m| m == "streaming");
    let outcome = if streamed {
        // The prelude (JSON with the status code), eight NULs, then the body.
        let text = String::from_utf8_lossy(&body);
        let status = serde_json::from_str::<Value>(text.split('\0').next().unwrap_or_default())
            .ok()
            .and_then(|p| p["statusCode"].as_u64())
            .unwrap_or_default();
        format!("HTTP {status}, streamed")
    } else {
        match serde_json::from_slice::<Value>(&body) {
            Ok(v) if v.get("statusCode").is_some() => format!("HTTP {}", v["statusCode"]),
            Ok(v) if v.get("batchItemFailures").is_some() => {
                let failed = v["batchItemFailures"].as_array().map_or(0, Vec::len);
                format!("{failed} batch item failure(s)")
            }
            Ok(v) => format!("ok {}", truncate(&v.to_string())),
            Err(_) => "ok".into(),
        }
    };
    answered(&rt, outcome)
}

async fn error(
    State(rt): State<Arc<Runtime>>,
    UrlPath(_id): UrlPath<String>,
    body: Bytes,
) -> StatusCode {
    answered(
        &rt,
        format!("error {}", truncate(&String::from_utf8_lossy(&body))),
    )
}

async fn init_error(State(rt): State<Arc<Runtime>>, body: Bytes) -> StatusCode {
    answered(
        &rt,
        format!("init error {}", truncate(&String::from_utf8_lossy(&body))),
    )
}

fn truncate(text: &str) -> String {
    text.chars().take(80).collect()
}

/// One cold start's figures: wall-clock and CPU time of init and of the first request.
struct Run {
    peak_rss_kib: Option<u64>,
    init: Option<Duration>,
    init_cpu: Option<Duration>,
    first: Option<Duration>,
    first_cpu: Option<Duration>,
    /// The mean CPU time of a warm request (`--warm`).
    warm_cpu: Option<Duration>,
    /// The mean wall time of a warm request, from its event's hand-over to the end of its
    /// answer (`--warm`).
    warm: Option<Duration>,
    outcome: String,
}

async fn cold_start(
    binary: &Path,
    function: &str,
    env: &[(String, String)],
    timeout: Duration,
    warm: usize,
    callgrind: Option<&Path>,
) -> Run {
    let rt = Arc::new(Runtime {
        function: function.to_owned(),
        warm,
        pid: Mutex::new(None),
        seen: Mutex::new(Seen::default()),
        changed: Notify::new(),
    });
    let app = Router::new()
        .route("/2018-06-01/runtime/invocation/next", get(next))
        .route(
            "/2018-06-01/runtime/invocation/{id}/response",
            post(response),
        )
        .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
        .route("/2018-06-01/runtime/init/error", post(init_error))
        .with_state(rt.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    // std's process API: spawning does not block, and it needs no tokio feature.
    let profile = callgrind.map(|dir| dir.join(format!("callgrind.{function}.{warm}.out")));
    let mut command = match &profile {
        Some(profile) => {
            let mut valgrind = std::process::Command::new("valgrind");
            valgrind
                .arg("--tool=callgrind")
                .arg(format!("--callgrind-out-file={}", profile.display()))
                .arg(binary);
            valgrind
        }
        None => std::process::Command::new(binary),
    };
    command
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
        .env("A2A_FUNCTION", function)
        .env("AWS_LAMBDA_FUNCTION_NAME", format!("bench-{function}"))
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_LOG_FORMAT", "JSON")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            server.abort();
            return Run {
                outcome: format!("cannot start {}: {e}", binary.display()),
                ..Run::none()
            };
        }
    };
    *rt.pid.lock().unwrap() = Some(child.id());
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let changed = rt.changed.notified();
        {
            let seen = rt.seen.lock().unwrap();
            // Done once every event is answered, or at once when init failed (the process
            // exits: nothing more will come).
            let init_failed =
                matches!(&seen.answered, Some((_, o, _)) if o.starts_with("init error"));
            if seen.answers > warm || init_failed {
                break;
            }
        }
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            break;
        }
    }
    let peak_rss_kib = peak_rss_kib(child.id());
    match &profile {
        Some(profile) => match stop_profiled(child, profile).await {
            Ok(total) => eprintln!("instructions {function} {warm} {total}"),
            Err(why) => eprintln!("instructions {function} {warm}: {why}"),
        },
        None => {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
    server.abort();
    let seen = rt.seen.lock().unwrap();
    let Some((next_at, next_cpu)) = seen.first_next else {
        let outcome = match &seen.answered {
            Some((_, outcome, _)) => outcome.clone(),
            None => "never asked for an event".into(),
        };
        return Run {
            peak_rss_kib,
            outcome,
            ..Run::none()
        };
    };
    let init = Some(next_at - started);
    match &seen.answered {
        Some((at, outcome, cpu)) => Run {
            peak_rss_kib,
            init,
            init_cpu: next_cpu,
            first: Some(*at - next_at),
            first_cpu: cpu
                .zip(next_cpu)
                .map(|(end, start)| end.saturating_sub(start)),
            warm_cpu: seen
                .warm_to
                .and_then(|(_, cpu)| cpu)
                .zip(seen.warm_from.and_then(|(_, cpu)| cpu))
                .filter(|_| warm > 0)
                .map(|(end, start)| end.saturating_sub(start) / warm as u32),
            warm: seen
                .warm_to
                .zip(seen.warm_from)
                .filter(|_| warm > 0)
                .map(|((end, _), (start, _))| (end - start) / warm as u32),
            outcome: outcome.clone(),
        },
        None => Run {
            peak_rss_kib,
            init,
            init_cpu: next_cpu,
            outcome: "no answer before the timeout".into(),
            ..Run::none()
        },
    }
}

/// Stops a function running under callgrind as Lambda ends an instance (SIGTERM; callgrind
/// writes its profile on the way out, which SIGKILL would not let it) and reads the
/// instructions it executed in all from the profile's `summary:` line.
async fn stop_profiled(mut child: std::process::Child, profile: &Path) -> Result<u64, String> {
    let pid = child.id().to_string();
    let signalled = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    if !signalled.is_ok_and(|status| status.success()) {
        let _ = child.kill();
    }
    tokio::task::spawn_blocking(move || child.wait())
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(profile).map_err(|e| format!("no profile: {e}"))?;
    text.lines()
        .find_map(|line| {
            line.strip_prefix("summary:")
                .or_else(|| line.strip_prefix("totals:"))
        })
        .and_then(|total| total.trim().parse().ok())
        .ok_or_else(|| "the profile has no total".into())
}

impl Run {
    fn none() -> Self {
        Run {
            peak_rss_kib: None,
            init: None,
            init_cpu: None,
            first: None,
            first_cpu: None,
            warm_cpu: None,
            warm: None,
            outcome: String::new(),
        }
    }
}

/// The most resident memory process `pid` has held, KiB (`VmHWM` in `/proc/<pid>/status`;
/// Linux only, as Lambda is).
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The largest peak RSS of `runs`, as a table cell in MiB.
fn peak_rss_cell(runs: &[u64]) -> String {
    runs.iter()
        .max()
        .map(|kib| format!("{:.1}", *kib as f64 / 1024.0))
        .unwrap_or_else(|| "-".into())
}

/// The functions' environment: the moto resources when `AWS_ENDPOINT_URL` is set, else local
/// stand-ins that make every AWS call fail fast.
async fn environment(dir: &Path) -> Result<Vec<(String, String)>, String> {
    let mut env = vec![
        ("A2A_AUTH".to_owned(), "none".to_owned()),
        ("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH".into(), "true".into()),
        (
            "A2A_PUBLIC_BASE_URL".into(),
            "https://abc123.execute-api.us-east-1.amazonaws.com/a2a".into(),
        ),
        ("AWS_REGION".into(), "us-east-1".into()),
    ];
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        env.extend([
            // Connection refused at once: no real AWS is ever contacted.
            (
                "AWS_ENDPOINT_URL".to_owned(),
                "http://127.0.0.1:9".to_owned(),
            ),
            ("AWS_ACCESS_KEY_ID".into(), "bench".into()),
            ("AWS_SECRET_ACCESS_KEY".into(), "bench".into()),
            ("AWS_MAX_ATTEMPTS".into(), "1".into()),
            ("A2A_TABLE".into(), "a2a-cold-start".into()),
            (
                "A2A_WORK_QUEUE_URL".into(),
                "http://127.0.0.1:9/q/work".into(),
            ),
            (
                "A2A_PUSH_QUEUE_URL".into(),
                "http://127.0.0.1:9/q/push.fifo".into(),
            ),
            (
                "A2A_WORK_DLQ_URL".into(),
                "http://127.0.0.1:9/q/work-dlq".into(),
            ),
            (
                "A2A_PUSH_DLQ_URL".into(),
                "http://127.0.0.1:9/q/push-dlq.fifo".into(),
            ),
            (
                "A2A_PUSH_SIGNING_KEYS_FILE".into(),
                dir.join("push-signing-keys.json").display().to_string(),
            ),
        ]);
        return Ok(env);
    }
    let clients = AwsClients::from_env().await;
    let prefix = format!("a2a-cold-start-{}", std::process::id());
    let resources = Resources::named(&prefix);
    let config = resources::create_all(&clients, &resources).await?;
    let [work_dlq_url, push_dlq_url] =
        a2a_lambda_tools::dead_letter_queue_urls(&clients, &resources).await?;
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .load()
        .await;
    let secret = aws_sdk_secretsmanager::Client::new(&sdk)
        .create_secret()
        .name(format!("{prefix}-push-signing-keys"))
        .secret_string(r#"{"keys": []}"#)
        .send()
        .await
        .map_err(|e| format!("cannot create the signing secret: {e}"))?;
    env.extend([
        ("A2A_TABLE".to_owned(), config.table),
        ("A2A_WORK_QUEUE_URL".into(), config.work_queue_url),
        ("A2A_PUSH_QUEUE_URL".into(), config.push_queue_url),
        ("A2A_WORK_DLQ_URL".into(), work_dlq_url),
        ("A2A_PUSH_DLQ_URL".into(), push_dlq_url),
        (
            "A2A_PUSH_SIGNING_SECRET_ARN".into(),
            secret.arn().unwrap_or_default().to_owned(),
        ),
    ]);
    Ok(env)
}

fn ms(d: Option<Duration>) -> String {
    ms_to(d, 1)
}

/// Milliseconds to the hundredth: a warm request's CPU is about one.
fn ms2(d: Option<Duration>) -> String {
    ms_to(d, 2)
}

fn ms_to(d: Option<Duration>, places: usize) -> String {
    d.map_or_else(
        || "-".into(),
        |d| format!("{:.places$}", d.as_secs_f64() * 1000.0),
    )
}

fn median(mut values: Vec<Duration>) -> Option<Duration> {
    values.sort();
    values.get(values.len() / 2).copied()
}

/// Serves on 127.0.0.1 a relay that forwards every request to `emulator` and keeps its
/// clients' connections open (see `--direct`); returns its address.
async fn keep_alive_relay(emulator: String) -> Result<SocketAddr, String> {
    let emulator = emulator.trim_end_matches('/').to_owned();
    let http = reqwest::Client::new();
    let app = Router::new().fallback(move |request: axum::extract::Request| {
        let url = format!(
            "{emulator}{}",
            request.uri().path_and_query().map_or("/", |p| p.as_str())
        );
        let http = http.clone();
        async move {
            let response = match a2a_lambda_tools::forward(&http, &url, request).await {
                Ok(response) => response,
                Err(e) => {
                    return (
                        StatusCode::BAD_GATEWAY,
                        format!("emulator not reachable: {e}"),
                    )
                        .into_response()
                }
            };
            // The whole answer in one write, with its length, as the services answer: a
            // streamed one would wake the function once per piece.
            let (parts, body) = response.into_parts();
            match axum::body::to_bytes(body, usize::MAX).await {
                Ok(body) => Response::from_parts(parts, axum::body::Body::from(body)),
                Err(e) => {
                    (StatusCode::BAD_GATEWAY, format!("emulator answer cut: {e}")).into_response()
                }
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot start the relay: {e}"))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(address)
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let o = Options::parse();
    let bin_dir = o.bin_dir.clone().unwrap_or_else(|| {
        PathBuf::from(std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into()))
            .join("debug")
    });
    let binary = [BINARY, "bootstrap"]
        .map(|name| bin_dir.join(name))
        .into_iter()
        .find(|path| path.exists())
        .ok_or_else(|| {
            format!(
                "no {BINARY} or bootstrap in {}: cargo build -p {BINARY} first",
                bin_dir.display()
            )
        })?;
    let functions: Vec<String> = if o.functions.is_empty() {
        ALL.iter().map(|f| f.to_string()).collect()
    } else {
        o.functions.clone()
    };
    let dir = std::env::temp_dir().join(format!("a2a-cold-start-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut env = environment(&dir).await?;
    let emulator = std::env::var("AWS_ENDPOINT_URL").ok();
    let with_aws = emulator.is_some();
    let relayed = match emulator {
        Some(emulator) if !o.direct => {
            let relay = keep_alive_relay(emulator).await?;
            env.push(("AWS_ENDPOINT_URL".into(), format!("http://{relay}")));
            true
        }
        _ => false,
    };
    println!(
        "binary: {} (role: A2A_FUNCTION) · AWS: {} · {} run(s) per function, median",
        binary.display(),
        if relayed {
            "emulator, through a keep-alive relay"
        } else if with_aws {
            "emulator"
        } else {
            "none (calls fail fast)"
        },
        o.runs
    );
    println!();
    println!(
        "| function | init (exec → first /next), ms | init CPU, ms | first request, ms | first request CPU, ms | warm request CPU, ms | warm request, ms | peak RSS, MiB | first answer |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|");
    let mut failed: Vec<String> = Vec::new();
    for function in &functions {
        let mut inits = Vec::new();
        let mut init_cpus = Vec::new();
        let mut firsts = Vec::new();
        let mut first_cpus = Vec::new();
        let mut warm_cpus = Vec::new();
        let mut warms = Vec::new();
        let mut rss = Vec::new();
        let mut outcome = String::new();
        for _ in 0..o.runs.max(1) {
            let run = cold_start(
                &binary,
                function,
                &env,
                Duration::from_secs(o.timeout_secs),
                o.warm,
                o.callgrind.as_deref(),
            )
            .await;
            inits.extend(run.init);
            init_cpus.extend(run.init_cpu);
            firsts.extend(run.first);
            first_cpus.extend(run.first_cpu);
            warm_cpus.extend(run.warm_cpu);
            warms.extend(run.warm);
            rss.extend(run.peak_rss_kib);
            let incomplete = run.first.is_none() || (o.warm > 0 && run.warm_cpu.is_none());
            if incomplete && !failed.iter().any(|f| f.starts_with(function.as_str())) {
                failed.push(format!("{function}: {}", run.outcome));
            }
            outcome = run.outcome;
        }
        println!(
            "| {function} | {} | {} | {} | {} | {} | {} | {} | {} |",
            ms(median(inits)),
            ms(median(init_cpus)),
            ms(median(firsts)),
            ms(median(first_cpus)),
            ms2(median(warm_cpus)),
            ms(median(warms)),
            peak_rss_cell(&rss),
            outcome.replace('|', "\\|")
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    if o.check && !failed.is_empty() {
        return Err(format!(
            "functions that did not answer: {}",
            failed.join("; ")
        ));
    }
    Ok(())
}
