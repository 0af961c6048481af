//! OpenAI Responses (`POST {OPENAI_BASE_URL}/responses`), streaming, or one
//! JSON response from a server that does not stream. The conversation goes
//! as `input` items: user and assistant messages, `function_call` items
//! and their `function_call_output`s paired by `call_id`. Nothing is stored
//! on OpenAI's side (`store: false`): every request carries the whole
//! conversation, and a reasoning model's `reasoning` items come back with
//! their `encrypted_content` (asked for with `include`) and go out again
//! before the calls they led to, so the model keeps its chain of thought
//! across tool calls. Text streams from `response.output_text.delta`; the
//! rest is read from the final response (`response.completed`, or
//! `response.incomplete` when the reply was cut at `max_output_tokens`).

use serde_json::{json, Value};

use super::http::{self, event_json, Part};
use super::openai::arguments_text;
use super::{
    parse_arguments, tools_empty, Message, ModelClient, ModelError, Reply, Request, SplitPairs,
    Stop, ToolCall, ToolFormat, Usage,
};

pub struct Responses {
    base_url: String,
    key: Option<String>,
    model: String,
    max_output_tokens: u64,
}

impl Responses {
    /// `base_url` ends in `/v1`, as for Chat Completions; the key may be
    /// absent for a local server.
    pub fn new(base_url: &str, key: Option<String>, model: &str, max_output_tokens: u64) -> Self {
        Responses {
            base_url: base_url.trim_end_matches('/').to_string(),
            key,
            model: model.to_string(),
            max_output_tokens,
        }
    }
}

