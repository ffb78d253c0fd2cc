//! Durable executions: agent work that outlives the process (or Lambda invocation) running it,
//! and waits that cost nothing while they wait.
//!
//! An execution records, in the store ([`DurableExecution`]), the result of each durable step
//! the agent takes through its emitter ([`Emitter::step`], [`Emitter::sleep`],
//! [`Emitter::wait_for_signal`], [`Emitter::call_agent`]) and how many events it emitted. A step
//! that must wait (a timer, a signal, another agent's task) *parks* the execution: the wait is
//! written to the store, the agent returns [`AgentError::Parked`] (propagated with `?`), and
//! nothing runs until the wait is over. Then a resume job on the work queue runs the agent again
//! from the top: recorded steps return their results at once, the events the earlier run wrote
//! are not written again, and the agent goes on from where it parked. Plain agents never touch
//! any of this: a run without durable steps writes no record.
//!
//! The same mechanism hands an inline execution over when its invocation must end (a blocking
//! send or a stream reaching its deadline on Lambda): the run stops, its record says how far it
//! got, and the worker replays it to its end.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use a2a_protocol::{Task, TaskState, Timestamp};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::MutexGuard;

use crate::agent_call::{decode_reply, signal_payload, AgentCall, AgentReply};
use crate::emitter::Emitter;
use crate::journal::{after, mark_stop, save_failure, DurableRun};
use crate::ports::{
    DurableExecution, RemoteTaskRef, StoreError, Wait, WaitFor, WaitOutcome, WorkJob,
};
use crate::recorded::{decode, failure_value, recorded_failure, too_large_answer};
use crate::relay::RemoteUpdate;
use crate::remote::cancel_remote_task;
use crate::remote_call::{RemoteCall, Verdict};
use crate::request::AgentError;
use crate::task_log::AppendError;

impl Emitter {
    /// Runs `work` once for this task's message, however often the execution is resumed: its
    /// result is recorded in the store, and a resumed run gets it back at once instead of
    /// running `work` again. `name` names the step (a resumed run must take the same steps in
    /// the same order). Use it around anything that must not happen twice or that a resumed run
    /// needs as it was (an answer from a model, a payment, a generated id).
    pub async fn step<T, F, Fut>(&self, name: &str, work: F) -> Result<T, AgentError>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, AgentError>>,
    {
        self.in_step.refuse("step", name)?;
        let index = {
            let mut run = self.begin_step().await?;
            let index = run.take_step();
            if let Some(value) = run.recorded(index, name)? {
                return decode(name, value);
            }
            index
        };
        let result = {
            let _step = self.in_step.enter(name);
            work().await
        };
        let value = match &result {
            Ok(value) => serde_json::to_value(value).map_err(|err| {
                AgentError::Failed(format!(
                    "The result of step {name:?} does not serialise: {err}"
                ))
            })?,
            Err(AgentError::Failed(reason)) => failure_value(reason),
            Err(other) => return Err(other.clone()),
        };
        // What the agent emitted before the step is written before the step is recorded: a
        // replay skips exactly what is in the log.
        self.written().await?;
        let mut run = self.durable_run().await;
        run.push_step(index, name, value);
        self.save(&mut run).await?;
        result
    }

    /// Waits `duration` with nothing running: the execution parks, and a resume job on the
    /// work queue runs it again once the time is up. Propagate the error with `?`: it is
    /// [`AgentError::Parked`] the first time, and the resumed run passes through.
    pub async fn sleep(&self, name: &str, duration: Duration) -> Result<(), AgentError> {
        self.in_step.refuse("sleep", name)?;
        let mut run = self.begin_step().await?;
        let index = run.take_step();
        if run.recorded(index, name)?.is_some() {
            return Ok(());
        }
        match run.wait_at(index).map(|w| w.outcome.clone()) {
            Some(Some(_)) => {
                run.push_step(index, name, Value::Null);
                self.save(&mut run).await?;
                Ok(())
            }
            Some(None) => Err(self.park(run).await),
            None => {
                let until = after(duration);
                Err(self.park_on(run, index, name, WaitFor::Timer, until).await)
            }
        }
    }

