//! Identity and tenancy over real sockets: bearer JWTs from a test OpenID issuer (and the
//! attacks on them), API keys in a header or the query string, permissions per operation,
//! owner scoping of every operation, tenants, the extended card, and logs free of secrets.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use a2a_e2e::issuer::{now, TestIssuer, ALL_SCOPES, AUDIENCE};
use a2a_e2e::{
    both_bindings, err, follow_up, id_of, ok, send_request, state, store_ready, ApiError, Binding,
    Client, Server, Webhook, A2A_VERSION, EVENT_TIMEOUT,
};
use base64::Engine as _;
use reqwest::Method;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Helpers

async fn jwt_server(issuer: &TestIssuer) -> Server {
    Server::start_with_env(&[
        ("A2A_AUTH", "jwt"),
        ("A2A_JWT_ISSUER", &issuer.issuer),
        ("A2A_JWT_AUDIENCE", AUDIENCE),
    ])
    .await
}

/// 401, UNAUTHENTICATED (-31401 on JSON-RPC), with a challenge of `scheme`.
#[track_caller]
fn assert_unauthenticated(e: &ApiError, scheme: &str, what: &str) {
    assert_eq!(e.http_status, 401, "{what}: HTTP status: {}", e.body);
    assert_eq!(
        e.reason.as_deref(),
        Some("UNAUTHENTICATED"),
        "{what}: {}",
        e.body
    );
    if e.binding == Binding::JsonRpc {
        assert_eq!(e.code, Some(-31401), "{what}: {}", e.body);
    } else {
        assert_eq!(
            e.body["error"]["status"], "UNAUTHENTICATED",
            "{what}: {}",
            e.body
        );
        assert_eq!(e.body["error"]["code"], 401, "{what}: {}", e.body);
    }
    let challenge = e.www_authenticate.as_deref().unwrap_or_else(|| {
        panic!("{what}: a 401 carries WWW-Authenticate: {}", e.body);
    });
    assert!(
        challenge.starts_with(scheme),
        "{what}: challenge {challenge:?} is for {scheme}"
    );
}

/// 403, PERMISSION_DENIED (-31403 on JSON-RPC).
#[track_caller]
fn assert_denied(e: &ApiError, what: &str) {
    assert_eq!(e.http_status, 403, "{what}: HTTP status: {}", e.body);
    assert_eq!(
        e.reason.as_deref(),
        Some("PERMISSION_DENIED"),
        "{what}: {}",
        e.body
    );
    if e.binding == Binding::JsonRpc {
        assert_eq!(e.code, Some(-31403), "{what}: {}", e.body);
    }
}

#[track_caller]
fn assert_not_found(result: Result<Value, ApiError>, what: &str) {
    match result {
        Ok(v) => panic!("{what}: expected TaskNotFound, got {v}"),
        Err(e) => {
            assert_eq!(
                e.reason.as_deref(),
                Some("TASK_NOT_FOUND"),
                "{what}: {}",
                e.body
            );
            e.assert_is(-32001, 404, "TASK_NOT_FOUND");
        }
    }
}

/// Starts a task parked in INPUT_REQUIRED (the reference agent's `hold`).
async fn held_task(client: &Client, b: Binding) -> String {
    let task = client.send_text(b, "hold").await;
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    id_of(&task)
}

fn task_ids(list: &Value) -> Vec<String> {
    list["tasks"]
        .as_array()
        .map(|tasks| tasks.iter().map(id_of).collect())
        .unwrap_or_default()
}

/// The token with its payload replaced by `claims` (header and signature kept).
fn tampered(token: &str, claims: &Value) -> String {
    let parts: Vec<&str> = token.split('.').collect();
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{}.{payload}.{}", parts[0], parts[2])
}

