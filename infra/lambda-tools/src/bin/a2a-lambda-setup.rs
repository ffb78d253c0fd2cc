//! Creates the table and queues (`Resources::named(prefix)`, the definitions the template
//! mirrors) on the endpoint in `AWS_ENDPOINT_URL` (moto), and writes what the local Lambda run
//! needs to give each function its environment as `template.yaml` deploys it
//! (`infra/sam-translate.py --local-env` writes those, per function, from the template):
//!
//! - `--local-file`: the local stand-ins, as JSON: the resources a function's variables name
//!   (by the template's logical ids' roles: the table, the queues, the front door's URL), the
//!   variables that stand in for a secret, and the **only** variables that differ from the
//!   template's, each with its reason (`overrides`);
//! - `--runtime-env-file`: what Lambda's runtime gives every process (region, credentials),
//!   plus moto's endpoint: `cargo lambda watch --env-file`;
//! - `--env-file`: the local stack for the scripts (the queue URLs, moto, the visibility the
//!   work poller uses); no function reads it.
//!
//! Prints the queue URLs as `WORK_QUEUE_URL=…` and `PUSH_QUEUE_URL=…` for the script that starts
//! the poller.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use a2a_aws::resources::{self, Resources};
use a2a_aws::AwsClients;
use clap::Parser;
use serde_json::json;

#[derive(Debug, Parser)]
#[command(
    about = "Create the local resources and write the local stand-ins of the functions' environment"
)]
struct Options {
    /// Resource name prefix.
    #[arg(long, default_value = "a2a-lambda-local")]
    prefix: String,
    /// The scripts' env file to write (the local stack: moto, table, queues, visibility).
    #[arg(long)]
    env_file: PathBuf,
    /// The env file `cargo lambda watch` gives every function: what Lambda's runtime sets.
    #[arg(long)]
    runtime_env_file: PathBuf,
    /// The local stand-ins (JSON) `infra/sam-translate.py --local` reads.
    #[arg(long)]
    local_file: PathBuf,
    /// The local router's base URL: the front door's URL (the API's stage URL, or the
    /// Function URL) wherever the template names it.
    #[arg(long)]
    public_base_url: String,
    /// The URL of the local router playing the relay function's Function URL (front door
    /// `FunctionUrl`): wherever the template names that URL.
    #[arg(long)]
    relay_url: String,
    /// The push signing key file (created on first use): the signing secret's local form.
    #[arg(long)]
    keys_file: PathBuf,
    /// Work job visibility and lease, in seconds: how soon a job whose worker died comes back
    /// (the deployed worker has 900). The worker extends a running job's visibility every third
    /// of it, so it only has to cover a function's start.
    #[arg(long, default_value_t = 20)]
    work_visibility_secs: u64,
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
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

    let runtime = [
        ("AWS_ENDPOINT_URL", endpoint.clone()),
        ("AWS_ACCESS_KEY_ID", "test".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "test".to_owned()),
        ("AWS_REGION", "us-east-1".to_owned()),
    ];
    let mut text = String::from(
        "# Written by infra/lambda-local.sh (a2a-lambda-setup): what Lambda's runtime gives every\n\
         # function (region, credentials), and moto's endpoint instead of AWS's. The rest of each\n\
         # function's environment is the template's (.venv-lambda/run/env/<function>.env).\n",
    );
    for (k, v) in &runtime {
        let _ = writeln!(text, "{k}={v}");
    }
    write(&o.runtime_env_file, &text)?;

    let mut text = String::from(
        "# Written by infra/lambda-local.sh (a2a-lambda-setup): the local stack, for the scripts\n\
         # (no function reads this file).\n",
    );
    for (k, v) in runtime.iter().cloned().chain([
        ("A2A_TABLE", config.table.clone()),
        ("A2A_WORK_QUEUE_URL", config.work_queue_url.clone()),
        ("A2A_PUSH_QUEUE_URL", config.push_queue_url.clone()),
        (
            "A2A_WORK_VISIBILITY_SECS",
            o.work_visibility_secs.to_string(),
        ),
    ]) {
        let _ = writeln!(text, "{k}={v}");
    }
    write(&o.env_file, &text)?;

    // Only these differ from what the template gives a function; each says why.
    let mut overrides = vec![
        json!({"name": "A2A_PUSH_ALLOW_HOSTS", "value": "127.0.0.1,localhost,::1", "to": "every function",
               "why": "the suites' push receivers listen on loopback, which the cloud refuses"}),
        json!({"name": "A2A_PUSH_ALLOW_HTTP", "value": "true", "to": "every function",
               "why": "the suites' push receivers serve plain http"}),
        json!({"name": "A2A_AGENT_ALLOW_HOSTS", "value": "127.0.0.1,localhost", "to": "every function",
               "why": "the agents the suites delegate to (an a2a-local) listen on loopback"}),
        json!({"name": "A2A_AGENT_ALLOW_HTTP", "value": "true", "to": "every function",
               "why": "the agents the suites delegate to serve plain http"}),
        json!({"name": "A2A_PUBLIC_BASE_URL", "value": o.public_base_url,
               "to": "every HTTP function without one",
               "why": "on AWS an HTTP function reads its public URL from each request (API Gateway's or the Function URL's domain); cargo lambda watch's requests name https://localhost"}),
        json!({"name": "A2A_RELAY_BASE_URL", "value": o.relay_url, "to": "the relay function",
               "why": "on AWS the relay function reads its own URL from each request (its Function URL's domain); cargo lambda watch's requests name https://localhost"}),
        json!({"name": "A2A_WORK_VISIBILITY_SECS", "value": o.work_visibility_secs.to_string(),
               "to": "where the template sets it",
               "why": "a job whose worker died comes back within this (the local work poller's visibility), not 900 s"}),
    ];
    if let Ok(level) = std::env::var("RUST_LOG") {
        overrides.push(
            json!({"name": "RUST_LOG", "value": level, "to": "where the template sets it",
                              "why": "RUST_LOG of the shell that started the local run"}),
        );
    }
    let local = json!({
        "resources": {
            "table": config.table,
            "work_queue_url": config.work_queue_url,
            "push_queue_url": config.push_queue_url,
            "work_dlq_url": dlq_urls[0],
            "push_dlq_url": dlq_urls[1],
            "front_door_url": o.public_base_url,
            "relay_url": o.relay_url,
        },
        "secrets": {
            "PushSigningKeysSecret": {"A2A_PUSH_SIGNING_KEYS_FILE": o.keys_file.display().to_string()},
        },
        "overrides": overrides,
    });
    write(
        &o.local_file,
        &serde_json::to_string_pretty(&local).map_err(|e| e.to_string())?,
    )?;
    println!("WORK_QUEUE_URL={}", config.work_queue_url);
    println!("PUSH_QUEUE_URL={}", config.push_queue_url);
    Ok(())
}
