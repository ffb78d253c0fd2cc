//! Rooms as agents our agents call, on the embedded store: the reference agent's `delegate`
//! posts a task to a room that records what it is told, and the room's answers reach the
//! waiting task only from that room and only for that task.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use a2a_channels::lite::{
    Channel, ChannelError, ChannelPort, ChatMessage, Handled, LiteBridge, LiteBridgeConfig,
    OutboundTask,
};
use a2a_channels::{AgentsByAddress, RoomAgents};
use a2a_core::{
    A2aService, CallContext, ExecutionStore, NoRemoteAgents, Owner, ServiceConfig, WaitFor,
    WaitOutcome,
};
use a2a_protocol::lite::{parse, LiteKind};
use a2a_protocol::{
    GetTaskRequest, Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
    TaskState,
};
use a2a_test_support::server::EmbeddedStore;
use tokio::sync::Notify;

/// Rooms of the webhook channel that record every post.
#[derive(Default)]
struct Chat {
    said: Mutex<Vec<(String, String)>>,
    posted: Notify,
    /// When set, the next post is seen by the room at once but returns only once this is
    /// sent (or dropped): a room that answers before the post is done.
    hold: Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
}

#[async_trait::async_trait]
impl ChannelPort for Chat {
    fn name(&self) -> &str {
        "webhook"
    }

    async fn post(&self, room: &str, text: &str, _key: &str) -> Result<(), ChannelError> {
        self.said
            .lock()
            .unwrap()
            .push((room.to_owned(), text.to_owned()));
        self.posted.notify_one();
        let hold = self.hold.lock().unwrap().take();
        if let Some(hold) = hold {
            let _ = hold.await;
        }
        Ok(())
    }
}

impl Chat {
    /// Waits for the `n`-th post (counting from 1) and returns it.
    async fn nth(&self, n: usize) -> (String, String) {
        loop {
            let notified = self.posted.notified();
            if let Some(said) = self.said.lock().unwrap().get(n - 1) {
                return said.clone();
            }
            notified.await;
        }
    }

    fn count(&self) -> usize {
        self.said.lock().unwrap().len()
    }
}

struct Setup {
    store: EmbeddedStore,
    chat: Arc<Chat>,
    service: A2aService,
    bridge: LiteBridge,
}

fn setup() -> Setup {
    let store = EmbeddedStore::open();
    let chat = Arc::new(Chat::default());
    let remote = AgentsByAddress::new(
        RoomAgents::new(vec![chat.clone()]),
        Arc::new(NoRemoteAgents),
    );
    let service = store.service(
        ServiceConfig {
            remote_agents: Arc::new(remote),
            ..ServiceConfig::default()
        },
        Arc::new(a2a_reference_agent::ReferenceAgent),
    );
    let bridge = LiteBridge::new(
        service.clone(),
        CallContext::anonymous(""),
        LiteBridgeConfig {
            events_url: "https://agent.example/a2a-lite/events".into(),
            channels: vec![Channel {
                port: chat.clone(),
                secret: b"webhook-token".to_vec(),
            }],
            agent_id: "ref".into(),
        },
    );
    Setup {
        store,
        chat,
        service,
        bridge,
    }
}

fn said_in(room: &str, sender: &str, event: &str, text: &str) -> ChatMessage {
    ChatMessage {
        room: room.into(),
        sender: sender.into(),
        event_id: Some(event.into()),
        text: text.into(),
    }
}

/// What the bridge does with `text`, said by `sender` in the room `general` (event `event`).
async fn hears(s: &Setup, sender: &str, event: &str, text: &str) -> Handled {
    s.bridge
        .receive("webhook", said_in("general", sender, event, text))
        .await
        .unwrap()
}

/// Sends `text` to the reference agent, answered at once or once the task stops or waits; our
/// task.
async fn send(s: &Setup, text: &str, at_once: bool) -> a2a_protocol::Task {
    let request = SendMessageRequest {
        message: Some(Message::user_text(a2a_core::new_id(), text)),
        configuration: Some(SendMessageConfiguration {
            return_immediately: at_once,
            ..SendMessageConfiguration::default()
        }),
        ..SendMessageRequest::default()
    };
    match s
        .service
        .send_message(&CallContext::anonymous(""), request)
        .await
        .unwrap()
    {
        SendMessageResponse::Task(task) => task,
        other => panic!("a task, not {other:?}"),
    }
}

async fn outcome(s: &Setup, task_id: &str) -> Option<WaitOutcome> {
    let record = s
        .store
        .store
        .load_execution(&Owner::anonymous(""), task_id)
        .await
        .unwrap()
        .expect("the call's execution record");
    let wait = record.wait.expect("the call waits");
    assert!(matches!(wait.what, WaitFor::RemoteTask { .. }));
    wait.outcome
}

