//! Idempotent SendMessage: per owner and `messageId`, a repeated message returns the original
//! result instead of running the agent again.
//!
//! It costs no extra write. A new task's id is derived from the owner and the `messageId`
//! (UUID v5), so the store's conditional create (`Conflict` if the id is live) *is* the claim:
//! of concurrent copies exactly one creates the task. One read of that id before running the
//! agent tells a repeat apart from a new message. A direct message reply is recorded at the same
//! id ([`crate::ports::StoredReply`]), so the same read finds it. A follow-up on an existing task
//! is a repeat when the task's history already holds its `messageId`.
//!
//! The server remembers a `messageId` as long as its task (or reply record) is retained
//! (`ServiceConfig::retention`). After that the id collides with an expired record, which every
//! store treats as absent (its id is free again, its events invisible), so a repeat then simply
//! starts a new task under the same id; it never mixes with the expired one.

use a2a_protocol::{A2AError, Message};
use uuid::Uuid;

use crate::ports::Owner;

/// The namespace of the ids derived here (a fixed random UUID, never to change: it would make
/// every retained `messageId` look new).
const NAMESPACE: Uuid = Uuid::from_u128(0x6f1c_2e8a_4b7d_4f0e_9a53_c2d1_8e47_b3a9);

/// What a `messageId` sent again means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MessageIdReuse {
    /// Sends are idempotent (the default): a repeat with the same body returns the original
    /// result without running the agent again; with another body it is InvalidParams.
    #[default]
    Reject,
    /// Every send is a new message, whatever its `messageId`: no deduplication of new tasks.
    /// For clients that reuse one `messageId` for different sends, as the A2A TCK does (it
    /// sends byte-identical messages expecting a new task each time).
    NewMessage,
}

impl std::str::FromStr for MessageIdReuse {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "reject" => Ok(Self::Reject),
            "new-message" => Ok(Self::NewMessage),
            other => Err(format!(
                "unknown messageId reuse policy {other:?}: expected reject or new-message"
            )),
        }
    }
}

/// The id of the task (or reply record) a new message of `owner` with `message_id` creates.
/// The owner key is length-prefixed so no pair of (owner, messageId) can collide.
fn task_id_for(owner: &Owner, message_id: &str) -> String {
    let owner = owner.as_str();
    let name = format!("task:{}:{owner}{message_id}", owner.len());
    Uuid::new_v5(&NAMESPACE, name.as_bytes()).to_string()
}

/// The id of the task (or reply record) that `sent`, a message naming no task, creates:
/// derived from the owner and the `messageId`, so a repeat finds it; a fresh one when sends are
/// not idempotent ([`MessageIdReuse::NewMessage`]).
pub(crate) fn new_task_id(owner: &Owner, sent: &Message, reuse: MessageIdReuse) -> String {
    match reuse {
        MessageIdReuse::Reject => task_id_for(owner, &sent.message_id),
        MessageIdReuse::NewMessage => crate::new_id(),
    }
}

/// The bits a task id's context id flips ([`context_id_for`]): none of a UUID's version and
/// variant bits, so the context id is a UUID of the same kind.
const CONTEXT_MASK: u128 = 0x5a3c_96e1_0f2b_0d47_2e81_b9c4_7d06_53fa;

/// The context id a new task gets when its message names none. Derived from the task id, so a
/// repeat can tell whether the original message named a context, and reversibly, so that a
/// store can find the task that started a context from the context id alone
/// ([`context_origin`]): it then need not index the many contexts that hold one task.
pub fn context_id_for(task_id: &str) -> String {
    match canonical_uuid(task_id) {
        Some(id) => Uuid::from_u128(id.as_u128() ^ CONTEXT_MASK).to_string(),
        None => legacy_context_id_for(task_id),
    }
}

/// The context id [`context_id_for`] gave before it was reversible (and still gives a task id
/// that is not a UUID): a repeat of a message recorded then must still be recognised.
fn legacy_context_id_for(task_id: &str) -> String {
    Uuid::new_v5(&NAMESPACE, format!("context:{task_id}").as_bytes()).to_string()
}

/// `text` as a UUID, if it is one written the way this crate writes them (lowercase, hyphens),
/// so that the id made from it and back is `text` again.
fn canonical_uuid(text: &str) -> Option<Uuid> {
    Uuid::parse_str(text)
        .ok()
        .filter(|id| id.hyphenated().to_string() == text)
}

/// The id of the task whose new context is `context_id`, if the server made it for that task
/// ([`context_id_for`]): the one task of the context that a store may have left out of its
/// index by context (every later task of the context names it). The task may not exist, or be
/// another's, or be in another context: a store reads it and checks.
pub fn context_origin(context_id: &str) -> Option<String> {
    let id = canonical_uuid(context_id)?;
    Some(Uuid::from_u128(id.as_u128() ^ CONTEXT_MASK).to_string())
}

/// Whether the server made `context_id` for the task `task_id` when it created it: the task
/// [`context_origin`] finds from the context id.
pub fn starts_own_context(task_id: &str, context_id: &str) -> bool {
    context_origin(context_id).as_deref() == Some(task_id)
}

