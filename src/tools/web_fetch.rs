//! web_fetch: fetch a URL and answer its content as markdown.
//!
//! Only http and https, and only hosts on the public internet (`web::guard`:
//! every host, the first and each redirect's, resolved and checked, and the
//! connection made to the checked addresses). Redirects followed (at most
//! 10) and the final URL answered; limits of `web::http` (20 s, 10 MiB, cut
//! bodies say so). HTML and XHTML become markdown (`web::markdown`) with the
//! page's `<title>`; other text types come back as text with an empty title;
//! binary types are refused by name. `offset` (1-based) and `limit` count
//! lines of the final content.
//!
//! Printed whole (no cap on the answer), the answer is written as the
//! markdown is made, never held: the process holds the page and a few
//! pieces of markdown, not the page and its markdown. Under the host's
//! cap, the markdown streams past a sample of what the cut can show, so
//! the process holds the page and O(cap).

use std::io::{self, Write};

use memchr::{memchr, memchr_iter};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{ErrorCode, ToolError};
use crate::tool::{Answer, Env, Family, Tool};

use super::web::content::{self, ContentType, Kind};
use super::web::http::{self, Client, Failure, BODY_CAP};
use super::web::markdown::{Plan, PIECE};
use super::web::stub;
use crate::args;
use crate::truncate;

pub struct WebFetch;

const SCHEMA: &str = r#"{
  "name": "web_fetch",
  "description": "Fetches content from a specified URL and returns it as markdown. Converts HTML to markdown using libxml2. Supports pagination via offset and limit parameters similar to file_read.",
  "parameters": {
    "type": "object",
    "properties": {
      "url": {
        "type": "string",
        "format": "uri",
        "description": "The URL to fetch content from"
      },
      "offset": {
        "type": "integer",
        "description": "Line number to start reading from (1-based)",
        "minimum": 1
      },
      "limit": {
        "type": "integer",
        "description": "Maximum number of lines to return",
        "minimum": 1
      }
    },
    "required": ["url"]
  },
  "annotations": {"readOnlyHint": true, "openWorldHint": true}
}"#;

/// What we can use, best first; servers that negotiate send HTML.
const ACCEPT: &str = "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5";

/// The arguments, as the schema states them.
#[derive(Deserialize)]
struct Args {
    url: String,
    /// The 1-based line to start from.
    #[serde(default = "first_line")]
    offset: u64,
    limit: Option<u64>,
}

fn first_line() -> u64 {
    1
}

impl Tool for WebFetch {
    fn name(&self) -> &'static str {
        "web_fetch"
    }
    fn command(&self) -> &'static str {
        "web-fetch"
    }
    fn schema(&self) -> &'static str {
        SCHEMA
    }
    fn family(&self) -> Family {
        Family::Web
    }

    fn execute(&self, args: &Map<String, Value>, env: &Env) -> Result<Value, ToolError> {
        let fetched = fetch(args, env)?;
        let mut content = String::new();
        fetched.content(&mut |piece| content.push_str(piece));
        // Built by moving the strings in: `json!` would copy each one.
        let mut map = Map::new();
        map.insert("success".into(), Value::Bool(true));
        map.insert("url".into(), Value::String(fetched.url));
        map.insert("title".into(), Value::String(fetched.title));
        map.insert("content".into(), Value::String(content));
        Ok(Value::Object(map))
    }

    fn answer(&self, args: &Map<String, Value>, env: &Env) -> Result<Answer, ToolError> {
        let fetched = fetch(args, env)?;
        Ok(match env.max_output() {
            None => Answer::Written(Box::new(move |out| fetched.write(out))),
            Some(cap) => Answer::Value(fetched.fitted(cap)),
        })
    }
}

/// A response read and ready to answer: everything that can fail has.
struct Fetched {
    /// The final URL, after redirects.
    url: String,
    title: String,
    body: Body,
    /// The body was longer than `BODY_CAP` and was cut there.
    truncated: bool,
    lines: Lines,
}

enum Body {
    /// A page, and what the first pass over it found; its markdown is
    /// made while it is answered.
    Html { html: String, plan: Plan },
    /// Text answered as it is, its CRLF line ends made LF.
    Text(String),
    /// Markdown answered as it is (the stub page).
    Markdown(String),
}

