//! OpenAI Chat Completions, streaming (`POST {OPENAI_BASE_URL}/chat/completions`
//! with `"stream": true`), which local servers speaking the same API also
//! serve; a server that answers with one JSON completion instead is read
//! as well. Tool calls arrive as `delta.tool_calls` pieces assembled by
//! `index`, arguments as a JSON string; results go back as `role: "tool"`
//! messages with the call's `tool_call_id`. `finish_reason: "length"` is a
//! cut reply, `content_filter` and a `refusal` text a refusal; the usage
//! comes in a last chunk asked for with `stream_options.include_usage`.

use serde_json::{json, Value};

use super::http::{self, event_json, Part};
use super::{
    parse_arguments, tools_empty, Message, ModelClient, ModelError, Reply, Request, SplitPairs,
    Stop, ToolCall, ToolFormat, Usage,
};

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

pub struct OpenAi {
    base_url: String,
    key: Option<String>,
    model: String,
    max_output_tokens: u64,
}

impl OpenAi {
    /// `base_url` ends in `/v1` (decision 12). A key may be absent for a
    /// local server that asks for none.
    pub fn new(base_url: &str, key: Option<String>, model: &str, max_output_tokens: u64) -> Self {
        OpenAi {
            base_url: base_url.trim_end_matches('/').to_string(),
            key,
            model: model.to_string(),
            max_output_tokens,
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
    fn max_output_tokens(&self) -> Option<u64> {
        Some(self.max_output_tokens)
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
        let limit = Limit::for_base_url(&self.base_url, self.max_output_tokens);
        http::streamed(on_text, |on_text| {
            let mut reply = Assembler::default();
            http::post(
                &url,
                &headers,
                &request_body(&self.model, request, limit),
                &mut |part| match part {
                    Part::Event(event) if event.data.trim() == "[DONE]" => {
                        reply.done = true;
                        Ok(false)
                    }
                    Part::Event(event) => {
                        reply.feed(&event_json("openai", &event.data)?, on_text)?;
                        Ok(true)
                    }
                    Part::Whole(completion) => {
                        reply.whole(&completion, on_text)?;
                        Ok(false)
                    }
                },
            )?;
            reply.finish()
        })
    }
}

/// The reply limit and the field that carries it: OpenAI's own API wants
/// `max_completion_tokens` (its reasoning models refuse `max_tokens`), while
/// the servers that copy the API (vLLM, llama.cpp, Ollama) all read
/// `max_tokens`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limit {
    pub field: &'static str,
    pub tokens: u64,
}

impl Limit {
    pub fn for_base_url(base_url: &str, tokens: u64) -> Limit {
        let host = base_url
            .split_once("://")
            .map_or(base_url, |(_, rest)| rest)
            .split(['/', ':'])
            .next()
            .unwrap_or("");
        let field = if host.eq_ignore_ascii_case("api.openai.com") {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        Limit { field, tokens }
    }
}

/// The request body for `messages` (pure, so it is tested without a server).
pub fn request_body(model: &str, request: &Request, limit: Limit) -> Value {
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
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    body[limit.field] = json!(limit.tokens);
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

/// Arguments as OpenAI wants them back: the JSON text of an object. Anything
/// else (text that never parsed) goes back as `{}`: a strict server refuses
/// a history holding arguments that are not JSON, and the model has already
/// been told what was wrong with them.
pub fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::Object(_) => arguments.to_string(),
        _ => "{}".to_string(),
    }
}

#[derive(Default)]
struct PartialCall {
    /// The stream's `index` for the call, when the server gives one.
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

/// Folds streamed chunks into a reply.
#[derive(Default)]
struct Assembler {
    text: String,
    pairs: SplitPairs,
    refusal: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
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
        if let Some(usage) = usage(&chunk["usage"]) {
            self.usage = Some(usage);
        }
        let Some(choice) = chunk["choices"].get(0) else {
            // Usage-only chunks and keep-alives carry no choice.
            return Ok(());
        };
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str() {
            let shown = self.pairs.piece(text);
            self.show(&shown, on_text);
        }
        if let Some(refusal) = delta["refusal"].as_str() {
            self.refusal.push_str(refusal);
        }
        for piece in delta["tool_calls"].as_array().into_iter().flatten() {
            self.call_piece(piece);
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_string());
            let held = self.pairs.rest();
            self.show(&held, on_text);
        }
        Ok(())
    }

