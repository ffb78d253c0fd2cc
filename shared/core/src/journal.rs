//! The journal of a durable execution, as one run of the agent holds it: what the run it
//! replays recorded ([`DurableRun`]), and what durable steps need of the service
//! ([`DurableEnv`]). The steps themselves are in `durable`.

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol::{Task, Timestamp};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::Value;

use crate::ports::{
    DurableExecution, ExecutionStore, Owner, RemoteTaskRef, StepRecord, StoreError, Wait, WaitFor,
    WorkQueue,
};
use crate::relay::status_mark;
use crate::remote::RemoteAgents;
use crate::request::AgentError;

/// The longest delay a work queue takes for a delayed job (SQS's 15 minutes); a wait due later
/// is found by the sweep of due executions instead.
pub(crate) const MAX_QUEUE_DELAY: Duration = Duration::from_secs(900);

/// The route a remote agent's pushes for one of our waits come back to, under the REST base.
pub const RELAY_PATH: &str = "/a2a-relay";

/// What durable executions need of the service: the execution records (the one store port
/// they use), the work queue, other agents.
pub(crate) struct DurableEnv {
    pub(crate) store: Arc<dyn ExecutionStore>,
    pub(crate) work: Arc<dyn WorkQueue>,
    pub(crate) remote: Arc<dyn RemoteAgents>,
    /// The base URL remote agents push back to (`…/a2a-relay/…`); `None`: they are polled.
    pub(crate) relay_base: Option<String>,
    /// The REST base URL: relay URLs under it (handed out before [`Self::relay_base`] named
    /// another door) are still taken.
    pub(crate) rest_base: Option<String>,
    /// How long records are kept (with their tasks).
    pub(crate) retention: Duration,
    /// How often a remote task is polled while its pushes do not come.
    pub(crate) remote_poll: Duration,
    /// How large a remote's answer may make our task.
    pub(crate) relay_limits: crate::relay::RelayLimits,
    /// The service's observer (for [`crate::Observer::broken_execution`]).
    pub(crate) observer: Arc<dyn crate::Observer>,
}

impl DurableEnv {
    /// Where the pushes for a wait of task `task_id` go: `{base}/a2a-relay/{task_id}`. Nothing
    /// in it names the task's owner (the other agent is a third party): the relay route finds
    /// the owner in our own store ([`crate::ports::RelayGate`]).
    pub(crate) fn relay_url(&self, task_id: &str) -> Option<String> {
        let base = self.relay_base.as_deref()?;
        Some(format!(
            "{}{RELAY_PATH}/{task_id}",
            base.trim_end_matches('/')
        ))
    }

    /// Every URL a push for task `task_id` (of the previous form, with `owner_segment`) may
    /// have been sent to, as its remote was given it: under the relay base, then under the
    /// REST base when that differs (URLs handed out before the relay route got a door of its
    /// own). Each is ours and names the task: the audiences its signature may bear.
    pub(crate) fn relay_audiences(
        &self,
        task_id: &str,
        owner_segment: Option<&str>,
    ) -> Vec<String> {
        let mut audiences = Vec::new();
        for base in [&self.relay_base, &self.rest_base].into_iter().flatten() {
            let mut url = format!("{}{RELAY_PATH}/{task_id}", base.trim_end_matches('/'));
            if let Some(segment) = owner_segment {
                url = format!("{url}/{segment}");
            }
            if !audiences.contains(&url) {
                audiences.push(url);
            }
        }
        audiences
    }

    pub(crate) fn expiry(&self) -> Timestamp {
        after(self.retention)
    }
}

/// The owner a relay URL of the previous form names in its last segment (base64url).
pub(crate) fn relay_owner(segment: &str) -> Option<Owner> {
    let bytes = URL_SAFE_NO_PAD.decode(segment).ok()?;
    String::from_utf8(bytes).ok().map(Owner)
}

