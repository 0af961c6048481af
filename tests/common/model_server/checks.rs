//! What the fake provider checks of each request, as the real one would
//! refuse it: the method, path and headers, the tools array, tool results
//! answering the previous calls with the right ids, arguments a strict
//! server accepts, reasoning items passed back.

use serde_json::{json, Value};

use super::{Api, Recorded, State, KEY};

/// Checks a request as the provider would, Err naming the first problem.
pub(super) fn check(state: &State, r: &Recorded) -> Result<(), String> {
    let (api, keyless) = (state.api, state.keyless);
    let b = &r.body;
    if r.method != "POST" {
        return Err(format!("method {} instead of POST", r.method));
    }
    if b.is_null() {
        return Err("the body is not JSON".into());
    }
    match api {
        Api::OpenAi => {
            expect(r.target == "/v1/chat/completions", || {
                format!("path {}", r.target)
            })?;
            let authorization = r.headers.get("authorization").map(String::as_str);
            if keyless {
                expect(authorization.is_none(), || {
                    "a key sent to a keyless server".into()
                })?;
            } else {
                expect(authorization == Some(&format!("Bearer {KEY}")), || {
                    "no Bearer key".into()
                })?;
            }
            expect(b["stream"] == true, || "stream is not true".into())?;
            expect(b["stream_options"]["include_usage"] == true, || {
                "the usage is not asked for".into()
            })?;
            expect(b["max_tokens"].is_u64(), || "no max_tokens".into())?;
            expect(b["model"].is_string(), || "no model".into())?;
            let messages = b["messages"].as_array().ok_or("no messages")?;
            expect(
                messages.first().is_some_and(|m| m["role"] == "system"),
                || "the first message is not the system prompt".into(),
            )?;
            if let Some(tools) = b.get("tools") {
                for t in tools.as_array().ok_or("tools is not an array")? {
                    expect(
                        t["type"] == "function" && t["function"]["name"].is_string(),
                        || format!("a tool is not a function declaration: {t}"),
                    )?;
                }
            }
            for (i, m) in messages.iter().enumerate() {
                let Some(calls) = m["tool_calls"].as_array() else {
                    continue;
                };
                for (k, call) in calls.iter().enumerate() {
                    let answer = messages
                        .get(i + 1 + k)
                        .ok_or("a tool call has no tool message")?;
                    expect(
                        answer["role"] == "tool" && answer["tool_call_id"] == call["id"],
                        || {
                            format!(
                                "tool call {} is not answered in order: {answer}",
                                call["id"]
                            )
                        },
                    )?;
                    let envelope: Value = serde_json::from_str(
                        answer["content"].as_str().unwrap_or(""),
                    )
                    .map_err(|_| "a tool message's content is not a JSON envelope".to_string())?;
                    expect(envelope["tool_success"].is_boolean(), || {
                        format!("not an envelope: {envelope}")
                    })?;
                    let arguments = call["function"]["arguments"]
                        .as_str()
                        .ok_or("arguments are not a string")?;
                    // A strict server refuses a history whose arguments are
                    // not JSON.
                    expect(
                        serde_json::from_str::<Value>(arguments).is_ok_and(|a| a.is_object()),
                        || format!("arguments are not a JSON object: {arguments}"),
                    )?;
                }
            }
        }
        Api::Responses => {
            expect(r.target == "/v1/responses", || format!("path {}", r.target))?;
            expect(
                r.headers.get("authorization") == Some(&format!("Bearer {KEY}")),
                || "no Bearer key".into(),
            )?;
            expect(b["stream"] == true && b["store"] == false, || {
                "stream is not true or store is not false".into()
            })?;
            expect(
                b["model"].is_string() && b["instructions"].is_string(),
                || "no model or instructions".into(),
            )?;
            expect(b["max_output_tokens"].is_u64(), || {
                "no max_output_tokens".into()
            })?;
            expect(
                b["include"]
                    .as_array()
                    .is_some_and(|i| i.contains(&json!("reasoning.encrypted_content"))),
                || "the encrypted reasoning is not asked for".into(),
            )?;
            if let Some(tools) = b.get("tools") {
                for t in tools.as_array().ok_or("tools is not an array")? {
                    expect(
                        t["type"] == "function"
                            && t["name"].is_string()
                            && t["strict"].is_boolean(),
                        || format!("not a Responses function tool: {t}"),
                    )?;
                }
            }
            let input = b["input"].as_array().ok_or("no input")?;
            for (i, item) in input.iter().enumerate() {
                if item["type"] != "function_call" {
                    continue;
                }
                let call_id = item["call_id"]
                    .as_str()
                    .ok_or("a function_call has no call_id")?;
                let arguments = item["arguments"].as_str().ok_or("arguments are not text")?;
                expect(
                    serde_json::from_str::<Value>(arguments).is_ok_and(|a| a.is_object()),
                    || format!("the arguments of {call_id} are not a JSON object: {arguments}"),
                )?;
                if let Some(enc) = state.reasoning.get(call_id) {
                    // As in the reply: the reasoning, the text if any, the call.
                    let text_between = i > 0 && input[i - 1]["role"] == "assistant";
                    let before = i
                        .checked_sub(if text_between { 2 } else { 1 })
                        .map(|k| &input[k]);
                    expect(
                        before.is_some_and(|p| {
                            p["type"] == "reasoning" && p["encrypted_content"] == json!(enc)
                        }),
                        || format!("the reasoning {enc} did not come back before {call_id}"),
                    )?;
                }
                let answered = input[i + 1..].iter().any(|o| {
                    o["type"] == "function_call_output"
                        && o["call_id"] == call_id
                        && o["output"].is_string()
                });
                expect(answered, || {
                    format!("{call_id} has no function_call_output")
                })?;
            }
        }
        Api::Anthropic => {
            expect(r.target == "/v1/messages", || format!("path {}", r.target))?;
            expect(
                r.headers.get("x-api-key").map(String::as_str) == Some(KEY),
                || "no x-api-key".into(),
            )?;
            expect(r.headers.contains_key("anthropic-version"), || {
                "no anthropic-version".into()
            })?;
            expect(b["stream"] == true && b["max_tokens"].is_u64(), || {
                "stream or max_tokens missing".into()
            })?;
            // A string, or text blocks (which may carry cache breakpoints).
            let system_ok = b["system"].is_string()
                || b["system"].as_array().is_some_and(|blocks| {
                    !blocks.is_empty()
                        && blocks
                            .iter()
                            .all(|x| x["type"] == "text" && x["text"].is_string())
                });
            expect(system_ok, || "no system prompt".into())?;
            // The API takes at most four cache breakpoints.
            let breakpoints = b.to_string().matches("\"cache_control\"").count();
            expect(breakpoints <= 4, || {
                format!("{breakpoints} cache_control breakpoints (at most 4)")
            })?;
            if let Some(tools) = b.get("tools") {
                for t in tools.as_array().ok_or("tools is not an array")? {
                    expect(
                        t["name"].is_string() && t["input_schema"]["type"] == "object",
                        || format!("not an Anthropic tool: {t}"),
                    )?;
                }
            }
            let messages = b["messages"].as_array().ok_or("no messages")?;
            expect(
                messages.first().is_some_and(|m| m["role"] == "user"),
                || "the first message is not the user's".into(),
            )?;
            for (i, m) in messages.iter().enumerate() {
                if i > 0 {
                    expect(m["role"] != messages[i - 1]["role"], || {
                        format!("two {} messages in a row", m["role"])
                    })?;
                }
                let content = m["content"]
                    .as_array()
                    .ok_or("content is not a list of blocks")?;
                let uses: Vec<&Value> =
                    content.iter().filter(|c| c["type"] == "tool_use").collect();
                if uses.is_empty() {
                    continue;
                }
                let next = messages.get(i + 1).ok_or("tool_use without tool_result")?;
                let results = next["content"]
                    .as_array()
                    .ok_or("bad tool_result message")?;
                for (k, u) in uses.iter().enumerate() {
                    let r = results.get(k).ok_or("a tool_use has no tool_result")?;
                    expect(
                        r["type"] == "tool_result" && r["tool_use_id"] == u["id"],
                        || {
                            format!(
                                "tool_use {} is not answered first and in order: {r}",
                                u["id"]
                            )
                        },
                    )?;
                    expect(u["input"].is_object() && r["is_error"].is_boolean(), || {
                        "input not an object or is_error missing".into()
                    })?;
                }
            }
        }
        Api::Google => {
            expect(
                r.target.starts_with("/v1beta/models/")
                    && r.target.ends_with(":streamGenerateContent?alt=sse"),
                || format!("path {}", r.target),
            )?;
            expect(
                r.headers.get("x-goog-api-key").map(String::as_str) == Some(KEY),
                || "no x-goog-api-key".into(),
            )?;
            expect(
                b["systemInstruction"]["parts"][0]["text"].is_string(),
                || "no systemInstruction".into(),
            )?;
            expect(b["generationConfig"]["maxOutputTokens"].is_u64(), || {
                "no maxOutputTokens".into()
            })?;
            if let Some(tools) = b.get("tools") {
                for d in tools[0]["functionDeclarations"]
                    .as_array()
                    .ok_or("no functionDeclarations")?
                {
                    expect(d["name"].is_string(), || "a declaration has no name".into())?;
                    expect(!d.to_string().contains("additionalProperties"), || {
                        "additionalProperties is rejected by Gemini".into()
                    })?;
                }
            }
            let contents = b["contents"].as_array().ok_or("no contents")?;
            for (i, c) in contents.iter().enumerate() {
                expect(c["role"] == "user" || c["role"] == "model", || {
                    format!("role {}", c["role"])
                })?;
                if i > 0 {
                    expect(c["role"] != contents[i - 1]["role"], || {
                        "two turns of one role in a row".into()
                    })?;
                }
                let parts = c["parts"].as_array().ok_or("no parts")?;
                let fcalls: Vec<&Value> = parts
                    .iter()
                    .filter(|p| p.get("functionCall").is_some())
                    .collect();
                if fcalls.is_empty() {
                    continue;
                }
                expect(
                    fcalls[0]["thoughtSignature"]
                        .as_str()
                        .is_some_and(|s| s.starts_with("sig-")),
                    || "the thoughtSignature of the first call did not come back".into(),
                )?;
                let next = contents
                    .get(i + 1)
                    .ok_or("functionCall without functionResponse")?;
                for (k, call) in fcalls.iter().enumerate() {
                    let resp = &next["parts"][k]["functionResponse"];
                    expect(
                        resp["name"] == call["functionCall"]["name"]
                            && resp["response"].is_object(),
                        || {
                            format!(
                                "functionCall {} not answered in order: {resp}",
                                call["functionCall"]["name"]
                            )
                        },
                    )?;
                }
            }
        }
    }
    Ok(())
}

fn expect(ok: bool, problem: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(problem())
    }
}
