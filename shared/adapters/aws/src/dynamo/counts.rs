//! ListTasks' `totalSize` without reading the owner's tasks: how many live tasks an owner has,
//! per expiry, kept by the writes that create a task or move its expiry, and read back in one
//! query of a few small items.
//!
//! The counts live in the owner's partition `pk = C#<owner>`, one item per expiry and shard
//! (`sk = <expiry, 15 digits>#<shard>`), whose `n` counts the tasks that expire then. A task
//! counts in the item of its exact expiry, so an item stops counting at the very moment its
//! tasks stop being visible; the core rounds expiries up to a sixteenth of the retention, so an
//! owner has at most 17 live expiries (times the shards) whatever the number of tasks. Items
//! whose expiry has passed are skipped by the key condition, and DynamoDB's TTL deletes them.
//! A state change moves no count: a state (or context, or timestamp) filter still counts its
//! matches on the index.
//!
//! **Why a write of its own, not a transaction or the stream** (docs/cost.md, "ListTasks at
//! scale"): the count is one `UpdateItem ADD` after the head's `PutItem` (1 WRU; in a
//! transaction both would bill twice, 4 more WRU). The table's stream could keep them without
//! touching the send, but Lambda's stream records do not name their shard, so a retried batch
//! cannot tell what it already counted: counts kept there would drift up on every retry, and
//! lag the write. Here a crash between the head's write and its count's (the only window)
//! leaves one task uncounted until its expiry passes, and nothing else.
//!
//! Tasks written before the counts existed are in no count. ListTasks uses the counts once the
//! owner's item `~complete` says they hold every live task: until then it counts on the index as
//! before, and writes that item the first time both agree.

use a2a_core::{Owner, StoreError};

use super::table::{backend, capacity, condition_failed, names, values, Next, ReadCost};
use super::DynamoTaskStore;
use crate::items::{self, attr, n, s, Item};

/// Shards of one owner's count of one expiry. Writes to one item are limited to 1,000 per
/// second, so an owner's creates spread over this many items, picked by task id; a ListTasks
/// reads them all (8 × 17 items of ~60 bytes: one page, about one read unit).
const SHARDS: u64 = 8;

/// The sort key of the item that says the owner's counts hold every live task of the owner.
const COMPLETE_SK: &str = "~complete";

/// The attribute of a count item that counts its tasks.
const ALL: &str = "n";

/// The partition of an owner's counts.
fn counts_pk(owner: &str) -> String {
    format!("C#{owner}")
}

/// The item counting the tasks of `shard` that expire at `exp` (ms).
fn counts_key(owner: &str, exp: i64, shard: u64) -> Item {
    items::key(
        counts_pk(owner),
        format!("{}#{shard}", items::ts_prefix(exp)),
    )
}

/// The shard of a task's counts: the same for every write of the task (FNV-1a of its id).
fn shard_of(task_id: &str) -> u64 {
    let hash = task_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    hash % SHARDS
}

/// An owner's counts as one query read them.
#[derive(Debug, Default)]
pub(super) struct OwnerCounts {
    /// Whether they hold every live task of the owner (the `~complete` item is there).
    pub(super) complete: bool,
    /// How many live tasks they count.
    pub(super) total: usize,
}

impl DynamoTaskStore {
    /// Moves task `task_id` of `owner` in its owner's counts from expiry `before` (`None`: a
    /// new task) to `after` (ms): one `UpdateItem` per count item that changes, none when the
    /// expiry stays.
    pub(super) async fn count_task(
        &self,
        owner: &Owner,
        task_id: &str,
        before: Option<i64>,
        after: i64,
    ) -> Result<(), StoreError> {
        if before == Some(after) {
            return Ok(());
        }
        let shard = shard_of(task_id);
        self.add_to_count(owner, after, shard, 1).await?;
        if let Some(before) = before {
            self.add_to_count(owner, before, shard, -1).await?;
        }
        Ok(())
    }

    /// Takes back the count of a new task whose create was refused (best effort: a count
    /// left behind says one task too many until `exp`).
    pub(super) async fn uncount_task(&self, owner: &Owner, task_id: &str, exp: i64) {
        if let Err(err) = self.add_to_count(owner, exp, shard_of(task_id), -1).await {
            tracing::warn!(task_id, error = %err, "a refused create's ListTasks count stays");
        }
    }

