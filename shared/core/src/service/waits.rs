//! What ends the waits of parked executions: signals, the pushes of the remote agents they wait
//! for, the sweep of due waits, and the end of their task (a cancel reaches the remote).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a_protocol::{A2AError, StreamResponse, Task, Timestamp};
use futures::StreamExt as _;
use serde_json::Value;

use super::A2aService;
use crate::journal::relay_owner;
use crate::ports::{
    constant_time_eq, DueExecution, DurableExecution, Owner, StoreError, Wait, WaitFor,
    WaitOutcome, WorkJob,
};
use crate::relay::RemoteUpdate;
use crate::remote::{cancel_remote_task, NamedCall, RemoteError};
use crate::remote_call::{Ours, RemoteCall, Verdict};
use crate::task_log::store_error;
use crate::worker::{advance, rearm, save_wait, Advanced};

/// How many times a wait's outcome is written again after losing to a concurrent write.
const SAVE_TRIES: usize = 5;

/// How many due executions one sweep moves on at once (each may poll a remote agent).
pub(crate) const SWEEP_CONCURRENCY: usize = 8;

/// How long one sweep of due executions waits for them to move on: within the minute between
/// two sweeps, and past the remote agents client's timeout of one request (30 s).
pub(crate) const SWEEP_PASS_DEADLINE: Duration = Duration::from_secs(45);

/// A relayed push whose token holds ([`A2aService::authenticate_relay_push`]), before its
/// body is read.
#[derive(Debug)]
pub struct RelayPush {
    owner: Owner,
    task_id: String,
    /// The call it is about, as the wait follows it; for a late push, the remote task an
    /// earlier call worked with (and the push's token).
    call: RemoteCall,
    /// Whether it is for the remote task the execution waits for now (else: a late push).
    current: bool,
    traceparent: Option<String>,
    /// The URLs the push may have come to, as the remote was given it: the audiences its
    /// signature may bear (the relay base's first).
    audiences: Vec<String>,
}

/// What the relay route answers a push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayAnswer {
    /// Taken: relayed, or a late push dropped (200).
    Taken,
    /// Its token holds, and no wait of ours follows that remote task any more: the sender
    /// may stop pushing (410 Gone).
    Gone,
    /// Not proven to be for one of our waits: no token, a wrong one, a signature that does not
    /// verify (401). The same answer whether or not the task exists or waits.
    Refused,
}

/// What [`A2aService::authenticate_relay_push`] makes of a push's address and token.
#[derive(Debug)]
pub enum RelayCheck {
    /// The token holds for a wait, or a remote task, of ours: read the body and take it.
    Push(Box<RelayPush>),
    /// Answered at once, the body unread.
    Answer(RelayAnswer),
}

/// Why a task whose parked execution's record no longer reads ended.
pub(crate) const BROKEN_EXECUTION_REASON: &str =
    "The work of this task was waiting, and its saved state can no longer be read (it was \
     written by another version of this server, or damaged); it cannot go on.";

impl A2aService {
    /// Sends the signal `name` with `value` to the owner's task: a durable execution parked on
    /// `Emitter::wait_for_signal(name, …)` resumes with it. Returns whether a wait took it
    /// (`false`: the task waits for no such signal now, and nothing changed).
    pub async fn signal(
        &self,
        owner: &Owner,
        task_id: &str,
        name: &str,
        value: Value,
    ) -> Result<bool, StoreError> {
        let accepts = |record: &DurableExecution| {
            record.wait.as_ref().is_some_and(|w| {
                w.outcome.is_none() && w.name == name && matches!(w.what, WaitFor::Signal)
            })
        };
        self.end_wait(owner, task_id, accepts, WaitOutcome::Done { value })
            .await
    }

    /// A push from a remote agent whose task one of ours waits for, as the relay route got it
    /// (`RELAY_PATH/{task_id}`, or `RELAY_PATH/{task_id}/{owner}` as waits parked before the
    /// upgrade gave it out: `owner_segment`; the push config's token in `token`, the push's
    /// `A2A-Push-Signature` in `signature` if it has one): [`Self::authenticate_relay_push`],
    /// then [`Self::take_relay_push`].
    pub async fn relay_push(
        &self,
        task_id: &str,
        owner_segment: Option<&str>,
        token: &str,
        signature: Option<&str>,
        body: &[u8],
    ) -> Result<RelayAnswer, A2AError> {
        match self
            .authenticate_relay_push(task_id, owner_segment, token)
            .await?
        {
            RelayCheck::Push(push) => self.take_relay_push(*push, signature, body).await,
            RelayCheck::Answer(answer) => Ok(answer),
        }
    }

