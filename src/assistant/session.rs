//! The session log, so nothing said is lost: every message, tool call,
//! envelope and event is appended as one JSON line to
//! `$XDG_DATA_HOME/ikigai/sessions/ID.jsonl` (default `~/.local/share/...`)
//! and written out at once, so a crash loses nothing already shown.
//! `--resume` replays the latest file (by last write), `--resume ID` a given
//! one, and appends to it.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::context::environment::Environment;
use super::model::{Message, ToolCall, ToolResult};
use crate::host::envelope::{Envelope, Failure};
use crate::host::files::Dir;
use crate::tool::Env;

/// One line of a session file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// Written when the session starts and each time it is resumed.
    Start {
        id: String,
        time: u64,
        provider: String,
        model: String,
        /// The directory the assistant ran in (`/sessions` lists a
        /// directory's own sessions).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        /// The environment block the system prompt stated, so a resumed
        /// session keeps its prompt and is told what changed (decision 60).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        environment: Option<Environment>,
    },
    User {
        text: String,
    },
    Assistant {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// One tool call's envelope, written as soon as the call ends, with the
    /// events the tool reported to the person.
    ToolResult {
        call_id: String,
        name: String,
        envelope: Value,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        events: Vec<Value>,
    },
    /// A provider error or an interruption, shown to the person; not sent
    /// to the model.
    Notice {
        text: String,
    },
    /// `/compact` as older versions wrote it: the conversation before this
    /// line is replaced by this request and the model's summary.
    Compact {
        request: String,
        summary: String,
    },
    /// A tool call's envelope gave way to this stub to save context
    /// (decision 62); the envelope itself is in its ToolResult line above.
    Pruned {
        call_id: String,
        envelope: Value,
    },
    /// The conversation before this line was summarised: `history` replaces
    /// it, and went from about `tokens_before` to `tokens_after` tokens.
    Compacted {
        history: Vec<Message>,
        tokens_before: u64,
        tokens_after: u64,
    },
}

pub struct Session {
    id: String,
    path: PathBuf,
    file: File,
    /// The environment the resumed session's prompt last stated.
    environment: Option<Box<Environment>>,
}

/// Makes `dir` (the sessions directory, or a session's own directory) and
/// ikigai's data directory above it, mode 0700, checked as the host's own
/// (`host::files`): conversations hold what the person and the tools said,
/// which is for the person alone, and a directory a tool shaped is never
/// written into. Files in them are created 0600.
pub fn private_dir(dir: &Path) -> std::io::Result<Dir> {
    Dir::own(dir)
}

/// `$XDG_DATA_HOME/ikigai/sessions`, or `~/.local/share/ikigai/sessions`.
pub fn sessions_dir(env: &Env) -> Option<PathBuf> {
    Some(crate::host::files::data_dir(env)?.join("sessions"))
}

