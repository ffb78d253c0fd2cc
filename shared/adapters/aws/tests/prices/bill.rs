//! The monthly bill of a deployment beyond the requests' own units: what it costs idle, what
//! CloudWatch Logs and X-Ray add per million tasks, and the custom metrics and alarms, behind
//! each front door. `cost.rs` prints it and writes it to `$CARGO_TARGET_TMPDIR/cost-bill.md`;
//! `docs/cost.md`, "The monthly bill", is that file.
//!
//! Prices: AWS's public price pages for us-east-1, read on [`BILL_PRICES_DATE`], free tiers
//! ignored. What is assumed rather than measured is named so, with where it comes from.

use std::fmt::Write as _;
use std::path::Path;

use super::{
    per_million, FrontDoor, Totals, HTTP_MEMORY_MB, LAMBDA_GB_SECOND_ARM64, LAMBDA_REQUEST,
};
use a2a_aws::Summary;

/// When the prices below were read.
pub(crate) const BILL_PRICES_DATE: &str = "2026-11-26";

/// CloudWatch Logs (Standard class), per GB ingested.
const LOGS_INGESTED_GB: f64 = 0.50;
/// CloudWatch Logs, per GB-month stored (compressed; Logs compresses about 6 to 1, assumed).
const LOGS_STORED_GB_MONTH: f64 = 0.03;
const LOGS_COMPRESSION: f64 = 6.0;
/// CloudWatch custom metric (EMF extracts them), per metric-month, first 10,000.
const CUSTOM_METRIC_MONTH: f64 = 0.30;
/// CloudWatch alarm, standard resolution, per alarm metric-month.
const ALARM_MONTH: f64 = 0.10;
/// X-Ray, per trace recorded.
const XRAY_TRACE: f64 = 5.00 / 1e6;
/// Secrets Manager, per secret-month.
const SECRET_MONTH: f64 = 0.40;
/// SQS, per request: standard, FIFO.
const SQS_STANDARD: f64 = 0.40 / 1e6;
const SQS_FIFO: f64 = 0.50 / 1e6;
/// DynamoDB on demand, per read request unit.
const DYNAMODB_RRU: f64 = 0.125 / 1e6;

/// Minutes in a 30-day month.
const MINUTES: f64 = 30.0 * 24.0 * 60.0;
/// Lambda's SQS event source long-polls with 5 pollers to begin with, each a `ReceiveMessage`
/// of up to 20 s (AWS's documented starting point; `MaximumConcurrency` caps invocations, not
/// pollers).
const SQS_POLLS_A_MONTH: f64 = 5.0 * 3.0 * MINUTES;
/// The sweep: once a minute (`SweepSchedule`), on the worker (256 MB), about 50 ms (assumed),
/// 16 eventually consistent `Query`s of 0.5 RRU when nothing is due: one per lease partition
/// (expired inline leases) and one per due partition (due waits); each reads only the live
/// leases and the due waits, so this grows with executions running at once and waits due
/// at once, not with traffic (`a_sweep_of_due_waits_reads_only_what_is_due`).
const SWEEPS_A_MONTH: f64 = MINUTES;
const SWEEP_MS: f64 = 50.0;
const SWEEP_RRU: f64 = (8.0 + 8.0) * 0.5;
/// Lambda's own log lines per invocation at `SystemLogLevel` INFO, bytes: `platform.start`,
/// `platform.runtimeDone` and `platform.report` in the JSON format (assumed from Lambda's
/// documented shapes: about 150, 350 and 500 bytes). None at WARN.
const PLATFORM_LOG_BYTES: f64 = 1_000.0;
/// Our EMF lines per blocking echo, bytes: the operation's (two directives) and the finished
/// task's. The template test `the_metric_lines_the_bill_assumes` checks the functions' lines
/// are no longer.
pub(crate) const EMF_OPERATION_LINE_BYTES: usize = 800;
pub(crate) const EMF_TASK_LINE_BYTES: usize = 520;
/// X-Ray's default sampling: the first request each second, and 5 % of the rest.
const XRAY_RESERVOIR_PER_SECOND: f64 = 1.0;
const XRAY_RATE: f64 = 0.05;

