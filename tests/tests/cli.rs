//! The `a2a` command against two servers: `a2a-local`, and an agent built on the official
//! Python SDK's server (`tests/interop/sdk_server.py`), so that neither the command nor the
//! client library is tuned to one server. Every subcommand runs against both.

use a2a_e2e::issuer::{TestIssuer, ALL_SCOPES, AUDIENCE, CLIENT_SECRET};
use a2a_e2e::*;
use serde_json::{json, Value};

/// One server under test.
struct Target {
    url: String,
    /// `a2a-local` (which signs its pushes), or the SDK server (which does not).
    local: bool,
}

/// `both_servers!(name)` makes `name::a2a_local` and `name::python_sdk` of an
/// `async fn(Target)`. The SDK one skips (saying why) without the interop venv, unless
/// `A2A_REQUIRE_INTEROP=1`.
macro_rules! both_servers {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a2a_local() {
                if a2a_e2e::store_ready() {
                    let server = a2a_e2e::Server::start().await;
                    let url = server.base().to_string();
                    super::$name(super::Target { url, local: true }).await;
                }
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn python_sdk() {
                if let Some(server) = a2a_e2e::SdkServer::start().await {
                    let url = server.base.clone();
                    super::$name(super::Target { url, local: false }).await;
                }
            }
        }
    )+};
}

both_servers!(
    card_prints_the_agent,
    send_waits_for_the_task_on_both_bindings,
    send_attaches_files_and_data,
    send_stream_shows_chunks_while_the_task_runs,
    get_list_and_cancel,
    subscribe_follows_a_running_task,
    push_configs_are_set_read_listed_and_deleted,
    push_listen_prints_verified_pushes_only,
    discover_filters_by_skill_tag_and_input_mode_and_caches_cards,
    errors_print_the_a2a_error_with_its_exit_code,
    ctrl_c_on_a_stream_leaves_the_task_running_and_says_how_to_follow_it,
    ctrl_c_before_an_answer_says_where_to_look,
);

/// The state of a task, asked with the client library.
async fn state_of(url: &str, task_id: &str) -> a2a_client::TaskState {
    let client = a2a_client::Client::connect(url).await.expect("connect");
    let task = client
        .get_task(a2a_client::GetTaskRequest {
            id: task_id.into(),
            ..Default::default()
        })
        .await
        .expect("GetTask");
    task.status.state
}

/// Sends `text` without waiting (`--no-wait`) and returns the task id.
async fn start_task(url: &str, text: &str) -> String {
    let out = a2a(&["send", url, text, "--no-wait", "--json"]).await;
    out.expect_code(0);
    out.json()["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no task id: {out:#?}"))
        .to_string()
}

async fn card_prints_the_agent(t: Target) {
    let out = a2a(&["card", &t.url]).await;
    out.expect_code(0);
    assert!(out.stdout.contains("skill slow"), "{out:#?}");
    assert!(out.stdout.contains("interface JSONRPC 1.0"), "{out:#?}");

    let card = a2a(&["card", &t.url, "--json"]).await.expect_code(0).json();
    let bindings: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .filter_map(|i| i["protocolBinding"].as_str())
        .collect();
    assert!(bindings.contains(&"JSONRPC") && bindings.contains(&"HTTP+JSON"));

    // The URL may come from the environment.
    let mut command = a2a_command(&["card", "--json"]);
    command.env("A2A_URL", &t.url);
    let from_env = run_cli(command).await;
    assert_eq!(from_env.expect_code(0).json(), card);
}

