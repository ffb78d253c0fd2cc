//! What the test suites of several crates share.
//!
//! - [`emulator_configured`] (and, with the `aws` feature, [`emulator`]) finds the AWS emulator
//!   (moto) the DynamoDB, SQS and Secrets Manager suites run against. Without one, plain
//!   `cargo test` skips those suites with one clear line instead of panicking;
//!   `infra/test-all.sh` sets [`REQUIRE_EMULATOR`] so that there a missing emulator fails the
//!   run instead.
//! - With the `webhook` feature, [`webhook::Webhook`] receives push notifications on 127.0.0.1
//!   and [`webhook::RawListener`] counts the connections a guard should have refused.
//! - With the `server` feature, [`server::InProcessServer`] serves a router on 127.0.0.1 and
//!   [`server::EmbeddedStore`] gives a service the embedded store in a temporary directory.
//!
//! The one out-of-process harness (the real `a2a-local` binary) is `a2a-e2e`'s `Server`.

#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "webhook")]
pub mod webhook;

use std::io::Write as _;
use std::sync::Once;

/// Environment variable that turns a skip for want of the emulator into a failure
/// (`infra/test-all.sh` sets it to `1`).
pub const REQUIRE_EMULATOR: &str = "A2A_REQUIRE_EMULATOR";

/// Whether the emulator is configured (`AWS_ENDPOINT_URL` is set), for the tests of `suite`.
///
/// `false` when it is not: the caller skips its test. The first skip of a test binary says so
/// on stderr, once, with how to run the suite. With [`REQUIRE_EMULATOR`]`=1` this panics
/// instead, so a run that must talk to the emulator never passes without it.
pub fn emulator_configured(suite: &str) -> bool {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    if !endpoint.trim().is_empty() {
        return true;
    }
    let how = "they run under `infra/test-all.sh`, or after \
               `eval \"$(infra/moto.sh env-start)\"` (from the repository root) in the same \
               shell; `infra/moto.sh stop` stops the emulator";
    if std::env::var(REQUIRE_EMULATOR).as_deref() == Ok("1") {
        panic!(
            "AWS_ENDPOINT_URL is not set, and {REQUIRE_EMULATOR}=1 requires the emulator: \
             the {suite} tests run against moto's server; {how}."
        );
    }
    static SKIP_NOTE: Once = Once::new();
    SKIP_NOTE.call_once(|| {
        // Straight to the process's stderr: the test harness captures `eprintln!` of a
        // passing test, and this line must show under plain `cargo test`.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: the {suite} tests need the AWS emulator (AWS_ENDPOINT_URL is not set); \
             {how}. ({REQUIRE_EMULATOR}=1 turns this skip into a failure.)"
        );
    });
    false
}

/// The SDK configuration for the emulator named by `AWS_ENDPOINT_URL`, with moto's defaults
/// (region `us-east-1`, test credentials) unless the environment says otherwise.
///
/// `None` when there is no emulator: see [`emulator_configured`], which decides and says so.
#[cfg(feature = "aws")]
pub async fn emulator(suite: &str) -> Option<aws_config::SdkConfig> {
    use aws_config::{BehaviorVersion, Region};

    if !emulator_configured(suite) {
        return None;
    }
    // Defaults for the emulator, unless the environment says otherwise. Set on the loader
    // rather than with set_var, which is unsound while other test threads read the environment.
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if std::env::var_os("AWS_REGION").is_none() && std::env::var_os("AWS_DEFAULT_REGION").is_none()
    {
        loader = loader.region(Region::new("us-east-1"));
    }
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
        loader = loader.credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "test", "test", None, None, "moto",
        ));
    }
    Some(loader.load().await)
}
