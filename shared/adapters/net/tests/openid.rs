//! The token issuer's keys, fetched from an issuer on 127.0.0.1: an issuer that never answers
//! is given up on at the request timeout (docs/bounds.md), discovery and JWKS alike.

// Test helpers unwrap like the tests they serve.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use a2a_core::{JwksSource, JwtConfig};
use a2a_net::{OpenIdJwks, ISSUER_TIMEOUT};
use a2a_test_support::webhook::RawListener;

/// Long enough for any answer on 127.0.0.1, short enough for a test.
const SHORT: Duration = Duration::from_millis(300);

#[test]
fn the_issuer_gets_ten_seconds() {
    assert_eq!(ISSUER_TIMEOUT, Duration::from_secs(10));
}

#[tokio::test]
async fn an_issuer_that_never_answers_its_discovery_is_given_up_on() {
    let issuer = RawListener::silent().await;
    let config = JwtConfig::new(format!("http://127.0.0.1:{}", issuer.port), "a2a");
    let jwks = OpenIdJwks::with_timeout(&config, SHORT);
    // Without the bound the fetch would wait for ever: the outer limit only keeps a failing
    // test from hanging.
    let fetched = tokio::time::timeout(Duration::from_secs(20), jwks.fetch())
        .await
        .expect("the fetch gave up by itself");
    let error = fetched.expect_err("a silent issuer gave keys").0;
    assert!(error.contains("openid-configuration"), "{error}");
    assert_eq!(issuer.accepted(), 1);
}

#[tokio::test]
async fn a_jwks_url_that_never_answers_is_given_up_on() {
    let issuer = RawListener::silent().await;
    let mut config = JwtConfig::new("https://issuer.example", "a2a");
    config.jwks_url = Some(format!("http://127.0.0.1:{}/jwks.json", issuer.port));
    let jwks = OpenIdJwks::with_timeout(&config, SHORT);
    let fetched = tokio::time::timeout(Duration::from_secs(20), jwks.fetch())
        .await
        .expect("the fetch gave up by itself");
    let error = fetched.expect_err("a silent JWKS URL gave keys").0;
    assert!(error.contains("jwks.json"), "{error}");
    assert_eq!(issuer.accepted(), 1);
}
