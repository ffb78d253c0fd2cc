//! The single-table item layout: keys, attribute names, item sizes, and the conversions between
//! the core's types and DynamoDB items. `docs/aws-adapters.md` describes the same layout.
//!
//! Every item of a task lives in the task's partition `pk = T#<task id>`:
//!
//! | item        | `sk`               | attributes                                            |
//! |-------------|--------------------|-------------------------------------------------------|
//! | head        | `H`                | `v nv own ctx st ts exp ttl gpk gsk evs` [`tb` \| `bsk bv bsz`] [`pcs pf`] |
//! | body        | `B#<version, 20 digits>#<nonce>` | `own exp ttl tb` (a large task's body) |
//! | archive     | `E#<last seq, 20 digits>` | `own exp ttl evs`                            |
//! | push config | `P#<config id>`    | `own exp ttl cfg`                                     |
//! | delivery    | `D#<config id>`    | `own exp ttl` + the counters of `PushDeliveryState`   |
//! | lease       | `L`                | `holder until ttl`                                    |
//! | execution   | `X`                | `own v exp ttl wid xz due [tok]` (`dynamo::executions`) |
//! | relay gate  | `G`                | `own tok exp ttl` (`dynamo::executions`)              |
//!
//! Attribute names are short on purpose: DynamoDB bills names as part of every item's size.
//!
//! **The head carries the log.** Every create and every append is one conditional write of the
//! head alone: the head carries the latest events (`evs`, deflated JSON) beside the task
//! (`tb`, deflated JSON). A head that fits one write unit with them as they are keeps them in
//! stored deflate blocks instead (the same format, [`pack_into`]): deflating cannot bill
//! less. While `evs` still holds the whole log (it starts at seq 1) there is no `tb`: the
//! task is those events applied in order. When carrying the earlier events would make
//! the head cost more write units than it needs, the writer first moves them into an *archive*
//! item (`E#<seq of the last one>`, written once, never changed) and the head goes on with the
//! new events and `tb`. `nv` is the version before the head's last write, so a stream record of
//! the head tells which events that write added; `pcs` (the ids of the task's push configs) and
//! `pf` (`"1"` while it has any) let the stream's fan-out, and its filter, find the configs.
//!
//! Older layouts are read as they are: heads with the task as JSON text (`task`), heads with
//! `tb` and no `evs`, and one `E#<seq>` item per event (`ev`).

use std::collections::HashMap;

use a2a_core::{
    LoggedEvent, Owner, PushAttemptResult, PushDeliveryState, SendRecord, StoreError, StoredReply,
    StoredTask,
};
use a2a_protocol::{Task, TaskPushNotificationConfig, TaskState, Timestamp};

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::deflate::{deflate, inflate, single_stored_block, stored, stored_len};

/// A DynamoDB item.
pub(crate) type Item = HashMap<String, AttributeValue>;

/// The largest item this store writes: 400 KB (names and values included) counted in decimal
/// kilobytes. DynamoDB's own limit is 400 KiB (409,600 bytes); the margin absorbs any
/// difference between our count and DynamoDB's, so an item we accept is never refused there.
pub const MAX_ITEM_BYTES: usize = 400_000;