    /// Waits, with nothing running, for a signal sent to this task under `name`
    /// (`A2aService::signal`), at most `timeout`; returns its payload read as a `T` (a
    /// `serde_json::Value` takes any). Propagate the error with `?`: [`AgentError::Parked`]
    /// while it waits; once the timeout passes, [`AgentError::Failed`] saying so, as for a
    /// payload that is not a `T`.
    pub async fn wait_for_signal<T: DeserializeOwned>(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<T, AgentError> {
        self.in_step.refuse("wait_for_signal", name)?;
        let mut run = self.begin_step().await?;
        let index = run.take_step();
        if let Some(value) = run.recorded(index, name)? {
            return signal_payload(name, value);
        }
        match run.wait_at(index).map(|w| w.outcome.clone()) {
            Some(Some(outcome)) => {
                let value = match outcome {
                    WaitOutcome::Done { value } => value,
                    WaitOutcome::TimedOut => failure_value(&format!(
                        "No signal {name:?} came within {} s.",
                        timeout.as_secs()
                    )),
                };
                run.push_step(index, name, value.clone());
                self.save(&mut run).await?;
                signal_payload(name, value)
            }
            Some(None) => Err(self.park(run).await),
            None => {
                let deadline = after(timeout);
                Err(self
                    .park_on(run, index, name, WaitFor::Signal, deadline)
                    .await)
            }
        }
    }

    /// Sends a message to another A2A agent and waits, with nothing running, until its task
    /// stops (ends, or asks for input); returns how it stopped and that task ([`AgentReply`]). Its progress (WORKING statuses,
    /// artifacts and their chunks) is relayed into this task as it comes, so this task's
    /// clients see it live. The remote pushes its updates back to this server; a remote that
    /// does not push is polled. A second call under the same `name` in a later execution of
    /// this task (the client's follow-up) continues the same remote task: that is how the
    /// client's answer reaches a remote that asked for input. After `call.timeout` the remote
    /// task is canceled and the call answers [`crate::CallOutcome::TimedOut`]. Propagate the
    /// error with `?`: [`AgentError::Parked`] while it waits, [`AgentError::Failed`] when the
    /// call itself failed (the message could not be sent, the answer is too large to keep).
    ///
    /// This task must exist when the call is made (the remote's progress is relayed into it):
    /// emit a status first (`working`), as the reference agent's `delegate` does.
    pub async fn call_agent(&self, name: &str, call: AgentCall) -> Result<AgentReply, AgentError> {
        self.in_step.refuse("call_agent", name)?;
        // Boxed: an agent's future holds the future of each call it awaits, and this one is
        // kilobytes; unboxed, every agent that may call another (the reference agent's echo
        // too) would carry and copy them on each send.
        Box::pin(self.call_agent_now(name, call)).await
    }

    /// [`Self::call_agent`], unboxed. Its phases are [`RemoteCall`]'s: begun, its wait
    /// written, sent, the answer taken as every update of the remote is
    /// ([`RemoteCall::on_update`]), and, once the wait is over, settled.
    async fn call_agent_now(&self, name: &str, call: AgentCall) -> Result<AgentReply, AgentError> {
        self.written().await?;
        if self.state.lock().await.head.is_none() {
            return Err(AgentError::Failed(
                "call_agent needs its task to exist: the agent must emit a status (working) \
                 before it calls another agent"
                    .into(),
            ));
        }
        let mut run = self.begin_step().await?;
        let index = run.take_step();
        if let Some(value) = run.recorded(index, name)? {
            // A replay: the task is settled on the remote's answer from here on, as the run
            // that took the answer was.
            if let Ok(task) = serde_json::from_value::<Task>(value.clone()) {
                self.state.lock().await.settle_on(&task.artifacts);
            }
            return decode_reply(name, value);
        }
        if let Some(wait) = run.wait_at(index).cloned() {
            let Some(outcome) = wait.outcome else {
                return Err(self.park(run).await);
            };
            let Some(waited) = RemoteCall::of(&wait.what) else {
                return Err(AgentError::Failed(format!(
                    "The agent called {name:?} where the run it resumes waited for {:?}: an \
                     agent must take the same durable steps in the same order every time it runs.",
                    wait.name
                )));
            };
            let value = waited.settle(self, &mut run, name, outcome, &call).await;
            let value = self
                .record_answer(&mut run, index, name, value, &call.agent)
                .await?;
            return decode_reply(name, value);
        }
        let mut remote_call = RemoteCall::begin(self, &mut run, index, name, &call);
        // The wait is written before the message is sent, so that a push that comes back
        // before this run parks finds it.
        run.record_mut().wait = Some(remote_call.wait(index, name, after(call.timeout)));
        self.written().await?;
        run.record_mut().emitted = run.emits;
        self.save(&mut run).await?;
        let task = match remote_call.send(self, &mut run, index, name, &call).await {
            Ok(task) => task,
            Err(failure) => return self.record_failure(run, index, name, failure).await,
        };
        let taken = remote_call
            .on_update(&self.ours(&run), &RemoteUpdate::Task(&task))
            .await;
        if let Some(err) = taken.unrelayed {
            // Our task was canceled while the message was on its way: the cancel could not
            // know the remote's task yet, so it is canceled here. Our task ended any other way
            // only if the remote's own answer (a fast remote, a room) ended the wait and a
            // resumed run finished it: the remote is done, and a cancel would only confuse it.
            if matches!(&err, AppendError::Terminal(ours) if ours.status.state == TaskState::Canceled)
                && !task.status.state.is_terminal()
            {
                self.cancel_remote(&remote_call.remote, &run).await;
            }
            return Err(err.into());
        }
        match taken.verdict {
            // The remote answered more than we take: its task was canceled and the call fails
            // (recorded, so a replay fails the same way).
            Verdict::Refused(failure) => self.record_failure(run, index, name, failure).await,
            Verdict::Stopped(task) => self.record_stop(run, index, name, *task, &call).await,
            Verdict::Waits | Verdict::Unread(_) => Err(self.park_with(run, Some(index)).await),
        }
    }

    /// Records `task`, the remote's answer to the call `name` (step `index`, made as `call`)
    /// as it stopped, taken with the send's answer, and answers it.
    async fn record_stop(
        &self,
        mut run: MutexGuard<'_, DurableRun>,
        index: usize,
        name: &str,
        task: Task,
        call: &AgentCall,
    ) -> Result<AgentReply, AgentError> {
        mark_stop(&mut run, name, &task);
        let value = serde_json::to_value(&task).unwrap_or(Value::Null);
        run.push_step(index, name, value);
        self.save_after_send(&mut run, index, &call.agent).await?;
        // The answer may have been too large to keep: the call fails as its replay would.
        let step = run.record_mut().steps.get(index);
        if let Some(failure) = step.and_then(|s| recorded_failure(&s.value)) {
            return Err(failure);
        }
        self.state.lock().await.settle_on(&task.artifacts);
        Ok(task.into())
    }

    /// Records `value`, the failure of the call `name` (step `index`), and answers it.
    async fn record_failure(
        &self,
        mut run: MutexGuard<'_, DurableRun>,
        index: usize,
        name: &str,
        value: Value,
    ) -> Result<AgentReply, AgentError> {
        run.push_step(index, name, value.clone());
        self.save(&mut run).await?;
        decode_reply(name, value)
    }

    /// Saves the record of a call whose message went out. A conflict here is most often the
    /// remote's own push ending the wait before this run saved what the answer said (a fast
    /// remote pushes its answer before it answers the send): the stored record then holds the
    /// outcome (or the step, when the resumption that push queued already took it), and that
    /// resumption finishes the call (the remote task is known from the wait: see the `Done`
    /// arm of [`Self::call_agent`]). This run then stops quietly (`Parked`), writing nothing,
    /// instead of failing the task.
    ///
    /// A step recorded at `index` (the answer of the agent at `agent`) that makes the record
    /// too large for the store is recorded as the call's failure instead.
    async fn save_after_send(
        &self,
        run: &mut DurableRun,
        index: usize,
        agent: &str,
    ) -> Result<(), AgentError> {
        let mut saved = self.try_save(run).await;
        let too_large = match &saved {
            Err(StoreError::TooLarge(why)) => Some(why.clone()),
            _ => None,
        };
        if let Some(why) = too_large {
            if let Some(step) = run.record_mut().steps.get_mut(index) {
                step.value = too_large_answer(agent);
                self.answer_too_large(&why);
                saved = self.try_save(run).await;
            }
        }
        match saved {
            Err(StoreError::Conflict) => {}
            Ok(()) => return Ok(()),
            Err(err) => return Err(save_failure(run, err)),
        }
        let stored = match self.load_record().await {
            Ok(stored) => stored,
            Err(err) => return Err(run.interrupt(err)),
        };
        let taken_over = stored.is_some_and(|r| {
            r.steps.len() > index
                || r.wait
                    .as_ref()
                    .is_some_and(|w| w.step == index && w.outcome.is_some())
        });
        if !taken_over {
            return Err(save_failure(run, StoreError::Conflict));
        }
        run.parked = true;
        tracing::info!(task_id = %self.task_id(), "the remote's push ended the wait first; its resumption goes on");
        Err(AgentError::Parked)
    }

    /// Records `value`, the answer of the call `name` (step `index`) to the agent at `agent`,
    /// and returns what was recorded: an answer too large for the store to keep is recorded
    /// as the call's failure saying so.
    async fn record_answer(
        &self,
        run: &mut DurableRun,
        index: usize,
        name: &str,
        value: Value,
        agent: &str,
    ) -> Result<Value, AgentError> {
        run.push_step(index, name, value.clone());
        match self.try_save(run).await {
            Ok(()) => return Ok(value),
            Err(StoreError::TooLarge(why)) => self.answer_too_large(&why),
            Err(err) => return Err(save_failure(run, err)),
        }
        let value = too_large_answer(agent);
        run.push_step(index, name, value.clone());
        self.save(run).await?;
        Ok(value)
    }

    /// Says that a remote agent's answer is not kept, being too large (`why`, the store's
    /// words: sizes, never content).
    fn answer_too_large(&self, why: &str) {
        tracing::warn!(task_id = %self.task_id(), error = %why, "a remote agent's answer is too large to keep; the call fails saying so");
        self.env.observer.broken_execution();
    }

    /// The durable state, loaded for a fresh run's first step: the record of an earlier
    /// execution of this task passes on its remote tasks; a record of this very execution is
    /// replayed (a redelivered job that took steps before).
    async fn begin_step(&self) -> Result<MutexGuard<'_, DurableRun>, AgentError> {
        let mut run = self.durable_run().await;
        if run.parked {
            return Err(AgentError::Parked);
        }
        // What an earlier execution of this task passes on to a new record.
        let mut remotes = BTreeMap::new();
        if !run.loaded {
            run.loaded = true;
            let found = match self.load_record().await {
                Ok(found) => found,
                Err(err) => {
                    // Read again by the next attempt of the run.
                    run.loaded = false;
                    return Err(run.interrupt(err));
                }
            };
            run.stored = found.as_ref().map(|r| r.version);
            match found {
                Some(record) if record.trigger_seq == run.trigger_seq => run.record = Some(record),
                earlier => remotes = earlier.map(|r| r.remotes).unwrap_or_default(),
            }
        }
        if run.record.is_none() {
            run.record = Some(DurableExecution {
                owner: self.owner.clone(),
                task_id: self.task_id().to_owned(),
                trigger_seq: run.trigger_seq,
                steps: Vec::new(),
                emitted: 0,
                wait: None,
                remotes,
                traceparent: run.traceparent.clone(),
                version: 0,
                expires_at: self.env.expiry(),
            });
        }
        Ok(run)
    }

