//! ListTasks: the owner's tasks on the by-owner index (one partition per state) or, filtered by
//! context, on the by-context index, newest status first, then their heads in one batch read;
//! the total from the owner's counts ([`super::counts`]), or a count of the matches where no
//! count holds them (a context, a timestamp, counts not complete yet) and the page does not
//! already tell it.
//!
//! Every partition a page may come from is read at once, each from the cursor on, and the
//! entries merged: a page is two round trips (the partitions, then the heads) at any number
//! of tasks. What each filter reads:
//! - none: every state's partition (and the bare owner's, where heads written before the
//!   index was split stay until their next append or expiry);
//! - `status`: that state's partition (and the bare owner's, filtered);
//! - `contextId`: the context's partition of the by-context index, the task the context was
//!   made for if the server made it ([`a2a_core::context_origin`]; such a task has no entry),
//!   and the bare owner's partition, filtered;
//! - `statusTimestampAfter`: a key condition on every partition read.

use std::collections::HashMap;

use a2a_core::{Owner, StoreError, TaskPage, TaskQuery};
use a2a_protocol::{Task, TaskState};
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{KeysAndAttributes, Select};
use futures::future::try_join_all;

use super::counts::OwnerCounts;
use super::table::{backend, build_error, capacity, names, read_units, values, Next, ReadCost};
use super::{DynamoTaskStore, FIRST_POLL, MAX_POLL};
use crate::body;
use crate::items::{self, attr, n, s, Item};
use crate::now_ms;
use crate::resources::{BY_CONTEXT_INDEX, BY_OWNER_INDEX};

/// Evaluated items in the first query round of a partition whose entries a filter may mostly
/// drop (the bare owner's, by context or state; a context's, by state): index entries are
/// ~150 bytes, so it reads at most a few read units. Each further round evaluates twice as
/// many (DynamoDB stops a page at 1 MB anyway).
const FILTERED_ROUND: i32 = 200;

/// The total of `query`'s matches that `counts` hold, if they hold them all (only asked for a
/// query without a context or timestamp filter).
fn kept_total(counts: &OwnerCounts, query: &TaskQuery) -> Option<usize> {
    match query.state {
        None => counts.complete.then_some(counts.total),
        Some(state) => counts.in_state(state),
    }
}

/// One partition of an index that a ListTasks page may come from, and the filters its entries
/// still need (beyond the expiry every read checks).
#[derive(Debug)]
struct Source {
    index: &'static str,
    /// The index's partition key attribute.
    key: &'static str,
    partition: String,
    context: Option<String>,
    state: Option<TaskState>,
}

impl Source {
    fn owner_partition(partition: String) -> Self {
        Self {
            index: BY_OWNER_INDEX,
            key: attr::GSI_PK,
            partition,
            context: None,
            state: None,
        }
    }

    /// Whether a filter may drop most of what the partition holds.
    fn sparse(&self) -> bool {
        self.context.is_some() || self.state.is_some()
    }
}

/// The partitions `query` reads for `owner`.
fn sources(owner: &Owner, query: &TaskQuery) -> Vec<Source> {
    let owner = owner.as_str();
    // Heads written before the index was split, and tasks without a state.
    let bare = || Source {
        context: query.context_id.clone(),
        state: query.state,
        ..Source::owner_partition(owner.to_owned())
    };
    match (&query.context_id, query.state) {
        (Some(context), state) => vec![
            Source {
                index: BY_CONTEXT_INDEX,
                key: attr::CONTEXT_PK,
                partition: items::context_partition(owner, context),
                context: None,
                state,
            },
            bare(),
        ],
        (None, Some(state)) => vec![
            Source::owner_partition(items::state_partition(owner, state.as_str())),
            bare(),
        ],
        (None, None) => items::owner_partitions(owner)
            .into_iter()
            .map(Source::owner_partition)
            .collect(),
    }
}

