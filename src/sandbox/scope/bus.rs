//! The smallest D-Bus client that asks the person's systemd user manager
//! for a scope: a blocking connection on a Unix socket, the EXTERNAL
//! authentication, method calls with their replies, and the signals that
//! arrive meanwhile (docs/sandbox.md, decision 134).
//!
//! Why by hand: the crates that speak D-Bus either bring an async runtime
//! and some forty crates (zbus) or link the C library (dbus), for what is
//! here five method calls and one signal, in a process that runs before
//! every call's fence. Only what those need is read and written: the
//! header's fields, strings, object paths, signatures, unsigned integers,
//! booleans and arrays, in either byte order.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// How long one read or write may take: the bus answers in well under a
/// millisecond; a bus that stopped answering must not hold a call.
const WAIT: Duration = Duration::from_secs(5);

/// The largest message read (the bus's own limit is far above, but what
/// we read is a job's path or a signal of four fields).
const MAX_MESSAGE: usize = 1 << 20;

const METHOD_CALL: u8 = 1;
const METHOD_RETURN: u8 = 2;
const ERROR: u8 = 3;
pub const SIGNAL: u8 = 4;

/// What went wrong talking to the bus.
#[derive(Debug)]
pub enum Error {
    /// No bus at that address, or it broke off.
    Io(io::Error),
    /// The bus or the service answered with an error.
    Refused { name: String, message: String },
    /// Something that is not D-Bus as we know it.
    Protocol(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::Refused { name, message } if message.is_empty() => write!(f, "{name}"),
            Error::Refused { name, message } => write!(f, "{message} ({name})"),
            Error::Protocol(what) => write!(f, "not D-Bus as expected: {what}"),
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

/// A connection to a bus, authenticated and named.
pub struct Bus {
    stream: UnixStream,
    serial: u32,
    /// Signals that came while waiting for a reply.
    signals: VecDeque<Message>,
}

impl Bus {
    /// Connects to `address` (`unix:path=...` or `unix:abstract=...`, the
    /// first such entry of a list), authenticates as this process's user
    /// and says hello.
    pub fn connect(address: &str) -> Result<Bus, Error> {
        let stream = match socket_of(address)? {
            Socket::Path(path) => UnixStream::connect(path)?,
            Socket::Abstract(name) => {
                use std::os::linux::net::SocketAddrExt;
                let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
                UnixStream::connect_addr(&addr)?
            }
        };
        stream.set_read_timeout(Some(WAIT))?;
        stream.set_write_timeout(Some(WAIT))?;
        let mut bus = Bus {
            stream,
            serial: 0,
            signals: VecDeque::new(),
        };
        bus.authenticate()?;
        bus.call(
            "org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus",
            "Hello",
            "",
            Vec::new(),
        )?;
        Ok(bus)
    }

    /// The EXTERNAL mechanism: the bus checks the uid we claim against the
    /// socket's credentials.
    fn authenticate(&mut self) -> Result<(), Error> {
        // SAFETY: getuid has no failure.
        let uid = unsafe { libc::getuid() }.to_string();
        let hex: String = uid.bytes().map(|b| format!("{b:02x}")).collect();
        self.stream
            .write_all(format!("\0AUTH EXTERNAL {hex}\r\n").as_bytes())?;
        let line = self.line()?;
        if !line.starts_with("OK ") {
            return Err(Error::Refused {
                name: "authentication".into(),
                message: format!("the bus answered '{}'", line.trim_end()),
            });
        }
        self.stream.write_all(b"BEGIN\r\n")?;
        Ok(())
    }

    /// One line of the authentication exchange, read a byte at a time so
    /// that nothing of the messages after it is taken.
    fn line(&mut self) -> Result<String, Error> {
        let mut line = Vec::new();
        let mut byte = [0u8];
        while !line.ends_with(b"\r\n") {
            if line.len() > 4096 {
                return Err(Error::Protocol("an authentication line too long".into()));
            }
            self.stream.read_exact(&mut byte)?;
            line.push(byte[0]);
        }
        Ok(String::from_utf8_lossy(&line).into_owned())
    }

    /// Calls `member` of `interface` on `path` at `destination` with a
    /// body of `signature`, and waits for its reply.
    pub fn call(
        &mut self,
        destination: &str,
        path: &str,
        interface: &str,
        member: &str,
        signature: &str,
        body: Vec<u8>,
    ) -> Result<Message, Error> {
        self.serial += 1;
        let serial = self.serial;
        let message = encode_call(
            serial,
            destination,
            path,
            interface,
            member,
            signature,
            &body,
        );
        self.stream.write_all(&message)?;
        loop {
            let message = self.read()?;
            match message.kind {
                METHOD_RETURN | ERROR if message.reply_to != Some(serial) => {}
                METHOD_RETURN => return Ok(message),
                ERROR => {
                    let text = match message.signature.starts_with('s') {
                        true => message.body().string().unwrap_or_default(),
                        false => String::new(),
                    };
                    return Err(Error::Refused {
                        name: message.error.unwrap_or_default(),
                        message: text,
                    });
                }
                SIGNAL => self.signals.push_back(message),
                _ => {}
            }
        }
    }

    /// The next signal, waiting for it until `deadline`.
    pub fn signal(&mut self, deadline: Instant) -> Result<Message, Error> {
        loop {
            if let Some(signal) = self.signals.pop_front() {
                return Ok(signal);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::Io(io::Error::from(io::ErrorKind::TimedOut)));
            }
            self.stream.set_read_timeout(Some(left.min(WAIT)))?;
            let message = self.read()?;
            if message.kind == SIGNAL {
                return Ok(message);
            }
        }
    }

    /// Reads one whole message.
    fn read(&mut self) -> Result<Message, Error> {
        let mut fixed = [0u8; 16];
        self.stream.read_exact(&mut fixed)?;
        let big = match fixed[0] {
            b'l' => false,
            b'B' => true,
            other => return Err(Error::Protocol(format!("byte order mark {other:#x}"))),
        };
        let word = |at: usize| {
            let bytes = [fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]];
            match big {
                true => u32::from_be_bytes(bytes),
                false => u32::from_le_bytes(bytes),
            }
        };
        let (body_len, fields_len) = (word(4) as usize, word(12) as usize);
        let header_len = (16 + fields_len).next_multiple_of(8);
        let total = header_len + body_len;
        if total > MAX_MESSAGE {
            return Err(Error::Protocol(format!("a message of {total} bytes")));
        }
        let mut whole = vec![0u8; total];
        whole[..16].copy_from_slice(&fixed);
        self.stream.read_exact(&mut whole[16..])?;
        Message::parse(whole, big, header_len)
    }
}

