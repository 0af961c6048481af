//! The `ikigai` host (host-architecture.md; spec README, decisions 1, 2, 8,
//! 9, 11 and 18-21): it finds tools in directories, runs them as
//! subprocesses with deadlines, wraps their answers in envelopes, and formats
//! their schemas for each model provider. It never runs a tool in-process:
//! whoever wrote a tool, our links or a shell script, it is a file to run.
//!
//! This front turns the command line into a `Config`, discovers the
//! registry, and runs one command:
//!
//! - `ikigai tools [--json] [NAME]`: the registry, the skipped files, one tool;
//! - `ikigai schema --provider P`: the tools array for provider P;
//! - `ikigai call NAME [ARGS_JSON]`: one call, printing the envelope;
//! - no command: the assistant (`assistant.rs`, issue 5): a conversation
//!   with a model that calls the tools, at a prompt, on lines from a
//!   non-terminal stdin, or once with `-p`; `/` lines are commands
//!   (`commands.rs`).

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use argh::FromArgs;
use serde_json::json;

pub mod child;
pub mod commands;
pub mod config;
pub mod discovery;
pub mod envelope;
pub mod exec;
pub mod provider;
pub mod registry;
pub mod schema;

mod assistant;
mod conversation;
mod keys;
mod model;
mod session;
mod signals;
mod terminal;
mod text;
mod tool_host;

use config::{parse_size, parse_timeout, Config, Overrides};
use provider::ProviderKind;
use registry::Registry;

#[derive(FromArgs, Debug)]
/// ikigai: the host of the ikigai tools. It discovers tools (executables
/// that answer --schema or --describe) in the system and user tool
/// directories, runs them as subprocesses and wraps their answers for a
/// model. With no command it is the assistant: a conversation with a model
/// that calls those tools (-p for one message; lines on a non-terminal
/// stdin are messages or /commands). Options come before the command.
pub struct Ikigai {
    /// directory of system tools (default: $IKIGAI_LIBEXEC_DIR, else
    /// PREFIX/libexec/ikigai next to this program's bin directory)
    #[argh(option, arg_name = "DIR")]
    pub libexec_dir: Option<PathBuf>,

    /// directory of user tools, which shadow system tools of the same name
    /// (default: $IKIGAI_TOOLS_DIR, else ~/.ikigai/tools)
    #[argh(option, arg_name = "DIR")]
    pub tools_dir: Option<PathBuf>,

    /// seconds a tool call may run before its whole process group is
    /// killed (default 30; fractions allowed)
    #[argh(option, from_str_fn(parse_timeout), arg_name = "SECONDS")]
    pub timeout: Option<Duration>,

    /// bytes kept of each of a tool call's stdout and stderr; the rest is
    /// drained and counted (default 1M; K, M, G suffixes allowed)
    #[argh(option, from_str_fn(parse_size), arg_name = "BYTES")]
    pub max_output: Option<usize>,

    /// the assistant's model provider: openai, anthropic, google or stub
    /// (default: $IKIGAI_PROVIDER, else the first that has a key)
    #[argh(option, arg_name = "NAME")]
    pub provider: Option<String>,

    /// the assistant's model (default: $IKIGAI_MODEL, else the provider's)
    #[argh(option, arg_name = "MODEL")]
    pub model: Option<String>,

    /// send this one message, print the answer, and leave
    #[argh(option, short = 'p', arg_name = "MESSAGE")]
    pub prompt: Option<String>,

    /// continue the latest session, or the session whose ID follows
    /// (--resume ID)
    #[argh(switch)]
    pub resume: bool,

    /// tool rounds allowed per message before the assistant stops and
    /// asks (default 25)
    #[argh(option, arg_name = "N")]
    pub max_tool_rounds: Option<usize>,

    #[argh(subcommand)]
    pub command: Option<Subcommand>,
}

