//! A call and its outcome in one short line each, for the person: the
//! terminal's call lines and the session list show these.

use serde_json::{json, Value};

use super::super::model::ToolCall;
use crate::host::call::CallOutcome;
use crate::host::text::clip;

/// A tool call for the person: `name(key: value, ...)`, at most `max` chars.
pub fn short_call(call: &ToolCall, max: usize) -> String {
    let args = match &call.arguments {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}: {}", short_value(v)))
            .collect::<Vec<_>>()
            .join(", "),
        other => short_value(other),
    };
    clip(&format!("{}({args})", call.name), max)
}

/// One line saying how a call went, and whether it failed.
pub fn short_outcome(outcome: &CallOutcome, max: usize) -> (bool, String) {
    let envelope = outcome.to_json();
    let failure = |e: &Value| {
        let code = e["error_code"].as_str().unwrap_or("ERROR");
        let text = e["error"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| e.to_string());
        clip(&format!("{code}: {}", text.replace('\n', " ")), max)
    };
    if envelope["tool_success"] == json!(false) {
        return (false, failure(&envelope));
    }
    let result = &envelope["result"];
    // A tool may answer its own error inside a successful run.
    if !result["error"].is_null() || result["success"] == json!(false) {
        return (false, failure(result));
    }
    let size = result.to_string().len();
    let mut line = format!("ok, {size} bytes");
    if let Some(code) = result["exit_code"].as_i64() {
        line = format!("exit code {code}, {size} bytes");
    }
    (true, line)
}

fn short_value(value: &Value) -> String {
    let text = match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    clip(&text, 60)
}
