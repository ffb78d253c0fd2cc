//! The command line: options parse as documented.

use a2a_http::CorsOrigins;
use a2a_local::Cli;
use clap::{CommandFactory, Parser};

#[test]
fn cors_origins_are_a_list_or_a_wildcard_and_off_when_unset() {
    let cli = Cli::try_parse_from([
        "a2a-local",
        "--cors-origins",
        "https://inspector.example,http://localhost:5173",
    ])
    .expect("parses");
    assert_eq!(
        cli.options.cors_origins,
        Some(CorsOrigins::List(vec![
            "https://inspector.example".into(),
            "http://localhost:5173".into()
        ]))
    );
    let any = Cli::try_parse_from(["a2a-local", "--cors-origins", "*"]).expect("parses");
    assert_eq!(any.options.cors_origins, Some(CorsOrigins::Any));

    let bad = Cli::try_parse_from(["a2a-local", "--cors-origins", "inspector.example"])
        .expect_err("an origin needs a scheme");
    assert!(bad.to_string().contains("scheme://host"), "{bad}");

    if std::env::var_os("A2A_CORS_ORIGINS").is_none() {
        let unset = Cli::try_parse_from(["a2a-local"]).expect("parses");
        assert_eq!(unset.options.cors_origins, None);
    }

    let help = Cli::command().render_long_help().to_string();
    assert!(help.contains("--cors-origins"), "{help}");
    assert!(help.contains("A2A_CORS_ORIGINS"), "{help}");
}

#[test]
fn older_versions_are_switched_with_on_and_off() {
    let off = Cli::try_parse_from([
        "a2a-local",
        "--protocol-0-3",
        "off",
        "--protocol-early",
        "off",
    ])
    .expect("parses");
    assert!(!off.options.protocol_0_3 && !off.options.protocol_early);
    let on = Cli::try_parse_from(["a2a-local", "--protocol-0-3", "on", "--protocol-early=on"])
        .expect("parses");
    assert!(on.options.protocol_0_3 && on.options.protocol_early);
    if std::env::var_os("A2A_PROTOCOL_0_3").is_none() {
        let unset = Cli::try_parse_from(["a2a-local"]).expect("parses");
        assert!(unset.options.protocol_0_3, "on by default");
    }
    let bad =
        Cli::try_parse_from(["a2a-local", "--protocol-0-3", "maybe"]).expect_err("only on or off");
    assert!(bad.to_string().contains("maybe"), "{bad}");
}

#[test]
fn an_agent_of_your_own_has_its_own_default_data_directory() {
    use a2a_local::Options;
    use std::path::Path;
    if std::env::var_os("A2A_DATA_DIR").is_none() {
        let own =
            Options::try_parse_from_with_data_dir("./.a2a-my-agent", ["my_agent"]).expect("parses");
        assert_eq!(own.data_dir, Path::new("./.a2a-my-agent"));
        let reference = Cli::try_parse_from(["a2a-local"]).expect("parses");
        assert_eq!(reference.options.data_dir, Path::new("./.a2a"));
        assert_ne!(own.data_dir, reference.options.data_dir);
    }
    let chosen = Options::try_parse_from_with_data_dir(
        "./.a2a-my-agent",
        ["my_agent", "--data-dir", "/tmp/elsewhere"],
    )
    .expect("parses");
    assert_eq!(chosen.data_dir, Path::new("/tmp/elsewhere"));
    let bad = Options::try_parse_from_with_data_dir("./.a2a-my-agent", ["my_agent", "--nope"])
        .expect_err("an unknown flag");
    assert!(bad.to_string().contains("--nope"), "{bad}");
}

#[test]
fn new_help_lists_only_what_new_takes() {
    let mut command = Cli::command();
    command.build();
    let mut help = |path: &[&str]| {
        let mut sub = &mut command;
        for name in path {
            sub = sub.find_subcommand_mut(name).expect("a subcommand");
        }
        sub.render_long_help().to_string()
    };
    let new = help(&["new"]);
    assert!(new.contains("--kit-git"), "{new}");
    for server_only in ["--data-dir", "--api-key-file", "--addr", "--store"] {
        assert!(!new.contains(server_only), "{server_only} in: {new}");
    }
    let issue = help(&["keys", "issue"]);
    for option in ["--data-dir", "--api-key-file", "--permissions"] {
        assert!(issue.contains(option), "{option} not in: {issue}");
    }

    let refused = Cli::try_parse_from(["a2a-local", "new", "--data-dir", "/tmp/x", "dir"])
        .expect_err("new takes no data directory");
    assert!(refused.to_string().contains("--data-dir"), "{refused}");
}

#[test]
fn keys_find_their_document_where_they_are_told() {
    let dir = tempfile::tempdir().expect("temp dir");
    let issue = |args: &[&std::ffi::OsStr]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_a2a-local"))
            .env_remove("A2A_DATA_DIR")
            .env_remove("A2A_API_KEY_FILE")
            .current_dir(dir.path())
            .args(args)
            .output()
            .expect("run a2a-local");
        assert!(out.status.success(), "{out:?}");
    };
    let after = dir.path().join("after");
    let before = dir.path().join("before");
    let file = dir.path().join("keys.json");
    // The README's forms: the option after `keys issue`, or before `keys`.
    issue(&[
        "keys".as_ref(),
        "issue".as_ref(),
        "--data-dir".as_ref(),
        after.as_os_str(),
    ]);
    issue(&[
        "--data-dir".as_ref(),
        before.as_os_str(),
        "keys".as_ref(),
        "issue".as_ref(),
    ]);
    issue(&[
        "keys".as_ref(),
        "issue".as_ref(),
        "--api-key-file".as_ref(),
        file.as_os_str(),
    ]);
    for written in [
        after.join("api-keys.json"),
        before.join("api-keys.json"),
        file,
    ] {
        assert!(written.is_file(), "{} was not written", written.display());
    }
    assert!(
        !dir.path().join(".a2a").exists(),
        "nothing in the default directory"
    );
}
