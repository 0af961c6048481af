//! What MCP says on the wire, for both halves: JSON-RPC 2.0 messages (a
//! small hand-written layer over serde_json: the protocol needs a handful of
//! methods, not an SDK and an async runtime), the protocol revisions we
//! speak, the `_meta` keys of the stateless revision, the error codes, and
//! the reading of one stdio line with a bound on its length.

use std::io::{self, BufRead, Read};

use serde_json::{json, Map, Value};

/// Revisions that open with the `initialize` handshake, oldest first.
pub const HANDSHAKE_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The newest handshake revision: what we offer, and answer when a client
/// asks for one we do not know.
pub const LATEST_HANDSHAKE: &str = "2025-11-25";
/// The stateless revision: no handshake, every request says its version
/// (and the client's capabilities) in `params._meta`.
pub const MODERN_VERSION: &str = "2026-07-28";

/// Every revision we serve, newest first, as `server/discover` and
/// `UnsupportedProtocolVersion` list them.
pub fn supported_versions() -> Vec<&'static str> {
    let mut all = vec![MODERN_VERSION];
    all.extend(HANDSHAKE_VERSIONS.iter().rev());
    all
}

/// `_meta` keys of the stateless revision.
pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// JSON-RPC and MCP error codes.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Streamable HTTP headers that disagree with the body (stateless revision).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request's protocol version is not one the server speaks.
    pub const UNSUPPORTED_VERSION: i64 = -32022;
    /// Over HTTP: no bearer token, or a wrong one (status 401).
    pub const UNAUTHORIZED: i64 = -32001;
    /// Over HTTP: as many calls run as the server allows (status 429).
    pub const SERVER_BUSY: i64 = -32000;
}

/// A JSON-RPC error: code, message, optional data.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        RpcError::new(code::INVALID_PARAMS, message)
    }

    pub fn unsupported_version(requested: &Value) -> Self {
        RpcError {
            code: code::UNSUPPORTED_VERSION,
            message: "Unsupported protocol version".into(),
            data: Some(json!({"supported": supported_versions(), "requested": requested})),
        }
    }

    pub fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }

    /// Reads the `error` member of a response.
    pub fn from_json(error: &Value) -> Self {
        RpcError {
            code: error["code"].as_i64().unwrap_or(code::INTERNAL_ERROR),
            message: error["message"]
                .as_str()
                .unwrap_or("(no message)")
                .to_string(),
            data: error.get("data").cloned(),
        }
    }
}

/// One incoming JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request: it gets exactly one response with its `id`.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification: no `id`, no response.
    Notification { method: String, params: Value },
    /// A response to a request we sent: `result` or `error`.
    Response {
        id: Value,
        outcome: Result<Value, RpcError>,
    },
}

/// Reads one JSON-RPC message. An invalid one is the error response to
/// send back (with the message's `id` when it had a usable one, else null).
pub fn parse(value: Value) -> Result<Message, Value> {
    let Value::Object(mut object) = value else {
        return Err(error_response(
            &Value::Null,
            &RpcError::new(code::INVALID_REQUEST, "a JSON-RPC message is a JSON object"),
        ));
    };
    let id = object.remove("id");
    let usable_id = match &id {
        Some(v @ (Value::String(_) | Value::Number(_))) => Some(v.clone()),
        _ => None,
    };
    let invalid = |what: &str| {
        Err(error_response(
            usable_id.as_ref().unwrap_or(&Value::Null),
            &RpcError::new(code::INVALID_REQUEST, what),
        ))
    };
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid("\"jsonrpc\" must be \"2.0\"");
    }
    let params = match object.remove("params") {
        None => Value::Object(Map::new()),
        Some(p @ (Value::Object(_) | Value::Array(_))) => p,
        Some(_) => return invalid("\"params\" must be an object or an array"),
    };
    match (object.remove("method"), id) {
        (Some(Value::String(method)), None) => Ok(Message::Notification { method, params }),
        (Some(Value::String(method)), Some(_)) => match usable_id {
            Some(id) => Ok(Message::Request { id, method, params }),
            None => invalid("\"id\" must be a string or a number"),
        },
        (Some(_), _) => invalid("\"method\" must be a string"),
        (None, Some(id)) => {
            let outcome = match (object.remove("result"), object.get("error")) {
                (Some(result), None) => Ok(result),
                (None, Some(error)) => Err(RpcError::from_json(error)),
                _ => return invalid("a response holds exactly one of \"result\" and \"error\""),
            };
            Ok(Message::Response { id, outcome })
        }
        (None, None) => invalid("a message needs a \"method\" or an \"id\""),
    }
}

