//! A model provider on 127.0.0.1 for the assistant's tests: it plays the
//! OpenAI Chat Completions, OpenAI Responses, Anthropic Messages or Gemini
//! API, streaming or not, records every request, checks its shape (headers,
//! tools array, tool results answering the previous calls with the right
//! ids, arguments a strict server accepts, reasoning items passed back) and
//! answers from a script of text, tool calls, cut and refused replies,
//! error statuses and dropped connections.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod checks;
use checks::check;

pub const KEY: &str = "test-key-123";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    Responses,
    Anthropic,
    Google,
}

impl Api {
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Responses => "openai-responses",
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
    /// Text and calls cut at the output limit: the provider's cut ending,
    /// and the last call's arguments cut in half (Gemini sends calls whole).
    Cut(String, Vec<(String, Value)>),
    /// The provider's refusal: OpenAI's refusal text (Chat and Responses),
    /// Anthropic's `refusal` stop, Gemini's `SAFETY` stop.
    Refusal(String),
    /// One call whose arguments are this text, which is not JSON.
    RawArguments(String, String),
    /// Text and calls as one JSON reply, not streamed.
    Whole(String, Vec<(String, Value)>),
    /// An error status with these headers and body.
    StatusWith(u16, Vec<(&'static str, String)>, String),
    /// The connection closes without an answer.
    Drop,
    /// This reply after a wait (a model that thinks for a while).
    After(Duration, Box<Reply>),
    /// A stream that breaks off: its events up to the first with this text
    /// (none at all when it is empty), then the connection closes.
    BreakOff(String),
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
    /// When it arrived.
    pub at: Instant,
    pub method: String,
    /// Path and query.
    pub target: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

pub struct ModelServer {
    pub api: Api,
    port: u16,
    state: Arc<Mutex<State>>,
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
    /// Ollama's model list, answered to `GET /api/tags` (a fake Ollama).
    tags: Option<Vec<String>>,
    /// The encrypted reasoning issued with the first call of each Responses
    /// reply, by that call's id: it must come back before the call.
    reasoning: HashMap<String, String>,
    /// Report each request's input tokens as its body's bytes / 4 (else 11).
    counting: bool,
    /// The input tokens the reply being built reports.
    input_tokens: u64,
    /// Of those, how many each reply says were read from the cache.
    cached: u64,
    /// Scripts of their own for requests whose first user message holds
    /// a marker (a subagent's, told from its caller's), each with its next.
    routes: Vec<(String, Vec<Reply>, usize)>,
}

impl ModelServer {
    pub fn start(api: Api, script: Vec<Reply>) -> ModelServer {
        Self::serving(api, script, false, None)
    }

    /// A server whose replies report input tokens as a quarter of the
    /// request body's bytes, as a real provider's count would grow.
    pub fn start_counting(api: Api, script: Vec<Reply>) -> ModelServer {
        let server = Self::serving(api, script, false, None);
        server.state.lock().unwrap().counting = true;
        server
    }

    /// A local OpenAI-compatible server that wants no key: a request that
    /// carries one is a problem.
    pub fn start_keyless(script: Vec<Reply>) -> ModelServer {
        Self::serving(Api::OpenAi, script, true, None)
    }

    /// A fake Ollama: `GET /api/tags` lists `models`, and its
    /// OpenAI-compatible endpoint (under `/v1`, no key) answers `script`.
    pub fn start_ollama(models: &[&str], script: Vec<Reply>) -> ModelServer {
        let tags = models.iter().map(|m| m.to_string()).collect();
        Self::serving(Api::OpenAi, script, true, Some(tags))
    }

    /// `host:port`, as `OLLAMA_HOST` is written.
    pub fn host_port(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn serving(
        api: Api,
        script: Vec<Reply>,
        keyless: bool,
        tags: Option<Vec<String>>,
    ) -> ModelServer {
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
            tags,
            reasoning: HashMap::new(),
            counting: false,
            input_tokens: 11,
            cached: 0,
            routes: Vec::new(),
        }));
        let shared = Arc::clone(&state);
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
            state: shared,
            requests,
            problems,
        }
    }

