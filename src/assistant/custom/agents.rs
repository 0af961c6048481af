//! Agents from Markdown files (decision 86; docs/decisions.md 126), found
//! and read by this room's loader (`custom::list`, `Kind::Agents`): the
//! person's `~/.config/ikigai/agents/` and `~/.claude/agents/`, a trusted
//! project's `.ikigai/agents/` and `.claude/agents/`, the project's before
//! the person's and ours before Claude Code's. The front matter gives
//! `name` (else the file's name), `description`, optional `tools` and
//! `model`; the body is the agent's instructions. `tools` takes our names
//! or Claude Code's (`Bash`, `Read`, `Write`, `Edit`, `MultiEdit`, `Glob`,
//! `Grep`, `WebFetch`, `WebSearch`); a list that names something else, or
//! `task`, makes the agent unusable with the reason kept, and a `task`
//! call naming it gets that reason while the others run. `model` is
//! `inherit` or absent for the caller's model, else another model of the
//! caller's provider.

use super::{list, Doc, Kind, Places};
use crate::assistant::conversation::Agent;

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

/// Every agent the places hold, and what to warn of (files that could
/// not be read, a name two files give).
pub fn load(places: &Places) -> (Vec<Agent>, Vec<String>) {
    let listing = list(Kind::Agents, places);
    let mut warnings: Vec<String> = listing.warnings.iter().map(|w| w.to_string()).collect();
    let mut agents: Vec<Agent> = Vec::new();
    for doc in &listing.docs {
        let agent = from_doc(doc);
        match agents.iter().find(|a| a.name == agent.name) {
            Some(first) => warnings.push(format!(
                "{}: the agent name '{}' is taken by {}",
                doc.path.display(),
                agent.name,
                first.from
            )),
            None => agents.push(agent),
        }
    }
    (agents, warnings)
}

/// An agent from its file's text, as `load` reads one; Err says what is
/// wrong with its front matter.
#[cfg(test)]
fn parse(text: &str, file_name: &str) -> Result<Agent, String> {
    use super::{front, Origin};
    let (meta, body) = front::split(text).map_err(|e| e.to_string())?;
    Ok(from_doc(&Doc {
        name: file_name
            .trim_end_matches(super::read::EXTENSION)
            .to_string(),
        path: file_name.into(),
        origin: Origin::Personal,
        meta,
        body: body.to_string(),
    }))
}

/// The agent a file describes; what makes it unusable is its `problem`.
fn from_doc(doc: &Doc) -> Agent {
    let name = doc.field("name").unwrap_or_else(|| doc.name.clone());
    let mut problem = None;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        problem = Some(format!(
            "its name '{name}' may hold only letters, digits, '-' and '_'"
        ));
    }
    let tools = match doc.list("tools") {
        None if doc.meta.contains_key("tools") => {
            problem = Some("its 'tools' is neither a list nor a line of names".into());
            None
        }
        None => None,
        Some(names) => match our_names(&names) {
            Ok(tools) => Some(tools),
            Err(why) => {
                problem = problem.or(Some(why));
                None
            }
        },
    };
    Agent {
        name,
        description: doc.field("description").unwrap_or_default(),
        instructions: doc.body.trim().to_string(),
        tools,
        model: doc
            .field("model")
            .filter(|m| !m.is_empty() && m != "inherit"),
        from: format!("{} ({})", doc.path.display(), doc.origin.label()),
        problem,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assistant::custom::read::file_name as md;
    use std::path::PathBuf;

    #[test]
    fn reads_claude_codes_agent_files_as_they_are_written() {
        let text = "---\nname: code-reviewer\ndescription: \"Reviews code; use after edits.\\nThorough.\"\ntools: Read, Grep, Glob, Edit\nmodel: inherit\n---\nYou review code.\n\nBe brief.\n";
        let agent = parse(text, &md("a")).unwrap();
        assert_eq!(agent.name, "code-reviewer");
        assert_eq!(
            agent.description,
            "Reviews code; use after edits.\nThorough."
        );
        assert_eq!(
            agent.tools.unwrap(),
            ["file_read", "grep", "glob", "file_edit", "apply_patch"]
        );
        assert_eq!(agent.model, None);
        assert_eq!(agent.instructions, "You review code.\n\nBe brief.");
        assert_eq!(agent.problem, None);
    }

    #[test]
    fn lists_and_our_names_and_a_name_from_the_file() {
        let text = "---\ndescription: Finds things\ntools:\n  - grep\n  - 'glob'\nmodel: gpt-4.1-mini\n---\nFind.";
        let agent = parse(text, &md("finder")).unwrap();
        assert_eq!(agent.name, "finder");
        assert_eq!(agent.tools.unwrap(), ["grep", "glob"]);
        assert_eq!(agent.model.as_deref(), Some("gpt-4.1-mini"));
        let inline = parse("---\nname: x\ntools: [bash, Read]\n---\n", &md("x")).unwrap();
        assert_eq!(inline.tools.unwrap(), ["bash", "file_read"]);
    }

    #[test]
    fn a_bad_tools_list_or_name_is_kept_as_the_agents_problem() {
        for (line, said) in [
            ("tools: Read, Fly", "'Fly', which is neither"),
            ("tools: Read, Task", "subagents do not nest"),
            ("tools: []", "is empty"),
            ("name: a b", "may hold only"),
        ] {
            let text = format!("---\n{line}\n---\nx");
            let agent = parse(&text, &md("bad")).unwrap();
            let problem = agent.problem.unwrap();
            assert!(problem.contains(said), "{line}: {problem}");
        }
        let err = parse("---\nname: x\n", &md("t")).unwrap_err();
        assert!(err.contains("never closed"), "{err}");
    }

    #[test]
    fn the_project_wins_when_trusted_and_is_not_read_otherwise() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
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
        let places = |trusted| Places {
            home: Some(home.path().to_path_buf()),
            config_dir: Some(home.path().join(".config/ikigai")),
            project: project.path().to_path_buf(),
            trusted,
            ..Places::default()
        };
        let (agents, warnings) = load(&places(false));
        let names: Vec<(&str, &str)> = agents
            .iter()
            .map(|a| (a.name.as_str(), a.instructions.as_str()))
            .collect();
        assert_eq!(names, [("a", "ours"), ("b", "b")]);
        assert!(warnings.is_empty(), "{warnings:?}");
        let (agents, _) = load(&places(true));
        assert_eq!(agents[0].instructions, "project's");
    }
}