/// The id of the inline push config (sent without one) of a new task.
pub(crate) fn push_config_id_for(task_id: &str) -> String {
    Uuid::new_v5(&NAMESPACE, format!("push-config:{task_id}").as_bytes()).to_string()
}

/// Checks that `sent` (as the client sent it now) repeats `recorded` (as the server recorded
/// it, with `taskId` and `contextId` filled in): the same parts, metadata, extensions and
/// referenced tasks, and the same `taskId` and `contextId` as the original carried. Otherwise
/// InvalidParams, and nothing changes.
///
/// `new_task_id` is the id a new task for `sent` gets ([`new_task_id`]).
pub(crate) fn check_repeat(
    new_task_id: &str,
    sent: &Message,
    recorded: &Message,
) -> Result<(), A2AError> {
    // The recorded message created its task iff the task id is the one derived from it: then the
    // client sent no taskId, otherwise it was a follow-up on that task.
    let created = recorded.task_id == new_task_id;
    let same_task = if sent.task_id.is_empty() {
        created
    } else {
        !created && sent.task_id == recorded.task_id
    };
    let same_context = if sent.context_id.is_empty() {
        // A follow-up may leave out the context it is in; a new message that named none got
        // the derived one.
        !created
            || recorded.context_id == context_id_for(&recorded.task_id)
            || recorded.context_id == legacy_context_id_for(&recorded.task_id)
    } else {
        sent.context_id == recorded.context_id
    };
    let same_body = sent.role == recorded.role
        && sent.parts == recorded.parts
        && sent.metadata == recorded.metadata
        && sent.extensions == recorded.extensions
        && sent.reference_task_ids == recorded.reference_task_ids;
    if same_task && same_context && same_body {
        Ok(())
    } else {
        Err(A2AError::invalid_params(format!(
            "messageId {} was already used for a different message; \
             send a new message with a new messageId",
            sent.message_id
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(p: &str) -> Owner {
        Owner::new("", p)
    }

    #[test]
    fn ids_are_per_owner_and_message() {
        let a = task_id_for(&owner("alice"), "m1");
        assert_eq!(a, task_id_for(&owner("alice"), "m1"));
        assert_ne!(a, task_id_for(&owner("bob"), "m1"));
        assert_ne!(a, task_id_for(&owner("alice"), "m2"));
        assert_ne!(context_id_for(&a), a);
    }

    #[test]
    fn a_made_context_leads_back_to_its_task() {
        let task = task_id_for(&owner("alice"), "m1");
        let context = context_id_for(&task);
        let parsed = Uuid::parse_str(&context).expect("a UUID");
        assert_eq!(parsed.get_version_num(), 5, "the task id's version is kept");
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122);
        assert_eq!(context_origin(&context).as_deref(), Some(task.as_str()));
        assert!(starts_own_context(&task, &context));
        let fresh = crate::new_id();
        assert!(starts_own_context(&fresh, &context_id_for(&fresh)));
        // A context the client named, or another task's, is not this task's own.
        assert!(!starts_own_context(&task, "my-conversation"));
        assert!(!starts_own_context(&task, &context_id_for(&fresh)));
        assert_eq!(context_origin("my-conversation"), None);
        // Not canonical: the id made back would not be the text.
        assert_eq!(context_origin(&context.to_uppercase()), None);
        // A task id that is not a UUID gets a context that leads nowhere.
        assert!(!starts_own_context(
            "lite:room:1",
            &context_id_for("lite:room:1")
        ));
    }

    #[test]
    fn a_repeat_must_carry_the_same_body_and_ids() {
        let alice = owner("alice");
        let sent = Message::user_text("m1", "hello");
        let task_id = task_id_for(&alice, "m1");
        let recorded = Message {
            task_id: task_id.clone(),
            context_id: context_id_for(&task_id),
            ..sent.clone()
        };
        check_repeat(&task_id, &sent, &recorded).expect("same message");
        // Recorded before context ids were reversible: still the same message.
        let recorded_before = Message {
            context_id: legacy_context_id_for(&task_id),
            ..recorded.clone()
        };
        check_repeat(&task_id, &sent, &recorded_before).expect("same message, older context id");

        let other_text = Message::user_text("m1", "hello!");
        let err = check_repeat(&task_id, &other_text, &recorded).unwrap_err();
        assert!(
            err.message()
                .contains("already used for a different message"),
            "{err:?}"
        );

        let named_context = Message {
            context_id: "ctx-1".into(),
            ..sent.clone()
        };
        check_repeat(&task_id, &named_context, &recorded).unwrap_err();

        let with_task = Message {
            task_id: task_id.clone(),
            ..sent.clone()
        };
        check_repeat(&task_id, &with_task, &recorded).unwrap_err();
    }

    #[test]
    fn without_idempotency_every_new_message_gets_a_fresh_id() {
        let alice = owner("alice");
        let hello = Message::user_text("m1", "hello");
        let derived = new_task_id(&alice, &hello, MessageIdReuse::Reject);
        assert_eq!(derived, task_id_for(&alice, "m1"));
        let fresh = new_task_id(&alice, &hello, MessageIdReuse::NewMessage);
        assert_ne!(fresh, derived);
        assert_ne!(
            fresh,
            new_task_id(&alice, &hello, MessageIdReuse::NewMessage)
        );
    }
}
