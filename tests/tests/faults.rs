//! An end-to-end run under the faults AWS produces (issue 52, item 4).
//!
//! The test starts its own moto (`infra/moto_server.py` from `.venv-moto`, which
//! `infra/moto.sh setup` installs) and `a2a-local` servers on DynamoDB + SQS through it: ours,
//! a second process on ours' table and queues (another instance of the same functions: it
//! takes queued jobs, relay pushes and sweeps as a worker does), and a remote agent for the
//! delegations. It turns faults on (`/fault-api/on`: throttles, 500s, slow answers, resets
//! before and after a write, lost answers, SQS duplicates and lost deletes), sends a mix of
//! every kind of work, kills the second process with SIGKILL a third of the way through (a
//! Lambda instance lost mid-job: its jobs come back from the queue, its leases expire) and
//! starts it again, turns faults off, waits for the servers to settle and then checks what a
//! client of AWS may expect: every acknowledged task in its expected state with its artifacts
//! whole (none doubled or missing), one task per messageId, nothing left active, each stream's
//! events as the client saw them in order and none doubled, a held task INPUT_REQUIRED, its push
//! config created, read, listed and deleted under faults, every push delivered to its own task
//! with its own token (none to a deleted config), ListTasks' totalSize exact, and every failure
//! visible as a deployment shows it: each process writes the metrics a Lambda function writes
//! (`--metrics-file`), and every FAILED task is counted by `TasksFinished`, every push given up
//! by `PushDeadLetters` or the push DLQ, every 5xx the client got by `Errors`. A client that
//! gets a 5xx sends again with the same messageId, as the SDKs do.
//!
//! Run it alone: `cargo nextest run --workspace -E 'binary(faults)'` (about 40 s). Settings:
//! `A2A_FAULT_RUN_SENDS` (default 100), `A2A_FAULT_RUN_RATE` (0.05), `A2A_FAULT_RUN_SEED` (1),
//! `A2A_FAULT_RUN_SETTLE_SECS` (120). Skipped when moto's venv is missing, unless
//! `A2A_REQUIRE_EMULATOR=1`.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::time::Duration;

use a2a_e2e::*;
use futures::StreamExt;
use serde_json::{json, Value};

const B: Binding = Binding::Rest;

fn setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What one send was, and what its task must end as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    /// A blocking echo: COMPLETED, its text as the artifact.
    Echo,
    /// `slow 5 50`, streamed: COMPLETED, every chunk in order.
    Stream,
    /// `job 2 50`, returned at once: COMPLETED with its report.
    Job,
    /// `hold` (INPUT_REQUIRED), a push config created, read, listed and deleted, then a
    /// follow-up: COMPLETED with the follow-up's echo, nothing pushed to the deleted config.
    Hold,
    /// `hold`, then a cancel: CANCELED.
    Cancel,
    /// `job 2 50` with an inline push config: COMPLETED, and pushed.
    Push,
    /// `delegate <second server> slow 3 50`: COMPLETED with the remote's chunks.
    Delegate,
}

const MIX: [Work; 7] = [
    Work::Echo,
    Work::Stream,
    Work::Job,
    Work::Hold,
    Work::Cancel,
    Work::Push,
    Work::Delegate,
];

/// One send as the client saw it.
#[derive(Debug)]
struct Sent {
    work: Work,
    message_id: String,
    text: String,
    /// The task's id, if a send was acknowledged.
    task: Option<String>,
    /// Every error answer the client got (visible failures).
    errors: Vec<String>,
    /// The push token of the task's config (Push, Hold).
    token: Option<String>,
    /// What the client saw go wrong while it ran (a stream's events, a push config's answers).
    problems: Vec<String>,
}

