//! What the editor sees of a turn: the conversation's `Ui` port spoken as
//! `session/update` notifications. The reply streams as
//! `agent_message_chunk`s, piece by piece as the provider sends them; each
//! call is a `tool_call` (title, kind, `rawInput`, locations) when the
//! model asks for it, `in_progress` when it starts, and `completed` or
//! `failed` with its output and a `diff` for every file it changed; the
//! plan is a `plan`; each request's tokens are a `usage_update`.
//! Diagnostics and notices go to stderr, where the client logs them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::super::conversation::{short_call, Ui};
use super::super::cost;
use super::super::headless::verdict;
use super::super::model::{ToolCall, Usage};
use super::super::undo;
use super::permission::Current;
use super::wire::Wire;
use crate::host::call::CallOutcome;
use crate::host::text::clip;

/// The most bytes of a call's output shown as its content; the model's
/// own view (decision 25) and the saved capture are apart from this.
const SHOWN_OUTPUT: usize = 64 << 10;
/// A file larger than this is not read for its diff.
const DIFF_FILE_MAX: u64 = 4 << 20;
/// Live output is sent at most this often, so a chatty command does not
/// flood the client.
const LIVE_EVERY: Duration = Duration::from_millis(100);

/// A file as it was before a call ran, for its diff.
#[derive(Clone, Debug, PartialEq)]
enum Snapshot {
    Absent,
    Text(String),
    /// Not a regular text file within the size we read: no diff.
    Unreadable,
}

pub struct EditorUi {
    wire: Arc<Wire>,
    session: String,
    current: Current,
    cwd: PathBuf,
    /// The files each call may change, as they were before it ran.
    before: HashMap<String, Vec<(PathBuf, Snapshot)>>,
    /// A running call's output so far, and when it was last sent.
    live: HashMap<String, (String, Instant)>,
    /// An error said during the turn, not yet shown: when the turn ends on
    /// it, it becomes the prompt's error rather than a message.
    held_error: Option<String>,
    /// The model's window, for `usage_update`'s size.
    pub window: u64,
    pub model: String,
    /// Tokens and cost since the session started (`/cost`).
    pub spent: Usage,
    pub cost: f64,
    pub unpriced: bool,
}

impl EditorUi {
    pub fn new(wire: Arc<Wire>, session: String, current: Current, cwd: PathBuf) -> EditorUi {
        EditorUi {
            wire,
            session,
            current,
            cwd,
            before: HashMap::new(),
            live: HashMap::new(),
            held_error: None,
            window: 0,
            model: String::new(),
            spent: Usage::default(),
            cost: 0.0,
            unpriced: false,
        }
    }

    pub fn update(&self, update: Value) {
        self.wire.update(&self.session, update);
    }

    /// A piece of the agent's message.
    pub fn say(&self, text: &str) {
        if !text.is_empty() {
            self.update(json!({
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
            }));
        }
    }

    /// The error held back, now shown as part of the reply.
    fn flush_error(&mut self) {
        if let Some(error) = self.held_error.take() {
            self.say(&format!("\n\n*{error}*\n\n"));
        }
    }

    /// The error the turn ended on, taken (None when there was none).
    pub fn take_error(&mut self) -> Option<String> {
        self.held_error.take()
    }

    /// The turn is over: what is still held is shown.
    pub fn end_turn(&mut self) {
        self.flush_error();
        self.live.clear();
        self.before.clear();
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn absolute(&self, path: &str) -> PathBuf {
        let path = Path::new(path);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.cwd.join(path)
        }
    }

    /// The `tool_call` update announcing `call` (also how a replayed call
    /// is shown).
    pub fn announce(&self, call: &ToolCall, status: &str) -> Value {
        let locations: Vec<Value> = locations(call)
            .into_iter()
            .map(|(path, line)| {
                let mut at = json!({"path": self.absolute(&path)});
                if let Some(line) = line {
                    at["line"] = json!(line);
                }
                at
            })
            .collect();
        json!({
            "sessionUpdate": "tool_call",
            "toolCallId": call.id,
            "title": title(call),
            "kind": kind(call),
            "status": status,
            "rawInput": call.arguments,
            "locations": locations,
        })
    }
}

impl Ui for EditorUi {
    fn waiting(&mut self, _what: &str) {}

    fn text(&mut self, piece: &str) {
        self.flush_error();
        self.say(piece);
    }

    fn end_text(&mut self) {}

    fn tool_call(&mut self, call: &ToolCall) {
        self.flush_error();
        let files = undo::paths_of(&call.name, &call.arguments)
            .into_iter()
            .map(|p| {
                let path = self.absolute(&p.to_string_lossy());
                let before = snapshot(&path);
                (path, before)
            })
            .collect();
        self.before.insert(call.id.clone(), files);
        let update = self.announce(call, "pending");
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(update.clone());
        self.update(update);
    }

