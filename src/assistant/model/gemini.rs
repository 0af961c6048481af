//! Google Gemini, streaming (`POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`,
//! base from `IKIGAI_GOOGLE_AI_URL`). Tool calls arrive whole as
//! `functionCall` parts (with a `thoughtSignature` that must go back);
//! results go back as `functionResponse` parts whose `response` is the
//! envelope object. `finishReason: MAX_TOKENS` is a cut reply; `SAFETY` and
//! its kin (`RECITATION`, `PROHIBITED_CONTENT`, ...) are safety stops; the
//! usage is the last `usageMetadata`.

use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::http::{self, event_json, Part};
use super::{
    arguments_object, Message, ModelClient, ModelError, Reply, Request, Stop, ToolCall, ToolFormat,
    Usage,
};

pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

pub struct Gemini {
    base_url: String,
    key: String,
    model: String,
    max_output_tokens: u64,
}

impl Gemini {
    /// `base_url` is the API's root; when it already names a version
    /// (`.../v1beta`), that version is used.
    pub fn new(base_url: &str, key: String, model: &str, max_output_tokens: u64) -> Self {
        Gemini {
            base_url: base_url.trim_end_matches('/').to_string(),
            key,
            model: model.to_string(),
            max_output_tokens,
        }
    }

    fn url(&self) -> String {
        let last = self.base_url.rsplit('/').next().unwrap_or("");
        let versioned = last.len() > 1
            && last.starts_with('v')
            && last[1..].starts_with(|c: char| c.is_ascii_digit());
        let base = if versioned {
            self.base_url.clone()
        } else {
            format!("{}/v1beta", self.base_url)
        };
        format!("{base}/models/{}:streamGenerateContent?alt=sse", self.model)
    }
}

impl ModelClient for Gemini {
    fn provider(&self) -> &'static str {
        "google"
    }
    fn model(&self) -> &str {
        &self.model
    }
    fn max_output_tokens(&self) -> Option<u64> {
        Some(self.max_output_tokens)
    }
    fn tool_format(&self) -> ToolFormat {
        ToolFormat::Google
    }

    fn stream(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ModelError> {
        let headers = [("x-goog-api-key", self.key.as_str())];
        http::streamed(on_text, |on_text| {
            let mut reply = Assembler::default();
            http::post(
                &self.url(),
                &headers,
                &request_body(request, self.max_output_tokens),
                &mut |part| match part {
                    Part::Event(event) => {
                        reply.feed(&event_json("google", &event.data)?, on_text)?;
                        Ok(true)
                    }
                    // Without `alt=sse` Gemini answers a JSON array of the same
                    // chunks; a proxy may answer one.
                    Part::Whole(Value::Array(chunks)) => {
                        for chunk in &chunks {
                            reply.feed(chunk, on_text)?;
                        }
                        Ok(false)
                    }
                    Part::Whole(chunk) => {
                        reply.feed(&chunk, on_text)?;
                        Ok(false)
                    }
                },
            )?;
            reply.finish()
        })
    }
}

/// The request body (pure). Turns of one role are merged, as Gemini wants
/// `user` and `model` to alternate.
pub fn request_body(request: &Request, max_output_tokens: u64) -> Value {
    let mut local_ids = HashSet::new();
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        let (role, parts) = match message {
            Message::User { text } => ("user", vec![json!({"text": text})]),
            Message::Assistant { text, tool_calls } => {
                let mut parts = Vec::new();
                if !text.is_empty() {
                    parts.push(json!({"text": text}));
                }
                for c in tool_calls {
                    let mut call = json!({"name": c.name, "args": arguments_object(&c.arguments)});
                    if c.local_id {
                        local_ids.insert(c.id.as_str());
                    } else {
                        call["id"] = json!(c.id);
                    }
                    let mut part = json!({"functionCall": call});
                    // A session begun with the Responses API keeps reasoning
                    // items there (a JSON array); Gemini's own signatures are
                    // base64 and never start with `[`.
                    if let Some(signature) = c.signature.as_ref().filter(|s| !s.starts_with('[')) {
                        part["thoughtSignature"] = json!(signature);
                    }
                    parts.push(part);
                }
                ("model", parts)
            }
            Message::Tool { results } => (
                "user",
                results
                    .iter()
                    .map(|r| {
                        let mut response = json!({"name": r.name, "response": r.envelope});
                        if !local_ids.contains(r.call_id.as_str()) {
                            response["id"] = json!(r.call_id);
                        }
                        json!({"functionResponse": response})
                    })
                    .collect(),
            ),
        };
        if parts.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(parts),
            _ => turns.push((role, parts)),
        }
    }
    let contents: Vec<Value> = turns
        .into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect();
    let mut body = json!({
        "systemInstruction": {"parts": [{"text": request.system}]},
        "contents": contents,
        "generationConfig": {"maxOutputTokens": max_output_tokens},
    });
    let tools = match &request.tools {
        Value::Array(a) => a.clone(),
        Value::Object(_) => vec![request.tools.clone()],
        _ => vec![],
    };
    let declared = tools.iter().any(|t| {
        t["functionDeclarations"]
            .as_array()
            .is_some_and(|d| !d.is_empty())
    });
    if declared {
        body["tools"] = Value::Array(tools);
    }
    body
}

