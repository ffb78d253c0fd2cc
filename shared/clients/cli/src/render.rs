//! How results are printed: readable text, or JSON with `--json`.

use std::io::{IsTerminal, Write};

use a2a_client::webhook::VerifiedPush;
use a2a_client::{
    text_of, AgentCard, ListTaskPushNotificationConfigsResponse, ListTasksResponse, Message, Part,
    SendMessageResponse, StreamResponse, Task, TaskPushNotificationConfig, TaskState,
};
use serde::Serialize;
use serde_json::json;

use crate::sanitize::{json_line, json_pretty, line, text};

/// Prints to stdout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Printer {
    json: bool,
}

/// A part as text, safe to print (newlines kept in text parts).
fn part_text(part: &Part) -> String {
    if let Some(t) = &part.text {
        return text(t).into_owned();
    }
    if let Some(data) = &part.data {
        return json_line(data);
    }
    let name = if part.filename.is_empty() {
        "file"
    } else {
        part.filename.as_str()
    };
    let name = line(name);
    if let Some(url) = &part.url {
        return format!("[{name}: {}]", line(url));
    }
    if let Some(raw) = &part.raw {
        return format!("[{name}: {} bytes {}]", raw.0.len(), line(&part.media_type));
    }
    String::new()
}

fn parts_text(parts: &[Part]) -> String {
    parts.iter().map(part_text).collect::<Vec<_>>().join(" ")
}

impl Printer {
    pub(crate) fn new(json: bool) -> Self {
        Self { json }
    }

    pub(crate) fn is_json(&self) -> bool {
        self.json
    }

    fn print_json(&self, value: &impl Serialize) {
        out!("{}", json_pretty(value));
    }

    /// What the card's signature is: checked (`verified`), or only present. JSON output
    /// carries the card itself; the line goes to stderr there.
    pub(crate) fn card_signature(
        &self,
        card: &AgentCard,
        verified: Option<&a2a_client::CardSignature>,
    ) {
        let text = match (verified, card.signatures.len()) {
            (Some(v), _) => format!(
                "signature: verified (key {}, {:?})",
                line(&v.kid),
                v.algorithm
            ),
            (None, 0) => "signature: none (the card is not signed)".to_string(),
            (None, n) => format!("signature: {n} signature(s), not checked (--verify checks them)"),
        };
        if self.json {
            eprintln!("{text}");
        } else {
            out!("  {text}");
        }
    }

    pub(crate) fn card(&self, card: &AgentCard) {
        if self.json {
            return self.print_json(card);
        }
        out!("{} (version {})", line(&card.name), line(&card.version));
        out!("  {}", line(&card.description));
        for i in &card.supported_interfaces {
            let tenant = if i.tenant.is_empty() {
                String::new()
            } else {
                format!(" tenant {}", line(&i.tenant))
            };
            out!(
                "  interface {} {} {}{tenant}",
                line(&i.protocol_binding),
                line(&i.protocol_version),
                line(&i.url)
            );
        }
        let caps = &card.capabilities;
        out!(
            "  streaming: {}, push notifications: {}, extended card: {}",
            caps.streaming.unwrap_or(false),
            caps.push_notifications.unwrap_or(false),
            caps.extended_agent_card.unwrap_or(false)
        );
        if !card.security_schemes.is_empty() {
            let names: Vec<&str> = card.security_schemes.keys().map(String::as_str).collect();
            out!("  security: {}", line(&names.join(", ")));
        }
        for skill in &card.skills {
            out!(
                "  skill {}: {} [{}]",
                line(&skill.id),
                line(&skill.name),
                line(&skill.tags.join(", "))
            );
            if !skill.examples.is_empty() {
                out!("    e.g. {}", line(&skill.examples.join(" | ")));
            }
        }
    }

    fn message_lines(&self, message: &Message) {
        let who = match message.role {
            a2a_client::Role::Agent => "agent",
            _ => "user",
        };
        out!("  {who}: {}", parts_text(&message.parts));
    }

