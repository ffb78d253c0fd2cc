//! Which of the fourteen functions a process is: one binary serves them all, and the template
//! tells each function its role in `A2A_FUNCTION`. A stack deploys the eight per-operation HTTP
//! functions (and the A2A-Lite channel function when its channels are on) (front door
//! `ApiGateway`), or the `front` function and the `relay` function (front door `FunctionUrl`),
//! plus the worker, fan-out and push functions.

use std::fmt;
use std::sync::Arc;

use a2a_core::Agent;

use crate::{run_fanout, run_push, run_worker, serve_http, Error, HttpFunction};

/// The environment variable that names a function's role (set per function by `template.yaml`).
pub const ENV_FUNCTION: &str = "A2A_FUNCTION";

/// What Lambda (and `cargo lambda watch`) sets to the function's name: the role's fallback
/// when [`ENV_FUNCTION`] is not set and it is one of the roles' names.
pub const ENV_LAMBDA_FUNCTION_NAME: &str = "AWS_LAMBDA_FUNCTION_NAME";

/// One of the fourteen Lambda functions: an HTTP slice of the surface, an SQS consumer, or the
/// table stream's consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// An HTTP function (API Gateway or a Function URL).
    Http(HttpFunction),
    /// The worker: SQS batches of queued work.
    Worker,
    /// The push fan-out: batches of the task table's stream (heads of tasks with push
    /// configs) → push jobs.
    Fanout,
    /// The push function: SQS batches of push deliveries.
    Push,
}

impl Function {
    /// Every function, in the order the template declares them.
    pub const ALL: [Function; 14] = [
        Self::Http(HttpFunction::Send),
        Self::Http(HttpFunction::Get),
        Self::Http(HttpFunction::List),
        Self::Http(HttpFunction::Cancel),
        Self::Http(HttpFunction::PushConfig),
        Self::Http(HttpFunction::Card),
        Self::Http(HttpFunction::Stream),
        Self::Http(HttpFunction::Rpc),
        Self::Http(HttpFunction::Channel),
        Self::Http(HttpFunction::Front),
        Self::Http(HttpFunction::Relay),
        Self::Worker,
        Self::Fanout,
        Self::Push,
    ];

    /// The function's name: the value of [`ENV_FUNCTION`] that selects it, and its name
    /// under `cargo lambda watch`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Http(function) => function.name(),
            Self::Worker => "worker",
            Self::Fanout => "fanout",
            Self::Push => "push",
        }
    }

    /// The function called `name`, if any.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The role from the environment: [`ENV_FUNCTION`], else [`ENV_LAMBDA_FUNCTION_NAME`] when
    /// it is one of the names.
    pub fn from_env() -> Result<Self, UnknownFunction> {
        Self::choose(
            std::env::var(ENV_FUNCTION).ok().as_deref(),
            std::env::var(ENV_LAMBDA_FUNCTION_NAME).ok().as_deref(),
        )
    }

    /// The role given the values of [`ENV_FUNCTION`] and [`ENV_LAMBDA_FUNCTION_NAME`]. A set
    /// but unknown [`ENV_FUNCTION`] is an error, never a silent fallback: a typo in the
    /// template must not make a function serve another's role.
    pub fn choose(
        a2a_function: Option<&str>,
        lambda_function_name: Option<&str>,
    ) -> Result<Self, UnknownFunction> {
        match a2a_function {
            Some(name) => Self::named(name).ok_or_else(|| UnknownFunction {
                found: Some(name.to_owned()),
            }),
            None => lambda_function_name
                .and_then(Self::named)
                .ok_or(UnknownFunction { found: None }),
        }
    }
}

/// The environment names no function: the one line a function prints when it fails at init.
#[derive(Clone, PartialEq, Eq)]
pub struct UnknownFunction {
    found: Option<String>,
}

impl fmt::Display for UnknownFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = Function::ALL.map(Function::name).join(", ");
        match &self.found {
            Some(found) => write!(
                f,
                "{ENV_FUNCTION}={found:?} names no function; valid values: {names}"
            ),
            None => write!(
                f,
                "set {ENV_FUNCTION} to the function's role (or name the function after it in \
                 {ENV_LAMBDA_FUNCTION_NAME}); valid values: {names}"
            ),
        }
    }
}

// `main` returning an error prints its `Debug`: keep that the same one line.
impl fmt::Debug for UnknownFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for UnknownFunction {}

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
