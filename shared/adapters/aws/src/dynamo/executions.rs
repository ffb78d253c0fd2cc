//! Durable executions: one record item per task with durable work (`T#<task>` / `X`: its
//! recorded steps, emit count and wait, as deflated JSON like a task's body, with its version
//! for the conditional write and the due time of its wait; records written before are JSON
//! text, and are read as they are), and, while it waits, one small due entry in a few fixed
//! partitions `WAITS#<shard>`, keyed by the due time, then the task id (`@<due ms>#<task>`).
//!
//! The sweep of due waits queries each due partition for the keys up to now: it reads the
//! entries that are due and nothing else (about a hundred bytes each), never the tasks, so a
//! pass costs the same minimal read per partition however many executions wait for later.
//! The entry is written before its record and the one it replaces removed after it (the
//! record's write answers the due time it held), without a transaction (which would bill
//! twice): an entry that outlives its wait (a save whose answer was lost) only makes the sweep
//! look at a record that says what is true, and the sweep removes it
//! ([`ExecutionStore::forget_due_entry`]).
//!
//! The previous layout keyed due entries by task id alone; the first sweep of a process moves
//! any it finds to their time keys (once per process: a query per partition).

use std::sync::atomic::Ordering;

use a2a_core::{DueExecution, DurableExecution, ExecutionStore, Owner, RelayGate, StoreError};
use a2a_protocol::Timestamp;
use async_trait::async_trait;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use super::heads::write_id;
use super::table::{backend, capacity, names, values, write_units, Next, ReadCost};
use super::DynamoTaskStore;
use crate::items::{self, attr, get_n, get_s, n, s, Item};
use crate::now_ms;

/// Sort key of a task's execution record.
const EXECUTION_SK: &str = "X";

/// Sort key of a task's relay gate: its owner and the digests of the push tokens its relay
/// route takes (`DurableExecution::relay_tokens`), about a hundred bytes, so the route checks a
/// push's token with one read of one unit, never the record's (which holds whole remote
/// answers, up to a hundred units to read).
const GATE_SK: &str = "G";

/// Record and gate attribute: the relay tokens' digests (absent on a record without any). On
/// the record, it tells a save whether the gate must change.
const TOKENS: &str = "tok";

/// Record attribute of the previous layout: the record, as JSON text (read, never written).
const BODY: &str = "xb";

/// Record attribute: the record, as deflated JSON. A record holds what its steps returned (a
/// remote agent's whole answer, for one): text and JSON that deflate to a fraction, which
/// keeps a large answer under DynamoDB's 400 KB an item, and costs fewer write units.
const PACKED: &str = "xz";

/// Due entry attribute: when the wait is due, in ms. On a record: the due time of its wait,
/// 0 when it has none (a record without it is of the previous layout).
const DUE: &str = "due";

/// What starts the sort key of a due entry (`@<due ms>#<task>`); the previous layout's keys
/// are task ids (hex digits and dashes), which never start with it.
const DUE_MARK: char = '@';

/// How many partitions hold the due entries: each takes 1,000 writes a second, and costs the
/// sweep one query.
const WAIT_SHARDS: u32 = 8;

/// The due partition of a task: a stable hash (FNV-1a) of its id, so every process agrees.
fn wait_pk(task_id: &str) -> String {
    let hash = task_id.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    shard_pk(hash % WAIT_SHARDS)
}

fn shard_pk(shard: u32) -> String {
    format!("WAITS#{shard}")
}

/// The sort key of the due entry of a wait due at `due_ms`: fixed width, so keys sort by time.
fn due_sk(due_ms: i64, task_id: &str) -> String {
    format!("{DUE_MARK}{:015}#{task_id}", due_ms.max(0))
}

/// The key of the due entry of task `task_id`'s wait due at `due_ms`.
fn due_key(due_ms: i64, task_id: &str) -> Item {
    items::key(wait_pk(task_id), due_sk(due_ms, task_id))
}

