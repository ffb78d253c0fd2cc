//! A function that leaves work running after its answer, on purpose: the defect the freeze
//! catches (a blocking send once answered before its inline execution had ended, and that
//! execution's last writes ran after the response). infra/lambda-e2e.sh invokes it through
//! a2a-lambda-freezer and checks that the work waits for the next invocation, as on Lambda.
//!
//! Event: `{"marker": PATH, "after_ms": N, "hold_ms": M}`. It appends `answered` to PATH and
//! answers (after `hold_ms`, 0 by default), and `after` N ms (500 by default) after it was
//! invoked, from a task it leaves running. The answer is `{"pid": …}`.

use std::io::Write;
use std::time::Duration;

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};

fn append(path: &str, line: &str) {
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{line}");
    }
}

async fn handle(event: LambdaEvent<Value>) -> Result<Value, Error> {
    let payload = event.payload;
    let ms = |name: &str, default: u64| payload[name].as_u64().unwrap_or(default);
    if let Some(marker) = payload["marker"].as_str().map(str::to_owned) {
        let after = Duration::from_millis(ms("after_ms", 500));
        let path = marker.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            append(&path, "after");
        });
        append(&marker, "answered");
    }
    tokio::time::sleep(Duration::from_millis(ms("hold_ms", 0))).await;
    Ok(json!({"pid": std::process::id()}))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(handle)).await
}
