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
//! Each item also counts its tasks per state (`n<state number>`), for ListTasks filtered by
//! state: a create adds to both in the same write, a state change moves the task between two
//! states of its item (one `UpdateItem`, 1 WRU).
//!
//! **Why a write of its own, not a transaction or the stream** (docs/cost.md, "ListTasks at
//! scale"): the count is one `UpdateItem ADD` after the head's `PutItem` (1 WRU; in a
//! transaction both would bill twice, 4 more WRU). The table's stream could keep them without
//! touching the send, exactly with a tumbling window (whose events name their shard, so a
//! retried window can be recognised), but that costs more than this write for an owner with
//! fewer than about two tasks per window, and lags the writes; docs/cost.md has the design and
//! its figures. Here a crash between the head's write and its count's (the only window)
//! leaves one task uncounted until its expiry passes, and nothing else.
//!
//! Tasks written before the counts existed are in no count (and those written before the
//! per-state counts in no state's). ListTasks uses a count once the owner's item `~complete`
//! (for a state, `~complete#<number>`) says it holds every live task it should: until then it
//! counts on the index, and writes that item the first time both agree. A task counted before
//! the per-state counts that changes state takes one from its old state's count without ever
//! having added to it: that count then disagrees with the index until the task's expiry
//! passes, and is not used before (the disagreement is what keeps it out).

use std::collections::{HashMap, HashSet};

use a2a_core::{Owner, StoreError, StoredTask};
use a2a_protocol::TaskState;

use super::table::{backend, capacity, condition_failed, names, values, Next, ReadCost};
use super::DynamoTaskStore;
use crate::items::{self, attr, n, s, Item};

/// Shards of one owner's count of one expiry. Writes to one item are limited to 1,000 per
/// second, so an owner's creates spread over this many items, picked by task id; a ListTasks
/// reads them all (8 × 17 items of ~60 bytes: one page, about one read unit).
const SHARDS: u64 = 8;

/// How many write marks a count item keeps (attributes `w0` … `w7`): a count write's retry
/// finds its own mark unless another write to the same item took the same slot in between
/// (one in [`MARKS`], within the retry's second or so).
const MARKS: u32 = 8;

/// The prefix of a count item's write marks.
const MARK: &str = "w";

/// The sort key of the item that says the owner's counts hold every live task of the owner.
const COMPLETE_SK: &str = "~complete";

/// The attribute of a count item that counts its tasks.
const ALL: &str = "n";

/// The attribute of a count item that counts its tasks in `state` (its wire name), if the state
/// is one: `n<number>`.
fn state_attr(state: &str) -> Option<String> {
    TaskState::parse(state)
        .filter(|s| *s != TaskState::Unspecified)
        .map(|s| format!("{ALL}{}", s.number()))
}

/// The sort key of the item that says the owner's count of tasks in `state` holds them all.
fn state_complete_sk(state: TaskState) -> String {
    format!("{COMPLETE_SK}#{}", state.number())
}

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

/// Where a task counts: the item of its expiry, under its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Counted<'a> {
    /// The task's expiry, ms.
    pub(super) expires: i64,
    /// Its state's wire name (empty on a head that has none).
    pub(super) state: &'a str,
}

impl Counted<'_> {
    /// Where `head` counts.
    pub(super) fn of(head: &StoredTask) -> Counted<'static> {
        Counted {
            expires: head.expires_at.millis(),
            state: head.task.status.state.as_str(),
        }
    }
}

/// An owner's counts as one query read them.
#[derive(Debug, Default)]
pub(super) struct OwnerCounts {
    /// Whether they hold every live task of the owner (the `~complete` item is there).
    pub(super) complete: bool,
    /// How many live tasks they count.
    pub(super) total: usize,
    /// How many live tasks they count in each state, by state number.
    by_state: HashMap<i32, i64>,
    /// The states whose count holds every live task of the owner in that state.
    complete_states: HashSet<i32>,
}

impl OwnerCounts {
    /// The count of the owner's live tasks in `state`, if it holds them all.
    pub(super) fn in_state(&self, state: TaskState) -> Option<usize> {
        self.complete_states
            .contains(&state.number())
            .then(|| self.state_total(state))
    }

    /// The count of the owner's live tasks in `state`, complete or not.
    pub(super) fn state_total(&self, state: TaskState) -> usize {
        let total = self.by_state.get(&state.number()).copied().unwrap_or(0);
        usize::try_from(total).unwrap_or(0)
    }
}

impl DynamoTaskStore {
    /// Moves task `task_id` of `owner` in its owner's counts from `before` (`None`: a new
    /// task) to `after`: one `UpdateItem` per count item that changes (a new state in the same
    /// expiry is one), none when neither expiry nor state changes.
    pub(super) async fn count_task(
        &self,
        owner: &Owner,
        task_id: &str,
        before: Option<Counted<'_>>,
        after: Counted<'_>,
    ) -> Result<(), StoreError> {
        let shard = shard_of(task_id);
        match before {
            Some(before) if before == after => Ok(()),
            Some(before) if before.expires == after.expires => {
                let mut adds = Vec::new();
                adds.extend(state_attr(before.state).map(|a| (a, -1)));
                adds.extend(state_attr(after.state).map(|a| (a, 1)));
                self.add_to_count(owner, after.expires, shard, adds).await
            }
            before => {
                self.add_to_count(owner, after.expires, shard, task_adds(after.state, 1))
                    .await?;
                if let Some(before) = before {
                    let adds = task_adds(before.state, -1);
                    self.add_to_count(owner, before.expires, shard, adds)
                        .await?;
                }
                Ok(())
            }
        }
    }

