//! OpenAI Chat Completions, streaming (`POST {OPENAI_BASE_URL}/chat/completions`
//! with `"stream": true`), which local servers speaking the same API also
//! serve. Tool calls arrive as `delta.tool_calls` pieces assembled by
//! `index`, arguments as a JSON string; results go back as `role: "tool"`
//! messages with the call's `tool_call_id` (design.md, "Provider formats").

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::http::{self, event_json};
use super::{
    parse_arguments, tools_empty, Message, ModelClient, ModelError, Reply, Request, ToolCall,
    ToolFormat,
};

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

pub struct OpenAi {
    base_url: String,
    key: Option<String>,
    model: String,
}

impl OpenAi {
    /// `base_url` ends in `/v1` (decision 12). A key may be absent for a
    /// local server that asks for none.
    pub fn new(base_url: &str, key: Option<String>, model: &str) -> Self {
        OpenAi {
            base_url: base_url.trim_end_matches('/').to_string(),
            key,
            model: model.to_string(),
        }
    }
}

impl ModelClient for OpenAi {
    fn provider(&self) -> &'static str {
        "openai"
    }
    fn model(&self) -> &str {
        &self.model
    }
    fn tool_format(&self) -> ToolFormat {
        ToolFormat::OpenAiChat
    }

    fn stream(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ModelError> {
        let url = format!("{}/chat/completions", self.base_url);
        let auth = self.key.as_ref().map(|k| format!("Bearer {k}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("authorization", a.as_str())).collect();
        let mut reply = Assembler::default();
        http::post_sse(
            &url,
            &headers,
            &request_body(&self.model, request),
            &mut |event| {
                if event.data.trim() == "[DONE]" {
                    reply.done = true;
                    return Ok(false);
                }
                reply.feed(&event_json("openai", &event.data)?, on_text)?;
                Ok(true)
            },
        )?;
        reply.finish()
    }
}

/// The request body for `messages` (pure, so it is tested without a server).
pub fn request_body(model: &str, request: &Request) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    for message in &request.messages {
        match message {
            Message::User { text } => messages.push(json!({"role": "user", "content": text})),
            Message::Assistant { text, tool_calls } => {
                let mut m = json!({
                    "role": "assistant",
                    "content": if text.is_empty() { Value::Null } else { json!(text) },
                });
                if !tool_calls.is_empty() {
                    m["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": arguments_text(&c.arguments)},
                            })
                        })
                        .collect();
                }
                messages.push(m);
            }
            Message::Tool { results } => {
                for r in results {
                    messages.push(json!({
                        "role": "tool",
                        "tool_call_id": r.call_id,
                        "content": r.envelope.to_string(),
                    }));
                }
            }
        }
    }
    let mut body = json!({"model": model, "messages": messages, "stream": true});
    if !tools_empty(&request.tools) {
        body["tools"] = request.tools.clone();
    }
    body
}

/// Arguments as OpenAI wants them back: the JSON text; raw text that never
/// parsed goes back as it came.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Folds streamed chunks into a reply.
#[derive(Default)]
struct Assembler {
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    finished: bool,
    done: bool,
}

