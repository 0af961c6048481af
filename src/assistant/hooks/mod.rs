//! Hooks: programs the person names, run at fixed points of a conversation
//! with Claude Code's contract, so the scripts people already have work
//! unchanged (docs/hooks.md). This is the engine; the conversation calls
//! `Hooks::fire` at its steps and acts on the `Fired` it gets back.
//!
//! Each event gets one JSON object on stdin (`session_id`,
//! `transcript_path`, `cwd`, `hook_event_name` and the event's own fields);
//! a hook answers by its exit code (0 success, 2 block, anything else a
//! failure shown to the person) and optionally JSON on stdout. The hooks
//! of one event that match run at once, or in the order written when the
//! event's first table says `sequential`; what they answer is merged here
//! (`answer.rs`): any block blocks, deny beats ask beats allow, and two
//! rewrites of one call are a conflict, never whichever finished last.

mod answer;
mod run;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::{json, Map, Value};

pub use self::answer::{Fired, Permission};
use self::run::{Job, Launch};
use crate::config::Hook;

/// Claude Code's name for each of our tools that has a counterpart: a
/// matcher written for Claude Code matches ours, and the stdin JSON names
/// the tool as those scripts expect.
const CLAUDE_NAMES: [(&str, &str); 10] = [
    ("bash", "Bash"),
    ("file_read", "Read"),
    ("file_write", "Write"),
    ("file_edit", "Edit"),
    ("apply_patch", "Edit"),
    ("glob", "Glob"),
    ("grep", "Grep"),
    ("web_fetch", "WebFetch"),
    ("web_search_brave", "WebSearch"),
    ("web_search_google", "WebSearch"),
];

/// Claude Code's name for our tool `name`, if it has one.
pub fn claude_name(name: &str) -> Option<&'static str> {
    CLAUDE_NAMES
        .iter()
        .find(|(ours, _)| *ours == name)
        .map(|(_, theirs)| *theirs)
}

/// One point of the conversation at which hooks run, with its fields.
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// `source`: startup, resume, clear or compact.
    SessionStart {
        source: &'a str,
    },
    UserPromptSubmit {
        prompt: &'a str,
    },
    PreToolUse {
        tool: &'a str,
        input: &'a Value,
        call_id: &'a str,
    },
    PostToolUse {
        tool: &'a str,
        input: &'a Value,
        response: &'a Value,
        call_id: &'a str,
    },
    Stop {
        active: bool,
    },
    SubagentStop {
        active: bool,
    },
    /// `trigger`: manual or auto.
    PreCompact {
        trigger: &'a str,
    },
    Notification {
        message: &'a str,
    },
    /// `reason`: clear, logout, prompt_input_exit or other.
    SessionEnd {
        reason: &'a str,
    },
}

impl Event<'_> {
    pub fn name(&self) -> &'static str {
        match self {
            Event::SessionStart { .. } => "SessionStart",
            Event::UserPromptSubmit { .. } => "UserPromptSubmit",
            Event::PreToolUse { .. } => "PreToolUse",
            Event::PostToolUse { .. } => "PostToolUse",
            Event::Stop { .. } => "Stop",
            Event::SubagentStop { .. } => "SubagentStop",
            Event::PreCompact { .. } => "PreCompact",
            Event::Notification { .. } => "Notification",
            Event::SessionEnd { .. } => "SessionEnd",
        }
    }

    /// The names a matcher is tried on: a tool's name and Claude Code's
    /// name for it, the start's source, the compaction's trigger.
    fn subjects(&self) -> Vec<&str> {
        match self {
            Event::PreToolUse { tool, .. } | Event::PostToolUse { tool, .. } => {
                let mut names = vec![*tool];
                names.extend(claude_name(tool));
                names
            }
            Event::SessionStart { source } => vec![*source],
            Event::PreCompact { trigger } => vec![*trigger],
            _ => vec![],
        }
    }

    /// The event's own fields of the stdin JSON.
    fn fields(&self, out: &mut Map<String, Value>) {
        let mut put = |k: &str, v: Value| {
            out.insert(k.to_string(), v);
        };
        match *self {
            Event::SessionStart { source } => put("source", json!(source)),
            Event::UserPromptSubmit { prompt } => put("prompt", json!(prompt)),
            Event::PreToolUse {
                tool,
                input,
                call_id,
            } => {
                put("tool_name", json!(claude_name(tool).unwrap_or(tool)));
                put("tool_input", input.clone());
                put("tool_use_id", json!(call_id));
                put("ikigai_tool_name", json!(tool));
            }
            Event::PostToolUse {
                tool,
                input,
                response,
                call_id,
            } => {
                put("tool_name", json!(claude_name(tool).unwrap_or(tool)));
                put("tool_input", input.clone());
                put("tool_response", response.clone());
                put("tool_use_id", json!(call_id));
                put("ikigai_tool_name", json!(tool));
            }
            Event::Stop { active } | Event::SubagentStop { active } => {
                put("stop_hook_active", json!(active))
            }
            Event::PreCompact { trigger } => {
                put("trigger", json!(trigger));
                put("custom_instructions", json!(""));
            }
            Event::Notification { message } => put("message", json!(message)),
            Event::SessionEnd { reason } => put("reason", json!(reason)),
        }
    }
}

/// Which session an event belongs to, for the stdin JSON.
#[derive(Clone, Copy, Debug, Default)]
pub struct Session<'a> {
    pub id: &'a str,
    /// The session's log (JSON lines, not Claude Code's format).
    pub transcript: Option<&'a Path>,
}

/// A hook as configured, with where it came from.
struct Configured {
    hook: Hook,
    /// `/home/me/.config/ikigai/config.toml, line 12`.
    origin: String,
    matcher: Option<Regex>,
}

