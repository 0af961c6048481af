//! `ikigai-tools manpage [ikigai|ikigai-tools]`: a man page (roff, the
//! `man` macros) made from the command tree (`commands`), so its options,
//! subcommands and tools are the ones `--help` shows at that moment. The
//! environment section lists every variable the options' help names
//! (`$IKIGAI_...`) and the keys the host and tools read; files and exit
//! codes are the host's own.

use std::fmt::Write as _;

use super::commands::{self, Command};
use crate::tools::TOOLS;

/// The comment on every page's first line: install knows its files by it.
pub const MARK: &str = "made by `ikigai-tools manpage`";

/// The page of `name`, or why not.
pub fn page(name: &str) -> Result<String, String> {
    let tree = match name {
        "ikigai" => commands::ikigai(),
        "ikigai-tools" => commands::ikigai_tools(),
        _ => {
            return Err(format!(
                "no man page '{name}': choose {}",
                commands::NAMES.join(" or ")
            ))
        }
    };
    Ok(render(&tree))
}

/// Text as roff reads it: backslashes doubled, hyphens as minus signs (so
/// options copy and search as typed), and a line never starting with a
/// control character.
fn esc(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = flat.replace('\\', r"\e").replace('-', r"\-");
    if out.starts_with('.') || out.starts_with('\'') {
        out.insert_str(0, r"\&");
    }
    out
}

/// The variables a host reads beyond those its options' help names.
const KEYS: &[(&str, &str)] = &[
    (
        "OPENAI_API_KEY",
        "the key of the openai and openai-responses providers",
    ),
    ("ANTHROPIC_API_KEY", "the key of the anthropic provider"),
    (
        "GEMINI_API_KEY",
        "the key of the google provider (or GOOGLE_API_KEY)",
    ),
    ("BRAVE_API_KEY", "web_search_brave's key"),
    (
        "GOOGLE_SEARCH_API_KEY",
        "web_search_google's key, with GOOGLE_SEARCH_ENGINE_ID",
    ),
    (
        "IKIGAI_MCP_CONFIG",
        "the MCP servers' file (as --mcp-config)",
    ),
    (
        "IKIGAI_MCP_START_TIMEOUT",
        "seconds an MCP server has to start (default 10)",
    ),
    (
        "IKIGAI_MCP_TOKEN",
        "the bearer token of ikigai-tools mcp --http",
    ),
    (
        "IKIGAI_CONFIG",
        "the config file (default ~/.config/ikigai/config.toml)",
    ),
];

const FILES: &[(&str, &str)] = &[
    (
        "PREFIX/libexec/ikigai/",
        "the system tools: a link per tool of ours, beside bin/",
    ),
    (
        "~/.ikigai/tools/",
        "the user's tools, which shadow system tools of the same name",
    ),
    (
        "~/.ikigai/mcp.json",
        "the MCP servers the host starts, as {\"mcpServers\": ...}",
    ),
    (
        "~/.config/ikigai/config.toml",
        "the config file: model, approval rules, sandbox, limits",
    ),
    (
        "~/.config/ikigai/credentials.json",
        "keys saved for the providers and web tools (0600)",
    ),
    (
        "~/.local/share/ikigai/",
        "sessions, history and saved outputs (0600 files in 0700 directories)",
    ),
    (
        "PREFIX/share/ikigai-tools/manifest",
        "what ikigai-tools install laid, for --uninstall",
    ),
];

const EXIT: &[(&str, &str)] = &[
    ("0", "success (for ikigai call: tool_success is true)"),
    (
        "1",
        "a failure that was reported: a failed call, a tool's error, an install that stopped",
    ),
    (
        "2",
        "the command line was wrong: an unknown option, subcommand or tool",
    ),
    (
        "3",
        "ikigai \\-p stopped at \\-\\-max\\-tool\\-rounds with the model still calling tools",
    ),
    (
        "125",
        "sandbox\\-exec could not build the fence, so nothing ran",
    ),
    ("130", "interrupted (Ctrl\\-C)"),
];

