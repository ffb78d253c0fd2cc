//! Running the agent: one execution per client message, inline (in this process) or from the
//! work queue, and what makes sure its task does not stay active when it stops.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use a2a_protocol::TaskPushNotificationConfig;
use tokio::sync::oneshot;

use crate::agent::Agent;
use crate::emitter::{Emitter, EmitterState, FirstOutcome};
use crate::ports::{Owner, StoredTask};
use crate::request::{AgentError, AgentRequest};
use crate::task_log::TaskLog;

/// An emitter for `request` on `log`, and the receiver of how the agent's first report resolved
/// it (a task, or a direct message). `head` is the task as it stands, if it exists already.
pub(crate) fn new_emitter(
    log: &Arc<TaskLog>,
    owner: &Owner,
    request: AgentRequest,
    head: Option<StoredTask>,
    inline_push: Option<TaskPushNotificationConfig>,
) -> (Emitter, oneshot::Receiver<FirstOutcome>) {
    let (tx, rx) = oneshot::channel();
    let emitter = Emitter {
        log: log.clone(),
        owner: owner.clone(),
        request: Arc::new(request),
        state: Arc::new(tokio::sync::Mutex::new(EmitterState {
            head,
            first: Some(tx),
            replied: false,
            pending: Vec::new(),
            superseded: false,
        })),
        inline_push,
    };
    (emitter, rx)
}

/// The inline executions running in this process, so a graceful shutdown can end their tasks
/// instead of leaving them WORKING. Only a courtesy: correctness never depends on it.
#[derive(Default)]
pub(crate) struct Executions {
    running: Mutex<HashSet<(Owner, String)>>,
}

impl Executions {
    fn lock(&self) -> MutexGuard<'_, HashSet<(Owner, String)>> {
        // A poisoned set only means a panic elsewhere while it was held; its content is still
        // valid.
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs an inline execution to its end, registered while it runs.
    pub(crate) async fn run_inline(&self, agent: Arc<dyn Agent>, emitter: Emitter) {
        let key = (emitter.owner.clone(), emitter.task_id().to_string());
        self.lock().insert(key.clone());
        run_agent(agent, emitter).await;
        self.lock().remove(&key);
    }

    /// Takes every registered execution out of the set.
    pub(crate) fn drain(&self) -> Vec<(Owner, String)> {
        self.lock().drain().collect()
    }
}

/// Runs the agent to its end and makes sure the task does not stay active when it stops: an
/// error fails the task; returning without a final state fails it too (no task stays WORKING).
pub(crate) async fn run_agent(agent: Arc<dyn Agent>, emitter: Emitter) {
    let request = (*emitter.request).clone();
    let handle = tokio::spawn({
        let emitter = emitter.clone();
        async move { agent.execute(request, emitter).await }
    });
    let result = match handle.await {
        Ok(result) => result,
        Err(join) => {
            tracing::error!(task_id = %emitter.task_id(), error = %join, "the agent panicked");
            Err(AgentError::Failed("The agent failed unexpectedly.".into()))
        }
    };
    let (replied, state) = {
        let state = emitter.state.lock().await;
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
        (Err(AgentError::TaskEnded(_)), _) => return,
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
    if let Err(err) = emitter.fail(&reason).await {
        tracing::warn!(task_id = %emitter.task_id(), error = %err, "could not mark the task failed");
    }
}