    pub(crate) fn task(&self, task: &Task) {
        if self.json {
            return self.print_json(task);
        }
        out!("task {}  {}", line(&task.id), task.status.state.as_str());
        if !task.context_id.is_empty() {
            out!("  context {}", line(&task.context_id));
        }
        if task.generation > 0 {
            // A2A 1.1: pass it to `send --task … --if-generation` to refuse a stale follow-up.
            out!("  generation {}", task.generation);
        }
        if let Some(message) = &task.status.message {
            self.message_lines(message);
        }
        for artifact in &task.artifacts {
            let name = if artifact.name.is_empty() {
                &artifact.artifact_id
            } else {
                &artifact.name
            };
            out!("  artifact {}: {}", line(name), parts_text(&artifact.parts));
        }
    }

    pub(crate) fn send_response(&self, response: &SendMessageResponse) {
        match response {
            _ if self.json => self.print_json(response),
            SendMessageResponse::Task(task) => self.task(task),
            SendMessageResponse::Message(message) => {
                out!("message {}", line(&message.message_id));
                self.message_lines(message);
            }
        }
    }

    pub(crate) fn task_list(&self, page: &ListTasksResponse) {
        if self.json {
            return self.print_json(page);
        }
        for task in &page.tasks {
            let when = task
                .status
                .timestamp
                .map(|t| t.0.to_rfc3339())
                .unwrap_or_default();
            out!(
                "{}  {:<26} {when}",
                line(&task.id),
                task.status.state.as_str()
            );
        }
        out!("({} of {} tasks)", page.tasks.len(), page.total_size);
        if !page.next_page_token.is_empty() {
            out!("next page: --page-token {}", line(&page.next_page_token));
        }
    }

    pub(crate) fn push_config(&self, config: &TaskPushNotificationConfig) {
        if self.json {
            return self.print_json(config);
        }
        out!(
            "push config {} of task {} -> {}",
            line(&config.id),
            line(&config.task_id),
            line(&config.url)
        );
    }

    pub(crate) fn push_configs(&self, list: &ListTaskPushNotificationConfigsResponse) {
        if self.json {
            return self.print_json(list);
        }
        for config in &list.configs {
            self.push_config(config);
        }
        if list.configs.is_empty() {
            out!("no push configs");
        }
    }

    pub(crate) fn deleted(&self, task_id: &str, id: &str) {
        if self.json {
            return self.print_json(&json!({"deleted": {"taskId": task_id, "id": id}}));
        }
        out!("deleted push config {} of task {}", line(id), line(task_id));
    }

    pub(crate) fn listening(&self, url: &str) {
        if self.json {
            out!("{}", json_line(&json!({"listening": url})));
        } else {
            out!("listening on {}", line(url));
        }
        let _ = std::io::stdout().flush();
    }

    pub(crate) fn push(&self, push: &VerifiedPush) {
        if self.json {
            let entry = json!({
                "taskId": push.claims.task_id,
                "seq": push.claims.seq,
                "configId": push.claims.config_id,
                "event": push.event,
            });
            out!("{}", json_line(&entry));
        } else {
            out!(
                "push task {} seq {}: {}",
                line(&push.claims.task_id),
                push.claims.seq,
                summary(&push.event)
            );
        }
        let _ = std::io::stdout().flush();
    }

    /// A display for a stream of events.
    pub(crate) fn live(&self) -> Live {
        let terminal = !self.json && std::io::stdout().is_terminal();
        Live {
            json: self.json,
            terminal,
            line: String::new(),
            state: None,
            task_id: String::new(),
            frame: 0,
        }
    }
}