impl Ikigai {
    /// The options that override the environment.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            libexec_dir: self.libexec_dir.clone(),
            tools_dir: self.tools_dir.clone(),
            timeout: self.timeout,
            max_output: self.max_output,
        }
    }
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum Subcommand {
    Tools(ToolsCommand),
    Schema(SchemaCommand),
    Call(CallCommand),
}

#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "tools")]
/// list the discovered tools (name, description, path, protocol) and the
/// skipped files with the reason, or show one tool.
pub struct ToolsCommand {
    /// print JSON: {"tools": [{name, description, path, protocol}], "skipped":
    /// [{path, reason}]}, or one tool's entry with its schema
    #[argh(switch)]
    pub json: bool,

    /// the tool to show
    #[argh(positional)]
    pub name: Option<String>,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "schema")]
/// print the tools array in a model provider's format.
pub struct SchemaCommand {
    /// openai (Chat Completions), openai-responses, anthropic or google
    /// (or gemini; any case)
    #[argh(option)]
    pub provider: ProviderKind,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "call")]
/// run one tool through the registry and print its envelope as the model
/// would receive it; exit 0 when tool_success is true, 1 otherwise.
pub struct CallCommand {
    /// the tool's name (as in its schema)
    #[argh(positional)]
    pub name: String,

    /// the arguments, a JSON object (default: read from stdin)
    #[argh(positional)]
    pub arguments: Option<String>,
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    let mut words = Vec::with_capacity(args.len());
    for arg in args {
        match arg.into_string() {
            Ok(word) => words.push(word),
            Err(bad) => {
                eprintln!("ikigai: argument is not UTF-8: {}", bad.to_string_lossy());
                return ExitCode::from(2);
            }
        }
    }
    // `--resume` takes an optional ID, which argh cannot say.
    let (words, resume_id) = assistant::take_resume_id(words, &["tools", "schema", "call"]);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let cli = match Ikigai::from_args(&["ikigai"], &words) {
        Ok(cli) => cli,
        Err(exit) => {
            return match exit.status {
                Ok(()) => {
                    print!("{}", exit.output);
                    ExitCode::SUCCESS
                }
                Err(()) => {
                    eprintln!("{}", exit.output.trim_end());
                    eprintln!("Run ikigai --help for the commands and options.");
                    ExitCode::from(2)
                }
            };
        }
    };
    // Discovery holds three descriptors per probe in flight.
    discovery::raise_open_file_limit();
    let config = Config::from_process(cli.overrides());
    match cli.command {
        Some(Subcommand::Tools(cmd)) => tools(&config, &cmd),
        Some(Subcommand::Schema(cmd)) => {
            let registry = discovery::discover(&config);
            let left_out = provider::left_out(cmd.provider, &registry);
            if !left_out.is_empty() {
                eprintln!("ikigai: {}", provider::left_out_notice(&left_out));
            }
            let array = provider::tools_array(cmd.provider, &registry);
            say(&pretty(&array));
            ExitCode::SUCCESS
        }
        Some(Subcommand::Call(cmd)) => call(&config, &cmd),
        None => {
            if cli.prompt.as_ref().is_some_and(|p| p.trim().is_empty()) {
                eprintln!("ikigai: -p needs a message; it is empty");
                eprintln!("Run ikigai --help for the commands and options.");
                return ExitCode::from(2);
            }
            let options = assistant::Options {
                provider: cli.provider,
                model: cli.model,
                prompt: cli.prompt,
                resume: cli.resume.then_some(resume_id),
                max_tool_rounds: cli
                    .max_tool_rounds
                    .unwrap_or(assistant::DEFAULT_MAX_TOOL_ROUNDS),
            };
            // Discovery runs in the background: the prompt appears at once.
            let tools = tool_host::Tools::start(config);
            assistant::run(options, &tools, &mut &tools)
        }
    }
}