/// Every configured hook, ready to run.
pub struct Hooks {
    list: Vec<Configured>,
    cwd: PathBuf,
    project_dir: PathBuf,
}

impl Default for Hooks {
    fn default() -> Self {
        Hooks::none()
    }
}

impl Hooks {
    /// No hooks: every event passes at once.
    pub fn none() -> Hooks {
        let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
        Hooks {
            list: Vec::new(),
            project_dir: cwd.clone(),
            cwd,
        }
    }

    /// The hooks of every source, each with the file it came from (the
    /// person's config, a trusted project's), run in `cwd` with `project_dir`
    /// as the project. The sources' order is kept: the person's first.
    pub fn new(sources: Vec<(Vec<Hook>, PathBuf)>, cwd: PathBuf, project_dir: PathBuf) -> Hooks {
        let mut list = Vec::new();
        for (hooks, file) in sources {
            for hook in hooks {
                let matcher = hook.matcher.as_deref().filter(|m| !is_all(m)).map(matcher);
                list.push(Configured {
                    origin: format!("{}, line {}", file.display(), hook.line),
                    hook,
                    matcher,
                });
            }
        }
        Hooks {
            list,
            cwd,
            project_dir,
        }
    }

    /// How many hooks are configured.
    pub fn count(&self) -> usize {
        self.list.len()
    }

    /// Whether any hook is configured for `event` (by name).
    pub fn any(&self, event: &str) -> bool {
        self.list.iter().any(|c| c.hook.event == event)
    }

    /// `/hooks`: each hook by event, with its matcher, options and origin.
    pub fn listing(&self) -> String {
        if self.list.is_empty() {
            return "No hooks are configured: add [[hooks.EVENT]] tables to the config file \
                    (docs/hooks.md)."
                .into();
        }
        let mut out = String::new();
        for event in crate::config::HOOK_EVENTS {
            let hooks: Vec<&Configured> =
                self.list.iter().filter(|c| c.hook.event == event).collect();
            let Some(first) = hooks.first() else {
                continue;
            };
            let order = if first.hook.sequential {
                " (one after another)"
            } else if hooks.len() > 1 {
                " (all at once)"
            } else {
                ""
            };
            out += &format!("{event}{order}\n");
            for c in hooks {
                let h = &c.hook;
                let matcher = h.matcher.as_deref().unwrap_or("*");
                let matcher = if matcher.is_empty() { "*" } else { matcher };
                let fail = if h.fail_block { ", fail = block" } else { "" };
                out += &format!(
                    "  [{matcher}] {}  (timeout {} s{fail}; {})\n",
                    h.command, h.timeout, c.origin
                );
            }
        }
        out.trim_end().to_string()
    }

    /// The hooks of `event` whose matcher takes it, in the order written.
    fn chosen(&self, event: &Event) -> Vec<&Configured> {
        let subjects = event.subjects();
        self.list
            .iter()
            .filter(|c| c.hook.event == event.name())
            .filter(|c| match &c.matcher {
                None => true,
                Some(re) => subjects.iter().any(|s| re.is_match(s)),
            })
            .collect()
    }

    /// Runs the hooks that match `event` and merges what they answer.
    pub fn fire(&self, event: &Event, session: Session) -> Fired {
        let chosen = self.chosen(event);
        if chosen.is_empty() {
            return Fired::default();
        }
        let mut input = Map::new();
        input.insert("session_id".into(), json!(session.id));
        input.insert(
            "transcript_path".into(),
            json!(session
                .transcript
                .map(|p| p.display().to_string())
                .unwrap_or_default()),
        );
        input.insert("cwd".into(), json!(self.cwd.display().to_string()));
        input.insert("hook_event_name".into(), json!(event.name()));
        event.fields(&mut input);
        let input = Value::Object(input).to_string().into_bytes();
        let launch = Launch {
            cwd: &self.cwd,
            project_dir: &self.project_dir,
        };
        let sequential = self
            .list
            .iter()
            .find(|c| c.hook.event == event.name())
            .is_some_and(|c| c.hook.sequential);
        let mut fired = Fired::default();
        if sequential {
            // In the order written; a hook that blocks stops the rest, so a
            // cheap guard can go first.
            for c in chosen {
                let job = Job {
                    command: &c.hook.command,
                    timeout: c.hook.timeout,
                };
                let ran = run::one(&job, &input, &launch);
                if fired.add(event, &c.hook, &c.origin, ran) {
                    break;
                }
            }
        } else {
            let jobs: Vec<Job> = chosen
                .iter()
                .map(|c| Job {
                    command: &c.hook.command,
                    timeout: c.hook.timeout,
                })
                .collect();
            for (c, ran) in chosen.iter().zip(run::together(&jobs, &input, &launch)) {
                fired.add(event, &c.hook, &c.origin, ran);
            }
        }
        fired
    }
}

/// A matcher as Claude Code reads it: names alone (letters, digits, `_`,
/// joined by `|`) match a whole name exactly; anything else is a regular
/// expression found anywhere in the name (`mcp__.*`, `Notebook.*`). The
/// config file checked every expression; one that still failed here
/// (none can) would match nothing rather than everything.
fn matcher(text: &str) -> Regex {
    let names = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|');
    let expression = if names {
        format!("^(?:{text})$")
    } else {
        text.to_string()
    };
    Regex::new(&expression).unwrap_or_else(|_| never())
}

/// Claude Code's "every tool": an empty matcher or `*`.
fn is_all(matcher: &str) -> bool {
    matcher.is_empty() || matcher == "*"
}

/// A regular expression that matches nothing.
fn never() -> Regex {
    Regex::new("[^\\s\\S]").expect("a valid expression")
}
