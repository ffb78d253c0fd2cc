//! Rooms of the A2A-Lite channels as agents our agents call (the outbound side, re-exported
//! by `lite`; posting is `RoomAgents`): the address of a room, the A2A-Lite task id a call posts there, and what a room
//! agent's `status` and `result` messages mean for the call's wait. Pure: posting is the
//! channels' `RemoteAgents`, relaying is `A2aService::relay_named`.
//!
//! A room cannot answer a send with a task id, nor be asked later how a task stands, and no
//! process of ours remembers the calls: so the id we post names our waiting task itself
//! ([`outbound_task_id`]), and the room's answers find that task from it
//! ([`OutboundTask::parse`]). The room is the credential: an answer counts only when it comes
//! from the room the call posted to.

use std::fmt;

use a2a_protocol::lite::{Attachment, LiteKind, LiteMessage, LiteState, MAX_LITE_TASK_ID_LEN};
use a2a_protocol::{
    Artifact, Message, Part, Role, StreamResponse, Task, TaskState, TaskStatus,
    TaskStatusUpdateEvent, Timestamp,
};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use a2a_core::{CallKey, NamedCall, Owner};

/// How a room's address starts: `lite:<channel>:<room>` (no http(s) URL starts so).
pub const ROOM_SCHEME: &str = "lite:";

/// How an outbound task id starts: `a2a.<step>.<task>` (`a2a.<step>.<task>.<owner>` before).
const OUTBOUND_PREFIX: &str = "a2a";

/// A room of a channel, as an agent address (`lite:webhook:general`,
/// `lite:matrix:!abc:example.org`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomAddress {
    /// The channel's name (`webhook`, `matrix`).
    pub channel: String,
    /// The room, as the channel posts to it (the rest of the address: Matrix room ids hold
    /// colons).
    pub room: String,
}

impl RoomAddress {
    /// The room `address` names, if it is a room's address (`lite:<channel>:<room>`, both
    /// parts non-empty, no whitespace).
    pub fn parse(address: &str) -> Option<Self> {
        let rest = address.strip_prefix(ROOM_SCHEME)?;
        let (channel, room) = rest.split_once(':')?;
        let valid = |s: &str| !s.is_empty() && !s.chars().any(|c| c.is_whitespace());
        (valid(channel) && valid(room)).then(|| Self {
            channel: channel.to_owned(),
            room: room.to_owned(),
        })
    }

    /// Whether `address` is written as a room's (`lite:`), valid or not: such an address is
    /// never an agent's URL.
    pub fn is_room(address: &str) -> bool {
        address.starts_with(ROOM_SCHEME)
    }
}

impl fmt::Display for RoomAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{ROOM_SCHEME}{}:{}", self.channel, self.room)
    }
}

/// Our task waiting for a room's task, as the room's task id names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundTask {
    /// Our task's owner, when the id names it (the ids of calls made before the upgrade did;
    /// now the owner is found in our store, never shown to the room).
    pub owner: Option<Owner>,
    /// Our task.
    pub task_id: String,
    /// The call of our task's run (`{trigger_seq}-{index}`, see [`CallKey`]).
    pub call: String,
}

impl OutboundTask {
    /// The task a room's task id names, if it is one of ours ([`outbound_task_id`], or the
    /// previous form, which named the owner too).
    pub fn parse(lite_id: &str) -> Option<Self> {
        let mut parts = lite_id.split('.');
        let (Some(OUTBOUND_PREFIX), Some(step), Some(task), owner, None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return None;
        };
        if step.is_empty() || !step.chars().all(|c| c.is_ascii_digit() || c == '-') {
            return None;
        }
        let text = |b64: &str| {
            URL_SAFE_NO_PAD
                .decode(b64)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .filter(|s| !s.is_empty())
        };
        let owner = match owner {
            Some(owner) => Some(Owner(text(owner)?)),
            None => None,
        };
        Some(Self {
            task_id: task_of(task)?,
            call: step.to_owned(),
            owner,
        })
    }

    /// The call of ours a room's answer about task `lite_id`, seen in the room at `room`
    /// (`lite:<channel>:<room>`), is about, if the id is one of ours.
    pub fn named_call(room: &str, lite_id: &str) -> Option<NamedCall> {
        let ours = Self::parse(lite_id)?;
        Some(NamedCall {
            owner: ours.owner,
            key: CallKey {
                task_id: ours.task_id,
                call: ours.call,
            },
            agent: room.to_owned(),
            task_id: lite_id.to_owned(),
        })
    }
}

