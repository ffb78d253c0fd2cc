//! What the stores and queues keep: task heads, reply records, leases, push delivery records,
//! and the jobs on the queues. Plain data; the traits that keep them are beside it.

use std::collections::BTreeMap;
use std::time::Duration;

use a2a_protocol::{Message, Task, TaskState, Timestamp};
use serde::{Deserialize, Serialize};

use crate::event::LoggedEvent;

/// Who a task belongs to: the authenticated principal within a tenant. Every store read and
/// write is scoped by it, so another owner's task is simply not there.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Owner(pub String);

impl Owner {
    /// The owner key for `principal` in `tenant`.
    pub fn new(tenant: &str, principal: &str) -> Self {
        // The tenant is length-prefixed so no pair of (tenant, principal) can collide.
        Self(format!("{}:{tenant}/{principal}", tenant.len()))
    }

    /// The owner of unauthenticated callers (auth mode `none`).
    pub fn anonymous(tenant: &str) -> Self {
        Self::new(tenant, "anonymous")
    }

    /// The key as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A task's current snapshot (its head) and the version it was built from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredTask {
    /// Owner of the task.
    pub owner: Owner,
    /// The full task: status, artifacts and history.
    pub task: Task,
    /// The sequence number of the last event applied (the log's length).
    pub version: u64,
    /// When the task and its events expire and are no longer returned.
    pub expires_at: Timestamp,
}

/// A direct message reply, recorded so that a repeat of the message it answered gets the same
/// reply (idempotent SendMessage). It lives under the id a task for that message would have
/// had, so the one read that looks for the task finds it too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredReply {
    /// Owner of the message.
    pub owner: Owner,
    /// The client's message as recorded (`taskId` and `contextId` filled in), which a repeat
    /// is compared with.
    pub request: Message,
    /// The agent's reply.
    pub reply: Message,
    /// When the record expires and is no longer returned.
    pub expires_at: Timestamp,
}

/// What the id of a send holds: the task the message started, or the direct reply it got.
#[derive(Debug, Clone, PartialEq)]
pub enum SendRecord {
    /// A task.
    Task(StoredTask),
    /// A direct message reply.
    Reply(StoredReply),
}

/// Filters and cursor of a ListTasks query. The store orders by status timestamp, newest first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskQuery {
    /// Only tasks in this context.
    pub context_id: Option<String>,
    /// Only tasks in this state.
    pub state: Option<TaskState>,
    /// Only tasks whose status timestamp is at or after this.
    pub status_timestamp_after: Option<Timestamp>,
    /// Page size (1..=100, already validated).
    pub page_size: usize,
    /// An opaque cursor the store produced for the previous page; empty for the first page.
    pub page_token: String,
}

/// One page of a ListTasks query.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskPage {
    /// The tasks of this page, newest status timestamp first.
    pub tasks: Vec<Task>,
    /// Cursor of the next page; empty on the last page.
    pub next_page_token: String,
    /// How many tasks match the filters in all.
    pub total_size: usize,
}

/// Failures of a store or queue adapter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// A conditional write lost: another writer got there first. Re-read and decide again.
    #[error("version conflict")]
    Conflict,
    /// The page token was not produced by this store (or is corrupt).
    #[error("invalid page token")]
    InvalidPageToken,
    /// The item would be larger than the store accepts.
    #[error("too large: {0}")]
    TooLarge(String),
    /// The backend failed. The text is for logs, never for clients.
    #[error("store backend: {0}")]
    Backend(String),
    /// A stored item does not read back (written by a version of this code whose layout this
    /// one no longer reads, or damaged): reading it again fails the same way. The text says
    /// what and why for the logs, never the item's content.
    #[error("unreadable: {0}")]
    Unreadable(String),
}

/// An inline execution lease that ended without being released, as listed for the sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiredLease {
    /// Owner of the task.
    pub owner: Owner,
    /// The task.
    pub task_id: String,
    /// Who held it (a process's `worker_id`).
    pub holder: String,
    /// When it ended.
    pub until: Timestamp,
}

/// Current format version of queue message bodies.
pub const JOB_FORMAT_VERSION: u32 = 1;

/// Run the agent for the message appended at `trigger_seq` of a task. The body of a work-queue
/// message, consumed by the worker loop (local) or the worker function (Lambda).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkJob {
    /// Body format version ([`JOB_FORMAT_VERSION`]).
    pub v: u32,
    /// Owner of the task.
    pub owner: Owner,
    /// The task to work on.
    pub task_id: String,
    /// Sequence number of the event that carries the triggering message.
    pub trigger_seq: u64,
    /// Resume the task's durable execution (a wait it parked on is over, or it was handed over
    /// from an invocation that had to end) instead of starting a new one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resume: bool,
    /// The W3C `traceparent` of the request the work belongs to, passed on to what it calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// For a resume job queued to come back when a wait is due: that due time (ms since the
    /// epoch). Each wait has one such job in flight: a job whose time is no longer the wait's
    /// (another path moved the wait on and queued its own) ends without queueing another, so
    /// the jobs of one wait never multiply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_at_ms: Option<i64>,
}