/// Attribute names.
pub(crate) mod attr {
    /// Partition key.
    pub(crate) const PK: &str = "pk";
    /// Sort key.
    pub(crate) const SK: &str = "sk";
    /// Head: version (the last event's seq).
    pub(crate) const VERSION: &str = "v";
    /// Owner key (head, events, push configs, delivery records).
    pub(crate) const OWNER: &str = "own";
    /// Head: context id.
    pub(crate) const CONTEXT: &str = "ctx";
    /// Head: state.
    pub(crate) const STATE: &str = "st";
    /// Head: status timestamp, ms.
    pub(crate) const STATUS_TS: &str = "ts";
    /// Expiry, ms since the epoch: the exact instant reads stop returning the item.
    pub(crate) const EXPIRES: &str = "exp";
    /// Expiry, seconds since the epoch: DynamoDB's TTL attribute, which deletes the item
    /// (within a day or two of it, hence `exp` for reads).
    pub(crate) const TTL: &str = "ttl";
    /// Head of the previous layout: the task as JSON text (read, never written).
    pub(crate) const TASK: &str = "task";
    /// Head: the task as deflated JSON.
    pub(crate) const TASK_BODY: &str = "tb";
    /// Head: the events it carries; archive: the events it holds (deflated JSON).
    pub(crate) const HEAD_EVENTS: &str = "evs";
    /// Head: the version before its last write (the events after it are that write's).
    pub(crate) const PREV_VERSION: &str = "nv";
    /// Head: a random mark of the append that wrote it (N), which tells that writer's retry
    /// its own write from another's with the same events.
    pub(crate) const WRITE_ID: &str = "wid";
    /// Split head: its body item's sort key, version and deflated size.
    pub(crate) const BODY_KEY: &str = "bsk";
    pub(crate) const BODY_VERSION: &str = "bv";
    pub(crate) const BODY_SIZE: &str = "bsz";
    /// Head: the ids of the task's push configs (a string set; absent without any).
    pub(crate) const CONFIG_IDS: &str = "pcs";
    /// Head: `"1"` while the task has push configs: what the stream's filter matches.
    pub(crate) const PUSH_FLAG: &str = "pf";
    /// Head: partition key of the by-owner index: the owner and the task's state
    /// ([`super::state_partition`]; the bare owner on heads written before, and for a task
    /// without a state).
    pub(crate) const GSI_PK: &str = "gpk";
    /// Head of a task in a context that holds more than it: partition key of the by-context
    /// index ([`super::context_partition`]). Absent on the task that a context was made for
    /// (found from the context id itself, `a2a_core::context_origin`), so a context of one
    /// task costs no index entry.
    pub(crate) const CONTEXT_PK: &str = "cpk";
    /// Head: sort key of the by-owner index (status timestamp and task id).
    pub(crate) const GSI_SK: &str = "gsk";
    /// Reply record (at a head's key, instead of a head): the recorded direct reply as JSON.
    pub(crate) const REPLY: &str = "rep";
    /// Event item of an older layout: one logged event as JSON.
    pub(crate) const EVENT: &str = "ev";
    /// Push config: the config as JSON; absent on a deleted config's tombstone.
    pub(crate) const CONFIG: &str = "cfg";
    /// Push config: when its last put or delete was made (ms, the writer's clock). A put older
    /// than the item's is a late copy of one the SDK gave up on (it landed after a delete or a
    /// newer put): the put's condition refuses it, so a deleted config does not come back.
    pub(crate) const WRITTEN_AT: &str = "wat";
    /// Lease: holder.
    pub(crate) const HOLDER: &str = "holder";
    /// Lease: held until, ms.
    pub(crate) const UNTIL: &str = "until";
    /// Delivery record fields (see [`super::delivery_from_item`]).
    pub(crate) const ATTEMPTS: &str = "att";
    pub(crate) const DELIVERED: &str = "dlv";
    pub(crate) const CONSECUTIVE_FAILURES: &str = "cf";
    pub(crate) const DEAD_LETTERED: &str = "dl";
    pub(crate) const LAST_SEQ: &str = "lseq";
    /// Delivery record: attempts of the event `lseq` (the number of the last attempt).
    pub(crate) const LAST_SEQ_ATTEMPTS: &str = "lsatt";
    pub(crate) const LAST_AT: &str = "lat";
    pub(crate) const LAST_RESULT: &str = "lres";
    pub(crate) const LAST_STATUS: &str = "lstat";
    pub(crate) const LAST_ERROR: &str = "lerr";
    pub(crate) const LAST_SUCCESS: &str = "lsucc";
    pub(crate) const DISABLED: &str = "dis";
}

/// Sort key of the head.
pub(crate) const HEAD_SK: &str = "H";
/// Sort key prefix of push configs.
pub(crate) const CONFIG_PREFIX: &str = "P#";

/// Partition key of a task's items.
pub(crate) fn task_pk(task_id: &str) -> String {
    format!("T#{task_id}")
}

/// Sort key of event `seq`: zero-padded so that string order is numeric order.
pub(crate) fn event_sk(seq: u64) -> String {
    format!("E#{seq:020}")
}

pub(crate) fn config_sk(config_id: &str) -> String {
    format!("{CONFIG_PREFIX}{config_id}")
}

pub(crate) fn delivery_sk(config_id: &str) -> String {
    format!("D#{config_id}")
}

/// Sort key of the by-owner index: the status timestamp, zero-padded to 15 digits so string
/// order is time order (until the year 33658), then the task id to break ties.
/// The by-owner index partition of an owner's tasks in `state` (its wire name): `S<number>#`
/// and the owner, so ListTasks filtered by state reads that state's tasks alone. Owner keys
/// start with a digit, so no owner's bare key (the partition of heads written before, and of
/// a task without a state) is ever one of these.
pub(crate) fn state_partition(owner: &str, state: &str) -> String {
    match TaskState::parse(state) {
        Some(state) if state != TaskState::Unspecified => {
            format!("S{}#{owner}", state.number())
        }
        _ => owner.to_owned(),
    }
}

/// Every partition of the by-owner index that may hold `owner`'s tasks: one per state, then
/// the bare owner's.
pub(crate) fn owner_partitions(owner: &str) -> Vec<String> {
    TaskState::ALL
        .iter()
        .filter(|s| **s != TaskState::Unspecified)
        .map(|s| state_partition(owner, s.as_str()))
        .chain([owner.to_owned()])
        .collect()
}

/// The by-context index partition of `owner`'s tasks in `context_id` (the owner
/// length-prefixed, so no two pairs collide).
pub(crate) fn context_partition(owner: &str, context_id: &str) -> String {
    format!("{}:{owner}{context_id}", owner.len())
}

pub(crate) fn gsi_sk(status_ts_ms: i64, task_id: &str) -> String {
    format!("{}#{task_id}", ts_prefix(status_ts_ms))
}

/// The timestamp part of [`gsi_sk`]; alone, it sorts before every key with that timestamp,
/// which makes "status timestamp at or after" a key condition.
pub(crate) fn ts_prefix(ms: i64) -> String {
    format!("{:015}", ms.clamp(0, 999_999_999_999_999))
}

