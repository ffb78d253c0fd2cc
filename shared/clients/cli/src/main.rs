//! `a2a`: call any A2A 1.0 agent from a terminal. See `a2a --help`.

/// `println!` to stdout, except that a reader gone away (`a2a list | head -1`) ends the
/// command quietly, as a Unix tool killed by SIGPIPE, where `println!` would panic.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::failure::print_line(format_args!($($arg)*))
    };
}

mod args;
mod discover;
mod failure;
mod follow;
mod render;
mod sanitize;

use args::{or_env, url_and};
pub(crate) use failure::{error_text, Failure, Outcome};
use follow::{ended, finished, follow, stopped, unanswered, until_interrupted};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use a2a_client::webhook::WebhookReceiver;
use a2a_client::{
    A2AError, AgentCard, Auth, Binding, CancelTaskRequest, Client, ClientBuilder, Error,
    GetTaskRequest, Limits, ListTaskPushNotificationConfigsRequest, ListTasksRequest, Part,
    SecurityScheme, SendMessageConfiguration, SendMessageResponse, SubscribeToTaskRequest,
    TaskPushNotificationConfig, TaskPushNotificationConfigRef, TaskState,
};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::Value;

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the agent answered with an A2A error (its name and message are printed)
  2  usage error (bad arguments, no URL, unreadable --file or --data)
  3  the agent could not be reached (connection, an HTTP error that is no A2A error), or
     something timed out (--timeout, --idle-timeout): the message says what
  4  the agent's answer is not valid A2A or not acceptable: no usable agent card, a malformed
     response, an answer over a --max-*-bytes limit, a stream that ends before any event or
     sends an event of another task, a redirect or an interface on another host while
     credentials are set (see --share-credentials)
  5  the task ended FAILED, REJECTED or CANCELED (send, subscribe)
  130  Ctrl-C while the agent worked: the task runs on; the message says how to find it
  141  the reader of the output went away (`a2a list | head -1`), as SIGPIPE ends a command

Whatever the agent sends is shown as text, never interpreted by the terminal: control
characters and bidi controls are printed as escapes (\\x1b, \\u{202e}); --json prints exact
JSON with those characters as \\u escapes.

Environment: A2A_URL (the agent, when URL is left out), A2A_API_KEY, A2A_TOKEN.";

