//! Every Lambda function of the stack, as one program: the environment picks the role
//! (`A2A_FUNCTION`, set per function by `template.yaml`; see `a2a_lambda_glue::run`), and the
//! agent is the one `agent/` names.
//!
//! The deployed functions all run the `a2a-function` binary. The binaries under `src/bin/`, one
//! per role and named after it, are the same program for `cargo lambda watch`, which starts a
//! function as the binary of its name and sets `AWS_LAMBDA_FUNCTION_NAME` to that name.

/// The allocator of every binary of this crate, `a2a-function` and the ones under `src/bin/`
/// alike ([`a2a_lambda_glue::Allocator`]).
#[global_allocator]
static ALLOCATOR: a2a_lambda_glue::Allocator = a2a_lambda_glue::Allocator;

/// Runs this process as the function the environment names, serving `a2a_agent::agent()`.
///
/// On one thread: an instance handles one invocation at a time, on a fraction of a vCPU at the
/// memory sizes the template picks, so a multi-thread runtime's workers would only add
/// hand-offs between threads to every request (docs/lambda.md, "Cold start"). Work the
/// handler spawns runs while the handler awaits it, as the functions require anyway.
#[tokio::main(flavor = "current_thread")]
pub async fn main() -> Result<(), a2a_lambda_glue::Error> {
    command_line(std::env::args());
    a2a_lambda_glue::run(a2a_agent::agent()).await
}

/// Answers `--help` and `--version`, and refuses any other argument, exiting; returns when
/// there are none. Lambda passes none: the role comes from the environment.
fn command_line(mut args: impl Iterator<Item = String>) {
    let program = args.next().unwrap_or_default();
    let program = std::path::Path::new(&program)
        .file_name()
        .map_or("a2a-function".into(), |n| n.to_string_lossy().into_owned());
    let Some(arg) = args.next() else {
        return;
    };
    let roles = a2a_lambda_glue::Function::ALL.map(a2a_lambda_glue::Function::name);
    let usage = format!(
        "Usage: {env}=<role> {program}\n\n\
         A Lambda function of an a2a-lambda stack. It takes no arguments: the environment names \
         its role ({env}, which template.yaml sets on each function).\n\
         Roles: {roles}.\n\
         To run the functions on this machine: infra/lambda-local.sh start (docs/lambda.md); \
         to serve the agent locally without Lambda: cargo run -p a2a-local.",
        env = a2a_lambda_glue::ENV_FUNCTION,
        roles = roles.join(", "),
    );
    match arg.as_str() {
        "-h" | "--help" => {
            println!("{usage}");
            std::process::exit(0)
        }
        "-V" | "--version" => {
            println!("{program} {}", env!("CARGO_PKG_VERSION"));
            std::process::exit(0)
        }
        _ => {
            eprintln!("{program}: unexpected argument {arg:?}\n\n{usage}");
            std::process::exit(2)
        }
    }
}
