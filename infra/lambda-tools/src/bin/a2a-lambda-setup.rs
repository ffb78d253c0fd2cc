//! Creates the table and queues (`Resources::named(prefix)`, the definitions the template
//! mirrors) on the endpoint in `AWS_ENDPOINT_URL` (moto), and writes the env file
//! `cargo lambda watch --env-file` gives every function. Prints the queue URLs as
//! `WORK_QUEUE_URL=…` and `PUSH_QUEUE_URL=…` for the script that starts the poller.

use std::fmt::Write as _;
use std::path::PathBuf;

use a2a_aws::resources::{self, Resources};
use a2a_aws::AwsClients;
use clap::Parser;

#[derive(Debug, Parser)]
#[command(about = "Create the local resources and write the functions' env file")]
struct Options {
    /// Resource name prefix.
    #[arg(long, default_value = "a2a-lambda-local")]
    prefix: String,
    /// The env file to write.
    #[arg(long)]
    env_file: PathBuf,
    /// The local router's base URL (the card's interfaces and the push JWT issuer).
    #[arg(long)]
    public_base_url: String,
    /// The push signing key file (created on first use).
    #[arg(long)]
    keys_file: PathBuf,
    /// Work job visibility and lease, in seconds: how soon a job whose worker died comes back
    /// (the deployed worker has 900). The worker extends a running job's visibility every third
    /// of it, so it only has to cover a function's start.
    #[arg(long, default_value_t = 20)]
    work_visibility_secs: u64,
    /// Longest SSE stream, in seconds.
    #[arg(long, default_value_t = 840)]
    max_stream_secs: u64,
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let o = Options::parse();
    let endpoint = std::env::var("AWS_ENDPOINT_URL")
        .map_err(|_| "AWS_ENDPOINT_URL is not set: start the emulator first (infra/moto.sh)")?;
    let clients = AwsClients::from_env().await;
    let resources = Resources::named(&o.prefix);
    let config = resources::create_all(&clients, &resources).await?;
    // The template passes the dead-letter queues' URLs in (the functions never look them up).
    let dlq_urls = a2a_lambda_tools::dead_letter_queue_urls(&clients, &resources).await?;
    let mut env = String::from(
        "# Written by infra/lambda-local.sh (a2a-lambda-setup): the environment of every function\n\
         # under `cargo lambda watch`. Local only: the push and agent allow-lists and plain http\n\
         # are never set by template.yaml.\n",
    );
    let vars = [
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_ACCESS_KEY_ID", "test".into()),
        ("AWS_SECRET_ACCESS_KEY", "test".into()),
        ("AWS_REGION", "us-east-1".into()),
        ("A2A_TABLE", config.table.clone()),
        ("A2A_WORK_QUEUE_URL", config.work_queue_url.clone()),
        ("A2A_PUSH_QUEUE_URL", config.push_queue_url.clone()),
        ("A2A_WORK_DLQ_URL", dlq_urls[0].clone()),
        ("A2A_PUSH_DLQ_URL", dlq_urls[1].clone()),
        ("A2A_PUBLIC_BASE_URL", o.public_base_url.clone()),
        (
            "A2A_PUSH_SIGNING_KEYS_FILE",
            o.keys_file.display().to_string(),
        ),
        ("A2A_PUSH_ALLOW_HOSTS", "127.0.0.1,localhost,::1".into()),
        ("A2A_PUSH_ALLOW_HTTP", "true".into()),
        // The agents the functions call (`delegate`) on 127.0.0.1 too, over plain http: the
        // Lambda suite's remote agent is an a2a-local there.
        ("A2A_AGENT_ALLOW_HOSTS", "127.0.0.1,localhost".into()),
        ("A2A_AGENT_ALLOW_HTTP", "true".into()),
        (
            "A2A_WORK_VISIBILITY_SECS",
            o.work_visibility_secs.to_string(),
        ),
        ("A2A_MAX_STREAM_SECS", o.max_stream_secs.to_string()),
        ("A2A_BLOCKING_TIMEOUT_SECS", "25".into()),
        (
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
        ),
    ];
    for (k, v) in vars {
        let _ = writeln!(env, "{k}={v}");
    }
    if let Some(dir) = o.env_file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    std::fs::write(&o.env_file, env)
        .map_err(|e| format!("cannot write {}: {e}", o.env_file.display()))?;
    println!("WORK_QUEUE_URL={}", config.work_queue_url);
    println!("PUSH_QUEUE_URL={}", config.push_queue_url);
    Ok(())
}
