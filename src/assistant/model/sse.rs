//! Server-sent events, as the WHATWG HTML standard defines the
//! `text/event-stream` format: `event:` and `data:` fields, several `data:`
//! lines joined by newlines, comments starting with `:`, and a blank line
//! ending each event; a line ends with CRLF, LF or a lone CR. All three
//! providers stream their replies this way. A line, and an event's data, are
//! capped: a stream that is garbage must not grow the host's memory.

use std::io::{self, BufRead};

/// The longest line read; far beyond any provider's event.
const MAX_LINE: usize = 4 << 20;
/// The most data one event may gather over its lines.
const MAX_EVENT: usize = 8 << 20;

/// Why reading a stream stopped short.
#[derive(Debug)]
pub enum ReadError {
    Io(io::Error),
    /// A line or an event beyond its cap: the stream is not server-sent events.
    TooBig(String),
}

/// One event: its type (`event:`, empty when none) and its data.
#[derive(Debug, PartialEq)]
pub struct Event {
    pub event: String,
    pub data: String,
}

/// Reads events from `reader` and hands each to `on_event`, which returns
/// false to stop early. Lines that are not UTF-8 are read lossily.
pub fn read_events(
    reader: &mut dyn BufRead,
    on_event: &mut dyn FnMut(Event) -> bool,
) -> Result<(), ReadError> {
    let mut parser = Parser::default();
    let mut line = Vec::new();
    let mut after_cr = false;
    loop {
        line.clear();
        if !next_line(reader, &mut line, &mut after_cr)? {
            if let Some(event) = parser.finish() {
                on_event(event);
            }
            return Ok(());
        }
        if let Some(event) = parser.line(&String::from_utf8_lossy(&line))? {
            if !on_event(event) {
                return Ok(());
            }
        }
    }
}

/// Reads one line, without its ending, into `line`; false at the end of the
/// stream with nothing read. `after_cr` carries a CR that ended the previous
/// line, so the LF of its CRLF is not taken for an empty line.
fn next_line(
    reader: &mut dyn BufRead,
    line: &mut Vec<u8>,
    after_cr: &mut bool,
) -> Result<bool, ReadError> {
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::Io(e)),
        };
        if buf.is_empty() {
            return Ok(!line.is_empty());
        }
        if std::mem::take(after_cr) && buf[0] == b'\n' {
            reader.consume(1);
            continue;
        }
        let end = buf.iter().position(|&b| b == b'\n' || b == b'\r');
        let take = end.unwrap_or(buf.len());
        line.extend_from_slice(&buf[..take]);
        if let Some(i) = end {
            *after_cr = buf[i] == b'\r';
        }
        reader.consume(end.map_or(take, |i| i + 1));
        if line.len() > MAX_LINE {
            return Err(ReadError::TooBig(format!(
                "a line of the event stream is longer than {MAX_LINE} bytes"
            )));
        }
        if end.is_some() {
            return Ok(true);
        }
    }
}

/// The line-by-line state of the format.
#[derive(Default)]
struct Parser {
    event: String,
    data: Vec<String>,
    size: usize,
}

impl Parser {
    /// Feeds one line (with or without its line ending); returns the event
    /// that a blank line completes.
    fn line(&mut self, line: &str) -> Result<Option<Event>, ReadError> {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            return Ok(self.finish());
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                self.size += value.len() + 1;
                if self.size > MAX_EVENT {
                    return Err(ReadError::TooBig(format!(
                        "an event of the stream carries more than {MAX_EVENT} bytes"
                    )));
                }
                self.data.push(value.to_string())
            }
            _ => {}
        }
        Ok(None)
    }

    /// The pending event, if it has data (the standard drops events with none).
    fn finish(&mut self) -> Option<Event> {
        let event = std::mem::take(&mut self.event);
        self.size = 0;
        if self.data.is_empty() {
            return None;
        }
        Some(Event {
            event,
            data: std::mem::take(&mut self.data).join("\n"),
        })
    }
}

#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Vec<Event> {
        let mut out = Vec::new();
        read_events(&mut text.as_bytes(), &mut |e| {
            out.push(e);
            true
        })
        .unwrap();
        out
    }

    #[test]
    fn fields_comments_and_blank_lines() {
        let got = events(
            ": keep-alive\r\nevent: message_start\r\ndata: {\"a\":1}\r\n\r\ndata:x\ndata: y\n\nevent: ping\n\n",
        );
        assert_eq!(
            got,
            vec![
                Event {
                    event: "message_start".into(),
                    data: "{\"a\":1}".into()
                },
                Event {
                    event: String::new(),
                    data: "x\ny".into()
                },
            ]
        );
    }

    #[test]
    fn last_event_without_blank_line_still_counts() {
        let got = events("data: [DONE]");
        assert_eq!(got[0].data, "[DONE]");
    }

    #[test]
    fn a_lone_cr_ends_a_line() {
        let got = events("data: a\r\rdata: b\r\n\r\ndata: c\r\r");
        let data: Vec<&str> = got.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data, ["a", "b", "c"]);
    }

    #[test]
    fn garbage_without_line_ends_is_refused_not_hoarded() {
        let mut garbage = std::io::repeat(b'x');
        let mut reader = std::io::BufReader::new(&mut garbage);
        match read_events(&mut reader, &mut |_| true) {
            Err(ReadError::TooBig(why)) => assert!(why.contains("line"), "{why}"),
            other => panic!("{other:?}"),
        }
        let line = format!("data: {}\n", "y".repeat(1 << 20));
        let mut many = std::io::Cursor::new(line.repeat(9));
        match read_events(&mut many, &mut |_| true) {
            Err(ReadError::TooBig(why)) => assert!(why.contains("event"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn stopping_early() {
        let mut n = 0;
        read_events(&mut "data: 1\n\ndata: 2\n\n".as_bytes(), &mut |_| {
            n += 1;
            false
        })
        .unwrap();
        assert_eq!(n, 1);
    }
}