/// The key of the due entry a record item points at: the one of its wait (its `due`), none
/// when it has no wait, the task id alone for a record of the previous layout.
fn entry_of_record(record: &Item, task_id: &str) -> Option<Item> {
    match record.get(DUE) {
        Some(AttributeValue::N(ms)) => match ms.parse::<i64>() {
            Ok(0) | Err(_) => None,
            Ok(ms) => Some(due_key(ms, task_id)),
        },
        _ => Some(items::key(wait_pk(task_id), task_id)),
    }
}

impl DynamoTaskStore {
    /// Writes the due entry of a task's wait, due at `due`.
    async fn put_due_entry(
        &self,
        owner: &Owner,
        task_id: &str,
        due: Timestamp,
        expires_ms: i64,
    ) -> Result<(), StoreError> {
        let mut item = due_key(due.millis(), task_id);
        item.extend([
            (attr::OWNER.to_owned(), s(owner.as_str())),
            (DUE.to_owned(), n(due.millis())),
            (attr::EXPIRES.to_owned(), n(expires_ms)),
            (attr::TTL.to_owned(), n(items::ttl_secs(expires_ms))),
        ]);
        self.put_small(item).await
    }

    /// An unconditional `PutItem` of a small item of ours (a due entry, a relay gate).
    async fn put_small(&self, item: Item) -> Result<(), StoreError> {
        let size = items::item_size(&item);
        let out = self
            .client
            .put_item()
            .table_name(&*self.table)
            .set_item(Some(item))
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await
            .map_err(|e| backend("PutItem", &e))?;
        self.record(
            "PutItem",
            capacity(out.consumed_capacity()),
            write_units(size),
            0.0,
        );
        Ok(())
    }

