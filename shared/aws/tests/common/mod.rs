//! Test harness: clients for the moto server named by `AWS_ENDPOINT_URL`, and fresh, uniquely
//! named resources per test (moto keeps one state per server).
#![allow(dead_code)]

use a2a_aws::resources::{self, Resources};
use a2a_aws::{AwsAdapters, AwsClients, AwsConfig, DynamoTaskStore};
use aws_config::{BehaviorVersion, Region};
use aws_sdk_dynamodb::config::Credentials;

/// Clients pointed at the emulator. Panics, with how to start one, when `AWS_ENDPOINT_URL` is
/// unset: these tests must never pass without having talked to DynamoDB and SQS.
pub async fn clients() -> AwsClients {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        !endpoint.trim().is_empty(),
        "AWS_ENDPOINT_URL is not set. The a2a-aws tests run against moto's server: start it with\n\
         \n    eval \"$(infra/moto.sh env-start)\"\n\n\
         (from the repository root), then run the tests again in that shell; `infra/moto.sh stop` \
         stops it."
    );
    // Defaults for the emulator, unless the environment says otherwise. Set on the loader
    // rather than with set_var, which is unsound while other test threads read the environment.
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if std::env::var_os("AWS_REGION").is_none() && std::env::var_os("AWS_DEFAULT_REGION").is_none()
    {
        loader = loader.region(Region::new("us-east-1"));
    }
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
        loader = loader.credentials_provider(Credentials::new("test", "test", None, None, "moto"));
    }
    AwsClients::from_sdk_config(&loader.load().await)
}

/// A fresh set of resources (table, queues and dead-letter queues) for one test.
pub struct Env {
    pub clients: AwsClients,
    pub resources: Resources,
    pub config: AwsConfig,
}

impl Env {
    pub async fn new() -> Self {
        let clients = clients().await;
        let prefix = format!("t{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let resources = Resources::named(&prefix);
        let config = resources::create_all(&clients, &resources)
            .await
            .unwrap_or_else(|e| panic!("cannot create the test resources on the emulator: {e}"));
        Self {
            clients,
            resources,
            config,
        }
    }

    pub fn store(&self) -> DynamoTaskStore {
        DynamoTaskStore::new(self.clients.dynamodb.clone(), &self.config.table)
    }

    pub fn adapters(&self) -> AwsAdapters {
        AwsAdapters::new(&self.clients, &self.config)
    }

    /// Deletes the resources (moto keeps everything in memory).
    pub async fn cleanup(self) {
        resources::delete_all(&self.clients, &self.resources).await;
    }
}
