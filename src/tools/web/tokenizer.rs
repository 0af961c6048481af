//! An HTML tokenizer for conversion, not for rendering: it splits a page
//! into text, start tags and end tags as a browser's tokenizer does
//! (comments, doctypes and processing instructions skipped; the content of
//! `<script>`, `<style>`, `<textarea>`, `<title>` and the other raw-text
//! elements taken whole up to their end tag), borrowing every token from
//! the page, so that tokenizing allocates nothing. Attributes stay raw
//! until asked for (`attr`), and entities are decoded on demand
//! (`decode`), with the full table of HTML's named character references.

use std::borrow::Cow;

use memchr::{memchr, memchr2, memmem};

use super::entities;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token<'a> {
    /// Text as written: entities not yet decoded.
    Text(&'a str),
    /// The content of a raw-text element (`script`, `style`, ...), never
    /// decoded; or of `title`/`textarea`, whose entities `decode` handles.
    Raw(&'a str),
    Start(StartTag<'a>),
    /// An end tag's name, as written.
    End(&'a str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartTag<'a> {
    /// The name as written (any case).
    pub name: &'a str,
    /// Everything between the name and the closing `>`, unparsed.
    pub attrs: &'a str,
}

pub struct Tokenizer<'a> {
    src: &'a str,
    pos: usize,
    /// After a raw-text element's start tag: its name, whose end tag ends
    /// the raw text.
    raw_until: Option<&'a str>,
}

/// Elements whose content is not markup.
fn is_raw_text(name: &str) -> bool {
    // By length first: every start tag asks.
    let is = |raw: &str| name.eq_ignore_ascii_case(raw);
    match name.len() {
        3 => is("xmp"),
        5 => is("style") || is("title"),
        6 => is("script") || is("iframe"),
        7 => is("noembed"),
        8 => is("textarea") || is("noframes") || is("noscript"),
        9 => is("plaintext"),
        _ => false,
    }
}

/// The index of the first `needle` in `hay`. The runs between a page's
/// tags are short: the first 32 bytes are looked at a word at a time here,
/// where a call to memchr costs more than the scan, and only a longer run
/// is handed to it.
#[inline]
pub fn find_byte(needle: u8, hay: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i + 8 <= hay.len() {
        if i == SHORT {
            return memchr(needle, &hay[i..]).map(|j| i + j);
        }
        let found = zero_bytes(load(hay, i) ^ (LOW * u64::from(needle)));
        if found != 0 {
            return Some(i + found.trailing_zeros() as usize / 8);
        }
        i += 8;
    }
    hay[i..].iter().position(|&b| b == needle).map(|j| i + j)
}

/// Does `hay` hold `needle`? In the few bytes of a tag's attributes a
/// look at each place its first byte stands costs less than building a
/// searcher.
pub fn holds(hay: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let mut at = 0;
    while let Some(i) = find_byte(first, &hay[at..]) {
        at += i + 1;
        if hay[at..].starts_with(rest) {
            return true;
        }
    }
    false
}

/// `find_byte` for either of two bytes.
#[inline]
fn find_byte2(one: u8, two: u8, hay: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i + 8 <= hay.len() {
        if i == SHORT {
            return memchr2(one, two, &hay[i..]).map(|j| i + j);
        }
        let word = load(hay, i);
        let found =
            zero_bytes(word ^ (LOW * u64::from(one))) | zero_bytes(word ^ (LOW * u64::from(two)));
        if found != 0 {
            return Some(i + found.trailing_zeros() as usize / 8);
        }
        i += 8;
    }
    hay[i..]
        .iter()
        .position(|&b| b == one || b == two)
        .map(|j| i + j)
}

/// How far `find_byte` looks by itself.
const SHORT: usize = 32;
const LOW: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

fn load(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// The high bit set in the lowest zero byte of `word` (and maybe in
/// bytes above it, which a borrow can reach: only the lowest is read).
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(LOW) & !word & HIGH
}

/// Where a tag's name ends: whitespace, `/` or `>`.
fn ends_name(b: u8) -> bool {
    const ENDS: [bool; 256] = {
        let mut ends = [false; 256];
        let mut b = 0;
        while b < 256 {
            ends[b] = (b as u8).is_ascii_whitespace() || b == b'/' as usize || b == b'>' as usize;
            b += 1;
        }
        ends
    };
    ENDS[usize::from(b)]
}

impl<'a> Tokenizer<'a> {
    pub fn new(src: &'a str) -> Self {
        Tokenizer {
            src,
            pos: 0,
            raw_until: None,
        }
    }

    /// The rest of a raw-text element: up to `</name` followed by a space,
    /// `/` or `>`, or the end of the page.
    fn raw_text(&mut self, name: &'a str) -> &'a str {
        let bytes = self.src.as_bytes();
        let start = self.pos;
        let mut at = start;
        let end = if name.eq_ignore_ascii_case("plaintext") {
            bytes.len()
        } else {
            loop {
                let Some(i) = memmem::find(&bytes[at..], b"</") else {
                    break bytes.len();
                };
                let tag = at + i + 2;
                let after = tag + name.len();
                if after <= bytes.len()
                    && bytes[tag..after].eq_ignore_ascii_case(name.as_bytes())
                    && bytes
                        .get(after)
                        .is_none_or(|b| b.is_ascii_whitespace() || matches!(b, b'/' | b'>'))
                {
                    break at + i;
                }
                at = tag;
            }
        };
        self.pos = end;
        &self.src[start..end]
    }

    /// Skips to just past the next `>` (or to the end).
    fn skip_past_gt(&mut self, from: usize) {
        let bytes = self.src.as_bytes();
        self.pos = find_byte(b'>', &bytes[from..]).map_or(bytes.len(), |i| from + i + 1);
    }

    /// Where the start tag whose attributes begin at `from` ends (the index
    /// of its `>`), quotes in attribute values respected.
    fn tag_end(&self, from: usize) -> Option<usize> {
        let bytes = self.src.as_bytes();
        let mut i = from;
        loop {
            let j = i + find_byte2(b'>', b'=', &bytes[i..])?;
            if bytes[j] == b'>' {
                return Some(j);
            }
            // After `=`: a quoted value runs to its closing quote.
            let mut k = j + 1;
            while k < bytes.len() && bytes[k].is_ascii_whitespace() {
                k += 1;
            }
            match bytes.get(k) {
                Some(&q @ (b'"' | b'\'')) => {
                    i = k + 1 + find_byte(q, &bytes[k + 1..])? + 1;
                }
                Some(_) => i = k,
                None => return None,
            }
        }
    }
}

impl<'a> Iterator for Tokenizer<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        if let Some(name) = self.raw_until.take() {
            let raw = self.raw_text(name);
            if !raw.is_empty() {
                return Some(Token::Raw(raw));
            }
        }
        let bytes = self.src.as_bytes();
        loop {
            let start = self.pos;
            if start >= bytes.len() {
                return None;
            }
            let opens = |i: usize| {
                bytes
                    .get(i + 1)
                    .is_some_and(|b| b.is_ascii_alphabetic() || matches!(b, b'/' | b'!' | b'?'))
            };
            if bytes[start] != b'<' || !opens(start) {
                // Text runs to the next `<` that opens something.
                let mut at = start + 1;
                let end = loop {
                    match find_byte(b'<', &bytes[at..]) {
                        None => break bytes.len(),
                        Some(i) if opens(at + i) => break at + i,
                        Some(i) => at = at + i + 1,
                    }
                };
                self.pos = end;
                return Some(Token::Text(&self.src[start..end]));
            }
            match bytes[start + 1] {
                b'!' => {
                    if bytes[start..].starts_with(b"<!--") {
                        let body = start + 4;
                        self.pos = if bytes[body..].starts_with(b">") {
                            body + 1
                        } else if bytes[body..].starts_with(b"->") {
                            body + 2
                        } else {
                            memmem::find(&bytes[body..], b"-->")
                                .map_or(bytes.len(), |i| body + i + 3)
                        };
                    } else {
                        self.skip_past_gt(start + 2);
                    }
                }
                b'?' => self.skip_past_gt(start + 2),
                b'/' => {
                    let name_start = start + 2;
                    if !bytes.get(name_start).is_some_and(u8::is_ascii_alphabetic) {
                        // `</>` is nothing; `</ x>` a bogus comment.
                        self.skip_past_gt(name_start);
                        continue;
                    }
                    let name_end = name_start
                        + bytes[name_start..]
                            .iter()
                            .position(|&b| ends_name(b))
                            .unwrap_or(bytes.len() - name_start);
                    if bytes.get(name_end) == Some(&b'>') {
                        self.pos = name_end + 1;
                    } else {
                        self.skip_past_gt(name_end);
                    }
                    return Some(Token::End(&self.src[name_start..name_end]));
                }
                b if b.is_ascii_alphabetic() => {
                    let name_start = start + 1;
                    let name_end = name_start
                        + bytes[name_start..]
                            .iter()
                            .position(|&b| ends_name(b))
                            .unwrap_or(bytes.len() - name_start);
                    // Most tags have no attributes: their `>` ends the name.
                    let gt = if bytes.get(name_end) == Some(&b'>') {
                        Some(name_end)
                    } else {
                        self.tag_end(name_end)
                    };
                    let Some(gt) = gt else {
                        // A tag cut by the end of the page is dropped.
                        self.pos = bytes.len();
                        return None;
                    };
                    self.pos = gt + 1;
                    let name = &self.src[name_start..name_end];
                    if is_raw_text(name) {
                        self.raw_until = Some(name);
                    }
                    return Some(Token::Start(StartTag {
                        name,
                        attrs: &self.src[name_end..gt],
                    }));
                }
                _ => unreachable!("`opens` let only `<` before [A-Za-z/!?] through"),
            }
        }
    }
}

/// The value of attribute `name` (lowercase) among a tag's raw
/// attributes, entities decoded; the first one wins, as in browsers.
pub fn attr<'a>(attrs: &'a str, name: &str) -> Option<Cow<'a, str>> {
    let bytes = attrs.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            i += 1;
        }
        let name_start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && !matches!(bytes[i], b'=' | b'/')
        {
            i += 1;
        }
        // An attribute name may start with `=` or `/`: it is still a name.
        if i == name_start && i < bytes.len() {
            i += 1;
        }
        let key = &attrs[name_start..i];
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let value = if bytes.get(i) == Some(&b'=') {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            match bytes.get(i) {
                Some(&q @ (b'"' | b'\'')) => {
                    let end = find_byte(q, &bytes[i + 1..]).map_or(bytes.len(), |e| i + 1 + e);
                    let v = &attrs[i + 1..end];
                    i = end + 1;
                    v
                }
                _ => {
                    let start = i;
                    while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    &attrs[start..i]
                }
            }
        } else {
            ""
        };
        if !key.is_empty() && key.eq_ignore_ascii_case(name) {
            return Some(decode(value, true));
        }
    }
    None
}

