//! The `ikigai` host: discovers tools, runs them as subprocesses and talks to
//! a model (host-architecture.md). Built in its own issue.
//!
//! Until the host lands, `ikigai` runs the assistant with no tools.

mod assistant;
mod conversation;
mod keys;
mod model;
mod session;
mod terminal;

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use argh::FromArgs;
use serde_json::{json, Value};

/// ikigai: the assistant.
#[derive(FromArgs)]
struct Args {
    /// the model provider: openai, anthropic, google or stub
    #[argh(option)]
    provider: Option<String>,
    /// the model
    #[argh(option)]
    model: Option<String>,
    /// one message, answered to completion
    #[argh(option, short = 'p')]
    prompt: Option<String>,
    /// at most this many tool rounds per message (default 25)
    #[argh(option, default = "assistant::DEFAULT_MAX_TOOL_ROUNDS")]
    max_tool_rounds: usize,
}

struct NoTools;

impl conversation::ToolHost for NoTools {
    fn tools_array(&self, _: model::ToolFormat) -> Value {
        json!([])
    }
    fn call(&self, name: &str, _: &Value, _: Option<&AtomicBool>) -> conversation::ToolOutcome {
        conversation::ToolOutcome {
            envelope: json!({"tool_success": false, "error": format!("Tool '{name}' not found"), "error_code": "TOOL_NOT_FOUND"}),
            events: vec![],
        }
    }
}

struct Quit;

impl terminal::Commands for Quit {
    fn run(&mut self, line: &str) -> bool {
        line != "/quit"
    }
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let (args, resume) = assistant::split_resume(args, &[]);
    let strs: Vec<&str> = args.iter().map(String::as_str).collect();
    let parsed = match Args::from_args(&["ikigai"], &strs) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{}", e.output);
            return if e.status.is_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            };
        }
    };
    let options = assistant::Options {
        provider: parsed.provider,
        model: parsed.model,
        prompt: parsed.prompt,
        resume,
        max_tool_rounds: parsed.max_tool_rounds,
    };
    assistant::run(options, &NoTools, &mut Quit)
}
