//! The Streamable HTTP transport (`--http HOST:PORT`), on tiny_http: one
//! endpoint, `/mcp`. A POST carries one message; a request is answered with
//! JSON, or, for a `tools/call` whose client accepts it, with an SSE stream
//! that ends with the response (a stream the client closes cancels the call:
//! comment lines sent while it runs find out). The handshake revisions get
//! a session (`Mcp-Session-Id`, ended by DELETE); the stateless revision
//! needs none, and its headers (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`) must agree with the body. A request from a foreign web page
//! (an `Origin` that is not this machine or this server) is refused with 403,
//! which stops DNS-rebinding attacks.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tiny_http::{Header, Method, Request, Response};

use super::service::{Era, Service};
use crate::mcp::protocol::{self, code, meta_version, Message, RpcError, HANDSHAKE_VERSIONS};

/// The largest request body read.
const BODY_LIMIT: u64 = 4 << 20;
/// How often a streamed call checks that its client is still there.
const KEEPALIVE: Duration = Duration::from_secs(1);

/// One handshake session: its revision and its running calls.
struct Session {
    version: String,
    in_flight: Mutex<HashMap<String, Arc<AtomicBool>>>,
}

type Sessions = Arc<Mutex<HashMap<String, Arc<Session>>>>;

/// Serves until the process ends; an address that cannot be bound is an error.
pub fn serve(service: Arc<Service>, addr: SocketAddr) -> Result<(), String> {
    let server =
        tiny_http::Server::http(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    match server.server_addr().to_ip() {
        Some(bound) => eprintln!("ikigai-tools mcp: listening on http://{bound}/mcp"),
        None => eprintln!("ikigai-tools mcp: listening"),
    }
    let sessions: Sessions = Arc::default();
    let loopback = addr.ip().is_loopback();
    for request in server.incoming_requests() {
        let (service, sessions) = (service.clone(), sessions.clone());
        std::thread::spawn(move || handle(request, &service, &sessions, loopback));
    }
    Ok(())
}

fn handle(request: Request, service: &Service, sessions: &Sessions, loopback: bool) {
    let path = request.url().split('?').next().unwrap_or_default();
    if path != "/mcp" {
        return reply(request, 404, None, None);
    }
    let (origin, host) = (header(&request, "origin"), header(&request, "host"));
    if !origin_allowed(origin, host, loopback) {
        let error = RpcError::new(code::INVALID_REQUEST, "Forbidden: foreign Host or Origin");
        return reply(request, 403, Some(&error_body(&Value::Null, &error)), None);
    }
    match request.method() {
        Method::Post => post(request, service, sessions),
        Method::Delete => {
            let id = header(&request, "mcp-session-id").map(str::to_string);
            let status = match id {
                None => 400,
                Some(id) => match sessions.lock().unwrap().remove(&id) {
                    Some(session) => {
                        for flag in session.in_flight.lock().unwrap().values() {
                            flag.store(true, Ordering::SeqCst);
                        }
                        200
                    }
                    None => 404,
                },
            };
            reply(request, status, None, None)
        }
        _ => {
            let allow = Header::from_bytes("Allow", "POST, DELETE").expect("static header");
            let _ = request.respond(Response::empty(405).with_header(allow));
        }
    }
}

fn post(mut request: Request, service: &Service, sessions: &Sessions) {
    let mut body = Vec::new();
    let read = request
        .as_reader()
        .take(BODY_LIMIT + 1)
        .read_to_end(&mut body);
    if read.is_err() {
        return reply(request, 400, None, None);
    }
    if body.len() as u64 > BODY_LIMIT {
        let error = RpcError::new(code::INVALID_REQUEST, "request body too large");
        return reply(request, 413, Some(&error_body(&Value::Null, &error)), None);
    }
    let value = match serde_json::from_slice::<Value>(&body) {
        Ok(value) => value,
        Err(e) => {
            let error = RpcError::new(code::PARSE_ERROR, format!("Parse error: {e}"));
            return reply(request, 400, Some(&error_body(&Value::Null, &error)), None);
        }
    };
    if value.is_array() {
        let error = RpcError::new(code::INVALID_REQUEST, "batches are not supported");
        return reply(request, 400, Some(&error_body(&Value::Null, &error)), None);
    }
    let (id, method, params) = match protocol::parse(value) {
        Err(answer) => return reply(request, 400, Some(&answer), None),
        Ok(Message::Response { .. }) => return reply(request, 202, None, None),
        Ok(Message::Notification { method, params }) => {
            if method == "notifications/cancelled" {
                if let Some(session) = session_of(&request, sessions) {
                    let key = params["requestId"].to_string();
                    if let Some(flag) = session.in_flight.lock().unwrap().get(&key) {
                        flag.store(true, Ordering::SeqCst);
                    }
                }
            }
            return reply(request, 202, None, None);
        }
        Ok(Message::Request { id, method, params }) => (id, method, params),
    };
    let fail = |request, status, error: RpcError| {
        reply(request, status, Some(&error_body(&id, &error)), None)
    };
    if method == "initialize" {
        // No stream carries server-initiated notifications here; the list
        // itself stays current.
        let (version, result) = service.initialize(&params, false);
        let session_id = new_session_id();
        let session = Session {
            version,
            in_flight: Mutex::default(),
        };
        sessions
            .lock()
            .unwrap()
            .insert(session_id.clone(), Arc::new(session));
        let body = protocol::result_response(&id, result);
        return reply(request, 200, Some(&body), Some(&session_id));
    }
    let session = if meta_version(&params).is_some() {
        if let Err(error) = check_modern_headers(&request, &method, &params) {
            return fail(request, 400, error);
        }
        None
    } else {
        let Some(session_id) = header(&request, "mcp-session-id") else {
            let error = RpcError::new(
                code::INVALID_REQUEST,
                "Bad Request: Mcp-Session-Id header is required (send initialize first, or \
                 name the protocol version in params._meta)",
            );
            return fail(request, 400, error);
        };
        let Some(session) = sessions.lock().unwrap().get(session_id).cloned() else {
            let error = RpcError::new(code::INVALID_REQUEST, "Session not found");
            return fail(request, 404, error);
        };
        let asked = header(&request, "mcp-protocol-version").map(str::to_string);
        if let Some(asked) = asked.filter(|a| !HANDSHAKE_VERSIONS.contains(&a.as_str())) {
            return fail(request, 400, RpcError::unsupported_version(&json!(asked)));
        }
        Some(session)
    };
    let negotiated = session.as_ref().map(|s| s.version.as_str());
    let era = match Service::era_of(&params, negotiated) {
        Ok(era) => era,
        Err(error) => return fail(request, 400, error),
    };
    let flag = Arc::new(AtomicBool::new(false));
    let key = id.to_string();
    if let Some(session) = &session {
        session
            .in_flight
            .lock()
            .unwrap()
            .insert(key.clone(), flag.clone());
    }
    let streams = method == "tools/call"
        && header(&request, "accept").is_some_and(|a| a.contains("text/event-stream"));
    let result = if streams {
        stream(request, service, &era, &method, &params, &id, &flag);
        None
    } else {
        Some((request, service.handle(&era, &method, &params, Some(&flag))))
    };
    if let Some(session) = &session {
        session.in_flight.lock().unwrap().remove(&key);
    }
    let Some((request, result)) = result else {
        return;
    };
    match result {
        Ok(result) => reply(
            request,
            200,
            Some(&protocol::result_response(&id, result)),
            None,
        ),
        // The stateless revision says an unknown method is a 404.
        Err(e) if e.code == code::METHOD_NOT_FOUND && era == Era::Modern => fail(request, 404, e),
        Err(e) => fail(request, 200, e),
    }
}

/// Runs one call and answers it as an SSE stream: comment lines while it
/// runs (a write that fails means the client left: the call is cancelled),
/// then the response as one `message` event.
fn stream(
    request: Request,
    service: &Service,
    era: &Era,
    method: &str,
    params: &Value,
    id: &Value,
    flag: &AtomicBool,
) {
    let mut out = request.into_writer();
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
                X-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n";
    let mut alive = out
        .write_all(head.as_bytes())
        .and_then(|()| out.flush())
        .is_ok();
    let result = std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        s.spawn(move || {
            let _ = tx.send(service.handle(era, method, params, Some(flag)));
        });
        loop {
            match rx.recv_timeout(KEEPALIVE) {
                Ok(result) => return Some(result),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if alive && chunk(&mut out, b": running\n\n").is_err() {
                        alive = false;
                        flag.store(true, Ordering::SeqCst);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            }
        }
    });
    if !alive || flag.load(Ordering::SeqCst) {
        return;
    }
    let message = match result {
        Some(Ok(result)) => protocol::result_response(id, result),
        Some(Err(e)) => error_body(id, &e),
        None => error_body(id, &RpcError::new(code::INTERNAL_ERROR, "the call failed")),
    };
    let event = format!("event: message\ndata: {message}\n\n");
    let _ = chunk(&mut out, event.as_bytes())
        .and_then(|()| out.write_all(b"0\r\n\r\n"))
        .and_then(|()| out.flush());
}

