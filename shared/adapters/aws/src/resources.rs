//! The AWS resources the adapters need, defined in one place: the table (keys, index, TTL,
//! billing) and the queues (FIFO or not, visibility, retention, dead-letter queues and their
//! receive counts). Tests and local emulators create them with [`create_all`]; the deployment
//! template declares the same resources, and a test compares the two.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType, TableStatus,
    TimeToLiveSpecification,
};
use aws_sdk_sqs::types::QueueAttributeName;

use crate::{AwsClients, AwsConfig};

/// Name of the by-owner index that serves ListTasks: one partition per owner and state.
pub const BY_OWNER_INDEX: &str = "by_owner";

/// Name of the by-context index that serves ListTasks filtered by `contextId`: sparse, it holds
/// the tasks of contexts with more than one task (the task a context was made for is found
/// from the context id).
pub const BY_CONTEXT_INDEX: &str = "by_context";

/// The attribute DynamoDB's TTL deletes items by (seconds since the epoch).
pub const TTL_ATTRIBUTE: &str = "ttl";

/// Attributes the by-owner index copies besides its keys: what ListTasks filters on. The task
/// itself is not copied (heads are fetched by key for the page), so a head write costs the
/// index one small write instead of a second copy of the whole task.
pub const BY_OWNER_PROJECTED: [&str; 3] = ["ctx", "st", "exp"];

/// Attributes the by-context index copies besides its keys: what a ListTasks by context still
/// filters on (its state, its expiry).
pub const BY_CONTEXT_PROJECTED: [&str; 2] = ["st", "exp"];

/// Receives of a work job before SQS moves it to the dead-letter queue: a backstop only, well
/// above the core's `max_job_attempts` (5). The core counts its own attempts (on the task's
/// lease), ends the task FAILED and dead-letters the job itself with the reason; receives that
/// never reached it (throttled invocations) do not count. SQS's count catches only messages
/// our code never settles (a body that crashes the function).
pub const WORK_MAX_RECEIVES: u32 = 30;

/// Receives of a push job before SQS moves it to the dead-letter queue: a backstop only, well
/// above the core's `max_push_attempts` (8), which the core counts on the config's delivery
/// record and dead-letters itself after, with the reason.
pub const PUSH_MAX_RECEIVES: u32 = 20;

/// A global secondary index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDefinition {
    /// Index name.
    pub name: &'static str,
    /// Partition key (string).
    pub partition_key: &'static str,
    /// Sort key (string).
    pub sort_key: &'static str,
    /// Non-key attributes projected into the index (projection type `INCLUDE`).
    pub projected: Vec<&'static str>,
}

/// The task table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDefinition {
    /// Table name.
    pub name: String,
    /// Partition key (string).
    pub partition_key: &'static str,
    /// Sort key (string).
    pub sort_key: &'static str,
    /// Global secondary indexes.
    pub indexes: Vec<IndexDefinition>,
    /// TTL attribute.
    pub ttl_attribute: &'static str,
    /// Billing mode: on-demand (`PAY_PER_REQUEST`), so an idle deployment costs nothing.
    pub billing_mode: &'static str,
    /// The table's stream (`NEW_IMAGE`): it carries every head write, with its new events, to
    /// the push fan-out ([`crate::fanout`]).
    pub stream_view_type: &'static str,
}

impl TableDefinition {
    /// Every key attribute of the table and its indexes (each is a string).
    pub fn key_attributes(&self) -> Vec<&'static str> {
        let mut names = vec![self.partition_key, self.sort_key];
        for index in &self.indexes {
            for name in [index.partition_key, index.sort_key] {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        names
    }
}

/// Where a queue sends messages that were received too often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redrive {
    /// Name of the dead-letter queue.
    pub dead_letter_queue: String,
    /// Receives before a message moves there.
    pub max_receive_count: u32,
}

/// One SQS queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueDefinition {
    /// Queue name (FIFO names end in `.fifo`).
    pub name: String,
    /// FIFO queue.
    pub fifo: bool,
    /// Default visibility timeout of a received message.
    pub visibility_timeout: Duration,
    /// How long an unreceived message is kept.
    pub retention: Duration,
    /// Default long-poll wait of ReceiveMessage.
    pub receive_wait: Duration,
    /// Dead-letter queue, if any.
    pub redrive: Option<Redrive>,
}

