//! `relay` under `cargo lambda watch`, which runs a function as the binary of its name (see the
//! crate's library): the same program as `a2a-function`.

fn main() -> Result<(), a2a_lambda_glue::Error> {
    a2a_function::main()
}
