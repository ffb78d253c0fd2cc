//! The network adapter's choices against agents on 127.0.0.1: which binding it picks from a
//! card, that it caches the card as its `Cache-Control` says, the credentials and trace
//! headers it sends (to the right agent only), the push config it sends only to agents whose
//! card offers pushes, and what the guard refuses before anything is sent.

// Test helpers unwrap like the tests they serve.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::{CallKey, PushPolicy, RemoteAgents, RemoteError, RemoteTaskRef, ServiceConfig};
use a2a_http::{router, HttpOptions};
use a2a_net::{AgentCredentials, CredentialSource, RemoteAgentSettings, RemoteAgentsClient};
use a2a_protocol::{Message, SendMessageResponse, TaskPushNotificationConfig, TaskState};
use a2a_reference_agent::ReferenceAgent;
use a2a_test_support::server::{interface, EmbeddedStore, InProcessServer};
use axum::http::HeaderMap;
use axum::routing::{get, post, MethodRouter};
use axum::Json;
use serde_json::{json, Value};

const TRACE: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn client(credentials: AgentCredentials) -> RemoteAgentsClient {
    RemoteAgentsClient::new(RemoteAgentSettings {
        credentials: std::sync::Arc::new(credentials),
        timeout: Duration::from_secs(10),
        ..RemoteAgentSettings::local()
    })
}

/// The key of a durable call (the client sends no part of it).
fn key() -> CallKey {
    CallKey {
        task_id: "our-task".into(),
        call: "1-0".into(),
    }
}

fn push() -> Option<TaskPushNotificationConfig> {
    Some(TaskPushNotificationConfig {
        url: "http://127.0.0.1:9/a2a-relay/t/o".into(),
        token: "tok".into(),
        ..TaskPushNotificationConfig::default()
    })
}

/// The reference agent on the embedded store, offering `bindings` on its card.
async fn agent(bindings: &[&str], pushes: bool) -> (InProcessServer, EmbeddedStore) {
    let bindings: Vec<String> = bindings.iter().map(|b| b.to_string()).collect();
    let service_store = EmbeddedStore::open();
    let server = InProcessServer::start(|base| {
        let interfaces = bindings
            .iter()
            .map(|b| match b.as_str() {
                "JSONRPC" => interface(format!("{base}/jsonrpc"), b),
                _ => interface(base, b),
            })
            .collect();
        let config = ServiceConfig {
            interfaces,
            push_notifications: pushes,
            push_policy: PushPolicy::local(),
            ..ServiceConfig::default()
        };
        router(
            service_store.service(config, Arc::new(ReferenceAgent)),
            HttpOptions::default(),
        )
    })
    .await;
    (server, service_store)
}

#[tokio::test]
async fn the_card_picks_the_binding_and_is_fetched_once_while_fresh() {
    let (only_rest, _store) = agent(&["HTTP+JSON"], true).await;
    let remote = client(AgentCredentials::none());
    for n in 0..2 {
        let sent = remote
            .send(
                &only_rest.base,
                &key(),
                Message::user_text(format!("m{n}"), "hello"),
                push(),
                None,
            )
            .await
            .unwrap();
        assert!(sent.pushes, "the card offers pushes");
        let SendMessageResponse::Task(task) = sent.answer else {
            panic!("a task");
        };
        let polled = remote
            .get_task(
                &RemoteTaskRef {
                    agent: only_rest.base.clone(),
                    task_id: task.id.clone(),
                    context_id: task.context_id.clone(),
                    stopped_at: None,
                    push_token: None,
                },
                None,
            )
            .await
            .unwrap();
        assert_eq!(polled.id, task.id);
    }
    assert_eq!(only_rest.hits("/message:send"), 2);
    assert_eq!(only_rest.hits("/jsonrpc"), 0);
    assert_eq!(
        only_rest.hits("/.well-known/agent-card.json"),
        1,
        "the card (max-age 300) is fetched once"
    );

    let (both, _store) = agent(&["JSONRPC", "HTTP+JSON"], false).await;
    let sent = remote
        .send(
            &both.base,
            &key(),
            Message::user_text("m", "hold"),
            push(),
            None,
        )
        .await
        .unwrap();
    assert!(!sent.pushes, "no push config for an agent without pushes");
    assert_eq!(both.hits("/jsonrpc"), 1, "JSON-RPC first");
    let SendMessageResponse::Task(task) = sent.answer else {
        panic!("a task");
    };
    let held = RemoteTaskRef {
        agent: both.base.clone(),
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        stopped_at: None,
        push_token: None,
    };
    remote.cancel_task(&held, None).await.unwrap();
    let canceled = remote.get_task(&held, None).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    remote
        .cancel_task(&held, None)
        .await
        .expect("canceling an ended task is no error");
}

