//! Agents from Markdown files (decision 86; docs/decisions.md 126): a
//! front matter of `name`, `description`, optional `tools` and `model`,
//! then the agent's instructions. Read, in this order, from the person's
//! `~/.claude/agents/` and `~/.config/ikigai/agents/`, then a trusted
//! project's `.claude/agents/` and `.ikigai/agents/` (at the repository's
//! root, else the working directory); a later agent of the same name
//! replaces an earlier one, so a project's agent beats the person's and
//! ours beats Claude Code's at the same place. `tools` takes our names or
//! Claude Code's (`Bash`, `Read`, `Write`, `Edit`, `MultiEdit`, `Glob`,
//! `Grep`, `WebFetch`, `WebSearch`); a list that names something else, or
//! `task`, makes the agent unusable with the reason kept, and a `task`
//! call naming it gets that reason: the others still run. `model` is
//! `inherit` or absent for the caller's model, else another model of the
//! caller's provider.

use std::path::{Path, PathBuf};

use crate::assistant::context::instructions::git_root;
use crate::assistant::conversation::Agent;
use crate::env::Env;

/// The most bytes of one agent file, and files of one folder read: an
/// agent is a page of instructions, and a folder is not a dump.
const MAX_FILE_BYTES: u64 = 256 << 10;
const MAX_FILES: usize = 200;

/// Claude Code's tool names, as ours (decision 83's map).
const CLAUDE_NAMES: &[(&str, &[&str])] = &[
    ("Bash", &["bash"]),
    ("Read", &["file_read"]),
    ("Write", &["file_write"]),
    ("Edit", &["file_edit", "apply_patch"]),
    ("MultiEdit", &["file_edit", "apply_patch"]),
    ("Glob", &["glob"]),
    ("Grep", &["grep"]),
    ("WebFetch", &["web_fetch"]),
    ("WebSearch", &["web_search_brave", "web_search_google"]),
];

/// The folders agents are read from, in order, with whether each is the
/// project's (read only when the project is trusted).
pub fn places(env: &Env, cwd: &Path) -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    if let Some(home) = env.home() {
        out.push((home.join(".claude").join("agents"), false));
    }
    if let Some(dir) = env.config_dir() {
        out.push((dir.join("agents"), false));
    }
    let root = git_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    out.push((root.join(".claude").join("agents"), true));
    out.push((root.join(".ikigai").join("agents"), true));
    out
}

/// Every agent found, and warnings for files that could not be read (an
/// untrusted project's agents are one warning). The project's folders are
/// read only when `trusted`.
pub fn load(env: &Env, cwd: &Path, trusted: bool) -> (Vec<Agent>, Vec<String>) {
    let mut agents: Vec<Agent> = Vec::new();
    let mut warnings = Vec::new();
    for (dir, project) in places(env, cwd) {
        let files = markdown_files(&dir, &mut warnings);
        if project && !trusted {
            if !files.is_empty() {
                warnings.push(format!(
                    "{} agent file(s) in {} not loaded: the project is not trusted",
                    files.len(),
                    dir.display()
                ));
            }
            continue;
        }
        for path in files {
            match read(&path) {
                Ok(agent) => {
                    agents.retain(|a| a.name != agent.name);
                    agents.push(agent);
                }
                Err(why) => warnings.push(format!("agent file {}: {why}", path.display())),
            }
        }
    }
    agents.sort_by(|a, b| a.name.cmp(&b.name));
    (agents, warnings)
}

/// The `*.md` files directly in `dir`, by name; regular files only (a
/// link is followed only to a regular file).
fn markdown_files(dir: &Path, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .collect();
    files.sort();
    if files.len() > MAX_FILES {
        warnings.push(format!(
            "{}: only the first {MAX_FILES} of {} agent files are read",
            dir.display(),
            files.len()
        ));
        files.truncate(MAX_FILES);
    }
    files
}

/// One agent file; Err says what is wrong with it.
pub fn read(path: &Path) -> Result<Agent, String> {
    let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "{size} bytes, over the {} KiB an agent file may have",
            MAX_FILE_BYTES >> 10
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    parse(&text, &path.display().to_string())
}

