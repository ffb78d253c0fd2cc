//! The operations on a task: GetTask, ListTasks, CancelTask and SubscribeToTask.

use a2a_protocol::{
    A2AError, CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse,
    StreamResponse, SubscribeToTaskRequest, Task, TaskState,
};
use tokio::time::Instant;

use super::A2aService;
use crate::context::CallContext;
use crate::ports::{StoredTask, TaskQuery};
use crate::task_log::{ended_status, store_error, AppendError, EventStream, StreamItem};

impl A2aService {
    /// GetTask.
    pub(super) async fn run_get_task(
        &self,
        ctx: &CallContext,
        request: GetTaskRequest,
    ) -> Result<Task, A2AError> {
        request.validate()?;
        let mut head = self.load(&ctx.owner, &request.id).await?;
        if let Some(generation) = request.current_generation.filter(|_| ctx.version.is_1_1()) {
            head = self.hold_until_past(ctx, head, generation).await?;
        }
        let mut task = head.task;
        task.truncate_history(request.history_length);
        Ok(task)
    }

    /// ListTasks: the caller's tasks, newest status first.
    pub(super) async fn run_list_tasks(
        &self,
        ctx: &CallContext,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2AError> {
        let page_size = request.validate()?;
        let query = TaskQuery {
            context_id: (!request.context_id.is_empty()).then(|| request.context_id.clone()),
            state: request.status,
            status_timestamp_after: request.status_timestamp_after,
            page_size,
            page_token: request.page_token.clone(),
        };
        let page = self
            .core
            .store
            .list_tasks(&ctx.owner, &query)
            .await
            .map_err(store_error)?;
        let include_artifacts = request.include_artifacts.unwrap_or(false);
        let tasks = page
            .tasks
            .into_iter()
            .map(|mut task| {
                task.truncate_history(request.history_length);
                if !include_artifacts {
                    task.artifacts.clear();
                }
                task
            })
            .collect();
        Ok(ListTasksResponse {
            tasks,
            next_page_token: page.next_page_token,
            page_size: page_size as i32,
            total_size: i32::try_from(page.total_size).unwrap_or(i32::MAX),
        })
    }

    /// CancelTask: CANCELED, or TaskNotCancelable if the task already ended.
    pub(super) async fn run_cancel_task(
        &self,
        ctx: &CallContext,
        request: CancelTaskRequest,
    ) -> Result<Task, A2AError> {
        request.validate()?;
        let head = self.load(&ctx.owner, &request.id).await?;
        let event = ended_status(
            &head.task,
            TaskState::Canceled,
            "The task was canceled at the client's request.",
            request.metadata.clone(),
        );
        match self.core.log.append(&ctx.owner, head, vec![event]).await {
            Ok(head) => {
                // Work it waits for elsewhere (another agent's task) is canceled too.
                self.end_durable_work(&ctx.owner, &head.task.id).await;
                Ok(head.task)
            }
            Err(AppendError::Terminal(task)) => Err(A2AError::TaskNotCancelable {
                task_id: task.id.clone(),
                state: task.status.state.to_string(),
            }),
            Err(other) => Err(other.into()),
        }
    }

    /// SubscribeToTask: the Task snapshot, then live events. With `last_event_id` (SSE
    /// `Last-Event-ID`) it resumes exactly after that event instead, with no snapshot.
    pub(super) async fn run_subscribe_to_task(
        &self,
        ctx: &CallContext,
        request: SubscribeToTaskRequest,
        last_event_id: Option<u64>,
    ) -> Result<EventStream, A2AError> {
        self.require_streaming()?;
        request.validate()?;
        let head = self.load(&ctx.owner, &request.id).await?;
        if let Some(after) = last_event_id {
            return Ok(Box::pin(self.core.log.follow(
                ctx.owner.clone(),
                head.task.id.clone(),
                after,
                Instant::now() + self.core.config.max_stream_duration,
            )));
        }
        if head.task.status.state.is_terminal() {
            return Err(A2AError::unsupported(format!(
                "Task {} is in terminal state {}; there is nothing to subscribe to",
                head.task.id, head.task.status.state
            )));
        }
        Ok(self.snapshot_then_follow(ctx, head))
    }

    pub(super) fn snapshot_then_follow(&self, ctx: &CallContext, head: StoredTask) -> EventStream {
        use futures::StreamExt;
        let first = StreamItem {
            seq: head.version,
            response: StreamResponse::Task(head.task.clone()),
        };
        let rest = self.core.log.follow(
            ctx.owner.clone(),
            head.task.id.clone(),
            head.version,
            Instant::now() + self.core.config.max_stream_duration,
        );
        Box::pin(futures::stream::once(async move { Ok(first) }).chain(rest))
    }
}
