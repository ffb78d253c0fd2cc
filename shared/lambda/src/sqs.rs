//! The SQS functions: the worker (work queue → agent) and push delivery (push queue →
//! webhooks), each answering with partial batch failures (`ReportBatchItemFailures`): records
//! not listed are deleted by the event source mapping, listed ones come back later.

use std::sync::Arc;
use std::time::Duration;

use a2a_aws::{ReceivedMessage, SqsQueue};
use a2a_core::{A2aService, Agent, JobOutcome, PushJob, WorkJob};
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_runtime::{service_fn, LambdaEvent};
use serde::de::DeserializeOwned;

use crate::{Error, Init};

/// The worker function: runs each record's work job, concurrently, and reports the ones to
/// retry.
pub async fn run_worker(agent: Arc<dyn Agent>) -> Result<(), Error> {
    let init = Init::from_env(agent, false).await?;
    let batch = Arc::new(WorkBatch {
        service: init.service(init.settings.public_base_url.as_deref()),
        queue: SqsQueue::new(init.clients.sqs.clone(), &init.settings.aws.work_queue_url),
        visibility: init.settings.work_visibility,
    });
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let batch = batch.clone();
        async move { Ok::<_, Error>(batch.handle(event.payload).await) }
    }))
    .await
}

/// The push function: delivers each message group's records in order, and reports a failed
/// record together with every later record of its group.
pub async fn run_push(agent: Arc<dyn Agent>) -> Result<(), Error> {
    let init = Init::from_env(agent, true).await?;
    let batch = Arc::new(PushBatch {
        service: init.service(init.settings.public_base_url.as_deref()),
        queue: SqsQueue::new(init.clients.sqs.clone(), &init.settings.aws.push_queue_url),
    });
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let batch = batch.clone();
        async move { Ok::<_, Error>(batch.handle(event.payload).await) }
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

/// Parses a job; an unreadable one is moved to the dead-letter queue (it never gets better)
/// and counts as handled.
async fn parse<T: DeserializeOwned>(queue: &SqsQueue, message: &ReceivedMessage) -> Option<T> {
    match serde_json::from_str(&message.body) {
        Ok(job) => Some(job),
        Err(err) => {
            let reason = format!("unreadable job body: {err}");
            tracing::error!(message_id = %message.message_id, "{reason}");
            if let Err(err) = queue.dead_letter(message, &reason).await {
                tracing::error!("dead-lettering an unreadable job failed: {err}");
            }
            None
        }
    }
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
    /// Runs every record's job and reports the ones to retry.
    pub async fn handle(&self, event: SqsEvent) -> SqsBatchResponse {
        let runs = event.records.iter().map(|record| self.run_one(record));
        let failed = futures::future::join_all(runs).await;
        failures(failed.into_iter().flatten())
    }

    /// Runs one job; `Some(message id)` when it must be retried.
    async fn run_one(&self, record: &SqsMessage) -> Option<String> {
        let message = received(record);
        let job: WorkJob = parse(&self.queue, &message).await?;
        // Keep the message invisible while the agent runs; the core's lease on the task keeps
        // a redelivery from running it twice at once.
        let heartbeat = {
            let queue = self.queue.clone();
            let handle = message.receipt_handle.clone();
            let visibility = self.visibility;
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(visibility / 3).await;
                    if let Err(err) = queue.change_visibility(&handle, visibility).await {
                        tracing::warn!("extending a running job's visibility failed: {err}");
                    }
                }
            })
        };
        let outcome = self.service.run_work_job(&job, message.receive_count).await;
        heartbeat.abort();
        match outcome {
            JobOutcome::Done => None,
            JobOutcome::Retry { reason, after } => {
                tracing::warn!(task_id = %job.task_id, "will retry a work job in {after:?}: {reason}");
                if let Err(err) = self
                    .queue
                    .change_visibility(&message.receipt_handle, after)
                    .await
                {
                    tracing::warn!("delaying a work job's retry failed: {err}");
                }
                Some(message.message_id)
            }
        }
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
    /// Delivers the records, in order within each message group, groups concurrently.
    pub async fn handle(&self, event: SqsEvent) -> SqsBatchResponse {
        let mut groups: Vec<(String, Vec<ReceivedMessage>)> = Vec::new();
        for record in &event.records {
            let message = received(record);
            let group = message
                .group_id
                .clone()
                .unwrap_or_else(|| message.message_id.clone());
            match groups.iter_mut().find(|(g, _)| *g == group) {
                Some((_, messages)) => messages.push(message),
                None => groups.push((group, vec![message])),
            }
        }
        let runs = groups
            .into_iter()
            .map(|(_, group)| self.deliver_group(group));
        let failed = futures::future::join_all(runs).await;
        failures(failed.into_iter().flatten())
    }

    /// Delivers one group in order; returns the message ids to report as failures: the first
    /// one not delivered and every later one.
    async fn deliver_group(&self, group: Vec<ReceivedMessage>) -> Vec<String> {
        let max_attempts = self.service.config().max_push_attempts;
        let mut messages = group.into_iter();
        let mut failed = Vec::new();
        for message in messages.by_ref() {
            let Some(job) = parse::<PushJob>(&self.queue, &message).await else {
                continue;
            };
            match self.service.deliver_push(&job, message.receive_count).await {
                JobOutcome::Done => {}
                JobOutcome::Retry { reason, .. } if message.receive_count >= max_attempts => {
                    tracing::error!(task_id = %job.task_id, "giving up on a push after its last attempt: {reason}");
                    match self.queue.dead_letter(&message, &reason).await {
                        // Moved (and deleted here): handled.
                        Ok(()) => {}
                        Err(err) => {
                            tracing::error!("dead-lettering a push job failed: {err}");
                            failed.push(message.message_id);
                            break;
                        }
                    }
                }
                JobOutcome::Retry { reason, after } => {
                    tracing::warn!(task_id = %job.task_id, "will retry a push in {after:?}: {reason}");
                    if let Err(err) = self
                        .queue
                        .change_visibility(&message.receipt_handle, after)
                        .await
                    {
                        tracing::warn!("delaying a push retry failed: {err}");
                    }
                    failed.push(message.message_id);
                    break;
                }
            }
        }
        // The later records of the group go back at once: SQS hands them out again only after
        // the failed one, so a receiver never sees a task's events out of order.
        for message in messages {
            if let Err(err) = self
                .queue
                .change_visibility(&message.receipt_handle, Duration::ZERO)
                .await
            {
                tracing::warn!("handing back a push job failed: {err}");
            }
            failed.push(message.message_id);
        }
        failed
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
