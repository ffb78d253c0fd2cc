//! Push notification configs (`P#<id>` items) and push delivery records (`D#<id>` items) under
//! the task's partition, each scoped to its owner and expiring with the task.

use a2a_core::{
    Owner, PushAttempt, PushAttemptResult, PushConfigStore, PushDeliveryState, StoreError,
};
use a2a_protocol::{TaskPushNotificationConfig, Timestamp};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::ReturnValue;

use super::table::{
    backend, capacity, condition_failed, names, values, write_units, Next, ReadCost,
};
use super::DynamoTaskStore;
use crate::items::{self, attr, n, s};
use crate::now_ms;

impl DynamoTaskStore {
    /// Writes the item of a push config (not its id on the head).
    pub(super) async fn put_config_item(
        &self,
        owner: &Owner,
        config: &TaskPushNotificationConfig,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let item = items::config_item(owner, config, expires_at, now)?;
        items::check_size(&item, || format!("push config {}", config.id))?;
        // Never overwrite another owner's live config, nor a newer put or delete: this one may
        // be a copy the SDK gave up on that lands late (after the config's delete).
        let written = self
            .put_if(
                item,
                "(attribute_not_exists(#pk) OR #own = :own OR #exp <= :now) \
                 AND (attribute_not_exists(#wat) OR #wat <= :now)",
                names(&["pk", "own", "exp", "wat"]),
                values([(":own", s(owner.as_str())), (":now", n(now))]),
            )
            .await?;
        if written {
            Ok(())
        } else {
            Err(StoreError::Conflict)
        }
    }

    /// Writes a fresh delivery record holding only `attempt`, replacing an expired one.
    /// `false` if a live record appeared meanwhile (the caller updates that one instead).
    async fn put_fresh_delivery(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
        attempt: &PushAttempt,
        exp: i64,
    ) -> Result<bool, StoreError> {
        let mut state = PushDeliveryState::default();
        state.record(attempt);
        let mut item = items::key(items::task_pk(task_id), items::delivery_sk(config_id));
        item.extend([
            (attr::OWNER.to_owned(), s(owner.as_str())),
            (attr::EXPIRES.to_owned(), n(exp)),
            (attr::TTL.to_owned(), n(items::ttl_secs(exp))),
            (attr::ATTEMPTS.to_owned(), n(state.attempts)),
            (attr::DELIVERED.to_owned(), n(state.delivered)),
            (
                attr::CONSECUTIVE_FAILURES.to_owned(),
                n(state.consecutive_failures),
            ),
            (attr::DEAD_LETTERED.to_owned(), n(state.dead_lettered)),
            (attr::LAST_SEQ.to_owned(), n(state.last_seq)),
            (
                attr::LAST_SEQ_ATTEMPTS.to_owned(),
                n(state.last_seq_attempts),
            ),
            (attr::LAST_AT.to_owned(), n(attempt.at.millis())),
            (
                attr::LAST_RESULT.to_owned(),
                items::result_value(attempt.result),
            ),
        ]);
        let optional = [
            (attr::LAST_STATUS, state.last_status.map(n)),
            (attr::LAST_ERROR, state.last_error.map(s)),
            (
                attr::LAST_SUCCESS,
                state.last_success_at.map(|t| n(t.millis())),
            ),
            (attr::DISABLED, state.disabled_reason.map(s)),
        ];
        for (name, value) in optional {
            if let Some(value) = value {
                item.insert(name.to_owned(), value);
            }
        }
        self.put_new(item).await
    }
}

#[async_trait]
impl PushConfigStore for DynamoTaskStore {
    /// [`a2a_core::PushConfigStore::put_push_config`]: the config's item, then its id on the task's
    /// head, where the stream's fan-out finds it. A crash in between leaves a config that
    /// gets no pushes until it is put again (the client did not get its answer either).
    async fn put_push_config(
        &self,
        owner: &Owner,
        config: &TaskPushNotificationConfig,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        self.put_config_item(owner, config, expires_at).await?;
        if expires_at.millis() > now_ms() {
            self.mark_push_config(owner, &config.task_id, &config.id, true)
                .await?;
        }
        Ok(())
    }