impl QueueDefinition {
    /// The queue attributes CreateQueue takes, except the redrive policy (which needs the
    /// dead-letter queue's ARN).
    pub fn attributes(&self) -> HashMap<QueueAttributeName, String> {
        let mut attributes = HashMap::from([
            (
                QueueAttributeName::VisibilityTimeout,
                self.visibility_timeout.as_secs().to_string(),
            ),
            (
                QueueAttributeName::MessageRetentionPeriod,
                self.retention.as_secs().to_string(),
            ),
            (
                QueueAttributeName::ReceiveMessageWaitTimeSeconds,
                self.receive_wait.as_secs().to_string(),
            ),
        ]);
        if self.fifo {
            attributes.insert(QueueAttributeName::FifoQueue, "true".into());
            // Every push job carries its own de-duplication id (task/seq/config).
            attributes.insert(
                QueueAttributeName::ContentBasedDeduplication,
                "false".into(),
            );
            // High-throughput FIFO: ordering and de-duplication per message group (task),
            // which is all the push function needs, without the 300 msg/s queue-wide limit.
            attributes.insert(
                QueueAttributeName::DeduplicationScope,
                "messageGroup".into(),
            );
            attributes.insert(
                QueueAttributeName::FifoThroughputLimit,
                "perMessageGroupId".into(),
            );
        }
        attributes
    }
}

/// All resources of one deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resources {
    /// The task table.
    pub table: TableDefinition,
    /// The work queue (standard).
    pub work_queue: QueueDefinition,
    /// The work queue's dead-letter queue.
    pub work_dead_letter_queue: QueueDefinition,
    /// The push queue (FIFO).
    pub push_queue: QueueDefinition,
    /// The push queue's dead-letter queue (FIFO, as SQS requires for a FIFO source).
    pub push_dead_letter_queue: QueueDefinition,
}

const DAY: Duration = Duration::from_secs(24 * 3600);

impl Resources {
    /// The resources with names starting with `prefix` (`<prefix>-tasks`, `<prefix>-work`, …).
    pub fn named(prefix: &str) -> Self {
        let dead_letter = |name: String, fifo: bool| QueueDefinition {
            name,
            fifo,
            visibility_timeout: Duration::from_secs(30),
            // The longest SQS allows: time to look at what failed.
            retention: 14 * DAY,
            receive_wait: Duration::from_secs(20),
            redrive: None,
        };
        let work_dlq = format!("{prefix}-work-dlq");
        let push_dlq = format!("{prefix}-push-dlq.fifo");
        Self {
            table: TableDefinition {
                name: format!("{prefix}-tasks"),
                partition_key: "pk",
                sort_key: "sk",
                indexes: vec![
                    IndexDefinition {
                        name: BY_OWNER_INDEX,
                        partition_key: "gpk",
                        sort_key: "gsk",
                        projected: BY_OWNER_PROJECTED.to_vec(),
                    },
                    IndexDefinition {
                        name: BY_CONTEXT_INDEX,
                        partition_key: "cpk",
                        sort_key: "gsk",
                        projected: BY_CONTEXT_PROJECTED.to_vec(),
                    },
                ],
                ttl_attribute: TTL_ATTRIBUTE,
                billing_mode: "PAY_PER_REQUEST",
                stream_view_type: "NEW_IMAGE",
            },
            work_queue: QueueDefinition {
                name: format!("{prefix}-work"),
                fifo: false,
                // Six times the worker function's timeout (900 s, the longest a Lambda
                // function may run), as AWS recommends for an event source: the mapping
                // retries a throttled invocation within that time.
                visibility_timeout: Duration::from_secs(6 * 900),
                retention: 4 * DAY,
                receive_wait: Duration::from_secs(20),
                redrive: Some(Redrive {
                    dead_letter_queue: work_dlq.clone(),
                    max_receive_count: WORK_MAX_RECEIVES,
                }),
            },
            work_dead_letter_queue: dead_letter(work_dlq, false),
            push_queue: QueueDefinition {
                name: format!("{prefix}-push.fifo"),
                fifo: true,
                // Six times the push function's timeout (60 s; one POST times out after
                // 10 s), as AWS recommends for an event source.
                visibility_timeout: Duration::from_secs(6 * 60),
                retention: 4 * DAY,
                receive_wait: Duration::from_secs(20),
                redrive: Some(Redrive {
                    dead_letter_queue: push_dlq.clone(),
                    max_receive_count: PUSH_MAX_RECEIVES,
                }),
            },
            push_dead_letter_queue: dead_letter(push_dlq, true),
        }
    }

