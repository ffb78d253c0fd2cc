//! ListTasks: the owner's tasks on the by-owner index, newest status first, then their heads
//! in one batch read; the total from the owner's counts ([`super::counts`]), or a count of the
//! matches when a filter has none (or the counts are not complete yet) and the page does not
//! already tell it.

use std::collections::HashMap;

use a2a_core::{Owner, StoreError, TaskPage, TaskQuery};
use a2a_protocol::Task;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{KeysAndAttributes, Select};

use super::table::{backend, build_error, capacity, names, read_units, values, Next, ReadCost};
use super::{DynamoTaskStore, FIRST_POLL, MAX_POLL};
use crate::body;
use crate::items::{self, attr, n, s, Item};
use crate::now_ms;
use crate::resources::BY_OWNER_INDEX;

/// Evaluated items in the first ListTasks query round when a context or state filter may drop
/// most of them: index entries are ~150 bytes, so it reads at most a few read units. Each
/// further round evaluates twice as many (DynamoDB stops a page at 1 MB anyway), so a sparse
/// filter over many tasks takes tens of round trips, not thousands.
const FILTERED_ROUND: i32 = 200;

impl DynamoTaskStore {
    /// `TaskLogStore::list_tasks`: pages of the owner's by-owner index, newest status first.
    pub(super) async fn list_heads(
        &self,
        owner: &Owner,
        query: &TaskQuery,
    ) -> Result<TaskPage, StoreError> {
        let start = if query.page_token.is_empty() {
            None
        } else {
            Some(items::decode_cursor(&query.page_token)?)
        };
        // Validated upstream; a zero would only make the page useless.
        let page_size = query.page_size.clamp(1, 100);
        let now = now_ms();
        // Without a filter the total is in the owner's counts, read beside the page's keys: two
        // round trips in all (this, then the heads).
        let counted = query.context_id.is_none()
            && query.state.is_none()
            && query.status_timestamp_after.is_none();
        let ((keys, more), counts) = if counted {
            let (keys, counts) = tokio::join!(
                self.list_keys(owner, query, start.as_deref(), page_size, now),
                self.read_counts(owner, now)
            );
            (keys?, Some(counts?))
        } else {
            let keys = self
                .list_keys(owner, query, start.as_deref(), page_size, now)
                .await?;
            (keys, None)
        };
        let total_size = match &counts {
            Some(counts) if counts.complete => counts.total,
            _ => {
                // A first page that holds every match already knows the total: skip the count.
                let total = if start.is_none() && !more {
                    keys.len()
                } else {
                    self.count(owner, query, now).await?
                };
                // Counts that agree with the index hold every task of the owner (none from
                // before they were kept is left): read them from now on. Not on an empty
                // owner: while a deploy rolls, a function still on older code may be creating
                // the owner's first tasks uncounted.
                if total > 0 && counts.is_some_and(|counts| counts.total == total) {
                    self.mark_counts_complete(owner).await?;
                }
                total
            }
        };
        let task_ids: Vec<String> = keys
            .iter()
            .map(|k| items::task_id_of_gsi_sk(k).to_owned())
            .collect();
        let mut heads = self.batch_heads(&task_ids).await?;
        let mut visible = Vec::with_capacity(task_ids.len());
        for id in &task_ids {
            // A head that expired or vanished since the index was read is left out.
            if let Some(item) = heads.remove(id).filter(|i| items::visible(i, owner, now)) {
                visible.push((id.clone(), item));
            }
        }
        let tasks = self.tasks_of(&visible).await?;
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
        let mut round = 0u32;
        let mut limit = |found: usize| {
            round += 1;
            if filtered {
                FILTERED_ROUND.saturating_mul(1_i32 << (round - 1).min(10))
            } else {
                // One more than the page tells whether a next page exists.
                i32::try_from(want + 1 - found).unwrap_or(i32::MAX)
            }
        };
        let request = self
            .index_query(owner, query, now, false)
            .set_exclusive_start_key(start.map(|gsk| self.index_start_key(owner, gsk)))
            .limit(limit(0));
        let mut found = Vec::new();
        let mut more = false;
        self.query_pages(request, ReadCost::Eventual, |page| {
            for item in page.items() {
                found.push(items::get_s(item, attr::GSI_SK)?.to_owned());
                if found.len() > want {
                    found.truncate(want);
                    more = true;
                    return Ok(Next::Done);
                }
            }
            Ok(Next::More(Some(limit(found.len()))))
        })
        .await?;
        Ok((found, more))
    }