/// Where a bus address says the socket is.
enum Socket {
    Path(String),
    Abstract(String),
}

/// The first `unix:` entry of a D-Bus address list with a path or an
/// abstract name (values %-escaped as the specification allows).
fn socket_of(address: &str) -> Result<Socket, Error> {
    for entry in address.split(';') {
        let Some(pairs) = entry.strip_prefix("unix:") else {
            continue;
        };
        for pair in pairs.split(',') {
            if let Some(path) = pair.strip_prefix("path=") {
                return Ok(Socket::Path(unescape(path)));
            }
            if let Some(name) = pair.strip_prefix("abstract=") {
                return Ok(Socket::Abstract(unescape(name)));
            }
        }
    }
    Err(Error::Protocol(format!(
        "no unix:path= or unix:abstract= in the bus address '{address}'"
    )))
}

/// An address value with its `%XX` escapes undone.
fn unescape(value: &str) -> String {
    percent_encoding::percent_decode_str(value)
        .decode_utf8_lossy()
        .into_owned()
}

/// A method call, header and body, ready to send.
fn encode_call(
    serial: u32,
    destination: &str,
    path: &str,
    interface: &str,
    member: &str,
    signature: &str,
    body: &[u8],
) -> Vec<u8> {
    let mut w = Writer::default();
    w.byte(b'l');
    w.byte(METHOD_CALL);
    w.byte(0);
    w.byte(1);
    w.u32(body.len() as u32);
    w.u32(serial);
    w.array(8, |w| {
        let mut field = |code: u8, kind: &str, value: &str| {
            w.structure(|w| {
                w.byte(code);
                w.signature(kind);
                match kind {
                    "g" => w.signature(value),
                    _ => w.string(value),
                }
            })
        };
        field(1, "o", path);
        field(2, "s", interface);
        field(3, "s", member);
        field(6, "s", destination);
        if !signature.is_empty() {
            field(8, "g", signature);
        }
    });
    w.pad(8);
    w.buf.extend_from_slice(body);
    w.buf
}