/// The A2A-Lite task id of the call that step `step` (digits and `-`: the execution and the
/// step's index) of our task `task_id` makes to a room: `a2a.<step>.<task>`, the task as `u`
/// and its UUID's 16 bytes in base64url (`s` and the id's text in base64url if it is not a
/// UUID), so the room's answers lead back to the waiting task with nothing remembered. It
/// names no caller: the room is a third party, and the task's owner is in our own store.
/// `None` when it would be longer than a marker may carry (a task id of more than about 90
/// bytes that is not a UUID).
pub fn outbound_task_id(task_id: &str, step: &str) -> Option<String> {
    // A key's call is `{trigger_seq}-{index}`: digits and `-`, as `OutboundTask::parse` reads.
    let task = match uuid::Uuid::parse_str(task_id) {
        Ok(id) if id.hyphenated().to_string() == task_id => {
            format!("u{}", URL_SAFE_NO_PAD.encode(id.as_bytes()))
        }
        _ => format!("s{}", URL_SAFE_NO_PAD.encode(task_id)),
    };
    let id = format!("{OUTBOUND_PREFIX}.{step}.{task}");
    (id.chars().count() <= MAX_LITE_TASK_ID_LEN).then_some(id)
}

/// Our task id as [`outbound_task_id`] wrote it.
fn task_of(field: &str) -> Option<String> {
    let bytes = |b64: &str| URL_SAFE_NO_PAD.decode(b64).ok();
    let text = match field.split_at_checked(1)? {
        ("u", b64) => uuid::Uuid::from_slice(&bytes(b64)?).ok()?.to_string(),
        ("s", b64) => String::from_utf8(bytes(b64)?).ok()?,
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// What a room agent's message about task `lite_id` means for the call waiting on it, as the
/// A2A update a remote agent would push: `status` `working`/`accepted` → a WORKING status with
/// the body as its message; `status` `input-required` → the task stopped for input, the body
/// as the question; `result` → the task as it ended, the body (and attachment lines) as its
/// artifact and, for a failure, as the reason. `None` for what changes nothing (`ack`, other
/// types).
pub fn room_update(lite: &LiteMessage) -> Option<StreamResponse> {
    let (task, state, ended) = match &lite.kind {
        LiteKind::Status { task, state, .. } => (task, state.clone(), false),
        LiteKind::Result { task, state, .. } => (task, state.clone(), true),
        _ => return None,
    };
    let a2a_state = match state.to_a2a()? {
        // A room's own words for a task it took: working, for the waiting task.
        TaskState::Submitted => TaskState::Working,
        // A `status` that says the task ended is read as its result.
        other => other,
    };
    let message = |text: &str| {
        (!text.trim().is_empty()).then(|| Message {
            message_id: a2a_core::new_id(),
            task_id: task.clone(),
            role: Role::Agent,
            parts: vec![Part::text(text.trim())],
            ..Message::default()
        })
    };
    let status = TaskStatus {
        state: a2a_state,
        message: message(&lite.body),
        timestamp: Some(Timestamp::now()),
    };
    if a2a_state == TaskState::Working {
        return Some(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: task.clone(),
            status,
            ..TaskStatusUpdateEvent::default()
        }));
    }
    let artifacts = if ended && a2a_state == TaskState::Completed {
        result_artifact(task, &lite.body, &lite.attachments)
            .into_iter()
            .collect()
    } else {
        Vec::new()
    };
    let stops = ended || a2a_state.is_terminal() || state == LiteState::InputRequired;
    stops.then(|| {
        StreamResponse::Task(Task {
            id: task.clone(),
            status,
            artifacts,
            ..Task::default()
        })
    })
}

/// The artifact of a room's result: its body as text, its attachment lines as files (a URL
/// part when the line has one, else the file's name as text).
fn result_artifact(task: &str, body: &str, attachments: &[Attachment]) -> Option<Artifact> {
    let mut parts = Vec::new();
    if !body.trim().is_empty() {
        parts.push(Part::text(body.trim()));
    }
    for attachment in attachments {
        parts.push(match &attachment.url {
            Some(url) => Part {
                url: Some(url.clone()),
                filename: attachment.name.clone(),
                ..Part::default()
            },
            None => Part::text(format!("[attachment: {}]", attachment.name)),
        });
    }
    (!parts.is_empty()).then(|| Artifact {
        artifact_id: format!("{task}-result"),
        name: "result".into(),
        parts,
        ..Artifact::default()
    })
}

#[cfg(test)]
mod tests {
    use a2a_protocol::lite::parse;

    use super::*;

    #[test]
    fn room_addresses_are_told_from_urls() {
        let webhook = RoomAddress::parse("lite:webhook:general").expect("a room");
        assert_eq!(
            (webhook.channel.as_str(), webhook.room.as_str()),
            ("webhook", "general")
        );
        let matrix = RoomAddress::parse("lite:matrix:!abc:example.org").expect("a room");
        assert_eq!(matrix.room, "!abc:example.org");
        assert_eq!(matrix.to_string(), "lite:matrix:!abc:example.org");
        for not_a_room in [
            "http://127.0.0.1:9/lite:x:y",
            "https://a.example",
            "lite:",
            "lite:webhook",
            "lite:webhook:",
            "lite::general",
            "lite:webhook:gen eral",
        ] {
            assert_eq!(RoomAddress::parse(not_a_room), None, "{not_a_room}");
        }
        assert!(RoomAddress::is_room("lite:webhook"));
        assert!(!RoomAddress::is_room("http://lite:1"));
    }

