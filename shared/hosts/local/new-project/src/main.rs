//! The local server: the whole A2A router on 127.0.0.1:9000, the store in `./.a2a`, queued
//! work and push delivery in-process. `cargo run -- --help` lists the options; `cargo run --
//! keys issue` issues an API key (for `--auth api-key`, or the document a deployment reads).

/// The allocator the kit's local server is measured with ([`a2a_local::Allocator`]).
#[global_allocator]
static ALLOCATOR: a2a_local::Allocator = a2a_local::Allocator;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    a2a_local::run_project(env!("CARGO_PKG_NAME"), {{crate}}::agent()).await
}