    /// [`a2a_core::PushConfigStore::get_push_config`].
    async fn get_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        self.get_visible(
            owner,
            task_id,
            items::config_sk(config_id),
            items::config_from_item,
        )
        .await
        .map(Option::flatten)
    }

    /// [`a2a_core::PushConfigStore::list_push_configs`].
    async fn list_push_configs(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        let now = now_ms();
        let mut configs = Vec::new();
        let query = self
            .client
            .query()
            .table_name(&*self.table)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
            .set_expression_attribute_names(Some(names(&["pk", "sk"])))
            .set_expression_attribute_values(Some(values([
                (":pk", s(items::task_pk(task_id))),
                (":prefix", s(items::CONFIG_PREFIX)),
            ])))
            .consistent_read(true);
        self.query_pages(query, ReadCost::Consistent, |page| {
            for item in page.items() {
                if items::visible(item, owner, now) {
                    configs.extend(items::config_from_item(item)?);
                }
            }
            Ok(Next::More(None))
        })
        .await?;
        // Sort keys are `P#<id>`: DynamoDB's byte order is already id order.
        Ok(configs)
    }

    /// [`a2a_core::PushConfigStore::delete_push_config`]: the config's item becomes a tombstone (its
    /// config removed, the delete's time kept until the task expires), so a put of it the SDK
    /// gave up on that lands later is refused rather than bringing the config back.
    async fn delete_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<bool, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&*self.table)
            .set_key(Some(items::key(
                items::task_pk(task_id),
                items::config_sk(config_id),
            )))
            .update_expression("SET #wat = :now REMOVE #cfg")
            .condition_expression(
                "#own = :own AND attribute_exists(#cfg) \
                 AND (attribute_not_exists(#wat) OR #wat <= :now)",
            )
            .set_expression_attribute_names(Some(names(&["own", "cfg", "wat"])))
            .set_expression_attribute_values(Some(values([
                (":own", s(owner.as_str())),
                (":now", n(now_ms())),
            ])))
            .return_values(ReturnValue::AllOld)
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        match result {
            Ok(out) => {
                let old = out.attributes.unwrap_or_default();
                self.record(
                    "UpdateItem",
                    capacity(out.consumed_capacity.as_ref()),
                    write_units(items::item_size(&old)),
                    0.0,
                );
                self.mark_push_config(owner, task_id, config_id, false)
                    .await?;
                // An expired config was already invisible: deleting it is not deleting "one".
                Ok(items::visible(&old, owner, now_ms()))
            }
            // Missing, deleted, or another owner's: nothing of ours to delete.
            Err(err) if condition_failed(&err) => {
                self.record("UpdateItem", 0.0, 1.0, 0.0);
                Ok(false)
            }
            Err(err) => Err(backend("UpdateItem", &err)),
        }
    }

    /// [`a2a_core::PushConfigStore::record_push_attempt`].
    async fn record_push_attempt(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
        attempt: &PushAttempt,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        let exp = expires_at.millis();
        // One UpdateItem applies `PushDeliveryState::record` atomically: counters with ADD,
        // the rest with SET/REMOVE, chosen by the attempt's result (known here).
        let mut set = vec![
            "#own = :own",
            "#exp = :exp",
            "#ttl = :ttl",
            "#lseq = :seq",
            "#lat = :at",
            "#lres = :res",
            "#lsatt = :num",
        ];
        let mut add = vec!["#att :one"];
        let mut remove = Vec::new();
        let mut used = vec![
            "pk", "own", "exp", "ttl", "lseq", "lat", "lres", "att", "lsatt",
        ];
        let mut vals = values([
            (":own", s(owner.as_str())),
            (":exp", n(exp)),
            (":ttl", n(items::ttl_secs(exp))),
            (":seq", n(attempt.seq)),
            (":num", n(attempt.number)),
            (":at", n(attempt.at.millis())),
            (":res", items::result_value(attempt.result)),
            (":one", n(1)),
            (":now", n(now_ms())),
        ]);
        used.push("lstat");
        match attempt.http_status {
            Some(status) => {
                set.push("#lstat = :status");
                vals.insert(":status".into(), n(status));
            }
            None => remove.push("#lstat"),
        }
        let records_error = match attempt.result {
            PushAttemptResult::Delivered => {
                set.push("#cf = :zero");
                set.push("#lsucc = :at");
                add.push("#dlv :one");
                used.extend(["cf", "lsucc", "dlv"]);
                vals.insert(":zero".into(), n(0));
                false
            }
            PushAttemptResult::Failed | PushAttemptResult::Refused => {
                add.push("#cf :one");
                used.push("cf");
                true
            }
            PushAttemptResult::Gone => {
                set.push("#dis = :dis");
                used.push("dis");
                let reason = attempt
                    .error
                    .clone()
                    .unwrap_or_else(|| "the webhook answered 410 Gone".into());
                vals.insert(":dis".into(), s(reason));
                true
            }
        };
        if records_error {
            used.push("lerr");
            match &attempt.error {
                Some(error) => {
                    set.push("#lerr = :err");
                    vals.insert(":err".into(), s(error));
                }
                None => remove.push("#lerr"),
            }
        }
        if attempt.final_attempt {
            add.push("#dl :one");
            used.push("dl");
        }
        let mut update = format!("SET {} ADD {}", set.join(", "), add.join(", "));
        if !remove.is_empty() {
            update.push_str(&format!(" REMOVE {}", remove.join(", ")));
        }

        for _round in 0..3 {
            let result = self
                .client
                .update_item()
                .table_name(&*self.table)
                .set_key(Some(items::key(
                    items::task_pk(task_id),
                    items::delivery_sk(config_id),
                )))
                .update_expression(&update)
                // Only our own live record is continued; an expired one starts afresh below.
                .condition_expression("attribute_not_exists(#pk) OR (#own = :own AND #exp > :now)")
                .set_expression_attribute_names(Some(names(&used)))
                .set_expression_attribute_values(Some(vals.clone()))
                .return_values(ReturnValue::AllNew)
                .set_return_consumed_capacity(self.return_capacity())
                .send()
                .await;
            let updated = self.conditional(
                "UpdateItem",
                result,
                |out| out.consumed_capacity(),
                |out| write_units(out.attributes().map_or(0, items::item_size)),
                1.0,
            )?;
            if updated.is_some()
                || self
                    .put_fresh_delivery(owner, task_id, config_id, attempt, exp)
                    .await?
            {
                return Ok(());
            }
            // A live record appeared between the two writes: update it.
        }
        // Still failing: the record belongs to another owner's live task of the same id.
        Err(StoreError::Conflict)
    }

    /// [`a2a_core::PushConfigStore::get_push_delivery`].
    async fn get_push_delivery(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<PushDeliveryState>, StoreError> {
        self.get_visible(
            owner,
            task_id,
            items::delivery_sk(config_id),
            items::delivery_from_item,
        )
        .await
    }
}