    #[test]
    fn outbound_ids_lead_back_to_the_task_and_nothing_else() {
        let id =
            outbound_task_id("5f1c0a7e-0000-4000-8000-000000000001", "1-0").expect("short enough");
        assert!(
            a2a_protocol::lite::marker::check_task_id(&id, "id").is_ok(),
            "{id}"
        );
        assert_eq!(id.split('.').count(), 3, "no owner in it: {id}");
        let back = OutboundTask::parse(&id).expect("ours");
        assert_eq!(back.owner, None);
        assert_eq!(back.task_id, "5f1c0a7e-0000-4000-8000-000000000001");
        assert_ne!(
            Some(id.clone()),
            outbound_task_id("5f1c0a7e-0000-4000-8000-000000000001", "2-0")
        );
        for forged in [
            "t1",
            "a2a.0.x",
            "a2a.x.YQ.YQ",
            "a2a..YQ.YQ",
            "a2a.0.YQ.YQ.YQ",
            "b2b.0.YQ.YQ",
            "a2a.0.!!.YQ",
            "a2a.0..YQ",
            "a2a.0.uAAAA.",
        ] {
            assert_eq!(OutboundTask::parse(forged), None, "{forged}");
        }
        // Ids that are not UUIDs (or not in their usual form) come back as they were.
        for task in ["task-1", "5F1C0A7E-0000-4000-8000-000000000001"] {
            let id = outbound_task_id(task, "1-0").expect("short enough");
            assert_eq!(OutboundTask::parse(&id).expect("ours").task_id, task);
        }
        assert_eq!(outbound_task_id(&"x".repeat(200), "1-0"), None);
        // The previous form, which named the owner (rooms may still answer calls made before
        // the upgrade), still leads back to the task and its owner.
        let legacy = format!(
            "{id}.{}",
            URL_SAFE_NO_PAD.encode("jwt:27:https://issuer.example.org/s")
        );
        let back = OutboundTask::parse(&legacy).expect("ours, of the previous form");
        assert_eq!(
            back.owner,
            Some(Owner("jwt:27:https://issuer.example.org/s".into()))
        );
        assert_eq!(back.task_id, "5f1c0a7e-0000-4000-8000-000000000001");
    }

    fn update(text: &str) -> Option<StreamResponse> {
        room_update(&parse(text).expect("valid").expect("a marker"))
    }

    #[test]
    fn room_messages_map_to_the_updates_of_a_remote_task() {
        let Some(StreamResponse::StatusUpdate(working)) =
            update("[A2A:status task=a state=working progress=50%]\nHalf done.")
        else {
            panic!("working is a status update");
        };
        assert_eq!(working.task_id, "a");
        assert_eq!(working.status.state, TaskState::Working);
        let said = working.status.message.expect("the body");
        assert_eq!(said.parts[0].text.as_deref(), Some("Half done."));

        let Some(StreamResponse::Task(question)) =
            update("[A2A:status task=a state=input-required]\nWhich city?")
        else {
            panic!("input-required stops the task");
        };
        assert_eq!(question.status.state, TaskState::InputRequired);
        assert!(question.artifacts.is_empty());

        let Some(StreamResponse::Task(done)) = update(
            "[A2A:result task=a state=completed]\nThe answer.\n[附件: r.md] https://files.example/r.md",
        ) else {
            panic!("a result ends the task");
        };
        assert_eq!(done.status.state, TaskState::Completed);
        let parts = &done.artifacts[0].parts;
        assert_eq!(parts[0].text.as_deref(), Some("The answer."));
        assert_eq!(parts[1].url.as_deref(), Some("https://files.example/r.md"));
        assert_eq!(parts[1].filename, "r.md");

        let Some(StreamResponse::Task(failed)) =
            update("[A2A:result task=a state=failed]\nNo such city.")
        else {
            panic!("a failure ends the task");
        };
        assert_eq!(failed.status.state, TaskState::Failed);
        assert!(
            failed.artifacts.is_empty(),
            "a failure's body is its reason"
        );
        let reason = failed.status.message.expect("the reason");
        assert_eq!(reason.parts[0].text.as_deref(), Some("No such city."));

        assert!(matches!(
            update("[A2A:status task=a state=accepted]"),
            Some(StreamResponse::StatusUpdate(u)) if u.status.state == TaskState::Working
        ));
        assert_eq!(update("[A2A:ack task=a]"), None);
        assert_eq!(update("[A2A:discover]"), None);
    }
}
