//! The work and push queues on SQS, and the consumer side for processes that poll them
//! (the local server; Lambda functions get their messages from an event source mapping).
//!
//! Bodies are the JSON of [`WorkJob`] / [`PushJob`], which carry their format version `v`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{JobQueue, ReceivedJob, Settlement};
use a2a_core::{PushJob, PushQueue, StoreError, WorkJob, WorkQueue};
use async_trait::async_trait;
use aws_sdk_sqs::error::{DisplayErrorContext, SdkError};
use aws_sdk_sqs::types::{
    MessageAttributeValue, MessageSystemAttributeName, QueueAttributeName,
    SendMessageBatchRequestEntry,
};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use tokio::sync::OnceCell;

use crate::meter::{Call, Meter, Service};

/// SQS's limit on messages per batch request.
const BATCH: usize = 10;
/// Attempts at sending the entries of a batch that SQS reported as failed.
const BATCH_ATTEMPTS: u32 = 3;
/// SQS's longest long poll.
const MAX_WAIT: Duration = Duration::from_secs(20);
/// SQS's longest visibility timeout.
const MAX_VISIBILITY: Duration = Duration::from_secs(12 * 3600);
/// Longest dead-letter reason kept as a message attribute.
const MAX_REASON: usize = 1024;

/// A message handed out by [`SqsQueue::receive`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedMessage {
    /// The body (JSON of a [`WorkJob`] or [`PushJob`]).
    pub body: String,
    /// The handle to settle this receipt with (delete, change visibility). Valid for this
    /// receipt only.
    pub receipt_handle: String,
    /// How many times the message has been received, this time included
    /// (`ApproximateReceiveCount`: 1 on the first).
    pub receive_count: u32,
    /// SQS's message id.
    pub message_id: String,
    /// The message group (FIFO queues only).
    pub group_id: Option<String>,
}

/// What settles an SQS receipt: the [`JobQueue::Receipt`] of [`SqsQueue`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqsReceipt {
    /// The receipt handle (valid for this receipt only).
    pub receipt_handle: String,
    /// SQS's message id (the de-duplication id of a dead letter on a FIFO queue).
    pub message_id: String,
}

impl ReceivedMessage {
    /// This message as a job for the core's runner.
    pub fn into_job(self) -> ReceivedJob<SqsReceipt> {
        ReceivedJob {
            body: self.body,
            receive_count: self.receive_count,
            group: self.group_id,
            receipt: SqsReceipt {
                receipt_handle: self.receipt_handle,
                message_id: self.message_id,
            },
        }
    }

    /// This message as a record of the SQS event Lambda's event source mapping invokes a
    /// function with (`aws_lambda_events::sqs::SqsMessage` in JSON), for whatever stands in for
    /// that mapping: the local poller, tests. `queue_arn` is the record's `eventSourceARN`.
    pub fn to_lambda_record(&self, queue_arn: &str) -> serde_json::Value {
        let mut attributes = serde_json::json!({
            "ApproximateReceiveCount": self.receive_count.to_string(),
            "SentTimestamp": "0",
            "SenderId": "local",
            "ApproximateFirstReceiveTimestamp": "0",
        });
        if let Some(group) = &self.group_id {
            attributes["MessageGroupId"] = serde_json::json!(group);
        }
        serde_json::json!({
            "messageId": self.message_id,
            "receiptHandle": self.receipt_handle,
            "body": self.body,
            "attributes": attributes,
            "messageAttributes": {},
            "md5OfBody": "",
            "eventSource": "aws:sqs",
            "eventSourceARN": queue_arn,
            "awsRegion": "us-east-1",
        })
    }
}

/// One SQS queue: sending, and the consumer operations.
///
/// Cloning is cheap and shares the client and the dead-letter queue URL.
#[derive(Clone)]
pub struct SqsQueue {
    client: aws_sdk_sqs::Client,
    url: Arc<str>,
    meter: Option<Meter>,
    /// The dead-letter queue's URL: given ([`SqsQueue::with_dead_letter_url`]), or looked up
    /// from the redrive policy on first use.
    dead_letter_url: Arc<OnceCell<String>>,
}

impl fmt::Debug for SqsQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqsQueue")
            .field("url", &self.url)
            .field("metered", &self.meter.is_some())
            .finish_non_exhaustive()
    }
}

