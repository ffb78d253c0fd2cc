//! Metrics as CloudWatch Embedded Metric Format (EMF) log lines: CloudWatch Logs extracts them
//! from the function's log stream, so a function needs no `cloudwatch:PutMetricData`, no
//! network call and no extra latency. [`EmfObserver`] is the core's [`Observer`] on Lambda;
//! `a2a-local --metrics-file` writes the same lines to a file, so a local run shows every
//! failure the way a deployment's metrics do. The observer only formats lines: where they go
//! is the host's [`Sink`].
//!
//! Every line has the dimension `FunctionName` (the deployed function's name, as Lambda's own
//! metrics have), plus the one its metric is broken down by:
//!
//! | Metric | Unit | Dimensions |
//! |---|---|---|
//! | `Requests`, `Errors`, `ClientErrors` | Count | `FunctionName`, `Operation` |
//! | `Errors` | Count | `FunctionName` (the same count, for the alarm) |
//! | `Latency` | Milliseconds | `FunctionName`, `Operation` |
//! | `TasksFinished` | Count | `FunctionName`, `State` |
//! | `PushAttempts`, `PushDeliveries`, `PushRetries`, `PushDeadLetters` | Count | `FunctionName` |
//! | `JobAttempts`, `JobRetries` | Count | `FunctionName` |
//! | `FanoutFailures` | Count | `FunctionName` |
//! | `BrokenExecutions` | Count | `FunctionName` |
//!
//! `BrokenExecutions` counts durable executions that could not go on as they were (a record
//! that no longer reads, ended FAILED by the sweep; a remote agent's answer too large to keep,
//! which fails its call). `Errors` counts the failures that are ours (HTTP 5xx); `ClientErrors` the refusals of a bad
//! request (4xx). Lines carry `traceId` (the X-Ray trace of the invocation) and the error or push
//! result as plain properties, searchable in Logs Insights but not metric dimensions.
//!
//! Lambda filters a function's JSON log lines by their `level` (`ApplicationLogLevel`, the
//! template's `LogLevel`), and takes a line without a valid `level` and RFC 3339 `timestamp`
//! as INFO: at `LogLevel` warn or error it would drop every metric line before CloudWatch saw
//! it. So each line carries a `timestamp` and the least severe `level` the filter keeps
//! ([`metric_level`]): INFO, or the filter's own level when that is above INFO.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use a2a_protocol::Operation;
use a2a_protocol::{A2AError, TaskState};
use serde_json::{json, Map, Value};

use crate::observe::Observer;
use crate::ports::{JobOutcome, PushAttempt, PushAttemptResult};

/// The CloudWatch namespace of the metrics (template parameter `MetricsNamespace`).
pub const ENV_METRICS_NAMESPACE: &str = "A2A_METRICS_NAMESPACE";
/// The namespace when none is configured.
pub const DEFAULT_NAMESPACE: &str = "a2a-lambda";
/// The fan-out function's count of batches whose push jobs it could not enqueue (the template
/// alarms on it: a partial batch response is a successful invocation to Lambda, so such a
/// failure is not in `AWS/Lambda` `Errors`).
pub const FANOUT_FAILURES: &str = "FanoutFailures";

/// Durable executions that could not go on as they were, each ending its task FAILED (see
/// `crate::Observer::broken_execution`).
pub const BROKEN_EXECUTIONS: &str = "BrokenExecutions";

/// Lambda's application log levels, least severe first (`AWS_LAMBDA_LOG_LEVEL`).
const LEVELS: [&str; 6] = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"];

/// The `level` of metric lines under Lambda's log filter `threshold` (`AWS_LAMBDA_LOG_LEVEL`,
/// any case; `None` or unknown: no filter above INFO): INFO, or the threshold when it is more
/// severe, so that Lambda keeps them.
pub fn metric_level(threshold: Option<&str>) -> &'static str {
    let rank = |level: &str| LEVELS.iter().position(|l| l.eq_ignore_ascii_case(level));
    let info = rank("INFO").unwrap_or(2);
    match threshold.and_then(rank) {
        Some(r) if r > info => LEVELS[r],
        _ => LEVELS[info],
    }
}

