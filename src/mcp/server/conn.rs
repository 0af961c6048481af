//! HTTP/1.1 for the Streamable HTTP transport, as far as MCP needs it, with
//! the limits decision 73 asks for built in: one thread per connection (a
//! bounded number of them: past `MAX_CONNECTIONS` a connection gets 503 and
//! is closed), a request whose head and body have not all arrived 30 s
//! after its first byte gets 408 and its connection is closed, a
//! connection idle between requests is closed after two minutes, and a
//! head or body over its limit is refused. Bodies come with
//! `Content-Length` or chunked; `Expect: 100-continue` is answered. A
//! handler answers once, whole (`Exchange::send`) or as a chunked stream
//! (`Exchange::stream`, after which the connection closes).
//!
//! Why not tiny_http, which served here before: it gives a handler no way
//! to bound the time a body takes (its sockets have no timeouts and are out
//! of reach), holds a thread per idle connection forever, and starts a
//! thread per connection without limit.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The time a request's head and body may take after its first byte.
pub const BODY_DEADLINE: Duration = Duration::from_secs(30);
/// The time a connection may wait, idle, for its next request.
const IDLE: Duration = Duration::from_secs(120);
/// The largest request head (request line and headers).
const HEAD_LIMIT: usize = 64 << 10;
/// The largest request body.
pub const BODY_LIMIT: usize = 4 << 20;
/// Connections served at once; each holds a thread.
pub const MAX_CONNECTIONS: usize = 2048;
/// Each connection thread's stack: a handler's work is shallow.
const STACK: usize = 1 << 20;

/// One request, read whole.
#[derive(Debug)]
pub struct Request {
    pub method: String,
    /// The target without its query.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The first header of that name (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The answer side of one request.
pub struct Exchange<'a> {
    stream: &'a TcpStream,
    /// Cleared when the answer was a stream or could not be written.
    keep_alive: bool,
}

impl Exchange<'_> {
    /// Answers with `status`, `headers` and `body`.
    pub fn send(&mut self, status: u16, headers: &[(&str, &str)], body: &[u8]) {
        let mut head = status_line(status);
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        if !self.keep_alive {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        let mut out = self.stream;
        let sent = out
            .write_all(head.as_bytes())
            .and_then(|()| out.write_all(body))
            .and_then(|()| out.flush());
        if sent.is_err() {
            self.keep_alive = false;
        }
    }

    /// Starts a chunked answer; the connection closes after it.
    pub fn stream(&mut self, status: u16, headers: &[(&str, &str)]) -> io::Result<Chunks<'_>> {
        self.keep_alive = false;
        let mut head = status_line(status);
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
        let mut out = self.stream;
        out.write_all(head.as_bytes())?;
        out.flush()?;
        Ok(Chunks {
            stream: self.stream,
        })
    }
}

/// The body of a chunked answer, a chunk at a time.
pub struct Chunks<'a> {
    stream: &'a TcpStream,
}

impl Chunks<'_> {
    /// Writes and sends one chunk; an error means the client left.
    pub fn chunk(&mut self, data: &[u8]) -> io::Result<()> {
        let mut out = self.stream;
        write!(out, "{:x}\r\n", data.len())?;
        out.write_all(data)?;
        out.write_all(b"\r\n")?;
        out.flush()
    }

    /// The last chunk.
    pub fn finish(self) -> io::Result<()> {
        let mut out = self.stream;
        out.write_all(b"0\r\n\r\n")?;
        out.flush()
    }
}

fn status_line(status: u16) -> String {
    let reason = match status {
        100 => "Continue",
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "",
    };
    format!("HTTP/1.1 {status} {reason}\r\n")
}

/// Serves connections from `listener` until the process ends, each request
/// handed to `handler`.
pub fn serve<H>(listener: TcpListener, handler: Arc<H>)
where
    H: Fn(Request, &mut Exchange) + Send + Sync + 'static,
{
    let open = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            // EMFILE and the like pass; the next accept may succeed.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::SeqCst);
            refuse(stream);
            continue;
        }
        let (open2, handler) = (open.clone(), handler.clone());
        let started = std::thread::Builder::new()
            .name("mcp-http".into())
            .stack_size(STACK)
            .spawn(move || {
                connection(stream, &*handler);
                open2.fetch_sub(1, Ordering::SeqCst);
            });
        if started.is_err() {
            // No thread to be had: the connection was dropped with the closure.
            open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Past the connection limit: 503 and close, written without blocking.
fn refuse(stream: TcpStream) {
    let _ = stream.set_nonblocking(true);
    let mut out = &stream;
    let _ = out.write_all(
        b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n\
          Connection: close\r\n\r\n",
    );
}

/// The socket, read under a deadline that the reader moves.
struct Timed {
    stream: TcpStream,
    deadline: Instant,
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        match self.stream.read(buf) {
            // A timed-out read is EAGAIN on Linux.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(io::ErrorKind::TimedOut.into()),
            other => other,
        }
    }
}