    /// The queues in creation order: dead-letter queues before the queues that use them.
    pub fn queues(&self) -> [&QueueDefinition; 4] {
        [
            &self.work_dead_letter_queue,
            &self.push_dead_letter_queue,
            &self.work_queue,
            &self.push_queue,
        ]
    }
}

/// Creates the table (waiting until it is active) and enables its TTL; a table that already
/// exists is left as it is.
pub async fn create_table(
    client: &aws_sdk_dynamodb::Client,
    table: &TableDefinition,
) -> Result<(), String> {
    let err = |what: &str, e: &dyn std::fmt::Display| format!("{what} {}: {e}", table.name);
    let key = |name: &str, key_type| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(key_type)
            .build()
            .map_err(|e| err("key schema of", &e))
    };
    let mut request = client
        .create_table()
        .table_name(&table.name)
        .billing_mode(BillingMode::from(table.billing_mode))
        .stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::from(table.stream_view_type))
                .build()
                .map_err(|e| err("stream of", &e))?,
        )
        .key_schema(key(table.partition_key, KeyType::Hash)?)
        .key_schema(key(table.sort_key, KeyType::Range)?);
    for name in table.key_attributes() {
        request = request.attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(|e| err("attribute definition of", &e))?,
        );
    }
    for index in &table.indexes {
        request = request.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(index.name)
                .key_schema(key(index.partition_key, KeyType::Hash)?)
                .key_schema(key(index.sort_key, KeyType::Range)?)
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::Include)
                        .set_non_key_attributes(Some(
                            index.projected.iter().map(|a| (*a).to_owned()).collect(),
                        ))
                        .build(),
                )
                .build()
                .map_err(|e| err("index of", &e))?,
        );
    }
    match request.send().await {
        Ok(_) => {}
        // Already there (a restart against the same emulator): creating is "create if missing".
        Err(e)
            if e.as_service_error()
                .is_some_and(|se| se.is_resource_in_use_exception()) =>
        {
            return Ok(());
        }
        Err(e) => {
            return Err(err(
                "cannot create table",
                &aws_sdk_dynamodb::error::DisplayErrorContext(e),
            ))
        }
    }

    for _ in 0..600 {
        let described = client
            .describe_table()
            .table_name(&table.name)
            .send()
            .await
            .map_err(|e| {
                err(
                    "cannot describe table",
                    &aws_sdk_dynamodb::error::DisplayErrorContext(e),
                )
            })?;
        if described.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    client
        .update_time_to_live()
        .table_name(&table.name)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .attribute_name(table.ttl_attribute)
                .enabled(true)
                .build()
                .map_err(|e| err("TTL of", &e))?,
        )
        .send()
        .await
        .map_err(|e| {
            err(
                "cannot enable TTL on",
                &aws_sdk_dynamodb::error::DisplayErrorContext(e),
            )
        })?;
    Ok(())
}

/// Creates one queue, with its redrive policy if it has one (its dead-letter queue must exist),
/// and returns its URL.
pub async fn create_queue(
    client: &aws_sdk_sqs::Client,
    queue: &QueueDefinition,
) -> Result<String, String> {
    let err = |what: &str, e: &dyn std::fmt::Display| format!("{what} {}: {e}", queue.name);
    let mut attributes = queue.attributes();
    if let Some(redrive) = &queue.redrive {
        let dlq_url = client
            .get_queue_url()
            .queue_name(&redrive.dead_letter_queue)
            .send()
            .await
            .map_err(|e| {
                err(
                    "cannot find the dead-letter queue of",
                    &aws_sdk_sqs::error::DisplayErrorContext(e),
                )
            })?
            .queue_url
            .unwrap_or_default();
        let arn = queue_arn(client, &dlq_url).await?;
        attributes.insert(
            QueueAttributeName::RedrivePolicy,
            serde_json::json!({
                "deadLetterTargetArn": arn,
                "maxReceiveCount": redrive.max_receive_count,
            })
            .to_string(),
        );
    }
    let out = client
        .create_queue()
        .queue_name(&queue.name)
        .set_attributes(Some(attributes))
        .send()
        .await
        .map_err(|e| {
            err(
                "cannot create queue",
                &aws_sdk_sqs::error::DisplayErrorContext(e),
            )
        })?;
    out.queue_url
        .ok_or_else(|| format!("SQS returned no URL for queue {}", queue.name))
}