/// Fetches and reads the page the arguments name.
fn fetch(args: &Map<String, Value>, env: &Env) -> Result<Fetched, ToolError> {
    let Args { url, offset, limit } = args::typed(args)?;
    let raw_url = url.as_str();
    let url = http::parse_url(raw_url).map_err(|why| {
        ToolError::new(
            ErrorCode::InvalidUrl,
            format!("Invalid URL '{raw_url}': {why}"),
        )
    })?;
    let lines = Lines::new(offset, limit);
    if env.stub() {
        let page = stub::page();
        return Ok(Fetched {
            url: url.to_string(),
            title: page.title,
            body: Body::Markdown(page.markdown),
            truncated: false,
            lines,
        });
    }

    let client = Client::new(env)?;
    let response =
        client
            .get(&url, &[("Accept", ACCEPT)], &[])
            .map_err(|failure| match failure {
                Failure::Network(reason) => ToolError::new(
                    ErrorCode::NetworkError,
                    format!("Failed to fetch URL: {reason}"),
                ),
                Failure::Decode(reason) => ToolError::new(
                    ErrorCode::ParseError,
                    format!("Failed to parse response: {reason}"),
                ),
                Failure::Blocked(reason) => ToolError::new(
                    ErrorCode::AddressBlocked,
                    format!("Refused to fetch URL: {reason}"),
                ),
            })?;
    if response.status >= 400 {
        return Err(ToolError::new(
            ErrorCode::HttpError,
            http::status_text(response.status),
        ));
    }

    let content_type = ContentType::parse(response.content_type.as_deref().unwrap_or(""));
    let kind = content::classify(&content_type.mime, &response.body);
    let charset = content_type.charset.as_deref();
    let (title, body) = match kind {
        Kind::Binary => return Err(unsupported(&content_type.mime)),
        Kind::Html => {
            let html = content::decode(response.body, charset, kind);
            let mut plan = Plan::of(&html, &response.url);
            (std::mem::take(&mut plan.title), Body::Html { html, plan })
        }
        Kind::Text => (
            String::new(),
            Body::Text(content::decode(response.body, charset, kind)),
        ),
    };
    Ok(Fetched {
        url: response.url,
        title,
        body,
        truncated: response.truncated,
        lines,
    })
}

impl Fetched {
    /// The answer's `content`, handed to `out` in pieces: the markdown or
    /// the text, a note when the body was cut, and of those only the lines
    /// asked for.
    fn content(&self, out: &mut dyn FnMut(&str)) {
        let mut content = Content {
            lines: self.lines,
            any: false,
            out,
        };
        match &self.body {
            Body::Html { html, plan } => plan.write(html, PIECE, &mut |piece| content.push(piece)),
            Body::Text(text) => {
                for (i, part) in text.split("\r\n").enumerate() {
                    if i > 0 {
                        content.push("\n");
                    }
                    content.push(part);
                }
            }
            Body::Markdown(markdown) => content.push(markdown),
        }
        if self.truncated {
            if content.any {
                content.push("\n\n");
            }
            content.push(&format!(
                "[Content truncated: the response is larger than {} MiB; only its first {} MiB were read.]",
                BODY_CAP >> 20,
                BODY_CAP >> 20
            ));
        }
    }

    /// The value `execute` returns, fitted to `cap` (`truncate::fit`),
    /// made while keeping of the content only what the cut can show
    /// (`truncate::Sample`): the page is let go before the answer is built.
    fn fitted(mut self, cap: usize) -> Value {
        let mut map = Map::new();
        map.insert("success".into(), Value::Bool(true));
        map.insert("url".into(), Value::String(std::mem::take(&mut self.url)));
        map.insert(
            "title".into(),
            Value::String(std::mem::take(&mut self.title)),
        );
        map.insert("content".into(), Value::Null);
        let mut answer = Value::Object(map);
        let Some(mut sample) = truncate::Sample::new(&answer, "content", cap) else {
            // A URL or title longer than the cap: how it is cut depends on
            // the content's whole length, so the content is held whole.
            let mut content = String::new();
            self.content(&mut |piece| content.push_str(piece));
            answer["content"] = Value::String(content);
            truncate::fit(&mut answer, cap);
            return answer;
        };
        self.content(&mut |piece| sample.push(piece));
        drop(self.body);
        truncate::fit_sample(&mut answer, "content", sample);
        answer
    }

    /// Writes the answer's JSON text, the text of the value `execute`
    /// returns, byte for byte, making the content as it goes.
    fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(b"{\"success\":true,\"url\":")?;
        serde_json::to_writer(&mut *out, &self.url)?;
        out.write_all(b",\"title\":")?;
        serde_json::to_writer(&mut *out, &self.title)?;
        out.write_all(b",\"content\":\"")?;
        let mut written = Ok(());
        self.content(&mut |piece| {
            if written.is_ok() {
                written = escape(piece, out);
            }
        });
        written?;
        out.write_all(b"\"}")
    }
}

