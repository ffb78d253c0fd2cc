//! Retries, dead letters and 410 Gone, over real sockets, on both backends: the embedded store
//! with its push queue (as `a2a-local` runs), and DynamoDB with the SQS FIFO push queue and its
//! dead-letter queue on moto, drained by the cloud push function's batch handler. Attempts run
//! one after another, with no backoff sleeps.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

mod support;

use a2a_core::{
    KeySet, Owner, PushAttemptResult, PushDeliveryState, PushPolicy, SigningAlgorithm, SigningKey,
};
use a2a_push_verify::Verifier;
use a2a_test_support::webhook::Webhook;
use support::{on_every_backend, AgentServer, Backend, Drained};

on_every_backend!(
    a_receiver_that_comes_back_gets_every_event_in_order,
    each_task_s_events_arrive_in_order_while_several_tasks_retry,
    a_receiver_that_never_recovers_ends_in_the_dead_letter_queue,
    an_unreachable_receiver_is_recorded_as_such,
    a_last_event_that_is_never_accepted_is_dead_lettered_alone,
    gone_stops_every_later_delivery_to_that_config,
);

// On SQS the drain takes the push function's `BatchSize` from template.yaml. It is 1: with more,
// a task's later events received beside a failing one were handed back untried but counted by
// SQS, and reached their last attempt early (these scenarios found it: 6 POSTs instead of 12).

fn keys() -> KeySet {
    KeySet::single(
        SigningKey::generate(SigningAlgorithm::Es256)
            .expect("generate")
            .0,
    )
}

/// The delivery record of the task's only push config.
async fn only_record(agent: &AgentServer, task_id: &str) -> PushDeliveryState {
    let owner = Owner::anonymous("");
    let configs = agent
        .store
        .list_push_configs(&owner, task_id)
        .await
        .unwrap();
    assert_eq!(configs.len(), 1, "{configs:?}");
    agent
        .store
        .get_push_delivery(&owner, task_id, &configs[0].id)
        .await
        .unwrap()
        .expect("a delivery record")
}

/// Verifies every POST `hook` received and returns each one's `seq` with its JSON body.
async fn verified_posts(agent: &AgentServer, hook: &Webhook) -> Vec<(u64, serde_json::Value)> {
    // Every POST verifies (each has its own jti, retries included).
    let verifier = Verifier::for_agent(&agent.base, &hook.url);
    let mut posts = Vec::new();
    for push in hook.received() {
        let verified = verifier.verify(&push.headers, &push.body).await.unwrap();
        posts.push((verified.claims.seq, push.json()));
    }
    posts
}

