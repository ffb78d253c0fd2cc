//! Waits for other agents on a store, through the real service. The relay route's checks: a
//! push's token is checked against the task's relay gate before anything else is read,
//! strangers get one answer whether or not the task exists or waits, a token whose wait ended
//! is told so, and the relay URL of the previous form (which named the owner) is still taken,
//! for waits parked before the upgrade (with or without a gate). The sweep of due waits: a
//! remote that never answers its poll does not hold up the others.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::{
    A2aService, Agent, AgentCall, AgentDescription, AgentError, AgentRequest, CallContext, CallKey,
    Emitter, Owner, Placement, RelayAnswer, RemoteAgents, RemoteError, RemoteSent, RemoteTaskRef,
    ServiceConfig, StoreError, TaskStore, WaitFor, WorkJob, WorkQueue,
};
use a2a_protocol::{
    Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, Task,
    TaskPushNotificationConfig, TaskState,
};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use futures::future::BoxFuture;

use crate::unique;

/// The base URL of the REST interface: the relay URLs' base.
pub const REST_BASE: &str = "https://agent.example";

const REMOTE: &str = "https://remote-agent.example";

/// Removes the relay gate of the owner's task, as a store of the previous version would not
/// have written it (each store's test knows where it lives).
pub type ForgetGate = Box<dyn Fn(Owner, String) -> BoxFuture<'static, ()> + Send + Sync>;

/// Delegates to the agent its message names (`delegate <url>`), after a step whose result is
/// `step_bytes` characters (a record that holds a large answer).
struct Delegating {
    step_bytes: usize,
}

#[async_trait::async_trait]
impl Agent for Delegating {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "delegating".into(),
            ..AgentDescription::default()
        }
    }

    fn placement(&self, _request: &AgentRequest) -> Placement {
        Placement::Inline
    }

    async fn execute(&self, request: AgentRequest, e: Emitter) -> Result<(), AgentError> {
        e.working(None).await?;
        let bytes = self.step_bytes;
        let big: String = e
            .step("big", || async move {
                Ok(URL_SAFE_NO_PAD.encode(crate::durable::noise(bytes * 3 / 4)))
            })
            .await?;
        let agent = request.text().split_whitespace().nth(1).unwrap_or(REMOTE);
        let call = AgentCall::text(agent, "do the work", Duration::from_secs(3600));
        let theirs = e
            .call_agent("delegate", call)
            .await?
            .task
            .unwrap_or_default();
        e.complete(Some(&format!("{} {:?}", big.len(), theirs.status.state)))
            .await
    }
}

/// The other agent: keeps the push config it is sent, answers WORKING (and pushes, if
/// `pushes`); a poll answers COMPLETED, except at [`SLOW`], where it never answers.
#[derive(Debug, Default)]
struct Other {
    pushes: bool,
    config: Mutex<Option<TaskPushNotificationConfig>>,
}

/// An agent whose polls never answer.
const SLOW: &str = "https://slow-agent.example";

fn their_task(state: TaskState) -> Task {
    Task {
        id: "their-task".into(),
        context_id: "their-context".into(),
        status: a2a_protocol::TaskStatus {
            state,
            ..Default::default()
        },
        ..Task::default()
    }
}

#[async_trait::async_trait]
impl RemoteAgents for Other {
    async fn send(
        &self,
        _agent: &str,
        _key: &CallKey,
        _message: Message,
        push: Option<TaskPushNotificationConfig>,
        _traceparent: Option<&str>,
    ) -> Result<RemoteSent, RemoteError> {
        *self.config.lock().expect("lock") = push;
        Ok(RemoteSent {
            answer: SendMessageResponse::Task(their_task(TaskState::Working)),
            pushes: self.pushes,
        })
    }

    async fn get_task(
        &self,
        remote: &RemoteTaskRef,
        _traceparent: Option<&str>,
    ) -> Result<Task, RemoteError> {
        if remote.agent == SLOW {
            futures::future::pending::<()>().await;
        }
        Ok(their_task(TaskState::Completed))
    }

    async fn cancel_task(
        &self,
        _remote: &RemoteTaskRef,
        _traceparent: Option<&str>,
    ) -> Result<(), RemoteError> {
        Ok(())
    }

    async fn verify_push(
        &self,
        _agent: &str,
        _audiences: &[String],
        _signature: &str,
        _body: &[u8],
    ) -> Result<(), RemoteError> {
        Err(RemoteError::Refused("not signed here".into()))
    }
}

/// A work queue that takes every job and runs none: the relay tests move executions on by hand.
struct Nowhere;

