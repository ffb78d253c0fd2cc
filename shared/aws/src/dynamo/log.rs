//! The task event log: a head item and one item per event under the task's partition, written
//! together in one transaction conditional on the head (create: the id is free; append: the
//! version, owner and expiry are as read).

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use a2a_core::{LoggedEvent, Owner, SendRecord, StoreError, StoredReply, StoredTask};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, Select, TransactWriteItem};

use super::table::{backend, build_error, capacity, names, values, write_units, Next, ReadCost};
use super::{DynamoTaskStore, ABSENT_OR_EXPIRED, FIRST_POLL, MAX_POLL};
use crate::items::{self, attr, n, s, Item};
use crate::now_ms;

/// The condition a head write is made on.
struct Guard {
    condition: &'static str,
    /// Attribute names the condition refers to (as `#name`).
    names: &'static [&'static str],
    values: HashMap<String, AttributeValue>,
}

/// The size of a head's entry in the by-owner index: keys plus the projected attributes.
fn index_entry_size(head: &Item) -> usize {
    [
        attr::PK,
        attr::SK,
        attr::GSI_PK,
        attr::GSI_SK,
        attr::CONTEXT,
        attr::STATE,
        attr::EXPIRES,
    ]
    .iter()
    .filter_map(|name| head.get_key_value(*name))
    .map(|(k, v)| items::item_size(&HashMap::from([(k.clone(), v.clone())])))
    .sum()
}

/// Whether a cancelled transaction lost to another writer: a condition failed (the version
/// moved on) or another transaction held one of the items. Either way the caller re-reads.
fn lost_race(err: &SdkError<TransactWriteItemsError, impl fmt::Debug>) -> bool {
    match err.as_service_error() {
        Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) => {
            cancelled.cancellation_reasons().iter().any(|r| {
                matches!(
                    r.code(),
                    Some("ConditionalCheckFailed" | "TransactionConflict")
                )
            })
        }
        _ => false,
    }
}

