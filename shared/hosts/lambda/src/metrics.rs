//! The functions' metrics: the core's CloudWatch Embedded Metric Format lines
//! ([`a2a_core::emf`], which lists every metric) written to stdout, where CloudWatch Logs
//! extracts them, each carrying the invocation's X-Ray trace.

use std::io::Write as _;
use std::sync::Arc;

pub use a2a_core::emf::*;

/// Lines to stdout, one `write` per line, so lines of concurrent requests never interleave.
pub fn stdout_sink() -> Sink {
    Arc::new(|line: &str| {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(format!("{line}\n").as_bytes());
        let _ = out.flush();
    })
}

/// The invocation's X-Ray trace, which lambda_runtime sets for each invocation: ties a line
/// to its trace.
pub fn invocation_trace() -> TraceSource {
    Arc::new(|| std::env::var("_X_AMZN_TRACE_ID").ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// An observer whose lines are kept, as written.
    fn captured() -> (EmfObserver, Arc<std::sync::Mutex<Vec<String>>>) {
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = lines.clone();
        let sink: Sink = Arc::new(move |line: &str| kept.lock().unwrap().push(line.to_owned()));
        (EmfObserver::with_sink("ns", "fn", sink), lines)
    }

    /// An agent that completes every task at once.
    struct Completes;

    #[async_trait::async_trait]
    impl a2a_core::Agent for Completes {
        fn describe(&self) -> a2a_core::AgentDescription {
            a2a_core::AgentDescription {
                name: "completes".into(),
                ..Default::default()
            }
        }

        async fn execute(
            &self,
            _request: a2a_core::AgentRequest,
            emitter: a2a_core::Emitter,
        ) -> Result<(), a2a_core::AgentError> {
            emitter.complete(Some("done")).await
        }
    }

    /// Through the service: a SendMessage is one request of its operation, and the task it
    /// completes is counted once by its final state.
    #[tokio::test]
    async fn a_completed_task_is_counted_by_its_final_state() {
        let (observer, lines) = captured();
        let store = a2a_test_support::server::EmbeddedStore::open();
        let config = a2a_core::ServiceConfig {
            observer: Arc::new(observer),
            ..a2a_core::ServiceConfig::default()
        };
        let service = store.service(config, Arc::new(Completes));
        let request: a2a_protocol::SendMessageRequest = serde_json::from_value(json!({
            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
        }))
        .unwrap();
        service
            .send_message(&a2a_core::CallContext::anonymous(""), request)
            .await
            .expect("sent");
        let lines: Vec<Value> = lines
            .lock()
            .unwrap()
            .iter()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        let finished: Vec<&Value> = lines
            .iter()
            .filter(|l| l.get("TasksFinished").is_some())
            .collect();
        assert_eq!(finished.len(), 1, "{lines:?}");
        assert_eq!(finished[0]["State"], "TASK_STATE_COMPLETED");
        let requests: Vec<&Value> = lines
            .iter()
            .filter(|l| l.get("Requests").is_some())
            .collect();
        assert_eq!(requests.len(), 1, "{lines:?}");
        assert_eq!(requests[0]["Operation"], "SendMessage");
        assert_eq!(requests[0]["Errors"], 0.0);
    }
}