/// Custom metrics the functions publish once every operation is used, per front door and
/// `MetricsDetail`: counted by the template test `the_metric_count_the_bill_assumes` from
/// the functions' surfaces and the metrics each writes.
pub(crate) const CUSTOM_METRICS: [(FrontDoor, &str, usize); 4] = [
    (FrontDoor::ApiGateway, "operation", 124),
    (FrontDoor::ApiGateway, "function", 44),
    (FrontDoor::FunctionUrl, "operation", 60),
    (FrontDoor::FunctionUrl, "function", 13),
];

/// The alarms `template.yaml` creates behind `front_door` (each resource of type
/// `AWS::CloudWatch::Alarm` whose condition holds; read from the file as text).
pub(crate) fn alarms(front_door: FrontDoor) -> usize {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../template.yaml");
    let text = std::fs::read_to_string(path).expect("template.yaml");
    let mut in_resources = false;
    let mut resources: Vec<(Option<String>, Option<String>)> = Vec::new();
    for line in text.lines() {
        if !line.starts_with(' ') && !line.is_empty() && !line.starts_with('#') {
            in_resources = line == "Resources:";
            continue;
        }
        if !in_resources {
            continue;
        }
        if line.starts_with("  ") && !line.starts_with("   ") && !line.trim_start().starts_with('#')
        {
            resources.push((None, None));
        } else if let Some(ty) = line.strip_prefix("    Type: ") {
            if let Some(r) = resources.last_mut() {
                r.0 = Some(ty.trim().to_owned());
            }
        } else if let Some(condition) = line.strip_prefix("    Condition: ") {
            if let Some(r) = resources.last_mut() {
                r.1 = Some(condition.trim().to_owned());
            }
        }
    }
    resources
        .iter()
        .filter(|(ty, _)| ty.as_deref() == Some("AWS::CloudWatch::Alarm"))
        .filter(|(_, condition)| match condition.as_deref() {
            None => true,
            Some("ViaApiGateway") => front_door == FrontDoor::ApiGateway,
            Some("ViaFunctionUrl") => front_door == FrontDoor::FunctionUrl,
            // The A2A-Lite channel function's: LiteChannels is off by default.
            Some("LiteViaApiGateway") => false,
            Some(other) => panic!("an alarm under condition {other}: count it here"),
        })
        .count()
}

/// One line of the idle bill.
pub(crate) struct Line {
    pub what: &'static str,
    pub why: String,
    pub dollars: f64,
}

/// What a deployment with no traffic costs in a month behind `front_door`, with the
/// template's defaults (two secrets: AuthMode api-key; `Tracing` Active).
pub(crate) fn idle(front_door: FrontDoor) -> Vec<Line> {
    let sweep_compute = SWEEPS_A_MONTH * 0.25 * SWEEP_MS / 1000.0 * LAMBDA_GB_SECOND_ARM64;
    let alarms = alarms(front_door);
    vec![
        Line {
            what: "work queue event source",
            why: format!(
                "{:.2} M long polls (5 pollers, 3 a minute)",
                SQS_POLLS_A_MONTH / 1e6
            ),
            dollars: SQS_POLLS_A_MONTH * SQS_STANDARD,
        },
        Line {
            what: "push queue event source",
            why: format!(
                "{:.2} M long polls on the FIFO queue",
                SQS_POLLS_A_MONTH / 1e6
            ),
            dollars: SQS_POLLS_A_MONTH * SQS_FIFO,
        },
        Line {
            what: "two secrets",
            why: "signing keys and API keys, $0.40 each".into(),
            dollars: 2.0 * SECRET_MONTH,
        },
        Line {
            what: "the sweep",
            why: format!(
                "{:.0} invocations: requests, {SWEEP_MS} ms at 256 MB, {SWEEP_RRU} RRU each",
                SWEEPS_A_MONTH
            ),
            dollars: SWEEPS_A_MONTH * (LAMBDA_REQUEST + SWEEP_RRU * DYNAMODB_RRU) + sweep_compute,
        },
        Line {
            what: "the sweep's logs",
            why: format!("Lambda's {PLATFORM_LOG_BYTES} bytes of platform lines per invocation"),
            dollars: SWEEPS_A_MONTH * PLATFORM_LOG_BYTES / 1e9 * LOGS_INGESTED_GB,
        },
        Line {
            what: "the sweep's traces",
            why: "each sweep is the only request of its second: always sampled".into(),
            dollars: SWEEPS_A_MONTH * XRAY_TRACE,
        },
        Line {
            what: "alarms",
            why: format!("{alarms} alarms, $0.10 each"),
            dollars: alarms as f64 * ALARM_MONTH,
        },
    ]
}

