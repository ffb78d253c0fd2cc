//! The end-to-end harness: starts the real `a2a-local` binary on a free port with its own data
//! directory, and talks to it over real sockets with both bindings (JSON-RPC and HTTP+JSON).
//!
//! - [`Server`] owns one server process: [`Server::start`], [`Server::kill_abruptly`],
//!   [`Server::restart`] (same data directory), and the server's log so far ([`Server::logs`]).
//! - Raw helpers ([`Client::rpc`], [`Client::rest`]) return exactly what came over the wire.
//! - Binding-generic helpers ([`Client::send`], [`Client::get_task`], …) take a [`Binding`] and
//!   return `Result<Value, ApiError>`, so a test runs once per binding with the same assertions.
//!   They go through the project's client library, `a2a-client` ([`Client::a2a`]).
//! - [`SseStream`] reads Server-Sent Events incrementally, as they arrive.
//! - [`Webhook`] (`a2a_test_support`'s, shared with the push-verify tests) is a real HTTP
//!   listener on 127.0.0.1 that records push notifications.
//! - [`Client`] holds the request helpers; [`Server`] derefs to its own (no credentials), and
//!   [`Server::client_with_headers`] / [`Server::client_with_bearer`] make callers with
//!   credentials. [`issuer::TestIssuer`] is a test OpenID issuer for bearer tokens.
//!
//! - [`a2a`] / [`LiveCli`] run the `a2a` command; [`SdkServer`] is an agent built on the
//!   official Python SDK (`tests/interop/sdk_server.py`), for the command's tests;
//!   [`HostileAgent`] is an agent that tries to harm its caller, one way per [`Hostility`].
//!
//! Nothing here sleeps to synchronise: waits are on events, with timeouts that fail the test.

// The end-to-end harness: a test library, documented where it helps.
#![allow(missing_docs)]

pub mod cli;
pub mod client;
pub mod hostile;
pub mod issuer;
pub mod json;
pub mod moto;
pub mod otlp;
pub mod outage;
pub mod server;
pub mod sse;
pub mod versioned;

use std::time::Duration;

pub use cli::*;
pub use client::*;
pub use hostile::{HostileAgent, Hostility, BUSY_READS, EVIL};
pub use json::*;
pub use moto::{metric_sum, FaultyMoto};
pub use outage::StoreOutage;
pub use server::*;
pub use sse::*;

pub use a2a_test_support::webhook::{Push, Webhook};

pub use reqwest;
pub use serde_json;

/// The protocol version every request announces.
pub const A2A_VERSION: &str = "1.0";
/// How long the server may take to print its address.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default wait for one SSE event, one push, or one response (generous: debug builds, 2 cores,
/// tests in parallel).
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(20);

/// Generates one `#[tokio::test]` per binding for an `async fn(Binding)`:
/// `both_bindings!(name);` makes `name::jsonrpc` and `name::rest`. Each returns at once when
/// the servers cannot start (see [`store_ready`]); a test written by hand checks it first too.
#[macro_export]
macro_rules! both_bindings {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn jsonrpc() {
                if $crate::store_ready() {
                    super::$name($crate::Binding::JsonRpc).await
                }
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn rest() {
                if $crate::store_ready() {
                    super::$name($crate::Binding::Rest).await
                }
            }
        }
    )+};
}
