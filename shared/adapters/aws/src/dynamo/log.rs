//! The task event log: the head item carries the latest events beside the task, and every
//! create or append is one conditional write of that one item (create: the id is free; append:
//! the version, owner and expiry are as read). Events the head stops carrying move, first, into
//! archive items that are written once and never change. See [`crate::items`].

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{
    LoggedEvent, Owner, PushConfigStore, SendRecord, StoreError, StoredReply, StoredTask,
    TaskLogStore, TaskPage, TaskQuery,
};
use a2a_protocol::TaskPushNotificationConfig;
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use super::counts::Counted;
use super::heads::{context_entry_size, index_entry_size, write_id, written_by, HeadSummary};
use super::table::{backend, capacity, names, read_units, values, write_units, Next, ReadCost};
use super::{DynamoTaskStore, FIRST_POLL, MAX_POLL};
use crate::body::{self, BodyRef};
use crate::items::{self, attr, n, s, Item};
use crate::now_ms;

/// The most events a head carries, whatever their size: bounds the work of rebuilding a task
/// from its events and of reading them back.
const MAX_CARRIED: usize = 64;

impl DynamoTaskStore {
    /// A create: one conditional `PutItem` of the head, which carries the create's events
    /// (and the ids of `configs`, the task's first push configs).
    async fn create_head(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
        configs: &[TaskPushNotificationConfig],
    ) -> Result<(), StoreError> {
        items::check_seqs(head, 0, events)?;
        let mut item = items::head_item(head, events, 0)?;
        if !configs.is_empty() {
            item.insert(
                attr::CONFIG_IDS.to_owned(),
                AttributeValue::Ss(configs.iter().map(|c| c.id.clone()).collect()),
            );
            item.insert(attr::PUSH_FLAG.to_owned(), s("1"));
        }
        // This create's own mark: its retry (the SDK's, after an attempt whose answer was lost)
        // tells the head it wrote from a concurrent copy's, made in the same millisecond.
        item.insert(attr::WRITE_ID.to_owned(), n(write_id()));
        items::refit_packs(&mut item, 0)?;
        items::check_size(&item, || format!("task {}", head.task.id))?;
        let ours = written_by(&item);
        let mut index_wru = write_units(index_entry_size(&item));
        if item.contains_key(attr::CONTEXT_PK) {
            index_wru += write_units(context_entry_size(&item));
        }
        let summary = HeadSummary::of_written(&item, events.to_vec())?;
        // The count is written beside the head, not after it: the send waits for one round
        // trip, not two. A create its condition refused takes its count back.
        let (owner, task_id) = (&head.owner, &head.task.id);
        let counted_as = Counted::of(head);
        let (created, counted) = tokio::join!(
            self.put_new_indexed(item, index_wru),
            self.count_task(owner, task_id, None, counted_as)
        );
        // A refused condition may be this very create, landed on an attempt whose answer was
        // lost: the task is ours, not a concurrent copy's (taken for one, a queued job would
        // never be queued, and a stream would stop and leave its task WORKING).
        // A create that failed through the SDK's retries may have landed all the same: what the
        // head holds says which, and so whether its count stays.
        let created = match created {
            Ok(true) => true,
            Ok(false) => self.create_landed(task_id, &ours).await?,
            Err(err) => match self.create_landed_late(task_id, &ours).await {
                Ok(true) => true,
                Ok(false) => {
                    if counted.is_ok() {
                        self.uncount_task(owner, task_id, counted_as).await;
                    }
                    return Err(err);
                }
                Err(_) => return Err(err),
            },
        };
        if !created {
            if counted.is_ok() {
                self.uncount_task(owner, task_id, counted_as).await;
            }
            return Err(StoreError::Conflict);
        }
        self.heads.put(task_id, summary);
        if let Err(err) = counted {
            tracing::warn!(task_id, error = %err, "the new task is missing from its owner's ListTasks count until it expires");
        }
        Ok(())
    }

    /// Whether the stored head of `head`'s task is `head`'s version and carries `events`, each
    /// as made (its sequence number, moment and content): this very append, made before.
    async fn already_appended(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
    ) -> Result<bool, StoreError> {
        let Some(stored) = self.stored_summary(&head.task.id).await? else {
            return Ok(false);
        };
        Ok(!events.is_empty()
            && stored.version == head.version
            && stored.owner == head.owner.as_str()
            && events.iter().all(|e| stored.carried.contains(e)))
    }

