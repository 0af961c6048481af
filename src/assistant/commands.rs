//! The slash commands a person types (docs/assistant.md, "Commands"):
//! `/tool`, `/tool NAME`, `/refresh`, `/help`, `/quit`, kept in one table,
//! and the names of the commands that work on the conversation (`/clear`,
//! `/compact`, `/model`, `/sessions`, `/resume`, `/cost`), which the
//! terminal runs because they need the conversation; `/help` lists both.
//! Used by the line loop of a non-terminal stdin and by the interactive
//! conversation alike: a command gets the host's state and prints through a
//! callback, so `/refresh` can say "Refreshing tools..." before it works.

use crate::host::discovery;
use crate::host::jobs::{self, Jobs, Status};
use crate::host::listing::{inspect, listing};
use crate::host::own;
use crate::host::registry::Registry;
use crate::host::settings::Settings;

/// What the commands work on: the settings, the current registry (the
/// discovered tools and the assistant's own, `host::own`) and the
/// background jobs.
pub struct HostState {
    pub settings: Settings,
    pub registry: Registry,
    pub jobs: Jobs,
}

impl HostState {
    /// Discovers the tools now (blocking, at most about the deadline).
    pub fn discover(settings: Settings) -> HostState {
        let registry = discovery::discover(&settings).with_own(own::entries());
        HostState {
            settings,
            registry,
            jobs: Jobs::default(),
        }
    }

    /// Runs discovery again and replaces the registry.
    pub fn refresh(&mut self) {
        self.registry = discovery::discover(&self.settings).with_own(own::entries());
    }
}

/// Whether the session goes on after a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Quit,
}

/// What a command left: the text to print, or leave. (The assistant
/// prints as a command goes, through `execute`; tests read it whole.)
#[cfg(test)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Text(String),
    Quit,
}

/// What a command does: given its arguments (the text after its name) and
/// the state, it prints through the callback and says whether to go on.
pub type Action = fn(args: &str, state: &mut HostState, print: &mut dyn FnMut(&str)) -> Flow;

/// One command: its name, its usage, one line of help, what it does.
pub struct Command {
    pub name: &'static str,
    pub usage: &'static str,
    pub help: &'static str,
    pub run: Action,
}

/// Every command, in the order `/help` lists them.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "tool",
        usage: "/tool [NAME]",
        help: "List tools, or show one tool's schema",
        run: tool,
    },
    Command {
        name: "refresh",
        usage: "/refresh",
        help: "Reload the tools from disk",
        run: refresh,
    },
    Command {
        name: "jobs",
        usage: "/jobs",
        help: "List the background jobs (shell_start)",
        run: list_jobs,
    },
    Command {
        name: "help",
        usage: "/help",
        help: "Show the commands",
        run: help,
    },
    Command {
        name: "quit",
        usage: "/quit",
        help: "Leave",
        run: |_, _, _| Flow::Quit,
    },
];

/// The conversation's commands: (name, usage, help). The terminal runs them.
pub static CONVERSATION_COMMANDS: &[(&str, &str, &str)] = &[
    ("clear", "/clear", "Start a new conversation (and session)"),
    (
        "compact",
        "/compact",
        "Have the model summarise the conversation, and go on from the summary",
    ),
    (
        "model",
        "/model [NAME]",
        "Show the model, or switch (gpt-4.1, claude-sonnet-4-5, google:gemini-2.5-pro, stub)",
    ),
    (
        "sessions",
        "/sessions",
        "This directory's sessions, newest first",
    ),
    ("resume", "/resume ID", "Continue a session from /sessions"),
    ("cost", "/cost", "Tokens used and their cost since start"),
    (
        "agents",
        "/agents",
        "The agents a task call may name, and where each was read from",
    ),
    (
        "context",
        "/context",
        "What the system prompt holds (guidance, environment, project instructions) and the window in use",
    ),
    (
        "init",
        "/init",
        "Have the model write this repository's project instructions (build, test, what to avoid)",
    ),
    (
        "undo",
        "/undo",
        "Put back the files the model changed in its last turn that changed any",
    ),
    (
        "skills",
        "/skills",
        "The skills the model is told of, where each is, and those left out",
    ),
    (
        "hooks",
        "/hooks",
        "List the hooks configured, with where each came from",
    ),
];