    /// The stored record of this task's execution, read again after a failure of the store's
    /// backend (a read may be repeated; see [`crate::task_log::with_store_retries`]).
    async fn load_record(&self) -> Result<Option<DurableExecution>, StoreError> {
        crate::task_log::with_store_retries("an execution record's read", self.task_id(), || {
            self.env.store.load_execution(&self.owner, self.task_id())
        })
        .await
    }

    /// Writes the run's record, conditionally on the version it last saw.
    async fn save(&self, run: &mut DurableRun) -> Result<(), AgentError> {
        match self.try_save(run).await {
            Ok(()) => Ok(()),
            Err(err) => Err(save_failure(run, err)),
        }
    }

    /// [`Self::save`], with the store's error as it is.
    async fn try_save(&self, run: &mut DurableRun) -> Result<(), StoreError> {
        let expected = run.stored;
        let record = run.record_mut();
        record.version = expected.map_or(1, |v| v + 1);
        record.expires_at = self.env.expiry();
        let record = record.clone();
        // Made again, the same record, after a failure of the backend: the store tells a
        // repeat of a save that landed (the same version and content) from another writer's.
        crate::task_log::with_store_retries("an execution record's save", self.task_id(), || {
            self.env.store.save_execution(&record, expected)
        })
        .await?;
        run.stored = Some(record.version);
        Ok(())
    }