/// The share of requests X-Ray's default sampling traces at `per_second` requests a second.
pub(crate) fn sampled(per_second: f64) -> f64 {
    let reservoir = XRAY_RESERVOIR_PER_SECOND.min(per_second);
    (reservoir + XRAY_RATE * (per_second - reservoir)) / per_second
}

/// CloudWatch Logs for a million blocking echoes: Lambda's platform lines (at `SystemLogLevel`
/// INFO) and our two EMF lines, ingested and kept a month.
pub(crate) fn logs_per_million(platform_lines: bool) -> f64 {
    let bytes = (EMF_OPERATION_LINE_BYTES + EMF_TASK_LINE_BYTES) as f64
        + if platform_lines {
            PLATFORM_LOG_BYTES
        } else {
            0.0
        };
    let gb = bytes * 1e6 / 1e9;
    gb * LOGS_INGESTED_GB + gb / LOGS_COMPRESSION * LOGS_STORED_GB_MONTH
}

/// The bill, as `docs/cost.md` shows it.
pub(crate) fn bill(echo: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Prices of {BILL_PRICES_DATE} (us-east-1, free tiers ignored): CloudWatch Logs $0.50 per GB \
         ingested and $0.03 per GB-month stored, custom metrics $0.30 and alarms $0.10 a month \
         each, X-Ray $5.00 per million traces, Secrets Manager $0.40 per secret a month, SQS \
         $0.40 / $0.50 per million (standard / FIFO).\n"
    );
    let _ = writeln!(out, "**Idle**, a month with no traffic:\n");
    let _ = writeln!(
        out,
        "| what | why | ApiGateway | FunctionUrl |\n|---|---|---:|---:|"
    );
    let api = idle(FrontDoor::ApiGateway);
    let url = idle(FrontDoor::FunctionUrl);
    for (a, u) in api.iter().zip(&url) {
        let why = if a.why == u.why {
            a.why.clone()
        } else {
            format!("{} / {}", a.why, u.why)
        };
        let _ = writeln!(
            out,
            "| {} | {why} | ${:.2} | ${:.2} |",
            a.what, a.dollars, u.dollars
        );
    }
    let total = |lines: &[Line]| lines.iter().map(|l| l.dollars).sum::<f64>();
    let _ = writeln!(
        out,
        "| **total** | | **${:.2}** | **${:.2}** |\n",
        total(&api),
        total(&url)
    );

    let _ = writeln!(
        out,
        "**Per million blocking echo tasks**, everything included (the \"measured\" rows of \
         \"Per million tasks, per front door\" below, plus CloudWatch Logs and X-Ray):\n"
    );
    let _ = writeln!(
        out,
        "| front door | requests, compute, front door, DynamoDB, SQS | logs (INFO / WARN system level) | \
         traces at ≤ 1 task/s / 100 tasks/s / PassThrough | total (INFO, ≤ 1/s) | total (WARN, 100/s) |\n\
         |---|---:|---:|---:|---:|---:|"
    );
    for door in [FrontDoor::FunctionUrl, FrontDoor::ApiGateway] {
        let t: Totals = per_million(
            door,
            HTTP_MEMORY_MB,
            super::echo_round_trips(echo),
            echo.estimated_wru,
            echo.estimated_rru,
            echo.sqs_requests(),
        );
        let (info, warn) = (logs_per_million(true), logs_per_million(false));
        let (quiet, busy) = (
            sampled(1.0) * 1e6 * XRAY_TRACE,
            sampled(100.0) * 1e6 * XRAY_TRACE,
        );
        let _ = writeln!(
            out,
            "| {door:?} | ${:.2} | ${info:.2} / ${warn:.2} | ${quiet:.2} / ${busy:.2} / $0 | **${:.2}** | **${:.2}** |",
            t.total(),
            t.total() + info + quiet,
            t.total() + warn + busy,
        );
    }
    let _ = writeln!(
        out,
        "\n**Custom metrics**, a month, once every operation is used (each metric with data in the \
         month is billed; `MetricsDetail`):\n"
    );
    let _ = writeln!(
        out,
        "| front door | `MetricsDetail` | metrics | a month |\n|---|---|---:|---:|"
    );
    for (door, detail, count) in CUSTOM_METRICS {
        let _ = writeln!(
            out,
            "| {door:?} | `{detail}` | {count} | ${:.2} |",
            count as f64 * CUSTOM_METRIC_MONTH
        );
    }
    out
}