pub(crate) fn key(pk: String, sk: impl Into<String>) -> Item {
    HashMap::from([
        (attr::PK.to_owned(), AttributeValue::S(pk)),
        (attr::SK.to_owned(), AttributeValue::S(sk.into())),
    ])
}

pub(crate) fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub(crate) fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// DynamoDB's TTL attribute for an expiry in ms: whole seconds, rounded up so the item is never
/// deleted before reads stop returning it.
pub(crate) fn ttl_secs(expires_ms: i64) -> i64 {
    expires_ms.div_euclid(1000) + i64::from(expires_ms.rem_euclid(1000) != 0)
}

/// The size DynamoDB counts for an item: the UTF-8 length of each attribute name plus its
/// value's size (AWS's "Item sizes and formats" rules).
pub(crate) fn item_size(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

pub(crate) fn value_size(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::S(text) => text.len(),
        AttributeValue::N(number) => number_size(number),
        AttributeValue::B(blob) => blob.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(set) => set.iter().map(String::len).sum(),
        AttributeValue::Ns(set) => set.iter().map(|n| number_size(n)).sum(),
        AttributeValue::Bs(set) => set.iter().map(|b| b.as_ref().len()).sum(),
        AttributeValue::L(list) => 3 + list.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        AttributeValue::M(map) => {
            3 + map
                .iter()
                .map(|(k, v)| 1 + k.len() + value_size(v))
                .sum::<usize>()
        }
        // An attribute type newer than this code: count it generously.
        _ => 64,
    }
}

/// About one byte per two significant digits, plus one (at most 21).
fn number_size(number: &str) -> usize {
    let digits = number
        .trim_start_matches('-')
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>();
    let significant = digits.trim_start_matches('0').trim_end_matches('0').len();
    (significant.div_ceil(2) + 1).min(21)
}

/// Refuses an item DynamoDB would reject for its size, with a message fit for the client.
pub(crate) fn check_size(item: &Item, what: impl FnOnce() -> String) -> Result<usize, StoreError> {
    let size = item_size(item);
    if size > MAX_ITEM_BYTES {
        return Err(StoreError::TooLarge(format!(
            "{} would take {} KB, more than the {} KB a stored item may hold",
            what(),
            size.div_ceil(1000),
            MAX_ITEM_BYTES / 1000
        )));
    }
    Ok(size)
}

fn json<T: Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(format!("JSON encoding: {e}")))
}

fn from_json<'a, T: Deserialize<'a>>(text: &'a str, what: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Backend(format!("stored {what}: {e}")))
}

/// `value` as deflated JSON: the text of a task repeats (the user's message, the status
/// message, the artifact) and so do its ids, which deflate stores once.
pub(crate) fn packed<T: Serialize>(value: &T) -> Result<AttributeValue, StoreError> {
    let json = json_bytes(value)?;
    Ok(AttributeValue::B(Blob::new(deflated(&json)?)))
}

/// `data` deflated, its failure a store error.
fn deflated(data: &[u8]) -> Result<Vec<u8>, StoreError> {
    deflate(data).map_err(|e| StoreError::Backend(format!("deflate: {e}")))
}

/// The bytes of one write unit: DynamoDB bills a write per started KB of the item.
pub(crate) const WRITE_UNIT_BYTES: usize = 1024;

/// Adds `attrs` (attribute names and their values' JSON) to `item` as [`packed`] would, except
/// that while the item with them as they are stays within one write unit they are stored as
/// they are (a deflate stream of one stored block, which any inflater reads): deflating them
/// could not make the write cheaper, only the item smaller than a unit that bills the same, and
/// deflating a small task's log costs about 200,000 instructions, a tenth of a warm send on
/// Lambda (docs/performance.md).
pub(crate) fn pack_into(item: &mut Item, attrs: Vec<(&str, Vec<u8>)>) -> Result<(), StoreError> {
    let raw_size = item_size(item)
        + attrs
            .iter()
            .map(|(name, json)| name.len() + stored_len(json.len()))
            .sum::<usize>();
    let as_is = raw_size <= WRITE_UNIT_BYTES;
    for (name, json) in attrs {
        let bytes = if as_is {
            stored(&json)
        } else {
            deflated(&json)?
        };
        item.insert(name.to_owned(), AttributeValue::B(Blob::new(bytes)));
    }
    Ok(())
}

/// After a writer's last attributes (a create's push config ids, every write's mark): a head
/// whose packs [`pack_into`] stored as they are but that no longer fits one write unit, with
/// the `kept` bytes an update leaves on it unwritten ([`kept_size`]), gets them deflated, as
/// it would have had without them, so storing never costs a unit.
pub(crate) fn refit_packs(item: &mut Item, kept: usize) -> Result<(), StoreError> {
    if item_size(item) + kept <= WRITE_UNIT_BYTES {
        return Ok(());
    }
    for name in [attr::HEAD_EVENTS, attr::TASK_BODY] {
        if let Some(AttributeValue::B(blob)) = item.get_mut(name) {
            if let Some(data) = single_stored_block(blob.as_ref()) {
                *blob = Blob::new(deflated(data)?);
            }
        }
    }
    Ok(())
}

