//! `a2a-local`: the whole A2A server on one machine, with nothing to install.

use clap::Parser;

/// The allocator the server is measured with ([`a2a_local::Allocator`] says why).
#[global_allocator]
static ALLOCATOR: a2a_local::Allocator = a2a_local::Allocator;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = a2a_local::Cli::parse();
    let result = match &cli.command {
        Some(command) => a2a_local::run_command(&cli.options, command),
        None => a2a_local::serve_until_signal(cli.options, a2a_agent::agent()).await,
    };
    a2a_local::exit_code("a2a-local", result)
}
