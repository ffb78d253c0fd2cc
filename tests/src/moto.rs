//! moto's server with the fault middleware (`infra/moto_server.py`), for the run under the
//! faults AWS produces (tests/tests/faults.rs): started on a free port, faults turned on and off
//! through `/fault-api/`, queues read back through moto's SQS API; and the metric lines an
//! `a2a-local --metrics-file` writes, summed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::*;

/// moto's server with the fault middleware, on a free port; killed on drop.
pub struct FaultyMoto {
    child: Child,
    pub url: String,
    log: PathBuf,
    http: reqwest::Client,
}

impl FaultyMoto {
    /// `None` if moto's venv is missing (the test is skipped then).
    pub async fn start(log_dir: &std::path::Path) -> Option<FaultyMoto> {
        let python = workspace_root().join(".venv-moto/bin/python");
        if !python.exists() {
            assert!(
                std::env::var("A2A_REQUIRE_EMULATOR").as_deref() != Ok("1"),
                "A2A_REQUIRE_EMULATOR=1 but {} is missing: run infra/moto.sh setup",
                python.display()
            );
            eprintln!("faults: skipped, no moto venv (run infra/moto.sh setup)");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let log = log_dir.join("moto.log");
        let child = Command::new(python)
            .arg(workspace_root().join("infra/moto_server.py"))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("moto's log file"))
            .spawn()
            .expect("start moto_server.py");
        let moto = FaultyMoto {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
            http: http_client(),
        };
        // Ready when moto's own API answers (polled: the server gives no other signal).
        let deadline = tokio::time::Instant::now() + STARTUP_TIMEOUT;
        loop {
            let answer = moto
                .http
                .get(format!("{}/moto-api/data.json", moto.url))
                .send()
                .await;
            if answer.is_ok_and(|a| a.status().is_success()) {
                return Some(moto);
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "moto did not start: {}",
                moto.log_text()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn fault_api(&self, path: &str, body: Value) -> Value {
        let answer = self
            .http
            .post(format!("{}/fault-api/{path}", self.url))
            .json(&body)
            .send()
            .await
            .expect("the fault API answers");
        assert!(answer.status().is_success(), "fault API {path}");
        answer.json().await.expect("the fault API answers JSON")
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The environment that puts an a2a-local on this moto, on its own resources.
    pub fn env(&self, prefix: &str) -> Vec<(String, String)> {
        [
            ("A2A_STORE", "dynamodb"),
            ("A2A_CREATE_RESOURCES", prefix),
            ("A2A_QUEUE_WAIT_SECS", "1"),
            ("AWS_ENDPOINT_URL", &self.url),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_REGION", "us-east-1"),
            ("A2A_REMOTE_POLL_SECS", "1"),
            ("A2A_SWEEP_INTERVAL_SECS", "3"),
            // Longer than a renewal's period (a third of it) and one store call at its
            // longest (6 s, the adapters' CALL_LIMITS) together: with 5 s, a renewal that
            // took its 6 s under faults let the lease of a live execution run out, and the
            // sweep ended its task FAILED (the fault run at 20 %, seed 7).
            ("A2A_EXECUTION_LEASE_SECS", "12"),
            // A job whose process was killed comes back from the queue this soon.
            ("A2A_WORK_VISIBILITY_SECS", "15"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }
}

impl Drop for FaultyMoto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl FaultyMoto {
    /// How many messages the queue `name` holds (visible or in flight), through moto's SQS API
    /// (faults off: this is the test reading, not the server).
    pub async fn queue_depth(&self, name: &str) -> u64 {
        let call = |target: &str, body: Value| {
            self.http
                .post(&self.url)
                .header("X-Amz-Target", format!("AmazonSQS.{target}"))
                .header("Content-Type", "application/x-amz-json-1.0")
                .header(
                    "Authorization",
                    "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/sqs/aws4_request, \
                     SignedHeaders=host, Signature=0",
                )
                .body(body.to_string())
                .send()
        };
        let url: Value = call("GetQueueUrl", json!({"QueueName": name}))
            .await
            .expect("GetQueueUrl")
            .json()
            .await
            .expect("GetQueueUrl's answer");
        let queue_url = url["QueueUrl"]
            .as_str()
            .unwrap_or_else(|| panic!("no queue {name}: {url}"));
        let attributes: Value = call(
            "GetQueueAttributes",
            json!({"QueueUrl": queue_url, "AttributeNames": ["All"]}),
        )
        .await
        .expect("GetQueueAttributes")
        .json()
        .await
        .expect("GetQueueAttributes' answer");
        [
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
        ]
        .iter()
        .map(|name| {
            attributes["Attributes"][name]
                .as_str()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no {name} in {attributes}"))
        })
        .sum()
    }
}

/// The sum of `metric` over the EMF lines in `files` (`a2a-local --metrics-file`), over the
/// lines whose `dimension` is `value` if given (a missing file counts nothing).
pub fn metric_sum(files: &[&Path], metric: &str, dimension: Option<(&str, &str)>) -> f64 {
    files
        .iter()
        .filter_map(|file| std::fs::read_to_string(file).ok())
        .flat_map(|text| {
            text.lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .collect::<Vec<_>>()
        })
        .filter(|line| dimension.is_none_or(|(name, value)| line[name] == json!(value)))
        .filter_map(|line| line[metric].as_f64())
        .fold(0.0, |sum, n| sum + n)
}