/// The dimensions the metrics are broken down by (template parameter `MetricsDetail`): each
/// distinct metric and dimension value is one CloudWatch custom metric, billed by the month.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricsDetail {
    /// `FunctionName` and the operation (or final state): a metric per operation each function
    /// serves (about 100 behind API Gateway once every operation is used).
    #[default]
    Operation,
    /// `FunctionName` alone: four operation metrics per function, the operation and final state
    /// still on each line, for Logs Insights, but not metrics of their own.
    Function,
}

/// The variable `MetricsDetail` sets: `operation` (the default) or `function`.
pub const ENV_METRICS_DETAIL: &str = "A2A_METRICS_DETAIL";

impl std::str::FromStr for MetricsDetail {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "operation" => Ok(Self::Operation),
            "function" => Ok(Self::Function),
            other => Err(format!(
                "{ENV_METRICS_DETAIL} must be operation or function, not {other:?}"
            )),
        }
    }
}

/// An EMF metric unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count of events.
    Count,
    /// A duration in milliseconds.
    Milliseconds,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Self::Count => "Count",
            Self::Milliseconds => "Milliseconds",
        }
    }
}

/// One EMF log line: `dimensions` (name, value) form the one dimension set of every metric in
/// `metrics` (name, unit, value); `properties` are logged alongside, not extracted.
pub fn emf_line(
    namespace: &str,
    timestamp: SystemTime,
    dimensions: &[(&str, &str)],
    metrics: &[(&str, Unit, f64)],
    properties: &[(&str, Value)],
) -> String {
    Value::Object(emf_object(
        namespace, timestamp, dimensions, metrics, properties,
    ))
    .to_string()
}

/// [`emf_line`] before it is written out.
fn emf_object(
    namespace: &str,
    timestamp: SystemTime,
    dimensions: &[(&str, &str)],
    metrics: &[(&str, Unit, f64)],
    properties: &[(&str, Value)],
) -> Map<String, Value> {
    let millis = timestamp
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default();
    let mut line = Map::new();
    // What Lambda's JSON log filter reads (properties may set `level`).
    line.insert(
        "timestamp".into(),
        json!(
            a2a_protocol::Timestamp::from_millis(i64::try_from(millis).unwrap_or(i64::MAX))
                .to_string()
        ),
    );
    // Properties first, so a metric or dimension of the same name wins.
    for (name, value) in properties {
        line.insert((*name).to_owned(), value.clone());
    }
    for (name, value) in dimensions {
        line.insert((*name).to_owned(), json!(value));
    }
    for (name, _, value) in metrics {
        line.insert((*name).to_owned(), json!(value));
    }
    line.insert(
        "_aws".into(),
        json!({
            "Timestamp": millis,
            "CloudWatchMetrics": [directive(namespace, dimensions, metrics)],
        }),
    );
    line
}

/// One EMF directive: `metrics` by the dimension set of `dimensions`' names.
fn directive(namespace: &str, dimensions: &[(&str, &str)], metrics: &[(&str, Unit, f64)]) -> Value {
    json!({
        "Namespace": namespace,
        "Dimensions": [dimensions.iter().map(|(name, _)| *name).collect::<Vec<_>>()],
        "Metrics": metrics
            .iter()
            .map(|(name, unit, _)| json!({"Name": name, "Unit": unit.as_str()}))
            .collect::<Vec<_>>(),
    })
}

/// `line` (of [`emf_object`]) also publishing `metrics` by `FunctionName` alone: one metric per
/// function that an alarm can watch, where the line's own set splits it by operation.
fn add_function_rollup(
    line: &mut Map<String, Value>,
    namespace: &str,
    function: &str,
    metrics: &[(&str, Unit, f64)],
) {
    if let Some(directives) = line
        .get_mut("_aws")
        .and_then(|aws| aws.get_mut("CloudWatchMetrics"))
        .and_then(Value::as_array_mut)
    {
        directives.push(directive(namespace, &[("FunctionName", function)], metrics));
    }
}

/// Where the lines go: stdout on Lambda, a file for `a2a-local --metrics-file`, a buffer in
/// tests.
pub type Sink = Arc<dyn Fn(&str) + Send + Sync>;