/// Every command name, for suggestions.
pub fn names() -> impl Iterator<Item = &'static str> {
    COMMANDS
        .iter()
        .map(|c| c.name)
        .chain(CONVERSATION_COMMANDS.iter().map(|c| c.0))
}

/// Runs one input line that starts with `/`, printing as it goes (each call
/// of `print` is one or more whole lines, without the final newline).
pub fn execute(line: &str, state: &mut HostState, print: &mut dyn FnMut(&str)) -> Flow {
    let line = line.trim();
    let body = line.strip_prefix('/').unwrap_or(line);
    let (name, args) = match body.split_once(char::is_whitespace) {
        Some((name, args)) => (name, args.trim()),
        None => (body, ""),
    };
    match COMMANDS.iter().find(|c| c.name == name) {
        Some(command) => (command.run)(args, state, print),
        None => {
            let hint = crate::suggest::nearest(name, names())
                .map(|n| format!(" Did you mean '/{n}'?"))
                .unwrap_or_default();
            print(&format!(
                "Unknown command: '/{name}'.{hint} Use /help to see the commands."
            ));
            Flow::Continue
        }
    }
}

/// Runs one command line and returns all it printed, or `Reply::Quit`.
#[cfg(test)]
pub fn run(line: &str, state: &mut HostState) -> Reply {
    let mut text = Vec::new();
    match execute(line, state, &mut |t| text.push(t.to_string())) {
        Flow::Quit => Reply::Quit,
        Flow::Continue => Reply::Text(text.join("\n")),
    }
}

fn tool(args: &str, state: &mut HostState, print: &mut dyn FnMut(&str)) -> Flow {
    if args.is_empty() {
        // The tools found; the assistant's own are in /help's words and
        // `/tool NAME` shows each.
        print(&listing(&state.registry.discovered()));
    } else {
        print(&match state.registry.lookup(args) {
            Some(entry) => inspect(entry),
            None => format!(
                "Unknown tool: '{args}'.{} Use /tool to see available tools.",
                crate::suggest::did_you_mean(args, state.registry.names())
            ),
        });
    }
    Flow::Continue
}

fn refresh(_: &str, state: &mut HostState, print: &mut dyn FnMut(&str)) -> Flow {
    print("Refreshing tools...");
    state.refresh();
    print(&format!(
        "Tools refreshed. {} tools available.",
        state.registry.found()
    ));
    Flow::Continue
}

fn list_jobs(_: &str, state: &mut HostState, print: &mut dyn FnMut(&str)) -> Flow {
    let listed = state.jobs.list();
    if listed.is_empty() {
        print("No background jobs (the model starts them with shell_start).");
        return Flow::Continue;
    }
    let mut text = String::from("Background jobs:");
    for job in listed {
        let status = match &job.status {
            Status::Running => format!("running {}", jobs::words(job.ran)),
            Status::Exited(code) => format!("exit {code} after {}", jobs::words(job.ran)),
            Status::Killed => format!("killed after {}", jobs::words(job.ran)),
            Status::Failed(why) => format!("failed: {}", crate::host::text::clip(why, 60)),
        };
        text += &format!(
            "\n  {:>3}  {status:<22}  {}\n       log: {}",
            job.id,
            crate::host::text::clip(&job.command.replace('\n', " "), 60),
            job.log.display()
        );
    }
    print(&text);
    Flow::Continue
}