/// Prints [`bill`] and writes it to `$CARGO_TARGET_TMPDIR/cost-bill.md`.
pub(crate) fn print_and_write(echo: &Summary) {
    let text = bill(echo);
    println!("\n{text}");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cost-bill.md");
    std::fs::write(&path, &text).expect("write the bill");
    println!("(written to {})", path.display());
}

#[test]
fn the_bill_adds_up_with_the_published_prices() {
    // Idle behind a Function URL: the two event sources ($0.26 + $0.32), two secrets ($0.80),
    // the sweep with its logs and traces, and the alarms.
    let url = idle(FrontDoor::FunctionUrl);
    let polls = url[0].dollars + url[1].dollars;
    assert!((polls - (648_000.0 * 0.40 + 648_000.0 * 0.50) / 1e6).abs() < 1e-9);
    assert!((url[2].dollars - 0.80).abs() < 1e-9);
    assert!(
        (url[5].dollars - 43_200.0 * 5.0 / 1e6).abs() < 1e-9,
        "the sweep's traces"
    );
    let alarms_url = alarms(FrontDoor::FunctionUrl);
    let alarms_api = alarms(FrontDoor::ApiGateway);
    assert!((url[6].dollars - alarms_url as f64 * 0.10).abs() < 1e-9);
    // API Gateway's eight functions each bring errors, throttles and server-error alarms, and
    // the stage its 5xx alarm, where the Function URL has the front function and its URL's
    // 5xx, and the relay function with its errors, throttles, URL's 5xx and broken
    // executions (it serves no operation: no server-error alarm).
    assert_eq!(alarms_api - alarms_url, 8 * 3 + 1 - (3 + 1) - 4);
    // The figures with the alarms of its day (24 and 10) and no traces: $3.8 and $2.4.
    let before: f64 = url.iter().take(5).map(|l| l.dollars).sum();
    assert!(
        (before + 2.40 - 3.8).abs() < 0.1 && (before + 1.00 - 2.4).abs() < 0.1,
        "{before}"
    );
    // Sampling: a quiet agent is traced on every request, a busy one on about 6 %.
    assert_eq!(sampled(0.5), 1.0);
    assert!((sampled(100.0) - (1.0 + 0.05 * 99.0) / 100.0).abs() < 1e-12);
    // A million echoes log about 2.3 GB at SystemLogLevel INFO: $1.16 with a month of storage.
    let logs = logs_per_million(true);
    let gb = (800.0 + 520.0 + 1_000.0) / 1e3;
    assert!((logs - (gb * 0.50 + gb / 6.0 * 0.03)).abs() < 1e-9);
    // What the docs say idle costs is what this computes.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    for (door, file) in [
        (FrontDoor::ApiGateway, "README.md"),
        (FrontDoor::FunctionUrl, "README.md"),
        (FrontDoor::ApiGateway, "docs/cost.md"),
        (FrontDoor::FunctionUrl, "docs/lambda.md"),
        (FrontDoor::ApiGateway, "template.yaml"),
    ] {
        let total: f64 = idle(door).iter().map(|l| l.dollars).sum();
        let text = std::fs::read_to_string(root.join(file)).expect(file);
        assert!(
            text.contains(&format!("${total:.2}")),
            "{file} does not say idle {door:?} is ${total:.2} a month"
        );
    }
    // Custom metrics: $0.30 each.
    assert!((CUSTOM_METRICS[0].2 as f64 * 0.30 - 37.2).abs() < 1e-9);
}
