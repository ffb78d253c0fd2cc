//! [`TaskStore`] on one DynamoDB table (layout in [`crate::items`] and `docs/aws-adapters.md`).
//!
//! Correctness rests on conditional writes only: a create is conditional on the head not
//! existing (or having expired), an append is one `TransactWriteItems` conditional on the head's
//! version, owner and expiry. No locks, no in-process state.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{
    LoggedEvent, Owner, PushAttempt, PushAttemptResult, PushDeliveryState, StoreError, StoredTask,
    TaskPage, TaskQuery, TaskStore,
};
use a2a_protocol::{TaskPushNotificationConfig, Timestamp};
use async_trait::async_trait;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConsumedCapacity, KeysAndAttributes, Put, ReturnConsumedCapacity, ReturnValue,
    Select, TransactWriteItem,
};

use crate::items::{self, attr, n, s, Item};
use crate::meter::{Call, Meter, Service};
use crate::now_ms;
use crate::resources::BY_OWNER_INDEX;

/// First pause of [`TaskStore::wait_for_append`]'s polling; it doubles up to [`MAX_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(50);
/// Longest pause between two polls: the worst added latency of a stream that waits for
/// another instance's events, traded against one small query per pause while idle.
const MAX_POLL: Duration = Duration::from_millis(500);
/// Leases are kept this long past their end before DynamoDB's TTL deletes them (they are
/// ignored once over anyway; this only reclaims space).
const LEASE_TTL_GRACE_SECS: i64 = 24 * 3600;
/// Evaluated items per ListTasks query round when a context or state filter may drop most of
/// them: index entries are ~150 bytes, so a round reads at most a few read units.
const FILTERED_ROUND: i32 = 200;

/// The task store on DynamoDB.
///
/// Cloning is cheap and shares the client. Build it once per process with a client built once
/// ([`crate::AwsClients`]).
#[derive(Clone)]
pub struct DynamoTaskStore {
    client: aws_sdk_dynamodb::Client,
    table: Arc<str>,
    meter: Option<Meter>,
}

impl fmt::Debug for DynamoTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamoTaskStore")
            .field("table", &self.table)
            .field("metered", &self.meter.is_some())
            .finish_non_exhaustive()
    }
}

/// Placeholders for attribute names: every expression refers to attributes through them, so
/// no name ever collides with a DynamoDB reserved word (`ttl`, `until` and others are).
fn names(list: &[&str]) -> HashMap<String, String> {
    list.iter()
        .map(|name| (format!("#{name}"), (*name).to_owned()))
        .collect()
}

