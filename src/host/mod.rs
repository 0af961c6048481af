//! The `ikigai` host (decisions 1, 2, 8, 9, 11 and 18-21): it finds tools in
//! directories, runs them as subprocesses with deadlines, wraps their answers
//! in envelopes, and formats their schemas for each model provider. It never
//! runs a tool in-process: whoever wrote a tool, our links or a shell script,
//! it is a file to run.
//!
//! This front turns the command line into a `Settings`, discovers the
//! registry, and runs one command:
//!
//! - `ikigai tools [--json] [NAME]`: the registry, the skipped files, one tool;
//! - `ikigai schema --provider P`: the tools array for provider P;
//! - `ikigai call NAME [ARGS_JSON]`: one call, printing the envelope;
//! - no command: `Start::Assistant`, which the front hands to the assistant
//!   (`src/assistant/`): a conversation with a model that calls the tools.

use std::ffi::OsString;
use std::io::{self, IsTerminal, Read, Write};
use std::process::ExitCode;

use argh::FromArgs;
use serde_json::json;

pub mod call;
pub mod child;
pub mod cli;
pub mod discovery;
pub mod envelope;
pub mod files;
pub mod for_model;
pub mod format;
pub mod jobs;
pub mod listing;
pub mod own;
pub mod registry;
pub mod schema;
pub mod settings;
pub mod signals;
mod spawned;
pub mod text;

use cli::{CallCommand, Ikigai, SandboxAction, Subcommand, ToolsCommand};
use settings::Settings;

use crate::out::say;

use crate::config::Config;
use crate::exit;
use crate::sandbox::Support;
use crate::tool::Env;

/// What the host leaves to its caller once the command line is read.
pub enum Start {
    /// A host command ran (or the command line was wrong): exit with this.
    Done(ExitCode),
    /// No subcommand (or `acp`): the assistant runs, with these options and settings,
    /// the ID that followed `--resume`, if any, and the config file.
    Assistant(Box<Ikigai>, Box<Settings>, Option<String>, Box<Config>),
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
    if matches!(words.first().map(String::as_str), Some("--version" | "-V")) {
        say(&format!("ikigai {}", env!("CARGO_PKG_VERSION")));
        return Start::Done(ExitCode::SUCCESS);
    }
    let words = cli::short_help(words);
    let (words, resume_id) = cli::take_resume_id(words, cli::SUBCOMMANDS);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let cli = match Ikigai::from_args(&["ikigai"], &words) {
        Ok(cli) => cli,
        Err(exit) => {
            return Start::Done(match exit.status {
                Ok(()) => {
                    crate::out::print_out(exit.output.as_bytes(), false);
                    ExitCode::SUCCESS
                }
                Err(()) => usage_error(&format!(
                    "{}{}",
                    exit.output.trim_end(),
                    cli::suggestion(exit.output.trim_end())
                )),
            });
        }
    };
    keep_memory_private();
    // Read before anything runs, so a mistake in it stops every command.
    let config = match crate::config::load(&crate::tool::Env::from_process()) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("ikigai: config: {e}");
            return Start::Done(ExitCode::from(exit::USAGE));
        }
    };
    // Discovery holds three descriptors per probe in flight.
    discovery::raise_open_file_limit();
    let mut overrides = cli.overrides();
    let single_call = matches!(cli.command, Some(Subcommand::Call(_)));
    match settings::sandbox_mode(
        cli.sandbox,
        &Env::from_process(),
        config.sandbox,
        single_call,
    ) {
        Ok(mode) => overrides.sandbox = Some(mode),
        Err(e) => return Start::Done(usage_error(&format!("ikigai: {e}"))),
    }
    // The file adds to the options: its directories beside --add-dir, its
    // network switch beside --network, its per-tool environment.
    for dir in &config.add_dirs {
        match settings::parse_dir(&dir.value.to_string_lossy()) {
            Ok(dir) => overrides.add_dirs.push(dir),
            Err(e) => {
                let e = config.error("add_dirs", Some(dir.line), &e);
                return Start::Done(usage_error(&format!("ikigai: config: {e}")));
            }
        }
    }
    overrides.network |= config.network.unwrap_or(false);
    let mut settings = Settings::from_process(overrides);
    settings.sandbox.spawner = !single_call;
    settings.tool_env = config
        .tools
        .iter()
        .map(|(name, tool)| (name.clone(), tool.env.clone()))
        .collect();
    // The secret paths and sockets: the file's and the options add up.
    let env = Env::from_process();
    let guard = &mut settings.sandbox.guard;
    let added = settings::add_guard_paths(
        guard,
        &config,
        &cli.allow_read,
        &cli.allow_unix_socket,
        &env,
    );
    if let Err(e) = added {
        return Start::Done(usage_error(&format!("ikigai: {e}")));
    }
    settings.sandbox.take_limits(&config);
    let runs_tools = matches!(
        cli.command,
        None | Some(Subcommand::Call(_) | Subcommand::Acp(_))
    );
    if let (true, Some(gap)) = (runs_tools, &settings.sandbox.unavailable) {
        // Said once, here; every call then runs with what the kernel has.
        eprintln!("ikigai: warning: {gap}; tool calls run with only what it supports");
    }
    if runs_tools {
        for gap in &settings.sandbox.guard_gaps {
            eprintln!("ikigai: warning: {gap}");
        }
        // The ACP agent's workspace is its first session's, told then.
        let acp = matches!(cli.command, Some(Subcommand::Acp(_)));
        if let Some(warning) = wide_workspace(&settings.sandbox, &env).filter(|_| !acp) {
            eprintln!("ikigai: warning: {warning}");
        }
        for server in
            crate::mcp::client::unfenced(settings.mcp_config.as_deref(), settings.sandbox.mode)
        {
            eprintln!(
                "ikigai: warning: MCP server '{server}' runs unsandboxed, with your rights \
                 (\"sandbox\": \"off\" in its entry)"
            );
        }
    }
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
        Some(Subcommand::Sandbox(cmd)) => match cmd.action {
            SandboxAction::Check(_) => {
                let sandbox = &settings.sandbox;
                let fence = sandbox.fence("bash", false);
                let scope = match fence.scope() {
                    Some(spec) => crate::sandbox::scope::trial(&spec).map(|()| spec.bus),
                    None => Err("no session bus: DBUS_SESSION_BUS_ADDRESS is unset and \
                                 $XDG_RUNTIME_DIR/bus is not a socket"
                        .to_string()),
                };
                let report = Support::detect().report(
                    &sandbox.writable(),
                    &sandbox.guard,
                    &sandbox.limits,
                    &scope,
                );
                crate::out::print_out(report.as_bytes(), false);
                ExitCode::SUCCESS
            }
        },
        None if cli.prompt.as_ref().is_some_and(|p| p.trim().is_empty()) => {
            usage_error("ikigai: -p needs a message; it is empty")
        }
        Some(Subcommand::Acp(_)) if cli.prompt.is_some() || cli.resume => usage_error(
            "ikigai: acp takes its messages and sessions from the editor: -p and --resume \
             do not apply",
        ),
        None | Some(Subcommand::Acp(_)) => {
            return Start::Assistant(
                Box::new(cli),
                Box::new(settings),
                resume_id,
                Box::new(config),
            )
        }
    })
}