    /// Takes back the count of a new task whose create was refused (best effort: a count
    /// left behind says one task too many until its expiry).
    pub(super) async fn uncount_task(&self, owner: &Owner, task_id: &str, counted: Counted<'_>) {
        let adds = task_adds(counted.state, -1);
        let shard = shard_of(task_id);
        if let Err(err) = self.add_to_count(owner, counted.expires, shard, adds).await {
            tracing::warn!(task_id, error = %err, "a refused create's ListTasks count stays");
        }
    }

    /// `ADD`s of `adds` (attribute, amount) to one count item, which expires with the tasks it
    /// counts.
    async fn add_to_count(
        &self,
        owner: &Owner,
        exp: i64,
        shard: u64,
        adds: Vec<(String, i64)>,
    ) -> Result<(), StoreError> {
        if adds.is_empty() {
            return Ok(());
        }
        let additions: Vec<String> = (0..adds.len()).map(|i| format!("#a{i} :by{i}")).collect();
        // An `ADD` is not idempotent: the SDK's retry of an attempt whose answer was lost would
        // count again (ListTasks' totalSize drifted up under faults). Each write leaves its
        // mark in one of the item's MARKS slots, and a write whose slot already holds its own
        // mark is that write, landed: its condition refuses it.
        let mark = super::heads::write_id();
        let slot = format!("{MARK}{}", mark % MARKS);
        let mut attribute_names = names(&[attr::TTL]);
        attribute_names.insert("#w".into(), slot);
        let mut attribute_values = values([(":ttl", n(items::ttl_secs(exp))), (":w", n(mark))]);
        for (i, (name, by)) in adds.into_iter().enumerate() {
            attribute_names.insert(format!("#a{i}"), name);
            attribute_values.insert(format!(":by{i}"), n(by));
        }
        let result = self
            .client
            .update_item()
            .table_name(&*self.table)
            .set_key(Some(counts_key(owner.as_str(), exp, shard)))
            .update_expression(format!(
                "ADD {} SET #ttl = :ttl, #w = :w",
                additions.join(", ")
            ))
            .condition_expression("attribute_not_exists(#w) OR #w <> :w")
            .set_expression_attribute_names(Some(attribute_names))
            .set_expression_attribute_values(Some(attribute_values))
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        // A count item is ~60 bytes and its marks ~100: one write unit. A refused condition is
        // this write's retry finding it landed: counted already.
        self.conditional(
            "UpdateItem",
            result,
            |out| out.consumed_capacity(),
            |_| 1.0,
            1.0,
        )?;
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
                let sk = items::get_s(item, attr::SK)?;
                if sk == COMPLETE_SK {
                    counts.complete = true;
                } else if let Some(state) = sk.strip_prefix(COMPLETE_SK).and_then(|r| {
                    r.strip_prefix('#')
                        .and_then(|number| number.parse::<i32>().ok())
                }) {
                    counts.complete_states.insert(state);
                } else {
                    // A task never counted that changes state makes an item with state
                    // counts alone.
                    if item.contains_key(ALL) {
                        total += items::get_n::<i64>(item, ALL)?;
                    }
                    for state in TaskState::ALL {
                        if let Some(name) = state_attr(state.as_str()) {
                            if let Ok(count) = items::get_n::<i64>(item, &name) {
                                *counts.by_state.entry(state.number()).or_default() += count;
                            }
                        }
                    }
                }
            }
            Ok(Next::More(None))
        })
        .await?;
        counts.total = usize::try_from(total).unwrap_or(0);
        Ok(counts)
    }

    /// Records that the owner's counts (of `state`'s tasks, or of all) hold every live task
    /// (ListTasks found them equal to a count on the index): from then on ListTasks reads them
    /// instead of counting.
    pub(super) async fn mark_counts_complete(
        &self,
        owner: &Owner,
        state: Option<TaskState>,
    ) -> Result<(), StoreError> {
        let sk = state.map_or_else(|| COMPLETE_SK.to_owned(), state_complete_sk);
        let result = self
            .client
            .put_item()
            .table_name(&*self.table)
            .set_item(Some(items::key(counts_pk(owner.as_str()), sk)))
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

/// The additions that count (`by` 1) or uncount (-1) a task in `state`: in all, and in its
/// state.
fn task_adds(state: &str, by: i64) -> Vec<(String, i64)> {
    let mut adds = vec![(ALL.to_owned(), by)];
    adds.extend(state_attr(state).map(|name| (name, by)));
    adds
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
        assert!(COMPLETE_SK < state_complete_sk(TaskState::Working).as_str());
    }

    #[test]
    fn a_task_counts_in_all_and_in_its_state() {
        assert_eq!(
            task_adds("TASK_STATE_COMPLETED", 1),
            [("n".to_owned(), 1), ("n3".to_owned(), 1)]
        );
        // A head without a state counts in all only.
        assert_eq!(task_adds("", -1), [("n".to_owned(), -1)]);
        assert_eq!(state_attr("TASK_STATE_UNSPECIFIED"), None);
    }
}
