//! The rules between the rooms of `src/` (docs/architecture.md), checked on
//! the source itself: every `crate::...` path a file names, in a `use` or
//! inline, must be allowed by the table below. A new room is one line.

use std::fs;
use std::path::{Path, PathBuf};

/// Who a rule is about: the files of these modules (a module and all below
/// it: `tools` covers `src/tools/**`), or every file except those.
enum Who {
    In(&'static [&'static str]),
    AllBut(&'static [&'static str]),
}

/// The tool side: the tools and the crate-level parts a tool process uses.
const TOOL_SIDE: &[&str] = &[
    "tools",
    "runner",
    "tool",
    "args",
    "truncate",
    "credentials",
    "env",
    "error",
    "capture",
    "out",
    "protocol",
    "exit",
];

/// (who, the module they must not name, why).
const RULES: &[(Who, &str, &str)] = &[
    (Who::In(TOOL_SIDE), "host", "a tool never knows its host"),
    (
        Who::In(TOOL_SIDE),
        "assistant",
        "a tool never knows the assistant",
    ),
    (Who::In(TOOL_SIDE), "mcp", "a tool never knows MCP"),
    (
        Who::In(TOOL_SIDE),
        "sandbox",
        "a tool never knows it is sandboxed",
    ),
    (Who::In(TOOL_SIDE), "config", "a tool reads no config file"),
    (
        Who::In(&["host"]),
        "assistant",
        "the runtime never imports the assistant",
    ),
    (
        Who::In(&["host"]),
        "mcp::server",
        "the runtime serves no MCP; the server stands on the runtime",
    ),
    (
        Who::AllBut(&["main", "dispatch", "assistant"]),
        "assistant",
        "only the front (main.rs, dispatch.rs) hands over to the assistant",
    ),
    (
        Who::In(&["sandbox"]),
        "host",
        "the sandbox is set up in the tool's process, before exec: it knows no host",
    ),
    (
        Who::In(&["sandbox"]),
        "dispatch",
        "the front hands over to the sandbox, never the other way",
    ),
    (
        Who::In(&["config"]),
        "host",
        "the config file is read below the host's settings, which read it",
    ),
    (
        Who::In(&["host"]),
        "tools",
        "the host knows our tools only by what they print, as anyone's",
    ),
];

/// A source file's module path below `src/`: `src/host/format/mod.rs` is
/// `host::format`, `src/main.rs` is `main`.
fn module_of(relative: &Path) -> String {
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs").to_string();
        if stem != "mod" {
            parts.push(stem);
        }
    }
    parts.join("::")
}

/// Whether module path `path` is `prefix` or below it.
fn under(path: &str, prefix: &str) -> bool {
    path == prefix || path.starts_with(&format!("{prefix}::"))
}

/// The `crate::a::b::c` paths named in `source`, outside comments, each as
/// `a::b::c` (identifiers only; `crate::host::{a, b}` gives `host`).
fn crate_paths(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let path: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            found.push((n + 1, path.trim_end_matches(':').to_string()));
            rest = after;
        }
    }
    found
}

/// Every broken rule in one file, as `file:line: names X (why)`.
fn violations(module: &str, file: &str, source: &str) -> Vec<String> {
    let mut broken = Vec::new();
    for (line, path) in crate_paths(source) {
        for (who, target, why) in RULES {
            let applies = match who {
                Who::In(rooms) => rooms.iter().any(|r| under(module, r)),
                Who::AllBut(rooms) => !rooms.iter().any(|r| under(module, r)),
            };
            if applies && under(&path, target) {
                broken.push(format!("{file}:{line}: names crate::{path} ({why})"));
            }
        }
    }
    broken
}

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

#[test]
fn the_rooms_keep_their_rules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.len() > 20,
        "found only {} files under src",
        files.len()
    );
    let mut broken = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under src");
        let source = fs::read_to_string(file).expect("read source");
        let shown = format!("src/{}", relative.display());
        broken.extend(violations(&module_of(relative), &shown, &source));
    }
    assert!(
        broken.is_empty(),
        "forbidden imports:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_checker_catches_a_forbidden_import() {
    let tool = "use crate::error::ToolError;\nuse crate::host::registry::Registry;\n";
    assert_eq!(
        violations("tools::grep", "src/tools/grep.rs", tool),
        ["src/tools/grep.rs:2: names crate::host::registry::Registry (a tool never knows its host)"]
    );
    // Inline paths count, comments do not; two rules catch this one: the
    // host's own and "only the front".
    let host = "// crate::assistant is not named here\nlet x = crate::assistant::run();\n";
    assert_eq!(violations("host::call", "src/host/call.rs", host).len(), 2);
    assert!(violations("host", "src/host/mod.rs", "use crate::mcp::server::serve;").len() == 1);
    assert!(violations("host", "src/host/mod.rs", "use crate::mcp::client::Client;").is_empty());
    assert!(violations("main", "src/main.rs", "crate::assistant::main()").is_empty());
    assert!(violations(
        "assistant::model",
        "src/assistant/model/mod.rs",
        "crate::assistant::x"
    )
    .is_empty());
    assert_eq!(module_of(Path::new("host/format/mod.rs")), "host::format");
    assert_eq!(module_of(Path::new("main.rs")), "main");
    assert!(under("mcp::server::http", "mcp::server") && !under("mcpx", "mcp"));
}