impl Session {
    /// Starts a new session file in `dir`.
    pub fn create(dir: &Path) -> Result<Session> {
        let dir = private_dir(dir)
            .with_context(|| format!("cannot create the sessions directory {}", dir.display()))?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let stamp = timestamp(now.as_secs());
        let mut salt = now.subsec_nanos() ^ std::process::id();
        loop {
            let id = format!("{stamp}-{:04x}", salt & 0xffff);
            let name = format!("{id}.jsonl");
            let path = dir.path().join(&name);
            match dir.create_new(&name, 0o600) {
                Ok(file) => {
                    return Ok(Session {
                        id,
                        path,
                        file,
                        environment: None,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    salt = salt.wrapping_add(1)
                }
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot create {}", path.display()))
                }
            }
        }
    }

    /// Opens the session `id` (or the latest in `dir`) to continue it, and
    /// returns the conversation it holds.
    pub fn resume(dir: &Path, id: Option<&str>) -> Result<(Session, Vec<Message>)> {
        let path = match id {
            Some(id) => {
                let path = dir.join(format!("{}.jsonl", id.trim_end_matches(".jsonl")));
                if !path.is_file() {
                    bail!("no session '{id}' in {}", dir.display());
                }
                path
            }
            None => {
                latest(dir)?.ok_or_else(|| anyhow!("no session to resume in {}", dir.display()))?
            }
        };
        let entries = read_entries(&path)?;
        // A session an older version wrote may be readable by others: its
        // directory and file are made private; one a tool shaped is refused.
        let own =
            private_dir(dir).with_context(|| format!("cannot resume from {}", dir.display()))?;
        let name = path.file_name().unwrap_or_default();
        let mut file = own
            .open_existing(name, true)
            .with_context(|| format!("cannot append to {}", path.display()))?;
        // A line torn by a crash must not swallow the next entry.
        let text = std::fs::read(&path).unwrap_or_default();
        if text.last().is_some_and(|b| *b != b'\n') {
            file.write_all(b"\n")
                .with_context(|| format!("cannot append to {}", path.display()))?;
        }
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        // The latest start line that recorded one.
        let environment = entries.iter().rev().find_map(|e| match e {
            Entry::Start { environment, .. } => environment.clone().map(Box::new),
            _ => None,
        });
        let session = Session {
            id,
            path,
            file,
            environment,
        };
        Ok((session, replay(&entries)))
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The environment a resumed session's prompt last stated, read with
    /// the rest of its file.
    pub fn environment(&self) -> Option<Environment> {
        self.environment.as_deref().cloned()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one entry as one line, in one write.
    pub fn append(&mut self, entry: &Entry) -> Result<()> {
        let mut line = serde_json::to_string(entry)?;
        line.push('\n');
        let dir = self.path.parent().unwrap_or(Path::new("."));
        self.file
            .write_all(line.as_bytes())
            .and_then(|_| self.file.flush())
            .map_err(|e| crate::host::files::plain(e, dir, &self.path))
            .context("cannot write the session log")
    }
}

/// Every entry of a session file. A line torn by a crash, or one a later
/// version wrote, is skipped; the rest still counts.
fn read_entries(path: &Path) -> Result<Vec<Entry>> {
    let reader = BufReader::new(
        File::open(path).with_context(|| format!("cannot read {}", path.display()))?,
    );
    let mut entries = Vec::new();
    for line in reader.lines() {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        if let Ok(entry) = serde_json::from_str::<Entry>(&line) {
            entries.push(entry);
        }
    }
    Ok(entries)
}

/// One session as `/sessions` lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub id: String,
    pub modified: SystemTime,
    /// The person's messages in it.
    pub messages: usize,
    /// The first of them.
    pub first: String,
}

/// The sessions in `dir` that ran in the directory `cwd`, newest first.
pub fn list(dir: &Path, cwd: &Path) -> Result<Vec<Summary>> {
    let listing = match std::fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", dir.display())),
    };
    let cwd = cwd.to_string_lossy();
    let mut found = Vec::new();
    for entry in listing.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let (Ok(modified), Ok(entries)) = (
            entry.metadata().and_then(|m| m.modified()),
            read_entries(&path),
        ) else {
            continue;
        };
        let here = entries
            .iter()
            .any(|e| matches!(e, Entry::Start { cwd: Some(dir), .. } if *dir == cwd));
        if !here {
            continue;
        }
        let users: Vec<&str> = entries
            .iter()
            .filter_map(|e| match e {
                Entry::User { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        found.push(Summary {
            id: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            modified,
            messages: users.len(),
            first: users.first().map(|t| t.to_string()).unwrap_or_default(),
        });
    }
    found.sort_by(|a, b| (b.modified, &b.id).cmp(&(a.modified, &a.id)));
    Ok(found)
}

/// The session file written last, if any.
fn latest(dir: &Path) -> Result<Option<PathBuf>> {
    let listing = match std::fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", dir.display())),
    };
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for entry in listing.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let Ok(modified) = entry.metadata().and_then(|m| m.modified()) else {
            continue;
        };
        if best
            .as_ref()
            .is_none_or(|(t, p)| (modified, &path) > (*t, p))
        {
            best = Some((modified, path));
        }
    }
    Ok(best.map(|(_, p)| p))
}

/// The conversation a list of entries describes. Tool results go back in
/// the order of the calls; a call whose result was never written (the
/// process died while it ran) gets a failure envelope saying so, so the
/// conversation stays one every provider accepts.
pub fn replay(entries: &[Entry]) -> Vec<Message> {
    let mut messages = Vec::new();
    let mut open_calls: Vec<ToolCall> = Vec::new();
    let mut results: Vec<ToolResult> = Vec::new();
    fn close(
        messages: &mut Vec<Message>,
        calls: &mut Vec<ToolCall>,
        results: &mut Vec<ToolResult>,
    ) {
        if calls.is_empty() {
            return;
        }
        let ordered = calls
            .drain(..)
            .map(|call| {
                results
                    .iter()
                    .position(|r| r.call_id == call.id)
                    .map(|at| results.remove(at))
                    .unwrap_or_else(|| ToolResult {
                        envelope: Envelope::refused(
                            Failure::Crashed,
                            format!(
                                "Tool '{}' has no recorded result: the session ended while it ran",
                                call.name
                            ),
                        )
                        .to_json(),
                        call_id: call.id,
                        name: call.name,
                    })
            })
            .collect();
        results.clear();
        messages.push(Message::Tool { results: ordered });
    }
    for entry in entries {
        match entry {
            Entry::User { text } => {
                close(&mut messages, &mut open_calls, &mut results);
                messages.push(Message::User { text: text.clone() });
            }
            Entry::Assistant { text, tool_calls } => {
                close(&mut messages, &mut open_calls, &mut results);
                messages.push(Message::Assistant {
                    text: text.clone(),
                    tool_calls: tool_calls.clone(),
                });
                open_calls = tool_calls.clone();
            }
            Entry::ToolResult {
                call_id,
                name,
                envelope,
                ..
            } => results.push(ToolResult {
                call_id: call_id.clone(),
                name: name.clone(),
                envelope: envelope.clone(),
            }),
            Entry::Compact { request, summary } => {
                open_calls.clear();
                results.clear();
                messages = vec![
                    Message::User {
                        text: request.clone(),
                    },
                    Message::Assistant {
                        text: summary.clone(),
                        tool_calls: vec![],
                    },
                ];
            }
            Entry::Pruned { call_id, envelope } => {
                let result = messages
                    .iter_mut()
                    .rev()
                    .filter_map(|m| match m {
                        Message::Tool { results } => Some(results),
                        _ => None,
                    })
                    .flat_map(|results| results.iter_mut())
                    .chain(results.iter_mut())
                    .find(|r| r.call_id == *call_id);
                if let Some(result) = result {
                    result.envelope = envelope.clone();
                }
            }
            Entry::Compacted { history, .. } => {
                open_calls.clear();
                results.clear();
                messages = history.clone();
            }
            Entry::Start { .. } | Entry::Notice { .. } => {}
        }
    }
    close(&mut messages, &mut open_calls, &mut results);
    messages
}

/// `YYYYMMDD-HHMMSS` in UTC, from seconds since the epoch (the civil-date
/// algorithm of Howard Hinnant's `civil_from_days`).
fn timestamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: json!({}),
            local_id: false,
            signature: None,
        }
    }

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(timestamp(0), "19700101-000000");
        assert_eq!(timestamp(951_782_400), "20000229-000000");
        assert_eq!(timestamp(1_763_778_896), "20251122-023456");
    }

    #[test]
    fn replay_orders_results_by_call_and_fills_gaps() {
        let entries = vec![
            Entry::Start {
                id: "x".into(),
                time: 0,
                provider: "stub".into(),
                model: "stub".into(),
                cwd: None,
                environment: None,
            },
            Entry::User { text: "hi".into() },
            Entry::Assistant {
                text: String::new(),
                tool_calls: vec![call("a"), call("b"), call("c")],
            },
            Entry::ToolResult {
                call_id: "b".into(),
                name: "bash".into(),
                envelope: json!({"n": 2}),
                events: vec![],
            },
            Entry::ToolResult {
                call_id: "a".into(),
                name: "bash".into(),
                envelope: json!({"n": 1}),
                events: vec![],
            },
            Entry::Notice {
                text: "cancelled".into(),
            },
            Entry::User {
                text: "again".into(),
            },
        ];
        let messages = replay(&entries);
        assert_eq!(messages.len(), 4);
        let Message::Tool { results } = &messages[2] else {
            panic!("{messages:?}")
        };
        let ids: Vec<_> = results.iter().map(|r| r.call_id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(results[0].envelope, json!({"n": 1}));
        assert_eq!(results[2].envelope["error_code"], "TOOL_CRASHED");
        assert_eq!(
            messages[3],
            Message::User {
                text: "again".into()
            }
        );
    }

    #[test]
    fn sessions_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("ikigai");
        std::fs::create_dir(&data).unwrap();
        for d in [root.path(), &data] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let dir = data.join("sessions");
        let session = Session::create(&dir).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(session.path()), 0o600);
        // One an older version left readable is made private on resume.
        let path = session.path().to_path_buf();
        drop(session);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        Session::resume(&dir, None).unwrap();
        assert_eq!((mode(&path), mode(&dir)), (0o600, 0o700));
        // The directory above ikigai's own is not ours to change.
        assert_eq!(mode(root.path()), 0o755);
    }

    #[test]
    fn create_append_resume_latest_and_by_id() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = Session::create(dir.path()).unwrap();
        first.append(&Entry::User { text: "one".into() }).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut second = Session::create(dir.path()).unwrap();
        assert_ne!(first.id(), second.id());
        second.append(&Entry::User { text: "two".into() }).unwrap();
        let text = std::fs::read_to_string(second.path()).unwrap();
        assert_eq!(text, "{\"type\":\"user\",\"text\":\"two\"}\n");
        // A torn last line is skipped.
        std::fs::OpenOptions::new()
            .append(true)
            .open(second.path())
            .unwrap()
            .write_all(b"{\"type\":\"us")
            .unwrap();
        let (resumed, messages) = Session::resume(dir.path(), None).unwrap();
        assert_eq!(resumed.id(), second.id());
        assert_eq!(messages, vec![Message::User { text: "two".into() }]);
        let (resumed, messages) = Session::resume(dir.path(), Some(first.id())).unwrap();
        assert_eq!(resumed.id(), first.id());
        assert_eq!(messages, vec![Message::User { text: "one".into() }]);
        let err = Session::resume(dir.path(), Some("nope")).err().unwrap();
        assert!(err.to_string().contains("no session 'nope'"), "{err}");
        let empty = tempfile::tempdir().unwrap();
        assert!(Session::resume(empty.path(), None).is_err());
    }

    #[test]
    fn list_shows_this_directorys_sessions_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let start = |cwd: &str| Entry::Start {
            id: String::new(),
            time: 0,
            provider: "stub".into(),
            model: "stub".into(),
            cwd: Some(cwd.into()),
            environment: None,
        };
        let mut old = Session::create(dir.path()).unwrap();
        old.append(&start("/work")).unwrap();
        old.append(&Entry::User {
            text: "first".into(),
        })
        .unwrap();
        old.append(&Entry::User {
            text: "second".into(),
        })
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut elsewhere = Session::create(dir.path()).unwrap();
        elsewhere.append(&start("/other")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut new = Session::create(dir.path()).unwrap();
        new.append(&start("/work")).unwrap();
        new.append(&Entry::Compact {
            request: "r".into(),
            summary: "s".into(),
        })
        .unwrap();
        let listed = list(dir.path(), Path::new("/work")).unwrap();
        let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, [new.id(), old.id()]);
        assert_eq!((listed[1].messages, listed[1].first.as_str()), (2, "first"));
        let (_, messages) = Session::resume(dir.path(), Some(new.id())).unwrap();
        assert_eq!(
            messages.len(),
            2,
            "a compacted session resumes from its summary"
        );
        assert!(list(&dir.path().join("none"), Path::new("/"))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn sessions_dir_honours_xdg_data_home() {
        let e = Env::from_pairs([("HOME", "/h"), ("XDG_DATA_HOME", "/d")]);
        assert_eq!(sessions_dir(&e), Some(PathBuf::from("/d/ikigai/sessions")));
        let e = Env::from_pairs([("HOME", "/h")]);
        assert_eq!(
            sessions_dir(&e),
            Some(PathBuf::from("/h/.local/share/ikigai/sessions"))
        );
    }
}