/// An agent from its file's text; `from` names the file.
pub fn parse(text: &str, from: &str) -> Result<Agent, String> {
    let (fields, body) = front_matter(text)?;
    let field = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let scalar = |key: &str| -> Result<Option<String>, String> {
        match field(key) {
            None => Ok(None),
            Some(Value::Text(t)) => Ok(Some(t.clone())),
            Some(Value::List(_)) => Err(format!("'{key}' must be text, not a list")),
        }
    };
    let name = scalar("name")?
        .filter(|n| !n.is_empty())
        .ok_or("the front matter has no 'name'")?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "the name '{name}' may hold only letters, digits, '-' and '_'"
        ));
    }
    let description = scalar("description")?.unwrap_or_default();
    let model = scalar("model")?.filter(|m| !m.is_empty() && m != "inherit");
    let (tools, problem) = match field("tools") {
        None => (None, None),
        Some(value) => {
            let names = match value {
                Value::Text(t) => t
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect(),
                Value::List(items) => items.clone(),
            };
            match our_names(&names) {
                Ok(tools) => (Some(tools), None),
                Err(why) => (None, Some(why)),
            }
        }
    };
    Ok(Agent {
        name,
        description,
        instructions: body.trim().to_string(),
        tools,
        model,
        from: from.to_string(),
        problem,
    })
}

/// A `tools` list in our names; Err names what is wrong with it.
pub fn our_names(names: &[String]) -> Result<Vec<String>, String> {
    if names.is_empty() {
        return Err("its 'tools' list is empty (leave it out for every tool)".into());
    }
    let mut out: Vec<String> = Vec::new();
    for name in names {
        if name.eq_ignore_ascii_case("task") {
            return Err("its 'tools' list names task, and subagents do not nest".into());
        }
        let ours: Vec<String> = match CLAUDE_NAMES.iter().find(|(claude, _)| claude == name) {
            Some((_, ours)) => ours.iter().map(|s| s.to_string()).collect(),
            None if name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') =>
            {
                vec![name.clone()]
            }
            None => {
                return Err(format!(
                    "its 'tools' list names '{name}', which is neither one of our tools nor one \
                     of Claude Code's (Bash, Read, Write, Edit, MultiEdit, Glob, Grep, WebFetch, \
                     WebSearch)"
                ))
            }
        };
        for tool in ours {
            if !out.contains(&tool) {
                out.push(tool);
            }
        }
    }
    Ok(out)
}

/// A front matter value: one line of text, or a list (`[a, b]` or lines
/// of `- a`).
#[derive(Debug, PartialEq)]
enum Value {
    Text(String),
    List(Vec<String>),
}

/// The `key: value` lines between the opening and closing `---`, and the
/// text after. Only what agent files use of YAML: one-line values (quoted
/// or not), `[a, b]` lists, `- a` lists, and `>`/`|` blocks of indented
/// lines.
fn front_matter(text: &str) -> Result<(Vec<(String, Value)>, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("it does not start with a front matter ('---' on the first line)")?;
    let mut fields: Vec<(String, Value)> = Vec::new();
    let mut offset = 0;
    let mut closed = None;
    let lines: Vec<&str> = rest.split_inclusive('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        let raw = lines[i];
        let line = raw.trim_end_matches(['\n', '\r']);
        offset += raw.len();
        i += 1;
        if line.trim_end() == "---" {
            closed = Some(offset);
            break;
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("the front matter line '{line}' is not 'key: value'"));
        };
        if key.starts_with([' ', '\t', '-']) {
            return Err(format!(
                "the front matter line '{line}' belongs to no key"
            ));
        }
        let value = value.trim();
        // What the following indented lines hold, for a list or a block.
        let mut more = Vec::new();
        while i < lines.len() {
            let next = lines[i].trim_end_matches(['\n', '\r']);
            if !(next.starts_with([' ', '\t']) || next.starts_with("- ")) || next.trim() == "---" {
                break;
            }
            offset += lines[i].len();
            i += 1;
            more.push(next.trim());
        }
        let value = if value.is_empty() && more.iter().all(|l| l.starts_with("- ")) && !more.is_empty() {
            Value::List(more.iter().map(|l| unquote(l[2..].trim())).collect())
        } else if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            Value::List(
                inner
                    .split(',')
                    .map(|s| unquote(s.trim()))
                    .filter(|s| !s.is_empty())
                    .collect(),
            )
        } else if value.starts_with(['|', '>']) {
            let joiner = if value.starts_with('|') { "\n" } else { " " };
            Value::Text(more.join(joiner))
        } else {
            let mut text = unquote(value);
            for line in more {
                text.push(' ');
                text.push_str(line);
            }
            Value::Text(text)
        };
        fields.push((key.trim().to_string(), value));
    }
    let end = closed.ok_or("its front matter has no closing '---'")?;
    Ok((fields, &rest[end..]))
}

