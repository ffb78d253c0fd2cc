//! The command lines: `a2a-local`'s (the server, `keys`, `new`) and a generated project's
//! (the server and `keys`), and the admin commands behind them.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use a2a_core::{Agent, Permissions};
use a2a_files::ApiKeyFile;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::{init_logging, new_project, serve, shutdown_signal, Options};

/// The `a2a-local` command line: the server options, or an admin command.
#[derive(Debug, Parser)]
#[command(
    name = "a2a-local",
    version,
    about = "Run an A2A 1.0 agent locally on an embedded store"
)]
pub struct Cli {
    /// The server's options (also read by the admin commands: `--data-dir`, `--api-key-file`).
    #[command(flatten)]
    pub options: Options,
    /// An admin command instead of serving.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Admin commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Manage API keys (for `--auth api-key`).
    Keys(KeysArgs),
    /// Writes a new agent project into a directory: its agent, a local server, the Lambda
    /// binary, template.yaml and a test, on this kit's crates.
    New(new_project::NewArgs),
}

/// `a2a-local keys …`: which key document, and what to do with it. The document's options are
/// the keys' own, not global ones, so that `new --help` lists only what `new` takes.
#[derive(Debug, Args)]
pub struct KeysArgs {
    /// The data directory whose key document to use. Default: the server's (`--data-dir`
    /// before `keys`, A2A_DATA_DIR, or ./.a2a).
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    /// The API key document (hashes only). Default: the server's (`--api-key-file` before
    /// `keys`, A2A_API_KEY_FILE, or `<data-dir>/api-keys.json`).
    #[arg(long, global = true)]
    pub api_key_file: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: KeysCommand,
}

/// `a2a-local keys …`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Issues a key and prints it once; only its hash is stored.
    Issue {
        /// What the key may do: any of read, send, cancel, push (comma-separated), or all.
        #[arg(long, default_value = "all")]
        permissions: String,
        /// Who the key is for: keys with the same principal see the same tasks (so a key can
        /// be replaced without losing them). Default: the key's own id.
        #[arg(long)]
        principal: Option<String>,
        /// A note for humans.
        #[arg(long, default_value = "")]
        description: String,
    },
    /// Lists the keys (ids, principals, permissions; never a key).
    List,
    /// Revokes a key: it is refused from the next request on.
    Revoke {
        /// The key id (`a2a_<id>_…`).
        id: String,
    },
}

/// Runs an admin command, printing to stdout.
pub fn run_command(options: &Options, command: &Command) -> Result<(), String> {
    match command {
        Command::Keys(keys) => run_keys(options, keys),
        Command::New(args) => new_project::run(args).map_err(|e| e.to_string()),
    }
}

/// A generated agent project's command line: the same server options, and `keys` (a
/// deployment refuses every call without an API key by default, so a project must be able to
/// issue them); not `new`, which belongs to the kit.
#[derive(Debug, Parser)]
#[command(version, about = "Run this A2A 1.0 agent locally on an embedded store")]
pub struct ProjectCli {
    /// The server's options (also read by `keys`: `--data-dir`, `--api-key-file`).
    #[command(flatten)]
    pub options: Options,
    /// An admin command instead of serving.
    #[command(subcommand)]
    pub command: Option<ProjectCommand>,
}

/// A generated project's admin commands.
#[derive(Debug, Subcommand)]
pub enum ProjectCommand {
    /// Manage API keys (for `--auth api-key`, and the document a deployment reads).
    Keys(KeysArgs),
}

/// The whole `main` of a generated project's local server: parses [`ProjectCli`] (usage and
/// errors under the project's `name`), then serves `agent` until Ctrl-C or SIGTERM, or runs
/// `keys`. An error is printed as `name: …` and exits 1.
pub async fn run_project(name: &'static str, agent: Arc<dyn Agent>) -> ExitCode {
    let matches = ProjectCli::command().name(name).get_matches();
    let cli = ProjectCli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    let result = match &cli.command {
        Some(ProjectCommand::Keys(keys)) => run_keys(&cli.options, keys),
        None => serve_until_signal(cli.options, agent).await,
    };
    exit_code(name, result)
}

/// Logs to stderr and serves `agent` until Ctrl-C or SIGTERM.
pub async fn serve_until_signal(options: Options, agent: Arc<dyn Agent>) -> Result<(), String> {
    init_logging();
    serve(options, agent, shutdown_signal()).await
}

/// The process's exit: an error plainly on stderr, `program: …` (it says what to do, which a
/// log line's fields would bury), and status 1.
pub fn exit_code(program: &str, result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{program}: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `keys …`, printing to stdout. The key itself is printed exactly once, by `keys issue`,
/// and is never logged.
fn run_keys(options: &Options, keys: &KeysArgs) -> Result<(), String> {
    let data_dir = keys.data_dir.as_ref().unwrap_or(&options.data_dir);
    let file = ApiKeyFile::new(match &keys.api_key_file {
        Some(file) => file.clone(),
        None => options.auth.api_key_path(data_dir),
    });
    let path = file.path();
    let mut doc = file.read()?;
    match &keys.command {
        KeysCommand::Issue {
            permissions,
            principal,
            description,
        } => {
            let permissions = Permissions::parse_list(permissions)?;
            let (record, key) = doc.issue(permissions, principal.clone(), description.clone())?;
            file.write(&doc)?;
            eprintln!(
                "issued key {} (principal {}, permissions {}) into {}; it is shown once:",
                record.id,
                record.principal(),
                record.permissions,
                path.display()
            );
            println!("{}", key.expose());
        }
        KeysCommand::List => {
            for key in &doc.keys {
                println!(
                    "{}\tprincipal={}\tpermissions={}\t{}{}",
                    key.id,
                    key.principal(),
                    key.permissions,
                    if key.revoked { "REVOKED\t" } else { "" },
                    key.description
                );
            }
        }
        KeysCommand::Revoke { id } => {
            if !doc.revoke(id) {
                return Err(format!("no key {id} in {}", path.display()));
            }
            file.write(&doc)?;
            eprintln!("revoked key {id}");
        }
    }
    Ok(())
}