/// One request as a hand-written agent saw it: what was asked, `Authorization`, `traceparent`.
type Request = (String, Option<String>, Option<String>);

/// What a hand-written agent saw of each request.
#[derive(Default, Clone)]
struct Seen(Arc<Mutex<Vec<Request>>>);

impl Seen {
    fn record(&self, path: &str, headers: &HeaderMap) {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        self.0.lock().unwrap().push((
            path.to_owned(),
            header("authorization"),
            header("traceparent"),
        ));
    }

    fn all(&self) -> Vec<Request> {
        self.0.lock().unwrap().clone()
    }
}

/// An agent whose card names `interface_url` (or its own JSON-RPC path) and whose JSON-RPC
/// endpoint answers every call with a WORKING task.
async fn recording_agent(interface_url: Option<&str>, seen: Seen) -> InProcessServer {
    let interface_url = interface_url.map(str::to_owned);
    InProcessServer::start(move |base| {
        let url = interface_url.unwrap_or_else(|| format!("{base}/jsonrpc"));
        let card = json!({
            "name": "recording", "description": "", "version": "1",
            "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"pushNotifications": true},
            "defaultInputModes": [], "defaultOutputModes": [], "skills": []
        });
        let on_card = seen.clone();
        let on_rpc = seen.clone();
        axum::Router::new()
            .route(
                "/.well-known/agent-card.json",
                get(move |headers: HeaderMap| {
                    on_card.record("card", &headers);
                    let card = card.clone();
                    async move { Json(card) }
                }),
            )
            .route(
                "/jsonrpc",
                post(move |headers: HeaderMap, Json(body): Json<Value>| {
                    on_rpc.record("rpc", &headers);
                    async move {
                        Json(json!({"jsonrpc": "2.0", "id": body["id"], "result": {"task": {
                            "id": "r1", "contextId": "c1",
                            "status": {"state": "TASK_STATE_WORKING"}
                        }}}))
                    }
                }),
            )
    })
    .await
}

#[tokio::test]
async fn credentials_and_the_trace_go_to_their_agent_only() {
    let seen = Seen::default();
    let agent = recording_agent(None, seen.clone()).await;
    let other_seen = Seen::default();
    let other = recording_agent(None, other_seen.clone()).await;
    let credentials = AgentCredentials::from_json(&format!(
        r#"{{"agents": [{{"url": "{}", "bearer": "for-the-agent"}}]}}"#,
        agent.base
    ))
    .unwrap();
    let remote = client(credentials);
    remote
        .send(
            &agent.base,
            &key(),
            Message::user_text("m", "hi"),
            push(),
            Some(TRACE),
        )
        .await
        .unwrap();
    remote
        .send(
            &other.base,
            &key(),
            Message::user_text("m", "hi"),
            push(),
            None,
        )
        .await
        .unwrap();
    let bearer = Some("Bearer for-the-agent".to_owned());
    assert_eq!(
        seen.all(),
        vec![
            ("card".into(), bearer.clone(), Some(TRACE.into())),
            ("rpc".into(), bearer, Some(TRACE.into())),
        ]
    );
    assert_eq!(
        other_seen.all(),
        vec![("card".into(), None, None), ("rpc".into(), None, None)],
        "another agent gets neither the credentials nor a trace it was not given"
    );
}

/// A rotated secret: the document it holds now (changed by the test), read at every call
/// (`refresh` zero), counting the reads.
#[derive(Debug, Default)]
struct RotatedSecret {
    document: Mutex<String>,
    reads: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl CredentialSource for RotatedSecret {
    async fn load(&self) -> Result<AgentCredentials, String> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let text = self.document.lock().unwrap().clone();
        AgentCredentials::from_json(&text).map_err(|e| format!("the test secret: {e}"))
    }

    fn refresh(&self) -> Duration {
        Duration::ZERO
    }
}