impl ModelClient for Responses {
    fn provider(&self) -> &'static str {
        "openai-responses"
    }
    fn model(&self) -> &str {
        &self.model
    }
    fn max_output_tokens(&self) -> Option<u64> {
        Some(self.max_output_tokens)
    }
    fn tool_format(&self) -> ToolFormat {
        ToolFormat::OpenAiResponses
    }

    fn stream(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ModelError> {
        let url = format!("{}/responses", self.base_url);
        let auth = self.key.as_ref().map(|k| format!("Bearer {k}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("authorization", a.as_str())).collect();
        http::streamed(on_text, |on_text| {
            let mut reply = Assembler::default();
            http::post(
                &url,
                &headers,
                &request_body(&self.model, request, self.max_output_tokens),
                &mut |part| match part {
                    Part::Event(event) => {
                        reply.feed(&event_json("openai-responses", &event.data)?, on_text)?;
                        Ok(reply.last.is_none())
                    }
                    Part::Whole(response) => {
                        if !response["error"].is_null() && response.get("output").is_none() {
                            return Err(ModelError::Reported(error_text(&response["error"])));
                        }
                        reply.last = Some(response);
                        Ok(false)
                    }
                },
            )?;
            reply.finish(on_text)
        })
    }
}

/// The request body (pure).
pub fn request_body(model: &str, request: &Request, max_output_tokens: u64) -> Value {
    let mut input = Vec::new();
    for message in &request.messages {
        match message {
            Message::User { text } => input.push(json!({"role": "user", "content": text})),
            Message::Assistant { text, tool_calls } => {
                // A reasoning item must be followed by the item it led to,
                // as in the reply: the reasoning of the first call came
                // before the text too (a model thinks, says what it will
                // do, then calls).
                if let Some(first) = tool_calls.first() {
                    input.extend(reasoning_items(first));
                }
                if !text.is_empty() {
                    input.push(json!({"role": "assistant", "content": text}));
                }
                for (i, c) in tool_calls.iter().enumerate() {
                    if i > 0 {
                        input.extend(reasoning_items(c));
                    }
                    input.push(json!({
                        "type": "function_call",
                        "call_id": c.id,
                        "name": c.name,
                        "arguments": arguments_text(&c.arguments),
                    }));
                }
            }
            Message::Tool { results } => {
                for r in results {
                    input.push(json!({
                        "type": "function_call_output",
                        "call_id": r.call_id,
                        "output": r.envelope.to_string(),
                    }));
                }
            }
        }
    }
    let mut body = json!({
        "model": model,
        "instructions": request.system,
        "input": input,
        "max_output_tokens": max_output_tokens,
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
    });
    if !tools_empty(&request.tools) {
        body["tools"] = request.tools.clone();
    }
    // Requests of one session share their prefix: the key sends them to
    // the same cache (decision 63).
    if let Some(key) = &request.cache_key {
        body["prompt_cache_key"] = json!(key);
    }
    body
}

/// The reasoning items that came before `call` in its reply, kept in the
/// call's `signature` as a JSON array (see `Assembler::finish`).
fn reasoning_items(call: &ToolCall) -> Vec<Value> {
    call.signature
        .as_deref()
        .and_then(|s| serde_json::from_str::<Vec<Value>>(s).ok())
        .unwrap_or_default()
}

/// A reasoning item as it goes back, or None when it cannot. With
/// `store: false` an item's id names nothing on OpenAI's side and is
/// refused ("Item with id 'rs_...' not found"), so the item goes without
/// it, carried by its encrypted content; an item without that content (a
/// server that ignored `include`) would be only a dangling id, and is left
/// out.
fn replayable(mut item: Value) -> Option<Value> {
    item["encrypted_content"].as_str()?;
    let map = item.as_object_mut()?;
    map.remove("id");
    map.remove("status");
    Some(item)
}

#[derive(Default)]
struct Assembler {
    /// The text streamed so far.
    text: String,
    pairs: SplitPairs,
    refusal: String,
    /// The final response object, once the stream has delivered it.
    last: Option<Value>,
}

impl Assembler {
    fn feed(&mut self, event: &Value, on_text: &mut dyn FnMut(&str)) -> Result<(), ModelError> {
        match event["type"].as_str().unwrap_or("") {
            "response.output_text.delta" => {
                let shown = self
                    .pairs
                    .piece(event["delta"].as_str().unwrap_or_default());
                self.show(&shown, on_text);
            }
            "response.refusal.delta" => {
                self.refusal
                    .push_str(event["delta"].as_str().unwrap_or_default());
            }
            "response.completed" | "response.incomplete" => {
                let held = self.pairs.rest();
                self.show(&held, on_text);
                self.last = Some(event["response"].clone());
            }
            "response.failed" => {
                return Err(ModelError::Reported(error_text(
                    &event["response"]["error"],
                )))
            }
            "error" => return Err(ModelError::Reported(error_text(event))),
            _ => {}
        }
        Ok(())
    }

    fn show(&mut self, text: &str, on_text: &mut dyn FnMut(&str)) {
        if !text.is_empty() {
            self.text.push_str(text);
            on_text(text);
        }
    }

    fn finish(self, on_text: &mut dyn FnMut(&str)) -> Result<Reply, ModelError> {
        let Some(response) = self.last else {
            return Err(ModelError::Broken(
                "the Responses stream ended before response.completed".into(),
            ));
        };
        let streamed = !self.text.is_empty();
        let mut text = self.text;
        let mut refusal = self.refusal;
        let mut tool_calls = Vec::new();
        let mut reasoning = Vec::new();
        for item in response["output"].as_array().into_iter().flatten() {
            match item["type"].as_str().unwrap_or("") {
                "reasoning" => reasoning.extend(replayable(item.clone())),
                "message" => {
                    for content in item["content"].as_array().into_iter().flatten() {
                        match content["type"].as_str() {
                            // A server that did not stream: the text is
                            // shown now.
                            Some("output_text") if !streamed => {
                                let piece = content["text"].as_str().unwrap_or_default();
                                if !piece.is_empty() {
                                    on_text(piece);
                                    text.push_str(piece);
                                }
                            }
                            Some("refusal") if refusal.is_empty() => {
                                refusal = content["refusal"].as_str().unwrap_or_default().into();
                            }
                            _ => {}
                        }
                    }
                }
                "function_call" => {
                    let (Some(id), Some(name)) = (item["call_id"].as_str(), item["name"].as_str())
                    else {
                        return Err(ModelError::Malformed(format!(
                            "a function_call lacks its call_id or name: {}",
                            http::shorten(&item.to_string(), 200)
                        )));
                    };
                    let before = std::mem::take(&mut reasoning);
                    tool_calls.push(ToolCall {
                        id: id.to_string(),
                        name: name.to_string(),
                        arguments: parse_arguments(item["arguments"].as_str().unwrap_or("")),
                        local_id: false,
                        signature: (!before.is_empty()).then(|| Value::Array(before).to_string()),
                    });
                }
                _ => {}
            }
        }
        let reason = response["incomplete_details"]["reason"].as_str();
        let stop = if !refusal.is_empty() {
            Stop::Refused(refusal)
        } else if response["status"] == "incomplete" {
            match reason {
                Some("content_filter") => {
                    Stop::Refused("stopped by OpenAI's content filter (content_filter)".into())
                }
                _ => Stop::Cut,
            }
        } else {
            Stop::Complete
        };
        let u = &response["usage"];
        let usage = u["input_tokens"].as_u64().map(|input| Usage {
            input_tokens: input,
            output_tokens: u["output_tokens"].as_u64().unwrap_or(0),
            cached_input_tokens: u["input_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0),
            cache_write_tokens: 0,
        });
        Ok(Reply {
            text,
            tool_calls,
            stop,
            usage,
        })
    }
}

/// An error object's message (`{"message": ..., "code": ...}`).
fn error_text(error: &Value) -> String {
    match (error["message"].as_str(), error["code"].as_str()) {
        (Some(m), Some(c)) => format!("{m} ({c})"),
        (Some(m), None) => m.to_string(),
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assistant::model::ToolResult;

    fn run(events: &[Value]) -> (Result<Reply, ModelError>, String) {
        let mut a = Assembler::default();
        let mut shown = String::new();
        for e in events {
            if let Err(e) = a.feed(e, &mut |t| shown += t) {
                return (Err(e), shown);
            }
        }
        let reply = a.finish(&mut |t| shown += t);
        (reply, shown)
    }

    #[test]
    fn streamed_text_calls_reasoning_and_usage() {
        let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": [],
            "encrypted_content": "opaque"});
        let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1",
            "name": "bash", "arguments": "{\"command\":\"ls\"}", "status": "completed"});
        let (reply, shown) = run(&[
            json!({"type": "response.created", "response": {"status": "in_progress"}}),
            json!({"type": "response.output_item.added", "item": reasoning}),
            json!({"type": "response.output_text.delta", "delta": "Look"}),
            json!({"type": "response.output_text.delta", "delta": "ing."}),
            json!({"type": "response.function_call_arguments.delta", "delta": "{\"co"}),
            json!({"type": "response.completed", "response": {"status": "completed",
                "output": [reasoning, {"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Looking."}]}, call],
                "usage": {"input_tokens": 12, "output_tokens": 34,
                    "input_tokens_details": {"cached_tokens": 10}}}}),
        ]);
        let reply = reply.unwrap();
        assert_eq!(shown, "Looking.");
        assert_eq!(reply.text, "Looking.");
        assert_eq!(reply.stop, Stop::Complete);
        assert_eq!(
            reply.usage,
            Some(Usage {
                input_tokens: 12,
                output_tokens: 34,
                cached_input_tokens: 10,
                cache_write_tokens: 0,
            })
        );
        let c = &reply.tool_calls[0];
        assert_eq!((c.id.as_str(), c.name.as_str()), ("call_1", "bash"));
        assert_eq!(c.arguments, json!({"command": "ls"}));
        let items: Value = serde_json::from_str(c.signature.as_deref().unwrap()).unwrap();
        assert_eq!(
            items,
            json!([{"type": "reasoning", "summary": [], "encrypted_content": "opaque"}])
        );

        // The next request gives the reasoning back before the call, and
        // the output after it by call_id.
        let request = Request {
            system: "sys".into(),
            messages: vec![
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: reply.text.clone(),
                    tool_calls: reply.tool_calls.clone(),
                },
                Message::Tool {
                    results: vec![ToolResult {
                        call_id: "call_1".into(),
                        name: "bash".into(),
                        envelope: json!({"tool_success": true, "result": {}}),
                    }],
                },
            ],
            tools: json!([{"type": "function", "name": "bash"}]),
            cache_key: Some("s-1".into()),
        };
        let body = request_body("o4-mini", &request, 500);
        assert_eq!(body["instructions"], "sys");
        assert_eq!(body["prompt_cache_key"], "s-1");
        assert_eq!(body["max_output_tokens"], 500);
        assert_eq!(body["store"], false);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        let input = body["input"].as_array().unwrap();
        let kinds: Vec<&str> = input
            .iter()
            .map(|i| i["type"].as_str().or(i["role"].as_str()).unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "user",
                "reasoning",
                "assistant",
                "function_call",
                "function_call_output"
            ]
        );
        assert_eq!(input[3]["call_id"], "call_1");
        assert_eq!(input[3]["arguments"], "{\"command\":\"ls\"}");
        assert_eq!(input[4]["call_id"], "call_1");
        assert_eq!(input[4]["output"], "{\"tool_success\":true,\"result\":{}}");
        assert_eq!(body["tools"][0]["name"], "bash");
    }

    #[test]
    fn reasoning_without_its_encrypted_content_is_not_replayed() {
        assert_eq!(
            replayable(json!({"type": "reasoning", "id": "rs_1", "summary": []})),
            None
        );
        assert_eq!(
            replayable(
                json!({"type": "reasoning", "id": "rs_1", "status": "completed",
                "summary": [], "encrypted_content": "e"})
            ),
            Some(json!({"type": "reasoning", "summary": [], "encrypted_content": "e"}))
        );
    }

    #[test]
    fn incomplete_refused_failed_and_unfinished() {
        let (reply, _) = run(&[json!({"type": "response.incomplete", "response": {
            "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "function_call", "call_id": "c", "name": "file_write",
                "arguments": "{\"content\": \"abc"}]}})]);
        let reply = reply.unwrap();
        assert_eq!(reply.stop, Stop::Cut);
        assert_eq!(reply.tool_calls[0].arguments, json!("{\"content\": \"abc"));

        let (reply, _) = run(&[
            json!({"type": "response.refusal.delta", "delta": "I can't "}),
            json!({"type": "response.refusal.delta", "delta": "help."}),
            json!({"type": "response.completed", "response": {"status": "completed",
                "output": [{"type": "message", "content": [{"type": "refusal", "refusal": "I can't help."}]}]}}),
        ]);
        assert_eq!(reply.unwrap().stop, Stop::Refused("I can't help.".into()));

        let (reply, _) = run(&[json!({"type": "response.failed", "response": {
            "status": "failed", "error": {"code": "server_error", "message": "boom"}}})]);
        assert_eq!(
            reply,
            Err(ModelError::Reported("boom (server_error)".into()))
        );

        let (reply, _) = run(&[json!({"type": "response.output_text.delta", "delta": "half"})]);
        assert!(matches!(reply, Err(ModelError::Broken(_))));
    }

    #[test]
    fn a_whole_response_shows_its_text() {
        let mut a = Assembler {
            last: Some(json!({"status": "completed", "output": [{"type": "message",
                "content": [{"type": "output_text", "text": "All at once."}]}]})),
            ..Assembler::default()
        };
        a.refusal.clear();
        let mut shown = String::new();
        let reply = a.finish(&mut |t| shown += t).unwrap();
        assert_eq!(shown, "All at once.");
        assert_eq!(reply.text, "All at once.");
        assert_eq!(reply.usage, None);
    }
}
