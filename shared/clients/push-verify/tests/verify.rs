//! The receiver's side, end to end: pushes from an agent served by the real router are
//! verified against its live JWKS, and forged, altered, misdirected, stale, replayed or
//! unknown-key pushes are refused.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use a2a_core::{KeySet, PushPolicy, SigningAlgorithm, SigningKey};
use a2a_protocol::push::PushClaims;
use a2a_push_verify::{Verifier, VerifyError, SIGNATURE_HEADER};
use a2a_test_support::webhook::{Push, RawListener, Webhook};
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use support::{on_every_backend, AgentServer, Backend};

fn key() -> SigningKey {
    SigningKey::generate(SigningAlgorithm::Es256)
        .expect("generate")
        .0
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// The claims of a push to `aud` with `body`, issued now by `iss`.
fn claims(iss: &str, aud: &str, body: &[u8]) -> PushClaims {
    PushClaims {
        iss: iss.into(),
        aud: aud.into(),
        iat: now(),
        exp: now() + 60,
        jti: a2a_core::new_id(),
        task_id: "t".into(),
        seq: 1,
        config_id: "c".into(),
        body_sha256: a2a_core::body_sha256(body),
    }
}

fn signature_headers(token: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(SIGNATURE_HEADER, HeaderValue::from_str(token).unwrap());
    headers
}

/// Runs a task that emits several events and returns what the webhook received.
async fn pushes(agent: &AgentServer, hook: &Webhook, text: &str) -> Vec<Push> {
    let before = hook.received().len();
    agent.run_task(text, &hook.url).await;
    agent.drain().await;
    hook.received()[before..].to_vec()
}

#[tokio::test]
async fn pushes_verify_against_the_live_jwks() {
    let agent = AgentServer::start(KeySet::single(key()), PushPolicy::local(), 3).await;
    let hook = Webhook::start().await;
    let verifier = Verifier::for_agent(&agent.base, &hook.url);
    let received = pushes(&agent, &hook, "steps 2").await;
    // Task, WORKING, two artifact chunks, COMPLETED.
    assert_eq!(received.len(), 5, "{received:?}");
    let mut seqs = Vec::new();
    for push in &received {
        // The documented header layout: the JWT in its own header and, with no
        // `authentication` in the config, as the bearer token too; the token in both headers.
        let jwt = push.headers[SIGNATURE_HEADER].to_str().unwrap();
        assert_eq!(
            push.headers[AUTHORIZATION].to_str().unwrap(),
            format!("Bearer {jwt}")
        );
        assert_eq!(push.headers["x-a2a-notification-token"], "the-config-token");
        assert_eq!(push.headers["a2a-notification-token"], "the-config-token");
        let verified = verifier
            .verify(&push.headers, &push.body)
            .await
            .expect("a genuine push verifies");
        assert_eq!(verified.claims.iss, agent.base);
        assert_eq!(verified.claims.aud, hook.url);
        assert!(verified.claims.exp - verified.claims.iat <= 300);
        seqs.push(verified.claims.seq);
        let body = push.json();
        let task_id = body
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(|inner| inner.get("taskId").or_else(|| inner.get("id")))
            .and_then(|v| v.as_str())
            .unwrap();
        assert_eq!(verified.claims.task_id, task_id);
    }
    // In log order, each event once.
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    // One fetch served every verification: the JWKS is cached.
    assert_eq!(agent.jwks_fetches(), 1);
}

#[tokio::test]
async fn the_jwks_is_served_with_cache_headers() {
    let (a, b) = (key(), key());
    let keys = KeySet::new(vec![a.clone(), b.clone()], b.kid()).unwrap();
    let agent = AgentServer::start(keys, PushPolicy::local(), 3).await;
    let http = reqwest::Client::new();
    let url = format!("{}/.well-known/jwks.json", agent.base);
    let response = http.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/jwk-set+json"
    );
    assert!(response.headers()["cache-control"]
        .to_str()
        .unwrap()
        .contains("max-age="));
    let etag = response.headers()["etag"].clone();
    let jwks: serde_json::Value = response.json().await.unwrap();
    let kids: Vec<&str> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap())
        .collect();
    assert_eq!(kids, vec![a.kid(), b.kid()], "every key is published");
    for k in jwks["keys"].as_array().unwrap() {
        assert_eq!(k["kty"], "EC");
        assert!(k.get("d").is_none(), "no private part: {k}");
    }
    let again = http
        .get(&url)
        .header("if-none-match", etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
}

