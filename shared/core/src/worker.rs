//! The work-job handler: runs the agent for a queued message, once at a time per task, and
//! resumes durable executions whose wait is over.

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol::Timestamp;
use tracing::Instrument as _;

use crate::emitter::lease_until;
use crate::event::{LoggedEvent, TaskEvent};
use crate::execution::{new_emitter, run_agent};
use crate::journal::{DurableEnv, DurableRun, MAX_QUEUE_DELAY};
use crate::kernel::Core;
use crate::ports::{
    DurableExecution, ExecutionStore, JobOutcome, LeaseStore, StoreError, WaitFor, WaitOutcome,
    WorkJob, WorkQueue,
};
use crate::relay::RemoteUpdate;
use crate::remote::read_remote_task;
use crate::remote_call::{Ours, RemoteCall};
use crate::request::AgentRequest;
use crate::task_log::{AppendError, TaskLog};

/// Runs `job`; returns what to do with it and the number of the attempt it made (0 when it
/// made none: nothing to do, or the lease was not ours to take).
///
/// `hand_over_at`: when the job's run must stop, if it must (the invocation running it ends
/// soon after: Lambda's timeout would kill it together with the rest of its batch). A run
/// still going then is stopped and handed over like an inline one at its deadline
/// (`Emitter::hand_over`: what it did is kept, a resume job replays it from there); its lease
/// ends at once but keeps its attempt count, so the resumption is the job's next attempt and
/// a run that never ends within an invocation fails after `max_job_attempts` of them.
pub(crate) async fn run_work_job(
    core: &Arc<Core>,
    job: &WorkJob,
    receive_count: u32,
    hand_over_at: Option<tokio::time::Instant>,
) -> (JobOutcome, u32) {
    let store = &core.store;
    let lease = lease_of(core);
    let retry = |reason: String| JobOutcome::Retry {
        reason,
        after: Duration::from_secs(5),
    };
    let head = match store.load_task(&job.owner, &job.task_id).await {
        Ok(Some(head)) => head,
        Ok(None) => {
            // Gone (expired), or never written: a record of its execution has nothing to
            // resume, and would be found due again and again.
            if job.resume {
                forget(core.store.as_ref(), job).await;
            }
            return (JobOutcome::Done, 0);
        }
        Err(err) => return (retry(format!("store: {err}")), 0),
    };
    if head.task.status.state.is_terminal() {
        if job.resume {
            forget(core.store.as_ref(), job).await;
        }
        return (JobOutcome::Done, 0);
    }
    let attempt = match store
        .begin_job_attempt(
            &job.task_id,
            job.trigger_seq,
            &core.config.worker_id,
            lease_until(core.config.lease_duration),
        )
        .await
    {
        Ok(Some(attempt)) => attempt,
        Ok(None) => return (retry("another worker holds the task's lease".into()), 0),
        Err(err) => return (retry(format!("store: {err}")), 0),
    };
    if attempt > core.config.max_job_attempts {
        // Earlier attempts started and never finished (a crash, a timeout): end the task rather
        // than leave it WORKING, and dead-letter the job so an operator sees it.
        let reason = format!(
            "The work could not be completed: it was attempted {} times.",
            attempt - 1
        );
        tracing::error!(task_id = %job.task_id, attempt, receive_count, "work job exhausted its attempts");
        let outcome = match core.log.finish_failed(&job.owner, head, &reason).await {
            Ok(_) | Err(AppendError::Terminal(_)) => JobOutcome::DeadLetter { reason },
            Err(err) => retry(format!("could not fail the task: {err:?}")),
        };
        lease.release(job).await;
        return (outcome, attempt);
    }
    // A resumption, or a job delivered again after an attempt that died (it may have recorded
    // durable steps): the record of this execution, if any, is replayed.
    let record = if job.resume || attempt > 1 {
        match store.load_execution(&job.owner, &job.task_id).await {
            Ok(record) => record.filter(|r| r.trigger_seq == job.trigger_seq),
            Err(err) => {
                lease.release(job).await;
                return (retry(format!("store: {err}")), attempt);
            }
        }
    } else {
        None
    };
    let record = match (job.resume, record) {
        // Nothing to resume: another run resumed it already, or it ended.
        (true, None) => {
            lease.release(job).await;
            return (JobOutcome::Done, attempt);
        }
        (_, Some(record)) => {
            // Whether this job is the one that follows the wait: queued for its due time.
            let follows_the_wait =
                job.wake_at_ms.is_some() && job.wake_at_ms == record.due_at().map(|t| t.millis());
            match advance(core, record).await {
                Ok(Advanced::Over(record)) => Some(*record),
                Ok(Advanced::Waiting(due)) => {
                    // Woken early (a queue's delay is capped) or polled: it waits on, and the
                    // job that follows the wait comes back when it is due. Any other job (a
                    // push for a wait not over, one whose wait another path moved on) ends
                    // here: that path queued its own.
                    lease.release(job).await;
                    if follows_the_wait {
                        rearm(core.work.as_ref(), job, due).await;
                    }
                    return (JobOutcome::Done, attempt);
                }
                Err(err) => {
                    lease.release(job).await;
                    return (retry(format!("store: {err}")), attempt);
                }
            }
        }
        (false, None) => None,
    };
    // A first attempt also reads the event after the message: the same read, one row more.
    let first_attempt = !job.resume && attempt == 1;
    let events = match store
        .read_events(
            &job.owner,
            &job.task_id,
            job.trigger_seq.saturating_sub(1),
            if first_attempt { 2 } else { 1 },
        )
        .await
    {
        Ok(events) => events,
        Err(err) => {
            lease.release(job).await;
            return (retry(format!("store: {err}")), attempt);
        }
    };
    if first_attempt && ran_before(&events, job.trigger_seq) {
        // The queue handed the job out again (SQS delivers at least once; a delete can fail
        // after it took effect) after a run of it ended and gave the lease back, with its task
        // waiting for input or parked: running it again would run the agent twice on one
        // message.
        tracing::info!(task_id = %job.task_id, seq = job.trigger_seq, "work job delivered again after its run; nothing to do");
        lease.release(job).await;
        return (JobOutcome::Done, attempt);
    }
    let trigger = events.into_iter().find(|e| e.seq == job.trigger_seq);
    let (message, previous) = match trigger.map(|e| e.event) {
        Some(TaskEvent::Created { task }) => (task.history.last().cloned(), None),
        Some(TaskEvent::UserMessage { message }) => (Some(message), Some(head.task.clone())),
        _ => (None, None),
    };
    let Some(message) = message else {
        tracing::error!(task_id = %job.task_id, seq = job.trigger_seq, "work job points at no message");
        lease.release(job).await;
        return (JobOutcome::Done, attempt);
    };
    let request = AgentRequest {
        context_id: head.task.context_id.clone(),
        task_id: head.task.id.clone(),
        message,
        task: previous,
        streaming: false,
        metadata: None,
    };
    let resumed = match (&record, job.resume) {
        (Some(record), true) => {
            // What ended the wait, as its record keeps it; else as its job came (a wait
            // ended before records kept it).
            let woken_by = record.wait.as_ref().and_then(|w| w.woken_by.as_deref());
            let woken_by = woken_by.or(job.traceparent.as_deref());
            resume_span(&job.task_id, record.traceparent.as_deref(), woken_by)
        }
        _ => tracing::Span::none(),
    };
    let run = match record {
        Some(record) => DurableRun::replaying(record),
        None => DurableRun::fresh(job.trigger_seq, job.traceparent.clone()),
    }
    .for_job();
    let (emitter, _first) = new_emitter(
        &core.log,
        &core.durable,
        &job.owner,
        request,
        Some(head),
        None,
        run,
    );
    // Renew the lease while the agent runs, so a long job is not taken over by a redelivery.
    let (holder, lasts) = (&core.config.worker_id, core.config.lease_duration);
    let running = crate::jobs::while_running(
        run_agent(core.agent.clone(), emitter.clone()).instrument(resumed),
        lasts / 3,
        || async move {
            let until = lease_until(lasts);
            if let Err(err) = store.acquire_lease(&job.task_id, holder, until).await {
                tracing::warn!(task_id = %job.task_id, error = %err, "lease renewal failed");
            }
        },
    );
    let finished = match hand_over_at {
        Some(at) => tokio::time::timeout_at(at, running).await.is_ok(),
        None => {
            running.await;
            true
        }
    };
    if !finished {
        return (hand_over(&lease, job, &emitter).await, attempt);
    }
    if emitter.durable_run().await.is_interrupted() {
        // The store failed in a durable step: the job comes back and replays the record, as
        // the attempt the lease counts (ended now, not given back, so the next one may take
        // it at once and a run that never gets through fails after `max_job_attempts`).
        lease.end_now(job).await;
        return (retry("store: a durable step failed".into()), attempt);
    }
    // The lease goes back whether the task ended or not. One that stopped to wait for its
    // client (input required), or whose execution parked, must have it back so that the next
    // message or the resumption can run at once. One that ended would need it no more (a
    // redelivered job finds the task terminal before it asks for the lease), but a lease left
    // to expire lingers until DynamoDB's TTL removes it, days later, and every sweep of
    // expired leases reads it until then: at a million queued tasks a month, a write each is
    // cheaper than those reads (docs/cost.md, "Execution leases and the sweep").
    lease.release(job).await;
    (JobOutcome::Done, attempt)
}

