//! The span of one A2A operation, as the draft conventions name it (open-telemetry
//! semantic-conventions-genai PR #195): named after the method, a server span, with the task,
//! context and state it answered about. docs/tracing.md lists them.

use a2a_protocol::{A2AError, Operation, SendMessageResponse};
use tracing::field::Empty;
use tracing::Span;

use super::OperationResponse;
use crate::context::CallContext;

/// The span of `operation` for `ctx`, a child of the caller's `traceparent`, and the context
/// the work goes on with: naming this span as the parent of what it causes (other agents, the
/// worker, pushes, waits), when spans are exported.
pub(super) fn operation_span(
    operation: Operation,
    ctx: &CallContext,
) -> (Span, Option<CallContext>) {
    let span = tracing::trace_span!(
        "operation",
        otel.name = operation.name(),
        otel.kind = "server",
        otel.status_code = Empty,
        a2a.method.name = operation.name(),
        a2a.task.id = Empty,
        a2a.context.id = Empty,
        a2a.task.state = Empty,
        error.type = Empty,
    );
    crate::trace::set_span_parent(&span, ctx.traceparent.as_deref());
    let traced = crate::trace::traceparent_of(&span).map(|traceparent| CallContext {
        traceparent: Some(traceparent),
        ..ctx.clone()
    });
    (span, traced)
}

/// Records on `span` what the operation answered: the task's ids and state, or the error.
pub(super) fn record_answer(span: &Span, answer: &Result<OperationResponse, A2AError>) {
    let task = match answer {
        Ok(OperationResponse::Sent(SendMessageResponse::Task(task)))
        | Ok(OperationResponse::Task(task)) => Some(task),
        Ok(OperationResponse::Sent(SendMessageResponse::Message(message))) => {
            if !message.task_id.is_empty() {
                span.record("a2a.task.id", message.task_id.as_str());
            }
            if !message.context_id.is_empty() {
                span.record("a2a.context.id", message.context_id.as_str());
            }
            None
        }
        Ok(_) => None,
        Err(err) => {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", err.reason());
            None
        }
    };
    if let Some(task) = task {
        crate::trace::record_task(span, task);
    }
}