/// Call any A2A 1.0 agent: read its card, send messages, watch tasks, manage push
/// notifications, receive verified pushes, discover agents by skill.
#[derive(Debug, Parser)]
#[command(name = "a2a", version, after_help = EXIT_CODES)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Args)]
struct Global {
    /// Print JSON (one document, or one per line for streams) instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// The binding to prefer when the card offers both.
    #[arg(long, global = true, value_enum, default_value_t = BindingArg::Jsonrpc)]
    binding: BindingArg,
    /// API key to send, where the card's API key scheme says (a header or a query parameter),
    /// else in the header X-API-Key.
    #[arg(long, global = true, env = "A2A_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Send the API key in this header, whatever the card says.
    #[arg(long, global = true)]
    api_key_header: Option<String>,
    /// Bearer token to send (`Authorization: Bearer …`).
    #[arg(long, global = true, env = "A2A_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Seconds a request may take as a whole, a stream included (a blocking send or a stream
    /// lasts as long as the task); 0: no limit.
    #[arg(long, global = true, default_value_t = 300)]
    timeout: u64,
    /// Seconds a stream may send nothing at all, not even a keep-alive, before it counts as
    /// dropped and is resubscribed; 0: no limit.
    #[arg(long, global = true, default_value_t = 60)]
    idle_timeout: u64,
    /// The largest answer read that is not a stream (a result, an error, a card).
    #[arg(long, global = true, value_name = "BYTES", default_value_t = Limits::default().max_body_bytes)]
    max_body_bytes: usize,
    /// The largest event of a stream (and line of one).
    #[arg(long, global = true, value_name = "BYTES", default_value_t = Limits::default().max_event_bytes)]
    max_event_bytes: usize,
    /// The most a stream may carry in all.
    #[arg(long, global = true, value_name = "BYTES", default_value_t = Limits::default().max_stream_bytes)]
    max_stream_bytes: u64,
    /// Send the API key or token to other hosts too: those a redirect leads to, and the one the
    /// card names for its interface. By default they go only to the host of URL.
    #[arg(long, global = true)]
    share_credentials: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum BindingArg {
    /// JSON-RPC.
    Jsonrpc,
    /// HTTP+JSON (REST).
    Rest,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the agent's card.
    Card {
        /// The agent's base URL (or its card's URL); default $A2A_URL.
        url: Option<String>,
        /// Check the card's signature against the agent's own keys (its JWKS): exit code 4
        /// unless a signature verifies.
        #[arg(long)]
        verify: bool,
        /// The extended card instead (GetExtendedAgentCard; needs credentials).
        #[arg(long)]
        extended: bool,
    },
    /// Send a message; wait for the task to finish (or follow it live with --stream).
    Send(SendArgs),
    /// Print a task.
    Get {
        /// [URL] TASK_ID (URL defaults to $A2A_URL).
        #[arg(value_name = "[URL] TASK_ID", num_args = 1..=2, required = true)]
        args: Vec<String>,
        /// Wait until the task stops (a final state, or one that waits for input), printing
        /// it once then: long-polling where the agent offers A2A 1.1, else asking every second.
        #[arg(long)]
        wait: bool,
        /// How many history messages to include.
        #[arg(long)]
        history: Option<i32>,
        /// Print only the id of the trace the task was created in, which an a2a-lambda agent
        /// that exports spans keeps in the task's metadata (`x-a2a-lambda-trace-id`): look it
        /// up in the trace viewer.
        #[arg(long)]
        trace: bool,
    },
    /// List tasks, newest first.
    List {
        /// The agent's URL; default $A2A_URL.
        url: Option<String>,
        /// Only tasks of this context.
        #[arg(long)]
        context: Option<String>,
        /// Only tasks in this state (working, completed, TASK_STATE_FAILED, …).
        #[arg(long)]
        state: Option<String>,
        /// Tasks per page.
        #[arg(long)]
        page_size: Option<i32>,
        /// The page to read (nextPageToken of the page before).
        #[arg(long)]
        page_token: Option<String>,
    },
    /// Cancel a task.
    Cancel {
        /// [URL] TASK_ID (URL defaults to $A2A_URL).
        #[arg(value_name = "[URL] TASK_ID", num_args = 1..=2, required = true)]
        args: Vec<String>,
    },
    /// Follow a task's events until it stops.
    Subscribe {
        /// [URL] TASK_ID (URL defaults to $A2A_URL).
        #[arg(value_name = "[URL] TASK_ID", num_args = 1..=2, required = true)]
        args: Vec<String>,
    },
    /// Push notification configs, and a local receiver.
    #[command(subcommand)]
    Push(PushCommand),
    /// Find agents: read the cards of URLs or a registry file, filter by skill, tag or input mode.
    Discover(discover::DiscoverArgs),
}

#[derive(Debug, Args)]
struct SendArgs {
    /// [URL] TEXT (URL defaults to $A2A_URL); quote a message of several words.
    // More than two are taken, to say how to quote them rather than "unexpected argument".
    #[arg(value_name = "[URL] TEXT", num_args = 1.., required = true)]
    args: Vec<String>,
    /// Follow the task live: a status line and artifact text as it arrives.
    #[arg(long)]
    stream: bool,
    /// With --task: only if the task is still at this generation (A2A 1.1, as `get` prints
    /// it); a task that changed since refuses the message (TaskGenerationMismatchError).
    #[arg(long, requires = "task", value_name = "GENERATION")]
    if_generation: Option<i64>,
    /// Continue this task (a follow-up message).
    #[arg(long)]
    task: Option<String>,
    /// Send within this context.
    #[arg(long)]
    context: Option<String>,
    /// Attach a file (sent inline, base64).
    #[arg(long, value_name = "PATH")]
    file: Vec<PathBuf>,
    /// Attach a JSON value as a data part.
    #[arg(long, value_name = "JSON")]
    data: Vec<String>,
    /// Ask the agent to push the task's updates to this webhook URL.
    #[arg(long, value_name = "URL")]
    push: Option<String>,
    /// Token the agent echoes in each push (with --push).
    #[arg(long, requires = "push")]
    push_token: Option<String>,
    /// Return as soon as the task exists instead of waiting for it to finish.
    #[arg(long, conflicts_with = "stream")]
    no_wait: bool,
}

#[derive(Debug, Subcommand)]
enum PushCommand {
    /// Ask the agent to push a task's updates to a webhook.
    Set {
        /// [URL] TASK_ID WEBHOOK_URL (URL defaults to $A2A_URL).
        #[arg(value_name = "[URL] TASK_ID WEBHOOK_URL", num_args = 2..=3, required = true)]
        args: Vec<String>,
        /// Token the agent echoes in each push.
        #[arg(long)]
        push_token: Option<String>,
    },
    /// Print one push config.
    Get {
        /// [URL] TASK_ID CONFIG_ID (URL defaults to $A2A_URL).
        #[arg(value_name = "[URL] TASK_ID CONFIG_ID", num_args = 2..=3, required = true)]
        args: Vec<String>,
    },
    /// List a task's push configs.
    List {
        /// [URL] TASK_ID (URL defaults to $A2A_URL).
        #[arg(value_name = "[URL] TASK_ID", num_args = 1..=2, required = true)]
        args: Vec<String>,
    },
    /// Delete a push config.
    Delete {
        /// [URL] TASK_ID CONFIG_ID (URL defaults to $A2A_URL).
        #[arg(value_name = "[URL] TASK_ID CONFIG_ID", num_args = 2..=3, required = true)]
        args: Vec<String>,
    },
    /// Receive pushes on 127.0.0.1 and print each one that verifies (signature against the
    /// agent's JWKS, audience, expiry, body hash, replay). Refused pushes go to stderr.
    Listen {
        /// The agent whose pushes to accept (its base URL: the pushes' issuer); default $A2A_URL.
        url: Option<String>,
        /// Port to listen on (0: any free port; the URL is printed first).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1")]
        host: std::net::IpAddr,
        /// The URL the agent pushes to, if not http://HOST:PORT/webhook (a tunnel, a proxy).
        #[arg(long)]
        public_url: Option<String>,
        /// Stop after this many verified pushes.
        #[arg(long)]
        count: Option<usize>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.global.json;
    let credentials = cli.global.credentials();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            failure.report(json, credentials);
            ExitCode::from(failure.exit_code())
        }
    }
}

