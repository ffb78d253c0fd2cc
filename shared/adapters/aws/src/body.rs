//! Large tasks keep their body in an item of its own, so that an append rewrites a small head.
//!
//! DynamoDB bills an `UpdateItem` by the larger of the item before and after, whatever it
//! changes, and a `GetItem` by the whole item whatever it projects. A head that carries a task
//! of 100 KB makes every append of a long stream cost about 100 write units, and every
//! follower's poll of its version about 12 read units. So once a task's body (`tb`, deflated)
//! passes [`SPLIT_BYTES`], the head stops carrying it: the task at some version `bv` lives in a
//! **body item** (`B#<bv, 20 digits>#<nonce>`, written once, never changed), the head names it
//! (`bsk`, `bv`, and its size `bsz`) and carries the events after it (`evs`, as every head
//! does). The task is the body with the head's events after `bv` applied, the same
//! `TaskEvent::apply` that built it. An append writes the head alone until the events it
//! carries pass [`carry_budget`] (a sixteenth of the body, at least 2 KB) or the head's expiry
//! moves (the body must live as long as its head); then it first writes a new body at the new
//! version (a *checkpoint*) and the head starts over from it. A body's key is unique to its
//! writer: one that then loses the race for the head leaves an orphan body that no head names,
//! which TTL removes.
//!
//! Body keys sort before every other item of the task (`B#` < `D#` < `E#` < `H` < `P#`), so the
//! log's range (`E#…` to `H`) and the push config prefix (`P#`) never read one.

use a2a_core::{LoggedEvent, Owner, StoreError, StoredTask};
use a2a_protocol::{Task, Timestamp};

use crate::items::{self, attr, n, s, Item};

/// A task whose body deflates to more than this many bytes keeps it in a body item.
pub(crate) const SPLIT_BYTES: usize = 4 * 1024;

/// The least a split head carries in events (deflated) before the next checkpoint.
const MIN_CARRY_BYTES: usize = 2 * 1024;

/// The body a split head names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BodyRef {
    /// The body item's sort key.
    pub(crate) sk: String,
    /// The version the body holds the task at.
    pub(crate) version: u64,
    /// The body's deflated size, bytes.
    pub(crate) size: usize,
}

/// The body a head names, if it is a split head.
pub(crate) fn body_ref(head: &Item) -> Result<Option<BodyRef>, StoreError> {
    if !head.contains_key(attr::BODY_KEY) {
        return Ok(None);
    }
    Ok(Some(BodyRef {
        sk: items::get_s(head, attr::BODY_KEY)?.to_owned(),
        version: items::get_n(head, attr::BODY_VERSION)?,
        size: items::get_n(head, attr::BODY_SIZE)?,
    }))
}

/// How many bytes of events (deflated) a head whose body is `body_size` bytes carries before
/// the next checkpoint: enough that the body is rewritten rarely, little enough that the head
/// stays small. With events of about `c` bytes, an append costs about half the budget plus
/// `c × body / budget` spread over the appends: a sixteenth of the body keeps both small.
pub(crate) fn carry_budget(body_size: usize) -> usize {
    MIN_CARRY_BYTES.max(body_size / 16)
}

/// A body item's sort key for the task at `version`, unique to this writer.
pub(crate) fn body_sk(version: u64) -> String {
    format!("B#{version:020}#{}", a2a_core::new_id())
}

/// The body item of `head`'s task at `sk`, and the body's deflated size.
pub(crate) fn body_item(head: &StoredTask, sk: &str) -> Result<(Item, usize), StoreError> {
    let exp = head.expires_at.millis();
    let body = items::packed(&head.task)?;
    let size = items::value_size(&body);
    let mut item = items::key(items::task_pk(&head.task.id), sk);
    item.extend([
        (attr::OWNER.to_owned(), s(head.owner.as_str())),
        (attr::EXPIRES.to_owned(), n(exp)),
        (attr::TTL.to_owned(), n(items::ttl_secs(exp))),
        (attr::TASK_BODY.to_owned(), body),
    ]);
    Ok((item, size))
}

/// The head item of `head` whose task is the body `body` plus `carried` (the events from some
/// version up to the head's, all those after the body's among them), written over
/// `prev_version`.
pub(crate) fn split_head_item(
    head: &StoredTask,
    carried: &[LoggedEvent],
    prev_version: u64,
    body: &BodyRef,
) -> Result<Item, StoreError> {
    let mut item = items::head_keys(head)?;
    item.insert(attr::PREV_VERSION.to_owned(), n(prev_version));
    item.insert(attr::HEAD_EVENTS.to_owned(), items::packed(&carried)?);
    item.insert(attr::BODY_KEY.to_owned(), s(&body.sk));
    item.insert(attr::BODY_VERSION.to_owned(), n(body.version));
    item.insert(attr::BODY_SIZE.to_owned(), n(body.size));
    Ok(item)
}

/// The bytes of events a head item carries (deflated).
pub(crate) fn carried_size(head: &Item) -> usize {
    head.get(attr::HEAD_EVENTS).map_or(0, items::value_size)
}

/// The task of a split head: its body with the head's events after the body's version applied.
pub(crate) fn task_of(head: &Item, body: &Item) -> Result<Task, StoreError> {
    let Some(reference) = body_ref(head)? else {
        return items::task_from_item(head);
    };
    let mut task: Task = items::unpacked(body, attr::TASK_BODY, "task body")?;
    for logged in items::head_events(head)?.unwrap_or_default() {
        if logged.seq > reference.version {
            logged
                .event
                .apply(&mut task)
                .map_err(|e| StoreError::Backend(format!("stored events: {}", e.message())))?;
        }
    }
    // The body was written at an older version than the head's: the task's generation
    // (A2A 1.1) is the head's version, as the log keeps it.
    task.generation = items::get_n::<u64>(head, attr::VERSION)? as i64;
    Ok(task)
}

/// The stored task of a split head and its body.
pub(crate) fn stored_task(head: &Item, body: &Item) -> Result<StoredTask, StoreError> {
    Ok(StoredTask {
        owner: Owner(items::get_s(head, attr::OWNER)?.to_owned()),
        task: task_of(head, body)?,
        version: items::get_n(head, attr::VERSION)?,
        expires_at: Timestamp::from_millis(items::get_n(head, attr::EXPIRES)?),
    })
}

/// The error for a head whose body is not there (it never should be: the body is written before
/// any head names it, and lives as long as the head).
pub(crate) fn missing(task_id: &str) -> StoreError {
    StoreError::Backend(format!("the body of task {task_id} is missing"))
}
