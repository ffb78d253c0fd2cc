//! The SQS functions: the worker (work queue → agent) and push delivery (push queue →
//! webhooks), each answering with partial batch failures (`ReportBatchItemFailures`): records
//! not listed are deleted by the event source mapping, listed ones come back later.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use a2a_aws::{ReceivedMessage, SqsQueue, SqsReceipt};
use a2a_core::{run_jobs, JobPolicy, JobQueue, ReceivedJob, Settlement};
use a2a_core::{A2aService, Agent, JobOutcome, PushJob, StoreError, WorkJob};
use async_trait::async_trait;
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_runtime::{service_fn, LambdaEvent};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Error, Init, KeyUse};

/// The worker function: runs each record's work job of an SQS batch, concurrently, and
/// reports the ones to retry; invoked by its schedule instead, it sweeps for tasks whose
/// inline execution died (see [`WorkBatch::handle_invocation`]).
pub async fn run_worker(agent: Arc<dyn Agent>) -> Result<(), Error> {
    let init = Init::from_env(agent, KeyUse::None).await?;
    let s = &init.settings;
    let queue = s.consumer_queue(
        &init.clients,
        &s.aws.work_queue_url,
        s.work_dead_letter_queue_url.as_deref(),
        a2a_aws::ENV_WORK_DLQ_URL,
    )?;
    let batch = Arc::new(WorkBatch {
        service: init.service(init.settings.public_base_url.as_deref()),
        queue,
        visibility: init.settings.work_visibility,
    });
    let local_timeout = std::env::var(LOCAL_TIMEOUT_VARIABLE)
        .ok()
        .and_then(|secs| secs.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let batch = batch.clone();
        let hand_over_at = hand_over_at(event.context.deadline, local_timeout);
        async move {
            let answer = batch
                .handle_invocation_until(event.payload, hand_over_at)
                .await;
            a2a_telemetry::flush().await;
            answer
        }
    }))
    .await
}

/// How long before its invocation's deadline the worker stops the jobs still running and
/// hands them over: time for their last writes, the resume jobs' sends, and the batch's
/// settling (visibility changes, dead letters), each a few calls bounded by the SDK's timeouts.
pub const HANDOVER_MARGIN: Duration = Duration::from_secs(30);

/// The variable in which the local cloud gives each function its `Timeout` from the template,
/// in seconds: `cargo lambda watch` gives every invocation the same deadline, 600,000 ms after
/// the epoch, long past (AWS gives the invocation's start plus the function's timeout).
pub const LOCAL_TIMEOUT_VARIABLE: &str = "A2A_LOCAL_INVOCATION_TIMEOUT_SECS";

/// When the jobs of an invocation whose deadline is `deadline_ms` (ms since the epoch, as the
/// Lambda context has it) are handed over: [`HANDOVER_MARGIN`] before it, or now if that has
/// passed. A deadline already past when the invocation begins is not one Lambda gives: the
/// invocation then has `local_timeout` ([`LOCAL_TIMEOUT_VARIABLE`]), or no known deadline
/// (`None`: nothing is handed over).
pub fn hand_over_at(
    deadline_ms: u64,
    local_timeout: Option<Duration>,
) -> Option<tokio::time::Instant> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let left = if deadline_ms > now_ms {
        Duration::from_millis(deadline_ms - now_ms)
    } else {
        local_timeout?
    };
    Some(tokio::time::Instant::now() + left.saturating_sub(HANDOVER_MARGIN))
}

/// Expired inline leases one scheduled sweep handles at most; the next run takes the rest.
const SWEEP_BATCH: usize = 500;

/// The push function: delivers each message group's records in order, and reports a failed
/// record together with every later record of its group.
pub async fn run_push(agent: Arc<dyn Agent>) -> Result<(), Error> {
    let init = Init::from_env(agent, KeyUse::Sign).await?;
    let s = &init.settings;
    let queue = s.consumer_queue(
        &init.clients,
        &s.aws.push_queue_url,
        s.push_dead_letter_queue_url.as_deref(),
        a2a_aws::ENV_PUSH_DLQ_URL,
    )?;
    let batch = Arc::new(PushBatch {
        service: init.service(init.settings.public_base_url.as_deref()),
        queue,
    });
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let batch = batch.clone();
        async move {
            let answer = batch.handle(event.payload).await;
            a2a_telemetry::flush().await;
            Ok::<_, Error>(answer)
        }
    }))
    .await
}