#[async_trait::async_trait]
impl WorkQueue for Nowhere {
    async fn enqueue_work(&self, _job: &WorkJob) -> Result<(), StoreError> {
        Ok(())
    }

    async fn enqueue_work_after(&self, _job: &WorkJob, _delay: Duration) -> Result<(), StoreError> {
        Ok(())
    }
}

/// One task of ours parked on a call to another agent that pushes.
pub struct Parked {
    /// The service, on the store.
    pub service: A2aService,
    /// The caller.
    pub ctx: CallContext,
    /// Our task.
    pub task_id: String,
    /// The relay URL the other agent was given.
    pub url: String,
    /// The push config's token.
    pub token: String,
}

/// A service on `store` whose agent delegates to `other` (after a step of `step_bytes`),
/// polling every `poll`.
fn delegating(
    store: Arc<dyn TaskStore>,
    other: Arc<Other>,
    poll: Duration,
    step_bytes: usize,
) -> A2aService {
    let config = ServiceConfig {
        interfaces: vec![a2a_protocol::AgentInterface {
            url: REST_BASE.into(),
            protocol_binding: a2a_protocol::BINDING_HTTP_JSON.into(),
            protocol_version: "1.0".into(),
            tenant: String::new(),
        }],
        remote_agents: other,
        remote_poll: poll,
        ..ServiceConfig::default()
    };
    A2aService::new(
        config,
        Arc::new(Delegating { step_bytes }),
        store,
        Arc::new(Nowhere),
        Arc::new(crate::durable::NoPush),
    )
}

