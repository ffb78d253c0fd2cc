//! The Lambda functions of `template.yaml`: one binary, each function's role from the
//! `A2A_FUNCTION` variable the template sets.

#[tokio::main]
async fn main() -> Result<(), a2a_lambda_glue::Error> {
    a2a_lambda_glue::run({{crate}}::agent()).await
}
