//! The `ikigai` host (host-architecture.md; spec README, decisions 1, 2, 8,
//! 9, 11 and 18-21): it finds tools in directories, runs them as
//! subprocesses with deadlines, wraps their answers in envelopes, and formats
//! their schemas for each model provider. It never runs a tool in-process:
//! whoever wrote a tool, our links or a shell script, it is a file to run.
//!
//! This front turns the command line into a `Settings`, discovers the
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
use std::process::ExitCode;

use argh::FromArgs;
use serde_json::json;

pub mod call;
pub mod child;
pub mod cli;
pub mod discovery;
pub mod envelope;
pub mod format;
pub mod listing;
pub mod registry;
pub mod schema;
pub mod settings;
pub mod signals;
pub mod text;

use cli::{CallCommand, Ikigai, Subcommand, ToolsCommand};
use settings::Settings;

use crate::exit;

/// What the host leaves to its caller once the command line is read.
pub enum Start {
    /// A host command ran (or the command line was wrong): exit with this.
    Done(ExitCode),
    /// No subcommand: the assistant runs, with these options and settings
    /// and the ID that followed `--resume`, if any.
    Assistant(Box<Ikigai>, Settings, Option<String>),
}

pub fn main(args: Vec<OsString>) -> Start {
    let mut words = Vec::with_capacity(args.len());
    for arg in args {
        match arg.into_string() {
            Ok(word) => words.push(word),
            Err(bad) => {
                eprintln!("ikigai: argument is not UTF-8: {}", bad.to_string_lossy());
                return Start::Done(ExitCode::from(exit::USAGE));
            }
        }
    }
    // `--resume` takes an optional ID, which argh cannot say.
    let (words, resume_id) = cli::take_resume_id(words, cli::SUBCOMMANDS);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let cli = match Ikigai::from_args(&["ikigai"], &words) {
        Ok(cli) => cli,
        Err(exit) => {
            return Start::Done(match exit.status {
                Ok(()) => {
                    print!("{}", exit.output);
                    ExitCode::SUCCESS
                }
                Err(()) => usage_error(exit.output.trim_end()),
            });
        }
    };
    // Discovery holds three descriptors per probe in flight.
    discovery::raise_open_file_limit();
    let settings = Settings::from_process(cli.overrides());
    Start::Done(match &cli.command {
        Some(Subcommand::Tools(cmd)) => tools(&settings, cmd),
        Some(Subcommand::Schema(cmd)) => {
            let registry = discovery::discover(&settings);
            let left_out = format::left_out(cmd.provider, &registry);
            if !left_out.is_empty() {
                eprintln!("ikigai: {}", format::left_out_notice(&left_out));
            }
            let array = format::tools_array(cmd.provider, &registry);
            say(&pretty(&array));
            ExitCode::SUCCESS
        }
        Some(Subcommand::Call(cmd)) => call(&settings, cmd),
        None if cli.prompt.as_ref().is_some_and(|p| p.trim().is_empty()) => {
            usage_error("ikigai: -p needs a message; it is empty")
        }
        None => return Start::Assistant(Box::new(cli), settings, resume_id),
    })
}

/// Says what was wrong with the command line and how to learn the right one.
pub fn usage_error(what: &str) -> ExitCode {
    eprintln!("{what}");
    eprintln!("Run ikigai --help for the commands and options.");
    ExitCode::from(exit::USAGE)
}

fn tools(settings: &Settings, cmd: &ToolsCommand) -> ExitCode {
    let registry = discovery::discover(settings);
    let Some(name) = &cmd.name else {
        say(&if cmd.json {
            pretty(&registry.to_json())
        } else {
            listing::table(&registry, settings)
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
            say(&listing::inspect(e));
            ExitCode::SUCCESS
        }
        None => {
            eprintln!("Unknown tool: '{name}'. Use ikigai tools to see available tools.");
            ExitCode::FAILURE
        }
    }
}

fn call(settings: &Settings, cmd: &CallCommand) -> ExitCode {
    let arguments = match &cmd.arguments {
        Some(text) => text.clone(),
        None => {
            let mut buf = Vec::new();
            if let Err(e) = io::stdin().read_to_end(&mut buf) {
                eprintln!("ikigai: cannot read the arguments from stdin: {e}");
                return ExitCode::from(exit::USAGE);
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
        let registry = discovery::discover(settings);
        (!cancel.load(std::sync::atomic::Ordering::SeqCst)).then(|| {
            call::call_text(
                &registry,
                &cmd.name,
                &arguments,
                &settings.limits,
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
    // Before a signal ends us: an MCP server is told of a cancelled call.
    crate::mcp::client::stop_all();
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
