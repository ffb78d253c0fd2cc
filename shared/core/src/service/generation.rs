//! The A2A 1.1 draft's task generations (spec `dev-1.1` §3.2.7), for clients that ask for 1.1:
//! a task's generation is its log's sequence number (the head's version; an event's own
//! sequence number), so GetTask, SSE ids and pushes agree. Long-polling GetTask waits for the
//! log to pass a generation; `ifGenerationMatch` refuses a follow-up on a stale one. A 1.0
//! request sees none of it.
//!
//! Our log also numbers the client's own follow-up messages, which change no state and stream
//! nothing: a 1.1 client sees a gap of one there, and re-reads the task as the draft says (its
//! timeline, PR #2129, makes a client message a mutation too).

use a2a_protocol::{A2AError, SendMessageConfiguration, SendMessageResponse, StreamResponse};
use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

use super::{A2aService, OperationResponse};
use crate::context::CallContext;
use crate::event::set_generation;
use crate::ports::StoredTask;

/// `response` as `ctx`'s protocol version reads it: generations for 1.1 (stream items get
/// their log position), none for anything older.
pub(super) fn for_caller(ctx: &CallContext, response: OperationResponse) -> OperationResponse {
    let v1_1 = ctx.version.is_1_1();
    let task = |mut task: a2a_protocol::Task| {
        if !v1_1 {
            without_1_1_fields(&mut task);
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
                    crate::timeline::without_chunk_generations(&mut item.response);
                    if let StreamResponse::Task(task) = &mut item.response {
                        if !v1_1 {
                            without_1_1_fields(task);
                        }
                    }
                    item
                })
            })))
        }
        other => other,
    }
}

/// `task` as older clients read it: no generation, no timeline, no artifact generations.
fn without_1_1_fields(task: &mut a2a_protocol::Task) {
    task.generation = 0;
    task.timeline.clear();
    for artifact in &mut task.artifacts {
        artifact.start_generation = 0;
        artifact.end_generation = 0;
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
    configuration
        .if_generation_match
        .filter(|_| ctx.version.is_1_1())
}

/// The lease that is slot `k` of the deployment's held long polls. A lease's name is a task id
/// everywhere else; task ids are UUIDs, which never start with `~`.
fn held_poll_slot(k: u32) -> String {
    format!("~held-poll#{k}")
}

/// How many of the slots a long poll tries before it answers at once: near the bound, a few
/// free slots may be missed (then the poll answers as a plain GetTask would), never more held.
const SLOT_PROBES: u32 = 3;

/// Holds a slot past the poll's own bound by this much, so that a process that dies holding
/// one frees it soon after the poll would have ended anyway.
const SLOT_MARGIN: Duration = Duration::from_secs(5);

/// One of the deployment's slots for a held long poll, taken as a lease (see
/// [`crate::ServiceConfig::long_poll_max_held`]).
struct HeldPollSlot {
    name: String,
    holder: String,
}

impl A2aService {
    /// Long-polling GetTask: `head` once its generation is above `generation`, or as it
    /// stands when the task can no longer change (terminal), at the deployment's bound on
    /// holding a request (`long_poll_max_wait`, sized to the front door), or when this
    /// process shuts down. A generation already passed answers at once, and so does a poll
    /// beyond the deployment's bound on held polls (`long_poll_max_held`), as a plain GetTask.
    pub(super) async fn hold_until_past(
        &self,
        ctx: &CallContext,
        head: StoredTask,
        generation: i64,
    ) -> Result<StoredTask, A2AError> {
        if passed(&head, generation) {
            return Ok(head);
        }
        let max_wait = self.core.config.long_poll_max_wait;
        let slot = match self.core.config.long_poll_max_held {
            None => None,
            Some(max) => match self.take_held_poll_slot(max, max_wait + SLOT_MARGIN).await {
                Some(slot) => Some(slot),
                None => return Ok(head),
            },
        };
        let held = self.hold(ctx, head, generation, max_wait).await;
        if let Some(slot) = slot {
            // A release that fails leaves the slot to its lease's end.
            if let Err(err) = self
                .core
                .store
                .release_lease(&slot.name, &slot.holder)
                .await
            {
                tracing::warn!(error = %err, slot = %slot.name, "a held poll's slot was not given back");
            }
        }
        held
    }

    /// One of `max` slots for `lasting`, or `None` when the few tried are held (or the store
    /// fails: a poll answered at once is always right).
    async fn take_held_poll_slot(&self, max: u32, lasting: Duration) -> Option<HeldPollSlot> {
        if max == 0 {
            return None;
        }
        let holder = uuid::Uuid::new_v4();
        // Where to start is random, so concurrent polls spread over the slots.
        let start = (holder.as_u128() % u128::from(max)) as u32;
        let holder = holder.to_string();
        let until = crate::emitter::lease_until(lasting);
        for i in 0..SLOT_PROBES.min(max) {
            let name = held_poll_slot((start + i) % max);
            match self.core.store.acquire_lease(&name, &holder, until).await {
                Ok(true) => return Some(HeldPollSlot { name, holder }),
                Ok(false) => {}
                Err(err) => {
                    tracing::warn!(error = %err, "a held poll's slot could not be taken; answered at once");
                    return None;
                }
            }
        }
        tracing::debug!(max, "every slot tried holds a poll; answered at once");
        None
    }

    async fn hold(
        &self,
        ctx: &CallContext,
        mut head: StoredTask,
        generation: i64,
        max_wait: Duration,
    ) -> Result<StoredTask, A2AError> {
        let deadline = Instant::now() + max_wait;
        loop {
            if passed(&head, generation) {
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

/// Whether a long poll of `head` past `generation` answers now: passed, or terminal.
fn passed(head: &StoredTask, generation: i64) -> bool {
    head.version as i64 > generation || head.task.status.state.is_terminal()
}
