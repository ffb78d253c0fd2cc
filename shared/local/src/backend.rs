//! Where the local server keeps its state: the embedded SQLite file (the default, nothing to
//! install) or DynamoDB + SQS (AWS, or an emulator such as moto through `AWS_ENDPOINT_URL`).

use std::sync::Arc;

use a2a_aws::resources::{self, Resources};
use a2a_aws::{AwsAdapters, AwsClients, AwsConfig};
use a2a_core::{PushQueue, TaskStore, WorkQueue};
use a2a_embedded::{QueueName, SqliteStore};

use crate::loops::JobQueue;
use crate::Options;

/// Which adapters the server runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StoreKind {
    /// One SQLite file under `--data-dir`, with the queues in it.
    Embedded,
    /// DynamoDB for tasks and SQS for the work and push queues.
    Dynamodb,
}

/// The ports for the service, and the queues for the worker and push loops.
pub struct Backend {
    pub store: Arc<dyn TaskStore>,
    pub work: Arc<dyn WorkQueue>,
    pub push: Arc<dyn PushQueue>,
    pub work_queue: JobQueue,
    pub push_queue: JobQueue,
    /// The embedded store, which needs a purge loop (DynamoDB's TTL does that itself).
    pub embedded: Option<Arc<SqliteStore>>,
    /// What to say in the start-up line.
    pub description: String,
}

impl Backend {
    /// Opens the adapters `options` ask for.
    pub async fn open(options: &Options) -> Result<Backend, String> {
        match options.store {
            StoreKind::Embedded => {
                let store = Arc::new(SqliteStore::open(&options.data_dir).map_err(|e| {
                    format!(
                        "cannot open the store in {}: {e}",
                        options.data_dir.display()
                    )
                })?);
                Ok(Backend {
                    store: store.clone(),
                    work: store.clone(),
                    push: store.clone(),
                    work_queue: JobQueue::Embedded {
                        store: store.clone(),
                        queue: QueueName::Work,
                    },
                    push_queue: JobQueue::Embedded {
                        store: store.clone(),
                        queue: QueueName::Push,
                    },
                    description: format!("data in {}", options.data_dir.display()),
                    embedded: Some(store),
                })
            }
            StoreKind::Dynamodb => {
                let clients = AwsClients::from_env().await;
                let config = match &options.create_resources {
                    // For emulators: create a table and queues named after the prefix.
                    Some(prefix) => resources::create_all(&clients, &Resources::named(prefix))
                        .await
                        .map_err(|e| {
                            format!("cannot create the DynamoDB table and SQS queues: {e}")
                        })?,
                    None => AwsConfig::from_env()?,
                };
                let adapters = AwsAdapters::new(&clients, &config);
                Ok(Backend {
                    work_queue: JobQueue::Sqs(adapters.work.queue().clone()),
                    push_queue: JobQueue::Sqs(adapters.push.queue().clone()),
                    store: Arc::new(adapters.store),
                    work: Arc::new(adapters.work),
                    push: Arc::new(adapters.push),
                    embedded: None,
                    description: format!("tasks in DynamoDB table {}", config.table),
                })
            }
        }
    }
}
