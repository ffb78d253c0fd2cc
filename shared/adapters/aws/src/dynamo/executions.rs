//! Durable executions: one record item per task with durable work (`T#<task>` / `X`: its
//! recorded steps, emit count and wait, as deflated JSON like a task's body, with its version
//! for the conditional write; records written before are JSON text, and are read as they are),
//! and, while it waits, one small due entry in a few fixed partitions `WAITS#<shard>` keyed by
//! task id, holding the wait's due time.
//!
//! The sweep of due waits queries the due partitions, filtered on the due time: it reads the
//! entries of parked executions only (about a hundred bytes each), never the tasks. The entry is
//! written before its record and removed after it, without a transaction (which would bill
//! twice): an entry that outlives its wait, or points at another due time, only makes the sweep
//! look at a record that says what is true, and the sweep removes it.

use a2a_core::{DueExecution, DurableExecution, ExecutionStore, Owner, StoreError};
use a2a_protocol::Timestamp;
use async_trait::async_trait;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;

use super::heads::write_id;
use super::table::{backend, capacity, names, values, write_units, Next, ReadCost};
use super::DynamoTaskStore;
use crate::items::{self, attr, get_n, get_s, n, s, Item};
use crate::now_ms;

/// Sort key of a task's execution record.
const EXECUTION_SK: &str = "X";

/// Record attribute of the previous layout: the record, as JSON text (read, never written).
const BODY: &str = "xb";

/// Record attribute: the record, as deflated JSON. A record holds what its steps returned (a
/// remote agent's whole answer, for one): text and JSON that deflate to a fraction, which
/// keeps a large answer under DynamoDB's 400 KB an item, and costs fewer write units.
const PACKED: &str = "xz";

/// Due entry attribute: when the wait is due, in ms.
const DUE: &str = "due";

/// How many partitions hold the due entries: each takes 1,000 writes a second, and costs the
/// sweep one query.
const WAIT_SHARDS: u32 = 8;

/// The due partition of a task: a stable hash (FNV-1a) of its id, so every process agrees.
fn wait_pk(task_id: &str) -> String {
    let hash = task_id.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    format!("WAITS#{}", hash % WAIT_SHARDS)
}

impl DynamoTaskStore {
    /// Writes (or removes, with `due` `None`) the due entry of a task's wait.
    async fn put_due_entry(
        &self,
        owner: &Owner,
        task_id: &str,
        due: Option<Timestamp>,
        expires_ms: i64,
    ) -> Result<(), StoreError> {
        let key = items::key(wait_pk(task_id), task_id);
        match due {
            Some(due) => {
                let mut item = key;
                item.extend([
                    (attr::OWNER.to_owned(), s(owner.as_str())),
                    (DUE.to_owned(), n(due.millis())),
                    (attr::EXPIRES.to_owned(), n(expires_ms)),
                    (attr::TTL.to_owned(), n(items::ttl_secs(expires_ms))),
                ]);
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
            }
            None => {
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
            }
        }
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
        let body = items::deflate(&body)
            .map_err(|e| StoreError::Backend(format!("deflating an execution record: {e}")))?;
        let exp = execution.expires_at.millis();
        let due = execution.due_at();
        if due.is_some() {
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
            (PACKED.to_owned(), packed.clone()),
            (attr::WRITE_ID.to_owned(), mark.clone()),
        ]);
        items::check_size(&item, || {
            format!("the execution record of task {}", execution.task_id)
        })?;
        let saved = match expected {
            None => self.put_new(item).await?,
            Some(version) => {
                self.put_if(
                    item,
                    "#v = :expected AND #own = :own AND #exp > :now",
                    names(&["v", "own", "exp"]),
                    values([
                        (":expected", n(version)),
                        (":own", s(execution.owner.as_str())),
                        (":now", n(now_ms())),
                    ]),
                )
                .await?
            }
        };
        // A refused write whose record holds this write's mark is this write, landed on an
        // attempt whose answer was lost: saved. So is one holding this very record (the same
        // version and bytes): the core's own repeat of a save that failed through the SDK's
        // attempts after one of them landed. (Taken for another writer's, the run would stop,
        // leaving its own wait for a message it never sent.)
        let own = || async {
            let stored = self.get(key.clone()).await?;
            Ok::<_, StoreError>(stored.is_some_and(|i| {
                i.get(attr::WRITE_ID) == Some(&mark)
                    || (i.get(attr::VERSION) == Some(&n(execution.version))
                        && i.get(PACKED) == Some(&packed))
            }))
        };
        if !saved && !own().await? {
            return Err(StoreError::Conflict);
        }
        if due.is_none() && expected.is_some() {
            // The wait is over: its entry goes (a leftover one is the sweep's to remove).
            self.put_due_entry(&execution.owner, &execution.task_id, None, exp)
                .await?;
        }
        Ok(())
    }

    /// The record's `DeleteItem` (if it is the owner's), then its due entry's.
    async fn delete_execution(&self, owner: &Owner, task_id: &str) -> Result<(), StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(&*self.table)
            .set_key(Some(items::key(items::task_pk(task_id), EXECUTION_SK)))
            .condition_expression("#own = :own")
            .set_expression_attribute_names(Some(names(&["own"])))
            .set_expression_attribute_values(Some(values([(":own", s(owner.as_str()))])))
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        match out {
            Ok(out) => self.record("DeleteItem", capacity(out.consumed_capacity()), 1.0, 0.0),
            Err(err) if super::table::condition_failed(&err) => {
                self.record("DeleteItem", 0.0, 1.0, 0.0);
                return Ok(());
            }
            Err(err) => return Err(backend("DeleteItem", &err)),
        }
        self.put_due_entry(owner, task_id, None, 0).await
    }

    /// One eventually consistent query per due partition, filtered on the due time, until
    /// `limit` are found; soonest first.
    async fn list_due_executions(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<DueExecution>, StoreError> {
        let mut found = Vec::new();
        for shard in 0..WAIT_SHARDS {
            let query = self
                .client
                .query()
                .table_name(&*self.table)
                .key_condition_expression("#pk = :pk")
                .filter_expression("#due <= :now AND #exp > :now")
                .set_expression_attribute_names(Some(names(&["pk", "due", "exp"])))
                .set_expression_attribute_values(Some(values([
                    (":pk", s(format!("WAITS#{shard}"))),
                    (":now", n(now.millis())),
                ])));
            let mut failed = None;
            self.query_pages(query, ReadCost::Eventual, |page| {
                for item in page.items() {
                    match due_of(item) {
                        Ok(due) => found.push(due),
                        Err(err) => failed = Some(err),
                    }
                }
                Ok(Next::More(None))
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

fn due_of(item: &Item) -> Result<DueExecution, StoreError> {
    Ok(DueExecution {
        owner: Owner(get_s(item, attr::OWNER)?.to_owned()),
        task_id: get_s(item, attr::SK)?.to_owned(),
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
        (Some(AttributeValue::B(blob)), _) => items::inflate(blob.as_ref())
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