    /// The summary of the stored head of `task_id` (a consistent read); `None` when there is
    /// none, or a reply record or a head of an older layout is there instead.
    async fn stored_summary(&self, task_id: &str) -> Result<Option<HeadSummary>, StoreError> {
        let Some(item) = self
            .get(items::key(items::task_pk(task_id), items::HEAD_SK))
            .await?
        else {
            return Ok(None);
        };
        if item.contains_key(attr::REPLY) || !item.contains_key(attr::VERSION) {
            return Ok(None);
        }
        HeadSummary::of_item(&item).map(Some)
    }

    /// The summary of the head of `task_id` at `expected`, from the cache or read.
    /// `None` when the stored head is not that one (a conflict, whatever it is instead).
    async fn summary_at(
        &self,
        head: &StoredTask,
        expected: u64,
    ) -> Result<Option<Arc<HeadSummary>>, StoreError> {
        let task_id = &head.task.id;
        let matches = |s: &HeadSummary| s.version == expected && s.owner == head.owner.as_str();
        if let Some(summary) = self.heads.get(task_id).filter(|s| matches(s)) {
            return Ok(Some(summary));
        }
        let Some(summary) = self.stored_summary(task_id).await? else {
            return Ok(None);
        };
        if !matches(&summary) || summary.expires <= now_ms() {
            return Ok(None);
        }
        let summary = Arc::new(summary);
        self.heads.put(task_id, (*summary).clone());
        Ok(Some(summary))
    }

    /// The head item of an append to a split head ([`crate::body`]), and the events it
    /// carries: the head alone while its events fit [`body::carry_budget`], else after a
    /// checkpoint. `None` for a head that is not split.
    async fn append_split(
        &self,
        head: &StoredTask,
        old: &HeadSummary,
        events: &[LoggedEvent],
        carried: &[LoggedEvent],
        expected_version: u64,
    ) -> Result<Option<(Item, Vec<LoggedEvent>)>, StoreError> {
        let Some(reference) = &old.body else {
            return Ok(None);
        };
        // The head carries the events after its body's version (a checkpoint's head also
        // carries those it folded in, for the stream's fan-out; the next append drops them,
        // into their archive). The body must live as long as the head that names it.
        let after: Vec<LoggedEvent> = carried
            .iter()
            .filter(|e| e.seq > reference.version)
            .cloned()
            .collect();
        if head.expires_at.millis() == old.expires && after.len() <= MAX_CARRIED {
            let item = body::split_head_item(head, &after, expected_version, reference)?;
            if body::carried_size(&item) <= body::carry_budget(reference.size) {
                if old.carried.iter().any(|e| e.seq <= reference.version) {
                    self.archive(head, &old.carried).await?;
                }
                return Ok(Some((item, after)));
            }
        }
        self.checkpoint(head, old, events, expected_version)
            .await
            .map(Some)
    }

    /// Writes `head`'s task at its new version into a new body item, moves the events the old
    /// head carried into their archive, and returns the split head over it, carrying `events`.
    /// A body written by an append that then loses the race for the head is named by no head.
    async fn checkpoint(
        &self,
        head: &StoredTask,
        old: &HeadSummary,
        events: &[LoggedEvent],
        expected_version: u64,
    ) -> Result<(Item, Vec<LoggedEvent>), StoreError> {
        let sk = body::body_sk(head.version);
        let (item, size) = body::body_item(head, &sk)?;
        items::check_size(&item, || format!("task {}", head.task.id))?;
        // Its key is new (a nonce): the condition only keeps a mistake from overwriting.
        self.put_new(item).await?;
        if !old.carried.is_empty() {
            self.archive(head, &old.carried).await?;
        }
        let reference = BodyRef {
            sk,
            version: head.version,
            size,
        };
        let item = body::split_head_item(head, events, expected_version, &reference)?;
        Ok((item, events.to_vec()))
    }

    /// Moves `events` (which the head at hand carries, so they are in the log for good) into
    /// their archive item. Written at most once: a copy already there (an append that
    /// archived them and then lost its write) is the same events, and is left as it is.
    async fn archive(&self, head: &StoredTask, events: &[LoggedEvent]) -> Result<(), StoreError> {
        let item = items::archive_item(&head.owner, &head.task.id, head.expires_at, events)?;
        items::check_size(&item, || format!("events of task {}", head.task.id))?;
        self.put_new(item).await?;
        Ok(())
    }