#[tokio::test]
async fn credentials_are_read_at_the_first_call_and_again_after_a_rotation() {
    let seen = Seen::default();
    let agent = recording_agent(None, seen.clone()).await;
    let secret = Arc::new(RotatedSecret::default());
    // A document that does not read (a typo in the secret): the client is made all the same.
    *secret.document.lock().unwrap() = r#"{"agents": [{"url": "#.into();
    let remote = RemoteAgentsClient::new(RemoteAgentSettings {
        credentials: secret.clone(),
        timeout: Duration::from_secs(10),
        ..RemoteAgentSettings::local()
    });
    assert_eq!(
        secret.reads.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "nothing is read before a call needs it"
    );
    // The call fails, saying why, and nothing reaches the agent.
    let failed = remote
        .send(
            &agent.base,
            &key(),
            Message::user_text("m", "hi"),
            push(),
            None,
        )
        .await;
    assert!(
        matches!(&failed, Err(RemoteError::Unavailable(why))
            if why.contains("credentials for other agents cannot be read")
                && why.contains("line 1")),
        "{failed:?}"
    );
    assert!(seen.all().is_empty(), "nothing was sent: {:?}", seen.all());

    // The secret mended, then rotated: each call after sends what it holds then.
    let document = |token: &str| {
        format!(
            r#"{{"agents": [{{"url": "{}", "bearer": "{token}"}}]}}"#,
            agent.base
        )
    };
    *secret.document.lock().unwrap() = document("first");
    // A failed read is asked again a second later at the soonest.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    remote
        .send(
            &agent.base,
            &key(),
            Message::user_text("m1", "hi"),
            push(),
            None,
        )
        .await
        .unwrap();
    *secret.document.lock().unwrap() = document("rotated");
    remote
        .send(
            &agent.base,
            &key(),
            Message::user_text("m2", "hi"),
            push(),
            None,
        )
        .await
        .unwrap();
    let sent: Vec<Option<String>> = seen.all().into_iter().map(|(_, auth, _)| auth).collect();
    assert_eq!(
        sent.first(),
        Some(&Some("Bearer first".to_owned())),
        "{sent:?}"
    );
    assert_eq!(
        sent.last(),
        Some(&Some("Bearer rotated".to_owned())),
        "{sent:?}"
    );

    // A rotation that breaks the document keeps the credentials read before.
    *secret.document.lock().unwrap() = "not json".into();
    remote
        .send(
            &agent.base,
            &key(),
            Message::user_text("m3", "hi"),
            push(),
            None,
        )
        .await
        .unwrap();
    let sent: Vec<Option<String>> = seen.all().into_iter().map(|(_, auth, _)| auth).collect();
    assert_eq!(
        sent.last(),
        Some(&Some("Bearer rotated".to_owned())),
        "{sent:?}"
    );
}

#[tokio::test]
async fn the_guard_refuses_before_anything_is_sent() {
    // A card naming its interface on a non-public address: the card is read, nothing is sent.
    let seen = Seen::default();
    let agent = recording_agent(Some("http://169.254.169.254/jsonrpc"), seen.clone()).await;
    let remote = client(AgentCredentials::none());
    let refused = remote
        .send(
            &agent.base,
            &key(),
            Message::user_text("m", "hi"),
            push(),
            None,
        )
        .await;
    assert!(
        matches!(&refused, Err(RemoteError::Refused(why)) if why.contains("169.254.169.254")),
        "{refused:?}"
    );
    assert_eq!(seen.all().len(), 1, "only the card was fetched");

    // Without loopback on the allow-list, a local agent is not called at all.
    let strict = RemoteAgentsClient::new(RemoteAgentSettings {
        policy: PushPolicy {
            allowed_hosts: Vec::new(),
            require_https: false,
        },
        ..RemoteAgentSettings::local()
    });
    let refused = strict
        .send(
            &agent.base,
            &key(),
            Message::user_text("m", "hi"),
            push(),
            None,
        )
        .await;
    assert!(
        matches!(refused, Err(RemoteError::Refused(_))),
        "{refused:?}"
    );
    let by_name = strict
        .send(
            &agent.base.replace("127.0.0.1", "localhost"),
            &key(),
            Message::user_text("m", "hi"),
            push(),
            None,
        )
        .await;
    assert!(
        matches!(&by_name, Err(RemoteError::Refused(why)) if why.contains("localhost")),
        "a name resolving to loopback is refused on connection: {by_name:?}"
    );
    assert_eq!(seen.all().len(), 1, "nothing more reached the agent");
}