/// The trace the current line belongs to, if any (on Lambda: the invocation's X-Ray trace).
pub type TraceSource = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// The core's events as EMF lines.
#[derive(Clone)]
pub struct EmfObserver {
    namespace: String,
    function: String,
    level: &'static str,
    detail: MetricsDetail,
    sink: Sink,
    trace: Option<TraceSource>,
}

impl fmt::Debug for EmfObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmfObserver")
            .field("namespace", &self.namespace)
            .field("function", &self.function)
            .finish_non_exhaustive()
    }
}

impl EmfObserver {
    /// Lines for `function` in `namespace`, handed to `sink`.
    pub fn with_sink(
        namespace: impl Into<String>,
        function: impl Into<String>,
        sink: Sink,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            function: function.into(),
            level: metric_level(None),
            detail: MetricsDetail::default(),
            sink,
            trace: None,
        }
    }

    /// Metrics broken down as `detail` says.
    pub fn with_detail(self, detail: MetricsDetail) -> Self {
        Self { detail, ..self }
    }

    /// Lines that carry `traceId`, as `trace` says when each is written.
    pub fn with_trace(self, trace: TraceSource) -> Self {
        Self {
            trace: Some(trace),
            ..self
        }
    }

    /// Lines that Lambda's log filter at `threshold` (`AWS_LAMBDA_LOG_LEVEL`) keeps: see
    /// [`metric_level`].
    pub fn for_log_level(self, threshold: Option<&str>) -> Self {
        Self {
            level: metric_level(threshold),
            ..self
        }
    }

    fn emit(
        &self,
        extra: Option<(&str, &str)>,
        metrics: &[(&str, Unit, f64)],
        properties: Vec<(&str, Value)>,
    ) {
        let line = self.line(extra, metrics, properties);
        self.write(line);
    }

    /// Writes `line` out, one line of JSON.
    fn write(&self, line: Map<String, Value>) {
        (self.sink)(&Value::Object(line).to_string());
    }

    fn line<'a>(
        &self,
        extra: Option<(&'a str, &str)>,
        metrics: &[(&str, Unit, f64)],
        mut properties: Vec<(&'a str, Value)>,
    ) -> Map<String, Value> {
        let mut dimensions = vec![("FunctionName", self.function.as_str())];
        match (self.detail, extra) {
            (MetricsDetail::Operation, Some(extra)) => dimensions.push(extra),
            // On the line, searchable, but no metric of its own.
            (MetricsDetail::Function, Some((name, value))) => properties.push((name, json!(value))),
            (_, None) => {}
        }
        properties.push(("level", json!(self.level)));
        if let Some(trace) = self.trace.as_ref().and_then(|trace| trace()) {
            properties.push(("traceId", json!(trace)));
        }
        emf_object(
            &self.namespace,
            SystemTime::now(),
            &dimensions,
            metrics,
            &properties,
        )
    }
}

impl EmfObserver {
    /// Writes the line of `operation` with `metrics` and the counts of `error` (ours, 5xx, in
    /// `Errors`; the caller's in `ClientErrors`).
    fn operation_line(
        &self,
        operation: Operation,
        mut metrics: Vec<(&str, Unit, f64)>,
        error: Option<&A2AError>,
    ) {
        let status = error.map(A2AError::http_status);
        let mut properties = Vec::new();
        if let Some(error) = error {
            properties.push(("error", json!(error.reason())));
        }
        let errors = (
            "Errors",
            Unit::Count,
            count(status.is_some_and(|s| s >= 500)),
        );
        metrics.push(errors);
        metrics.push((
            "ClientErrors",
            Unit::Count,
            count(status.is_some_and(|s| s < 500)),
        ));
        let mut line = self.line(Some(("Operation", operation.name())), &metrics, properties);
        // Our failures by function too: what the template's ServerErrors alarms watch (a
        // JSON-RPC error is HTTP 200, so the front door's 5xx metrics miss it). Broken down by
        // function alone, the line's own metrics are that already.
        if self.detail == MetricsDetail::Operation {
            add_function_rollup(&mut line, &self.namespace, &self.function, &[errors]);
        }
        self.write(line);
    }

