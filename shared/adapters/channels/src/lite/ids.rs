//! The ids and tokens the bridge derives, so that it keeps nothing of its own: the A2A task of a
//! room's task, the context of a room, the messageId of a chat message, and the token that
//! proves a push to the bridge's receiver came from this deployment.

use aws_lc_rs::hmac;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use uuid::Uuid;

/// The namespace of the ids derived here (a fixed random UUID, never to change: the tasks of
/// the rooms would no longer be found).
const NAMESPACE: Uuid = Uuid::from_u128(0x3d0c_9b51_77e2_4c4a_8f0e_5a61_c9d2_e714);

/// Fields joined with each one's length in front, so that no two lists give the same name.
fn name(kind: &str, fields: &[&str]) -> String {
    let mut out = String::from(kind);
    for field in fields {
        out.push_str(&format!(":{}:{field}", field.len()));
    }
    out
}

/// The A2A task of the task `lite_id` that `sender` gave in `room` of `channel`. The sender is
/// part of it: two agents in one room may both call their task `task-1`, and neither can
/// continue or cancel the other's.
pub(crate) fn task_id(channel: &str, room: &str, sender: &str, lite_id: &str) -> String {
    let name = name("lite-task", &[channel, room, sender, lite_id]);
    Uuid::new_v5(&NAMESPACE, name.as_bytes()).to_string()
}

/// The A2A context of a room: its tasks are one conversation (`a2a list --context`).
pub(crate) fn context_id(channel: &str, room: &str) -> String {
    let name = name("lite-context", &[channel, room]);
    Uuid::new_v5(&NAMESPACE, name.as_bytes()).to_string()
}

/// The messageId of a chat message, from the chat's own id for it: a message the chat delivers
/// twice is one message (SendMessage is idempotent per messageId). Without an id, a new one.
pub(crate) fn message_id(channel: &str, room: &str, event_id: Option<&str>) -> String {
    match event_id.filter(|id| !id.is_empty()) {
        Some(event) => {
            let name = name("lite-message", &[channel, room, event]);
            Uuid::new_v5(&NAMESPACE, name.as_bytes()).to_string()
        }
        None => a2a_core::new_id(),
    }
}

/// The key of a message the bridge posts, for channels that de-duplicate sends: the same for
/// the same reply to the same chat message, or for the same event of a task.
pub(crate) fn post_key(parts: &[&str]) -> String {
    let digest = aws_lc_rs::digest::digest(
        &aws_lc_rs::digest::SHA256,
        name("lite-post", parts).as_bytes(),
    );
    URL_SAFE_NO_PAD.encode(&digest.as_ref()[..18])
}

/// The push config token of an A2A task whose events go to `target`: an HMAC under the
/// channel's secret of the task and everything the receiver acts on, so that a token proves
/// the push is ours and cannot be replayed for another task or room.
pub(crate) fn push_token(secret: &[u8], a2a_task: &str, target: &[&str]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let mut fields = vec![a2a_task];
    fields.extend_from_slice(target);
    let tag = hmac::sign(&key, name("lite-push", &fields).as_bytes());
    URL_SAFE_NO_PAD.encode(tag.as_ref())
}

/// Whether `token` is [`push_token`] of the same inputs (compared in constant time).
pub(crate) fn push_token_matches(
    secret: &[u8],
    a2a_task: &str,
    target: &[&str],
    token: &str,
) -> bool {
    let Ok(tag) = URL_SAFE_NO_PAD.decode(token) else {
        return false;
    };
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let mut fields = vec![a2a_task];
    fields.extend_from_slice(target);
    hmac::verify(&key, name("lite-push", &fields).as_bytes(), &tag).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_differ_by_every_field_and_never_collide_by_concatenation() {
        let a = task_id("matrix", "!r:x", "@a:x", "t1");
        assert_eq!(a, task_id("matrix", "!r:x", "@a:x", "t1"), "stable");
        for other in [
            task_id("webhook", "!r:x", "@a:x", "t1"),
            task_id("matrix", "!s:x", "@a:x", "t1"),
            task_id("matrix", "!r:x", "@b:x", "t1"),
            task_id("matrix", "!r:x", "@a:x", "t2"),
            // Shifting text between fields gives another id.
            task_id("matrix", "!r:x@a", ":x", "t1"),
        ] {
            assert_ne!(a, other);
        }
        assert_ne!(context_id("matrix", "!r:x"), context_id("matrix", "!s:x"));
        assert_eq!(
            message_id("m", "r", Some("$e1")),
            message_id("m", "r", Some("$e1"))
        );
        assert_ne!(message_id("m", "r", None), message_id("m", "r", None));
        assert_ne!(
            message_id("m", "r", Some("")),
            message_id("m", "r", Some(""))
        );
        assert_ne!(post_key(&["ack", "e1"]), post_key(&["ack", "e2"]));
    }

    #[test]
    fn push_tokens_bind_the_task_and_the_target() {
        let target = ["matrix", "!r:x", "@a:x", "t1"];
        let token = push_token(b"secret", "task-1", &target);
        assert!(push_token_matches(b"secret", "task-1", &target, &token));
        assert!(!push_token_matches(b"other", "task-1", &target, &token));
        assert!(!push_token_matches(b"secret", "task-2", &target, &token));
        let elsewhere = ["matrix", "!s:x", "@a:x", "t1"];
        assert!(!push_token_matches(b"secret", "task-1", &elsewhere, &token));
        assert!(!push_token_matches(
            b"secret",
            "task-1",
            &target,
            "not base64!"
        ));
        assert!(!push_token_matches(b"secret", "task-1", &target, ""));
    }
}
