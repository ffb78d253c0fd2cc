//! Where the local server keeps its state: the embedded SQLite file (the default, nothing to
//! install) or DynamoDB + SQS (AWS, or an emulator such as moto through `AWS_ENDPOINT_URL`),
//! which needs a build with the `dynamodb` feature.

use std::sync::Arc;

use a2a_core::{A2aService, PushQueue, TaskStore, WorkQueue};
use a2a_embedded::{QueueName, SqliteStore};

use crate::loops::LoopQueue;
use crate::Options;

/// Which adapters the server runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StoreKind {
    /// One SQLite file under `--data-dir`, with the queues in it.
    Embedded,
    /// DynamoDB for tasks and SQS for the work and push queues (a build with the `dynamodb`
    /// feature).
    Dynamodb,
}

/// What `--store dynamodb` says in a build without the AWS adapters.
#[cfg(not(feature = "dynamodb"))]
pub(crate) const NO_DYNAMODB: &str = "--store dynamodb needs the AWS adapters, which this build \
     leaves out: run `cargo run -p a2a-local --features dynamodb -- --store dynamodb`";

/// Starts the push fan-out loop of a store whose writes reach the fan-out after the fact
/// (DynamoDB: its table's stream), for the service, until the receiver turns true.
pub(crate) type FanOutLoop = Box<
    dyn FnOnce(A2aService, tokio::sync::watch::Receiver<bool>) -> tokio::task::JoinHandle<()>
        + Send,
>;

/// The ports for the service, and the queues for the worker and push loops.
pub(crate) struct Backend {
    pub store: Arc<dyn TaskStore>,
    pub work: Arc<dyn WorkQueue>,
    pub push: Arc<dyn PushQueue>,
    pub work_queue: LoopQueue,
    pub push_queue: LoopQueue,
    /// The embedded store, which needs a purge loop (DynamoDB's TTL does that itself).
    pub embedded: Option<Arc<SqliteStore>>,
    /// What to say in the start-up line.
    pub description: String,
    /// The push fan-out loop (DynamoDB's stream poller); `None` for the embedded store, which
    /// enqueues push jobs in the transaction that writes the events.
    pub fan_out: Option<FanOutLoop>,
}

impl Backend {
    /// Opens the adapters `options` ask for.
    pub(crate) async fn open(options: &Options) -> Result<Backend, String> {
        match options.store {
            StoreKind::Embedded => {
                let store = Arc::new(SqliteStore::open(&options.data_dir).map_err(|e| {
                    format!(
                        "cannot open the store in {}: {e}; choose a directory you can write \
                         with --data-dir (or A2A_DATA_DIR)",
                        options.data_dir.display()
                    )
                })?);
                Ok(Backend {
                    store: store.clone(),
                    work: store.clone(),
                    push: store.clone(),
                    work_queue: LoopQueue::Embedded {
                        store: store.clone(),
                        queue: QueueName::Work,
                    },
                    push_queue: LoopQueue::Embedded {
                        store: store.clone(),
                        queue: QueueName::Push,
                    },
                    description: format!("data in {}", options.data_dir.display()),
                    embedded: Some(store),
                    fan_out: None,
                })
            }
            #[cfg(feature = "dynamodb")]
            StoreKind::Dynamodb => aws::open(options).await,
            #[cfg(not(feature = "dynamodb"))]
            StoreKind::Dynamodb => Err(NO_DYNAMODB.into()),
        }
    }
}

#[cfg(feature = "dynamodb")]
mod aws {
    use std::sync::Arc;

    use a2a_aws::fanout::{run_stream_fan_out, Checkpoints, StreamPoller};
    use a2a_aws::resources::{self, Resources};
    use a2a_aws::{AwsAdapters, AwsClients, AwsConfig};
    use aws_config::ecs::EcsCredentialsProvider;
    use aws_config::environment::{
        EnvironmentVariableCredentialsProvider, EnvironmentVariableRegionProvider,
    };
    use aws_config::meta::credentials::CredentialsProviderChain;
    use aws_config::meta::region::RegionProviderChain;
    use aws_config::profile::{ProfileFileCredentialsProvider, ProfileFileRegionProvider};
    use aws_config::web_identity_token::WebIdentityTokenCredentialsProvider;
    use aws_config::{BehaviorVersion, SdkConfig};
    use aws_credential_types::provider::error::CredentialsError;
    use aws_credential_types::provider::ProvideCredentials;

