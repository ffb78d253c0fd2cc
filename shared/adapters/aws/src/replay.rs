//! Replaying a stream batch the fan-out gave up on.
//!
//! The fan-out function's event source mapping retries a failing batch a bounded number of
//! times (`template.yaml`: `MaximumRetryAttempts`, `MaximumRecordAgeInSeconds`), then sends a
//! record of it to the on-failure destination (an SQS queue, alarmed) and goes on with the
//! shard. That record names the batch, not its content: the stream, the shard and the first
//! and last sequence numbers (`DDBStreamBatchInfo`). While the stream still holds those records
//! (24 hours from their write), `StreamRange::read` reads them again, so the fan-out function
//! can hand the same writes to the push queue once the cause is fixed (docs/push.md,
//! "Replaying a failed fan-out batch"). Jobs are de-duplicated by task, event and config, and
//! receivers drop a repeated `(taskId, seq)`, so a replay of a batch that partly went through
//! repeats nothing a receiver keeps.

use aws_sdk_dynamodbstreams::types::ShardIteratorType;
use serde::Deserialize;
use serde_json::Value;

use a2a_core::StoreError;

use crate::fanout::{passes_filter, record_json};

/// The batch an on-failure destination record names (its `DDBStreamBatchInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamRange {
    /// The stream's ARN.
    pub stream_arn: String,
    /// The shard the batch came from.
    pub shard_id: String,
    /// The sequence number of the batch's first record.
    pub start_sequence_number: String,
    /// The sequence number of the batch's last record.
    pub end_sequence_number: String,
}

/// Reads ranges of a stream (the Streams API: `GetShardIterator`, `GetRecords`).
#[derive(Debug, Clone)]
pub struct StreamReader {
    client: aws_sdk_dynamodbstreams::Client,
}

impl StreamReader {
    /// A reader with the clients of `sdk`.
    pub fn new(sdk: &aws_config::SdkConfig) -> Self {
        Self {
            client: aws_sdk_dynamodbstreams::Client::new(sdk),
        }
    }

    /// The records of `range` that pass the fan-out's filter, in order, as Lambda's event
    /// source mapping would hand them to the function. Fails if the stream no longer holds
    /// the range's first record (it keeps records 24 hours).
    pub async fn read(&self, range: &StreamRange) -> Result<Vec<Value>, StoreError> {
        range.read(&self.client).await
    }
}

/// How many empty pages in a row end a read that has not reached the range's end: a shard
/// still open can answer empty pages before its later records, but the range's records were
/// all written long before.
const EMPTY_PAGES: usize = 5;

impl StreamRange {
    /// The range an on-failure destination record names: the record itself (what the function
    /// is invoked with on a replay) or an SQS message body holding it. `None` for anything else.
    pub fn from_failure_record(record: &Value) -> Option<Self> {
        let info = record.get("DDBStreamBatchInfo")?;
        serde_json::from_value(info.clone()).ok()
    }

    async fn read(
        &self,
        streams: &aws_sdk_dynamodbstreams::Client,
    ) -> Result<Vec<Value>, StoreError> {
        let backend = |what: &str, e: String| StoreError::Backend(format!("{what}: {e}"));
        let mut iterator = streams
            .get_shard_iterator()
            .stream_arn(&self.stream_arn)
            .shard_id(&self.shard_id)
            .shard_iterator_type(ShardIteratorType::AtSequenceNumber)
            .sequence_number(&self.start_sequence_number)
            .send()
            .await
            .map_err(|e| {
                backend(
                    "GetShardIterator (the stream may no longer hold the batch: it keeps records 24 hours)",
                    aws_sdk_dynamodbstreams::error::DisplayErrorContext(e).to_string(),
                )
            })?
            .shard_iterator
            .ok_or_else(|| StoreError::Backend("GetShardIterator: no iterator".into()))?;
        let mut records = Vec::new();
        let mut empty = 0;
        loop {
            let out = streams
                .get_records()
                .shard_iterator(&iterator)
                .send()
                .await
                .map_err(|e| {
                    backend(
                        "GetRecords",
                        aws_sdk_dynamodbstreams::error::DisplayErrorContext(e).to_string(),
                    )
                })?;
            let mut past_end = false;
            for record in out.records() {
                let seq = record
                    .dynamodb()
                    .and_then(|d| d.sequence_number())
                    .unwrap_or_default();
                if sequence_after(seq, &self.end_sequence_number) {
                    past_end = true;
                    break;
                }
                records.push(record_json(record));
            }
            let reached_end = records.last().is_some_and(|r| {
                r.pointer("/dynamodb/SequenceNumber")
                    .and_then(Value::as_str)
                    == Some(self.end_sequence_number.as_str())
            });
            empty = if out.records().is_empty() {
                empty + 1
            } else {
                0
            };
            match out.next_shard_iterator {
                Some(next) if !past_end && !reached_end && empty < EMPTY_PAGES => iterator = next,
                _ => break,
            }
        }
        Ok(records.into_iter().filter(passes_filter).collect())
    }
}

/// Whether sequence number `a` comes after `b` (decimal strings of up to 40 digits).
fn sequence_after(a: &str, b: &str) -> bool {
    (a.len(), a) > (b.len(), b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_failure_record_names_its_range() {
        // The shape Lambda sends to an on-failure destination for a DynamoDB stream.
        let record = json!({
            "requestContext": {"condition": "RetryAttemptsExhausted", "approximateInvokeCount": 101},
            "version": "1.0",
            "DDBStreamBatchInfo": {
                "shardId": "shardId-00000001",
                "startSequenceNumber": "800000000003",
                "endSequenceNumber": "1200000000001",
                "approximateArrivalOfFirstRecord": "2026-11-26T10:00:00Z",
                "approximateArrivalOfLastRecord": "2026-11-26T10:00:01Z",
                "batchSize": 3,
                "streamArn": "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2026"
            }
        });
        let range = StreamRange::from_failure_record(&record).expect("a range");
        assert_eq!(range.shard_id, "shardId-00000001");
        assert_eq!(range.end_sequence_number, "1200000000001");
        assert!(StreamRange::from_failure_record(&json!({"Records": []})).is_none());
        // Numeric order, not text order.
        assert!(sequence_after("1200000000001", "800000000003"));
        assert!(!sequence_after("800000000003", "1200000000001"));
        assert!(!sequence_after("5", "5"));
    }
}