/// `text` with its character references decoded. In attribute values
/// (`in_attr`) a legacy reference without `;` followed by a letter, digit
/// or `=` stays as written, as browsers keep `?a=1&copy=2` intact.
pub fn decode(text: &str, in_attr: bool) -> Cow<'_, str> {
    if find_byte(b'&', text.as_bytes()).is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    decode_into(text, in_attr, &mut out);
    Cow::Owned(out)
}

/// `decode`, appending to `out`.
pub fn decode_into(text: &str, in_attr: bool, out: &mut String) {
    let bytes = text.as_bytes();
    let mut done = 0;
    let mut from = 0;
    while let Some(i) = memchr(b'&', &bytes[from..]) {
        let amp = from + i;
        from = amp + 1;
        let Some((decoded, len)) = reference(&text[amp + 1..], in_attr) else {
            continue;
        };
        out.push_str(&text[done..amp]);
        out.push_str(decoded.as_str(&mut [0; 8]));
        done = amp + 1 + len;
        from = done;
    }
    out.push_str(&text[done..]);
}

/// What `&#128;` to `&#159;` stand for: the characters windows-1252 has
/// there, as browsers read them (0: the code point itself).
const C1_REPLACEMENTS: [u32; 32] = [
    0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039,
    0x0152, 0, 0x017d, 0, 0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc,
    0x2122, 0x0161, 0x203a, 0x0153, 0, 0x017e, 0x0178,
];