/// A signed push whose sender's JWKS never answers (the server accepts the connection and
/// says nothing): the verification fails with a clear error once the request's timeout
/// passes, and the pushes waiting behind it fail too instead of queueing for as long as it
/// hangs.
#[tokio::test]
async fn a_jwks_that_never_answers_fails_the_push() {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let held = Arc::new(Mutex::new(Vec::new()));
    let holder = held.clone();
    let silent = tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            // Kept open, never read, never answered.
            holder.lock().unwrap().push(socket);
        }
    });
    let remote = RemoteAgentsClient::new(RemoteAgentSettings {
        timeout: Duration::from_secs(1),
        ..RemoteAgentSettings::local()
    });
    let part = |json: Value| URL_SAFE_NO_PAD.encode(json.to_string());
    let token = format!(
        "{}.{}.c2ln",
        part(json!({"alg": "ES256", "kid": "k1", "typ": "JWT"})),
        part(json!({"iss": base, "aud": "http://127.0.0.1:9/a2a-relay/t/o"}))
    );
    let audiences = ["http://127.0.0.1:9/a2a-relay/t/o".to_owned()];
    let verify = || remote.verify_push(&base, &audiences, &token, b"{}");
    // Without a timeout this waits forever: the guard below is only there to fail the test.
    let outcomes = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::join!(verify(), verify(), verify())
    })
    .await
    .expect("the pushes are answered, not held while the JWKS hangs");
    for outcome in [outcomes.0, outcomes.1, outcomes.2] {
        assert!(
            matches!(&outcome, Err(RemoteError::Unavailable(why)) if why.contains("JWKS")),
            "{outcome:?}"
        );
    }
    assert!(!held.lock().unwrap().is_empty(), "the JWKS was asked for");
    silent.abort();
}