fn values<const N: usize>(list: [(&str, AttributeValue); N]) -> HashMap<String, AttributeValue> {
    list.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Write units of a standard write of an item of `bytes`: one per started KB.
fn write_units(bytes: usize) -> f64 {
    bytes.div_ceil(1024).max(1) as f64
}

/// Read units of a strongly consistent read of `bytes`: one per started 4 KB (half that for an
/// eventually consistent read).
fn read_units(bytes: usize) -> f64 {
    bytes.div_ceil(4096).max(1) as f64
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

fn capacity(consumed: Option<&ConsumedCapacity>) -> f64 {
    consumed
        .and_then(ConsumedCapacity::capacity_units)
        .unwrap_or(0.0)
}

/// A backend failure for the logs. The SDK's messages name the operation and the error code;
/// they never contain credentials.
fn backend<E, R>(api: &str, err: &SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: fmt::Debug,
{
    // Our own size check should catch every oversized item first; this is the backstop if
    // DynamoDB counts differently, so the client still gets "too large", not an internal error.
    if err.code() == Some("ValidationException")
        && err.message().is_some_and(|m| m.contains("Item size"))
    {
        return StoreError::TooLarge(
            "the task or event is larger than a stored item may be (400 KB)".into(),
        );
    }
    StoreError::Backend(format!("DynamoDB {api}: {}", DisplayErrorContext(err)))
}

fn build_error(err: impl std::error::Error) -> StoreError {
    StoreError::Backend(format!("building a DynamoDB request: {err}"))
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

/// The condition a head write is made on.
struct Guard {
    condition: &'static str,
    /// Attribute names the condition refers to (as `#name`).
    names: &'static [&'static str],
    values: HashMap<String, AttributeValue>,
}

impl DynamoTaskStore {
    /// A store on `table`, through `client`.
    pub fn new(client: aws_sdk_dynamodb::Client, table: &str) -> Self {
        Self {
            client,
            table: Arc::from(table),
            meter: None,
        }
    }

    /// Records every request of this store (and asks DynamoDB to report consumed capacity).
    pub fn with_meter(mut self, meter: Meter) -> Self {
        self.meter = Some(meter);
        self
    }

    /// The table this store writes to.
    pub fn table(&self) -> &str {
        &self.table
    }

    fn return_capacity(&self) -> Option<ReturnConsumedCapacity> {
        self.meter.as_ref().map(|_| ReturnConsumedCapacity::Total)
    }

    fn record(&self, api: &'static str, reported: f64, wru: f64, rru: f64) {
        if let Some(meter) = &self.meter {
            meter.record(Call {
                service: Service::DynamoDb,
                api,
                reported_units: reported,
                estimated_wru: wru,
                estimated_rru: rru,
            });
        }
    }

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
                            .condition_expression("attribute_not_exists(#pk) OR #exp <= :now")
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

    /// Reads one item with a strongly consistent read (callers decide on what they read).
    async fn get(&self, key: Item) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&*self.table)
            .set_key(Some(key))
            .consistent_read(true)
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await
            .map_err(|e| backend("GetItem", &e))?;
        let rru = read_units(out.item().map_or(0, items::item_size));
        self.record("GetItem", capacity(out.consumed_capacity()), 0.0, rru);
        Ok(out.item)
    }

    /// The item of task `task_id` under sort key `sk`, decoded by `decode`, if `owner` may see
    /// it: another owner's item and an expired one are both absent.
    async fn get_visible<T>(
        &self,
        owner: &Owner,
        task_id: &str,
        sk: String,
        decode: impl FnOnce(&Item) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        match self.get(items::key(items::task_pk(task_id), sk)).await? {
            Some(item) if items::visible(&item, owner, now_ms()) => decode(&item).map(Some),
            _ => Ok(None),
        }
    }

    /// The owner's tasks on the by-owner index matching `query`, newest first: up to `want`
    /// index sort keys, and whether more match.
    async fn list_keys(
        &self,
        owner: &Owner,
        query: &TaskQuery,
        start: Option<&str>,
        want: usize,
        now: i64,
    ) -> Result<(Vec<String>, bool), StoreError> {
        let filtered = query.context_id.is_some() || query.state.is_some();
        let mut start_key = start.map(|gsk| self.index_start_key(owner, gsk));
        let mut found = Vec::new();
        loop {
            let limit = if filtered {
                FILTERED_ROUND
            } else {
                // One more than the page tells whether a next page exists.
                i32::try_from(want + 1 - found.len()).unwrap_or(i32::MAX)
            };
            let out = self
                .index_query(owner, query, now, false)
                .set_exclusive_start_key(start_key.take())
                .limit(limit)
                .send()
                .await
                .map_err(|e| backend("Query", &e))?;
            let scanned = usize::try_from(out.scanned_count()).unwrap_or(0);
            let returned = out.items();
            let avg = if returned.is_empty() {
                150
            } else {
                returned.iter().map(items::item_size).sum::<usize>() / returned.len()
            };
            self.record(
                "Query",
                capacity(out.consumed_capacity()),
                0.0,
                0.5 * read_units(scanned * avg),
            );
            for item in returned {
                found.push(items::get_s(item, attr::GSI_SK)?.to_owned());
                if found.len() > want {
                    found.truncate(want);
                    return Ok((found, true));
                }
            }
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() => start_key = Some(key),
                _ => return Ok((found, false)),
            }
        }
    }

    /// A query on the by-owner index with `query`'s filters and the expiry check, newest
    /// first. `count` asks for the number of matches only.
    fn index_query(
        &self,
        owner: &Owner,
        query: &TaskQuery,
        now: i64,
        count: bool,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        let mut key_condition = "#gpk = :owner".to_owned();
        let mut filter = "#exp > :now".to_owned();
        let mut used = vec!["gpk", "exp"];
        let mut vals = values([(":owner", s(owner.as_str())), (":now", n(now))]);
        if let Some(after) = query.status_timestamp_after {
            // The bare timestamp sorts before every key with that timestamp: "at or after".
            key_condition.push_str(" AND #gsk >= :after");
            used.push("gsk");
            vals.insert(":after".into(), s(items::ts_prefix(after.millis())));
        }
        if let Some(context_id) = &query.context_id {
            filter.push_str(" AND #ctx = :ctx");
            used.push("ctx");
            vals.insert(":ctx".into(), s(context_id));
        }
        if let Some(state) = query.state {
            filter.push_str(" AND #st = :st");
            used.push("st");
            vals.insert(":st".into(), s(state.as_str()));
        }
        let builder = self
            .client
            .query()
            .table_name(&*self.table)
            .index_name(BY_OWNER_INDEX)
            .key_condition_expression(key_condition)
            .filter_expression(filter)
            .set_expression_attribute_names(Some(names(&used)))
            .set_expression_attribute_values(Some(vals))
            .scan_index_forward(false)
            .set_return_consumed_capacity(self.return_capacity());
        if count {
            builder.select(Select::Count)
        } else {
            builder
        }
    }

    fn index_start_key(&self, owner: &Owner, gsk: &str) -> Item {
        let mut key = items::key(
            items::task_pk(items::task_id_of_gsi_sk(gsk)),
            items::HEAD_SK,
        );
        key.insert(attr::GSI_PK.into(), s(owner.as_str()));
        key.insert(attr::GSI_SK.into(), s(gsk));
        key
    }

    /// How many of the owner's tasks match `query`: a `Select=COUNT` query over the index,
    /// which reads (and bills) every matching index entry, ~150 bytes each.
    async fn count(&self, owner: &Owner, query: &TaskQuery, now: i64) -> Result<usize, StoreError> {
        let mut total = 0usize;
        let mut start_key = None;
        loop {
            let out = self
                .index_query(owner, query, now, true)
                .set_exclusive_start_key(start_key.take())
                .send()
                .await
                .map_err(|e| backend("Query", &e))?;
            let scanned = usize::try_from(out.scanned_count()).unwrap_or(0);
            self.record(
                "Query",
                capacity(out.consumed_capacity()),
                0.0,
                0.5 * read_units(scanned * 150),
            );
            total += usize::try_from(out.count()).unwrap_or(0);
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() => start_key = Some(key),
                _ => return Ok(total),
            }
        }
    }

    /// The heads of `task_ids` (at most 100), strongly consistent, by task id.
    async fn batch_heads(&self, task_ids: &[String]) -> Result<HashMap<String, Item>, StoreError> {
        let mut heads = HashMap::new();
        if task_ids.is_empty() {
            return Ok(heads);
        }
        let keys = task_ids
            .iter()
            .map(|id| items::key(items::task_pk(id), items::HEAD_SK))
            .collect::<Vec<_>>();
        let mut request = Some(
            KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .consistent_read(true)
                .build()
                .map_err(build_error)?,
        );
        let mut backoff = FIRST_POLL;
        while let Some(keys) = request.take() {
            let out = self
                .client
                .batch_get_item()
                .request_items(&*self.table, keys)
                .set_return_consumed_capacity(self.return_capacity())
                .send()
                .await
                .map_err(|e| backend("BatchGetItem", &e))?;
            let got = out
                .responses()
                .and_then(|r| r.get(&*self.table))
                .map(Vec::as_slice)
                .unwrap_or_default();
            let rru = got.iter().map(|i| read_units(items::item_size(i))).sum();
            let reported = out
                .consumed_capacity()
                .iter()
                .map(|c| capacity(Some(c)))
                .sum();
            self.record("BatchGetItem", reported, 0.0, rru);
            for item in got {
                let pk = items::get_s(item, attr::PK)?;
                heads.insert(pk.trim_start_matches("T#").to_owned(), item.clone());
            }
            // Keys DynamoDB did not get to (throttling, size): ask again after a pause.
            request = out
                .unprocessed_keys
                .and_then(|mut u| u.remove(&*self.table))
                .filter(|k| !k.keys().is_empty());
            if request.is_some() {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_POLL);
            }
        }
        Ok(heads)
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
        now: i64,
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
        self.put_if(
            item,
            "attribute_not_exists(#pk) OR #exp <= :now",
            names(&["pk", "exp"]),
            values([(":now", n(now))]),
        )
        .await
    }

    /// A `PutItem` conditional on `condition`: `false` when the condition did not hold (and
    /// nothing was written).
    async fn put_if(
        &self,
        item: Item,
        condition: &str,
        names: HashMap<String, String>,
        values: HashMap<String, AttributeValue>,
    ) -> Result<bool, StoreError> {
        let size = items::item_size(&item);
        let result = self
            .client
            .put_item()
            .table_name(&*self.table)
            .set_item(Some(item))
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        match result {
            Ok(out) => {
                self.record(
                    "PutItem",
                    capacity(out.consumed_capacity()),
                    write_units(size),
                    0.0,
                );
                Ok(true)
            }
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                self.record("PutItem", 0.0, write_units(size), 0.0);
                Ok(false)
            }
            Err(err) => Err(backend("PutItem", &err)),
        }
    }
}

