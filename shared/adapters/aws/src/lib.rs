//! AWS adapters: the task store on DynamoDB and the work and push queues on SQS.
//!
//! - [`DynamoTaskStore`] implements [`TaskStore`](a2a_core::TaskStore) on one table (the layout
//!   is in `docs/aws-adapters.md` and in [`resources`]).
//! - [`SqsWorkQueue`] and [`SqsPushQueue`] implement [`WorkQueue`](a2a_core::WorkQueue) and
//!   [`PushQueue`](a2a_core::PushQueue); [`SqsQueue`] is the consumer side (receive, delete,
//!   change visibility, dead-letter) for processes that poll the queues themselves, such as the
//!   local server.
//! - [`fanout`] reads the table's stream into push jobs where no Lambda event source mapping
//!   does (the local server), and [`replay`] reads again a stream batch the fan-out function's
//!   mapping gave up on.
//! - [`resources`] defines the table and the queues in one place and creates them (tests, local
//!   emulators); the deployment template mirrors it.
//! - [`Meter`] counts requests and capacity units per call, for the cost figures in `docs/cost.md`.
//!
//! Build the SDK clients once per process ([`AwsClients::from_env`]) and share them: they pool
//! connections and cache credentials. Every call is bounded in time ([`timeouts`]): build them
//! from [`with_call_limits`] of the SDK configuration. `AWS_ENDPOINT_URL` points them at an emulator (moto)
//! without any code branch.

mod body;
mod deflate;
mod dynamo;
pub mod fanout;
mod items;
mod meter;
pub mod replay;
pub mod resources;
mod sqs;
pub mod timeouts;

use std::time::{SystemTime, UNIX_EPOCH};

use aws_config::BehaviorVersion;

pub use dynamo::DynamoTaskStore;
pub use items::MAX_ITEM_BYTES;
pub use meter::{Call, Meter, Service, Summary};
pub use sqs::{
    Push, ReceivedMessage, SqsPushQueue, SqsQueue, SqsReceipt, SqsRoleQueue, SqsWorkQueue, Work,
};
pub use timeouts::{with_call_limits, CALL_LIMITS};

/// Environment variable naming the DynamoDB table.
pub const ENV_TABLE: &str = "A2A_TABLE";
/// Environment variable holding the work queue's URL.
pub const ENV_WORK_QUEUE_URL: &str = "A2A_WORK_QUEUE_URL";
/// Environment variable holding the push queue's URL.
pub const ENV_PUSH_QUEUE_URL: &str = "A2A_PUSH_QUEUE_URL";
/// Environment variable holding the work dead-letter queue's URL (the worker function's).
pub const ENV_WORK_DLQ_URL: &str = "A2A_WORK_DLQ_URL";
/// Environment variable holding the push dead-letter queue's URL (the push function's).
pub const ENV_PUSH_DLQ_URL: &str = "A2A_PUSH_DLQ_URL";

/// Where the adapters keep their data: the table name and the two queue URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsConfig {
    /// The DynamoDB table holding tasks, events, push configs and leases.
    pub table: String,
    /// URL of the work queue (SQS standard).
    pub work_queue_url: String,
    /// URL of the push queue (SQS FIFO, ends in `.fifo`).
    pub push_queue_url: String,
}

impl AwsConfig {
    /// A configuration with explicit names (tests, tools).
    pub fn new(
        table: impl Into<String>,
        work_queue_url: impl Into<String>,
        push_queue_url: impl Into<String>,
    ) -> Self {
        Self {
            table: table.into(),
            work_queue_url: work_queue_url.into(),
            push_queue_url: push_queue_url.into(),
        }
    }