/// The bytes of a head's attributes that an append keeps without writing them again: the ids
/// of its push configs and their flag (`pcs`, `pf`).
pub(crate) fn kept_size(head: &Item) -> usize {
    [attr::CONFIG_IDS, attr::PUSH_FLAG]
        .iter()
        .filter_map(|name| head.get(*name).map(|v| name.len() + value_size(v)))
        .sum()
}

/// `value` as JSON, for [`pack_into`].
pub(crate) fn json_bytes<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value).map_err(|e| StoreError::Backend(format!("JSON encoding: {e}")))
}

pub(crate) fn unpacked<T: for<'a> Deserialize<'a>>(
    item: &Item,
    name: &str,
    what: &str,
) -> Result<T, StoreError> {
    let Some(AttributeValue::B(blob)) = item.get(name) else {
        return Err(StoreError::Backend(format!(
            "stored item lacks binary attribute {name}"
        )));
    };
    let json = inflate(blob.as_ref())
        .map_err(|e| StoreError::Backend(format!("stored {what}: inflate: {e}")))?;
    serde_json::from_slice(&json).map_err(|e| StoreError::Backend(format!("stored {what}: {e}")))
}

/// The status timestamp a task is listed by, in ms (0 when it has none).
pub(crate) fn status_ts_ms(task: &Task) -> i64 {
    task.status.timestamp.map_or(0, Timestamp::millis)
}

/// The head item of `head` carrying `carried` (the latest events, ending at the head's
/// version), written over version `prev_version`. The task itself is stored (`tb`) unless
/// `carried` is the whole log, from which it is rebuilt when read.
pub(crate) fn head_item(
    head: &StoredTask,
    carried: &[LoggedEvent],
    prev_version: u64,
) -> Result<Item, StoreError> {
    let mut item = head_keys(head)?;
    item.insert(attr::PREV_VERSION.to_owned(), n(prev_version));
    let mut packs = vec![(attr::HEAD_EVENTS, json_bytes(&carried)?)];
    if carried.first().map(|e| e.seq) != Some(1) {
        packs.push((attr::TASK_BODY, json_bytes(&head.task)?));
    }
    pack_into(&mut item, packs)?;
    Ok(item)
}

/// The archive item of `events` (a run of a task's log that its head no longer carries): at
/// the sort key of the last of them, so a query from any seq finds every archive holding a
/// later event.
pub(crate) fn archive_item(
    owner: &Owner,
    task_id: &str,
    expires_at: Timestamp,
    events: &[LoggedEvent],
) -> Result<Item, StoreError> {
    let last = events
        .last()
        .ok_or_else(|| StoreError::Backend("an archive needs events".into()))?;
    let exp = expires_at.millis();
    let mut item = key(task_pk(task_id), event_sk(last.seq));
    item.extend([
        (attr::OWNER.to_owned(), s(owner.as_str())),
        (attr::EXPIRES.to_owned(), n(exp)),
        (attr::TTL.to_owned(), n(ttl_secs(exp))),
        (attr::HEAD_EVENTS.to_owned(), packed(&events)?),
    ]);
    Ok(item)
}

/// The attributes every head has: keys, version, owner, what the index and its filters need.
pub(crate) fn head_keys(head: &StoredTask) -> Result<Item, StoreError> {
    let task = &head.task;
    if task.id.is_empty() {
        return Err(StoreError::Backend("a stored task needs an id".into()));
    }
    let ts = status_ts_ms(task);
    let exp = head.expires_at.millis();
    let mut item = key(task_pk(&task.id), HEAD_SK);
    item.extend([
        (attr::VERSION.to_owned(), n(head.version)),
        (attr::OWNER.to_owned(), s(head.owner.as_str())),
        (attr::CONTEXT.to_owned(), s(&task.context_id)),
        (attr::STATE.to_owned(), s(task.status.state.as_str())),
        (attr::STATUS_TS.to_owned(), n(ts)),
        (attr::EXPIRES.to_owned(), n(exp)),
        (attr::TTL.to_owned(), n(ttl_secs(exp))),
        (
            attr::GSI_PK.to_owned(),
            s(state_partition(
                head.owner.as_str(),
                task.status.state.as_str(),
            )),
        ),
        (attr::GSI_SK.to_owned(), s(gsi_sk(ts, &task.id))),
    ]);
    if !a2a_core::starts_own_context(&task.id, &task.context_id) {
        item.insert(
            attr::CONTEXT_PK.to_owned(),
            s(context_partition(head.owner.as_str(), &task.context_id)),
        );
    }
    Ok(item)
}

/// Checks that `events` continue a log of length `expected_version` without gaps and end at
/// the head's version. A caller that breaks this has a bug; refusing the write keeps the log
/// gapless whatever the caller does.
pub(crate) fn check_seqs(
    head: &StoredTask,
    expected_version: u64,
    events: &[LoggedEvent],
) -> Result<(), StoreError> {
    let mut next = expected_version;
    for event in events {
        next += 1;
        if event.seq != next {
            return Err(StoreError::Backend(format!(
                "event seq {} does not follow version {}",
                event.seq,
                next - 1
            )));
        }
    }
    if head.version != next {
        return Err(StoreError::Backend(format!(
            "head version {} does not match the last event seq {next}",
            head.version
        )));
    }
    Ok(())
}

