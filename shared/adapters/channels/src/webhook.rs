//! The Slack-compatible webhook channel: the chat's outgoing webhook brings each message
//! (`token`, `channel_name`, `user_name`, `text`, … as a form or JSON), and the bridge posts to
//! the chat's incoming webhook (`{"text": …, "channel": …}`).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::lite::{ChannelError, ChannelPort, ChatMessage};
use a2a_core::PushPolicy;
use async_trait::async_trait;
use serde_json::{json, Value};

/// The channel's name in ids and URLs.
pub const WEBHOOK_CHANNEL: &str = "webhook";

/// How long one post to the incoming webhook may take, unless [`WebhookChannel::timeout`]
/// says otherwise.
const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// Posts to a chat's incoming webhook, through the SSRF guard.
#[derive(Debug)]
pub struct WebhookChannel {
    client: reqwest::Client,
    url: url::Url,
    policy: PushPolicy,
    timeout: Duration,
}

impl WebhookChannel {
    /// A channel posting to `reply_url`, which `policy` must accept.
    pub fn new(reply_url: &str, policy: &PushPolicy) -> Result<Self, String> {
        let url = policy
            .check_url(reply_url)
            .map_err(|e| format!("the webhook reply URL is refused: {e}"))?;
        Ok(Self {
            client: a2a_net::guarded_client(policy)?,
            url,
            policy: policy.clone(),
            timeout: POST_TIMEOUT,
        })
    }

    /// The longest one post may take, connecting and answering together (default 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

#[async_trait]
impl ChannelPort for WebhookChannel {
    fn name(&self) -> &str {
        WEBHOOK_CHANNEL
    }

    async fn post(&self, room: &str, text: &str, _key: &str) -> Result<(), ChannelError> {
        // Checked again on every post: the guard's resolver checks host names, this the
        // IP-literal ones.
        self.policy
            .check_url(self.url.as_str())
            .map_err(|e| ChannelError(e.to_string()))?;
        let host = self.url.host_str().unwrap_or_default().to_owned();
        let response = self
            .client
            .post(self.url.clone())
            .timeout(self.timeout)
            .json(&json!({"text": text, "channel": room}))
            .send()
            .await
            .map_err(|e| {
                ChannelError(format!(
                    "the incoming webhook at {host}: {}",
                    a2a_net::describe_error(&e)
                ))
            })?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(ChannelError(format!(
                "the incoming webhook at {host} answered {status}"
            )))
        }
    }
}

/// One outgoing webhook of the chat, its fields as text (a JSON body's numbers and booleans
/// in their JSON form).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutgoingWebhook {
    fields: BTreeMap<String, String>,
}

impl OutgoingWebhook {
    /// Reads a body: JSON when `content_type` says so, else form-encoded. `None` when it is
    /// neither (or not an object).
    pub fn parse(content_type: Option<&str>, body: &[u8]) -> Option<Self> {
        let is_json = content_type.is_some_and(|t| {
            t.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
        });
        let fields = if is_json {
            let Value::Object(map) = serde_json::from_slice::<Value>(body).ok()? else {
                return None;
            };
            map.into_iter()
                .filter_map(|(k, v)| match v {
                    Value::String(s) => Some((k, s)),
                    Value::Null => None,
                    other => Some((k, other.to_string())),
                })
                .collect()
        } else {
            url::form_urlencoded::parse(body).into_owned().collect()
        };
        Some(Self { fields })
    }

    /// A field, if present and not empty.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Whether the webhook carries `token` (compared in constant time).
    pub fn has_token(&self, token: &str) -> bool {
        self.field("token").is_some_and(|given| {
            aws_lc_rs::constant_time::verify_slices_are_equal(given.as_bytes(), token.as_bytes())
                .is_ok()
        })
    }