    /// Whether `token` proves a push to `RELAY_PATH/{task_id}` is for one of our waits: the
    /// token of the remote task the execution waits for, or of a remote task it worked with
    /// before (a late push). The token is checked first, against the task's [`crate::ports::RelayGate`]
    /// (one small read, whoever asks): a wrong one is [`RelayAnswer::Refused`] whether or not
    /// the task exists or waits, and nothing else is read. Only then is the execution's
    /// record read (whole: it holds remote answers), from the owner the gate names: a token
    /// that no wait or remote task of it holds any more, or no record at all (our task ended),
    /// is [`RelayAnswer::Gone`]. Nothing of the push's body is needed for this, so the route
    /// reads it only once the token holds.
    ///
    /// A wait parked before the upgrade gave its remote the previous form of the URL, which
    /// names the owner (`owner_segment`), and may have no gate yet (its record's next save
    /// writes one): its token is then checked against the record of that owner's task, read
    /// whole as before, and every refusal is [`RelayAnswer::Refused`] alike.
    pub async fn authenticate_relay_push(
        &self,
        task_id: &str,
        owner_segment: Option<&str>,
        token: &str,
    ) -> Result<RelayCheck, A2AError> {
        let refused = Ok(RelayCheck::Answer(RelayAnswer::Refused));
        let store = &self.core.store;
        let gate = store.load_relay_gate(task_id).await.map_err(store_error)?;
        let (owner, gated) = match (gate, owner_segment) {
            (Some(gate), _) if gate.admits(token) => (gate.owner, true),
            (Some(_), _) | (None, None) => return refused,
            (None, Some(segment)) => match relay_owner(segment) {
                Some(owner) => (owner, false),
                None => return refused,
            },
        };
        let gone = if gated {
            RelayAnswer::Gone
        } else {
            RelayAnswer::Refused
        };
        let Some(record) = store
            .load_execution(&owner, task_id)
            .await
            .map_err(store_error)?
        else {
            return Ok(RelayCheck::Answer(gone));
        };
        let waiting = record
            .wait
            .as_ref()
            .filter(|w| w.outcome.is_none())
            .and_then(|w| RemoteCall::of(&w.what));
        let (call, current) = match waiting {
            Some(call) if constant_time_eq(call.token.as_bytes(), token.as_bytes()) => (call, true),
            _ => {
                // A remote this task worked with before, pushing on after its call returned.
                let known = record.remotes.values().find(|r| {
                    r.push_token
                        .as_deref()
                        .is_some_and(|t| constant_time_eq(t.as_bytes(), token.as_bytes()))
                });
                match known {
                    Some(remote) => {
                        let call = RemoteCall {
                            remote: remote.clone(),
                            token: token.to_owned(),
                            poll_every_ms: 0,
                        };
                        (call, false)
                    }
                    None => return Ok(RelayCheck::Answer(gone)),
                }
            }
        };
        let audiences = self.core.durable.relay_audiences(task_id, owner_segment);
        Ok(RelayCheck::Push(Box::new(RelayPush {
            owner,
            task_id: task_id.to_owned(),
            call,
            current,
            traceparent: record.traceparent,
            audiences,
        })))
    }

