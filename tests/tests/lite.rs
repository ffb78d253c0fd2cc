//! A2A-Lite over the Slack-compatible webhook channel, end to end: `a2a-local` with
//! `A2A_LITE_WEBHOOK_TOKEN` and `A2A_LITE_WEBHOOK_REPLY_URL`, the chat's outgoing webhooks
//! POSTed to `/a2a-lite/webhook` over a real socket, and the agent's messages received by a real
//! incoming-webhook listener on 127.0.0.1 (what Slack, Mattermost or Rocket.Chat would show).

use std::sync::atomic::{AtomicU64, Ordering};

use a2a_e2e::*;
use a2a_protocol::lite::{parse, LiteCard, LiteKind, LiteState};
use serde_json::{json, Value};

const TOKEN: &str = "tok-3f9a1c77e2d04b18";

/// A room of the chat: the server, the incoming webhook its messages reach, and the chat's
/// outgoing webhook (what a person or another agent writes).
struct Room {
    server: Server,
    chat: Webhook,
    next_ts: AtomicU64,
}

/// One message the agent posted to the incoming webhook.
#[derive(Debug)]
struct Said {
    text: String,
    channel: String,
}

impl Said {
    /// The A2A-Lite message it is (panics on chat).
    fn lite(&self) -> a2a_protocol::lite::LiteMessage {
        parse(&self.text)
            .expect("the agent writes valid markers")
            .unwrap_or_else(|| panic!("not an A2A-Lite message: {}", self.text))
    }
}

impl Room {
    async fn open(extra: &[(&str, &str)]) -> Room {
        let chat = Webhook::start().await;
        let mut env = vec![
            ("A2A_LITE_WEBHOOK_TOKEN", TOKEN),
            ("A2A_LITE_WEBHOOK_REPLY_URL", chat.url.as_str()),
        ];
        env.extend_from_slice(extra);
        let server = Server::start_with_env(&env).await;
        Room {
            server,
            chat,
            next_ts: AtomicU64::new(1),
        }
    }