    /// A batch of `records` stream records whose push jobs could not be enqueued: it is
    /// retried, and after the mapping's last retry recorded in its on-failure destination.
    pub fn fanout_failure(&self, records: usize, error: &str) {
        self.emit(
            None,
            &[(FANOUT_FAILURES, Unit::Count, 1.0)],
            vec![("records", json!(records)), ("error", json!(error))],
        );
    }
}

fn count(yes: bool) -> f64 {
    if yes {
        1.0
    } else {
        0.0
    }
}

impl Observer for EmfObserver {
    fn operation(&self, operation: Operation, elapsed: Duration, error: Option<&A2AError>) {
        let metrics = vec![
            ("Requests", Unit::Count, 1.0),
            (
                "Latency",
                Unit::Milliseconds,
                elapsed.as_secs_f64() * 1000.0,
            ),
        ];
        self.operation_line(operation, metrics, error);
    }

    fn stream_failed(&self, operation: Operation, error: &A2AError) {
        self.operation_line(operation, Vec::new(), Some(error));
    }

    fn task_finished(&self, state: TaskState) {
        self.emit(
            Some(("State", state.as_str())),
            &[("TasksFinished", Unit::Count, 1.0)],
            Vec::new(),
        );
    }

    fn push_attempt(&self, attempt: &PushAttempt, number: u32) {
        use PushAttemptResult as R;
        let failed = attempt.result == R::Failed;
        let mut properties = vec![
            ("result", json!(attempt.result)),
            ("attempt", json!(number)),
        ];
        if let Some(status) = attempt.http_status {
            properties.push(("httpStatus", json!(status)));
        }
        self.emit(
            None,
            &[
                ("PushAttempts", Unit::Count, 1.0),
                (
                    "PushDeliveries",
                    Unit::Count,
                    count(attempt.result == R::Delivered),
                ),
                (
                    "PushRetries",
                    Unit::Count,
                    count(failed && !attempt.final_attempt),
                ),
                (
                    "PushDeadLetters",
                    Unit::Count,
                    count(failed && attempt.final_attempt),
                ),
            ],
            properties,
        );
    }

    fn work_job(&self, attempt: u32, outcome: &JobOutcome) {
        let retried = matches!(outcome, JobOutcome::Retry { .. });
        self.emit(
            None,
            &[
                ("JobAttempts", Unit::Count, 1.0),
                ("JobRetries", Unit::Count, count(retried)),
            ],
            vec![("attempt", json!(attempt))],
        );
    }

