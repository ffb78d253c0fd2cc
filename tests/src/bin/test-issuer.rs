//! `test-issuer`: a throwaway OpenID issuer on 127.0.0.1 for running the interop suite with
//! authentication on. It prints four lines and serves until killed (`--help` says how to use it):
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
use std::process::ExitCode;

use a2a_e2e::issuer::{TestIssuer, ALL_SCOPES};
use serde_json::json;

const USAGE: &str = "\
Usage: test-issuer [ADDR]

A throwaway OpenID issuer for tests, on ADDR (default 127.0.0.1:0: a free port). It prints
issuer=URL, other_token=, read_token= and token= (RS256 JWTs for audience a2a-e2e, valid 4
hours; `token` last, once it is ready) and serves until killed. Start a2a-local with
`--auth jwt --jwt-issuer URL --jwt-audience a2a-e2e` against it. Never use it for anything real.";

#[tokio::main]
async fn main() -> ExitCode {
    let addr = match std::env::args().nth(1).as_deref() {
        Some("-h" | "--help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(addr) if addr.parse::<std::net::SocketAddr>().is_err() => {
            eprintln!("test-issuer: {addr:?} is not an address such as 127.0.0.1:0\n\n{USAGE}");
            return ExitCode::from(2);
        }
        Some(addr) => addr.to_string(),
        None => "127.0.0.1:0".to_string(),
    };
    let issuer = match TestIssuer::try_start_on(&addr).await {
        Ok(issuer) => issuer,
        Err(e) => {
            eprintln!("test-issuer: cannot listen on {addr}: {e}; give another ADDR (127.0.0.1:0 for any free port)");
            return ExitCode::FAILURE;
        }
    };
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
    std::future::pending::<ExitCode>().await
}