    fn tool_started(&mut self, call: &ToolCall) {
        self.update(json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call.id,
            "status": "in_progress",
        }));
    }

    fn tool_output(&mut self, call: &ToolCall, output: &[u8]) {
        let now = Instant::now();
        let (text, sent) = self
            .live
            .entry(call.id.clone())
            .or_insert_with(|| (String::new(), now - LIVE_EVERY));
        text.push_str(&String::from_utf8_lossy(output));
        if text.len() > SHOWN_OUTPUT {
            let mut cut = text.len() - SHOWN_OUTPUT;
            while !text.is_char_boundary(cut) {
                cut += 1;
            }
            text.drain(..cut);
        }
        if now.duration_since(*sent) < LIVE_EVERY {
            return;
        }
        *sent = now;
        let shown = text.clone();
        self.update(json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call.id,
            "content": [text_content(&shown)],
        }));
    }

    fn tool_outcome(&mut self, call: &ToolCall, outcome: &CallOutcome) {
        self.flush_error();
        self.live.remove(&call.id);
        let mut update = finished(&call.id, &outcome.to_json());
        for (path, before) in self.before.remove(&call.id).unwrap_or_default() {
            if let Some(diff) = diff(&path, &before, &snapshot(&path)) {
                if let Some(content) = update["content"].as_array_mut() {
                    content.push(diff);
                }
            }
        }
        self.update(update);
    }

    fn event(&mut self, event: &Value) {
        let text = event["content"]
            .as_str()
            .map_or_else(|| event.to_string(), str::to_string);
        eprintln!("ikigai acp: {text}");
    }

    fn notice(&mut self, text: &str) {
        eprintln!("ikigai acp: {text}");
    }

    fn error(&mut self, text: &str) {
        eprintln!("ikigai acp: error: {text}");
        self.flush_error();
        self.held_error = Some(text.to_string());
    }

    fn usage(&mut self, usage: &Usage) {
        self.spent.input_tokens += usage.input_tokens;
        self.spent.output_tokens += usage.output_tokens;
        self.spent.cached_input_tokens += usage.cached_input_tokens;
        match cost::cost(&self.model, *usage) {
            Some(c) => self.cost += c,
            None => self.unpriced = true,
        }
        let mut update = json!({
            "sessionUpdate": "usage_update",
            "used": usage.input_tokens + usage.output_tokens,
            "size": self.window,
        });
        if !self.unpriced {
            update["cost"] = json!({"amount": self.cost, "currency": "USD"});
        }
        self.update(update);
    }

    fn compacted(&mut self, before: u64, after: u64) {
        eprintln!("ikigai acp: context compacted: about {before} → {after} tokens");
    }

    fn plan(&mut self, plan: &Value) {
        self.update(plan_update(plan));
    }
}

/// The `tool_call_update` that ends call `call_id` with `envelope`: its
/// status and what the person reads of its output.
pub fn finished(call_id: &str, envelope: &Value) -> Value {
    let (ok, _) = verdict(envelope);
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": if ok { "completed" } else { "failed" },
        "content": [text_content(&output_text(envelope))],
        "rawOutput": envelope,
    })
}

/// `update_plan`'s `{plan: [{step, status}]}` as the protocol's `plan`.
pub fn plan_update(plan: &Value) -> Value {
    let entries: Vec<Value> = plan["plan"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| {
            json!({
                "content": item["step"].as_str().unwrap_or_default(),
                "priority": "medium",
                "status": match item["status"].as_str() {
                    Some("in_progress") => "in_progress",
                    Some("completed") => "completed",
                    _ => "pending",
                },
            })
        })
        .collect();
    json!({"sessionUpdate": "plan", "entries": entries})
}

fn text_content(text: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": text}})
}

/// A file as it is now, read only when it is a regular file of text
/// within `DIFF_FILE_MAX` reached without a link (a FIFO or a device is
/// never opened, and a link the model planted to a secret shows nothing).
fn snapshot(path: &Path) -> Snapshot {
    let linked = |p: &Path| std::fs::canonicalize(p).is_ok_and(|real| real != p);
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match path.parent() {
            Some(dir) if linked(dir) => Snapshot::Unreadable,
            _ => Snapshot::Absent,
        },
        Ok(meta) if meta.is_file() && meta.len() <= DIFF_FILE_MAX && !linked(path) => {
            match std::fs::read(path).map(String::from_utf8) {
                Ok(Ok(text)) => Snapshot::Text(text),
                _ => Snapshot::Unreadable,
            }
        }
        _ => Snapshot::Unreadable,
    }
}

