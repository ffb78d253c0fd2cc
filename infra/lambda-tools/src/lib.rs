//! Local stand-ins for what AWS puts around the functions, for runs under `cargo lambda watch`:
//!
//! - `a2a-lambda-router`: the front door. It serves the route table `infra/routes.json` (the
//!   one `template.yaml` declares as API Gateway events) and forwards each request to its
//!   function's Function URL path under `/lambda-url/<function>/`, streaming the response.
//! - `a2a-sqs-poller`: the event source mappings. It long-polls each queue, hands the messages
//!   to the function as an SQS event through the Invoke API, and deletes what the function did
//!   not list in `batchItemFailures`.

use std::collections::BTreeMap;

use serde::Deserialize;

/// `infra/routes.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteTable {
    /// The HTTP functions and whether each streams.
    pub functions: BTreeMap<String, FunctionSpec>,
    /// The SQS functions and the queue each consumes.
    pub queue_functions: BTreeMap<String, QueueFunctionSpec>,
    /// The routes.
    pub routes: Vec<Route>,
}

/// An HTTP function.
#[derive(Debug, Clone, Deserialize)]
pub struct FunctionSpec {
    /// Whether its front door uses response streaming.
    pub streaming: bool,
}

/// An SQS function.
#[derive(Debug, Clone, Deserialize)]
pub struct QueueFunctionSpec {
    /// `work` or `push`.
    pub queue: String,
}

/// One route.
#[derive(Debug, Clone, Deserialize)]
pub struct Route {
    /// HTTP method, upper case.
    pub method: String,
    /// Path; a `{name}` segment matches any one segment.
    pub path: String,
    /// The function serving it.
    pub function: String,
}

impl RouteTable {
    /// Parses the route table.
    pub fn parse(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| format!("bad route table: {e}"))
    }

    /// The function serving `method path`, as API Gateway matches it: segment by segment, a
    /// literal segment before a `{variable}` one, a trailing `/` ignored.
    pub fn function_for(&self, method: &str, path: &str) -> Option<&str> {
        let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
        let mut best: Option<(&Route, usize)> = None;
        for route in &self.routes {
            if !route.method.eq_ignore_ascii_case(method) {
                continue;
            }
            let pattern: Vec<&str> = route.path.split('/').skip(1).collect();
            if pattern.len() != segments.len() {
                continue;
            }
            let mut literals = 0;
            let matched = pattern.iter().zip(&segments).all(|(p, s)| {
                if p.starts_with('{') && p.ends_with('}') {
                    !s.is_empty()
                } else {
                    literals += 1;
                    p == s
                }
            });
            if matched && best.is_none_or(|(_, l)| literals > l) {
                best = Some((route, literals));
            }
        }
        best.map(|(r, _)| r.function.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_like_api_gateway() {
        let table =
            RouteTable::parse(include_str!("../../routes.json")).expect("routes.json parses");
        let f = |m, p| table.function_for(m, p);
        assert_eq!(f("POST", "/message:send"), Some("send"));
        assert_eq!(f("POST", "/message:stream"), Some("stream"));
        assert_eq!(f("GET", "/tasks"), Some("list"));
        assert_eq!(f("GET", "/tasks/abc"), Some("get"));
        assert_eq!(f("GET", "/tasks/abc:subscribe"), Some("get"));
        assert_eq!(f("POST", "/tasks/abc:cancel"), Some("cancel"));
        assert_eq!(
            f("POST", "/tasks/abc/pushNotificationConfigs"),
            Some("push-config")
        );
        assert_eq!(
            f("DELETE", "/tasks/abc/pushNotificationConfigs/x"),
            Some("push-config")
        );
        assert_eq!(f("GET", "/.well-known/agent-card.json"), Some("card"));
        assert_eq!(f("POST", "/jsonrpc/"), Some("rpc"));
        assert_eq!(f("PUT", "/tasks"), None);
        assert_eq!(f("GET", "/nope"), None);
    }
}