/// The content as it goes by: whether any came (the note of a cut body
/// is set apart from it) and the lines it keeps.
struct Content<'a> {
    lines: Lines,
    any: bool,
    out: &'a mut dyn FnMut(&str),
}

impl Content<'_> {
    fn push(&mut self, piece: &str) {
        self.any |= !piece.is_empty();
        self.lines.filter(piece, self.out);
    }
}

/// The lines `offset..offset+limit` (1-based, joined by their `\n`) of a
/// text that goes by in pieces; nothing past its end.
#[derive(Debug, Clone, Copy)]
struct Lines {
    /// The first line kept, counted from 0.
    first: u64,
    /// The line after the last one kept (`u64::MAX`: no limit).
    end: u64,
    /// The line the text has reached.
    line: u64,
}

impl Lines {
    fn new(offset: u64, limit: Option<u64>) -> Lines {
        let first = offset.saturating_sub(1);
        Lines {
            first,
            end: limit.map_or(u64::MAX, |l| first.saturating_add(l)),
            line: 0,
        }
    }

    /// Hands `out` what `piece` holds of the lines kept: they go by
    /// whole, newlines included, but for the one that ends the last line
    /// kept and the ones that end lines before the first.
    fn filter(&mut self, piece: &str, out: &mut dyn FnMut(&str)) {
        let mut rest = piece;
        while self.line < self.first {
            let Some(i) = memchr(b'\n', rest.as_bytes()) else {
                return;
            };
            rest = &rest[i + 1..];
            self.line += 1;
        }
        if self.line >= self.end || rest.is_empty() {
            return;
        }
        if self.end != u64::MAX {
            for i in memchr_iter(b'\n', rest.as_bytes()) {
                self.line += 1;
                if self.line == self.end {
                    if i > 0 {
                        out(&rest[..i]);
                    }
                    return;
                }
            }
        }
        out(rest);
    }
}

/// Writes `text` as the inside of a JSON string, escaped exactly as
/// serde_json escapes it (`"`, `\\`, and the control characters, by their
/// short escape where JSON has one), so that a written answer is the text
/// of the value.
fn escape(text: &str, out: &mut dyn Write) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if i + 8 <= bytes.len() {
            // Eight bytes at a time while none needs escaping.
            let mut word = [0; 8];
            word.copy_from_slice(&bytes[i..i + 8]);
            let flagged = needs_escape(u64::from_le_bytes(word));
            if flagged == 0 {
                i += 8;
                continue;
            }
            i += flagged.trailing_zeros() as usize / 8;
        }
        let b = bytes[i];
        i += 1;
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        out.write_all(&bytes[start..i - 1])?;
        start = i;
        match b {
            b'"' => out.write_all(b"\\\"")?,
            b'\\' => out.write_all(b"\\\\")?,
            b'\n' => out.write_all(b"\\n")?,
            b'\r' => out.write_all(b"\\r")?,
            b'\t' => out.write_all(b"\\t")?,
            0x08 => out.write_all(b"\\b")?,
            0x0c => out.write_all(b"\\f")?,
            _ => out.write_all(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ])?,
        }
    }
    out.write_all(&bytes[start..])
}

/// The high bit of each byte of `word` that JSON escapes: a control
/// character, `"` or `\\`. Exact: no carry crosses a byte.
fn needs_escape(word: u64) -> u64 {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte below `n` (at most 0x80).
    let below = |word: u64, n: u8| !(((word & !HIGH) + LOW * u64::from(0x80 - n)) | word) & HIGH;
    below(word, 0x20) | below(word ^ (LOW * 0x22), 1) | below(word ^ (LOW * 0x5c), 1)
}