/// The ARN of the queue at `url`.
pub async fn queue_arn(client: &aws_sdk_sqs::Client, url: &str) -> Result<String, String> {
    client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| {
            format!(
                "cannot read the ARN of {url}: {}",
                aws_sdk_sqs::error::DisplayErrorContext(e)
            )
        })?
        .attributes
        .and_then(|mut a| a.remove(&QueueAttributeName::QueueArn))
        .ok_or_else(|| format!("SQS returned no ARN for {url}"))
}

/// Creates the table and all queues, and returns the configuration that points at them.
pub async fn create_all(clients: &AwsClients, resources: &Resources) -> Result<AwsConfig, String> {
    create_table(&clients.dynamodb, &resources.table).await?;
    let mut urls = HashMap::new();
    for queue in resources.queues() {
        urls.insert(queue.name.clone(), create_queue(&clients.sqs, queue).await?);
    }
    Ok(AwsConfig::new(
        &resources.table.name,
        urls.remove(&resources.work_queue.name).unwrap_or_default(),
        urls.remove(&resources.push_queue.name).unwrap_or_default(),
    ))
}

/// Deletes the table and the queues (best effort: what is already gone is skipped).
pub async fn delete_all(clients: &AwsClients, resources: &Resources) {
    let _ = clients
        .dynamodb
        .delete_table()
        .table_name(&resources.table.name)
        .send()
        .await;
    for queue in resources.queues() {
        if let Ok(out) = clients
            .sqs
            .get_queue_url()
            .queue_name(&queue.name)
            .send()
            .await
        {
            if let Some(url) = out.queue_url {
                let _ = clients.sqs.delete_queue().queue_url(url).send().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_agree_with_the_core_and_sqs_rules() {
        let r = Resources::named("x");
        assert_eq!(r.table.name, "x-tasks");
        assert_eq!(r.table.key_attributes(), ["pk", "sk", "gpk", "gsk", "cpk"]);
        // FIFO names end in .fifo, and a FIFO queue's dead-letter queue is FIFO too.
        assert!(r.push_queue.fifo && r.push_queue.name.ends_with(".fifo"));
        assert!(r.push_dead_letter_queue.fifo && r.push_dead_letter_queue.name.ends_with(".fifo"));
        assert!(!r.work_queue.fifo && !r.work_queue.name.ends_with(".fifo"));
        // The core counts its own attempts and dead-letters jobs itself; SQS's receive count is
        // a backstop well above that, so throttled receives do not exhaust a job.
        let core = a2a_core::ServiceConfig::default();
        assert!(WORK_MAX_RECEIVES >= 4 * core.max_job_attempts);
        assert!(PUSH_MAX_RECEIVES >= 2 * core.max_push_attempts);
        assert_eq!(
            r.work_queue
                .redrive
                .as_ref()
                .map(|d| d.dead_letter_queue.as_str()),
            Some("x-work-dlq")
        );
        // SQS limits.
        for q in r.queues() {
            assert!(q.visibility_timeout <= Duration::from_secs(12 * 3600));
            assert!(q.receive_wait <= Duration::from_secs(20));
            assert!(q.retention <= 14 * DAY && q.retention >= Duration::from_secs(60));
            assert!(q.name.len() <= 80);
        }
        // The store's projected attributes are the ones its list filters use.
        assert_eq!(
            BY_OWNER_PROJECTED,
            [
                crate::items::attr::CONTEXT,
                crate::items::attr::STATE,
                crate::items::attr::EXPIRES
            ]
        );
        assert_eq!(TTL_ATTRIBUTE, crate::items::attr::TTL);
    }
}
