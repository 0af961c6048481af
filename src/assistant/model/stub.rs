//! The `stub` provider: deterministic replies without a network (as
//! shellclaw's `SHELLCLAW_LLM_BACKEND=stub`), so the whole loop, tools
//! included, runs offline in tests and demonstrations.
//!
//! A message made of `call NAME {ARGS}` phrases asks for those tool calls
//! (several phrases: parallel calls); tool results are answered by quoting
//! each envelope; any other message is echoed with the tools offered.

use serde_json::{json, Value};

use super::{Message, ModelClient, ModelError, Reply, Request, ToolCall, ToolFormat, Usage};

pub struct Stub;

impl ModelClient for Stub {
    fn provider(&self) -> &'static str {
        "stub"
    }
    fn model(&self) -> &str {
        "stub"
    }
    fn tool_format(&self) -> ToolFormat {
        ToolFormat::OpenAiChat
    }

    fn stream(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ModelError> {
        let mut reply = answer(request);
        reply.usage = Some(usage(request, &reply));
        // Word by word, so the streaming path is exercised as with a real model.
        for piece in reply.text.split_inclusive(' ') {
            on_text(piece);
        }
        Ok(reply)
    }
}

fn answer(request: &Request) -> Reply {
    let earlier_calls = request
        .messages
        .iter()
        .map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls.len(),
            _ => 0,
        })
        .sum::<usize>();
    match request.messages.last() {
        Some(Message::User { text }) => match parse_calls(text) {
            Some(calls) => Reply {
                text: String::new(),
                tool_calls: calls
                    .into_iter()
                    .enumerate()
                    .map(|(i, (name, arguments))| ToolCall {
                        id: format!("stub_call_{}", earlier_calls + i + 1),
                        name,
                        arguments,
                        local_id: false,
                        signature: None,
                    })
                    .collect(),
                ..Reply::default()
            },
            None => {
                let names = tool_names(&request.tools);
                let offered = if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                };
                Reply {
                    text: format!("[stub] You said: {text}\nTools offered: {offered}."),
                    tool_calls: vec![],
                    ..Reply::default()
                }
            }
        },
        Some(Message::Tool { results }) => Reply {
            text: results
                .iter()
                .map(|r| format!("[stub] {} returned {}", r.name, r.envelope))
                .collect::<Vec<_>>()
                .join("\n"),
            tool_calls: vec![],
            ..Reply::default()
        },
        _ => Reply {
            text: "[stub] Nothing to answer.".into(),
            tool_calls: vec![],
            ..Reply::default()
        },
    }
}

/// Tokens as a stand-in count, one per four bytes of what was sent and
/// answered, so the status line and /cost have figures to show offline.
fn usage(request: &Request, reply: &Reply) -> Usage {
    let sent = request.system.len()
        + serde_json::to_string(&request.messages).map_or(0, |s| s.len())
        + request.tools.to_string().len();
    let answered =
        reply.text.len() + serde_json::to_string(&reply.tool_calls).map_or(0, |s| s.len());
    Usage {
        input_tokens: sent.div_ceil(4) as u64,
        output_tokens: answered.div_ceil(4) as u64,
        ..Usage::default()
    }
}

/// `call NAME {ARGS} call NAME2 ...` as (name, arguments); None when the
/// message is not made of such phrases. Missing arguments mean `{}`.
fn parse_calls(text: &str) -> Option<Vec<(String, Value)>> {
    let mut rest = text.trim();
    let mut calls = Vec::new();
    while !rest.is_empty() {
        rest = rest.strip_prefix("call")?;
        if !rest.starts_with(char::is_whitespace) {
            return None;
        }
        rest = rest.trim_start();
        let end = rest
            .find(|c: char| c.is_whitespace() || c == '{' || c == ';')
            .unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        let name = rest[..end].to_string();
        rest = rest[end..].trim_start();
        let mut arguments = json!({});
        if rest.starts_with('{') {
            let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
            arguments = values.next()?.ok()?;
            rest = rest[values.byte_offset()..].trim_start();
        }
        rest = rest.strip_prefix(';').unwrap_or(rest).trim_start();
        calls.push((name, arguments));
    }
    (!calls.is_empty()).then_some(calls)
}

/// Tool names from an OpenAI Chat Completions tools array.
fn tool_names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assistant::model::ToolResult;

    fn ask(messages: Vec<Message>) -> (Reply, String) {
        let request = Request {
            system: String::new(),
            messages,
            tools: json!([{"type": "function", "function": {"name": "bash"}}]),
            cache_key: None,
        };
        let mut shown = String::new();
        let reply = Stub.stream(&request, &mut |t| shown += t).unwrap();
        (reply, shown)
    }

    #[test]
    fn calls_are_parsed_in_order() {
        assert_eq!(
            parse_calls(r#"call bash {"command": "echo; hi"}; call glob {"pattern":"*"} call x"#),
            Some(vec![
                ("bash".into(), json!({"command": "echo; hi"})),
                ("glob".into(), json!({"pattern": "*"})),
                ("x".into(), json!({})),
            ])
        );
        assert_eq!(parse_calls("call me maybe {"), None);
        assert_eq!(parse_calls("recall bash"), None);
        assert_eq!(parse_calls("hello"), None);
    }

    #[test]
    fn echo_tool_calls_and_results() {
        let (reply, shown) = ask(vec![Message::User {
            text: "hello there".into(),
        }]);
        assert_eq!(
            reply.text,
            "[stub] You said: hello there\nTools offered: bash."
        );
        assert_eq!(shown, reply.text);
        let (reply, _) = ask(vec![Message::User {
            text: "call bash {\"command\":\"ls\"}".into(),
        }]);
        assert_eq!(reply.tool_calls[0].id, "stub_call_1");
        let (reply, _) = ask(vec![
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "stub_call_1".into(),
                    name: "bash".into(),
                    arguments: json!({}),
                    local_id: false,
                    signature: None,
                }],
            },
            Message::Tool {
                results: vec![ToolResult {
                    call_id: "stub_call_1".into(),
                    name: "bash".into(),
                    envelope: json!({"tool_success": true}),
                }],
            },
        ]);
        assert_eq!(reply.text, "[stub] bash returned {\"tool_success\":true}");
    }
}