/// Where the card's API key scheme wants the key: `(name, in the query?)`.
fn api_key_scheme(card: &AgentCard) -> Option<(String, bool)> {
    card.security_schemes
        .values()
        .find_map(|scheme| match scheme {
            SecurityScheme::ApiKeySecurityScheme(v) => {
                let name = v["name"].as_str()?.to_string();
                Some((name, v["location"] == "query"))
            }
            _ => None,
        })
}

impl Global {
    /// The credentials the command sends (a token wins over an API key).
    fn credentials(&self) -> failure::Credentials {
        match (&self.token, &self.api_key) {
            (Some(_), _) => failure::Credentials::Token,
            (None, Some(_)) => failure::Credentials::ApiKey,
            (None, None) => failure::Credentials::None,
        }
    }

    /// A client builder; `card`, when known, says where an API key goes.
    fn builder_for(&self, card: Option<&AgentCard>) -> ClientBuilder {
        let auth = match (&self.token, &self.api_key) {
            (Some(token), _) => Auth::bearer(token),
            (None, Some(key)) => match (&self.api_key_header, card.and_then(api_key_scheme)) {
                (Some(header), _) => Auth::api_key_header(header, key),
                (None, Some((name, true))) => Auth::api_key_query(name, key),
                (None, Some((name, false))) => Auth::api_key_header(name, key),
                (None, None) => Auth::api_key_header("X-API-Key", key),
            },
            (None, None) => Auth::None,
        };
        let preference = match self.binding {
            BindingArg::Jsonrpc => [Binding::JsonRpc, Binding::HttpJson],
            BindingArg::Rest => [Binding::HttpJson, Binding::JsonRpc],
        };
        let seconds = |s: u64| (s > 0).then(|| Duration::from_secs(s));
        Client::builder()
            .auth(auth)
            .timeout(seconds(self.timeout))
            .stream_timeout(seconds(self.timeout))
            .idle_timeout(seconds(self.idle_timeout))
            .limits(Limits {
                max_body_bytes: self.max_body_bytes,
                max_event_bytes: self.max_event_bytes,
                max_stream_bytes: self.max_stream_bytes,
            })
            .share_credentials(self.share_credentials)
            .prefer(&preference)
    }

    fn builder(&self) -> ClientBuilder {
        self.builder_for(None)
    }

    /// Reads the card (public: no API key needed yet) and connects as it says, with the
    /// credentials for the host of `url` only.
    async fn connect(&self, url: &str) -> Result<Client, Failure> {
        let fetched = self.builder().card_resolver()?.resolve(url).await?;
        Ok(self
            .builder_for(Some(&fetched.card))
            .for_fetched_card(fetched)?)
    }
}

fn parse_state(text: &str) -> Result<TaskState, Failure> {
    let upper = text.to_ascii_uppercase().replace('-', "_");
    let full = if upper.starts_with("TASK_STATE_") {
        upper
    } else {
        format!("TASK_STATE_{upper}")
    };
    TaskState::parse(&full).ok_or_else(|| Failure::Usage(format!("unknown task state {text:?}")))
}

