//! CORS over real sockets: `a2a-local` started with `--cors-origins` (its env var,
//! `A2A_CORS_ORIGINS`) answers browser preflights on every kind of route without auth, and its
//! answers (JSON, SSE, errors) carry the headers a browser needs; other origins, and a server
//! started without the option, get no CORS headers at all, and their requests are refused, as
//! are requests naming the server by a name it does not know (DNS rebinding).

use a2a_e2e::*;
use reqwest::Method;
use serde_json::json;

const INSPECTOR: &str = "https://inspector.example";
const STRANGER: &str = "https://evil.example";

/// The request headers `@a2a-js/sdk` sends, as a browser lists them in a preflight.
const JS_SDK_HEADERS: &str = "a2a-extensions,a2a-version,authorization,content-type";

/// One route of each kind: JSON-RPC, REST with a tenant prefix (send, get/subscribe, push
/// configs), the card and the JWKS.
const PATHS: &[&str] = &[
    "/jsonrpc",
    "/acme/message:send",
    "/acme/message:stream",
    "/acme/tasks/t1",
    "/acme/tasks/t1/pushNotificationConfigs/c1",
    "/tasks",
    "/.well-known/agent-card.json",
    "/.well-known/jwks.json",
];

async fn cors_server(extra: &[(&str, &str)]) -> Server {
    let mut env = vec![("A2A_CORS_ORIGINS", INSPECTOR)];
    env.extend_from_slice(extra);
    Server::start_with_env(&env).await
}

async fn preflight(server: &Server, path: &str, origin: &str, method: &str) -> RestResponse {
    server
        .send_raw(
            server
                .http()
                .request(Method::OPTIONS, server.url(path))
                .header("Origin", origin)
                .header("Access-Control-Request-Method", method)
                .header("Access-Control-Request-Headers", JS_SDK_HEADERS),
        )
        .await
}