    fn show(&mut self, text: &str, on_text: &mut dyn FnMut(&str)) {
        if !text.is_empty() {
            self.text.push_str(text);
            on_text(text);
        }
    }

    /// Adds one streamed piece of a tool call. Pieces carry the call's
    /// `index`; some servers leave it out and send each call whole, or its
    /// first piece with an `id` and the rest without: then a piece with a
    /// new id starts a new call and one without continues the last.
    fn call_piece(&mut self, piece: &Value) {
        let id = piece["id"].as_str().filter(|id| !id.is_empty());
        let index = piece["index"].as_u64();
        let found = match index {
            Some(i) => self.calls.iter().position(|c| c.index == Some(i)),
            None => match (id, self.calls.last()) {
                (Some(id), Some(last)) if last.id != id => None,
                (_, Some(last)) if last.index.is_none() => Some(self.calls.len() - 1),
                _ => None,
            },
        };
        let at = found.unwrap_or_else(|| {
            self.calls.push(PartialCall {
                index,
                ..PartialCall::default()
            });
            self.calls.len() - 1
        });
        let call = &mut self.calls[at];
        if let Some(id) = id {
            if call.id != id {
                call.id.push_str(id);
            }
        }
        if let Some(name) = piece["function"]["name"].as_str() {
            call.name.push_str(name);
        }
        if let Some(args) = piece["function"]["arguments"].as_str() {
            call.arguments.push_str(args);
        }
    }