impl Assembler {
    fn feed(&mut self, chunk: &Value, on_text: &mut dyn FnMut(&str)) -> Result<(), ModelError> {
        if !chunk["error"].is_null() {
            let e = &chunk["error"];
            let message = e["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| e.to_string());
            return Err(ModelError::Reported(message));
        }
        let Some(choice) = chunk["choices"].get(0) else {
            // Usage-only chunks and keep-alives carry no choice.
            return Ok(());
        };
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str() {
            if !text.is_empty() {
                self.text.push_str(text);
                on_text(text);
            }
        }
        if let Some(calls) = delta["tool_calls"].as_array() {
            for (position, piece) in calls.iter().enumerate() {
                let index = piece["index"].as_u64().unwrap_or(position as u64);
                let call = self.calls.entry(index).or_default();
                if let Some(id) = piece["id"].as_str() {
                    call.id.push_str(id);
                }
                if let Some(name) = piece["function"]["name"].as_str() {
                    call.name.push_str(name);
                }
                if let Some(args) = piece["function"]["arguments"].as_str() {
                    call.arguments.push_str(args);
                }
            }
        }
        if choice["finish_reason"].is_string() {
            self.finished = true;
        }
        Ok(())
    }

    fn finish(self) -> Result<Reply, ModelError> {
        if !self.finished && !self.done {
            return Err(ModelError::Malformed(
                "the OpenAI stream ended before the reply was complete (no finish_reason, no [DONE])"
                    .into(),
            ));
        }
        let mut tool_calls = Vec::new();
        for (index, call) in self.calls {
            if call.name.is_empty() {
                return Err(ModelError::Malformed(format!(
                    "tool call {index} has no function name"
                )));
            }
            let local_id = call.id.is_empty();
            tool_calls.push(ToolCall {
                id: if local_id {
                    format!("call_{index}")
                } else {
                    call.id
                },
                name: call.name,
                arguments: parse_arguments(&call.arguments),
                local_id,
                signature: None,
            });
        }
        Ok(Reply {
            text: self.text,
            tool_calls,
            usage: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assistant::model::ToolResult;

    #[test]
    fn tool_calls_assemble_by_index_across_chunks() {
        let mut a = Assembler::default();
        let mut shown = String::new();
        let chunks = [
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":"Let me "}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"look."}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"glob","arguments":""}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"bash","arguments":"{\"comm"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pattern\":\"*\"}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"and\":\"ls\"}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
            json!({"choices":[],"usage":{"total_tokens":3}}),
        ];
        for c in &chunks {
            a.feed(c, &mut |t| shown += t).unwrap();
        }
        let reply = a.finish().unwrap();
        assert_eq!(shown, "Let me look.");
        assert_eq!(reply.text, "Let me look.");
        let names: Vec<_> = reply
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str()))
            .collect();
        assert_eq!(names, [("call_a", "glob"), ("call_b", "bash")]);
        assert_eq!(reply.tool_calls[0].arguments, json!({"pattern": "*"}));
        assert_eq!(reply.tool_calls[1].arguments, json!({"command": "ls"}));
    }

    #[test]
    fn errors_in_the_stream_and_early_ends() {
        let mut a = Assembler::default();
        let e = a.feed(&json!({"error": {"message": "overloaded"}}), &mut |_| {});
        assert_eq!(e, Err(ModelError::Reported("overloaded".into())));
        let mut a = Assembler::default();
        a.feed(
            &json!({"choices":[{"delta":{"content":"half"}}]}),
            &mut |_| {},
        )
        .unwrap();
        assert!(matches!(a.finish(), Err(ModelError::Malformed(_))));
    }

    #[test]
    fn body_carries_system_history_tools_and_results() {
        let request = Request {
            system: "sys".into(),
            messages: vec![
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "bash".into(),
                        arguments: json!({"command": "ls"}),
                        local_id: false,
                        signature: None,
                    }],
                },
                Message::Tool {
                    results: vec![ToolResult {
                        call_id: "call_1".into(),
                        name: "bash".into(),
                        envelope: json!({"tool_success": true, "result": {}}),
                    }],
                },
            ],
            tools: json!([{"type": "function", "function": {"name": "bash"}}]),
        };
        let body = request_body("gpt", &request);
        assert_eq!(body["model"], "gpt");
        assert_eq!(body["stream"], true);
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "sys"})
        );
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"command\":\"ls\"}"
        );
        assert_eq!(body["messages"][3]["role"], "tool");
        assert_eq!(body["messages"][3]["tool_call_id"], "call_1");
        assert_eq!(
            body["messages"][3]["content"],
            "{\"tool_success\":true,\"result\":{}}"
        );
        assert_eq!(body["tools"][0]["function"]["name"], "bash");
        let no_tools = request_body(
            "gpt",
            &Request {
                tools: json!([]),
                ..request
            },
        );
        assert!(no_tools.get("tools").is_none());
    }
}
