//! Talking to a model: the conversation in neutral types (messages, tool
//! calls, tool results), the one trait every provider client implements, and
//! the choice of client. Each provider file turns the neutral conversation
//! into its request and its server-sent events back into a `Reply`
//! (docs/providers.md).
//!
//! A client call is blocking; `stream_cancellable` runs it on its own thread
//! so that Ctrl-C returns to the prompt at once, whatever the socket does,
//! and so that retry waits (`http.rs`) reach the person as notices.

pub mod anthropic;
pub mod gemini;
mod http;
pub mod ollama;
pub mod openai;
pub mod responses;
mod sse;
pub mod stub;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::args::type_name;

/// The tools-array format a client sends: the host's own provider formats.
pub use crate::host::format::ToolFormat;

/// One tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call, or one we made up when the provider
    /// gives none (Gemini may not): then `local_id` is true and the id is
    /// never sent back.
    pub id: String,
    pub name: String,
    /// Usually an object. Arguments that did not parse as JSON are kept as
    /// the raw string, so the host answers INVALID_PARAMS and the model
    /// sees what it sent.
    pub arguments: Value,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub local_id: bool,
    /// What the provider needs back with the call: Gemini's
    /// `thoughtSignature`, or for OpenAI Responses the reasoning items that
    /// came before the call, as a JSON array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// The envelope one tool call produced, as the model will receive it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    pub name: String,
    pub envelope: Value,
}

impl ToolResult {
    /// False when the envelope says the call failed (`tool_success: false`).
    pub fn success(&self) -> bool {
        self.envelope["tool_success"] != Value::Bool(false)
    }
}

/// The conversation, provider-neutral.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    User {
        text: String,
    },
    Assistant {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The answers to the previous assistant message's tool calls, in the
    /// order of the calls.
    Tool {
        results: Vec<ToolResult>,
    },
}

/// Everything one model request needs; owned, so it can cross to the
/// request thread.
#[derive(Clone, Debug)]
pub struct Request {
    pub system: String,
    pub messages: Vec<Message>,
    /// The host's tools array in this client's format (an empty array: none).
    pub tools: Value,
    /// The session's id, for providers that route requests sharing a
    /// prefix to one cache (OpenAI's `prompt_cache_key`).
    pub cache_key: Option<String>,
}

/// The tokens one request cost, as the provider counted them.
/// `input_tokens` is the whole prompt, cached or not; the cached part is
/// also counted apart (decision 63), since it costs a fraction of the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input read from the provider's prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Input written to the cache (Anthropic charges extra for it).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

/// How a reply ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Stop {
    /// The model finished what it meant to say.
    #[default]
    Complete,
    /// Cut at the output-token limit: the text stops mid-way and a tool
    /// call in the reply may be incomplete.
    Cut,
    /// The provider declined: its refusal text (OpenAI), or the name of the
    /// safety stop (Anthropic `refusal`, Gemini `SAFETY`, ...).
    Refused(String),
}

/// What the model answered: text and/or tool calls, how it ended, and what
/// it cost when the provider says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop: Stop,
    pub usage: Option<Usage>,
}

/// Why a request produced no reply. Shown to the person as it is.
#[derive(Debug, PartialEq)]
pub enum ModelError {
    /// The provider answered with an HTTP error status.
    Http { status: u16, message: String },
    /// No answer at all: connection refused, reset, DNS, timeout.
    Network(String),
    /// An answer we cannot read.
    Malformed(String),
    /// The reply's stream broke off before it was complete: the connection
    /// was lost, or closed before the provider's closing event.
    Broken(String),
    /// An error the provider reported inside a stream it had started.
    Reported(String),
    /// The person pressed Ctrl-C.
    Cancelled,
    /// A reply with neither text nor tool calls: nothing to add to the
    /// history (OpenAI refuses an assistant message without content).
    Empty,
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelError::Http { status, message } => write!(f, "HTTP {status}: {message}"),
            ModelError::Network(m) => write!(f, "network error: {m}"),
            ModelError::Malformed(m) => write!(f, "unreadable reply: {m}"),
            ModelError::Broken(m) => write!(f, "the reply broke off: {m}"),
            ModelError::Reported(m) => write!(f, "error in the reply: {m}"),
            ModelError::Cancelled => write!(f, "cancelled"),
            ModelError::Empty => write!(f, "the model returned an empty reply"),
        }
    }
}