    /// Takes a push [`Self::authenticate_relay_push`] let through, with its body: its progress
    /// is relayed into our task; if it says the remote task stopped, the wait is over and the
    /// execution resumes. An agent like us also signs its pushes: a signature that is there
    /// must verify against the remote agent's keys (`RemoteAgents::verify_push`), or the push
    /// is refused and nothing changes; keys that cannot be fetched now are an error worth a
    /// retry. A push for a remote task our task no longer waits for is late (the call has the
    /// remote's task as it stopped): taken and dropped.
    pub async fn take_relay_push(
        &self,
        push: RelayPush,
        signature: Option<&str>,
        body: &[u8],
    ) -> Result<RelayAnswer, A2AError> {
        let RelayPush {
            owner,
            task_id,
            call,
            current,
            traceparent,
            audiences,
        } = push;
        let task_id = task_id.as_str();
        // The token proves the push is for this wait; an agent like us also signs it, and a
        // signature that is there must hold (it binds the body and the sender).
        if let Some(signature) = signature {
            match self
                .core
                .durable
                .remote
                .verify_push(&call.remote.agent, &audiences, signature, body)
                .await
            {
                Ok(()) => {}
                Err(RemoteError::Unavailable(why)) => {
                    tracing::warn!(task_id, error = %why, "a relayed push's signature cannot be checked now");
                    return Err(A2AError::Internal(format!(
                        "the push's signature cannot be checked now: {why}"
                    )));
                }
                Err(err) => {
                    tracing::warn!(task_id, error = %err, "a relayed push's signature does not verify");
                    return Ok(RelayAnswer::Refused);
                }
            }
        }
        let update = parse_push(body)?;
        if !current {
            // The call it answered has returned with the remote's task as it stopped (a
            // snapshot that holds everything before it): a push that comes later is from before
            // that stop, and relaying it would add a chunk twice. Taken, and dropped.
            return Ok(RelayAnswer::Taken);
        }
        // A chunk of this push written after the call ended (delivered twice, the copy slow)
        // is put right by the resumed run's writes, which settle the task on the remote's
        // answer (`TaskLog::append_settling`).
        self.take_remote_update(&owner, task_id, &call, &update, traceparent.as_deref())
            .await
            .map(|_| RelayAnswer::Taken)
    }

    /// An `update` about the remote task `named` names, which the adapter that made the call
    /// named from its key (a chat room's task: the room cannot name its own, nor be asked later
    /// how it stands). The answer's source is the credential: the update counts only if our
    /// task waits for exactly this task of exactly this agent. Returns whether it was taken; anything else (a
    /// task that waits for nothing or for another agent, a late word on a call that returned)
    /// changes nothing and is `false`.
    pub async fn relay_named(
        &self,
        named: &NamedCall,
        update: &StreamResponse,
    ) -> Result<bool, A2AError> {
        let Some((owner, record)) = self.named_record(named).await? else {
            return Ok(false);
        };
        let waiting = record
            .wait
            .as_ref()
            .filter(|w| w.outcome.is_none())
            .filter(|w| named.is_waited_by(w))
            .and_then(|w| RemoteCall::of(&w.what));
        let Some(call) = waiting else {
            return Ok(false);
        };
        let traceparent = record.traceparent.as_deref();
        self.take_remote_update(&owner, &named.key.task_id, &call, update, traceparent)
            .await
    }

    /// Whether a call of this deployment made the task `named` names: our task waits, or
    /// waited, for it. A chat that shows the bridge its own `[A2A:task]` is then not taken as
    /// work for us, while the same kind of id from another deployment is.
    pub async fn made_named_call(&self, named: &NamedCall) -> Result<bool, A2AError> {
        let Some((_, record)) = self.named_record(named).await? else {
            return Ok(false);
        };
        Ok(record.wait.iter().any(|w| named.is_waited_by(w))
            || record
                .remotes
                .values()
                .any(|r| r.agent == named.agent && r.task_id == named.task_id))
    }

    /// The owner of the task `named` waits in (the one it names, else the one our store's
    /// [`crate::ports::RelayGate`] of the task names), and its durable record: `None` when the
    /// task is not ours or has no execution.
    async fn named_record(
        &self,
        named: &NamedCall,
    ) -> Result<Option<(Owner, DurableExecution)>, A2AError> {
        let store = &self.core.store;
        let task_id = &named.key.task_id;
        let owner = match &named.owner {
            Some(owner) => owner.clone(),
            None => match store.load_relay_gate(task_id).await.map_err(store_error)? {
                Some(gate) => gate.owner,
                None => return Ok(None),
            },
        };
        let record = store
            .load_execution(&owner, task_id)
            .await
            .map_err(store_error)?;
        Ok(record.map(|record| (owner, record)))
    }

