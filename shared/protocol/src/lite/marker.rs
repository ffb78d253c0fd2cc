//! Parsing and formatting A2A-Lite messages: `[A2A:<type> key=value …]`, a body, attachment
//! lines.

use std::fmt;

pub use super::error::LiteError;
use super::quote::{quote, MAX_QUOTE_CHARS};
use super::state::LiteState;
use super::MAX_LITE_TASK_ID_LEN;

/// What a protocol message is, with the parameters its type defines. Parameters a type does not
/// define are kept in [`LiteMessage::extra`] (receivers ignore what they do not know).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiteKind {
    /// `discover`: asks an agent what it can do.
    Discover,
    /// `card`: the answer to `discover` (prose, and a JSON card may follow).
    Card,
    /// `task`: asks for work; `id` is the requester's name for it.
    Task {
        /// `id` (required): the requester's name for the task.
        id: String,
        /// `skill`: the skill asked for.
        skill: Option<String>,
        /// `priority`: free-form (`high`, `low`, …).
        priority: Option<String>,
    },
    /// `status`: how a task stands.
    Status {
        /// `task` (required): the task's id.
        task: String,
        /// `state` (required).
        state: LiteState,
        /// `progress`: free-form (`50%`).
        progress: Option<String>,
        /// `eta`: free-form (`10m`).
        eta: Option<String>,
    },
    /// `result`: how a task ended, with its output.
    Result {
        /// `task` (required): the task's id.
        task: String,
        /// `state` (required).
        state: LiteState,
        /// `artifacts`: free-form (the description leaves it open).
        artifacts: Option<String>,
    },
    /// `cancel`: asks to stop a task.
    Cancel {
        /// `task` (required): the task's id.
        task: String,
        /// `reason`: why (one word: values hold no spaces).
        reason: Option<String>,
    },
    /// `ack`: a task request was received.
    Ack {
        /// `task` (required): the task's id.
        task: String,
    },
    /// A type this version does not know (types may be added): receivers ignore it.
    Other {
        /// The type as written, lowercased.
        name: String,
    },
}

impl LiteKind {
    /// The type's name in a marker (`task`, `status`, …).
    pub fn name(&self) -> &str {
        match self {
            Self::Discover => "discover",
            Self::Card => "card",
            Self::Task { .. } => "task",
            Self::Status { .. } => "status",
            Self::Result { .. } => "result",
            Self::Cancel { .. } => "cancel",
            Self::Ack { .. } => "ack",
            Self::Other { name } => name,
        }
    }

    /// The task the message is about: `id` of a `task`, `task` of the others.
    pub fn task_id(&self) -> Option<&str> {
        match self {
            Self::Task { id, .. } => Some(id),
            Self::Status { task, .. }
            | Self::Result { task, .. }
            | Self::Cancel { task, .. }
            | Self::Ack { task } => Some(task),
            Self::Discover | Self::Card | Self::Other { .. } => None,
        }
    }

    /// The parameters the type defines, in the order a marker writes them.
    fn params(&self) -> Vec<(&'static str, &str)> {
        fn opt<'a>(
            key: &'static str,
            value: &'a Option<String>,
        ) -> Option<(&'static str, &'a str)> {
            value.as_deref().map(|v| (key, v))
        }
        let params = match self {
            Self::Task {
                id,
                skill,
                priority,
            } => [
                Some(("id", id.as_str())),
                opt("skill", skill),
                opt("priority", priority),
                None,
            ],
            Self::Status {
                task,
                state,
                progress,
                eta,
            } => [
                Some(("task", task.as_str())),
                Some(("state", state.as_str())),
                opt("progress", progress),
                opt("eta", eta),
            ],
            Self::Result {
                task,
                state,
                artifacts,
            } => [
                Some(("task", task.as_str())),
                Some(("state", state.as_str())),
                opt("artifacts", artifacts),
                None,
            ],
            Self::Cancel { task, reason } => [
                Some(("task", task.as_str())),
                opt("reason", reason),
                None,
                None,
            ],
            Self::Ack { task } => [Some(("task", task.as_str())), None, None, None],
            Self::Discover | Self::Card | Self::Other { .. } => [None; 4],
        };
        params.into_iter().flatten().collect()
    }
}

/// An attachment line: `[附件: report.md]`, optionally followed by where to fetch it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The file's name as written.
    pub name: String,
    /// A URL after the bracket, if any (`[附件: report.md] https://…`).
    pub url: Option<String>,
}

impl Attachment {
    /// An attachment known by name only.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            url: None,
        }
    }
}

impl fmt::Display for Attachment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Brackets and line breaks in a name would end the line early or make another one.
        let name: String = self
            .name
            .chars()
            .map(|c| match c {
                '[' | ']' | '\n' | '\r' => '_',
                c => c,
            })
            .collect();
        write!(f, "[{ATTACHMENT_LABEL}: {name}]")?;
        if let Some(url) = &self.url {
            write!(f, " {url}")?;
        }
        Ok(())
    }
}

/// The label of attachment lines as the public description writes them ("attachment").
pub const ATTACHMENT_LABEL: &str = "附件";

