//! The A2A 1.1 draft's task timeline in answers to 1.1 clients: each answered task's log is
//! read and projected ([`crate::timeline::project`]) after the operation ran, so every
//! operation that answers a task carries it the same way, and so does the Task that opens a
//! stream. The events of a stream carry none: the draft delivers status entries as the status
//! updates streams already carry. A 1.0 request reads nothing more.

use a2a_protocol::{A2AError, SendMessageResponse, StreamResponse, Task};
use futures::{StreamExt, TryStreamExt};

use super::{A2aService, OperationRequest, OperationResponse};
use crate::context::CallContext;
use crate::event::LoggedEvent;
use crate::ports::{Owner, TaskStore};
use crate::task_log::{store_error, with_store_retries, StreamItem};
use crate::timeline::{project, timeline_length, DEFAULT_TIMELINE_LENGTH};

/// Events read per page of a task's log.
const PAGE: usize = 100;

/// The tasks of one ListTasks page whose logs are read at once.
const CONCURRENT_READS: usize = 8;

/// How many timeline entries the answer to `request` carries, if it answers a task: the
/// request's `timelineLength`, or the default of its operation. ListTasks carries none unless
/// asked, since each task's timeline is a read of its log; CancelTask, which has no
/// `timelineLength`, carries the default.
pub(super) fn requested(request: &OperationRequest) -> Option<usize> {
    use OperationRequest as R;
    match request {
        R::SendMessage(r) | R::SendStreamingMessage(r) => Some(timeline_length(
            r.configuration.as_ref().and_then(|c| c.timeline_length),
            DEFAULT_TIMELINE_LENGTH,
        )),
        R::GetTask(r) => Some(timeline_length(r.timeline_length, DEFAULT_TIMELINE_LENGTH)),
        R::ListTasks(r) => Some(timeline_length(r.timeline_length, 0)),
        R::CancelTask(_) | R::SubscribeToTask(..) => Some(DEFAULT_TIMELINE_LENGTH),
        _ => None,
    }
}

impl A2aService {
    /// `response` with each task's timeline (its latest `keep` entries) and its artifacts'
    /// generations.
    pub(super) async fn with_timelines(
        &self,
        ctx: &CallContext,
        response: OperationResponse,
        keep: usize,
    ) -> Result<OperationResponse, A2AError> {
        use OperationResponse as Out;
        let store = &*self.core.store;
        let owner = &ctx.owner;
        Ok(match response {
            Out::Task(task) => Out::Task(with_timeline(store, owner, task, keep).await?),
            Out::Sent(SendMessageResponse::Task(task)) => Out::Sent(SendMessageResponse::Task(
                with_timeline(store, owner, task, keep).await?,
            )),
            Out::Tasks(mut page) => {
                page.tasks = futures::stream::iter(std::mem::take(&mut page.tasks))
                    .map(|task| with_timeline(store, owner, task, keep))
                    .buffered(CONCURRENT_READS)
                    .try_collect()
                    .await?;
                Out::Tasks(page)
            }
            Out::Stream(events) => {
                let store = self.core.store.clone();
                let owner = ctx.owner.clone();
                Out::Stream(Box::pin(events.then(move |item| {
                    let store = store.clone();
                    let owner = owner.clone();
                    async move {
                        let StreamItem { seq, response } = item?;
                        let response = match response {
                            // The task as of this item: its log up to the item's position.
                            StreamResponse::Task(mut task) => {
                                task.generation = seq as i64;
                                StreamResponse::Task(
                                    with_timeline(&*store, &owner, task, keep).await?,
                                )
                            }
                            other => other,
                        };
                        Ok(StreamItem { seq, response })
                    }
                })))
            }
            other => other,
        })
    }
}

/// `task` with its timeline and artifact generations, from its log up to its generation.
/// Nothing is read when there is nothing to place (no entries asked, no artifacts).
async fn with_timeline(
    store: &dyn TaskStore,
    owner: &Owner,
    mut task: Task,
    keep: usize,
) -> Result<Task, A2AError> {
    if keep == 0 && task.artifacts.is_empty() {
        return Ok(task);
    }
    let upto = u64::try_from(task.generation).unwrap_or(0);
    let events = read_log(store, owner, &task.id, upto).await?;
    project(&mut task, &events, keep);
    Ok(task)
}

/// The task's log, up to `upto` (all of it when 0), page by page.
async fn read_log(
    store: &dyn TaskStore,
    owner: &Owner,
    task_id: &str,
    upto: u64,
) -> Result<Vec<LoggedEvent>, A2AError> {
    let mut events: Vec<LoggedEvent> = Vec::new();
    loop {
        let after = events.last().map_or(0, |e| e.seq);
        if upto != 0 && after >= upto {
            return Ok(events);
        }
        let page = with_store_retries("a timeline's read", task_id, || {
            store.read_events(owner, task_id, after, PAGE)
        })
        .await
        .map_err(store_error)?;
        let full = page.len() == PAGE;
        events.extend(page);
        if !full {
            return Ok(events);
        }
    }
}