#[tokio::test]
async fn forged_and_misused_pushes_are_refused() {
    let signing = key();
    let agent = AgentServer::start(KeySet::single(signing.clone()), PushPolicy::local(), 3).await;
    let hook = Webhook::start().await;
    let verifier = Verifier::for_agent(&agent.base, &hook.url);
    let push = pushes(&agent, &hook, "steps 1").await.remove(0);

    // A tampered body.
    let mut tampered = push.body.to_vec();
    let at = tampered.iter().position(|b| *b == b'}').unwrap();
    tampered.insert(at, b' ');
    assert_eq!(
        verifier.verify(&push.headers, &tampered).await,
        Err(VerifyError::BodyMismatch)
    );

    // A receiver expecting another URL (the push was meant for someone else).
    let elsewhere = Verifier::for_agent(&agent.base, "https://other.example/hook");
    assert_eq!(
        elsewhere.verify(&push.headers, &push.body).await,
        Err(VerifyError::WrongAudience)
    );

    // Another issuer.
    let other_issuer = Verifier::new(format!("{}/.well-known/jwks.json", agent.base), &hook.url)
        .issuer("https://impostor.example");
    assert_eq!(
        other_issuer.verify(&push.headers, &push.body).await,
        Err(VerifyError::WrongIssuer)
    );

    // The genuine push verifies once; the same token again is a replay.
    verifier.verify(&push.headers, &push.body).await.unwrap();
    assert_eq!(
        verifier.verify(&push.headers, &push.body).await,
        Err(VerifyError::Replayed)
    );

    // Expired: signed by the agent's own key, but its exp passed beyond the leeway.
    let body = b"{}";
    let mut stale = claims(&agent.base, &hook.url, body);
    stale.iat = now() - 600;
    stale.exp = now() - 300;
    let token = signing.sign(&stale).unwrap();
    assert_eq!(
        verifier.verify(&signature_headers(&token), body).await,
        Err(VerifyError::Expired)
    );

    // A lifetime longer than five minutes would outlast the replay window.
    let mut long = claims(&agent.base, &hook.url, body);
    long.exp = long.iat + 3600;
    let token = signing.sign(&long).unwrap();
    assert_eq!(
        verifier.verify(&signature_headers(&token), body).await,
        Err(VerifyError::BadLifetime)
    );

    // A bad signature: the agent's header and claims, another key's signature.
    let genuine = signing.sign(&claims(&agent.base, &hook.url, body)).unwrap();
    let forged = key().sign(&claims(&agent.base, &hook.url, body)).unwrap();
    let (head, _) = genuine.rsplit_once('.').unwrap();
    let (_, forged_sig) = forged.rsplit_once('.').unwrap();
    assert_eq!(
        verifier
            .verify(&signature_headers(&format!("{head}.{forged_sig}")), body)
            .await,
        Err(VerifyError::BadSignature)
    );

    // No token at all; a token with `alg: none`; an HMAC token.
    assert_eq!(
        verifier.verify(&HeaderMap::new(), body).await,
        Err(VerifyError::MissingToken)
    );
    use base64::Engine as _;
    let b64 = |v: serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let payload = b64(serde_json::to_value(claims(&agent.base, &hook.url, body)).unwrap());
    let none = format!(
        "{}.{payload}.",
        b64(serde_json::json!({"alg": "none", "kid": signing.kid()}))
    );
    assert!(verifier
        .verify(&signature_headers(&none), body)
        .await
        .is_err());
    let hmac = jsonwebtoken::encode(
        &jsonwebtoken::Header {
            kid: Some(signing.kid().into()),
            ..jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256)
        },
        &claims(&agent.base, &hook.url, body),
        &jsonwebtoken::EncodingKey::from_secret(b"public knowledge"),
    )
    .unwrap();
    assert!(matches!(
        verifier.verify(&signature_headers(&hmac), body).await,
        Err(VerifyError::Algorithm(_))
    ));
}

#[tokio::test]
async fn an_unknown_kid_is_refused_after_one_fresh_fetch() {
    let agent = AgentServer::start(KeySet::single(key()), PushPolicy::local(), 3).await;
    let hook = Webhook::start().await;
    let verifier = Verifier::for_agent(&agent.base, &hook.url).refetch_cooldown(Duration::ZERO);
    let push = pushes(&agent, &hook, "steps 1").await.remove(0);
    verifier.verify(&push.headers, &push.body).await.unwrap();
    let fetches = || agent.jwks_fetches();
    assert_eq!(fetches(), 1);

    let body = b"{}";
    let stranger = key().sign(&claims(&agent.base, &hook.url, body)).unwrap();
    assert!(matches!(
        verifier.verify(&signature_headers(&stranger), body).await,
        Err(VerifyError::UnknownKey(_))
    ));
    assert_eq!(fetches(), 2, "exactly one re-fetch for the unknown kid");

    // Within the cooldown an unknown kid causes no fetch at all.
    let patient = Verifier::for_agent(&agent.base, &hook.url);
    let push = pushes(&agent, &hook, "steps 1").await.remove(0);
    patient.verify(&push.headers, &push.body).await.unwrap();
    let before = fetches();
    assert!(matches!(
        patient.verify(&signature_headers(&stranger), body).await,
        Err(VerifyError::UnknownKey(_))
    ));
    assert_eq!(fetches(), before);
}

