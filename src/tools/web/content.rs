//! What kind of content a response holds and how to turn its bytes into
//! text (web_fetch):
//!
//! - HTML and XHTML are converted to markdown, other text types (plain,
//!   markdown, JSON, XML, CSV, ...) are returned as text, binary types
//!   (images, audio, video, fonts, PDF, archives) are refused by name;
//! - a missing or generic (`application/octet-stream`) type is decided by
//!   looking at the bytes;
//! - the charset comes from a byte-order mark, else the `Content-Type`
//!   header, else (HTML) a `<meta charset>` near the top, else UTF-8, the way
//!   browsers decide it; an HTML page that declares none and is not UTF-8
//!   is windows-1252 (what browsers assume of such pages); encoding_rs
//!   decodes, with U+FFFD for bad bytes.

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Html,
    Text,
    Binary,
}

/// A parsed `Content-Type`: the lowercase media type and its charset.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ContentType {
    pub mime: String,
    pub charset: Option<String>,
}

impl ContentType {
    pub fn parse(header: &str) -> Self {
        let mut parts = header.split(';');
        let mime = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let charset = parts.find_map(|param| {
            let (key, value) = param.split_once('=')?;
            key.trim()
                .eq_ignore_ascii_case("charset")
                .then(|| value.trim().trim_matches(['"', '\'']).to_string())
        });
        ContentType { mime, charset }
    }
}

/// The kind of a body of media type `mime` (empty when the server sent none).
pub fn classify(mime: &str, body: &[u8]) -> Kind {
    match mime {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        "" | "application/octet-stream" | "binary/octet-stream" => sniff(body),
        _ if is_text(mime) => Kind::Text,
        _ => Kind::Binary,
    }
}

fn is_text(mime: &str) -> bool {
    const TEXT_APPLICATIONS: &[&str] = &[
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/x-sh",
        "application/x-httpd-php",
        "application/toml",
        "application/yaml",
        "application/x-yaml",
        "application/sql",
        "application/graphql",
        "application/x-ndjson",
        "application/x-www-form-urlencoded",
        "application/rtf",
    ];
    (mime.starts_with("text/") && mime != "text/html")
        || TEXT_APPLICATIONS.contains(&mime)
        || (mime.starts_with("application/") && (mime.ends_with("+json") || mime.ends_with("+xml")))
}

/// A body without a useful type: HTML if it opens like HTML, text if its
/// start is UTF-8 without NUL bytes, binary otherwise.
fn sniff(body: &[u8]) -> Kind {
    let head = &body[..body.len().min(8192)];
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map_or(&[][..], |i| &head[i..]);
    let opens_with =
        |tag: &[u8]| start.len() >= tag.len() && start[..tag.len()].eq_ignore_ascii_case(tag);
    if opens_with(b"<!doctype html") || opens_with(b"<html") {
        return Kind::Html;
    }
    let utf8 = match std::str::from_utf8(head) {
        Ok(_) => true,
        // A character cut by the 8 KiB window is still text.
        Err(e) => e.error_len().is_none(),
    };
    if utf8 && !head.contains(&0) {
        Kind::Text
    } else {
        Kind::Binary
    }
}

/// Decodes a body to UTF-8 text: BOM, then the header's charset, then (for
/// HTML) a `<meta>` charset; without any, UTF-8 if the bytes are UTF-8,
/// else (for HTML) windows-1252, as browsers read old undeclared pages.
/// A UTF-8 body becomes the text without a copy.
pub fn decode(mut body: Vec<u8>, header_charset: Option<&str>, kind: Kind) -> String {
    let (encoding, skip) = match Encoding::for_bom(&body) {
        Some((encoding, bom_len)) => (Some(encoding), bom_len),
        None => {
            let declared = header_charset
                .and_then(|label| Encoding::for_label(label.trim().as_bytes()))
                .or_else(|| match kind {
                    // A page cannot be UTF-16 if it declares so in ASCII.
                    Kind::Html => meta_charset(&body).map(Encoding::output_encoding),
                    _ => None,
                });
            (declared, 0)
        }
    };
    if encoding.is_none_or(|e| e == UTF_8) {
        body.drain(..skip);
        match String::from_utf8(body) {
            Ok(text) => return text,
            Err(e) => body = e.into_bytes(),
        }
        let fallback = match (encoding, kind) {
            (None, Kind::Html) => WINDOWS_1252,
            _ => UTF_8,
        };
        return fallback.decode_without_bom_handling(&body).0.into_owned();
    }
    let encoding = encoding.unwrap_or(UTF_8);
    let (text, _had_errors) = encoding.decode_without_bom_handling(&body[skip..]);
    text.into_owned()
}

