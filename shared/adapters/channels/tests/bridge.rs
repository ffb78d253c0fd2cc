//! The bridge on the embedded store, with a room that records what it is told: what a push
//! becomes, what happens when the room cannot be told, who may push, and that nothing the bridge
//! says makes a bridge say anything (no loops).

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use a2a_channels::lite::{
    Channel, ChannelError, ChannelPort, ChatMessage, DeliveryError, EventTarget, Handled,
    LiteBridge, LiteBridgeConfig,
};
use a2a_core::{
    CallContext, LoggedEvent, Owner, PushConfigStore, ServiceConfig, TaskEvent, TaskLogStore,
};
use a2a_protocol::{
    Artifact, Message, Part, StreamResponse, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent, Timestamp,
};
use a2a_test_support::server::EmbeddedStore;

/// A room that records every post, and can be made unreachable.
#[derive(Default)]
struct Room {
    said: Mutex<Vec<(String, String)>>,
    down: AtomicBool,
}

#[async_trait::async_trait]
impl ChannelPort for Room {
    fn name(&self) -> &str {
        "webhook"
    }

    async fn post(&self, room: &str, text: &str, _key: &str) -> Result<(), ChannelError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(ChannelError("the chat server is down".into()));
        }
        self.said
            .lock()
            .unwrap()
            .push((room.to_owned(), text.to_owned()));
        Ok(())
    }
}

impl Room {
    fn said(&self) -> Vec<String> {
        self.said
            .lock()
            .unwrap()
            .iter()
            .map(|(_, t)| t.clone())
            .collect()
    }
}

struct Setup {
    store: EmbeddedStore,
    room: Arc<Room>,
    bridge: LiteBridge,
}

/// A bridge whose tasks stay queued (no worker runs here): their states are set by the test.
fn setup() -> Setup {
    let store = EmbeddedStore::open();
    let service = store.service(
        ServiceConfig {
            background_inline: false,
            ..ServiceConfig::default()
        },
        Arc::new(a2a_reference_agent::ReferenceAgent),
    );
    let room = Arc::new(Room::default());
    let bridge = LiteBridge::new(
        service,
        CallContext::anonymous(""),
        LiteBridgeConfig {
            events_url: "https://agent.example/a2a-lite/events".into(),
            channels: vec![Channel {
                port: room.clone(),
                secret: b"webhook-token".to_vec(),
            }],
            agent_id: "ref".into(),
        },
    );
    Setup {
        store,
        room,
        bridge,
    }
}

fn chat(sender: &str, event: &str, text: &str) -> ChatMessage {
    ChatMessage {
        room: "general".into(),
        sender: sender.into(),
        event_id: Some(event.into()),
        text: text.into(),
    }
}

/// Appends `events` to the task (as an agent's run would), returning the stream responses.
async fn append(s: &Setup, task_id: &str, events: Vec<TaskEvent>) -> Vec<StreamResponse> {
    let owner = Owner::anonymous("");
    let head = s
        .store
        .store
        .load_task(&owner, task_id)
        .await
        .unwrap()
        .unwrap();
    let mut next = head.clone();
    let mut logged = Vec::new();
    for event in events {
        event.apply(&mut next.task).unwrap();
        next.version += 1;
        logged.push(LoggedEvent {
            seq: next.version,
            at: Timestamp::now(),
            event,
        });
    }
    s.store
        .store
        .append_events(&next, head.version, &logged)
        .await
        .unwrap();
    logged
        .iter()
        .filter_map(|l| l.event.to_stream_response())
        .collect()
}

fn status(task_id: &str, state: TaskState, text: &str) -> TaskEvent {
    TaskEvent::Status {
        update: TaskStatusUpdateEvent {
            task_id: task_id.into(),
            status: TaskStatus {
                state,
                message: Some(Message::agent_text(text)),
                timestamp: None,
            },
            ..Default::default()
        },
    }
}

