//! The fan-out function: the consumer of the task table's stream. Lambda's event source mapping
//! hands it batches of records, filtered to writes of heads of tasks with push configs
//! ([`a2a_aws::fanout::FILTER_PATTERN`]), so a task without push configs never invokes it. Each
//! write's new events become push jobs ([`A2aService::fan_out`]); a batch whose jobs cannot be
//! enqueued is reported from its first record, and the mapping hands it over again (enqueueing
//! is idempotent: jobs are de-duplicated by task, event and config).
//!
//! Lambda counts a partial batch response as a successful invocation, so such a failure is
//! counted as the metric `FanoutFailures` (alarmed by the template). After the mapping's last
//! retry, a record of the batch goes to the on-failure destination (an SQS queue, alarmed too);
//! invoked with that record, the function reads the batch from the stream again and fans it out
//! ([`a2a_aws::replay::StreamRange`]).

use std::sync::Arc;

use a2a_aws::replay::{StreamRange, StreamReader};
use a2a_core::{A2aService, Agent};
use lambda_runtime::{service_fn, LambdaEvent};
use serde_json::{json, Value};

use crate::{EmfObserver, Error, Init, KeyUse};

/// The fan-out function, until the runtime stops the instance.
pub async fn run_fanout(agent: Arc<dyn Agent>) -> Result<(), Error> {
    let init = Init::from_env(agent, KeyUse::None).await?;
    let batch = Arc::new(
        FanoutBatch::new(init.service(init.settings.public_base_url.as_deref()))
            .with_metrics(init.settings.metrics())
            .with_streams(StreamReader::new(&init.sdk)),
    );
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let batch = batch.clone();
        async move {
            let answer = batch.handle_invocation(&event.payload).await;
            a2a_telemetry::flush().await;
            answer
        }
    }))
    .await
}

/// The fan-out function's batch handler.
pub struct FanoutBatch {
    service: A2aService,
    metrics: Option<EmfObserver>,
    streams: Option<StreamReader>,
}

impl FanoutBatch {
    /// A handler whose `service` builds the jobs and enqueues them on the push queue.
    pub fn new(service: A2aService) -> Self {
        Self {
            service,
            metrics: None,
            streams: None,
        }
    }

    /// Counts failed batches as `FanoutFailures` in `metrics`.
    pub fn with_metrics(self, metrics: EmfObserver) -> Self {
        Self {
            metrics: Some(metrics),
            ..self
        }
    }

    /// Reads the stream with `streams` to replay a batch the mapping gave up on.
    pub fn with_streams(self, streams: StreamReader) -> Self {
        Self {
            streams: Some(streams),
            ..self
        }
    }

    /// One invocation: a batch of stream records from the event source mapping, or a record of
    /// the on-failure destination (a batch to replay). A replay that fails is the invocation's
    /// error, so whoever started it sees why.
    pub async fn handle_invocation(&self, payload: &Value) -> Result<Value, Error> {
        match StreamRange::from_failure_record(payload) {
            // Boxed: the Streams API's futures nested in this one pass the compiler's query
            // depth when it lays out the function's whole `main`.
            Some(range) => Box::pin(self.replay(&range)).await,
            None => Ok(self.handle(payload).await),
        }
    }

    /// Enqueues the push jobs of every write in the batch (`{"Records": [...]}` of a DynamoDB
    /// stream), in order, and answers the partial batch response: nothing failed, or the whole
    /// batch from its first record.
    pub async fn handle(&self, event: &Value) -> Value {
        let records = event
            .get("Records")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let appended = a2a_aws::fanout::appended_in_records(&records);
        match self.service.fan_out(&appended).await {
            Ok(()) => json!({ "batchItemFailures": [] }),
            Err(err) => {
                tracing::error!(error = %err, records = records.len(), "enqueueing push jobs failed; the batch is retried");
                if let Some(metrics) = &self.metrics {
                    metrics.fanout_failure(records.len(), &err.to_string());
                }
                let first = records
                    .first()
                    .and_then(|r| r.pointer("/dynamodb/SequenceNumber"))
                    .cloned()
                    .unwrap_or(Value::Null);
                json!({ "batchItemFailures": [{ "itemIdentifier": first }] })
            }
        }
    }

    /// Reads the batch `range` names from the stream again and enqueues its push jobs.
    async fn replay(&self, range: &StreamRange) -> Result<Value, Error> {
        let streams = self
            .streams
            .as_ref()
            .ok_or("this handler cannot read the stream (no streams client)")?;
        let records = streams.read(range).await?;
        let appended = a2a_aws::fanout::appended_in_records(&records);
        self.service.fan_out(&appended).await?;
        tracing::info!(
            shard = %range.shard_id,
            records = records.len(),
            writes = appended.len(),
            "replayed a failed fan-out batch"
        );
        Ok(json!({ "replayedRecords": records.len(), "writes": appended.len() }))
    }
}