pub fn request(id: &Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

pub fn result_response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn error_response(id: &Value, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()})
}

/// The protocol version a stateless request names in `params._meta`, if any.
pub fn meta_version(params: &Value) -> Option<&Value> {
    params.get("_meta")?.get(META_VERSION)
}

/// The longest message read from a stdio peer; a longer line is refused,
/// not held.
pub const LINE_LIMIT: u64 = 64 << 20;

/// What one read of a newline-delimited stream gave.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// A line (or the last bytes before the end) is in the buffer.
    Message,
    /// A line longer than the limit: read and dropped, so memory stays
    /// bounded whatever a client sends.
    TooLong,
    End,
}

pub fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>, limit: u64) -> io::Result<Line> {
    line.clear();
    if input.take(limit + 1).read_until(b'\n', line)? == 0 {
        return Ok(Line::End);
    }
    if line.len() as u64 <= limit || line.ends_with(b"\n") {
        return Ok(Line::Message);
    }
    loop {
        line.clear();
        if input.take(limit).read_until(b'\n', line)? == 0 || line.ends_with(b"\n") {
            line.clear();
            return Ok(Line::TooLong);
        }
    }
}

/// A tool name as MCP clients accept it everywhere: `[A-Za-z0-9_-]`, every
/// other character `_`, at most `max` characters.
pub fn sanitise_name(name: &str, max: usize) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(max)
        .collect()
}

#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_classified() {
        let m = parse(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).unwrap();
        assert_eq!(
            m,
            Message::Request {
                id: json!(1),
                method: "ping".into(),
                params: json!({})
            }
        );
        let m = parse(json!({"jsonrpc": "2.0", "method": "n", "params": {"a": 1}})).unwrap();
        assert_eq!(
            m,
            Message::Notification {
                method: "n".into(),
                params: json!({"a": 1})
            }
        );
        let m = parse(json!({"jsonrpc": "2.0", "id": "x", "result": {}})).unwrap();
        assert_eq!(
            m,
            Message::Response {
                id: json!("x"),
                outcome: Ok(json!({}))
            }
        );
        let m = parse(json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -1, "message": "m"}}))
            .unwrap();
        assert!(matches!(m, Message::Response { outcome: Err(e), .. } if e.code == -1));
    }

    #[test]
    fn invalid_messages_are_answered_with_their_id() {
        let e = parse(json!({"jsonrpc": "1.0", "id": 7, "method": "x"})).unwrap_err();
        assert_eq!(e["id"], 7);
        assert_eq!(e["error"]["code"], code::INVALID_REQUEST);
        let e = parse(json!([1])).unwrap_err();
        assert_eq!(e["id"], Value::Null);
        let e = parse(json!({"jsonrpc": "2.0", "id": {}, "method": "x"})).unwrap_err();
        assert_eq!(e["id"], Value::Null);
        let e = parse(json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": 3})).unwrap_err();
        assert_eq!(e["error"]["code"], code::INVALID_REQUEST);
    }

    #[test]
    fn names_are_sanitised_and_cut() {
        assert_eq!(sanitise_name("a.b c-d_e", 64), "a_b_c-d_e");
        assert_eq!(sanitise_name("é", 64), "_");
        assert_eq!(sanitise_name(&"x".repeat(80), 64).len(), 64);
    }

    #[test]
    fn long_lines_are_dropped_and_reading_goes_on() {
        let mut input: &[u8] = b"{\"a\":1}\n0123456789abcdef\nshort\nlast";
        let mut line = Vec::new();
        let mut seen = Vec::new();
        loop {
            let got = read_line(&mut input, &mut line, 8).unwrap();
            if got == Line::End {
                break;
            }
            seen.push((got, String::from_utf8_lossy(&line).into_owned()));
        }
        assert_eq!(
            seen,
            [
                (Line::Message, "{\"a\":1}\n".to_string()),
                (Line::TooLong, String::new()),
                (Line::Message, "short\n".to_string()),
                (Line::Message, "last".to_string()),
            ]
        );
    }
}