    /// A query on the by-owner index with `query`'s filters and the expiry check, newest
    /// first. `count` asks for the number of matches only.
    fn index_query(
        &self,
        owner: &Owner,
        query: &TaskQuery,
        now: i64,
        count: bool,
    ) -> QueryFluentBuilder {
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
            .scan_index_forward(false);
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
        let request = self.index_query(owner, query, now, true);
        self.query_pages(request, ReadCost::Eventual, |page| {
            total += usize::try_from(page.count()).unwrap_or(0);
            Ok(Next::More(None))
        })
        .await?;
        Ok(total)
    }
    /// The heads of `task_ids` (at most 100), eventually consistent, by task id.
    async fn batch_heads(&self, task_ids: &[String]) -> Result<HashMap<String, Item>, StoreError> {
        let keys = task_ids
            .iter()
            .map(|id| items::key(items::task_pk(id), items::HEAD_SK))
            .collect::<Vec<_>>();
        let mut heads = HashMap::new();
        for item in self.batch_get(keys, false).await? {
            let pk = items::get_s(&item, attr::PK)?;
            heads.insert(pk.trim_start_matches("T#").to_owned(), item);
        }
        Ok(heads)
    }

    /// The tasks of `heads` (by task id), in that order; a split head's with its body
    /// ([`crate::body`]), read in one more batch (and again, consistently, for a body written
    /// so recently that the eventually consistent read missed it).
    async fn tasks_of(&self, heads: &[(String, Item)]) -> Result<Vec<Task>, StoreError> {
        let body_key = |task_id: &str, head: &Item| -> Result<Option<Item>, StoreError> {
            Ok(body::body_ref(head)?.map(|r| items::key(items::task_pk(task_id), r.sk)))
        };
        let mut wanted = Vec::new();
        for (task_id, head) in heads {
            wanted.extend(body_key(task_id, head)?);
        }
        let mut bodies: HashMap<(String, String), Item> = HashMap::new();
        for consistent in [false, true] {
            let missing: Vec<Item> = wanted
                .iter()
                .filter(|k| !bodies.contains_key(&pk_sk(k).unwrap_or_default()))
                .cloned()
                .collect();
            for item in self.batch_get(missing, consistent).await? {
                bodies.insert(pk_sk(&item)?, item);
            }
        }
        let mut tasks = Vec::with_capacity(heads.len());
        for (task_id, head) in heads {
            let task = match body_key(task_id, head)? {
                None => items::task_from_item(head)?,
                Some(key) => {
                    let body = bodies
                        .get(&pk_sk(&key)?)
                        .ok_or_else(|| body::missing(task_id))?;
                    body::task_of(head, body)?
                }
            };
            tasks.push(task);
        }
        Ok(tasks)
    }

    /// The items of `keys` (at most 100), in no particular order.
    async fn batch_get(&self, keys: Vec<Item>, consistent: bool) -> Result<Vec<Item>, StoreError> {
        let mut found = Vec::new();
        if keys.is_empty() {
            return Ok(found);
        }
        let mut request = Some(
            KeysAndAttributes::builder()
                .set_keys(Some(keys))
                // The index the ids came from is eventually consistent already: a strongly
                // consistent read of the heads would cost twice as much for no stronger answer.
                .consistent_read(consistent)
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
            let share = if consistent { 1.0 } else { 0.5 };
            let rru = got
                .iter()
                .map(|i| share * read_units(items::item_size(i)))
                .sum();
            let reported = out
                .consumed_capacity()
                .iter()
                .map(|c| capacity(Some(c)))
                .sum();
            self.record("BatchGetItem", reported, 0.0, rru);
            found.extend(got.iter().cloned());
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
        Ok(found)
    }
}

/// An item's key as (partition, sort).
fn pk_sk(item: &Item) -> Result<(String, String), StoreError> {
    Ok((
        items::get_s(item, attr::PK)?.to_owned(),
        items::get_s(item, attr::SK)?.to_owned(),
    ))
}