#[async_trait]
impl TaskStore for DynamoTaskStore {
    async fn create_task(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        let head_item = items::head_item(head)?;
        let event_items = items::event_items(head, 0, events)?;
        let now = now_ms();
        // An expired task is gone as far as readers are concerned, even before DynamoDB's TTL
        // deletes it: its id is free again.
        let guard = Guard {
            condition: "attribute_not_exists(#pk) OR #exp <= :now",
            names: &["pk", "exp"],
            values: values([(":now", n(now))]),
        };
        self.transact(head_item, guard, event_items, 1.0, now).await
    }

    async fn append_events(
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

    async fn load_task(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.get_visible(owner, task_id, items::HEAD_SK.into(), items::head_from_item)
            .await
    }

    async fn read_events(
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
        let mut start_key = None;
        loop {
            let want = limit - events.len();
            let out = self
                .client
                .query()
                .table_name(&*self.table)
                .key_condition_expression("#pk = :pk AND #sk BETWEEN :from AND :to")
                .set_expression_attribute_names(Some(names(&["pk", "sk"])))
                .set_expression_attribute_values(Some(values([
                    (":pk", s(items::task_pk(task_id))),
                    (":from", s(items::event_sk(after_seq + 1))),
                    (":to", s(items::last_event_sk())),
                ])))
                .consistent_read(true)
                .limit(i32::try_from(want.min(1_000)).unwrap_or(1_000))
                .set_exclusive_start_key(start_key.take())
                .set_return_consumed_capacity(self.return_capacity())
                .send()
                .await
                .map_err(|e| backend("Query", &e))?;
            let read: usize = out.items().iter().map(items::item_size).sum();
            self.record(
                "Query",
                capacity(out.consumed_capacity()),
                0.0,
                read_units(read),
            );
            for item in out.items() {
                // Every event of a task has the task's owner: one foreign event means the
                // whole log is someone else's.
                if !matches!(item.get(attr::OWNER), Some(AttributeValue::S(o)) if o == owner.as_str())
                {
                    return Ok(Vec::new());
                }
                // Each event carries the expiry its task had when it was written. Expiries only
                // grow, so once the head has expired, so has every event; an event older than
                // the retention of a long-lived task expires on its own (as DynamoDB's TTL
                // will delete it).
                if items::visible(item, owner, now) {
                    events.push(items::event_from_item(item)?);
                }
            }
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() && events.len() < limit => start_key = Some(key),
                _ => return Ok(events),
            }
        }
    }