fn help(_: &str, _: &mut HostState, print: &mut dyn FnMut(&str)) -> Flow {
    let rows: Vec<(&str, &str)> = CONVERSATION_COMMANDS
        .iter()
        .map(|c| (c.1, c.2))
        .chain(COMMANDS.iter().map(|c| (c.usage, c.help)))
        .collect();
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let mut text = String::from("Commands:");
    for (usage, help) in rows {
        text += &format!("\n  {usage:width$}  {help}");
    }
    text += "\nKeys: Enter sends; a line ending in \\ continues on the next (pasted text stays \
             one message); Ctrl-C stops a reply or a tool, and twice at an empty prompt \
             leaves; Ctrl-D leaves; Up and Down walk the history.";
    print(&text);
    Flow::Continue
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::registry::tests::entry;
    use crate::host::registry::{Entry, Origin, Skipped};
    use serde_json::json;

    fn state(entries: Vec<Entry>, skipped: Vec<Skipped>) -> HostState {
        let mut settings = Settings::resolve(Default::default(), &Default::default(), None);
        settings.system_dir = None;
        settings.user_dir = None;
        HostState {
            settings,
            registry: Registry::build(entries, skipped),
            jobs: Jobs::default(),
        }
    }

    fn text(line: &str, state: &mut HostState) -> String {
        match run(line, state) {
            Reply::Text(t) => t,
            Reply::Quit => panic!("quit"),
        }
    }

    fn sample() -> HostState {
        state(
            vec![
                entry(
                    "file_read",
                    "/s/file-read",
                    Origin::System,
                    json!({"type": "object", "properties": {
                        "file_path": {"type": "string", "description": "Path to file"},
                        "offset": {"type": "integer", "description": "Line\n number"},
                        "tags": {"type": "array", "items": {"type": "string"}}
                    }, "required": ["file_path"]}),
                ),
                entry(
                    "bash",
                    "/u/bash",
                    Origin::User,
                    json!({"type": "object", "properties": {}}),
                ),
            ],
            vec![Skipped {
                path: "/s/broken".into(),
                reason: "--schema: printed nothing".into(),
            }],
        )
    }

    #[test]
    fn tool_lists_sorted_with_a_column_and_the_skipped() {
        assert_eq!(
            text("/tool", &mut sample()),
            "Available tools:\n  bash       bash does things\n  file_read  file_read does things\n\
             Skipped:\n  /s/broken: --schema: printed nothing"
        );
        assert_eq!(
            text("/tool", &mut state(vec![], vec![])),
            "No tools available"
        );
    }

    #[test]
    fn tool_name_shows_path_parameters_and_schema() {
        let mut s = sample();
        let shown = text("/tool file_read", &mut s);
        let expected = format!(
            "Tool: file_read\nPath: /s/file-read\nDescription: file_read does things\nParameters:\n  \
             file_path (string, required): Path to file\n  offset (integer, optional): Line number\n  \
             tags (array of string, optional)\nSchema:\n{}",
            serde_json::to_string_pretty(&s.registry.lookup("file_read").unwrap().schema).unwrap()
        );
        assert_eq!(shown, expected);
        assert!(text("/tool bash", &mut s).contains("Parameters:\n  (none)\nSchema:\n{"));
        assert_eq!(
            text("/tool nope", &mut s),
            "Unknown tool: 'nope'. Use /tool to see available tools."
        );
    }

    #[test]
    fn refresh_help_quit_unknown() {
        let mut s = sample();
        let mut printed = Vec::new();
        let flow = execute("/refresh", &mut s, &mut |t| printed.push(t.to_string()));
        assert_eq!(flow, Flow::Continue);
        assert_eq!(
            printed,
            ["Refreshing tools...", "Tools refreshed. 0 tools available."]
        );
        let help = text("/help", &mut s);
        assert!(
            help.starts_with(
                "Commands:\n  /clear         Start a new conversation (and session)\n"
            ),
            "{help}"
        );
        assert!(
            help.contains(
                "\n  /tool [NAME]   List tools, or show one tool's schema\n  \
                 /refresh       Reload the tools from disk\n  /jobs          List the background jobs \
                 (shell_start)\n  /help          Show the commands\n  \
                 /quit          Leave\nKeys: "
            ),
            "{help}"
        );
        assert_eq!(run("/quit", &mut s), Reply::Quit);
        assert_eq!(run("  /quit  ", &mut s), Reply::Quit);
        assert_eq!(
            text("/frob x", &mut s),
            "Unknown command: '/frob'. Use /help to see the commands."
        );
        assert_eq!(
            text("/hlep", &mut s),
            "Unknown command: '/hlep'. Did you mean '/help'? Use /help to see the commands."
        );
    }
}