/// Sends `text` to `service` as `ctx`, and waits until the task parked on its call (the
/// record names the remote's task): its id.
async fn parked(
    service: &A2aService,
    store: &dyn TaskStore,
    ctx: &CallContext,
    text: &str,
) -> String {
    let request = SendMessageRequest {
        message: Some(Message::user_text(unique("m"), text)),
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        }),
        ..SendMessageRequest::default()
    };
    let SendMessageResponse::Task(task) = service.send_message(ctx, request).await.expect("sent")
    else {
        panic!("a task");
    };
    for _ in 0..500 {
        let record = store.load_execution(&ctx.owner, &task.id).await.unwrap();
        let parked = record.and_then(|r| r.wait).is_some_and(
            |w| matches!(&w.what, WaitFor::RemoteTask { remote, .. } if !remote.task_id.is_empty()),
        );
        if parked {
            return task.id;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {} did not park", task.id);
}

/// Parks a task of ours on a call to an agent that pushes, after a step whose result is
/// `step_bytes` characters.
pub async fn park_a_delegation(store: Arc<dyn TaskStore>, step_bytes: usize) -> Parked {
    let other = Arc::new(Other {
        pushes: true,
        ..Other::default()
    });
    let service = delegating(
        store.clone(),
        other.clone(),
        Duration::from_secs(30),
        step_bytes,
    );
    let ctx = CallContext::anonymous(&unique("tenant"));
    let task_id = parked(&service, &*store, &ctx, "delegate").await;
    let config = other.config.lock().unwrap().clone().expect("a push config");
    Parked {
        service,
        ctx,
        task_id,
        url: config.url,
        token: config.token,
    }
}

/// One push of a WORKING status to the relay route of `task` (`owner`: the previous form's
/// owner segment), with `token`.
async fn push(service: &A2aService, task: &str, owner: Option<&str>, token: &str) -> RelayAnswer {
    service
        .relay_push(task, owner, token, None, WORKING_PUSH.as_bytes())
        .await
        .expect("answered")
}

const WORKING_PUSH: &str = r#"{"statusUpdate":{"taskId":"their-task","contextId":"their-context","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"w1","role":"ROLE_AGENT","parts":[{"text":"on it"}]}}}}"#;

/// The relay route's answers on this store: the URL names no owner; a wrong token gets
/// [`RelayAnswer::Refused`] whether the task waits or does not exist, the right one is taken
/// (also at the previous form of the URL, which named the owner, with or without a gate);
/// once our task ended, its token is told [`RelayAnswer::Gone`] while a stranger still gets
/// `Refused`.
pub async fn relay_pushes_are_checked_before_anything_else(
    store: Arc<dyn TaskStore>,
    forget_gate: ForgetGate,
) {
    let p = park_a_delegation(store.clone(), 10).await;
    let owner = p.ctx.owner.clone();
    let owner_segment = URL_SAFE_NO_PAD.encode(owner.as_str());
    assert_eq!(
        p.url,
        format!("{REST_BASE}/a2a-relay/{}", p.task_id),
        "the relay URL names our task, and nobody's name"
    );
    assert!(!p.url.contains(&owner_segment), "{}", p.url);
    let service = &p.service;
    let strangers = [
        push(service, &p.task_id, None, "wrong").await,
        push(service, "no-such-task", None, "wrong").await,
        push(service, "no-such-task", None, &p.token).await,
        push(service, &p.task_id, Some(&owner_segment), "wrong").await,
        push(service, "no-such-task", Some(&owner_segment), &p.token).await,
        push(service, &p.task_id, Some("not-base64!"), "wrong").await,
    ];
    assert_eq!(strangers, [RelayAnswer::Refused; 6]);
    assert_eq!(
        push(service, &p.task_id, None, &p.token).await,
        RelayAnswer::Taken,
        "the token holder is heard"
    );
    assert_eq!(
        push(service, &p.task_id, Some(&owner_segment), &p.token).await,
        RelayAnswer::Taken,
        "at the previous form of the URL too"
    );
    // A wait parked before the upgrade has no gate: the previous form is checked against its
    // record, as before; the new form, which it never gave out, is refused.
    forget_gate(owner.clone(), p.task_id.clone()).await;
    assert_eq!(
        store.load_relay_gate(&p.task_id).await.unwrap(),
        None,
        "the gate is forgotten"
    );
    assert_eq!(
        push(service, &p.task_id, Some(&owner_segment), &p.token).await,
        RelayAnswer::Taken
    );
    assert_eq!(
        push(service, &p.task_id, Some(&owner_segment), "wrong").await,
        RelayAnswer::Refused
    );
    assert_eq!(
        push(service, &p.task_id, None, &p.token).await,
        RelayAnswer::Refused
    );

    // A new park writes the gate again; once our task ended, the token is told it is gone.
    let p = park_a_delegation(store.clone(), 10).await;
    let service = &p.service;
    let gate = store
        .load_relay_gate(&p.task_id)
        .await
        .unwrap()
        .expect("the gate");
    assert_eq!(gate.owner, p.ctx.owner);
    assert!(gate.admits(&p.token) && !gate.admits("wrong"));
    p.service
        .cancel_task(
            &p.ctx,
            a2a_protocol::CancelTaskRequest {
                id: p.task_id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("canceled");
    assert_eq!(
        store
            .load_execution(&p.ctx.owner, &p.task_id)
            .await
            .unwrap(),
        None,
        "the record went with the task"
    );
    assert_eq!(
        push(service, &p.task_id, None, &p.token).await,
        RelayAnswer::Gone
    );
    assert_eq!(
        push(service, &p.task_id, None, "wrong").await,
        RelayAnswer::Refused
    );
}

/// A remote that never answers its poll does not hold up the sweep of due waits: the others
/// due with it are polled and resume in the same pass, which ends at its deadline; the slow
/// one still waits, for the next pass. (One after another, the pass never got past it: it is
/// due first.)
pub async fn a_slow_remote_does_not_hold_up_the_sweep(store: Arc<dyn TaskStore>) {
    let other = Arc::new(Other::default());
    let service = delegating(store.clone(), other, Duration::from_millis(20), 10);
    let ctx = CallContext::anonymous(&unique("tenant"));
    let slow = parked(&service, &*store, &ctx, &format!("delegate {SLOW}")).await;
    let mut quick = Vec::new();
    for _ in 0..2 {
        quick.push(parked(&service, &*store, &ctx, "delegate").await);
    }
    // Until all three are due (a poll every 20 ms).
    for _ in 0..500 {
        let due = store
            .list_due_executions(a2a_protocol::Timestamp::now(), 1000)
            .await
            .unwrap();
        let listed = |id: &String| due.iter().any(|d| &d.task_id == id);
        if listed(&slow) && quick.iter().all(listed) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pass = service.sweep_due_executions_within(1000, Duration::from_secs(1));
    let resumed = tokio::time::timeout(Duration::from_secs(30), pass)
        .await
        .expect("the pass ends at its deadline, whatever the slow remote does")
        .expect("swept");
    assert_eq!(resumed, 2, "the quick ones resume in the same pass");
    let outcome = |task: String| {
        let (store, owner) = (store.clone(), ctx.owner.clone());
        async move {
            let record = store.load_execution(&owner, &task).await.unwrap();
            record.and_then(|r| r.wait).and_then(|w| w.outcome)
        }
    };
    for task in quick {
        assert!(outcome(task).await.is_some(), "its wait is over");
    }
    assert_eq!(outcome(slow).await, None, "the slow one still waits");
}
