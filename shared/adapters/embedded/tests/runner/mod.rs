//! The core's job runner deciding over the real embedded queue: retry, give up, dead-letter
//! with the reason, hand back a group's later jobs after one stays queued, keep a running job
//! invisible.

use std::sync::Mutex;
use std::time::Duration;

use a2a_core::{run_jobs, JobPolicy, ReceivedJob, Settled, Settlement};
use a2a_core::{JobOutcome, PushJob, PushQueue, WorkJob, WorkQueue};
use a2a_embedded::{EmbeddedQueue, QueueName};

use super::{open, push_job, work_job, LONG};

/// Work jobs named `tasks`, received at once and put in the given message groups, as an SQS
/// FIFO receive may return several jobs of a group.
async fn received_in_groups(
    store: &a2a_embedded::SqliteStore,
    tasks: &[(&str, &str)],
) -> (EmbeddedQueue, Vec<ReceivedJob<i64>>) {
    let queue = store.queue(QueueName::Work);
    for (task, _) in tasks {
        store.enqueue_work(&work_job(task)).await.expect("enqueue");
    }
    let mut jobs = queue.receive(10, LONG).await.expect("receive");
    assert_eq!(jobs.len(), tasks.len());
    for (job, (_, group)) in jobs.iter_mut().zip(tasks) {
        job.group = Some((*group).into());
    }
    (queue, jobs)
}

fn retry(reason: &str, after: Duration) -> JobOutcome {
    JobOutcome::Retry {
        reason: reason.into(),
        after,
    }
}

fn settled(attempted: bool, settlement: Settlement) -> Settled {
    Settled {
        attempted,
        settlement,
        applied: true,
    }
}

#[tokio::test]
async fn a_failing_push_is_retried_then_dead_lettered_with_its_reason_after_the_last_attempt() {
    let (_dir, store) = open();
    let queue = store.queue(QueueName::Push);
    store
        .enqueue_push(&[push_job("task-1", 1)])
        .await
        .expect("enqueue");
    let policy = JobPolicy {
        max_attempts: Some(3),
        visibility: None,
    };
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        let jobs = queue.receive(10, LONG).await.expect("receive");
        assert_eq!(jobs.len(), 1, "the job is visible again at once");
        let counts = jobs.iter().map(|j| j.receive_count).collect::<Vec<_>>();
        let out = run_jobs(&queue, jobs, policy, |_: PushJob, _| async {
            retry("webhook answered 503", Duration::ZERO)
        })
        .await;
        outcomes.push((counts, out));
    }
    assert_eq!(
        outcomes,
        [
            (
                vec![1],
                vec![settled(true, Settlement::RetryAfter(Duration::ZERO))]
            ),
            (
                vec![2],
                vec![settled(true, Settlement::RetryAfter(Duration::ZERO))]
            ),
            (
                vec![3],
                vec![settled(
                    true,
                    Settlement::DeadLetter("webhook answered 503".into())
                )]
            ),
        ]
    );
    assert!(queue.receive(10, LONG).await.expect("receive").is_empty());
    let letters = store.dead_letters(QueueName::Push).await.expect("letters");
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].1, "webhook answered 503");
}

#[tokio::test]
async fn a_retry_waits_out_its_backoff_and_work_jobs_are_never_dead_lettered() {
    let (_dir, store) = open();
    let queue = store.queue(QueueName::Work);
    store
        .enqueue_work(&work_job("task-1"))
        .await
        .expect("enqueue");
    let policy = JobPolicy::default();
    for receive_count in 1..=5 {
        let jobs = queue.receive(10, LONG).await.expect("receive");
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].receive_count, receive_count);
        let out = run_jobs(&queue, jobs, policy, |_: WorkJob, _| async {
            retry("lease held", Duration::ZERO)
        })
        .await;
        assert_eq!(out, [settled(true, Settlement::RetryAfter(Duration::ZERO))]);
    }
    // A backoff keeps the job out of sight.
    let jobs = queue.receive(10, LONG).await.expect("receive");
    let out = run_jobs(&queue, jobs, policy, |_: WorkJob, _| async {
        retry("lease held", LONG)
    })
    .await;
    assert_eq!(out, [settled(true, Settlement::RetryAfter(LONG))]);
    assert!(queue.receive(10, LONG).await.expect("receive").is_empty());
    assert!(store
        .dead_letters(QueueName::Work)
        .await
        .expect("letters")
        .is_empty());
}