/// A card whose `Cache-Control: max-age` no clock can add (u64::MAX seconds) is cached for at
/// most a day, and the calls through it work: before, the cache panicked on the overflow and
/// every call to that agent failed.
#[tokio::test]
async fn a_card_with_an_overflowing_max_age_is_cached_not_a_panic() {
    let seen = Seen::default();
    let agent = InProcessServer::start({
        let seen = seen.clone();
        move |base| {
            let card = json!({
                "name": "huge-max-age", "description": "", "version": "1",
                "supportedInterfaces": [{"url": format!("{base}/jsonrpc"),
                    "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
                "capabilities": {},
                "defaultInputModes": [], "defaultOutputModes": [], "skills": []
            });
            let on_card = seen.clone();
            axum::Router::new()
                .route(
                    "/.well-known/agent-card.json",
                    get(move |headers: HeaderMap| {
                        on_card.record("card", &headers);
                        let card = card.clone();
                        async move {
                            (
                                [("cache-control", "public, max-age=18446744073709551615")],
                                Json(card),
                            )
                        }
                    }),
                )
                .route(
                    "/jsonrpc",
                    post(|Json(body): Json<Value>| async move {
                        Json(
                            json!({"jsonrpc": "2.0", "id": body["id"], "result": {"task": {
                                "id": "r1", "contextId": "c1",
                                "status": {"state": "TASK_STATE_WORKING"}
                            }}}),
                        )
                    }),
                )
        }
    })
    .await;
    let remote = client(AgentCredentials::none());
    for n in 0..2 {
        let sent = remote
            .send(
                &agent.base,
                &key(),
                Message::user_text(format!("m{n}"), "hi"),
                None,
                None,
            )
            .await;
        assert!(sent.is_ok(), "{sent:?}");
    }
    let cards = seen
        .all()
        .iter()
        .filter(|(what, ..)| what == "card")
        .count();
    assert_eq!(cards, 1, "the card is cached, not fetched again");
}

/// An agent whose JSON-RPC endpoint is `rpc` and whose card is `card`, or else one naming that
/// endpoint.
async fn scripted_agent(card: Option<MethodRouter>, rpc: MethodRouter) -> InProcessServer {
    InProcessServer::start(move |base| {
        let card = card.unwrap_or_else(|| {
            let card = card_at(base);
            get(move || async move { Json(card) })
        });
        axum::Router::new()
            .route("/.well-known/agent-card.json", card)
            .route("/jsonrpc", rpc)
    })
    .await
}

/// A card naming `base`'s JSON-RPC endpoint.
fn card_at(base: &str) -> Value {
    json!({
        "name": "scripted", "description": "", "version": "1",
        "supportedInterfaces": [{"url": format!("{base}/jsonrpc"),
            "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {},
        "defaultInputModes": [], "defaultOutputModes": [], "skills": []
    })
}

/// An agent answering every call with a JSON-RPC error whose message is 100,000 bytes of
/// lines and multi-byte characters: the error we keep (which becomes our task's failure
/// reason, shown to our client) quotes at most 300 bytes of it, on one line, cut on a
/// character boundary with an ellipsis.
#[tokio::test]
async fn a_remote_error_is_quoted_short_and_on_one_line() {
    let head = "no such skill; ";
    // Three-byte characters straddle the cut so it must move to a character boundary.
    let message = format!("{head}{}", "€ line\n".repeat(100_000 / 9));
    let agent = scripted_agent(None, {
        let message = message.clone();
        post(move |Json(body): Json<Value>| async move {
            Json(json!({"jsonrpc": "2.0", "id": body["id"],
                "error": {"code": -32602, "message": message}}))
        })
    })
    .await;
    let remote = client(AgentCredentials::none());
    let answered = remote
        .send(
            &agent.base,
            &key(),
            Message::user_text("m", "hi"),
            None,
            None,
        )
        .await;
    let Err(RemoteError::Answered(quoted)) = answered else {
        panic!("the agent's error, as an answer: {answered:?}");
    };
    assert_eq!(agent.hits("/jsonrpc"), 1, "the agent was asked once");
    assert!(
        quoted.contains(head),
        "what the agent said is quoted: {quoted}"
    );
    assert!(
        quoted.len() <= 300 + '…'.len_utf8(),
        "{} bytes quoted of {}",
        quoted.len(),
        message.len()
    );
    assert!(quoted.ends_with('…'), "the cut is marked: {quoted}");
    assert!(!quoted.contains(['\n', '\r']), "one line: {quoted:?}");
}

/// A remote agent that accepts the request and never answers fails each call (the card, a
/// send, a poll, a cancel) once the settings' per-request timeout passes, with an error
/// saying so and worth retrying; without the timeout each call would hang as long as the
/// agent does. The timeout is set to one second so the test is quick.
#[tokio::test]
async fn each_call_to_a_remote_that_never_answers_times_out() {
    let hanging = || std::future::pending::<Json<Value>>();
    let remote = RemoteAgentsClient::new(RemoteAgentSettings {
        timeout: Duration::from_secs(1),
        ..RemoteAgentSettings::local()
    });
    let timed_out = |outcome: &Result<_, RemoteError>| matches!(outcome, Err(RemoteError::Unavailable(why)) if why.contains("did not answer in time"));
    // The outer guard only turns a regression (a call that hangs) into a failure; the a2a
    // client's own 60 s default must not be what ends the calls, so it is well below that.
    let guard = Duration::from_secs(20);

    // The JSON-RPC endpoint hangs: the card is read, then the send, poll and cancel time out.
    let rpc_hangs = scripted_agent(None, post(hanging)).await;
    let held = RemoteTaskRef {
        agent: rpc_hangs.base.clone(),
        task_id: "r1".into(),
        context_id: "c1".into(),
        stopped_at: None,
        push_token: None,
    };
    let reached = |before: usize| rpc_hangs.hits("/jsonrpc") > before;
    let (sent, polled, canceled) = tokio::time::timeout(guard, async {
        let sent = remote
            .send(
                &rpc_hangs.base,
                &key(),
                Message::user_text("m", "hi"),
                None,
                None,
            )
            .await
            .map(drop);
        assert!(reached(0), "the send reached the agent");
        // A poll is idempotent, so the client may try it again: each try times out alike.
        let before = rpc_hangs.hits("/jsonrpc");
        let polled = remote.get_task(&held, None).await.map(drop);
        assert!(reached(before), "the poll reached the agent");
        let before = rpc_hangs.hits("/jsonrpc");
        let canceled = remote.cancel_task(&held, None).await;
        assert!(reached(before), "the cancel reached the agent");
        (sent, polled, canceled)
    })
    .await
    .expect("each call ends at the timeout, not when the agent answers");
    for (call, outcome) in [("send", sent), ("poll", polled), ("cancel", canceled)] {
        assert!(timed_out(&outcome), "{call}: {outcome:?}");
    }

    // The card hangs: the send times out before anything is sent.
    let card_hangs = scripted_agent(Some(get(hanging)), post(hanging)).await;
    let sent = tokio::time::timeout(
        guard,
        remote.send(
            &card_hangs.base,
            &key(),
            Message::user_text("m", "hi"),
            None,
            None,
        ),
    )
    .await
    .expect("the card fetch ends at the timeout")
    .map(drop);
    assert!(timed_out(&sent), "card: {sent:?}");
    assert_eq!(card_hangs.hits("/.well-known/agent-card.json"), 1);
    assert_eq!(
        card_hangs.hits("/jsonrpc"),
        0,
        "nothing sent without a card"
    );
}