    /// Adds (`add`) or removes a push config's id on the task's head, where the stream's
    /// fan-out reads them. `nv` is set to the version: this write adds no event. A head that
    /// is not there (the task is gone or not the owner's) is left alone.
    pub(super) async fn mark_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
        add: bool,
    ) -> Result<(), StoreError> {
        let ids = AttributeValue::Ss(vec![config_id.to_owned()]);
        let update = if add {
            "ADD #pcs :ids SET #pf = :one, #nv = #v"
        } else {
            "DELETE #pcs :ids SET #nv = #v"
        };
        let mut vals = values([
            (":ids", ids),
            (":own", s(owner.as_str())),
            (":now", n(now_ms())),
        ]);
        if add {
            vals.insert(":one".into(), s("1"));
        }
        let mut list = vec!["pcs", "nv", "v", "own", "exp"];
        if add {
            list.push("pf");
        }
        let size = self.heads.get(task_id).map_or(1, |h| h.size);
        let result = self
            .client
            .update_item()
            .table_name(&*self.table)
            .set_key(Some(items::key(items::task_pk(task_id), items::HEAD_SK)))
            .update_expression(update)
            .condition_expression("attribute_exists(#v) AND #own = :own AND #exp > :now")
            .set_expression_attribute_names(Some(names(&list)))
            .set_expression_attribute_values(Some(vals))
            .return_values(ReturnValue::UpdatedNew)
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        let Some(out) = self.conditional(
            "UpdateItem",
            result,
            |out| out.consumed_capacity(),
            |_| write_units(size),
            write_units(size),
        )?
        else {
            return Ok(());
        };
        let left = out
            .attributes()
            .is_some_and(|a| a.contains_key(attr::CONFIG_IDS));
        if add || left {
            return Ok(());
        }
        // The last config went: without the flag the stream's filter no longer hands this
        // task's writes to the fan-out.
        let result = self
            .client
            .update_item()
            .table_name(&*self.table)
            .set_key(Some(items::key(items::task_pk(task_id), items::HEAD_SK)))
            .update_expression("REMOVE #pf")
            .condition_expression("attribute_exists(#v) AND attribute_not_exists(#pcs)")
            .set_expression_attribute_names(Some(names(&["pf", "v", "pcs"])))
            .set_return_consumed_capacity(self.return_capacity())
            .send()
            .await;
        self.conditional(
            "UpdateItem",
            result,
            |out| out.consumed_capacity(),
            |_| write_units(size),
            write_units(size),
        )?;
        Ok(())
    }
}

#[async_trait]
impl TaskLogStore for DynamoTaskStore {
    /// One conditional `PutItem` of the head, which carries the create's events.
    async fn create_task(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        self.create_head(head, events, &[]).await
    }

    /// [`TaskLogStore::create_task_with_push_configs`]: the config items first, then the
    /// head naming them. A crash in between leaves configs of a task that does not exist, which
    /// nothing reads (and which expire with the task's would-be expiry).
    async fn create_task_with_push_configs(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
        configs: &[TaskPushNotificationConfig],
    ) -> Result<(), StoreError> {
        for config in configs {
            self.put_config_item(&head.owner, config, head.expires_at)
                .await?;
        }
        self.create_head(head, events, configs).await
    }

