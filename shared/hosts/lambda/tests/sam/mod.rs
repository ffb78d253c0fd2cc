//! `template.yaml` as CloudFormation gets it: translated by SAM's own translator
//! (`infra/sam-translate.py`, in the SAM CLI venv that `infra/check-template.sh --setup`
//! installs), and resolved for a set of parameter values, so a test sees the roles, managed
//! policies, event source mappings and stages SAM generates, not only what the template says.
//!
//! Without the venv a test skips, unless `A2A_REQUIRE_SAM` is set (`infra/test-all.sh` sets
//! it), which makes it fail instead.
#![allow(dead_code)]

pub(crate) mod environment;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The repository's root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// The stack `template.yaml` creates with its parameters at their defaults except
/// `overrides`, as SAM translates it (`sam-translate.py --resolve`: resources under a false
/// condition dropped, each `Fn::If` replaced by its branch, the failing `Rules` assertions
/// under `FailedRules`). `None` (the test skips) without the SAM CLI venv.
pub(crate) fn created(overrides: &[(&str, &str)]) -> Option<Value> {
    created_from(&root().join("template.yaml"), overrides)
}

/// As [`created`], of the template at `template`.
pub(crate) fn created_from(template: &Path, overrides: &[(&str, &str)]) -> Option<Value> {
    let python = root().join(".venv-sam/bin/python");
    if !python.exists() {
        assert!(
            std::env::var_os("A2A_REQUIRE_SAM").is_none(),
            "A2A_REQUIRE_SAM is set but {} is missing: run infra/check-template.sh --setup",
            python.display()
        );
        eprintln!("skipped: no SAM CLI venv (infra/check-template.sh --setup installs it)");
        return None;
    }
    let mut command = Command::new(python);
    command
        .arg(root().join("infra/sam-translate.py"))
        .arg("--template")
        .arg(template)
        .arg("--resolve")
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("SAM_CLI_TELEMETRY", "0");
    for (name, value) in overrides {
        command.arg(format!("{name}={value}"));
    }
    let out = command.output().expect("run infra/sam-translate.py");
    assert!(
        out.status.success(),
        "sam-translate.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("sam-translate.py prints JSON"))
}

/// The resources of `stack` of CloudFormation type `ty`, by logical id.
pub(crate) fn of_type<'a>(stack: &'a Value, ty: &str) -> Vec<(&'a str, &'a Value)> {
    stack["Resources"]
        .as_object()
        .expect("Resources")
        .iter()
        .filter(|(_, r)| r["Type"] == ty)
        .map(|(k, r)| (k.as_str(), r))
        .collect()
}

/// The logical id a `{"Ref": X}` or `{"Fn::GetAtt": [X, attr]}` names, with the attribute
/// (`X`, `X.Arn`, `X.StreamArn`); `None` for anything else.
pub(crate) fn target(v: &Value) -> Option<String> {
    if let Some(name) = v.get("Ref").and_then(Value::as_str) {
        return Some(name.to_owned());
    }
    let parts = v.get("Fn::GetAtt")?.as_array()?;
    Some(format!("{}.{}", parts[0].as_str()?, parts[1].as_str()?))
}

/// The logical id of the function whose role (`A2A_FUNCTION`) is `role`.
pub(crate) fn function_logical_id(stack: &Value, role: &str) -> String {
    of_type(stack, "AWS::Lambda::Function")
        .into_iter()
        .find(|(_, f)| f["Properties"]["Environment"]["Variables"]["A2A_FUNCTION"] == role)
        .unwrap_or_else(|| panic!("no function with A2A_FUNCTION={role}"))
        .0
        .to_owned()
}