fn backend<E, R>(api: &str, err: &SdkError<E, R>) -> StoreError
where
    E: std::error::Error + 'static,
    R: fmt::Debug,
{
    StoreError::Backend(format!("SQS {api}: {}", DisplayErrorContext(err)))
}

fn build_error(err: impl std::error::Error) -> StoreError {
    StoreError::Backend(format!("building an SQS request: {err}"))
}

/// A message group or de-duplication id SQS accepts: the id itself when it is 1 to 128 ASCII
/// letters, digits and punctuation, otherwise `h:` and the SHA-256 of the id (URL-safe base64,
/// 45 characters). Deterministic, so the same job always gets the same id.
pub(crate) fn sqs_id(raw: &str) -> String {
    let acceptable = !raw.is_empty()
        && raw.len() <= 128
        && raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b.is_ascii_punctuation());
    if acceptable {
        raw.to_owned()
    } else {
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, raw.as_bytes());
        format!("h:{}", URL_SAFE_NO_PAD.encode(digest.as_ref()))
    }
}

fn whole_secs(d: Duration, max: Duration) -> i32 {
    i32::try_from(d.min(max).as_secs()).unwrap_or(i32::MAX)
}

fn to_json<T: serde::Serialize>(job: &T) -> Result<String, StoreError> {
    serde_json::to_string(job).map_err(|e| StoreError::Backend(format!("JSON encoding: {e}")))
}

impl SqsQueue {
    /// The queue at `url`, through `client`.
    pub fn new(client: aws_sdk_sqs::Client, url: &str) -> Self {
        Self {
            client,
            url: Arc::from(url),
            meter: None,
            dead_letter_url: Arc::new(OnceCell::new()),
        }
    }

    /// Records every request of this queue.
    pub fn with_meter(mut self, meter: Meter) -> Self {
        self.meter = Some(meter);
        self
    }

    /// Dead-letters into the queue at `url`, with no lookup. Lambda functions are given it
    /// (the template's `A2A_WORK_DLQ_URL` / `A2A_PUSH_DLQ_URL`), so their role needs neither
    /// `sqs:GetQueueAttributes` on the source queue nor `sqs:GetQueueUrl` on the DLQ.
    pub fn with_dead_letter_url(self, url: &str) -> Self {
        Self {
            dead_letter_url: Arc::new(OnceCell::new_with(Some(url.to_owned()))),
            ..self
        }
    }

    /// The queue's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether this is a FIFO queue (SQS requires FIFO queue names to end in `.fifo`).
    pub fn is_fifo(&self) -> bool {
        self.url.ends_with(".fifo")
    }

    fn record(&self, api: &'static str) {
        self.record_on(api, &self.url);
    }

    /// Records a request to the queue at `url` (this one, or its dead-letter queue).
    fn record_on(&self, api: &'static str, url: &str) {
        if let Some(meter) = &self.meter {
            meter.record(Call {
                service: Service::Sqs,
                api,
                resource: url.to_owned(),
                reported_units: 0.0,
                estimated_wru: 0.0,
                estimated_rru: 0.0,
            });
        }
    }

    /// Receives up to `max` messages (1 to 10), waiting up to `wait` (at most 20 s) for the
    /// first one. Each stays invisible to other consumers for `visibility` (the queue's default
    /// if `None`). Empty when nothing arrived in time.
    ///
    /// On a FIFO queue SQS hands out a message group's messages in order, and none of a group
    /// while one of its messages is in flight.
    pub async fn receive(
        &self,
        max: usize,
        wait: Duration,
        visibility: Option<Duration>,
    ) -> Result<Vec<ReceivedMessage>, StoreError> {
        let out = self
            .client
            .receive_message()
            .queue_url(&*self.url)
            .max_number_of_messages(i32::try_from(max.clamp(1, BATCH)).unwrap_or(1))
            .wait_time_seconds(whole_secs(wait, MAX_WAIT))
            .set_visibility_timeout(visibility.map(|v| whole_secs(v, MAX_VISIBILITY)))
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .message_system_attribute_names(MessageSystemAttributeName::MessageGroupId)
            .customize()
            // SQS answers a long poll after its wait: the usual read timeout would cut it off.
            .config_override(
                aws_sdk_sqs::config::Builder::default()
                    .timeout_config(crate::timeouts::long_poll_timeouts(wait.min(MAX_WAIT))),
            )
            .send()
            .await
            .map_err(|e| backend("ReceiveMessage", &e))?;
        self.record("ReceiveMessage");
        let messages = out
            .messages
            .unwrap_or_default()
            .into_iter()
            .map(|m| {
                let attribute = |name| m.attributes().and_then(|a| a.get(&name)).cloned();
                ReceivedMessage {
                    receive_count: attribute(MessageSystemAttributeName::ApproximateReceiveCount)
                        .and_then(|c| c.parse().ok())
                        .unwrap_or(1),
                    group_id: attribute(MessageSystemAttributeName::MessageGroupId),
                    body: m.body.clone().unwrap_or_default(),
                    receipt_handle: m.receipt_handle.clone().unwrap_or_default(),
                    message_id: m.message_id.clone().unwrap_or_default(),
                }
            })
            .collect();
        Ok(messages)
    }

