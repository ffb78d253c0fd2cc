//! What every part of the store shares: expression placeholders, capacity estimates, error
//! mapping, metering, and the few request shapes (a consistent get, a conditional put, a paged
//! query) the parts are built from.

use std::collections::HashMap;
use std::fmt;

use a2a_core::{Owner, StoreError};
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConsumedCapacity, ReturnConsumedCapacity, ReturnValue,
};

use super::DynamoTaskStore;
use crate::items::{self, Item};
use crate::meter::{Call, Service};
use crate::now_ms;

/// Placeholders for attribute names: every expression refers to attributes through them, so
/// no name ever collides with a DynamoDB reserved word (`ttl`, `until` and others are).
pub(super) fn names(list: &[&str]) -> HashMap<String, String> {
    list.iter()
        .map(|name| (format!("#{name}"), (*name).to_owned()))
        .collect()
}

/// Expression attribute values from `(":placeholder", value)` pairs.
pub(super) fn values<const N: usize>(
    list: [(&str, AttributeValue); N],
) -> HashMap<String, AttributeValue> {
    list.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Write units of a standard write of an item of `bytes`: one per started KB.
pub(super) fn write_units(bytes: usize) -> f64 {
    bytes.div_ceil(1024).max(1) as f64
}

/// Read units of a strongly consistent read of `bytes`: one per started 4 KB (half that for an
/// eventually consistent read).
pub(super) fn read_units(bytes: usize) -> f64 {
    bytes.div_ceil(4096).max(1) as f64
}

/// The capacity DynamoDB reported (only when asked to, i.e. when metered).
pub(super) fn capacity(consumed: Option<&ConsumedCapacity>) -> f64 {
    consumed
        .and_then(ConsumedCapacity::capacity_units)
        .unwrap_or(0.0)
}

/// A backend failure for the logs. The SDK's messages name the operation and the error code;
/// they never contain credentials.
pub(super) fn backend<E, R>(api: &str, err: &SdkError<E, R>) -> StoreError
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

/// A request the SDK refused to build (a required field missing).
pub(super) fn build_error(err: impl std::error::Error) -> StoreError {
    StoreError::Backend(format!("building a DynamoDB request: {err}"))
}

/// Whether a single-item write failed only because its condition did not hold (nothing was
/// written). The same for every write API, so one check serves them all.
pub(super) fn condition_failed<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>) -> bool {
    matches!(err, SdkError::ServiceError(_))
        && err.code() == Some("ConditionalCheckFailedException")
}

/// How the read units of one query page are estimated (DynamoDB reports them only when asked).
#[derive(Debug, Clone, Copy)]
pub(super) enum ReadCost {
    /// A strongly consistent read, billed by the size of what it returned.
    Consistent,
    /// An eventually consistent read (half price), billed by what it scanned, filtered out
    /// or not: scanned items times the average returned size, or ~150 bytes (an index entry)
    /// when nothing came back.
    Eventual,
}

impl ReadCost {
    fn estimate(self, page: &QueryOutput) -> f64 {
        let returned = page.items();
        match self {
            Self::Consistent => read_units(returned.iter().map(items::item_size).sum()),
            Self::Eventual => {
                let scanned = usize::try_from(page.scanned_count()).unwrap_or(0);
                let avg = if returned.is_empty() {
                    150
                } else {
                    returned.iter().map(items::item_size).sum::<usize>() / returned.len()
                };
                0.5 * read_units(scanned * avg)
            }
        }
    }
}

/// What a page handler of [`DynamoTaskStore::query_pages`] wants next.
#[derive(Debug, Clone, Copy)]
pub(super) enum Next {
    /// Stop here.
    Done,
    /// Read the next page if there is one, with this `Limit` (or the query's own).
    More(Option<i32>),
}

impl DynamoTaskStore {
    /// Asks DynamoDB to report consumed capacity only when someone records it.
    pub(super) fn return_capacity(&self) -> Option<ReturnConsumedCapacity> {
        self.meter.as_ref().map(|_| ReturnConsumedCapacity::Total)
    }

    /// Records one request with DynamoDB's reported units and our estimate of them.
    pub(super) fn record(&self, api: &'static str, reported: f64, wru: f64, rru: f64) {
        self.record_on(api, None, reported, wru, rru);
    }

    /// As [`Self::record`], for a request that read `index` rather than the table itself.
    fn record_on(&self, api: &'static str, index: Option<&str>, reported: f64, wru: f64, rru: f64) {
        if let Some(meter) = &self.meter {
            meter.record(Call {
                service: Service::DynamoDb,
                api,
                resource: match index {
                    Some(index) => format!("{}/index/{index}", self.table),
                    None => self.table.to_string(),
                },
                reported_units: reported,
                estimated_wru: wru,
                estimated_rru: rru,
            });
        }
    }

