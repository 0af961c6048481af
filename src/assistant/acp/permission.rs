//! Approval through the editor: the approval room's questions become
//! `session/request_permission` requests about the tool call the client
//! was just told of, with the room's own choices as the options
//! (`allow_once`, `allow_always`, `reject_once`). What the terminal would
//! show before asking (the command, the diff) goes with the request as the
//! call's content. Questions that want a typed sentence (why a call was
//! refused) have no place in ACP and are answered empty.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::super::approval::{Choice, ChoiceKind, Prompter};
use super::wire::Wire;

/// The call the client was last told of: approval asks about the call
/// that `Ui::tool_call` has just announced.
pub type Current = Arc<Mutex<Option<Value>>>;

pub struct EditorPrompter {
    wire: Arc<Wire>,
    session: String,
    current: Current,
    /// What was shown since the last question.
    shown: Vec<String>,
}

impl EditorPrompter {
    pub fn new(wire: Arc<Wire>, session: String, current: Current) -> EditorPrompter {
        EditorPrompter {
            wire,
            session,
            current,
            shown: Vec::new(),
        }
    }
}

/// The protocol's name of a kind of option.
fn kind_name(kind: ChoiceKind) -> &'static str {
    match kind {
        ChoiceKind::AllowOnce => "allow_once",
        ChoiceKind::AllowAlways => "allow_always",
        ChoiceKind::RejectOnce => "reject_once",
    }
}

impl Prompter for EditorPrompter {
    fn show(&mut self, text: &str) {
        self.shown.push(text.to_string());
    }

    fn answer(&mut self, _question: &str, _cancel: &AtomicBool) -> Option<String> {
        self.shown.clear();
        Some(String::new())
    }

    fn choose(
        &mut self,
        question: &str,
        choices: &[Choice],
        cancel: &AtomicBool,
    ) -> Option<String> {
        let shown = std::mem::take(&mut self.shown).join("\n");
        let current = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut tool_call = match current {
            Some(call) => json!({
                "toolCallId": call["toolCallId"],
                "title": call["title"],
                "kind": call["kind"],
                "rawInput": call["rawInput"],
            }),
            None => json!({"toolCallId": "none", "title": question}),
        };
        if !shown.is_empty() {
            tool_call["content"] = json!([{
                "type": "content",
                "content": {"type": "text", "text": shown},
            }]);
        }
        let options: Vec<Value> = choices
            .iter()
            .map(|c| json!({"optionId": c.key, "name": c.label, "kind": kind_name(c.kind)}))
            .collect();
        let params = json!({
            "sessionId": self.session,
            "toolCall": tool_call,
            "options": options,
        });
        match self
            .wire
            .ask("session/request_permission", params, cancel)?
        {
            Ok(answer) => chosen(&answer, choices),
            Err(e) => {
                eprintln!(
                    "ikigai acp: session/request_permission failed ({}): the call is refused",
                    e.message
                );
                None
            }
        }
    }
}

/// The key of the option the client's answer selected; None for
/// `cancelled` or an answer that names no option we offered.
fn chosen(answer: &Value, choices: &[Choice]) -> Option<String> {
    let outcome = &answer["outcome"];
    if outcome["outcome"] != json!("selected") {
        return None;
    }
    let id = outcome["optionId"].as_str()?;
    match choices.iter().find(|c| c.key == id) {
        Some(choice) => Some(choice.key.to_string()),
        None => {
            eprintln!("ikigai acp: the client chose an option we did not offer ({id}): refused");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choices() -> Vec<Choice> {
        vec![
            Choice {
                key: "y",
                label: "Allow once".into(),
                kind: ChoiceKind::AllowOnce,
            },
            Choice {
                key: "n",
                label: "Reject".into(),
                kind: ChoiceKind::RejectOnce,
            },
        ]
    }

    #[test]
    fn the_selected_option_is_its_key_anything_else_no_answer() {
        let pick = |v: Value| chosen(&v, &choices());
        assert_eq!(
            pick(json!({"outcome": {"outcome": "selected", "optionId": "y"}})),
            Some("y".into())
        );
        assert_eq!(
            pick(json!({"outcome": {"outcome": "selected", "optionId": "n"}})),
            Some("n".into())
        );
        assert_eq!(pick(json!({"outcome": {"outcome": "cancelled"}})), None);
        assert_eq!(
            pick(json!({"outcome": {"outcome": "selected", "optionId": "z"}})),
            None
        );
        assert_eq!(pick(json!({})), None);
    }
}
