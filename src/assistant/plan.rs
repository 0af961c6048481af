//! The plan (decision 69): the model keeps a checklist of its task with the
//! `update_plan` tool (`host::own`), sending the whole list each time, and
//! the person sees it each time it changes. This module checks a plan,
//! answers the call, draws the checklist, says it in words for the model
//! (the compaction summary keeps it), and finds the latest plan in a
//! conversation's history (a resumed session shows and keeps it).

use serde_json::{json, Value};

use super::model::{Message, ToolCall};
use crate::host::call::CallOutcome;
use crate::host::envelope::{Envelope, Failure};
use crate::host::own::UPDATE_PLAN;

/// The most steps a plan may hold: a checklist, not a log.
pub const MAX_STEPS: usize = 50;

/// The answer to an `update_plan` call with `arguments` (already checked
/// against the schema's types, or not: every rule is checked here).
pub fn answer(arguments: &Value) -> Envelope {
    match check(arguments) {
        Ok(plan) => {
            let count = |s: &str| plan.iter().filter(|p| p["status"] == s).count();
            Envelope::Success {
                result: json!({
                    "updated": true,
                    "steps": plan.len(),
                    "completed": count("completed"),
                    "in_progress": count("in_progress"),
                    "pending": count("pending"),
                }),
                truncated: None,
            }
        }
        Err(why) => Envelope::refused(
            Failure::Tool(crate::error::ErrorCode::InvalidArg.as_str().into()),
            format!("update_plan: {why}; the plan was not changed"),
        ),
    }
}

/// The plan's steps as `[{step, status}]`, or what is wrong with it.
pub fn check(arguments: &Value) -> Result<Vec<Value>, String> {
    let Some(steps) = arguments["plan"].as_array() else {
        return Err("'plan' must be a list of {step, status}".into());
    };
    if steps.len() > MAX_STEPS {
        return Err(format!(
            "the plan has {} steps; at most {MAX_STEPS}",
            steps.len()
        ));
    }
    let mut out = Vec::with_capacity(steps.len());
    for (i, item) in steps.iter().enumerate() {
        let n = i + 1;
        let step = item["step"].as_str().map(str::trim).unwrap_or("");
        if step.is_empty() {
            return Err(format!("step {n} has no 'step' text"));
        }
        let status = item["status"].as_str().unwrap_or("");
        if !["pending", "in_progress", "completed"].contains(&status) {
            return Err(format!(
                "step {n} has status {}; it must be pending, in_progress or completed",
                item["status"]
            ));
        }
        out.push(json!({"step": step, "status": status}));
    }
    let active = out.iter().filter(|s| s["status"] == "in_progress").count();
    if active > 1 {
        return Err(format!(
            "{active} steps are in_progress; at most one may be"
        ));
    }
    Ok(out)
}

/// The plan a finished call set: `{"plan": [...], "explanation"?}` when
/// `call` is an update_plan that succeeded.
pub fn from_call(call: &ToolCall, outcome: &CallOutcome) -> Option<Value> {
    if call.name != UPDATE_PLAN || !outcome.success() {
        return None;
    }
    let steps = check(&call.arguments).ok()?;
    let mut plan = json!({ "plan": steps });
    if let Some(why) = call.arguments["explanation"]
        .as_str()
        .filter(|w| !w.trim().is_empty())
    {
        plan["explanation"] = json!(why.trim());
    }
    Some(plan)
}

/// The latest plan a conversation set, if any (a resumed session's).
pub fn latest(messages: &[Message]) -> Option<Value> {
    let mut calls: Vec<&ToolCall> = Vec::new();
    let mut found = None;
    for message in messages {
        match message {
            Message::Assistant { tool_calls, .. } => {
                calls = tool_calls
                    .iter()
                    .filter(|c| c.name == UPDATE_PLAN)
                    .collect()
            }
            Message::Tool { results } => {
                for result in results
                    .iter()
                    .filter(|r| r.envelope["tool_success"] == true)
                {
                    if let Some(call) = calls.iter().find(|c| c.id == result.call_id) {
                        if let Ok(steps) = check(&call.arguments) {
                            found = Some(json!({ "plan": steps }));
                        }
                    }
                }
            }
            Message::User { .. } => {}
        }
    }
    found
}

