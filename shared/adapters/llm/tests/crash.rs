//! A tool runs exactly once across a `kill -9` and the replay after it: a2a-local's server in a
//! process of its own on the embedded store, its model the tests' scripted OpenAI-compatible
//! server, its tool writing a line to a file this test reads. The process is killed (SIGKILL)
//! once the tool ran and its step was recorded (the model's next call has come) but before the
//! task ended, then started again on the same data directory: the work queue redelivers the
//! job, and the execution replays from its record to the model's answer.
//!
//! Its own harness (`harness = false` in Cargo.toml): this binary is the test, and, started with
//! `serve`, the server the test kills.

mod support;

use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};

use a2a_client::{Client, StreamResponse};
use a2a_llm::{ChatModel, LlmAgent, Tool};
use a2a_protocol::{
    GetTaskRequest, SendMessageConfiguration, SendMessageResponse, SubscribeToTaskRequest, Task,
    TaskState,
};
use futures::StreamExt as _;
use serde_json::json;
use support::{answer, token_usage, within, ModelServer, Script, API_KEY};
use tokio::sync::Notify;

/// The test's name, as `cargo test` filters and reports it.
const TEST: &str = "a_tool_runs_exactly_once_across_a_kill_9_and_the_replay";
/// The first argument that makes this binary the server.
const SERVE: &str = "serve";
/// The server's model (`http://127.0.0.1:PORT/v1`) and the file its tool writes to.
const MODEL_URL: &str = "A2A_CRASH_TEST_MODEL_URL";
const TOOL_LOG: &str = "A2A_CRASH_TEST_TOOL_LOG";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    if args.first().map(String::as_str) == Some(SERVE) {
        return runtime.block_on(serve(&args[1..]));
    }
    // `cargo test FILTER` passes its filter to every test binary; flags are the harness's.
    let filtered_out = args
        .iter()
        .any(|a| !a.starts_with('-') && !TEST.contains(a.as_str()));
    if filtered_out || args.iter().any(|a| a == "--list") {
        println!("0 tests, 1 filtered out");
        return ExitCode::SUCCESS;
    }
    runtime.block_on(a_tool_runs_exactly_once_across_a_kill_9_and_the_replay());
    println!("test {TEST} ... ok");
    ExitCode::SUCCESS
}

/// The server: an LLM agent whose tool `count` appends the word it is given to the file
/// `$A2A_CRASH_TEST_TOOL_LOG`, served by a2a-local with `args` (its options).
async fn serve(args: &[String]) -> ExitCode {
    let model = std::env::var(MODEL_URL).expect("the model's URL");
    let log = PathBuf::from(std::env::var(TOOL_LOG).expect("the tool's file"));
    let count = Tool::local(
        "count",
        "Counts a word.",
        json!({"type": "object", "properties": {"word": {"type": "string"}}}),
        move |args| {
            let log = log.clone();
            async move {
                let word = args["word"].as_str().unwrap_or("?").to_owned();
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)
                    .map_err(|e| e.to_string())?;
                writeln!(file, "{word}").map_err(|e| e.to_string())?;
                Ok(format!("{word} counted"))
            }
        },
    );
    let agent = LlmAgent::new("crash")
        .model(ChatModel::new(&model, API_KEY, "m"))
        .system_prompt("You are terse.")
        .tool(count)
        .build();
    let argv = std::iter::once("a2a-local").chain(args.iter().map(String::as_str));
    let options = match a2a_local::Options::try_parse_from_with_data_dir(".a2a", argv) {
        Ok(options) => options,
        Err(err) => err.exit(),
    };
    a2a_local::exit_code(
        "crash-test-server",
        a2a_local::serve_until_signal(options, agent).await,
    )
}