    /// Parks the run: what it emitted is written, its record (with its wait) is saved, and a
    /// resume job is queued for when the wait is due. Returns the error the agent propagates.
    async fn park(&self, run: MutexGuard<'_, DurableRun>) -> AgentError {
        self.park_with(run, None).await
    }

    /// Parks `run` on a new wait of step `index` (`name`) for `what`, due and ending at
    /// `deadline`.
    async fn park_on(
        &self,
        mut run: MutexGuard<'_, DurableRun>,
        index: usize,
        name: &str,
        what: WaitFor,
        deadline: Timestamp,
    ) -> AgentError {
        run.record_mut().wait = Some(Wait {
            step: index,
            name: name.to_owned(),
            what,
            due_at: deadline,
            deadline,
            outcome: None,
            woken_by: None,
        });
        self.park(run).await
    }

    /// [`Self::park`]; for a call to another agent whose message went out, `sent` (its step)
    /// lets a push that ended the wait first win ([`Self::save_after_send`]).
    async fn park_with(
        &self,
        mut run: MutexGuard<'_, DurableRun>,
        sent: Option<usize>,
    ) -> AgentError {
        if let Err(err) = self.written().await {
            return err;
        }
        let emitted = run.emits;
        run.record_mut().emitted = emitted;
        let saved = match sent {
            Some(index) => {
                let agent = match run.record.as_ref().and_then(|r| r.wait.as_ref()) {
                    Some(Wait {
                        what: WaitFor::RemoteTask { remote, .. },
                        ..
                    }) => remote.agent.clone(),
                    _ => String::new(),
                };
                self.save_after_send(&mut run, index, &agent).await
            }
            None => self.save(&mut run).await,
        };
        if let Err(err) = saved {
            return err;
        }
        run.parked = true;
        let due = run.record.as_ref().and_then(DurableExecution::due_at);
        let job = WorkJob::resume(&self.owner, self.task_id(), run.trigger_seq)
            .traced(run.traceparent.clone());
        drop(run);
        if let Some(due) = due {
            crate::worker::rearm(self.env.work.as_ref(), &job, due).await;
        }
        tracing::info!(task_id = %self.task_id(), "the execution parked on a durable wait");
        AgentError::Parked
    }

