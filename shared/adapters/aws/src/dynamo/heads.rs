//! What this process knows of the heads it wrote or read ([`HeadCache`]), what an append
//! needs of the head it replaces ([`HeadSummary`]), what tells one head write from another
//! ([`written_by`]; whether a write in doubt landed is `landed.rs`'s) and sizes its index
//! entries.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use a2a_core::{LoggedEvent, Owner, StoreError};
use a2a_protocol::TaskState;

use crate::body::{self, BodyRef};
use crate::items::{self, attr, Item};

/// How many heads [`HeadCache`] remembers before it starts again.
const CACHE_ENTRIES: usize = 4096;

/// What an append needs to know of the head it replaces, besides what the core hands it: the
/// events it carries (kept or archived by the append), and the attributes an append rewrites
/// only when they change (so that an unchanged index entry is not written again).
#[derive(Debug, Clone)]
pub(super) struct HeadSummary {
    pub(super) version: u64,
    pub(super) owner: String,
    pub(super) state: String,
    pub(super) status_ts: i64,
    pub(super) expires: i64,
    /// Its partition of the by-owner index ([`items::state_partition`]).
    pub(super) partition: String,
    /// Whether it has an entry in the by-context index ([`attr::CONTEXT_PK`]).
    pub(super) in_context_index: bool,
    /// The item's size, for the write's estimated units (DynamoDB bills an update by the larger
    /// of the old and the new item).
    pub(super) size: usize,
    /// What an append leaves on it without writing it again ([`items::kept_size`]).
    pub(super) kept_size: usize,
    pub(super) carried: Arc<Vec<LoggedEvent>>,
    /// A head of a layout before this one (no `nv`): its push config ids are not on it yet.
    pub(super) legacy: bool,
    /// The body item of a split head ([`crate::body`]).
    pub(super) body: Option<BodyRef>,
}

impl HeadSummary {
    /// The summary of a head read from the table.
    pub(super) fn of_item(item: &Item) -> Result<Self, StoreError> {
        Self::of_written(item, items::head_events(item)?.unwrap_or_default())
    }

    /// The summary of a head this process wrote, which carries `carried`: what
    /// [`Self::of_item`] would decode (inflate and parse) from the item, taken as it is.
    pub(super) fn of_written(item: &Item, carried: Vec<LoggedEvent>) -> Result<Self, StoreError> {
        Ok(Self {
            version: items::get_n(item, attr::VERSION)?,
            owner: items::get_s(item, attr::OWNER)?.to_owned(),
            state: items::get_s(item, attr::STATE)
                .unwrap_or_default()
                .to_owned(),
            status_ts: items::get_n(item, attr::STATUS_TS).unwrap_or_default(),
            expires: items::get_n(item, attr::EXPIRES)?,
            partition: items::get_s(item, attr::GSI_PK)
                .unwrap_or_default()
                .to_owned(),
            in_context_index: item.contains_key(attr::CONTEXT_PK),
            size: items::item_size(item),
            kept_size: items::kept_size(item),
            carried: Arc::new(carried),
            legacy: !item.contains_key(attr::PREV_VERSION),
            body: body::body_ref(item)?,
        })
    }

    /// The events after `after_seq` (at most `limit`) of a task this head shows ended, when the
    /// head is `owner`'s, live at `now` (ms), and carries every one of them: a terminal task
    /// takes no further append, so they are exactly what a read of its log returns. `None`
    /// when it cannot tell (the log is then read).
    pub(super) fn ended_tail(
        &self,
        owner: &Owner,
        after_seq: u64,
        limit: usize,
        now: i64,
    ) -> Option<Vec<LoggedEvent>> {
        let ended = TaskState::parse(&self.state).is_some_and(TaskState::is_terminal);
        if !ended || self.owner != owner.as_str() || self.expires <= now {
            return None;
        }
        // Events carried are a contiguous run ending at the head's version; earlier ones are
        // in archive items.
        let (first, last) = (self.carried.first()?.seq, self.carried.last()?.seq);
        if last != self.version || first > after_seq.saturating_add(1) {
            return None;
        }
        Some(
            self.carried
                .iter()
                .filter(|e| e.seq > after_seq)
                .take(limit)
                .cloned()
                .collect(),
        )
    }
}

/// The heads this process last wrote or read, by task id. Only a cache: an append whose head is
/// not here (another process wrote it, or it was forgotten) reads it first. It saves that read
/// on every append of a task this process is writing (a stream, a worker's run).
#[derive(Debug, Default, Clone)]
pub(super) struct HeadCache(Arc<Mutex<HashMap<String, Arc<HeadSummary>>>>);

impl HeadCache {
    pub(super) fn get(&self, task_id: &str) -> Option<Arc<HeadSummary>> {
        self.0.lock().ok()?.get(task_id).cloned()
    }

