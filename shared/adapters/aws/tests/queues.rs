//! The SQS adapters against moto's server: bodies, FIFO order per task, de-duplication,
//! dead-lettering after the configured receive count, visibility changes.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use a2a_aws::resources::{PUSH_MAX_RECEIVES, WORK_MAX_RECEIVES};
use a2a_aws::{ReceivedMessage, SqsQueue};
use a2a_core::{Owner, PushJob, PushQueue, WorkJob, WorkQueue, JOB_FORMAT_VERSION};
use aws_sdk_sqs::types::MessageSystemAttributeName;
use common::Env;

fn work_job(task: &str) -> WorkJob {
    WorkJob::run(&Owner::anonymous(""), task, 1)
}

fn push_job(task: &str, seq: u64, config: &str) -> PushJob {
    PushJob {
        v: JOB_FORMAT_VERSION,
        owner: Owner::anonymous(""),
        task_id: task.into(),
        seq,
        config_id: config.into(),
    }
}

const NO_WAIT: Duration = Duration::ZERO;

/// Receives until `want` messages came or a receive returns nothing; deletes each.
async fn drain(queue: &SqsQueue, want: usize) -> Vec<ReceivedMessage> {
    let mut got = Vec::new();
    while got.len() < want {
        let batch = queue
            .receive(10, Duration::from_secs(1), Some(Duration::from_secs(30)))
            .await
            .expect("receive");
        if batch.is_empty() {
            break;
        }
        for message in batch {
            queue.delete(&message.receipt_handle).await.expect("delete");
            got.push(message);
        }
    }
    got
}

#[tokio::test]
async fn work_jobs_round_trip_with_their_format_version() {
    let Some(env) = Env::new().await else {
        return;
    };
    let adapters = env.adapters();
    let job = work_job("task-1");
    adapters.work.enqueue_work(&job).await.expect("enqueue");

    let received = adapters
        .work
        .queue()
        .receive(10, Duration::from_secs(2), None)
        .await
        .expect("receive");
    assert_eq!(received.len(), 1);
    let message = &received[0];
    assert_eq!(message.receive_count, 1);
    let body: serde_json::Value = serde_json::from_str(&message.body).expect("JSON body");
    assert_eq!(body["v"], JOB_FORMAT_VERSION);
    assert_eq!(
        serde_json::from_value::<WorkJob>(body).expect("a WorkJob"),
        job
    );

    adapters
        .work
        .queue()
        .delete(&message.receipt_handle)
        .await
        .expect("delete");
    // Deleted for good: not handed out again even once its visibility would have ended.
    let again = adapters
        .work
        .queue()
        .receive(10, NO_WAIT, None)
        .await
        .expect("receive");
    assert!(again.is_empty());
    env.cleanup().await;
}

#[tokio::test]
async fn push_jobs_keep_each_tasks_order_across_batches() {
    let Some(env) = Env::new().await else {
        return;
    };
    let adapters = env.adapters();
    let queue = adapters.push.queue();
    assert!(queue.is_fifo());
    // 25 jobs, two tasks interleaved: three batches (10 + 10 + 5).
    let jobs: Vec<PushJob> = (1..=25)
        .map(|i| push_job(if i % 2 == 0 { "task-a" } else { "task-b" }, i, "cfg"))
        .collect();
    adapters.push.enqueue_push(&jobs).await.expect("enqueue");

    // While one of task-a's messages is in flight, none of task-a's others is handed out.
    let first = queue
        .receive(1, Duration::from_secs(1), Some(Duration::from_secs(30)))
        .await
        .expect("receive");
    assert_eq!(first.len(), 1);
    let group = first[0]
        .group_id
        .clone()
        .expect("FIFO messages have a group");
    let others = queue
        .receive(10, NO_WAIT, Some(Duration::from_secs(30)))
        .await
        .expect("receive");
    assert!(
        others.iter().all(|m| m.group_id.as_deref() != Some(&group)),
        "a group's next message came while its previous one was in flight"
    );
    // Give the in-flight ones back, then read everything.
    for m in first.iter().chain(&others) {
        queue
            .change_visibility(&m.receipt_handle, Duration::ZERO)
            .await
            .expect("change visibility");
    }
    let received = drain(queue, jobs.len()).await;

    let mut by_task: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for message in &received {
        let job: PushJob = serde_json::from_str(&message.body).expect("a PushJob");
        assert_eq!(message.group_id.as_deref(), Some(job.task_id.as_str()));
        by_task.entry(job.task_id).or_default().push(job.seq);
    }
    let expect = |task: &str| -> Vec<u64> {
        jobs.iter()
            .filter(|j| j.task_id == task)
            .map(|j| j.seq)
            .collect()
    };
    assert_eq!(by_task["task-a"], expect("task-a"), "task-a in order");
    assert_eq!(by_task["task-b"], expect("task-b"), "task-b in order");
    env.cleanup().await;
}

