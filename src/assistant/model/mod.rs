//! Talking to a model: the conversation in neutral types (messages, tool
//! calls, tool results), the one trait every provider client implements, and
//! the choice of client. Each provider file turns the neutral conversation
//! into its request and its server-sent events back into a `Reply`
//! (issue 5, "Providers"; design.md, "Provider formats").
//!
//! A client call is blocking; `stream_cancellable` runs it on its own thread
//! so that Ctrl-C returns to the prompt at once, whatever the socket does.

pub mod anthropic;
pub mod gemini;
mod http;
pub mod openai;
mod sse;
pub mod stub;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// Gemini's `thoughtSignature`, which must go back with the call.
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
}

/// Tokens one reply cost, as the provider counted them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// What the model answered: text and/or tool calls.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
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
            ModelError::Reported(m) => write!(f, "error in the reply: {m}"),
            ModelError::Cancelled => write!(f, "cancelled"),
            ModelError::Empty => write!(f, "the model returned an empty reply"),
        }
    }
}

/// A model behind some API. `stream` blocks until the reply is complete,
/// handing each piece of text to `on_text` as it arrives.
pub trait ModelClient: Send + Sync {
    /// The provider's name for people: "openai", "anthropic", ...
    fn provider(&self) -> &'static str;
    fn model(&self) -> &str;
    fn tool_format(&self) -> ToolFormat;
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
    cancel: &AtomicBool,
) -> Result<Reply, ModelError> {
    enum Piece {
        Text(String),
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

/// Parses tool-call arguments that arrive as a JSON string (OpenAI):
/// empty means no arguments; text that is not JSON is kept as a string so
/// the host rejects it with INVALID_PARAMS.
pub fn parse_arguments(text: &str) -> Value {
    if text.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
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
        };
        let result = stream_cancellable(&client, request, &mut |t| seen += t, &cancel);
        assert_eq!(result, Err(ModelError::Cancelled));
    }
}
