//! Making a conversation fit its window again (decision 62), in two steps
//! of rising cost. First, pruning: the outputs of tool calls older than the
//! newest `KEEP_TOOL_TOKENS` tokens of tool output give way to a stub that
//! says how large they were and where the whole is saved, so nothing is
//! out of the model's reach. When that frees too little, summarising: the
//! model writes a summary of the conversation, and the summary, the plan
//! and the person's latest message, verbatim, become the history. The
//! system prompt (with the project instructions) is never touched.
//!
//! All of this is pure; the conversation asks the model for the summary,
//! saves the pruned outputs and logs both (`Entry::Pruned`,
//! `Entry::Compacted`), so `--resume` continues from the compacted state.

use serde_json::{json, Value};

use super::super::model::{Message, ToolResult};
use super::window::estimate;

/// The newest tool output, in tokens, that pruning leaves whole.
pub const KEEP_TOOL_TOKENS: u64 = 40_000;

/// An output smaller than this is left whole: its stub would save little.
const PRUNE_MIN_BYTES: usize = 512;

/// What the model is asked for a summary (`/compact` asks the same).
pub const SUMMARY_REQUEST: &str =
    "Summarise our conversation so far for your own later use, as it \
will replace the conversation: what I asked for, what was done (files read or changed, commands \
run and what they showed), what was decided, what is still open, and the next step. Name files, \
functions and commands exactly. Be complete but brief.";

/// One tool output that gave way to a stub.
#[derive(Clone, Debug, PartialEq)]
pub struct Pruned {
    pub call_id: String,
    pub stub: Value,
    /// Tokens the stub saves.
    pub freed: u64,
}

/// True when an envelope is already a stub.
pub fn is_stub(envelope: &Value) -> bool {
    envelope.get("pruned").is_some()
}

/// Replaces the envelopes of tool calls older than the newest `keep`
/// tokens of tool output with stubs, oldest last considered. `save` keeps
/// the whole envelope and returns where, or an error text. Returns what
/// was pruned, in the order of the conversation.
pub fn prune(
    messages: &mut [Message],
    keep: u64,
    save: &mut dyn FnMut(&ToolResult) -> Result<String, String>,
) -> Vec<Pruned> {
    let mut newest = 0u64;
    let mut pruned = Vec::new();
    for message in messages.iter_mut().rev() {
        let Message::Tool { results } = message else {
            continue;
        };
        for result in results.iter_mut().rev() {
            if is_stub(&result.envelope) {
                continue;
            }
            let bytes = result.envelope.to_string().len();
            let tokens = estimate(bytes);
            if newest + tokens <= keep || bytes < PRUNE_MIN_BYTES {
                newest += tokens;
                continue;
            }
            newest = keep;
            let stub = stub(result, bytes, save(result));
            let freed = tokens.saturating_sub(estimate(stub.to_string().len()));
            result.envelope = stub.clone();
            pruned.push(Pruned {
                call_id: result.call_id.clone(),
                stub,
                freed,
            });
        }
    }
    pruned.reverse();
    pruned
}

/// The stub for `result` (of `bytes` bytes), whose whole was saved at
/// `saved` (or could not be). It keeps whether the call succeeded and its
/// error code, which later reasoning may still need.
fn stub(result: &ToolResult, bytes: usize, saved: Result<String, String>) -> Value {
    let whole = match saved {
        Ok(path) => format!("all of it is in {path} (read it with file_read or grep)"),
        Err(e) => format!("it could not be saved ({e})"),
    };
    let mut stub = json!({
        "tool_success": result.envelope["tool_success"] != Value::Bool(false),
        "pruned": format!(
            "[pruned] This {} result ({bytes} bytes, about {} tokens) was removed to save context; {whole}.",
            result.name,
            estimate(bytes)
        ),
    });
    let code = result
        .envelope
        .get("error_code")
        .or_else(|| result.envelope["result"].get("error_code"));
    if let Some(code) = code {
        stub["error_code"] = code.clone();
    }
    stub
}

/// The history that replaces the conversation after a summary: one message
/// from the person holding the summary, the plan when there is one, and
/// their latest message verbatim, so the model goes on with the task.
pub fn summarised(summary: &str, plan: Option<&str>, latest: Option<&str>) -> String {
    let mut text = format!(
        "[This conversation was compacted to fit the context window. Your summary of it so far:]\n\n{}",
        summary.trim()
    );
    if let Some(plan) = plan.filter(|p| !p.trim().is_empty()) {
        text += &format!("\n\n[The plan as it stands:]\n\n{}", plan.trim());
    }
    if let Some(latest) = latest {
        text += &format!("\n\n[My latest message, verbatim:]\n\n{latest}");
    }
    text
}

