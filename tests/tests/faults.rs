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
//! client of AWS may
//! expect: every acknowledged task in its expected state with its artifacts whole, one task per
//! messageId, nothing left active, every push delivered, ListTasks' totalSize exact, and every
//! failure visible. A client that gets a 5xx sends again with the same messageId, as the SDKs do.
//!
//! Run it alone: `cargo nextest run -p a2a-e2e --test faults` (about two minutes). Settings:
//! `A2A_FAULT_RUN_SENDS` (default 100), `A2A_FAULT_RUN_RATE` (0.05), `A2A_FAULT_RUN_SEED` (1),
//! `A2A_FAULT_RUN_SETTLE_SECS` (120). Skipped when moto's venv is missing, unless
//! `A2A_REQUIRE_EMULATOR=1`.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
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

/// moto's server with the fault middleware, on a free port; killed on drop.
struct FaultyMoto {
    child: Child,
    url: String,
    log: PathBuf,
    http: reqwest::Client,
}

impl FaultyMoto {
    /// `None` if moto's venv is missing (the test is skipped then).
    async fn start(log_dir: &std::path::Path) -> Option<FaultyMoto> {
        let python = workspace_root().join(".venv-moto/bin/python");
        if !python.exists() {
            assert!(
                std::env::var("A2A_REQUIRE_EMULATOR").as_deref() != Ok("1"),
                "A2A_REQUIRE_EMULATOR=1 but {} is missing: run infra/moto.sh setup",
                python.display()
            );
            eprintln!("faults: skipped, no moto venv (run infra/moto.sh setup)");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = log_dir.join("moto.log");
        let child = Command::new(python)
            .arg(workspace_root().join("infra/moto_server.py"))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start moto_server.py");
        let moto = FaultyMoto {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
            http: http_client(),
        };
        // Ready when moto's own API answers (polled: the server gives no other signal).
        let deadline = tokio::time::Instant::now() + STARTUP_TIMEOUT;
        loop {
            let answer = moto
                .http
                .get(format!("{}/moto-api/data.json", moto.url))
                .send()
                .await;
            if answer.is_ok_and(|a| a.status().is_success()) {
                return Some(moto);
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "moto did not start: {}",
                moto.log_text()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn fault_api(&self, path: &str, body: Value) -> Value {
        let answer = self
            .http
            .post(format!("{}/fault-api/{path}", self.url))
            .json(&body)
            .send()
            .await
            .expect("the fault API answers");
        assert!(answer.status().is_success(), "fault API {path}");
        answer.json().await.unwrap()
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The environment that puts an a2a-local on this moto, on its own resources.
    fn env(&self, prefix: &str) -> Vec<(String, String)> {
        [
            ("A2A_STORE", "dynamodb"),
            ("A2A_CREATE_RESOURCES", prefix),
            ("A2A_QUEUE_WAIT_SECS", "1"),
            ("AWS_ENDPOINT_URL", &self.url),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_REGION", "us-east-1"),
            ("A2A_REMOTE_POLL_SECS", "1"),
            ("A2A_SWEEP_INTERVAL_SECS", "3"),
            ("A2A_EXECUTION_LEASE_SECS", "5"),
            // A job whose process was killed comes back from the queue this soon.
            ("A2A_WORK_VISIBILITY_SECS", "15"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }
}

impl Drop for FaultyMoto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
    /// `hold`, then a follow-up: COMPLETED with the follow-up's echo.
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
    /// Every error answer the client got (visible failures), and how many times it sent.
    errors: Vec<String>,
    attempts: u32,
}

/// Sends `request` (REST), again with the same messageId after a 5xx, up to 4 times. The
/// task's id, or None with the errors.
async fn send_retrying(server: &Server, request: &Value, sent: &mut Sent) -> Option<Value> {
    for _ in 0..4 {
        sent.attempts += 1;
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
        attempts: 0,
    };
    if work == Work::Stream {
        for _ in 0..4 {
            sent.attempts += 1;
            match server.stream(B, request.clone()).await {
                Ok(mut stream) => {
                    // The first event names the task; the rest is judged from GetTask later.
                    if let Ok(Some(first)) = stream.next_within(EVENT_TIMEOUT).await {
                        let data = first.json();
                        let id = data["task"]["id"]
                            .as_str()
                            .or(data["statusUpdate"]["taskId"].as_str())
                            .or(data["artifactUpdate"]["taskId"].as_str());
                        sent.task = id.map(str::to_string);
                        if sent.task.is_none() {
                            sent.errors.push(format!("stream event: {data}"));
                        }
                    }
                    // Read to the end (bounded): a stream that never ends shows in the state.
                    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
                    while let Ok(Some(_)) = stream
                        .next_within(
                            deadline.saturating_duration_since(tokio::time::Instant::now()),
                        )
                        .await
                    {}
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

const ACTIVE: [&str; 2] = ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"];

/// Every task of `server` (ListTasks, all pages) and the totalSize it reported.
async fn list_all(server: &Server) -> (Vec<Value>, i64) {
    let mut tasks = Vec::new();
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
                Err(e) if e.http_status >= 500 && tries < 5 => tries += 1,
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
            return (tasks, total);
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

    let remote_pairs = moto.env(&format!("r{}", &unique[..10]));
    let local_pairs = moto.env(&format!("l{}", &unique[..10]));
    let remote = Server::start_with_env(&pairs(&remote_pairs)).await;
    let server = Server::start_with_env(&pairs(&local_pairs)).await;
    // The same functions' second instance: same table and queues (the prefix), its own port.
    let mut instance = Server::start_with_env(&pairs(&local_pairs)).await;
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
            instance.restart().await;
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
    let (tasks, total, remote_tasks) = loop {
        let (tasks, total) = list_all(&server).await;
        let (remote_tasks, _) = list_all(&remote).await;
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
    let mut acknowledged = 0;
    let mut refused = 0;
    for s in &sent {
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
                "{:?} task {id} ended {} (expected {expected}): {}",
                s.work,
                state(&task),
                task["status"]
            ));
            continue;
        }
        let texts: Vec<String> = artifacts(&task).iter().map(artifact_text).collect();
        let want: Option<String> = match s.work {
            Work::Echo | Work::Hold => Some(s.text.clone()),
            Work::Stream => Some((1..=5).map(|n| format!("chunk-{n} ")).collect()),
            Work::Delegate => Some((1..=3).map(|n| format!("chunk-{n} ")).collect()),
            _ => None,
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
            problems.push(format!("push task {id}: its COMPLETED was never pushed"));
        }
    }
    let figures = format!(
        "{sends} sends ({acknowledged} acknowledged, {refused} refused, {} client retries), \
         {} tasks listed, the second instance killed at send {kill_at}; faults at rate {rate} \
         seed {seed}: {} of {} AWS requests: {}",
        sent.iter()
            .map(|s| s.attempts.saturating_sub(1))
            .sum::<u32>(),
        tasks.len(),
        faults["faults"]
            .as_object()
            .map(|f| f.values().filter_map(Value::as_u64).sum::<u64>())
            .unwrap_or(0),
        faults["requests"],
        faults["faults"]
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