/// Why a request could not be read.
#[derive(Debug, PartialEq)]
enum Bad {
    /// The connection ended (or went idle too long) between requests.
    Gone,
    /// An answer to send before closing.
    Answer(u16, &'static str),
}

fn connection(stream: TcpStream, handler: &(dyn Fn(Request, &mut Exchange) + Sync)) {
    let _ = stream.set_nodelay(true);
    let Ok(reading) = stream.try_clone() else {
        return;
    };
    let mut input = BufReader::new(Timed {
        stream: reading,
        deadline: Instant::now() + IDLE,
    });
    loop {
        input.get_mut().deadline = Instant::now() + IDLE;
        match input.fill_buf() {
            Ok([]) | Err(_) => return,
            Ok(_) => {}
        }
        input.get_mut().deadline = Instant::now() + BODY_DEADLINE;
        let request = read_request(&mut input, &mut &stream);
        let mut exchange = Exchange {
            stream: &stream,
            keep_alive: true,
        };
        match request {
            Ok((request, close)) => {
                exchange.keep_alive = !close;
                handler(request, &mut exchange);
                if !exchange.keep_alive {
                    return;
                }
            }
            Err(Bad::Gone) => return,
            Err(Bad::Answer(status, why)) => {
                exchange.keep_alive = false;
                exchange.send(status, &[("Content-Type", "text/plain")], why.as_bytes());
                return;
            }
        }
    }
}

/// Reads one request; the bool says the client wants the connection closed.
/// `interim` gets the `100 Continue` a client may wait for.
fn read_request(input: &mut impl BufRead, interim: &mut dyn Write) -> Result<(Request, bool), Bad> {
    let head = read_head(input)?;
    let (method, path, version, headers) = parse_head(&head)?;
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    let connection = find("connection").unwrap_or_default();
    let close = connection.contains("close")
        || (version == "HTTP/1.0" && !connection.contains("keep-alive"));
    if find("expect").is_some_and(|e| e == "100-continue") {
        let _ = interim
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .and_then(|()| interim.flush());
    }
    let body = if find("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        read_chunked(input)?
    } else if let Some(length) = find("content-length") {
        let length: usize = length
            .trim()
            .parse()
            .map_err(|_| Bad::Answer(400, "invalid Content-Length"))?;
        if length > BODY_LIMIT {
            return Err(Bad::Answer(413, "request body too large"));
        }
        let mut body = vec![0; length];
        input.read_exact(&mut body).map_err(timed_out)?;
        body
    } else {
        Vec::new()
    };
    let path = path.split('?').next().unwrap_or_default().to_string();
    Ok((
        Request {
            method,
            path,
            headers,
            body,
        },
        close,
    ))
}

/// A read that failed: the deadline passed (408), or the client left.
fn timed_out(e: io::Error) -> Bad {
    match e.kind() {
        io::ErrorKind::TimedOut => Bad::Answer(408, "the request did not arrive within 30 s"),
        _ => Bad::Gone,
    }
}

/// The bytes up to the blank line that ends a head (leading blank lines,
/// which RFC 9112 lets a server skip, skipped).
fn read_head(input: &mut impl BufRead) -> Result<Vec<u8>, Bad> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let n = input
            .by_ref()
            .take((HEAD_LIMIT + 1 - head.len()) as u64)
            .read_until(b'\n', &mut head)
            .map_err(timed_out)?;
        if n == 0 {
            return Err(if head.is_empty() {
                Bad::Gone
            } else {
                Bad::Answer(400, "the request ended inside its head")
            });
        }
        if head.len() > HEAD_LIMIT {
            return Err(Bad::Answer(431, "request head too large"));
        }
        let line = &head[before..];
        if line == b"\r\n" || line == b"\n" {
            if before == 0 {
                head.clear();
                continue;
            }
            return Ok(head);
        }
        if !line.ends_with(b"\n") {
            return Err(Bad::Answer(400, "the request ended inside its head"));
        }
    }
}