/// Labels read as attachment lines: the description's, and plain English ones.
const ATTACHMENT_LABELS: [&str; 4] = ["附件", "attachment", "file", "文件"];

/// One A2A-Lite message: the marker's type and parameters, the body, the attachment lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiteMessage {
    /// The type and its parameters.
    pub kind: LiteKind,
    /// Parameters the type does not define, in order, keys lowercased.
    pub extra: Vec<(String, String)>,
    /// The natural-language body (surrounding blank lines removed).
    pub body: String,
    /// The attachment lines at the end of the message.
    pub attachments: Vec<Attachment>,
}

impl LiteMessage {
    /// A message of `kind` with `body` and nothing else.
    pub fn new(kind: LiteKind, body: impl Into<String>) -> Self {
        Self {
            kind,
            extra: Vec::new(),
            body: body.into(),
            attachments: Vec::new(),
        }
    }

    /// The marker line alone: `[A2A:task id=x skill=y]`.
    ///
    /// Every value must be a [valid value](check_value): a value that is not (one with a
    /// space, say) would be read back as something else, so its offending characters are
    /// replaced by `_` here. Callers that build values from input check them first.
    pub fn marker(&self) -> String {
        let mut line = format!("[A2A:{}", self.kind.name());
        let extra = self.extra.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        for (key, value) in self.kind.params().into_iter().chain(extra) {
            line.push(' ');
            line.push_str(key);
            line.push('=');
            line.extend(value.chars().map(|c| {
                if c.is_whitespace() || c.is_control() || c == '[' || c == ']' {
                    '_'
                } else {
                    c
                }
            }));
        }
        line.push(']');
        line
    }
}

impl fmt::Display for LiteMessage {
    /// The message as a room shows it: the marker line, the body, the attachment lines.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.marker())?;
        let body = self.body.trim_matches(['\n', '\r']);
        if !body.is_empty() {
            write!(f, "\n{body}")?;
        }
        for attachment in &self.attachments {
            write!(f, "\n{attachment}")?;
        }
        Ok(())
    }
}

/// Reads a chat message. `Ok(None)`: ordinary chat (its first line is not a marker), never
/// protocol. `Err`: it starts with a marker that is not valid (the error says why, for a
/// reply). Leading blank lines and spaces before the marker are allowed; a marker anywhere
/// but the first line is chat (a person quoting one starts nothing).
pub fn parse(text: &str) -> Result<Option<LiteMessage>, LiteError> {
    let text = text.trim_start_matches('\u{feff}');
    let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
    let Some(first) = lines.next() else {
        return Ok(None);
    };
    let first = first.trim();
    let Some(inside) = marker_start(first) else {
        return Ok(None);
    };
    let Some(close) = inside.find(']') else {
        return Err(LiteError::new(
            "The A2A marker is not closed: write it on the first line as [A2A:<type> key=value], \
             ending with ].",
        ));
    };
    let (marker, rest) = (&inside[..close], inside[close + 1..].trim());
    let mut words = marker.split_whitespace();
    let name = match words.next() {
        Some(name) if is_name(name) => name.to_ascii_lowercase(),
        Some(name) => {
            return Err(LiteError::new(format!(
                "{} is not a message type: write [A2A:discover], [A2A:task id=…], \
                 [A2A:cancel task=…] and so on.",
                quote(name)
            )))
        }
        None => {
            return Err(LiteError::new(
                "The A2A marker names no type: write [A2A:discover], [A2A:task id=…], \
                 [A2A:cancel task=…] and so on.",
            ))
        }
    };
    // The type as errors name it: any name is valid, however long (a type we do not know).
    let label = if name.chars().count() > MAX_QUOTE_CHARS {
        let cut: String = name.chars().take(MAX_QUOTE_CHARS).collect();
        format!("{cut}…")
    } else {
        name.clone()
    };
    let mut params: Vec<(String, String)> = Vec::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(LiteError::new(format!(
                "In [A2A:{label} …], {} is not key=value: parameters are written key=value, \
                 separated by single spaces, with no spaces inside a value.",
                quote(word)
            ))
            .about(find(&params, &name)));
        };
        if !is_name(key) || value.is_empty() {
            return Err(LiteError::new(format!(
                "In [A2A:{label} …], {} is not key=value: a parameter needs a name and a \
                 value (key=value, no spaces).",
                quote(word)
            ))
            .about(find(&params, &name)));
        }
        let key = key.to_ascii_lowercase();
        if params.iter().any(|(k, _)| *k == key) {
            return Err(LiteError::new(format!(
                "In [A2A:{label} …], {} is given twice.",
                quote(&key)
            ))
            .about(find(&params, &name)));
        }
        params.push((key, value.to_owned()));
    }
    let kind = kind_of(&name, &mut params)?;
    // The body: what follows the marker on its line, then the other lines; attachment lines
    // at the end are taken off it.
    let mut body: Vec<&str> = Vec::new();
    if !rest.is_empty() {
        body.push(rest);
    }
    body.extend(lines);
    while body.last().is_some_and(|l| l.trim().is_empty()) {
        body.pop();
    }
    let mut attachments = Vec::new();
    while let Some(attachment) = body.last().and_then(|l| attachment_line(l)) {
        attachments.push(attachment);
        body.pop();
        while body.last().is_some_and(|l| l.trim().is_empty()) {
            body.pop();
        }
    }
    attachments.reverse();
    let body = body.join("\n").trim_matches(['\n', '\r']).to_owned();
    Ok(Some(LiteMessage {
        kind,
        extra: params,
        body,
        attachments,
    }))
}