/// A model behind some API. `stream` blocks until the reply is complete,
/// handing each piece of text to `on_text` as it arrives. Clients send
/// their requests through `http.rs`, which retries what may be retried and
/// reports each wait through `notice` (see `stream_cancellable`).
pub trait ModelClient: Send + Sync {
    /// The provider's name for people: "openai", "anthropic", ...
    fn provider(&self) -> &'static str;
    fn model(&self) -> &str;
    fn tool_format(&self) -> ToolFormat;
    /// The most tokens one reply may use, when the client sets a limit.
    fn max_output_tokens(&self) -> Option<u64> {
        None
    }
    fn stream(&self, request: &Request, on_text: &mut dyn FnMut(&str))
        -> Result<Reply, ModelError>;
}

/// Runs `client.stream` on its own thread and returns when it finishes or
/// as soon as `cancel` is set. A cancelled request's thread stops reading
/// at its next read and drops the connection; nothing it produces is used.
pub fn stream_cancellable(
    client: &Arc<dyn ModelClient>,
    request: Request,
    on_text: &mut dyn FnMut(&str),
    on_notice: &mut dyn FnMut(&str),
    cancel: &AtomicBool,
) -> Result<Reply, ModelError> {
    enum Piece {
        Text(String),
        Notice(String),
        Done(Result<Reply, ModelError>),
    }
    let (tx, rx) = mpsc::channel();
    let worker = Arc::clone(client);
    // The worker's own flag: set when this request is given up, so the
    // thread stops reading the reply and drops the connection.
    let stop = Arc::new(AtomicBool::new(false));
    let worker_stop = Arc::clone(&stop);
    std::thread::spawn(move || {
        http::stop_when(worker_stop);
        let notice_tx = tx.clone();
        http::notify_with(Box::new(move |notice: String| {
            let _ = notice_tx.send(Piece::Notice(notice));
        }));
        let text_tx = tx.clone();
        let result = worker.stream(&request, &mut |t: &str| {
            let _ = text_tx.send(Piece::Text(t.to_string()));
        });
        let _ = tx.send(Piece::Done(result));
    });
    loop {
        if cancel.load(Ordering::SeqCst) {
            stop.store(true, Ordering::SeqCst);
            return Err(ModelError::Cancelled);
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Piece::Text(t)) => on_text(&t),
            Ok(Piece::Notice(n)) => on_notice(&n),
            Ok(Piece::Done(result)) => return result,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(ModelError::Malformed(
                    "the request thread ended without an answer".into(),
                ))
            }
        }
    }
}

/// Joins the halves of a UTF-16 surrogate pair that a stream split between
/// two pieces of text. `http::event_json` keeps such a half as its escape
/// text (`\uD83D`); a piece that ends with a high half is held back until
/// the next piece shows whether it starts with the low half, and the two
/// become the one character they encode. Escape text anywhere else is left
/// as the model wrote it.
#[derive(Default)]
pub struct SplitPairs {
    held: String,
}

impl SplitPairs {
    /// The text of `piece` that can be shown now.
    pub fn piece(&mut self, piece: &str) -> String {
        let mut text = std::mem::take(&mut self.held);
        let mut rest = piece;
        if let (Some(high), Some(low)) = (escaped_unit(&text), escaped_unit(rest)) {
            if (0xD800..0xDC00).contains(&high) && (0xDC00..0xE000).contains(&low) {
                let code = 0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                text = char::from_u32(code).map(String::from).unwrap_or_default();
                rest = &rest[6..];
            }
        }
        text.push_str(rest);
        let tail = text.len().saturating_sub(6);
        if text.is_char_boundary(tail)
            && escaped_unit(&text[tail..]).is_some_and(|u| (0xD800..0xDC00).contains(&u))
        {
            self.held = text.split_off(tail);
        }
        text
    }

