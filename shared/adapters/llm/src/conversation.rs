//! The conversation from the A2A context, as the model reads it: the earlier tasks of the
//! context (what was asked, what was answered), this task's history, then the new message.

use a2a_protocol::{Role, Task};
use rig_core::message::Message;

/// The model's conversation for `message`, after the `earlier` tasks of its context and this
/// task as it stood (`current`, for a follow-up such as the answer to a question).
pub(crate) fn messages(
    earlier: &[Task],
    current: Option<&Task>,
    message: &a2a_protocol::Message,
) -> Vec<Message> {
    let mut out = Vec::new();
    for task in earlier {
        said(&mut out, task);
        // An LLM agent's answer; another agent's task: all it made.
        let answers = task.artifacts.iter().filter(|a| a.name == "answer");
        let artifacts: Vec<_> = if answers.clone().next().is_some() {
            answers.collect()
        } else {
            task.artifacts.iter().collect()
        };
        let answer: Vec<&str> = artifacts
            .iter()
            .flat_map(|artifact| &artifact.parts)
            .filter_map(|part| part.text.as_deref())
            .collect();
        push(&mut out, Role::Agent, &answer.concat());
    }
    if let Some(task) = current {
        said(&mut out, task);
    }
    push(&mut out, Role::User, &text(message));
    out
}

/// The messages of `task`: its history, then its status message (a question still open).
fn said(out: &mut Vec<Message>, task: &Task) {
    for message in task.history.iter().chain(&task.status.message) {
        push(out, message.role, &text(message));
    }
}

fn push(out: &mut Vec<Message>, role: Role, text: &str) {
    if text.trim().is_empty() {
        return;
    }
    out.push(match role {
        Role::Agent => Message::assistant(text),
        _ => Message::user(text),
    });
}

/// The text parts of `message`, one a line.
fn text(message: &a2a_protocol::Message) -> String {
    let parts: Vec<&str> = message
        .parts
        .iter()
        .filter_map(|part| part.text.as_deref())
        .collect();
    parts.join("\n")
}
