//! `test-issuer`: a throwaway OpenID issuer on 127.0.0.1 for running the interop suite with
//! authentication on. It prints two lines and serves until killed:
//!
//! ```text
//! issuer=http://127.0.0.1:PORT
//! token=<an RS256 JWT for audience a2a-e2e, subject interop, every a2a scope, valid 4 hours>
//! other_token=<the same for subject other: another owner>
//! read_token=<the same for subject interop, scope a2a:read only>
//! ```
//!
//! Start `a2a-local --auth jwt --jwt-issuer <issuer> --jwt-audience a2a-e2e` against it and
//! hand the token to the client (`A2A_BEARER_TOKEN`). Never use it for anything real.

use std::io::Write as _;

use a2a_e2e::issuer::{TestIssuer, ALL_SCOPES};
use serde_json::json;

#[tokio::main]
async fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_string());
    let issuer = TestIssuer::start_on(&addr).await;
    let token = |subject: &str, scope: &str| {
        let mut claims = issuer.claims(subject, scope);
        claims["exp"] = json!(a2a_e2e::issuer::now() + 4 * 3600);
        issuer.sign(&claims)
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "issuer={}", issuer.issuer).expect("write to stdout");
    // Printed last, as the line that says the issuer is ready.
    writeln!(out, "other_token={}", token("other", ALL_SCOPES)).expect("write to stdout");
    writeln!(out, "read_token={}", token("interop", "a2a:read")).expect("write to stdout");
    writeln!(out, "token={}", token("interop", ALL_SCOPES)).expect("write to stdout");
    out.flush().expect("flush stdout");
    drop(out);
    // Serve until killed.
    std::future::pending::<()>().await;
}