#[tokio::test]
async fn an_unreadable_body_is_dead_lettered_with_the_parse_error_untried() {
    let (_dir, store) = open();
    let queue = store.queue(QueueName::Work);
    store
        .enqueue_work(&work_job("task-1"))
        .await
        .expect("enqueue");
    let jobs = queue.receive(10, LONG).await.expect("receive");
    let calls = Mutex::new(0);
    // A work job's body is no push job.
    let out = run_jobs(&queue, jobs, JobPolicy::default(), |_: PushJob, _| async {
        *calls.lock().unwrap() += 1;
        JobOutcome::Done
    })
    .await;
    assert_eq!(*calls.lock().unwrap(), 0);
    assert_eq!(out.len(), 1);
    assert!(!out[0].attempted);
    assert!(out[0].applied);
    let Settlement::DeadLetter(reason) = &out[0].settlement else {
        panic!("{out:?}");
    };
    assert!(reason.starts_with("unreadable job body: "), "{reason}");
    assert!(reason.contains("seq"), "the parse error: {reason}");
    let letters = store.dead_letters(QueueName::Work).await.expect("letters");
    assert_eq!(letters.len(), 1);
    assert_eq!(&letters[0].1, reason);
    assert!(queue.receive(10, LONG).await.expect("receive").is_empty());
}

#[tokio::test]
async fn after_a_job_that_stays_queued_its_group_s_later_jobs_are_handed_back_untried() {
    let (_dir, store) = open();
    let (queue, jobs) = received_in_groups(&store, &[("a1", "a"), ("a2", "a"), ("b1", "b")]).await;
    let tried = Mutex::new(Vec::new());
    let out = run_jobs(&queue, jobs, JobPolicy::default(), |job: WorkJob, _| {
        tried.lock().unwrap().push(job.task_id.clone());
        async move {
            if job.task_id == "a1" {
                retry("webhook answered 500", LONG)
            } else {
                JobOutcome::Done
            }
        }
    })
    .await;
    assert_eq!(
        out,
        [
            settled(true, Settlement::RetryAfter(LONG)),
            settled(false, Settlement::RetryAfter(Duration::ZERO)),
            settled(true, Settlement::Delete),
        ]
    );
    assert_eq!(*tried.lock().unwrap(), ["a1", "b1"]);
    // Only the handed-back job is visible now; the failed one waits out its backoff.
    let again = queue.receive(10, LONG).await.expect("receive");
    assert_eq!(again.len(), 1);
    let body: WorkJob = serde_json::from_str(&again[0].body).expect("body");
    assert_eq!(body.task_id, "a2");
    assert_eq!(again[0].receive_count, 2);
}

#[tokio::test]
async fn a_dead_lettered_job_does_not_hold_up_its_group() {
    let (_dir, store) = open();
    let (queue, jobs) = received_in_groups(&store, &[("a1", "a"), ("a2", "a")]).await;
    let policy = JobPolicy {
        max_attempts: Some(1),
        visibility: None,
    };
    let out = run_jobs(&queue, jobs, policy, |job: WorkJob, _| async move {
        if job.task_id == "a1" {
            retry("gone for good", LONG)
        } else {
            JobOutcome::Done
        }
    })
    .await;
    assert_eq!(
        out,
        [
            settled(true, Settlement::DeadLetter("gone for good".into())),
            settled(true, Settlement::Delete),
        ]
    );
    assert!(queue.receive(10, LONG).await.expect("receive").is_empty());
}

#[tokio::test]
async fn a_running_job_stays_invisible_past_its_visibility() {
    let (_dir, store) = open();
    let queue = store.queue(QueueName::Work);
    store
        .enqueue_work(&work_job("task-1"))
        .await
        .expect("enqueue");
    let visibility = Duration::from_secs(1);
    let jobs = queue.receive(10, visibility).await.expect("receive");
    let policy = JobPolicy {
        max_attempts: None,
        visibility: Some(visibility),
    };
    let queue = &queue;
    let out = run_jobs(queue, jobs, policy, |_: WorkJob, _| async move {
        // Outlive the visibility more than twice: without the heartbeat the job would be
        // handed out again meanwhile.
        tokio::time::sleep(visibility * 5 / 2).await;
        let seen = queue.receive(10, visibility).await.expect("receive").len();
        assert_eq!(seen, 0, "the running job was handed out again");
        JobOutcome::Done
    })
    .await;
    assert_eq!(out, [settled(true, Settlement::Delete)]);
    assert!(queue.receive(10, LONG).await.expect("receive").is_empty());
}
