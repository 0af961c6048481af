//! What the hooks of one event said, merged: each hook's exit code and
//! stdout read by Claude Code's rules, then combined so that any block
//! blocks, a `deny` beats an `ask` beats an `allow`, and two hooks that
//! rewrite one call are a conflict. A hook's failure (an exit other than
//! 0 and 2, a timeout, a signal, output that is not the JSON it should be)
//! is one line for the person, or, for a hook with `fail = "block"`, a
//! block as exit 2 is.

use serde_json::{Map, Value};

use super::run::{End, Ran, OUT_CAP};
use super::Event;
use crate::config::Hook;
use crate::host::text::clip;

/// The most characters of hook text that reach the model at one step
/// (context, a refusal, feedback): Claude Code's limit.
pub const MODEL_TEXT: usize = 10_000;

/// A PreToolUse hook's say on whether the call runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Permission {
    /// Skips the question (never a deny rule or the sandbox).
    Allow(String),
    /// Asks the person even where the rules would not.
    Ask(String),
    /// Refuses the call, with the reason for the model.
    Deny(String),
}

impl Permission {
    fn rank(&self) -> u8 {
        match self {
            Permission::Allow(_) => 0,
            Permission::Ask(_) => 1,
            Permission::Deny(_) => 2,
        }
    }
}

/// What the hooks of one event said, merged.
#[derive(Debug, Default)]
pub struct Fired {
    /// The step is blocked, and why: the hooks' stderr or reasons. Who
    /// reads it depends on the event (the model for a tool or Stop, the
    /// person for a prompt).
    pub block: Option<String>,
    /// Text for the model's context (SessionStart and UserPromptSubmit
    /// stdout, `additionalContext`), at most `MODEL_TEXT` characters.
    pub context: Option<String>,
    /// Lines for the person: failures, `systemMessage`s, exit 2 of events
    /// that cannot block.
    pub notices: Vec<String>,
    /// `continue: false`: the turn ends, with this said to the person.
    pub stop: Option<String>,
    /// PreToolUse: the strongest decision given.
    pub permission: Option<Permission>,
    /// PreToolUse: the input the call runs with instead.
    pub updated_input: Option<Value>,
    /// PreToolUse: two hooks rewrote the call differently (who they are):
    /// the call is not run.
    pub conflict: Option<String>,
    /// Where the rewrite came from, for a conflict's message.
    rewriter: Option<String>,
}

/// Whether exit 2 (or a blocking failure) blocks this event; for the
/// others it is shown to the person.
fn can_block(event: &Event) -> bool {
    matches!(
        event,
        Event::PreToolUse { .. }
            | Event::PostToolUse { .. }
            | Event::UserPromptSubmit { .. }
            | Event::Stop { .. }
            | Event::SubagentStop { .. }
    )
}

/// Whether a hook's plain stdout, on exit 0, is context for the model.
fn stdout_is_context(event: &Event) -> bool {
    matches!(
        event,
        Event::SessionStart { .. } | Event::UserPromptSubmit { .. }
    )
}

impl Fired {
    /// Takes in one hook's run; true when it blocked (or denied), which
    /// ends a sequential event's run.
    pub fn add(&mut self, event: &Event, hook: &Hook, origin: &str, ran: Ran) -> bool {
        let who = format!("{} hook `{}`", event.name(), clip(&hook.command, 60));
        let stderr = ran.err.text().trim().to_string();
        let failure = match ran.end {
            End::Exit(0) => match self.read_stdout(event, &ran.out.text(), &format!("`{}` ({origin})", clip(&hook.command, 60))) {
                Ok(blocked) => return blocked,
                Err(why) => why,
            },
            End::Exit(2) => {
                let reason = if stderr.is_empty() {
                    format!("{who} blocked this (it gave no reason)")
                } else {
                    stderr
                };
                return self.block(event, &who, reason);
            }
            End::Exit(code) => with_stderr(format!("exited with {code}"), &stderr),
            End::Signal(signal) => with_stderr(format!("was killed by signal {signal}"), &stderr),
            End::TimedOut(seconds) => format!("did not end within its timeout of {seconds} s and was killed"),
            End::TooMuch(bytes) => format!(
                "printed {bytes} bytes, more than the {} KiB a hook may: it was stopped and its output ignored",
                OUT_CAP >> 10
            ),
            End::NotStarted(why) => format!("could not be started: {why}"),
        };
        if hook.fail_block {
            let reason = format!("{who} failed, and fails closed (fail = \"block\"): {failure}");
            return self.block(event, &who, reason);
        }
        self.notices
            .push(format!("{who} {failure} ({origin}); nothing was blocked"));
        false
    }

    /// A block from `who`: for an event that can block, its reason joins
    /// the others; for one that cannot, the person is told.
    fn block(&mut self, event: &Event, who: &str, reason: String) -> bool {
        if !can_block(event) {
            self.notices.push(format!("{who}: {}", first_line(&reason)));
            return false;
        }
        let reason = clip(&reason, MODEL_TEXT);
        self.block = Some(match self.block.take() {
            Some(before) => format!("{before}\n{reason}"),
            None => reason,
        });
        true
    }

