//! The Streamable HTTP transport (`--http HOST:PORT`): one endpoint, `/mcp`,
//! on our own HTTP/1.1 layer (`conn`, which bounds connections and the time
//! a request may take). Every request carries the bearer token (decision
//! 73; `auth`), else 401. A POST carries one message; a request is
//! answered with JSON, or, for a `tools/call` whose client accepts it, with
//! an SSE stream that ends with the response (a stream the client closes
//! cancels the call: comment lines sent while it runs find out). At most 64
//! calls run at once, the next get 429 (`limits`). The handshake revisions
//! get a session (`Mcp-Session-Id`, ended by DELETE or an hour idle); the
//! stateless revision needs none, and its headers (`MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`) must agree with the body. A request from a
//! foreign web page (an `Origin` that is not this machine or this server)
//! is refused with 403, which stops DNS-rebinding attacks.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::auth::{self, Access};
use super::conn::{self, Exchange, Request};
use super::limits::{Session, Sessions, Slots, MAX_CALLS, MAX_SESSIONS, SESSION_IDLE};
use super::service::{Era, Service};
use crate::mcp::protocol::{self, code, meta_version, Message, RpcError, HANDSHAKE_VERSIONS};
use crate::tool::Env;

/// How often a streamed call checks that its client is still there.
const KEEPALIVE: Duration = Duration::from_secs(1);
/// What a 429 asks the client to wait, in seconds.
const RETRY_AFTER: &str = "1";

/// The server's state, shared by its connections.
struct Server {
    service: Arc<Service>,
    access: Access,
    sessions: Sessions,
    calls: Slots,
    loopback: bool,
}