/// A message read from the bus: what its header says, and its body.
#[derive(Debug)]
pub struct Message {
    pub kind: u8,
    pub reply_to: Option<u32>,
    pub path: Option<String>,
    pub interface: Option<String>,
    pub member: Option<String>,
    pub error: Option<String>,
    pub signature: String,
    whole: Vec<u8>,
    big: bool,
    body_at: usize,
}

impl Message {
    fn parse(whole: Vec<u8>, big: bool, body_at: usize) -> Result<Message, Error> {
        let mut message = Message {
            kind: whole[1],
            reply_to: None,
            path: None,
            interface: None,
            member: None,
            error: None,
            signature: String::new(),
            whole: Vec::new(),
            big,
            body_at,
        };
        let mut r = Reader {
            buf: &whole[..body_at],
            pos: 12,
            big,
        };
        let fields_end = 16 + r.u32()? as usize;
        while r.pos < fields_end {
            r.pad(8);
            let code = r.byte()?;
            let kind = r.signature()?;
            match kind.as_str() {
                "s" | "o" => {
                    let value = r.string()?;
                    match code {
                        1 => message.path = Some(value),
                        2 => message.interface = Some(value),
                        3 => message.member = Some(value),
                        4 => message.error = Some(value),
                        _ => {}
                    }
                }
                "g" => {
                    let value = r.signature()?;
                    if code == 8 {
                        message.signature = value;
                    }
                }
                "u" => {
                    let value = r.u32()?;
                    if code == 5 {
                        message.reply_to = Some(value);
                    }
                }
                other => return Err(Error::Protocol(format!("a header field of type '{other}'"))),
            }
        }
        message.whole = whole;
        Ok(message)
    }

    /// A reader over the body, from its start.
    pub fn body(&self) -> Reader<'_> {
        Reader {
            buf: &self.whole[self.body_at..],
            pos: 0,
            big: self.big,
        }
    }
}

/// Reads values off a body (or a header), aligned as D-Bus aligns them.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    big: bool,
}

impl Reader<'_> {
    fn pad(&mut self, align: usize) {
        self.pos = self.pos.next_multiple_of(align);
    }

    fn take(&mut self, n: usize) -> Result<&[u8], Error> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or_else(|| Error::Protocol("a message cut short".into()))?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    pub fn byte(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }

    pub fn u32(&mut self) -> Result<u32, Error> {
        self.pad(4);
        let bytes: [u8; 4] = self.take(4)?.try_into().unwrap_or_default();
        Ok(match self.big {
            true => u32::from_be_bytes(bytes),
            false => u32::from_le_bytes(bytes),
        })
    }

    /// A string or an object path.
    pub fn string(&mut self) -> Result<String, Error> {
        let len = self.u32()? as usize;
        let text = String::from_utf8_lossy(self.take(len)?).into_owned();
        self.take(1)?;
        Ok(text)
    }

    pub fn signature(&mut self) -> Result<String, Error> {
        let len = self.byte()? as usize;
        let text = String::from_utf8_lossy(self.take(len)?).into_owned();
        self.take(1)?;
        Ok(text)
    }
}