/// The protocol's `diff` item for a file that changed from `before` to
/// `after`; None when it did not, or either side cannot be shown.
fn diff(path: &Path, before: &Snapshot, after: &Snapshot) -> Option<Value> {
    if before == after {
        return None;
    }
    let old = match before {
        Snapshot::Absent => Value::Null,
        Snapshot::Text(text) => json!(text),
        Snapshot::Unreadable => return None,
    };
    let new = match after {
        Snapshot::Absent => String::new(),
        Snapshot::Text(text) => text.clone(),
        Snapshot::Unreadable => return None,
    };
    Some(json!({"type": "diff", "path": path, "oldText": old, "newText": new}))
}

/// What the person sees of a call's result: a command's output, a file's
/// text, a failure's code and words; any other result as JSON.
fn output_text(envelope: &Value) -> String {
    let failure = |e: &Value| {
        format!(
            "{}: {}",
            e["error_code"].as_str().unwrap_or("ERROR"),
            e["error"].as_str().unwrap_or("failed")
        )
    };
    let result = &envelope["result"];
    let text = if envelope["tool_success"] == json!(false) {
        failure(envelope)
    } else if result["error"].is_string() {
        failure(result)
    } else if let Some(output) = result["output"].as_str() {
        output.to_string()
    } else if let Some(content) = result["content"].as_str() {
        content.to_string()
    } else if let Some(text) = result.as_str() {
        text.to_string()
    } else {
        serde_json::to_string_pretty(result).unwrap_or_default()
    };
    if text.len() <= SHOWN_OUTPUT {
        return text;
    }
    let mut end = SHOWN_OUTPUT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[… {} more bytes]", &text[..end], text.len() - end)
}

/// The protocol's kind of a call, for the client's icon: what the tool
/// does, and for a patch whether it only deletes or moves files.
pub fn kind(call: &ToolCall) -> &'static str {
    match call.name.as_str() {
        "file_read" | "shell_output" => "read",
        "file_write" | "file_edit" => "edit",
        "apply_patch" => {
            let patch = call.arguments["input"].as_str().unwrap_or_default();
            let ops: Vec<&str> = patch
                .lines()
                .filter(|l| l.starts_with("*** ") && l.contains(" File: "))
                .collect();
            let moves = patch.lines().any(|l| l.starts_with("*** Move to: "));
            if !ops.is_empty() && ops.iter().all(|l| l.starts_with("*** Delete File: ")) {
                "delete"
            } else if moves && ops.len() == 1 && !patch.lines().any(|l| l.starts_with(['+', '-'])) {
                "move"
            } else {
                "edit"
            }
        }
        "glob" | "grep" => "search",
        "bash" | "shell_start" | "shell_kill" => "execute",
        "web_fetch" | "web_search_brave" | "web_search_google" => "fetch",
        "update_plan" => "think",
        _ => "other",
    }
}

/// A short title for the call, as the client's list shows it.
pub fn title(call: &ToolCall) -> String {
    let arg = |key: &str| call.arguments[key].as_str().unwrap_or_default();
    let first_line = |text: &str| clip(text.lines().next().unwrap_or_default(), 120);
    match call.name.as_str() {
        "bash" => first_line(arg("command")),
        "shell_start" => format!("Start in the background: {}", first_line(arg("command"))),
        "shell_output" => format!("Output of job {}", arg("job_id")),
        "shell_kill" => format!("Stop job {}", arg("job_id")),
        "file_read" => format!("Read {}", arg("file_path")),
        "file_write" => format!("Write {}", arg("file_path")),
        "file_edit" => format!("Edit {}", arg("file_path")),
        "apply_patch" => {
            let paths: Vec<String> = undo::patch_paths(arg("input"))
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            clip(&format!("Patch {}", paths.join(", ")), 120)
        }
        "glob" => format!("Find {}", arg("pattern")),
        "grep" => format!("Search for {}", clip(arg("pattern"), 80)),
        "web_fetch" => format!("Fetch {}", clip(arg("url"), 100)),
        "web_search_brave" | "web_search_google" => {
            format!("Search the web for {}", clip(arg("query"), 80))
        }
        "update_plan" => "Update the plan".into(),
        _ => short_call(call, 120),
    }
}

