//! The Lambda functions of `template.yaml`: one binary, each function's role from the
//! `A2A_FUNCTION` variable the template sets.

/// The allocator the kit's functions are measured with ([`a2a_lambda_glue::Allocator`]).
#[global_allocator]
static ALLOCATOR: a2a_lambda_glue::Allocator = a2a_lambda_glue::Allocator;

// One thread: an instance handles one invocation at a time on a fraction of a vCPU, where a
// multi-thread runtime only adds hand-offs between threads to every request.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), a2a_lambda_glue::Error> {
    a2a_lambda_glue::run({{crate}}::agent()).await
}