/// The tokens `messages` come to, estimated from their JSON text.
pub fn estimate_messages(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| estimate(serde_json::to_string(m).map_or(0, |t| t.len())))
        .sum()
}

/// `messages` without their oldest exchanges until they come to at most
/// `budget` tokens: a summary request that must fit a window the history
/// no longer fits. Cuts fall just before a message of the person, so no
/// tool result loses its call.
pub fn fit(messages: &[Message], budget: u64) -> &[Message] {
    let mut from = 0;
    while estimate_messages(&messages[from..]) > budget {
        match messages[from + 1..]
            .iter()
            .position(|m| matches!(m, Message::User { .. }))
        {
            Some(next) => from += 1 + next,
            None => break,
        }
    }
    &messages[from..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assistant::model::ToolCall;

    fn exchange(id: &str, output_bytes: usize) -> Vec<Message> {
        vec![
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: id.into(),
                    name: "bash".into(),
                    arguments: json!({"command": "x"}),
                    local_id: false,
                    signature: None,
                }],
            },
            Message::Tool {
                results: vec![ToolResult {
                    call_id: id.into(),
                    name: "bash".into(),
                    envelope: json!({"tool_success": true, "result": {"output": "o".repeat(output_bytes), "exit_code": 0}}),
                }],
            },
        ]
    }

    #[test]
    fn older_outputs_give_way_to_stubs_and_the_newest_stay_whole() {
        let mut messages = vec![Message::User { text: "go".into() }];
        for id in ["a", "b", "c", "d"] {
            messages.extend(exchange(id, 40_000));
        }
        let mut saved = Vec::new();
        let pruned = prune(&mut messages, 25_000, &mut |r| {
            saved.push(r.call_id.clone());
            Ok(format!("/s/{}.json", r.call_id))
        });
        // Each output is about 10,000 tokens: the newest two fit in 25,000.
        let ids: Vec<_> = pruned.iter().map(|p| p.call_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(saved, ["b", "a"]);
        assert!(pruned[0].freed > 9_000);
        let Message::Tool { results } = &messages[2] else {
            panic!()
        };
        let text = results[0].envelope["pruned"].as_str().unwrap();
        assert!(text.starts_with("[pruned] This bash result ("), "{text}");
        assert!(text.contains("all of it is in /s/a.json"));
        assert_eq!(results[0].envelope["tool_success"], true);
        let Message::Tool { results } = &messages[8] else {
            panic!()
        };
        assert!(!is_stub(&results[0].envelope));
        // Pruning again prunes nothing new.
        assert!(prune(&mut messages, 25_000, &mut |_| Ok(String::new())).is_empty());
    }

    #[test]
    fn a_stub_keeps_the_failure_and_its_code() {
        let result = ToolResult {
            call_id: "x".into(),
            name: "file_read".into(),
            envelope: json!({"tool_success": false, "error": "e", "error_code": "TOOL_TIMEOUT"}),
        };
        let s = stub(&result, 1000, Err("disk full".into()));
        assert_eq!(s["tool_success"], false);
        assert_eq!(s["error_code"], "TOOL_TIMEOUT");
        assert!(s["pruned"]
            .as_str()
            .unwrap()
            .contains("it could not be saved (disk full)"));
    }

    #[test]
    fn the_summary_history_holds_summary_plan_and_latest_message() {
        let text = summarised("did X", Some("- [x] a\n- [ ] b"), Some("now do Y"));
        assert!(text.contains("did X") && text.contains("- [ ] b"));
        assert!(text.ends_with("[My latest message, verbatim:]\n\nnow do Y"));
        assert!(!summarised("s", None, None).contains("plan"));
    }

    #[test]
    fn fitting_drops_the_oldest_exchanges_at_a_message_of_the_person() {
        let mut messages = vec![Message::User { text: "one".into() }];
        messages.extend(exchange("a", 8_000));
        messages.push(Message::User { text: "two".into() });
        messages.extend(exchange("b", 8_000));
        let all = estimate_messages(&messages);
        assert_eq!(fit(&messages, all).len(), messages.len());
        let fitted = fit(&messages, all / 2 + 100);
        assert_eq!(fitted[0], Message::User { text: "two".into() });
        assert_eq!(fit(&messages, 1).len(), 3);
    }
}
