//! Running the agent: one execution per client message, inline (in this process) or from the
//! work queue, and what makes sure its task does not stay active when it stops.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use a2a_protocol::{A2AError, TaskPushNotificationConfig, Timestamp};
use tokio::sync::oneshot;

use crate::agent::Agent;
use crate::config::ServiceConfig;
use crate::emitter::{is_active, Emitter, EmitterState, FirstOutcome, InlineLease};
use crate::journal::{DurableEnv, DurableRun};
use crate::ports::{LeaseStore, Owner, StoreError, StoredTask, TaskStore, WorkJob, WorkQueue};
use crate::request::{AgentError, AgentRequest};
use crate::task_log::{store_error, AppendError, TaskLog};

/// An emitter for `request` on `log`, and the receiver of how the agent's first report resolved
/// it (a task, or a direct message). `head` is the task as it stands, if it exists already.
pub(crate) fn new_emitter(
    log: &Arc<TaskLog>,
    env: &Arc<DurableEnv>,
    owner: &Owner,
    request: AgentRequest,
    head: Option<StoredTask>,
    inline_push: Option<TaskPushNotificationConfig>,
    run: DurableRun,
) -> (Emitter, oneshot::Receiver<FirstOutcome>) {
    let (tx, rx) = oneshot::channel();
    let emitter = Emitter {
        log: log.clone(),
        owner: owner.clone(),
        request: Arc::new(request),
        state: Arc::new(tokio::sync::Mutex::new(EmitterState::new(head, tx))),
        written: Arc::new(tokio::sync::Notify::new()),
        inline_push,
        lease: None,
        durable: Arc::new(tokio::sync::Mutex::new(run)),
        env: env.clone(),
        in_step: Default::default(),
    };
    (emitter, rx)
}

/// The inline executions running in this process, so a graceful shutdown can end their tasks
/// instead of leaving them WORKING until the sweep finds their expired leases.
#[derive(Default)]
pub(crate) struct Executions {
    running: Mutex<HashMap<u64, Emitter>>,
    next: AtomicU64,
    /// Follow-ups starting or running in this process, per task: their inline lease is this
    /// process's (one holder), so it cannot keep a second copy of a recorded message from
    /// running it again here (see [`FollowUpClaim`]).
    follow_ups: Mutex<HashMap<String, usize>>,
}

/// A follow-up of a task starting or running in this process, from before its message is
/// recorded to the end of its run (dropped then, or when a start fails).
pub(crate) struct FollowUpClaim {
    executions: Arc<Executions>,
    task_id: String,
}

impl FollowUpClaim {
    /// Claims a follow-up of `task_id`, beside any other (a new message).
    pub(crate) fn of(executions: &Arc<Executions>, task_id: &str) -> Self {
        *executions
            .follow_ups()
            .entry(task_id.to_owned())
            .or_default() += 1;
        Self {
            executions: executions.clone(),
            task_id: task_id.to_owned(),
        }
    }

    /// Claims a follow-up of `task_id` only if none is starting or running here: a copy of a
    /// message already recorded goes on with it only then (the copy that recorded it runs it).
    pub(crate) fn sole(executions: &Arc<Executions>, task_id: &str) -> Option<Self> {
        let mut follow_ups = executions.follow_ups();
        if follow_ups.contains_key(task_id) {
            return None;
        }
        follow_ups.insert(task_id.to_owned(), 1);
        drop(follow_ups);
        Some(Self {
            executions: executions.clone(),
            task_id: task_id.to_owned(),
        })
    }
}

impl Drop for FollowUpClaim {
    fn drop(&mut self) {
        let mut follow_ups = self.executions.follow_ups();
        if let Some(count) = follow_ups.get_mut(&self.task_id) {
            *count -= 1;
            if *count == 0 {
                follow_ups.remove(&self.task_id);
            }
        }
    }
}