    /// Removes the due entry at `key` (there or not).
    async fn remove_due_entry(&self, key: Item) -> Result<(), StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(&*self.table)
            .set_key(Some(key))
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await
            .map_err(|e| backend("DeleteItem", &e))?;
        self.record("DeleteItem", capacity(out.consumed_capacity()), 1.0, 0.0);
        Ok(())
    }

    /// A record's conditional `PutItem`, answering the item it replaced (`ALL_OLD`: no more
    /// capacity, and it tells which due entry the record pointed at): `None` when the
    /// condition did not hold, `Some(None)` when no item was there.
    async fn put_record(
        &self,
        item: Item,
        expected: Option<u64>,
        owner: &Owner,
    ) -> Result<Option<Option<Item>>, StoreError> {
        let (condition, names, values) = match expected {
            None => (
                super::ABSENT_OR_EXPIRED,
                names(&["pk", "exp"]),
                values([(":now", n(now_ms()))]),
            ),
            Some(version) => (
                "#v = :expected AND #own = :own AND #exp > :now",
                names(&["v", "own", "exp"]),
                values([
                    (":expected", n(version)),
                    (":own", s(owner.as_str())),
                    (":now", n(now_ms())),
                ]),
            ),
        };
        self.put_if_replacing(
            item,
            condition,
            names,
            values,
            0.0,
            Some(ReturnValue::AllOld),
        )
        .await
    }

    /// Writes the task's relay gate: `tokens` for `owner`'s task, until `expires_ms`.
    async fn put_gate(
        &self,
        owner: &Owner,
        task_id: &str,
        tokens: &str,
        expires_ms: i64,
    ) -> Result<(), StoreError> {
        let mut item = items::key(items::task_pk(task_id), GATE_SK);
        item.extend([
            (attr::OWNER.to_owned(), s(owner.as_str())),
            (TOKENS.to_owned(), s(tokens)),
            (attr::EXPIRES.to_owned(), n(expires_ms)),
            (attr::TTL.to_owned(), n(items::ttl_secs(expires_ms))),
        ]);
        self.put_small(item).await
    }

    /// Moves the due entries of the previous layout (keyed by task id) in the due partitions
    /// to their time keys, once per process: one query per partition, reading only them.
    async fn move_legacy_due_entries(&self) -> Result<(), StoreError> {
        if self.legacy_waits_moved.load(Ordering::Relaxed) {
            return Ok(());
        }
        for shard in 0..WAIT_SHARDS {
            let query = self
                .client
                .query()
                .table_name(&*self.table)
                .key_condition_expression("#pk = :pk")
                .filter_expression("NOT begins_with(#sk, :mark)")
                .set_expression_attribute_names(Some(names(&["pk", "sk"])))
                .set_expression_attribute_values(Some(values([
                    (":pk", s(shard_pk(shard))),
                    (":mark", s(DUE_MARK.to_string())),
                ])));
            let mut legacy = Vec::new();
            self.query_pages(query, ReadCost::Eventual, |page| {
                legacy.extend(page.items().iter().cloned());
                Ok(Next::More(None))
            })
            .await?;
            for item in legacy {
                let due = due_of(&item)?;
                let expires_ms: i64 = get_n(&item, attr::EXPIRES)?;
                self.put_due_entry(&due.owner, &due.task_id, due.due_at, expires_ms)
                    .await?;
                // The record learns its due time, so that its next save removes that entry.
                let pointed = self
                    .client
                    .update_item()
                    .table_name(&*self.table)
                    .set_key(Some(items::key(items::task_pk(&due.task_id), EXECUTION_SK)))
                    .update_expression("SET #due = :due")
                    .condition_expression("attribute_exists(#pk) AND attribute_not_exists(#due)")
                    .set_expression_attribute_names(Some(names(&["pk", "due"])))
                    .set_expression_attribute_values(Some(values([(
                        ":due",
                        n(due.due_at.millis()),
                    )])))
                    .set_return_consumed_capacity(self.return_capacity())
                    .send()
                    .await;
                // Refused: the record is gone or was saved anew meanwhile; either way it needs
                // nothing, and the entry is the sweep's to forget if it is stale.
                self.conditional(
                    "UpdateItem",
                    pointed,
                    |out| out.consumed_capacity(),
                    |_| 1.0,
                    1.0,
                )?;
                self.remove_due_entry(items::key(shard_pk(shard), due.task_id.clone()))
                    .await?;
            }
        }
        self.legacy_waits_moved.store(true, Ordering::Relaxed);
        Ok(())
    }
}