    /// Hands the run over to the worker: what it emitted is written, its record says how far
    /// it got, and a resume job replays it. For an inline execution whose invocation must end
    /// before the agent does (on Lambda nothing may run after the response).
    pub(crate) async fn hand_over(&self) -> Result<(), AgentError> {
        self.written().await?;
        let mut run = match self.begin_step().await {
            Ok(run) => run,
            Err(AgentError::Parked) => return Ok(()),
            Err(err) => return Err(err),
        };
        let emitted = run.emits;
        run.record_mut().emitted = emitted;
        self.save(&mut run).await?;
        run.parked = true;
        let job = WorkJob::resume(&self.owner, self.task_id(), run.trigger_seq)
            .traced(run.traceparent.clone());
        drop(run);
        self.env
            .work
            .enqueue_work(&job)
            .await
            .map_err(crate::task_log::store_unavailable)?;
        tracing::info!(task_id = %self.task_id(), "the execution was handed over to the worker");
        Ok(())
    }

    /// Asks a remote agent to cancel its task, as best it can.
    pub(crate) async fn cancel_remote(&self, remote: &RemoteTaskRef, run: &DurableRun) {
        if remote.task_id.is_empty() {
            return;
        }
        let agents = self.env.remote.as_ref();
        if let Err(err) = cancel_remote_task(agents, remote, run.traceparent.as_deref()).await {
            tracing::warn!(task_id = %self.task_id(), remote = %remote.task_id, error = %err, "could not cancel the remote task");
        }
    }

    /// The durable side of the run, locked ([`crate::emitter::lock_now`]).
    pub(crate) async fn durable_run(&self) -> MutexGuard<'_, DurableRun> {
        crate::emitter::lock_now(&self.durable).await
    }

    /// Whether this run replays `emit`'s event (written by the run before) or has parked: such
    /// an emit is not written.
    pub(crate) async fn skips_emit(&self) -> bool {
        self.durable_run().await.replayed_emit()
    }

    /// Removes the execution's record once its task ended, if it has one.
    pub(crate) async fn forget_if_ended(&self) {
        let has_record = self.durable_run().await.has_record();
        if !has_record {
            return;
        }
        let ended = self.state.lock().await.task_ended();
        if ended {
            if let Err(err) = self
                .env
                .store
                .delete_execution(&self.owner, self.task_id())
                .await
            {
                tracing::warn!(task_id = %self.task_id(), error = %err, "could not remove the execution record");
            }
        }
    }
}