impl DynamoTaskStore {
    /// `TaskLogStore::list_tasks`: a page of the owner's tasks, newest status first.
    pub(super) async fn list_heads(
        &self,
        owner: &Owner,
        query: &TaskQuery,
    ) -> Result<TaskPage, StoreError> {
        let before = if query.page_token.is_empty() {
            None
        } else {
            Some(items::decode_cursor(&query.page_token)?)
        };
        // Validated upstream; a zero would only make the page useless.
        let page_size = query.page_size.clamp(1, 100);
        let now = now_ms();
        let sources = sources(owner, query);
        // Without a context or timestamp filter the total is in the owner's counts, read beside
        // the page's keys: two round trips in all (this, then the heads).
        let counted = query.context_id.is_none() && query.status_timestamp_after.is_none();
        let (keys, origin, counts) = tokio::join!(
            try_join_all(sources.iter().map(|source| {
                self.list_keys(source, query, before.as_deref(), page_size, now)
            })),
            self.context_origin(owner, query, now),
            async {
                if counted {
                    self.read_counts(owner, now).await.map(Some)
                } else {
                    Ok(None)
                }
            }
        );
        let (keys, origin, counts) = (keys?, origin?, counts?);
        let mut more = keys.iter().any(|(_, more)| *more);
        let mut merged: Vec<String> = keys.into_iter().flat_map(|(keys, _)| keys).collect();
        let mut known = HashMap::new();
        if let Some((gsk, item)) = &origin {
            if before.as_deref().is_none_or(|b| gsk.as_str() < b) {
                merged.push(gsk.clone());
                known.insert(items::task_id_of_gsi_sk(gsk).to_owned(), item.clone());
            }
        }
        // Newest first across the partitions; a task is in one partition, but a head that moved
        // between two reads could show in both.
        merged.sort_unstable_by(|a, b| b.cmp(a));
        merged.dedup();
        if merged.len() > page_size {
            merged.truncate(page_size);
            more = true;
        }
        let total_size = if before.is_none() && !more {
            // A first page that holds every match already knows the total.
            self.mark_if_agrees(owner, query, counts.as_ref(), merged.len())
                .await?;
            merged.len()
        } else {
            self.total_size(
                owner,
                query,
                &sources,
                counts.as_ref(),
                origin.is_some(),
                now,
            )
            .await?
        };
        let task_ids: Vec<String> = merged
            .iter()
            .map(|k| items::task_id_of_gsi_sk(k).to_owned())
            .collect();
        let unread: Vec<String> = task_ids
            .iter()
            .filter(|id| !known.contains_key(*id))
            .cloned()
            .collect();
        let mut heads = self.batch_heads(&unread).await?;
        heads.extend(known);
        let mut visible = Vec::with_capacity(task_ids.len());
        for id in &task_ids {
            // A head that expired or vanished since the index was read is left out.
            if let Some(item) = heads.remove(id).filter(|i| items::visible(i, owner, now)) {
                visible.push((id.clone(), item));
            }
        }
        let tasks = self.tasks_of(&visible).await?;
        let next_page_token = match merged.last() {
            Some(last) if more => items::encode_cursor(last),
            _ => String::new(),
        };
        Ok(TaskPage {
            tasks,
            next_page_token,
            total_size,
        })
    }

    /// How many of the owner's tasks match `query`: from the counts where one holds them all,
    /// otherwise counted on `sources` (plus the context's origin task, `origin`), which then
    /// marks a count that agrees as complete.
    async fn total_size(
        &self,
        owner: &Owner,
        query: &TaskQuery,
        sources: &[Source],
        counts: Option<&OwnerCounts>,
        origin: bool,
        now: i64,
    ) -> Result<usize, StoreError> {
        if let Some(total) = counts.and_then(|counts| kept_total(counts, query)) {
            return Ok(total);
        }
        let counted = try_join_all(sources.iter().map(|source| self.count(source, query, now)))
            .await?
            .into_iter()
            .sum::<usize>()
            + usize::from(origin);
        self.mark_if_agrees(owner, query, counts, counted).await?;
        Ok(counted)
    }

    /// Marks the owner's count for `query` (all tasks, or a state's) complete if it is not yet
    /// and agrees with `counted`, the matches on the index. Counts that agree hold every task
    /// they should (none from before they were kept is left): they are read from then on. Not
    /// on an empty owner: while a deploy rolls, a function still on older code may be creating
    /// the owner's first tasks uncounted.
    async fn mark_if_agrees(
        &self,
        owner: &Owner,
        query: &TaskQuery,
        counts: Option<&OwnerCounts>,
        counted: usize,
    ) -> Result<(), StoreError> {
        let Some(counts) = counts.filter(|c| counted > 0 && kept_total(c, query).is_none()) else {
            return Ok(());
        };
        match query.state {
            None if counts.total == counted => self.mark_counts_complete(owner, None).await,
            Some(state) if counts.state_total(state) == counted => {
                self.mark_counts_complete(owner, Some(state)).await
            }
            _ => Ok(()),
        }
    }