    fn broken_execution(&self) {
        self.emit(None, &[(BROKEN_EXECUTIONS, Unit::Count, 1.0)], Vec::new());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_emf_with_its_dimensions_and_metrics() {
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let line = emf_line(
            "ns",
            at,
            &[("FunctionName", "a2a-send"), ("Operation", "SendMessage")],
            &[
                ("Requests", Unit::Count, 1.0),
                ("Latency", Unit::Milliseconds, 12.5),
            ],
            &[("traceId", json!("Root=1-abc"))],
        );
        assert!(!line.contains('\n'));
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["_aws"]["Timestamp"], 1_700_000_000_123u64);
        let directive = &v["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "ns");
        assert_eq!(
            directive["Dimensions"],
            json!([["FunctionName", "Operation"]])
        );
        assert_eq!(
            directive["Metrics"],
            json!([{"Name": "Requests", "Unit": "Count"}, {"Name": "Latency", "Unit": "Milliseconds"}])
        );
        // Every dimension and metric named in the directive is a member of the root object
        // (what CloudWatch requires to extract it).
        assert_eq!(v["FunctionName"], "a2a-send");
        assert_eq!(v["Operation"], "SendMessage");
        assert_eq!(v["Requests"], 1.0);
        assert_eq!(v["Latency"], 12.5);
        assert_eq!(v["traceId"], "Root=1-abc");
    }

    fn captured() -> (EmfObserver, Arc<std::sync::Mutex<Vec<Value>>>) {
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink_lines = lines.clone();
        let observer = EmfObserver::with_sink(
            "ns",
            "fn",
            Arc::new(move |line: &str| {
                sink_lines
                    .lock()
                    .unwrap()
                    .push(serde_json::from_str(line).expect("a JSON line"));
            }),
        );
        (observer, lines)
    }

    #[test]
    fn errors_are_split_into_ours_and_the_callers() {
        let (observer, lines) = captured();
        observer.operation(
            Operation::GetTask,
            Duration::from_millis(3),
            Some(&A2AError::task_not_found("t1")),
        );
        observer.operation(
            Operation::GetTask,
            Duration::from_millis(3),
            Some(&A2AError::Internal("store".into())),
        );
        let lines = lines.lock().unwrap();
        assert_eq!(lines[0]["ClientErrors"], 1.0);
        assert_eq!(lines[0]["Errors"], 0.0);
        assert_eq!(lines[0]["error"], "TASK_NOT_FOUND");
        assert_eq!(lines[1]["Errors"], 1.0);
        assert_eq!(lines[1]["Operation"], "GetTask");
        // Errors also by function alone, the one metric per function the alarms watch.
        assert_eq!(
            lines[1]["_aws"]["CloudWatchMetrics"][1],
            json!({"Namespace": "ns", "Dimensions": [["FunctionName"]],
                   "Metrics": [{"Name": "Errors", "Unit": "Count"}]})
        );
        assert_eq!(lines[1]["FunctionName"], "fn");
    }

    #[test]
    fn an_error_in_a_started_stream_is_an_error_not_a_request() {
        let (observer, lines) = captured();
        observer.stream_failed(
            Operation::SendStreamingMessage,
            &A2AError::Internal("store".into()),
        );
        let lines = lines.lock().unwrap();
        assert_eq!(lines[0]["Errors"], 1.0);
        assert_eq!(lines[0]["ClientErrors"], 0.0);
        assert_eq!(lines[0]["Operation"], "SendStreamingMessage");
        assert!(lines[0].get("Requests").is_none(), "{}", lines[0]);
        assert_eq!(
            lines[0]["_aws"]["CloudWatchMetrics"][1]["Metrics"],
            json!([{"Name": "Errors", "Unit": "Count"}])
        );
    }

    #[test]
    fn by_function_alone_the_operation_is_a_property_not_a_dimension() {
        let (observer, lines) = captured();
        let observer = observer.with_detail(MetricsDetail::Function);
        observer.operation(
            Operation::GetTask,
            Duration::from_millis(3),
            Some(&A2AError::Internal("store".into())),
        );
        observer.task_finished(TaskState::Completed);
        let lines = lines.lock().unwrap();
        for line in lines.iter() {
            let directives = line["_aws"]["CloudWatchMetrics"].as_array().unwrap();
            assert_eq!(directives.len(), 1, "{line}");
            assert_eq!(directives[0]["Dimensions"], json!([["FunctionName"]]));
        }
        assert_eq!(lines[0]["Operation"], "GetTask");
        assert_eq!(lines[0]["Errors"], 1.0);
        assert_eq!(lines[1]["State"], "TASK_STATE_COMPLETED");
        assert_eq!(
            "function".parse::<MetricsDetail>(),
            Ok(MetricsDetail::Function)
        );
        assert!("all".parse::<MetricsDetail>().is_err());
    }

    #[test]
    fn a_last_failed_push_is_a_dead_letter() {
        let (observer, lines) = captured();
        let mut attempt = crate::PushAttempt {
            seq: 3,
            at: a2a_protocol::Timestamp::now(),
            result: crate::PushAttemptResult::Failed,
            http_status: Some(503),
            error: Some("webhook h answered 503".into()),
            final_attempt: false,
            number: 1,
        };
        observer.push_attempt(&attempt, 1);
        attempt.final_attempt = true;
        observer.push_attempt(&attempt, 8);
        let lines = lines.lock().unwrap();
        assert_eq!(
            (
                lines[0]["PushRetries"].as_f64(),
                lines[0]["PushDeadLetters"].as_f64()
            ),
            (Some(1.0), Some(0.0))
        );
        assert_eq!(
            (
                lines[1]["PushRetries"].as_f64(),
                lines[1]["PushDeadLetters"].as_f64()
            ),
            (Some(0.0), Some(1.0))
        );
        assert_eq!(lines[1]["attempt"], 8);
        assert_eq!(lines[1]["httpStatus"], 503);
        assert_eq!(
            lines[1]["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["FunctionName"]])
        );
    }
}