    use super::Backend;
    use crate::loops::LoopQueue;
    use crate::Options;

    /// Opens DynamoDB + SQS: checks the AWS configuration first, then the table and queues.
    pub(super) async fn open(options: &Options) -> Result<Backend, String> {
        let sdk = a2a_aws::with_call_limits(&sdk_config().await?);
        let clients = AwsClients::from_sdk_config(&sdk);
        let config = match &options.create_resources {
            // For emulators: create a table and queues named after the prefix.
            Some(prefix) => resources::create_all(&clients, &Resources::named(prefix))
                .await
                .map_err(|e| format!("cannot create the DynamoDB table and SQS queues: {e}"))?,
            None => AwsConfig::from_env().map_err(|e| {
                format!("--store dynamodb: {e} (or pass --create-resources PREFIX to create them)")
            })?,
        };
        let adapters = AwsAdapters::new(&clients, &config);
        // Push fan-out: the table's stream, from where the last run of a local server on
        // this table left it (its checkpoint lives in the table).
        let poller = StreamPoller::new(&sdk, &config.table, Checkpoints::Table("local".into()))
            .await
            .map_err(|e| format!("--store dynamodb: {e}"))?;
        let fan_out: super::FanOutLoop = Box::new(move |service, stop| {
            tokio::spawn(run_stream_fan_out(
                poller,
                move |writes| {
                    let service = service.clone();
                    async move { service.fan_out(&writes).await }
                },
                stop,
            ))
        });
        Ok(Backend {
            work_queue: LoopQueue::Sqs {
                queue: adapters.work.queue().clone(),
                wait: options.queue_wait(),
            },
            push_queue: LoopQueue::Sqs {
                queue: adapters.push.queue().clone(),
                wait: options.queue_wait(),
            },
            store: Arc::new(adapters.store),
            work: Arc::new(adapters.work),
            push: Arc::new(adapters.push),
            embedded: None,
            description: format!("tasks in DynamoDB table {}", config.table),
            fan_out: Some(fan_out),
        })
    }

    /// The SDK configuration of a server on a developer's machine: region and credentials from
    /// the environment, a profile, a web identity or a container, never from the instance
    /// metadata service. Off EC2 that service only times out, after seconds, with a long error
    /// that does not say what is missing; here a missing region or credential is one line.
    async fn sdk_config() -> Result<SdkConfig, String> {
        let region = RegionProviderChain::first_try(EnvironmentVariableRegionProvider::new())
            .or_else(ProfileFileRegionProvider::new());
        let credentials = CredentialsProviderChain::first_try(
            "Environment",
            EnvironmentVariableCredentialsProvider::new(),
        )
        .or_else("Profile", ProfileFileCredentialsProvider::builder().build())
        .or_else(
            "WebIdentityToken",
            WebIdentityTokenCredentialsProvider::builder().build(),
        )
        .or_else("EcsContainer", EcsCredentialsProvider::builder().build());
        // What is missing, and how to give it.
        let mut missing: Vec<(&str, &str)> = Vec::new();
        if region.region().await.is_none() {
            missing.push(("region", "AWS_REGION (or a profile with a region)"));
        }
        match credentials.provide_credentials().await {
            Ok(_) => {}
            Err(CredentialsError::CredentialsNotLoaded(_)) => missing.push((
                "credentials",
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)",
            )),
            Err(err) => {
                // The error and its causes on one line (a profile's expired SSO session, say).
                let causes: Vec<String> =
                    std::iter::successors(Some(&err as &dyn std::error::Error), |e| e.source())
                        .map(ToString::to_string)
                        .collect();
                return Err(format!(
                    "--store dynamodb: cannot load the AWS credentials: {}",
                    causes.join(": ")
                ));
            }
        }
        if !missing.is_empty() {
            let what: Vec<&str> = missing.iter().map(|(what, _)| *what).collect();
            let how: Vec<&str> = missing.iter().map(|(_, how)| *how).collect();
            return Err(format!(
                "--store dynamodb: no AWS {} found (the instance metadata service is not asked \
                 on this machine): set {}; for moto here: eval \"$(infra/moto.sh env-start)\"",
                what.join(" and no "),
                how.join(", and ")
            ));
        }
        Ok(aws_config::defaults(BehaviorVersion::latest())
            .region(region)
            .credentials_provider(credentials)
            .load()
            .await)
    }
}
