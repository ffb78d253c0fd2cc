//! Test harness: clients for the moto server named by `AWS_ENDPOINT_URL`, and fresh, uniquely
//! named resources per test (moto keeps one state per server). Without an emulator every test
//! skips (`let Some(env) = Env::new().await else { return };`).
#![allow(dead_code)]

use a2a_aws::resources::{self, Resources};
use a2a_aws::{AwsAdapters, AwsClients, AwsConfig, DynamoTaskStore};

/// Clients pointed at the emulator, or `None` (the test skips, see
/// [`a2a_test_support::emulator`]) when none is named.
pub(crate) async fn clients() -> Option<AwsClients> {
    let sdk = a2a_test_support::emulator("a2a-aws").await?;
    Some(AwsClients::from_sdk_config(&sdk))
}

/// A fresh set of resources (table, queues and dead-letter queues) for one test.
pub(crate) struct Env {
    pub clients: AwsClients,
    pub resources: Resources,
    pub config: AwsConfig,
}

impl Env {
    /// Every item of the table's partition `pk`, read consistently (one page: the tests'
    /// partitions are small).
    pub(crate) async fn partition(
        &self,
        pk: String,
    ) -> Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
        let out = self
            .clients
            .dynamodb
            .query()
            .table_name(&self.config.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", aws_sdk_dynamodb::types::AttributeValue::S(pk))
            .consistent_read(true)
            .send()
            .await
            .expect("Query of a partition");
        out.items().to_vec()
    }

    /// `None` without an emulator: the test skips.
    pub(crate) async fn new() -> Option<Self> {
        let clients = clients().await?;
        let prefix = format!("t{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let resources = Resources::named(&prefix);
        let config = resources::create_all(&clients, &resources)
            .await
            .unwrap_or_else(|e| panic!("cannot create the test resources on the emulator: {e}"));
        Some(Self {
            clients,
            resources,
            config,
        })
    }

    pub(crate) fn store(&self) -> DynamoTaskStore {
        DynamoTaskStore::new(self.clients.dynamodb.clone(), &self.config.table)
    }

    pub(crate) fn adapters(&self) -> AwsAdapters {
        AwsAdapters::new(&self.clients, &self.config)
    }

    /// Deletes the resources (moto keeps everything in memory).
    pub(crate) async fn cleanup(self) {
        resources::delete_all(&self.clients, &self.resources).await;
    }
}