    /// `ADD` of `by` to one count item, which expires with the tasks it counts.
    async fn add_to_count(
        &self,
        owner: &Owner,
        exp: i64,
        shard: u64,
        by: i64,
    ) -> Result<(), StoreError> {
        let out = self
            .client
            .update_item()
            .table_name(&*self.table)
            .set_key(Some(counts_key(owner.as_str(), exp, shard)))
            .update_expression("ADD #n :by SET #ttl = :ttl")
            .set_expression_attribute_names(Some(names(&[ALL, attr::TTL])))
            .set_expression_attribute_values(Some(values([
                (":by", n(by)),
                (":ttl", n(items::ttl_secs(exp))),
            ])))
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await
            .map_err(|e| backend("UpdateItem", &e))?;
        // A count item is ~60 bytes: one write unit.
        self.record("UpdateItem", capacity(out.consumed_capacity()), 1.0, 0.0);
        Ok(())
    }

    /// The owner's live counts: one eventually consistent query of the owner's count items
    /// whose expiry is still ahead (and of `~complete`, which sorts after them).
    pub(super) async fn read_counts(
        &self,
        owner: &Owner,
        now: i64,
    ) -> Result<OwnerCounts, StoreError> {
        // `<now>#~` sorts after every item of an expiry at `now` (expired: a task is visible
        // while its expiry is after now) and before every later one.
        let query = self
            .client
            .query()
            .table_name(&*self.table)
            .key_condition_expression("#pk = :pk AND #sk > :live")
            .set_expression_attribute_names(Some(names(&["pk", "sk"])))
            .set_expression_attribute_values(Some(values([
                (":pk", s(counts_pk(owner.as_str()))),
                (":live", s(format!("{}#~", items::ts_prefix(now)))),
            ])))
            .consistent_read(false);
        let mut counts = OwnerCounts::default();
        let mut total: i64 = 0;
        self.query_pages(query, ReadCost::Eventual, |page| {
            for item in page.items() {
                if items::get_s(item, attr::SK)? == COMPLETE_SK {
                    counts.complete = true;
                } else {
                    total += items::get_n::<i64>(item, ALL)?;
                }
            }
            Ok(Next::More(None))
        })
        .await?;
        counts.total = usize::try_from(total).unwrap_or(0);
        Ok(counts)
    }

    /// Records that the owner's counts hold every live task (ListTasks found them equal to a
    /// count on the index): from then on ListTasks reads them instead of counting.
    pub(super) async fn mark_counts_complete(&self, owner: &Owner) -> Result<(), StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&*self.table)
            .set_item(Some(items::key(counts_pk(owner.as_str()), COMPLETE_SK)))
            .condition_expression("attribute_not_exists(#pk)")
            .set_expression_attribute_names(Some(names(&["pk"])))
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        match result {
            Ok(out) => {
                self.record("PutItem", capacity(out.consumed_capacity()), 1.0, 0.0);
                Ok(())
            }
            // Another ListTasks got there first.
            Err(err) if condition_failed(&err) => {
                self.record("PutItem", 0.0, 1.0, 0.0);
                Ok(())
            }
            Err(err) => Err(backend("PutItem", &err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_keeps_its_shard_and_shards_spread() {
        assert_eq!(shard_of("a-task"), shard_of("a-task"));
        let used: std::collections::HashSet<u64> =
            (0..64).map(|i| shard_of(&format!("task-{i}"))).collect();
        assert_eq!(used.len(), SHARDS as usize, "64 ids use every shard");
    }

    #[test]
    fn count_keys_sort_by_expiry_and_before_the_complete_mark() {
        let key = counts_key("o", 1_700_000_000_000, 3);
        let sk = items::get_s(&key, attr::SK).map(str::to_owned);
        assert_eq!(sk.as_deref().ok(), Some("001700000000000#3"));
        assert!("001700000000000#3" > "001699999999999#~");
        assert!("001700000000000#3" < COMPLETE_SK);
    }
}
