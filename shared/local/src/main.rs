//! `a2a-local`: the whole A2A server on one machine, with nothing to install.

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let options = a2a_local::Options::parse();
    a2a_local::init_logging();
    match a2a_local::run(options, a2a_local::shutdown_signal()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("a2a-local stopped: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}
