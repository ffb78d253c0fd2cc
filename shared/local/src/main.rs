//! `a2a-local`: the whole A2A server on one machine, with nothing to install.

use clap::Parser;

/// mimalloc rather than the system allocator: the server allocates on one thread and frees on
/// another all the time (the store's writer thread, the runtime's workers), which glibc's
/// allocator pays for in locking and consolidation. Measured on the blocking echo benchmark:
/// about a fifth less CPU per request and half again the throughput (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
            tracing::error!(error = %err, "a2a-local stopped");
            std::process::ExitCode::FAILURE
        }
    }
}
