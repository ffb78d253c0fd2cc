//! The conversation a task belongs to, as its agent reads it: the earlier tasks of its context.

use a2a_protocol::Task;

use crate::emitter::Emitter;
use crate::ports::TaskQuery;
use crate::request::AgentError;

/// At most this many earlier tasks of a context are read (one store page): a conversational
/// agent keeps the recent ones, and a context this long is better summarised than replayed.
const CONTEXT_TASKS: usize = 100;

impl Emitter {
    /// The other tasks of this task's context that its caller owns, oldest first (the most
    /// recent `CONTEXT_TASKS`), with their history and artifacts: what an agent that
    /// converses (an LLM agent) reads to continue the conversation in a new task. This task
    /// is not among them: its own history is the request's `task`.
    pub async fn context_tasks(&self) -> Result<Vec<Task>, AgentError> {
        let query = TaskQuery {
            context_id: Some(self.context_id().to_owned()),
            page_size: CONTEXT_TASKS,
            ..TaskQuery::default()
        };
        let page = self
            .log
            .store
            .list_tasks(&self.owner, &query)
            .await
            .map_err(|err| AgentError::Failed(format!("Could not read the conversation: {err}")))?;
        let mut tasks: Vec<Task> = page
            .tasks
            .into_iter()
            .filter(|task| task.id != self.task_id())
            .collect();
        // The store lists newest first.
        tasks.reverse();
        Ok(tasks)
    }
}
