//! One call to another agent, as the wait of a durable execution follows it: the remote task it
//! follows, the token its pushes carry back, and how often it is polled ([`RemoteCall`]); its
//! phases (begun from the execution's record, sent, settled once the wait is over); and the one
//! place where an update of the remote's task, whichever road brought it (the send's answer, a
//! push, a poll), is relayed into our task and decides whether the wait ends
//! ([`RemoteCall::on_update`]).

use a2a_protocol::Task;
use serde_json::Value;

use crate::agent_call::{timed_out_value, AgentCall};
use crate::emitter::Emitter;
use crate::journal::{mark_stop, remember_pushed, DurableEnv, DurableRun};
use crate::ports::{Owner, RemoteTaskRef, WaitFor, WaitOutcome};
use crate::recorded::{failure_value, recorded_failure};
use crate::relay::{relay, stopped_anew, too_large_reason, Chunks, Relayed, RemoteUpdate};
use crate::remote::{cancel_remote_task, read_remote_task, RemoteError};
use crate::task_log::{AppendError, TaskLog};

mod send;

/// A call to another agent as its wait follows it ([`WaitFor::RemoteTask`]).
#[derive(Debug, Clone)]
pub(crate) struct RemoteCall {
    /// The remote task (its id empty until the remote names it).
    pub(crate) remote: RemoteTaskRef,
    /// The secret the remote's pushes carry back: proves a push is for this wait.
    pub(crate) token: String,
    /// How long between two polls of the remote task.
    pub(crate) poll_every_ms: u64,
}

/// Our task, where a remote's updates go, and what relaying them needs.
pub(crate) struct Ours<'a> {
    pub(crate) log: &'a TaskLog,
    pub(crate) env: &'a DurableEnv,
    pub(crate) owner: &'a Owner,
    pub(crate) task_id: &'a str,
    /// The execution's, for the calls to the remote.
    pub(crate) traceparent: Option<&'a str>,
}

/// What an update of the remote's task means for the wait that follows it.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// The remote works on: the wait goes on.
    Waits,
    /// The remote task stopped (ended, or asks for input): the wait ends with its task as it
    /// stopped.
    Stopped(Box<Task>),
    /// The remote answered past our relay limits: its task was canceled, and the call fails
    /// with this recorded value.
    Refused(Value),
    /// The remote says it stopped, and its task as it stopped cannot be read now (why): only
    /// that task says what its artifacts are, so the wait stays open and is polled.
    Unread(String),
}

impl Verdict {
    /// The outcome the wait ends with, if it ends.
    pub(crate) fn outcome(&self) -> Option<WaitOutcome> {
        match self {
            Verdict::Stopped(task) => Some(WaitOutcome::Done {
                value: serde_json::to_value(task).unwrap_or(Value::Null),
            }),
            Verdict::Refused(value) => Some(WaitOutcome::Done {
                value: value.clone(),
            }),
            Verdict::Waits | Verdict::Unread(_) => None,
        }
    }
}

/// What [`RemoteCall::on_update`] made of an update.
#[derive(Debug)]
pub(crate) struct Taken {
    pub(crate) verdict: Verdict,
    /// Why the update could not be relayed into our task, if it could not (our task ended, the
    /// store failed): the send's road answers it, the others go on without it.
    pub(crate) unrelayed: Option<AppendError>,
}

impl RemoteCall {
    /// The call a wait follows, if it follows one.
    pub(crate) fn of(what: &WaitFor) -> Option<Self> {
        match what {
            WaitFor::RemoteTask {
                remote,
                token,
                poll_every_ms,
            } => Some(Self {
                remote: remote.clone(),
                token: token.clone(),
                poll_every_ms: *poll_every_ms,
            }),
            _ => None,
        }
    }

    /// The wait following this call.
    pub(crate) fn wait_for(&self) -> WaitFor {
        WaitFor::RemoteTask {
            remote: self.remote.clone(),
            token: self.token.clone(),
            poll_every_ms: self.poll_every_ms,
        }
    }

    /// Relays `update` of the remote's task into ours, and says whether the wait ends: the one
    /// road of every update, whether the send's answer, a push or a poll brought it. A chunk
    /// that does not continue our copy of its artifact (its start not come yet, or come twice)
    /// is placed by the remote's task as it stands (read, and relayed as a snapshot); a status
    /// that says the remote stopped is followed by its task as it stopped, which settles our
    /// artifacts (its chunks as pushed may be out of order, twice, or lost).
    pub(crate) async fn on_update(&self, ours: &Ours<'_>, update: &RemoteUpdate<'_>) -> Taken {
        let mut unrelayed = match self.relay_placed(ours, update).await {
            Ok(()) => None,
            Err(AppendError::TooLarge(why)) => return self.refuse(ours, update, &why).await,
            Err(err) => Some(err),
        };
        let stopped = match update {
            RemoteUpdate::Task(task) => Some((*task).clone()),
            RemoteUpdate::Status(u) => Some(Task {
                id: u.task_id.clone(),
                context_id: u.context_id.clone(),
                status: u.status.clone(),
                ..Task::default()
            }),
            RemoteUpdate::Artifact(_) => None,
        };
        let Some(mut task) = stopped.filter(|t| stopped_anew(t, &self.remote)) else {
            return Taken {
                verdict: Verdict::Waits,
                unrelayed,
            };
        };
        if !matches!(update, RemoteUpdate::Task(_)) {
            match read_remote_task(ours.env.remote.as_ref(), &self.remote, ours.traceparent)
                .await
                .0
            {
                Ok(full) if full.id == task.id && stopped_anew(&full, &self.remote) => {
                    let settled = RemoteUpdate::Task(&full);
                    match relay_into(ours, &settled, Chunks::Placed).await {
                        Ok(_) => {}
                        Err(AppendError::TooLarge(why)) => {
                            return self.refuse(ours, &settled, &why).await
                        }
                        Err(err) => unrelayed = Some(err),
                    }
                    task = full;
                }
                Ok(_) => {}
                Err(RemoteError::Unavailable(why)) => {
                    return Taken {
                        verdict: Verdict::Unread(why),
                        unrelayed,
                    }
                }
                Err(err) => {
                    tracing::warn!(task_id = ours.task_id, error = %err, "could not read a remote task as it stopped");
                }
            }
        }
        Taken {
            verdict: Verdict::Stopped(Box::new(task)),
            unrelayed,
        }
    }