/// The `Access-Control-*` headers of a response.
fn cors_headers(response: &RestResponse) -> Vec<String> {
    response
        .headers
        .keys()
        .map(|k| k.as_str().to_owned())
        .filter(|k| k.starts_with("access-control-"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflights_from_the_allowed_origin_are_answered_on_every_route() {
    if !store_ready() {
        return;
    }
    let server = cors_server(&[]).await;
    for path in PATHS {
        let method = if path.starts_with("/.well-known") || *path == "/tasks" {
            "GET"
        } else {
            "POST"
        };
        let answer = preflight(&server, path, INSPECTOR, method).await;
        assert_eq!(answer.status, 204, "OPTIONS {path}: {}", answer.body);
        assert_eq!(
            answer.header("access-control-allow-origin"),
            Some(INSPECTOR),
            "{path}"
        );
        assert_eq!(answer.header("vary"), Some("Origin"), "{path}");
        let methods = answer.header("access-control-allow-methods").unwrap();
        for m in ["GET", "POST", "DELETE"] {
            assert!(methods.contains(m), "{path}: {methods}");
        }
        let allowed = answer
            .header("access-control-allow-headers")
            .unwrap()
            .to_ascii_lowercase();
        for h in JS_SDK_HEADERS.split(',').chain(["last-event-id"]) {
            assert!(allowed.contains(h), "{path}: {h} not in {allowed}");
        }
        assert!(answer.header("access-control-max-age").is_some(), "{path}");
        assert!(
            answer.header("access-control-allow-credentials").is_none(),
            "{path}"
        );

        // Another origin: no CORS headers, so the browser blocks the call.
        let refused = preflight(&server, path, STRANGER, method).await;
        assert!(cors_headers(&refused).is_empty(), "{path}: {refused:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_to_the_allowed_origin_carry_cors_headers_and_others_do_not() {
    if !store_ready() {
        return;
    }
    let server = cors_server(&[]).await;
    let inspector = server.client_with_headers(&[("Origin", INSPECTOR)]);
    let (_, request) = inspector.rpc_request("SendMessage", send_request("hello"));
    let sent = inspector.send_raw(request).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    assert!(sent.body["result"].is_object(), "{}", sent.body);
    assert_eq!(sent.header("access-control-allow-origin"), Some(INSPECTOR));
    let exposed = sent.header("access-control-expose-headers").unwrap();
    assert!(exposed.contains("A2A-Version"), "{exposed}");

    // REST with a tenant, and a 404 (an unknown task) the browser can read.
    let body = send_request("hello");
    let rest = inspector
        .send_raw(inspector.rest_request(Method::POST, "/acme/message:send", Some(&body)))
        .await;
    assert_eq!(rest.status, 200, "{}", rest.body);
    assert_eq!(rest.header("access-control-allow-origin"), Some(INSPECTOR));
    let missing = inspector
        .send_raw(inspector.rest_request(Method::GET, "/acme/tasks/no-such-task", None))
        .await;
    assert_eq!(missing.status, 404, "{}", missing.body);
    assert_eq!(
        missing.header("access-control-allow-origin"),
        Some(INSPECTOR)
    );

    // Another origin is refused by a2a-local (a web page the user visits must not act as the
    // user), without CORS headers: the browser cannot even read the refusal.
    let stranger = server.client_with_headers(&[("Origin", STRANGER)]);
    let (_, request) = stranger.rpc_request("SendMessage", send_request("hello"));
    let refused = stranger.send_raw(request).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(cors_headers(&refused).is_empty(), "{refused:?}");
}

both_bindings!(sse_streams_carry_cors_headers);

async fn sse_streams_carry_cors_headers(b: Binding) {
    let server = cors_server(&[]).await;
    let inspector = server.client_with_headers(&[("Origin", INSPECTOR)]);
    let mut stream = inspector
        .stream(b, send_request("slow 2 10"))
        .await
        .unwrap_or_else(|e| panic!("stream: {}", e.body));
    assert_eq!(
        stream
            .headers
            .get("access-control-allow-origin")
            .and_then(|v| v.to_str().ok()),
        Some(INSPECTOR)
    );
    let mut events = 0;
    while stream.next_event().await.is_some() {
        events += 1;
    }
    assert!(events > 1, "the stream delivered {events} event(s)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_api_keys_preflights_need_no_key_and_a_401_is_readable() {
    if !store_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("api-keys.json");
    let server = cors_server(&[
        ("A2A_AUTH", "api-key"),
        ("A2A_API_KEY_FILE", file.to_str().unwrap()),
        ("A2A_API_KEY_NAME", "X-Agent-Key"),
    ])
    .await;
    let answer = preflight(&server, "/acme/message:send", INSPECTOR, "POST").await;
    assert_eq!(answer.status, 204, "{}", answer.body);
    let allowed = answer.header("access-control-allow-headers").unwrap();
    assert!(allowed.contains("X-Agent-Key"), "{allowed}");

    let inspector = server.client_with_headers(&[("Origin", INSPECTOR)]);
    for b in Binding::ALL {
        let denied = match b {
            Binding::JsonRpc => {
                let (_, request) = inspector.rpc_request("GetTask", json!({"id": "t1"}));
                inspector.send_raw(request).await
            }
            Binding::Rest => {
                inspector
                    .send_raw(inspector.rest_request(Method::GET, "/acme/tasks/t1", None))
                    .await
            }
        };
        assert_eq!(denied.status, 401, "{b:?}: {}", denied.body);
        assert_eq!(
            denied.header("access-control-allow-origin"),
            Some(INSPECTOR),
            "{b:?}"
        );
        assert!(denied.header("www-authenticate").is_some(), "{b:?}");
        let exposed = denied.header("access-control-expose-headers").unwrap();
        assert!(exposed.contains("WWW-Authenticate"), "{b:?}: {exposed}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_option_there_is_no_cors() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    for path in PATHS {
        let answer = preflight(&server, path, INSPECTOR, "POST").await;
        assert_ne!(answer.status, 204, "OPTIONS {path}");
        assert!(cors_headers(&answer).is_empty(), "{path}: {answer:?}");
    }
    // A web page's request is refused (no origin is allowed), without CORS headers.
    let inspector = server.client_with_headers(&[("Origin", INSPECTOR)]);
    let (_, request) = inspector.rpc_request("SendMessage", send_request("hello"));
    let sent = inspector.send_raw(request).await;
    assert_eq!(sent.status, 403, "{}", sent.body);
    assert!(cors_headers(&sent).is_empty(), "{sent:?}");
}

/// The server's port, from its base URL.
fn port_of(server: &Server) -> String {
    server.base().rsplit(':').next().expect("a port").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_rebinding_and_other_sites_pages_are_refused() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let port = port_of(&server);
    let send = |headers: Vec<(&'static str, String)>| {
        let pairs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let client = server.client_with_headers(&pairs);
        async move {
            let (_, request) = client.rpc_request("SendMessage", send_request("hello"));
            client.send_raw(request).await
        }
    };
    // A page of attacker.example re-points its name at 127.0.0.1: the browser sends that Host.
    let rebound = send(vec![("Host", format!("attacker.example:{port}"))]).await;
    assert_eq!(rebound.status, 403, "{}", rebound.body);
    assert_eq!(
        rebound.body["error"]["status"], "PERMISSION_DENIED",
        "{}",
        rebound.body
    );
    let why = rebound.body["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        why.contains("--allowed-hosts") && why.contains("DNS rebinding"),
        "{why}"
    );
    // A page of another site calling 127.0.0.1 directly sends its Origin.
    let foreign = send(vec![("Origin", STRANGER.to_owned())]).await;
    assert_eq!(foreign.status, 403, "{}", foreign.body);
    // Neither created anything.
    let listed = ok(server.list_tasks(Binding::JsonRpc, json!({})).await);
    assert_eq!(listed["totalSize"], 0, "{listed}");

    // Served: the address itself, localhost by name, and the server's own origin.
    for headers in [
        vec![],
        vec![("Host", format!("localhost:{port}"))],
        vec![("Origin", format!("http://127.0.0.1:{port}"))],
    ] {
        let served = send(headers.clone()).await;
        assert_eq!(served.status, 200, "{headers:?}: {}", served.body);
    }

    // Behind a proxy: the names it forwards, or `*` for any host and origin.
    let named = Server::start_with_env(&[("A2A_ALLOWED_HOSTS", "agent.example")]).await;
    let client = named.client_with_headers(&[("Host", "agent.example")]);
    let (_, request) = client.rpc_request("SendMessage", send_request("hello"));
    assert_eq!(client.send_raw(request).await.status, 200);
    let any = Server::start_with_env(&[("A2A_ALLOWED_HOSTS", "*")]).await;
    let client = any.client_with_headers(&[("Host", "attacker.example"), ("Origin", STRANGER)]);
    let (_, request) = client.rpc_request("SendMessage", send_request("hello"));
    assert_eq!(client.send_raw(request).await.status, 200);
}

/// How many times a response's `Vary` names `Origin`.
fn varies_by_origin(response: &RestResponse) -> usize {
    response
        .headers
        .get_all("vary")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter(|name| name.trim().eq_ignore_ascii_case("origin"))
        .count()
}

/// The card is `Cache-Control: public` and answers 200 to clients without an `Origin` and
/// 403 to other sites' pages: each of those answers says it varies by `Origin` (once), or a
/// shared cache could serve the refusal to everyone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_depend_on_the_origin_say_so() {
    if !store_ready() {
        return;
    }
    for server in [Server::start().await, cors_server(&[]).await] {
        let port = port_of(&server);
        let own = format!("http://127.0.0.1:{port}");
        let card = |origin: Option<String>| {
            let mut request = server
                .http()
                .get(server.url("/.well-known/agent-card.json"));
            if let Some(origin) = origin {
                request = request.header("Origin", origin);
            }
            server.send_raw(request)
        };
        let refused = card(Some(STRANGER.into())).await;
        assert_eq!(refused.status, 403, "{}", refused.body);
        assert_eq!(varies_by_origin(&refused), 1, "{refused:?}");
        for origin in [None, Some(own.clone())] {
            let served = card(origin.clone()).await;
            assert_eq!(served.status, 200, "{origin:?}");
            assert_eq!(varies_by_origin(&served), 1, "{origin:?}: {served:?}");
        }
    }
}