pub(crate) fn get_s<'a>(item: &'a Item, name: &str) -> Result<&'a str, StoreError> {
    match item.get(name) {
        Some(AttributeValue::S(text)) => Ok(text),
        _ => Err(StoreError::Backend(format!(
            "stored item lacks string attribute {name}"
        ))),
    }
}

pub(crate) fn get_n<T: std::str::FromStr>(item: &Item, name: &str) -> Result<T, StoreError> {
    match item.get(name) {
        Some(AttributeValue::N(text)) => text.parse().map_err(|_| {
            StoreError::Backend(format!(
                "stored attribute {name} is not the expected number"
            ))
        }),
        _ => Err(StoreError::Backend(format!(
            "stored item lacks number attribute {name}"
        ))),
    }
}

fn opt_n<T: std::str::FromStr>(item: &Item, name: &str) -> Result<Option<T>, StoreError> {
    if item.contains_key(name) {
        get_n(item, name).map(Some)
    } else {
        Ok(None)
    }
}

fn opt_s(item: &Item, name: &str) -> Result<Option<String>, StoreError> {
    if item.contains_key(name) {
        get_s(item, name).map(|t| Some(t.to_owned()))
    } else {
        Ok(None)
    }
}

/// Whether an item belongs to `owner` and has not expired at `now_ms`.
pub(crate) fn visible(item: &Item, owner: &Owner, now_ms: i64) -> bool {
    matches!(item.get(attr::OWNER), Some(AttributeValue::S(o)) if o == owner.as_str())
        && get_n::<i64>(item, attr::EXPIRES).is_ok_and(|exp| exp > now_ms)
}

/// The item recording a direct reply: at the head key of the task its message would have
/// created, with the owner and expiry a head has, but none of the index attributes (it is not
/// listed) and no version (no append can match it).
pub(crate) fn reply_item(task_id: &str, reply: &StoredReply) -> Result<Item, StoreError> {
    let exp = reply.expires_at.millis();
    let mut item = key(task_pk(task_id), HEAD_SK);
    item.extend([
        (attr::OWNER.to_owned(), s(reply.owner.as_str())),
        (attr::EXPIRES.to_owned(), n(exp)),
        (attr::TTL.to_owned(), n(ttl_secs(exp))),
        (attr::REPLY.to_owned(), s(json(reply)?)),
    ]);
    Ok(item)
}

/// What a head-key item holds: a task's head, or a reply record.
pub(crate) fn send_record_from_item(item: &Item) -> Result<SendRecord, StoreError> {
    if item.contains_key(attr::REPLY) {
        Ok(SendRecord::Reply(from_json(
            get_s(item, attr::REPLY)?,
            "reply",
        )?))
    } else {
        head_from_item(item).map(SendRecord::Task)
    }
}

/// The head in a head item.
pub(crate) fn head_from_item(item: &Item) -> Result<StoredTask, StoreError> {
    Ok(StoredTask {
        owner: Owner(get_s(item, attr::OWNER)?.to_owned()),
        task: task_from_item(item)?,
        version: get_n(item, attr::VERSION)?,
        expires_at: Timestamp::from_millis(get_n(item, attr::EXPIRES)?),
    })
}

/// The task of a head item, in whichever form it holds it (a split head's is in its body
/// item, which this head does not carry).
pub(crate) fn task_from_item(item: &Item) -> Result<Task, StoreError> {
    if item.contains_key(attr::BODY_KEY) {
        return Err(StoreError::Backend(
            "stored head keeps its task in a body item".into(),
        ));
    }
    if item.contains_key(attr::TASK_BODY) {
        return unpacked(item, attr::TASK_BODY, "task");
    }
    if let Some(events) = head_events(item)? {
        if events.first().map(|e| e.seq) != Some(1) {
            return Err(StoreError::Backend(
                "stored head carries part of the log and no task".into(),
            ));
        }
        // The events as the log applied them when they were written.
        let mut task = Task::default();
        for logged in &events {
            logged
                .event
                .apply(&mut task)
                .map_err(|e| StoreError::Backend(format!("stored events: {}", e.message())))?;
            // As the log keeps it on the head it writes (A2A 1.1: its version).
            task.generation = logged.seq as i64;
        }
        return Ok(task);
    }
    from_json(get_s(item, attr::TASK)?, "task")
}

/// The events a head or archive item carries, if any.
pub(crate) fn head_events(item: &Item) -> Result<Option<Vec<LoggedEvent>>, StoreError> {
    if item.contains_key(attr::HEAD_EVENTS) {
        unpacked(item, attr::HEAD_EVENTS, "events").map(Some)
    } else {
        Ok(None)
    }
}

