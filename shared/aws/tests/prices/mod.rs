//! What a blocking echo costs per million tasks, per front door: Lambda requests and compute at
//! the template's memory, the front door's own charge, DynamoDB from the units the cost test
//! measured, and SQS. The cost test (`cost.rs`) calls [`print_and_write`] with the blocking
//! echo's measured [`Summary`], so the totals in `docs/cost.md` follow the store's units.
//!
//! Prices: AWS's public on-demand price pages for us-east-1, arm64, read on [`PRICES_DATE`]
//! (free tiers ignored).

use std::fmt::Write as _;

use a2a_aws::Summary;

/// When the prices below were read.
pub const PRICES_DATE: &str = "2026-11-23";

/// Lambda, per request.
const LAMBDA_REQUEST: f64 = 0.20 / 1e6;
/// Lambda on arm64, per GB-second (first 7.5 billion GB-seconds a month).
const LAMBDA_GB_SECOND_ARM64: f64 = 0.000_013_333_4;
/// API Gateway REST API, per request (first 333 million a month).
const API_GATEWAY_REST_REQUEST: f64 = 3.50 / 1e6;
/// DynamoDB on-demand, per write request unit.
const DYNAMODB_WRU: f64 = 0.625 / 1e6;
/// DynamoDB on-demand, per read request unit.
const DYNAMODB_RRU: f64 = 0.125 / 1e6;
/// SQS, per request (64 KB chunks), standard queue; FIFO is $0.50.
const SQS_REQUEST: f64 = 0.40 / 1e6;

/// The HTTP functions' memory (`template.yaml`, `MemorySize` of the HTTP functions; the
/// arithmetic is in `docs/lambda.md`, "Memory").
pub const HTTP_MEMORY_MB: f64 = 128.0;
/// Lambda gives a function one full vCPU at this much memory, and a proportional share below.
const ONE_VCPU_MB: f64 = 1769.0;
/// CPU time a warm blocking echo takes on one full vCPU, ms: the `send` function's release
/// build on x86 against moto, `a2a-cold-start --warm 20`, median of 5 (docs/lambda.md, "Cold
/// start" and "Memory").
pub const ECHO_CPU_MS_AT_ONE_VCPU: f64 = 3.3;
/// Assumed round trip of one DynamoDB request from Lambda in the same region, ms.
pub const DYNAMODB_ROUND_TRIP_MS: f64 = 5.0;

/// The two front doors of `template.yaml` (parameter `FrontDoor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontDoor {
    /// One function behind a Lambda Function URL: no charge per request.
    FunctionUrl,
    /// API Gateway REST in front of the per-operation functions.
    ApiGateway,
}

/// Per-million-task dollars, by item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Totals {
    /// Lambda's per-request charge.
    pub lambda_requests: f64,
    /// Lambda's GB-seconds.
    pub lambda_compute: f64,
    /// The front door's own per-request charge.
    pub front_door: f64,
    /// DynamoDB request units.
    pub dynamodb: f64,
    /// SQS requests.
    pub sqs: f64,
}

impl Totals {
    /// The sum.
    pub fn total(&self) -> f64 {
        self.lambda_requests + self.lambda_compute + self.front_door + self.dynamodb + self.sqs
    }
}

/// Billed duration of one request, ms: the CPU time at the memory's share of a vCPU, plus the
/// waits on DynamoDB (billed too: the function is running while it waits), rounded up to the
/// millisecond as Lambda bills.
pub fn billed_ms(memory_mb: f64, cpu_ms_at_one_vcpu: f64, dynamodb_requests: u32) -> f64 {
    let cpu = cpu_ms_at_one_vcpu * (ONE_VCPU_MB / memory_mb).max(1.0);
    (cpu + f64::from(dynamodb_requests) * DYNAMODB_ROUND_TRIP_MS).ceil()
}

