//! The work-job handler: runs the agent for a queued message, once at a time per task.

use std::sync::Arc;
use std::time::Duration;

use crate::emitter::lease_until;
use crate::event::TaskEvent;
use crate::execution::{new_emitter, run_agent};
use crate::kernel::Core;
use crate::ports::{JobOutcome, WorkJob};
use crate::request::AgentRequest;
use crate::task_log::AppendError;

/// Runs `job`; returns what to do with it and the number of the attempt it made (0 when it
/// made none: nothing to do, or the lease was not ours to take).
pub(crate) async fn run_work_job(
    core: &Arc<Core>,
    job: &WorkJob,
    receive_count: u32,
) -> (JobOutcome, u32) {
    let store = &core.store;
    let retry = |reason: String| JobOutcome::Retry {
        reason,
        after: Duration::from_secs(5),
    };
    let head = match store.load_task(&job.owner, &job.task_id).await {
        Ok(Some(head)) => head,
        Ok(None) => return (JobOutcome::Done, 0),
        Err(err) => return (retry(format!("store: {err}")), 0),
    };
    if head.task.status.state.is_terminal() {
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
        release(core, job).await;
        return (outcome, attempt);
    }
    let trigger = match store
        .read_events(
            &job.owner,
            &job.task_id,
            job.trigger_seq.saturating_sub(1),
            1,
        )
        .await
    {
        Ok(events) => events.into_iter().find(|e| e.seq == job.trigger_seq),
        Err(err) => {
            release(core, job).await;
            return (retry(format!("store: {err}")), attempt);
        }
    };
    let (message, previous) = match trigger.map(|e| e.event) {
        Some(TaskEvent::Created { task }) => (task.history.last().cloned(), None),
        Some(TaskEvent::UserMessage { message }) => (Some(message), Some(head.task.clone())),
        _ => (None, None),
    };
    let Some(message) = message else {
        tracing::error!(task_id = %job.task_id, seq = job.trigger_seq, "work job points at no message");
        release(core, job).await;
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
    let (emitter, _first) = new_emitter(&core.log, &job.owner, request, Some(head), None);
    // Renew the lease while the agent runs, so a long job is not taken over by a redelivery.
    let (holder, lease) = (&core.config.worker_id, core.config.lease_duration);
    crate::jobs::while_running(
        run_agent(core.agent.clone(), emitter.clone()),
        lease / 3,
        || async move {
            let until = lease_until(lease);
            if let Err(err) = store.acquire_lease(&job.task_id, holder, until).await {
                tracing::warn!(task_id = %job.task_id, error = %err, "lease renewal failed");
            }
        },
    )
    .await;
    // A task that ended needs its lease no more: nothing runs on a terminal task, and a
    // redelivered job finds it terminal before it asks for the lease. Left to expire, the
    // lease costs nothing; giving it back would cost a write. A task that stopped to wait for
    // its client (input required) gets it back, so that the next message can run at once.
    let ended = emitter
        .state
        .lock()
        .await
        .head
        .as_ref()
        .is_some_and(|h| h.task.status.state.is_terminal());
    if !ended {
        release(core, job).await;
    }
    (JobOutcome::Done, attempt)
}

/// Gives the task's lease back (and with it the job's attempt count: the job is settled).
async fn release(core: &Core, job: &WorkJob) {
    if let Err(err) = core
        .store
        .release_lease(&job.task_id, &core.config.worker_id)
        .await
    {
        tracing::warn!(task_id = %job.task_id, error = %err, "lease release failed");
    }
}