/// The span of a resumption (the resumed run's spans are its children): in the trace that
/// parked the wait (`parked_by`, the record's: the operation that started the run), linked
/// to what ended it (`woken_by`: the relay of a push, a poll's GetTask, a signal's operation)
/// when that is another span. docs/tracing.md says why this way round.
fn resume_span(task_id: &str, parked_by: Option<&str>, woken_by: Option<&str>) -> tracing::Span {
    let span = tracing::trace_span!("resume", a2a.task.id = task_id);
    crate::trace::set_span_parent(&span, parked_by.or(woken_by));
    if parked_by.is_some() && woken_by != parked_by {
        crate::trace::add_span_link(&span, woken_by);
    }
    span
}

/// Whether `events` (read from the job's message on) show that a run of the job at
/// `trigger_seq` already wrote: the event right after the message is the agent's (a status or
/// an artifact), not a later message of the client. Only a run of this job writes there: a
/// cancel ends the task (a job finds it terminal first), a run handed over is resumed by a
/// resume job, and an attempt that died keeps its count on the lease (its job replays).
fn ran_before(events: &[LoggedEvent], trigger_seq: u64) -> bool {
    events.iter().any(|e| {
        e.seq == trigger_seq + 1
            && matches!(
                e.event,
                TaskEvent::Status { .. } | TaskEvent::Artifact { .. }
            )
    })
}