/// Serves until the process ends; an address that cannot be bound is an
/// error. `access` None: a token is made now, shown once and saved.
pub fn serve(
    service: Arc<Service>,
    addr: SocketAddr,
    access: Option<Access>,
    env: &Env,
) -> Result<(), String> {
    let listener = TcpListener::bind(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let access = match access {
        Some(Access::Open) => {
            eprintln!(
                "ikigai-tools mcp: warning: --no-auth: any program on this machine can run tools \
                 through this server"
            );
            Access::Open
        }
        Some(given) => given,
        None => {
            let token = auth::make();
            let saved = match auth::token_path(env, bound.port()) {
                Some(path) => auth::save(&path, &token)
                    .map(|()| format!("saved in {} (mode 0600)", path.display()))
                    .unwrap_or_else(|e| format!("not saved: {}: {e}", path.display())),
                None => "not saved: no $XDG_RUNTIME_DIR or home directory".into(),
            };
            eprintln!(
                "ikigai-tools mcp: token (send \"Authorization: Bearer TOKEN\"; {saved}): {token}"
            );
            Access::Token(token)
        }
    };
    eprintln!("ikigai-tools mcp: listening on http://{bound}/mcp");
    let server = Arc::new(Server {
        service,
        access,
        sessions: Sessions::new(MAX_SESSIONS, SESSION_IDLE),
        calls: Slots::new(MAX_CALLS),
        loopback: addr.ip().is_loopback(),
    });
    conn::serve(
        listener,
        Arc::new(move |request: Request, exchange: &mut Exchange| server.handle(request, exchange)),
    );
    Ok(())
}

impl Server {
    fn handle(&self, request: Request, ex: &mut Exchange) {
        if request.path != "/mcp" {
            return reply(ex, 404, None, &[]);
        }
        let (origin, host) = (request.header("origin"), request.header("host"));
        if !origin_allowed(origin, host, self.loopback) {
            let error = RpcError::new(code::INVALID_REQUEST, "Forbidden: foreign Host or Origin");
            return reply(ex, 403, Some(&error_body(&Value::Null, &error)), &[]);
        }
        if let Access::Token(token) = &self.access {
            let given = request.header("authorization");
            if !auth::allows(given, token) {
                // RFC 6750: a request without credentials gets the bare
                // challenge, a wrong token is told so.
                let challenge = match given {
                    None => r#"Bearer realm="ikigai-tools mcp""#,
                    Some(_) => r#"Bearer realm="ikigai-tools mcp", error="invalid_token""#,
                };
                let error = RpcError::new(
                    code::UNAUTHORIZED,
                    "Unauthorized: send the server's token as \"Authorization: Bearer TOKEN\"",
                );
                return reply(
                    ex,
                    401,
                    Some(&error_body(&Value::Null, &error)),
                    &[("WWW-Authenticate", challenge)],
                );
            }
        }
        match request.method.as_str() {
            "POST" => self.post(request, ex),
            "DELETE" => {
                let status = match request.header("mcp-session-id") {
                    None => 400,
                    Some(id) if self.sessions.end(id) => 200,
                    Some(_) => 404,
                };
                reply(ex, status, None, &[])
            }
            _ => reply(ex, 405, None, &[("Allow", "POST, DELETE")]),
        }
    }

    fn post(&self, request: Request, ex: &mut Exchange) {
        let value = match serde_json::from_slice::<Value>(&request.body) {
            Ok(value) => value,
            Err(e) => {
                let error = RpcError::new(code::PARSE_ERROR, format!("Parse error: {e}"));
                return reply(ex, 400, Some(&error_body(&Value::Null, &error)), &[]);
            }
        };
        if value.is_array() {
            let error = RpcError::new(code::INVALID_REQUEST, "batches are not supported");
            return reply(ex, 400, Some(&error_body(&Value::Null, &error)), &[]);
        }
        let (id, method, params) = match protocol::parse(value) {
            Err(answer) => return reply(ex, 400, Some(&answer), &[]),
            Ok(Message::Response { .. }) => return reply(ex, 202, None, &[]),
            Ok(Message::Notification { method, params }) => {
                if method == "notifications/cancelled" {
                    if let Some(session) = self.session_of(&request) {
                        let key = params["requestId"].to_string();
                        if let Some(flag) = session.in_flight.lock().unwrap().get(&key) {
                            flag.store(true, Ordering::SeqCst);
                        }
                    }
                }
                return reply(ex, 202, None, &[]);
            }
            Ok(Message::Request { id, method, params }) => (id, method, params),
        };
        let fail = |ex: &mut Exchange, status, error: RpcError| {
            reply(ex, status, Some(&error_body(&id, &error)), &[])
        };
        if method == "initialize" {
            // No stream carries server-initiated notifications here; the list
            // itself stays current.
            let (version, result) = self.service.initialize(&params, false);
            let session_id = new_session_id();
            self.sessions
                .create(session_id.clone(), version, Instant::now());
            let body = protocol::result_response(&id, result);
            return reply(ex, 200, Some(&body), &[("Mcp-Session-Id", &session_id)]);
        }
        let session = if meta_version(&params).is_some() {
            if let Err(error) = check_modern_headers(&request, &method, &params) {
                return fail(ex, 400, error);
            }
            None
        } else {
            let Some(session_id) = request.header("mcp-session-id") else {
                let error = RpcError::new(
                    code::INVALID_REQUEST,
                    "Bad Request: Mcp-Session-Id header is required (send initialize first, or \
                     name the protocol version in params._meta)",
                );
                return fail(ex, 400, error);
            };
            let Some(session) = self.sessions.get(session_id, Instant::now()) else {
                let error = RpcError::new(code::INVALID_REQUEST, "Session not found");
                return fail(ex, 404, error);
            };
            let asked = request.header("mcp-protocol-version");
            if let Some(asked) = asked.filter(|a| !HANDSHAKE_VERSIONS.contains(a)) {
                return fail(ex, 400, RpcError::unsupported_version(&json!(asked)));
            }
            Some(session)
        };
        let negotiated = session.as_ref().map(|s| s.version.as_str());
        let era = match Service::era_of(&params, negotiated) {
            Ok(era) => era,
            Err(error) => return fail(ex, 400, error),
        };
        // Only calls take a place: the other methods answer at once.
        let slot = self.calls.take();
        if method == "tools/call" && slot.is_none() {
            let error = RpcError::new(
                code::SERVER_BUSY,
                format!(
                    "Too many calls at once ({MAX_CALLS} are running); retry after {RETRY_AFTER} s"
                ),
            );
            return reply(
                ex,
                429,
                Some(&error_body(&id, &error)),
                &[("Retry-After", RETRY_AFTER)],
            );
        }
        let _slot = slot.filter(|_| method == "tools/call");
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
            && request
                .header("accept")
                .is_some_and(|a| a.contains("text/event-stream"));
        let result = if streams {
            stream(ex, &self.service, &era, &method, &params, &id, &flag);
            None
        } else {
            Some(self.service.handle(&era, &method, &params, Some(&flag)))
        };
        if let Some(session) = &session {
            session.in_flight.lock().unwrap().remove(&key);
        }
        match result {
            None => {}
            Some(Ok(result)) => reply(ex, 200, Some(&protocol::result_response(&id, result)), &[]),
            // The stateless revision says an unknown method is a 404.
            Some(Err(e)) if e.code == code::METHOD_NOT_FOUND && era == Era::Modern => {
                fail(ex, 404, e)
            }
            Some(Err(e)) => fail(ex, 200, e),
        }
    }

    fn session_of(&self, request: &Request) -> Option<Arc<Session>> {
        let id = request.header("mcp-session-id")?;
        self.sessions.get(id, Instant::now())
    }
}

/// Runs one call and answers it as an SSE stream: comment lines while it
/// runs (a write that fails means the client left: the call is cancelled),
/// then the response as one `message` event.
fn stream(
    ex: &mut Exchange,
    service: &Service,
    era: &Era,
    method: &str,
    params: &Value,
    id: &Value,
    flag: &AtomicBool,
) {
    let headers = [
        ("Content-Type", "text/event-stream"),
        ("Cache-Control", "no-cache"),
        ("X-Accel-Buffering", "no"),
    ];
    let mut out = ex.stream(200, &headers).ok();
    let result = std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        s.spawn(move || {
            let _ = tx.send(service.handle(era, method, params, Some(flag)));
        });
        loop {
            match rx.recv_timeout(KEEPALIVE) {
                Ok(result) => return Some(result),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if out
                        .as_mut()
                        .is_some_and(|o| o.chunk(b": running\n\n").is_err())
                    {
                        out = None;
                    }
                    if out.is_none() {
                        flag.store(true, Ordering::SeqCst);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            }
        }
    });
    let Some(mut out) = out.filter(|_| !flag.load(Ordering::SeqCst)) else {
        return;
    };
    let message = match result {
        Some(Ok(result)) => protocol::result_response(id, result),
        Some(Err(e)) => error_body(id, &e),
        None => error_body(id, &RpcError::new(code::INTERNAL_ERROR, "the call failed")),
    };
    let event = format!("event: message\ndata: {message}\n\n");
    let _ = out.chunk(event.as_bytes()).and_then(|()| out.finish());
}

/// The stateless revision's headers must say what the body says.
fn check_modern_headers(request: &Request, method: &str, params: &Value) -> Result<(), RpcError> {
    let mismatch = |what: String| Err(RpcError::new(code::HEADER_MISMATCH, what));
    let version = meta_version(params).and_then(Value::as_str);
    match request.header("mcp-protocol-version") {
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
    match request.header("mcp-method") {
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
        match request.header("mcp-name").map(decode_header_value) {
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

fn error_body(id: &Value, error: &RpcError) -> Value {
    protocol::error_response(id, error)
}

fn reply(ex: &mut Exchange, status: u16, body: Option<&Value>, headers: &[(&str, &str)]) {
    let mut all = headers.to_vec();
    let text = match body {
        Some(body) => {
            all.push(("Content-Type", "application/json"));
            body.to_string()
        }
        None => String::new(),
    };
    ex.send(status, &all, text.as_bytes());
}

/// 128 random bits, as hex: unguessable, so one client cannot use another's
/// session.
fn new_session_id() -> String {
    auth::random_hex(16)
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
