//! The local event source mapping of the fan-out function: reads the task table's DynamoDB
//! stream (on moto) the way Lambda does, keeps the records the template's filter passes
//! (`a2a_aws::fanout::FILTER_PATTERN`: heads of tasks with push configs), and hands them to the
//! function under `cargo lambda watch` through the Invoke API, as a DynamoDB stream event. A
//! batch is committed only once the function answered without `batchItemFailures`; otherwise it
//! is handed over again, as Lambda retries a stream batch.

use std::time::Duration;

use a2a_aws::fanout::{passes_filter, Checkpoints, StreamPoller};
use a2a_lambda_tools::Invocation;
use clap::Parser;
use serde_json::{json, Value};

#[derive(Debug, Parser)]
#[command(about = "Deliver a DynamoDB stream to a function under `cargo lambda watch`")]
struct Options {
    /// The table whose stream is read.
    #[arg(long, env = "A2A_TABLE")]
    table: String,
    /// The function the records go to.
    #[arg(long, default_value = "fanout")]
    function: String,
    /// Where `cargo lambda watch` listens.
    #[arg(long, env = "A2A_WATCH_URL", default_value = "http://127.0.0.1:9000")]
    watch: String,
    /// How long one invocation may take before it counts as failed (the function's timeout).
    #[arg(long, default_value_t = 30)]
    invoke_timeout_secs: u64,
}

/// Hands `records` to the function; whether it took them all.
async fn invoke(http: &reqwest::Client, url: &str, function: &str, records: Vec<Value>) -> bool {
    let count = records.len();
    let event = json!({ "Records": records });
    let _invocation = Invocation::start(function, "-");
    match http.post(url).json(&event).send().await {
        Ok(r) if r.status().is_success() => match r.json::<Value>().await {
            Ok(v) => {
                let failed = v["batchItemFailures"].as_array().map_or(0, Vec::len);
                tracing::info!(%function, records = count, failed, "invoked");
                failed == 0
            }
            Err(err) => {
                tracing::warn!(%function, error = %err, "unreadable response");
                false
            }
        },
        Ok(r) => {
            tracing::warn!(%function, status = %r.status(), "invocation failed");
            false
        }
        Err(err) => {
            tracing::warn!(%function, error = %err, "invocation failed");
            false
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), String> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let options = Options::parse();
    let mut poller = StreamPoller::from_env(&options.table, Checkpoints::Memory)
        .await
        .map_err(|e| e.to_string())?;
    tracing::info!(stream = poller.stream_arn(), function = %options.function, "polling");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(options.invoke_timeout_secs))
        .build()
        .map_err(|e| e.to_string())?;
    let url = format!(
        "{}/2015-03-31/functions/{}/invocations",
        options.watch.trim_end_matches('/'),
        options.function
    );
    loop {
        match poller.next_batch().await {
            Ok(Some(batch)) => {
                let passed: Vec<Value> = batch
                    .records
                    .iter()
                    .filter(|r| passes_filter(r))
                    .cloned()
                    .collect();
                if passed.is_empty() || invoke(&http, &url, &options.function, passed).await {
                    if let Err(err) = poller.commit(&batch).await {
                        tracing::warn!(error = %err, "commit failed");
                    }
                } else {
                    poller.rewind(&batch);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            // Lambda polls a shard about four times a second.
            Ok(None) => tokio::time::sleep(Duration::from_millis(250)).await,
            Err(err) => {
                tracing::warn!(error = %err, "reading the stream failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}