/// The events of an item of the log's range: an archive's or a head's (`evs`), or the one
/// event of an event item of an older layout (`ev`).
pub(crate) fn events_of_item(item: &Item) -> Result<Vec<LoggedEvent>, StoreError> {
    if let Some(events) = head_events(item)? {
        return Ok(events);
    }
    if item.contains_key(attr::EVENT) {
        return Ok(vec![from_json(get_s(item, attr::EVENT)?, "event")?]);
    }
    Ok(Vec::new())
}

/// The item of a push config.
pub(crate) fn config_item(
    owner: &Owner,
    config: &TaskPushNotificationConfig,
    expires_at: Timestamp,
    written_at: i64,
) -> Result<Item, StoreError> {
    if config.task_id.is_empty() || config.id.is_empty() {
        return Err(StoreError::Backend(
            "a stored push config needs a task id and an id".into(),
        ));
    }
    let exp = expires_at.millis();
    let mut item = key(task_pk(&config.task_id), config_sk(&config.id));
    item.extend([
        (attr::OWNER.to_owned(), s(owner.as_str())),
        (attr::EXPIRES.to_owned(), n(exp)),
        (attr::TTL.to_owned(), n(ttl_secs(exp))),
        (attr::CONFIG.to_owned(), s(json(config)?)),
        (attr::WRITTEN_AT.to_owned(), n(written_at)),
    ]);
    Ok(item)
}

/// The push config of an item; `None` for a deleted config's tombstone.
pub(crate) fn config_from_item(
    item: &Item,
) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
    if !item.contains_key(attr::CONFIG) {
        return Ok(None);
    }
    from_json(get_s(item, attr::CONFIG)?, "push config").map(Some)
}

fn result_name(result: PushAttemptResult) -> &'static str {
    match result {
        PushAttemptResult::Delivered => "delivered",
        PushAttemptResult::Failed => "failed",
        PushAttemptResult::Gone => "gone",
        PushAttemptResult::Refused => "refused",
    }
}

pub(crate) fn result_value(result: PushAttemptResult) -> AttributeValue {
    s(result_name(result))
}

fn result_from_name(name: &str) -> Result<PushAttemptResult, StoreError> {
    [
        PushAttemptResult::Delivered,
        PushAttemptResult::Failed,
        PushAttemptResult::Gone,
        PushAttemptResult::Refused,
    ]
    .into_iter()
    .find(|r| result_name(*r) == name)
    .ok_or_else(|| StoreError::Backend(format!("stored push result {name:?} is unknown")))
}

/// The delivery record in a delivery item. Counters absent from the item are zero (`ADD`
/// creates them on first use).
pub(crate) fn delivery_from_item(item: &Item) -> Result<PushDeliveryState, StoreError> {
    let count = |name| opt_n::<u64>(item, name).map(Option::unwrap_or_default);
    let at = |name| opt_n::<i64>(item, name).map(|ms| ms.map(Timestamp::from_millis));
    Ok(PushDeliveryState {
        attempts: count(attr::ATTEMPTS)?,
        delivered: count(attr::DELIVERED)?,
        consecutive_failures: count(attr::CONSECUTIVE_FAILURES)?,
        dead_lettered: count(attr::DEAD_LETTERED)?,
        last_seq: count(attr::LAST_SEQ)?,
        last_seq_attempts: opt_n(item, attr::LAST_SEQ_ATTEMPTS)?.unwrap_or_default(),
        last_attempt_at: at(attr::LAST_AT)?,
        last_result: opt_s(item, attr::LAST_RESULT)?
            .map(|name| result_from_name(&name))
            .transpose()?,
        last_status: opt_n(item, attr::LAST_STATUS)?,
        last_error: opt_s(item, attr::LAST_ERROR)?,
        last_success_at: at(attr::LAST_SUCCESS)?,
        disabled_reason: opt_s(item, attr::DISABLED)?,
    })
}

/// The ListTasks cursor: the index sort key of the last task of the previous page. With the
/// owner (the index partition) it rebuilds the `ExclusiveStartKey` DynamoDB wants.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Cursor {
    k: String,
}

pub(crate) fn encode_cursor(gsi_sk: &str) -> String {
    let json = serde_json::to_vec(&Cursor {
        k: gsi_sk.to_owned(),
    })
    .unwrap_or_default();
    URL_SAFE_NO_PAD.encode(json)
}

/// The index sort key in a page token, or `InvalidPageToken` for anything this store did not
/// produce.
pub(crate) fn decode_cursor(token: &str) -> Result<String, StoreError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| StoreError::InvalidPageToken)?;
    let cursor: Cursor =
        serde_json::from_slice(&bytes).map_err(|_| StoreError::InvalidPageToken)?;
    // `<15 digits>#<task id>`: anything else was not made by `gsi_sk`.
    let (ts, task_id) = cursor
        .k
        .split_once('#')
        .ok_or(StoreError::InvalidPageToken)?;
    if ts.len() != 15 || !ts.bytes().all(|b| b.is_ascii_digit()) || task_id.is_empty() {
        return Err(StoreError::InvalidPageToken);
    }
    Ok(cursor.k)
}

