//! The first phases of a [`RemoteCall`]: begun from the execution's record, its wait, and
//! the message sent.

use std::time::Duration;

use a2a_protocol::{
    Message, Role, SendMessageResponse, Task, TaskPushNotificationConfig, TaskState, TaskStatus,
    Timestamp,
};
use serde_json::Value;
use tracing::Instrument as _;

use super::RemoteCall;
use crate::agent_call::AgentCall;
use crate::emitter::Emitter;
use crate::journal::{after, DurableRun};
use crate::ports::{RemoteTaskRef, Wait};
use crate::recorded::failure_value;
use crate::remote::{client_span, send_retried, CallKey, SEND_WINDOW};

/// How much less often a remote task that pushes its updates is polled than one that does not.
const PUSHED_POLL_FACTOR: u64 = 10;

impl RemoteCall {
    /// The call `name` (step `index`) of `em`'s run is about to make to `call.agent`: it
    /// continues the remote task an earlier execution's call of that name left (with that
    /// task's push token: its push config stands), or starts one, named here if the port names
    /// the task itself ([`crate::RemoteAgents::names_task`]: a room's, so that the room's
    /// answers and our cancel find it while the message is on its way).
    pub(crate) fn begin(
        em: &Emitter,
        run: &mut DurableRun,
        index: usize,
        name: &str,
        call: &AgentCall,
    ) -> Self {
        let continued = run.record_mut().remotes.get(name).cloned();
        let mut remote = continued.unwrap_or_else(|| RemoteTaskRef {
            agent: call.agent.clone(),
            task_id: String::new(),
            context_id: String::new(),
            stopped_at: None,
            push_token: None,
        });
        remote.agent = call.agent.clone();
        if remote.task_id.is_empty() {
            let key = CallKey::new(em.task_id(), run.trigger_seq, index);
            remote.task_id = em
                .env
                .remote
                .names_task(&call.agent, &key)
                .unwrap_or_default();
        }
        let poll = em.env.remote_poll;
        Self {
            token: remote.push_token.clone().unwrap_or_else(crate::new_id),
            remote,
            poll_every_ms: u64::try_from(poll.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// The wait of step `index` (`name`) on this call, written before the message is sent so
    /// that a push that comes back before the run parks finds it; it ends at `deadline`.
    pub(crate) fn wait(&self, index: usize, name: &str, deadline: Timestamp) -> Wait {
        let poll = Duration::from_millis(self.poll_every_ms);
        Wait {
            step: index,
            name: name.to_owned(),
            what: self.wait_for(),
            // Not due before the send has had its time (its attempts and their pauses): a
            // sweep would otherwise resume the wait while this run's message is still out.
            due_at: after(poll.max(SEND_WINDOW)).min(deadline),
            deadline,
            outcome: None,
            woken_by: None,
        }
    }

    /// Sends `call`'s message (step `index` of `em`'s run, as the call `name`) with a push
    /// config back to us (none when the remote task keeps one of this task), and returns the
    /// remote's answer as a task (a direct message answer: completed with it). The call then
    /// follows the remote's task; a task that pushes is polled ten times less often. `Err`: the
    /// call's failure, to record.
    pub(crate) async fn send(
        &mut self,
        em: &Emitter,
        run: &mut DurableRun,
        index: usize,
        name: &str,
        call: &AgentCall,
    ) -> Result<Task, Value> {
        let kept = self.remote.push_token.is_some();
        let mut message = call.message.clone();
        message.role = Role::User;
        // Derived from this task, the message and the step: a send repeated after a crash is
        // the same message to the remote (idempotent there, as it is here).
        message.message_id = uuid::Uuid::new_v5(
            &uuid::Uuid::NAMESPACE_OID,
            format!("{}/{}/{index}", em.task_id(), run.trigger_seq).as_bytes(),
        )
        .to_string();
        message.task_id = self.remote.task_id.clone();
        message.context_id = self.remote.context_id.clone();
        // A remote task that pushes to us keeps its config: a second would double every update.
        let push = em.env.relay_url(em.task_id()).filter(|_| !kept).map(|url| {
            TaskPushNotificationConfig {
                url,
                token: self.token.clone(),
                ..TaskPushNotificationConfig::default()
            }
        });
        let (span, traceparent) =
            client_span("SendMessage", &call.agent, "", run.traceparent.as_deref());
        span.record("a2a.message.id", message.message_id.as_str());
        let key = CallKey::new(em.task_id(), run.trigger_seq, index);
        let sent = send_retried(
            em.env.remote.as_ref(),
            &call.agent,
            &key,
            &message,
            push.as_ref(),
            traceparent.as_deref(),
        )
        .instrument(span.clone())
        .await
        .inspect(|sent| {
            if let SendMessageResponse::Task(task) = &sent.answer {
                crate::trace::record_task(&span, task);
            }
        })
        .inspect_err(|_| {
            span.record("otel.status_code", "ERROR");
        })
        .map_err(|err| {
            failure_value(&format!(
                "Calling the agent at {} failed: {err}",
                call.agent
            ))
        })?;
        let pushes = sent.pushes || kept;
        let task = match sent.answer {
            SendMessageResponse::Message(reply) => direct_reply_task(&reply),
            SendMessageResponse::Task(task) => {
                // The first poll is due from now, the message taken; with pushes the poll is
                // only the safety net.
                if let Some(wait) = run.record_mut().wait.as_mut() {
                    if pushes {
                        self.poll_every_ms = self.poll_every_ms.saturating_mul(PUSHED_POLL_FACTOR);
                    }
                    let poll = Duration::from_millis(self.poll_every_ms);
                    wait.due_at = after(poll).min(wait.deadline);
                }
                task
            }
        };
        self.remote.task_id.clone_from(&task.id);
        self.remote.context_id.clone_from(&task.context_id);
        self.remote.push_token = (pushes && !task.id.is_empty()).then(|| self.token.clone());
        if !task.id.is_empty() {
            run.record_mut()
                .remotes
                .insert(name.to_owned(), self.remote.clone());
        }
        if let Some(wait) = run.record_mut().wait.as_mut() {
            wait.what = self.wait_for();
        }
        Ok(task)
    }
}

/// The task a remote's direct message answer stands for: completed, with the message.
fn direct_reply_task(reply: &Message) -> Task {
    Task {
        id: String::new(),
        context_id: reply.context_id.clone(),
        status: TaskStatus {
            state: TaskState::Completed,
            message: Some(reply.clone()),
            timestamp: Some(Timestamp::now()),
        },
        ..Task::default()
    }
}
