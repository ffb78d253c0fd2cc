//! What a blocking echo costs per million tasks, per front door: Lambda requests and compute at
//! the template's memory, the front door's own charge, DynamoDB from the units the cost test
//! measured, and SQS. The cost test (`cost.rs`) calls [`print_and_write`] with the blocking
//! echo's measured [`Summary`], so the totals in `docs/cost.md` follow the store's units.
//!
//! Prices: AWS's public on-demand price pages for us-east-1, arm64, read on [`PRICES_DATE`]
//! (free tiers ignored).

pub(crate) mod bill;

use std::fmt::Write as _;

use a2a_aws::Summary;

/// When the prices below were read.
pub(crate) const PRICES_DATE: &str = "2026-11-23";

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
/// DynamoDB provisioned capacity, per write capacity unit-hour (one write of up to 1 KB a
/// second for an hour).
const DYNAMODB_WCU_HOUR: f64 = 0.000_65;
/// DynamoDB provisioned capacity, per read capacity unit-hour (one strongly consistent read of
/// up to 4 KB a second for an hour).
const DYNAMODB_RCU_HOUR: f64 = 0.000_13;
/// The utilisation DynamoDB's auto scaling keeps provisioned capacity at by default.
pub(crate) const PROVISIONED_UTILISATION: f64 = 0.70;

/// The HTTP functions' memory (`template.yaml`, `MemorySize` of the HTTP functions; the
/// arithmetic is in `docs/lambda.md`, "Memory").
pub(crate) const HTTP_MEMORY_MB: f64 = 128.0;
/// Lambda gives a function one full vCPU at this much memory, and a proportional share below.
const ONE_VCPU_MB: f64 = 1769.0;
/// CPU time a warm blocking echo takes on one full vCPU, ms: the `send` function's release
/// build on x86 against moto, `a2a-cold-start --warm 20`, median of 5 (docs/lambda.md, "Cold
/// start" and "Memory").
pub(crate) const ECHO_CPU_MS_AT_ONE_VCPU: f64 = 3.3;
/// Assumed round trip of one DynamoDB request from Lambda in the same region, ms.
pub(crate) const DYNAMODB_ROUND_TRIP_MS: f64 = 5.0;

/// The two front doors of `template.yaml` (parameter `FrontDoor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrontDoor {
    /// One function behind a Lambda Function URL: no charge per request.
    FunctionUrl,
    /// API Gateway REST in front of the per-operation functions.
    ApiGateway,
}

/// Per-million-task dollars, by item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Totals {
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
    pub(crate) fn total(&self) -> f64 {
        self.lambda_requests + self.lambda_compute + self.front_door + self.dynamodb + self.sqs
    }
}

/// Billed duration of one request, ms: the CPU time at the memory's share of a vCPU, plus the
/// waits on DynamoDB (billed too: the function is running while it waits), rounded up to the
/// millisecond as Lambda bills.
pub(crate) fn billed_ms(memory_mb: f64, cpu_ms_at_one_vcpu: f64, dynamodb_requests: u32) -> f64 {
    let cpu = cpu_ms_at_one_vcpu * (ONE_VCPU_MB / memory_mb).max(1.0);
    (cpu + f64::from(dynamodb_requests) * DYNAMODB_ROUND_TRIP_MS).ceil()
}

/// How DynamoDB bills the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Billing {
    /// On-demand (the template's `PAY_PER_REQUEST`): per request unit.
    OnDemand,
    /// Provisioned capacity used at this fraction on average (auto scaling's target).
    Provisioned(f64),
}

impl Billing {
    /// Dollars per write and per read request unit.
    fn unit_prices(self) -> (f64, f64) {
        match self {
            Self::OnDemand => (DYNAMODB_WRU, DYNAMODB_RRU),
            Self::Provisioned(used) => (
                DYNAMODB_WCU_HOUR / 3600.0 / used,
                DYNAMODB_RCU_HOUR / 3600.0 / used,
            ),
        }
    }
}

