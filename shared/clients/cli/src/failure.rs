//! How a failure is told: its exit code, and a message that names the cause and, where the user
//! can do something about it, the next step.

use a2a_client::{A2AError, Error, Limit};

use crate::sanitize;

/// A failure, and the exit code it maps to.
#[derive(Debug)]
pub(crate) enum Failure {
    Usage(String),
    Client(Error),
    /// The task ended FAILED, REJECTED or CANCELED (its state was printed).
    TaskUnsuccessful,
    /// Ctrl-C while the agent worked: what runs on, and how to find it again.
    Interrupted(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Self::Client(e)
    }
}

/// The exit code of Ctrl-C (128 + SIGINT), as shells report a command it stopped.
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

/// The exit code of a command whose output's reader went away (128 + SIGPIPE).
pub(crate) const EXIT_BROKEN_PIPE: i32 = 141;

/// Writes one line to stdout (the `out!` macro). A reader that went away ends the process at
/// once with [`EXIT_BROKEN_PIPE`] and no message: nothing more can be shown, and the task, if
/// any, runs on as after Ctrl-C. Any other write error is a panic, as with `println!`.
pub(crate) fn print_line(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{line}").and_then(|()| stdout.flush()) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
            std::process::exit(EXIT_BROKEN_PIPE)
        }
        Err(err) => panic!("failed printing to stdout: {err}"),
    }
}

impl Failure {
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) | Self::Client(Error::Usage(_)) => 2,
            Self::Client(Error::Agent(_)) => 1,
            Self::Client(
                Error::Transport(_)
                | Error::Timeout { .. }
                | Error::HttpStatus { .. }
                | Error::Auth(_),
            ) => 3,
            Self::Client(
                Error::InvalidResponse(_)
                | Error::Card(_)
                | Error::TooLarge { .. }
                | Error::OtherOrigin(_),
            ) => 4,
            Self::TaskUnsuccessful => 5,
            Self::Interrupted(_) => EXIT_INTERRUPTED,
        }
    }

    /// Prints the failure to stderr: an agent's error as `Name: message`, everything else as
    /// `a2a: message`; with `json`, an agent's error as one JSON document.
    pub(crate) fn report(&self, json: bool, credentials: Credentials) {
        match self {
            Self::Usage(message) | Self::Interrupted(message) => {
                eprintln!("a2a: {}", error_text(message))
            }
            Self::Client(Error::Agent(e)) if json => {
                let out = serde_json::json!({
                    "error": {"name": e.name(), "message": e.message(), "reason": e.reason}
                });
                eprintln!("{}", sanitize::json_line(&out));
            }
            Self::Client(Error::Agent(e)) => eprintln!(
                "{}: {}{}",
                e.name(),
                error_text(&e.message()),
                agent_hint(&e.error, credentials)
            ),
            Self::Client(Error::Transport(e)) => {
                let agent = e.url().map(|url| Agent {
                    origin: url.origin().ascii_serialization(),
                    loopback: is_loopback(url.host_str().unwrap_or_default()),
                });
                eprintln!("a2a: {}", transport_text(e, agent, e.is_connect()))
            }
            Self::Client(e) => eprintln!("a2a: {}{}", error_text(&e.to_string()), hint(e)),
            Self::TaskUnsuccessful => {}
        }
    }
}

pub(crate) type Outcome = Result<(), Failure>;

/// Which credentials the command sent: the hint to an authentication error depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Credentials {
    None,
    ApiKey,
    Token,
}

/// The most of an error message printed: an agent's error may quote a whole answer.
const MAX_ERROR_CHARS: usize = 2000;

/// An error message as printed: safe for the terminal, and not longer than [`MAX_ERROR_CHARS`].
pub(crate) fn error_text(message: &str) -> String {
    let mut shown = sanitize::line(message).into_owned();
    if let Some((cut, _)) = shown.char_indices().nth(MAX_ERROR_CHARS) {
        shown.truncate(cut);
        shown.push_str("… (cut)");
    }
    shown
}

/// What the user can do about a client error, if a flag helps.
fn hint(e: &Error) -> &'static str {
    match e {
        Error::TooLarge {
            limit: Limit::Body, ..
        } => " (--max-body-bytes raises the limit)",
        Error::TooLarge {
            limit: Limit::Event,
            ..
        } => " (--max-event-bytes raises the limit)",
        Error::TooLarge {
            limit: Limit::Stream,
            ..
        } => " (--max-stream-bytes raises the limit)",
        Error::OtherOrigin(_) => " (--share-credentials sends them there)",
        _ => "",
    }
}

/// What the user can do about an agent's error, where the command knows.
fn agent_hint(error: &A2AError, credentials: Credentials) -> &'static str {
    match (error, credentials) {
        (A2AError::Unauthenticated(_), Credentials::None) => {
            " (the agent wants credentials: pass --api-key or --token, or set A2A_API_KEY or \
             A2A_TOKEN; `a2a card` shows its security schemes)"
        }
        (A2AError::Unauthenticated(_), Credentials::ApiKey) => {
            " (the agent refused the API key of --api-key or A2A_API_KEY: check it, or ask for \
             a new one; `a2a-local keys list` lists an a2a-local's keys)"
        }
        (A2AError::Unauthenticated(_), Credentials::Token) => {
            " (the agent refused the token of --token or A2A_TOKEN: check its issuer, audience \
             and expiry, or get a new one)"
        }
        (A2AError::PermissionDenied(_), _) => {
            " (the credentials are valid but may not do this: ask for a key or token with \
             that permission)"
        }
        (A2AError::TaskNotFound { .. }, _) => {
            " (no task of that id is visible to these credentials: `a2a list` shows yours)"
        }
        _ => "",
    }
}

/// The agent a transport error is about.
struct Agent {
    /// `scheme://host:port`.
    origin: String,
    /// Whether it is on this machine (where the kit's local server may be what is missing).
    loopback: bool,
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A transport error in words: which agent could not be reached, why, and what to check.
/// reqwest's own text ("error sending request for url (…)") names neither the cause nor a fix.
fn transport_text(
    e: &(dyn std::error::Error + 'static),
    agent: Option<Agent>,
    connect: bool,
) -> String {
    let chain = || std::iter::successors(Some(e), |e| e.source());
    // The innermost cause is the one that says what happened (connection refused, a name that
    // does not resolve, a reset).
    let cause = chain().last().map(ToString::to_string).unwrap_or_default();
    let io_kind = chain().find_map(|e| e.downcast_ref::<std::io::Error>().map(|e| e.kind()));
    let (origin, loopback) = match agent {
        Some(agent) => (sanitize::line(&agent.origin).into_owned(), agent.loopback),
        None => ("the agent".to_string(), false),
    };
    if !connect {
        return format!("the connection to {origin} failed: {}", error_text(&cause));
    }
    let next = match io_kind {
        Some(std::io::ErrorKind::ConnectionRefused) if loopback => {
            "nothing listens there: is the agent running? `cargo run -p a2a-local` starts the \
             kit's own on 127.0.0.1:9000"
        }
        Some(std::io::ErrorKind::ConnectionRefused) => {
            "nothing listens there: is the agent running, and the URL right?"
        }
        _ if cause.contains("lookup") || cause.contains("resolve") => "is the host name right?",
        _ => "is the agent running there, and the URL right?",
    };
    format!("cannot connect to {origin}: {}; {next}", error_text(&cause))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised() {
        for host in ["localhost", "127.0.0.1", "127.0.0.2", "[::1]"] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["example.com", "10.0.0.1", "[2001:db8::1]", ""] {
            assert!(!is_loopback(host), "{host}");
        }
    }
}
