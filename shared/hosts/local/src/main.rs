//! `a2a-local`: the whole A2A server on one machine, with nothing to install.

use clap::Parser;

/// The allocator the server is measured with ([`a2a_local::Allocator`] says why).
#[global_allocator]
static ALLOCATOR: a2a_local::Allocator = a2a_local::Allocator;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = a2a_local::Cli::parse();
    if let Some(command) = &cli.command {
        return match a2a_local::run_command(&cli.options, command) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("a2a-local: {err}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    a2a_local::init_logging();
    let serving = a2a_local::serve(
        cli.options,
        a2a_agent::agent(),
        a2a_local::shutdown_signal(),
    );
    match serving.await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            // Plain, as the admin commands' errors: it says what to do, which a log line's
            // fields would bury.
            eprintln!("a2a-local: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}