    /// Relays `update`; a chunk [`relay`] cannot place is placed by the remote's task as it
    /// stands, or, when that task cannot be read or does not have its artifact (a room's
    /// cannot be read), taken as it comes.
    async fn relay_placed(
        &self,
        ours: &Ours<'_>,
        update: &RemoteUpdate<'_>,
    ) -> Result<(), AppendError> {
        if relay_into(ours, update, Chunks::Placed).await? == Relayed::Done {
            return Ok(());
        }
        let RemoteUpdate::Artifact(chunk) = update else {
            return Ok(());
        };
        let mut remote = self.remote.clone();
        if remote.task_id.is_empty() {
            remote.task_id.clone_from(&chunk.task_id);
        }
        match read_remote_task(ours.env.remote.as_ref(), &remote, ours.traceparent)
            .await
            .0
        {
            Ok(task)
                if task.id == remote.task_id
                    && task
                        .artifacts
                        .iter()
                        .any(|a| a.artifact_id == chunk.artifact.artifact_id) =>
            {
                relay_into(ours, &RemoteUpdate::Task(&task), Chunks::Placed).await?;
            }
            read => {
                if let Err(err) = read {
                    tracing::warn!(task_id = ours.task_id, error = %err, "could not read a remote task to place its chunk; taken as it came");
                }
                relay_into(ours, update, Chunks::AsTheyCome).await?;
            }
        }
        Ok(())
    }

    /// The remote answered more than we take (`why`): its task is canceled (unless `update`
    /// shows it ended), and the call fails saying so.
    async fn refuse(&self, ours: &Ours<'_>, update: &RemoteUpdate<'_>, why: &str) -> Taken {
        tracing::warn!(task_id = ours.task_id, remote = %self.remote.task_id, why, "a remote task answered past the relay limits");
        let ended = matches!(update, RemoteUpdate::Task(t) if t.status.state.is_terminal());
        if !self.remote.task_id.is_empty() && !ended {
            let agents = ours.env.remote.as_ref();
            if let Err(err) = cancel_remote_task(agents, &self.remote, ours.traceparent).await {
                tracing::warn!(task_id = ours.task_id, remote = %self.remote.task_id, error = %err, "could not cancel the remote task");
            }
        }
        Taken {
            verdict: Verdict::Refused(failure_value(&too_large_reason(&self.remote.agent, why))),
            unrelayed: None,
        }
    }

    /// The value the call `name` (made as `call`) is recorded with, now that its wait is over
    /// with `outcome`. A remote that stopped: the record learns its task (if a push ended the
    /// wait before the send recorded it) and its stop, and its task as it stopped settles ours
    /// once more (a push taken while the wait was ending may have changed an artifact after the
    /// stop was relayed; later pushes are dropped). A deadline passed: the remote task is
    /// canceled.
    pub(crate) async fn settle(
        &self,
        em: &Emitter,
        run: &mut DurableRun,
        name: &str,
        outcome: WaitOutcome,
        call: &AgentCall,
    ) -> Value {
        let mut value = match outcome {
            WaitOutcome::Done { value } => value,
            WaitOutcome::TimedOut => {
                em.cancel_remote(&self.remote, run).await;
                return timed_out_value(&format!(
                    "The agent at {} did not finish within {} s; its task was canceled.",
                    call.agent,
                    call.timeout.as_secs()
                ));
            }
        };
        // A failure in its place (the answer was too large to keep) is no task.
        let answer = recorded_failure(&value)
            .is_none()
            .then(|| serde_json::from_value::<Task>(value.clone()).ok())
            .flatten();
        let Some(task) = answer else {
            return value;
        };
        remember_pushed(run, name, &self.wait_for(), &task);
        mark_stop(run, name, &task);
        let ours = em.ours(run);
        match relay_into(&ours, &RemoteUpdate::Task(&task), Chunks::Placed).await {
            Ok(_) => {}
            // Past the limits: the call fails, its answer is not kept.
            Err(AppendError::TooLarge(why)) => {
                value = failure_value(&too_large_reason(&call.agent, &why));
            }
            Err(err) => {
                tracing::warn!(task_id = %em.task_id(), error = ?err, "could not settle the remote task's artifacts");
            }
        }
        if recorded_failure(&value).is_none() {
            crate::emitter::lock_now(&em.state)
                .await
                .settle_on(&task.artifacts);
        }
        value
    }
}

/// [`relay`] into `ours`.
async fn relay_into(
    ours: &Ours<'_>,
    update: &RemoteUpdate<'_>,
    chunks: Chunks,
) -> Result<Relayed, AppendError> {
    let limits = &ours.env.relay_limits;
    relay(ours.log, limits, ours.owner, ours.task_id, update, chunks).await
}

impl Emitter {
    /// This run's task, as a remote's updates reach it.
    pub(crate) fn ours<'a>(&'a self, run: &'a DurableRun) -> Ours<'a> {
        Ours {
            log: &self.log,
            env: &self.env,
            owner: &self.owner,
            task_id: self.task_id(),
            traceparent: run.traceparent.as_deref(),
        }
    }
}
