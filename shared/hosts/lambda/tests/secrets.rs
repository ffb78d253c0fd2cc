//! The secrets of a deployment, against moto's Secrets Manager on the real wire protocol
//! (`eval "$(infra/moto.sh env-start)"` first; `infra/test-all.sh` does it): the API key
//! document named by `A2A_API_KEY_SECRET_ARN`, and the push signing keys named by
//! `A2A_PUSH_SIGNING_SECRET_ARN`, generated on first use when the secret holds the placeholder,
//! and the A2A-Lite channels named by `A2A_LITE_SECRET_ARN`.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use a2a_core::ApiKeyDocument;
use a2a_core::KeySet;
use a2a_core::{Credentials, Permission, Permissions};
use a2a_lambda_glue::{build_auth, key_source, load_keys, HttpFunction, KeyUse, Settings};
use a2a_protocol::A2AError;

/// The SDK configuration for moto, or `None` (the test skips, see
/// [`a2a_test_support::emulator`]) when none is named.
async fn moto() -> Option<aws_config::SdkConfig> {
    a2a_test_support::emulator("a2a-lambda-glue Secrets Manager").await
}

fn settings(pairs: &[(&str, String)]) -> Settings {
    let mut env: Vec<(&str, String)> = vec![
        ("A2A_TABLE", "unused".into()),
        ("A2A_WORK_QUEUE_URL", "http://unused".into()),
        ("A2A_PUSH_QUEUE_URL", "http://unused".into()),
    ];
    env.extend(pairs.iter().cloned());
    Settings::from_lookup(|name| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone()))
        .expect("settings")
}

async fn caller(auth: &a2a_core::Auth, key: &str) -> Result<a2a_core::Principal, A2AError> {
    auth.authenticate(Credentials {
        authorization: None,
        api_key: Some(key),
    })
    .await
}

#[tokio::test]
async fn keys_come_from_the_secret_and_a_revocation_needs_no_redeploy() {
    let Some(sdk) = moto().await else {
        return;
    };
    let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
    let mut doc = ApiKeyDocument::default();
    let (record, key) = doc
        .issue(
            Permissions::default().with(Permission::Read),
            Some("alice".into()),
            "test".into(),
        )
        .unwrap();
    let name = format!("a2a-api-keys-{}", uuid::Uuid::new_v4().simple());
    let arn = secrets
        .create_secret()
        .name(&name)
        .secret_string(doc.to_json())
        .send()
        .await
        .expect("create the secret on moto")
        .arn
        .expect("an ARN");

    let mut settings = settings(&[
        ("A2A_AUTH", "api-key".into()),
        ("A2A_API_KEY_SECRET_ARN", arn.clone()),
    ]);
    // Fetch on every request, so the revocation below is seen at once.
    settings.api_key_refresh = Duration::ZERO;
    let auth = build_auth(&settings, &sdk).expect("auth");
    assert!(auth.is_enabled());

    let principal = caller(&auth, key.expose()).await.expect("the issued key");
    assert_eq!(principal.id, "key:alice");
    assert!(principal.permissions.contains(Permission::Read));
    assert!(!principal.permissions.contains(Permission::Send));
    let wrong = format!("{}x", key.expose());
    assert!(matches!(
        caller(&auth, &wrong).await,
        Err(A2AError::Unauthenticated(_))
    ));

    // `a2a-local keys revoke` + an upload of the document: refused from the next fetch on.
    assert!(doc.revoke(&record.id));
    secrets
        .put_secret_value()
        .secret_id(&arn)
        .secret_string(doc.to_json())
        .send()
        .await
        .expect("update the secret");
    assert!(matches!(
        caller(&auth, key.expose()).await,
        Err(A2AError::Unauthenticated(_))
    ));

    secrets
        .delete_secret()
        .secret_id(&arn)
        .force_delete_without_recovery(true)
        .send()
        .await
        .expect("delete the secret");
}

