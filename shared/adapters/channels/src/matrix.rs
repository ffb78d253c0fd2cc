//! The Matrix channel, as an application service: the homeserver pushes room events to
//! `PUT {url}/_matrix/app/v1/transactions/{txnId}` with the `hs_token`, and the bridge sends as
//! the service's user with the `as_token` (client-server API v3).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use crate::lite::{ChannelError, ChannelPort, ChatMessage};
use a2a_core::PushPolicy;
use async_trait::async_trait;
use serde_json::{json, Value};

use crate::settings::MatrixSettings;

/// The channel's name in ids and URLs.
pub const MATRIX_CHANNEL: &str = "matrix";

/// How long one request to the homeserver may take, unless [`MatrixChannel::timeout`] says
/// otherwise.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How many transaction ids an instance remembers, to answer a repeated transaction at once.
const REMEMBERED_TRANSACTIONS: usize = 1024;

/// Sends to a homeserver as the application service's user, through the SSRF guard.
#[derive(Debug)]
pub struct MatrixChannel {
    client: reqwest::Client,
    homeserver: url::Url,
    as_token: String,
    policy: PushPolicy,
    timeout: Duration,
}

impl MatrixChannel {
    /// A channel on the homeserver of `settings`, which `policy` must accept.
    pub fn new(settings: &MatrixSettings, policy: &PushPolicy) -> Result<Self, String> {
        let homeserver = policy
            .check_url(&settings.homeserver_url)
            .map_err(|e| format!("the Matrix homeserver URL is refused: {e}"))?;
        Ok(Self {
            client: a2a_net::guarded_client(policy)?,
            homeserver,
            as_token: settings.as_token.clone(),
            policy: policy.clone(),
            timeout: REQUEST_TIMEOUT,
        })
    }

    /// The longest one request to the homeserver may take, connecting and answering together
    /// (default 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// `{homeserver}/_matrix/client/v3/` followed by `segments`, each percent-encoded.
    fn endpoint(&self, segments: &[&str]) -> Result<url::Url, ChannelError> {
        let mut url = self.homeserver.clone();
        url.path_segments_mut()
            .map_err(|()| ChannelError("the homeserver URL cannot have a path".into()))?
            .pop_if_empty()
            .extend(["_matrix", "client", "v3"])
            .extend(segments);
        Ok(url)
    }

    /// Sends one request as the service and checks it was accepted.
    async fn send(&self, request: reqwest::RequestBuilder, what: &str) -> Result<(), ChannelError> {
        self.policy
            .check_url(self.homeserver.as_str())
            .map_err(|e| ChannelError(e.to_string()))?;
        let host = self.homeserver.host_str().unwrap_or_default().to_owned();
        let response = request
            .bearer_auth(&self.as_token)
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| {
                ChannelError(format!(
                    "{what} on the homeserver {host}: {}",
                    a2a_net::describe_error(&e)
                ))
            })?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let errcode = response
            .json::<Value>()
            .await
            .ok()
            .and_then(|v| v["errcode"].as_str().map(str::to_owned))
            .unwrap_or_default();
        Err(ChannelError(format!(
            "{what} on the homeserver {host}: {status} {errcode}"
        )))
    }

    /// Joins `room` (after an invitation).
    pub async fn join(&self, room: &str) -> Result<(), ChannelError> {
        let url = self.endpoint(&["rooms", room, "join"])?;
        self.send(self.client.post(url).json(&json!({})), "joining a room")
            .await
    }
}

#[async_trait]
impl ChannelPort for MatrixChannel {
    fn name(&self) -> &str {
        MATRIX_CHANNEL
    }

    /// An `m.notice` (the Matrix convention for automated messages, which bots do not answer)
    /// with `key` as its transaction id: the homeserver shows a retried send once.
    async fn post(&self, room: &str, text: &str, key: &str) -> Result<(), ChannelError> {
        let url = self.endpoint(&["rooms", room, "send", "m.room.message", key])?;
        let body = json!({"msgtype": "m.notice", "body": text});
        self.send(self.client.put(url).json(&body), "sending a message")
            .await
    }
}

/// What one event of a transaction asks of the bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoomEvent {
    /// The service's user was invited to this room: join it.
    Invited(String),
    /// A message someone else wrote.
    Message(ChatMessage),
    /// Nothing (our own messages, edits, other event types).
    Other,
}

/// Reads one event of a transaction for the service whose user is `@{localpart}:…`.
pub fn room_event(event: &Value, localpart: &str) -> RoomEvent {
    let ours = |user: &str| {
        user.strip_prefix('@')
            .and_then(|u| u.split_once(':'))
            .is_some_and(|(local, _)| local == localpart)
    };
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let room = text(&event["room_id"]);
    let content = &event["content"];
    match event["type"].as_str() {
        Some("m.room.member")
            if content["membership"] == "invite"
                && event["state_key"].as_str().is_some_and(ours)
                && !room.is_empty() =>
        {
            RoomEvent::Invited(room)
        }
        Some("m.room.message") => {
            let sender = text(&event["sender"]);
            let body = content["body"].as_str();
            let kind = content["msgtype"].as_str().unwrap_or_default();
            // An edit repeats the message it replaces: the original already counted.
            let edit = content["m.relates_to"]["rel_type"] == "m.replace"
                || content.get("m.new_content").is_some();
            match body {
                Some(body)
                    if !ours(&sender)
                        && !edit
                        && !room.is_empty()
                        && matches!(kind, "m.text" | "m.notice") =>
                {
                    RoomEvent::Message(ChatMessage {
                        room,
                        sender,
                        event_id: event["event_id"].as_str().map(str::to_owned),
                        text: body.to_owned(),
                    })
                }
                _ => RoomEvent::Other,
            }
        }
        _ => RoomEvent::Other,
    }
}