#[tokio::test]
async fn push_jobs_are_de_duplicated_by_task_sequence_and_config() {
    let Some(env) = Env::new().await else {
        return;
    };
    let adapters = env.adapters();
    // Ids SQS does not accept as they are (non-ASCII, too long) are hashed, deterministically.
    let odd_task = format!("tâche-{}", "x".repeat(140));
    let jobs = vec![
        push_job("task-1", 1, "c1"),
        push_job("task-1", 1, "c2"),
        push_job("task-1", 2, "c1"),
        push_job(&odd_task, 1, "c1"),
    ];
    adapters.push.enqueue_push(&jobs).await.expect("enqueue");
    // A redelivered worker appends nothing new but fans out the same jobs again.
    adapters
        .push
        .enqueue_push(&jobs)
        .await
        .expect("enqueue again");
    adapters
        .push
        .enqueue_push(&jobs[..1])
        .await
        .expect("enqueue one again");

    let received = drain(adapters.push.queue(), 10).await;
    let mut bodies: Vec<PushJob> = received
        .iter()
        .map(|m| serde_json::from_str(&m.body).expect("a PushJob"))
        .collect();
    bodies.sort_by_key(|j| (j.task_id.clone(), j.seq, j.config_id.clone()));
    let mut want = jobs.clone();
    want.sort_by_key(|j| (j.task_id.clone(), j.seq, j.config_id.clone()));
    assert_eq!(bodies, want, "each job exactly once");
    env.cleanup().await;
}

/// Receives a message `count` times, letting it go at once each time (as a handler that keeps
/// failing without settling would), and checks the receive count SQS reports.
async fn fail_repeatedly(queue: &SqsQueue, count: u32) -> ReceivedMessage {
    let mut last = None;
    for attempt in 1..=count {
        let received = queue
            .receive(1, Duration::from_secs(2), Some(Duration::from_secs(30)))
            .await
            .expect("receive");
        assert_eq!(received.len(), 1, "receive {attempt} got the message");
        assert_eq!(received[0].receive_count, attempt);
        queue
            .change_visibility(&received[0].receipt_handle, Duration::ZERO)
            .await
            .expect("release");
        last = received.into_iter().next();
    }
    last.expect("received at least once")
}

/// Reads the dead-letter queue of `queue` directly, with message attributes.
async fn dead_letters(env: &Env, queue: &SqsQueue) -> Vec<aws_sdk_sqs::types::Message> {
    let url = queue
        .dead_letter_queue_url()
        .await
        .expect("the queue has a dead-letter queue")
        .to_owned();
    env.clients
        .sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .message_attribute_names("All")
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .expect("receive from the dead-letter queue")
        .messages
        .unwrap_or_default()
}

#[tokio::test]
async fn work_jobs_are_dead_lettered_after_the_configured_receive_count() {
    let Some(env) = Env::new().await else {
        return;
    };
    let adapters = env.adapters();
    let queue = adapters.work.queue();
    adapters
        .work
        .enqueue_work(&work_job("doomed"))
        .await
        .expect("enqueue");
    let last = fail_repeatedly(queue, WORK_MAX_RECEIVES).await;
    // One receive more than the policy allows: SQS moves it instead of handing it out.
    let after = queue
        .receive(10, Duration::from_secs(1), None)
        .await
        .expect("receive");
    assert!(after.is_empty(), "the job was handed out a 7th time");
    let letters = dead_letters(&env, queue).await;
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].body(), Some(last.body.as_str()));
    env.cleanup().await;
}