/// One received record, as the adapters know it.
fn received(record: &SqsMessage) -> ReceivedMessage {
    ReceivedMessage {
        body: record.body.clone().unwrap_or_default(),
        receipt_handle: record.receipt_handle.clone().unwrap_or_default(),
        receive_count: record
            .attributes
            .get("ApproximateReceiveCount")
            .and_then(|c| c.parse().ok())
            .unwrap_or(1),
        message_id: record.message_id.clone().unwrap_or_default(),
        group_id: record.attributes.get("MessageGroupId").cloned(),
    }
}

fn failures(ids: impl IntoIterator<Item = String>) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    for id in ids {
        let mut failure = BatchItemFailure::default();
        failure.item_identifier = id;
        response.batch_item_failures.push(failure);
    }
    response
}

/// The queue as the event source mapping presents it: a job left alone is deleted by the
/// mapping unless reported, so deleting is nothing to do here; the rest is the queue's own.
struct EventSource<'a>(&'a SqsQueue);

#[async_trait]
impl JobQueue for EventSource<'_> {
    type Receipt = SqsReceipt;

    async fn settle(
        &self,
        job: &ReceivedJob<SqsReceipt>,
        settlement: &Settlement,
    ) -> Result<(), StoreError> {
        match settlement {
            Settlement::Delete => Ok(()),
            other => self.0.settle(job, other).await,
        }
    }
}

/// Runs a batch through the job runner; the records that stay queued are the batch item
/// failures.
async fn run_batch<T, F, Fut>(
    queue: &SqsQueue,
    event: SqsEvent,
    policy: JobPolicy,
    handler: F,
) -> SqsBatchResponse
where
    T: DeserializeOwned,
    F: Fn(T, u32) -> Fut,
    Fut: Future<Output = JobOutcome>,
{
    let jobs: Vec<_> = event
        .records
        .iter()
        .map(|record| received(record).into_job())
        .collect();
    let ids: Vec<String> = jobs.iter().map(|j| j.receipt.message_id.clone()).collect();
    let settled = run_jobs(&EventSource(queue), jobs, policy, handler).await;
    failures(
        ids.into_iter()
            .zip(settled)
            .filter(|(_, s)| s.stays_queued())
            .map(|(id, _)| id),
    )
}

/// The worker's batch handler.
pub struct WorkBatch {
    /// The service (its config has `background_inline: false`).
    pub service: A2aService,
    /// The work queue, for visibility changes.
    pub queue: SqsQueue,
    /// How long a running job stays invisible between heartbeats.
    pub visibility: Duration,
}

impl WorkBatch {
    /// Runs every record's job, concurrently, and reports the ones to retry. A work job is
    /// dead-lettered when the core says so: it counts its attempts on the task's lease (not
    /// the receive count, which a throttled invocation raises) and, once they are exhausted,
    /// fails the task and gives the reason.
    pub async fn handle(&self, event: SqsEvent) -> SqsBatchResponse {
        self.handle_until(event, None).await
    }

    /// [`Self::handle`], handing over at `hand_over_at` every job still running then
    /// ([`A2aService::run_work_job_until`]): the invocation's timeout would otherwise kill
    /// them, and with them the whole batch's outcome.
    pub async fn handle_until(
        &self,
        event: SqsEvent,
        hand_over_at: Option<tokio::time::Instant>,
    ) -> SqsBatchResponse {
        let service = &self.service;
        let policy = JobPolicy {
            max_attempts: None,
            // The core's lease on the task keeps a redelivery from running it twice at once.
            visibility: Some(self.visibility),
        };
        run_batch(
            &self.queue,
            event,
            policy,
            |job: WorkJob, receive_count| async move {
                service
                    .run_work_job_until(&job, receive_count, hand_over_at)
                    .await
            },
        )
        .await
    }

