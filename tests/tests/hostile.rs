//! The `a2a` command against agents that want to harm their caller ([`HostileAgent`], a test
//! server on 127.0.0.1): terminal control sequences in everything they send, answers that
//! never end, redirects and cards that would carry credentials elsewhere, streams that lie
//! about their task, end empty, fall silent or never end, a card that stalls, a JWKS that never
//! ends, and (against the client library) a token endpoint whose answer never ends. Each check fails on the command as it was before it was made safe against that.

use a2a_e2e::*;
use base64::Engine;
use serde_json::{json, Value};

/// Raw terminal controls in `text`: C0 (but newline and tab), DEL, C1, and bidi controls.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| {
            (c.is_control() && !matches!(c, '\n' | '\t'))
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

/// Asserts that nothing of `out` reaches the terminal as a control sequence.
#[track_caller]
fn assert_inert(out: &CliOutput) {
    let raw: Vec<char> = raw_controls(&out.stdout)
        .into_iter()
        .chain(raw_controls(&out.stderr))
        .collect();
    assert!(raw.is_empty(), "raw controls {raw:?} in {out:#?}");
}

/// `a2a args…` with `A2A_API_KEY` set to `key`.
async fn a2a_with_key(args: &[&str], key: &str) -> CliOutput {
    let mut command = a2a_command(args);
    command.env("A2A_API_KEY", key);
    run_cli(command).await
}

