//! Fills a store with finished tasks for the scale benchmark (`infra/bench.sh --scale N`):
//! `bench-fill DATA_DIR TASKS [TENANT]` writes TASKS blocking echoes of the anonymous owner of
//! TENANT (default: none, as a2a-local without auth) through [`SqliteStore::create_tasks`],
//! the store's own create in batches: the same rows a real echo writes (born terminal, its three
//! events in the head row), status timestamps a millisecond apart ending now, so the server's
//! new tasks land after them as they would after a long run.

// A benchmark tool: it may unwrap, as tests do.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use a2a_core::{LoggedEvent, Owner, StoredTask, TaskEvent};
use a2a_embedded::{SqliteStore, DB_FILE_NAME};
use a2a_protocol::{
    Artifact, Message, Part, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent, Timestamp,
};

/// Tasks per transaction.
const BATCH: usize = 5_000;

/// How long the tasks live: far beyond any benchmark.
const RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);

/// A blocking echo of "hello" as the reference agent leaves it: created, its artifact, COMPLETED.
fn echo(owner: &Owner, at: Timestamp, expires_at: Timestamp) -> (StoredTask, Vec<LoggedEvent>) {
    let task_id = uuid::Uuid::new_v4().to_string();
    let context_id = uuid::Uuid::new_v4().to_string();
    let mut asked = Message::user_text(uuid::Uuid::new_v4().to_string(), "hello");
    asked.task_id = task_id.clone();
    asked.context_id = context_id.clone();
    let mut answer = Message::agent_text("hello");
    answer.message_id = uuid::Uuid::new_v4().to_string();
    answer.task_id = task_id.clone();
    answer.context_id = context_id.clone();
    let submitted = Task {
        id: task_id.clone(),
        context_id: context_id.clone(),
        status: TaskStatus {
            state: TaskState::Submitted,
            message: None,
            timestamp: Some(at),
        },
        history: vec![asked],
        ..Default::default()
    };
    let events = [
        TaskEvent::Created { task: submitted },
        TaskEvent::Artifact {
            update: TaskArtifactUpdateEvent {
                task_id: task_id.clone(),
                context_id: context_id.clone(),
                artifact: Artifact {
                    artifact_id: format!("{task_id}-echo"),
                    name: "echo".into(),
                    parts: vec![Part::text("hello")],
                    ..Default::default()
                },
                last_chunk: true,
                ..Default::default()
            },
        },
        TaskEvent::Status {
            update: TaskStatusUpdateEvent {
                task_id,
                context_id,
                status: TaskStatus {
                    state: TaskState::Completed,
                    message: Some(answer),
                    timestamp: Some(at),
                },
                ..Default::default()
            },
        },
    ];
    let events: Vec<LoggedEvent> = events
        .into_iter()
        .zip(1..)
        .map(|(event, seq)| LoggedEvent { seq, at, event })
        .collect();
    let task = LoggedEvent::replay(&events).unwrap();
    let head = StoredTask {
        owner: owner.clone(),
        task,
        version: events.len() as u64,
        expires_at,
    };
    (head, events)
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: bench-fill DATA_DIR TASKS [TENANT]";
    let dir = PathBuf::from(args.next().expect(usage));
    let tasks: usize = args.next().expect(usage).parse().expect(usage);
    let owner = Owner::anonymous(&args.next().unwrap_or_default());
    let store = SqliteStore::open(&dir).unwrap();
    let started = Instant::now();
    let now = Timestamp::now().millis();
    let expires_at = Timestamp::from_millis(now + RETENTION.as_millis() as i64);
    let mut written = 0;
    while written < tasks {
        let n = BATCH.min(tasks - written);
        let batch: Vec<_> = (written..written + n)
            .map(|i| {
                let at = Timestamp::from_millis(now - (tasks - i) as i64);
                echo(&owner, at, expires_at)
            })
            .collect();
        store.create_tasks(&batch).await.unwrap();
        written += n;
    }
    // The store as a server that ran long leaves it: the log copied into the database file and
    // emptied, all of it on disk, so the benchmark's first checkpoints and fsyncs do not pay
    // for the fill.
    drop(store);
    let conn = rusqlite::Connection::open(dir.join(DB_FILE_NAME)).unwrap();
    conn.busy_timeout(Duration::from_secs(30)).unwrap();
    // The store's threads outlive it briefly: a pass of its checkpoint thread still running
    // makes this one answer "busy" at once (the busy timeout does not wait for a checkpoint).
    let mut attempts = 0;
    while conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap()
        != 0
    {
        attempts += 1;
        assert!(attempts < 300, "the final checkpoint could not complete");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(conn);
    std::fs::File::open(dir.join(DB_FILE_NAME))
        .unwrap()
        .sync_all()
        .unwrap();
    println!(
        "bench-fill: {written} tasks of {} in {:.1} s",
        owner.as_str(),
        started.elapsed().as_secs_f64()
    );
}
