//! What the service reports as it works, for a host's metrics: the [`Observer`] port. The
//! core only calls it; a host turns the calls into whatever it records (the Lambda glue writes
//! CloudWatch Embedded Metric Format lines). The default observes nothing.

use std::fmt;
use std::time::Duration;

use a2a_protocol::{A2AError, TaskState};

use crate::ports::{JobOutcome, PushAttempt};
use a2a_protocol::Operation;

/// Receives the service's countable events. Calls are synchronous and must be cheap: they run
/// on the request's path.
pub trait Observer: Send + Sync + fmt::Debug {
    /// An operation ended (for streams: its stream started, or it was refused), after
    /// `elapsed`, with `error` when it failed.
    fn operation(&self, operation: Operation, elapsed: Duration, error: Option<&A2AError>) {
        let _ = (operation, elapsed, error);
    }

    /// A stream of `operation` that had started ended with `error` (an error event): counted
    /// as the operation's error, not as another request.
    fn stream_failed(&self, operation: Operation, error: &A2AError) {
        let _ = (operation, error);
    }

    /// A task reached the terminal `state`.
    fn task_finished(&self, state: TaskState) {
        let _ = state;
    }

    /// One webhook delivery attempt ended, the `number`-th at its event (our own count, from
    /// the delivery record; not the queue's receive count).
    fn push_attempt(&self, attempt: &PushAttempt, number: u32) {
        let _ = (attempt, number);
    }

    /// One work job attempt (the `attempt`-th, counted on the task's lease; not the queue's
    /// receive count) ended with `outcome`. Not called when no attempt was started (the task
    /// was done, or another worker held its lease).
    fn work_job(&self, attempt: u32, outcome: &JobOutcome) {
        let _ = (attempt, outcome);
    }

    /// A durable execution could not go on as it was: its record no longer reads (the sweep
    /// ends its task FAILED), or what it waited for (a remote agent's answer) is too large to
    /// keep in it (the wait ends with that failure). Rare; each one is a task that failed for
    /// a reason of ours, worth an alarm.
    fn broken_execution(&self) {}
}

/// Observes nothing: the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}