/// What follows `[A2A:` when `line` starts with it (case and spaces around `:` tolerated).
fn marker_start(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('[')?.trim_start();
    let prefix = rest.get(..3)?;
    if !prefix.eq_ignore_ascii_case("a2a") {
        return None;
    }
    let rest = rest[3..].trim_start();
    rest.strip_prefix(':').map(str::trim_start)
}

/// A type or parameter name: a letter, then letters, digits, `-` or `_`.
fn is_name(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The task id among `params` for a message of type `name`, for an error's context.
fn find<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    let key = if name == "task" { "id" } else { "task" };
    params
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Takes the type's own parameters out of `params` and checks them.
fn kind_of(name: &str, params: &mut Vec<(String, String)>) -> Result<LiteKind, LiteError> {
    let mut take = |key: &str| {
        params
            .iter()
            .position(|(k, _)| k == key)
            .map(|i| params.remove(i).1)
    };
    let required = |value: Option<String>, key: &str, example: &str| {
        value.ok_or_else(|| {
            LiteError::new(format!(
                "[A2A:{name}] needs {key}=…, for example {example}."
            ))
        })
    };
    Ok(match name {
        "discover" => LiteKind::Discover,
        "card" => LiteKind::Card,
        "task" => {
            let id = required(take("id"), "id", "[A2A:task id=research-001]")?;
            check_task_id(&id, "id")?;
            LiteKind::Task {
                id,
                skill: take("skill"),
                priority: take("priority"),
            }
        }
        "status" | "result" => {
            let example = format!("[A2A:{name} task=research-001 state=working]");
            let task = required(take("task"), "task", &example)?;
            check_task_id(&task, "task")?;
            let state = required(take("state"), "state", &example)?;
            let state = LiteState::parse(&state).map_err(|e| e.about(Some(&task)))?;
            if name == "status" {
                LiteKind::Status {
                    task,
                    state,
                    progress: take("progress"),
                    eta: take("eta"),
                }
            } else {
                LiteKind::Result {
                    task,
                    state,
                    artifacts: take("artifacts"),
                }
            }
        }
        "cancel" => {
            let task = required(take("task"), "task", "[A2A:cancel task=research-001]")?;
            check_task_id(&task, "task")?;
            LiteKind::Cancel {
                task,
                reason: take("reason"),
            }
        }
        "ack" => {
            let task = required(take("task"), "task", "[A2A:ack task=research-001]")?;
            check_task_id(&task, "task")?;
            LiteKind::Ack { task }
        }
        other => LiteKind::Other {
            name: other.to_owned(),
        },
    })
}

/// A task id as a marker may carry it: 1 to [`MAX_LITE_TASK_ID_LEN`] characters, none of
/// them a space, a control character or a bracket.
pub fn check_task_id(id: &str, key: &str) -> Result<(), LiteError> {
    let len = id.chars().count();
    if len > MAX_LITE_TASK_ID_LEN {
        return Err(LiteError::new(format!(
            "The task id in {key}= is {len} characters long; use at most \
             {MAX_LITE_TASK_ID_LEN}."
        )));
    }
    check_value(id).map_err(|e| e.about(Some(id)))
}

/// A parameter value as a marker can carry it unchanged: not empty, and no whitespace,
/// control characters or brackets.
pub fn check_value(value: &str) -> Result<(), LiteError> {
    if value.is_empty() {
        return Err(LiteError::new("A parameter value is empty."));
    }
    match value
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || *c == '[' || *c == ']')
    {
        Some(c) => Err(LiteError::new(format!(
            "The value {} holds {c:?}: values hold no spaces or brackets.",
            quote(value)
        ))),
        None => Ok(()),
    }
}

/// An attachment line (`[附件: name]`, `[附件：name]`, `[attachment: name] url`).
fn attachment_line(line: &str) -> Option<Attachment> {
    let inside = line.trim().strip_prefix('[')?;
    let (label, rest) = inside.split_once([':', '：'])?;
    let label = label.trim();
    if !ATTACHMENT_LABELS
        .iter()
        .any(|l| l.eq_ignore_ascii_case(label))
    {
        return None;
    }
    let (name, after) = rest.split_once(']')?;
    let name = name.trim();
    if name.is_empty() {
        return None;
    }
    let after = after.trim();
    let url = match after {
        "" => None,
        url if !url.contains(char::is_whitespace) => Some(url.to_owned()),
        _ => return None,
    };
    Some(Attachment {
        name: name.to_owned(),
        url,
    })
}
