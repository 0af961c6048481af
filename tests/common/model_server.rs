//! A model provider on 127.0.0.1 for the assistant's tests: it plays the
//! OpenAI Chat Completions, Anthropic Messages or Gemini API, streaming
//! included, records every request, checks its shape (headers, tools array,
//! tool results answering the previous calls with the right ids) and
//! answers from a script of text, tool calls and errors.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

pub const KEY: &str = "test-key-123";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    Anthropic,
    Google,
}

impl Api {
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Anthropic => "anthropic",
            Api::Google => "google",
        }
    }
}

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A streamed text answer.
    Text(String),
    /// Streamed tool calls `(name, arguments)`, after optional text.
    Calls(String, Vec<(String, Value)>),
    /// An HTTP error with this body.
    Status(u16, String),
    /// A 200 whose body is these bytes, as they are.
    Raw(String),
    /// A stream that starts with this text and then says nothing more for
    /// a minute (for interrupting a request).
    Hang(String),
}

pub fn text(t: &str) -> Reply {
    Reply::Text(t.to_string())
}

pub fn calls(list: &[(&str, Value)]) -> Reply {
    Reply::Calls(
        String::new(),
        list.iter()
            .map(|(n, a)| (n.to_string(), a.clone()))
            .collect(),
    )
}

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    /// Path and query.
    pub target: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

pub struct ModelServer {
    pub api: Api,
    port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
    problems: Arc<Mutex<Vec<String>>>,
}

struct State {
    api: Api,
    script: Vec<Reply>,
    next: usize,
    /// Ids this server issued, one counter for the whole conversation.
    issued: usize,
    /// A local server that wants no key (OpenAI only).
    keyless: bool,
}

impl ModelServer {
    pub fn start(api: Api, script: Vec<Reply>) -> ModelServer {
        Self::serving(api, script, false)
    }

    /// A local OpenAI-compatible server that wants no key: a request that
    /// carries one is a problem.
    pub fn start_keyless(script: Vec<Reply>) -> ModelServer {
        Self::serving(Api::OpenAi, script, true)
    }

    fn serving(api: Api, script: Vec<Reply>, keyless: bool) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let problems = Arc::new(Mutex::new(Vec::new()));
        let (r, p) = (Arc::clone(&requests), Arc::clone(&problems));
        let state = Arc::new(Mutex::new(State {
            api,
            script,
            next: 0,
            issued: 0,
            keyless,
        }));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                // One thread a connection, so a hanging reply blocks nothing.
                let (state, r, p) = (Arc::clone(&state), Arc::clone(&r), Arc::clone(&p));
                std::thread::spawn(move || {
                    if let Err(e) = serve(stream, &state, &r, &p) {
                        p.lock().unwrap().push(format!("connection failed: {e}"));
                    }
                });
            }
        });
        ModelServer {
            api,
            port,
            requests,
            problems,
        }
    }

    /// The base URL as the provider's variable wants it (decision 12).
    pub fn base_url(&self) -> String {
        match self.api {
            Api::OpenAi => format!("http://127.0.0.1:{}/v1", self.port),
            _ => format!("http://127.0.0.1:{}", self.port),
        }
    }

    /// The environment that points `ikigai` at this server, with a key.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let (url_var, key_var) = match self.api {
            Api::OpenAi => ("OPENAI_BASE_URL", "OPENAI_API_KEY"),
            Api::Anthropic => ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
            Api::Google => ("IKIGAI_GOOGLE_AI_URL", "GEMINI_API_KEY"),
        };
        vec![(url_var, self.base_url()), (key_var, KEY.to_string())]
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// What was wrong with the requests; empty when all were well formed.
    pub fn problems(&self) -> Vec<String> {
        self.problems.lock().unwrap().clone()
    }
}

fn serve(
    mut stream: TcpStream,
    state: &Mutex<State>,
    requests: &Mutex<Vec<Recorded>>,
    problems: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("").to_string();
    let mut headers = HashMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let mut body = Vec::new();
    if let Some(len) = headers.get("content-length") {
        body.resize(len.parse().unwrap_or(0), 0);
        reader.read_exact(&mut body)?;
    } else if headers
        .get("transfer-encoding")
        .is_some_and(|t| t.contains("chunked"))
    {
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let recorded = Recorded {
        method,
        target,
        headers,
        body,
    };
    // Recorded and answered under one lock, so requests and replies pair up.
    let mut state = state.lock().unwrap();
    requests.lock().unwrap().push(recorded.clone());

    if let Err(problem) = check(state.api, state.keyless, &recorded) {
        problems.lock().unwrap().push(problem.clone());
        return respond(
            &mut stream,
            400,
            &json!({"error": {"message": problem}}).to_string(),
        );
    }
    let Some(reply) = state.script.get(state.next).cloned() else {
        let problem = format!("request {} is past the end of the script", state.next + 1);
        problems.lock().unwrap().push(problem.clone());
        return respond(
            &mut stream,
            500,
            &json!({"error": {"message": problem}}).to_string(),
        );
    };
    state.next += 1;
    let events = match &reply {
        Reply::Text(t) => events(&mut state, t, &[]),
        Reply::Calls(t, list) => events(&mut state, t, list),
        Reply::Hang(t) => events(&mut state, t, &[]),
        _ => Vec::new(),
    };
    drop(state);
    match reply {
        Reply::Status(status, body) => respond(&mut stream, status, &body),
        Reply::Raw(body) => {
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{body}"
            )?;
            stream.flush()
        }
        Reply::Text(_) | Reply::Calls(..) => stream_events(&mut stream, &events),
        Reply::Hang(_) => {
            // Only the first (text) events, then silence.
            let opening = events.len().min(2);
            stream_events(&mut stream, &events[..opening])?;
            std::thread::sleep(Duration::from_secs(60));
            Ok(())
        }
    }
}