impl Executions {
    fn follow_ups(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        self.follow_ups.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Emitter>> {
        // A poisoned map only means a panic elsewhere while it was held; its content is still
        // valid.
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs an inline execution to its end, registered while it runs, renewing the task's
    /// inline lease (if the emitter holds one) every third of its duration, and giving it back
    /// at the end whatever happened.
    pub(crate) async fn run_inline(&self, agent: Arc<dyn Agent>, emitter: Emitter) {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(key, emitter.clone());
        match emitter.lease.as_ref().map(|l| l.duration / 3) {
            Some(period) => {
                let beat = emitter.clone();
                crate::jobs::while_running(run_agent(agent, emitter.clone()), period, || {
                    let beat = beat.clone();
                    async move { Box::pin(beat.renew_lease()).await }
                })
                .await
            }
            None => run_agent(agent, emitter.clone()).await,
        }
        Box::pin(emitter.finish_lease()).await;
        self.lock().remove(&key);
    }

    /// Ends the task of every execution still running here FAILED with `reason`, through its
    /// emitter (so the FAILED event reaches followers and pushes, and the lease is given
    /// back). The agents run on; their next emit finds the task ended.
    pub(crate) async fn shutdown(&self, reason: &str) {
        let running: Vec<Emitter> = self.lock().drain().map(|(_, e)| e).collect();
        for emitter in running {
            let exists = crate::emitter::lock_now(&emitter.state)
                .await
                .head
                .is_some();
            if !exists {
                continue;
            }
            match emitter.end_failed(reason).await {
                Ok(()) | Err(AgentError::TaskEnded(_)) => {}
                Err(err) => {
                    tracing::warn!(task_id = %emitter.task_id(), error = %err, "could not end the task at shutdown")
                }
            }
            emitter.finish_lease().await;
        }
    }
}

impl Emitter {
    /// This emitter with the inline lease terms of `config`; `held` if the lease was already
    /// taken (a follow-up takes it before its message is written).
    pub(crate) fn leased(mut self, config: &ServiceConfig, held: bool) -> Self {
        self.lease = Some(inline_lease(config));
        Arc::get_mut(&mut self.state)
            .expect("an emitter is leased before it is shared")
            .get_mut()
            .lease_held = held;
        self
    }
}

/// The inline lease terms of this process.
pub(crate) fn inline_lease(config: &ServiceConfig) -> InlineLease {
    InlineLease {
        holder: config.worker_id.clone(),
        duration: config.lease_duration,
    }
}

/// Takes the inline lease of a task before a follow-up message makes it active again. The
/// previous execution gives the lease back right after it wrote the interrupted state the
/// client reacted to, so a lease still held by someone else gets a few short tries first.
pub(crate) async fn take_follow_up_lease(
    store: &dyn LeaseStore,
    owner: &Owner,
    task_id: &str,
    config: &ServiceConfig,
) -> Result<(), A2AError> {
    let lease = inline_lease(config);
    for attempt in 0..5 {
        let taken = store
            .acquire_inline_lease(owner, task_id, &lease.holder, lease.until())
            .await
            .map_err(store_error)?;
        if taken {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
    }
    Err(A2AError::unsupported(format!(
        "Task {task_id} is still running an execution; send the message again shortly"
    )))
}

/// Why the sweep ends a task whose inline execution stopped without finishing it.
pub(crate) const ORPHANED_REASON: &str = "The execution of this task stopped before it finished \
    (its server went away); send the message again to retry.";

/// The holder of the lease that stands for a queued job that could not be queued: the sweep
/// queues it (see [`unqueued_holder`]).
const UNQUEUED: &str = "unqueued@";

/// The lease holder that marks task message `trigger_seq` as recorded but not queued (the
/// queue refused it through its retries): as an inline lease that has already ended, it is
/// listed by the next sweep, which queues the job ([`sweep_expired`]). A worker that runs the
/// job meanwhile (the queue had taken it after all) takes the lease as its own, and the sweep
/// no longer sees it.
pub(crate) fn unqueued_holder(trigger_seq: u64) -> String {
    format!("{UNQUEUED}{trigger_seq}")
}

/// Ends the tasks of up to `limit` expired inline leases FAILED (those still active) and
/// removes the leases; returns how many tasks it ended. A lease that stands for a job that
/// could not be queued ([`unqueued_holder`]) gets its job queued instead. See
/// `A2aService::sweep_expired_executions`.
pub(crate) async fn sweep_expired(
    store: &dyn TaskStore,
    log: &TaskLog,
    work: &dyn WorkQueue,
    limit: usize,
) -> Result<usize, StoreError> {
    let expired = store
        .list_expired_inline_leases(Timestamp::now(), limit)
        .await?;
    let mut ended = 0;
    for lease in expired {
        if let Some(seq) = lease.holder.strip_prefix(UNQUEUED) {
            let job = WorkJob::run(&lease.owner, &lease.task_id, seq.parse().unwrap_or(0));
            if let Err(err) = work.enqueue_work(&job).await {
                // Keep the lease: the next sweep tries again.
                tracing::warn!(task_id = %lease.task_id, error = %err, "could not queue a job the send could not queue");
                continue;
            }
            tracing::info!(task_id = %lease.task_id, "queued a job its send could not queue");
            store.remove_expired_lease(&lease).await?;
            continue;
        }
        let head = store.load_task(&lease.owner, &lease.task_id).await?;
        // A durable execution that parked (its process died after it saved its wait, before it
        // let go of the lease) is no orphan: its wait has a deadline, and the sweep of due
        // executions resumes it.
        let parked = match &head {
            Some(h) if is_active(h.task.status.state) => store
                .load_execution(&lease.owner, &lease.task_id)
                .await?
                .is_some_and(|r| r.wait.is_some()),
            _ => false,
        };
        if let Some(head) = head.filter(|h| !parked && is_active(h.task.status.state)) {
            // A conditional append like any other: if the execution is alive after all and
            // writes its own final state first, this one finds the task terminal and stops.
            match log.finish_failed(&lease.owner, head, ORPHANED_REASON).await {
                Ok(_) => {
                    tracing::warn!(task_id = %lease.task_id, holder = %lease.holder, "ended an orphaned task");
                    ended += 1;
                }
                Err(AppendError::Terminal(_) | AppendError::NotFound(_)) => {}
                Err(err) => {
                    // Keep the lease: the next sweep tries again.
                    tracing::warn!(task_id = %lease.task_id, error = ?err, "could not end an orphaned task");
                    continue;
                }
            }
        }
        store.remove_expired_lease(&lease).await?;
    }
    Ok(ended)
}

/// Runs the agent to its end and makes sure the task does not stay active when it stops: an
/// error fails the task; returning without a final state fails it too (no task stays WORKING).
///
/// The agent runs in the caller's task (a panic is caught as a failure). What runs after it is
/// boxed: the caller's future is held for as long as the agent runs (minutes, for a stream
/// kept open), and needs room for that part only at the end.
pub(crate) async fn run_agent(agent: Arc<dyn Agent>, emitter: Emitter) {
    use tracing::Instrument as _;
    // Every line logged while the agent works carries its task and the caller's trace, so one
    // request can be followed across the agents it reaches.
    let traceparent = emitter.durable_run().await.traceparent.clone();
    // The exported span (docs/tracing.md): inside an operation or a resumption, their child;
    // a queued run continues the trace of the request that queued it.
    let invoke = tracing::trace_span!(
        "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        a2a.task.id = %emitter.task_id(),
        a2a.context.id = %emitter.request.context_id,
    );
    crate::trace::continue_trace(&invoke, traceparent.as_deref());
    let span = tracing::info_span!(
        "work",
        task_id = %emitter.task_id(),
        traceparent = tracing::field::Empty
    );
    if let Some(traceparent) = &traceparent {
        span.record("traceparent", traceparent.as_str());
    }
    // The exported span is the innermost: what the agent does (creating its task, calling
    // out) reads it as the current span; the log lines show `work`.
    run_agent_inner(agent, emitter)
        .instrument(invoke)
        .instrument(span)
        .await
}

async fn run_agent_inner(agent: Arc<dyn Agent>, emitter: Emitter) {
    use futures::FutureExt;
    let request = (*emitter.request).clone();
    let result = std::panic::AssertUnwindSafe(agent.execute(request, emitter.clone()))
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(task_id = %emitter.task_id(), %message, "the agent panicked");
            Err(AgentError::Failed("The agent failed unexpectedly.".into()))
        });
    Box::pin(finish_run(result, emitter)).await
}

/// What [`run_agent`] does once the agent returned `result`.
async fn finish_run(result: Result<(), AgentError>, emitter: Emitter) {
    // A parked run stops where it is: its task waits, and a resumed run goes on from there.
    if emitter.durable_run().await.is_parked() {
        return;
    }
    finish_unparked(result, &emitter).await;
    emitter.forget_if_ended().await;
}

/// [`finish_run`] of a run that did not park.
async fn finish_unparked(result: Result<(), AgentError>, emitter: &Emitter) {
    // What the agent emitted last may still be being written: the task's state is known after.
    // A write that failed meanwhile is the agent's failure (unless it reported another).
    let result = match (result, emitter.written().await) {
        (Ok(()), Err(AgentError::Failed(reason))) => Err(AgentError::Failed(reason)),
        (result, _) => result,
    };
    let (replied, state) = {
        let state = crate::emitter::lock_now(&emitter.state).await;
        (
            state.replied || state.superseded,
            state.head.as_ref().map(|h| h.task.status.state),
        )
    };
    // A direct reply needs no final state; a superseded run's task belongs to the winner.
    if replied {
        return;
    }
    let reason = match (result, state) {
        (Err(AgentError::TaskEnded(_) | AgentError::Parked), _) => return,
        (Err(AgentError::Failed(reason)), _) => reason,
        (Ok(()), None) => "The agent finished without reporting a result.".to_string(),
        (Ok(()), Some(s)) if s.is_terminal() || s.is_interrupted() => return,
        (Ok(()), Some(_)) => "The agent finished without a final status.".to_string(),
    };
    if let Some(s) = state {
        if s.is_terminal() {
            return;
        }
    }
    if let Err(err) = emitter.end_failed(&reason).await {
        tracing::warn!(task_id = %emitter.task_id(), error = %err, "could not mark the task failed");
    }
}
