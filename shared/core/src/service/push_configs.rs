//! The push-config operations: Create, Get, List and Delete TaskPushNotificationConfig.

use a2a_protocol::{
    A2AError, ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ProtocolVersion, TaskPushNotificationConfig, TaskPushNotificationConfigRef,
};

use super::A2aService;
use crate::context::CallContext;
use crate::task_log::store_error;

impl A2aService {
    /// Whether push notifications are offered: every push-config operation starts with it
    /// (after the push permission, which [`Self::call`] checks).
    pub(super) fn require_push_capability(&self) -> Result<(), A2AError> {
        if self.core.config.push_notifications {
            Ok(())
        } else {
            Err(A2AError::PushNotificationNotSupported)
        }
    }

    /// CreateTaskPushNotificationConfig.
    pub(super) async fn run_create_push_config(
        &self,
        ctx: &CallContext,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.require_push_capability()?;
        config.set_protocol(ctx.version);
        config.traceparent = ctx.traceparent.clone();
        if config.task_id.is_empty() {
            return Err(A2AError::invalid_params("taskId is required"));
        }
        config.validate()?;
        self.core
            .config
            .push_policy
            .check_new_url(&config.url, &*self.core.config.push_sender)
            .await?;
        let head = self.load(&ctx.owner, &config.task_id).await?;
        self.core
            .log
            .put_push_config(&ctx.owner, &head.task.id, config)
            .await
            .map(without_store_fields)
    }

    /// GetTaskPushNotificationConfig.
    pub(super) async fn run_get_push_config(
        &self,
        ctx: &CallContext,
        request: TaskPushNotificationConfigRef,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.require_push_capability()?;
        request.validate()?;
        self.load(&ctx.owner, &request.task_id).await?;
        self.core
            .store
            .get_push_config(&ctx.owner, &request.task_id, &request.id)
            .await
            .map_err(store_error)?
            .map(without_store_fields)
            .map(without_credentials)
            .ok_or_else(|| A2AError::PushConfigNotFound {
                task_id: request.task_id.clone(),
                config_id: request.id.clone(),
            })
    }

    /// ListTaskPushNotificationConfigs (one page holds them all).
    pub(super) async fn run_list_push_configs(
        &self,
        ctx: &CallContext,
        request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2AError> {
        self.require_push_capability()?;
        request.validate()?;
        self.load(&ctx.owner, &request.task_id).await?;
        let configs = self
            .core
            .store
            .list_push_configs(&ctx.owner, &request.task_id)
            .await
            .map_err(store_error)?;
        Ok(ListTaskPushNotificationConfigsResponse {
            configs: configs
                .into_iter()
                .map(without_store_fields)
                .map(without_credentials)
                .collect(),
            next_page_token: String::new(),
        })
    }

    /// DeleteTaskPushNotificationConfig; deleting a config that is not there succeeds.
    pub(super) async fn run_delete_push_config(
        &self,
        ctx: &CallContext,
        request: TaskPushNotificationConfigRef,
    ) -> Result<(), A2AError> {
        self.require_push_capability()?;
        request.validate()?;
        self.load(&ctx.owner, &request.task_id).await?;
        self.core
            .store
            .delete_push_config(&ctx.owner, &request.task_id, &request.id)
            .await
            .map_err(store_error)?;
        Ok(())
    }
}

/// A push config as answered to clients: which protocol version set it, and the trace of the
/// request that did, are the store's business.
fn without_store_fields(mut config: TaskPushNotificationConfig) -> TaskPushNotificationConfig {
    config.set_protocol(ProtocolVersion::V1_0);
    config.traceparent = None;
    config
}

/// A push config as read back (Get, List), in every protocol version: without its secrets,
/// the token and the authentication's credentials (the scheme stays, so a client sees that
/// there are some). They are written once and never read back: a client that needs to change
/// them sets the config again (A2A 1.1 draft, spec issue #1988).
fn without_credentials(mut config: TaskPushNotificationConfig) -> TaskPushNotificationConfig {
    config.token.clear();
    if let Some(auth) = config.authentication.as_mut() {
        auth.credentials.clear();
    }
    config
}