fn respond(stream: &mut TcpStream, status: u16, body: &str) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {status} Scripted\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

/// Writes the events one by one, so the client sees a real stream.
fn stream_events(stream: &mut TcpStream, events: &[String]) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
    )?;
    stream.flush()?;
    for event in events {
        stream.write_all(event.as_bytes())?;
        stream.flush()?;
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

fn halves(s: &str) -> (String, String) {
    let mid = s
        .char_indices()
        .nth(s.chars().count() / 2)
        .map_or(s.len(), |(i, _)| i);
    (s[..mid].to_string(), s[mid..].to_string())
}

/// The provider's event stream for a reply of `text` and `calls`.
fn events(state: &mut State, text: &str, calls: &[(String, Value)]) -> Vec<String> {
    let data = |v: Value| format!("data: {v}\n\n");
    let (t1, t2) = halves(text);
    let mut out = Vec::new();
    match state.api {
        Api::OpenAi => {
            out.push(data(json!({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})));
            for piece in [t1, t2] {
                if !piece.is_empty() {
                    out.push(data(
                        json!({"choices":[{"index":0,"delta":{"content":piece}}]}),
                    ));
                }
            }
            for (index, (name, args)) in calls.iter().enumerate() {
                state.issued += 1;
                let id = format!("call_{}", state.issued);
                out.push(data(json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":index,"id":id,"type":"function","function":{"name":name,"arguments":""}}]}}]})));
                let (a1, a2) = halves(&args.to_string());
                for piece in [a1, a2] {
                    out.push(data(json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":index,"function":{"arguments":piece}}]}}]})));
                }
            }
            let reason = if calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            };
            out.push(data(
                json!({"choices":[{"index":0,"delta":{},"finish_reason":reason}]}),
            ));
            out.push("data: [DONE]\n\n".to_string());
        }
        Api::Anthropic => {
            let ev = |name: &str, v: Value| format!("event: {name}\ndata: {v}\n\n");
            out.push(ev("message_start", json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null}})));
            let mut index = 0;
            if !text.is_empty() {
                out.push(ev("content_block_start", json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})));
                out.push(ev("ping", json!({"type":"ping"})));
                for piece in [t1, t2] {
                    out.push(ev("content_block_delta", json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":piece}})));
                }
                out.push(ev(
                    "content_block_stop",
                    json!({"type":"content_block_stop","index":0}),
                ));
                index = 1;
            }
            for (name, args) in calls {
                state.issued += 1;
                let id = format!("toolu_{}", state.issued);
                out.push(ev("content_block_start", json!({"type":"content_block_start","index":index,"content_block":{"type":"tool_use","id":id,"name":name,"input":{}}})));
                let (a1, a2) = halves(&args.to_string());
                for piece in [a1, a2] {
                    out.push(ev("content_block_delta", json!({"type":"content_block_delta","index":index,"delta":{"type":"input_json_delta","partial_json":piece}})));
                }
                out.push(ev(
                    "content_block_stop",
                    json!({"type":"content_block_stop","index":index}),
                ));
                index += 1;
            }
            let reason = if calls.is_empty() {
                "end_turn"
            } else {
                "tool_use"
            };
            out.push(ev("message_delta", json!({"type":"message_delta","delta":{"stop_reason":reason},"usage":{"output_tokens":5}})));
            out.push(ev("message_stop", json!({"type":"message_stop"})));
        }
        Api::Google => {
            for piece in [t1, t2] {
                if !piece.is_empty() {
                    out.push(data(json!({"candidates":[{"content":{"role":"model","parts":[{"text":piece}]},"index":0}]})));
                }
            }
            let parts: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, (name, args))| {
                    state.issued += 1;
                    let mut part = json!({"functionCall": {"name": name, "args": args}});
                    // The first call of a reply carries a thought signature,
                    // which must come back with it.
                    if i == 0 {
                        part["thoughtSignature"] = json!(format!("sig-{}", state.issued));
                    }
                    part
                })
                .collect();
            let mut last = json!({"candidates":[{"content":{"role":"model","parts":parts},"finishReason":"STOP","index":0}]});
            if parts.is_empty() {
                last["candidates"][0]["content"]["parts"] = json!([{"text": ""}]);
            }
            out.push(data(last));
        }
    }
    out
}

/// Checks a request as the provider would, Err naming the first problem.
fn check(api: Api, keyless: bool, r: &Recorded) -> Result<(), String> {
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
                    expect(call["function"]["arguments"].is_string(), || {
                        "arguments are not a string".into()
                    })?;
                }
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
            expect(b["system"].is_string(), || "no system prompt".into())?;
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
