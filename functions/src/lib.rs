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
    a2a_lambda_glue::run(a2a_agent::agent()).await
}