/// `now` plus `duration`.
pub(crate) fn after(duration: Duration) -> Timestamp {
    Timestamp::from_millis(
        Timestamp::now()
            .millis()
            .saturating_add(i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)),
    )
}

/// The durable side of one run of the agent, shared by the clones of its emitter.
pub(crate) struct DurableRun {
    /// The log position of the message the run acts on.
    pub(crate) trigger_seq: u64,
    /// The `traceparent` of the work.
    pub(crate) traceparent: Option<String>,
    /// The record as last read or written; `None` until the run's first durable step.
    pub(crate) record: Option<DurableExecution>,
    /// The version of the stored record (`None`: none stored).
    pub(crate) stored: Option<u64>,
    /// Whether the store was read for this run yet (a fresh run reads at its first step).
    pub(crate) loaded: bool,
    /// The index of the next durable step.
    pub(crate) next_step: usize,
    /// The events emitted so far in this run, the replayed ones included.
    pub(crate) emits: u64,
    /// How many of the first emits the run replays (the run before it wrote them).
    pub(crate) skip: u64,
    /// The run parked: it stops, and nothing it would still emit is written.
    pub(crate) parked: bool,
    /// The run is a work job's, which its queue hands out again when it ends in
    /// [`crate::ports::JobOutcome::Retry`]: a store failure in a durable step stops it
    /// ([`Self::interrupt`]) instead of failing its task.
    pub(crate) by_job: bool,
    /// The run stopped on a store failure in a durable step; its job runs it again, replaying
    /// what its record holds.
    pub(crate) interrupted: bool,
}

impl DurableRun {
    /// A fresh run of the message at `trigger_seq`.
    pub(crate) fn fresh(trigger_seq: u64, traceparent: Option<String>) -> Self {
        Self {
            trigger_seq,
            traceparent,
            record: None,
            stored: None,
            loaded: false,
            next_step: 0,
            emits: 0,
            skip: 0,
            parked: false,
            by_job: false,
            interrupted: false,
        }
    }

    /// A run that replays `record` (a resumption, or a redelivered job).
    pub(crate) fn replaying(record: DurableExecution) -> Self {
        Self {
            trigger_seq: record.trigger_seq,
            traceparent: record.traceparent.clone(),
            skip: record.emitted,
            stored: Some(record.version),
            record: Some(record),
            loaded: true,
            next_step: 0,
            emits: 0,
            parked: false,
            by_job: false,
            interrupted: false,
        }
    }

    /// This run, as a work job's (see [`Self::by_job`]).
    pub(crate) fn for_job(self) -> Self {
        Self {
            by_job: true,
            ..self
        }
    }

    /// What a durable step does when the store fails (`err`, after the SDK's retries): when
    /// the backend failed (it may not, the next time) in a work job's run, the run stops as if
    /// parked (nothing it would still emit is written) and its job is retried, replaying the
    /// record, so that a burst of throttling does not fail a task a later attempt completes.
    /// Any other run, or a failure that would come again (an item too large, unreadable), ends
    /// its task FAILED, saying the store was unavailable (its internals go to the log).
    pub(crate) fn interrupt(&mut self, err: StoreError) -> AgentError {
        if !self.by_job || !matches!(err, StoreError::Backend(_)) {
            return crate::task_log::store_unavailable(err);
        }
        tracing::warn!(%err, "the task store failed in a durable step; the job runs again");
        self.parked = true;
        self.interrupted = true;
        AgentError::Parked
    }

    /// Whether the run stopped on a store failure, for its job to run it again.
    pub(crate) fn is_interrupted(&self) -> bool {
        self.interrupted
    }

    /// Counts an emit: `true` if the run it replays wrote it already (it is not written again),
    /// or if the run parked (nothing after the park is written).
    pub(crate) fn replayed_emit(&mut self) -> bool {
        self.emits += 1;
        self.parked || self.emits <= self.skip
    }

    /// Whether the run parked (or was handed over): it stopped, and its task waits for the
    /// resumed run.
    pub(crate) fn is_parked(&self) -> bool {
        self.parked
    }

