//! Trace context across the work: the core makes its spans with `tracing` and knows trace
//! contexts only as W3C `traceparent` strings (kept in jobs, waits and push configs). A host
//! that exports spans installs a [`TraceContext`] once, which links a span to a parent named
//! by a `traceparent` and names a span as one; without it, the `traceparent` a request came
//! with is passed on unchanged (as before spans were exported).

use std::sync::OnceLock;

use a2a_protocol::{Metadata, Task, TRACE_ID_METADATA};
use tracing::Span;

/// Turns `traceparent` strings into span parents and spans into `traceparent` strings: the
/// host's span exporter (OpenTelemetry, in the local server and the Lambda functions).
pub trait TraceContext: Send + Sync {
    /// Makes the span `traceparent` names the parent of `span` (a span not yet entered).
    fn set_parent(&self, span: &Span, traceparent: &str);

    /// The `traceparent` naming `span` in its trace, if the span is exported.
    fn traceparent(&self, span: &Span) -> Option<String>;

    /// Links `span` (not yet entered) to the span `traceparent` names: a cause that is not
    /// its parent (the push or poll that woke a resumed execution). Nothing by default.
    fn add_link(&self, _span: &Span, _traceparent: &str) {}
}

static INSTALLED: OnceLock<Box<dyn TraceContext>> = OnceLock::new();

/// Installs the process's [`TraceContext`]; `false` if one already was (it stays).
pub fn install_trace_context(context: Box<dyn TraceContext>) -> bool {
    INSTALLED.set(context).is_ok()
}

/// Makes `traceparent`, if any, the parent of `span`: the span continues a trace that came
/// from elsewhere (a request's header, a job, a wait, a push config).
pub fn set_span_parent(span: &Span, traceparent: Option<&str>) {
    if let (Some(context), Some(traceparent)) = (INSTALLED.get(), traceparent) {
        context.set_parent(span, traceparent);
    }
}

/// Links `span` to the span `traceparent`, if any, names (see [`TraceContext::add_link`]).
pub(crate) fn add_span_link(span: &Span, traceparent: Option<&str>) {
    if let (Some(context), Some(traceparent)) = (INSTALLED.get(), traceparent) {
        context.add_link(span, traceparent);
    }
}

/// Makes `inherited` the parent of `span` unless `span` is made inside a span that is exported
/// (an operation, an execution, a relay: `span` is its child already). A span that is not
/// exported (a Lambda invocation's, kept for its log lines) does not count: the work would
/// otherwise start a trace of its own under it.
pub(crate) fn continue_trace(span: &Span, inherited: Option<&str>) {
    if traceparent_of(&Span::current()).is_none() {
        set_span_parent(span, inherited);
    }
}

/// The `traceparent` naming `span`, for the work it causes elsewhere; `None` when no span is
/// exported (the caller then passes on the one it got).
pub fn traceparent_of(span: &Span) -> Option<String> {
    INSTALLED.get()?.traceparent(span)
}

/// The `traceparent` to pass on from inside the current span: its own when spans are
/// exported, else `inherited` (the one the work came with).
pub(crate) fn passed_on(inherited: Option<&str>) -> Option<String> {
    traceparent_of(&Span::current()).or_else(|| inherited.map(str::to_owned))
}

/// A URL as a span may show it: scheme, host, port and path, without user info, query or
/// fragment (either may carry a credential).
pub(crate) fn shown_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.set_fragment(None);
            url.to_string()
        }
        Err(_) => String::new(),
    }
}

/// The metadata of a task created now: the trace it is created in (the current span's), when
/// spans are exported; else none.
pub(crate) fn created_task_metadata() -> Option<Metadata> {
    let traceparent = traceparent_of(&Span::current())?;
    let trace_id = traceparent.split('-').nth(1)?;
    Some(Metadata::from_iter([(
        TRACE_ID_METADATA.to_owned(),
        trace_id.to_owned().into(),
    )]))
}

/// Records `task`'s id, context and state on `span` (a span that declared those fields).
pub(crate) fn record_task(span: &Span, task: &Task) {
    span.record("a2a.task.id", task.id.as_str());
    span.record("a2a.context.id", task.context_id.as_str());
    span.record("a2a.task.state", task.status.state.as_str());
}

#[cfg(test)]
mod tests {
    use super::shown_url;

    #[test]
    fn shown_urls_carry_no_credentials() {
        assert_eq!(
            shown_url("https://user:secret@agent.example:8443/a2a/v1?key=k#frag"),
            "https://agent.example:8443/a2a/v1"
        );
        assert_eq!(shown_url("not a url"), "");
    }
}
