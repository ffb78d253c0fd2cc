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

use a2a_core::{ExpiredLease, Owner, StoreError};
use a2a_protocol::Timestamp;

use super::table::{backend, capacity, condition_failed, names, values, Next, ReadCost};
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
    /// [`a2a_core::TaskStore::acquire_lease`] (`owner` is `None`) and
    /// [`a2a_core::TaskStore::acquire_inline_lease`].
    pub(super) async fn acquire_lease(
        &self,
        task_id: &str,
        holder: &str,
        until: Timestamp,
        owner: Option<&Owner>,
    ) -> Result<bool, StoreError> {
        let mut item = lease_key(task_id);
        item.extend([
            (attr::HOLDER.to_owned(), s(holder)),
            (attr::UNTIL.to_owned(), n(until.millis())),
            (
                attr::TTL.to_owned(),
                n(items::ttl_secs(until.millis()) + LEASE_TTL_GRACE_SECS),
            ),
        ]);
        if let Some(owner) = owner {
            item.insert(attr::OWNER.to_owned(), s(owner.as_str()));
            item.insert(INLINE.to_owned(), n(1));
        }
        // Free, ours (renewal), or over: take it. Anyone else's live lease: leave it.
        self.put_if(
            item,
            "attribute_not_exists(#pk) OR #holder = :holder OR #until <= :now",
            names(&["pk", "holder", "until"]),
            values([(":holder", s(holder)), (":now", n(now_ms()))]),
        )
        .await
    }

    /// [`a2a_core::TaskStore::release_lease`].
    pub(super) async fn release_lease(
        &self,
        task_id: &str,
        holder: &str,
    ) -> Result<(), StoreError> {
        self.delete_lease_if(
            task_id,
            "#holder = :holder",
            names(&["holder"]),
            values([(":holder", s(holder))]),
        )
        .await
        .map(|_| ())
    }

    /// [`a2a_core::TaskStore::list_expired_inline_leases`]: one eventually consistent query per
    /// shard (an expired lease is not going anywhere), until `limit` are found.
    pub(super) async fn list_expired_inline_leases(
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

    /// [`a2a_core::TaskStore::remove_expired_lease`].
    pub(super) async fn remove_expired_lease(
        &self,
        lease: &ExpiredLease,
    ) -> Result<bool, StoreError> {
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
        match result {
            Ok(out) => {
                self.record("DeleteItem", capacity(out.consumed_capacity()), 1.0, 0.0);
                Ok(true)
            }
            // Not ours (or nobody's, or renewed meanwhile): nothing to remove.
            Err(err) if condition_failed(&err) => {
                self.record("DeleteItem", 0.0, 1.0, 0.0);
                Ok(false)
            }
            Err(err) => Err(backend("DeleteItem", &err)),
        }
    }
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
