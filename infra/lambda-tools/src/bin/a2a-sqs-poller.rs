//! The local event source mapping: long-polls SQS queues and hands their messages to functions
//! under `cargo lambda watch` as SQS events, through the Invoke API; deletes every message the
//! function did not report in `batchItemFailures`. A function that fails outright (crash,
//! error) deletes nothing: the messages come back after their visibility timeout, as on AWS.

use std::time::Duration;

use a2a_aws::{AwsClients, ReceivedMessage, SqsQueue};
use a2a_lambda_tools::Invocation;
use clap::Parser;
use serde_json::{json, Value};

#[derive(Debug, Parser)]
#[command(about = "Deliver SQS messages to functions under `cargo lambda watch`")]
struct Options {
    /// `<queue URL>=<function>`, once per queue.
    #[arg(long = "queue", required = true)]
    queues: Vec<String>,
    /// Where `cargo lambda watch` listens.
    #[arg(long, env = "A2A_WATCH_URL", default_value = "http://127.0.0.1:9000")]
    watch: String,
    /// Messages per event (1 to 10).
    #[arg(long, default_value_t = 5)]
    batch_size: usize,
    /// Visibility timeout of a received message, in seconds (the queue's own if unset).
    #[arg(long)]
    visibility_secs: Option<u64>,
    /// How long one invocation may take before it counts as failed (the function's timeout).
    #[arg(long, default_value_t = 900)]
    invoke_timeout_secs: u64,
    /// Seconds one receive long-polls. 20 is what Lambda's event source mapping does; moto
    /// answers a FIFO long poll only at its end when a message group was blocked, so local
    /// runs use 1.
    #[arg(long, default_value_t = 20)]
    wait_secs: u64,
    /// Invocations in flight per queue at once (Lambda runs batches concurrently too).
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
}

/// The ARN the records of `queue`'s events carry (local stand-in: account and region fixed).
fn arn_of(queue: &SqsQueue) -> String {
    let name = queue.url().rsplit('/').next().unwrap_or_default();
    format!("arn:aws:sqs:us-east-1:000000000000:{name}")
}

async fn poll(queue: SqsQueue, function: String, options: std::sync::Arc<Options>) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(options.invoke_timeout_secs))
        .build()
        .expect("an HTTP client");
    let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(options.concurrency.max(1)));
    let url = format!(
        "{}/2015-03-31/functions/{function}/invocations",
        options.watch.trim_end_matches('/')
    );
    let visibility = options.visibility_secs.map(Duration::from_secs);
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let messages = match queue
            .receive(
                options.batch_size,
                Duration::from_secs(options.wait_secs),
                visibility,
            )
            .await
        {
            Ok(m) => m,
            Err(err) => {
                tracing::error!(queue = queue.url(), error = %err, "receive failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if messages.is_empty() {
            continue;
        }
        let event = json!({"Records": messages.iter().map(|m| m.to_lambda_record(&arn_of(&queue))).collect::<Vec<_>>()});
        tracing::info!(%function, messages = messages.len(), "invoking");
        for m in &messages {
            tracing::info!(
                %function,
                message_id = %m.message_id,
                task_id = %task_of(m),
                receive = m.receive_count,
                "received"
            );
        }
        let (http, url, queue, function) =
            (http.clone(), url.clone(), queue.clone(), function.clone());
        tokio::spawn(async move {
            invoke(&http, &url, &queue, &function, &messages, event).await;
            drop(permit);
        });
    }
}

/// The task a message's job names (the jobs of both queues name one), for the log: with the
/// message id and its receive count, a redelivery can be followed (`infra/lambda-e2e.py` reads
/// these fields).
fn task_of(m: &ReceivedMessage) -> String {
    serde_json::from_str::<Value>(&m.body)
        .ok()
        .and_then(|b| b["taskId"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "-".into())
}

/// One invocation: deletes what succeeded.
async fn invoke(
    http: &reqwest::Client,
    url: &str,
    queue: &SqsQueue,
    function: &str,
    messages: &[ReceivedMessage],
    event: Value,
) {
    {
        let tasks: Vec<String> = messages.iter().map(task_of).collect();
        let invocation = Invocation::start(function, &tasks.join(","));
        let failed: Option<Vec<String>> = match http.post(url).json(&event).send().await {
            Ok(r) if r.status().is_success() => match r.json::<Value>().await {
                Ok(v) => Some(
                    v["batchItemFailures"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|f| f["itemIdentifier"].as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default(),
                ),
                Err(err) => {
                    tracing::warn!(%function, error = %err, "unreadable response");
                    None
                }
            },
            Ok(r) => {
                tracing::warn!(%function, status = %r.status(), "invocation failed");
                None
            }
            Err(err) => {
                tracing::warn!(%function, error = %err, "invocation failed");
                None
            }
        };
        // An invocation that failed as a whole leaves every message to come back later.
        // The function has answered: what follows (deletes) is the event source's own work.
        drop(invocation);
        let Some(failed) = failed else {
            for m in messages {
                tracing::info!(
                    %function,
                    message_id = %m.message_id,
                    task_id = %task_of(m),
                    receive = m.receive_count,
                    "not handled, back after its visibility timeout"
                );
            }
            return;
        };
        for m in messages {
            if failed.contains(&m.message_id) {
                tracing::info!(
                    %function,
                    message_id = %m.message_id,
                    task_id = %task_of(m),
                    receive = m.receive_count,
                    "reported for retry"
                );
                continue;
            }
            match queue.delete(&m.receipt_handle).await {
                Ok(()) => {
                    tracing::info!(
                        %function,
                        message_id = %m.message_id,
                        task_id = %task_of(m),
                        receive = m.receive_count,
                        "done, deleted"
                    );
                }
                Err(err) => {
                    tracing::warn!(
                        %function,
                        message_id = %m.message_id,
                        task_id = %task_of(m),
                        receive = m.receive_count,
                        error = %err,
                        "delete failed"
                    );
                }
            }
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), String> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let options = std::sync::Arc::new(Options::parse());
    let clients = AwsClients::from_env().await;
    let mut tasks = Vec::new();
    for pair in &options.queues {
        let (url, function) = pair
            .rsplit_once('=')
            .ok_or_else(|| format!("--queue takes <queue URL>=<function>, not {pair}"))?;
        let queue = SqsQueue::new(clients.sqs.clone(), url);
        tracing::info!(queue = url, function, "polling");
        tasks.push(tokio::spawn(poll(
            queue,
            function.to_owned(),
            options.clone(),
        )));
    }
    for t in tasks {
        let _ = t.await;
    }
    Ok(())
}
