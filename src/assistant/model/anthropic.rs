//! Anthropic Messages, streaming (`POST {ANTHROPIC_BASE_URL}/v1/messages`
//! with `"stream": true`). Tool calls arrive as `tool_use` content blocks
//! whose `input` streams as `input_json_delta` pieces; results go back in
//! the next user message as `tool_result` blocks with `tool_use_id` and
//! `is_error` (design.md, "Provider formats").

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::http::{self, event_json};
use super::{
    arguments_object, parse_arguments, tools_empty, Message, ModelClient, ModelError, Reply,
    Request, ToolCall, ToolFormat,
};

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";
/// Required by the API; large enough for any answer a tool loop needs.
const MAX_TOKENS: u64 = 8192;

pub struct Anthropic {
    base_url: String,
    key: String,
    model: String,
}

impl Anthropic {
    /// `base_url` has no `/v1` (decision 12).
    pub fn new(base_url: &str, key: String, model: &str) -> Self {
        Anthropic {
            base_url: base_url.trim_end_matches('/').to_string(),
            key,
            model: model.to_string(),
        }
    }
}

impl ModelClient for Anthropic {
    fn provider(&self) -> &'static str {
        "anthropic"
    }
    fn model(&self) -> &str {
        &self.model
    }
    fn tool_format(&self) -> ToolFormat {
        ToolFormat::Anthropic
    }

    fn stream(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ModelError> {
        let url = format!("{}/v1/messages", self.base_url);
        let headers = [
            ("x-api-key", self.key.as_str()),
            ("anthropic-version", API_VERSION),
        ];
        let mut reply = Assembler::default();
        http::post_sse(
            &url,
            &headers,
            &request_body(&self.model, request),
            &mut |event| {
                reply.feed(&event_json("anthropic", &event.data)?, on_text)?;
                Ok(!reply.stopped)
            },
        )?;
        reply.finish()
    }
}

/// The request body (pure). Consecutive messages of one role are merged,
/// since the API wants user and assistant turns to alternate (a message
/// sent after a failed request follows the unanswered one).
pub fn request_body(model: &str, request: &Request) -> Value {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message {
            Message::User { text } => ("user", vec![json!({"type": "text", "text": text})]),
            Message::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for c in tool_calls {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": c.id,
                        "name": c.name,
                        "input": arguments_object(&c.arguments),
                    }));
                }
                ("assistant", blocks)
            }
            Message::Tool { results } => (
                "user",
                results
                    .iter()
                    .map(|r| {
                        json!({
                            "type": "tool_result",
                            "tool_use_id": r.call_id,
                            "content": r.envelope.to_string(),
                            "is_error": !r.success(),
                        })
                    })
                    .collect(),
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": MAX_TOKENS,
        "system": request.system,
        "messages": messages,
        "stream": true,
    });
    if !tools_empty(&request.tools) {
        body["tools"] = request.tools.clone();
    }
    body
}

enum Block {
    Text,
    ToolUse {
        id: String,
        name: String,
        input: Value,
        json: String,
    },
    /// Thinking and server-side blocks: not ours to show or answer.
    Other,
}

#[derive(Default)]
struct Assembler {
    text: String,
    blocks: BTreeMap<u64, Block>,
    stopped: bool,
}

