//! Each finished tool call in words, as a person would say what was done:
//! `Read src/main.rs (120 lines)`, `Edited notes.txt (+2 -1)`, `Ran cargo
//! test (exit 0, 40 lines)`. A call to a tool we do not know by name (a
//! third-party tool, an MCP tool) gets the generic line. For file_write and
//! file_edit, the file is read before the call runs (`Before`), so the
//! change can be shown as a diff when it is done.

use std::path::PathBuf;

use serde_json::Value;

use super::diff::{self, Diff};
use super::{visible, Paint};
use crate::assistant::conversation::short_outcome;
use crate::assistant::model::ToolCall;
use crate::host::call::CallOutcome;
use crate::host::text::clip;

/// Lines of a diff shown under a call.
const DIFF_MAX_LINES: usize = 60;

/// A file as it was before a call that may change it.
pub struct Before {
    path: PathBuf,
    /// None: the file did not exist (or was too large or unreadable).
    content: Option<String>,
    existed: bool,
}

/// The file a file_write or file_edit call will change, read now.
pub fn before(call: &ToolCall) -> Option<Before> {
    if call.name != "file_write" && call.name != "file_edit" {
        return None;
    }
    let path = PathBuf::from(call.arguments["file_path"].as_str()?);
    let existed = path.exists();
    let content = diff::read_text(&path).ok();
    Some(Before {
        path,
        content,
        existed,
    })
}

/// How a call went, in words: whether it succeeded, one line, and for a
/// file change the coloured diff under it.
pub struct Account {
    pub ok: bool,
    pub line: String,
    pub diff: Option<String>,
}

pub fn account(
    call: &ToolCall,
    outcome: &CallOutcome,
    before: Option<&Before>,
    paint: Paint,
    indent: &str,
) -> Account {
    let (ok, generic) = short_outcome(outcome, 100);
    if !ok {
        return Account {
            ok,
            line: visible(&format!("{}: {generic}", call.name)).into_owned(),
            diff: None,
        };
    }
    let envelope = outcome.envelope.to_json();
    let result = &envelope["result"];
    let args = &call.arguments;
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    let lines_in = |v: &Value| v.as_str().map_or(0, count_lines);
    let mut diff = None;
    let line = match call.name.as_str() {
        "file_read" => {
            let path = text(&args["file_path"]);
            let n = lines_in(&result["output"]);
            match args["offset"].as_u64() {
                Some(from) if n > 0 => {
                    format!("Read {path} (lines {from}-{})", from + n as u64 - 1)
                }
                _ => format!("Read {path} ({})", plural(n, "line")),
            }
        }
        "file_write" | "file_edit" => {
            let path = text(&args["file_path"]);
            let change = before.and_then(|b| {
                let after = std::fs::read(&b.path).ok()?;
                let after = String::from_utf8_lossy(&after);
                let old = b.content.as_deref().unwrap_or("");
                (b.content.is_some() || !b.existed)
                    .then(|| diff::unified(old, &after, paint, indent, DIFF_MAX_LINES))
                    .flatten()
            });
            let created = before.is_some_and(|b| !b.existed);
            let counts = |d: &Diff| format!("+{} -{}", d.added, d.removed);
            let line = match (&change, call.name.as_str(), created) {
                (Some(d), _, true) => format!("Created {path} ({})", plural(d.added, "line")),
                (Some(d), "file_write", false) => format!("Wrote {path} ({})", counts(d)),
                (Some(d), _, false) => format!("Edited {path} ({})", counts(d)),
                (None, "file_write", _) => format!("Wrote {path} (no change)"),
                (None, _, _) => match result["replacements"].as_u64() {
                    Some(n) => format!("Edited {path} ({})", plural(n as usize, "replacement")),
                    None => format!("Edited {path}"),
                },
            };
            diff = change.map(|d| d.text);
            line
        }
        "bash" => {
            let command = text(&args["command"]);
            let first = command.lines().next().unwrap_or("");
            let more = if command.trim_end().lines().count() > 1 {
                " …"
            } else {
                ""
            };
            format!(
                "Ran {}{more} (exit {}, {})",
                clip(first, 60),
                result["exit_code"],
                plural(lines_in(&result["output"]), "line")
            )
        }
        "glob" => format!(
            "Found {} for {}",
            plural(result["count"].as_u64().unwrap_or(0) as usize, "path"),
            text(&args["pattern"])
        ),
        "grep" => format!(
            "Found {} matching {}",
            plural(result["count"].as_u64().unwrap_or(0) as usize, "line"),
            text(&args["pattern"])
        ),
        "web_search_brave" | "web_search_google" => format!(
            "Searched the web for \"{}\" ({})",
            clip(&text(&args["query"]), 60),
            plural(result["count"].as_u64().unwrap_or(0) as usize, "result")
        ),
        "web_fetch" => {
            let title = text(&result["title"]);
            let n = lines_in(&result["content"]);
            let url = text(&result["url"]);
            if title.is_empty() {
                format!("Fetched {} ({})", clip(&url, 80), plural(n, "line"))
            } else {
                format!(
                    "Fetched {} ({}, {})",
                    clip(&url, 80),
                    clip(&title, 40),
                    plural(n, "line")
                )
            }
        }
        // The assistant's own tools (decisions 68, 69).
        "shell_start" => format!(
            "Started job {} in the background: {}",
            result["job_id"],
            clip(text(&args["command"]).lines().next().unwrap_or(""), 60)
        ),
        "shell_output" => {
            let state = match (result["status"].as_str(), &result["exit_code"]) {
                (Some("exited"), code) => format!("exited {code}"),
                (Some(status), _) => status.to_string(),
                _ => String::new(),
            };
            format!(
                "Read job {} ({state}, {} new)",
                result["job_id"],
                plural(lines_in(&result["output"]), "line")
            )
        }
        "shell_kill" => format!(
            "Ended job {} ({})",
            result["job_id"],
            text(&result["status"])
        ),
        "update_plan" => format!(
            "Updated the plan ({} of {} done)",
            result["completed"], result["steps"]
        ),
        _ => format!("{}: {generic}", call.name),
    };
    // Paths, commands and titles come from the model or the tool (decision 59).
    let line = visible(&line).into_owned();
    Account { ok, line, diff }
}

fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        text.trim_end_matches('\n').split('\n').count()
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::envelope::{Envelope, Failure};
    use serde_json::json;

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments,
            local_id: false,
            signature: None,
        }
    }

    fn ok(result: Value) -> CallOutcome {
        CallOutcome::new(
            Envelope::Success {
                result,
                truncated: None,
            },
            vec![],
        )
    }

    fn line(name: &str, args: Value, result: Value) -> String {
        account(&call(name, args), &ok(result), None, Paint::OFF, "").line
    }

    #[test]
    fn each_tool_in_words() {
        assert_eq!(
            line(
                "file_read",
                json!({"file_path": "a.rs"}),
                json!({"output": "x\ny\n"})
            ),
            "Read a.rs (2 lines)"
        );
        assert_eq!(
            line(
                "file_read",
                json!({"file_path": "a.rs", "offset": 10}),
                json!({"output": "x\ny"})
            ),
            "Read a.rs (lines 10-11)"
        );
        assert_eq!(
            line(
                "bash",
                json!({"command": "cargo test\necho done"}),
                json!({"output": "ok", "exit_code": 0})
            ),
            "Ran cargo test … (exit 0, 1 line)"
        );
        assert_eq!(
            line(
                "glob",
                json!({"pattern": "*.rs"}),
                json!({"output": "a", "count": 3})
            ),
            "Found 3 paths for *.rs"
        );
        assert_eq!(
            line(
                "grep",
                json!({"pattern": "TODO"}),
                json!({"output": "a", "count": 1})
            ),
            "Found 1 line matching TODO"
        );
        assert_eq!(
            line(
                "web_search_brave",
                json!({"query": "rust"}),
                json!({"success": true, "results": [], "count": 2})
            ),
            "Searched the web for \"rust\" (2 results)"
        );
        assert_eq!(
            line(
                "web_fetch",
                json!({"url": "https://x.org"}),
                json!({"success": true, "url": "https://x.org/", "title": "X", "content": "a\nb"})
            ),
            "Fetched https://x.org/ (X, 2 lines)"
        );
        assert_eq!(
            line("mcp__s__t", json!({}), json!({"n": 1})),
            "mcp__s__t: ok, 7 bytes"
        );
        let failed = CallOutcome::new(
            Envelope::refused(Failure::Timeout, "Tool 'bash' timed out after 30s"),
            vec![],
        );
        let a = account(&call("bash", json!({})), &failed, None, Paint::OFF, "");
        assert!(!a.ok);
        assert_eq!(
            a.line,
            "bash: TOOL_TIMEOUT: Tool 'bash' timed out after 30s"
        );
    }

    #[test]
    fn edits_and_writes_show_their_diff() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        let p = path.to_str().unwrap();
        std::fs::write(&path, "one\ntwo\n").unwrap();
        let edit = call(
            "file_edit",
            json!({"file_path": p, "old_string": "two", "new_string": "2"}),
        );
        let snap = before(&edit).unwrap();
        std::fs::write(&path, "one\n2\n").unwrap();
        let a = account(
            &edit,
            &ok(json!({"replacements": 1})),
            Some(&snap),
            Paint::OFF,
            "  ",
        );
        assert_eq!(a.line, format!("Edited {p} (+1 -1)"));
        assert_eq!(a.diff.unwrap(), "  @@ -1,2 +1,2 @@\n   one\n  -two\n  +2\n");
        let new = dir.path().join("new.txt");
        let write = call(
            "file_write",
            json!({"file_path": new.to_str().unwrap(), "content": "a\n"}),
        );
        let snap = before(&write).unwrap();
        std::fs::write(&new, "a\n").unwrap();
        let a = account(
            &write,
            &ok(json!({"bytes": 2})),
            Some(&snap),
            Paint::OFF,
            "",
        );
        assert_eq!(a.line, format!("Created {} (1 line)", new.display()));
        assert!(before(&call("bash", json!({}))).is_none());
    }
}
