//! The command lines of both names as one tree, for the completions and
//! the man pages: `ikigai`'s read from the help argh prints for it and for
//! each of its subcommands (the same tables `--help` shows, asked at run
//! time, so a subcommand added to the CLI appears without a word here),
//! `ikigai-tools`'s from the tools' table and the front door's
//! personalities.

use argh::FromArgs;

use crate::host::cli::{Ikigai, OutputFormat};
use crate::sandbox::Mode;
use crate::tools::TOOLS;

/// One command (or subcommand) and what may follow it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Command {
    pub name: String,
    /// One line: what it does.
    pub about: String,
    pub options: Vec<Opt>,
    pub commands: Vec<Command>,
    /// The words its first positional argument may be (tool names for
    /// `ikigai call`, shells for `completions`).
    pub operands: Vec<String>,
    /// Its positional arguments as help names them, with what they are.
    pub positionals: Vec<(String, String)>,
    /// The first positional argument is a directory.
    pub operand_is_dir: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Opt {
    /// `--timeout`.
    pub long: String,
    /// `-p`.
    pub short: Option<String>,
    /// The value's name (`SECONDS`), None for a switch.
    pub value: Option<String>,
    pub help: String,
    /// The words the value may be, when they are few.
    pub choices: Vec<String>,
}

