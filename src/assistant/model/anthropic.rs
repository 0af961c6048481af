//! Anthropic Messages, streaming (`POST {ANTHROPIC_BASE_URL}/v1/messages`
//! with `"stream": true`). Tool calls arrive as `tool_use` content blocks
//! whose `input` streams as `input_json_delta` pieces; results go back in
//! the next user message as `tool_result` blocks with `tool_use_id` and
//! `is_error`. `stop_reason: "max_tokens"` is a cut reply and `"refusal"` a
//! safety stop; the usage comes in `message_start` (input) and
//! `message_delta` (output). A server that answers with one JSON message
//! instead of a stream is read as well.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::http::{self, event_json, Part};
use super::{
    arguments_object, parse_arguments, tools_empty, Message, ModelClient, ModelError, Reply,
    Request, Stop, ToolCall, ToolFormat, Usage,
};

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";

pub struct Anthropic {
    base_url: String,
    key: String,
    model: String,
    max_output_tokens: u64,
}

impl Anthropic {
    /// `base_url` has no `/v1` (decision 12).
    pub fn new(base_url: &str, key: String, model: &str, max_output_tokens: u64) -> Self {
        Anthropic {
            base_url: base_url.trim_end_matches('/').to_string(),
            key,
            model: model.to_string(),
            max_output_tokens,
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
    fn max_output_tokens(&self) -> Option<u64> {
        Some(self.max_output_tokens)
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
        http::streamed(on_text, |on_text| {
            let mut reply = Assembler::default();
            http::post(
                &url,
                &headers,
                &request_body(&self.model, request, self.max_output_tokens),
                &mut |part| match part {
                    Part::Event(event) => {
                        reply.feed(&event_json("anthropic", &event.data)?, on_text)?;
                        Ok(!reply.stopped)
                    }
                    Part::Whole(message) => {
                        reply.whole(&message, on_text)?;
                        Ok(false)
                    }
                },
            )?;
            reply.finish()
        })
    }
}

/// The request body (pure). Consecutive messages of one role are merged,
/// since the API wants user and assistant turns to alternate (a message
/// sent after a failed request follows the unanswered one).
pub fn request_body(model: &str, request: &Request, max_tokens: u64) -> Value {
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
    // Cache breakpoints (decision 63): the system prompt's block (tools
    // and system come first in Anthropic's order, so it covers both) and
    // the last block of each of the last two turns: the newest one is
    // written to the cache, the one before is read from it. Three in all,
    // within the API's four.
    let breakpoints = turns.len().saturating_sub(2);
    let messages: Vec<Value> = turns
        .into_iter()
        .enumerate()
        .map(|(i, (role, mut content))| {
            if i >= breakpoints {
                if let Some(last) = content.last_mut() {
                    last["cache_control"] = json!({"type": "ephemeral"});
                }
            }
            json!({"role": role, "content": content})
        })
        .collect();
    let system = if request.system.is_empty() {
        json!([])
    } else {
        json!([{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}])
    };
    let mut body = json!({
        "model": model,
        "max_tokens": max_tokens,
        "system": system,
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
    stop_reason: Option<String>,
    usage: Option<Usage>,
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
            "message_start" => {
                let u = &event["message"]["usage"];
                // Tokens read from and written to the prompt cache are
                // input too.
                let input = [
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                ]
                .iter()
                .filter_map(|k| u[*k].as_u64())
                .sum();
                self.usage = Some(Usage {
                    input_tokens: input,
                    output_tokens: u["output_tokens"].as_u64().unwrap_or(0),
                    cached_input_tokens: u["cache_read_input_tokens"].as_u64().unwrap_or(0),
                    cache_write_tokens: u["cache_creation_input_tokens"].as_u64().unwrap_or(0),
                });
            }
            "message_delta" => {
                if let Some(reason) = event["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(out) = event["usage"]["output_tokens"].as_u64() {
                    self.usage.get_or_insert_with(Usage::default).output_tokens = out;
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let e = &event["error"];
                let message = match (e["type"].as_str(), e["message"].as_str()) {
                    (Some(t), Some(m)) => format!("{m} ({t})"),
                    _ => e.to_string(),
                };
                // Overload and server trouble can arrive inside a stream
                // that began well: the stream broke off, and may be tried
                // again if nothing was shown yet.
                return Err(match e["type"].as_str() {
                    Some("overloaded_error" | "api_error" | "rate_limit_error") => {
                        ModelError::Broken(message)
                    }
                    _ => ModelError::Reported(message),
                });
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

    /// A whole message (a server that did not stream), fed through the
    /// events a stream of it would have carried.
    fn whole(&mut self, message: &Value, on_text: &mut dyn FnMut(&str)) -> Result<(), ModelError> {
        if message["type"] == "error" {
            return self.feed(message, on_text);
        }
        let mut start = message.clone();
        start["content"] = json!([]);
        self.feed(&json!({"type": "message_start", "message": start}), on_text)?;
        for (index, block) in message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let mut opening = block.clone();
            if block["type"] == "text" {
                opening["text"] = json!("");
            }
            self.feed(
                &json!({"type": "content_block_start", "index": index, "content_block": opening}),
                on_text,
            )?;
            if let Some(text) = block["text"].as_str().filter(|_| block["type"] == "text") {
                self.feed(
                    &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": text}}),
                    on_text,
                )?;
            }
        }
        self.feed(
            &json!({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"]},
                "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
            on_text,
        )?;
        self.feed(&json!({"type": "message_stop"}), on_text)
    }

    fn finish(self) -> Result<Reply, ModelError> {
        if !self.stopped {
            return Err(ModelError::Broken(
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
        let stop = match self.stop_reason.as_deref() {
            // The context window filled up mid-reply: cut as surely.
            Some("max_tokens" | "model_context_window_exceeded") => Stop::Cut,
            Some("refusal") => {
                Stop::Refused("stopped by Anthropic's safety classifiers (refusal)".into())
            }
            _ => Stop::Complete,
        };
        Ok(Reply {
            text: self.text,
            tool_calls,
            stop,
            usage: self.usage,
        })
    }
}

#[cfg(test)]
mod fuzz;

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
    fn stop_reasons_and_usage() {
        let run = |stop: &str| {
            let mut a = Assembler::default();
            for e in [
                json!({"type":"message_start","message":{"usage":{"input_tokens":5,"cache_read_input_tokens":100,"output_tokens":1}}}),
                json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
                json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Half"}}),
                json!({"type":"message_delta","delta":{"stop_reason":stop},"usage":{"output_tokens":42}}),
                json!({"type":"message_stop"}),
            ] {
                a.feed(&e, &mut |_| {}).unwrap();
            }
            a.finish().unwrap()
        };
        let cut = run("max_tokens");
        assert_eq!(cut.stop, Stop::Cut);
        assert_eq!(
            cut.usage,
            Some(Usage {
                input_tokens: 105,
                output_tokens: 42,
                cached_input_tokens: 100,
                cache_write_tokens: 0,
            })
        );
        assert!(matches!(run("refusal").stop, Stop::Refused(why) if why.contains("refusal")));
        assert_eq!(run("end_turn").stop, Stop::Complete);
    }

    #[test]
    fn a_whole_message_is_read_like_a_stream() {
        let mut a = Assembler::default();
        let mut shown = String::new();
        a.whole(
            &json!({"type":"message","role":"assistant","content":[
                {"type":"text","text":"Checking."},
                {"type":"tool_use","id":"toolu_1","name":"glob","input":{"pattern":"*"}}],
                "stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}}),
            &mut |t| shown += t,
        )
        .unwrap();
        let reply = a.finish().unwrap();
        assert_eq!(shown, "Checking.");
        assert_eq!(reply.tool_calls[0].arguments, json!({"pattern": "*"}));
        assert_eq!(reply.usage.unwrap().output_tokens, 4);
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
            Err(ModelError::Broken("Overloaded (overloaded_error)".into()))
        );
        let e = Assembler::default().feed(
            &json!({"type":"error","error":{"type":"invalid_request_error","message":"bad"}}),
            &mut |_| {},
        );
        assert_eq!(
            e,
            Err(ModelError::Reported("bad (invalid_request_error)".into()))
        );
        assert!(matches!(
            Assembler::default().finish(),
            Err(ModelError::Broken(_))
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
            cache_key: Some("s1".into()),
        };
        let body = request_body("claude", &request, 1234);
        let ephemeral = json!({"type": "ephemeral"});
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "sys", "cache_control": ephemeral}])
        );
        // Breakpoints: the system block and the last block of the last
        // two turns, never more than four.
        let marked = body.to_string().matches("cache_control").count();
        assert_eq!(marked, 3);
        assert_eq!(
            body["messages"][1]["content"][1]["cache_control"],
            ephemeral
        );
        assert_eq!(
            body["messages"][2]["content"][1]["cache_control"],
            ephemeral
        );
        assert!(body["messages"][0]["content"][1]
            .get("cache_control")
            .is_none());
        assert_eq!(body["max_tokens"], 1234);
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
