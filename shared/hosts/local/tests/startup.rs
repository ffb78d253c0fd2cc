//! A start that cannot work stops with one line naming the cause and the next step: a data
//! directory it cannot write, an address in use, an unknown store; `--store dynamodb` in a build
//! without the AWS adapters (how to get them) or without AWS configuration (what is missing,
//! without ever asking the instance metadata service).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Generous: a hang guard, not a measure (the instance metadata service's timeouts and
/// retries are what this must never wait for).
const EXIT_WITHIN: Duration = Duration::from_secs(30);

/// `a2a-local`, with an empty environment but for `HOME`.
fn a2a_local(home: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_a2a-local"));
    // An empty home: no ~/.aws config or credentials, whatever the machine has.
    command.env_clear().env("HOME", home);
    command
}

/// Runs `command` until it exits; its exit success and its stderr.
fn run_to_exit(mut command: Command) -> (bool, String) {
    let mut child = command
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

/// Runs `a2a-local` with only `env` (no AWS variables, no profile), until it exits; its exit
/// success and its stderr.
fn run_scrubbed(args: &[&str], env: &[(&str, String)]) -> (bool, String) {
    let home = tempfile::tempdir().expect("temp dir");
    let mut command = a2a_local(home.path());
    command
        .args(args)
        .arg("--data-dir")
        .arg(home.path().join("data"))
        .args(["--addr", "127.0.0.1:0"])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    run_to_exit(command)
}

#[test]
fn a_data_directory_it_cannot_write_is_named_with_the_flag_that_chooses_another() {
    let home = tempfile::tempdir().expect("temp dir");
    let data = home.path().join("read-only");
    std::fs::create_dir(&data).expect("create the data directory");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o555);
    std::fs::set_permissions(&data, mode).expect("make it read-only");
    // Root (a container, CI) writes anywhere: drop the capabilities that let it, so that the
    // directory's permissions apply to the server as to anyone else.
    let probe = data.join("probe");
    let mut command = if std::fs::write(&probe, b"").is_ok() {
        std::fs::remove_file(&probe).expect("remove the probe");
        let mut command = Command::new("setpriv");
        command
            .args(["--bounding-set=-dac_override,-dac_read_search", "--"])
            .arg(env!("CARGO_BIN_EXE_a2a-local"))
            .env_clear()
            .env("HOME", home.path());
        command
    } else {
        a2a_local(home.path())
    };
    command
        .arg("--data-dir")
        .arg(&data)
        .args(["--addr", "127.0.0.1:0"]);
    let (ok, stderr) = run_to_exit(command);
    assert!(!ok, "a2a-local started: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    let line = stderr.trim();
    assert!(
        line.starts_with(&format!(
            "a2a-local: cannot open the store in {}: ",
            data.display()
        )),
        "{stderr}"
    );
    assert!(line.contains("Permission denied"), "{stderr}");
    assert!(line.contains("--data-dir (or A2A_DATA_DIR)"), "{stderr}");
    assert!(!line.contains("unable to open database file"), "{stderr}");
}

#[test]
fn an_address_in_use_is_named_with_the_flag_that_chooses_another() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("address");
    let home = tempfile::tempdir().expect("temp dir");
    let mut command = a2a_local(home.path());
    command
        .arg("--data-dir")
        .arg(home.path().join("data"))
        .args(["--addr", &addr.to_string()]);
    let (ok, stderr) = run_to_exit(command);
    assert!(!ok, "a2a-local started: {stderr}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("a2a-local: "))
        .unwrap_or_else(|| panic!("no error line: {stderr}"));
    assert!(
        line.starts_with(&format!("a2a-local: cannot listen on {addr}: ")),
        "{stderr}"
    );
    for said in [
        "Address already in use".to_string(),
        format!("another process listens on port {}", addr.port()),
        "--addr (or A2A_ADDR)".to_string(),
    ] {
        assert!(line.contains(&said), "says {said:?}: {stderr}");
    }
}

#[test]
fn an_unknown_store_is_refused_with_the_stores_there_are() {
    let (ok, stderr) = run_scrubbed(&["--store", "postgres"], &[]);
    assert!(!ok, "a2a-local started: {stderr}");
    assert!(
        stderr.contains("invalid value 'postgres' for '--store <STORE>'"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[possible values: embedded, dynamodb]"),
        "{stderr}"
    );
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