    /// Runs `query` page by page, metering each, and hands every page to `page` until it says
    /// [`Next::Done`] or the results end. The one query loop of the store: the SDK's paginator
    /// cannot change the `Limit` between pages, which the log and list reads need.
    pub(super) async fn query_pages(
        &self,
        query: QueryFluentBuilder,
        cost: ReadCost,
        mut page: impl FnMut(&QueryOutput) -> Result<Next, StoreError>,
    ) -> Result<(), StoreError> {
        let mut start_key = None;
        let mut limit = None;
        loop {
            // The first page starts where `query` says (a list cursor may set its own start).
            let mut request = query
                .clone()
                .set_return_consumed_capacity(self.return_capacity());
            if let Some(key) = start_key.take() {
                request = request.set_exclusive_start_key(Some(key));
            }
            if let Some(limit) = limit {
                request = request.limit(limit);
            }
            let out = request.send().await.map_err(|e| backend("Query", &e))?;
            self.record_on(
                "Query",
                query.as_input().get_index_name().as_deref(),
                capacity(out.consumed_capacity()),
                0.0,
                cost.estimate(&out),
            );
            match page(&out)? {
                Next::Done => return Ok(()),
                Next::More(next_limit) => match out.last_evaluated_key {
                    Some(key) if !key.is_empty() => {
                        start_key = Some(key);
                        limit = next_limit;
                    }
                    _ => return Ok(()),
                },
            }
        }
    }

    /// Reads one item with a strongly consistent read (callers decide on what they read).
    pub(super) async fn get(&self, key: Item) -> Result<Option<Item>, StoreError> {
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
    pub(super) async fn get_visible<T>(
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

    /// A `PutItem` conditional on `condition`: `false` when the condition did not hold (and
    /// nothing was written).
    pub(super) async fn put_if(
        &self,
        item: Item,
        condition: &str,
        names: HashMap<String, String>,
        values: HashMap<String, AttributeValue>,
    ) -> Result<bool, StoreError> {
        self.put_if_indexed(item, condition, names, values, 0.0)
            .await
    }

    /// A `PutItem` of an item whose key is free: nobody's, or an expired item's (which TTL
    /// has not removed yet). `false` when a live item holds the key.
    pub(super) async fn put_new(&self, item: Item) -> Result<bool, StoreError> {
        self.put_new_indexed(item, 0.0).await
    }

    /// [`Self::put_new`] of an item that also writes an index entry costing `index_wru`.
    pub(super) async fn put_new_indexed(
        &self,
        item: Item,
        index_wru: f64,
    ) -> Result<bool, StoreError> {
        self.put_if_indexed(
            item,
            super::ABSENT_OR_EXPIRED,
            names(&["pk", "exp"]),
            values([(":now", items::n(now_ms()))]),
            index_wru,
        )
        .await
    }

    /// A conditional write's `result`, metered: `Some(output)` when it wrote (billed
    /// `units(&output)`), `None` when its condition failed (billed `refused`: DynamoDB charges
    /// a refused write too); any other failure is a backend error.
    pub(super) fn conditional<O, E, R>(
        &self,
        api: &'static str,
        result: Result<O, SdkError<E, R>>,
        consumed: impl Fn(&O) -> Option<&ConsumedCapacity>,
        units: impl Fn(&O) -> f64,
        refused: f64,
    ) -> Result<Option<O>, StoreError>
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: fmt::Debug,
    {
        match result {
            Ok(out) => {
                self.record(api, capacity(consumed(&out)), units(&out), 0.0);
                Ok(Some(out))
            }
            Err(err) if condition_failed(&err) => {
                self.record(api, 0.0, refused, 0.0);
                Ok(None)
            }
            Err(err) => Err(backend(api, &err)),
        }
    }

    /// [`Self::put_if`] of an item that also writes an index entry costing `index_wru`
    /// (counted only when the write happens: a failed condition writes no entry).
    pub(super) async fn put_if_indexed(
        &self,
        item: Item,
        condition: &str,
        names: HashMap<String, String>,
        values: HashMap<String, AttributeValue>,
        index_wru: f64,
    ) -> Result<bool, StoreError> {
        let written = self
            .put_if_replacing(item, condition, names, values, index_wru, None)
            .await?;
        Ok(written.is_some())
    }

    /// [`Self::put_if_indexed`] answering what `returned` asks of the item it replaced
    /// (`ALL_OLD` costs no more capacity; `None` asks nothing, and sends nothing for it):
    /// `None` when the condition did not hold, `Some(None)` when there was no item (or
    /// nothing was asked).
    pub(super) async fn put_if_replacing(
        &self,
        item: Item,
        condition: &str,
        names: HashMap<String, String>,
        values: HashMap<String, AttributeValue>,
        index_wru: f64,
        returned: Option<ReturnValue>,
    ) -> Result<Option<Option<Item>>, StoreError> {
        let size = items::item_size(&item);
        let result = self
            .client
            .put_item()
            .table_name(&*self.table)
            .set_item(Some(item))
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .set_return_values(returned)
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        let written = self.conditional(
            "PutItem",
            result,
            |out| out.consumed_capacity(),
            |_| write_units(size) + index_wru,
            write_units(size),
        )?;
        Ok(written.map(|out| out.attributes.filter(|old| !old.is_empty())))
    }
}
