//! Spans exported over OTLP (HTTP, protobuf) when the standard OpenTelemetry variables ask
//! for it: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the URL spans are posted to) or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (a collector's base URL; `/v1/traces` is added), with
//! `OTEL_SERVICE_NAME` (default `a2a-local`) and the exporter's other `OTEL_*` variables
//! (headers, timeout). Off otherwise: nothing is set up and `traceparent` is passed on as it
//! came. docs/tracing.md says what the spans are.

use std::collections::HashMap;
use std::sync::OnceLock;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The provider spans go out through, kept to flush it when the server stops.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Whether the environment asks for spans to be exported.
pub(crate) fn requested() -> bool {
    [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]
    .iter()
    .any(|name| std::env::var(name).is_ok_and(|v| !v.trim().is_empty()))
}

/// The layer that exports the kit's spans (those of the `a2a…` crates at TRACE),
/// when [`requested`]; it also installs the core's [`a2a_core::TraceContext`]. `Err`: the
/// exporter could not be built (a malformed endpoint).
pub(crate) fn layer<S>(
    default_service: &str,
) -> Result<Option<impl tracing_subscriber::Layer<S>>, String>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer as _;
    if !requested() {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| format!("cannot export spans over OTLP: {e}"))?;
    let service = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| default_service.to_owned());
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name(service).build())
        .build();
    let tracer = provider.tracer("a2a-lambda");
    let _ = PROVIDER.set(provider);
    a2a_core::install_trace_context(Box::new(OtelTraceContext));
    // The kit's exported spans are at TRACE: no log line (INFO by default here, and on
    // Lambda, whose JSON lines show the current span) ever sees them, and no event is exported.
    let kit = tracing_subscriber::filter::filter_fn(|meta| {
        meta.is_span() && *meta.level() == tracing::Level::TRACE && meta.target().starts_with("a2a")
    });
    Ok(Some(
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(kit),
    ))
}

/// Sends the spans not yet exported and stops the exporter: called once the server stopped
/// (Ctrl-C, SIGTERM). Waits for the collector at most the exporter's timeout.
pub(crate) async fn flush_spans() {
    if let Some(provider) = PROVIDER.get() {
        let provider = provider.clone();
        let done = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(err)) = done {
            tracing::warn!(error = %err, "could not export the last spans");
        }
    }
}

/// W3C trace context for the core, through the OpenTelemetry layer's spans.
struct OtelTraceContext;

impl a2a_core::TraceContext for OtelTraceContext {
    fn set_parent(&self, span: &Span, traceparent: &str) {
        let parent = extracted(traceparent);
        if parent.span().span_context().is_valid() {
            let _ = span.set_parent(parent);
        }
    }

    fn add_link(&self, span: &Span, traceparent: &str) {
        // An invalid context (a malformed `traceparent`) is not linked.
        span.add_link(extracted(traceparent).span().span_context().clone());
    }

    fn traceparent(&self, span: &Span) -> Option<String> {
        // The propagator writes nothing for a span that is not exported (an invalid context).
        let mut carrier = HashMap::new();
        TraceContextPropagator::new().inject_context(&span.context(), &mut carrier);
        carrier.remove("traceparent")
    }
}

/// The OpenTelemetry context `traceparent` names (invalid if it is malformed).
fn extracted(traceparent: &str) -> opentelemetry::Context {
    let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    TraceContextPropagator::new().extract(&carrier)
}