#[tokio::test]
async fn an_unreadable_secret_lets_nobody_in() {
    let Some(sdk) = moto().await else {
        return;
    };
    let settings = settings(&[
        ("A2A_AUTH", "api-key".into()),
        (
            "A2A_API_KEY_SECRET_ARN",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:missing-AbCdEf".into(),
        ),
    ]);
    let auth = build_auth(&settings, &sdk).expect("auth");
    let mut doc = ApiKeyDocument::default();
    let (_, key) = doc.issue(Permissions::all(), None, String::new()).unwrap();
    assert!(matches!(
        caller(&auth, key.expose()).await,
        Err(A2AError::Unauthenticated(_))
    ));
}

#[tokio::test]
async fn api_key_mode_without_a_key_document_refuses_to_start() {
    let Some(sdk) = moto().await else {
        return;
    };
    let err = build_auth(&settings(&[("A2A_AUTH", "api-key".into())]), &sdk).expect_err("an error");
    let missing = |err: a2a_core::ConfigError| match err {
        a2a_core::ConfigError::Missing { setting, .. } => setting,
        other => panic!("{other:?}"),
    };
    let setting = missing(err);
    assert!(setting.contains("A2A_API_KEY_SECRET_ARN"), "{setting}");
    let err = build_auth(&settings(&[("A2A_AUTH", "jwt".into())]), &sdk).expect_err("an error");
    let setting = missing(err);
    assert!(setting.contains("A2A_JWT_ISSUER"), "{setting}");
}

async fn create_secret(sdk: &aws_config::SdkConfig, value: &str) -> String {
    aws_sdk_secretsmanager::Client::new(sdk)
        .create_secret()
        .name(format!("a2a-test-{}", uuid::Uuid::new_v4().simple()))
        .secret_string(value)
        .send()
        .await
        .expect("create the secret on moto")
        .arn
        .expect("an ARN")
}