/// Writes one chunk of a chunked body and sends it.
fn chunk(out: &mut dyn Write, data: &[u8]) -> std::io::Result<()> {
    write!(out, "{:x}\r\n", data.len())?;
    out.write_all(data)?;
    out.write_all(b"\r\n")?;
    out.flush()
}

/// The stateless revision's headers must say what the body says.
fn check_modern_headers(request: &Request, method: &str, params: &Value) -> Result<(), RpcError> {
    let mismatch = |what: String| Err(RpcError::new(code::HEADER_MISMATCH, what));
    let version = meta_version(params).and_then(Value::as_str);
    match header(request, "mcp-protocol-version") {
        None => return mismatch("Header mismatch: MCP-Protocol-Version header is required".into()),
        Some(h) if Some(h) != version => {
            return mismatch(format!(
                "Header mismatch: MCP-Protocol-Version header value '{h}' does not match body \
                 value '{}'",
                version.unwrap_or_default()
            ))
        }
        Some(_) => {}
    }
    match header(request, "mcp-method") {
        None => return mismatch("Header mismatch: Mcp-Method header is required".into()),
        Some(h) if h != method => {
            return mismatch(format!(
                "Header mismatch: Mcp-Method header value '{h}' does not match body value \
                 '{method}'"
            ))
        }
        Some(_) => {}
    }
    if let Some(name) = params["name"].as_str().filter(|_| method == "tools/call") {
        match header(request, "mcp-name").map(decode_header_value) {
            None => return mismatch("Header mismatch: Mcp-Name header is required".into()),
            Some(h) if h.as_deref() != Some(name) => {
                return mismatch(format!(
                    "Header mismatch: Mcp-Name header does not match body value '{name}'"
                ))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// A header value, or its `=?base64?...?=` form decoded.
fn decode_header_value(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(base64_decode(encoded)?).ok(),
        None => Some(value.to_string()),
    }
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut bits: u32 = 0;
    let mut count = 0;
    let mut out = Vec::new();
    for c in text.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(v);
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    Some(out)
}

/// A browser's `Origin` must name this machine or this server; requests
/// without one (every non-browser client) pass. A server on a loopback
/// address also wants a loopback `Host`: a page whose name was made to
/// resolve to 127.0.0.1 (DNS rebinding) still sends its own name there.
fn origin_allowed(origin: Option<&str>, host: Option<&str>, loopback: bool) -> bool {
    let local = |h: &str| ["localhost", "127.0.0.1", "[::1]"].contains(&h);
    let host = host.map(host_part);
    if loopback && host.as_deref().is_some_and(|h| !local(h)) {
        return false;
    }
    let Some(origin) = origin else {
        return true;
    };
    let Some((_, rest)) = origin.split_once("://") else {
        return false;
    };
    let origin_host = host_part(rest);
    local(&origin_host) || host.is_some_and(|h| h == origin_host)
}

/// `host[:port]` without the port, lowercased.
fn host_part(authority: &str) -> String {
    let authority = authority.split('/').next().unwrap_or_default();
    let host = if authority.starts_with('[') {
        authority.split_inclusive(']').next().unwrap_or_default()
    } else {
        authority.split(':').next().unwrap_or_default()
    };
    host.to_ascii_lowercase()
}

fn header<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request
        .headers()
        .iter()
        .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

fn session_of(request: &Request, sessions: &Sessions) -> Option<Arc<Session>> {
    let id = header(request, "mcp-session-id")?;
    sessions.lock().unwrap().get(id).cloned()
}

fn error_body(id: &Value, error: &RpcError) -> Value {
    protocol::error_response(id, error)
}

fn reply(request: Request, status: u16, body: Option<&Value>, session: Option<&str>) {
    let mut response = match body {
        Some(body) => Response::from_string(body.to_string()).with_header(
            Header::from_bytes("Content-Type", "application/json").expect("static header"),
        ),
        None => Response::from_string(String::new()),
    }
    .with_status_code(status);
    if let Some(id) = session {
        if let Ok(h) = Header::from_bytes("Mcp-Session-Id", id) {
            response = response.with_header(h);
        }
    }
    // A client that went away needs no answer.
    let _ = request.respond(response);
}

/// 128 random bits, as hex: unguessable, so one client cannot use another's
/// session.
fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    // SAFETY: getrandom fills the buffer it is given, at most its length.
    let filled = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if filled != bytes.len() as isize {
        // The kernel always has entropy after boot; this is a fallback only.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes = (nanos ^ u128::from(std::process::id())).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        assert!(origin_allowed(None, None, true));
        assert!(origin_allowed(None, Some("localhost:9"), true));
        assert!(origin_allowed(Some("http://localhost:3000"), None, true));
        assert!(origin_allowed(
            Some("http://127.0.0.1"),
            Some("127.0.0.1:9"),
            true
        ));
        assert!(origin_allowed(
            Some("http://[::1]:8080"),
            Some("[::1]:9"),
            true
        ));
        assert!(origin_allowed(
            Some("http://box.lan:9"),
            Some("box.lan:9"),
            false
        ));
        assert!(!origin_allowed(
            Some("http://box.lan:9"),
            Some("box.lan:9"),
            true
        ));
        assert!(!origin_allowed(None, Some("evil.example"), true));
        assert!(!origin_allowed(
            Some("https://evil.example"),
            Some("127.0.0.1:9"),
            true
        ));
        assert!(!origin_allowed(Some("null"), Some("127.0.0.1:9"), true));
        assert!(!origin_allowed(
            Some("http://localhost.evil.example"),
            None,
            true
        ));
    }

    #[test]
    fn header_values_decode() {
        assert_eq!(decode_header_value("grep").as_deref(), Some("grep"));
        assert_eq!(
            decode_header_value("=?base64?5pel5pys6Kqe?=").as_deref(),
            Some("日本語")
        );
        assert_eq!(decode_header_value("=?base64?!!?="), None);
    }

    #[test]
    fn session_ids_are_long_and_differ() {
        let (a, b) = (new_session_id(), new_session_id());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