    /// A whole completion (a server that did not stream).
    fn whole(
        &mut self,
        completion: &Value,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<(), ModelError> {
        if !completion["error"].is_null() {
            return self.feed(completion, on_text);
        }
        let Some(choice) = completion["choices"].get(0) else {
            return Err(ModelError::Malformed(format!(
                "the completion has no choices: {}",
                http::shorten(&completion.to_string(), 200)
            )));
        };
        let message = &choice["message"];
        let mut pieces = Vec::new();
        for (i, call) in message["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let mut piece = call.clone();
            piece["index"] = json!(i);
            pieces.push(piece);
        }
        let chunk = json!({
            "choices": [{
                "delta": {"content": message["content"], "refusal": message["refusal"], "tool_calls": pieces},
                "finish_reason": choice["finish_reason"],
            }],
            "usage": completion["usage"],
        });
        self.feed(&chunk, on_text)?;
        self.done = true;
        Ok(())
    }

    fn finish(self) -> Result<Reply, ModelError> {
        if self.finish_reason.is_none() && !self.done {
            return Err(ModelError::Broken(
                "the OpenAI stream ended before the reply was complete (no finish_reason, no [DONE])"
                    .into(),
            ));
        }
        let stop = if !self.refusal.is_empty() {
            Stop::Refused(self.refusal)
        } else {
            match self.finish_reason.as_deref() {
                Some("length") => Stop::Cut,
                Some("content_filter") => {
                    Stop::Refused("stopped by OpenAI's content filter (content_filter)".into())
                }
                _ => Stop::Complete,
            }
        };
        let mut tool_calls = Vec::new();
        for (position, call) in self.calls.into_iter().enumerate() {
            if call.name.is_empty() {
                return Err(ModelError::Malformed(format!(
                    "tool call {position} has no function name"
                )));
            }
            let local_id = call.id.is_empty();
            tool_calls.push(ToolCall {
                id: if local_id {
                    format!("call_{position}")
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
            stop,
            usage: self.usage,
        })
    }
}

/// Chat Completions' `usage` (`prompt_tokens`, `completion_tokens`).
fn usage(u: &Value) -> Option<Usage> {
    Some(Usage {
        input_tokens: u["prompt_tokens"].as_u64()?,
        output_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
        cached_input_tokens: u["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0),
        cache_write_tokens: 0,
    })
}

#[cfg(test)]
mod fuzz;

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

    fn assemble(chunks: &[Value]) -> Reply {
        let mut a = Assembler::default();
        for c in chunks {
            a.feed(c, &mut |_| {}).unwrap();
        }
        a.finish().unwrap()
    }

    #[test]
    fn cut_refused_filtered_and_usage() {
        let cut = assemble(&[
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"file_write","arguments":"{\"content\": \"ab"}}]}}]}),
            json!({"choices":[{"delta":{},"finish_reason":"length"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30,
                "prompt_tokens_details":{"cached_tokens":8}}}),
        ]);
        assert_eq!(cut.stop, Stop::Cut);
        assert_eq!(cut.tool_calls[0].arguments, json!("{\"content\": \"ab"));
        assert_eq!(
            cut.usage,
            Some(Usage {
                input_tokens: 10,
                output_tokens: 20,
                cached_input_tokens: 8,
                cache_write_tokens: 0,
            })
        );
        let refused = assemble(&[
            json!({"choices":[{"delta":{"refusal":"I can't "}}]}),
            json!({"choices":[{"delta":{"refusal":"do that."},"finish_reason":"stop"}]}),
        ]);
        assert_eq!(refused.stop, Stop::Refused("I can't do that.".into()));
        assert!(refused.text.is_empty());
        let filtered =
            assemble(&[json!({"choices":[{"delta":{},"finish_reason":"content_filter"}]})]);
        assert!(matches!(filtered.stop, Stop::Refused(why) if why.contains("content_filter")));
    }

    #[test]
    fn calls_without_an_index_are_not_merged() {
        // Each call whole, in its own chunk, with no index (as some local
        // servers send them), then a piece that continues the last.
        let reply = assemble(&[
            json!({"choices":[{"delta":{"tool_calls":[{"id":"a","type":"function","function":{"name":"glob","arguments":"{\"pattern\":\"*\"}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"id":"b","type":"function","function":{"name":"grep","arguments":"{\"pattern\":"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"\"x\"}"}}]}}]}),
            json!({"choices":[{"delta":{},"finish_reason":"tool_calls"}]}),
        ]);
        let got: Vec<_> = reply
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", "glob", json!({"pattern": "*"})),
                ("b", "grep", json!({"pattern": "x"}))
            ]
        );
    }

    #[test]
    fn a_surrogate_pair_split_across_chunks_is_joined() {
        let mut a = Assembler::default();
        let chunks = [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"file_write","arguments":"{\"content\": \"smile \uD83D"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\uDE00\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ];
        for c in chunks {
            a.feed(&event_json("openai", c).unwrap(), &mut |_| {})
                .unwrap();
        }
        let reply = a.finish().unwrap();
        assert_eq!(
            reply.tool_calls[0].arguments,
            json!({"content": "smile \u{1F600}"})
        );
    }

    #[test]
    fn a_surrogate_pair_split_across_text_chunks_is_one_character() {
        let mut a = Assembler::default();
        let mut shown = String::new();
        let chunks = [
            r#"{"choices":[{"delta":{"content":"Done \uD83D"}}]}"#,
            r#"{"choices":[{"delta":{"content":"\uDE00"}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        ];
        for c in chunks {
            a.feed(&event_json("openai", c).unwrap(), &mut |t| shown += t)
                .unwrap();
        }
        assert_eq!(shown, "Done \u{1F600}");
        assert_eq!(a.finish().unwrap().text, "Done \u{1F600}");
    }

    #[test]
    fn a_whole_completion_is_read_like_a_stream() {
        let mut a = Assembler::default();
        let mut shown = String::new();
        a.whole(
            &json!({"choices":[{"index":0,"message":{"role":"assistant","content":"Hi.",
                "tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]},
                "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}),
            &mut |t| shown += t,
        )
        .unwrap();
        let reply = a.finish().unwrap();
        assert_eq!(shown, "Hi.");
        assert_eq!(reply.tool_calls[0].name, "bash");
        assert_eq!(reply.usage.unwrap().output_tokens, 2);
    }

    #[test]
    fn arguments_go_back_as_object_text_or_empty() {
        assert_eq!(arguments_text(&json!({"a": 1})), r#"{"a":1}"#);
        assert_eq!(arguments_text(&json!("{oops")), "{}");
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
        assert!(matches!(a.finish(), Err(ModelError::Broken(_))));
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
            cache_key: Some("20261128-0001".into()),
        };
        let body = request_body("gpt", &request, Limit::for_base_url(DEFAULT_BASE_URL, 99));
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
        assert_eq!(body["max_completion_tokens"], 99);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["prompt_cache_key"], "20261128-0001");
        let no_tools = request_body(
            "gpt",
            &Request {
                tools: json!([]),
                cache_key: None,
                ..request
            },
            Limit::for_base_url("http://127.0.0.1:8080/v1", 7),
        );
        assert_eq!(no_tools["max_tokens"], 7);
        assert!(no_tools.get("max_completion_tokens").is_none());
        assert!(no_tools.get("tools").is_none());
        assert!(no_tools.get("prompt_cache_key").is_none());
    }
}