    /// Relays `update` of the remote task `waited` follows into the owner's task `task_id`
    /// ([`RemoteCall::on_update`]); when it says the remote task stopped, ends the wait and
    /// queues the resumption (`traceparent`: the execution's, for the remote's GetTask). A
    /// remote that stopped and cannot be read now is polled now (the sweep reads its task),
    /// and the pusher is told to try again.
    async fn take_remote_update(
        &self,
        owner: &Owner,
        task_id: &str,
        waited: &RemoteCall,
        update: &StreamResponse,
        traceparent: Option<&str>,
    ) -> Result<bool, A2AError> {
        let (remote_task, relayed) = match update {
            StreamResponse::Task(task) => (&task.id, RemoteUpdate::Task(task)),
            StreamResponse::StatusUpdate(u) => (&u.task_id, RemoteUpdate::Status(u)),
            StreamResponse::ArtifactUpdate(u) => (&u.task_id, RemoteUpdate::Artifact(u)),
            StreamResponse::Message(_) => return Ok(true),
        };
        let follows = &waited.remote.task_id;
        if !follows.is_empty() && !remote_task.is_empty() && remote_task != follows {
            return Err(A2AError::invalid_params(
                "the push is about another task than the one this wait follows",
            ));
        }
        let ours = Ours {
            log: &self.core.log,
            env: &self.core.durable,
            owner,
            task_id,
            traceparent,
        };
        let taken = waited.on_update(&ours, &relayed).await;
        if let Some(err) = &taken.unrelayed {
            tracing::warn!(task_id, error = ?err, "could not relay a remote push");
        }
        if let Verdict::Unread(why) = &taken.verdict {
            tracing::warn!(task_id, error = %why, "a remote task stopped and cannot be read now; it is polled");
            self.poll_now(owner, task_id, &waited.token)
                .await
                .map_err(store_error)?;
            return Err(A2AError::Internal(format!(
                "the remote task stopped, and cannot be read now: {why}"
            )));
        }
        let Some(outcome) = taken.verdict.outcome() else {
            return Ok(true);
        };
        let token = waited.token.clone();
        let accepts = move |record: &DurableExecution| {
            record.wait.as_ref().is_some_and(|w| {
                w.outcome.is_none()
                    && matches!(&w.what, WaitFor::RemoteTask { token: t, .. } if *t == token)
            })
        };
        self.end_wait(owner, task_id, accepts, outcome)
            .await
            .map(|_| true)
            .map_err(store_error)
    }

    /// Moves on up to `limit` parked executions whose wait is due: deadlines passed end their
    /// waits, timers that ran out end theirs, remote tasks due for a poll are polled; an
    /// execution whose wait is over gets its resume job (again, if one was lost). Returns how
    /// many executions it resumed. Hosts call it on a schedule (the worker function's, the
    /// local server's sweep loop); safe anywhere, any number of times at once.
    ///
    /// One execution that fails does not hold up the others behind it: a store failure is
    /// logged and that execution is tried again by the next sweep; a record that does not read
    /// (an upgrade's, or damaged) would fail every sweep, so its task ends FAILED and the
    /// record goes (counted by [`crate::Observer::broken_execution`]). Nor does one that is
    /// slow: up to `SWEEP_CONCURRENCY` move on at once (a poll of a remote agent that is
    /// slow to answer holds one of them, not the pass), and the pass stops waiting at
    /// `SWEEP_PASS_DEADLINE`: what is still moving then is dropped (nothing half-written: a
    /// poll writes only once its answer is in, conditionally) and tried again by the next
    /// sweep. Only a failure to list the due waits is an error.
    pub async fn sweep_due_executions(&self, limit: usize) -> Result<usize, StoreError> {
        self.sweep_due_executions_within(limit, SWEEP_PASS_DEADLINE)
            .await
    }