impl Assembler {
    fn feed(&mut self, event: &Value, on_text: &mut dyn FnMut(&str)) -> Result<(), ModelError> {
        let index = event["index"].as_u64().unwrap_or(0);
        match event["type"].as_str().unwrap_or("") {
            "content_block_start" => {
                let block = &event["content_block"];
                let kind = match block["type"].as_str() {
                    Some("text") => {
                        self.text(block["text"].as_str().unwrap_or(""), on_text);
                        Block::Text
                    }
                    Some("tool_use") => Block::ToolUse {
                        id: block["id"].as_str().unwrap_or("").to_string(),
                        name: block["name"].as_str().unwrap_or("").to_string(),
                        input: block["input"].clone(),
                        json: String::new(),
                    },
                    _ => Block::Other,
                };
                self.blocks.insert(index, kind);
            }
            "content_block_delta" => {
                let delta = &event["delta"];
                match delta["type"].as_str() {
                    Some("text_delta") => self.text(delta["text"].as_str().unwrap_or(""), on_text),
                    Some("input_json_delta") => {
                        if let Some(Block::ToolUse { json, .. }) = self.blocks.get_mut(&index) {
                            json.push_str(delta["partial_json"].as_str().unwrap_or(""));
                        }
                    }
                    _ => {}
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let e = &event["error"];
                let message = match (e["type"].as_str(), e["message"].as_str()) {
                    (Some(t), Some(m)) => format!("{m} ({t})"),
                    _ => e.to_string(),
                };
                return Err(ModelError::Reported(message));
            }
            _ => {}
        }
        Ok(())
    }

    fn text(&mut self, text: &str, on_text: &mut dyn FnMut(&str)) {
        if !text.is_empty() {
            self.text.push_str(text);
            on_text(text);
        }
    }

    fn finish(self) -> Result<Reply, ModelError> {
        if !self.stopped {
            return Err(ModelError::Malformed(
                "the Anthropic stream ended before message_stop".into(),
            ));
        }
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            if let Block::ToolUse {
                id,
                name,
                input,
                json,
            } = block
            {
                if id.is_empty() || name.is_empty() {
                    return Err(ModelError::Malformed(
                        "a tool_use block lacks its id or name".into(),
                    ));
                }
                let arguments = if json.trim().is_empty() {
                    if input.is_object() {
                        input
                    } else {
                        json!({})
                    }
                } else {
                    parse_arguments(&json)
                };
                tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments,
                    local_id: false,
                    signature: None,
                });
            }
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
    fn tool_use_input_assembles_from_json_deltas() {
        let events = [
            json!({"type":"message_start","message":{"id":"msg_1","role":"assistant","content":[]}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"ping"}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking"}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"grep","input":{}}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pattern\": \"fn"}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"}"}}),
            json!({"type":"content_block_stop","index":1}),
            json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_2","name":"glob","input":{}}}),
            json!({"type":"content_block_stop","index":2}),
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use"}}),
            json!({"type":"message_stop"}),
        ];
        let mut a = Assembler::default();
        let mut shown = String::new();
        for e in &events {
            a.feed(e, &mut |t| shown += t).unwrap();
        }
        let reply = a.finish().unwrap();
        assert_eq!(shown, "Checking");
        assert_eq!(reply.tool_calls.len(), 2);
        assert_eq!(reply.tool_calls[0].arguments, json!({"pattern": "fn"}));
        assert_eq!(reply.tool_calls[1].arguments, json!({}));
    }

    #[test]
    fn stream_errors_and_early_end() {
        let mut a = Assembler::default();
        let e = a.feed(
            &json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
            &mut |_| {},
        );
        assert_eq!(
            e,
            Err(ModelError::Reported("Overloaded (overloaded_error)".into()))
        );
        assert!(matches!(
            Assembler::default().finish(),
            Err(ModelError::Malformed(_))
        ));
    }

    #[test]
    fn results_are_tool_result_blocks_and_turns_alternate() {
        let call = ToolCall {
            id: "toolu_1".into(),
            name: "bash".into(),
            arguments: json!({"command": "false"}),
            local_id: false,
            signature: None,
        };
        let request = Request {
            system: "sys".into(),
            messages: vec![
                Message::User {
                    text: "first".into(),
                },
                Message::User {
                    text: "again".into(),
                },
                Message::Assistant {
                    text: "ok".into(),
                    tool_calls: vec![call],
                },
                Message::Tool {
                    results: vec![ToolResult {
                        call_id: "toolu_1".into(),
                        name: "bash".into(),
                        envelope: json!({"tool_success": false, "error": "x"}),
                    }],
                },
                Message::User {
                    text: "next".into(),
                },
            ],
            tools: json!([{"name": "bash", "input_schema": {"type": "object"}}]),
        };
        let body = request_body("claude", &request);
        assert_eq!(body["system"], "sys");
        assert_eq!(body["max_tokens"], MAX_TOKENS);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[0]["content"].as_array().unwrap().len(), 2);
        assert_eq!(messages[1]["content"][1]["type"], "tool_use");
        assert_eq!(
            messages[1]["content"][1]["input"],
            json!({"command": "false"})
        );
        let result = &messages[2]["content"][0];
        assert_eq!(result["type"], "tool_result");
        assert_eq!(result["tool_use_id"], "toolu_1");
        assert_eq!(result["is_error"], true);
        assert_eq!(messages[2]["content"][1]["text"], "next");
        assert_eq!(body["tools"][0]["name"], "bash");
    }
}