    /// The task the server made `query`'s context for, with its index sort key, if it is the
    /// owner's, live and matches the query (it has no by-context entry: the context id names
    /// it). One eventually consistent read of its head.
    async fn context_origin(
        &self,
        owner: &Owner,
        query: &TaskQuery,
        now: i64,
    ) -> Result<Option<(String, Item)>, StoreError> {
        let Some(context) = &query.context_id else {
            return Ok(None);
        };
        let Some(task_id) = a2a_core::context_origin(context) else {
            return Ok(None);
        };
        let Some(head) = self
            .batch_heads(std::slice::from_ref(&task_id))
            .await?
            .remove(&task_id)
        else {
            return Ok(None);
        };
        let matches = items::visible(&head, owner, now)
            && items::get_s(&head, attr::CONTEXT).is_ok_and(|c| c == context)
            && query.state.is_none_or(|state| {
                items::get_s(&head, attr::STATE).is_ok_and(|s| s == state.as_str())
            });
        let gsk = items::get_s(&head, attr::GSI_SK)?.to_owned();
        let recent = query
            .status_timestamp_after
            .is_none_or(|after| gsk >= items::ts_prefix(after.millis()));
        Ok((matches && recent).then_some((gsk, head)))
    }

    /// The entries of `source` matching `query` after the cursor `before`, newest first: up to
    /// `want` index sort keys, and whether more match.
    async fn list_keys(
        &self,
        source: &Source,
        query: &TaskQuery,
        before: Option<&str>,
        want: usize,
        now: i64,
    ) -> Result<(Vec<String>, bool), StoreError> {
        let sparse = source.sparse();
        let mut round = 0u32;
        let mut limit = |found: usize| {
            round += 1;
            if sparse {
                FILTERED_ROUND.saturating_mul(1_i32 << (round - 1).min(10))
            } else {
                // One more than the page tells whether a next page exists.
                i32::try_from(want + 1 - found).unwrap_or(i32::MAX)
            }
        };
        let request = self
            .index_query(source, query, before, now, false)
            .limit(limit(0));
        let mut found = Vec::new();
        let mut more = false;
        self.query_pages(request, ReadCost::Eventual, |page| {
            for item in page.items() {
                let gsk = items::get_s(item, attr::GSI_SK)?;
                // `BETWEEN` includes the cursor's own entry: it was on the page before.
                if Some(gsk) == before {
                    continue;
                }
                found.push(gsk.to_owned());
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

    /// A query of `source` with `query`'s filters, the expiry check and the cursor `before`,
    /// newest first. `count` asks for the number of matches only.
    fn index_query(
        &self,
        source: &Source,
        query: &TaskQuery,
        before: Option<&str>,
        now: i64,
        count: bool,
    ) -> QueryFluentBuilder {
        let mut key_condition = format!("#{} = :partition", source.key);
        let mut filter = "#exp > :now".to_owned();
        let mut used = vec![source.key, "exp"];
        let mut vals = values([(":partition", s(&source.partition)), (":now", n(now))]);
        // The bare timestamp sorts before every key with that timestamp: "at or after".
        let after = query
            .status_timestamp_after
            .map(|after| s(items::ts_prefix(after.millis())));
        match (after, before) {
            (Some(after), Some(before)) => {
                key_condition.push_str(" AND #gsk BETWEEN :after AND :before");
                vals.insert(":after".into(), after);
                vals.insert(":before".into(), s(before));
            }
            (Some(after), None) => {
                key_condition.push_str(" AND #gsk >= :after");
                vals.insert(":after".into(), after);
            }
            (None, Some(before)) => {
                key_condition.push_str(" AND #gsk < :before");
                vals.insert(":before".into(), s(before));
            }
            (None, None) => {}
        }
        if query.status_timestamp_after.is_some() || before.is_some() {
            used.push("gsk");
        }
        if let Some(context_id) = &source.context {
            filter.push_str(" AND #ctx = :ctx");
            used.push("ctx");
            vals.insert(":ctx".into(), s(context_id));
        }
        if let Some(state) = source.state {
            filter.push_str(" AND #st = :st");
            used.push("st");
            vals.insert(":st".into(), s(state.as_str()));
        }
        let builder = self
            .client
            .query()
            .table_name(&*self.table)
            .index_name(source.index)
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

    /// How many entries of `source` match `query`: a `Select=COUNT` query, which reads (and
    /// bills) every matching entry, ~150 bytes each.
    async fn count(
        &self,
        source: &Source,
        query: &TaskQuery,
        now: i64,
    ) -> Result<usize, StoreError> {
        let mut total = 0usize;
        let request = self.index_query(source, query, None, now, true);
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
