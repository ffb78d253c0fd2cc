//! The binary refuses to start without a role it knows, with one line saying what to set.

use std::process::Command;

fn start(env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_a2a-function"))
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn without_a_role_it_stops_at_init_naming_the_variable_and_the_roles() {
    // A deployed function's name (stack-SendFunction-…) is no role.
    let (ok, stderr) = start(&[("AWS_LAMBDA_FUNCTION_NAME", "stack-SendFunction-AbC")]);
    assert!(!ok);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("A2A_FUNCTION"), "{stderr}");
    assert!(
        lines[0].contains("send") && lines[0].contains("push-config"),
        "{stderr}"
    );
}

#[test]
fn an_unknown_role_is_refused() {
    let (ok, stderr) = start(&[
        ("A2A_FUNCTION", "sned"),
        ("AWS_LAMBDA_FUNCTION_NAME", "send"),
    ]);
    assert!(!ok);
    assert!(stderr.contains("A2A_FUNCTION=\"sned\""), "{stderr}");
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_a2a-function"))
        .env_clear()
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn help_prints_the_usage_and_the_roles_not_an_error() {
    for flag in ["--help", "-h"] {
        let out = run(&[flag]);
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.starts_with("Usage: A2A_FUNCTION=<role>"), "{stdout}");
        assert!(
            stdout.contains("worker") && stdout.contains("push-config"),
            "{stdout}"
        );
        assert!(out.stderr.is_empty(), "{out:?}");
    }
    let version = run(&["--version"]);
    assert!(version.status.success(), "{version:?}");
}

#[test]
fn an_argument_is_refused_with_the_usage() {
    let out = run(&["send"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unexpected argument \"send\""), "{stderr}");
    assert!(stderr.contains("A2A_FUNCTION"), "{stderr}");
}