async fn send_waits_for_the_task_on_both_bindings(t: Target) {
    for binding in ["jsonrpc", "rest"] {
        let out = a2a(&["send", &t.url, "hello there", "--binding", binding]).await;
        out.expect_code(0);
        assert!(out.stdout.contains("TASK_STATE_COMPLETED"), "{out:#?}");
        assert!(out.stdout.contains("hello there"), "{out:#?}");

        let json = a2a(&["send", &t.url, "again", "--binding", binding, "--json"])
            .await
            .expect_code(0)
            .json();
        assert_eq!(json["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    }
}

async fn send_attaches_files_and_data(t: Target) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("note.txt");
    std::fs::write(&file, b"file body").expect("write the file");
    let out = a2a(&[
        "send",
        &t.url,
        "with attachments",
        "--file",
        file.to_str().expect("utf-8 path"),
        "--data",
        // Strings: the SDK keeps data as a protobuf Value, where every number is a double.
        r#"{"k": ["a", "b"]}"#,
        "--json",
    ])
    .await;
    let task = out.expect_code(0).json()["task"].clone();
    let sent = &task["history"][0]["parts"];
    assert_eq!(sent[0]["text"], "with attachments", "{task}");
    assert_eq!(sent[1]["filename"], "note.txt", "{task}");
    assert_eq!(sent[1]["mediaType"], "text/plain", "{task}");
    assert_eq!(sent[1]["raw"], "ZmlsZSBib2R5", "base64 of the file: {task}");
    assert_eq!(sent[2]["data"], json!({"k": ["a", "b"]}), "{task}");

    // Bad input is refused before anything is sent.
    let bad = a2a(&["send", &t.url, "x", "--data", "{not json"]).await;
    bad.expect_code(2);
    assert!(bad.stderr.contains("--data is not JSON"), "{bad:#?}");
}

async fn send_stream_shows_chunks_while_the_task_runs(t: Target) {
    // A second between chunks, so the check below has time to run while the task works.
    let mut live = LiveCli::start(&["send", "--stream", &t.url, "slow 4 1000"]).await;
    let first = live.line_where(|l| l.starts_with("task ")).await;
    let task_id = first
        .split_whitespace()
        .nth(1)
        .expect("task id")
        .to_string();
    live.line_where(|l| l.contains("chunk-1")).await;
    // The first chunk is on screen while the task is still working: it arrived live.
    let state = state_of(&t.url, &task_id).await;
    assert!(
        !state.is_terminal(),
        "the task is already {state:?} when its first chunk is shown"
    );
    let out = live.finish().await;
    out.expect_code(0);
    let chunk = |n: usize| out.stdout.find(&format!("chunk-{n}")).expect("every chunk");
    assert!(chunk(1) < chunk(2) && chunk(2) < chunk(3) && chunk(3) < chunk(4));
    assert!(
        out.stdout
            .trim_end()
            .ends_with("status TASK_STATE_COMPLETED"),
        "{out:#?}"
    );

    // The README's example, to its end: five chunks in order, then COMPLETED.
    let out = a2a(&["send", "--stream", &t.url, "slow 5 200"]).await;
    out.expect_code(0);
    let chunks: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("artifact slow: "))
        .collect();
    let expected: Vec<String> = (1..=5)
        .map(|n| format!("artifact slow: chunk-{n} "))
        .collect();
    assert_eq!(chunks, expected, "{out:#?}");
    assert!(
        out.stdout.ends_with("status TASK_STATE_COMPLETED\n"),
        "{out:#?}"
    );
}

async fn get_list_and_cancel(t: Target) {
    let id = start_task(&t.url, "slow 60 500").await;

    let got = a2a(&["get", &t.url, &id, "--json"])
        .await
        .expect_code(0)
        .json();
    assert_eq!(got["id"], json!(id));

    let listed = a2a(&["list", &t.url, "--json"]).await.expect_code(0).json();
    let ids: Vec<&str> = listed["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert!(ids.contains(&id.as_str()), "{listed}");

    let canceled = a2a(&["cancel", &t.url, &id, "--json"])
        .await
        .expect_code(0)
        .json();
    assert_eq!(
        canceled["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );

    // Text output, with the agent's URL from the environment.
    let mut command = a2a_command(&["get", &id]);
    command.env("A2A_URL", &t.url);
    let text = run_cli(command).await;
    text.expect_code(0);
    assert!(
        text.stdout
            .starts_with(&format!("task {id}  TASK_STATE_CANCELED")),
        "{text:#?}"
    );
}

async fn subscribe_follows_a_running_task(t: Target) {
    let id = start_task(&t.url, "slow 3 1000").await;
    let out = a2a(&["subscribe", &t.url, &id]).await;
    out.expect_code(0);
    assert!(out.stdout.contains("chunk-3"), "{out:#?}");
    assert!(
        out.stdout
            .trim_end()
            .ends_with("status TASK_STATE_COMPLETED"),
        "{out:#?}"
    );
    assert_eq!(
        state_of(&t.url, &id).await,
        a2a_client::TaskState::Completed
    );
}

async fn push_configs_are_set_read_listed_and_deleted(t: Target) {
    let id = start_task(&t.url, "slow 60 500").await;
    let hook = "http://127.0.0.1:9/hook";
    let set = a2a(&[
        "push",
        "set",
        &t.url,
        &id,
        hook,
        "--push-token",
        "tok",
        "--json",
    ])
    .await
    .expect_code(0)
    .json();
    assert_eq!(set["url"], hook, "{set}");
    let config_id = set["id"].as_str().expect("a config id").to_string();

    let got = a2a(&["push", "get", &t.url, &id, &config_id, "--json"])
        .await
        .expect_code(0)
        .json();
    assert_eq!(
        (got["id"].clone(), got["url"].clone()),
        (json!(config_id), json!(hook))
    );

    let listed = a2a(&["push", "list", &t.url, &id, "--json"])
        .await
        .expect_code(0)
        .json();
    assert_eq!(
        listed["configs"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );

    a2a(&["push", "delete", &t.url, &id, &config_id])
        .await
        .expect_code(0);
    let after = a2a(&["push", "list", &t.url, &id]).await;
    assert!(
        after.expect_code(0).stdout.contains("no push configs"),
        "{after:#?}"
    );

    a2a(&["cancel", &t.url, &id]).await.expect_code(0);
}

async fn push_listen_prints_verified_pushes_only(t: Target) {
    let mut listen = LiveCli::start(&["push", "listen", &t.url, "--count", "1", "--json"]).await;
    let first: Value = serde_json::from_str(&listen.next_line().await).expect("JSON line");
    let hook = first["listening"]
        .as_str()
        .expect("the webhook URL")
        .to_string();

    let sent = a2a(&["send", &t.url, "hello", "--push", &hook, "--json"])
        .await
        .expect_code(0)
        .json();
    let task_id = sent["task"]["id"].as_str().expect("task id").to_string();
    if t.local {
        // a2a-local signs its pushes: the first one verifies, is printed, and (--count 1) ends
        // the listener.
        let push: Value = serde_json::from_str(&listen.next_line().await).expect("JSON line");
        assert_eq!(push["taskId"], json!(task_id), "{push}");
        assert!(push["seq"].as_u64().is_some_and(|n| n > 0), "{push}");
        assert!(push["event"].is_object(), "{push}");
        listen.finish().await.expect_code(0);
    } else {
        // The SDK server's pushes carry no signature: each is refused and none printed.
        let refused = listen
            .stderr_line_where(|l| l.contains("refused a push"))
            .await;
        assert!(refused.contains("no push signature"), "{refused}");
        assert_eq!(
            listen.seen.len(),
            1,
            "only the listening line: {:?}",
            listen.seen
        );
    }
}

async fn discover_filters_by_skill_tag_and_input_mode_and_caches_cards(t: Target) {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = dir.path().join("cache");
    let cache_arg = cache.to_str().expect("utf-8 path");
    let registry = dir.path().join("registry.json");
    std::fs::write(&registry, json!([t.url]).to_string()).expect("write the registry");
    let registry_arg = registry.to_str().expect("utf-8 path");
    let discover = |extra: &[&str]| {
        let mut args = vec!["discover", "--json", "--cache-dir", cache_arg];
        args.extend_from_slice(extra);
        let args: Vec<String> = args.into_iter().map(str::to_string).collect();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            a2a(&args).await.expect_code(0).json()
        }
    };

    let found = discover(&[&t.url, "--skill", "slow"]).await;
    assert_eq!(found.as_array().map(Vec::len), Some(1), "{found}");
    assert_eq!(found[0]["source"], "network");
    assert_eq!(found[0]["url"], json!(t.url));

    // Within the card's max-age, the cache answers without a request.
    let again = discover(&["--registry", registry_arg, "--input-mode", "text/plain"]).await;
    assert_eq!(again[0]["source"], "cache", "{again}");

    let none = discover(&[&t.url, "--tag", "no-such-tag"]).await;
    assert_eq!(none, json!([]));
    let none = discover(&[&t.url, "--skill", "no-such-skill"]).await;
    assert_eq!(none, json!([]));

    // Once stale, the card is revalidated with its ETag: a 304 keeps it.
    let file = std::fs::read_dir(&cache)
        .expect("the cache directory")
        .next()
        .expect("one cached card")
        .expect("a directory entry")
        .path();
    let mut cached: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("read the cache")).expect("JSON");
    assert!(cached["etag"].is_string(), "{cached}");
    cached["freshUntil"] = json!(0);
    std::fs::write(&file, cached.to_string()).expect("write the cache");
    let revalidated = discover(&[&t.url]).await;
    assert_eq!(revalidated[0]["source"], "revalidated", "{revalidated}");
}

async fn errors_print_the_a2a_error_with_its_exit_code(t: Target) {
    let missing = a2a(&["get", &t.url, "no-such-task"]).await;
    missing.expect_code(1);
    assert!(
        missing.stderr.starts_with("TaskNotFoundError: "),
        "{missing:#?}"
    );
    let json = a2a(&[
        "cancel",
        &t.url,
        "no-such-task",
        "--json",
        "--binding",
        "rest",
    ])
    .await;
    json.expect_code(1);
    let error: Value = serde_json::from_str(json.stderr.trim()).expect("a JSON error");
    assert_eq!(error["error"]["name"], "TaskNotFoundError", "{error}");

    // Neither server offers an extended card: an A2A error by name (a2a-local says why).
    let extended = a2a(&["card", "--extended", &t.url]).await;
    extended.expect_code(1);
    let name = extended.stderr.split(':').next().unwrap_or_default();
    assert!(
        name.ends_with("Error") && !name.contains(' '),
        "{extended:#?}"
    );
    if t.local {
        assert_eq!(name, "UnsupportedOperationError", "{extended:#?}");
    }

    let no_url = a2a(&["get", "some-task"]).await;
    no_url.expect_code(2);
    assert!(no_url.stderr.contains("A2A_URL"), "{no_url:#?}");

    // The next step for a task not found: which tasks these credentials can see.
    assert!(missing.stderr.contains("`a2a list`"), "{missing:#?}");
}

/// The id of the task a `send --stream` follows, from its first line.
async fn streamed_task_id(live: &mut LiveCli) -> String {
    let first = live.line_where(|l| l.starts_with("task ")).await;
    first
        .split_whitespace()
        .nth(1)
        .expect("task id")
        .to_string()
}

async fn ctrl_c_on_a_stream_leaves_the_task_running_and_says_how_to_follow_it(t: Target) {
    let mut live = LiveCli::start(&["send", "--stream", &t.url, "slow 60 500"]).await;
    let id = streamed_task_id(&mut live).await;
    live.interrupt();
    let out = live.finish().await;
    out.expect_code(130);
    let url = &t.url;
    for said in [
        format!("stopped following task {id}, which runs on"),
        format!("`a2a subscribe {url} {id}`"),
        format!("`a2a get {url} {id}`"),
        format!("`a2a cancel {url} {id}`"),
    ] {
        assert!(out.stderr.contains(&said), "says {said:?}: {out:#?}");
    }

    // It does run on: followed again, new chunks arrive, until it is canceled.
    assert!(!state_of(url, &id).await.is_terminal());
    let mut again = LiveCli::start(&["subscribe", url, &id]).await;
    again.line_where(|l| l.contains("chunk-")).await;
    a2a(&["cancel", url, &id]).await.expect_code(0);
    let followed = again.finish().await;
    followed.expect_code(5);
    // The last line: the state, and a2a-local's reason after it.
    let last = followed.stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("status TASK_STATE_CANCELED"),
        "{followed:#?}"
    );

    // Once it has ended, A2A 1.0 refuses a subscription (UnsupportedOperationError): the
    // command says the task has ended, how to read it, and prints its final state.
    let ended = a2a(&["subscribe", url, &id]).await;
    ended.expect_code(5);
    assert!(
        ended.stderr.starts_with(&format!(
            "a2a: task {id} has already ended (TASK_STATE_CANCELED): there is nothing left to \
             follow (`a2a get {url} {id}` prints the task)"
        )),
        "{ended:#?}"
    );
    assert!(
        ended
            .stdout
            .starts_with(&format!("task {id}  TASK_STATE_CANCELED")),
        "{ended:#?}"
    );
}

async fn ctrl_c_before_an_answer_says_where_to_look(t: Target) {
    // A blocking send: no answer until the task ends, so the command knows no task id.
    let live = LiveCli::start(&["send", &t.url, "slow 60 500"]).await;
    // The agent has the task once it lists it.
    let client = a2a_client::Client::connect(&t.url).await.expect("connect");
    let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
    let task_id = loop {
        let page = client
            .list_tasks(a2a_client::ListTasksRequest::default())
            .await
            .expect("ListTasks");
        if let Some(task) = page.tasks.first() {
            break task.id.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task never showed in ListTasks"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    live.interrupt();
    let out = live.finish().await;
    out.expect_code(130);
    assert!(
        out.stderr.contains(&format!(
            "interrupted before the agent answered; it may have the message and work on it: \
             `a2a list {}` shows its tasks",
            t.url
        )),
        "{out:#?}"
    );
    assert!(!state_of(&t.url, &task_id).await.is_terminal());
    a2a(&["cancel", &t.url, &task_id]).await.expect_code(0);
}

#[tokio::test]
async fn an_unreachable_agent_exits_with_code_3() {
    // Port 9 (discard) on 127.0.0.1: nothing listens there.
    let out = a2a(&["card", "http://127.0.0.1:9"]).await;
    out.expect_code(3);
    assert!(out.stderr.starts_with("a2a: "), "{out:#?}");
}

#[tokio::test]
async fn no_agent_at_the_url_says_nothing_listens_and_how_to_start_one() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    // The walkthrough's `a2a send hello`, with the URL from A2A_URL and no server started.
    let mut command = a2a_command(&["send", "hello"]);
    command.env("A2A_URL", &url);
    let out = run_cli(command).await;
    out.expect_code(3);
    let line = out.stderr.trim_end();
    assert_eq!(line.lines().count(), 1, "{out:#?}");
    assert!(
        line.starts_with(&format!("a2a: cannot connect to {url}: ")),
        "{out:#?}"
    );
    for said in [
        "Connection refused",
        "is the agent running?",
        "`cargo run -p a2a-local`",
    ] {
        assert!(line.contains(said), "says {said:?}: {out:#?}");
    }
    assert!(!line.contains("error sending request"), "{out:#?}");

    // A host that does not resolve (.invalid never does): the name is what to check.
    let out = a2a(&["card", "http://no-such-agent.invalid:9000"]).await;
    out.expect_code(3);
    assert!(out.stderr.contains("is the host name right?"), "{out:#?}");
}

#[tokio::test]
async fn push_listen_on_a_port_in_use_names_the_flag_that_chooses_another() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("address").port().to_string();
    let out = a2a(&["push", "listen", "http://127.0.0.1:9", "--port", &port]).await;
    out.expect_code(2);
    assert!(
        out.stderr
            .starts_with(&format!("a2a: cannot listen on 127.0.0.1:{port}: ")),
        "{out:#?}"
    );
    assert!(out.stderr.contains("Address already in use"), "{out:#?}");
    assert!(
        out.stderr
            .contains("choose another port with --port (0: any free one)"),
        "{out:#?}"
    );
}

#[tokio::test]
async fn an_unquoted_message_is_refused_with_the_command_quoted() {
    // Nothing is sent: a usage error (2), not an unreachable agent (3).
    let mut command = a2a_command(&["send", "hello", "world"]);
    command.env("A2A_URL", "http://127.0.0.1:9");
    let out = run_cli(command).await;
    out.expect_code(2);
    assert!(
        out.stderr.contains("the message as one argument"),
        "{out:#?}"
    );
    assert!(
        out.stderr.contains(r#"as in a2a send "hello world""#),
        "{out:#?}"
    );

    let out = a2a(&["send", "http://127.0.0.1:9", "hello", "big", "world"]).await;
    out.expect_code(2);
    assert!(
        out.stderr
            .contains(r#"as in a2a send http://127.0.0.1:9 "hello big world""#),
        "{out:#?}"
    );

    // Where a URL stands, a word that is none is named, with how the arguments read.
    let out = a2a(&["get", "some-task", "other"]).await;
    out.expect_code(2);
    assert!(
        out.stderr.starts_with(
            r#"a2a: "some-task" is not an agent URL (http://… or https://…): get takes [URL] TASK_ID"#
        ),
        "{out:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_gone_away_ends_the_command_quietly_with_code_141() {
    // `a2a card URL | head -1`, with head gone before the card is printed: a pipe whose
    // reading end is closed before a2a starts. println! would panic there (exit 101).
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    for args in [
        vec!["card", server.base()],
        vec!["send", server.base(), "hello"],
        vec!["list", server.base(), "--json"],
    ] {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let mut command = a2a_command(&args);
        command.stdout(writer);
        let out = run_cli(command).await;
        out.expect_code(141);
        assert!(out.stderr.is_empty(), "{args:?}: {out:#?}");
    }
}

#[tokio::test]
async fn help_lists_the_exit_codes() {
    let out = a2a(&["--help"]).await;
    out.expect_code(0);
    for line in ["Exit codes:", "A2A_URL", "A2A_API_KEY", "A2A_TOKEN"] {
        assert!(out.stdout.contains(line), "{line}: {}", out.stdout);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_api_key_goes_where_the_card_says() {
    if !store_ready() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("keys.json");
    let issued = std::process::Command::new(ensure_built())
        .args(["keys", "issue", "--permissions", "all", "--api-key-file"])
        .arg(&file)
        .output()
        .expect("run a2a-local keys issue");
    assert!(issued.status.success(), "{issued:?}");
    let key = String::from_utf8(issued.stdout)
        .expect("UTF-8")
        .trim()
        .to_string();
    // The card says: the key goes in the query parameter `api_key`.
    let server = Server::start_with_env(&[
        ("A2A_AUTH", "api-key"),
        ("A2A_API_KEY_FILE", file.to_str().expect("utf-8 path")),
        ("A2A_API_KEY_LOCATION", "query"),
        ("A2A_API_KEY_NAME", "api_key"),
    ])
    .await;
    for binding in ["jsonrpc", "rest"] {
        let mut command = a2a_command(&["list", server.base(), "--binding", binding, "--json"]);
        command.env("A2A_API_KEY", &key);
        let listed = run_cli(command).await;
        assert!(listed.expect_code(0).json()["tasks"].is_array());
    }
    // Forced into a header the server does not read, it is refused.
    let mut command = a2a_command(&["list", server.base(), "--api-key-header", "X-API-Key"]);
    command.env("A2A_API_KEY", &key);
    let refused = run_cli(command).await;
    refused.expect_code(1);
    assert!(
        refused.stderr.starts_with("UnauthenticatedError: "),
        "{refused:#?}"
    );
    // The next step: the key was refused, not missing.
    assert!(
        refused
            .stderr
            .contains("the agent refused the API key of --api-key or A2A_API_KEY"),
        "{refused:#?}"
    );

    // A key that may only read: a send is refused for want of the permission, and says so.
    let read_only = std::process::Command::new(ensure_built())
        .args(["keys", "issue", "--permissions", "read", "--api-key-file"])
        .arg(&file)
        .output()
        .expect("run a2a-local keys issue");
    assert!(read_only.status.success(), "{read_only:?}");
    let read_only = String::from_utf8(read_only.stdout).expect("UTF-8");
    let mut command = a2a_command(&["send", server.base(), "hello"]);
    command.env("A2A_API_KEY", read_only.trim());
    let denied = run_cli(command).await;
    denied.expect_code(1);
    assert!(
        denied.stderr.starts_with("PermissionDeniedError: "),
        "{denied:#?}"
    );
    assert!(
        denied
            .stderr
            .contains("the credentials are valid but may not do this"),
        "{denied:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_token_from_the_environment_is_sent_as_a_bearer_token() {
    if !store_ready() {
        return;
    }
    let issuer = TestIssuer::start().await;
    let server = Server::start_with_env(&[
        ("A2A_AUTH", "jwt"),
        ("A2A_JWT_ISSUER", &issuer.issuer),
        ("A2A_JWT_AUDIENCE", AUDIENCE),
    ])
    .await;
    let refused = a2a(&["list", server.base()]).await;
    refused.expect_code(1);
    assert!(
        refused.stderr.starts_with("UnauthenticatedError: "),
        "{refused:#?}"
    );
    // The next step: credentials are missing, and how to give them.
    assert!(
        refused
            .stderr
            .contains("the agent wants credentials: pass --api-key or --token"),
        "{refused:#?}"
    );
    // A token it refuses (from another issuer): the token is the thing to check.
    let stranger = TestIssuer::start().await;
    let mut command = a2a_command(&["list", server.base()]);
    command.env("A2A_TOKEN", stranger.token("alice", ALL_SCOPES));
    let refused = run_cli(command).await;
    refused.expect_code(1);
    assert!(
        refused
            .stderr
            .contains("the agent refused the token of --token or A2A_TOKEN"),
        "{refused:#?}"
    );

    let mut command = a2a_command(&["list", server.base(), "--json"]);
    command.env("A2A_TOKEN", issuer.token("alice", ALL_SCOPES));
    let listed = run_cli(command).await;
    assert!(listed.expect_code(0).json()["tasks"].is_array());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_client_fetches_an_oauth2_token_that_a2a_local_accepts() {
    if !store_ready() {
        return;
    }
    let issuer = TestIssuer::start().await;
    let server = Server::start_with_env(&[
        ("A2A_AUTH", "jwt"),
        ("A2A_JWT_ISSUER", &issuer.issuer),
        ("A2A_JWT_AUDIENCE", AUDIENCE),
    ])
    .await;
    let credentials =
        a2a_client::OAuth2ClientCredentials::new(issuer.token_endpoint(), "svc-1", CLIENT_SECRET)
            .scopes(["a2a:read", "a2a:send"]);
    let client = a2a_client::Client::builder()
        .auth(a2a_client::Auth::oauth2(credentials))
        .connect(server.base())
        .await
        .expect("the card is public");
    let sent = client
        .send_message(client.text("hello"))
        .await
        .expect("a send with the fetched token");
    let a2a_client::SendMessageResponse::Task(task) = sent else {
        panic!("a task: {sent:?}");
    };
    let listed = client
        .list_tasks(a2a_client::ListTasksRequest::default())
        .await
        .expect("a list with the same token");
    assert_eq!(listed.tasks.len(), 1, "the client's own task only");
    assert_eq!(listed.tasks[0].id, task.id);
    assert_eq!(issuer.token_requests(), 1, "the token is reused");

    // Without the cancel scope, the token does not allow a cancel.
    let e = client
        .cancel_task(a2a_client::CancelTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        })
        .await
        .expect_err("no a2a:cancel scope");
    assert_eq!(
        e.agent_error().map(|a| a.name()),
        Some("PermissionDeniedError"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_task_continues_a_task_in_its_context() {
    // a2a-local only: the SDK server's agent has no task that waits for input.
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let url = server.base();
    let held = a2a(&["send", url, "hold", "--json"])
        .await
        .expect_code(0)
        .json();
    let task = &held["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{held}"
    );
    let (id, context) = (
        task["id"].as_str().expect("id"),
        task["contextId"].as_str().expect("contextId"),
    );
    let done = a2a(&[
        "send",
        url,
        "more",
        "--task",
        id,
        "--context",
        context,
        "--json",
    ])
    .await
    .expect_code(0)
    .json();
    assert_eq!(done["task"]["id"], json!(id), "{done}");
    assert_eq!(
        done["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );

    // A follow-up to a finished task is refused: the A2A error, exit code 1, nothing changed.
    let refused = a2a(&["send", url, "again", "--task", id]).await;
    refused.expect_code(1);
    assert!(
        refused.stderr.starts_with("UnsupportedOperationError: "),
        "{refused:#?}"
    );
    let failed = a2a(&["send", url, "fail"]).await;
    failed.expect_code(5);
    assert!(failed.stdout.contains("TASK_STATE_FAILED"), "{failed:#?}");
}
