//! What the approval prompt shows of a call: for bash the command, for
//! file_write and file_edit the unified diff the call would make to the
//! file as it is now (coloured when the terminal allows), for apply_patch
//! that diff for each file of the patch, for any other tool its arguments.
//! Reads the files; writes nothing.
//!
//! What the model wrote is shown, never obeyed (decision 59): its control
//! characters appear as `\e`, `\r`, `<U+202E>`, and a line says so before
//! the question, since what runs is the text with those characters. For
//! bash, a second block says how the rules read the command (decision 100):
//! each command it runs and the allow rule that matches it, or why none
//! does.

use std::path::Path;

use serde_json::Value;

use crate::tools::apply_patch;
use crate::tools::patch::apply::{apply, Text};
use crate::tools::patch::parse::{parse, Op};

use super::super::render::diff::{read_text, unified, MAX_FILE_BYTES};
use super::super::render::visible::{hides, visible};
use super::super::render::Paint;
use super::rules::{self, AllowVerdict, Rule};
use super::runs::Kind;

/// The most diff lines shown; the rest is counted.
const MAX_DIFF_LINES: usize = 400;

/// The text shown above the question for a call of `tool`.
pub fn describe(tool: &str, arguments: &Value, paint: Paint) -> String {
    let text = describe_call(tool, arguments, paint);
    // Decision 70: a file too large for /undo to keep is named before the
    // question.
    match super::super::undo::not_kept_note(tool, arguments) {
        Some(note) => format!("{text}\n{}", paint.dim(&note)),
        None => text,
    }
}

fn describe_call(tool: &str, arguments: &Value, paint: Paint) -> String {
    let path = arguments["file_path"].as_str();
    match (tool, path) {
        ("bash", _) => {
            let command = arguments["command"].as_str().unwrap_or("");
            format!(
                "{} wants to run:\n{}",
                paint.bold("bash"),
                indent(&visible(command))
            )
        }
        ("shell_start", _) => {
            let command = arguments["command"].as_str().unwrap_or("");
            format!(
                "{} wants to run in the background (until it ends or is killed):\n{}",
                paint.bold("shell_start"),
                indent(&visible(command))
            )
        }
        ("file_write", Some(raw_path)) => {
            let path = visible(raw_path);
            let new = arguments["content"].as_str().unwrap_or("");
            let (old, what) = match read_text(Path::new(raw_path)) {
                Ok(text) => (Ok(text), "overwrite"),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Ok(String::new()), "create"),
                Err(e) => (Err(e), "overwrite"),
            };
            let shown = match old {
                Ok(old) if new.len() as u64 <= MAX_FILE_BYTES => diff(&old, new, paint),
                Ok(_) => "  (too large to show a diff)".into(),
                Err(e) => format!("  (no diff: {e})"),
            };
            format!(
                "{} wants to {what} {path} ({} bytes):\n{shown}",
                paint.bold("file_write"),
                new.len(),
            )
        }
        ("file_edit", Some(path)) => {
            let head = format!(
                "{} wants to edit {}:",
                paint.bold("file_edit"),
                visible(path)
            );
            match edited(path, arguments) {
                Ok((old, new)) => format!("{head}\n{}", diff(&old, &new, paint)),
                Err(why) => format!("{head} {why}\n{}", indent(&visible(&pretty(arguments)))),
            }
        }
        ("apply_patch", _) => patch(arguments["input"].as_str().unwrap_or(""), paint),
        _ => format!(
            "{} wants to run with:\n{}",
            paint.bold(&visible(tool)),
            indent(&visible(&pretty(arguments)))
        ),
    }
}

/// The line shown before the question when the call's arguments hold
/// characters a terminal would act on or hide: the person must know that
/// what runs is not only what they can read.
pub fn hidden_characters(tool: &str, arguments: &Value) -> Option<String> {
    if !holds_hidden(arguments) {
        return None;
    }
    let what = if tool == "bash" {
        "The command holds"
    } else {
        "The arguments hold"
    };
    Some(format!(
        "Warning: {what} control or invisible characters (shown above as \\e, \\r or \
         <U+XXXX>); they are part of what would run."
    ))
}

