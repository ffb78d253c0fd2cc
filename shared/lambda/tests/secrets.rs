//! The secrets of a deployment, against moto's Secrets Manager on the real wire protocol
//! (`eval "$(infra/moto.sh env-start)"` first; `infra/test-all.sh` does it): the API key
//! document named by `A2A_API_KEY_SECRET_ARN`, and the push signing keys named by
//! `A2A_PUSH_SIGNING_SECRET_ARN`, generated on first use when the secret holds the placeholder.

use std::time::Duration;

use a2a_core::auth::ApiKeyDocument;
use a2a_core::KeySet;
use a2a_core::{Credentials, Permission, Permissions};
use a2a_lambda_glue::{build_auth, load_keys, Settings};
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
    assert!(err.contains("A2A_API_KEY_SECRET_ARN"), "{err}");
    let err = build_auth(&settings(&[("A2A_AUTH", "jwt".into())]), &sdk).expect_err("an error");
    assert!(err.contains("A2A_JWT_ISSUER"), "{err}");
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
