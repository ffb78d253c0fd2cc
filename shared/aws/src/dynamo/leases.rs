//! Leases: which worker runs a task's agent now. One `LEASE` item per task, taken with a
//! conditional put (free, ours, or over) and given back with a conditional delete.

use a2a_core::StoreError;
use a2a_protocol::Timestamp;

use super::table::{backend, capacity, condition_failed, names, values};
use super::DynamoTaskStore;
use crate::items::{self, attr, n, s};
use crate::now_ms;

/// Leases are kept this long past their end before DynamoDB's TTL deletes them (they are
/// ignored once over anyway; this only reclaims space).
const LEASE_TTL_GRACE_SECS: i64 = 24 * 3600;

impl DynamoTaskStore {
    /// [`a2a_core::TaskStore::acquire_lease`].
    pub(super) async fn acquire_lease(
        &self,
        task_id: &str,
        holder: &str,
        until: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut item = items::key(items::task_pk(task_id), items::LEASE_SK);
        item.extend([
            (attr::HOLDER.to_owned(), s(holder)),
            (attr::UNTIL.to_owned(), n(until.millis())),
            (
                attr::TTL.to_owned(),
                n(items::ttl_secs(until.millis()) + LEASE_TTL_GRACE_SECS),
            ),
        ]);
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
        let result = self
            .client
            .delete_item()
            .table_name(&*self.table)
            .set_key(Some(items::key(items::task_pk(task_id), items::LEASE_SK)))
            .condition_expression("#holder = :holder")
            .set_expression_attribute_names(Some(names(&["holder"])))
            .set_expression_attribute_values(Some(values([(":holder", s(holder))])))
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        match result {
            Ok(out) => {
                self.record("DeleteItem", capacity(out.consumed_capacity()), 1.0, 0.0);
                Ok(())
            }
            // Not ours (or nobody's): nothing to give back.
            Err(err) if condition_failed(&err) => {
                self.record("DeleteItem", 0.0, 1.0, 0.0);
                Ok(())
            }
            Err(err) => Err(backend("DeleteItem", &err)),
        }
    }
}