/// Hands over the run of `job`, stopped before its invocation ends (see [`run_work_job`]).
async fn hand_over(
    lease: &Lease<'_>,
    job: &WorkJob,
    emitter: &crate::emitter::Emitter,
) -> JobOutcome {
    // Ended now, not given back: the resumption takes it at once, as the job's next attempt.
    lease.end_now(job).await;
    if emitter.task_active().await {
        if let Err(err) = emitter.hand_over().await {
            // The job comes back from the queue, as the attempt the lease counted.
            tracing::warn!(task_id = %job.task_id, error = %err, "could not hand the work over before the invocation's end");
            return JobOutcome::Retry {
                reason: format!("could not hand the work over: {err}"),
                after: Duration::from_secs(5),
            };
        }
        tracing::warn!(task_id = %job.task_id, "the work ran until its invocation's end; handed over to the next");
    }
    JobOutcome::Done
}

/// A work job's lease: the store's leases, and this worker as their holder.
struct Lease<'a> {
    leases: &'a dyn LeaseStore,
    holder: &'a str,
}

/// The lease of `core`'s worker.
fn lease_of(core: &Core) -> Lease<'_> {
    Lease {
        leases: core.store.as_ref(),
        holder: &core.config.worker_id,
    }
}

impl Lease<'_> {
    /// Ends the task's lease now but keeps it, with the job's attempt count: the job's next
    /// attempt takes it at once and counts on.
    async fn end_now(&self, job: &WorkJob) {
        let now = Timestamp::now();
        if let Err(err) = self
            .leases
            .acquire_lease(&job.task_id, self.holder, now)
            .await
        {
            tracing::warn!(task_id = %job.task_id, error = %err, "could not end the lease");
        }
    }

    /// Gives the task's lease back (and with it the job's attempt count: the job is settled).
    async fn release(&self, job: &WorkJob) {
        if let Err(err) = self.leases.release_lease(&job.task_id, self.holder).await {
            tracing::warn!(task_id = %job.task_id, error = %err, "lease release failed");
        }
    }
}

