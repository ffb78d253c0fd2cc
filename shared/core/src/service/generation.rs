//! The A2A 1.1 draft's task generations (spec `dev-1.1` §3.2.7), for clients that ask for 1.1:
//! a task's generation is its log's sequence number (the head's version; an event's own
//! sequence number), so GetTask, SSE ids and pushes agree. Long-polling GetTask waits for the
//! log to pass a generation; `ifGenerationMatch` refuses a follow-up on a stale one. A 1.0
//! request sees none of it.
//!
//! Our log also numbers the client's own follow-up messages, which change no state and stream
//! nothing: a 1.1 client sees a gap of one there, and re-reads the task as the draft says.

use a2a_protocol::{A2AError, SendMessageConfiguration, SendMessageResponse};
use futures::StreamExt;
use tokio::time::Instant;

use super::{A2aService, OperationResponse};
use crate::context::CallContext;
use crate::event::set_generation;
use crate::ports::StoredTask;

/// `response` as `ctx`'s protocol version reads it: generations for 1.1 (stream items get
/// their log position), none for anything older.
pub(super) fn for_caller(ctx: &CallContext, response: OperationResponse) -> OperationResponse {
    let v1_1 = ctx.v1_1;
    let task = |mut task: a2a_protocol::Task| {
        if !v1_1 {
            task.generation = 0;
        }
        task
    };
    match response {
        OperationResponse::Task(t) => OperationResponse::Task(task(t)),
        OperationResponse::Sent(SendMessageResponse::Task(t)) => {
            OperationResponse::Sent(SendMessageResponse::Task(task(t)))
        }
        OperationResponse::Tasks(mut page) => {
            page.tasks = page.tasks.into_iter().map(task).collect();
            OperationResponse::Tasks(page)
        }
        OperationResponse::Stream(events) => {
            OperationResponse::Stream(Box::pin(events.map(move |item| {
                item.map(|mut item| {
                    let generation = if v1_1 { item.seq as i64 } else { 0 };
                    set_generation(&mut item.response, generation);
                    item
                })
            })))
        }
        other => other,
    }
}

/// TaskGenerationMismatchError unless a 1.1 follow-up's `ifGenerationMatch` (if any) is the
/// generation of `head`, the task it continues. The append that records the message is then
/// conditional on that same generation, so no other write can come
/// between the check and the message.
pub(super) fn check_match(
    ctx: &CallContext,
    configuration: &SendMessageConfiguration,
    head: &StoredTask,
) -> Result<(), A2AError> {
    match if_generation_match(ctx, configuration) {
        Some(expected) if expected != head.version as i64 => {
            Err(A2AError::TaskGenerationMismatch {
                task_id: head.task.id.clone(),
                expected,
                current: head.version as i64,
            })
        }
        _ => Ok(()),
    }
}

/// The generation a follow-up must find its task at: `ifGenerationMatch`, for 1.1 requests.
pub(super) fn if_generation_match(
    ctx: &CallContext,
    configuration: &SendMessageConfiguration,
) -> Option<i64> {
    configuration.if_generation_match.filter(|_| ctx.v1_1)
}

impl A2aService {
    /// Long-polling GetTask: `head` once its generation is above `generation`, or as it
    /// stands when the task can no longer change (terminal), at the deployment's bound on
    /// holding a request (`long_poll_max_wait`, sized to the front door), or when this
    /// process shuts down. A generation already passed answers at once.
    pub(super) async fn hold_until_past(
        &self,
        ctx: &CallContext,
        mut head: StoredTask,
        generation: i64,
    ) -> Result<StoredTask, A2AError> {
        let deadline = Instant::now() + self.core.config.long_poll_max_wait;
        loop {
            if head.version as i64 > generation || head.task.status.state.is_terminal() {
                return Ok(head);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(head);
            }
            let stopping = self
                .core
                .log
                .wait_for_change(&head.task.id, head.version, deadline - now)
                .await;
            head = self.load(&ctx.owner, &head.task.id).await?;
            if stopping {
                return Ok(head);
            }
        }
    }
}