#[async_trait]
impl ExecutionStore for DynamoTaskStore {
    /// One consistent `GetItem` of the record.
    async fn load_execution(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<DurableExecution>, StoreError> {
        self.get_visible(owner, task_id, EXECUTION_SK.to_owned(), |item| {
            record_of(item, task_id)
        })
        .await
    }

    /// The due entry (when the record waits), then one conditional `PutItem` of the record.
    async fn save_execution(
        &self,
        execution: &DurableExecution,
        expected: Option<u64>,
    ) -> Result<(), StoreError> {
        let body = serde_json::to_vec(execution).map_err(|e| {
            StoreError::Backend(format!("an execution record does not serialise: {e}"))
        })?;
        let body = crate::deflate::deflate(&body)
            .map_err(|e| StoreError::Backend(format!("deflating an execution record: {e}")))?;
        let exp = execution.expires_at.millis();
        let due = execution.due_at();
        if let Some(due) = due {
            self.put_due_entry(&execution.owner, &execution.task_id, due, exp)
                .await?;
        }
        let key = items::key(items::task_pk(&execution.task_id), EXECUTION_SK);
        let packed = AttributeValue::B(Blob::new(body));
        let mut item = key.clone();
        // This write's own mark: an attempt whose answer was lost (the SDK tries again, and
        // the condition meets the write itself) is told from another writer's.
        let mark = n(write_id());
        item.extend([
            (attr::OWNER.to_owned(), s(execution.owner.as_str())),
            (attr::VERSION.to_owned(), n(execution.version)),
            (attr::EXPIRES.to_owned(), n(exp)),
            (attr::TTL.to_owned(), n(items::ttl_secs(exp))),
            (DUE.to_owned(), n(due.map_or(0, |d| d.millis()))),
            (PACKED.to_owned(), packed.clone()),
            (attr::WRITE_ID.to_owned(), mark.clone()),
        ]);
        let tokens = execution.relay_tokens();
        if !tokens.is_empty() {
            item.insert(TOKENS.to_owned(), s(&tokens));
        }
        items::check_size(&item, || {
            format!("the execution record of task {}", execution.task_id)
        })?;
        let replaced = self.put_record(item, expected, &execution.owner).await?;
        // A refused write whose record holds this write's mark is this write, landed on an
        // attempt whose answer was lost: saved. So is one holding this very record (the same
        // version and bytes): the core's own repeat of a save that failed through the SDK's
        // attempts after one of them landed. (Taken for another writer's, the run would stop,
        // leaving its own wait for a message it never sent.) Which entry the record replaced
        // pointed at is not known then: one left behind is the sweep's to remove.
        let Some(replaced) = replaced else {
            let stored = self.get(key.clone()).await?;
            let own = stored.is_some_and(|i| {
                i.get(attr::WRITE_ID) == Some(&mark)
                    || (i.get(attr::VERSION) == Some(&n(execution.version))
                        && i.get(PACKED) == Some(&packed))
            });
            if !own {
                return Err(StoreError::Conflict);
            }
            // The landed attempt's gate write may be the one that failed: written again.
            if !tokens.is_empty() {
                self.put_gate(&execution.owner, &execution.task_id, &tokens, exp)
                    .await?;
            }
            return Ok(());
        };
        // The gate follows the record's tokens, written after the record (a push can only come
        // once the token was sent, after this save returned) and only when they changed: a
        // wait's later saves (its polls, its end) write no gate.
        let tokens_before = replaced
            .as_ref()
            .and_then(|old| old.get(TOKENS))
            .and_then(|t| t.as_s().ok())
            .map(String::as_str);
        if !tokens.is_empty() && tokens_before != Some(tokens.as_str()) {
            self.put_gate(&execution.owner, &execution.task_id, &tokens, exp)
                .await?;
        }
        // The entry of the wait the record had goes, unless it is this wait's.
        let now_entry = due.map(|d| due_key(d.millis(), &execution.task_id));
        if let Some(before) = replaced.and_then(|old| entry_of_record(&old, &execution.task_id)) {
            if Some(&before) != now_entry.as_ref() {
                self.remove_due_entry(before).await?;
            }
        }
        Ok(())
    }

    /// One consistent `GetItem` of the gate (1 RRU: about a hundred bytes).
    async fn load_relay_gate(&self, task_id: &str) -> Result<Option<RelayGate>, StoreError> {
        let item = self
            .get(items::key(items::task_pk(task_id), GATE_SK))
            .await?;
        let Some(item) =
            item.filter(|i| get_n::<i64>(i, attr::EXPIRES).is_ok_and(|e| e > now_ms()))
        else {
            return Ok(None);
        };
        Ok(Some(RelayGate {
            owner: Owner(get_s(&item, attr::OWNER)?.to_owned()),
            tokens: get_s(&item, TOKENS)?.to_owned(),
        }))
    }

    /// The record's `DeleteItem` (if it is the owner's), then the due entry it pointed at.
    async fn delete_execution(&self, owner: &Owner, task_id: &str) -> Result<(), StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(&*self.table)
            .set_key(Some(items::key(items::task_pk(task_id), EXECUTION_SK)))
            .condition_expression("#own = :own")
            .set_expression_attribute_names(Some(names(&["own"])))
            .set_expression_attribute_values(Some(values([(":own", s(owner.as_str()))])))
            .return_values(ReturnValue::AllOld)
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        let old = match out {
            Ok(out) => {
                self.record("DeleteItem", capacity(out.consumed_capacity()), 1.0, 0.0);
                out.attributes
            }
            Err(err) if super::table::condition_failed(&err) => {
                self.record("DeleteItem", 0.0, 1.0, 0.0);
                return Ok(());
            }
            Err(err) => return Err(backend("DeleteItem", &err)),
        };
        match old.and_then(|old| entry_of_record(&old, task_id)) {
            Some(entry) => self.remove_due_entry(entry).await,
            None => Ok(()),
        }
    }