/// One line about an event.
fn summary(event: &StreamResponse) -> String {
    match event {
        StreamResponse::Task(t) => format!("task {} {}", line(&t.id), t.status.state.as_str()),
        StreamResponse::Message(m) => format!("message: {}", parts_text(&m.parts)),
        StreamResponse::StatusUpdate(u) => {
            let text = u
                .status
                .message
                .as_ref()
                .map(|m| format!(": {}", parts_text(&m.parts)))
                .unwrap_or_default();
            format!("status {}{text}", u.status.state.as_str())
        }
        StreamResponse::ArtifactUpdate(a) => format!(
            "artifact {}: {}",
            line(if a.artifact.name.is_empty() {
                &a.artifact.artifact_id
            } else {
                &a.artifact.name
            }),
            parts_text(&a.artifact.parts)
        ),
    }
}

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// The display of a stream: on a terminal, artifact text as it arrives with a status line
/// (spinner and task state) kept after it; otherwise one plain line per event.
pub(crate) struct Live {
    json: bool,
    terminal: bool,
    /// The artifact text after the last newline, redrawn with the status line.
    line: String,
    state: Option<TaskState>,
    task_id: String,
    frame: usize,
}

impl Live {
    pub(crate) fn event(&mut self, event: &StreamResponse) {
        if self.json {
            out!("{}", json_line(event));
            let _ = std::io::stdout().flush();
            return;
        }
        match event {
            StreamResponse::Task(t) => {
                self.task_id = line(&t.id).into_owned();
                self.state = Some(t.status.state);
                if !self.terminal {
                    out!("task {}  {}", line(&t.id), t.status.state.as_str());
                }
            }
            StreamResponse::StatusUpdate(u) => {
                self.state = Some(u.status.state);
                let text = u
                    .status
                    .message
                    .as_ref()
                    .map(|m| parts_text(&m.parts))
                    .filter(|t| !t.is_empty());
                if self.terminal {
                    if let Some(text) = text {
                        self.write_text(&format!("{text}\n"));
                    }
                } else {
                    match text {
                        Some(text) => out!("status {}: {text}", u.status.state.as_str()),
                        None => out!("status {}", u.status.state.as_str()),
                    }
                }
            }
            StreamResponse::ArtifactUpdate(a) => {
                let text = text(&text_of(&a.artifact.parts)).into_owned();
                let other: Vec<String> = a
                    .artifact
                    .parts
                    .iter()
                    .filter(|p| p.text.is_none())
                    .map(part_text)
                    .collect();
                if self.terminal {
                    self.write_text(&text);
                    if !other.is_empty() {
                        self.write_text(&format!("\n{}\n", other.join(" ")));
                    }
                    if a.last_chunk && !self.line.is_empty() {
                        self.write_text("\n");
                    }
                } else {
                    out!("{}", summary(event));
                }
            }
            StreamResponse::Message(m) => {
                if self.terminal {
                    self.write_text(&format!("{}\n", parts_text(&m.parts)));
                } else {
                    out!("{}", summary(event));
                }
            }
        }
        if self.terminal {
            self.redraw();
        } else {
            let _ = std::io::stdout().flush();
        }
    }

    /// Writes artifact text above the status line.
    fn write_text(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        let mut pieces = text.split('\n').peekable();
        while let Some(piece) = pieces.next() {
            self.line.push_str(piece);
            if pieces.peek().is_some() {
                let _ = write!(out, "\r\x1b[2K{}\n", self.line);
                self.line.clear();
            }
        }
    }

    fn redraw(&mut self) {
        let state = self.state.map_or("connecting", TaskState::as_str);
        let spinner = SPINNER[self.frame % SPINNER.len()];
        let gap = if self.line.is_empty() { "" } else { "  " };
        let mut out = std::io::stdout().lock();
        let _ = write!(
            out,
            "\r\x1b[2K{}{gap}\x1b[2m{spinner} {state}\x1b[0m",
            self.line
        );
        let _ = out.flush();
    }

    pub(crate) fn tick(&mut self) {
        if self.terminal {
            self.frame += 1;
            self.redraw();
        }
    }

    pub(crate) fn finish(&mut self) {
        if !self.terminal {
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "\r\x1b[2K");
        if !self.line.is_empty() {
            let _ = writeln!(out, "{}", self.line);
        }
        if let Some(state) = self.state {
            let _ = writeln!(out, "task {}  {}", self.task_id, state.as_str());
        }
        let _ = out.flush();
    }
}