    /// Reads `A2A_TABLE`, `A2A_WORK_QUEUE_URL` and `A2A_PUSH_QUEUE_URL`. The error names every
    /// variable that is missing or empty.
    pub fn from_env() -> Result<Self, a2a_core::ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`Self::from_env`], through `lookup` (values are trimmed).
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, a2a_core::ConfigError> {
        let mut missing = Vec::new();
        let mut get = |name: &'static str| {
            let value = lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty());
            if value.is_none() {
                missing.push(name);
            }
            value.unwrap_or_default()
        };
        let config = Self {
            table: get(ENV_TABLE),
            work_queue_url: get(ENV_WORK_QUEUE_URL),
            push_queue_url: get(ENV_PUSH_QUEUE_URL),
        };
        if missing.is_empty() {
            Ok(config)
        } else {
            Err(a2a_core::ConfigError::missing(
                format!("the environment variable(s) {}", missing.join(", ")),
                "the DynamoDB store and SQS queues",
            ))
        }
    }
}

/// The DynamoDB and SQS clients of one process.
///
/// Cloning is cheap (the clients are reference-counted); build them once, at start-up or in a
/// Lambda function's init phase, never per request.
#[derive(Debug, Clone)]
pub struct AwsClients {
    /// The DynamoDB client.
    pub dynamodb: aws_sdk_dynamodb::Client,
    /// The SQS client.
    pub sqs: aws_sdk_sqs::Client,
}

impl AwsClients {
    /// Loads the SDK configuration from the standard sources (environment, profile, instance
    /// role) and builds both clients, every call bounded by [`CALL_LIMITS`].
    /// `AWS_ENDPOINT_URL` redirects them to an emulator.
    pub async fn from_env() -> Self {
        let sdk = aws_config::defaults(BehaviorVersion::latest()).load().await;
        Self::from_sdk_config(&with_call_limits(&sdk))
    }

    /// Builds both clients from an SDK configuration loaded elsewhere.
    pub fn from_sdk_config(sdk: &aws_config::SdkConfig) -> Self {
        Self {
            dynamodb: aws_sdk_dynamodb::Client::new(sdk),
            sqs: aws_sdk_sqs::Client::new(sdk),
        }
    }
}

/// The three adapters a service needs, sharing one set of clients.
#[derive(Debug, Clone)]
pub struct AwsAdapters {
    /// The task store.
    pub store: DynamoTaskStore,
    /// The work queue.
    pub work: SqsWorkQueue,
    /// The push queue.
    pub push: SqsPushQueue,
}

impl AwsAdapters {
    /// Builds the adapters on `clients` for the resources named in `config`.
    pub fn new(clients: &AwsClients, config: &AwsConfig) -> Self {
        Self {
            store: DynamoTaskStore::new(clients.dynamodb.clone(), &config.table),
            work: SqsWorkQueue::new(clients.sqs.clone(), &config.work_queue_url),
            push: SqsPushQueue::new(clients.sqs.clone(), &config.push_queue_url),
        }
    }

    /// Reads [`AwsConfig::from_env`] and builds clients with [`AwsClients::from_env`].
    pub async fn from_env() -> Result<Self, a2a_core::ConfigError> {
        let config = AwsConfig::from_env()?;
        Ok(Self::new(&AwsClients::from_env().await, &config))
    }

    /// Attaches `meter` to all three adapters.
    pub fn with_meter(self, meter: &Meter) -> Self {
        Self {
            store: self.store.with_meter(meter.clone()),
            work: self.work.with_meter(meter.clone()),
            push: self.push.with_meter(meter.clone()),
        }
    }
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_from_env_names_every_missing_variable() {
        let err = AwsConfig::from_lookup(|name| (name == ENV_TABLE).then(|| "tasks".to_owned()))
            .unwrap_err();
        let a2a_core::ConfigError::Missing { setting, .. } = err else {
            panic!("{err:?}");
        };
        assert!(setting.contains(ENV_WORK_QUEUE_URL) && setting.contains(ENV_PUSH_QUEUE_URL));
        assert!(!setting.contains(ENV_TABLE));

        let config = AwsConfig::from_lookup(|name| Some(format!("value-of-{name}"))).unwrap();
        assert_eq!(config.table, "value-of-A2A_TABLE");
        assert_eq!(config.push_queue_url, "value-of-A2A_PUSH_QUEUE_URL");

        let blank = AwsConfig::from_lookup(|_| Some("  ".into())).unwrap_err();
        assert!(blank.to_string().contains(ENV_TABLE));
    }
}