/// Removes the execution record of a task that ended.
async fn forget(executions: &dyn ExecutionStore, job: &WorkJob) {
    if let Err(err) = executions.delete_execution(&job.owner, &job.task_id).await {
        tracing::warn!(task_id = %job.task_id, error = %err, "could not remove the execution record");
    }
}

/// Queues `job` again for when its wait is due, when a queue can hold it that long (otherwise
/// the sweep of due executions finds it).
pub(crate) async fn rearm(work: &dyn WorkQueue, job: &WorkJob, due: Timestamp) {
    let wait =
        Duration::from_millis(u64::try_from(due.millis() - Timestamp::now().millis()).unwrap_or(0));
    if wait > MAX_QUEUE_DELAY {
        return;
    }
    let job = WorkJob {
        wake_at_ms: Some(due.millis()),
        ..job.clone()
    };
    if let Err(err) = work.enqueue_work_after(&job, wait).await {
        tracing::warn!(task_id = %job.task_id, error = %err, "could not queue the resumption; the sweep will");
    }
}

/// Where a parked execution stands after [`advance`].
pub(crate) enum Advanced {
    /// Its wait is over (or it has none): it resumes.
    Over(Box<DurableExecution>),
    /// It still waits, until at least this time.
    Waiting(Timestamp),
}

/// Moves a parked execution's wait on as far as time allows: a deadline passed ends it
/// ([`WaitOutcome::TimedOut`]), a timer's end ends it, a remote task due for a poll is polled
/// (its progress relayed; its stop ends the wait). Each change is written conditionally, so any
/// number of workers and sweeps may do this at once.
pub(crate) async fn advance(
    core: &Core,
    mut record: DurableExecution,
) -> Result<Advanced, StoreError> {
    loop {
        let Some(wait) = record.wait.clone() else {
            return Ok(Advanced::Over(Box::new(record)));
        };
        if wait.outcome.is_some() {
            return Ok(Advanced::Over(Box::new(record)));
        }
        let now = Timestamp::now();
        let mut next = wait.clone();
        if now >= wait.deadline {
            next.outcome = Some(WaitOutcome::TimedOut);
            next.due_at = now;
        } else if now < wait.due_at {
            return Ok(Advanced::Waiting(wait.due_at));
        } else {
            match &wait.what {
                WaitFor::Timer => {
                    next.outcome = Some(WaitOutcome::Done {
                        value: serde_json::Value::Null,
                    });
                    next.due_at = now;
                }
                WaitFor::Signal => next.due_at = wait.deadline,
                WaitFor::RemoteTask { poll_every_ms, .. } => {
                    let poll_again = Timestamp::from_millis(
                        now.millis()
                            .saturating_add(i64::try_from(*poll_every_ms).unwrap_or(i64::MAX)),
                    )
                    .min(wait.deadline);
                    next.due_at = poll_again;
                    let polled = poll(&core.log, &core.durable, &record, &wait.what).await;
                    if let Some((outcome, polled_by)) = polled {
                        next.outcome = Some(outcome);
                        next.due_at = now;
                        next.woken_by = polled_by;
                    }
                }
            }
        }
        let expected = record.version;
        let mut updated = record.clone();
        updated.wait = Some(next);
        updated.version = expected + 1;
        match save_wait(core, &mut updated, expected).await {
            Ok(()) => {
                if updated.wait.as_ref().is_some_and(|w| w.outcome.is_some()) {
                    return Ok(Advanced::Over(Box::new(updated)));
                }
                return Ok(Advanced::Waiting(updated.due_at().unwrap_or(now)));
            }
            Err(StoreError::Conflict) => {
                match core
                    .store
                    .load_execution(&record.owner, &record.task_id)
                    .await?
                {
                    Some(fresh) if fresh.trigger_seq == record.trigger_seq => record = fresh,
                    // Gone, or another execution's now: nothing of this one to move on.
                    _ => return Ok(Advanced::Waiting(Timestamp::from_millis(i64::MAX))),
                }
            }
            Err(err) => return Err(err),
        }
    }
}