    /// Whether this run has (or had) a record in the store.
    pub(crate) fn has_record(&self) -> bool {
        self.stored.is_some()
    }

    pub(crate) fn take_step(&mut self) -> usize {
        let index = self.next_step;
        self.next_step += 1;
        index
    }

    pub(crate) fn record_mut(&mut self) -> &mut DurableExecution {
        self.record
            .as_mut()
            .expect("a durable step loads or creates the record first")
    }

    /// The recorded result of step `index`, if the run it replays took it; an error if that run
    /// took another step there (the agent is not deterministic between durable steps).
    pub(crate) fn recorded(&self, index: usize, name: &str) -> Result<Option<Value>, AgentError> {
        let Some(step) = self.record.as_ref().and_then(|r| r.steps.get(index)) else {
            return Ok(None);
        };
        if step.name != name {
            return Err(AgentError::Failed(format!(
                "The agent took step {name:?} where the run it resumes took {:?}: an agent must \
                 take the same durable steps in the same order every time it runs.",
                step.name
            )));
        }
        Ok(Some(step.value.clone()))
    }

    /// The wait of step `index`, if the record has one.
    pub(crate) fn wait_at(&self, index: usize) -> Option<&Wait> {
        self.record
            .as_ref()
            .and_then(|r| r.wait.as_ref())
            .filter(|w| w.step == index)
    }

    pub(crate) fn push_step(&mut self, index: usize, name: &str, value: Value) {
        let emitted = self.emits;
        let record = self.record_mut();
        record.steps.truncate(index);
        record.steps.push(StepRecord {
            name: name.to_owned(),
            value,
        });
        record.emitted = emitted;
        if record.wait.as_ref().is_some_and(|w| w.step == index) {
            record.wait = None;
        }
    }
}

/// A wait that a push ended before the run that sent the message recorded the remote's
/// answer: the record does not know the remote task yet (its wait names none, or only the id
/// the port named it with). The pushed task is that task, and it pushes to us with the wait's
/// token (a poll needs the task's id, and a task the port names cannot be polled, so only a
/// push can have ended such a wait). Once the answer is recorded, the record knows the task,
/// with whether it pushes.
pub(crate) fn remember_pushed(run: &mut DurableRun, name: &str, what: &WaitFor, task: &Task) {
    let WaitFor::RemoteTask { remote, token, .. } = what else {
        return;
    };
    let this_task = remote.task_id.is_empty() || remote.task_id == task.id;
    if !this_task || task.id.is_empty() {
        return;
    }
    let remotes = &mut run.record_mut().remotes;
    if remotes.get(name).is_some_and(|r| r.task_id == task.id) {
        return;
    }
    remotes.insert(
        name.to_owned(),
        RemoteTaskRef {
            agent: remote.agent.clone(),
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            stopped_at: None,
            push_token: Some(token.clone()),
        },
    );
}

/// Remembers the status a remote task stopped in when it asks for input, so that the call
/// continuing it does not take a snapshot from before its message for a new stop.
pub(crate) fn mark_stop(run: &mut DurableRun, name: &str, task: &Task) {
    if let Some(remote) = run.record_mut().remotes.get_mut(name) {
        remote.stopped_at = task
            .status
            .state
            .is_interrupted()
            .then(|| status_mark(task))
            .flatten();
    }
}

/// A failed save of the record: a conflict means another run of this execution went on.
/// A record that changed under this run (another run of the execution went on, or a push or a
/// deadline ended its wait and queued the resumption) stops this run quietly: whoever wrote it
/// carries the task on, and ending the task FAILED here would end their work too.
/// Any other failure is the store's ([`DurableRun::interrupt`]).
pub(crate) fn save_failure(run: &mut DurableRun, err: StoreError) -> AgentError {
    match err {
        StoreError::Conflict => AgentError::Parked,
        err => run.interrupt(err),
    }
}