// ---------------------------------------------------------------------------------------------
// Bearer JWTs

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_forged_or_misused_token_is_refused_with_401() {
    if !store_ready() {
        return;
    }
    let issuer = TestIssuer::start().await;
    let other = TestIssuer::start().await;
    let server = jwt_server(&issuer).await;

    let valid = issuer.token("alice", ALL_SCOPES);
    let claims = issuer.claims("alice", ALL_SCOPES);
    let with = |key: &str, value: Value| {
        let mut c = claims.clone();
        c[key] = value;
        c
    };
    let mut mallory = claims.clone();
    mallory["sub"] = json!("mallory");
    let attacks: Vec<(&str, Option<String>)> = vec![
        (
            "alg none",
            Some(format!("Bearer {}", issuer.unsigned(&claims))),
        ),
        (
            "HS256 keyed with the issuer's public key",
            Some(format!("Bearer {}", issuer.hs256_with_public_key(&claims))),
        ),
        (
            "wrong aud",
            Some(format!(
                "Bearer {}",
                issuer.sign(&with("aud", json!("someone-else")))
            )),
        ),
        (
            "wrong iss",
            Some(format!(
                "Bearer {}",
                issuer.sign(&with("iss", json!(other.issuer)))
            )),
        ),
        (
            "expired",
            Some(format!(
                "Bearer {}",
                issuer.sign(&json!({
                    "iss": issuer.issuer, "sub": "alice", "aud": AUDIENCE, "scope": ALL_SCOPES,
                    "iat": now() - 7200, "nbf": now() - 7200, "exp": now() - 600,
                }))
            )),
        ),
        (
            "nbf in the future",
            Some(format!(
                "Bearer {}",
                issuer.sign(&with("nbf", json!(now() + 600)))
            )),
        ),
        (
            "unknown kid",
            Some(format!("Bearer {}", other.sign(&claims))),
        ),
        (
            "tampered payload",
            Some(format!("Bearer {}", tampered(&valid, &mallory))),
        ),
        ("missing header", None),
        ("wrong scheme (Basic)", Some(format!("Basic {valid}"))),
        ("wrong scheme (Token)", Some(format!("Token {valid}"))),
        ("bare token", Some(valid.clone())),
        (
            "a valid token from another issuer",
            Some(format!("Bearer {}", other.token("alice", ALL_SCOPES))),
        ),
        ("not a JWT", Some("Bearer not.a.jwt".to_string())),
    ];

    // Control: the valid token works on both bindings.
    let alice = server.client_with_bearer(&valid);
    for b in Binding::ALL {
        ok(alice.list_tasks(b, json!({})).await);
    }
    for (what, authorization) in &attacks {
        let client = match authorization {
            Some(value) => server.client_with_headers(&[("Authorization", value)]),
            None => server.client_with_headers(&[]),
        };
        for b in Binding::ALL {
            let e = err(client.list_tasks(b, json!({})).await);
            assert_unauthenticated(&e, "Bearer", &format!("{what} ({b:?}, ListTasks)"));
            let e = err(client.send(b, send_request("hello")).await);
            assert_unauthenticated(&e, "Bearer", &format!("{what} ({b:?}, SendMessage)"));
            // Streaming methods answer 401 too, before any stream starts.
            let e = err(client.stream(b, send_request("hello")).await);
            assert_unauthenticated(&e, "Bearer", &format!("{what} ({b:?}, stream)"));
        }
    }
    // A missing credential gets a bare challenge; a bad one says why (RFC 6750 §3.1).
    let e = err(server.list_tasks(Binding::Rest, json!({})).await);
    assert_eq!(e.www_authenticate.as_deref(), Some("Bearer realm=\"a2a\""));
    let expired = server.client_with_bearer(&issuer.sign(&with("exp", json!(now() - 600))));
    let e = err(expired.list_tasks(Binding::Rest, json!({})).await);
    assert!(
        e.www_authenticate
            .as_deref()
            .is_some_and(|c| c.contains("error=\"invalid_token\"")),
        "{:?}",
        e.www_authenticate
    );
    // Unknown kids refetch the JWKS at most once per cooldown, however many arrive.
    assert!(
        issuer.jwks_fetches() <= 2,
        "the JWKS was fetched {} times",
        issuer.jwks_fetches()
    );
    // Nobody's forgeries created anything: alice has no tasks.
    let list = ok(alice.list_tasks(Binding::JsonRpc, json!({})).await);
    assert!(task_ids(&list).is_empty(), "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_declares_the_schemes_and_the_extended_card_needs_a_token() {
    if !store_ready() {
        return;
    }
    let issuer = TestIssuer::start().await;
    let server = jwt_server(&issuer).await;

    // The public card and the push JWKS need no credentials.
    let card = server
        .send_raw(
            server
                .http()
                .get(server.url("/.well-known/agent-card.json")),
        )
        .await;
    assert_eq!(card.status, 200, "{}", card.body);
    let card = card.body;
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer",
        "{card}"
    );
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["bearerFormat"],
        "JWT"
    );
    assert_eq!(
        card["securitySchemes"]["openId"]["openIdConnectSecurityScheme"]["openIdConnectUrl"],
        format!("{}/.well-known/openid-configuration", issuer.issuer)
    );
    let requirements = card["securityRequirements"]
        .as_array()
        .expect("requirements");
    assert!(
        requirements
            .iter()
            .any(|r| r["schemes"].get("bearer").is_some()),
        "{card}"
    );
    assert_eq!(card["capabilities"]["extendedAgentCard"], true, "{card}");
    let jwks = server
        .send_raw(server.http().get(server.url("/.well-known/jwks.json")))
        .await;
    assert_eq!(jwks.status, 200);

    let public_skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert!(!public_skills.contains(&"tck-scenarios"), "{card}");

    for b in Binding::ALL {
        let e = err(server.extended_card(b).await);
        assert_unauthenticated(&e, "Bearer", &format!("extended card, {b:?}"));
        let reader = server.client_with_bearer(&issuer.token("alice", "a2a:read"));
        let extended = ok(reader.extended_card(b).await);
        let skills: Vec<&str> = extended["skills"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["id"].as_str())
            .collect();
        assert!(skills.contains(&"tck-scenarios"), "{extended}");
        assert!(skills.len() > public_skills.len());
        // Reading the extended card is a read.
        let sender = server.client_with_bearer(&issuer.token("alice", "a2a:send"));
        assert_denied(
            &err(sender.extended_card(b).await),
            "extended card without read",
        );
    }
}