    /// Reads the stdout of a hook that exited 0: JSON when it is an object,
    /// else plain text; Ok(true) when it blocked, Err when its JSON is
    /// wrong.
    fn read_stdout(&mut self, event: &Event, out: &str, source: &str) -> Result<bool, String> {
        let text = out.trim();
        if !text.starts_with('{') {
            if stdout_is_context(event) && !text.is_empty() {
                self.add_context(text);
            }
            return Ok(false);
        }
        let answer: Map<String, Value> = match serde_json::from_str(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) | Err(_) => {
                return Err(format!(
                    "printed output that is not valid JSON: {}",
                    clip(first_line(text), 120)
                ))
            }
        };
        self.read_json(event, &answer, source)
    }

    fn read_json(
        &mut self,
        event: &Event,
        answer: &Map<String, Value>,
        source: &str,
    ) -> Result<bool, String> {
        let text = |key: &str| -> Result<Option<String>, String> {
            match answer.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(format!("printed JSON whose `{key}` is not a string")),
            }
        };
        if let Some(message) = text("systemMessage")? {
            self.notices.push(message);
        }
        match answer.get("suppressOutput") {
            None | Some(Value::Bool(_)) => {}
            Some(_) => {
                return Err("printed JSON whose `suppressOutput` is not true or false".into())
            }
        }
        match answer.get("continue") {
            None | Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => {
                let why = text("stopReason")?
                    .unwrap_or_else(|| format!("a {} hook stopped the turn", event.name()));
                self.stop = Some(why);
            }
            Some(_) => return Err("printed JSON whose `continue` is not true or false".into()),
        }
        let specific = match answer.get("hookSpecificOutput") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => {
                return Err("printed JSON whose `hookSpecificOutput` is not an object".into())
            }
        };
        let reason = text("reason")?.unwrap_or_default();
        let mut blocked = false;
        match text("decision")?.as_deref() {
            None => {}
            Some("block") => {
                let reason = if reason.is_empty() {
                    format!("a {} hook blocked this (it gave no reason)", event.name())
                } else {
                    reason.clone()
                };
                if let Event::PreToolUse { .. } = event {
                    self.permit(Permission::Deny(reason));
                } else {
                    blocked = self.block(event, "a hook", reason);
                }
            }
            // Claude Code's older spelling of a PreToolUse allow.
            Some("approve") if matches!(event, Event::PreToolUse { .. }) => {
                self.permit(Permission::Allow(reason.clone()))
            }
            Some(other) => {
                return Err(format!(
                "printed JSON whose `decision` is '{other}' (block is the one this event takes)"
            ))
            }
        }
        let specific_text = |key: &str| -> Result<Option<String>, String> {
            match specific.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(format!(
                    "printed JSON whose `hookSpecificOutput.{key}` is not a string"
                )),
            }
        };
        if let Some(context) = specific_text("additionalContext")? {
            self.add_context(&context);
        }
        if let Event::PreToolUse { .. } = event {
            let why = specific_text("permissionDecisionReason")?.unwrap_or_default();
            match specific_text("permissionDecision")?.as_deref() {
                None => {}
                Some("allow") => self.permit(Permission::Allow(why)),
                Some("ask") => self.permit(Permission::Ask(why)),
                Some("deny") => {
                    let why = if why.is_empty() {
                        "a PreToolUse hook denied this call (it gave no reason)".to_string()
                    } else {
                        why
                    };
                    self.permit(Permission::Deny(why));
                    blocked = true;
                }
                Some(other) => {
                    return Err(format!(
                        "printed JSON whose `hookSpecificOutput.permissionDecision` is '{other}' (allow, deny or ask)"
                    ))
                }
            }
            match specific.get("updatedInput") {
                None | Some(Value::Null) => {}
                Some(Value::Object(input)) => self.rewrite(Value::Object(input.clone()), source),
                Some(_) => {
                    return Err(
                        "printed JSON whose `hookSpecificOutput.updatedInput` is not an object"
                            .into(),
                    )
                }
            }
        }
        Ok(blocked || matches!(self.permission, Some(Permission::Deny(_))))
    }

    /// Keeps the strongest decision: deny over ask over allow.
    fn permit(&mut self, decision: Permission) {
        if self
            .permission
            .as_ref()
            .is_none_or(|p| decision.rank() > p.rank())
        {
            self.permission = Some(decision);
        }
    }

    /// A hook's new input for the call; a second, different one is a
    /// conflict.
    fn rewrite(&mut self, input: Value, who: &str) {
        match &self.updated_input {
            None => {
                self.updated_input = Some(input);
                self.rewriter = Some(who.to_string());
            }
            Some(same) if *same == input => {}
            Some(_) => {
                let first = self.rewriter.clone().unwrap_or_default();
                self.conflict = Some(format!(
                    "two PreToolUse hooks rewrote its input differently: {first} and {who}"
                ));
            }
        }
    }

    fn add_context(&mut self, text: &str) {
        let joined = match self.context.take() {
            Some(before) => format!("{before}\n{text}"),
            None => text.to_string(),
        };
        self.context = Some(clip(&joined, MODEL_TEXT));
    }
}

fn with_stderr(what: String, stderr: &str) -> String {
    if stderr.is_empty() {
        what
    } else {
        format!("{what}: {}", clip(first_line(stderr), 200))
    }
}

fn first_line(text: &str) -> &str {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}