fn tools(config: &Config, cmd: &ToolsCommand) -> ExitCode {
    let registry = discovery::discover(config);
    let Some(name) = &cmd.name else {
        say(&if cmd.json {
            pretty(&registry.to_json())
        } else {
            table(&registry, config)
        });
        return ExitCode::SUCCESS;
    };
    match registry.lookup(name) {
        Some(e) if cmd.json => {
            say(&pretty(&json!({
                "name": e.name,
                "description": e.description,
                "path": e.path.to_string_lossy(),
                "protocol": e.protocol.as_str(),
                "origin": e.origin.as_str(),
                "schema": e.schema,
            })));
            ExitCode::SUCCESS
        }
        Some(e) => {
            say(&commands::inspect(e));
            ExitCode::SUCCESS
        }
        None => {
            eprintln!("Unknown tool: '{name}'. Use ikigai tools to see available tools.");
            ExitCode::FAILURE
        }
    }
}

/// `ikigai tools`: one aligned line per tool, the skipped files, and where
/// the host looked.
fn table(registry: &Registry, config: &Config) -> String {
    let rows: Vec<[String; 4]> = registry
        .entries()
        .iter()
        .map(|e| {
            [
                e.name.clone(),
                e.protocol.as_str().to_string(),
                e.path.display().to_string(),
                text::one_line(&e.description),
            ]
        })
        .collect();
    let mut text = if rows.is_empty() {
        "No tools available".to_string()
    } else {
        let header = ["NAME", "PROTOCOL", "PATH", "DESCRIPTION"].map(String::from);
        let width = |i: usize| {
            rows.iter()
                .chain([&header])
                .map(|r| r[i].len())
                .max()
                .unwrap_or(0)
        };
        let (w0, w1, w2) = (width(0), width(1), width(2));
        [&header]
            .into_iter()
            .chain(&rows)
            .map(|r| format!("{:w0$}  {:w1$}  {:w2$}  {}", r[0], r[1], r[2], r[3]))
            .collect::<Vec<_>>()
            .join("\n")
    };
    if !registry.skipped().is_empty() {
        text += "\nSkipped:";
        for s in registry.skipped() {
            text += &format!("\n  {}: {}", s.path.display(), s.reason);
        }
    }
    let dirs: Vec<String> = [
        (config.system_dir.as_ref(), "system"),
        (config.user_dir.as_ref(), "user"),
    ]
    .into_iter()
    .filter_map(|(d, what)| Some(format!("{} ({what})", d?.display())))
    .collect();
    text + &format!("\nSearched: {}", dirs.join(", "))
}

fn call(config: &Config, cmd: &CallCommand) -> ExitCode {
    let arguments = match &cmd.arguments {
        Some(text) => text.clone(),
        None => {
            let mut buf = Vec::new();
            if let Err(e) = io::stdin().read_to_end(&mut buf) {
                eprintln!("ikigai: cannot read the arguments from stdin: {e}");
                return ExitCode::from(2);
            }
            String::from_utf8_lossy(&buf).into_owned()
        }
    };
    // The tool runs in its own process group, so the host must kill it on
    // Ctrl-C, SIGTERM or SIGHUP, and then end with 128+N.
    signals::install(true);
    // Discovery is guarded too: a signal during it lets its probes end
    // (within the deadline) instead of leaving them, and runs no tool.
    let outcome = signals::guarded(|cancel| {
        let registry = discovery::discover(config);
        (!cancel.load(std::sync::atomic::Ordering::SeqCst)).then(|| {
            exec::call_text(
                &registry,
                &cmd.name,
                &arguments,
                &config.limits,
                Some(cancel),
            )
        })
    });
    let Some(outcome) = outcome else {
        signals::end_if_signalled();
        return ExitCode::FAILURE;
    };
    {
        let mut err = io::stderr().lock();
        for event in &outcome.events {
            let _ = writeln!(err, "{event}");
        }
    }
    say(&outcome.envelope.to_string());
    signals::end_if_signalled();
    if outcome.success {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// Prints one block and a newline; a reader that went away is not an error.
fn say(text: &str) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}
