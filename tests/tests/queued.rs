//! Queued work as the server's log shows it (queued, started, finished, by task id only), and
//! neither the work nor a graceful stop held up by the worker's wait for the queue (on SQS a
//! 20 s long poll, which returns as soon as a job arrives).

use std::time::Duration;

use a2a_e2e::*;
use serde_json::json;

/// Far below the SQS long poll (20 s): a job must not wait for a poll to end.
const WITHIN: Duration = Duration::from_secs(12);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_work_runs_at_once_and_the_log_follows_it_by_task_id() {
    if !store_ready() {
        return;
    }
    // The default wait, which the harness shortens on moto for its FIFO push queue.
    let mut server = Server::start_with_env(&[("A2A_QUEUE_WAIT_SECS", "20")]).await;
    // The worker is waiting on the queue by now (it polls from the start).
    let text = "job 1 10";
    let sent = ok(server
        .send(
            Binding::Rest,
            send_request_with(text, json!({"returnImmediately": true})),
        )
        .await);
    let id = id_of(task_of(&sent));
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        let task = ok(server.get_task(Binding::Rest, &id, None).await);
        if state(&task) == "TASK_STATE_COMPLETED" {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the queued job did not complete within {WITHIN:?}: {task}\n{}",
            server.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The last line may still be on its way from the server's stderr.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let finished = format!("work finished task_id={id}");
    while !server.logs().contains(&finished) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let logs = server.logs();
    let line = |what: &str| {
        let needle = format!("{what} task_id={id}");
        logs.find(&needle)
            .unwrap_or_else(|| panic!("no `{needle}` in the log:\n{logs}"))
    };
    // "queued" is written by the request and may land after "started" (the worker can be
    // faster than the log line); "finished" comes after "started".
    line("work queued");
    assert!(line("work started") < line("work finished"), "{logs}");
    assert!(
        !logs.contains(text),
        "the log shows the message text:\n{logs}"
    );

    // A stop does not wait for the worker's poll in flight to end (20 s).
    server.interrupt();
    let status = server.wait_for_exit(WITHIN).await;
    assert!(status.success(), "exit status {status}");
}