/// The task id inside an index sort key made by [`gsi_sk`].
pub(crate) fn task_id_of_gsi_sk(gsi_sk: &str) -> &str {
    gsi_sk.split_once('#').map_or("", |(_, id)| id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_within_one_write_unit_is_stored_as_it_is() {
        let head = |text: &str| {
            let now = Timestamp::from_millis(1_700_000_000_000);
            let task = Task {
                id: "8c0b3a52-5c1f-4a0e-9d51-3f1a2b4c5d6e".into(),
                context_id: "1f2e3d4c-5b6a-4789-8a7b-6c5d4e3f2a1b".into(),
                history: vec![a2a_protocol::Message::user_text("m-1", text)],
                ..Default::default()
            };
            let events = vec![LoggedEvent {
                seq: 1,
                at: now,
                event: a2a_core::TaskEvent::Created { task: task.clone() },
            }];
            let head = StoredTask {
                owner: Owner::new("", "anonymous"),
                task: Task {
                    generation: 1,
                    ..task
                },
                version: 1,
                expires_at: Timestamp::from_millis(1_800_000_000_000),
            };
            (head, events)
        };
        let units = |item: &Item| item_size(item).div_ceil(WRITE_UNIT_BYTES);
        let evs = |item: &Item| match item.get(attr::HEAD_EVENTS) {
            Some(AttributeValue::B(blob)) => blob.as_ref().to_vec(),
            other => panic!("events as {other:?}"),
        };
        let (small, small_events) = head("hello");
        let item = head_item(&small, &small_events, 0).unwrap();
        assert!(
            single_stored_block(&evs(&item)).is_some(),
            "stored as it is"
        );
        assert_eq!(units(&item), 1);
        assert_eq!(head_events(&item).unwrap().unwrap(), small_events);
        // Past one unit as it is: deflated, into the units deflating alone gives.
        let (large, events) = head(&"the same words again ".repeat(60));
        let item = head_item(&large, &events, 0).unwrap();
        assert!(single_stored_block(&evs(&item)).is_none(), "deflated");
        assert_eq!(units(&item), 1, "the repeated words deflate into one unit");
        assert_eq!(head_events(&item).unwrap().unwrap(), events);
        // A head stored within the unit that a writer's last attributes push past it is
        // deflated back into it; one that still fits is left as it is.
        let mut item = head_item(&small, &small_events, 0).unwrap();
        let (mut kept, room) = (item.clone(), WRITE_UNIT_BYTES - item_size(&item));
        kept.insert("pad".into(), s("x".repeat(room - 3)));
        refit_packs(&mut kept, 0).unwrap();
        assert!(
            single_stored_block(&evs(&kept)).is_some(),
            "still fits: as it is"
        );
        // What an update leaves on the head counts too.
        let mut update = kept.clone();
        refit_packs(&mut update, 3).unwrap();
        assert!(
            single_stored_block(&evs(&update)).is_none(),
            "with 3 kept bytes: deflated"
        );
        item.insert("pad".into(), s("x".repeat(room - 2)));
        assert_eq!(units(&item), 2);
        refit_packs(&mut item, 0).unwrap();
        assert!(single_stored_block(&evs(&item)).is_none(), "deflated");
        assert_eq!(units(&item), 1);
        assert_eq!(head_events(&item).unwrap().unwrap(), small_events);
    }

    #[test]
    fn keys_sort_in_log_and_time_order() {
        assert!(event_sk(9) < event_sk(10));
        assert!(event_sk(u64::MAX).as_str() < HEAD_SK);
        assert!(gsi_sk(999, "z") < gsi_sk(1_000, "a"));
        // The bare timestamp prefix sorts before every task with that timestamp.
        assert!(ts_prefix(1_000) < gsi_sk(1_000, "a"));
        assert!(ts_prefix(1_001) > gsi_sk(1_000, "zzzz"));
        assert_eq!(ts_prefix(-5), "000000000000000");
    }

    #[test]
    fn ttl_rounds_up_to_whole_seconds() {
        assert_eq!(ttl_secs(1_000), 1);
        assert_eq!(ttl_secs(1_001), 2);
        assert_eq!(ttl_secs(1_999), 2);
        assert_eq!(ttl_secs(0), 0);
    }

    #[test]
    fn item_sizes_follow_the_aws_rules() {
        let item: Item = HashMap::from([
            ("pk".to_owned(), s("T#abc")),                 // 2 + 5
            ("v".to_owned(), n(12_345)),                   // 1 + 3 + 1
            ("ok".to_owned(), AttributeValue::Bool(true)), // 2 + 1
        ]);
        assert_eq!(item_size(&item), 7 + 5 + 3);
        assert_eq!(number_size("1000"), 2);
        assert_eq!(number_size("-0.0012"), 2);
    }

    #[test]
    fn oversized_items_are_refused_with_a_clear_message() {
        let mut item = key(task_pk("t"), HEAD_SK);
        item.insert("task".into(), s("x".repeat(MAX_ITEM_BYTES)));
        let err = check_size(&item, || "task t".into()).unwrap_err();
        let StoreError::TooLarge(text) = err else {
            panic!("expected TooLarge, got {err:?}")
        };
        assert!(text.starts_with("task t would take 401 KB"), "{text}");
        item.insert("task".into(), s("x".repeat(MAX_ITEM_BYTES - 100)));
        assert!(check_size(&item, || "task t".into()).is_ok());
    }

    #[test]
    fn cursors_round_trip_and_foreign_tokens_are_refused() {
        let k = gsi_sk(1_700_000_000_000, "task-1");
        assert_eq!(decode_cursor(&encode_cursor(&k)).unwrap(), k);
        assert_eq!(task_id_of_gsi_sk(&k), "task-1");
        for bad in [
            "not a token!",
            "e30",
            &URL_SAFE_NO_PAD.encode(r#"{"k":"12#x"}"#),
            &URL_SAFE_NO_PAD.encode(r#"{"k":"000000000000001#"}"#),
            &URL_SAFE_NO_PAD.encode(r#"{"k":"000000000000001#x","z":1}"#),
        ] {
            assert_eq!(
                decode_cursor(bad),
                Err(StoreError::InvalidPageToken),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_head_carries_its_events_and_the_task_when_it_must() {
        let owner = Owner::new("", "anonymous");
        let now = Timestamp::from_millis(1_700_000_000_000);
        let text = "x".repeat(100);
        let created = Task {
            id: "8c0b3a52-5c1f-4a0e-9d51-3f1a2b4c5d6e".into(),
            context_id: "1f2e3d4c-5b6a-4789-8a7b-6c5d4e3f2a1b".into(),
            status: a2a_protocol::TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: Some(now),
            },
            history: vec![a2a_protocol::Message::user_text("m-1", &text)],
            ..Default::default()
        };
        let mut done = created.clone();
        done.status.state = TaskState::Completed;
        let events = vec![
            LoggedEvent {
                seq: 1,
                at: now,
                event: a2a_core::TaskEvent::Created { task: created },
            },
            LoggedEvent {
                seq: 2,
                at: now,
                event: a2a_core::TaskEvent::Status {
                    update: a2a_protocol::TaskStatusUpdateEvent {
                        generation: 0,
                        task_id: done.id.clone(),
                        context_id: done.context_id.clone(),
                        status: done.status.clone(),
                        metadata: None,
                    },
                },
            },
        ];
        let head = StoredTask {
            owner,
            // As the log writes a head: its generation (A2A 1.1) is its version.
            task: Task {
                generation: 2,
                ..done
            },
            version: 2,
            expires_at: Timestamp::from_millis(1_800_000_000_000),
        };
        check_seqs(&head, 0, &events).unwrap();
        let item = head_item(&head, &events, 0).unwrap();
        assert!(!item.contains_key(attr::TASK_BODY));
        assert_eq!(head_from_item(&item).unwrap(), head);
        assert_eq!(head_events(&item).unwrap().unwrap(), events);
        // Within the 1 KB of one write unit (stored as it is: deflating could not bill less).
        assert!(
            item_size(&item) <= WRITE_UNIT_BYTES,
            "{} bytes",
            item_size(&item)
        );
        // A log that does not end at the head's version is refused.
        assert!(check_seqs(&head, 0, &events[..1]).is_err());
        // A head carrying only the latest events stores the task too.
        let later = head_item(&head, &events[1..], 1).unwrap();
        assert!(later.contains_key(attr::TASK_BODY));
        assert_eq!(head_from_item(&later).unwrap(), head);
        assert_eq!(events_of_item(&later).unwrap(), events[1..]);
    }

    #[test]
    fn heads_of_the_previous_layout_are_read() {
        let task = Task {
            id: "task-1".into(),
            ..Default::default()
        };
        let mut item = key(task_pk("task-1"), HEAD_SK);
        item.extend([
            (attr::VERSION.to_owned(), n(3)),
            (attr::OWNER.to_owned(), s("o")),
            (attr::EXPIRES.to_owned(), n(5)),
            (attr::TASK.to_owned(), s(json(&task).unwrap())),
        ]);
        let head = head_from_item(&item).unwrap();
        assert_eq!((head.task, head.version), (task, 3));
        assert_eq!(head_events(&item).unwrap(), None);
    }

    #[test]
    fn heads_round_trip_through_items() {
        let head = StoredTask {
            owner: Owner::new("t", "p"),
            task: Task {
                id: "task-1".into(),
                context_id: "ctx".into(),
                status: a2a_protocol::TaskStatus {
                    state: TaskState::Working,
                    message: None,
                    timestamp: Some(Timestamp::from_millis(1_700_000_000_123)),
                },
                ..Default::default()
            },
            version: 7,
            expires_at: Timestamp::from_millis(1_800_000_000_456),
        };
        let item = head_item(&head, &[], 6).unwrap();
        assert_eq!(head_from_item(&item).unwrap(), head);
        assert_eq!(
            get_s(&item, attr::GSI_SK).unwrap(),
            "001700000000123#task-1"
        );
        assert_eq!(get_n::<i64>(&item, attr::TTL).unwrap(), 1_800_000_001);
        assert!(visible(&item, &head.owner, 1_800_000_000_455));
        assert!(!visible(&item, &head.owner, 1_800_000_000_456));
        assert!(!visible(&item, &Owner::new("t", "other"), 0));
    }
}