    /// Deletes a received message: it was handled. Deleting one that is already gone is fine.
    pub async fn delete(&self, receipt_handle: &str) -> Result<(), StoreError> {
        self.client
            .delete_message()
            .queue_url(&*self.url)
            .receipt_handle(receipt_handle)
            .send()
            .await
            .map_err(|e| backend("DeleteMessage", &e))?;
        self.record("DeleteMessage");
        Ok(())
    }

    /// Makes a received message visible again `timeout` from now (at most 12 hours after it was
    /// first received, SQS's limit). Both "retry after a delay" (a handler returned
    /// `JobOutcome::Retry { after }`) and "extend while still working" (a heartbeat) are this
    /// call; `Duration::ZERO` hands the message out again at once.
    pub async fn change_visibility(
        &self,
        receipt_handle: &str,
        timeout: Duration,
    ) -> Result<(), StoreError> {
        self.client
            .change_message_visibility()
            .queue_url(&*self.url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(whole_secs(timeout, MAX_VISIBILITY))
            .send()
            .await
            .map_err(|e| backend("ChangeMessageVisibility", &e))?;
        self.record("ChangeMessageVisibility");
        Ok(())
    }

    /// Moves a received message to the queue's dead-letter queue now, with `reason` as its
    /// `reason` message attribute, then deletes it here. (Messages that are never settled get
    /// there by themselves after the redrive policy's receive count, without a reason.)
    pub async fn dead_letter(
        &self,
        message: &ReceivedMessage,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.move_to_dead_letters(
            &message.body,
            message.group_id.as_deref(),
            &message.message_id,
            &message.receipt_handle,
            reason,
        )
        .await
    }

    async fn move_to_dead_letters(
        &self,
        body: &str,
        group_id: Option<&str>,
        message_id: &str,
        receipt_handle: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        let dlq = self.dead_letter_queue_url().await?;
        let mut reason = reason.to_owned();
        if reason.len() > MAX_REASON {
            let mut cut = MAX_REASON;
            while !reason.is_char_boundary(cut) {
                cut -= 1;
            }
            reason.truncate(cut);
        }
        let mut send = self
            .client
            .send_message()
            .queue_url(dlq)
            .message_body(body)
            .message_attributes(
                "reason",
                MessageAttributeValue::builder()
                    .data_type("String")
                    .string_value(if reason.is_empty() {
                        "-".into()
                    } else {
                        reason
                    })
                    .build()
                    .map_err(build_error)?,
            );
        if dlq.ends_with(".fifo") {
            send = send
                .message_group_id(sqs_id(group_id.unwrap_or("dead-letter")))
                .message_deduplication_id(sqs_id(message_id));
        }
        send.send().await.map_err(|e| backend("SendMessage", &e))?;
        self.record_on("SendMessage", dlq);
        // Sent before deleted: a failure in between leaves a duplicate, never a loss.
        self.delete(receipt_handle).await
    }

    /// The dead-letter queue's URL: the one given to [`SqsQueue::with_dead_letter_url`], or
    /// else from the queue's redrive policy (looked up once; processes that poll with their
    /// own credentials, such as the local server).
    pub async fn dead_letter_queue_url(&self) -> Result<&str, StoreError> {
        self.dead_letter_url
            .get_or_try_init(|| async {
                let attributes = self
                    .client
                    .get_queue_attributes()
                    .queue_url(&*self.url)
                    .attribute_names(QueueAttributeName::RedrivePolicy)
                    .send()
                    .await
                    .map_err(|e| backend("GetQueueAttributes", &e))?;
                self.record("GetQueueAttributes");
                let policy = attributes
                    .attributes()
                    .and_then(|a| a.get(&QueueAttributeName::RedrivePolicy))
                    .ok_or_else(|| {
                        StoreError::Backend(format!("queue {} has no dead-letter queue", self.url))
                    })?;
                let arn = serde_json::from_str::<serde_json::Value>(policy)
                    .ok()
                    .and_then(|p| p["deadLetterTargetArn"].as_str().map(str::to_owned))
                    .ok_or_else(|| {
                        StoreError::Backend(format!("unreadable redrive policy on {}", self.url))
                    })?;
                // arn:aws:sqs:<region>:<account>:<name>
                let mut parts = arn.rsplit(':');
                let name = parts.next().unwrap_or_default();
                let account = parts.next().unwrap_or_default();
                let out = self
                    .client
                    .get_queue_url()
                    .queue_name(name)
                    .queue_owner_aws_account_id(account)
                    .send()
                    .await
                    .map_err(|e| backend("GetQueueUrl", &e))?;
                self.record("GetQueueUrl");
                out.queue_url.ok_or_else(|| {
                    StoreError::Backend(format!("SQS returned no URL for queue {name}"))
                })
            })
            .await
            .map(String::as_str)
    }

    /// Sends one message, invisible to consumers for `delay` seconds (at most 900: SQS's
    /// limit; a standard queue only).
    async fn send(
        &self,
        body: String,
        group: Option<String>,
        dedup: Option<String>,
        delay: Option<i32>,
    ) -> Result<(), StoreError> {
        self.client
            .send_message()
            .queue_url(&*self.url)
            .message_body(body)
            .set_message_group_id(group)
            .set_message_deduplication_id(dedup)
            .set_delay_seconds(delay)
            .send()
            .await
            .map_err(|e| backend("SendMessage", &e))?;
        self.record("SendMessage");
        Ok(())
    }

    /// Sends `entries` (at most ten) as one batch, re-sending the entries SQS reports as
    /// failed a few times before giving up.
    async fn send_batch(
        &self,
        mut entries: Vec<SendMessageBatchRequestEntry>,
    ) -> Result<(), StoreError> {
        let mut pause = Duration::from_millis(50);
        for attempt in 1..=BATCH_ATTEMPTS {
            let out = self
                .client
                .send_message_batch()
                .queue_url(&*self.url)
                .set_entries(Some(entries.clone()))
                .send()
                .await
                .map_err(|e| backend("SendMessageBatch", &e))?;
            self.record("SendMessageBatch");
            let failed = out.failed();
            if failed.is_empty() {
                return Ok(());
            }
            // Sender faults (a malformed entry) will not get better by trying again.
            if let Some(fault) = failed.iter().find(|f| f.sender_fault()) {
                return Err(StoreError::Backend(format!(
                    "SQS SendMessageBatch refused an entry: {} {}",
                    fault.code(),
                    fault.message().unwrap_or_default()
                )));
            }
            if attempt == BATCH_ATTEMPTS {
                return Err(StoreError::Backend(format!(
                    "SQS SendMessageBatch: {} of {} entries still failing ({})",
                    failed.len(),
                    entries.len(),
                    failed[0].code()
                )));
            }
            let retry: Vec<&str> = failed.iter().map(|f| f.id()).collect();
            entries.retain(|e| retry.contains(&e.id()));
            tokio::time::sleep(pause).await;
            pause *= 2;
        }
        Ok(())
    }
}

#[async_trait]
impl JobQueue for SqsQueue {
    type Receipt = SqsReceipt;