    /// Removes the entry `entry` was listed from ([`Self::list_due_executions`]).
    async fn forget_due_entry(&self, entry: &DueExecution) -> Result<(), StoreError> {
        self.remove_due_entry(due_key(entry.due_at.millis(), &entry.task_id))
            .await
    }

    /// One eventually consistent query per due partition for the keys due by `now`, soonest
    /// first, until `limit` are found in it (what is not due yet is never read); soonest first
    /// of all. The first call of a process moves the previous layout's entries first.
    async fn list_due_executions(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<DueExecution>, StoreError> {
        self.move_legacy_due_entries().await?;
        let mut found = Vec::new();
        // `#` follows the due time in every key, and `$` comes right after `#`.
        let upto = format!("{DUE_MARK}{:015}$", now.millis().max(0));
        for shard in 0..WAIT_SHARDS {
            let query = self
                .client
                .query()
                .table_name(&*self.table)
                .key_condition_expression("#pk = :pk AND #sk BETWEEN :from AND :upto")
                .filter_expression("#exp > :now")
                .set_expression_attribute_names(Some(names(&["pk", "sk", "exp"])))
                .set_expression_attribute_values(Some(values([
                    (":pk", s(shard_pk(shard))),
                    (":from", s(DUE_MARK.to_string())),
                    (":upto", s(upto.clone())),
                    (":now", n(now.millis())),
                ])));
            let mut failed = None;
            let mut in_shard = 0;
            self.query_pages(query, ReadCost::Eventual, |page| {
                for item in page.items() {
                    match due_of(item) {
                        Ok(due) => {
                            found.push(due);
                            in_shard += 1;
                        }
                        Err(err) => failed = Some(err),
                    }
                }
                Ok(if in_shard >= limit {
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
        found.sort_by_key(|d| d.due_at);
        found.truncate(limit);
        Ok(found)
    }
}

/// The wait a due entry is for. Its key ends in the task id (`@<due>#<task>`; the previous
/// layout's key is the task id).
fn due_of(item: &Item) -> Result<DueExecution, StoreError> {
    let sk = get_s(item, attr::SK)?;
    let task_id = match sk.strip_prefix(DUE_MARK) {
        Some(rest) => rest.split_once('#').map_or(rest, |(_, task)| task),
        None => sk,
    };
    Ok(DueExecution {
        owner: Owner(get_s(item, attr::OWNER)?.to_owned()),
        task_id: task_id.to_owned(),
        due_at: Timestamp::from_millis(get_n(item, DUE)?),
    })
}

/// The execution record an item holds (deflated, or as the JSON text of the previous layout).
/// One that does not read is [`StoreError::Unreadable`], saying where it breaks, never what it
/// holds (a record carries its waits' tokens).
fn record_of(item: &Item, task_id: &str) -> Result<DurableExecution, StoreError> {
    let unreadable = |why: String| {
        StoreError::Unreadable(format!("the execution record of task {task_id} {why}"))
    };
    let json = match (item.get(PACKED), item.get(BODY)) {
        (Some(AttributeValue::B(blob)), _) => crate::deflate::inflate(blob.as_ref())
            .map_err(|e| unreadable(format!("does not inflate: {e}")))?,
        (_, Some(AttributeValue::S(text))) => text.clone().into_bytes(),
        _ => return Err(unreadable("has no body".into())),
    };
    serde_json::from_slice(&json).map_err(|e| {
        unreadable(format!(
            "does not read: {:?} error at line {} column {}",
            e.classify(),
            e.line(),
            e.column()
        ))
    })
}