fn unsupported(mime: &str) -> ToolError {
    let message = if mime.is_empty() || mime.ends_with("octet-stream") {
        let declared = if mime.is_empty() {
            "no Content-Type".to_string()
        } else {
            format!("Content-Type {mime}")
        };
        format!(
            "Unsupported content: the response has {declared} and its body is binary; web_fetch reads HTML and text only"
        )
    } else {
        format!(
            "Unsupported content type: {mime} is binary; web_fetch reads HTML and text (plain, markdown, JSON, XML, ...) only"
        )
    };
    ToolError::new(ErrorCode::UnsupportedContent, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The lines of `text` a window keeps, the text handed over in pieces
    /// cut every `cut` bytes (on character boundaries).
    fn lines(text: &str, offset: u64, limit: Option<u64>, cut: usize) -> String {
        let mut window = Lines::new(offset, limit);
        let mut kept = String::new();
        let mut rest = text;
        while !rest.is_empty() {
            let mut at = cut.min(rest.len());
            while !rest.is_char_boundary(at) {
                at += 1;
            }
            window.filter(&rest[..at], &mut |piece| {
                assert!(!piece.is_empty());
                kept.push_str(piece)
            });
            rest = &rest[at..];
        }
        kept
    }

    #[test]
    fn offset_is_one_based_and_limit_counts_lines() {
        let text = "l1\nl2\nl3\nl4";
        for cut in [1, 2, 3, 100] {
            assert_eq!(lines(text, 1, None, cut), text);
            assert_eq!(lines(text, 3, None, cut), "l3\nl4");
            assert_eq!(lines(text, 2, Some(2), cut), "l2\nl3");
            assert_eq!(lines(text, 1, Some(1), cut), "l1");
            assert_eq!(lines(text, 4, Some(10), cut), "l4");
            assert_eq!(lines(text, 5, None, cut), "");
            assert_eq!(lines(text, u64::MAX, Some(u64::MAX), cut), "");
            assert_eq!(lines("", 1, Some(3), cut), "");
        }
    }

    #[test]
    fn lines_are_those_of_the_whole_text_however_it_is_cut() {
        for text in [
            "",
            "\n",
            "\n\n",
            "a\n",
            "\na",
            "é\n\nü\nx\n",
            "one\ntwo\n\nfour\nfive",
        ] {
            for offset in 0..8 {
                for limit in [None, Some(0), Some(1), Some(2), Some(5)] {
                    let skip = usize::try_from(offset.max(1) - 1).unwrap();
                    let take = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap());
                    let want = text
                        .split('\n')
                        .skip(skip)
                        .take(take)
                        .collect::<Vec<_>>()
                        .join("\n");
                    for cut in 1..=text.len().max(1) {
                        assert_eq!(
                            lines(text, offset, limit, cut),
                            want,
                            "{text:?} offset {offset} limit {limit:?} cut {cut}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn escapes_as_serde_json_does() {
        let mut text: String = (0u8..0x80).map(char::from).collect();
        text.push_str("é€𝄞 \"quoted\" back\\slash \u{2028}\u{7f}");
        let mut written = Vec::new();
        escape(&text, &mut written).unwrap();
        let value = serde_json::to_string(&text).unwrap();
        assert_eq!(
            String::from_utf8(written).unwrap(),
            value[1..value.len() - 1]
        );
        // What needs escaping at every place of the eight-byte steps, and
        // bytes just beside what does (`!`, `#`, `[`, `]`, DEL, `\u{80}`).
        for special in [
            "\"", "\\", "\n", "\u{1f}", "\0", "!", "#", "[", "]", "\u{7f}", "\u{80}",
        ] {
            for at in 0..20 {
                let text = format!("{}{special}{}", "a".repeat(at), "b".repeat(20 - at));
                let mut written = Vec::new();
                escape(&text, &mut written).unwrap();
                let value = serde_json::to_string(&text).unwrap();
                assert_eq!(
                    String::from_utf8(written).unwrap(),
                    value[1..value.len() - 1]
                );
            }
        }
    }

    /// The written answer is byte for byte the value's text.
    fn both(fetched: &Fetched) -> (String, String) {
        let mut written = Vec::new();
        fetched.write(&mut written).unwrap();
        let mut content = String::new();
        fetched.content(&mut |piece| content.push_str(piece));
        let value = json!({"success": true, "url": fetched.url, "title": fetched.title,
                           "content": content});
        (String::from_utf8(written).unwrap(), value.to_string())
    }

    #[test]
    fn a_written_answer_is_the_value_s_text() {
        let html = "<title>A \"t\"</title><main><h1>Head</h1>\n<p>one\ttwo</p><pre>a\n\tb\\c</pre>\
                    <p><a href=\"/x\">link</a> <code>x`y</code></p></main>"
            .to_string();
        let page = |truncated, offset, limit| {
            let mut plan = Plan::of(&html, "http://example.com/a?b=\"c\"");
            Fetched {
                url: "http://example.com/a?b=\"c\"".into(),
                title: std::mem::take(&mut plan.title),
                body: Body::Html {
                    html: html.clone(),
                    plan,
                },
                truncated,
                lines: Lines::new(offset, limit),
            }
        };
        let text = |body: &str, truncated| Fetched {
            url: "http://example.com/t".into(),
            title: String::new(),
            body: Body::Text(body.into()),
            truncated,
            lines: Lines::new(1, None),
        };
        let (written, value) = both(&page(false, 1, None));
        assert_eq!(written, value);
        assert!(written.starts_with(
            r##"{"success":true,"url":"http://example.com/a?b=\"c\"","title":"A \"t\"","content":"# Head\n\n"##
        ));
        for (truncated, offset, limit) in [(true, 1, None), (false, 3, Some(2)), (true, 5, None)] {
            let (written, value) = both(&page(truncated, offset, limit));
            assert_eq!(written, value);
        }
        let (written, value) = both(&text("a\r\nb\rc\r\n", false));
        assert_eq!(written, value);
        assert!(written.ends_with(r#""content":"a\nb\rc\n"}"#));
        let (written, value) = both(&text("", true));
        assert_eq!(written, value);
        assert!(written
            .contains(r#""content":"[Content truncated: the response is larger than 10 MiB"#));
        let (written, _) = both(&text("x", true));
        assert!(written.contains(r#""content":"x\n\n[Content truncated"#));
    }

    /// The answer `fitted` gives, and the one the whole value fitted
    /// gives (`execute`'s, fitted by the default `Tool::answer`).
    fn fitted_both(make: &dyn Fn() -> Fetched, cap: usize) -> (String, String) {
        let fetched = make();
        let mut content = String::new();
        fetched.content(&mut |piece| content.push_str(piece));
        let mut whole = json!({"success": true, "url": fetched.url, "title": fetched.title,
                               "content": content});
        truncate::fit(&mut whole, cap);
        (make().fitted(cap).to_string(), whole.to_string())
    }

    #[test]
    fn a_fitted_answer_is_the_whole_value_fitted() {
        // Long enough to be cut under every cap, with escapes and
        // multi-byte text wherever a cut may fall.
        let mut html = String::from("<title>T \"q\"</title><main>");
        for i in 0..400 {
            html.push_str(&format!(
                "<h2>Section {i} é€</h2><p>text\u{1}\u{0} \"q\" back\\slash 𝄞 {}</p>\
                 <pre>a\tb\n{}</pre>",
                "word ".repeat(i % 37),
                "€".repeat(i % 53)
            ));
        }
        html.push_str("</main>");
        for (url, title) in [
            ("http://example.com/a".to_string(), None),
            (format!("http://example.com/{}", "u".repeat(3000)), None),
            ("http://example.com/b".to_string(), Some("t\"€".repeat(700))),
        ] {
            for (truncated, offset, limit) in [
                (false, 1, None),
                (true, 1, None),
                (false, 7, Some(300)),
                (true, 1000, None),
                (false, 100_000, None),
            ] {
                let make = || {
                    let mut plan = Plan::of(&html, &url);
                    let found = std::mem::take(&mut plan.title);
                    Fetched {
                        url: url.clone(),
                        title: title.clone().unwrap_or(found),
                        body: Body::Html {
                            html: html.clone(),
                            plan,
                        },
                        truncated,
                        lines: Lines::new(offset, limit),
                    }
                };
                for cap in [0, 1, 100, 250, 1000, 2047, 4096, 10_000, 65_536, 1 << 20] {
                    let (fitted, whole) = fitted_both(&make, cap);
                    assert!(
                        fitted == whole,
                        "cap {cap}, offset {offset}, url {} bytes:\n{fitted}\n{whole}",
                        url.len()
                    );
                }
            }
        }
        let text = || Fetched {
            url: "http://example.com/t".into(),
            title: String::new(),
            body: Body::Text("line\r\n\u{0}\"é\"\r\n".repeat(5000)),
            truncated: false,
            lines: Lines::new(2, Some(7000)),
        };
        for cap in [300, 4096, 100_000] {
            let (fitted, whole) = fitted_both(&text, cap);
            assert_eq!(fitted, whole);
        }
    }

    #[test]
    fn unsupported_names_the_type() {
        assert_eq!(
            unsupported("application/pdf").message,
            "Unsupported content type: application/pdf is binary; web_fetch reads HTML and text (plain, markdown, JSON, XML, ...) only"
        );
        assert!(unsupported("").message.starts_with(
            "Unsupported content: the response has no Content-Type and its body is binary"
        ));
    }

    #[test]
    fn stub_answers_without_network_and_pages_its_lines() {
        let env = Env::from_pairs([("IKIGAI_STUB", "1")]);
        let args = json!({"url": "http://127.0.0.1:1/never", "offset": 3, "limit": 1});
        let out = WebFetch.execute(args.as_object().unwrap(), &env).unwrap();
        assert_eq!(
            out,
            json!({"success": true, "url": "http://127.0.0.1:1/never", "title": "Example Domain",
                   "content": "A fixed stub page: SHELLCLAW_STUB or IKIGAI_STUB is set, so nothing was fetched."})
        );
    }
}