/// The transaction ids an instance has answered, so that a transaction the homeserver sends
/// again (its answer was lost) is answered at once. Another instance may see it again: the
/// bridge then finds the messages it already handled (their messageIds) and starts nothing.
#[derive(Debug, Default)]
pub struct SeenTransactions(Mutex<VecDeque<String>>);

impl SeenTransactions {
    /// Whether `txn_id` was answered here.
    pub fn contains(&self, txn_id: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|t| t == txn_id)
    }

    /// Remembers `txn_id` as answered.
    pub fn insert(&self, txn_id: &str) {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() == REMEMBERED_TRANSACTIONS {
            seen.pop_front();
        }
        seen.push_back(txn_id.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(sender: &str, content: Value) -> Value {
        json!({"type": "m.room.message", "room_id": "!r:hs", "sender": sender,
               "event_id": "$e1", "content": content})
    }

    #[test]
    fn events_are_read_for_the_bridge() {
        let text = |body: &str| json!({"msgtype": "m.text", "body": body});
        assert_eq!(
            room_event(&message("@bob:hs", text("[A2A:discover]")), "a2a"),
            RoomEvent::Message(ChatMessage {
                room: "!r:hs".into(),
                sender: "@bob:hs".into(),
                event_id: Some("$e1".into()),
                text: "[A2A:discover]".into(),
            })
        );
        let notice = json!({"msgtype": "m.notice", "body": "[A2A:task id=x]\ngo"});
        assert!(matches!(
            room_event(&message("@claw:hs", notice), "a2a"),
            RoomEvent::Message(_)
        ));
        // Our own messages, edits, images and other events are nothing.
        for event in [
            message("@a2a:hs", text("[A2A:discover]")),
            message(
                "@bob:hs",
                json!({"msgtype": "m.text", "body": "* [A2A:discover]",
                       "m.new_content": {"body": "[A2A:discover]"},
                       "m.relates_to": {"rel_type": "m.replace", "event_id": "$e0"}}),
            ),
            message("@bob:hs", json!({"msgtype": "m.image", "body": "cat.png"})),
            message("@bob:hs", json!({"msgtype": "m.text"})),
            json!({"type": "m.room.topic", "room_id": "!r:hs", "content": {"topic": "x"}}),
            json!({"type": "m.room.member", "room_id": "!r:hs", "state_key": "@bob:hs",
                   "content": {"membership": "invite"}}),
            json!({"type": "m.room.member", "room_id": "!r:hs", "state_key": "@a2a:hs",
                   "content": {"membership": "join"}}),
        ] {
            assert_eq!(room_event(&event, "a2a"), RoomEvent::Other, "{event}");
        }
        let invite = json!({"type": "m.room.member", "room_id": "!r:hs", "state_key": "@a2a:hs",
                            "sender": "@bob:hs", "content": {"membership": "invite"}});
        assert_eq!(
            room_event(&invite, "a2a"),
            RoomEvent::Invited("!r:hs".into())
        );
    }

    #[test]
    fn sends_go_to_encoded_paths_of_the_homeserver() {
        let settings = MatrixSettings {
            homeserver_url: "http://127.0.0.1:8008/".into(),
            as_token: "a".into(),
            hs_token: "h".into(),
            sender_localpart: "a2a".into(),
        };
        let channel = MatrixChannel::new(&settings, &PushPolicy::local()).unwrap();
        let url = channel
            .endpoint(&["rooms", "!r:hs", "send", "m.room.message", "k/1"])
            .unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:8008/_matrix/client/v3/rooms/!r:hs/send/m.room.message/k%2F1"
        );
        assert!(MatrixChannel::new(&settings, &PushPolicy::default()).is_err());
    }

    /// A homeserver that takes a message and never answers fails the post once the channel's
    /// timeout (here 1 s) passes, saying it timed out, instead of holding the bridge for as
    /// long as the homeserver hangs.
    #[tokio::test]
    async fn a_message_the_homeserver_never_answers_times_out() {
        let silent = a2a_test_support::webhook::RawListener::silent().await;
        let settings = MatrixSettings {
            homeserver_url: format!("http://127.0.0.1:{}/", silent.port),
            as_token: "a".into(),
            hs_token: "h".into(),
            sender_localpart: "a2a".into(),
        };
        let channel = MatrixChannel::new(&settings, &PushPolicy::local())
            .unwrap()
            .timeout(Duration::from_secs(1));
        // The guard only turns a post that waits for ever into a failure.
        let posted =
            tokio::time::timeout(Duration::from_secs(30), channel.post("!r:hs", "hi", "k1"))
                .await
                .expect("the post ends at its timeout");
        assert!(
            matches!(&posted, Err(ChannelError(why)) if why.contains("timed out")),
            "{posted:?}"
        );
        assert_eq!(silent.accepted(), 1, "the message reached the homeserver");
    }

    #[test]
    fn transactions_are_remembered_up_to_a_bound() {
        let seen = SeenTransactions::default();
        assert!(!seen.contains("t0"));
        for i in 0..=REMEMBERED_TRANSACTIONS {
            seen.insert(&format!("t{i}"));
        }
        assert!(!seen.contains("t0"), "the oldest is forgotten");
        assert!(seen.contains("t1") && seen.contains(&format!("t{REMEMBERED_TRANSACTIONS}")));
    }
}