    pub(super) fn put(&self, task_id: &str, summary: HeadSummary) {
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= CACHE_ENTRIES && !map.contains_key(task_id) {
                map.clear();
            }
            map.insert(task_id.to_owned(), Arc::new(summary));
        }
    }

    pub(super) fn forget(&self, task_id: &str) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(task_id);
        }
    }

    pub(super) fn remember(&self, task_id: &str, item: &Item) {
        if let Ok(summary) = HeadSummary::of_item(item) {
            self.put(task_id, summary);
        }
    }
}

/// The size of a head's entry in the by-owner index: keys plus the projected attributes.
pub(super) fn index_entry_size(head: &Item) -> usize {
    entry_size(
        head,
        &[
            attr::PK,
            attr::SK,
            attr::GSI_PK,
            attr::GSI_SK,
            attr::CONTEXT,
            attr::STATE,
            attr::EXPIRES,
        ],
    )
}

/// The size of a head's entry in the by-context index (none without [`attr::CONTEXT_PK`]).
pub(super) fn context_entry_size(head: &Item) -> usize {
    entry_size(
        head,
        &[
            attr::PK,
            attr::SK,
            attr::CONTEXT_PK,
            attr::GSI_SK,
            attr::STATE,
            attr::EXPIRES,
        ],
    )
}

/// The size of the attributes `names` of `head`.
fn entry_size(head: &Item, names: &[&str]) -> usize {
    names
        .iter()
        .filter_map(|name| head.get_key_value(*name))
        .map(|(k, v)| items::item_size(&HashMap::from([(k.clone(), v.clone())])))
        .sum()
}

/// A random mark for one head write ([`attr::WRITE_ID`]).
pub(super) fn write_id() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    // Each `RandomState` is keyed afresh (per thread, then incremented), so two writes, here
    // or in another process, draw different marks but for a 1 in 2^32 chance.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish() as u32
}

/// What tells a head write apart from any other: the version it writes, its owner, the events
/// it carries (each stamped with the moment it was made) and its own mark.
pub(super) fn written_by(item: &Item) -> Item {
    [
        attr::VERSION,
        attr::OWNER,
        attr::HEAD_EVENTS,
        attr::WRITE_ID,
    ]
    .into_iter()
    .filter_map(|name| Some((name.to_owned(), item.get(name)?.clone())))
    .collect()
}

#[cfg(test)]
mod tests {
    use a2a_core::TaskEvent;
    use a2a_protocol::{Message, Timestamp};

    use super::*;

    fn summary(state: TaskState, carried: std::ops::RangeInclusive<u64>) -> HeadSummary {
        let event = |seq| LoggedEvent {
            seq,
            at: Timestamp::now(),
            event: TaskEvent::UserMessage {
                message: Message::default(),
            },
        };
        HeadSummary {
            version: *carried.end(),
            owner: "0:/alice".into(),
            state: state.as_str().into(),
            status_ts: 0,
            expires: 2_000,
            partition: String::new(),
            in_context_index: false,
            size: 0,
            kept_size: 0,
            carried: Arc::new(carried.map(event).collect()),
            legacy: false,
            body: None,
        }
    }

    fn seqs(events: Option<Vec<LoggedEvent>>) -> Option<Vec<u64>> {
        events.map(|events| events.iter().map(|e| e.seq).collect())
    }

    #[test]
    fn only_an_ended_head_that_carries_the_whole_tail_answers_a_read() {
        let alice = Owner::new("", "alice");
        let ended = summary(TaskState::Completed, 3..=6);
        assert_eq!(
            seqs(ended.ended_tail(&alice, 2, 100, 1_000)),
            Some(vec![3, 4, 5, 6])
        );
        assert_eq!(seqs(ended.ended_tail(&alice, 4, 1, 1_000)), Some(vec![5]));
        assert_eq!(seqs(ended.ended_tail(&alice, 6, 100, 1_000)), Some(vec![]));
        // Events 1 and 2 are archived: only the table has them.
        assert_eq!(seqs(ended.ended_tail(&alice, 1, 100, 1_000)), None);
        assert_eq!(seqs(ended.ended_tail(&alice, 0, 100, 1_000)), None);
        // Someone else's task, or one that has expired, is the table's to answer.
        assert_eq!(
            seqs(ended.ended_tail(&Owner::new("", "bob"), 2, 100, 1_000)),
            None
        );
        assert_eq!(seqs(ended.ended_tail(&alice, 2, 100, 2_000)), None);
        // A task that has not ended may take more events from another process.
        for state in [TaskState::Working, TaskState::InputRequired] {
            assert_eq!(
                seqs(summary(state, 1..=6).ended_tail(&alice, 0, 100, 1_000)),
                None
            );
        }
        // A head that carries nothing (all archived) cannot tell.
        let mut bare = summary(TaskState::Failed, 1..=2);
        bare.carried = Arc::new(Vec::new());
        assert_eq!(seqs(bare.ended_tail(&alice, 2, 100, 1_000)), None);
    }
}