    /// Whatever is still held, at the end of the reply.
    pub fn rest(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

/// The UTF-16 unit of a `\uXXXX` escape text at the start of `text`.
fn escaped_unit(text: &str) -> Option<u16> {
    let hex = text.strip_prefix("\\u")?.get(..4)?;
    u16::from_str_radix(hex, 16).ok()
}

/// Parses tool-call arguments that arrive as a JSON string (OpenAI):
/// empty means no arguments; text that is not JSON is kept as a string so
/// the conversation can name the problem to the model (`arguments_problem`).
pub fn parse_arguments(text: &str) -> Value {
    if text.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// What is wrong with a call's arguments, or None when they are a JSON
/// object (the only shape a tool takes).
pub fn arguments_problem(arguments: &Value) -> Option<String> {
    match arguments {
        Value::Object(_) => None,
        Value::String(text) => Some(match serde_json::from_str::<Value>(text) {
            Err(e) => format!("arguments are not valid JSON: {e}"),
            Ok(v) => format!("expected a JSON object, got {}", type_name(&v)),
        }),
        other => Some(format!("expected a JSON object, got {}", type_name(other))),
    }
}

/// Tool-call arguments as a JSON object, for providers that require one
/// (Anthropic's `input`, Gemini's `args`).
fn arguments_object(arguments: &Value) -> Value {
    match arguments {
        Value::Object(_) => arguments.clone(),
        _ => Value::Object(Default::default()),
    }
}

/// True when a provider's tools array holds nothing.
fn tools_empty(tools: &Value) -> bool {
    match tools {
        Value::Array(a) => a.is_empty(),
        Value::Null => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_parse_or_stay_raw() {
        assert_eq!(parse_arguments(""), json!({}));
        assert_eq!(parse_arguments(r#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(parse_arguments("{oops"), json!("{oops"));
        assert_eq!(arguments_object(&json!("{oops")), json!({}));
        assert_eq!(arguments_problem(&json!({"a": 1})), None);
        assert!(arguments_problem(&json!("{oops"))
            .unwrap()
            .starts_with("arguments are not valid JSON: "));
        assert_eq!(
            arguments_problem(&json!("[1]")).unwrap(),
            "expected a JSON object, got an array"
        );
    }

    #[test]
    fn a_pair_split_between_pieces_is_joined_and_nothing_else_changes() {
        let mut p = SplitPairs::default();
        assert_eq!(p.piece("smile \\uD83D"), "smile ");
        assert_eq!(p.piece("\\uDE00!"), "\u{1F600}!");
        assert_eq!(p.piece("a \\uD83D\\uDE00 b"), "a \\uD83D\\uDE00 b");
        assert_eq!(p.piece("held \\uD83D"), "held ");
        assert_eq!(p.piece(" not a pair"), "\\uD83D not a pair");
        assert_eq!(p.piece("end \\uDBFF"), "end ");
        assert_eq!(p.rest(), "\\uDBFF");
        assert_eq!(p.piece("é\\u"), "é\\u");
    }

    #[test]
    fn messages_round_trip_through_json() {
        let m = Message::Assistant {
            text: "t".into(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls"}),
                local_id: false,
                signature: None,
            }],
        };
        let line = serde_json::to_string(&m).unwrap();
        assert!(!line.contains("local_id"), "{line}");
        assert_eq!(serde_json::from_str::<Message>(&line).unwrap(), m);
        let r = ToolResult {
            call_id: "c1".into(),
            name: "bash".into(),
            envelope: json!({"tool_success": false}),
        };
        assert!(!r.success());
    }

    struct Slow;
    impl ModelClient for Slow {
        fn provider(&self) -> &'static str {
            "slow"
        }
        fn model(&self) -> &str {
            "m"
        }
        fn tool_format(&self) -> ToolFormat {
            ToolFormat::OpenAiChat
        }
        fn stream(&self, _: &Request, on_text: &mut dyn FnMut(&str)) -> Result<Reply, ModelError> {
            on_text("partial");
            std::thread::sleep(Duration::from_secs(30));
            Ok(Reply::default())
        }
    }

    #[test]
    fn cancel_returns_without_waiting_for_the_request() {
        let client: Arc<dyn ModelClient> = Arc::new(Slow);
        let cancel = Arc::new(AtomicBool::new(false));
        let setter = Arc::clone(&cancel);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            setter.store(true, Ordering::SeqCst);
        });
        let mut seen = String::new();
        let request = Request {
            system: String::new(),
            messages: vec![],
            tools: json!([]),
            cache_key: None,
        };
        let result = stream_cancellable(&client, request, &mut |t| seen += t, &mut |_| {}, &cancel);
        assert_eq!(result, Err(ModelError::Cancelled));
    }
}
