//! Counting what each adapter call costs: requests per API, the capacity DynamoDB reports
//! (`ReturnConsumedCapacity=TOTAL`), and the capacity units AWS would bill, estimated from the
//! sizes of the items read and written.
//!
//! The estimate exists because emulators do not size items: moto reports a constant (1.0 for a
//! write or query, 0.5 for a get) whatever the item. The rules the estimate follows are AWS's
//! published ones (see `docs/cost.md`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

/// Which AWS service a call went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Service {
    /// DynamoDB.
    DynamoDb,
    /// SQS.
    Sqs,
}

/// One request an adapter made.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The service.
    pub service: Service,
    /// The API action, such as `TransactWriteItems`.
    pub api: &'static str,
    /// What the request went to: the table's name, `<table>/index/<index>` for a query of an
    /// index, or the queue's URL. The IAM test grants each function exactly these.
    pub resource: String,
    /// Capacity units the service reported (DynamoDB only; 0 when it reported none).
    pub reported_units: f64,
    /// Write request units AWS would bill, estimated from item sizes.
    pub estimated_wru: f64,
    /// Read request units AWS would bill, estimated from item sizes.
    pub estimated_rru: f64,
}

/// Collects [`Call`]s. Cloning shares the collection, so one meter can be attached to the
/// store and both queues.
#[derive(Debug, Clone, Default)]
pub struct Meter {
    calls: Arc<Mutex<Vec<Call>>>,
}

impl Meter {
    /// An empty meter.
    pub fn new() -> Self {
        Self::default()
    }

    /// Returns the calls recorded so far and starts afresh.
    pub fn take(&self) -> Vec<Call> {
        std::mem::take(&mut *self.lock())
    }

    pub(crate) fn record(&self, call: Call) {
        self.lock().push(call);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Call>> {
        // A panic while pushing cannot leave the vector half-updated: keep using it.
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The totals of a series of calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// DynamoDB requests by API.
    pub dynamodb: BTreeMap<&'static str, u32>,
    /// SQS requests by API.
    pub sqs: BTreeMap<&'static str, u32>,
    /// Capacity units DynamoDB reported.
    pub reported_units: f64,
    /// Estimated write request units.
    pub estimated_wru: f64,
    /// Estimated read request units.
    pub estimated_rru: f64,
}

impl Summary {
    /// Totals `calls`.
    pub fn of(calls: &[Call]) -> Self {
        let mut summary = Self::default();
        for call in calls {
            let by_api = match call.service {
                Service::DynamoDb => &mut summary.dynamodb,
                Service::Sqs => &mut summary.sqs,
            };
            *by_api.entry(call.api).or_default() += 1;
            summary.reported_units += call.reported_units;
            summary.estimated_wru += call.estimated_wru;
            summary.estimated_rru += call.estimated_rru;
        }
        summary
    }

    /// DynamoDB requests in all.
    pub fn dynamodb_requests(&self) -> u32 {
        self.dynamodb.values().sum()
    }

    /// DynamoDB write requests (the APIs that change items).
    pub fn dynamodb_writes(&self) -> u32 {
        self.dynamodb
            .iter()
            .filter(|(api, _)| is_write(api))
            .map(|(_, n)| n)
            .sum()
    }

    /// DynamoDB read requests.
    pub fn dynamodb_reads(&self) -> u32 {
        self.dynamodb_requests() - self.dynamodb_writes()
    }

    /// SQS requests in all.
    pub fn sqs_requests(&self) -> u32 {
        self.sqs.values().sum()
    }
}

fn is_write(api: &str) -> bool {
    matches!(
        api,
        "PutItem" | "UpdateItem" | "DeleteItem" | "TransactWriteItems" | "BatchWriteItem"
    )
}

fn list(by_api: &BTreeMap<&'static str, u32>) -> String {
    if by_api.is_empty() {
        return "-".into();
    }
    by_api
        .iter()
        .map(|(api, n)| format!("{n} {api}"))
        .collect::<Vec<_>>()
        .join(" + ")
}

impl fmt::Display for Summary {
    /// `DynamoDB requests | SQS requests | reported | est. WRU | est. RRU`, as table cells.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} | {} | {:.1} | {:.1} | {:.1}",
            list(&self.dynamodb),
            list(&self.sqs),
            self.reported_units,
            self.estimated_wru,
            self.estimated_rru
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_totals_by_service_and_api() {
        let meter = Meter::new();
        let call = |service, api, wru, rru| Call {
            service,
            api,
            resource: "t".into(),
            reported_units: 1.0,
            estimated_wru: wru,
            estimated_rru: rru,
        };
        meter.record(call(Service::DynamoDb, "TransactWriteItems", 6.0, 0.0));
        meter.record(call(Service::DynamoDb, "GetItem", 0.0, 1.0));
        meter.record(call(Service::DynamoDb, "GetItem", 0.0, 1.0));
        meter.record(call(Service::Sqs, "SendMessage", 0.0, 0.0));
        let summary = Summary::of(&meter.take());
        assert_eq!(summary.dynamodb_requests(), 3);
        assert_eq!(summary.dynamodb_writes(), 1);
        assert_eq!(summary.dynamodb_reads(), 2);
        assert_eq!(summary.sqs_requests(), 1);
        assert_eq!(summary.estimated_wru, 6.0);
        assert_eq!(
            summary.to_string(),
            "2 GetItem + 1 TransactWriteItems | 1 SendMessage | 4.0 | 6.0 | 2.0"
        );
        assert!(meter.take().is_empty());
    }
}
