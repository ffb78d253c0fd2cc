//! Retries, dead letters and 410 Gone, over real sockets: attempts are driven through the
//! embedded push queue one after another, with no backoff sleeps.

mod support;

use a2a_core::{
    JobOutcome, KeySet, Owner, PushAttemptResult, PushPolicy, SigningAlgorithm, SigningKey,
    TaskStore,
};
use a2a_embedded::QueueName;
use a2a_push_verify::Verifier;
use support::{AgentServer, Webhook};

fn keys() -> KeySet {
    KeySet::single(
        SigningKey::generate(SigningAlgorithm::Es256)
            .expect("generate")
            .0,
    )
}

#[tokio::test]
async fn a_receiver_that_comes_back_gets_every_event_in_order() {
    let agent = AgentServer::start(keys(), PushPolicy::local(), 5).await;
    let hook = Webhook::start().await;
    // Down for four attempts (an error page, a gateway timeout, …), then back for good.
    hook.script(&[503, 500, 502, 504], 200);
    let task = agent.run_task("steps 3", &hook.url).await;
    let outcomes = agent.drain().await;
    let retries = outcomes
        .iter()
        .filter(|o| matches!(o, JobOutcome::Retry { .. }))
        .count();
    assert_eq!(retries, 4);

    // Every POST the receiver saw verifies (each has its own jti, retries included).
    let verifier = Verifier::for_agent(&agent.base, &hook.url);
    let mut posts = Vec::new();
    for push in hook.received() {
        let verified = verifier.verify(&push.headers, &push.body).await.unwrap();
        posts.push((verified.claims.seq, push.json()));
    }
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
    let owner = Owner::anonymous("");
    let config = &agent
        .store
        .list_push_configs(&owner, &task.id)
        .await
        .unwrap()[0];
    let record = agent
        .store
        .get_push_delivery(&owner, &task.id, &config.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.attempts, 10);
    assert_eq!(record.delivered, 6);
    assert_eq!(record.consecutive_failures, 0);
    assert_eq!(record.dead_lettered, 0);
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
    assert!(agent
        .store
        .dead_letters(QueueName::Push)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_receiver_that_never_recovers_ends_in_the_dead_letter_queue() {
    let agent = AgentServer::start(keys(), PushPolicy::local(), 3).await;
    let hook = Webhook::start().await;
    hook.script(&[], 500);
    let task = agent.run_task("steps 1", &hook.url).await;
    agent.drain().await;

    // Task, WORKING, one chunk, COMPLETED: each tried three times, then dead-lettered.
    let letters = agent.store.dead_letters(QueueName::Push).await.unwrap();
    assert_eq!(letters.len(), 4, "{letters:?}");
    for (_, reason) in &letters {
        assert!(reason.contains("500"), "{reason}");
    }
    assert_eq!(hook.received().len(), 12);

    let owner = Owner::anonymous("");
    let config = &agent
        .store
        .list_push_configs(&owner, &task.id)
        .await
        .unwrap()[0];
    let record = agent
        .store
        .get_push_delivery(&owner, &task.id, &config.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.attempts, 12);
    assert_eq!(record.delivered, 0);
    assert_eq!(record.dead_lettered, 4);
    assert_eq!(record.consecutive_failures, 12);
    assert_eq!(record.last_status, Some(500));
    assert_eq!(record.last_result, Some(PushAttemptResult::Failed));
    assert!(record.last_error.unwrap().contains("500"));
    assert_eq!(record.last_success_at, None);
}

#[tokio::test]
async fn an_unreachable_receiver_is_recorded_as_such() {
    let agent = AgentServer::start(keys(), PushPolicy::local(), 2).await;
    // A port nobody listens on: bind one, then free it.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let task = agent
        .run_task("steps 1", &format!("http://127.0.0.1:{port}/hook?secret=1"))
        .await;
    agent.drain().await;
    let owner = Owner::anonymous("");
    let config = &agent
        .store
        .list_push_configs(&owner, &task.id)
        .await
        .unwrap()[0];
    let record = agent
        .store
        .get_push_delivery(&owner, &task.id, &config.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.last_status, None);
    let error = record.last_error.unwrap();
    assert!(error.contains("unreachable"), "{error}");
    assert!(!error.contains("secret"), "no query string: {error}");
    assert_eq!(record.dead_lettered, 4);
}

#[tokio::test]
async fn gone_stops_every_later_delivery_to_that_config() {
    let agent = AgentServer::start(keys(), PushPolicy::local(), 5).await;
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
    agent.drain().await;
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
    let outcomes = agent.drain().await;
    assert!(
        outcomes.iter().all(|o| *o == JobOutcome::Done),
        "410 is not retried"
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
    assert_eq!(record.last_result, Some(PushAttemptResult::Gone));
    assert_eq!(record.last_status, Some(410));
    assert!(record.disabled_reason.unwrap().contains("410"));
}
