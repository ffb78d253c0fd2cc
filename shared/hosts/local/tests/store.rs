//! `--store dynamodb` that cannot work stops the start with one line saying why: in a build
//! without the AWS adapters, how to get them; without AWS configuration, what is missing,
//! without ever asking the instance metadata service.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Generous: a hang guard, not a measure (the instance metadata service's timeouts and
/// retries are what this must never wait for).
const EXIT_WITHIN: Duration = Duration::from_secs(30);

/// Runs `a2a-local` with only `env` (no AWS variables, no profile), until it exits; its exit
/// success and its stderr.
fn run_scrubbed(args: &[&str], env: &[(&str, String)]) -> (bool, String) {
    let home = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2a-local"))
        .args(args)
        .arg("--data-dir")
        .arg(home.path().join("data"))
        .args(["--addr", "127.0.0.1:0"])
        .env_clear()
        // An empty home: no ~/.aws config or credentials, whatever the machine has.
        .env("HOME", home.path())
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a2a-local");
    let deadline = Instant::now() + EXIT_WITHIN;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for a2a-local") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a2a-local did not exit within {EXIT_WITHIN:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    (status.success(), stderr)
}

#[cfg(not(feature = "dynamodb"))]
#[test]
fn dynamodb_in_a_build_without_it_says_how_to_get_it() {
    let (ok, stderr) = run_scrubbed(&["--store", "dynamodb"], &[]);
    assert!(!ok, "a2a-local started: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("cargo run -p a2a-local --features dynamodb -- --store dynamodb"),
        "{stderr}"
    );
}

#[cfg(feature = "dynamodb")]
#[test]
fn dynamodb_without_aws_configuration_says_what_is_missing_and_never_asks_imds() {
    // Stands in for the instance metadata service: the SDK honours this endpoint, so any
    // attempt to reach it shows here as a connection.
    let imds = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    imds.set_nonblocking(true).expect("non-blocking");
    let endpoint = format!("http://{}", imds.local_addr().expect("address"));
    let imds_env = [("AWS_EC2_METADATA_SERVICE_ENDPOINT", endpoint.clone())];

    // Neither a region nor credentials; resources to create, so today's code goes as far as
    // its first request.
    let (ok, stderr) = run_scrubbed(
        &["--store", "dynamodb", "--create-resources", "scrubbed"],
        &imds_env,
    );
    assert!(!ok, "a2a-local started: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    for needed in ["region", "AWS_REGION", "credentials", "AWS_ACCESS_KEY_ID"] {
        assert!(stderr.contains(needed), "names {needed}: {stderr}");
    }

    // A region but no credentials: only the credentials are missing.
    let mut env = imds_env.to_vec();
    env.push(("AWS_REGION", "us-east-1".into()));
    let (ok, stderr) = run_scrubbed(
        &["--store", "dynamodb", "--create-resources", "scrubbed"],
        &env,
    );
    assert!(!ok, "a2a-local started: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("AWS_ACCESS_KEY_ID"), "{stderr}");
    assert!(
        !stderr.contains("AWS_REGION"),
        "the region is set: {stderr}"
    );

    assert!(
        matches!(imds.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a2a-local connected to the instance metadata service endpoint"
    );
}