/// What a million tasks cost behind `front_door`, each taking `wru` + `rru` and
/// `sqs_requests`, run by one invocation of `memory_mb` making `dynamodb_requests`.
pub fn per_million(
    front_door: FrontDoor,
    memory_mb: f64,
    dynamodb_requests: u32,
    wru: f64,
    rru: f64,
    sqs_requests: u32,
) -> Totals {
    let gb_seconds = memory_mb / 1024.0
        * billed_ms(memory_mb, ECHO_CPU_MS_AT_ONE_VCPU, dynamodb_requests)
        / 1000.0;
    let million = 1e6;
    Totals {
        lambda_requests: LAMBDA_REQUEST * million,
        lambda_compute: gb_seconds * LAMBDA_GB_SECOND_ARM64 * million,
        front_door: match front_door {
            FrontDoor::FunctionUrl => 0.0,
            FrontDoor::ApiGateway => API_GATEWAY_REST_REQUEST * million,
        },
        dynamodb: (wru * DYNAMODB_WRU + rru * DYNAMODB_RRU) * million,
        sqs: f64::from(sqs_requests) * SQS_REQUEST * million,
    }
}

/// The per-million table for a blocking echo whose measured cost is `echo`, per front door,
/// beside the same without its idempotency read (what the issue's $1.50 would need).
pub fn blocking_echo_table(echo: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Per million blocking echo tasks (us-east-1, arm64, prices of {PRICES_DATE}; HTTP \
         functions at {HTTP_MEMORY_MB} MB, {ECHO_CPU_MS_AT_ONE_VCPU} ms CPU at one vCPU, \
         {DYNAMODB_ROUND_TRIP_MS} ms per DynamoDB request):\n"
    );
    let _ = writeln!(
        out,
        "| front door | store | billed ms | Lambda requests | Lambda compute | front door | \
         DynamoDB | SQS | total |\n|---|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    let rows = [
        (
            format!(
                "measured: {:.1} WRU + {:.1} RRU, {} requests",
                echo.estimated_wru,
                echo.estimated_rru,
                echo.dynamodb_requests()
            ),
            echo.dynamodb_requests(),
            echo.estimated_wru,
            echo.estimated_rru,
            echo.sqs_requests(),
        ),
        (
            format!(
                "without the idempotency read: {:.1} WRU, {} requests",
                echo.estimated_wru,
                echo.dynamodb_requests().saturating_sub(1)
            )
            .replace(" 1 requests", " 1 request"),
            echo.dynamodb_requests().saturating_sub(1),
            echo.estimated_wru,
            0.0,
            echo.sqs_requests(),
        ),
    ];
    for door in [FrontDoor::FunctionUrl, FrontDoor::ApiGateway] {
        for (store, requests, wru, rru, sqs) in &rows {
            let t = per_million(door, HTTP_MEMORY_MB, *requests, *wru, *rru, *sqs);
            let _ = writeln!(
                out,
                "| {door:?} | {store} | {} | ${:.2} | ${:.3} | ${:.2} | ${:.3} | ${:.2} | **${:.2}** |",
                billed_ms(HTTP_MEMORY_MB, ECHO_CPU_MS_AT_ONE_VCPU, *requests),
                t.lambda_requests,
                t.lambda_compute,
                t.front_door,
                t.dynamodb,
                t.sqs,
                t.total()
            );
        }
    }
    out
}

/// Prints [`blocking_echo_table`] and writes it to `$CARGO_TARGET_TMPDIR/cost-totals.md`.
pub fn print_and_write(echo: &Summary) {
    let table = blocking_echo_table(echo);
    println!("\n{table}");
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cost-totals.md");
    std::fs::write(&path, &table).expect("write the totals");
    println!("(written to {})", path.display());
}

#[test]
fn the_totals_add_up_with_the_published_prices() {
    // The figure for today's echo: 9 WRU + 3 RRU is $6.0 per million in DynamoDB.
    let today = per_million(FrontDoor::FunctionUrl, 128.0, 5, 9.0, 3.0, 0);
    assert!((today.dynamodb - 6.0).abs() < 1e-9, "{today:?}");
    assert_eq!(today.front_door, 0.0);
    let api = per_million(FrontDoor::ApiGateway, 128.0, 5, 9.0, 3.0, 0);
    assert!((api.total() - today.total() - 3.50).abs() < 1e-9);
    // Below one vCPU, CPU time stretches with less memory; waits do not.
    assert_eq!(billed_ms(1769.0, 2.0, 2), 12.0);
    assert_eq!(billed_ms(128.0, 2.0, 0), (2.0f64 * 1769.0 / 128.0).ceil());
}