type Head = (String, String, String, Vec<(String, String)>);

/// The request line and the headers.
fn parse_head(head: &[u8]) -> Result<Head, Bad> {
    let bad = Bad::Answer(400, "malformed request head");
    let text =
        std::str::from_utf8(head).map_err(|_| Bad::Answer(400, "request head is not UTF-8"))?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let mut first = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (first.next(), first.next(), first.next(), first.next())
    else {
        return Err(bad);
    };
    if method.is_empty() || !target.starts_with('/') || !version.starts_with("HTTP/1.") {
        return Err(bad);
    }
    let mut headers = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad);
        };
        if name.is_empty() || name.contains(|c: char| c.is_whitespace()) {
            return Err(bad);
        }
        headers.push((name.to_string(), value.trim().to_string()));
    }
    Ok((method.into(), target.into(), version.into(), headers))
}

/// A chunked body, its size bounded as a plain one's is.
fn read_chunked(input: &mut impl BufRead) -> Result<Vec<u8>, Bad> {
    let bad = Bad::Answer(400, "malformed chunked body");
    let mut body = Vec::new();
    loop {
        let mut line = Vec::new();
        input
            .by_ref()
            .take(1024)
            .read_until(b'\n', &mut line)
            .map_err(timed_out)?;
        let text =
            std::str::from_utf8(&line).map_err(|_| Bad::Answer(400, "malformed chunked body"))?;
        let size = text.trim().split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| Bad::Answer(400, "malformed chunked body"))?;
        if size == 0 {
            // Trailers, up to the blank line.
            loop {
                line.clear();
                let n = input
                    .by_ref()
                    .take(8192)
                    .read_until(b'\n', &mut line)
                    .map_err(timed_out)?;
                if n == 0 || line == b"\r\n" || line == b"\n" {
                    return Ok(body);
                }
            }
        }
        // `body` never exceeds the limit, so this cannot overflow; the sum
        // could (a size of 16 hex digits).
        if size > BODY_LIMIT - body.len() {
            return Err(Bad::Answer(413, "request body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        input.read_exact(&mut body[start..]).map_err(timed_out)?;
        let mut end = [0u8; 2];
        input.read_exact(&mut end).map_err(timed_out)?;
        if &end != b"\r\n" {
            return Err(bad);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Result<(Request, bool), Bad> {
        read_request(&mut &bytes[..], &mut Vec::new())
    }

    #[test]
    fn requests_with_plain_and_chunked_bodies() {
        let (r, close) = read(
            b"POST /mcp?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\
              Authorization: Bearer t\r\n\r\nabcNEXT",
        )
        .unwrap();
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/mcp"));
        assert_eq!(r.body, b"abc");
        assert_eq!(r.header("authorization"), Some("Bearer t"));
        assert!(!close);
        let (r, _) = read(
            b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
              3;ext\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.body, b"abcde");
        let (_, close) = read(b"GET /mcp HTTP/1.0\r\n\r\n").unwrap();
        assert!(close);
        let (_, close) = read(b"\r\nGET /mcp HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
        assert!(close);
    }

    #[test]
    fn malformed_and_oversized_requests_are_refused() {
        for (bytes, status) in [
            (&b"GARBAGE\r\n\r\n"[..], 400),
            (b"GET mcp HTTP/1.1\r\n\r\n", 400),
            (b"GET /mcp HTTP/2\r\n\r\n", 400),
            (b"GET /mcp HTTP/1.1\r\nno colon\r\n\r\n", 400),
            (b"GET /mcp HTTP/1.1\r\nX: y", 400),
            (b"POST /mcp HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400),
            (
                b"POST /mcp HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
                413,
            ),
            (
                b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                400,
            ),
            (
                b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY",
                400,
            ),
        ] {
            match read(bytes) {
                Err(Bad::Answer(s, _)) => {
                    assert_eq!(s, status, "{}", String::from_utf8_lossy(bytes))
                }
                other => panic!("{}: {other:?}", String::from_utf8_lossy(bytes)),
            }
        }
        let mut huge = b"GET /mcp HTTP/1.1\r\n".to_vec();
        huge.extend(std::iter::repeat_n(b'a', HEAD_LIMIT));
        assert!(matches!(read(&huge), Err(Bad::Answer(431, _))));
        assert!(matches!(read(b""), Err(Bad::Gone)));
        // A body cut short by the client's leaving is no request.
        assert!(matches!(
            read(b"POST /mcp HTTP/1.1\r\nContent-Length: 9\r\n\r\nab"),
            Err(Bad::Gone)
        ));
    }

    #[test]
    fn a_chunk_size_near_the_largest_number_is_refused() {
        // `len + size` overflowed: a panic in a debug build, a huge
        // allocation in a release one (`chunk_sizes_of_any_width` below
        // finds it).
        let bytes = b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
                      1\r\na\r\nffffffffffffffff\r\nb\r\n0\r\n\r\n";
        assert!(matches!(read(bytes), Err(Bad::Answer(413, _))));
    }

    #[test]
    fn expect_100_continue_is_answered() {
        let mut interim = Vec::new();
        let bytes = b"POST /mcp HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}";
        let (r, _) = read_request(&mut &bytes[..], &mut interim).unwrap();
        assert_eq!(r.body, b"{}");
        assert_eq!(interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    }

    mod fuzz {
        //! Random and mutated requests (see `crate::fuzzing`): never a
        //! panic, never a body over the limit, and a well-formed request
        //! read back exactly, whatever its body and however it is chunked.

        use super::*;
        use crate::fuzzing::config;
        use proptest::prelude::*;

        fn chunked(body: &[u8], sizes: &[usize]) -> Vec<u8> {
            let mut out = Vec::new();
            let mut rest = body;
            let mut sizes = sizes.iter().cycle();
            while !rest.is_empty() {
                let n = (*sizes.next().unwrap_or(&1)).clamp(1, rest.len());
                out.extend(format!("{n:x}\r\n").as_bytes());
                out.extend(&rest[..n]);
                out.extend(b"\r\n");
                rest = &rest[n..];
            }
            out.extend(b"0\r\n\r\n");
            out
        }

        fn request(body: &[u8], sizes: Option<&[usize]>) -> Vec<u8> {
            let mut out =
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:9\r\nAuthorization: Bearer t\r\n".to_vec();
            match sizes {
                Some(sizes) => {
                    out.extend(b"Transfer-Encoding: chunked\r\n\r\n");
                    out.extend(chunked(body, sizes));
                }
                None => {
                    out.extend(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
                    out.extend(body);
                }
            }
            out
        }

        proptest! {
            #![proptest_config(config(256))]

            #[test]
            fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
                if let Ok((r, _)) = read(&bytes) {
                    prop_assert!(r.body.len() <= BODY_LIMIT);
                    prop_assert!(r.path.starts_with('/'));
                }
            }

            #[test]
            fn bodies_read_back_exactly(
                body in proptest::collection::vec(any::<u8>(), 0..300),
                sizes in proptest::option::of(proptest::collection::vec(1usize..50, 1..5)),
            ) {
                let bytes = request(&body, sizes.as_deref());
                let (r, close) = read(&bytes).unwrap();
                prop_assert_eq!(&r.body, &body);
                prop_assert_eq!(r.header("authorization"), Some("Bearer t"));
                prop_assert!(!close);
            }

            #[test]
            fn chunk_sizes_of_any_width(
                first in 0usize..20,
                size in prop_oneof![any::<u64>(), (0u64..64).prop_map(|d| u64::MAX - d)],
                digits in 1usize..20,
            ) {
                let size = format!("{size:0digits$x}");
                let mut bytes = b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
                bytes.extend(format!("{first:x}\r\n{}\r\n", "a".repeat(first)).as_bytes());
                bytes.extend(format!("{size}\r\nbody\r\n0\r\n\r\n").as_bytes());
                if let Ok((r, _)) = read(&bytes) {
                    prop_assert!(r.body.len() <= BODY_LIMIT);
                }
            }

            #[test]
            fn mutated_requests_never_panic(
                body in proptest::collection::vec(any::<u8>(), 0..100),
                chunks in any::<bool>(),
                at in any::<usize>(),
                byte in any::<u8>(),
                how in 0..3u8,
            ) {
                let mut bytes = request(&body, chunks.then_some(&[7usize][..]));
                let i = at % bytes.len();
                match how {
                    0 => bytes[i] = byte,
                    1 => bytes.insert(i, byte),
                    _ => {
                        bytes.remove(i);
                    }
                }
                if let Ok((r, _)) = read(&bytes) {
                    prop_assert!(r.body.len() <= BODY_LIMIT);
                }
            }
        }
    }
}