fn holds_hidden(value: &Value) -> bool {
    match value {
        Value::String(s) => hides(s),
        Value::Array(items) => items.iter().any(holds_hidden),
        Value::Object(map) => map.iter().any(|(k, v)| hides(k) || holds_hidden(v)),
        _ => false,
    }
}

/// How the rules read a bash command: each command it runs and the allow
/// rule that matches it, or why none does. None when there is nothing to
/// add to the command as shown (one plain command, no rules for bash).
pub fn reading(arguments: &Value, rules: &[&Rule]) -> Option<String> {
    let command = rules::Command::of(arguments);
    let mut lines: Vec<String> = Vec::new();
    for run in command.runs.iter().filter(|r| r.kind != Kind::DenyOnly) {
        let why = match rules::allow_verdict(rules, run) {
            AllowVerdict::By(rule) => format!("allowed by {rule}"),
            AllowVerdict::NotJudged => continue,
            AllowVerdict::Refused => match run.kind {
                Kind::Unknowable => "its program cannot be known without running it".into(),
                Kind::Unreadable => "it cannot be read (an unclosed quote or bracket)".into(),
                _ if run.writes_file => "it writes into a file, which only you can allow".into(),
                _ => "no allow rule matches it".into(),
            },
        };
        let line = format!("  {}: {why}", rules::matched(run));
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    let plain = command.runs.len() == 1
        && command.runs[0].kind == Kind::Runs
        && command.runs[0].text == command.raw.trim();
    if lines.is_empty() || (plain && rules.is_empty()) {
        return None;
    }
    Some(visible(&format!("As the rules read it:\n{}", lines.join("\n"))).into_owned())
}

/// The file before and after the edit, or why the edit will not apply.
fn edited(path: &str, arguments: &Value) -> Result<(String, String), String> {
    let old_string = arguments["old_string"].as_str().unwrap_or("");
    let new_string = arguments["new_string"].as_str().unwrap_or("");
    let all = arguments["replace_all"].as_bool().unwrap_or(false);
    let old = read_text(Path::new(path)).map_err(|e| format!("(no diff: {e})"))?;
    if old_string.is_empty() {
        return Err("(old_string is empty; the edit will fail)".into());
    }
    match old.matches(old_string).count() {
        0 => Err("(old_string is not in the file; the edit will fail)".into()),
        n if n > 1 && !all => Err(format!(
            "(old_string occurs {n} times and replace_all is not set; the edit will fail)"
        )),
        _ => {
            let new = if all {
                old.replace(old_string, new_string)
            } else {
                old.replacen(old_string, new_string, 1)
            };
            Ok((old, new))
        }
    }
}

/// An apply_patch call: the files it names, then each operation as the
/// diff it would make to the file as it is now (decision 67), or why it
/// will fail. Operations on one file are shown one after the other, each
/// against the file on disk, as the model wrote them.
fn patch(input: &str, paint: Paint) -> String {
    let title = paint.bold("apply_patch");
    let ops = match parse(input) {
        Ok(ops) => ops,
        Err(e) => {
            return format!(
                "{title} wants to apply a patch that will fail ({}):\n{}",
                e.0,
                indent(input)
            )
        }
    };
    let paths: Vec<String> = apply_patch::paths(input)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let mut out = format!("{title} wants to change {}:", paths.join(", "));
    for op in &ops {
        let (head, shown) = match op {
            Op::Add { path, lines } => {
                let mut new = lines.join("\n");
                if !lines.is_empty() {
                    new.push('\n');
                }
                let what = if Path::new(path).exists() {
                    "replace"
                } else {
                    "add"
                };
                (format!("{what} {path}"), Ok((String::new(), new)))
            }
            Op::Delete { path } => (
                format!("delete {path}"),
                read_text(Path::new(path))
                    .map(|old| (old, String::new()))
                    .map_err(|e| format!("(no diff: {e})")),
            ),
            Op::Update {
                path,
                move_to,
                chunks,
            } => {
                let head = match move_to {
                    Some(to) => format!("move {path} to {to} and update it"),
                    None => format!("update {path}"),
                };
                let shown = read_text(Path::new(path))
                    .map_err(|e| format!("(no diff: {e})"))
                    .and_then(|old| {
                        let new = apply(&Text::new(old.as_bytes()), chunks)
                            .map_err(|(_, why)| format!("(will fail: {why})"))?;
                        Ok((old, String::from_utf8_lossy(&new).into_owned()))
                    });
                (head, shown)
            }
        };
        out.push('\n');
        out.push_str(&paint.bold(&head));
        match shown {
            Ok((old, new)) => {
                out.push('\n');
                out.push_str(&diff(&old, &new, paint));
            }
            Err(why) => {
                out.push(' ');
                out.push_str(&why);
            }
        }
    }
    out
}

/// The unified diff the call would make, drawn as the terminal draws a
/// change once it is done, so the person sees the same thing before and
/// after.
fn diff(old: &str, new: &str, paint: Paint) -> String {
    match unified(old, new, paint, "", MAX_DIFF_LINES) {
        Some(d) => d.text.trim_end_matches('\n').to_string(),
        None => "  (no change)".into(),
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;

    fn plain() -> Paint {
        Paint::for_stream(false)
    }

    #[test]
    fn bash_shows_the_command() {
        let text = describe("bash", &json!({"command": "make\nmake install"}), plain());
        assert_eq!(text, "bash wants to run:\n  make\n  make install");
    }

    #[test]
    fn file_write_shows_the_diff_it_would_make() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        let p = path.to_str().unwrap();
        let text = describe(
            "file_write",
            &json!({"file_path": p, "content": "one\n"}),
            plain(),
        );
        assert!(
            text.starts_with(&format!("file_write wants to create {p} (4 bytes):\n")),
            "{text}"
        );
        assert!(text.ends_with("@@ -0,0 +1 @@\n+one"), "{text}");
        std::fs::write(&path, "one\ntwo\n").unwrap();
        let text = describe(
            "file_write",
            &json!({"file_path": p, "content": "one\n2\n"}),
            plain(),
        );
        assert!(text.contains("overwrite"), "{text}");
        assert!(text.contains("\n-two\n+2"), "{text}");
    }

    #[test]
    fn file_edit_shows_the_diff_or_why_it_will_fail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let p = path.to_str().unwrap();
        std::fs::write(&path, "a = 1\ndebug = false\nb = 2\n").unwrap();
        let edit = |old: &str, all: bool| {
            describe(
                "file_edit",
                &json!({"file_path": p, "old_string": old, "new_string": "debug = true", "replace_all": all}),
                plain(),
            )
        };
        let text = edit("debug = false", false);
        assert!(
            text.contains(" a = 1\n-debug = false\n+debug = true\n b = 2"),
            "{text}"
        );
        assert!(edit("missing", false).contains("old_string is not in the file"));
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; (MAX_FILE_BYTES + 1) as usize]).unwrap();
        let text = describe(
            "file_write",
            &json!({"file_path": big.to_str().unwrap(), "content": ""}),
            plain(),
        );
        assert!(
            text.ends_with("(no diff: the file is 1048577 bytes, too large to show a diff)"),
            "{text}"
        );
        assert!(edit("= ", false).contains("occurs 3 times"));
        assert!(edit("= ", true).contains("+a debug = true1"));
    }

    #[test]
    fn a_preview_shows_no_secret_and_never_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("id_ed25519");
        std::fs::write(&secret, "PRIVATE KEY").unwrap();
        let link = dir.path().join("notes.txt");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let via = dir.path().join("via");
        std::os::unix::fs::symlink(dir.path(), &via).unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let shown = |path: &Path| {
            describe(
                "file_edit",
                &json!({"file_path": path.to_str().unwrap(), "old_string": "KEY", "new_string": "x"}),
                plain(),
            )
        };
        for (path, why) in [
            (link.clone(), "is a symbolic link"),
            (via.join("id_ed25519"), "via is a symbolic link"),
            (fifo.clone(), "is a FIFO, not a regular file"),
            (
                PathBuf::from("/dev/zero"),
                "/dev/zero is a file the system makes",
            ),
            (PathBuf::from("/proc/1/environ"), "a file the system makes"),
            (
                PathBuf::from("/proc/self/environ"),
                "a file the system makes",
            ),
        ] {
            let text = shown(&path);
            assert!(
                text.contains(why) && !text.contains("PRIVATE"),
                "{path:?}: {text}"
            );
        }
        let text = describe(
            "file_write",
            &json!({"file_path": link.to_str().unwrap(), "content": "x"}),
            plain(),
        );
        assert!(text.contains("(no diff: is a symbolic link)"), "{text}");
    }

    #[test]
    fn apply_patch_shows_a_diff_per_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
        std::fs::write(p("m.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(p("gone.txt"), "bye\n").unwrap();
        let input = format!(
            "*** Begin Patch\n*** Add File: {}\n+hello\n*** Update File: {}\n@@\n one\n-two\n+2\n\
             *** Delete File: {}\n*** End Patch\n",
            p("new.txt"),
            p("m.txt"),
            p("gone.txt")
        );
        let text = describe("apply_patch", &json!({ "input": input }), plain());
        assert!(
            text.starts_with(&format!(
                "apply_patch wants to change {}, {}, {}:\nadd {}\n",
                p("new.txt"),
                p("m.txt"),
                p("gone.txt"),
                p("new.txt")
            )),
            "{text}"
        );
        assert!(text.contains("+hello"), "{text}");
        assert!(text.contains(&format!("update {}\n", p("m.txt"))), "{text}");
        assert!(text.contains(" one\n-two\n+2\n three"), "{text}");
        assert!(
            text.contains(&format!("delete {}\n", p("gone.txt"))),
            "{text}"
        );
        assert!(text.ends_with("-bye"), "{text}");
        // Nothing was written.
        assert!(!Path::new(&p("new.txt")).exists());
        assert!(Path::new(&p("gone.txt")).exists());

        let missing = format!(
            "*** Begin Patch\n*** Update File: {}\n@@\n-four\n+4\n*** End Patch",
            p("m.txt")
        );
        let text = describe("apply_patch", &json!({ "input": missing }), plain());
        assert!(
            text.contains("(will fail: chunk 1 of 1: could not find"),
            "{text}"
        );
        let text = describe("apply_patch", &json!({"input": "nonsense"}), plain());
        assert!(
            text.starts_with("apply_patch wants to apply a patch that will fail (the first line"),
            "{text}"
        );
        if std::env::var_os("NO_COLOR").is_none() {
            let text = describe(
                "apply_patch",
                &json!({ "input": input }),
                Paint::for_stream(true),
            );
            assert!(text.contains("\x1b[32m+hello\x1b[0m"), "{text:?}");
        }
    }

    #[test]
    fn colours_when_asked_and_other_tools_show_arguments() {
        // Paint follows NO_COLOR, which the person running the tests may set.
        if std::env::var_os("NO_COLOR").is_none() {
            let painted = diff("a\n", "b\n", Paint::for_stream(true));
            assert!(painted.contains("\x1b[31m-a\x1b[0m"), "{painted:?}");
            assert!(painted.contains("\x1b[32m+b\x1b[0m"), "{painted:?}");
        }
        assert!(!diff("a\n", "b\n", plain()).contains('\x1b'));
        let text = describe("web_fetch", &json!({"url": "https://x.org"}), plain());
        assert_eq!(
            text,
            "web_fetch wants to run with:\n  {\n    \"url\": \"https://x.org\"\n  }"
        );
    }
}