    async fn settle(
        &self,
        job: &ReceivedJob<SqsReceipt>,
        settlement: &Settlement,
    ) -> Result<(), StoreError> {
        let receipt = &job.receipt;
        match settlement {
            Settlement::Delete => self.delete(&receipt.receipt_handle).await,
            Settlement::RetryAfter(after) => {
                self.change_visibility(&receipt.receipt_handle, *after)
                    .await
            }
            Settlement::DeadLetter(reason) => {
                self.move_to_dead_letters(
                    &job.body,
                    job.group.as_deref(),
                    &receipt.message_id,
                    &receipt.receipt_handle,
                    reason,
                )
                .await
            }
        }
    }
}

/// One of the deployment's queues on SQS, typed by its role (`R`: [`Work`] or [`Push`]) so a
/// push queue cannot be handed where the work queue is meant.
#[derive(Debug)]
pub struct SqsRoleQueue<R> {
    queue: SqsQueue,
    role: std::marker::PhantomData<R>,
}

// Not derived: a derive would ask `R: Clone` of the marker.
impl<R> Clone for SqsRoleQueue<R> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            role: std::marker::PhantomData,
        }
    }
}

/// The work queue's role: a standard queue with a dead-letter queue.
#[derive(Debug)]
pub enum Work {}

/// The push queue's role: a FIFO queue, one message group per task, so a receiver sees a
/// task's events in order; de-duplicated by task, sequence number and config.
#[derive(Debug)]
pub enum Push {}

