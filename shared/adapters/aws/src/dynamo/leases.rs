//! Leases: which execution runs a task's agent now. One lease item per task, taken with a
//! conditional put (free, ours, or over) and given back with a conditional delete.
//!
//! Lease items do not live in their task's partition but in a few fixed partitions
//! `LEASES#<shard>` (the shard derived from the task id), keyed by task id. That is what lets
//! the sweep find the expired inline leases without scanning the table: it queries each shard,
//! reading only lease items (a few hundred bytes each, only those of executions running now),
//! filtered on `inline` and the end time. The alternative, a sparse index on the end time,
//! would bill an index write on every renewal; this layout costs nothing beyond the lease
//! writes themselves, and an idle sweep costs [`LEASE_SHARDS`] minimal reads.
//!
//! A queued job's lease also counts the job's attempts (`jseq`: the job's trigger sequence
//! number, `jatt`: its attempts). Leases are written with `UpdateItem`, so a renewal keeps
//! the count; a release deletes the item, and with it the count of a job that is settled. An
//! attempt that died leaves its lease to expire, count included, for the job's redelivery.

use a2a_core::{ExpiredLease, LeaseStore, Owner, StoreError};
use a2a_protocol::Timestamp;
use async_trait::async_trait;

use super::table::{names, values, write_units, Next, ReadCost};
use super::DynamoTaskStore;
use crate::items::{self, attr, get_n, get_s, n, s, Item};
use crate::now_ms;

/// Leases are kept this long past their end before DynamoDB's TTL deletes them (they are
/// ignored once over anyway; this only reclaims space, and gives the sweep a day to find an
/// expired inline lease).
const LEASE_TTL_GRACE_SECS: i64 = 24 * 3600;

/// How many partitions hold the lease items. Each takes 1,000 lease writes a second (and
/// DynamoDB splits a hot one further by sort key); each costs the sweep one query.
pub(crate) const LEASE_SHARDS: u32 = 8;

/// Lease attribute: set (to 1) on an inline execution's lease.
const INLINE: &str = "inl";

/// Lease attribute: the trigger sequence number of the queued job whose attempts `jatt` counts.
const JOB_SEQ: &str = "jseq";

/// Lease attribute: attempts started at the job `jseq`.
const JOB_ATTEMPTS: &str = "jatt";

/// The lease may be taken: free, ours (renewal), or over.
const TAKEABLE: &str = "(attribute_not_exists(#pk) OR #holder = :holder OR #until <= :now)";

/// The partition of a task's lease: a stable hash (FNV-1a) of the task id, so every process
/// agrees on it whatever its build.
fn lease_pk(task_id: &str) -> String {
    let hash = task_id.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    shard_pk(hash % LEASE_SHARDS)
}

fn shard_pk(shard: u32) -> String {
    format!("LEASES#{shard}")
}

fn lease_key(task_id: &str) -> Item {
    items::key(lease_pk(task_id), task_id)
}

impl DynamoTaskStore {
    /// Takes the lease for a queued job (`owner` is `None`) or an inline execution.
    async fn take_lease(
        &self,
        task_id: &str,
        holder: &str,
        until: Timestamp,
        owner: Option<&Owner>,
    ) -> Result<bool, StoreError> {
        let (mut update, mut used, mut vals) = lease_update(holder, until);
        match owner {
            Some(owner) => {
                update.push_str(", #own = :own, #inl = :one");
                vals.insert(":own".into(), s(owner.as_str()));
                vals.insert(":one".into(), n(1));
            }
            None => update.push_str(" REMOVE #own, #inl"),
        }
        used.extend([attr::OWNER, INLINE]);
        // Free, ours (renewal), or over: take it. Anyone else's live lease: leave it.
        let taken = self
            .update_lease_if(task_id, &update, TAKEABLE, names(&used), vals)
            .await?;
        Ok(taken.is_some())
    }

    /// Updates a task's lease item if `condition` holds: its attributes after the update, or
    /// `None` if the condition did not hold.
    async fn update_lease_if(
        &self,
        task_id: &str,
        update: &str,
        condition: &str,
        names: std::collections::HashMap<String, String>,
        values: std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>,
    ) -> Result<Option<Item>, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&*self.table)
            .set_key(Some(lease_key(task_id)))
            .update_expression(update)
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        // Refused: someone else's live lease, left alone.
        let written = self.conditional(
            "UpdateItem",
            result,
            |out| out.consumed_capacity(),
            |out| write_units(out.attributes().map_or(0, items::item_size)),
            1.0,
        )?;
        Ok(written.map(|out| out.attributes().cloned().unwrap_or_default()))
    }

    /// Deletes a task's lease item if `condition` holds; `false` if it did not.
    async fn delete_lease_if(
        &self,
        task_id: &str,
        condition: &str,
        names: std::collections::HashMap<String, String>,
        values: std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>,
    ) -> Result<bool, StoreError> {
        let result = self
            .client
            .delete_item()
            .table_name(&*self.table)
            .set_key(Some(lease_key(task_id)))
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        // Refused: not ours (or nobody's, or renewed meanwhile), nothing to remove.
        let removed = self.conditional(
            "DeleteItem",
            result,
            |out| out.consumed_capacity(),
            |_| 1.0,
            1.0,
        )?;
        Ok(removed.is_some())
    }
}

#[async_trait]
impl LeaseStore for DynamoTaskStore {
    async fn acquire_lease(
        &self,
        task_id: &str,
        holder: &str,
        until: Timestamp,
    ) -> Result<bool, StoreError> {
        self.take_lease(task_id, holder, until, None).await
    }