fn render(tree: &Command) -> String {
    let name = &tree.name;
    let mut out = String::new();
    let _ = writeln!(out, ".\\\" {name}(1), {MARK}");
    let _ = writeln!(
        out,
        ".TH {} 1 \"\" \"ikigai\\-tools {}\" \"User Commands\"",
        name.to_uppercase().replace('-', "\\-"),
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(out, ".SH NAME\n{} \\- {}", esc(name), esc(&tree.about));
    let _ = writeln!(out, ".SH SYNOPSIS");
    if name == "ikigai" {
        let _ = writeln!(
            out,
            ".B ikigai\n[\\fIOPTIONS\\fR] [\\fICOMMAND\\fR [\\fIARGS\\fR]]"
        );
    } else {
        let _ = writeln!(
            out,
            ".B ikigai\\-tools\n\\fITOOL\\fR [\\fB\\-\\-schema\\fR | \\fB\\-\\-describe\\fR | \\fIARGS_JSON\\fR]\n.br\n\
             .B ikigai\\-tools\n\\fICOMMAND\\fR [\\fIARGS\\fR]\n.br\n\
             .B ikigai\\-tools\n\\-\\-list | \\-\\-help | \\-\\-version"
        );
    }
    let _ = writeln!(out, ".SH DESCRIPTION\n{}", esc(&description(name)));
    if !tree.options.is_empty() {
        let _ = writeln!(out, ".SH OPTIONS");
        options(&mut out, tree);
    }
    let _ = writeln!(out, ".SH COMMANDS");
    for sub in tree.commands.iter().filter(|c| !is_tool(&c.name)) {
        command(&mut out, sub, &sub.name);
    }
    let _ = writeln!(out, ".SH TOOLS");
    let _ = writeln!(
        out,
        "Each tool answers to its schema name (for ikigai call and the model) and to its \
         command name (the link in libexec, or the first argument of ikigai\\-tools)."
    );
    for tool in TOOLS {
        let _ = writeln!(
            out,
            ".TP\n.BR {} \" (\" {} )\n{}",
            esc(tool.name()),
            esc(tool.command()),
            esc(&crate::tool::summary(*tool))
        );
    }
    let _ = writeln!(out, ".SH ENVIRONMENT");
    for (var, what) in environment(tree) {
        let _ = writeln!(out, ".TP\n.B {}\n{}", esc(&var), esc(&what));
    }
    let _ = writeln!(out, ".SH FILES");
    for (file, what) in FILES {
        let _ = writeln!(out, ".TP\n.I {}\n{}", esc(file), esc(what));
    }
    let _ = writeln!(out, ".SH EXIT STATUS");
    for (code, what) in EXIT {
        let _ = writeln!(out, ".TP\n.B {code}\n{what}");
    }
    let other = if name == "ikigai" {
        "ikigai\\-tools"
    } else {
        "ikigai"
    };
    let _ = writeln!(out, ".SH SEE ALSO\n.BR {other} (1)");
    out
}

fn is_tool(name: &str) -> bool {
    TOOLS.iter().any(|t| t.command() == name)
}

fn description(name: &str) -> String {
    if name == "ikigai" {
        "The host of the ikigai tools. It discovers tools (executables that answer \
         --schema or --describe) in the system and user tool directories and the MCP \
         servers of mcp.json, runs them as subprocesses in a sandbox and wraps their \
         answers for a model. With no command it is the assistant: a conversation with \
         a model that calls those tools (-p for one message). Options come before the \
         command."
            .into()
    } else {
        "One executable holding the tools an LLM assistant calls. Called through a link \
         named after a tool (or with the tool's name as the first argument) it is that \
         tool: its arguments as JSON on stdin or as the first argument, its answer as \
         JSON on stdout. Called as ikigai it is the host."
            .into()
    }
}

fn options(out: &mut String, command: &Command) {
    for opt in &command.options {
        let mut head = String::from(".TP\n");
        if let Some(s) = &opt.short {
            let _ = write!(head, "\\fB{}\\fR, ", esc(s));
        }
        let _ = write!(head, "\\fB{}\\fR", esc(&opt.long));
        if let Some(v) = &opt.value {
            let _ = write!(head, " \\fI{}\\fR", esc(v));
        }
        let _ = writeln!(out, "{head}\n{}", esc(&opt.help));
    }
}

fn command(out: &mut String, command_: &Command, path: &str) {
    let mut head = format!(".TP\n.B {}", esc(path));
    for (positional, _) in &command_.positionals {
        let _ = write!(head, "\n.I {}", esc(positional));
    }
    let _ = writeln!(out, "{head}\n{}", esc(&command_.about));
    let listed: Vec<_> = command_
        .options
        .iter()
        .filter(|o| o.long != "--help")
        .collect();
    if !listed.is_empty() || !command_.positionals.is_empty() {
        let _ = writeln!(out, ".RS");
        for (positional, what) in &command_.positionals {
            let _ = writeln!(out, ".TP\n.I {}\n{}", esc(positional), esc(what));
        }
        let only = Command {
            options: listed.into_iter().cloned().collect(),
            ..Command::default()
        };
        options(out, &only);
        let _ = writeln!(out, ".RE");
    }
    for sub in &command_.commands {
        command(out, sub, &format!("{path} {}", sub.name));
    }
}

/// Every `$VAR` the options' help names, with the option it belongs to,
/// then the keys and settings no option names.
fn environment(tree: &Command) -> Vec<(String, String)> {
    fn walk(command: &Command, out: &mut Vec<(String, String)>) {
        for opt in &command.options {
            let mut rest = opt.help.as_str();
            while let Some(at) = rest.find('$') {
                rest = &rest[at + 1..];
                let var: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if var.len() > 1 && !out.iter().any(|(v, _)| *v == var) {
                    out.push((var, format!("the default of {}", opt.long)));
                }
            }
        }
        for sub in &command.commands {
            walk(sub, out);
        }
    }
    let mut vars = Vec::new();
    walk(tree, &mut vars);
    for (var, what) in KEYS {
        if !vars.iter().any(|(v, _)| v == var) {
            vars.push((var.to_string(), what.to_string()));
        }
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_pages_have_every_section() {
        for name in commands::NAMES {
            let text = page(name).unwrap();
            for section in [
                "NAME",
                "SYNOPSIS",
                "OPTIONS",
                "COMMANDS",
                "TOOLS",
                "ENVIRONMENT",
                "FILES",
                "EXIT STATUS",
            ] {
                if section == "OPTIONS" || text.contains(&format!(".SH {section}\n")) {
                    continue;
                }
                panic!("{name}: no {section}");
            }
            assert!(text.contains("file_read"), "{name}");
        }
        let host = page("ikigai").unwrap();
        assert!(
            host.contains("\\fB\\-\\-timeout\\fR \\fISECONDS\\fR"),
            "{host}"
        );
        assert!(host.contains(".B IKIGAI_SANDBOX"));
        assert!(page("other")
            .unwrap_err()
            .contains("ikigai or ikigai-tools"));
    }

    #[test]
    fn roff_control_characters_are_escaped() {
        assert_eq!(esc(".hidden -x \\n"), r"\&.hidden \-x \en");
    }
}