impl DynamoTaskStore {
    /// Writes the head and events in one transaction. `guard` guards the head; each
    /// event may only land on a free sequence number (or one left by an expired task of the same
    /// id). `index_writes` estimates the by-owner index entries the head write touches.
    async fn transact(
        &self,
        head: Item,
        guard: Guard,
        events: Vec<Item>,
        index_writes: f64,
        now: i64,
    ) -> Result<(), StoreError> {
        let task_label = || {
            items::get_s(&head, attr::PK)
                .unwrap_or_default()
                .trim_start_matches("T#")
                .to_owned()
        };
        let mut total = items::check_size(&head, || format!("task {}", task_label()))?;
        let mut wru =
            2.0 * write_units(total) + index_writes * write_units(index_entry_size(&head));
        for event in &events {
            let size = items::check_size(event, || {
                format!(
                    "an event of task {} ({})",
                    task_label(),
                    items::get_s(event, attr::SK).unwrap_or_default()
                )
            })?;
            total += size;
            wru += 2.0 * write_units(size);
        }
        if events.len() + 1 > items::MAX_TRANSACTION_ITEMS || total > items::MAX_TRANSACTION_BYTES {
            return Err(StoreError::TooLarge(format!(
                "{} events totalling {} KB cannot be stored in one write (at most {} items, {} KB)",
                events.len(),
                total.div_ceil(1000),
                items::MAX_TRANSACTION_ITEMS - 1,
                items::MAX_TRANSACTION_BYTES / 1000
            )));
        }

        let mut writes = Vec::with_capacity(events.len() + 1);
        writes.push(
            TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name(&*self.table)
                        .set_item(Some(head))
                        .condition_expression(guard.condition)
                        .set_expression_attribute_names(Some(names(guard.names)))
                        .set_expression_attribute_values(Some(guard.values))
                        .build()
                        .map_err(build_error)?,
                )
                .build(),
        );
        for event in events {
            writes.push(
                TransactWriteItem::builder()
                    .put(
                        Put::builder()
                            .table_name(&*self.table)
                            .set_item(Some(event))
                            .condition_expression(ABSENT_OR_EXPIRED)
                            .set_expression_attribute_names(Some(names(&["pk", "exp"])))
                            .set_expression_attribute_values(Some(values([(":now", n(now))])))
                            .build()
                            .map_err(build_error)?,
                    )
                    .build(),
            );
        }
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(writes))
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        match result {
            Ok(out) => {
                let reported = out
                    .consumed_capacity()
                    .iter()
                    .map(|c| capacity(Some(c)))
                    .sum();
                self.record("TransactWriteItems", reported, wru, 0.0);
                Ok(())
            }
            Err(err) => {
                // A cancelled transaction consumes write capacity too; count it.
                self.record("TransactWriteItems", 0.0, wru, 0.0);
                if lost_race(&err) {
                    Err(StoreError::Conflict)
                } else {
                    Err(backend("TransactWriteItems", &err))
                }
            }
        }
    }

    /// [`a2a_core::TaskStore::create_task`]. A task born terminal is one conditional
    /// `PutItem` (its events ride in the head, see [`items`]); any other is one transaction of
    /// the head and its event items, which later appends continue.
    pub(super) async fn create_task(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        let now = now_ms();
        if head.task.status.state.is_terminal() {
            let item = items::born_terminal_item(head, events)?;
            items::check_size(&item, || format!("task {}", head.task.id))?;
            let index_wru = write_units(index_entry_size(&item));
            let created = self
                .put_if_indexed(
                    item,
                    ABSENT_OR_EXPIRED,
                    names(&["pk", "exp"]),
                    values([(":now", n(now))]),
                    index_wru,
                )
                .await?;
            return if created {
                Ok(())
            } else {
                Err(StoreError::Conflict)
            };
        }
        let head_item = items::head_item(head)?;
        let event_items = items::event_items(head, 0, events)?;
        let guard = Guard {
            condition: ABSENT_OR_EXPIRED,
            names: &["pk", "exp"],
            values: values([(":now", n(now))]),
        };
        self.transact(head_item, guard, event_items, 1.0, now).await
    }

    /// [`a2a_core::TaskStore::append_events`].
    pub(super) async fn append_events(
        &self,
        head: &StoredTask,
        expected_version: u64,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        let head_item = items::head_item(head)?;
        let event_items = items::event_items(head, expected_version, events)?;
        let now = now_ms();
        // A status change usually moves the status timestamp, i.e. the index sort key: the
        // index then deletes the old entry and writes a new one.
        let index_writes = if events.iter().any(|e| e.event.state().is_some()) {
            2.0
        } else {
            1.0
        };
        let guard = Guard {
            condition: "#v = :expected AND #own = :own AND #exp > :now",
            names: &["v", "own", "exp"],
            values: values([
                (":expected", n(expected_version)),
                (":own", s(head.owner.as_str())),
                (":now", n(now)),
            ]),
        };
        self.transact(head_item, guard, event_items, index_writes, now)
            .await
    }

    /// [`a2a_core::TaskStore::load_task`].
    pub(super) async fn load_task(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<StoredTask>, StoreError> {
        // A reply record at the head key is no task.
        let record = self.load_send(owner, task_id).await?;
        Ok(match record {
            Some(SendRecord::Task(head)) => Some(head),
            _ => None,
        })
    }

    /// [`a2a_core::TaskStore::load_send`]: one consistent `GetItem` of the head key, which
    /// holds a task's head or a reply record.
    pub(super) async fn load_send(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<SendRecord>, StoreError> {
        self.get_visible(
            owner,
            task_id,
            items::HEAD_SK.into(),
            items::send_record_from_item,
        )
        .await
    }

    /// [`a2a_core::TaskStore::put_reply`]: a `PutItem` of the head key, conditional (as a
    /// create is) on no live task or reply holding it.
    pub(super) async fn put_reply(
        &self,
        task_id: &str,
        reply: &StoredReply,
    ) -> Result<bool, StoreError> {
        let item = items::reply_item(task_id, reply)?;
        items::check_size(&item, || {
            format!("the reply to a message of task {task_id}")
        })?;
        self.put_if(
            item,
            ABSENT_OR_EXPIRED,
            names(&["pk", "exp"]),
            values([(":now", n(now_ms()))]),
        )
        .await
    }

    /// A query for the event items of `task_id` after sequence number `after_seq`, up to the
    /// sort key `to` (the last event's, or the head's: `H` sorts right after `E#…`).
    fn events_after(
        &self,
        task_id: &str,
        after_seq: u64,
        to: String,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.client
            .query()
            .table_name(&*self.table)
            .key_condition_expression("#pk = :pk AND #sk BETWEEN :from AND :to")
            .set_expression_attribute_names(Some(names(&["pk", "sk"])))
            .set_expression_attribute_values(Some(values([
                (":pk", s(items::task_pk(task_id))),
                (":from", s(items::event_sk(after_seq + 1))),
                (":to", s(to)),
            ])))
    }

    /// [`a2a_core::TaskStore::read_events`].
    pub(super) async fn read_events(
        &self,
        owner: &Owner,
        task_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        let mut events = Vec::new();
        if limit == 0 || after_seq == u64::MAX {
            return Ok(events);
        }
        let now = now_ms();
        let page_limit = |want: usize| i32::try_from(want.min(1_000)).unwrap_or(1_000);
        // The range ends at the head, which holds the events of a task born terminal.
        let query = self
            .events_after(task_id, after_seq, items::HEAD_SK.to_owned())
            .consistent_read(true)
            .limit(page_limit(limit));
        self.query_pages(query, ReadCost::Consistent, |page| {
            for item in page.items() {
                // Every event of a task has the task's owner: one foreign event means the
                // whole log is someone else's.
                if !matches!(item.get(attr::OWNER), Some(AttributeValue::S(o)) if o == owner.as_str())
                {
                    events.clear();
                    return Ok(Next::Done);
                }
                // Each event carries the expiry its task had when it was written. Expiries only
                // grow, so once the head has expired, so has every event; an event older than
                // the retention of a long-lived task expires on its own (as DynamoDB's TTL
                // will delete it).
                if !items::visible(item, owner, now) {
                    continue;
                }
                if item.get(attr::SK) == Some(&s(items::HEAD_SK)) {
                    let carried = items::head_events(item)?.unwrap_or_default();
                    let wanted = limit - events.len().min(limit);
                    events.extend(
                        carried
                            .into_iter()
                            .filter(|e| e.seq > after_seq)
                            .take(wanted),
                    );
                } else if events.len() < limit {
                    events.push(items::event_from_item(item)?);
                }
            }
            Ok(if events.len() < limit {
                Next::More(Some(page_limit(limit - events.len())))
            } else {
                Next::Done
            })
        })
        .await?;
        Ok(events)
    }

    /// [`a2a_core::TaskStore::wait_for_append`].
    pub(super) async fn wait_for_append(
        &self,
        task_id: &str,
        after_version: u64,
        max_wait: Duration,
    ) {
        if after_version == u64::MAX {
            return;
        }
        let deadline = tokio::time::Instant::now() + max_wait;
        let mut pause = FIRST_POLL;
        loop {
            // Is there an event after `after_version`? Looking for the next event item costs
            // half a read unit whatever the task's size, where reading the head's version would
            // bill the whole head (DynamoDB bills reads by item size, projection or not).
            // Eventually consistent: this is a hint, the caller re-reads the log consistently.
            let query = self
                .events_after(task_id, after_version, items::last_event_sk())
                .select(Select::Count)
                .limit(1);
            let mut appended = false;
            let result = self
                .query_pages(query, ReadCost::Eventual, |page| {
                    appended = page.count() > 0;
                    Ok(Next::Done)
                })
                .await;
            match result {
                Ok(()) if appended => return,
                Ok(()) => {}
                Err(err) => {
                    // Only a hint: the caller re-reads and will meet the error itself.
                    tracing::warn!(error = %err, "wait_for_append could not poll the log");
                    return;
                }
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return;
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(MAX_POLL);
        }
    }
}