#[tokio::test]
async fn rs256_keys_sign_and_verify_too() {
    let rsa = SigningKey::generate(SigningAlgorithm::Rs256).unwrap().0;
    let agent = AgentServer::start(KeySet::single(rsa), PushPolicy::local(), 3).await;
    let hook = Webhook::start().await;
    let verifier = Verifier::for_agent(&agent.base, &hook.url);
    for push in pushes(&agent, &hook, "steps 1").await {
        let verified = verifier.verify(&push.headers, &push.body).await.unwrap();
        assert_eq!(verified.algorithm, jsonwebtoken::Algorithm::RS256);
    }
}

// The rotation runs on both backends: pushes queued before a redeploy are delivered (and
// verified) after it, on the embedded push queue and on the SQS FIFO queue alike.
on_every_backend!(keys_rotate_without_a_gap);

async fn keys_rotate_without_a_gap(backend: Backend) {
    let (old, new) = (key(), key());
    let mut agent =
        AgentServer::start_on(backend, KeySet::single(old.clone()), PushPolicy::local(), 3).await;
    let hook = Webhook::start().await;
    let verifier = Verifier::for_agent(&agent.base, &hook.url).refetch_cooldown(Duration::ZERO);

    // Before: the old key signs, and the receiver caches a JWKS holding only it.
    let before = pushes(&agent, &hook, "steps 1").await;
    // Task, WORKING, one chunk, COMPLETED.
    assert_eq!(before.len(), 4, "{before:?}");
    for push in before {
        let verified = verifier.verify(&push.headers, &push.body).await.unwrap();
        assert_eq!(verified.kid, old.kid());
    }

    // Step 1: publish the new key, keep signing with the old one.
    agent.rotate(KeySet::new(vec![old.clone(), new.clone()], old.kid()).unwrap());
    let in_flight = pushes(&agent, &hook, "steps 1").await;
    assert_eq!(in_flight.len(), 4, "{in_flight:?}");

    // Step 2: the new key signs.
    agent.rotate(KeySet::new(vec![old.clone(), new.clone()], new.kid()).unwrap());
    let after = pushes(&agent, &hook, "steps 1").await;
    assert_eq!(after.len(), 4, "{after:?}");
    for push in &after {
        // The cached JWKS lacks the new kid: one re-fetch finds it.
        let verified = verifier.verify(&push.headers, &push.body).await.unwrap();
        assert_eq!(verified.kid, new.kid(), "the new key signs new pushes");
    }
    // Pushes the old key signed, still arriving (retries, slow queues), verify while both
    // keys are published.
    for push in &in_flight {
        let verified = verifier.verify(&push.headers, &push.body).await.unwrap();
        assert_eq!(verified.kid, old.kid());
    }

    // Step 3: the old key is retired; a fresh receiver no longer accepts it.
    agent.rotate(KeySet::single(new.clone()));
    let fresh = Verifier::for_agent(&agent.base, &hook.url);
    let body = b"{}";
    let late = old.sign(&claims(&agent.base, &hook.url, body)).unwrap();
    assert!(matches!(
        fresh.verify(&signature_headers(&late), body).await,
        Err(VerifyError::UnknownKey(_))
    ));
    let retired = pushes(&agent, &hook, "steps 1").await;
    assert_eq!(retired.len(), 4, "{retired:?}");
    for push in retired {
        fresh.verify(&push.headers, &push.body).await.unwrap();
    }
    agent.finish().await;
}

/// A JWKS endpoint that takes the request and never answers fails the push that needed the
/// keys once the fetch timeout (here 1 s, 10 s by default) passes, with an error saying so,
/// and the next push at once (the failure is kept for the cooldown) instead of each waiting
/// again for as long as the endpoint hangs.
#[tokio::test]
async fn a_jwks_that_never_answers_fails_the_push_at_the_fetch_timeout() {
    let silent = RawListener::silent().await;
    let agent = format!("http://127.0.0.1:{}", silent.port);
    let hook = "http://127.0.0.1:9/hook";
    let verifier = Verifier::for_agent(&agent, hook).fetch_timeout(Duration::from_secs(1));
    let body = b"{}";
    let headers = signature_headers(&key().sign(&claims(&agent, hook, body)).unwrap());
    for _ in 0..2 {
        // The guard only turns a fetch that waits for ever into a failure.
        let refused =
            tokio::time::timeout(Duration::from_secs(30), verifier.verify(&headers, body))
                .await
                .expect("the push is answered, not held");
        assert!(
            matches!(&refused, Err(VerifyError::Jwks(why)) if why.contains("did not answer within 1 s")),
            "{refused:?}"
        );
    }
    assert_eq!(
        silent.accepted(),
        1,
        "one fetch, the second push answered from the failure"
    );
}