async fn a_receiver_that_comes_back_gets_every_event_in_order(backend: Backend) {
    let agent = AgentServer::start_on(backend, keys(), PushPolicy::local(), 5).await;
    let hook = Webhook::start().await;
    // Down for four attempts (an error page, a gateway timeout, …), then back for good.
    hook.script(&[503, 500, 502, 504], 200);
    let task = agent.run_task("steps 3", &hook.url).await;
    let drained = agent.drain().await;
    assert_eq!(
        drained,
        Drained {
            attempts: 10,
            retries: 4,
            dead_lettered: 0
        }
    );

    let posts = verified_posts(&agent, &hook).await;
    // The first five POSTs were the first event: four refused, the fifth accepted. From then
    // on each event arrived once, in order.
    assert!(posts[..5].iter().all(|(seq, _)| *seq == posts[0].0));
    let accepted = &posts[4..];
    let seqs: Vec<u64> = accepted.iter().map(|(s, _)| *s).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "in order, once: {seqs:?}"
    );
    // Task, WORKING, three chunks, COMPLETED.
    assert_eq!(seqs.len(), 6, "{seqs:?}");
    assert!(accepted[0].1.get("task").is_some());
    assert_eq!(
        accepted.last().unwrap().1["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let texts: Vec<String> = accepted
        .iter()
        .filter_map(|(_, b)| b["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str())
        .map(str::to_string)
        .collect();
    assert_eq!(texts, vec!["chunk-0 ", "chunk-1 ", "chunk-2 "]);

    // The delivery record tells the story.
    let record = only_record(&agent, &task.id).await;
    assert_eq!(record.attempts, 10);
    assert_eq!(record.delivered, 6);
    assert_eq!(record.consecutive_failures, 0);
    assert_eq!(record.dead_lettered, 0);
    assert_eq!(record.last_seq, *seqs.last().unwrap());
    assert_eq!(record.last_status, Some(200));
    assert_eq!(record.last_result, Some(PushAttemptResult::Delivered));
    assert!(record.last_success_at.is_some());
    // The last failure is kept for the operator, without the URL's path or the token.
    let error = record.last_error.unwrap();
    assert!(error.contains("504"), "{error}");
    assert!(
        !error.contains("/hook") && !error.contains("the-config-token"),
        "{error}"
    );
    assert!(agent.dead_letters().await.is_empty());
    agent.finish().await;
}

async fn each_task_s_events_arrive_in_order_while_several_tasks_retry(backend: Backend) {
    let agent = AgentServer::start_on(backend, keys(), PushPolicy::local(), 5).await;
    // Three tasks, each pushing to its own receiver: one down for two attempts, one up, one
    // down for one attempt. Their jobs share the push queue (one message group per task).
    let scripts: [&[u16]; 3] = [&[500, 500], &[], &[503]];
    let mut hooks = Vec::new();
    let mut tasks = Vec::new();
    for script in scripts {
        let hook = Webhook::start().await;
        hook.script(script, 200);
        tasks.push(agent.run_task("steps 3", &hook.url).await);
        hooks.push(hook);
    }
    let drained = agent.drain().await;
    assert_eq!(
        drained,
        Drained {
            attempts: 21,
            retries: 3,
            dead_lettered: 0
        }
    );
    for ((hook, task), script) in hooks.iter().zip(&tasks).zip(scripts) {
        let posts = verified_posts(&agent, hook).await;
        let failed = script.len();
        // The refused POSTs were the task's first event, again and again; then every event
        // once, in order.
        assert!(posts[..=failed].iter().all(|(seq, _)| *seq == posts[0].0));
        let seqs: Vec<u64> = posts[failed..].iter().map(|(s, _)| *s).collect();
        assert_eq!(seqs.len(), 6, "{seqs:?}");
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order: {seqs:?}");
        for (_, body) in &posts {
            let inner = body.as_object().and_then(|o| o.values().next()).unwrap();
            let task_id = inner.get("taskId").or_else(|| inner.get("id")).unwrap();
            assert_eq!(
                task_id,
                &serde_json::json!(task.id),
                "only its own task's events"
            );
        }
        let record = only_record(&agent, &task.id).await;
        assert_eq!(record.attempts, 6 + failed as u64);
        assert_eq!(record.delivered, 6);
        assert_eq!(record.dead_lettered, 0);
    }
    assert!(agent.dead_letters().await.is_empty());
    agent.finish().await;
}

async fn a_receiver_that_never_recovers_ends_in_the_dead_letter_queue(backend: Backend) {
    let agent = AgentServer::start_on(backend, keys(), PushPolicy::local(), 3).await;
    let hook = Webhook::start().await;
    hook.script(&[], 500);
    let task = agent.run_task("steps 1", &hook.url).await;
    let drained = agent.drain().await;
    // Task, WORKING, one chunk, COMPLETED: each tried three times, then dead-lettered.
    assert_eq!(
        drained,
        Drained {
            attempts: 12,
            retries: 8,
            dead_lettered: 4
        }
    );
    let letters = agent.dead_letters().await;
    assert_eq!(letters.len(), 4, "{letters:?}");
    let seqs: Vec<u64> = letters.iter().map(|l| l.job.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order: {seqs:?}");
    for letter in &letters {
        assert_eq!(letter.job.task_id, task.id);
        assert!(letter.reason.contains("500"), "{}", letter.reason);
        assert!(
            !letter.reason.contains("/hook") && !letter.reason.contains("the-config-token"),
            "{}",
            letter.reason
        );
    }
    assert_eq!(hook.received().len(), 12);
    // Each event was POSTed three times before the next one.
    let posted: Vec<u64> = verified_posts(&agent, &hook)
        .await
        .into_iter()
        .map(|(seq, _)| seq)
        .collect();
    let expected: Vec<u64> = seqs.iter().flat_map(|s| [*s; 3]).collect();
    assert_eq!(posted, expected);

    let record = only_record(&agent, &task.id).await;
    assert_eq!(record.attempts, 12);
    assert_eq!(record.delivered, 0);
    assert_eq!(record.dead_lettered, 4);
    assert_eq!(record.consecutive_failures, 12);
    assert_eq!(record.last_status, Some(500));
    assert_eq!(record.last_result, Some(PushAttemptResult::Failed));
    let error = record.last_error.unwrap();
    assert!(error.contains("500"), "{error}");
    assert!(
        !error.contains("/hook") && !error.contains("the-config-token"),
        "{error}"
    );
    assert_eq!(record.last_success_at, None);
    agent.finish().await;
}

async fn a_last_event_that_is_never_accepted_is_dead_lettered_alone(backend: Backend) {
    let agent = AgentServer::start_on(backend, keys(), PushPolicy::local(), 3).await;
    let hook = Webhook::start().await;
    // Task, WORKING and the chunk are accepted; COMPLETED never is.
    hook.script(&[200, 200, 200], 500);
    let task = agent.run_task("steps 1", &hook.url).await;
    let drained = agent.drain().await;
    assert_eq!(
        drained,
        Drained {
            attempts: 6,
            retries: 2,
            dead_lettered: 1
        }
    );
    let posted: Vec<u64> = verified_posts(&agent, &hook)
        .await
        .into_iter()
        .map(|(seq, _)| seq)
        .collect();
    assert_eq!(posted.len(), 6, "{posted:?}");
    assert!(posted[..3].windows(2).all(|w| w[0] < w[1]), "{posted:?}");
    assert!(posted[3..].iter().all(|s| *s == posted[3]) && posted[3] > posted[2]);

    let letters = agent.dead_letters().await;
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(letters[0].job.task_id, task.id);
    assert_eq!(letters[0].job.seq, posted[3]);
    assert!(letters[0].reason.contains("500"), "{}", letters[0].reason);
    assert!(
        !letters[0].reason.contains("/hook") && !letters[0].reason.contains("the-config-token"),
        "{}",
        letters[0].reason
    );

    let record = only_record(&agent, &task.id).await;
    assert_eq!(record.attempts, 6);
    assert_eq!(record.delivered, 3);
    assert_eq!(record.consecutive_failures, 3);
    assert_eq!(record.dead_lettered, 1);
    assert_eq!(record.last_seq, posted[3]);
    assert_eq!(record.last_status, Some(500));
    assert_eq!(record.last_result, Some(PushAttemptResult::Failed));
    assert!(record.last_success_at.is_some());
    let error = record.last_error.unwrap();
    assert!(error.contains("500"), "{error}");
    assert!(
        !error.contains("/hook") && !error.contains("the-config-token"),
        "{error}"
    );
    agent.finish().await;
}

async fn an_unreachable_receiver_is_recorded_as_such(backend: Backend) {
    let agent = AgentServer::start_on(backend, keys(), PushPolicy::local(), 2).await;
    // A port nobody listens on: bind one, then free it.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let task = agent
        .run_task("steps 1", &format!("http://127.0.0.1:{port}/hook?secret=1"))
        .await;
    let drained = agent.drain().await;
    assert_eq!(
        drained,
        Drained {
            attempts: 8,
            retries: 4,
            dead_lettered: 4
        }
    );
    let record = only_record(&agent, &task.id).await;
    assert_eq!(record.last_status, None);
    let error = record.last_error.unwrap();
    assert!(error.contains("unreachable"), "{error}");
    assert!(!error.contains("secret"), "no query string: {error}");
    assert!(!error.contains("/hook"), "no path: {error}");
    assert_eq!(record.attempts, 8);
    assert_eq!(record.dead_lettered, 4);
    let letters = agent.dead_letters().await;
    assert_eq!(letters.len(), 4, "{letters:?}");
    for letter in &letters {
        assert!(letter.reason.contains("unreachable"), "{}", letter.reason);
        assert!(!letter.reason.contains("secret"), "{}", letter.reason);
    }
    agent.finish().await;
}

async fn gone_stops_every_later_delivery_to_that_config(backend: Backend) {
    let agent = AgentServer::start_on(backend, keys(), PushPolicy::local(), 5).await;
    let hook = Webhook::start().await;
    let other = Webhook::start().await;
    hook.script(&[200], 410);
    let task = agent.run_task("hold", &hook.url).await;
    // A second config on the same task keeps receiving.
    agent
        .service
        .create_push_config(
            &a2a_core::CallContext::anonymous(""),
            a2a_protocol::TaskPushNotificationConfig {
                task_id: task.id.clone(),
                url: other.url.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // The held task's two events: the Task (answered 200) and INPUT_REQUIRED (answered 410).
    let drained = agent.drain().await;
    assert_eq!(
        drained,
        Drained {
            attempts: 2,
            retries: 0,
            dead_lettered: 0
        }
    );
    assert_eq!(hook.received().len(), 2);
    // Continue the task: WORKING, two chunks, COMPLETED.
    let request = a2a_protocol::SendMessageRequest {
        message: Some(a2a_protocol::Message {
            task_id: task.id.clone(),
            ..a2a_protocol::Message::user_text(a2a_core::new_id(), "steps 2")
        }),
        ..Default::default()
    };
    agent
        .service
        .send_message(&a2a_core::CallContext::anonymous(""), request)
        .await
        .unwrap();
    let drained = agent.drain().await;
    // 410 is not retried, and nothing else failed.
    assert_eq!(
        drained,
        Drained {
            attempts: 4,
            retries: 0,
            dead_lettered: 0
        }
    );
    assert_eq!(hook.received().len(), 2, "nothing after the 410");
    assert_eq!(other.received().len(), 4, "the other config still receives");

    let owner = Owner::anonymous("");
    let configs = agent
        .store
        .list_push_configs(&owner, &task.id)
        .await
        .unwrap();
    assert_eq!(configs.len(), 1, "the gone config was removed");
    assert_eq!(configs[0].url, other.url);
    // The POSTs name their config in the JWT.
    let verifier = Verifier::for_agent(&agent.base, &hook.url);
    let first = &hook.received()[0];
    let gone_id = verifier
        .verify(&first.headers, &first.body)
        .await
        .unwrap()
        .claims
        .config_id;
    let record = agent
        .store
        .get_push_delivery(&owner, &task.id, &gone_id)
        .await
        .unwrap()
        .expect("the record outlives the config");
    assert_eq!(record.attempts, 2);
    assert_eq!(record.delivered, 1);
    assert_eq!(record.last_result, Some(PushAttemptResult::Gone));
    assert_eq!(record.last_status, Some(410));
    assert!(record.disabled_reason.unwrap().contains("410"));
    let others = only_record(&agent, &task.id).await;
    assert_eq!(others.attempts, 4);
    assert_eq!(others.delivered, 4);
    assert!(agent.dead_letters().await.is_empty());
    agent.finish().await;
}
