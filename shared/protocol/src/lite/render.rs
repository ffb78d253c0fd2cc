//! A2A tasks as a room reads them: the `status` and `result` messages of a task's states, and
//! its artifacts as text with attachment lines for files.

use super::marker::{Attachment, LiteKind, LiteMessage};
pub use super::quote::{quote, MAX_QUOTE_CHARS};
use super::state::LiteState;
use crate::{Artifact, Message, Part, Task, TaskState, TaskStatus};

/// The longest body a rendered message carries, in characters: chat servers cap a message's
/// size (Matrix at 64 KiB an event, Slack at 40,000 characters), and a room is no place to
/// read more. The whole output stays in the A2A task.
pub const MAX_BODY_CHARS: usize = 12_000;

/// The longest message posted to a room, in characters, whatever it is (a result, a refusal, a
/// task given to a room): [`fit`] cuts every one to it.
pub const MAX_MESSAGE_CHARS: usize = MAX_BODY_CHARS;

/// `text` as it may be posted to a room: at most [`MAX_MESSAGE_CHARS`] characters. A longer
/// one is cut, and a note saying so (naming `a2a_task`, the A2A task that holds all of it,
/// when there is one) ends it, within the bound.
pub fn fit(text: &str, a2a_task: Option<&str>) -> String {
    if text.chars().count() <= MAX_MESSAGE_CHARS {
        return text.to_owned();
    }
    let note = match a2a_task {
        Some(id) => format!("\n… (cut here; all of it is in A2A task {})", quote(id)),
        None => "\n… (cut here)".to_owned(),
    };
    let keep = MAX_MESSAGE_CHARS.saturating_sub(note.chars().count());
    let mut cut: String = text.chars().take(keep).collect();
    cut.push_str(&note);
    cut
}

/// The `status` message of a task that moved to `status`, for the requester's task `task`:
/// `working` with the agent's words, or `input-required` with its question and how to answer.
/// `None` for the states a room needs no message for: SUBMITTED (the `ack` said it) and the
/// terminal states (the [`result_message`] says those, with the output).
pub fn status_message(task: &str, status: &TaskStatus) -> Option<LiteMessage> {
    let state = match status.state {
        TaskState::Working => LiteState::Working,
        TaskState::InputRequired | TaskState::AuthRequired => LiteState::InputRequired,
        _ => return None,
    };
    let said = status
        .message
        .as_ref()
        .map(|m| message_text(m).0)
        .unwrap_or_default();
    let body = match (&state, said.is_empty()) {
        (LiteState::Working, true) => "Working on it.".to_owned(),
        (LiteState::Working, false) => said,
        (_, empty) => {
            let question = if empty {
                "I need more input to go on.".to_owned()
            } else {
                said
            };
            format!(
                "{question}\nTo answer, start a message with [A2A:task id={task}] and write \
                 your answer below it."
            )
        }
    };
    let kind = LiteKind::Status {
        task: task.to_owned(),
        state,
        progress: None,
        eta: None,
    };
    Some(LiteMessage::new(kind, truncate(body, None)))
}

/// The `result` message of a task that ended, for the requester's task `lite_task`: its final
/// state, the agent's last words, then its artifacts (text, and files as attachment lines).
/// A body longer than [`MAX_BODY_CHARS`] is cut, with a note naming the A2A task that holds
/// everything.
pub fn result_message(lite_task: &str, task: &Task) -> LiteMessage {
    let state = LiteState::from_a2a(task.status.state).unwrap_or(LiteState::Failed);
    let (said, mut attachments) = task
        .status
        .message
        .as_ref()
        .map(message_text)
        .unwrap_or_default();
    let (output, files) = artifacts_text(&task.artifacts);
    attachments.extend(files);
    // An agent that repeats its output as its last words (an echo) says it once.
    let body = match (said.trim(), output.trim()) {
        ("", "") => match state {
            LiteState::Completed => "Done.".to_owned(),
            _ => format!("The task ended {state}."),
        },
        (said, output) if said == output || output.is_empty() => said.to_owned(),
        ("", output) => output.to_owned(),
        (said, output) => format!("{said}\n\n{output}"),
    };
    let kind = LiteKind::Result {
        task: lite_task.to_owned(),
        state,
        artifacts: None,
    };
    LiteMessage {
        attachments,
        ..LiteMessage::new(kind, truncate(body, Some(&task.id)))
    }
}

/// Artifacts as a person reads them: each one's text (under its name when there are several),
/// structured data as JSON, and files as attachment lines.
pub fn artifacts_text(artifacts: &[Artifact]) -> (String, Vec<Attachment>) {
    let mut sections = Vec::new();
    let mut attachments = Vec::new();
    for artifact in artifacts {
        let (text, files) = parts_text(&artifact.parts);
        attachments.extend(files);
        if text.trim().is_empty() {
            continue;
        }
        if artifacts.len() > 1 && !artifact.name.is_empty() {
            sections.push(format!("{}:\n{text}", artifact.name));
        } else {
            sections.push(text);
        }
    }
    (sections.join("\n\n"), attachments)
}

/// A message's text and its files.
pub fn message_text(message: &Message) -> (String, Vec<Attachment>) {
    parts_text(&message.parts)
}

fn parts_text(parts: &[Part]) -> (String, Vec<Attachment>) {
    let mut text = String::new();
    let mut attachments = Vec::new();
    for part in parts {
        if let Some(t) = &part.text {
            text.push_str(t);
        } else if let Some(data) = &part.data {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&serde_json::to_string(data).unwrap_or_default());
        } else if part.raw.is_some() || part.url.is_some() {
            let name = if part.filename.is_empty() {
                part.url
                    .as_deref()
                    .and_then(|u| u.rsplit('/').next())
                    .filter(|n| !n.is_empty())
                    .unwrap_or("file")
                    .to_owned()
            } else {
                part.filename.clone()
            };
            // Only a link can be followed from a room; bytes stay in the A2A task.
            let url = part
                .url
                .clone()
                .filter(|u| !u.contains(char::is_whitespace));
            attachments.push(Attachment { name, url });
        }
    }
    (text, attachments)
}

/// `body`, cut to [`MAX_BODY_CHARS`] with a note saying where the rest is.
fn truncate(body: String, a2a_task: Option<&str>) -> String {
    if body.chars().count() <= MAX_BODY_CHARS {
        return body;
    }
    let mut cut: String = body.chars().take(MAX_BODY_CHARS).collect();
    match a2a_task {
        Some(id) => cut.push_str(&format!(
            "\n… (cut here; the whole output is in A2A task {id})"
        )),
        None => cut.push_str("\n… (cut here)"),
    }
    cut
}