/// `get --trace`: the task's trace id on stdout, or, when it has none, why on stderr.
fn print_trace_id(task: &a2a_client::Task) {
    let id = task
        .metadata
        .as_ref()
        .and_then(|m| m.get(a2a_client::TRACE_ID_METADATA))
        .and_then(Value::as_str)
        .filter(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()));
    match id {
        Some(id) => out!("{id}"),
        None => eprintln!(
            "the task carries no trace id: its agent exports no spans (docs/tracing.md), or \
             is no a2a-lambda agent"
        ),
    }
}

async fn run(cli: Cli) -> Outcome {
    let g = &cli.global;
    let out = render::Printer::new(g.json);
    match cli.command {
        Command::Card {
            url,
            verify,
            extended,
        } => {
            let url = or_env(url)?;
            let resolver = g.builder().card_resolver()?;
            let mut fetched = resolver.resolve(&url).await?;
            if extended {
                fetched.card = g.connect(&url).await?.get_extended_agent_card().await?;
            }
            let verified = if verify {
                Some(resolver.verify(&fetched).await?)
            } else {
                None
            };
            out.card(&fetched.card);
            out.card_signature(&fetched.card, verified.as_ref());
            Ok(())
        }
        Command::Send(args) => send(g, &out, args).await,
        Command::Get {
            args,
            wait,
            history,
            trace,
        } => {
            let (url, rest) = url_and("get", &args, &["TASK_ID"])?;
            let client = g.connect(&url).await?;
            let get = GetTaskRequest {
                id: rest[0].clone(),
                history_length: history,
                ..GetTaskRequest::default()
            };
            let mut task = client.get_task(get.clone()).await?;
            while wait && !stopped(task.status.state) {
                // A generation of 0 is a server that does not keep them: no long-poll there.
                task = if client.speaks_1_1() && task.generation > 0 {
                    let mut poll = get.clone();
                    poll.current_generation = Some(task.generation);
                    client.get_task(poll).await?
                } else {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    client.get_task(get.clone()).await?
                };
            }
            if trace {
                print_trace_id(&task);
            } else {
                out.task(&task);
            }
            if wait {
                return finished(task.status.state);
            }
            Ok(())
        }
        Command::List {
            url,
            context,
            state,
            page_size,
            page_token,
        } => {
            let client = g.connect(&or_env(url)?).await?;
            let page = client
                .list_tasks(ListTasksRequest {
                    context_id: context.unwrap_or_default(),
                    status: state.as_deref().map(parse_state).transpose()?,
                    page_size,
                    page_token: page_token.unwrap_or_default(),
                    ..ListTasksRequest::default()
                })
                .await?;
            out.task_list(&page);
            Ok(())
        }
        Command::Cancel { args } => {
            let (url, rest) = url_and("cancel", &args, &["TASK_ID"])?;
            let client = g.connect(&url).await?;
            let task = client
                .cancel_task(CancelTaskRequest {
                    id: rest[0].clone(),
                    ..CancelTaskRequest::default()
                })
                .await?;
            out.task(&task);
            Ok(())
        }
        Command::Subscribe { args } => {
            let (url, rest) = url_and("subscribe", &args, &["TASK_ID"])?;
            let client = g.connect(&url).await?;
            let request = SubscribeToTaskRequest {
                id: rest[0].clone(),
                ..SubscribeToTaskRequest::default()
            };
            match client.subscribe_to_task(request, None).await {
                Ok(events) => follow(&out, events, &url).await,
                Err(Error::Agent(e)) if matches!(e.error, A2AError::UnsupportedOperation(_)) => {
                    ended(&client, &out, &url, &rest[0], Error::Agent(e)).await
                }
                Err(e) => Err(e.into()),
            }
        }
        Command::Push(command) => push(g, &out, command).await,
        Command::Discover(args) => discover::run(g.builder(), &out, args).await,
    }
}