    /// Posts the chat's outgoing webhook as a form; its HTTP status.
    async fn post_form(&self, fields: &[(&str, &str)]) -> u16 {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        self.server
            .http()
            .post(self.server.url("/a2a-lite/webhook"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .expect("the webhook POST")
            .status()
            .as_u16()
    }

    /// `user` writes `text` in #general (a new chat message each time).
    async fn say(&self, user: &str, text: &str) -> u16 {
        let ts = format!(
            "1700000000.{:06}",
            self.next_ts.fetch_add(1, Ordering::SeqCst)
        );
        self.say_at(user, text, &ts).await
    }

    /// `user` writes `text` in #general at timestamp `ts` (the same `ts` again is the same
    /// chat message delivered again).
    async fn say_at(&self, user: &str, text: &str, ts: &str) -> u16 {
        self.say_in_at("general", user, text, ts).await
    }

    /// `user` writes `text` in the channel `room` (a new chat message).
    async fn say_in(&self, room: &str, user: &str, text: &str) -> u16 {
        let ts = format!(
            "1700000000.{:06}",
            self.next_ts.fetch_add(1, Ordering::SeqCst)
        );
        self.say_in_at(room, user, text, &ts).await
    }

    async fn say_in_at(&self, room: &str, user: &str, text: &str, ts: &str) -> u16 {
        self.post_form(&[
            ("token", TOKEN),
            ("team_id", "T1"),
            ("channel_id", room),
            ("channel_name", room),
            ("timestamp", ts),
            ("user_id", user),
            ("user_name", user),
            ("text", text),
        ])
        .await
    }

    /// The next message the agent posts to the room.
    async fn heard(&mut self) -> Said {
        let push = self
            .chat
            .next_within(EVENT_TIMEOUT)
            .await
            .expect("the agent posts to the room");
        assert_eq!(
            push.header("content-type"),
            Some("application/json"),
            "incoming-webhook JSON"
        );
        let body = push.json();
        let keys: Vec<&String> = body.as_object().expect("an object").keys().collect();
        assert_eq!(keys, ["channel", "text"], "{body}");
        Said {
            text: body["text"].as_str().expect("text").to_owned(),
            channel: body["channel"].as_str().expect("channel").to_owned(),
        }
    }

    /// Asks for the card and checks it is what the agent says next: proof that nothing was
    /// posted in between (no sleep needed to show an absence).
    async fn nothing_said_before_the_card(&mut self) {
        assert_eq!(self.say("U9", "[A2A:discover]").await, 200);
        let said = self.heard().await;
        assert_eq!(said.lite().kind, LiteKind::Card, "{}", said.text);
    }

    async fn tasks(&self) -> Vec<Value> {
        let listed = self
            .server
            .list_tasks(Binding::Rest, json!({"pageSize": 100}))
            .await
            .expect("ListTasks");
        listed["tasks"].as_array().cloned().unwrap_or_default()
    }
}

/// The A2A task id an `ack` names ("… This is A2A task <id>.").
fn a2a_task_of(ack: &Said) -> String {
    let word = ack
        .text
        .split_whitespace()
        .last()
        .expect("the ack names the task");
    word.trim_end_matches('.').to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_discovers_the_agent_and_its_tasks_are_a2a_tasks() {
    if !store_ready() {
        return;
    }
    let mut room = Room::open(&[]).await;

    assert_eq!(
        room.say("U1", "[A2A:discover]\nWhat can you do?").await,
        200
    );
    let card = room.heard().await;
    assert_eq!(card.channel, "general");
    assert_eq!(card.lite().kind, LiteKind::Card);
    let lite = LiteCard::from_message_body(&card.lite().body)
        .expect("the card message carries the JSON card")
        .expect("a valid card");
    assert_eq!(lite.protocol, "a2a-lite/1.0");
    assert!(lite.skills.iter().any(|s| s.id == "hold"), "{lite:?}");
    assert_eq!(lite.channels, vec!["webhook:general".to_string()]);
    assert_eq!(
        lite.a2a_agent_card,
        Some(format!(
            "{}/.well-known/agent-card.json",
            room.server.base()
        ))
    );

    assert_eq!(
        room.say("U1", "[A2A:task id=t1]\nhello from the room")
            .await,
        200
    );
    let ack = room.heard().await;
    assert_eq!(ack.lite().kind, LiteKind::Ack { task: "t1".into() });
    let task_id = a2a_task_of(&ack);
    let result = room.heard().await;
    assert_eq!(
        result.text,
        "[A2A:result task=t1 state=completed]\nhello from the room"
    );

    // An ordinary A2A task of the anonymous owner (auth off), with the room in its metadata.
    let task = room
        .server
        .get_task(Binding::Rest, &task_id, None)
        .await
        .expect("GetTask of the room's task");
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"],
        "hello from the room"
    );
    let sent = &task["history"][0];
    assert_eq!(sent["parts"][0]["text"], "hello from the room");
    assert_eq!(
        sent["metadata"]["a2aLite"],
        json!({"channel": "webhook", "room": "general", "sender": "U1", "taskId": "t1"})
    );
    let listed = room.tasks().await;
    assert!(
        listed.iter().any(|t| t["id"] == json!(task_id)),
        "{listed:?}"
    );
    // Its push config is the bridge's own receiver.
    let configs = room
        .server
        .list_push(Binding::Rest, &task_id)
        .await
        .expect("the task's push configs");
    let url = configs["configs"][0]["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("{}/a2a-lite/events?", room.server.base())),
        "{url}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_task_continues_and_a_cancel_ends_a_running_one() {
    if !store_ready() {
        return;
    }
    let mut room = Room::open(&[]).await;

    // input-required, with the question and how to answer; the answer continues the task.
    assert_eq!(
        room.say("U1", "[A2A:task id=h1 skill=hold]\nhold").await,
        200
    );
    assert_eq!(
        room.heard().await.lite().kind,
        LiteKind::Ack { task: "h1".into() }
    );
    let waiting = room.heard().await;
    let lite = waiting.lite();
    assert!(
        matches!(&lite.kind, LiteKind::Status { task, state: LiteState::InputRequired, .. } if task == "h1"),
        "{}",
        waiting.text
    );
    assert!(lite.body.contains("on hold"), "{}", waiting.text);
    assert!(lite.body.contains("[A2A:task id=h1]"), "{}", waiting.text);
    assert_eq!(room.say("U1", "[A2A:task id=h1]\nmy answer").await, 200);
    let ack = room.heard().await;
    assert_eq!(ack.text, "[A2A:ack task=h1]\nReceived your answer.");
    assert_eq!(
        room.heard().await.text,
        "[A2A:result task=h1 state=completed]\nmy answer"
    );
    // Another sender's task of the same name is another task: nothing to continue or cancel.
    assert_eq!(room.say("U2", "[A2A:cancel task=h1]").await, 200);
    let refused = room.heard().await;
    assert!(
        refused
            .text
            .contains("there is no task \"h1\" of yours here"),
        "{}",
        refused.text
    );
    assert!(parse(&refused.text).unwrap().is_none(), "a plain reply");

    // A queued job: working as it moves, then cancelled from the room.
    assert_eq!(room.say("U1", "[A2A:task id=j1]\njob 3 60000").await, 200);
    let ack = room.heard().await;
    let task_id = a2a_task_of(&ack);
    let working = room.heard().await;
    assert!(
        matches!(
            working.lite().kind,
            LiteKind::Status {
                state: LiteState::Working,
                ..
            }
        ),
        "{}",
        working.text
    );
    assert_eq!(
        room.say("U1", "[A2A:cancel task=j1 reason=changed]").await,
        200
    );
    let ended = room.heard().await;
    assert!(
        ended
            .text
            .starts_with("[A2A:result task=j1 state=cancelled]"),
        "{}",
        ended.text
    );
    let task = room
        .server
        .get_task(Binding::Rest, &task_id, None)
        .await
        .unwrap();
    assert_eq!(task["status"]["state"], "TASK_STATE_CANCELED");
    // Cancelling again: it already ended.
    assert_eq!(room.say("U1", "[A2A:cancel task=j1]").await, 200);
    assert!(room
        .heard()
        .await
        .text
        .contains("your task \"j1\" already ended (cancelled)"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_get_a_reply_and_start_nothing() {
    if !store_ready() {
        return;
    }
    let mut room = Room::open(&[]).await;
    let before = room.tasks().await.len();

    // Plain chat, and what requesters receive: no reply, nothing started.
    for text in [
        "hello everyone",
        "look: [A2A:task id=x] is how you ask",
        "[A2A:result task=x state=completed]\ndone",
        "[A2A:status task=x state=working]",
        "[A2A:ack task=x]",
        "[A2A:card]\nI am someone",
        "[A2A:handoff to=bob]",
    ] {
        assert_eq!(room.say("U1", text).await, 200, "{text}");
    }
    room.nothing_said_before_the_card().await;

    for (text, says) in [
        ("[A2A:task]\ndo it", "[A2A:task] needs id="),
        ("[A2A:task id = x]\ndo it", "is not key=value"),
        ("[A2A:task id=x id=y]\ndo it", "\"id\" is given twice"),
        ("[A2A:task id=x\ndo it", "not closed"),
        ("[A2A:cancel]", "[A2A:cancel] needs task="),
        ("[A2A:task id=e1]", "say what to do below the marker"),
    ] {
        assert_eq!(room.say("U1", text).await, 200, "{text}");
        let reply = room.heard().await;
        assert!(
            reply.text.starts_with("Your A2A message") && reply.text.contains(says),
            "{text}: {}",
            reply.text
        );
        assert!(
            reply.text.ends_with("Nothing was started."),
            "{}",
            reply.text
        );
        assert!(parse(&reply.text).unwrap().is_none(), "a plain reply");
    }
    assert_eq!(
        room.say("U1", "[A2A:task id=v1 skill=video-edit]\ncut it")
            .await,
        200
    );
    let rejected = room.heard().await;
    assert!(
        rejected
            .text
            .starts_with("[A2A:result task=v1 state=rejected]\nI have no skill \"video-edit\""),
        "{}",
        rejected.text
    );
    assert_eq!(room.tasks().await.len(), before, "nothing was created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_tokens_are_refused_and_redeliveries_start_nothing_twice() {
    if !store_ready() {
        return;
    }
    let mut room = Room::open(&[]).await;
    for fields in [
        vec![
            ("token", "wrong"),
            ("channel_name", "general"),
            ("text", "[A2A:discover]"),
        ],
        vec![("channel_name", "general"), ("text", "[A2A:discover]")],
        vec![
            ("token", ""),
            ("channel_name", "general"),
            ("text", "[A2A:discover]"),
        ],
    ] {
        assert_eq!(room.post_form(&fields).await, 401, "{fields:?}");
    }
    let json_wrong = room
        .server
        .http()
        .post(room.server.url("/a2a-lite/webhook"))
        .json(&json!({"token": "wrong", "channel_name": "general", "text": "[A2A:discover]"}))
        .send()
        .await
        .unwrap();
    assert_eq!(json_wrong.status(), 401);
    assert_eq!(
        json_wrong.bytes().await.unwrap().len(),
        0,
        "401 and nothing else"
    );
    // A push to the bridge's receiver without our token changes nothing either.
    let forged = room
        .server
        .http()
        .post(
            room.server
                .url("/a2a-lite/events?channel=webhook&room=general&sender=U1&task=t1"),
        )
        .header("x-a2a-notification-token", "forged")
        .json(&json!({"statusUpdate": {"taskId": "x", "contextId": "c",
                      "status": {"state": "TASK_STATE_COMPLETED"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 401);
    room.nothing_said_before_the_card().await;

    // JSON bodies (Mattermost, Rocket.Chat) are read like forms; a message the chat delivers
    // twice (same post id) starts one task.
    let post = json!({"token": TOKEN, "channel_id": "C1", "channel_name": "general",
                      "user_id": "U5", "user_name": "eve", "post_id": "p-1",
                      "text": "[A2A:task id=r1]\nonce"});
    for _ in 0..2 {
        let response = room
            .server
            .http()
            .post(room.server.url("/a2a-lite/webhook"))
            .json(&post)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.json::<Value>().await.unwrap(), json!({}));
    }
    let ack = room.heard().await;
    assert_eq!(ack.lite().kind, LiteKind::Ack { task: "r1".into() });
    assert_eq!(
        room.heard().await.text,
        "[A2A:result task=r1 state=completed]\nonce"
    );
    room.nothing_said_before_the_card().await;
    let ours: Vec<Value> = room
        .tasks()
        .await
        .into_iter()
        .filter(|t| t["id"] == json!(a2a_task_of(&ack)))
        .collect();
    assert_eq!(ours.len(), 1);
    let history = room
        .server
        .get_task(Binding::Rest, &a2a_task_of(&ack), None)
        .await
        .unwrap()["history"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(history, 1, "the message is in the task once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_auth_on_the_rooms_tasks_belong_to_the_channel_principal() {
    if !store_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("api-keys.json");
    let issue = |principal: &str| {
        let output = std::process::Command::new(ensure_built())
            .args([
                "keys",
                "issue",
                "--permissions",
                "all",
                "--principal",
                principal,
            ])
            .arg("--api-key-file")
            .arg(&file)
            .output()
            .expect("a2a-local keys issue");
        assert!(output.status.success());
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    let bot_key = issue("room-bot");
    let other_key = issue("someone");
    let mut room = Room::open(&[
        ("A2A_AUTH", "api-key"),
        ("A2A_API_KEY_FILE", file.to_str().unwrap()),
        ("A2A_LITE_PRINCIPAL", "key:room-bot"),
    ])
    .await;
    // The chat needs no API key: its token is its credential.
    assert_eq!(room.say("U1", "[A2A:task id=a1]\nowned").await, 200);
    let task_id = a2a_task_of(&room.heard().await);
    assert_eq!(
        room.heard().await.text,
        "[A2A:result task=a1 state=completed]\nowned"
    );
    let bot = room.server.client_with_headers(&[("X-API-Key", &bot_key)]);
    let other = room
        .server
        .client_with_headers(&[("X-API-Key", &other_key)]);
    assert!(bot.get_task(Binding::Rest, &task_id, None).await.is_ok());
    let err = other
        .get_task(Binding::Rest, &task_id, None)
        .await
        .expect_err("another owner's task is not found");
    err.assert_is(-32001, 404, "TASK_NOT_FOUND");
}

/// Sends `text` to our agent, answered at once (the room answers later); our task's id.
async fn give(server: &Server, text: &str) -> String {
    let answer = ok(server
        .send(
            Binding::JsonRpc,
            send_request_with(text, json!({"returnImmediately": true})),
        )
        .await);
    id_of(task_of(&answer))
}

/// Waits, following SubscribeToTask, until the task is in `wanted`; the task then.
async fn reaches(server: &Server, id: &str, wanted: &str) -> Value {
    let mut stream = server
        .subscribe(Binding::JsonRpc, id, None)
        .await
        .expect("SubscribeToTask");
    loop {
        let event = stream
            .next_within(EVENT_TIMEOUT)
            .await
            .expect("an event in time")
            .unwrap_or_else(|| panic!("the stream of {id} ended before {wanted}"));
        if event_state(&event.payload()) == Some(wanted) {
            return ok(server.get_task(Binding::JsonRpc, id, None).await);
        }
    }
}

/// What our agent posted to the room `room`: an `[A2A:task]` whose id names our task `ours`;
/// that id and the body.
async fn task_given(room: &mut Room, channel: &str, ours: &str) -> (String, String) {
    let said = room.heard().await;
    assert_eq!(said.channel, channel);
    let lite = said.lite();
    let LiteKind::Task { id, .. } = &lite.kind else {
        panic!("a task, not {}", said.text);
    };
    let named = a2a_channels::lite::OutboundTask::parse(id).expect("the id names our task");
    assert_eq!(named.task_id, ours);
    (id.clone(), lite.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegate_gives_a_room_agent_a_task_and_makes_its_result_ours() {
    if !store_ready() {
        return;
    }
    let mut room = Room::open(&[]).await;
    let ours = give(&room.server, "delegate lite:webhook:agents do the thing").await;
    let (x, body) = task_given(&mut room, "agents", &ours).await;
    assert_eq!(body, "do the thing");
    // A chat that shows the bridge its own post: not a task for us (nothing is acked, below).
    let echo = format!("[A2A:task id={x}]\n{body}");
    assert_eq!(room.say_in("agents", "a2a-bot", &echo).await, 200);

    // The room agent acknowledges and works: its progress is ours as soon as it is said.
    assert_eq!(
        room.say_in("agents", "lobster", &format!("[A2A:ack task={x}]\nOn it."))
            .await,
        200
    );
    let working = format!("[A2A:status task={x} state=working progress=50%]\nHalfway there.");
    assert_eq!(room.say_in("agents", "lobster", &working).await, 200);
    let task = ok(room.server.get_task(Binding::JsonRpc, &ours, None).await);
    assert_eq!(state(&task), "TASK_STATE_WORKING");
    assert_eq!(message_text(&task["status"]["message"]), "Halfway there.");

    // The same result from another room, or for a task id that is not ours, changes nothing.
    let result = format!(
        "[A2A:result task={x} state=completed]\nDone: 42.\n[附件: report.md] https://files.example/report.md"
    );
    assert_eq!(room.say_in("general", "mallory", &result).await, 200);
    let forged = result.replace(&x, "a2a.1-0.sZm9yZ2Vk.YW5vbnltb3Vz");
    assert_eq!(room.say_in("agents", "mallory", &forged).await, 200);
    let task = ok(room.server.get_task(Binding::JsonRpc, &ours, None).await);
    assert_eq!(state(&task), "TASK_STATE_WORKING", "{task}");
    assert!(artifacts(&task).is_empty(), "{task}");

    assert_eq!(room.say_in("agents", "lobster", &result).await, 200);
    let task = room.server.await_terminal(&ours, EVENT_TIMEOUT).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    let artifact = &artifacts(&task)[0];
    assert_eq!(artifact["parts"][0]["text"], "Done: 42.");
    assert_eq!(
        artifact["parts"][1]["url"],
        "https://files.example/report.md"
    );
    assert_eq!(artifact["parts"][1]["filename"], "report.md");
    // Nothing of this was answered in the rooms (no loops).
    room.nothing_said_before_the_card().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_agents_question_failure_and_our_cancel_go_both_ways() {
    if !store_ready() {
        return;
    }
    let mut room = Room::open(&[]).await;
    let ours = give(&room.server, "delegate lite:webhook:agents plan a trip").await;
    let (x, _) = task_given(&mut room, "agents", &ours).await;

    // Its question is our caller's; our caller's answer continues the same room task.
    let question = format!("[A2A:status task={x} state=input-required]\nWhich city?");
    assert_eq!(room.say_in("agents", "lobster", &question).await, 200);
    let task = reaches(&room.server, &ours, "TASK_STATE_INPUT_REQUIRED").await;
    assert_eq!(message_text(&task["status"]["message"]), "Which city?");
    let mut answer = follow_up(&ours, "Paris");
    answer["configuration"] = json!({"returnImmediately": true});
    ok(room.server.send(Binding::Rest, answer).await);
    let (again, body) = task_given(&mut room, "agents", &ours).await;
    assert_eq!((again.as_str(), body.as_str()), (x.as_str(), "Paris"));

    // Its failure is ours, with its reason.
    let failed = format!("[A2A:result task={x} state=failed]\nNo flights to Paris.");
    assert_eq!(room.say_in("agents", "lobster", &failed).await, 200);
    let task = room.server.await_terminal(&ours, EVENT_TIMEOUT).await;
    assert_eq!(state(&task), "TASK_STATE_FAILED", "{task}");
    let why = message_text(&task["status"]["message"]);
    assert!(
        why.contains("lite:webhook:agents failed: No flights to Paris."),
        "{why}"
    );

    // Canceling ours cancels the room's task, in the room.
    let ours = give(
        &room.server,
        "delegate lite:webhook:agents count to a million",
    )
    .await;
    let (x2, _) = task_given(&mut room, "agents", &ours).await;
    assert_ne!(x2, x, "a new call, a new room task");
    ok(room.server.cancel(Binding::JsonRpc, &ours).await);
    let cancel = room.heard().await;
    assert_eq!(cancel.channel, "agents");
    assert!(
        matches!(&cancel.lite().kind, LiteKind::Cancel { task, .. } if *task == x2),
        "{}",
        cancel.text
    );
    let late = format!("[A2A:result task={x2} state=completed]\ntoo late");
    assert_eq!(room.say_in("agents", "lobster", &late).await, 200);
    let task = ok(room.server.get_task(Binding::JsonRpc, &ours, None).await);
    assert_eq!(state(&task), "TASK_STATE_CANCELED", "{task}");
    assert!(artifacts(&task).is_empty(), "{task}");
    // Nothing else was said, but for the same cancel once more: a cancel that meets the task
    // message still on its way is sent by both sides of that race.
    assert_eq!(room.say("U9", "[A2A:discover]").await, 200);
    loop {
        let said = room.heard().await;
        match said.lite().kind {
            LiteKind::Card => break,
            LiteKind::Cancel { task, .. } if task == x2 => {}
            _ => panic!("nothing else is said: {}", said.text),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_agent_that_never_answers_is_canceled_at_the_timeout() {
    if !store_ready() {
        return;
    }
    let mut room = Room::open(&[
        ("A2A_DELEGATE_TIMEOUT_SECS", "2"),
        ("A2A_SWEEP_INTERVAL_SECS", "1"),
        ("A2A_REMOTE_POLL_SECS", "1"),
    ])
    .await;
    let ours = give(&room.server, "delegate lite:webhook:agents anyone there?").await;
    let (x, _) = task_given(&mut room, "agents", &ours).await;
    // Its polls read the room's task as it was given (nothing relayed, nothing stopped); at the
    // call's timeout the room is told to cancel, and ours fails saying why.
    let cancel = room.heard().await;
    assert!(
        matches!(&cancel.lite().kind, LiteKind::Cancel { task, .. } if *task == x),
        "{}",
        cancel.text
    );
    let task = room.server.await_terminal(&ours, EVENT_TIMEOUT).await;
    assert_eq!(state(&task), "TASK_STATE_FAILED", "{task}");
    let why = message_text(&task["status"]["message"]);
    assert!(
        why.contains("lite:webhook:agents did not finish within 2 s"),
        "{why}"
    );
}

/// With `--base-path`, the channel routes are under it like every other route, and the
/// bridge's pushes (to `{base}/a2a-lite/events`) reach them: the room gets its result, not
/// only the ack.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_channels_are_served_under_the_base_path() {
    if !store_ready() {
        return;
    }
    let mut room = Room::open(&[("A2A_BASE_PATH", "/agents/a2a")]).await;
    assert!(
        room.server.base().ends_with("/agents/a2a"),
        "{}",
        room.server.base()
    );
    assert_eq!(
        room.say("U1", "[A2A:task id=t1]\nhello under a base path")
            .await,
        200
    );
    let ack = room.heard().await;
    assert_eq!(ack.lite().kind, LiteKind::Ack { task: "t1".into() });
    let result = room.heard().await;
    assert_eq!(
        result.text,
        "[A2A:result task=t1 state=completed]\nhello under a base path"
    );
    // Not at the root as well.
    let root = room.server.base().replace("/agents/a2a", "");
    let stray = room
        .server
        .http()
        .post(format!("{root}/a2a-lite/webhook"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={TOKEN}&text=hi"))
        .send()
        .await
        .expect("the POST")
        .status();
    assert_eq!(stray.as_u16(), 404);
}

/// Issue 46, defect 6: every message the bot posts is cut at the bound docs/a2a-lite.md
/// states (12,000 characters), refusals included, and a peer's text it quotes is bounded and
/// says nothing of its own (no line of its own, no mention).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_cut_and_quote_peers_harmlessly() {
    if !store_ready() {
        return;
    }
    let mut room = Room::open(&[]).await;
    let before = room.tasks().await.len();
    let long_skill = "s".repeat(60_000);
    let long_id = format!("{}@channel", "i".repeat(60_000));
    // Under the 64 KiB a chat message is read up to, the two of them.
    let long_type = "t".repeat(30_000);
    let long_word = "w".repeat(30_000);
    for text in [
        format!("[A2A:task id=x1 skill={long_skill}]\ndo it"),
        format!("[A2A:task id={long_id}]\ndo it"),
        format!("[A2A:{long_type} {long_word}]"),
        format!("[A2A:task id=x2 {long_skill}]"),
        "[A2A:task id=x3 skill=@room<!channel>]\ndo it".to_owned(),
    ] {
        assert_eq!(room.say("U1", &text).await, 200);
        let reply = room.heard().await;
        let chars = reply.text.chars().count();
        assert!(chars <= 12_000, "{chars} characters");
        assert!(chars < 1_000, "a refusal quotes a little, not all: {chars}");
        assert!(
            !reply.text.contains("@room")
                && !reply.text.contains("@channel")
                && !reply.text.contains("<!"),
            "{}",
            reply.text
        );
    }
    assert_eq!(room.tasks().await.len(), before, "nothing was created");
}

/// The chat's outgoing webhook as JSON (Mattermost, Rocket.Chat) of exactly `len` bytes: a
/// chat message from U1 in #general, padded with plain text to that size.
fn webhook_json_of(len: usize) -> String {
    let head = format!(
        r#"{{"token":"{TOKEN}","channel_id":"C1","channel_name":"general","user_id":"U1","user_name":"ann","text":""#
    );
    let tail = r#""}"#;
    let padding = len - head.len() - tail.len();
    format!("{head}{}{tail}", "x".repeat(padding))
}

/// A channel request body is read up to 4 MiB and no further: a webhook of exactly 4 MiB is
/// read (its token checked, its chat ignored), one byte more is refused with 413 before the
/// bridge sees it. Exactly at the bound on both sides, so the test fails whether the bound is
/// raised, removed (axum's own default is 2 MiB) or lowered. The bound is one layer on all
/// the channel routes, Matrix transactions included; the webhook stands for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_body_is_read_up_to_four_mib() {
    if !store_ready() {
        return;
    }
    let mut room = Room::open(&[]).await;
    let post = |body: String| {
        room.server
            .http()
            .post(room.server.url("/a2a-lite/webhook"))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    const MAX: usize = 4 * 1024 * 1024;
    let at_the_bound = post(webhook_json_of(MAX)).await.unwrap();
    assert_eq!(at_the_bound.status(), 200, "4 MiB is read");
    let over = post(webhook_json_of(MAX + 1)).await.unwrap();
    assert_eq!(over.status(), 413, "a byte more is refused");
    // Neither is a message to the agent: the room hears nothing before the card.
    room.nothing_said_before_the_card().await;
}

/// A chat message is read up to 64 KiB: a task marker of exactly 65,536 bytes starts its
/// task; one of 65,537 is refused with a reply saying how long it was and what is read, and
/// starts nothing; longer chat without a marker is ignored without a reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_message_is_read_up_to_64_kib() {
    if !store_ready() {
        return;
    }
    let mut room = Room::open(&[]).await;
    const MAX: usize = 64 * 1024;
    let task_of = |id: &str, len: usize| {
        let head = format!("[A2A:task id={id}]\n");
        format!("{head}{}", "x".repeat(len - head.len()))
    };

    assert_eq!(room.say("U1", &task_of("at1", MAX)).await, 200);
    let ack = room.heard().await;
    assert_eq!(
        ack.lite().kind,
        LiteKind::Ack { task: "at1".into() },
        "{}",
        ack.text
    );
    let result = room.heard().await;
    assert!(
        result
            .text
            .starts_with("[A2A:result task=at1 state=completed]"),
        "{}",
        result.text
    );
    let before = room.tasks().await.len();

    assert_eq!(room.say("U1", &task_of("over1", MAX + 1)).await, 200);
    let refused = room.heard().await;
    assert!(
        refused
            .text
            .contains("This A2A message is 65537 bytes long; the most I read is 65536."),
        "{}",
        refused.text
    );
    assert!(parse(&refused.text).unwrap().is_none(), "a plain reply");

    // Chat is no business of the agent's, however long: no reply at all.
    assert_eq!(room.say("U1", &"chat ".repeat(MAX)).await, 200);
    room.nothing_said_before_the_card().await;
    assert_eq!(room.tasks().await.len(), before, "nothing more was started");
}