/// One or two characters a reference stands for.
enum Chars {
    One(char),
    Two(char, char),
}

impl Chars {
    fn as_str<'b>(&self, buf: &'b mut [u8; 8]) -> &'b str {
        match *self {
            Chars::One(c) => c.encode_utf8(buf),
            Chars::Two(a, b) => {
                let n = a.encode_utf8(&mut buf[..]).len();
                let m = b.encode_utf8(&mut buf[n..]).len();
                std::str::from_utf8(&buf[..n + m]).expect("two encoded chars")
            }
        }
    }
}

/// The reference at the start of `rest` (just after `&`): what it stands
/// for and how many bytes of `rest` it takes.
fn reference(rest: &str, in_attr: bool) -> Option<(Chars, usize)> {
    let bytes = rest.as_bytes();
    if bytes.first() == Some(&b'#') {
        let (radix, digits_at) = match bytes.get(1) {
            Some(b'x' | b'X') => (16, 2),
            _ => (10, 1),
        };
        let digits = bytes[digits_at..]
            .iter()
            .take_while(|b| (**b as char).is_digit(radix))
            .count();
        if digits == 0 {
            return None;
        }
        let end = digits_at + digits;
        let value = u32::from_str_radix(&rest[digits_at..end.min(digits_at + 8)], radix)
            .unwrap_or(u32::MAX)
            .max(if digits > 8 { u32::MAX } else { 0 });
        let c = match value {
            0x80..=0x9f => match C1_REPLACEMENTS[(value - 0x80) as usize] {
                0 => char::from_u32(value).unwrap_or('\u{fffd}'),
                c => char::from_u32(c).unwrap_or('\u{fffd}'),
            },
            0 => '\u{fffd}',
            v => char::from_u32(v).unwrap_or('\u{fffd}'),
        };
        let len = end + usize::from(bytes.get(end) == Some(&b';'));
        return Some((Chars::One(c), len));
    }
    let run = bytes
        .iter()
        .take(40)
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    if run == 0 {
        return None;
    }
    let name = &rest[..run];
    let chars = |(a, b): (u32, u32)| {
        let a = char::from_u32(a)?;
        Some(match b {
            0 => Chars::One(a),
            b => Chars::Two(a, char::from_u32(b)?),
        })
    };
    if bytes.get(run) == Some(&b';') {
        let mut key = [0u8; 41];
        key[..run].copy_from_slice(&bytes[..run]);
        key[run] = b';';
        let key = std::str::from_utf8(&key[..=run]).ok()?;
        if let Some(cp) = entities::lookup(key) {
            return Some((chars(cp)?, run + 1));
        }
    }
    // Legacy references without `;` (`&amp`, `&copy`): the longest known.
    for len in (2..=run.min(6)).rev() {
        if let Some(cp) = entities::lookup(&name[..len]) {
            let next = bytes.get(len);
            if in_attr && next.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'=') {
                return None;
            }
            return Some((chars(cp)?, len));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(html: &str) -> Vec<Token<'_>> {
        Tokenizer::new(html).collect()
    }

    fn start<'a>(name: &'a str, attrs: &'a str) -> Token<'a> {
        Token::Start(StartTag { name, attrs })
    }

    #[test]
    fn tags_text_comments() {
        assert_eq!(
            tokens("<!DOCTYPE html><P class=\"a>b\" id='x'>Hi <!-- c --> a< b &amp; <3</p><br/>"),
            [
                start("P", " class=\"a>b\" id='x'"),
                Token::Text("Hi "),
                Token::Text(" a< b &amp; <3"),
                Token::End("p"),
                start("br", "/"),
            ]
        );
        assert_eq!(
            tokens("a<!-->b<!--->c<?php x ?>d</>e</ x>f"),
            [
                Token::Text("a"),
                Token::Text("b"),
                Token::Text("c"),
                Token::Text("d"),
                Token::Text("e"),
                Token::Text("f"),
            ]
        );
        assert_eq!(
            tokens("<p>unfinished <a href='x"),
            [start("p", ""), Token::Text("unfinished ")]
        );
        assert_eq!(tokens("x<"), [Token::Text("x<")]);
    }

    #[test]
    fn raw_text_elements() {
        assert_eq!(
            tokens("<script>if (a</b) x = '</scripts>';</SCRIPT >after<title>A &amp; B</title>"),
            [
                start("script", ""),
                Token::Raw("if (a</b) x = '</scripts>';"),
                Token::End("SCRIPT"),
                Token::Text("after"),
                start("title", ""),
                Token::Raw("A &amp; B"),
                Token::End("title"),
            ]
        );
        assert_eq!(
            tokens("<style>p{}"),
            [start("style", ""), Token::Raw("p{}")]
        );
        assert_eq!(
            tokens("<script></script>"),
            [start("script", ""), Token::End("script")]
        );
    }

    #[test]
    fn byte_search_finds_the_first_at_every_place() {
        // Inside the word steps, past them (memchr's part), at the end,
        // beside bytes one away from the needle, and after high bytes.
        for len in 0..80 {
            for at in 0..=len {
                let mut hay: Vec<u8> = (0..len).map(|i| [b';', b'=', 0xbc, b'a'][i % 4]).collect();
                let want = (at < len).then_some(at);
                if at < len {
                    hay[at] = b'<';
                }
                assert_eq!(find_byte(b'<', &hay), want, "len {len} at {at}");
                assert_eq!(find_byte2(b'<', b'>', &hay), want, "len {len} at {at}");
                if at + 1 < len {
                    hay[at + 1] = b'<';
                    hay[at] = b'>';
                    assert_eq!(find_byte(b'<', &hay), Some(at + 1));
                    assert_eq!(find_byte2(b'<', b'>', &hay), Some(at));
                }
            }
        }
    }

    #[test]
    fn attributes() {
        let attrs = " HREF = \"/a?b=1&amp;c=2\" data-x=y checked title='it&#39;s' alt=a&copy=b";
        assert_eq!(attr(attrs, "href").unwrap(), "/a?b=1&c=2");
        assert_eq!(attr(attrs, "data-x").unwrap(), "y");
        assert_eq!(attr(attrs, "checked").unwrap(), "");
        assert_eq!(attr(attrs, "title").unwrap(), "it's");
        assert_eq!(attr(attrs, "alt").unwrap(), "a&copy=b");
        assert_eq!(attr(attrs, "src"), None);
        assert_eq!(attr(" a=1 a=2", "a").unwrap(), "1");
        assert_eq!(attr("/", "a"), None);
    }

    #[test]
    fn entities() {
        assert_eq!(decode("a &amp; b &lt;c&gt; &quot;", false), "a & b <c> \"");
        assert_eq!(
            decode("&#39;&#x27;&#X41;&#128;&#0;&#xD800;&#99999999999;", false),
            "''A€\u{fffd}\u{fffd}\u{fffd}"
        );
        assert_eq!(
            decode("&copy 2024 &notit; &nope; & &;", false),
            "© 2024 ¬it; &nope; & &;"
        );
        assert_eq!(decode("&NotEqualTilde; &fjlig;", false), "≂\u{338} fj");
        assert_eq!(decode("plain", false), "plain");
        assert!(matches!(decode("plain", false), Cow::Borrowed(_)));
    }
}