#[derive(Default)]
struct Assembler {
    text: String,
    calls: Vec<ToolCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

/// Finish reasons that mean Gemini withheld the answer on purpose.
const SAFETY_STOPS: &[&str] = &[
    "SAFETY",
    "RECITATION",
    "LANGUAGE",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
];

impl Assembler {
    fn feed(&mut self, chunk: &Value, on_text: &mut dyn FnMut(&str)) -> Result<(), ModelError> {
        if !chunk["error"].is_null() {
            let message = chunk["error"]["message"]
                .as_str()
                .unwrap_or("unknown error");
            return Err(ModelError::Reported(message.to_string()));
        }
        if let Some(reason) = chunk["promptFeedback"]["blockReason"].as_str() {
            return Err(ModelError::Reported(format!(
                "the prompt was blocked ({reason})"
            )));
        }
        let u = &chunk["usageMetadata"];
        if let Some(input) = u["promptTokenCount"].as_u64() {
            // Thinking is output the model was paid to write.
            let output = ["candidatesTokenCount", "thoughtsTokenCount"]
                .iter()
                .filter_map(|k| u[*k].as_u64())
                .sum();
            self.usage = Some(Usage {
                input_tokens: input,
                output_tokens: output,
                // Part of promptTokenCount, served from Gemini's cache.
                cached_input_tokens: u["cachedContentTokenCount"].as_u64().unwrap_or(0),
                cache_write_tokens: 0,
            });
        }
        let Some(candidate) = chunk["candidates"].get(0) else {
            return Ok(());
        };
        for part in candidate["content"]["parts"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(text) = part["text"].as_str() {
                // Thought summaries are the model's, not the answer.
                if part["thought"] != json!(true) && !text.is_empty() {
                    self.text.push_str(text);
                    on_text(text);
                }
            }
            let call = &part["functionCall"];
            if let Some(name) = call["name"].as_str() {
                let provided = call["id"].as_str().filter(|id| !id.is_empty());
                self.calls.push(ToolCall {
                    id: provided.map(str::to_string).unwrap_or_default(),
                    name: name.to_string(),
                    arguments: if call["args"].is_null() {
                        json!({})
                    } else {
                        call["args"].clone()
                    },
                    local_id: provided.is_none(),
                    signature: part["thoughtSignature"].as_str().map(str::to_string),
                });
            }
        }
        if let Some(reason) = candidate["finishReason"].as_str() {
            self.finish_reason = Some(reason.to_string());
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Reply, ModelError> {
        let Some(reason) = self.finish_reason else {
            return Err(ModelError::Broken(
                "the Gemini stream ended before a finishReason".into(),
            ));
        };
        let stop = match reason.as_str() {
            "MAX_TOKENS" => Stop::Cut,
            r if SAFETY_STOPS.contains(&r) => {
                Stop::Refused(format!("stopped by Gemini's safety filters ({r})"))
            }
            "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" => {
                return Err(ModelError::Reported(format!(
                    "the model wrote a tool call Gemini could not read (finishReason {reason})"
                )))
            }
            _ if self.text.is_empty() && self.calls.is_empty() && reason != "STOP" => {
                return Err(ModelError::Reported(format!(
                    "the model stopped without an answer (finishReason {reason})"
                )))
            }
            _ => Stop::Complete,
        };
        // Ids we make up must be unique within the session, which outlives
        // this process when resumed.
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        for (i, call) in self.calls.iter_mut().enumerate() {
            if call.local_id {
                call.id = format!("call_{stamp:x}_{i}");
            }
        }
        Ok(Reply {
            text: self.text,
            tool_calls: self.calls,
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
    fn url_adds_the_version_unless_given() {
        let g = Gemini::new("http://127.0.0.1:9/", "k".into(), "gemini-x", 1);
        assert_eq!(
            g.url(),
            "http://127.0.0.1:9/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
        );
        let g = Gemini::new("http://h/v1", "k".into(), "m", 1);
        assert_eq!(
            g.url(),
            "http://h/v1/models/m:streamGenerateContent?alt=sse"
        );
    }

    #[test]
    fn function_calls_keep_signatures_and_get_ids() {
        let mut a = Assembler::default();
        let mut shown = String::new();
        a.feed(&json!({"candidates":[{"content":{"role":"model","parts":[{"text":"On it. "},{"text":"hmm","thought":true}]}}]}), &mut |t| shown += t).unwrap();
        a.feed(
            &json!({"candidates":[{"content":{"role":"model","parts":[
            {"functionCall":{"name":"glob","args":{"pattern":"*.rs"}},"thoughtSignature":"sig"},
            {"functionCall":{"name":"bash","args":{"command":"ls"},"id":"fc-1"}}
        ]},"finishReason":"STOP"}]}),
            &mut |t| shown += t,
        )
        .unwrap();
        let reply = a.finish().unwrap();
        assert_eq!(shown, "On it. ");
        assert_eq!(reply.tool_calls[0].signature.as_deref(), Some("sig"));
        assert!(reply.tool_calls[0].local_id && reply.tool_calls[0].id.starts_with("call_"));
        assert_eq!(
            (
                reply.tool_calls[1].id.as_str(),
                reply.tool_calls[1].local_id
            ),
            ("fc-1", false)
        );
    }

    #[test]
    fn max_tokens_is_a_cut_and_usage_counts_thoughts() {
        let mut a = Assembler::default();
        a.feed(
            &json!({"candidates":[{"content":{"parts":[{"text":"Half a"}]},"finishReason":"MAX_TOKENS"}],
                "usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":3,"thoughtsTokenCount":2,
                    "cachedContentTokenCount":4}}),
            &mut |_| {},
        )
        .unwrap();
        let reply = a.finish().unwrap();
        assert_eq!(reply.stop, Stop::Cut);
        assert_eq!(
            reply.usage,
            Some(Usage {
                input_tokens: 7,
                output_tokens: 5,
                cached_input_tokens: 4,
                cache_write_tokens: 0,
            })
        );
        let mut a = Assembler::default();
        a.feed(
            &json!({"candidates":[{"finishReason":"MALFORMED_FUNCTION_CALL"}]}),
            &mut |_| {},
        )
        .unwrap();
        assert!(
            matches!(a.finish(), Err(ModelError::Reported(m)) if m.contains("MALFORMED_FUNCTION_CALL"))
        );
    }

    #[test]
    fn empty_stops_blocks_and_early_ends_are_errors() {
        let mut a = Assembler::default();
        a.feed(
            &json!({"candidates":[{"finishReason":"SAFETY"}]}),
            &mut |_| {},
        )
        .unwrap();
        assert!(
            matches!(a.finish(), Ok(Reply { stop: Stop::Refused(m), .. }) if m.contains("SAFETY"))
        );
        let mut a = Assembler::default();
        let e = a.feed(
            &json!({"promptFeedback":{"blockReason":"OTHER"}}),
            &mut |_| {},
        );
        assert!(matches!(e, Err(ModelError::Reported(_))));
        assert!(matches!(
            Assembler::default().finish(),
            Err(ModelError::Broken(_))
        ));
    }

    #[test]
    fn body_has_function_responses_with_object_envelopes() {
        let calls = vec![
            ToolCall {
                id: "call_x_0".into(),
                name: "glob".into(),
                arguments: json!({}),
                local_id: true,
                signature: Some("sig".into()),
            },
            ToolCall {
                id: "fc-1".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls"}),
                local_id: false,
                signature: None,
            },
        ];
        let results = calls
            .iter()
            .map(|c| ToolResult {
                call_id: c.id.clone(),
                name: c.name.clone(),
                envelope: json!({"tool_success": true, "result": {}}),
            })
            .collect();
        let request = Request {
            system: "sys".into(),
            messages: vec![
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: calls,
                },
                Message::Tool { results },
            ],
            tools: json!([{"functionDeclarations": [{"name": "glob"}]}]),
            cache_key: None,
        };
        let body = request_body(&request, 321);
        assert_eq!(body["generationConfig"]["maxOutputTokens"], 321);
        assert_eq!(body["systemInstruction"]["parts"][0]["text"], "sys");
        let contents = body["contents"].as_array().unwrap();
        assert_eq!(contents[1]["role"], "model");
        assert_eq!(contents[1]["parts"][0]["thoughtSignature"], "sig");
        assert!(contents[1]["parts"][0]["functionCall"].get("id").is_none());
        assert_eq!(contents[1]["parts"][1]["functionCall"]["id"], "fc-1");
        let responses = &contents[2]["parts"];
        assert_eq!(responses[0]["functionResponse"]["name"], "glob");
        assert!(responses[0]["functionResponse"].get("id").is_none());
        assert_eq!(responses[1]["functionResponse"]["id"], "fc-1");
        assert!(responses[1]["functionResponse"]["response"].is_object());
        assert_eq!(body["tools"][0]["functionDeclarations"][0]["name"], "glob");
        let none = request_body(
            &Request {
                tools: json!([{"functionDeclarations": []}]),
                cache_key: None,
                ..request
            },
            1,
        );
        assert!(none.get("tools").is_none());
    }
}