/// The server's process: killed when dropped (its log printed if the test is failing).
struct Server {
    process: Child,
    base: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    /// Starts the server on a free port, its store in `data_dir`; returns once it serves.
    async fn start(data_dir: &Path, model: &ModelServer, tool_log: &Path) -> Self {
        let mut process = Command::new(std::env::current_exe().expect("this binary"))
            .arg(SERVE)
            .args(["--addr", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            // Work the client does not wait for goes through the work queue, as on Lambda: a
            // job whose process died is delivered again (after 2 s here, 60 by default) and
            // replays. An inline run whose process died is ended FAILED instead (the kit's
            // tests/tests/recovery.rs).
            .args([
                "--queue-background-work",
                "on",
                "--work-visibility-secs",
                "2",
            ])
            .args(["--execution-lease-secs", "3", "--sweep-interval-secs", "1"])
            .env(MODEL_URL, &model.base_url)
            .env(TOOL_LOG, tool_log)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the server");
        let stderr = process.stderr.take().expect("its stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (serving, base) = tokio::sync::oneshot::channel();
        let lines = log.clone();
        std::thread::spawn(move || {
            let mut serving = Some(serving);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(base) = line.split("serving on ").nth(1) {
                    let base = base.split(';').next().unwrap_or_default().to_owned();
                    if let Some(serving) = serving.take() {
                        let _ = serving.send(base);
                    }
                }
                let mut log = lines.lock().unwrap_or_else(|e| e.into_inner());
                log.push_str(&line);
                log.push('\n');
            }
        });
        let mut server = Self {
            process,
            base: String::new(),
            log,
        };
        server.base = within(base).await.unwrap_or_else(|_| {
            panic!("the server did not start:\n{}", server.log_text());
        });
        server
    }

    async fn client(&self) -> Client {
        Client::connect(&self.base).await.expect("the server")
    }

    /// `kill -9`.
    fn kill(&mut self) {
        self.process.kill().expect("SIGKILL the server");
        self.process.wait().expect("the killed server");
    }

    fn log_text(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
        if std::thread::panicking() {
            eprintln!("the server's log ({}):\n{}", self.base, self.log_text());
        }
    }
}

/// The task, once it has ended: followed with SubscribeToTask while it is active.
async fn ended(client: &Client, id: &str) -> Task {
    within(async {
        loop {
            let task = current(client, id).await;
            if task.status.state.is_terminal() {
                return task;
            }
            let request = SubscribeToTaskRequest {
                id: id.to_owned(),
                ..SubscribeToTaskRequest::default()
            };
            if let Ok(mut events) = client.subscribe_to_task(request, None).await {
                while let Some(Ok(event)) = events.next().await {
                    if matches!(event, StreamResponse::StatusUpdate(u) if u.status.state.is_terminal())
                    {
                        break;
                    }
                }
            }
        }
    })
    .await
}

/// The lines the tool wrote: one per time it ran.
fn tool_runs(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

async fn a_tool_runs_exactly_once_across_a_kill_9_and_the_replay() {
    let dir = support::TempDir::new();
    let (data_dir, tool_log) = (dir.path().join("data"), dir.path().join("tool.log"));
    let second_call = Arc::new(Notify::new());
    let model = ModelServer::start(vec![
        Script::ToolCall {
            name: "count",
            arguments: r#"{"word":"apples"}"#,
        },
        // The call after the tool's: the tool ran and its step is recorded. The model holds
        // it (thinking) until the server is killed.
        Script::Held {
            arrived: second_call.clone(),
        },
        // The same call, made again by the replay.
        Script::Text(vec!["Three ", "apples."]),
    ])
    .await;
    let mut server = Server::start(&data_dir, &model, &tool_log).await;
    let client = server.client().await;
    let mut request = client.text("count the apples");
    request.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        ..SendMessageConfiguration::default()
    });
    let SendMessageResponse::Task(task) = client.send_message(request).await.expect("the send")
    else {
        panic!("expected a task");
    };
    within(second_call.notified()).await;
    assert_eq!(tool_runs(&tool_log), ["apples"], "the tool ran before");
    let before = current(&client, &task.id).await;
    assert_eq!(before.status.state, TaskState::Working, "{before:?}");

    server.kill();
    let server = Server::start(&data_dir, &model, &tool_log).await;
    let client = server.client().await;
    let task = ended(&client, &task.id).await;

    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(answer(&task), "Three apples.");
    assert_eq!(tool_runs(&tool_log), ["apples"], "the tool ran once");
    // Three requests: the first turn's, once; the second turn's, cut off by the kill before
    // its step was recorded, and made again by the replay.
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let turns: Vec<String> = requests.iter().map(|r| r["messages"].to_string()).collect();
    assert!(!turns[0].contains("apples counted"), "{}", turns[0]);
    assert!(turns[1].contains("apples counted"), "{}", turns[1]);
    assert_eq!(turns[2], turns[1], "the replay asks the second turn again");
    // Two model calls recorded (7 in, 3 out each): the cut-off call had none.
    assert_eq!(token_usage(&task), [14, 6, 20, 2]);
}

/// The task as it stands.
async fn current(client: &Client, id: &str) -> Task {
    client
        .get_task(GetTaskRequest {
            id: id.to_owned(),
            ..GetTaskRequest::default()
        })
        .await
        .expect("GetTask")
}
