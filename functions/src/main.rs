//! The binary every deployed function runs (see the crate's library).

fn main() -> Result<(), a2a_lambda_glue::Error> {
    a2a_function::main()
}
