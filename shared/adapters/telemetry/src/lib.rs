//! Spans exported over OTLP (HTTP, protobuf) when the standard OpenTelemetry variables ask
//! for it: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the URL spans are posted to) or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (a collector's base URL; `/v1/traces` is added), with
//! `OTEL_SERVICE_NAME` (default: the host's name for itself) and the exporter's other
//! `OTEL_*` variables (headers, timeout). Off otherwise: nothing is set up and `traceparent`
//! is passed on as it came. docs/tracing.md says what the spans are.
//!
//! Both hosts use it: the local server exports from a batch and flushes once it stops
//! ([`shutdown`]); a Lambda function flushes before each invocation's answer is complete
//! ([`flush`]), since Lambda freezes the process once it is.

use std::collections::HashMap;
use std::sync::OnceLock;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_otlp::{HttpExporterBuilderSet, SpanExporterBuilder};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The exporter's builder as [`layer`] hands it to the host, which may give it an HTTP client
/// of its own or a timeout (`opentelemetry_otlp::WithHttpConfig`, `WithExportConfig`).
pub type ExporterBuilder = SpanExporterBuilder<HttpExporterBuilderSet>;

/// The provider spans go out through, kept to flush it.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Whether the environment asks for spans to be exported.
pub fn requested() -> bool {
    [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]
    .iter()
    .any(|name| set(name))
}

/// Whether the variable `name` is set to something other than blanks.
pub fn set(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.trim().is_empty())
}

/// The layer that exports the kit's spans (those of the `a2a…` crates at TRACE), when
/// [`requested`]; it also installs the core's [`a2a_core::TraceContext`]. `exporter` lets the
/// host adjust the exporter before it is built (its HTTP client, its timeout). `Err`: the
/// exporter could not be built (a malformed endpoint, say).
pub fn layer<S>(
    default_service: &str,
    exporter: impl FnOnce(ExporterBuilder) -> ExporterBuilder,
) -> Result<Option<impl tracing_subscriber::Layer<S>>, String>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer as _;
    if !requested() {
        return Ok(None);
    }
    let exporter = exporter(opentelemetry_otlp::SpanExporter::builder().with_http())
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

/// Exports the spans that ended so far and waits until the collector has them (or the
/// exporter's timeout passed): what a Lambda function calls before each invocation's answer is
/// complete, so no span waits in a frozen process. Nothing when spans are not exported.
pub async fn flush() {
    with_provider(SdkTracerProvider::force_flush, "could not export the spans").await;
}

/// Sends the spans not yet exported and stops the exporter: what the local server calls once
/// it stopped (Ctrl-C, SIGTERM). Waits for the collector at most the exporter's timeout.
pub async fn shutdown() {
    with_provider(
        SdkTracerProvider::shutdown,
        "could not export the last spans",
    )
    .await;
}

/// Runs `export` on the provider, if spans are exported, off the async threads (the batch
/// processor's thread does the export; waiting for it blocks), and logs its failure.
async fn with_provider(
    export: fn(&SdkTracerProvider) -> opentelemetry_sdk::error::OTelSdkResult,
    failure: &'static str,
) {
    if let Some(provider) = PROVIDER.get() {
        let provider = provider.clone();
        let done = tokio::task::spawn_blocking(move || export(&provider)).await;
        if let Ok(Err(err)) = done {
            tracing::warn!(error = %err, "{failure}");
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