impl WorkJob {
    /// Run the agent on the message at `trigger_seq` of a task.
    pub fn run(owner: &Owner, task_id: &str, trigger_seq: u64) -> Self {
        Self {
            v: JOB_FORMAT_VERSION,
            owner: owner.clone(),
            task_id: task_id.to_owned(),
            trigger_seq,
            resume: false,
            traceparent: None,
            wake_at_ms: None,
        }
    }

    /// Resume the durable execution of the message at `trigger_seq` of a task.
    pub fn resume(owner: &Owner, task_id: &str, trigger_seq: u64) -> Self {
        Self {
            resume: true,
            ..Self::run(owner, task_id, trigger_seq)
        }
    }

    /// This job, carrying `traceparent`.
    pub fn traced(mut self, traceparent: Option<String>) -> Self {
        self.traceparent = traceparent;
        self
    }
}

/// Deliver the event `seq` of a task to one push config. The body of a push-queue message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushJob {
    /// Body format version ([`JOB_FORMAT_VERSION`]).
    pub v: u32,
    /// Owner of the task.
    pub owner: Owner,
    /// The task whose event is delivered.
    pub task_id: String,
    /// The event's sequence number.
    pub seq: u64,
    /// The push config to deliver to.
    pub config_id: String,
}

impl PushJob {
    /// The de-duplication key: one delivery per task, event and config.
    pub fn dedup_id(&self) -> String {
        format!("{}/{}/{}", self.task_id, self.seq, self.config_id)
    }
}

/// Events a store wrote to a task, as its push fan-out sees them: who owns the task, the events
/// of that one write, and the task's push configs at that moment. A DynamoDB stream record of a
/// task head decodes to one of these (`A2aService::fan_out` takes them).
#[derive(Debug, Clone, PartialEq)]
pub struct AppendedEvents {
    /// Owner of the task.
    pub owner: Owner,
    /// The task.
    pub task_id: String,
    /// The events of the write, in log order.
    pub events: Vec<LoggedEvent>,
    /// The ids of the task's push configs when the events were written.
    pub config_ids: Vec<String>,
}

/// The push jobs of one write: one per event a client can see (every status and artifact
/// update, the created task; not the user's own messages) and push config, in log order, each
/// event's jobs in config order. Empty without configs. The one definition of the fan-out that
/// every store uses, whether inside its transaction or from its stream.
pub fn push_jobs(
    owner: &Owner,
    task_id: &str,
    events: &[LoggedEvent],
    config_ids: &[String],
) -> Vec<PushJob> {
    push_jobs_at(owner, task_id, &visible_seqs(events), config_ids)
}

/// The sequence numbers of the events in `events` that streams and push receivers see: the
/// ones [`push_jobs`] makes jobs of.
pub fn visible_seqs(events: &[LoggedEvent]) -> Vec<u64> {
    events
        .iter()
        .filter(|e| e.event.is_visible())
        .map(|e| e.seq)
        .collect()
}

/// [`push_jobs`] for the visible events at `seqs` (see [`visible_seqs`]), for a store that
/// keeps only their numbers until it knows the task has push configs.
pub fn push_jobs_at(
    owner: &Owner,
    task_id: &str,
    seqs: &[u64],
    config_ids: &[String],
) -> Vec<PushJob> {
    seqs.iter()
        .flat_map(|&seq| {
            config_ids.iter().map(move |config_id| PushJob {
                v: JOB_FORMAT_VERSION,
                owner: owner.clone(),
                task_id: task_id.to_owned(),
                seq,
                config_id: config_id.clone(),
            })
        })
        .collect()
}

/// What a job handler tells its queue to do with the message it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// Done (or nothing left to do): delete the message.
    Done,
    /// Try again later: leave the message to become visible after `after`.
    Retry {
        /// Why, for the log.
        reason: String,
        /// How long to wait before the next attempt.
        after: Duration,
    },
    /// Give up: the job has had all its attempts (by the handler's own count). Move the
    /// message to the dead-letter queue with this reason.
    DeadLetter {
        /// Why, kept with the dead letter.
        reason: String,
    },
}

/// How one webhook delivery attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PushAttemptResult {
    /// The receiver answered 2xx.
    Delivered,
    /// It failed (no answer, or a status other than 2xx and 410); the job is retried, or
    /// dead-lettered if this was its last attempt.
    Failed,
    /// The receiver answered 410 Gone: the config is deleted and nothing more is sent to it.
    Gone,
    /// The URL was refused before any connection (non-public address, bad scheme or URL).
    Refused,
}