    /// Every reply from now on says `tokens` of its input came from the
    /// provider's cache, in the provider's own usage field.
    pub fn report_cached(&self, tokens: u64) {
        self.state.lock().unwrap().cached = tokens;
    }

    /// Requests whose first user message holds `marker` are answered from
    /// `script`, in its own order; the others from the main script. A
    /// subagent's requests are told from its caller's so, however the
    /// threads interleave.
    pub fn route(&self, marker: &str, script: Vec<Reply>) {
        let mut state = self.state.lock().unwrap();
        state.routes.push((marker.to_string(), script, 0));
    }

    /// The requests whose first user message holds `marker`.
    pub fn requests_of(&self, marker: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| first_user_message(&r.body).contains(marker))
            .collect()
    }

    /// The requests of no route: the main conversation's.
    pub fn main_requests(&self) -> Vec<Recorded> {
        let markers: Vec<String> = self
            .state
            .lock()
            .unwrap()
            .routes
            .iter()
            .map(|r| r.0.clone())
            .collect();
        self.requests()
            .into_iter()
            .filter(|r| {
                let first = first_user_message(&r.body);
                !markers.iter().any(|m| first.contains(m.as_str()))
            })
            .collect()
    }

    /// The base URL as the provider's variable wants it (decision 12).
    pub fn base_url(&self) -> String {
        match self.api {
            Api::OpenAi | Api::Responses => format!("http://127.0.0.1:{}/v1", self.port),
            _ => format!("http://127.0.0.1:{}", self.port),
        }
    }

    /// The environment that points `ikigai` at this server, with a key.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let (url_var, key_var) = match self.api {
            Api::OpenAi | Api::Responses => ("OPENAI_BASE_URL", "OPENAI_API_KEY"),
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
        at: Instant::now(),
        method,
        target,
        headers,
        body,
    };
    // Recorded and answered under one lock, so requests and replies pair up.
    let mut state = state.lock().unwrap();
    requests.lock().unwrap().push(recorded.clone());
    if let (Some(tags), "GET", "/api/tags") = (&state.tags, &*recorded.method, &*recorded.target) {
        let models: Vec<Value> = tags
            .iter()
            .map(|name| json!({"name": name, "model": name, "size": 1}))
            .collect();
        return respond(&mut stream, 200, &json!({ "models": models }).to_string());
    }

    if let Err(problem) = check(&state, &recorded) {
        problems.lock().unwrap().push(problem.clone());
        return respond(
            &mut stream,
            400,
            &json!({"error": {"message": problem}}).to_string(),
        );
    }
    let first = first_user_message(&recorded.body);
    let route = state
        .routes
        .iter()
        .position(|(marker, ..)| first.contains(marker.as_str()));
    let (script, next) = match route {
        Some(r) => {
            let (_, script, next) = &mut state.routes[r];
            (&*script, next)
        }
        None => {
            let State { script, next, .. } = &mut *state;
            (&*script, next)
        }
    };
    let Some(reply) = script.get(*next).cloned() else {
        let problem = format!(
            "request {} is past the end of the script{}",
            *next + 1,
            route.map_or(String::new(), |r| format!(" of route {r}"))
        );
        problems.lock().unwrap().push(problem.clone());
        return respond(
            &mut stream,
            500,
            &json!({"error": {"message": problem}}).to_string(),
        );
    };
    *next += 1;
    let (delay, reply) = match reply {
        Reply::After(delay, inner) => (delay, *inner),
        reply => (Duration::ZERO, reply),
    };
    state.input_tokens = if state.counting {
        recorded.body.to_string().len() as u64 / 4
    } else {
        11
    };
    let events = match &reply {
        Reply::Text(t) | Reply::Hang(t) | Reply::BreakOff(t) => {
            events(&mut state, t, &texts(&[]), &End::Normal)
        }
        Reply::Calls(t, list) => events(&mut state, t, &texts(list), &End::Normal),
        Reply::Cut(t, list) => {
            let mut list = texts(list);
            if state.api != Api::Google {
                if let Some((_, args)) = list.last_mut() {
                    *args = halves(args).0;
                }
            }
            events(&mut state, t, &list, &End::Cut)
        }
        Reply::Refusal(why) => events(&mut state, "", &[], &End::Refusal(why.clone())),
        Reply::RawArguments(name, raw) => {
            events(&mut state, "", &[(name.clone(), raw.clone())], &End::Normal)
        }
        _ => Vec::new(),
    };
    let whole = match &reply {
        Reply::Whole(t, list) => whole(&mut state, t, &texts(list)),
        _ => Value::Null,
    };
    drop(state);
    std::thread::sleep(delay);
    match reply {
        Reply::Status(status, body) => respond(&mut stream, status, &body),
        Reply::StatusWith(status, headers, body) => {
            let extra: String = headers
                .iter()
                .map(|(k, v)| format!("{k}: {v}\r\n"))
                .collect();
            write!(
                stream,
                "HTTP/1.1 {status} Scripted\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )?;
            stream.flush()
        }
        Reply::Drop => stream.shutdown(std::net::Shutdown::Both),
        Reply::After(..) => unreachable!("unwrapped above"),
        Reply::BreakOff(text) => {
            let first = halves(&text).0;
            let upto = events
                .iter()
                .position(|e| !first.is_empty() && e.contains(&first))
                .map_or(0, |i| i + 1);
            stream_events(&mut stream, &events[..upto])?;
            stream.shutdown(std::net::Shutdown::Both)
        }
        Reply::Whole(..) => {
            let body = whole.to_string();
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )?;
            stream.flush()
        }
        Reply::Raw(body) => {
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{body}"
            )?;
            stream.flush()
        }
        Reply::Text(_)
        | Reply::Calls(..)
        | Reply::Cut(..)
        | Reply::Refusal(_)
        | Reply::RawArguments(..) => stream_events(&mut stream, &events),
        Reply::Hang(_) => {
            // Only the first (text) events, then silence.
            let opening = events.len().min(2);
            stream_events(&mut stream, &events[..opening])?;
            std::thread::sleep(Duration::from_secs(60));
            Ok(())
        }
    }
}

