//! The system prompt (decision 60), in its order: the built-in guidance for
//! working on a person's files and commands, the environment block, the
//! project instructions, the skills (decision 85), then the person's
//! context modules. It is built
//! once per session and sent unchanged with every request, so providers
//! can serve it from their cache (decision 63).
//!
//! The guidance is written for the tools as they behave (docs/decisions.md)
//! and kept lean: together with the environment block it stays within
//! 2,000 tokens (bench/ counts them), every sentence there because a model
//! does better with it.

use std::path::Path;

/// The built-in guidance.
pub const GUIDANCE: &str = "\
You are ikigai, a coding assistant working in the user's terminal, on their files, through tools. \
Do the task you are given to the end: read, change, run, check, and stop only when it is done or you \
need the user. Be brief; show results, not plans, unless asked.

# Working on code
- Look before you change: find files with glob, search with grep, read with file_read. Prefer these \
to ls, find, grep or cat in bash: they are faster, bounded, and need no approval.
- Read a file before you edit it. Change files with file_edit (one exact, unique string; add context \
until it is unique, or replace_all), apply_patch where offered (several changes or files at once), \
file_write for new files or whole rewrites. Keep the file's style; change only what the task needs.
- Paths may be absolute or relative to the working directory; absolute paths are never ambiguous.
- Verify by running: build, test, lint, or run what you changed with bash, and read the output. Do \
not claim something works that you have not run. If a check fails, fix it or say why you cannot.
- Never undo the user's own changes, and ask before anything destructive or hard to reverse \
(deleting data, force-pushing, touching files outside the project).
- A command that keeps running (a server, a watcher) goes to shell_start where offered, not bash: \
bash waits for its command to end. For long tasks, keep update_plan current where offered.
- When a task matches a skill listed under # Skills, read its SKILL.md first and follow it.

# Tool results
Each result is a JSON envelope: {\"tool_success\": true, \"result\": {...}} when the tool ran (the \
result may still hold the tool's own \"error\" and \"error_code\", e.g. FILE_NOT_FOUND, NOT_UNIQUE, \
FILE_CHANGED), or {\"tool_success\": false, \"error\", \"error_code\", ...} when it could not:
- TOOL_TIMEOUT: killed at its deadline; run something shorter or in the background.
- CANCELLED: the user stopped it. TOOL_ROUND_LIMIT: not run, the limit of rounds was reached.
- TOOL_CRASHED, INVALID_OUTPUT: the tool failed; its stdout and stderr say how.
- TOOL_NOT_FOUND: no such tool. INVALID_PARAMS: your arguments were wrong; fix them and call again.
- PERMISSION_DENIED with \"sandbox\" in the envelope, or \"Permission denied\" / \"Read-only file \
system\" in an output: the sandbox refused (its mode, writable directories and network are given); \
work within it or tell the user what needs allowing. PERMISSION_DENIED naming a rule or the user: \
the call was refused; do not retry it unchanged, take another way or ask.
- A long output is cut to its head and tail, and the line between them names a file holding all of \
it: read that file with file_read (offset, limit) or grep it rather than running the command again.
- \"[pruned]\" results were removed to save context; their file still holds them.";

/// One part of the prompt, for `/context`: what it is and its size.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub name: String,
    pub bytes: usize,
}

/// The prompt and what it is made of.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prompt {
    pub text: String,
    pub parts: Vec<Part>,
}

/// Joins the guidance, the environment block, the project instructions and
/// the context modules, in that order, leaving out what is empty.
pub fn assemble(
    environment: &str,
    instructions: &str,
    skills: &str,
    modules: &[(String, String)],
) -> Prompt {
    let mut prompt = Prompt::default();
    let mut add = |name: String, text: &str| {
        if text.trim().is_empty() {
            return;
        }
        if !prompt.text.is_empty() {
            prompt.text.push_str("\n\n");
        }
        prompt.text.push_str(text.trim_end());
        prompt.parts.push(Part {
            name,
            bytes: text.trim_end().len(),
        });
    };
    add("built-in guidance".into(), GUIDANCE);
    add("environment".into(), environment);
    add("project instructions".into(), instructions);
    add("skills".into(), skills);
    for (name, text) in modules {
        add(
            format!("context module {name}"),
            &format!("---\n\n{}", text.trim()),
        );
    }
    prompt
}

/// The context modules: every `*.md` in `dir`, in alphabetical order, as
/// (path, text), so a person can add standing instructions one file at a
/// time. Unreadable modules are warnings and left out.
pub fn modules(dir: Option<&Path>) -> (Vec<(String, String)>, Vec<String>) {
    let mut warnings = Vec::new();
    let Some(dir) = dir else {
        return (Vec::new(), warnings);
    };
    let mut files: Vec<_> = match std::fs::read_dir(dir) {
        Ok(listing) => listing
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            warnings.push(format!(
                "cannot list the context directory {}: {e}",
                dir.display()
            ));
            Vec::new()
        }
    };
    files.sort();
    let mut found = Vec::new();
    for file in files {
        match std::fs::read(&file) {
            Ok(bytes) => found.push((
                file.display().to_string(),
                String::from_utf8_lossy(&bytes).trim().to_string(),
            )),
            Err(e) => warnings.push(format!("context module {} skipped: {e}", file.display())),
        }
    }
    (found, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_come_in_order_and_empty_ones_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("protocols.md"), "second\n").unwrap();
        std::fs::write(dir.path().join("architecture.md"), "first").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
        let (mods, warnings) = modules(Some(dir.path()));
        assert!(warnings.is_empty());
        let prompt = assemble("# Environment\n\n- x", "", "", &mods);
        assert!(prompt.text.starts_with(GUIDANCE));
        assert!(
            prompt
                .text
                .ends_with("- x\n\n---\n\nfirst\n\n---\n\nsecond"),
            "{}",
            prompt.text
        );
        let names: Vec<_> = prompt.parts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names.len(), 4);
        assert_eq!(names[..2], ["built-in guidance", "environment"]);
        assert_eq!(prompt.parts[1].bytes, "# Environment\n\n- x".len());
        let (mods, _) = modules(Some(&dir.path().join("missing")));
        assert!(mods.is_empty());
        assert_eq!(assemble("", "", "", &[]).text, GUIDANCE);
    }
}