async fn send(g: &Global, out: &render::Printer, args: SendArgs) -> Outcome {
    let (url, rest) = url_and("send", &args.args, &["TEXT"])?;
    let client = g.connect(&url).await?;
    let mut request = client.text(&rest[0]);
    let message = request.message.as_mut().expect("text() sets a message");
    message.task_id = args.task.unwrap_or_default();
    message.context_id = args.context.unwrap_or_default();
    for path in &args.file {
        let bytes = tokio::fs::read(path)
            .await
            .map_err(|e| Failure::Usage(format!("cannot read {}: {e}", path.display())))?;
        let mut part = Part::raw(bytes);
        part.filename = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        part.media_type = media_type(path).into();
        message.parts.push(part);
    }
    for data in &args.data {
        let value: Value = serde_json::from_str(data)
            .map_err(|e| Failure::Usage(format!("--data is not JSON ({e}): {data}")))?;
        message.parts.push(Part::data(value));
    }
    if args.if_generation.is_some() && !client.speaks_1_1() {
        return Err(Failure::Usage(
            "--if-generation needs an agent that offers A2A 1.1 (its card lists no 1.1 \
             interface)"
                .into(),
        ));
    }
    let mut configuration = SendMessageConfiguration {
        return_immediately: args.no_wait,
        if_generation_match: args.if_generation,
        ..SendMessageConfiguration::default()
    };
    if let Some(push_url) = args.push {
        configuration.task_push_notification_config = Some(TaskPushNotificationConfig {
            url: push_url,
            token: args.push_token.unwrap_or_default(),
            ..TaskPushNotificationConfig::default()
        });
    }
    request.configuration = Some(configuration);
    if args.stream {
        let events = client.send_streaming_message(request);
        let events = until_interrupted(events, || unanswered(&url)).await??;
        return follow(out, events, &url).await;
    }
    let response = until_interrupted(client.send_message(request), || unanswered(&url)).await??;
    out.send_response(&response);
    match response {
        SendMessageResponse::Task(task) => finished(task.status.state),
        SendMessageResponse::Message(_) => Ok(()),
    }
}

fn media_type(path: &std::path::Path) -> &'static str {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("txt" | "md") => "text/plain",
        Some("json") => "application/json",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("pdf") => "application/pdf",
        Some("csv") => "text/csv",
        _ => "application/octet-stream",
    }
}

async fn push(g: &Global, out: &render::Printer, command: PushCommand) -> Outcome {
    match command {
        PushCommand::Set { args, push_token } => {
            let (url, rest) = url_and("push set", &args, &["TASK_ID", "WEBHOOK_URL"])?;
            let client = g.connect(&url).await?;
            let config = client
                .set_push(&rest[0], &rest[1], push_token.as_deref())
                .await?;
            out.push_config(&config);
        }
        PushCommand::Get { args } => {
            let (url, rest) = url_and("push get", &args, &["TASK_ID", "CONFIG_ID"])?;
            let client = g.connect(&url).await?;
            let config = client
                .get_push_config(TaskPushNotificationConfigRef {
                    task_id: rest[0].clone(),
                    id: rest[1].clone(),
                    ..TaskPushNotificationConfigRef::default()
                })
                .await?;
            out.push_config(&config);
        }
        PushCommand::List { args } => {
            let (url, rest) = url_and("push list", &args, &["TASK_ID"])?;
            let client = g.connect(&url).await?;
            let list = client
                .list_push_configs(ListTaskPushNotificationConfigsRequest {
                    task_id: rest[0].clone(),
                    ..ListTaskPushNotificationConfigsRequest::default()
                })
                .await?;
            out.push_configs(&list);
        }
        PushCommand::Delete { args } => {
            let (url, rest) = url_and("push delete", &args, &["TASK_ID", "CONFIG_ID"])?;
            let client = g.connect(&url).await?;
            client
                .delete_push_config(TaskPushNotificationConfigRef {
                    task_id: rest[0].clone(),
                    id: rest[1].clone(),
                    ..TaskPushNotificationConfigRef::default()
                })
                .await?;
            out.deleted(&rest[0], &rest[1]);
        }
        PushCommand::Listen {
            url,
            port,
            host,
            public_url,
            count,
        } => {
            let agent = or_env(url)?;
            let mut receiver =
                WebhookReceiver::start(SocketAddr::new(host, port), &agent, public_url)
                    .await
                    .map_err(|e| match e {
                        // The one usage error of a start: the address it cannot listen on.
                        Error::Usage(m) => Failure::Usage(format!(
                            "{m}; choose another port with --port (0: any free one)"
                        )),
                        e => e.into(),
                    })?;
            out.listening(receiver.url());
            let mut verified = 0;
            while count.is_none_or(|n| verified < n) {
                tokio::select! {
                    delivery = receiver.next() => match delivery {
                        None => break,
                        Some(Ok(push)) => {
                            verified += 1;
                            out.push(&push);
                        }
                        Some(Err(refused)) => {
                            eprintln!("refused a push: {}", error_text(&refused.reason))
                        }
                    },
                    _ = tokio::signal::ctrl_c() => break,
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn states_parse_in_short_and_full_form() {
        assert_eq!(parse_state("working").unwrap(), TaskState::Working);
        assert_eq!(
            parse_state("input-required").unwrap(),
            TaskState::InputRequired
        );
        assert_eq!(parse_state("TASK_STATE_FAILED").unwrap(), TaskState::Failed);
        assert!(parse_state("sleeping").is_err());
    }
}