#[tokio::test]
async fn pushes_become_room_messages_and_a_room_that_is_down_is_retried() {
    let s = setup();
    let handled = s
        .bridge
        .receive(
            "webhook",
            chat("U1", "e1", "[A2A:task id=t1]\nreport please"),
        )
        .await
        .unwrap();
    let Handled::Started(task_id) = handled else {
        panic!("{handled:?}")
    };
    let owner = Owner::anonymous("");
    let config = s
        .store
        .store
        .list_push_configs(&owner, &task_id)
        .await
        .unwrap()
        .pop()
        .expect("the task's push config");
    let target = EventTarget::from_query(config.url.split_once('?').unwrap().1).unwrap();
    assert_eq!(
        target,
        EventTarget {
            channel: "webhook".into(),
            room: "general".into(),
            sender: "U1".into(),
            task: "t1".into()
        }
    );
    let artifact = Artifact {
        artifact_id: "r".into(),
        name: "report".into(),
        parts: vec![Part::text("all good")],
        ..Default::default()
    };
    let pushes = append(
        &s,
        &task_id,
        vec![
            status(&task_id, TaskState::Working, "step 1/1"),
            TaskEvent::Artifact {
                update: TaskArtifactUpdateEvent {
                    task_id: task_id.clone(),
                    artifact,
                    last_chunk: true,
                    ..Default::default()
                },
            },
            status(&task_id, TaskState::Completed, "Report ready."),
        ],
    )
    .await;
    // The room is down: the terminal push fails, to be retried by the push pipeline.
    s.room.down.store(true, Ordering::SeqCst);
    let err = s
        .bridge
        .deliver(&target, &config.token, &pushes[2])
        .await
        .unwrap_err();
    assert!(matches!(err, DeliveryError::Unavailable(_)), "{err:?}");
    s.room.down.store(false, Ordering::SeqCst);
    for push in &pushes {
        s.bridge
            .deliver(&target, &config.token, push)
            .await
            .expect("delivered");
    }
    let said = s.room.said();
    assert_eq!(
        said.len(),
        3,
        "ack, working, result (the artifact chunk says nothing): {said:?}"
    );
    assert!(said[0].starts_with("[A2A:ack task=t1]\n"));
    assert_eq!(said[1], "[A2A:status task=t1 state=working]\nstep 1/1");
    assert_eq!(
        said[2],
        "[A2A:result task=t1 state=completed]\nReport ready.\n\nall good"
    );

    // Only our token for this task and target is accepted.
    for (target, token) in [
        (target.clone(), "forged".to_owned()),
        (
            EventTarget {
                room: "elsewhere".into(),
                ..target.clone()
            },
            config.token.clone(),
        ),
        (
            EventTarget {
                channel: "matrix".into(),
                ..target.clone()
            },
            config.token.clone(),
        ),
    ] {
        assert_eq!(
            s.bridge.deliver(&target, &token, &pushes[2]).await,
            Err(DeliveryError::Unauthorized),
            "{target:?}"
        );
    }
    assert_eq!(s.room.said().len(), 3, "nothing more was said");
}

#[tokio::test]
async fn nothing_the_bridge_says_makes_a_bridge_say_anything() {
    let s = setup();
    for (event, text) in [
        ("e1", "[A2A:discover]"),
        ("e2", "[A2A:task id=t1]\nhello"),
        ("e3", "[A2A:task]\nbroken"),
        ("e4", "[A2A:task id=t2 skill=nope]\nx"),
        ("e5", "[A2A:cancel task=missing]"),
    ] {
        s.bridge
            .receive("webhook", chat("U1", event, text))
            .await
            .unwrap();
    }
    let said = s.room.said();
    assert_eq!(said.len(), 5, "{said:?}");
    // Another bridge in the room (or this one, reading its own messages back) hears all of it.
    for (i, text) in said.iter().enumerate() {
        let handled = s
            .bridge
            .receive("webhook", chat("other-bridge", &format!("echo-{i}"), text))
            .await
            .unwrap();
        assert!(
            matches!(handled, Handled::Ignored(_)),
            "{text}: {handled:?}"
        );
    }
    assert_eq!(s.room.said().len(), 5, "no answer to any of it");
}