/// `call`, again after a 5xx (a client of AWS retries), up to 4 times; the errors in `sent`.
async fn call_retrying<F, Fut>(sent: &mut Sent, what: &str, call: F) -> Option<Value>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Value, ApiError>>,
{
    for _ in 0..4 {
        match call().await {
            Ok(answer) => return Some(answer),
            Err(e) => {
                sent.errors
                    .push(format!("{what}: {} {}", e.http_status, e.body));
                if e.http_status < 500 {
                    return None;
                }
            }
        }
    }
    None
}

/// The text of the `slow` artifact as a client's stream built it (a task event sets it, an
/// artifact update appends or starts it afresh), and what is wrong with the stream: an event
/// after the final one, a final event missing, an SSE id not after the one before.
fn read_stream(events: &[SseEvent]) -> (String, Vec<String>) {
    let mut text = String::new();
    let mut problems = Vec::new();
    let mut ended = false;
    let mut last_id: Option<u64> = None;
    for event in events {
        let data = event.json();
        if ended {
            problems.push(format!("an event after the final one: {data}"));
        }
        if let Some(id) = event.id.as_deref().and_then(|id| id.parse::<u64>().ok()) {
            if last_id.is_some_and(|last| id <= last) {
                problems.push(format!("SSE id {id} after {last_id:?}"));
            }
            last_id = Some(id);
        }
        if let Some(task) = data.get("task") {
            text = artifacts(task).iter().map(artifact_text).collect();
        }
        if let Some(update) = data.get("artifactUpdate") {
            let chunk = artifact_text(&update["artifact"]);
            if update["append"] == json!(true) {
                text.push_str(&chunk);
            } else {
                text = chunk;
            }
        }
        ended |= event_state(&data).is_some_and(|s| is_terminal(s) || is_interrupted(s));
    }
    if !ended {
        problems.push(format!(
            "the stream ended without a final event ({} events)",
            events.len()
        ));
    }
    (text, problems)
}