    /// One invocation of the worker function: an SQS batch (it has `Records`) is run as
    /// [`Self::handle`] does; the scheduled event (EventBridge, `"source": "aws.events"`)
    /// runs the sweep of expired inline executions
    /// ([`A2aService::sweep_expired_executions`]) and of due durable waits
    /// ([`A2aService::sweep_due_executions`]) and answers `{"endedTasks": N,
    /// "resumedExecutions": M}`. Anything
    /// else is refused, so a misrouted event shows up as a failed invocation.
    pub async fn handle_invocation(&self, event: Value) -> Result<Value, Error> {
        self.handle_invocation_until(event, None).await
    }

    /// [`Self::handle_invocation`], a batch's jobs handed over at `hand_over_at`
    /// ([`Self::handle_until`]).
    pub async fn handle_invocation_until(
        &self,
        event: Value,
        hand_over_at: Option<tokio::time::Instant>,
    ) -> Result<Value, Error> {
        if event.get("Records").is_some() {
            let batch: SqsEvent = serde_json::from_value(event)?;
            return Ok(serde_json::to_value(
                self.handle_until(batch, hand_over_at).await,
            )?);
        }
        if event.get("source").and_then(Value::as_str) == Some("aws.events") {
            let ended = self
                .service
                .sweep_expired_executions(SWEEP_BATCH)
                .await
                .map_err(|e| format!("the sweep failed: {e}"))?;
            if ended > 0 {
                tracing::warn!(tasks = ended, "ended tasks whose execution stopped");
            }
            // Durable waits that are due: deadlines, timers, polls of remote tasks, and
            // resumptions whose queue message was lost.
            let resumed = self
                .service
                .sweep_due_executions(SWEEP_BATCH)
                .await
                .map_err(|e| format!("the sweep of due executions failed: {e}"))?;
            if resumed > 0 {
                tracing::info!(
                    executions = resumed,
                    "resumed executions whose wait is over"
                );
            }
            return Ok(serde_json::json!({ "endedTasks": ended, "resumedExecutions": resumed }));
        }
        Err("the worker takes an SQS batch or its scheduled event".into())
    }
}

/// The push function's batch handler.
pub struct PushBatch {
    /// The service (it signs and sends the webhook POSTs).
    pub service: A2aService,
    /// The push queue, for visibility changes and dead-lettering.
    pub queue: SqsQueue,
}

impl PushBatch {
    /// Delivers the records, in order within each message group, groups concurrently; reports
    /// a record not delivered together with every later record of its group (handed back
    /// untried, so a receiver never sees a task's events out of order).
    pub async fn handle(&self, event: SqsEvent) -> SqsBatchResponse {
        let service = &self.service;
        // The core counts attempts on the delivery record and dead-letters the last failed
        // one itself: the receive count is not an attempt count.
        let policy = JobPolicy {
            max_attempts: None,
            visibility: None,
        };
        run_batch(&self.queue, event, policy, |job: PushJob, receive_count| async move {
            service.deliver_push(&job, receive_count).await
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_carry_their_receive_count_and_group() {
        let event: SqsEvent = serde_json::from_value(serde_json::json!({"Records": [{
            "messageId": "m1", "receiptHandle": "r1", "body": "{}",
            "attributes": {"ApproximateReceiveCount": "3", "MessageGroupId": "task-1"},
            "messageAttributes": {}, "eventSource": "aws:sqs"
        }]}))
        .unwrap();
        let m = received(&event.records[0]);
        assert_eq!(m.receive_count, 3);
        assert_eq!(m.group_id.as_deref(), Some("task-1"));
        let out = serde_json::to_value(failures(["m1".to_owned()])).unwrap();
        assert_eq!(
            out,
            serde_json::json!({"batchItemFailures": [{"itemIdentifier": "m1"}]})
        );
    }
}