/// Polls the remote task the wait `what` of `record`'s execution follows: its task as it
/// stands is taken as every update of it is ([`RemoteCall::on_update`]); returns the outcome
/// the wait ends with, if it ends, and the `traceparent` of the GetTask that read it.
async fn poll(
    log: &TaskLog,
    env: &DurableEnv,
    record: &DurableExecution,
    what: &WaitFor,
) -> Option<(WaitOutcome, Option<String>)> {
    let call = RemoteCall::of(what).filter(|c| !c.remote.task_id.is_empty())?;
    let traceparent = record.traceparent.as_deref();
    let (read, polled_by) = read_remote_task(env.remote.as_ref(), &call.remote, traceparent).await;
    let task = match read {
        Ok(task) => task,
        Err(err) => {
            tracing::warn!(task_id = %record.task_id, error = %err, "polling the remote task failed; it is polled again later");
            return None;
        }
    };
    let ours = Ours {
        log,
        env,
        owner: &record.owner,
        task_id: &record.task_id,
        traceparent,
    };
    let taken = call.on_update(&ours, &RemoteUpdate::Task(&task)).await;
    if let Some(err) = &taken.unrelayed {
        tracing::warn!(task_id = %record.task_id, error = ?err, "could not relay the remote task's progress");
    }
    Some((taken.verdict.outcome()?, polled_by))
}

/// Writes `updated`, a wait's new state, if the stored record's version is still `expected`.
/// A remote agent's answer that makes the record too large for the store (DynamoDB holds
/// 400 KB an item) is not kept: the wait ends with the call's failure saying so instead, so
/// that the call fails at once and clearly, rather than waiting on (a store error at every
/// poll) until its deadline cancels a remote task that had completed.
pub(crate) async fn save_wait(
    core: &Core,
    updated: &mut DurableExecution,
    expected: u64,
) -> Result<(), StoreError> {
    let why = match core.store.save_execution(updated, Some(expected)).await {
        Err(StoreError::TooLarge(why)) => why,
        other => return other,
    };
    let Some(wait) = updated.wait.as_mut() else {
        return Err(StoreError::TooLarge(why));
    };
    let agent = match (&wait.what, &wait.outcome) {
        (WaitFor::RemoteTask { remote, .. }, Some(WaitOutcome::Done { .. })) => {
            remote.agent.clone()
        }
        _ => return Err(StoreError::TooLarge(why)),
    };
    tracing::warn!(task_id = %updated.task_id, error = %why, "a remote agent's answer is too large to keep; the call fails saying so");
    core.config.observer.broken_execution();
    wait.outcome = Some(WaitOutcome::Done {
        value: crate::recorded::too_large_answer(&agent),
    });
    core.store.save_execution(updated, Some(expected)).await
}