/// The charset a page declares in a `<meta charset>` or
/// `<meta http-equiv="Content-Type" content="...; charset=...">` near its
/// top (the first 4 KiB; browsers look at the first 1 KiB at least).
///
/// Read as the expression `(?i-u)<meta\s[^>]*?charset\s*=\s*["']?\s*([a-z0-9_.:+-]+)`
/// matches, first match first, by hand: compiling it cost every fetch of
/// an undeclared page the regex engine's code, a third of a megabyte of
/// the process's memory (a test holds the two to the same answers).
fn meta_charset(body: &[u8]) -> Option<&'static Encoding> {
    let head = &body[..body.len().min(4096)];
    let label = meta_charset_label(head)?;
    Encoding::for_label(label)
}

/// The label of the first `<meta ...charset=LABEL` in `head`.
fn meta_charset_label(head: &[u8]) -> Option<&[u8]> {
    // ASCII whitespace as the expression's `\s` has it (with \x0b).
    let space = |b: u8| matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ');
    let label = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'+' | b'-');
    let is_at = |at: usize, word: &[u8]| {
        head.get(at..at + word.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(word))
    };
    let skip_space = |mut at: usize| {
        while head.get(at).is_some_and(|&b| space(b)) {
            at += 1;
        }
        at
    };
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'<', &head[from..]) {
        let start = from + i;
        from = start + 1;
        if !(is_at(start + 1, b"meta") && head.get(start + 5).is_some_and(|&b| space(b))) {
            continue;
        }
        // `[^>]*?`: the first `charset` before the tag's `>` that the
        // rest follows.
        let inside = start + 6;
        let end = memchr::memchr(b'>', &head[inside..]).map_or(head.len(), |j| inside + j);
        for at in inside..end {
            if !is_at(at, b"charset") {
                continue;
            }
            let eq = skip_space(at + 7);
            if head.get(eq) != Some(&b'=') {
                continue;
            }
            let mut value = skip_space(eq + 1);
            if matches!(head.get(value), Some(b'"' | b'\'')) {
                value += 1;
            }
            let value = skip_space(value);
            let len = head[value..].iter().take_while(|&&b| label(b)).count();
            if len > 0 {
                return Some(&head[value..value + len]);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_type_header() {
        assert_eq!(
            ContentType::parse("Text/HTML; Charset=\"ISO-8859-1\""),
            ContentType {
                mime: "text/html".into(),
                charset: Some("ISO-8859-1".into())
            }
        );
        assert_eq!(ContentType::parse("application/json").charset, None);
        assert_eq!(ContentType::parse("").mime, "");
    }

    #[test]
    fn kinds() {
        assert_eq!(classify("text/html", b""), Kind::Html);
        assert_eq!(classify("application/xhtml+xml", b""), Kind::Html);
        for text in [
            "text/plain",
            "text/markdown",
            "text/csv",
            "application/json",
            "application/ld+json",
            "application/atom+xml",
            "application/xml",
        ] {
            assert_eq!(classify(text, b"\x00\x01"), Kind::Text, "{text}");
        }
        for binary in [
            "image/png",
            "image/svg+xml",
            "application/pdf",
            "application/zip",
            "video/mp4",
            "font/woff2",
        ] {
            assert_eq!(classify(binary, b"hello"), Kind::Binary, "{binary}");
        }
        assert_eq!(classify("", b"  <!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(classify("", b"<HTML><p>x"), Kind::Html);
        assert_eq!(
            classify("application/octet-stream", b"plain words"),
            Kind::Text
        );
        assert_eq!(classify("", b"\x89PNG\r\n\x1a\n\x00\x00"), Kind::Binary);
        assert_eq!(classify("", b"caf\xc3"), Kind::Text);
        assert_eq!(classify("", b"caf\xe9 au lait"), Kind::Binary);
    }

    #[test]
    fn meta_charset_is_read_as_the_expression_reads_it() {
        let expression = regex::bytes::Regex::new(
            r#"(?i-u)<meta\s[^>]*?charset\s*=\s*["']?\s*([a-z0-9_.:+-]+)"#,
        )
        .unwrap();
        let parts: [&[u8]; 22] = [
            b"<meta",
            b"<META",
            b" ",
            b"\x0b",
            b"\n",
            b"charset",
            b"CharSet",
            b"=",
            b"\"",
            b"'",
            b"utf-8",
            b"x",
            b">",
            b"<",
            b"content=\"text/html; ",
            b"\xe9",
            b"-",
            b"http-equiv",
            b"",
            b"<metax ",
            b"charsetcharset",
            b"=\"\"",
        ];
        // Every sequence of up to four parts, and some longer ones.
        let mut cases: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for case in &cases {
                for part in parts {
                    let mut c = case.clone();
                    c.extend_from_slice(part);
                    next.push(c);
                }
            }
            cases.extend(next.into_iter().filter(|c| c.len() < 40));
            cases.sort();
            cases.dedup();
        }
        cases.push(b"<meta x=\"<meta charset=latin1\"> <meta charset=utf-8>".to_vec());
        cases.push(b"<p><meta\tname=a charset = ' koi8-r '>".to_vec());
        cases.push(b"<meta charset=\"\" charset=big5>".to_vec());
        for case in &cases {
            let want = expression
                .captures(case)
                .and_then(|c| c.get(1))
                .map(|m| m.as_bytes());
            assert_eq!(
                meta_charset_label(case),
                want,
                "{}",
                String::from_utf8_lossy(case)
            );
        }
    }

    #[test]
    fn charsets() {
        let latin1 = b"caf\xe9";
        assert_eq!(
            decode(latin1.to_vec(), Some("iso-8859-1"), Kind::Text),
            "café"
        );
        assert_eq!(decode(latin1.to_vec(), None, Kind::Text), "caf\u{fffd}");
        let page = b"<html><head><meta charset=\"windows-1252\"></head><p>caf\xe9 \x80";
        assert!(decode(page.to_vec(), None, Kind::Html).ends_with("café €"));
        let page = b"<meta http-equiv='Content-Type' content='text/html; charset=ISO-8859-1'>\xe9";
        assert!(decode(page.to_vec(), None, Kind::Html).ends_with('é'));
        // The header wins over the page; a BOM wins over both.
        assert!(decode(page.to_vec(), Some("utf-8"), Kind::Html).ends_with('\u{fffd}'));
        assert_eq!(
            decode(
                b"\xef\xbb\xbfcaf\xc3\xa9".to_vec(),
                Some("iso-8859-1"),
                Kind::Text
            ),
            "café"
        );
        // Unknown labels fall through to the next source.
        assert_eq!(
            decode("café".into(), Some("x-nonsense"), Kind::Text),
            "café"
        );
        // A meta charset of UTF-16 cannot be true of an ASCII-readable page.
        assert_eq!(
            decode("<meta charset=utf-16>é".into(), None, Kind::Html),
            "<meta charset=utf-16>é"
        );
        // No charset anywhere: UTF-8 if it is, else windows-1252 for HTML.
        assert_eq!(decode("<p>café €".into(), None, Kind::Html), "<p>café €");
        assert_eq!(
            decode(b"<p>caf\xe9 \x80".to_vec(), None, Kind::Html),
            "<p>café €"
        );
        assert_eq!(decode(b"caf\xe9".to_vec(), None, Kind::Text), "caf\u{fffd}");
    }
}
