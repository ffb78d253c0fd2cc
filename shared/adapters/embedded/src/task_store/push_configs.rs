//! Push configs and their delivery records on SQLite (`push_configs`, `push_deliveries`).

use a2a_core::{Owner, PushAttempt, PushConfigStore, PushDeliveryState, StoreError};
use a2a_protocol::{TaskPushNotificationConfig, Timestamp};
use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use crate::{now_ms, CachedStatements, DbError, SqliteStore};

impl SqliteStore {
    /// The JSON body of the row of `table` (`push_configs` or `push_deliveries`) for
    /// `config_id` of task `task_id`, if `owner` has one that has not expired.
    async fn config_row<T: serde::de::DeserializeOwned + Send + 'static>(
        &self,
        table: &'static str,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<T>, StoreError> {
        let owner = owner.as_str().to_owned();
        let task_id = task_id.to_owned();
        let config_id = config_id.to_owned();
        self.read(move |conn| {
            let body: Option<String> = conn
                .query_row_cached(
                    &format!(
                        "SELECT body FROM {table}
                         WHERE owner = ?1 AND task_id = ?2 AND config_id = ?3 AND expires_at_ms > ?4"
                    ),
                    params![owner, task_id, config_id, now_ms()],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(body.map(|b| serde_json::from_str(&b)).transpose()?)
        })
        .await
    }
}

#[async_trait]
impl PushConfigStore for SqliteStore {
    async fn put_push_config(
        &self,
        owner: &Owner,
        config: &TaskPushNotificationConfig,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        if config.task_id.is_empty() || config.id.is_empty() {
            return Err(StoreError::Backend(
                "a stored push config needs a task id and an id".into(),
            ));
        }
        let owner = owner.as_str().to_owned();
        let task_id = config.task_id.clone();
        let config_id = config.id.clone();
        let body = serde_json::to_string(config).map_err(DbError::from)?;
        let expires_at_ms = expires_at.millis();
        self.write(move |tx| {
            tx.execute_cached(
                "INSERT INTO push_configs (owner, task_id, config_id, body, expires_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (owner, task_id, config_id)
                 DO UPDATE SET body = excluded.body, expires_at_ms = excluded.expires_at_ms",
                params![owner, task_id, config_id, body, expires_at_ms],
            )?;
            Ok(())
        })
        .await
    }

    async fn get_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        self.config_row("push_configs", owner, task_id, config_id)
            .await
    }

    async fn list_push_configs(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        let owner = owner.as_str().to_owned();
        let task_id = task_id.to_owned();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT body FROM push_configs
                 WHERE owner = ?1 AND task_id = ?2 AND expires_at_ms > ?3
                 ORDER BY config_id",
            )?;
            let bodies = stmt
                .query_map(params![owner, task_id, now_ms()], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            bodies
                .iter()
                .map(|body| Ok(serde_json::from_str(body)?))
                .collect()
        })
        .await
    }

    async fn delete_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<bool, StoreError> {
        let owner = owner.as_str().to_owned();
        let task_id = task_id.to_owned();
        let config_id = config_id.to_owned();
        self.write(move |tx| {
            let now = now_ms();
            let expires_at: Option<i64> = tx
                .query_row_cached(
                    "SELECT expires_at_ms FROM push_configs
                     WHERE owner = ?1 AND task_id = ?2 AND config_id = ?3",
                    params![owner, task_id, config_id],
                    |r| r.get(0),
                )
                .optional()?;
            tx.execute_cached(
                "DELETE FROM push_configs WHERE owner = ?1 AND task_id = ?2 AND config_id = ?3",
                params![owner, task_id, config_id],
            )?;
            // An expired config was already invisible: deleting it is not deleting "one".
            Ok(expires_at.is_some_and(|t| t > now))
        })
        .await
    }

    async fn record_push_attempt(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
        attempt: &PushAttempt,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        let owner = owner.as_str().to_owned();
        let task_id = task_id.to_owned();
        let config_id = config_id.to_owned();
        let attempt = attempt.clone();
        let expires_at_ms = expires_at.millis();
        self.write(move |tx| {
            let now = now_ms();
            // Read, fold and write in one immediate transaction: concurrent attempts (other
            // processes on the file) cannot lose each other's counts.
            let body: Option<String> = tx
                .query_row_cached(
                    "SELECT body FROM push_deliveries
                     WHERE owner = ?1 AND task_id = ?2 AND config_id = ?3 AND expires_at_ms > ?4",
                    params![owner, task_id, config_id, now],
                    |r| r.get(0),
                )
                .optional()?;
            let mut state: PushDeliveryState = match body {
                Some(body) => serde_json::from_str(&body)?,
                None => PushDeliveryState::default(),
            };
            state.record(&attempt);
            tx.execute_cached(
                "INSERT INTO push_deliveries (owner, task_id, config_id, body, expires_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (owner, task_id, config_id)
                 DO UPDATE SET body = excluded.body, expires_at_ms = excluded.expires_at_ms",
                params![
                    owner,
                    task_id,
                    config_id,
                    serde_json::to_string(&state)?,
                    expires_at_ms
                ],
            )?;
            Ok(())
        })
        .await
    }

    async fn get_push_delivery(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<PushDeliveryState>, StoreError> {
        self.config_row("push_deliveries", owner, task_id, config_id)
            .await
    }
}