#[tokio::test]
async fn instances_starting_at_once_generate_one_signing_key_between_them() {
    let Some(sdk) = moto().await else {
        return;
    };
    // What the template stores when no signing secret is named.
    let arn = create_secret(&sdk, r#"{"keys": []}"#).await;
    let settings = settings(&[("A2A_PUSH_SIGNING_SECRET_ARN", arn.clone())]);

    // The card and push functions cold-starting together: each may generate a key, one is kept.
    let (a, b, c) = tokio::join!(
        load_keys(&settings, &sdk),
        load_keys(&settings, &sdk),
        load_keys(&settings, &sdk)
    );
    let kids: Vec<String> = [a, b, c]
        .into_iter()
        .map(|keys| {
            keys.expect("keys")
                .expect("a key set")
                .active()
                .kid()
                .to_owned()
        })
        .collect();
    assert!(
        kids.iter().all(|k| k == &kids[0]),
        "one key for all: {kids:?}"
    );

    // The secret now holds that key, and a later cold start reads it rather than generating.
    let stored = aws_sdk_secretsmanager::Client::new(&sdk)
        .get_secret_value()
        .secret_id(&arn)
        .send()
        .await
        .unwrap();
    let stored = KeySet::from_json(stored.secret_string().unwrap()).unwrap();
    assert_eq!(stored.active().kid(), kids[0]);
    let later = load_keys(&settings, &sdk).await.unwrap().unwrap();
    assert_eq!(later.active().kid(), kids[0]);
}

#[tokio::test]
async fn a_signing_secret_with_keys_is_used_as_it_is() {
    let Some(sdk) = moto().await else {
        return;
    };
    let (keys, text) = KeySet::generate(a2a_core::SigningAlgorithm::Es256).unwrap();
    let arn = create_secret(&sdk, text.expose()).await;
    let settings = settings(&[("A2A_PUSH_SIGNING_SECRET_ARN", arn)]);
    let loaded = load_keys(&settings, &sdk).await.unwrap().unwrap();
    assert_eq!(loaded.active().kid(), keys.active().kid());

    let broken = create_secret(&sdk, r#"{"keys": [{"privateKeyPem": "not a key"}]}"#).await;
    let err = load_keys(&settings_with_signing(&broken), &sdk)
        .await
        .expect_err("not a key set");
    assert!(err.contains("not a key set"), "{err}");
    assert!(
        !err.contains("not a key\""),
        "quotes no key material: {err}"
    );
}

fn settings_with_signing(arn: &str) -> Settings {
    settings(&[("A2A_PUSH_SIGNING_SECRET_ARN", arn.to_owned())])
}

/// The card function's JWKS over the keys `key_use` reads from the secret of `settings`,
/// with the push function's signer on the same keys.
fn card_router(
    settings: &Settings,
    sdk: &aws_config::SdkConfig,
    key_use: KeyUse,
) -> (axum::Router, a2a_core::PushSigner) {
    let source = key_source(settings, sdk, key_use).expect("a key source");
    let keys = std::sync::Arc::new(a2a_core::SigningKeys::from_source(source));
    let signer = a2a_core::PushSigner::with_keys(keys, "https://agent.example");
    let config = settings.service_config(
        Some("https://agent.example"),
        Some(signer.clone()),
        a2a_core::Auth::none(),
    );
    let store = a2a_test_support::server::EmbeddedStore::open();
    let service = store.service(config, std::sync::Arc::new(a2a_reference_agent_free::Idle));
    let surface = HttpFunction::Card.surface();
    let options = a2a_http::HttpOptions::default();
    (a2a_http::router_with(service, options, &surface), signer)
}

/// The kids of the JWKS the card function serves now.
async fn served_kids(router: &axum::Router) -> Vec<String> {
    use tower::ServiceExt as _;
    let response = router
        .clone()
        .oneshot(
            axum::http::Request::get("/.well-known/jwks.json")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "the JWKS is always served");
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let jwks: serde_json::Value = serde_json::from_slice(&body).unwrap();
    jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_owned())
        .collect()
}

/// An agent that is never asked anything: these tests only read the JWKS and sign.
mod a2a_reference_agent_free {
    pub(crate) struct Idle;

    #[async_trait::async_trait]
    impl a2a_core::Agent for Idle {
        fn describe(&self) -> a2a_core::AgentDescription {
            a2a_core::AgentDescription {
                name: "idle".into(),
                ..Default::default()
            }
        }

        async fn execute(
            &self,
            _request: a2a_core::AgentRequest,
            _emitter: a2a_core::Emitter,
        ) -> Result<(), a2a_core::AgentError> {
            Ok(())
        }
    }
}

fn claims(signer: &a2a_core::PushSigner) -> a2a_protocol::push::PushClaims {
    signer.claims("https://hook.example/", "t1", 1, "c1", b"{}")
}

/// A fresh deployment: the card is signed, and its JWKS served, from the first request: the
/// card function generates the first key when it needs one before any push, and the push
/// function then signs with that same key. A card and a push function generating at once (two
/// fresh deployments' first requests) end up with one key between them.
#[tokio::test]
async fn the_first_function_that_needs_a_key_generates_it() {
    let Some(sdk) = moto().await else {
        return;
    };
    let arn = create_secret(&sdk, r#"{"keys": []}"#).await;
    let mut settings = settings_with_signing(&arn);
    settings.push_keys_refresh = Duration::ZERO;

    let (card, card_signer) = card_router(&settings, &sdk, KeyUse::Publish);
    let served = served_kids(&card).await;
    assert_eq!(served.len(), 1, "the first JWKS request has a key");
    card_signer
        .sign(&claims(&card_signer))
        .await
        .expect("the card function signs from its first request");
    let stored = KeySet::from_json(&secret_text(&sdk, &arn).await).expect("a key set");
    assert_eq!(stored.active().kid(), served[0], "the key is in the secret");
    let (_, push_signer) = card_router(&settings, &sdk, KeyUse::Sign);
    assert_eq!(push_signer.keys().await.unwrap().active().kid(), served[0]);

    // Both kinds of function at once on a fresh placeholder: one key.
    let arn = create_secret(&sdk, r#"{"keys": []}"#).await;
    let settings = settings_with_signing(&arn);
    let (_, card_signer) = card_router(&settings, &sdk, KeyUse::Publish);
    let (_, push_signer) = card_router(&settings, &sdk, KeyUse::Sign);
    let (card_keys, push_keys) = tokio::join!(card_signer.keys(), push_signer.keys());
    let (card_kid, push_kid) = (
        card_keys.unwrap().active().kid().to_owned(),
        push_keys.unwrap().active().kid().to_owned(),
    );
    assert_eq!(card_kid, push_kid, "one key between them");
    let stored = KeySet::from_json(&secret_text(&sdk, &arn).await).expect("a key set");
    assert_eq!(stored.active().kid(), card_kid);
}

/// A rotation is an update of the secret: running instances sign with, and publish, the new
/// key set once their refresh time has passed, without a redeploy.
#[tokio::test]
async fn a_rotated_secret_is_used_without_a_redeploy() {
    let Some(sdk) = moto().await else {
        return;
    };
    let (old, old_text) = KeySet::generate(a2a_core::SigningAlgorithm::Es256).unwrap();
    let arn = create_secret(&sdk, old_text.expose()).await;
    let mut settings = settings_with_signing(&arn);
    settings.push_keys_refresh = Duration::ZERO;
    let (card, signer) = card_router(&settings, &sdk, KeyUse::Sign);
    let old_kid = old.active().kid().to_owned();
    assert_eq!(served_kids(&card).await, std::slice::from_ref(&old_kid));

    // docs/push.md's rotation, step 1: add the new key, inactive, so it is published first.
    let (new, new_text) = KeySet::generate(a2a_core::SigningAlgorithm::Es256).unwrap();
    let new_kid = new.active().kid().to_owned();
    let entry = |text: &str, active: bool| {
        let mut doc: serde_json::Value = serde_json::from_str(text).unwrap();
        let mut key = doc["keys"][0].take();
        key["active"] = serde_json::json!(active);
        key
    };
    let step = |old_active: bool| {
        serde_json::json!({"keys": [
            entry(old_text.expose(), old_active),
            entry(new_text.expose(), !old_active),
        ]})
        .to_string()
    };
    put_secret(&sdk, &arn, &step(true)).await;
    assert_eq!(served_kids(&card).await, [old_kid.clone(), new_kid.clone()]);
    assert_eq!(signer.keys().await.unwrap().active().kid(), old_kid);
    // Step 2: make the new key active; the push function signs with it from its next refresh.
    put_secret(&sdk, &arn, &step(false)).await;
    assert_eq!(signer.keys().await.unwrap().active().kid(), new_kid);
}

/// A key set broken by hand: the function that signs says why at signing time; the card and
/// its JWKS stay up (an empty set rather than an init crash).
#[tokio::test]
async fn a_broken_key_set_is_an_error_where_it_signs_and_an_empty_jwks() {
    let Some(sdk) = moto().await else {
        return;
    };
    let arn = create_secret(&sdk, r#"{"keys": [{"privateKeyPem": "not a key"}]}"#).await;
    let settings = settings_with_signing(&arn);
    let (card, _) = card_router(&settings, &sdk, KeyUse::Publish);
    assert!(served_kids(&card).await.is_empty());
    let (_, signer) = card_router(&settings, &sdk, KeyUse::Sign);
    let err = signer
        .sign(&claims(&signer))
        .await
        .expect_err("a broken key set")
        .to_string();
    assert!(err.contains("not a key set"), "{err}");
    assert!(
        !err.contains("not a key\""),
        "quotes no key material: {err}"
    );
}

async fn secret_text(sdk: &aws_config::SdkConfig, arn: &str) -> String {
    aws_sdk_secretsmanager::Client::new(sdk)
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .unwrap()
        .secret_string()
        .unwrap()
        .to_owned()
}

async fn put_secret(sdk: &aws_config::SdkConfig, arn: &str, text: &str) {
    aws_sdk_secretsmanager::Client::new(sdk)
        .put_secret_value()
        .secret_id(arn)
        .secret_string(text)
        .send()
        .await
        .expect("update the secret");
}

#[tokio::test]
async fn the_channels_come_from_their_secret() {
    let Some(sdk) = moto().await else {
        return;
    };
    let arn = create_secret(
        &sdk,
        r#"{"webhook": {"token": "chat-token-1", "replyUrl": "https://hooks.example/T/x"},
            "matrix": {"homeserverUrl": "https://matrix.example.org", "asToken": "as-1",
                       "hsToken": "hs-1", "senderLocalpart": "a2a"}}"#,
    )
    .await;
    let env = |arn: String| {
        move |name: &str| match name {
            a2a_lambda_glue::ENV_LITE_SECRET_ARN => Some(arn.clone()),
            "A2A_LITE_PRINCIPAL" => Some("key:rooms".to_owned()),
            _ => None,
        }
    };
    let lite = a2a_lambda_glue::lite_settings_from(env(arn), Some(&sdk))
        .await
        .expect("the channels");
    let webhook = lite.webhook.expect("the webhook channel");
    assert_eq!(webhook.token, "chat-token-1");
    assert_eq!(webhook.reply_url, "https://hooks.example/T/x");
    let matrix = lite.matrix.expect("the Matrix channel");
    assert_eq!(
        (matrix.as_token.as_str(), matrix.hs_token.as_str()),
        ("as-1", "hs-1")
    );
    assert_eq!(lite.principal.as_deref(), Some("key:rooms"));

    // The placeholder the stack creates configures nothing; a broken secret is an error that
    // does not quote it; a missing one names the secret.
    let empty = create_secret(&sdk, "{}").await;
    let lite = a2a_lambda_glue::lite_settings_from(env(empty), Some(&sdk))
        .await
        .unwrap();
    assert!(lite.is_empty());
    let broken = create_secret(&sdk, r#"{"webhook": {"token": "leak-me"}}"#).await;
    let err = a2a_lambda_glue::lite_settings_from(env(broken), Some(&sdk))
        .await
        .unwrap_err()
        .to_string();
    assert!(!err.contains("leak-me"), "{err}");
    let missing = format!("{}-gone", create_secret(&sdk, "{}").await);
    let err = a2a_lambda_glue::lite_settings_from(env(missing), Some(&sdk))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, a2a_core::ConfigError::Unreadable { what, .. } if what.contains("A2A-Lite channel secret")),
        "{err}"
    );
}

#[tokio::test]
async fn the_agent_credentials_are_read_when_needed_and_a_broken_secret_fails_only_that() {
    let Some(sdk) = moto().await else {
        return;
    };
    let arn = create_secret(
        &sdk,
        r#"{"agents": [{"url": "https://billing.example.com/""#,
    )
    .await;
    let mut settings = settings(&[("A2A_AGENT_CREDENTIALS_SECRET_ARN", arn.clone())]);
    settings.api_key_refresh = Duration::ZERO;
    // Nothing is read to make the source: a function whose secret is broken still starts.
    let source = a2a_lambda_glue::agent_credentials_source(&settings, &sdk);
    let err = source.load().await.expect_err("a broken document");
    assert!(
        err.contains("agent credentials secret does not read"),
        "{err}"
    );
    assert!(
        !err.contains("billing"),
        "the secret's content is not quoted: {err}"
    );
    // Mended (or rotated): the next read has it, no redeploy.
    put_secret(
        &sdk,
        &arn,
        r#"{"agents": [{"url": "https://billing.example.com/", "bearer": "t1"}]}"#,
    )
    .await;
    let credentials = source.load().await.expect("the mended document");
    assert_eq!(credentials.len(), 1);
    assert!(credentials
        .for_url("https://billing.example.com/a2a")
        .is_some());
    assert_eq!(source.refresh(), Duration::ZERO);
    // A secret that cannot be read at all names it, as every secret's error does.
    let mut gone = settings.clone();
    gone.remote.credentials_secret_arn = Some(format!("{arn}-gone"));
    let err = a2a_lambda_glue::agent_credentials_source(&gone, &sdk)
        .load()
        .await
        .expect_err("no such secret");
    assert!(err.contains("agent credentials secret"), "{err}");
}