/// The start line's warning when the workspace is the home directory or
/// `/` in workspace-write (decision 76): tools may then write anywhere
/// under it but the few read-only paths.
pub fn wide_workspace(sandbox: &settings::SandboxSettings, env: &Env) -> Option<String> {
    if sandbox.mode != crate::sandbox::Mode::WorkspaceWrite {
        return None;
    }
    let home = env.home().and_then(|h| h.canonicalize().ok());
    let ws = &sandbox.workspace;
    let which = if ws.as_path() == std::path::Path::new("/") {
        "the root directory"
    } else if home.as_ref() == Some(ws) {
        "your home directory"
    } else {
        return None;
    };
    Some(format!(
        "the working directory is {which} ({}): tools may write anywhere under it \
         (only ikigai's own files, shell start-up files and .git/hooks stay read-only); \
         consider --sandbox read-only",
        ws.display()
    ))
}

/// Makes this process non-dumpable: a tool running as the same user can
/// then neither read the host's memory or environment (the keys) through
/// /proc nor attach a debugger to it.
pub fn keep_memory_private() {
    // SAFETY: prctl(PR_SET_DUMPABLE) only changes a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// Says what was wrong with the command line and how to learn the right one.
pub fn usage_error(what: &str) -> ExitCode {
    eprintln!("{what}");
    eprintln!("Run ikigai --help for the commands and options.");
    ExitCode::from(exit::USAGE)
}

/// When neither tool directory exists, a note naming where the host looked
/// and how to put tools there: a host run from `target/` finds nothing, and
/// an empty list alone does not say why.
pub fn no_tool_directory(settings: &Settings) -> Option<String> {
    let dirs = [
        (settings.system_dir.as_ref(), "system"),
        (settings.user_dir.as_ref(), "user"),
    ];
    if dirs.iter().any(|(d, _)| d.is_some_and(|d| d.is_dir())) {
        return None;
    }
    let searched: Vec<String> = dirs
        .iter()
        .filter_map(|(d, what)| Some(format!("{} ({what})", (*d)?.display())))
        .collect();
    Some(format!(
        "no tool directory exists; searched {}. Install the tools with ./symlinks.sh, or name \
         a directory of tools with --libexec-dir or --tools-dir.",
        searched.join(" and ")
    ))
}

fn tools(settings: &Settings, cmd: &ToolsCommand) -> ExitCode {
    if let Some(note) = no_tool_directory(settings) {
        eprintln!("ikigai: {note}");
    }
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
            eprintln!(
                "Unknown tool: '{name}'.{} Use ikigai tools to see available tools.",
                crate::suggest::did_you_mean(name, registry.names())
            );
            ExitCode::FAILURE
        }
    }
}

fn call(settings: &Settings, cmd: &CallCommand) -> ExitCode {
    let arguments = match &cmd.arguments {
        Some(text) => text.clone(),
        None => {
            if io::stdin().is_terminal() {
                // Otherwise the call seems to hang while it waits for input.
                eprintln!(
                    "ikigai: reading the arguments for {} as a JSON object from stdin; \
                     end with Ctrl-D (or pass them after the name: ikigai call {} '{{...}}')",
                    cmd.name, cmd.name
                );
            }
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
            let outcome = call::call_text(&registry, &cmd.name, &arguments, settings, Some(cancel));
            let hint = crate::suggest::did_you_mean(&cmd.name, registry.names());
            (outcome, hint)
        })
    });
    let Some((outcome, hint)) = outcome else {
        signals::end_if_signalled();
        return ExitCode::FAILURE;
    };
    {
        let mut err = io::stderr().lock();
        for event in &outcome.events {
            let _ = writeln!(err, "{event}");
        }
    }
    say(&outcome.to_json().to_string());
    if let envelope::Envelope::Failure {
        why: envelope::Failure::NotFound,
        ..
    } = outcome.envelope
    {
        match no_tool_directory(settings) {
            Some(note) => eprintln!("ikigai: {note}"),
            None if !hint.is_empty() => eprintln!("ikigai:{hint}"),
            None => {}
        }
    }
    // Before a signal ends us: an MCP server is told of a cancelled call.
    crate::mcp::client::stop_all();
    signals::end_if_signalled();
    if outcome.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}