    /// [`a2a_core::LeaseStore::begin_job_attempt`]: the lease as `take_lease` takes
    /// a queued one, with the job's attempt count. Two conditional updates, the likelier first:
    /// another job's (or no) count starts at 1; this job's goes up by one.
    async fn begin_job_attempt(
        &self,
        task_id: &str,
        trigger_seq: u64,
        holder: &str,
        until: Timestamp,
    ) -> Result<Option<u32>, StoreError> {
        let (update, mut used, mut vals) = lease_update(holder, until);
        used.extend([attr::OWNER, INLINE, JOB_SEQ, JOB_ATTEMPTS]);
        vals.insert(":seq".into(), n(trigger_seq));
        vals.insert(":one".into(), n(1));
        let first = format!("{update}, #jseq = :seq, #jatt = :one REMOVE #own, #inl");
        let condition = format!("{TAKEABLE} AND (attribute_not_exists(#jseq) OR #jseq <> :seq)");
        if self
            .update_lease_if(task_id, &first, &condition, names(&used), vals.clone())
            .await?
            .is_some()
        {
            return Ok(Some(1));
        }
        let again = format!("{update} REMOVE #own, #inl ADD #jatt :one");
        let condition = format!("{TAKEABLE} AND #jseq = :seq");
        let Some(attributes) = self
            .update_lease_if(task_id, &again, &condition, names(&used), vals)
            .await?
        else {
            // Someone else's live lease (whichever job it runs).
            return Ok(None);
        };
        let attempts: u64 = get_n(&attributes, JOB_ATTEMPTS)?;
        Ok(Some(u32::try_from(attempts).unwrap_or(u32::MAX)))
    }

    /// [`a2a_core::LeaseStore::release_lease`].
    async fn acquire_inline_lease(
        &self,
        owner: &Owner,
        task_id: &str,
        holder: &str,
        until: Timestamp,
    ) -> Result<bool, StoreError> {
        self.take_lease(task_id, holder, until, Some(owner)).await
    }

    async fn release_lease(&self, task_id: &str, holder: &str) -> Result<(), StoreError> {
        self.delete_lease_if(
            task_id,
            "#holder = :holder",
            names(&["holder"]),
            values([(":holder", s(holder))]),
        )
        .await
        .map(|_| ())
    }

    /// [`a2a_core::LeaseStore::list_expired_inline_leases`]: one eventually consistent query per
    /// shard (an expired lease is not going anywhere), until `limit` are found.
    async fn list_expired_inline_leases(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<ExpiredLease>, StoreError> {
        let mut found = Vec::new();
        for shard in 0..LEASE_SHARDS {
            if found.len() >= limit {
                break;
            }
            let query = self
                .client
                .query()
                .table_name(&*self.table)
                .key_condition_expression("#pk = :pk")
                .filter_expression("attribute_exists(#inl) AND #until <= :now")
                .set_expression_attribute_names(Some(names(&["pk", "inl", "until"])))
                .set_expression_attribute_values(Some(values([
                    (":pk", s(shard_pk(shard))),
                    (":now", n(now.millis())),
                ])));
            let mut failed = None;
            self.query_pages(query, ReadCost::Eventual, |page| {
                for item in page.items() {
                    match lease_of(item) {
                        Ok(lease) => found.push(lease),
                        Err(err) => failed = Some(err),
                    }
                }
                Ok(if found.len() >= limit {
                    Next::Done
                } else {
                    Next::More(None)
                })
            })
            .await?;
            if let Some(err) = failed {
                return Err(err);
            }
        }
        found.truncate(limit);
        Ok(found)
    }

    /// [`a2a_core::LeaseStore::remove_expired_lease`].
    async fn remove_expired_lease(&self, lease: &ExpiredLease) -> Result<bool, StoreError> {
        self.delete_lease_if(
            &lease.task_id,
            "#holder = :holder AND #until = :until AND attribute_exists(#inl)",
            names(&["holder", "until", "inl"]),
            values([
                (":holder", s(&lease.holder)),
                (":until", n(lease.until.millis())),
            ]),
        )
        .await
    }
}

/// The part of a lease write every taker makes: holder, end and TTL (a `SET` expression to
/// extend), with its names and values.
fn lease_update(
    holder: &str,
    until: Timestamp,
) -> (
    String,
    Vec<&'static str>,
    std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>,
) {
    let update = "SET #holder = :holder, #until = :until, #ttl = :ttl".to_owned();
    let used = vec!["pk", "holder", "until", "ttl"];
    let vals = values([
        (":holder", s(holder)),
        (":until", n(until.millis())),
        (
            ":ttl",
            n(items::ttl_secs(until.millis()) + LEASE_TTL_GRACE_SECS),
        ),
        (":now", n(now_ms())),
    ]);
    (update, used, vals)
}

fn lease_of(item: &Item) -> Result<ExpiredLease, StoreError> {
    Ok(ExpiredLease {
        owner: Owner(get_s(item, attr::OWNER)?.to_owned()),
        task_id: get_s(item, attr::SK)?.to_owned(),
        holder: get_s(item, attr::HOLDER)?.to_owned(),
        until: Timestamp::from_millis(get_n(item, attr::UNTIL)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_partitions_are_stable_and_spread() {
        // The shard of a task id must never change between builds: processes of different
        // versions share a table.
        assert_eq!(lease_pk("task-1"), lease_pk("task-1"));
        let shards: std::collections::HashSet<String> =
            (0..200).map(|i| lease_pk(&format!("task-{i}"))).collect();
        assert_eq!(shards.len(), LEASE_SHARDS as usize);
    }
}