/// What a million tasks cost behind `front_door`, each taking `wru` + `rru` and
/// `sqs_requests`, run by one invocation of `memory_mb` making `dynamodb_requests`.
pub(crate) fn per_million(
    front_door: FrontDoor,
    memory_mb: f64,
    dynamodb_requests: u32,
    wru: f64,
    rru: f64,
    sqs_requests: u32,
) -> Totals {
    per_million_billed(
        front_door,
        memory_mb,
        dynamodb_requests,
        wru,
        rru,
        sqs_requests,
        Billing::OnDemand,
    )
}

/// [`per_million`] with the table billed as `billing`.
pub(crate) fn per_million_billed(
    front_door: FrontDoor,
    memory_mb: f64,
    dynamodb_requests: u32,
    wru: f64,
    rru: f64,
    sqs_requests: u32,
    billing: Billing,
) -> Totals {
    let (wru_price, rru_price) = billing.unit_prices();
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
        dynamodb: (wru * wru_price + rru * rru_price) * million,
        sqs: f64::from(sqs_requests) * SQS_REQUEST * million,
    }
}

/// The DynamoDB round trips a blocking echo waits for: its requests but its count's
/// `UpdateItem`, written beside its head's `PutItem` at the same time.
pub(crate) fn echo_round_trips(echo: &Summary) -> u32 {
    let beside = echo.dynamodb.get("UpdateItem").copied().unwrap_or(0);
    echo.dynamodb_requests().saturating_sub(beside)
}

/// The per-million table for a blocking echo whose measured cost is `echo`, per front door,
/// beside what it would cost with a cheaper idempotency read, without it, and on provisioned capacity.
pub(crate) fn blocking_echo_table(echo: &Summary) -> String {
    let waits = echo_round_trips(echo);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Per million blocking echo tasks (us-east-1, arm64, prices of {PRICES_DATE}; HTTP \
         functions at {HTTP_MEMORY_MB} MB, {ECHO_CPU_MS_AT_ONE_VCPU} ms CPU at one vCPU, \
         {DYNAMODB_ROUND_TRIP_MS} ms per DynamoDB round trip):\n"
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
            waits,
            echo.estimated_wru,
            echo.estimated_rru,
            echo.sqs_requests(),
            Billing::OnDemand,
        ),
        (
            format!(
                "idempotency read eventually consistent (not done): {:.1} WRU + {:.1} RRU",
                echo.estimated_wru,
                echo.estimated_rru / 2.0
            ),
            waits,
            echo.estimated_wru,
            echo.estimated_rru / 2.0,
            echo.sqs_requests(),
            Billing::OnDemand,
        ),
        (
            format!(
                "without the idempotency read: {:.1} WRU, {} requests",
                echo.estimated_wru,
                echo.dynamodb_requests().saturating_sub(1)
            )
            .replace(" 1 requests", " 1 request"),
            waits.saturating_sub(1),
            echo.estimated_wru,
            0.0,
            echo.sqs_requests(),
            Billing::OnDemand,
        ),
        (
            format!(
                "measured, `TableCapacity=Provisioned` used at {:.0} %",
                PROVISIONED_UTILISATION * 100.0
            ),
            waits,
            echo.estimated_wru,
            echo.estimated_rru,
            echo.sqs_requests(),
            Billing::Provisioned(PROVISIONED_UTILISATION),
        ),
    ];
    for door in [FrontDoor::FunctionUrl, FrontDoor::ApiGateway] {
        for (store, requests, wru, rru, sqs, billing) in &rows {
            let t = per_million_billed(door, HTTP_MEMORY_MB, *requests, *wru, *rru, *sqs, *billing);
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
pub(crate) fn print_and_write(echo: &Summary) {
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
    // The floor the issue names, before any compute: 2 WRU + 1 RRU + a Lambda request is
    // already more than $1.50 per million on demand.
    let floor = 2.0 * DYNAMODB_WRU + DYNAMODB_RRU + LAMBDA_REQUEST;
    assert!((floor * 1e6 - 1.575).abs() < 1e-9);
    // Provisioned capacity fully used: a write unit-second for $0.18 per million.
    let full = per_million_billed(
        FrontDoor::FunctionUrl,
        128.0,
        2,
        1.0,
        0.0,
        0,
        Billing::Provisioned(1.0),
    );
    assert!((full.dynamodb - 0.000_65 / 3600.0 * 1e6).abs() < 1e-9);
}