impl Opt {
    /// What completing its value should offer: a directory, a file, or
    /// nothing in particular.
    pub fn value_kind(&self) -> ValueKind {
        match self.value.as_deref() {
            _ if !self.choices.is_empty() => ValueKind::Choices,
            Some("DIR") => ValueKind::Dir,
            Some("FILE" | "PATH") => ValueKind::File,
            Some(_) => ValueKind::Other,
            None => ValueKind::Switch,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    Switch,
    Choices,
    Dir,
    File,
    Other,
}

/// The shells `ikigai-tools completions` writes for.
pub const SHELLS: [&str; 3] = ["bash", "zsh", "fish"];
/// The names a man page is written for.
pub const NAMES: [&str; 2] = ["ikigai", "ikigai-tools"];

/// `ikigai`: the host's options and subcommands, as argh's help gives them.
pub fn ikigai() -> Command {
    let mut command = from_help("ikigai", &help_of(&[]));
    let tool_names: Vec<String> = TOOLS.iter().map(|t| t.name().to_string()).collect();
    fill(&mut command, &[], &tool_names);
    command
}

/// `ikigai-tools`: each tool by its command name, the front door's own
/// subcommands, and `ikigai` beneath it.
pub fn ikigai_tools() -> Command {
    let mut commands: Vec<Command> = TOOLS
        .iter()
        .map(|t| Command {
            name: t.command().to_string(),
            about: crate::tool::summary(*t),
            options: vec![
                switch("--schema", "print the tool's JSON schema (ikigai protocol)"),
                switch("--describe", "print the same schema (shellclaw protocol)"),
            ],
            positionals: vec![(
                "ARGS_JSON".into(),
                "the arguments as JSON (else read from stdin)".into(),
            )],
            ..Command::default()
        })
        .collect();
    let mut mcp = from_help(
        "mcp",
        &early_exit(crate::mcp::server::McpOptions::from_args(
            &["ikigai-tools mcp"],
            &["--help"],
        )),
    );
    mcp.about = "serve the tools over MCP (stdio, or Streamable HTTP with --http)".into();
    commands.push(mcp);
    let mut install = from_help("install", &super::install_help());
    install.about = "install the binary, the host, a link per tool, completions and man pages \
                     under PREFIX (default ~/.local)"
        .into();
    install.operand_is_dir = true;
    commands.push(install);
    commands.push(Command {
        name: "completions".into(),
        about: "print the shell completions of ikigai and ikigai-tools".into(),
        operands: SHELLS.iter().map(|s| s.to_string()).collect(),
        positionals: vec![("SHELL".into(), SHELLS.join(", "))],
        ..Command::default()
    });
    commands.push(Command {
        name: "manpage".into(),
        about: "print the man page of ikigai or ikigai-tools (roff)".into(),
        operands: NAMES.iter().map(|s| s.to_string()).collect(),
        positionals: vec![(
            "NAME".into(),
            NAMES.join(" or ") + " (default ikigai-tools)",
        )],
        ..Command::default()
    });
    let mut host = ikigai();
    host.about = "the host and the assistant (as the command ikigai)".into();
    commands.push(host);
    Command {
        name: "ikigai-tools".into(),
        about: "the tools an LLM assistant calls, in one binary".into(),
        options: vec![
            switch("--list", "print the tools' command names, one a line"),
            switch("--help", "print the usage and the tools"),
            switch("--version", "print the version"),
        ],
        commands,
        ..Command::default()
    }
}

fn switch(long: &str, help: &str) -> Opt {
    Opt {
        long: long.into(),
        help: help.into(),
        ..Opt::default()
    }
}

/// The help argh prints for `ikigai WORDS... --help`.
fn help_of(words: &[&str]) -> String {
    let mut args: Vec<&str> = words.to_vec();
    args.push("--help");
    early_exit(Ikigai::from_args(&["ikigai"], &args))
}

fn early_exit<T>(parsed: Result<T, argh::EarlyExit>) -> String {
    match parsed {
        Err(exit) => exit.output,
        Ok(_) => String::new(),
    }
}

/// Reads each subcommand's help beneath `command` (at `path`), and gives
/// the operands argh cannot know.
fn fill(command: &mut Command, path: &[&str], tool_names: &[String]) {
    for sub in &mut command.commands {
        let name = sub.name.clone();
        let mut words = path.to_vec();
        words.push(&name);
        let about = std::mem::take(&mut sub.about);
        *sub = from_help(&name, &help_of(&words));
        sub.about = about;
        if words == ["call"] {
            sub.operands = tool_names.to_vec();
        }
        fill(sub, &words, tool_names);
    }
}

/// A command from argh's help text: the usage line says which options take
/// a value and its name; "Options:", "Positional Arguments:" and
/// "Commands:" list each with its description (continued on lines indented
/// further).
pub fn from_help(name: &str, help: &str) -> Command {
    let mut command = Command {
        name: name.into(),
        ..Command::default()
    };
    let usage = help.lines().next().unwrap_or_default();
    let mut values: Vec<(String, String)> = Vec::new();
    for part in usage.split('[').skip(1) {
        if let Some((flag, rest)) = part.split_once(" <") {
            let value = rest.split(['>', '.']).next().unwrap_or_default();
            values.push((flag.trim().to_string(), value.to_string()));
        }
    }
    if let Some(about) = help.split("\n\n").nth(1) {
        let about = one_sentence(about);
        let own = format!("{name}: ");
        command.about = about.strip_prefix(&own).unwrap_or(&about).to_string();
    }
    let mut section = "";
    let mut current: Option<(String, String)> = None;
    let mut entries: Vec<(&str, String, String)> = Vec::new();
    for line in help.lines() {
        if !line.starts_with(' ') {
            if let Some((term, text)) = current.take() {
                entries.push((section, term, text));
            }
            section = match line.trim_end_matches(':') {
                s @ ("Options" | "Positional Arguments" | "Commands") if line.ends_with(':') => s,
                _ => "",
            };
            continue;
        }
        if section.is_empty() {
            continue;
        }
        let text = line.trim();
        let indent = line.len() - line.trim_start().len();
        if indent <= 2 {
            if let Some((term, about)) = current.take() {
                entries.push((section, term, about));
            }
            // "  --timeout         seconds ...", "  -p, --prompt      send
            // ...", or a long term alone on its line (or one space from its
            // text) with the text below.
            let mut words = text.splitn(2, ' ');
            let mut term = words.next().unwrap_or_default().to_string();
            let mut about = words.next().unwrap_or_default().trim_start();
            if term.len() == 3 && term.starts_with('-') && term.ends_with(',') {
                let mut rest = about.splitn(2, ' ');
                term = format!("{} {}", term, rest.next().unwrap_or_default());
                about = rest.next().unwrap_or_default().trim_start();
            }
            let (term, about) = (term, about.to_string());
            current = Some((term, about));
        } else if let Some((_, about)) = current.as_mut() {
            if !about.is_empty() {
                about.push(' ');
            }
            about.push_str(text);
        }
    }
    if let Some((term, text)) = current.take() {
        entries.push((section, term, text));
    }
    for (section, term, text) in entries {
        match section {
            "Options" => {
                if term.starts_with("--help") {
                    command
                        .options
                        .push(switch("--help", "display usage information"));
                    continue;
                }
                let mut short = None;
                let mut long = term.clone();
                if let Some((s, l)) = term.split_once(", ") {
                    short = Some(s.to_string());
                    long = l.to_string();
                }
                let value = values
                    .iter()
                    .find(|(flag, _)| *flag == long || Some(flag) == short.as_ref())
                    .map(|(_, v)| v.clone());
                let choices = choices_of(&long, name);
                command.options.push(Opt {
                    long,
                    short,
                    value,
                    help: text,
                    choices,
                });
            }
            "Positional Arguments" => command.positionals.push((term, text)),
            "Commands" => command.commands.push(Command {
                name: term,
                about: text,
                ..Command::default()
            }),
            _ => {}
        }
    }
    command
}

/// The words an option's value may be, where the code knows them.
fn choices_of(long: &str, command: &str) -> Vec<String> {
    let words: Vec<&str> = match (long, command) {
        ("--sandbox", _) => Mode::NAMES
            .split([',', ' '])
            .filter(|w| !w.is_empty() && *w != "or")
            .collect(),
        ("--output-format", _) => OutputFormat::NAMES.to_vec(),
        ("--provider", "schema") => vec!["openai", "openai-responses", "anthropic", "google"],
        _ => Vec::new(),
    };
    words.into_iter().map(str::to_string).collect()
}

/// The first sentence of a description, on one line.
fn one_sentence(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let first = match flat.find(". ") {
        Some(end) => &flat[..end],
        None => flat.trim_end_matches('.'),
    };
    first.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_tree_comes_from_its_help() {
        let host = ikigai();
        let names: Vec<&str> = host.commands.iter().map(|c| c.name.as_str()).collect();
        for name in crate::host::cli::SUBCOMMANDS {
            assert!(names.contains(name), "{name} in {names:?}");
        }
        let timeout = host.options.iter().find(|o| o.long == "--timeout").unwrap();
        assert_eq!(timeout.value.as_deref(), Some("SECONDS"));
        assert!(timeout.help.starts_with("seconds a tool call may run"));
        let prompt = host.options.iter().find(|o| o.long == "--prompt").unwrap();
        assert_eq!(prompt.short.as_deref(), Some("-p"));
        assert_eq!(prompt.value.as_deref(), Some("MESSAGE"));
        let rounds = host
            .options
            .iter()
            .find(|o| o.long == "--max-tool-rounds")
            .unwrap();
        assert!(rounds.help.starts_with("tool rounds allowed"), "{rounds:?}");
        assert_eq!(host.about, "the host of the ikigai tools");
        let network = host.options.iter().find(|o| o.long == "--network").unwrap();
        assert_eq!(network.value_kind(), ValueKind::Switch);
        let sandbox = host.options.iter().find(|o| o.long == "--sandbox").unwrap();
        assert_eq!(sandbox.choices, ["workspace-write", "read-only", "off"]);
        let add_dir = host.options.iter().find(|o| o.long == "--add-dir").unwrap();
        assert_eq!(add_dir.value_kind(), ValueKind::Dir);
        let call = host.commands.iter().find(|c| c.name == "call").unwrap();
        assert!(call.operands.contains(&"file_read".to_string()));
        assert_eq!(call.positionals[0].0, "name");
        let sandbox = host.commands.iter().find(|c| c.name == "sandbox").unwrap();
        assert_eq!(sandbox.commands[0].name, "check");
        assert!(!sandbox.commands[0].about.is_empty());
    }

    #[test]
    fn the_front_door_lists_tools_and_its_own_commands() {
        let front = ikigai_tools();
        let names: Vec<&str> = front.commands.iter().map(|c| c.name.as_str()).collect();
        for expected in [
            "grep",
            "file-read",
            "mcp",
            "install",
            "completions",
            "manpage",
            "ikigai",
        ] {
            assert!(names.contains(&expected), "{expected} in {names:?}");
        }
        let mcp = front.commands.iter().find(|c| c.name == "mcp").unwrap();
        let http = mcp.options.iter().find(|o| o.long == "--http").unwrap();
        assert_eq!(http.value.as_deref(), Some("HOST:PORT"));
    }
}