/// Sends `request` (REST), again with the same messageId after a 5xx, up to 4 times. The
/// task's id, or None with the errors.
async fn send_retrying(server: &Server, request: &Value, sent: &mut Sent) -> Option<Value> {
    for _ in 0..4 {
        match server.send(B, request.clone()).await {
            Ok(answer) => return Some(answer),
            Err(e) => {
                sent.errors.push(format!("{} {}", e.http_status, e.body));
                if e.http_status < 500 {
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    None
}

fn task_id_of_answer(answer: &Value) -> Option<String> {
    answer
        .get("task")
        .and_then(|t| t["id"].as_str())
        .map(str::to_string)
}

async fn run_one(server: &Server, remote: &str, hook: &str, i: usize) -> Sent {
    let work = MIX[i % MIX.len()];
    let text = match work {
        Work::Echo => format!("echo number {i}"),
        Work::Stream => "slow 5 50".into(),
        Work::Job | Work::Push => "job 2 50".into(),
        Work::Hold | Work::Cancel => "hold".into(),
        Work::Delegate => format!("delegate {remote} slow 3 50"),
    };
    let configuration = match work {
        Work::Job | Work::Delegate => json!({"returnImmediately": true}),
        Work::Push => json!({"returnImmediately": true, "taskPushNotificationConfig": {
            "url": hook, "token": format!("tok-{i}"),
        }}),
        _ => json!({}),
    };
    let request = send_request_with(&text, configuration);
    let mut sent = Sent {
        work,
        message_id: request["message"]["messageId"].as_str().unwrap().into(),
        text,
        task: None,
        errors: Vec::new(),
        token: (work == Work::Push).then(|| format!("tok-{i}")),
        problems: Vec::new(),
    };
    if work == Work::Stream {
        for _ in 0..4 {
            match server.stream(B, request.clone()).await {
                Ok(mut stream) => {
                    // Every event to the end (bounded), as the client saw them.
                    let mut events = Vec::new();
                    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
                    let end = loop {
                        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                        match stream.next_within(left).await {
                            Ok(Some(event)) => events.push(event),
                            Ok(None) => break None,
                            Err(e) => break Some(format!("{e:?}")),
                        }
                    };
                    // The first event names the task.
                    if let Some(data) = events.first().map(SseEvent::json) {
                        let id = data["task"]["id"]
                            .as_str()
                            .or(data["statusUpdate"]["taskId"].as_str())
                            .or(data["artifactUpdate"]["taskId"].as_str());
                        sent.task = id.map(str::to_string);
                        if sent.task.is_none() {
                            sent.errors.push(format!("stream event: {data}"));
                        }
                    }
                    // An error event ends a stream (the spec's mid-stream error): a 5xx the
                    // client saw, as the metrics must count it.
                    for error in events
                        .iter()
                        .filter(|e| e.event.as_deref() == Some("error"))
                    {
                        let data = error.json();
                        sent.errors
                            .push(format!("stream error: {} {data}", data["error"]["code"]));
                    }
                    let (text, problems) = read_stream(&events);
                    let want: String = (1..=5).map(|n| format!("chunk-{n} ")).collect();
                    if text != want {
                        sent.problems
                            .push(format!("the stream built {text:?}, not {want:?}"));
                    }
                    sent.problems.extend(problems);
                    if let Some(end) = end {
                        sent.problems.push(format!("the stream broke: {end}"));
                    }
                    return sent;
                }
                Err(e) => {
                    sent.errors.push(format!("{} {}", e.http_status, e.body));
                    if e.http_status < 500 {
                        return sent;
                    }
                }
            }
        }
        return sent;
    }
    let Some(answer) = send_retrying(server, &request, &mut sent).await else {
        return sent;
    };
    sent.task = task_id_of_answer(&answer);
    let Some(id) = sent.task.clone() else {
        sent.errors.push(format!("no task in {answer}"));
        return sent;
    };
    match work {
        Work::Hold => {
            let held = state(task_of(&answer)).to_string();
            if held != "TASK_STATE_INPUT_REQUIRED" {
                sent.problems.push(format!("hold answered {held}"));
            }
            push_configs(server, hook, &id, i, &mut sent).await;
            // The task's artifact is the echo of the follow-up.
            sent.text = format!("follow-up {i}");
            let follow = follow_up(&id, &sent.text);
            let _ = send_retrying(server, &follow, &mut sent).await;
        }
        Work::Cancel => {
            for _ in 0..4 {
                match server.cancel(B, &id).await {
                    Ok(_) => break,
                    Err(e) => {
                        sent.errors
                            .push(format!("cancel: {} {}", e.http_status, e.body));
                        if e.http_status < 500 {
                            break;
                        }
                    }
                }
            }
        }
        _ => {}
    }
    sent
}

/// A push config on the held task `id`: created, read back, listed, deleted and no longer
/// listed, each answer checked (a 5xx tried again, with the same config id).
async fn push_configs(server: &Server, hook: &str, id: &str, i: usize, sent: &mut Sent) {
    let config_id = format!("cfg-{i}");
    let token = format!("held-{i}");
    sent.token = Some(token.clone());
    let config = json!({"id": config_id, "url": hook, "token": token});
    let Some(created) = call_retrying(sent, "create config", || {
        server.create_push(B, id, config.clone())
    })
    .await
    else {
        return;
    };
    let mut seen = vec![("created", created)];
    if let Some(got) =
        call_retrying(sent, "get config", || server.get_push(B, id, &config_id)).await
    {
        seen.push(("got", got));
    }
    for (what, answer) in seen {
        if answer["id"] != json!(config_id) || answer["url"] != json!(hook) {
            sent.problems.push(format!("config {what}: {answer}"));
        }
    }
    let listed = |answer: &Value| {
        answer["configs"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["id"] == json!(config_id)))
    };
    if let Some(list) = call_retrying(sent, "list configs", || server.list_push(B, id)).await {
        if !listed(&list) {
            sent.problems.push(format!("config not listed: {list}"));
        }
    }
    let deleted = call_retrying(sent, "delete config", || {
        server.delete_push(B, id, &config_id)
    })
    .await
    .is_some()
        // A delete whose first answer was lost is refused as not found when tried again.
        || sent.errors.last().is_some_and(|e| e.contains(" 404 "));
    if !deleted {
        return;
    }
    // Deleted: nothing may be pushed for this task any more.
    sent.token = None;
    if let Some(list) = call_retrying(sent, "list configs", || server.list_push(B, id)).await {
        if listed(&list) {
            sent.problems
                .push(format!("config listed after its delete: {list}"));
        }
    }
}

const ACTIVE: [&str; 2] = ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"];

/// Every task of `server` (ListTasks, all pages), the totalSize it reported, and the 5xx
/// answers it got on the way (tried again).
async fn list_all(server: &Server) -> (Vec<Value>, i64, usize) {
    let mut tasks = Vec::new();
    let mut server_errors = 0;
    let mut token = String::new();
    let mut total = -1;
    loop {
        let mut params = json!({"pageSize": 100, "historyLength": 1, "includeArtifacts": true});
        if !token.is_empty() {
            params["pageToken"] = json!(token);
        }
        // A 5xx is tried again, as a client of AWS does (moto, loaded, may time out a query).
        let mut tries = 0;
        let page = loop {
            match server.list_tasks(B, params.clone()).await {
                Err(e) if e.http_status >= 500 && tries < 5 => {
                    tries += 1;
                    server_errors += 1;
                }
                answer => break ok(answer),
            }
        };
        total = page["totalSize"].as_i64().unwrap_or(total);
        tasks.extend(page["tasks"].as_array().cloned().unwrap_or_default());
        token = page["nextPageToken"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if token.is_empty() {
            return (tasks, total, server_errors);
        }
    }
}

/// How long the pushes may take after the tasks settled: the push queue's visibility timeout
/// (30 s, a job the killed instance had taken), and a delivery after it.
const PUSH_WAIT: Duration = Duration::from_secs(45);

/// Whether `pushes` holds the COMPLETED of task `id` (a status update or a whole task).
fn completed_pushed(pushes: &[Push], id: &str) -> bool {
    pushes.iter().any(|p| {
        let body = p.json();
        event_state(&body) == Some("TASK_STATE_COMPLETED")
            && (body["statusUpdate"]["taskId"] == json!(id) || body["task"]["id"] == json!(id))
    })
}

fn pairs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_mix_of_work_under_aws_faults_ends_as_it_would_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some(moto) = FaultyMoto::start(dir.path()).await else {
        return;
    };
    let sends: usize = setting("A2A_FAULT_RUN_SENDS", 100);
    let rate: f64 = setting("A2A_FAULT_RUN_RATE", 0.05);
    let seed: u64 = setting("A2A_FAULT_RUN_SEED", 1);
    let settle = Duration::from_secs(setting("A2A_FAULT_RUN_SETTLE_SECS", 120));
    let unique = uuid::Uuid::new_v4().simple().to_string();

    // Each process writes the metrics a Lambda function writes (EMF lines) to its own file.
    let metrics_file = |name: &str| dir.path().join(format!("metrics-{name}.jsonl"));
    let with_metrics = |mut env: Vec<(String, String)>, name: &str| {
        let file = metrics_file(name).to_string_lossy().into_owned();
        env.push(("A2A_METRICS_FILE".into(), file));
        env
    };
    let local_prefix = format!("l{}", &unique[..10]);
    let remote_pairs = with_metrics(moto.env(&format!("r{}", &unique[..10])), "remote");
    let remote = Server::start_with_env(&pairs(&remote_pairs)).await;
    let server =
        Server::start_with_env(&pairs(&with_metrics(moto.env(&local_prefix), "ours"))).await;
    // The same functions' second instance: same table and queues (the prefix), its own port.
    let mut instance =
        Server::start_with_env(&pairs(&with_metrics(moto.env(&local_prefix), "second"))).await;
    let hook = Webhook::start().await;

    // Faults on only once both servers made their tables and queues.
    moto.fault_api("on", json!({"rate": rate, "seed": seed}))
        .await;
    // A third of the way through, the second instance dies (SIGKILL, whatever it was doing)
    // and another starts in its place, as Lambda starts a new one.
    let kill_at = sends / 3;
    let third = std::sync::Arc::new(tokio::sync::Notify::new());
    let killer = tokio::spawn({
        let third = third.clone();
        async move {
            third.notified().await;
            instance.restart_until_serving(3).await;
            instance
        }
    });
    let sent: Vec<Sent> = futures::stream::iter(0..sends)
        .map(|i| {
            if i == kill_at {
                third.notify_one();
            }
            run_one(&server, remote.base(), &hook.url, i)
        })
        .buffer_unordered(8)
        .collect()
        .await;
    let instance = killer.await.expect("the second instance restarted");
    assert!(
        instance.logs().contains("server killed (SIGKILL)"),
        "the second instance was not killed"
    );
    let faults = moto.fault_api("off", json!({})).await;

    // Settle: until no task of either server is active, bounded.
    let deadline = tokio::time::Instant::now() + settle;
    // The 5xx answers to our ListTasks while settling: the Errors metric counts them too.
    let mut settle_errors = 0;
    let (tasks, total, remote_tasks) = loop {
        let (tasks, total, errors) = list_all(&server).await;
        settle_errors += errors;
        let (remote_tasks, _, _) = list_all(&remote).await;
        let active = tasks
            .iter()
            .chain(&remote_tasks)
            .filter(|t| ACTIVE.contains(&state(t)))
            .count();
        if active == 0 || tokio::time::Instant::now() >= deadline {
            break (tasks, total, remote_tasks);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };

    let mut problems: Vec<String> = Vec::new();
    // The remote agent's tasks (the delegations') end too.
    for task in remote_tasks.iter().filter(|t| ACTIVE.contains(&state(t))) {
        problems.push(format!("remote task left active: {task}"));
    }
    let by_id: HashMap<String, &Value> = tasks.iter().map(|t| (id_of(t), t)).collect();
    // One task per messageId: every task's first message is a different send's.
    let mut per_message: BTreeMap<String, usize> = BTreeMap::new();
    for task in &tasks {
        // The task's first message is the send that made it (ListTasks' history is the last).
        let whole = ok(server.get_task(B, &id_of(task), None).await);
        if let Some(first) = history(&whole).first() {
            *per_message
                .entry(first["messageId"].as_str().unwrap_or_default().into())
                .or_default() += 1;
        }
        if ACTIVE.contains(&state(task)) {
            problems.push(format!("task left active: {task}"));
        }
        if state(task) == "TASK_STATE_FAILED" && message_text(&task["status"]["message"]).is_empty()
        {
            problems.push(format!("a FAILED task without a reason: {task}"));
        }
    }
    for (message_id, n) in &per_message {
        if *n > 1 {
            problems.push(format!("messageId {message_id} made {n} tasks"));
        }
    }
    if total != tasks.len() as i64 {
        problems.push(format!(
            "ListTasks' totalSize {total} for {} tasks",
            tasks.len()
        ));
    }

    // Pushes go out after their task ends, through the push queue: one taken by the killed
    // instance comes back when its visibility ends (30 s), so they are awaited, bounded.
    let push_tasks: Vec<&str> = sent
        .iter()
        .filter(|s| s.work == Work::Push)
        .filter_map(|s| s.task.as_deref())
        .collect();
    let pushed = tokio::time::Instant::now();
    let all_pushed = hook
        .wait_for_all(PUSH_WAIT, |pushes| {
            push_tasks.iter().all(|id| completed_pushed(pushes, id))
        })
        .await;
    eprintln!(
        "faults: every push task's COMPLETED pushed: {all_pushed}, {:.1} s after the tasks settled",
        pushed.elapsed().as_secs_f64()
    );
    let pushes = hook.received();
    // Each push to its own task's config, with that config's token; none to a deleted config
    // (a held task's, whose token was forgotten once its delete was answered).
    let tokens: HashMap<&str, &str> = sent
        .iter()
        .filter_map(|s| Some((s.task.as_deref()?, s.token.as_deref()?)))
        .collect();
    for push in &pushes {
        let body = push.json();
        let task = body["statusUpdate"]["taskId"]
            .as_str()
            .or(body["artifactUpdate"]["taskId"].as_str())
            .or(body["task"]["id"].as_str())
            .unwrap_or_default();
        let token = push.header("a2a-notification-token").unwrap_or_default();
        if tokens.get(task) != Some(&token) {
            problems.push(format!(
                "a push for task {task} with token {token:?} (its config's: {:?})",
                tokens.get(task)
            ));
        }
    }
    let mut undelivered = 0;
    let mut acknowledged = 0;
    let mut refused = 0;
    for s in &sent {
        problems.extend(
            s.problems
                .iter()
                .map(|p| format!("{:?} {:?}: {p}", s.work, s.task)),
        );
        let Some(id) = &s.task else {
            refused += 1;
            if s.errors.is_empty() {
                problems.push(format!("a send failed silently: {s:?}"));
            }
            continue;
        };
        acknowledged += 1;
        if per_message.get(&s.message_id) != Some(&1) {
            problems.push(format!(
                "acknowledged messageId {} made {:?} tasks",
                s.message_id,
                per_message.get(&s.message_id)
            ));
        }
        if !by_id.contains_key(id) {
            problems.push(format!(
                "acknowledged task {id} ({:?}) is not listed",
                s.work
            ));
            continue;
        };
        let task = ok(server.get_task(B, id, None).await);
        let expected = if s.work == Work::Cancel {
            "TASK_STATE_CANCELED"
        } else {
            "TASK_STATE_COMPLETED"
        };
        if state(&task) != expected {
            problems.push(format!(
                "{:?} task {id} ended {} (expected {expected}): {}; the client's errors: {:?}",
                s.work,
                state(&task),
                task["status"],
                s.errors
            ));
            continue;
        }
        let texts: Vec<String> = artifacts(&task).iter().map(artifact_text).collect();
        let want: Option<String> = match s.work {
            Work::Echo | Work::Hold => Some(s.text.clone()),
            Work::Stream => Some((1..=5).map(|n| format!("chunk-{n} ")).collect()),
            Work::Delegate => Some((1..=3).map(|n| format!("chunk-{n} ")).collect()),
            Work::Job | Work::Push => Some("job finished: 2 steps".into()),
            Work::Cancel => None,
        };
        if let Some(want) = want {
            if texts != [want.trim_end().to_string()] && texts != [want.clone()] {
                problems.push(format!(
                    "{:?} task {id}: artifacts {texts:?}, expected [{want:?}]",
                    s.work
                ));
            }
        }
        if s.work == Work::Push && !completed_pushed(&pushes, id) {
            undelivered += 1;
            problems.push(format!("push task {id}: its COMPLETED was never pushed"));
        }
    }

    // Every failure visible as a deployment shows it: a task ended FAILED is counted by
    // TasksFinished (State FAILED), a push given up by PushDeadLetters or the push DLQ, a 5xx
    // the client got by Errors (the metric the ServerErrors alarm watches).
    let ours = [metrics_file("ours"), metrics_file("second")];
    let ours: Vec<&std::path::Path> = ours.iter().map(|p| p.as_path()).collect();
    let theirs = metrics_file("remote");
    let failed = |tasks: &[Value]| {
        tasks
            .iter()
            .filter(|t| state(t) == "TASK_STATE_FAILED")
            .count() as f64
    };
    let counted = |files: &[&std::path::Path]| {
        metric_sum(files, "TasksFinished", Some(("State", "TASK_STATE_FAILED")))
    };
    for (who, tasks, files) in [
        ("ours", &tasks, ours.clone()),
        ("the remote's", &remote_tasks, vec![theirs.as_path()]),
    ] {
        if failed(tasks) > counted(&files) {
            problems.push(format!(
                "{} of {who} tasks FAILED, {} counted by TasksFinished",
                failed(tasks),
                counted(&files)
            ));
        }
    }
    let work_dlq = moto.queue_depth(&format!("{local_prefix}-work-dlq")).await;
    let push_dlq = moto
        .queue_depth(&format!("{local_prefix}-push-dlq.fifo"))
        .await;
    let dead_letters = metric_sum(&ours, "PushDeadLetters", None);
    if f64::from(undelivered) > dead_letters + push_dlq as f64 {
        problems.push(format!(
            "{undelivered} pushes undelivered, {dead_letters} counted by PushDeadLetters, \
             {push_dlq} in the push DLQ"
        ));
    }
    let server_errors = sent
        .iter()
        .flat_map(|s| &s.errors)
        .filter(|e| {
            e.split_whitespace()
                .any(|w| w.len() == 3 && w.starts_with('5'))
        })
        .count() as f64
        + settle_errors as f64;
    // Errors counts every 5xx answer of ours, an error event in a stream that had started
    // included (at 20 % the client once saw 22 and Errors counted 20: the streams' errors).
    let errors = metric_sum(&ours[..1], "Errors", None);
    if errors != server_errors {
        problems.push(format!(
            "the client got {server_errors} 5xx answers, Errors counted {errors}"
        ));
    }
    let figures = format!(
        "{sends} sends ({acknowledged} acknowledged, {refused} refused, {server_errors} 5xx \
         answers to the client), \
         {} tasks listed, the second instance killed at send {kill_at}; faults at rate {rate} \
         seed {seed}: {} of {} AWS requests: {}; metrics: {} requests, {} tasks FAILED \
         ({} counted), {errors} Errors, {dead_letters} PushDeadLetters, {work_dlq} jobs in the work DLQ, \
         {push_dlq} in the push DLQ",
        tasks.len(),
        faults["faults"]
            .as_object()
            .map(|f| f.values().filter_map(Value::as_u64).sum::<u64>())
            .unwrap_or(0),
        faults["requests"],
        faults["faults"],
        metric_sum(&ours[..1], "Requests", None),
        failed(&tasks),
        counted(&ours),
    );
    eprintln!("faults: {figures}");
    assert!(
        faults["faults"]
            .as_object()
            .is_some_and(|f| f.values().any(|n| n.as_u64() > Some(0))),
        "no fault was injected: {faults}"
    );
    // The servers' warnings, and every line about a task a problem names, to tell what went
    // wrong where a CI run shows only this.
    let named: Vec<String> = problems
        .iter()
        .flat_map(|p| {
            p.split(|c: char| !(c.is_ascii_hexdigit() || c == '-'))
                .filter(|word| word.len() == 36 && word.matches('-').count() == 4)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    let warnings = |server: &Server| {
        let logs = server.logs();
        let lines: Vec<&str> = logs
            .lines()
            .filter(|l| {
                l.contains(" WARN ")
                    || l.contains(" ERROR ")
                    || named.iter().any(|id| l.contains(id.as_str()))
            })
            .collect();
        lines[lines.len().saturating_sub(80)..].join("\n")
    };
    assert!(
        problems.is_empty(),
        "{} problems under faults ({figures}):\n{}\n---- our server's last warnings ----\n{}\n\
         ---- the second instance's last warnings ----\n{}\n\
         ---- the remote's last warnings ----\n{}\n---- moto's fault log ----\n{}",
        problems.len(),
        problems.join("\n"),
        warnings(&server),
        warnings(&instance),
        warnings(&remote),
        moto.log_text()
            .lines()
            .filter(|l| l.contains("fault"))
            .take(200)
            .collect::<Vec<_>>()
            .join("\n")
    );
}
