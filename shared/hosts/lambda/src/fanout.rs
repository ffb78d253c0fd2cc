//! The fan-out function: the consumer of the task table's stream. Lambda's event source mapping
//! hands it batches of records, filtered to writes of heads of tasks with push configs
//! ([`a2a_aws::fanout::FILTER_PATTERN`]), so a task without push configs never invokes it. Each
//! write's new events become push jobs ([`A2aService::fan_out`]); a batch whose jobs cannot be
//! enqueued is reported from its first record, and the mapping hands it over again (enqueueing
//! is idempotent: jobs are de-duplicated by task, event and config).

use std::sync::Arc;

use a2a_core::{A2aService, Agent};
use lambda_runtime::{service_fn, LambdaEvent};
use serde_json::{json, Value};

use crate::{Error, Init, KeyUse};

/// The fan-out function, until the runtime stops the instance.
pub async fn run_fanout(agent: Arc<dyn Agent>) -> Result<(), Error> {
    let init = Init::from_env(agent, KeyUse::None).await?;
    let batch = Arc::new(FanoutBatch {
        service: init.service(init.settings.public_base_url.as_deref()),
    });
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let batch = batch.clone();
        async move { Ok::<_, Error>(batch.handle(&event.payload).await) }
    }))
    .await
}

/// The fan-out function's batch handler.
pub struct FanoutBatch {
    /// The service: it builds the jobs and enqueues them on the push queue.
    pub service: A2aService,
}

impl FanoutBatch {
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
                tracing::error!(error = %err, "enqueueing push jobs failed; the batch is retried");
                let first = records
                    .first()
                    .and_then(|r| r.pointer("/dynamodb/SequenceNumber"))
                    .cloned()
                    .unwrap_or(Value::Null);
                json!({ "batchItemFailures": [{ "itemIdentifier": first }] })
            }
        }
    }
}
