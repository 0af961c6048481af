//! A scripted HTTP/1.1 server on 127.0.0.1 for tests: a handler turns each
//! request into a `Reply`, and every request is recorded (method, path,
//! decoded query, headers, body) for the test to inspect. Each connection
//! gets its own thread and one response, then `Connection: close`, so a
//! stalled reply never blocks the others. Nothing leaves the loopback.
//!
//! ```ignore
//! let server = Server::start(|req| match req.path.as_str() {
//!     "/page" => Reply::html("<p>hi</p>"),
//!     _ => Reply::status(404),
//! });
//! let url = server.url("/page");
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One request as the server received it.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    /// The request target as sent: path and query.
    pub target: String,
    pub path: String,
    /// Query parameters, percent-decoded (`+` as space), in order.
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// A header's value (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// A query parameter's first value.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the server does with one request.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    action: Action,
}

#[derive(Debug, Clone)]
enum Action {
    /// Status, headers, body.
    Send,
    /// Status and headers (with a Content-Length the body never meets),
    /// then silence for the duration, then the connection is closed.
    Stall(Duration),
    /// Close the connection without answering.
    HangUp,
    /// These bytes exactly, then close.
    Raw,
}

impl Reply {
    pub fn status(status: u16) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            action: Action::Send,
        }
    }
    pub fn ok() -> Self {
        Self::status(200)
    }
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }
    /// 200 with a body of this content type.
    pub fn typed(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self::ok().header("Content-Type", content_type).body(body)
    }
    pub fn html(body: impl Into<Vec<u8>>) -> Self {
        Self::typed("text/html; charset=utf-8", body)
    }
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Self::status(status)
            .header("Content-Type", "application/json")
            .body(body.to_string())
    }
    /// A redirect (301, 302, 303, 307, 308) to `location`.
    pub fn redirect(status: u16, location: &str) -> Self {
        Self::status(status).header("Location", location)
    }
    /// Headers, then nothing for `pause`, then a closed connection.
    pub fn stall(pause: Duration) -> Self {
        Reply {
            action: Action::Stall(pause),
            ..Self::ok().header("Content-Type", "text/html")
        }
    }
    pub fn hang_up() -> Self {
        Reply {
            action: Action::HangUp,
            ..Self::ok()
        }
    }
    /// Exactly these bytes on the wire (malformed responses).
    pub fn raw(bytes: impl Into<Vec<u8>>) -> Self {
        Reply {
            action: Action::Raw,
            ..Self::ok().body(bytes)
        }
    }
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

pub struct Server {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let accept = {
            let (requests, stop) = (requests.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (handler, requests) = (handler.clone(), requests.clone());
                    std::thread::spawn(move || serve(stream, &*handler, &requests));
                }
            })
        };
        Server {
            addr,
            requests,
            stop,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The requests received so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// A port on 127.0.0.1 where nothing listens (connections are refused).
pub fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    listener.local_addr().expect("local address").port()
}

fn serve(mut stream: TcpStream, handler: &Handler, requests: &Mutex<Vec<Request>>) {
    // A client that never finishes its request must not keep the thread.
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Some(request) = read_request(&mut stream) else {
        return;
    };
    requests.lock().unwrap().push(request.clone());
    let reply = handler(&request);
    let _ = write_reply(&mut stream, &reply);
    let _ = stream.shutdown(Shutdown::Both);
}

fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        let (name, value) = trimmed.split_once(':')?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    let length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path.to_string(), parse_query(query)),
        None => (target.clone(), Vec::new()),
    };
    Some(Request {
        method,
        target,
        path,
        query,
        headers,
        body,
    })
}

fn write_reply(stream: &mut TcpStream, reply: &Reply) -> std::io::Result<()> {
    if let Action::HangUp = reply.action {
        return Ok(());
    }
    if let Action::Raw = reply.action {
        return stream.write_all(&reply.body);
    }
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let length = match reply.action {
        Action::Stall(_) => reply.body.len() + 1_000_000,
        _ => reply.body.len(),
    };
    head.push_str(&format!(
        "Content-Length: {length}\r\nConnection: close\r\n\r\n"
    ));
    stream.write_all(head.as_bytes())?;
    stream.write_all(&reply.body)?;
    stream.flush()?;
    if let Action::Stall(pause) = reply.action {
        std::thread::sleep(pause);
    }
    Ok(())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = match bytes.get(i..i + 3) {
            Some([b'%', hi, lo]) => hex(*hi).zip(hex(*lo)).map(|(h, l)| h * 16 + l),
            _ => None,
        };
        match (escaped, bytes[i]) {
            (Some(b), _) => {
                out.push(b);
                i += 3;
                continue;
            }
            (None, b'+') => out.push(b' '),
            (None, b) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