/// The first user message of a request body in any of the four formats,
/// as JSON text ("" when there is none).
pub fn first_user_message(body: &Value) -> String {
    ["messages", "input", "contents"]
        .iter()
        .filter_map(|key| body[*key].as_array())
        .flatten()
        .find(|m| m["role"] == "user")
        .map(Value::to_string)
        .unwrap_or_default()
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

/// How a scripted reply ends.
enum End {
    Normal,
    /// At the output limit.
    Cut,
    /// Refused, with this text.
    Refusal(String),
}

/// Calls with their arguments as JSON text.
fn texts(list: &[(String, Value)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, a)| (n.clone(), a.to_string()))
        .collect()
}

/// A new id for a call, counted over the whole conversation.
fn issue(state: &mut State, prefix: &str) -> String {
    state.issued += 1;
    format!("{prefix}_{}", state.issued)
}

/// The provider's event stream for a reply of `text` and `calls` (name,
/// arguments as text) that ends as `end` says.
fn events(state: &mut State, text: &str, calls: &[(String, String)], end: &End) -> Vec<String> {
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
                let id = issue(state, "call");
                out.push(data(json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":index,"id":id,"type":"function","function":{"name":name,"arguments":""}}]}}]})));
                let (a1, a2) = halves(args);
                for piece in [a1, a2] {
                    out.push(data(json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":index,"function":{"arguments":piece}}]}}]})));
                }
            }
            if let End::Refusal(why) = end {
                let (r1, r2) = halves(why);
                for piece in [r1, r2] {
                    out.push(data(
                        json!({"choices":[{"index":0,"delta":{"refusal":piece}}]}),
                    ));
                }
            }
            let reason = match end {
                End::Cut => "length",
                _ if calls.is_empty() => "stop",
                _ => "tool_calls",
            };
            out.push(data(
                json!({"choices":[{"index":0,"delta":{},"finish_reason":reason}]}),
            ));
            out.push(data(
                json!({"choices":[],"usage":{"prompt_tokens":state.input_tokens,"completion_tokens":7,"total_tokens":18,
                    "prompt_tokens_details":{"cached_tokens":state.cached}}}),
            ));
            out.push("data: [DONE]\n\n".to_string());
        }
        Api::Responses => {
            let ev = |v: Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap());
            out.push(ev(json!({"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}})));
            let mut output = Vec::new();
            if !calls.is_empty() {
                // A reasoning model thinks before it calls.
                let enc = issue(state, "enc");
                let item = json!({"type":"reasoning","id":format!("rs_{enc}"),"summary":[],"encrypted_content":enc});
                out.push(ev(
                    json!({"type":"response.output_item.added","output_index":0,"item":item}),
                ));
                out.push(ev(
                    json!({"type":"response.output_item.done","output_index":0,"item":item}),
                ));
                output.push(item);
            }
            if !text.is_empty() {
                out.push(ev(json!({"type":"response.output_item.added","item":{"type":"message","role":"assistant","content":[]}})));
                for piece in [&t1, &t2] {
                    out.push(ev(
                        json!({"type":"response.output_text.delta","delta":piece}),
                    ));
                }
                output.push(
                    json!({"type":"message","role":"assistant","status":"completed",
                    "content":[{"type":"output_text","text":text,"annotations":[]}]}),
                );
            }
            if let End::Refusal(why) = end {
                let (r1, r2) = halves(why);
                for piece in [r1, r2] {
                    out.push(ev(json!({"type":"response.refusal.delta","delta":piece})));
                }
                output.push(json!({"type":"message","role":"assistant",
                    "content":[{"type":"refusal","refusal":why}]}));
            }
            for (i, (name, args)) in calls.iter().enumerate() {
                let call_id = issue(state, "call");
                if i == 0 {
                    let enc = output[0]["encrypted_content"].as_str().unwrap().to_string();
                    state.reasoning.insert(call_id.clone(), enc);
                }
                let item = json!({"type":"function_call","id":format!("fc_{call_id}"),"call_id":call_id,"name":name,"arguments":""});
                out.push(ev(json!({"type":"response.output_item.added","item":item})));
                let (a1, a2) = halves(args);
                for piece in [a1, a2] {
                    out.push(ev(
                        json!({"type":"response.function_call_arguments.delta","delta":piece}),
                    ));
                }
                let mut done = item.clone();
                done["arguments"] = json!(args);
                out.push(ev(json!({"type":"response.output_item.done","item":done})));
                output.push(done);
            }
            let mut response = json!({"id":"resp_1","status":"completed","output":output,
                "usage":{"input_tokens":state.input_tokens,"output_tokens":7,"total_tokens":18,
                    "input_tokens_details":{"cached_tokens":state.cached}}});
            let kind = if let End::Cut = end {
                response["status"] = json!("incomplete");
                response["incomplete_details"] = json!({"reason":"max_output_tokens"});
                "response.incomplete"
            } else {
                "response.completed"
            };
            out.push(ev(json!({"type":kind,"response":response})));
        }
        Api::Anthropic => {
            let ev = |name: &str, v: Value| format!("event: {name}\ndata: {v}\n\n");
            out.push(ev("message_start", json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":state.input_tokens.saturating_sub(state.cached),"cache_read_input_tokens":state.cached,"output_tokens":1}}})));
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
                let id = issue(state, "toolu");
                out.push(ev("content_block_start", json!({"type":"content_block_start","index":index,"content_block":{"type":"tool_use","id":id,"name":name,"input":{}}})));
                let (a1, a2) = halves(args);
                for piece in [a1, a2] {
                    out.push(ev("content_block_delta", json!({"type":"content_block_delta","index":index,"delta":{"type":"input_json_delta","partial_json":piece}})));
                }
                out.push(ev(
                    "content_block_stop",
                    json!({"type":"content_block_stop","index":index}),
                ));
                index += 1;
            }
            let reason = match end {
                End::Cut => "max_tokens",
                End::Refusal(_) => "refusal",
                _ if calls.is_empty() => "end_turn",
                _ => "tool_use",
            };
            out.push(ev("message_delta", json!({"type":"message_delta","delta":{"stop_reason":reason},"usage":{"output_tokens":7}})));
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
                    let args: Value = serde_json::from_str(args)
                        .expect("Gemini sends arguments as an object, never as text");
                    let mut part = json!({"functionCall": {"name": name, "args": args}});
                    // The first call of a reply carries a thought signature,
                    // which must come back with it.
                    if i == 0 {
                        part["thoughtSignature"] = json!(format!("sig-{}", state.issued));
                    }
                    part
                })
                .collect();
            let reason = match end {
                End::Cut => "MAX_TOKENS",
                End::Refusal(_) => "SAFETY",
                End::Normal => "STOP",
            };
            let mut last = json!({"candidates":[{"content":{"role":"model","parts":parts},"finishReason":reason,"index":0}],
                "usageMetadata":{"promptTokenCount":state.input_tokens,"candidatesTokenCount":7,"totalTokenCount":18,
                    "cachedContentTokenCount":state.cached}});
            if parts.is_empty() {
                last["candidates"][0]["content"]["parts"] = json!([{"text": ""}]);
            }
            out.push(data(last));
        }
    }
    out
}

/// The provider's reply to a request that did not stream.
fn whole(state: &mut State, text: &str, calls: &[(String, String)]) -> Value {
    match state.api {
        Api::OpenAi => {
            let tool_calls: Vec<Value> = calls
                .iter()
                .map(|(name, args)| {
                    json!({"id": issue(state, "call"), "type": "function",
                        "function": {"name": name, "arguments": args}})
                })
                .collect();
            let mut message = json!({"role": "assistant",
                "content": if text.is_empty() { Value::Null } else { json!(text) }});
            if !tool_calls.is_empty() {
                message["tool_calls"] = json!(tool_calls);
            }
            let reason = if calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            };
            json!({"id": "chatcmpl-1", "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": reason}],
                "usage": {"prompt_tokens": state.input_tokens, "completion_tokens": 7, "total_tokens": 18}})
        }
        Api::Responses => {
            let mut output = Vec::new();
            if !text.is_empty() {
                output.push(json!({"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}));
            }
            for (name, args) in calls {
                output.push(
                    json!({"type": "function_call", "call_id": issue(state, "call"),
                    "name": name, "arguments": args}),
                );
            }
            json!({"id": "resp_1", "object": "response", "status": "completed", "output": output,
                "usage": {"input_tokens": state.input_tokens, "output_tokens": 7, "total_tokens": 18}})
        }
        Api::Anthropic => {
            let mut content = Vec::new();
            if !text.is_empty() {
                content.push(json!({"type": "text", "text": text}));
            }
            for (name, args) in calls {
                let input: Value = serde_json::from_str(args).unwrap();
                content.push(json!({"type": "tool_use", "id": issue(state, "toolu"),
                    "name": name, "input": input}));
            }
            let reason = if calls.is_empty() {
                "end_turn"
            } else {
                "tool_use"
            };
            json!({"id": "msg_1", "type": "message", "role": "assistant", "content": content,
                "stop_reason": reason, "usage": {"input_tokens": state.input_tokens, "output_tokens": 7}})
        }
        Api::Google => {
            let mut parts = vec![json!({"text": text})];
            for (name, args) in calls {
                state.issued += 1;
                let args: Value = serde_json::from_str(args).unwrap();
                parts.push(json!({"functionCall": {"name": name, "args": args},
                    "thoughtSignature": format!("sig-{}", state.issued)}));
            }
            json!([{"candidates": [{"content": {"role": "model", "parts": parts},
                "finishReason": "STOP"}]}])
        }
    }
}