    /// [`TaskLogStore::append_events`]: one `UpdateItem` of the head, conditional on the
    /// version, owner and expiry, carrying the new events; when carrying the earlier ones too
    /// would cost more write units, they are archived first (one `PutItem`).
    async fn append_events(
        &self,
        head: &StoredTask,
        expected_version: u64,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        items::check_seqs(head, expected_version, events)?;
        let task_id = &head.task.id;
        let Some(old) = self.summary_at(head, expected_version).await? else {
            // The same append made again (its first try's answer was lost) finds its own
            // events on the head: done, not a conflict.
            return if self.already_appended(head, events).await? {
                Ok(())
            } else {
                Err(StoreError::Conflict)
            };
        };
        let label = || format!("task {task_id}");
        let carried: Vec<LoggedEvent> = old.carried.iter().chain(events).cloned().collect();
        let (mut item, carried) = match self
            .append_split(head, &old, events, &carried, expected_version)
            .await?
        {
            Some(split) => split,
            None => {
                let carrying = items::head_item(head, &carried, expected_version)?;
                let fresh = items::head_item(head, events, expected_version)?;
                if items::item_size(&fresh) > body::SPLIT_BYTES {
                    // The task has grown large: its body moves into an item of its own.
                    self.checkpoint(head, &old, events, expected_version)
                        .await?
                } else {
                    // Carry the earlier events while that costs no more than not carrying
                    // them; archive them once it would (or once there are many).
                    let carry = old.carried.is_empty()
                        || (carried.len() <= MAX_CARRIED
                            && items::item_size(&carrying) <= items::MAX_ITEM_BYTES
                            && write_units(items::item_size(&carrying))
                                <= write_units(items::item_size(&fresh)));
                    if carry {
                        (carrying, carried)
                    } else {
                        self.archive(head, &old.carried).await?;
                        (fresh, events.to_vec())
                    }
                }
            }
        };
        // This write's own mark: a writer whose condition failed tells its own write (landed
        // on an attempt whose answer was lost) from another writer's with the same events
        // (two duplicate deliveries in the same millisecond), which it must not count again.
        item.insert(attr::WRITE_ID.to_owned(), n(write_id()));
        items::refit_packs(&mut item, old.kept_size)?;
        items::check_size(&item, label)?;
        let new_size = items::item_size(&item);

        // Rewrite only what changed: an attribute of the index entry written again with the
        // same value would still be an update of that entry.
        let ts = items::status_ts_ms(&head.task);
        let state = head.task.status.state.as_str();
        let exp = head.expires_at.millis();
        let mut set = vec![
            attr::VERSION,
            attr::PREV_VERSION,
            attr::HEAD_EVENTS,
            attr::WRITE_ID,
        ];
        let mut remove = vec![attr::TASK];
        if item.contains_key(attr::TASK_BODY) {
            set.push(attr::TASK_BODY);
        } else {
            remove.push(attr::TASK_BODY);
        }
        if item.contains_key(attr::BODY_KEY) {
            set.extend([attr::BODY_KEY, attr::BODY_VERSION, attr::BODY_SIZE]);
        }
        // A new state moves the task to that state's partition of the by-owner index (a head
        // written before that index was split moves at its first append).
        let sort_key_moves = ts != old.status_ts;
        let partition_moves = items::get_s(&item, attr::GSI_PK)? != old.partition;
        if sort_key_moves {
            set.extend([attr::STATUS_TS, attr::GSI_SK]);
        }
        if partition_moves {
            set.push(attr::GSI_PK);
        }
        if state != old.state {
            set.push(attr::STATE);
        }
        if exp != old.expires {
            set.extend([attr::EXPIRES, attr::TTL]);
        }
        let projected_change = state != old.state || exp != old.expires;
        let mut index_wru = if sort_key_moves || partition_moves {
            2.0
        } else if projected_change {
            1.0
        } else {
            0.0
        } * write_units(index_entry_size(&item));
        // A task of a context the index knows keeps its entry there in step; a head written
        // before that index gets its entry at its first append.
        if item.contains_key(attr::CONTEXT_PK) {
            let entry_writes = if !old.in_context_index {
                set.push(attr::CONTEXT_PK);
                1.0
            } else if sort_key_moves {
                2.0
            } else if projected_change {
                1.0
            } else {
                0.0
            };
            index_wru += entry_writes * write_units(context_entry_size(&item));
        }

        // The first append to a head of an older layout puts the ids of the task's push configs
        // on it (ADD: a union, so a config put meanwhile is kept), so that its stream records
        // fan out to them from now on. Once per such task.
        let mut migrated = Vec::new();
        if old.legacy {
            migrated = self
                .list_push_configs(&head.owner, task_id)
                .await?
                .into_iter()
                .map(|c| c.id)
                .collect();
        }
        let mut expression_values: HashMap<String, AttributeValue> = set
            .iter()
            .map(|name| (format!(":{name}"), item[*name].clone()))
            .collect();
        let now = now_ms();
        expression_values.extend(values([
            (":expected", n(expected_version)),
            (":own", s(head.owner.as_str())),
            (":now", n(now)),
        ]));
        let mut assignments: Vec<String> = set
            .iter()
            .map(|name| format!("#{name} = :{name}"))
            .collect();
        if !migrated.is_empty() {
            assignments.push(format!("#{} = :pf", attr::PUSH_FLAG));
            expression_values.insert(":pf".into(), s("1"));
            expression_values.insert(":pcs".into(), AttributeValue::Ss(migrated));
        }
        let mut update = format!("SET {}", assignments.join(", "));
        update.push_str(&format!(
            " REMOVE {}",
            remove
                .iter()
                .map(|name| format!("#{name}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if expression_values.contains_key(":pcs") {
            update.push_str(&format!(" ADD #{} :pcs", attr::CONFIG_IDS));
        }
        let mut all_names: Vec<&str> = set.iter().chain(&remove).copied().collect();
        all_names.extend([attr::OWNER]);
        if expression_values.contains_key(":pcs") {
            all_names.extend([attr::PUSH_FLAG, attr::CONFIG_IDS]);
        }
        if !all_names.contains(&attr::EXPIRES) {
            all_names.push(attr::EXPIRES);
        }
        let wru = write_units(old.size.max(new_size));
        let update = self
            .client
            .update_item()
            .table_name(&*self.table)
            .set_key(Some(items::key(items::task_pk(task_id), items::HEAD_SK)))
            .update_expression(update)
            .condition_expression("#v = :expected AND #own = :own AND #exp > :now")
            .set_expression_attribute_names(Some(names(&all_names)))
            .set_expression_attribute_values(Some(expression_values))
            .set_return_consumed_capacity(self.return_capacity())
            .send();
        // A task whose expiry or state moves moves in its owner's counts, in a write sent
        // beside the head's (the append waits for one round trip, not two), taken back if the
        // head's write did not land. A count that failed leaves a total off by one until the
        // older expiry passes, not the task.
        let (before, after) = (
            Counted {
                expires: old.expires,
                state: &old.state,
            },
            Counted::of(head),
        );
        let (result, counted) = tokio::join!(
            update,
            self.count_task(&head.owner, task_id, Some(before), after)
        );
        if let Err(err) = &counted {
            tracing::warn!(task_id, error = %err, "a task's ListTasks count did not move with it");
        }
        let landed = match self.conditional(
            "UpdateItem",
            result,
            |out| out.consumed_capacity(),
            |_| wru + index_wru,
            wru,
        ) {
            Ok(Some(_)) => Ok(true),
            Ok(None) => self.head_holds(task_id, &written_by(&item)).await,
            Err(err) => Err(err),
        };
        if !matches!(landed, Ok(true)) {
            if counted.is_ok() {
                if let Err(err) = self
                    .count_task(&head.owner, task_id, Some(after), before)
                    .await
                {
                    tracing::warn!(task_id, error = %err, "a refused append's ListTasks count move stays");
                }
            }
            self.heads.forget(task_id);
            return match landed {
                Ok(_) => Err(StoreError::Conflict),
                Err(err) => Err(err),
            };
        }
        self.heads.put(
            task_id,
            HeadSummary {
                version: head.version,
                owner: head.owner.as_str().to_owned(),
                state: state.to_owned(),
                status_ts: ts,
                expires: exp,
                partition: items::get_s(&item, attr::GSI_PK)?.to_owned(),
                in_context_index: item.contains_key(attr::CONTEXT_PK),
                size: new_size,
                kept_size: old.kept_size,
                carried: Arc::new(carried),
                legacy: false,
                body: body::body_ref(&item)?,
            },
        );
        Ok(())
    }

    /// [`TaskLogStore::load_task`].
    async fn load_task(
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

    /// [`TaskLogStore::load_send`]: one consistent `GetItem` of the head key, which
    /// holds a task's head or a reply record.
    async fn load_send(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<SendRecord>, StoreError> {
        let heads = self.heads.clone();
        let found = self
            .get_visible(owner, task_id, items::HEAD_SK.into(), |item| {
                Ok((item.clone(), body::body_ref(item)?))
            })
            .await?;
        let Some((item, reference)) = found else {
            return Ok(None);
        };
        let record = match reference {
            // A large task's body, in an item of its own (one more consistent GetItem).
            Some(reference) => {
                let body = self
                    .get(items::key(items::task_pk(task_id), reference.sk))
                    .await?
                    .ok_or_else(|| body::missing(task_id))?;
                SendRecord::Task(body::stored_task(&item, &body)?)
            }
            None => items::send_record_from_item(&item)?,
        };
        if matches!(record, SendRecord::Task(_)) {
            heads.remember(task_id, &item);
        }
        Ok(Some(record))
    }

    /// [`TaskLogStore::put_reply`]: a `PutItem` of the head key, conditional (as a
    /// create is) on no live task or reply holding it.
    async fn put_reply(&self, task_id: &str, reply: &StoredReply) -> Result<bool, StoreError> {
        let item = items::reply_item(task_id, reply)?;
        items::check_size(&item, || {
            format!("the reply to a message of task {task_id}")
        })?;
        self.put_new(item).await
    }

    /// [`TaskLogStore::read_events`]: one query of the log's range, `E#<after+1>`
    /// through the head (`H` sorts right after `E#…`): the archives and event items holding
    /// later events, then the head with the events it carries.
    async fn read_events(
        &self,
        owner: &Owner,
        task_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        if limit == 0 || after_seq == u64::MAX {
            return Ok(Vec::new());
        }
        let now = now_ms();
        // A task this process saw end (a stream following the task its own execution just
        // finished) needs no read: its head is the last write its log will take.
        let cached = self.heads.get(task_id);
        if let Some(events) = cached.and_then(|h| h.ended_tail(owner, after_seq, limit, now)) {
            return Ok(events);
        }
        let page_limit = |want: usize| i32::try_from(want.min(1_000)).unwrap_or(1_000);
        let query = self
            .client
            .query()
            .table_name(&*self.table)
            .key_condition_expression("#pk = :pk AND #sk BETWEEN :from AND :to")
            .set_expression_attribute_names(Some(names(&["pk", "sk"])))
            .set_expression_attribute_values(Some(values([
                (":pk", s(items::task_pk(task_id))),
                (":from", s(items::event_sk(after_seq + 1))),
                (":to", s(items::HEAD_SK)),
            ])))
            .consistent_read(true)
            .limit(page_limit(limit));
        // By seq: an archive may repeat events the head still carries (its writer lost the
        // race for the head), and items come in key order, which is the order of their last
        // event. Every event up to an item's key is in that item or an earlier one, so once
        // `limit` events are in, they are the first `limit` after `after_seq`.
        let mut events = BTreeMap::new();
        self.query_pages(query, ReadCost::Consistent, |page| {
            for item in page.items() {
                // Every item of a task's log has the task's owner: one foreign item means the
                // whole log is someone else's.
                if !matches!(item.get(attr::OWNER), Some(AttributeValue::S(o)) if o == owner.as_str())
                {
                    events.clear();
                    return Ok(Next::Done);
                }
                // Each item carries the expiry its task had when it was written. Expiries only
                // grow, so once the head has expired, so has every archive; an archive older
                // than the retention of a long-lived task expires on its own (as DynamoDB's TTL
                // will delete it).
                if !items::visible(item, owner, now) || item.contains_key(attr::REPLY) {
                    continue;
                }
                for event in items::events_of_item(item)? {
                    if event.seq > after_seq {
                        events.entry(event.seq).or_insert(event);
                    }
                }
            }
            Ok(if events.len() < limit {
                Next::More(Some(page_limit(limit - events.len())))
            } else {
                Next::Done
            })
        })
        .await?;
        Ok(events.into_values().take(limit).collect())
    }

    /// Pages of the owner's by-owner index (`list`).
    async fn list_tasks(&self, owner: &Owner, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.list_heads(owner, query).await
    }

    /// [`TaskLogStore::wait_for_append`]: polls the head's version (an eventually
    /// consistent `GetItem` of `v` alone, billed by the head's size: half a read unit up to
    /// 4 KB), backing off from `FIRST_POLL` to `MAX_POLL`.
    async fn wait_for_append(&self, task_id: &str, after_version: u64, max_wait: Duration) {
        if after_version == u64::MAX {
            return;
        }
        let deadline = tokio::time::Instant::now() + max_wait;
        let mut pause = FIRST_POLL;
        loop {
            // Eventually consistent: this is a hint, the caller re-reads the log consistently.
            let result = self
                .client
                .get_item()
                .table_name(&*self.table)
                .set_key(Some(items::key(items::task_pk(task_id), items::HEAD_SK)))
                .projection_expression("#v")
                .set_expression_attribute_names(Some(names(&[attr::VERSION])))
                .consistent_read(false)
                .set_return_consumed_capacity(self.return_capacity())
                .send()
                .await;
            match result {
                Ok(out) => {
                    let size = self.heads.get(task_id).map_or(0, |h| h.size);
                    self.record(
                        "GetItem",
                        capacity(out.consumed_capacity()),
                        0.0,
                        0.5 * read_units(size),
                    );
                    let version = out
                        .item()
                        .and_then(|item| items::get_n::<u64>(item, attr::VERSION).ok());
                    if version.is_some_and(|v| v > after_version) {
                        return;
                    }
                }
                Err(err) => {
                    // Only a hint: the caller re-reads and will meet the error itself.
                    tracing::warn!(error = %backend("GetItem", &err), "wait_for_append could not read the head");
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