    async fn list_tasks(&self, owner: &Owner, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let start = if query.page_token.is_empty() {
            None
        } else {
            Some(items::decode_cursor(&query.page_token)?)
        };
        // Validated upstream; a zero would only make the page useless.
        let page_size = query.page_size.clamp(1, 100);
        let now = now_ms();
        let (keys, more) = self
            .list_keys(owner, query, start.as_deref(), page_size, now)
            .await?;
        // A first page that holds every match already knows the total: skip the count.
        let total_size = if start.is_none() && !more {
            keys.len()
        } else {
            self.count(owner, query, now).await?
        };
        let task_ids: Vec<String> = keys
            .iter()
            .map(|k| items::task_id_of_gsi_sk(k).to_owned())
            .collect();
        let mut heads = self.batch_heads(&task_ids).await?;
        let mut tasks = Vec::with_capacity(task_ids.len());
        for id in &task_ids {
            // A head that expired or vanished since the index was read is left out.
            if let Some(item) = heads.remove(id).filter(|i| items::visible(i, owner, now)) {
                tasks.push(items::task_from_item(&item)?);
            }
        }
        let next_page_token = match keys.last() {
            Some(last) if more => items::encode_cursor(last),
            _ => String::new(),
        };
        Ok(TaskPage {
            tasks,
            next_page_token,
            total_size,
        })
    }

