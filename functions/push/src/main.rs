//! The `push` function: SQS batches, see `a2a_lambda_glue::run_push`.

use a2a_lambda_glue::{agent, run_push, Error};
use a2a_reference_agent::ReferenceAgent;

#[tokio::main]
async fn main() -> Result<(), Error> {
    run_push(agent(ReferenceAgent)).await
}