/// A value without the quotes around it; `\n` in double quotes is a new
/// line, as YAML reads it.
fn unquote(value: &str) -> String {
    let value = value.trim();
    if value.len() >= 2 && value.starts_with('"') && value.ends_with('"') {
        return value[1..value.len() - 1]
            .replace("\\n", "\n")
            .replace("\\\"", "\"");
    }
    if value.len() >= 2 && value.starts_with('\'') && value.ends_with('\'') {
        return value[1..value.len() - 1].replace("''", "'");
    }
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_claude_codes_agent_files_as_they_are_written() {
        let text = "---\nname: code-reviewer\ndescription: \"Reviews code; use after edits.\\nThorough.\"\ntools: Read, Grep, Glob, Edit\nmodel: inherit\n---\nYou review code.\n\nBe brief.\n";
        let agent = parse(text, "a.md").unwrap();
        assert_eq!(agent.name, "code-reviewer");
        assert_eq!(agent.description, "Reviews code; use after edits.\nThorough.");
        assert_eq!(
            agent.tools.unwrap(),
            ["file_read", "grep", "glob", "file_edit", "apply_patch"]
        );
        assert_eq!(agent.model, None);
        assert_eq!(agent.instructions, "You review code.\n\nBe brief.");
        assert_eq!(agent.problem, None);
    }

    #[test]
    fn lists_blocks_and_our_names() {
        let text = "---\nname: finder\ndescription: >\n  Finds things\n  fast\ntools:\n  - grep\n  - 'glob'\nmodel: gpt-4.1-mini\n---\nFind.";
        let agent = parse(text, "f.md").unwrap();
        assert_eq!(agent.description, "Finds things fast");
        assert_eq!(agent.tools.unwrap(), ["grep", "glob"]);
        assert_eq!(agent.model.as_deref(), Some("gpt-4.1-mini"));
        let inline = parse("---\nname: x\ntools: [bash, Read]\n---\n", "x.md").unwrap();
        assert_eq!(inline.tools.unwrap(), ["bash", "file_read"]);
    }

    #[test]
    fn a_bad_tools_list_is_kept_as_the_agents_problem() {
        for (tools, said) in [
            ("Read, Fly", "'Fly', which is neither"),
            ("Read, Task", "subagents do not nest"),
            ("[]", "is empty"),
        ] {
            let text = format!("---\nname: bad\ntools: {tools}\n---\nx");
            let agent = parse(&text, "bad.md").unwrap();
            let problem = agent.problem.unwrap();
            assert!(problem.contains(said), "{tools}: {problem}");
        }
    }

    #[test]
    fn files_that_are_not_agents_say_why() {
        for (text, said) in [
            ("no front matter", "does not start"),
            ("---\nname: x\n", "no closing"),
            ("---\ndescription: d\n---\n", "no 'name'"),
            ("---\nname: a b\n---\n", "may hold only"),
            ("---\nname x\n---\n", "not 'key: value'"),
            ("---\nname: [a]\n---\n", "must be text"),
        ] {
            let err = parse(text, "t.md").unwrap_err();
            assert!(err.contains(said), "{text:?}: {err}");
        }
    }

    #[test]
    fn the_later_place_wins_and_an_untrusted_project_is_not_read() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join(".git")).unwrap();
        let write = |dir: PathBuf, name: &str, body: &str| {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join(format!("{name}.md")),
                format!("---\nname: {name}\ndescription: d\n---\n{body}"),
            )
            .unwrap();
        };
        write(home.path().join(".config/ikigai/agents"), "a", "ours");
        write(home.path().join(".claude/agents"), "a", "claude's");
        write(home.path().join(".claude/agents"), "b", "b");
        write(project.path().join(".claude/agents"), "a", "project's");
        let env = Env::from_pairs([("HOME", home.path().to_str().unwrap())]);
        let (agents, warnings) = load(&env, project.path(), false);
        let names: Vec<(&str, &str)> = agents
            .iter()
            .map(|a| (a.name.as_str(), a.instructions.as_str()))
            .collect();
        assert_eq!(names, [("a", "ours"), ("b", "b")]);
        assert!(warnings[0].contains("not trusted"), "{warnings:?}");
        let (agents, warnings) = load(&env, project.path(), true);
        assert_eq!(agents[0].instructions, "project's");
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
