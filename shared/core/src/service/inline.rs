//! An inline execution a send started, and how its request waits for it: on Lambda a response
//! is sent only once nothing of its request is left running in the instance.

use a2a_protocol::A2AError;
use tokio::time::Instant;

use super::A2aService;
use crate::emitter::Emitter;
use crate::execution::FollowUpClaim;
use crate::task_log::{EventStream, StreamItem};

impl A2aService {
    /// Runs an inline execution in the background of this process; the handle tells when it
    /// ended (see [`settle`]).
    /// A follow-up's `claim` is held until the run ends.
    pub(super) fn spawn_inline(&self, emitter: Emitter, claim: Option<FollowUpClaim>) -> InlineRun {
        let core = self.core.clone();
        let run = emitter.clone();
        // Boxed: a spawned future is moved into the task's cell and its stage (a copy of its
        // whole size each time), and an execution's is kilobytes; a box moves as a pointer.
        let handle = tokio::spawn(Box::pin(async move {
            core.executions.run_inline(core.agent.clone(), run).await;
            drop(claim);
        }));
        InlineRun {
            handle,
            emitter,
            hand_over: !self.core.config.background_inline,
        }
    }
}

/// An inline execution this request started: its task in this process, and its emitter.
pub(super) struct InlineRun {
    handle: tokio::task::JoinHandle<()>,
    emitter: Emitter,
    /// Whether, at the request's deadline, it is handed over to the worker (on Lambda) rather
    /// than left running in this process.
    hand_over: bool,
}

/// Waits, until `deadline`, for the inline execution a request started to end, so that its
/// response is sent only once nothing of the request is left running: on Lambda the instance
/// freezes as soon as the response is complete, and whatever still ran (the last events' push
/// fan-out, the lease given back) would wait for the next request or be lost with the
/// instance. An execution still running at the deadline runs on in a long-lived process; on
/// Lambda it is stopped and handed over to the worker, which replays it to its end
/// (`Emitter::hand_over`): nothing of it is left in the frozen instance.
pub(super) async fn settle(run: Option<InlineRun>, deadline: Instant) {
    let Some(InlineRun {
        mut handle,
        emitter,
        hand_over,
    }) = run
    else {
        return;
    };
    if tokio::time::timeout_at(deadline, &mut handle).await.is_ok() || !hand_over {
        return;
    }
    handle.abort();
    let _ = handle.await;
    if emitter.task_active().await {
        if let Err(err) = emitter.hand_over().await {
            // Its lease runs out, and the sweep ends the task with the reason.
            tracing::warn!(task_id = %emitter.task_id(), error = %err, "could not hand the execution over");
        }
    }
    emitter.finish_lease().await;
}

/// `events`, ended only once the request's inline execution ended too (see [`settle`]).
pub(super) fn then_settled(
    events: EventStream,
    run: Option<InlineRun>,
    deadline: Instant,
) -> EventStream {
    use futures::StreamExt;
    let settled = futures::stream::once(settle(run, deadline))
        .filter_map(|()| futures::future::ready(None::<Result<StreamItem, A2AError>>));
    Box::pin(events.chain(settled))
}
