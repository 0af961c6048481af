//! The conversation's hook points (decision 83, docs/hooks.md), one method
//! per step that has one: the session's start and end, the person's
//! message, a call before it runs (after the rules, before the question)
//! and after, the model's last answer, a compaction, a question to the
//! person. Each fires the engine (`super::super::hooks`), shows the person
//! what the hooks said for them, and returns what the step must do.

use std::sync::atomic::AtomicBool;

use serde_json::Value;

use super::super::approval::{Ruled, Verdict};
use super::super::hooks::{Event, Fired, Permission, Session};
use super::super::model::ToolCall;
use super::super::session::Entry;
use super::{Conversation, Ui};

/// How many times in a row Stop hooks may send the model back to work
/// before the turn ends anyway.
const STOP_LIMIT: usize = 8;

impl Conversation {
    /// Fires `event`'s hooks with this session's ids; their lines for the
    /// person are shown.
    pub(super) fn hook(&mut self, event: Event, ui: &mut dyn Ui) -> Fired {
        if !self.hooks.any(event.name()) {
            return Fired::default();
        }
        // Hooks are told the session: it is made now if it was not yet.
        self.open_log(ui);
        let transcript = self.log.path();
        let id = self.session_id().unwrap_or_default().to_string();
        let fired = self.hooks.fire(
            &event,
            Session {
                id: &id,
                transcript: transcript.as_deref(),
            },
        );
        for line in &fired.notices {
            ui.notice(line);
        }
        fired
    }

    /// SessionStart (`source`: startup, resume, clear, compact): what the
    /// hooks print is told to the model with the next message.
    pub fn start(&mut self, source: &str, ui: &mut dyn Ui) {
        let fired = self.hook(Event::SessionStart { source }, ui);
        if let Some(context) = fired.context {
            self.notes
                .push(format!("[Context from a SessionStart hook]\n{context}"));
        }
    }

    /// SessionEnd (`reason`: clear, logout, prompt_input_exit, other).
    pub fn end(&mut self, reason: &str, ui: &mut dyn Ui) {
        self.hook(Event::SessionEnd { reason }, ui);
    }

    /// UserPromptSubmit: Err with why the message is not sent (shown to
    /// the person), else the message with what the hooks added.
    pub(super) fn prompt_hooks(&mut self, text: &str, ui: &mut dyn Ui) -> Result<String, String> {
        let fired = self.hook(Event::UserPromptSubmit { prompt: text }, ui);
        if let Some(why) = fired.block.or(fired.stop) {
            return Err(why);
        }
        Ok(match fired.context {
            Some(context) => format!("{text}\n\n[Context from a UserPromptSubmit hook]\n{context}"),
            None => text.to_string(),
        })
    }

    /// Stop (or SubagentStop): Some(instruction) when a hook sends the model
    /// back to work, at most `STOP_LIMIT` times in a row; the person is told
    /// when the limit ends the turn.
    pub(super) fn stop_hooks(&mut self, ui: &mut dyn Ui) -> Option<String> {
        let active = self.stop_rounds > 0;
        let event = if self.subagent {
            Event::SubagentStop { active }
        } else {
            Event::Stop { active }
        };
        let fired = self.hook(event, ui);
        let why = fired.block.filter(|_| fired.stop.is_none())?;
        if self.stop_rounds == STOP_LIMIT {
            let text = format!(
                "{} hooks sent the model back {STOP_LIMIT} times in a row; the turn ends here.",
                event.name()
            );
            ui.notice(&text);
            self.log(Entry::Notice { text }, ui);
            return None;
        }
        self.stop_rounds += 1;
        Some(format!("{} hook feedback:\n{why}", event.name()))
    }

    /// The say of the rules, then of the PreToolUse hooks, then, when it is
    /// theirs, of the person, on one call; `arguments` becomes what a hook
    /// rewrote it to. Some(reason) refuses the call.
    pub(super) fn approve(
        &mut self,
        call: &ToolCall,
        arguments: &mut Value,
        read_only: bool,
        cancel: &AtomicBool,
        ui: &mut dyn Ui,
    ) -> Option<String> {
        let ruled = match self.approval.rules(&call.name, arguments, read_only) {
            Ruled::Refuse(why) => return Some(why),
            ruled => ruled,
        };
        let fired = self.hook(
            Event::PreToolUse {
                tool: &call.name,
                input: arguments,
                call_id: &call.id,
            },
            ui,
        );
        if let Some(why) = fired.stop {
            self.halted = Some(why.clone());
            return Some(format!("Not run: a hook stopped the turn: {why}"));
        }
        if let Some(conflict) = fired.conflict {
            let text = format!("{} was not run: {conflict}", call.name);
            ui.error(&text);
            return Some(format!("Not run: {conflict}"));
        }
        if let Some(why) = fired.block {
            return Some(format!("Blocked by a PreToolUse hook: {why}"));
        }
        let ruled = match fired.updated_input {
            // What runs is what the rules judge, and what the person sees.
            Some(input) => {
                *arguments = input;
                match self.approval.rules(&call.name, arguments, read_only) {
                    Ruled::Refuse(why) => return Some(why),
                    ruled => ruled,
                }
            }
            None => ruled,
        };
        let ask = match fired.permission {
            Some(Permission::Deny(why)) => {
                return Some(format!("Denied by a PreToolUse hook: {why}"))
            }
            Some(Permission::Allow(_)) => false,
            Some(Permission::Ask(why)) => {
                if !why.is_empty() {
                    ui.notice(&format!(
                        "A PreToolUse hook asks you about this call: {why}"
                    ));
                }
                true
            }
            None => ruled == Ruled::Ask,
        };
        if !ask {
            return None;
        }
        self.notify(
            &format!("ikigai needs your permission to use {}", call.name),
            ui,
        );
        match self.approval.question(&call.name, arguments, cancel) {
            Verdict::Run => None,
            Verdict::Refuse(why) => Some(why),
        }
    }

    /// Notification: the person is about to be asked something.
    pub(super) fn notify(&mut self, message: &str, ui: &mut dyn Ui) {
        if self.approval.can_ask() {
            self.hook(Event::Notification { message }, ui);
        }
    }

    /// PostToolUse, for a call that ran: a block's reason and any context
    /// reach the model with the envelope.
    pub(super) fn after_call(
        &mut self,
        call: &ToolCall,
        arguments: &Value,
        envelope: &mut Value,
        ui: &mut dyn Ui,
    ) {
        let fired = self.hook(
            Event::PostToolUse {
                tool: &call.name,
                input: arguments,
                response: envelope,
                call_id: &call.id,
            },
            ui,
        );
        if let Some(why) = fired.stop {
            self.halted = Some(why);
        }
        if let Value::Object(map) = envelope {
            if let Some(why) = fired.block {
                map.insert("hook_feedback".into(), Value::String(why));
            }
            if let Some(context) = fired.context {
                map.insert("hook_context".into(), Value::String(context));
            }
        }
    }

    /// PreCompact (`trigger`: manual, auto).
    pub(super) fn before_compacting(&mut self, trigger: &str, ui: &mut dyn Ui) {
        self.hook(Event::PreCompact { trigger }, ui);
    }
}
