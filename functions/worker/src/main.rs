//! The `worker` function: SQS batches, see `a2a_lambda_glue::run_worker`.

use a2a_lambda_glue::{agent, run_worker, Error};
use a2a_reference_agent::ReferenceAgent;

#[tokio::main]
async fn main() -> Result<(), Error> {
    run_worker(agent(ReferenceAgent)).await
}