#[tokio::test]
async fn what_an_agent_sends_is_shown_never_interpreted() {
    let agent = HostileAgent::start(Hostility::Escapes).await;
    let url = agent.base.as_str();
    let cache = tempfile::tempdir().expect("temp dir");
    let cache = cache.path().to_str().expect("utf-8 path");
    // Every human view of every field: card, send, get, a stream, discover, an error.
    for args in [
        vec!["card", url],
        vec!["send", url, "hi"],
        vec!["get", url, "t1"],
        vec!["send", "--stream", url, "hi"],
        vec!["subscribe", url, "t1"],
        vec!["discover", url, "--cache-dir", cache],
    ] {
        let out = a2a(&args).await;
        out.expect_code(0);
        assert_inert(&out);
        // Shown, escaped: the clipboard write and the bidi override are there to see.
        assert!(
            out.stdout.contains("\\x1b]52;c;") && out.stdout.contains("\\u{202e}"),
            "{args:?}: {out:#?}"
        );
    }
    let error = a2a(&["get", url, "err"]).await;
    error.expect_code(1);
    assert_inert(&error);
    assert!(
        error.stderr.starts_with("TaskNotFoundError: ok\\x1b[2J"),
        "{error:#?}"
    );

    // --json stays exact JSON: the same strings, their controls as \u escapes.
    let got = a2a(&["get", url, "t1", "--json"]).await;
    got.expect_code(0);
    assert_inert(&got);
    let task = got.json();
    assert_eq!(task["id"], json!(EVIL), "{task}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], json!(EVIL));
    let streamed = a2a(&["send", "--stream", url, "hi", "--json"]).await;
    streamed.expect_code(0);
    assert_inert(&streamed);
    for line in streamed.stdout.lines() {
        let event: Value = serde_json::from_str(line).expect("one JSON event per line");
        assert!(event.to_string().contains("\\u001b]52"), "{event}");
    }
    let error = a2a(&["get", url, "err", "--json"]).await;
    error.expect_code(1);
    assert_inert(&error);
    let error: Value = serde_json::from_str(error.stderr.trim()).expect("a JSON error");
    assert_eq!(error["error"]["message"], json!(EVIL));
}

#[tokio::test]
async fn answers_that_never_end_stop_at_a_limit_that_says_which() {
    // The card, at the default limit (16 MiB).
    let agent = HostileAgent::start(Hostility::EndlessCard).await;
    let out = a2a(&["card", &agent.base]).await;
    out.expect_code(4);
    assert!(
        out.stderr
            .contains("is larger than the body size limit of 16777216 bytes")
            && out.stderr.contains("--max-body-bytes"),
        "{out:#?}"
    );
    // Each other kind, at a limit set by its flag.
    for (hostility, args, says) in [
        (
            Hostility::EndlessAnswer,
            vec!["get", "t1", "--max-body-bytes", "100000"],
            "the answer to GetTask is larger than the body size limit of 100000 bytes (--max-body-bytes",
        ),
        (
            Hostility::EndlessEvent,
            vec!["send", "--stream", "hi", "--max-event-bytes", "100000"],
            "an event of the stream is larger than the event size limit of 100000 bytes (--max-event-bytes",
        ),
        (
            Hostility::EndlessLine,
            vec!["send", "--stream", "hi", "--max-event-bytes", "100000"],
            "a line of the stream is larger than the event size limit of 100000 bytes (--max-event-bytes",
        ),
        (
            Hostility::EndlessStream,
            vec!["send", "--stream", "hi", "--max-stream-bytes", "1000000"],
            "the stream is larger than the stream size limit of 1000000 bytes (--max-stream-bytes",
        ),
    ] {
        let agent = HostileAgent::start(hostility.clone()).await;
        let mut full = vec![args[0]];
        if args[1] == "--stream" {
            full.push("--stream");
            full.push(&agent.base);
            full.extend_from_slice(&args[2..]);
        } else {
            full.push(&agent.base);
            full.extend_from_slice(&args[1..]);
        }
        let out = a2a(&full).await;
        out.expect_code(4);
        assert!(out.stderr.contains(says), "{hostility:?}: {out:#?}");
    }
}

#[tokio::test]
async fn credentials_go_to_no_other_host_than_their_own() {
    const KEY: &str = "secret-key";
    // The card redirected to another origin, with each redirect status.
    for status in [301, 302, 307, 308] {
        let elsewhere = HostileAgent::start(Hostility::Benign).await;
        let agent =
            HostileAgent::start(Hostility::RedirectCard(status, elsewhere.base.clone())).await;
        let refused = a2a_with_key(&["card", &agent.base], KEY).await;
        refused.expect_code(4);
        assert!(
            refused.stderr.contains("another origin")
                && refused.stderr.contains("--share-credentials"),
            "{status}: {refused:#?}"
        );
        assert!(
            elsewhere.requests().is_empty(),
            "{status}: a request got there"
        );
        // Without credentials there is nothing to leak: the redirect is followed.
        a2a(&["card", &agent.base]).await.expect_code(0);
        assert!(elsewhere.requests_with("x-api-key").is_empty());
        // When the user says so, the key goes along.
        let shared = a2a_with_key(&["card", &agent.base, "--share-credentials"], KEY).await;
        shared.expect_code(0);
        assert_eq!(elsewhere.requests_with("x-api-key").len(), 1, "{status}");
    }

    // A JSON-RPC call redirected (307 re-sends the body) with an API key, or a bearer token.
    let elsewhere = HostileAgent::start(Hostility::Benign).await;
    let agent = HostileAgent::start(Hostility::RedirectCalls(elsewhere.base.clone())).await;
    a2a_with_key(&["get", &agent.base, "t1"], KEY)
        .await
        .expect_code(4);
    let mut command = a2a_command(&["get", &agent.base, "t1"]);
    command.env("A2A_TOKEN", "secret-token");
    run_cli(command).await.expect_code(4);
    assert!(
        elsewhere.requests().is_empty(),
        "{:?}",
        elsewhere.requests()
    );
    assert_eq!(
        agent.requests_with("x-api-key").len(),
        2,
        "the card and the call"
    );

    // A card that names its interface on another origin.
    let elsewhere = HostileAgent::start(Hostility::Benign).await;
    let agent = HostileAgent::start(Hostility::InterfaceElsewhere(elsewhere.base.clone())).await;
    let refused = a2a_with_key(&["get", &agent.base, "t1"], KEY).await;
    refused.expect_code(4);
    assert!(
        refused.stderr.contains(&format!(
            "names its JSONRPC interface at {}/rpc",
            elsewhere.base
        )),
        "{refused:#?}"
    );
    assert!(elsewhere.requests().is_empty());
    a2a(&["get", &agent.base, "t1"]).await.expect_code(0);
    assert!(elsewhere.requests_with("x-api-key").is_empty());
    a2a_with_key(&["get", &agent.base, "t1", "--share-credentials"], KEY)
        .await
        .expect_code(0);
    assert_eq!(elsewhere.requests_with("x-api-key").len(), 1);
}

#[tokio::test]
async fn streams_must_be_of_their_task_say_something_and_end() {
    // An event of another task does not end this one's stream as a success.
    let agent = HostileAgent::start(Hostility::OtherTask).await;
    let out = a2a(&["send", "--stream", &agent.base, "hi"]).await;
    out.expect_code(4);
    assert!(
        out.stderr
            .contains("the stream of task t1 sent an event of task t2"),
        "{out:#?}"
    );

    // A stream without any event is no success either.
    let agent = HostileAgent::start(Hostility::EmptyStream).await;
    let out = a2a(&["send", "--stream", &agent.base, "hi"]).await;
    out.expect_code(4);
    assert!(
        out.stderr
            .contains("ended the stream without sending any event"),
        "{out:#?}"
    );

    // A stream that falls silent.
    let agent = HostileAgent::start(Hostility::SilentStream).await;
    let out = a2a(&["send", "--stream", &agent.base, "hi", "--idle-timeout", "1"]).await;
    out.expect_code(3);
    assert!(
        out.stderr
            .contains("sent nothing, not even a keep-alive: timed out after 1 s"),
        "{out:#?}"
    );

    // A stream that keeps talking (keep-alives) and never ends: --timeout covers all of it.
    let agent = HostileAgent::start(Hostility::EndlessKeepAlive).await;
    let out = a2a(&["subscribe", &agent.base, "t1", "--timeout", "2"]).await;
    out.expect_code(3);
    assert!(
        out.stderr
            .contains("the stream did not end in time: timed out after 2 s"),
        "{out:#?}"
    );
    assert!(out.stdout.contains("TASK_STATE_WORKING"), "{out:#?}");
}

#[tokio::test]
async fn a_card_that_stalls_times_out_saying_so() {
    let agent = HostileAgent::start(Hostility::StalledCard).await;
    let out = a2a(&["card", &agent.base, "--timeout", "1"]).await;
    out.expect_code(3);
    let says = format!(
        "a2a: fetching the agent card at {}/.well-known/agent-card.json: timed out after 1 s",
        agent.base
    );
    assert!(out.stderr.starts_with(&says), "{out:#?}");
    assert!(!out.stderr.contains("decoding"), "{out:#?}");
}

#[tokio::test]
async fn push_listen_reads_no_endless_jwks() {
    let agent = HostileAgent::start(Hostility::EndlessJwks).await;
    let mut listen = LiveCli::start(&["push", "listen", &agent.base, "--json"]).await;
    let first: Value = serde_json::from_str(&listen.next_line().await).expect("JSON line");
    let hook = first["listening"]
        .as_str()
        .expect("the webhook URL")
        .to_owned();
    // A push signed with a key the agent would publish: the receiver fetches the JWKS.
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let token = format!(
        "{}.{}.c2ln",
        b64(&json!({"alg": "ES256", "kid": "k1", "typ": "JWT"})),
        b64(&json!({}))
    );
    let pushed = reqwest::Client::new()
        .post(&hook)
        .header("A2A-Push-Signature", token)
        .header("Content-Type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("the webhook answers");
    assert_eq!(pushed.status(), 401);
    let refused = listen
        .stderr_line_where(|l| l.contains("refused a push"))
        .await;
    assert!(
        refused.contains("the JWKS is larger than the limit of 1048576 bytes"),
        "{refused}"
    );
    assert_eq!(
        agent
            .requests()
            .iter()
            .filter(|r| r.path == "/.well-known/jwks.json")
            .count(),
        1
    );
}

/// An OAuth token endpoint whose answer never ends: the client stops reading it at its 1 MiB
/// limit and fails saying so, instead of reading until memory runs out; nothing (not even
/// the card request, which carries the token too) goes to the agent without a token. (The
/// `a2a` command has no OAuth, so this drives the client library.)
#[tokio::test]
async fn an_endless_token_response_stops_at_its_limit() {
    use a2a_client::{Auth, Client, OAuth2ClientCredentials};

    let agent = HostileAgent::start(Hostility::EndlessToken).await;
    let credentials =
        OAuth2ClientCredentials::new(format!("{}/oauth/token", agent.base), "cli", "s3cret");
    // The guard only turns a regression (reading for ever) into a failure.
    let connected = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        Client::builder()
            .auth(Auth::oauth2(credentials))
            .connect(&agent.base),
    )
    .await
    .expect("the token response is not read for ever");
    let Err(a2a_client::Error::Auth(why)) = connected else {
        panic!("an authentication error: {:?}", connected.err());
    };
    assert!(
        why.contains("the token request is larger than the body size limit of 1048576 bytes"),
        "{why}"
    );
    let paths: Vec<String> = agent.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/oauth/token"], "nothing was sent without a token");
}