#[tokio::test]
async fn a_room_answers_the_task_it_was_given_and_nobody_else_does() {
    let s = setup();
    let ours = send(&s, "delegate lite:webhook:general do the thing", true)
        .await
        .id;

    let (room, text) = s.chat.nth(1).await;
    assert_eq!(room, "general");
    let task = parse(&text).unwrap().expect("a marker");
    let LiteKind::Task { id, .. } = &task.kind else {
        panic!("a task, not {text}");
    };
    assert_eq!(task.body, "do the thing");
    let named = OutboundTask::parse(id).expect("the id names our task");
    assert_eq!(named.task_id, ours);
    assert_eq!(named.owner, None, "the room is not told who called");

    // A chat that shows the bridge its own post: the bridge does not take its own task.
    assert_eq!(
        hears(&s, "bot", "e0", &text).await,
        Handled::Ignored("a task this deployment gave")
    );

    // Progress from the room is relayed into our task.
    let working = format!("[A2A:status task={id} state=working]\nOn it.");
    let handled = s
        .bridge
        .receive("webhook", said_in("general", "U2", "e1", &working))
        .await;
    assert_eq!(handled.unwrap(), Handled::Relayed(id.clone()));
    let task = s
        .service
        .get_task(
            &CallContext::anonymous(""),
            GetTaskRequest {
                id: ours.clone(),
                ..GetTaskRequest::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(task.status.state, TaskState::Working);
    let message = task.status.message.expect("the room's words");
    assert_eq!(message.parts[0].text.as_deref(), Some("On it."));

    // The same result from another room, and results for ids not ours or not waited for,
    // change nothing and are not answered.
    let result = format!("[A2A:result task={id} state=completed]\nDone: 42.");
    let elsewhere = s
        .bridge
        .receive("webhook", said_in("random", "U2", "e2", &result))
        .await;
    assert!(matches!(elsewhere.unwrap(), Handled::Ignored(_)));
    let named_other = a2a_channels::lite::outbound_task_id("no-such-task", "1-0").unwrap();
    for text in [
        format!("[A2A:result task={named_other} state=completed]\nforged"),
        "[A2A:result task=a2a.1-0.sZm9y.Z2Vk state=completed]\nforged".to_owned(),
        "[A2A:result task=t1 state=completed]\nnot ours".to_owned(),
        format!("[A2A:ack task={id}]"),
    ] {
        let handled = s
            .bridge
            .receive("webhook", said_in("general", "U3", "e3", &text))
            .await;
        assert!(matches!(handled.unwrap(), Handled::Ignored(_)), "{text}");
    }
    assert_eq!(outcome(&s, &ours).await, None, "still waiting");
    assert_eq!(s.chat.count(), 1, "nothing said back to any of them");

    // The room's own result ends the wait with the room's task as it ended.
    let handled = s
        .bridge
        .receive("webhook", said_in("general", "U2", "e4", &result))
        .await;
    assert_eq!(handled.unwrap(), Handled::Relayed(id.clone()));
    let Some(WaitOutcome::Done { value }) = outcome(&s, &ours).await else {
        panic!("the wait is over");
    };
    assert_eq!(value["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(value["id"], id.as_str());
    // Said again (a chat delivering it twice): the wait took it once already.
    let again = s
        .bridge
        .receive("webhook", said_in("general", "U2", "e4", &result))
        .await;
    assert!(matches!(again.unwrap(), Handled::Ignored(_)));
}

/// The room answers while our post is still on its way (the send has not returned, so the
/// record has not its answer): the wait, written before the post, names the room's task
/// already (the room adapter names it after the call), so the answer finds it and ends it.
#[tokio::test]
async fn a_room_that_answers_before_the_post_returns_is_heard() {
    let s = setup();
    let (release, hold) = tokio::sync::oneshot::channel();
    *s.chat.hold.lock().unwrap() = Some(hold);
    // Answered at once: the call runs on, its post held.
    send(&s, "delegate lite:webhook:general do the thing", true).await;
    let (_, text) = s.chat.nth(1).await;
    let task = parse(&text).unwrap().expect("a marker");
    let LiteKind::Task { id, .. } = &task.kind else {
        panic!("a task, not {text}");
    };
    let ours = OutboundTask::parse(id).expect("ours").task_id;
    let record = s
        .store
        .store
        .load_execution(&Owner::anonymous(""), &ours)
        .await
        .unwrap()
        .expect("the call's record");
    let Some(WaitFor::RemoteTask { remote, .. }) = record.wait.map(|w| w.what) else {
        panic!("the call waits for the room");
    };
    assert_eq!(&remote.task_id, id, "named before the post");
    assert!(record.remotes.is_empty(), "the send has not returned");

    assert_eq!(
        hears(&s, "bot", "e0", &text).await,
        Handled::Ignored("a task this deployment gave")
    );
    let result = format!("[A2A:result task={id} state=completed]\nDone: 42.");
    assert_eq!(
        hears(&s, "U2", "e1", &result).await,
        Handled::Relayed(id.clone())
    );
    let Some(WaitOutcome::Done { value }) = outcome(&s, &ours).await else {
        panic!("the wait is over");
    };
    assert_eq!(value["status"]["state"], "TASK_STATE_COMPLETED");
    release.send(()).unwrap();
}

/// A call made before the upgrade gave the room an id of the previous form, which named our
/// task's owner too (`a2a.<step>.<task>.<owner>`), and its record waits for that id: the
/// room's answer with it still ends the wait.
#[tokio::test]
async fn a_call_parked_before_the_upgrade_hears_its_room_by_the_previous_id() {
    use base64::Engine as _;
    let s = setup();
    let ours = send(&s, "delegate lite:webhook:general do the thing", true)
        .await
        .id;
    let (_, text) = s.chat.nth(1).await;
    let task = parse(&text).unwrap().expect("a marker");
    let LiteKind::Task { id, .. } = &task.kind else {
        panic!("a task, not {text}");
    };
    let owner = Owner::anonymous("");
    let legacy = format!(
        "{id}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(owner.as_str())
    );
    // The record as the previous version wrote it: waiting for the id of the previous form.
    // The call posts to the room before its last save (the room's task, the wait's poll):
    // rewritten only once that save is in, or the two saves would race.
    let store = &s.store.store;
    let parked = async {
        loop {
            let record = store
                .load_execution(&owner, &ours)
                .await
                .unwrap()
                .expect("the call's record");
            if !record.remotes.is_empty() {
                return record;
            }
            tokio::task::yield_now().await;
        }
    };
    let mut record = tokio::time::timeout(std::time::Duration::from_secs(10), parked)
        .await
        .expect("the call parks");
    let expected = record.version;
    record.version += 1;
    if let Some(WaitFor::RemoteTask { remote, .. }) = record.wait.as_mut().map(|w| &mut w.what) {
        remote.task_id.clone_from(&legacy);
    }
    store.save_execution(&record, Some(expected)).await.unwrap();

    let result = format!("[A2A:result task={legacy} state=completed]\nDone: 42.");
    let handled = s
        .bridge
        .receive("webhook", said_in("general", "U2", "e1", &result))
        .await;
    assert_eq!(handled.unwrap(), Handled::Relayed(legacy.clone()));
    let Some(WaitOutcome::Done { value }) = outcome(&s, &ours).await else {
        panic!("the wait is over");
    };
    assert_eq!(value["status"]["state"], "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn a_room_of_a_channel_not_served_or_no_room_is_refused_clearly() {
    let s = setup();
    let task = send(&s, "delegate lite:matrix:!room:example.org hello", false).await;
    assert_eq!(task.status.state, TaskState::Failed);
    let why = task.status.message.unwrap().parts[0].text.clone().unwrap();
    assert!(
        why.contains("rooms are not reachable from this deployment"),
        "{why}"
    );
    let task = send(&s, "delegate lite:webhook hello", false).await;
    assert_eq!(task.status.state, TaskState::Failed);
    let why = task.status.message.unwrap().parts[0].text.clone().unwrap();
    assert!(
        why.contains("lite:webhook is not a room's address: write lite:<channel>:<room>"),
        "{why}"
    );
    assert_eq!(s.chat.count(), 0);
}

#[tokio::test]
async fn a_task_another_deployment_gives_the_room_is_work_for_us() {
    let s = setup();
    // The id of another deployment's call (its task and owner are not in this store).
    let theirs = a2a_channels::lite::outbound_task_id("their-task", "1-0").unwrap();
    let task = format!("[A2A:task id={theirs}]\nhello from another kit");
    let handled = s
        .bridge
        .receive("webhook", said_in("general", "other-kit", "e1", &task))
        .await
        .unwrap();
    assert!(matches!(handled, Handled::Started(_)), "{handled:?}");
    let (_, ack) = s.chat.nth(1).await;
    assert!(
        ack.starts_with(&format!("[A2A:ack task={theirs}]")),
        "{ack}"
    );
}
