//! Server-sent events, as the WHATWG HTML standard defines the
//! `text/event-stream` format: `event:` and `data:` fields, several `data:`
//! lines joined by newlines, comments starting with `:`, and a blank line
//! ending each event. All three providers stream their replies this way.

use std::io::BufRead;

/// One event: its type (`event:`, empty when none) and its data.
#[derive(Debug, PartialEq)]
pub struct Event {
    pub event: String,
    pub data: String,
}

/// Reads events from `reader` and hands each to `on_event`, which returns
/// false to stop early. Lines that are not UTF-8 are read lossily; a read
/// error is returned as it is.
pub fn read_events(
    reader: &mut dyn BufRead,
    on_event: &mut dyn FnMut(Event) -> bool,
) -> std::io::Result<()> {
    let mut parser = Parser::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            if let Some(event) = parser.finish() {
                on_event(event);
            }
            return Ok(());
        }
        if let Some(event) = parser.line(&String::from_utf8_lossy(&line)) {
            if !on_event(event) {
                return Ok(());
            }
        }
    }
}

/// The line-by-line state of the format.
#[derive(Default)]
struct Parser {
    event: String,
    data: Vec<String>,
}

impl Parser {
    /// Feeds one line (with or without its line ending); returns the event
    /// that a blank line completes.
    fn line(&mut self, line: &str) -> Option<Event> {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            return self.finish();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => self.data.push(value.to_string()),
            _ => {}
        }
        None
    }

    /// The pending event, if it has data (the standard drops events with none).
    fn finish(&mut self) -> Option<Event> {
        let event = std::mem::take(&mut self.event);
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
