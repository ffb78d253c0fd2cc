//! Which of the fourteen functions a process is: one binary serves them all, and the template
//! tells each function its role in `A2A_FUNCTION`. A stack deploys the eight per-operation HTTP
//! functions (and the A2A-Lite channel function when its channels are on) (front door
//! `ApiGateway`), or the `front` function and the `relay` function (front door `FunctionUrl`),
//! plus the worker, fan-out and push functions.

use std::sync::Arc;

use a2a_core::Agent;

use crate::role::Function;
use crate::{run_fanout, run_push, run_worker, serve_http, Error};

/// Runs the function the environment names (see [`Function::from_env`]) for `agent`, until
/// the runtime stops the instance. Every function's binary is this one call.
pub async fn run(agent: Arc<dyn Agent>) -> Result<(), Error> {
    match Function::from_env()? {
        Function::Http(function) => serve_http(function, agent).await,
        Function::Worker => run_worker(agent).await,
        Function::Fanout => run_fanout(agent).await,
        Function::Push => run_push(agent).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_selects_its_function() {
        for f in Function::ALL {
            assert_eq!(Function::choose(Some(f.name()), None), Ok(f));
            assert_eq!(Function::choose(None, Some(f.name())), Ok(f));
        }
        let names: std::collections::BTreeSet<_> = Function::ALL.map(Function::name).into();
        assert_eq!(names.len(), Function::ALL.len(), "names are unique");
    }

    #[test]
    fn a2a_function_wins_over_the_lambda_name() {
        assert_eq!(
            Function::choose(Some("worker"), Some("card")),
            Ok(Function::Worker)
        );
    }

    #[test]
    fn a_deployed_function_name_is_no_role() {
        let err = Function::choose(None, Some("stack-SendFunction-AbC")).unwrap_err();
        let line = err.to_string();
        assert!(line.contains("A2A_FUNCTION"), "{line}");
        assert!(
            line.contains("push-config") && line.contains("worker"),
            "{line}"
        );
        assert!(!line.contains('\n'));
        assert_eq!(format!("{err:?}"), line);
    }

    #[test]
    fn an_unknown_a2a_function_is_an_error_not_a_fallback() {
        let err = Function::choose(Some("sned"), Some("send")).unwrap_err();
        assert!(
            err.to_string().starts_with("A2A_FUNCTION=\"sned\""),
            "{err}"
        );
    }
}