    /// The chat message for the bridge: the room is the channel's name (what the incoming
    /// webhook's `channel` takes), else its id; the sender the user's id, else name; the event
    /// id the chat's id of the post (Mattermost `post_id`, Rocket.Chat `message_id`), else the
    /// channel, user and timestamp (Slack). `None` without a room or text.
    pub fn message(&self) -> Option<ChatMessage> {
        let room = self
            .field("channel_name")
            .or_else(|| self.field("channel_id"))?;
        let text = self.field("text")?;
        let sender = self
            .field("user_id")
            .or_else(|| self.field("user_name"))
            .unwrap_or("unknown");
        let event_id = self
            .field("post_id")
            .or_else(|| self.field("message_id"))
            .map(str::to_owned)
            .or_else(|| {
                self.field("timestamp")
                    .map(|ts| format!("{room}/{sender}/{ts}"))
            });
        Some(ChatMessage {
            room: room.to_owned(),
            sender: sender.to_owned(),
            event_id,
            text: text.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use a2a_test_support::webhook::RawListener;

    use super::*;

    /// An incoming webhook that takes the post and never answers fails it once the channel's
    /// timeout (here 1 s) passes, saying it timed out: the bridge then retries the post
    /// instead of waiting for as long as the chat hangs.
    #[tokio::test]
    async fn a_post_the_chat_never_answers_times_out() {
        let silent = RawListener::silent().await;
        let url = format!("http://127.0.0.1:{}/hook", silent.port);
        let channel = WebhookChannel::new(&url, &PushPolicy::local())
            .unwrap()
            .timeout(Duration::from_secs(1));
        // The guard only turns a post that waits for ever into a failure.
        let posted =
            tokio::time::timeout(Duration::from_secs(30), channel.post("general", "hi", "k"))
                .await
                .expect("the post ends at its timeout");
        assert!(
            matches!(&posted, Err(ChannelError(why)) if why.contains("timed out")),
            "{posted:?}"
        );
        assert_eq!(silent.accepted(), 1, "the post reached the chat");
    }

    #[test]
    fn slack_forms_and_json_bodies_read_alike() {
        let form = b"token=T0k&team_id=T1&channel_id=C1&channel_name=general&timestamp=1355517523.000005&user_id=U1&user_name=ana&text=%5BA2A%3Adiscover%5D&trigger_word=%5BA2A";
        let hook = OutgoingWebhook::parse(Some("application/x-www-form-urlencoded"), form).unwrap();
        assert!(hook.has_token("T0k"));
        assert!(!hook.has_token("T0"));
        assert!(!hook.has_token(""));
        let m = hook.message().unwrap();
        assert_eq!(m.room, "general");
        assert_eq!(m.sender, "U1");
        assert_eq!(m.text, "[A2A:discover]");
        assert_eq!(m.event_id.as_deref(), Some("general/U1/1355517523.000005"));

        // Rocket.Chat's JSON: ids and flags of other types, its own message id.
        let body = br#"{"token":"T0k","channel_id":"C2","channel_name":"ops","user_name":"bob","text":"hi","message_id":"m-9","bot":false,"timestamp":1700000000}"#;
        let hook = OutgoingWebhook::parse(Some("application/json; charset=utf-8"), body).unwrap();
        let m = hook.message().unwrap();
        assert_eq!((m.room.as_str(), m.sender.as_str()), ("ops", "bob"));
        assert_eq!(m.event_id.as_deref(), Some("m-9"));
        assert_eq!(hook.field("bot"), Some("false"));

        assert!(OutgoingWebhook::parse(Some("application/json"), b"[1]").is_none());
        assert!(OutgoingWebhook::parse(Some("application/json"), b"nope").is_none());
        let empty = OutgoingWebhook::parse(None, b"token=x").unwrap();
        assert!(empty.message().is_none());
    }

    #[test]
    fn reply_urls_pass_the_url_policy() {
        let strict = PushPolicy::default();
        assert!(WebhookChannel::new("http://127.0.0.1:9/hook", &strict).is_err());
        assert!(WebhookChannel::new("https://10.0.0.1/hook", &strict).is_err());
        assert!(WebhookChannel::new("not a url", &strict).is_err());
        assert!(WebhookChannel::new("http://127.0.0.1:9/hook", &PushPolicy::local()).is_ok());
    }
}
