//! The `get` function: see `a2a_lambda_glue::HttpFunction::Get`.

use a2a_lambda_glue::{agent, serve_http, Error, HttpFunction};
use a2a_reference_agent::ReferenceAgent;

#[tokio::main]
async fn main() -> Result<(), Error> {
    serve_http(HttpFunction::Get, agent(ReferenceAgent)).await
}