    /// [`Self::sweep_due_executions`], with a deadline of `deadline` for the pass.
    pub async fn sweep_due_executions_within(
        &self,
        limit: usize,
        deadline: Duration,
    ) -> Result<usize, StoreError> {
        let due = self
            .core
            .store
            .list_due_executions(Timestamp::now(), limit)
            .await?;
        let resumed = AtomicUsize::new(0);
        let pass = futures::stream::iter(due).for_each_concurrent(SWEEP_CONCURRENCY, |entry| {
            let resumed = &resumed;
            async move {
                match self.sweep_due_execution(&entry).await {
                    Ok(true) => {
                        resumed.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(false) => {}
                    Err(StoreError::Unreadable(why)) => {
                        self.end_broken_execution(&entry.owner, &entry.task_id, &why)
                            .await;
                    }
                    Err(err) => {
                        tracing::warn!(task_id = %entry.task_id, error = %err, "could not move a due execution on; the next sweep tries again");
                    }
                }
            }
        });
        if tokio::time::timeout(deadline, pass).await.is_err() {
            tracing::warn!(
                deadline_secs = deadline.as_secs_f64(),
                "the sweep of due executions reached its deadline; what is still moving is tried again by the next"
            );
        }
        Ok(resumed.into_inner())
    }

    /// [`Self::sweep_due_executions`] for one execution: whether it resumed. An entry whose
    /// record is gone, or waits for another time (an entry a lost answer left behind), is
    /// forgotten: the record's own entry, if it has one, brings it back when it is due.
    async fn sweep_due_execution(&self, entry: &DueExecution) -> Result<bool, StoreError> {
        let store = &self.core.store;
        let record = store.load_execution(&entry.owner, &entry.task_id).await?;
        let Some(record) = record.filter(|r| r.due_at() == Some(entry.due_at)) else {
            store.forget_due_entry(entry).await?;
            return Ok(false);
        };
        let job = WorkJob::resume(&record.owner, &record.task_id, record.trigger_seq)
            .traced(record.traceparent.clone());
        match advance(&self.core, record).await? {
            Advanced::Over(_) => {
                self.core.work.enqueue_work(&job).await?;
                Ok(true)
            }
            // Moved on (polled): the job that follows the wait is queued for its new due
            // time; one queued for the old one finds it moved and ends.
            Advanced::Waiting(next) => {
                rearm(self.core.work.as_ref(), &job, next).await;
                Ok(false)
            }
        }
    }

    /// A parked execution whose record does not read: nothing can resume it, so its task ends
    /// FAILED saying so, and the record (with its due entry) goes, so that it is not first in
    /// the due list again at every sweep. `why` names what does not read, never its content.
    async fn end_broken_execution(&self, owner: &Owner, task_id: &str, why: &str) {
        tracing::error!(task_id, error = %why, "a parked execution's record does not read; its task ends FAILED");
        self.core.config.observer.broken_execution();
        match self.core.store.load_task(owner, task_id).await {
            Ok(Some(head)) if !head.task.status.state.is_terminal() => {
                if let Err(err) = self
                    .core
                    .log
                    .finish_failed(owner, head, BROKEN_EXECUTION_REASON)
                    .await
                {
                    tracing::warn!(task_id, error = ?err, "could not end the task of a broken execution");
                }
            }
            Ok(_) => {}
            Err(err) => {
                tracing::warn!(task_id, error = %err, "could not read the task of a broken execution");
            }
        }
        if let Err(err) = self.core.store.delete_execution(owner, task_id).await {
            tracing::warn!(task_id, error = %err, "could not remove a broken execution record");
        }
    }

    /// The end of our task (canceled): the remote tasks it works with (the one its execution
    /// waits for, and those an earlier execution left waiting for input) are canceled too, and
    /// the execution's record is removed.
    pub(super) async fn end_durable_work(&self, owner: &Owner, task_id: &str) {
        let record = match self.core.store.load_execution(owner, task_id).await {
            Ok(Some(record)) => record,
            Ok(None) => return,
            Err(err) => {
                tracing::warn!(task_id, error = %err, "could not read the execution record");
                return;
            }
        };
        let waiting = record.wait.as_ref().and_then(|w| match &w.what {
            WaitFor::RemoteTask { remote, .. } if w.outcome.is_none() => Some(remote.clone()),
            _ => None,
        });
        let mut remotes: Vec<_> = waiting.into_iter().collect();
        for remote in record.remotes.values() {
            if !remotes.contains(remote) {
                remotes.push(remote.clone());
            }
        }
        // One that ended already answers TaskNotCancelable, which the adapter takes as done.
        for remote in remotes.into_iter().filter(|r| !r.task_id.is_empty()) {
            let agents = self.core.durable.remote.as_ref();
            let traceparent = record.traceparent.as_deref();
            if let Err(err) = cancel_remote_task(agents, &remote, traceparent).await {
                tracing::warn!(task_id, remote = %remote.task_id, error = %err, "could not cancel the remote task");
            }
        }
        if let Err(err) = self.core.store.delete_execution(owner, task_id).await {
            tracing::warn!(task_id, error = %err, "could not remove the execution record");
        }
    }

    /// Makes the open wait with `token` of the owner's task due now: the next sweep polls
    /// the remote task it follows.
    async fn poll_now(&self, owner: &Owner, task_id: &str, token: &str) -> Result<(), StoreError> {
        let open = |record: &DurableExecution| {
            record.wait.as_ref().is_some_and(|w| {
                w.outcome.is_none()
                    && w.due_at > Timestamp::now()
                    && matches!(&w.what, WaitFor::RemoteTask { token: t, .. } if t == token)
            })
        };
        self.change_wait(owner, task_id, open, |wait| wait.due_at = Timestamp::now())
            .await
            .map(drop)
    }

    /// Ends the wait of the owner's task with `outcome` if `accepts` its record, and queues the
    /// resumption. `false` if no wait took it.
    async fn end_wait(
        &self,
        owner: &Owner,
        task_id: &str,
        accepts: impl Fn(&DurableExecution) -> bool,
        outcome: WaitOutcome,
    ) -> Result<bool, StoreError> {
        // What ended the wait (a push's relay, a signal's operation), when spans are
        // exported: the resumption's span links to it, whichever job resumes it.
        let woken_by = crate::trace::traceparent_of(&tracing::Span::current());
        let end = |wait: &mut Wait| {
            wait.outcome = Some(outcome.clone());
            wait.due_at = Timestamp::now();
            wait.woken_by.clone_from(&woken_by);
        };
        let Some(updated) = self.change_wait(owner, task_id, accepts, end).await? else {
            return Ok(false);
        };
        let woken_by = woken_by.or(updated.traceparent);
        let job = WorkJob::resume(owner, task_id, updated.trigger_seq).traced(woken_by);
        // If this enqueue is lost, the sweep finds the wait due and queues it.
        if let Err(err) = self.core.work.enqueue_work(&job).await {
            tracing::warn!(task_id, error = %err, "could not queue the resumption; the sweep will");
        }
        Ok(true)
    }

    /// Applies `change` to the wait of the owner's task if `accepts` its record, written
    /// conditionally on the version read (read again and tried again after losing to another
    /// write). Returns the record as written; `None` if there is none, or `accepts` refused it.
    async fn change_wait(
        &self,
        owner: &Owner,
        task_id: &str,
        accepts: impl Fn(&DurableExecution) -> bool,
        change: impl Fn(&mut Wait),
    ) -> Result<Option<DurableExecution>, StoreError> {
        for _ in 0..SAVE_TRIES {
            let Some(record) = self.core.store.load_execution(owner, task_id).await? else {
                return Ok(None);
            };
            if !accepts(&record) {
                return Ok(None);
            }
            let expected = record.version;
            let mut updated = record;
            updated.version = expected + 1;
            if let Some(wait) = updated.wait.as_mut() {
                change(wait);
            }
            match save_wait(&self.core, &mut updated, expected).await {
                Ok(()) => return Ok(Some(updated)),
                Err(StoreError::Conflict) => {}
                Err(err) => return Err(err),
            }
        }
        Err(StoreError::Backend(
            "too many concurrent writers on one execution record".into(),
        ))
    }
}

/// A remote agent's push body: one A2A 1.0 `StreamResponse`, or a bare 1.0 Task (what some
/// SDKs push). Pushes of older versions are refused; their tasks are polled instead.
fn parse_push(body: &[u8]) -> Result<StreamResponse, A2AError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|err| A2AError::ParseError(format!("the push is not JSON: {err}")))?;
    let is_update = ["task", "message", "statusUpdate", "artifactUpdate"]
        .iter()
        .any(|member| value.get(member).is_some());
    if is_update {
        return serde_json::from_value::<StreamResponse>(value).map_err(|err| {
            A2AError::invalid_params(format!("the push is not an A2A task update: {err}"))
        });
    }
    serde_json::from_value::<Task>(value)
        .ok()
        .filter(|task| !task.id.is_empty())
        .map(StreamResponse::Task)
        .ok_or_else(|| A2AError::invalid_params("the push is not an A2A task update"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_of_every_version_read_as_updates() {
        let status = br#"{"statusUpdate":{"taskId":"r1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}"#;
        assert!(matches!(
            parse_push(status),
            Ok(StreamResponse::StatusUpdate(_))
        ));
        let task = br#"{"id":"r1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}"#;
        assert!(
            matches!(parse_push(task), Ok(StreamResponse::Task(t)) if t.status.state == a2a_protocol::TaskState::Completed)
        );
        assert!(parse_push(b"not json").is_err());
        assert!(parse_push(br#"{"hello":1}"#).is_err());
    }
}
