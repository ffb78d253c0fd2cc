//! The local server: the whole A2A router on 127.0.0.1:9000, the store in `./.a2a`, queued
//! work and push delivery in-process. `cargo run -- --help` lists the options.

use clap::Parser;

/// The allocator the kit's local server is measured with ([`a2a_local::Allocator`]).
#[global_allocator]
static ALLOCATOR: a2a_local::Allocator = a2a_local::Allocator;

#[tokio::main]
async fn main() -> Result<(), String> {
    a2a_local::init_logging();
    let options = a2a_local::Options::parse();
    a2a_local::serve(options, {{crate}}::agent(), a2a_local::shutdown_signal()).await
}
