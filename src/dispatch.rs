//! Who are we? Pure: from argv[0]'s file name and the arguments, decide
//! whether this process is a tool, the `ikigai` host, or the front door of
//! `ikigai-tools` itself (list, help, version, an unknown name).

use std::ffi::OsString;
use std::path::Path;

use crate::tool::Tool;
use crate::tools;

pub enum Personality {
    /// Run this tool with the remaining arguments.
    Tool(&'static dyn Tool, Vec<OsString>),
    /// Run the host with the remaining arguments.
    Host(Vec<OsString>),
    /// Fence in and contain one tool call (`ikigai-tools sandbox-exec`,
    /// started by the host; not a tool, so not listed).
    SandboxExec(Vec<OsString>),
    /// Fork the containment process of each call for a host (`ikigai-tools
    /// sandbox-spawner`, started by the host; not listed either).
    SandboxSpawner(Vec<OsString>),
    /// Serve the tools over MCP, with the remaining arguments.
    Mcp(Vec<OsString>),
    /// Install under a prefix, or uninstall (`ikigai-tools install`).
    Install(Vec<OsString>),
    /// Print a shell's completions (`ikigai-tools completions SHELL`).
    Completions(Vec<OsString>),
    /// Print a man page (`ikigai-tools manpage [NAME]`).
    Manpage(Vec<OsString>),
    List,
    /// Every tool's schema in one JSON object keyed by command name (hidden:
    /// discovery asks this of our own executable once instead of running
    /// each of its links with `--schema`).
    Schemas,
    Help,
    Version,
    /// An unknown tool name: an error listing the known ones.
    Unknown(String),
}

/// The host's own name, as argv[0] or as the first argument.
pub const HOST_NAME: &str = "ikigai";
/// The flag that prints every tool's schema at once.
pub const SCHEMAS_FLAG: &str = "--schemas";
/// The MCP server's name, as the first argument.
pub const MCP_NAME: &str = "mcp";

pub fn resolve(argv: Vec<OsString>) -> Personality {
    let mut argv = argv.into_iter();
    let argv0 = argv.next().unwrap_or_default();
    let rest: Vec<OsString> = argv.collect();

    let base = Path::new(&argv0)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(p) = by_name(&base, &rest) {
        return p;
    }

    let Some(first) = rest.first() else {
        return Personality::Help;
    };
    let first = first.to_string_lossy().into_owned();
    match first.as_str() {
        crate::sandbox::exec::NAME => Personality::SandboxExec(rest[1..].to_vec()),
        crate::sandbox::spawner::NAME => Personality::SandboxSpawner(rest[1..].to_vec()),
        "--list" => Personality::List,
        SCHEMAS_FLAG => Personality::Schemas,
        "--help" | "-h" | "help" => Personality::Help,
        "--version" | "-V" => Personality::Version,
        MCP_NAME => Personality::Mcp(rest[1..].to_vec()),
        "install" => Personality::Install(rest[1..].to_vec()),
        "completions" => Personality::Completions(rest[1..].to_vec()),
        "manpage" => Personality::Manpage(rest[1..].to_vec()),
        name => by_name(name, &rest[1..]).unwrap_or(Personality::Unknown(first)),
    }
}

fn by_name(name: &str, rest: &[OsString]) -> Option<Personality> {
    if name == HOST_NAME {
        return Some(Personality::Host(rest.to_vec()));
    }
    tools::find(name).map(|tool| Personality::Tool(tool, rest.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    fn tool_of(p: Personality) -> (&'static str, Vec<OsString>) {
        match p {
            Personality::Tool(t, rest) => (t.name(), rest),
            _ => panic!("not a tool"),
        }
    }

    #[test]
    fn argv0_picks_tool_by_command_or_schema_name() {
        let (name, rest) = tool_of(resolve(argv(&["/usr/libexec/ikigai/bash", "--schema"])));
        assert_eq!((name, rest), ("bash", argv(&["--schema"])));
        for tool in tools::TOOLS {
            let (name, _) = tool_of(resolve(argv(&[tool.command()])));
            assert_eq!(name, tool.name());
            let (name, _) = tool_of(resolve(argv(&[&format!("/x/{}", tool.name())])));
            assert_eq!(name, tool.name());
        }
    }

    #[test]
    fn other_names_take_the_first_argument() {
        let (name, rest) = tool_of(resolve(argv(&["ikigai-tools", "bash", "{}"])));
        assert_eq!((name, rest), ("bash", argv(&["{}"])));
        let (name, _) = tool_of(resolve(argv(&["./renamed", "bash"])));
        assert_eq!(name, "bash");
        assert!(matches!(
            resolve(argv(&["ikigai-tools"])),
            Personality::Help
        ));
        assert!(matches!(
            resolve(argv(&["ikigai-tools", "--list"])),
            Personality::List
        ));
        assert!(matches!(
            resolve(argv(&["ikigai-tools", "--version"])),
            Personality::Version
        ));
        assert!(matches!(
            resolve(argv(&["ikigai-tools", "--schemas"])),
            Personality::Schemas
        ));
        // Only the front door answers it: a tool takes it for a bad option.
        assert!(matches!(
            resolve(argv(&["/x/grep", "--schemas"])),
            Personality::Tool(..)
        ));
        assert!(
            matches!(resolve(argv(&["ikigai-tools", "nope"])), Personality::Unknown(n) if n == "nope")
        );
        assert!(matches!(resolve(argv(&[])), Personality::Help));
    }

    #[test]
    fn host_by_argv0_or_first_argument() {
        assert!(
            matches!(resolve(argv(&["/bin/ikigai", "tools"])), Personality::Host(r) if r == argv(&["tools"]))
        );
        assert!(
            matches!(resolve(argv(&["ikigai-tools", "ikigai"])), Personality::Host(r) if r.is_empty())
        );
        assert!(
            matches!(resolve(argv(&["ikigai-tools", "mcp", "--http", "9"])), Personality::Mcp(r) if r == argv(&["--http", "9"]))
        );
        assert!(
            matches!(resolve(argv(&["ikigai-tools", "install", "/p"])), Personality::Install(r) if r == argv(&["/p"]))
        );
        assert!(
            matches!(resolve(argv(&["ikigai-tools", "completions", "zsh"])), Personality::Completions(r) if r == argv(&["zsh"]))
        );
        assert!(matches!(
            resolve(argv(&["ikigai-tools", "manpage"])),
            Personality::Manpage(r) if r.is_empty()
        ));
    }

    #[test]
    fn sandbox_exec_only_as_the_first_argument() {
        assert!(
            matches!(resolve(argv(&["ikigai-tools", "sandbox-exec", "--", "x"])), Personality::SandboxExec(r) if r == argv(&["--", "x"]))
        );
        assert!(matches!(
            resolve(argv(&["/x/sandbox-exec"])),
            Personality::Help | Personality::Unknown(_)
        ));
    }
}