#[tokio::test]
async fn push_jobs_are_dead_lettered_after_the_configured_receive_count() {
    let Some(env) = Env::new().await else {
        return;
    };
    let adapters = env.adapters();
    let queue = adapters.push.queue();
    let jobs = [push_job("t", 1, "c"), push_job("t", 2, "c")];
    adapters.push.enqueue_push(&jobs).await.expect("enqueue");
    let first = fail_repeatedly(queue, PUSH_MAX_RECEIVES).await;
    assert_eq!(
        serde_json::from_str::<PushJob>(&first.body).unwrap(),
        jobs[0]
    );
    // The first job goes to the dead-letter queue; the task's next job is unblocked.
    let next = drain(queue, 1).await;
    assert_eq!(next.len(), 1);
    assert_eq!(
        serde_json::from_str::<PushJob>(&next[0].body).unwrap(),
        jobs[1]
    );
    let letters = dead_letters(&env, queue).await;
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].body(), Some(first.body.as_str()));
    env.cleanup().await;
}

#[tokio::test]
async fn explicit_dead_letter_keeps_the_reason_and_removes_the_message() {
    let Some(env) = Env::new().await else {
        return;
    };
    let adapters = env.adapters();
    adapters
        .work
        .enqueue_work(&work_job("bad"))
        .await
        .expect("enqueue");
    adapters
        .push
        .enqueue_push(&[push_job("t", 1, "c")])
        .await
        .expect("enqueue");
    for queue in [adapters.work.queue(), adapters.push.queue()] {
        let received = queue
            .receive(1, Duration::from_secs(2), None)
            .await
            .expect("receive");
        assert_eq!(received.len(), 1);
        queue
            .dead_letter(&received[0], "unreadable job: expected value")
            .await
            .expect("dead-letter");
        let letters = dead_letters(&env, queue).await;
        assert_eq!(letters.len(), 1, "{}", queue.url());
        assert_eq!(letters[0].body(), Some(received[0].body.as_str()));
        let reason = letters[0]
            .message_attributes()
            .and_then(|a| a.get("reason"))
            .and_then(|v| v.string_value());
        assert_eq!(reason, Some("unreadable job: expected value"));
        // Gone from the source queue, even after its visibility timeout.
        queue
            .change_visibility(&received[0].receipt_handle, Duration::ZERO)
            .await
            .ok();
        assert!(queue
            .receive(10, NO_WAIT, None)
            .await
            .expect("receive")
            .is_empty());
    }
    env.cleanup().await;
}

#[tokio::test]
async fn visibility_changes_extend_and_retry_later() {
    let Some(env) = Env::new().await else {
        return;
    };
    let adapters = env.adapters();
    let queue = adapters.work.queue();
    adapters
        .work
        .enqueue_work(&work_job("slow"))
        .await
        .expect("enqueue");

    // Received with a short visibility, then extended (the worker's heartbeat) well past it.
    let first = queue
        .receive(1, Duration::from_secs(2), Some(Duration::from_secs(1)))
        .await
        .expect("receive");
    assert_eq!(first.len(), 1);
    queue
        .change_visibility(&first[0].receipt_handle, Duration::from_secs(30))
        .await
        .expect("extend");
    // Long past the original second: still invisible, because it was extended.
    let during = queue
        .receive(1, Duration::from_secs(2), None)
        .await
        .expect("receive");
    assert!(
        during.is_empty(),
        "an extended message was handed out again"
    );

    // Retry after one second (JobOutcome::Retry { after: 1s }).
    queue
        .change_visibility(&first[0].receipt_handle, Duration::from_secs(1))
        .await
        .expect("retry later");
    let started = Instant::now();
    let second = queue
        .receive(1, Duration::from_secs(5), Some(Duration::from_secs(30)))
        .await
        .expect("receive");
    assert_eq!(second.len(), 1, "the message comes back after the delay");
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert_eq!(second[0].receive_count, 2);
    assert_eq!(second[0].body, first[0].body);
    env.cleanup().await;
}