/// The files a call reads or changes, as given (relative to the session's
/// cwd when not absolute), with a line where the call names one.
fn locations(call: &ToolCall) -> Vec<(String, Option<u64>)> {
    let arg = |key: &str| call.arguments[key].as_str().filter(|s| !s.is_empty());
    match call.name.as_str() {
        "file_read" => arg("file_path")
            .map(|p| vec![(p.to_string(), call.arguments["offset"].as_u64())])
            .unwrap_or_default(),
        "glob" | "grep" => arg("path")
            .map(|p| vec![(p.to_string(), None)])
            .unwrap_or_default(),
        _ => undo::paths_of(&call.name, &call.arguments)
            .into_iter()
            .map(|p| (p.to_string_lossy().into_owned(), None))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments,
            local_id: false,
            signature: None,
        }
    }

    #[test]
    fn kinds_follow_what_a_tool_does() {
        let k = |name: &str, args: Value| kind(&call(name, args));
        assert_eq!(k("file_read", json!({})), "read");
        assert_eq!(k("file_edit", json!({})), "edit");
        assert_eq!(k("grep", json!({})), "search");
        assert_eq!(k("bash", json!({})), "execute");
        assert_eq!(k("web_fetch", json!({})), "fetch");
        assert_eq!(k("update_plan", json!({})), "think");
        assert_eq!(k("mcp__x__y", json!({})), "other");
        let delete = "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch";
        assert_eq!(k("apply_patch", json!({"input": delete})), "delete");
        let moved = "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch";
        assert_eq!(k("apply_patch", json!({"input": moved})), "move");
        let edit = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch";
        assert_eq!(k("apply_patch", json!({"input": edit})), "edit");
    }

    #[test]
    fn titles_and_locations() {
        let read = call("file_read", json!({"file_path": "src/a.rs", "offset": 12}));
        assert_eq!(title(&read), "Read src/a.rs");
        assert_eq!(locations(&read), [("src/a.rs".to_string(), Some(12))]);
        let bash = call("bash", json!({"command": "cargo test\necho done"}));
        assert_eq!(title(&bash), "cargo test");
        assert!(locations(&bash).is_empty());
        let write = call(
            "file_write",
            json!({"file_path": "/w/x.txt", "content": ""}),
        );
        assert_eq!(locations(&write), [("/w/x.txt".to_string(), None)]);
    }

    #[test]
    fn diffs_only_for_files_that_changed_and_can_be_shown() {
        let p = Path::new("/w/a.txt");
        let text = |t: &str| Snapshot::Text(t.into());
        assert_eq!(diff(p, &text("a"), &text("a")), None);
        assert_eq!(
            diff(p, &Snapshot::Absent, &text("new")).unwrap(),
            json!({"type": "diff", "path": "/w/a.txt", "oldText": null, "newText": "new"})
        );
        assert_eq!(
            diff(p, &text("old"), &Snapshot::Absent).unwrap()["newText"],
            ""
        );
        assert_eq!(diff(p, &Snapshot::Unreadable, &text("x")), None);
    }

    #[test]
    fn snapshots_never_follow_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().canonicalize().unwrap();
        std::fs::write(dir.join("secret"), "key").unwrap();
        std::fs::write(dir.join("plain"), "text").unwrap();
        std::os::unix::fs::symlink(dir.join("secret"), dir.join("link")).unwrap();
        std::os::unix::fs::symlink(&dir, dir.join("via")).unwrap();
        assert_eq!(snapshot(&dir.join("plain")), Snapshot::Text("text".into()));
        assert_eq!(snapshot(&dir.join("absent")), Snapshot::Absent);
        assert_eq!(snapshot(&dir.join("link")), Snapshot::Unreadable);
        assert_eq!(snapshot(&dir.join("via/secret")), Snapshot::Unreadable);
        assert_eq!(snapshot(&dir.join("via/absent")), Snapshot::Unreadable);
        assert_eq!(snapshot(&dir), Snapshot::Unreadable);
    }

    #[test]
    fn outputs_as_the_person_reads_them() {
        assert_eq!(
            output_text(
                &json!({"tool_success": true, "result": {"output": "hi\n", "exit_code": 0}})
            ),
            "hi\n"
        );
        assert_eq!(
            output_text(
                &json!({"tool_success": false, "error": "no", "error_code": "PERMISSION_DENIED"})
            ),
            "PERMISSION_DENIED: no"
        );
        let long = "x".repeat(SHOWN_OUTPUT + 10);
        let shown = output_text(&json!({"tool_success": true, "result": {"output": long}}));
        assert!(
            shown.ends_with("[… 10 more bytes]"),
            "{}",
            &shown[shown.len() - 40..]
        );
    }

    #[test]
    fn plans_become_entries() {
        let plan = json!({"plan": [{"step": "a", "status": "completed"}, {"step": "b", "status": "in_progress"}]});
        assert_eq!(
            plan_update(&plan),
            json!({"sessionUpdate": "plan", "entries": [
                {"content": "a", "priority": "medium", "status": "completed"},
                {"content": "b", "priority": "medium", "status": "in_progress"},
            ]})
        );
    }
}