/// One delivery attempt of one event to one push config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushAttempt {
    /// The event's sequence number.
    pub seq: u64,
    /// When the attempt ended.
    pub at: Timestamp,
    /// How it ended.
    pub result: PushAttemptResult,
    /// The receiver's HTTP status, if it answered.
    pub http_status: Option<u16>,
    /// Why it did not succeed. Never holds credentials, tokens or the URL's path or query.
    pub error: Option<String>,
    /// Whether this was the event's last attempt (the job goes to the dead-letter queue).
    pub final_attempt: bool,
    /// Which attempt at this event it was (1 on the first), counted by the core from the
    /// delivery record, not from the queue's receive count.
    #[serde(default)]
    pub number: u32,
}

/// What happened to the pushes of one config so far: its delivery record.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushDeliveryState {
    /// Attempts made, of every event.
    pub attempts: u64,
    /// Attempts that were delivered.
    pub delivered: u64,
    /// Failed or refused attempts since the last delivered one.
    pub consecutive_failures: u64,
    /// Events given up on after their last attempt (sent to the dead-letter queue).
    pub dead_lettered: u64,
    /// The sequence number of the event of the last attempt.
    pub last_seq: u64,
    /// How many attempts the event `last_seq` has had: the number of the last attempt.
    #[serde(default)]
    pub last_seq_attempts: u32,
    /// When the last attempt ended.
    pub last_attempt_at: Option<Timestamp>,
    /// How the last attempt ended.
    pub last_result: Option<PushAttemptResult>,
    /// The HTTP status of the last attempt, if the receiver answered.
    pub last_status: Option<u16>,
    /// The error of the last unsuccessful attempt (kept after a later success).
    pub last_error: Option<String>,
    /// When an event was last delivered.
    pub last_success_at: Option<Timestamp>,
    /// Why deliveries to this config stopped for good (410 Gone), if they did.
    pub disabled_reason: Option<String>,
}

impl PushDeliveryState {
    /// Folds one attempt into the record. Adapters apply exactly this (a DynamoDB adapter may
    /// express it as one `UpdateItem`: `ADD attempts :1, …`, `SET last_… = :…`).
    pub fn record(&mut self, attempt: &PushAttempt) {
        self.attempts += 1;
        self.last_seq = attempt.seq;
        self.last_seq_attempts = attempt.number;
        self.last_attempt_at = Some(attempt.at);
        self.last_result = Some(attempt.result);
        self.last_status = attempt.http_status;
        match attempt.result {
            PushAttemptResult::Delivered => {
                self.delivered += 1;
                self.consecutive_failures = 0;
                self.last_success_at = Some(attempt.at);
            }
            PushAttemptResult::Failed | PushAttemptResult::Refused => {
                self.consecutive_failures += 1;
                self.last_error.clone_from(&attempt.error);
            }
            PushAttemptResult::Gone => {
                self.last_error.clone_from(&attempt.error);
                self.disabled_reason = Some(
                    attempt
                        .error
                        .clone()
                        .unwrap_or_else(|| "the webhook answered 410 Gone".into()),
                );
            }
        }
        if attempt.final_attempt {
            self.dead_lettered += 1;
        }
    }
}

/// The durable state of a task's execution: what it recorded so far, and what it waits for
/// while parked. It lives in the store, so the execution survives its process: a resumed run
/// replays the agent, which gets every recorded step's result at once and whose events up to
/// `emitted` were written already (the replay does not write them again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DurableExecution {
    /// Owner of the task.
    pub owner: Owner,
    /// The task.
    pub task_id: String,
    /// The log position of the message this execution runs.
    pub trigger_seq: u64,
    /// The results of its durable steps so far, in the order the agent took them.
    #[serde(default)]
    pub steps: Vec<StepRecord>,
    /// How many events (statuses and artifacts) it emitted so far.
    #[serde(default)]
    pub emitted: u64,
    /// What it is parked on, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<Wait>,
    /// Tasks of other agents this task works with, by the name of the step that started them:
    /// kept from one execution of the task to the next (a follow-up continues them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub remotes: BTreeMap<String, RemoteTaskRef>,
    /// The W3C `traceparent` of the request the execution belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// Bumped by every write: a write is conditional on the version it read.
    #[serde(default)]
    pub version: u64,
    /// When the record expires (with its task).
    pub expires_at: Timestamp,
}

impl DurableExecution {
    /// When the store must look at this execution again: its wait's due time, if it waits.
    pub fn due_at(&self) -> Option<Timestamp> {
        self.wait.as_ref().map(|w| w.due_at)
    }