/// The work queue on SQS (a standard queue with a dead-letter queue).
pub type SqsWorkQueue = SqsRoleQueue<Work>;

/// The push queue on SQS FIFO (see [`Push`]).
pub type SqsPushQueue = SqsRoleQueue<Push>;

impl<R> SqsRoleQueue<R> {
    /// The queue at `url` (for [`Push`], a FIFO queue).
    pub fn new(client: aws_sdk_sqs::Client, url: &str) -> Self {
        Self {
            queue: SqsQueue::new(client, url),
            role: std::marker::PhantomData,
        }
    }

    /// Records every request of this queue.
    pub fn with_meter(self, meter: Meter) -> Self {
        Self {
            queue: self.queue.with_meter(meter),
            role: std::marker::PhantomData,
        }
    }

    /// The consumer side of the queue.
    pub fn queue(&self) -> &SqsQueue {
        &self.queue
    }
}

#[async_trait]
impl WorkQueue for SqsWorkQueue {
    async fn enqueue_work(&self, job: &WorkJob) -> Result<(), StoreError> {
        self.queue.send(to_json(job)?, None, None, None).await
    }

    async fn enqueue_work_after(&self, job: &WorkJob, delay: Duration) -> Result<(), StoreError> {
        // Whole seconds, rounded up (a job never comes early), within SQS's 15 minutes.
        let seconds = delay.as_millis().div_ceil(1000).min(900);
        let delay = i32::try_from(seconds).unwrap_or(900);
        self.queue
            .send(to_json(job)?, None, None, (delay > 0).then_some(delay))
            .await
    }
}

#[async_trait]
impl PushQueue for SqsPushQueue {
    /// Sends the jobs in order, ten per request. Batches go one after the other, so a task's
    /// jobs enter its message group in the order given. A duplicate of a job sent within
    /// SQS's five-minute de-duplication window is dropped by SQS.
    async fn enqueue_push(&self, jobs: &[PushJob]) -> Result<(), StoreError> {
        for chunk in jobs.chunks(BATCH) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, job)| {
                    SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(to_json(job)?)
                        .message_group_id(sqs_id(&job.task_id))
                        .message_deduplication_id(sqs_id(&job.dedup_id()))
                        .build()
                        .map_err(build_error)
                })
                .collect::<Result<Vec<_>, _>>()?;
            self.queue.send_batch(entries).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqs_ids_keep_acceptable_ids_and_hash_the_rest() {
        let plain = "6f1c-task/12/cfg-1";
        assert_eq!(sqs_id(plain), plain);
        let long = "x".repeat(129);
        let unicode = "tâche/1/c";
        let spaced = "a b";
        for raw in [long.as_str(), unicode, spaced, ""] {
            let id = sqs_id(raw);
            assert!(id.starts_with("h:") && id.len() == 45, "{raw:?} -> {id}");
            assert!(id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b.is_ascii_punctuation()));
            assert_eq!(sqs_id(raw), id, "deterministic");
        }
        assert_ne!(sqs_id("a b"), sqs_id("a  b"));
        assert_eq!(sqs_id(&"y".repeat(128)), "y".repeat(128));
    }
}