async fn scopes_grant_each_operation(b: Binding) {
    let issuer = TestIssuer::start().await;
    let server = jwt_server(&issuer).await;
    let webhook = Webhook::start().await;
    let full = server.client_with_bearer(&issuer.token("alice", ALL_SCOPES));
    let task = held_task(&full, b).await;
    let config = ok(full
        .create_push(b, &task, json!({"url": webhook.url}))
        .await);
    let config_id = config["id"].as_str().unwrap().to_string();

    // The same subject with fewer scopes: the same owner, so only the permission decides.
    let reader = server.client_with_bearer(&issuer.token("alice", "a2a:read"));
    ok(reader.get_task(b, &task, None).await);
    assert_eq!(
        task_ids(&ok(reader.list_tasks(b, json!({})).await)),
        vec![task.clone()]
    );
    let e = err(reader.send(b, follow_up(&task, "more")).await);
    assert_denied(&e, "send with read only");
    // RFC 6750 §3.1: a 403 names the scope that is missing.
    if let Some(challenge) = &e.www_authenticate {
        assert!(challenge.contains("insufficient_scope"), "{challenge}");
        assert!(challenge.contains("a2a:send"), "{challenge}");
    }
    assert_denied(
        &err(reader.stream(b, send_request("hello")).await),
        "stream with read only",
    );
    assert_denied(&err(reader.cancel(b, &task).await), "cancel with read only");
    assert_denied(
        &err(reader
            .create_push(b, &task, json!({"url": webhook.url}))
            .await),
        "create push with read only",
    );
    assert_denied(
        &err(reader.get_push(b, &task, &config_id).await),
        "get push with read only",
    );
    assert_denied(
        &err(reader.list_push(b, &task).await),
        "list push with read only",
    );
    assert_denied(
        &err(reader.delete_push(b, &task, &config_id).await),
        "delete push with read only",
    );
    // An inline push config in a send is a push-config write.
    let sender = server.client_with_bearer(&issuer.token("alice", "a2a:send"));
    let inline = json!({
        "message": a2a_e2e::user_message("hello"),
        "configuration": {"taskPushNotificationConfig": {"url": webhook.url}},
    });
    assert_denied(
        &err(sender.send(b, inline).await),
        "inline push without push",
    );
    assert_denied(
        &err(sender.get_task(b, &task, None).await),
        "get without read",
    );
    assert_denied(
        &err(sender.list_tasks(b, json!({})).await),
        "list without read",
    );
    assert_denied(
        &err(sender.subscribe(b, &task, None).await),
        "subscribe without read",
    );
    // Permission is checked before the task is looked up: a 403 says nothing about existence.
    assert_denied(
        &err(sender.get_task(b, "no-such-task", None).await),
        "get of a missing task without read",
    );

    let pusher = server.client_with_bearer(&issuer.token("alice", "a2a:push"));
    assert_eq!(
        ok(pusher.list_push(b, &task).await)["configs"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    ok(pusher.get_push(b, &task, &config_id).await);
    ok(pusher.delete_push(b, &task, &config_id).await);

    let canceller = server.client_with_bearer(&issuer.token("alice", "a2a:cancel"));
    let canceled = ok(canceller.cancel(b, &task).await);
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");

    // A token without any a2a scope can do nothing.
    let nobody = server.client_with_bearer(&issuer.token("alice", "openid profile"));
    assert_denied(&err(nobody.list_tasks(b, json!({})).await), "no scopes");
    let sent = ok(sender.send(b, send_request("hello")).await);
    assert_eq!(state(&sent["task"]), "TASK_STATE_COMPLETED", "{sent}");
}

// ---------------------------------------------------------------------------------------------
// Owner scoping

async fn another_owners_task_is_not_found_on_every_operation(b: Binding) {
    let issuer = TestIssuer::start().await;
    let server = jwt_server(&issuer).await;
    let webhook = Webhook::start().await;
    let alice = server.client_with_bearer(&issuer.token("alice", ALL_SCOPES));
    let bob = server.client_with_bearer(&issuer.token("bob", ALL_SCOPES));

    let task = held_task(&alice, b).await;
    let config = ok(alice
        .create_push(b, &task, json!({"url": webhook.url}))
        .await);
    let config_id = config["id"].as_str().unwrap().to_string();
    held_task(&bob, b).await;

    assert_not_found(bob.get_task(b, &task, None).await, "get");
    assert_not_found(bob.cancel(b, &task).await, "cancel");
    assert_not_found(
        bob.send(b, follow_up(&task, "hijack")).await,
        "send to the task",
    );
    match bob.subscribe(b, &task, None).await {
        Ok(stream) => panic!("subscribe to another owner's task: {stream:?}"),
        Err(e) => e.assert_is(-32001, 404, "TASK_NOT_FOUND"),
    }
    match bob.stream(b, follow_up(&task, "hijack")).await {
        Ok(stream) => panic!("stream to another owner's task: {stream:?}"),
        Err(e) => e.assert_is(-32001, 404, "TASK_NOT_FOUND"),
    }
    assert_not_found(
        bob.create_push(b, &task, json!({"url": webhook.url})).await,
        "create push",
    );
    assert_not_found(bob.get_push(b, &task, &config_id).await, "get push");
    assert_not_found(bob.list_push(b, &task).await, "list push");
    assert_not_found(bob.delete_push(b, &task, &config_id).await, "delete push");
    let listed = task_ids(&ok(bob.list_tasks(b, json!({})).await));
    assert!(
        !listed.contains(&task),
        "bob lists alice's task: {listed:?}"
    );
    assert_eq!(listed.len(), 1, "bob sees his own task only");

    // Alice's task and config are untouched.
    let mine = ok(alice.get_task(b, &task, None).await);
    assert_eq!(state(&mine), "TASK_STATE_INPUT_REQUIRED", "{mine}");
    ok(alice.get_push(b, &task, &config_id).await);
    assert_eq!(
        task_ids(&ok(alice.list_tasks(b, json!({})).await)),
        vec![task.clone()]
    );
}

async fn tenants_partition_tasks_and_never_replace_authorization(b: Binding) {
    let issuer = TestIssuer::start().await;
    let server = jwt_server(&issuer).await;
    let alice = server.client_with_bearer(&issuer.token("alice", ALL_SCOPES));
    let bob = server.client_with_bearer(&issuer.token("bob", ALL_SCOPES));

    // Alice creates a task in tenant A (the REST path prefix, or params.tenant).
    let created = match b {
        Binding::Rest => ok(alice
            .rest_call(
                Method::POST,
                "/tenant-a/message:send",
                Some(send_request("hold")),
            )
            .await),
        Binding::JsonRpc => {
            let mut request = send_request("hold");
            request["tenant"] = json!("tenant-a");
            ok(alice.rpc_call("SendMessage", request).await)
        }
    };
    let task = id_of(&created["task"]);

    let get_in = |client: &Client, tenant: &str| {
        let client = client.clone();
        let tenant = tenant.to_string();
        let task = task.clone();
        async move {
            match b {
                Binding::Rest => {
                    let prefix = if tenant.is_empty() {
                        String::new()
                    } else {
                        format!("/{tenant}")
                    };
                    client
                        .rest_call(Method::GET, &format!("{prefix}/tasks/{task}"), None)
                        .await
                }
                Binding::JsonRpc => {
                    client
                        .rpc_call("GetTask", json!({"id": task, "tenant": tenant}))
                        .await
                }
            }
        }
    };
    let list_in = |client: &Client, tenant: &str| {
        let client = client.clone();
        let tenant = tenant.to_string();
        async move {
            match b {
                Binding::Rest => {
                    client
                        .rest_call(Method::GET, &format!("/{tenant}/tasks"), None)
                        .await
                }
                Binding::JsonRpc => {
                    client
                        .rpc_call("ListTasks", json!({"tenant": tenant}))
                        .await
                }
            }
        }
    };

    ok(get_in(&alice, "tenant-a").await);
    assert_not_found(get_in(&alice, "tenant-b").await, "alice, tenant B");
    assert_not_found(get_in(&alice, "").await, "alice, no tenant");
    // Naming the right tenant does not make bob alice.
    assert_not_found(get_in(&bob, "tenant-a").await, "bob, tenant A");
    assert_eq!(
        task_ids(&ok(list_in(&alice, "tenant-a").await)),
        vec![task.clone()]
    );
    assert!(task_ids(&ok(list_in(&alice, "tenant-b").await)).is_empty());
    assert!(task_ids(&ok(list_in(&bob, "tenant-a").await)).is_empty());
    // And no credentials at all is still a 401 under a tenant prefix.
    let e = err(get_in(&server.client_with_headers(&[]), "tenant-a").await);
    assert_unauthenticated(&e, "Bearer", "anonymous, tenant A");
}

both_bindings!(
    scopes_grant_each_operation,
    another_owners_task_is_not_found_on_every_operation,
    tenants_partition_tasks_and_never_replace_authorization,
);

// ---------------------------------------------------------------------------------------------
// API keys

/// Runs `a2a-local keys …` on `file`; returns its stdout.
fn keys_command(file: &std::path::Path, args: &[&str]) -> String {
    let output = std::process::Command::new(a2a_e2e::ensure_built())
        .arg("keys")
        .args(args)
        .arg("--api-key-file")
        .arg(file)
        .output()
        .expect("run a2a-local keys");
    assert!(
        output.status.success(),
        "a2a-local keys {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

fn issue_key(file: &std::path::Path, permissions: &str) -> String {
    let key = keys_command(file, &["issue", "--permissions", permissions]);
    let key = key.trim().to_string();
    assert!(key.starts_with("a2a_"), "{key}");
    key
}

fn key_id(key: &str) -> &str {
    key.split('_').nth(1).expect("a2a_<id>_<secret>")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_in_a_header_are_checked_hashed_and_revocable() {
    if !store_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("api-keys.json");
    let admin = issue_key(&file, "all");
    let reader = issue_key(&file, "read");
    let doomed = issue_key(&file, "all");
    // The key file holds hashes only.
    let stored = std::fs::read_to_string(&file).unwrap();
    for key in [&admin, &reader, &doomed] {
        // a2a_<id>_<secret>: the secret is base64url and may itself contain '_'.
        let secret = key.splitn(3, '_').nth(2).expect("a2a_<id>_<secret>");
        assert!(
            !stored.contains(secret),
            "a key's secret is stored in plain text"
        );
    }

    let server = Server::start_with_env(&[
        ("A2A_AUTH", "api-key"),
        ("A2A_API_KEY_FILE", file.to_str().unwrap()),
    ])
    .await;
    let card = server
        .send_raw(
            server
                .http()
                .get(server.url("/.well-known/agent-card.json")),
        )
        .await
        .body;
    assert_eq!(
        card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"],
        json!({"location": "header", "name": "X-API-Key",
               "description": card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["description"]}),
        "{card}"
    );
    assert_eq!(
        card["securityRequirements"],
        json!([{"schemes": {"apiKey": {"list": []}}}])
    );

    let with_key = |key: &str| server.client_with_headers(&[("X-API-Key", key)]);
    let admin_client = with_key(&admin);
    let reader_client = with_key(&reader);
    let doomed_client = with_key(&doomed);
    for b in Binding::ALL {
        let task = held_task(&admin_client, b).await;
        ok(admin_client.get_task(b, &task, None).await);
        // Keys are principals: the reader key is another owner.
        assert_not_found(reader_client.get_task(b, &task, None).await, "other key");
        assert_denied(
            &err(reader_client.send(b, send_request("hello")).await),
            "read-only key sends",
        );
        ok(reader_client.list_tasks(b, json!({})).await);
        ok(doomed_client.list_tasks(b, json!({})).await);
        ok(admin_client.extended_card(b).await);

        let wrong_secret = format!("a2a_{}_{}", key_id(&admin), "A".repeat(43));
        for (what, client) in [
            ("no key", server.client_with_headers(&[])),
            ("wrong secret", with_key(&wrong_secret)),
            ("garbage", with_key("hunter2")),
            ("unknown id", with_key("a2a_0000000000000000_xyz")),
            ("key as a bearer token", server.client_with_bearer(&admin)),
            (
                "key in the wrong header",
                server.client_with_headers(&[("X-Api-Token", &admin)]),
            ),
        ] {
            let e = err(client.list_tasks(b, json!({})).await);
            assert_unauthenticated(&e, "ApiKey", &format!("{what} ({b:?})"));
        }
    }

    // Revocation takes effect on the next request, without a restart.
    keys_command(&file, &["revoke", key_id(&doomed)]);
    for b in Binding::ALL {
        let e = err(doomed_client.list_tasks(b, json!({})).await);
        assert_unauthenticated(&e, "ApiKey", &format!("revoked key ({b:?})"));
        ok(admin_client.list_tasks(b, json!({})).await);
    }
    // A key issued while the server runs works at once.
    let late = issue_key(&file, "read");
    ok(with_key(&late).list_tasks(Binding::Rest, json!({})).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_in_the_query_string_as_the_card_says() {
    if !store_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let key = issue_key(&file, "all");
    let server = Server::start_with_env(&[
        ("A2A_AUTH", "api-key"),
        ("A2A_API_KEY_FILE", file.to_str().unwrap()),
        ("A2A_API_KEY_LOCATION", "query"),
        ("A2A_API_KEY_NAME", "api_key"),
    ])
    .await;
    let card = server
        .send_raw(
            server
                .http()
                .get(server.url("/.well-known/agent-card.json")),
        )
        .await
        .body;
    let scheme = &card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"];
    assert_eq!(scheme["location"], "query", "{card}");
    assert_eq!(scheme["name"], "api_key", "{card}");

    let query = a2a_e2e::query_string(&json!({"api_key": key}));
    // REST: the key in the query string.
    let response = server
        .send_raw(
            server
                .http()
                .get(server.url(&format!("/tasks{query}")))
                .header("A2A-Version", A2A_VERSION),
        )
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    // JSON-RPC: the key in the endpoint's query string.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    let response = server
        .send_raw(
            server
                .http()
                .post(server.url(&format!("/jsonrpc{query}")))
                .header("A2A-Version", A2A_VERSION)
                .header("Content-Type", "application/json")
                .body(body.to_string()),
        )
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert!(response.body.get("result").is_some(), "{}", response.body);
    // The header form is not what the card says: refused.
    let in_header = server.client_with_headers(&[("api_key", &key)]);
    for b in Binding::ALL {
        let e = err(in_header.list_tasks(b, json!({})).await);
        assert_unauthenticated(&e, "ApiKey", &format!("key in a header ({b:?})"));
    }
    // A wrong key in the query string.
    let bad = a2a_e2e::query_string(&json!({"api_key": format!("a2a_{}_nope", key_id(&key))}));
    let response = server
        .send_raw(
            server
                .http()
                .get(server.url(&format!("/tasks{bad}")))
                .header("A2A-Version", A2A_VERSION),
        )
        .await;
    assert_eq!(response.status, 401, "{}", response.body);
}

// ---------------------------------------------------------------------------------------------
// Logs

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_of_a_full_run_hold_no_token_key_or_push_credential() {
    if !store_ready() {
        return;
    }
    let issuer = TestIssuer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("api-keys.json");
    let api_key = issue_key(&file, "all");
    let mut webhook = Webhook::start().await;

    let jwt = Server::start_with_env(&[
        ("A2A_AUTH", "jwt"),
        ("A2A_JWT_ISSUER", &issuer.issuer),
        ("A2A_JWT_AUDIENCE", AUDIENCE),
        ("RUST_LOG", "debug"),
    ])
    .await;
    let keyed = Server::start_with_env(&[
        ("A2A_AUTH", "api-key"),
        ("A2A_API_KEY_FILE", file.to_str().unwrap()),
        ("RUST_LOG", "debug"),
    ])
    .await;
    let token = issuer.token("alice", ALL_SCOPES);
    let forged = tampered(&token, &issuer.claims("mallory", ALL_SCOPES));
    let push_token = "push-token-5f0c7e1d9a";
    let push_credentials = "push-credential-b81d22e4";

    let alice = jwt.client_with_bearer(&token);
    let keyed_client = keyed.client_with_headers(&[("X-API-Key", &api_key)]);
    for client in [&alice, &keyed_client] {
        for b in Binding::ALL {
            let request = json!({
                "message": a2a_e2e::user_message("slow 2 50"),
                "configuration": {"taskPushNotificationConfig": {
                    "url": webhook.url,
                    "token": push_token,
                    "authentication": {"scheme": "Bearer", "credentials": push_credentials},
                }},
            });
            let mut stream = client.stream(b, request).await.expect("stream");
            stream.collect_to_end(EVENT_TIMEOUT).await;
            let task = held_task(client, b).await;
            ok(client.get_task(b, &task, None).await);
            ok(client
                .create_push(
                    b,
                    &task,
                    json!({"url": webhook.url, "token": push_token,
                           "authentication": {"scheme": "Bearer", "credentials": push_credentials}}),
                )
                .await);
            ok(client.cancel(b, &task).await);
        }
    }
    // Pushes went out carrying the credentials (so they were in the server's hands).
    let pushes = webhook
        .until(EVENT_TIMEOUT, |p| {
            p.header("authorization")
                .is_some_and(|a| a.contains(push_credentials))
        })
        .await;
    assert!(!pushes.is_empty());
    // Failed attempts, with the credentials the server must not repeat.
    for b in Binding::ALL {
        let forged_client = jwt.client_with_bearer(&forged);
        err(forged_client.list_tasks(b, json!({})).await);
        let wrong = keyed.client_with_headers(&[("X-API-Key", &format!("{api_key}x"))]);
        err(wrong.list_tasks(b, json!({})).await);
    }

    let token_signature = token.rsplit('.').next().unwrap();
    // a2a_<id>_<secret>: the secret is base64url and may itself contain '_'.
    let key_secret = api_key.splitn(3, '_').nth(2).unwrap();
    for (name, server) in [("jwt", &jwt), ("api-key", &keyed)] {
        let logs = server
            .logs_once_containing("authentication failed", EVENT_TIMEOUT)
            .await;
        for (what, secret) in [
            ("the bearer token", token.as_str()),
            ("the bearer token's signature", token_signature),
            ("the forged token", forged.as_str()),
            ("the API key", api_key.as_str()),
            ("the API key's secret", key_secret),
            ("the push token", push_token),
            ("the push credentials", push_credentials),
        ] {
            assert!(
                !logs.contains(secret),
                "{name}: the log contains {what}:\n{logs}"
            );
        }
    }
}

#[test]
fn the_test_issuer_binary_answers_help_and_a_bad_address_with_its_usage() {
    let run = |arg: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_test-issuer"))
            .arg(arg)
            .output()
            .expect("run test-issuer")
    };
    let help = run("--help");
    assert!(help.status.success(), "{help:?}");
    let stdout = String::from_utf8_lossy(&help.stdout);
    assert!(stdout.starts_with("Usage: test-issuer [ADDR]"), "{stdout}");
    assert!(stdout.contains("--jwt-issuer"), "{stdout}");

    let bad = run("nowhere");
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.starts_with("test-issuer: \"nowhere\" is not an address such as 127.0.0.1:0"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