    /// The digests ([`relay_token_digest`]) of the push tokens this execution's relay route
    /// takes: its wait's, and those of the remote tasks it worked with that push to it,
    /// sorted, each once, joined by `,` (empty: none). What a store keeps as the task's
    /// [`RelayGate`], beside the record.
    pub fn relay_tokens(&self) -> String {
        let waiting = self.wait.iter().filter_map(|w| match &w.what {
            WaitFor::RemoteTask { token, .. } => Some(token.as_str()),
            _ => None,
        });
        let pushing = self
            .remotes
            .values()
            .filter_map(|r| r.push_token.as_deref());
        let mut digests: Vec<String> = waiting.chain(pushing).map(relay_token_digest).collect();
        digests.sort();
        digests.dedup();
        digests.join(",")
    }
}

/// The digest a [`RelayGate`] keeps of a push token (SHA-256, base64url): the token itself
/// stays in the record alone.
pub fn relay_token_digest(token: &str) -> String {
    crate::signing::body_sha256(token.as_bytes())
}

/// Compares two secrets in time independent of where they differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What the relay route checks a push against before it reads a task's execution record:
/// whose task it is, and the digests of the tokens its pushes may carry
/// ([`DurableExecution::relay_tokens`]). Small, apart from the record (which holds whole
/// remote answers): a push with a wrong token costs one small read. It is written with a
/// record whose tokens changed and kept until it expires, past the record's deletion, so a
/// push for a wait that ended is told so (410), and a stranger's is refused alike either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayGate {
    /// Owner of the task.
    pub owner: Owner,
    /// The token digests, as [`DurableExecution::relay_tokens`] joined them.
    pub tokens: String,
}

impl RelayGate {
    /// Whether `token` is one of the gate's (compared in time independent of the tokens).
    pub fn admits(&self, token: &str) -> bool {
        let digest = relay_token_digest(token);
        self.tokens.split(',').fold(false, |found, known| {
            found | constant_time_eq(known.as_bytes(), digest.as_bytes())
        })
    }
}

/// One durable step's recorded result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRecord {
    /// The name the agent gave the step (checked on replay: a different name means the agent
    /// took another path than the run it replays).
    pub name: String,
    /// Its result, as JSON.
    #[serde(default)]
    pub value: serde_json::Value,
}

/// What a parked execution waits for, and until when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Wait {
    /// The index of the durable step that waits.
    pub step: usize,
    /// The step's name.
    pub name: String,
    /// What it waits for.
    pub what: WaitFor,
    /// When the store looks at it again: a timer's end, the next poll of a remote task, or the
    /// deadline, whichever comes first; now, once it is over and the execution is to resume.
    pub due_at: Timestamp,
    /// When it gives up ([`WaitOutcome::TimedOut`]).
    pub deadline: Timestamp,
    /// How it ended, once it has: the execution resumes with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<WaitOutcome>,
    /// The W3C `traceparent` of what ended it (the relay of a push, a poll's GetTask), when
    /// spans are exported: the resumption's span links to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub woken_by: Option<String>,
}

/// What an execution can wait for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum WaitFor {
    /// Time to pass: over at the wait's `deadline`.
    Timer,
    /// A signal sent to the task under the wait's name (`A2aService::signal`).
    Signal,
    /// Another agent's task to stop (terminal, or waiting for input).
    #[serde(rename_all = "camelCase")]
    RemoteTask {
        /// The remote task.
        remote: RemoteTaskRef,
        /// The secret the remote's pushes carry back (the push config's token): proves a push
        /// is for this wait.
        token: String,
        /// How long between two polls of the remote task (GetTask), the fallback when its
        /// pushes do not come.
        poll_every_ms: u64,
    },
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum WaitOutcome {
    /// What it waited for happened; with the value it brought (a signal's payload, the
    /// remote's task).
    Done {
        /// The value.
        #[serde(default)]
        value: serde_json::Value,
    },
    /// Its deadline passed first.
    TimedOut,
}

/// A task of another agent that one of ours works with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteTaskRef {
    /// The agent's base URL (its card is at `/.well-known/agent-card.json` under it), or the
    /// address of a chat room, `lite:<channel>:<room>`, whose A2A-Lite agent has the task.
    pub agent: String,
    /// Its task's id.
    pub task_id: String,
    /// Its task's context id.
    #[serde(default)]
    pub context_id: String,
    /// The status (state, time, message id) the task asked for input with when the call that
    /// started or continued it last returned: when the next call continues it, a snapshot
    /// still showing that status is from before the new message, not a new stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<String>,
    /// The token of the push config the remote pushes this task's updates with, when it does:
    /// a call that continues the task waits with it (the remote's config stays as it is), and
    /// a push that comes after the call returned is still recognised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_token: Option<String>,
}

/// A parked execution whose wait is due, as the store lists them for the sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueExecution {
    /// Owner of the task.
    pub owner: Owner,
    /// The task.
    pub task_id: String,
    /// When its wait became due.
    pub due_at: Timestamp,
}