/// Writes values as D-Bus lays them out (little-endian), each aligned to
/// its size from the start of the message or the body (which starts on a
/// multiple of eight, so both count alike).
#[derive(Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn pad(&mut self, align: usize) {
        let len = self.buf.len().next_multiple_of(align);
        self.buf.resize(len, 0);
    }

    pub fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    pub fn u32(&mut self, v: u32) {
        self.pad(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub fn u64(&mut self, v: u64) {
        self.pad(8);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A string or an object path.
    pub fn string(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }

    pub fn signature(&mut self, s: &str) {
        self.buf.push(s.len() as u8);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }

    /// An array whose elements are aligned to `align`, written by `f`.
    pub fn array(&mut self, align: usize, f: impl FnOnce(&mut Writer)) {
        self.u32(0);
        let len_at = self.buf.len() - 4;
        self.pad(align);
        let start = self.buf.len();
        f(self);
        let len = (self.buf.len() - start) as u32;
        self.buf[len_at..len_at + 4].copy_from_slice(&len.to_le_bytes());
    }

    pub fn structure(&mut self, f: impl FnOnce(&mut Writer)) {
        self.pad(8);
        f(self);
    }
}

/// A reader over `buf` from its start, for the tests of what is built on
/// this module.
#[cfg(test)]
pub fn tests_reader(buf: &[u8]) -> Reader<'_> {
    Reader {
        buf,
        pos: 0,
        big: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_name_their_socket() {
        let path = socket_of("unix:path=/run/user/1000/bus").unwrap();
        assert!(matches!(path, Socket::Path(p) if p == "/run/user/1000/bus"));
        let listed = socket_of("tcp:host=x,port=1;unix:abstract=/tmp/dbus-%41b,guid=1").unwrap();
        assert!(matches!(listed, Socket::Abstract(n) if n == "/tmp/dbus-Ab"));
        let none = socket_of("tcp:host=localhost,port=4").err().unwrap();
        assert!(none.to_string().contains("no unix:path="), "{none}");
    }

    #[test]
    fn a_call_is_laid_out_as_the_specification_says() {
        let mut body = Writer::default();
        body.string("a");
        let m = encode_call(7, "d", "/p", "i.f", "M", "s", &body.buf);
        assert_eq!(&m[..4], b"l\x01\x00\x01");
        assert_eq!(u32::from_le_bytes(m[4..8].try_into().unwrap()), 6);
        assert_eq!(u32::from_le_bytes(m[8..12].try_into().unwrap()), 7);
        assert_eq!(m.len() % 8, 6, "header padded to eight, then the body");
        // Read back through the parser, as a reply would be.
        let fields = u32::from_le_bytes(m[12..16].try_into().unwrap()) as usize;
        let body_at = (16 + fields).next_multiple_of(8);
        let parsed = Message::parse(m.clone(), false, body_at).unwrap();
        assert_eq!(parsed.path.as_deref(), Some("/p"));
        assert_eq!(parsed.interface.as_deref(), Some("i.f"));
        assert_eq!(parsed.member.as_deref(), Some("M"));
        assert_eq!(parsed.signature, "s");
        assert_eq!(parsed.body().string().unwrap(), "a");
    }

    #[test]
    fn arrays_count_their_bytes_after_the_padding() {
        let mut w = Writer::default();
        w.array(8, |w| {
            w.structure(|w| {
                w.string("ab");
            })
        });
        // length 4 bytes, 4 of padding to eight, then "ab": 4 + 2 + NUL.
        assert_eq!(&w.buf[..4], &7u32.to_le_bytes());
        assert_eq!(w.buf.len(), 8 + 7);
    }

    #[test]
    fn a_short_message_is_an_error_not_a_panic() {
        let mut r = Reader {
            buf: &[3, 0, 0, 0, b'a'],
            pos: 0,
            big: false,
        };
        assert!(r.string().is_err());
    }
}