/// The plan in words, for the model: the compaction summary carries it.
pub fn as_text(plan: &Value) -> String {
    let mut text = String::from("The current plan (update_plan):");
    for step in plan["plan"].as_array().into_iter().flatten() {
        let mark = match step["status"].as_str() {
            Some("completed") => "[x]",
            Some("in_progress") => "[>]",
            _ => "[ ]",
        };
        text += &format!("\n{mark} {}", step["step"].as_str().unwrap_or(""));
    }
    if let Some(why) = plan["explanation"].as_str() {
        text += &format!("\n(last change: {why})");
    }
    text
}

/// The checklist the person sees, one line a step, and the explanation.
pub fn checklist(plan: &Value) -> Vec<(Mark, String)> {
    let mut lines: Vec<(Mark, String)> = plan["plan"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            let mark = match s["status"].as_str() {
                Some("completed") => Mark::Done,
                Some("in_progress") => Mark::Now,
                _ => Mark::Later,
            };
            (mark, s["step"].as_str().unwrap_or("").to_string())
        })
        .collect();
    if lines.is_empty() {
        lines.push((Mark::Note, "(the plan is empty)".into()));
    }
    if let Some(why) = plan["explanation"].as_str() {
        lines.push((Mark::Note, why.to_string()));
    }
    lines
}

/// How a checklist line is marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    Done,
    Now,
    Later,
    /// Not a step: the explanation.
    Note,
}

impl Mark {
    pub fn symbol(self) -> &'static str {
        match self {
            Mark::Done => "✓",
            Mark::Now => "▸",
            Mark::Later => "☐",
            Mark::Note => " ",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assistant::model::ToolResult;

    fn args(steps: &[(&str, &str)]) -> Value {
        json!({"plan": steps.iter().map(|(s, st)| json!({"step": s, "status": st})).collect::<Vec<_>>()})
    }

    #[test]
    fn a_plan_is_checked_and_answered() {
        let ok = answer(&args(&[
            ("read", "completed"),
            ("edit", "in_progress"),
            ("test", "pending"),
        ]));
        assert_eq!(
            ok.to_json()["result"],
            json!({"updated": true, "steps": 3, "completed": 1, "in_progress": 1, "pending": 1})
        );
        let two = answer(&args(&[("a", "in_progress"), ("b", "in_progress")])).to_json();
        assert_eq!(two["error_code"], "INVALID_ARG");
        assert_eq!(
            two["error"],
            "update_plan: 2 steps are in_progress; at most one may be; the plan was not changed"
        );
        let bad = answer(&args(&[("a", "done")])).to_json();
        assert!(bad["error"]
            .as_str()
            .unwrap()
            .contains("step 1 has status \"done\""));
        let empty = answer(&json!({"plan": [{"step": " ", "status": "pending"}]})).to_json();
        assert!(empty["error"]
            .as_str()
            .unwrap()
            .contains("step 1 has no 'step' text"));
        assert!(answer(&json!({})).to_json()["error"]
            .as_str()
            .unwrap()
            .contains("'plan' must be a list"));
    }

    #[test]
    fn the_plan_in_words_and_as_a_checklist() {
        let mut plan = json!({"plan": check(&args(&[("read", "completed"), ("edit", "in_progress"), ("test", "pending")])).unwrap()});
        plan["explanation"] = json!("found the bug");
        assert_eq!(
            as_text(&plan),
            "The current plan (update_plan):\n[x] read\n[>] edit\n[ ] test\n(last change: found the bug)"
        );
        let lines = checklist(&plan);
        assert_eq!(lines[1], (Mark::Now, "edit".to_string()));
        assert_eq!(lines[3], (Mark::Note, "found the bug".to_string()));
    }

    #[test]
    fn the_latest_successful_plan_is_found_in_history() {
        let call = |id: &str, a: Value| ToolCall {
            id: id.into(),
            name: UPDATE_PLAN.into(),
            arguments: a,
            local_id: false,
            signature: None,
        };
        let result = |id: &str, ok: bool| ToolResult {
            call_id: id.into(),
            name: UPDATE_PLAN.into(),
            envelope: json!({"tool_success": ok}),
        };
        let messages = vec![
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![call("1", args(&[("a", "pending")]))],
            },
            Message::Tool {
                results: vec![result("1", true)],
            },
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![call("2", args(&[("a", "completed")]))],
            },
            Message::Tool {
                results: vec![result("2", false)],
            },
        ];
        let plan = latest(&messages).unwrap();
        assert_eq!(plan["plan"][0]["status"], "pending");
        assert!(latest(&messages[..0]).is_none());
    }
}