    async fn wait_for_append(&self, task_id: &str, after_version: u64, max_wait: Duration) {
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
            let result = self
                .client
                .query()
                .table_name(&*self.table)
                .key_condition_expression("#pk = :pk AND #sk BETWEEN :from AND :to")
                .set_expression_attribute_names(Some(names(&["pk", "sk"])))
                .set_expression_attribute_values(Some(values([
                    (":pk", s(items::task_pk(task_id))),
                    (":from", s(items::event_sk(after_version + 1))),
                    (":to", s(items::last_event_sk())),
                ])))
                .select(Select::Count)
                .limit(1)
                .set_return_consumed_capacity(self.return_capacity())
                .send()
                .await;
            match result {
                Ok(out) => {
                    self.record("Query", capacity(out.consumed_capacity()), 0.0, 0.5);
                    if out.count() > 0 {
                        return;
                    }
                }
                Err(err) => {
                    // Only a hint: the caller re-reads and will meet the error itself.
                    tracing::warn!(error = %backend("Query", &err), "wait_for_append could not poll the log");
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

    async fn put_push_config(
        &self,
        owner: &Owner,
        config: &TaskPushNotificationConfig,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        let item = items::config_item(owner, config, expires_at)?;
        let size = items::check_size(&item, || format!("push config {}", config.id))?;
        let result = self
            .client
            .put_item()
            .table_name(&*self.table)
            .set_item(Some(item))
            // Never overwrite another owner's live config.
            .condition_expression("attribute_not_exists(#pk) OR #own = :own OR #exp <= :now")
            .set_expression_attribute_names(Some(names(&["pk", "own", "exp"])))
            .set_expression_attribute_values(Some(values([
                (":own", s(owner.as_str())),
                (":now", n(now_ms())),
            ])))
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        match result {
            Ok(out) => {
                self.record(
                    "PutItem",
                    capacity(out.consumed_capacity()),
                    write_units(size),
                    0.0,
                );
                Ok(())
            }
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Err(StoreError::Conflict)
            }
            Err(err) => Err(backend("PutItem", &err)),
        }
    }

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
    }

    async fn list_push_configs(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        let now = now_ms();
        let mut configs = Vec::new();
        let mut start_key = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&*self.table)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .set_expression_attribute_names(Some(names(&["pk", "sk"])))
                .set_expression_attribute_values(Some(values([
                    (":pk", s(items::task_pk(task_id))),
                    (":prefix", s(items::CONFIG_PREFIX)),
                ])))
                .consistent_read(true)
                .set_exclusive_start_key(start_key.take())
                .set_return_consumed_capacity(self.return_capacity())
                .send()
                .await
                .map_err(|e| backend("Query", &e))?;
            let read: usize = out.items().iter().map(items::item_size).sum();
            self.record(
                "Query",
                capacity(out.consumed_capacity()),
                0.0,
                read_units(read),
            );
            for item in out.items() {
                if items::visible(item, owner, now) {
                    configs.push(items::config_from_item(item)?);
                }
            }
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() => start_key = Some(key),
                // Sort keys are `P#<id>`: DynamoDB's byte order is already id order.
                _ => return Ok(configs),
            }
        }
    }

    async fn delete_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<bool, StoreError> {
        let result = self
            .client
            .delete_item()
            .table_name(&*self.table)
            .set_key(Some(items::key(
                items::task_pk(task_id),
                items::config_sk(config_id),
            )))
            .condition_expression("#own = :own")
            .set_expression_attribute_names(Some(names(&["own"])))
            .set_expression_attribute_values(Some(values([(":own", s(owner.as_str()))])))
            .return_values(ReturnValue::AllOld)
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        match result {
            Ok(out) => {
                let old = out.attributes.unwrap_or_default();
                self.record(
                    "DeleteItem",
                    capacity(out.consumed_capacity.as_ref()),
                    write_units(items::item_size(&old)),
                    0.0,
                );
                // An expired config was already invisible: deleting it is not deleting "one".
                Ok(items::visible(&old, owner, now_ms()))
            }
            // Missing, or another owner's: nothing of ours to delete.
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                self.record("DeleteItem", 0.0, 1.0, 0.0);
                Ok(false)
            }
            Err(err) => Err(backend("DeleteItem", &err)),
        }
    }

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
        ];
        let mut add = vec!["#att :one"];
        let mut remove = Vec::new();
        let mut used = vec!["pk", "own", "exp", "ttl", "lseq", "lat", "lres", "att"];
        let mut vals = values([
            (":own", s(owner.as_str())),
            (":exp", n(exp)),
            (":ttl", n(items::ttl_secs(exp))),
            (":seq", n(attempt.seq)),
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
            match result {
                Ok(out) => {
                    let size = out.attributes().map_or(0, items::item_size);
                    self.record(
                        "UpdateItem",
                        capacity(out.consumed_capacity()),
                        write_units(size),
                        0.0,
                    );
                    return Ok(());
                }
                Err(err)
                    if err
                        .as_service_error()
                        .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
                {
                    self.record("UpdateItem", 0.0, 1.0, 0.0);
                    if self
                        .put_fresh_delivery(owner, task_id, config_id, attempt, exp, now_ms())
                        .await?
                    {
                        return Ok(());
                    }
                    // A live record appeared between the two writes: update it.
                }
                Err(err) => return Err(backend("UpdateItem", &err)),
            }
        }
        // Still failing: the record belongs to another owner's live task of the same id.
        Err(StoreError::Conflict)
    }

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

    async fn acquire_lease(
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

    async fn release_lease(&self, task_id: &str, holder: &str) -> Result<(), StoreError> {
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
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                self.record("DeleteItem", 0.0, 1.0, 0.0);
                Ok(())
            }
            Err(err) => Err(backend("DeleteItem", &err)),
        }
    }
}
