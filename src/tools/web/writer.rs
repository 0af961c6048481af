//! Writing markdown in one pass, front to back, as the page's elements
//! open and close: the converter says "a block starts", "a word", "bold
//! opens"; the writer decides the spaces, line breaks and prefixes.
//!
//! - Separation is pending until the next word: whitespace is one space,
//!   never at a line's start or end; a block boundary is one blank line,
//!   however many blocks end and start there; a list item or a definition
//!   starts a new line; `<br>` is a hard break (`\` before the newline).
//! - Inline markers (`**`, `*`, a code span's backtick, a link's `[`) wait
//!   for the next word too, so an empty `<b></b>` or `<a></a>` writes
//!   nothing and a marker never stands next to a space inside it.
//! - Quotes and list items are line prefixes (`> `, `* `, `1. `, and the
//!   indentation of an item's later lines), written at the start of every
//!   line, so nothing already written is ever rewritten; only the outer
//!   `MAX_PREFIXES` levels are written.
//! - A link around block content keeps its blocks and links the first
//!   line's text, once (`## [Title](url)`).
//! - What is written is handed on as it is written (`drain`), up to the
//!   first byte a later step may still rewrite (an open link's `[`, an open
//!   code span's backtick): the writer holds what is pending, not the whole
//!   markdown.

use std::borrow::Cow;

/// Quote and list levels written as prefixes; deeper ones add none (a
/// page of 1000 nested quotes stays readable and linear).
pub const MAX_PREFIXES: usize = 16;

/// What separates the next word from what came before, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Break {
    None,
    Space,
    Hard,
    Line,
    Blank,
}

#[derive(Debug)]
enum Prefix {
    Quote,
    /// A list item: its marker on its first line, that many spaces after.
    Item {
        marker: String,
        used: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opener {
    Mark(&'static str),
    Heading(usize),
    Link,
    Code,
}

#[derive(Debug)]
pub struct Writer {
    /// The markdown written and not yet drained.
    out: String,
    /// Some markdown was drained: `out` is not the start of the text.
    drained: bool,
    brk: Break,
    /// How many prefixes the blank line of a pending `Blank` carries: those
    /// open when the break was asked for (a quote that starts after a
    /// paragraph is not yet open on the blank line between them).
    blank_depth: usize,
    prefixes: Vec<Prefix>,
    /// Prefix levels beyond `MAX_PREFIXES`, counted, not written.
    hidden_prefixes: usize,
    openers: Vec<Opener>,
    /// Where the open link's `[` was written.
    link_at: Option<usize>,
    /// Where the open code span's backtick was written.
    code_at: Option<usize>,
    /// Inside a heading: every break is a space.
    heading: usize,
    /// A list item opened and nothing written in it yet: its first block
    /// starts on the item's line, not after a blank one.
    fresh_item: bool,
    at_line_start: bool,
}

impl Default for Writer {
    fn default() -> Self {
        Writer {
            out: String::new(),
            drained: false,
            brk: Break::None,
            blank_depth: 0,
            prefixes: Vec::new(),
            hidden_prefixes: 0,
            openers: Vec::new(),
            link_at: None,
            code_at: None,
            heading: 0,
            fresh_item: false,
            at_line_start: true,
        }
    }
}

impl Writer {
    /// The markdown written and not drained (a pending break or marker at
    /// the end is dropped).
    pub fn finish(self) -> String {
        self.out
    }

    /// Hands `out` the markdown written so far that nothing can rewrite
    /// any more, and forgets it, once there are at least `at_least` bytes
    /// of it: everything before an open link's `[` and an open code span's
    /// backtick (which `close_link` and `close_code` may still move).
    /// Everything rewritten lies at or after those, so what is drained is
    /// the final text's start, byte for byte.
    pub fn drain(&mut self, at_least: usize, out: &mut dyn FnMut(&str)) {
        let end = [self.link_at, self.code_at]
            .into_iter()
            .flatten()
            .fold(self.out.len(), usize::min);
        if end == 0 || end < at_least {
            return;
        }
        out(&self.out[..end]);
        self.out.drain(..end);
        self.drained = true;
        self.link_at = self.link_at.map(|at| at - end);
        self.code_at = self.code_at.map(|at| at - end);
    }

    /// How many bytes the writer holds (written, not drained).
    pub fn held(&self) -> usize {
        self.out.len()
    }

    fn want(&mut self, brk: Break) {
        let brk = if self.heading > 0 {
            brk.min(Break::Space)
        } else if self.fresh_item {
            brk.min(Break::Line)
        } else {
            brk
        };
        if brk == Break::Blank && self.brk < Break::Blank {
            self.blank_depth = self.prefixes.len();
        }
        self.blank_depth = self.blank_depth.min(self.prefixes.len());
        self.brk = self.brk.max(brk);
    }

    /// A block starts or ends here.
    pub fn block(&mut self) {
        self.want(Break::Blank);
    }

    /// The next word starts a new line.
    pub fn line(&mut self) {
        self.want(Break::Line);
    }

    pub fn space(&mut self) {
        self.want(Break::Space);
    }

    /// `<br>`: a hard line break; two in a row end the paragraph.
    pub fn hard_break(&mut self) {
        if self.heading > 0 {
            self.want(Break::Space);
        } else if self.brk == Break::Hard {
            self.brk = Break::Blank;
        } else if !self.at_line_start || self.brk > Break::None {
            self.want(Break::Hard);
        }
    }

    /// Text as HTML shows it: every run of whitespace one space.
    pub fn text(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() && is_space(bytes[i]) {
            i += 1;
        }
        if i > 0 {
            self.space();
        }
        if i == bytes.len() {
            return;
        }
        // The first word goes through `word`, which writes what is pending
        // before it; after a word nothing is pending, so each later run of
        // whitespace is one space and the words are copied as they are:
        // runs of single spaces between words in one piece.
        let start = i;
        while i < bytes.len() && !is_space(bytes[i]) {
            i += 1;
        }
        self.word(&text[start..i]);
        let mut end = bytes.len();
        while end > i && is_space(bytes[end - 1]) {
            end -= 1;
        }
        // `bytes[i..end]` starts with whitespace (or is empty) and ends
        // with a word.
        let mut copied = i;
        while i < end {
            if i + 9 <= end {
                // Eight bytes at a time while none may start a run of
                // whitespace other than one space.
                let flagged = irregular_spaces(load(bytes, i), load(bytes, i + 1));
                if flagged == 0 {
                    i += 8;
                    continue;
                }
                i += flagged.trailing_zeros() as usize / 8;
            }
            let b = bytes[i];
            if !is_space(b) || (b == b' ' && !is_space(bytes[i + 1])) {
                i += 1;
            } else {
                self.out.push_str(&text[copied..i]);
                self.out.push(' ');
                while is_space(bytes[i]) {
                    i += 1;
                }
                copied = i;
            }
        }
        self.out.push_str(&text[copied..end]);
        if end < bytes.len() {
            self.space();
        }
    }

    /// Writes `word` after whatever separation and markers are pending.
    pub fn word(&mut self, word: &str) {
        // The common cases, a word after nothing or after a space, first.
        match self.brk {
            Break::None if self.openers.is_empty() => {}
            Break::Space if self.openers.is_empty() && !self.at_line_start => {
                self.brk = Break::None;
                self.out.push(' ');
            }
            _ => self.flush(),
        }
        self.fresh_item = false;
        self.out.push_str(word);
        self.at_line_start = false;
    }

    fn flush(&mut self) {
        self.fresh_item = false;
        let brk = std::mem::replace(&mut self.brk, Break::None);
        match brk {
            Break::None => {}
            Break::Space => {
                if !self.at_line_start {
                    self.out.push(' ');
                }
            }
            Break::Hard | Break::Line | Break::Blank => {
                if self.drained || !self.out.is_empty() {
                    if brk == Break::Hard && !self.at_line_start {
                        self.out.push('\\');
                    }
                    self.out.push('\n');
                    if brk == Break::Blank {
                        let blank = self.continuation(self.blank_depth);
                        self.out.push_str(blank.trim_end());
                        self.out.push('\n');
                    }
                }
                self.at_line_start = true;
            }
        }
        if self.at_line_start && !self.prefixes.is_empty() {
            self.write_line_prefix();
        }
        // A heading's `## ` starts its line whatever opened before it: a
        // link around a heading is `## [Title](url)`, not `[## Title](url)`.
        if let Some(level) = self.openers.iter().find_map(|o| match o {
            Opener::Heading(level) => Some(*level),
            _ => None,
        }) {
            for _ in 0..level {
                self.out.push('#');
            }
            self.out.push(' ');
        }
        for i in 0..self.openers.len() {
            match self.openers[i] {
                Opener::Mark(mark) => self.out.push_str(mark),
                Opener::Heading(_) => {}
                Opener::Link => {
                    self.link_at = Some(self.out.len());
                    self.out.push('[');
                }
                Opener::Code => {
                    self.code_at = Some(self.out.len());
                    self.out.push('`');
                }
            }
        }
        self.openers.clear();
    }

    /// The prefix of a line that continues the outer `depth` items and
    /// quotes.
    fn continuation(&self, depth: usize) -> String {
        let mut prefix = String::new();
        for p in &self.prefixes[..depth.min(self.prefixes.len())] {
            match p {
                Prefix::Quote => prefix.push_str("> "),
                Prefix::Item { marker, .. } => {
                    prefix.extend(std::iter::repeat_n(' ', marker.len()))
                }
            }
        }
        prefix
    }

    /// The prefix of a new content line: an item's marker on its first.
    fn write_line_prefix(&mut self) {
        let mut written = false;
        for p in &mut self.prefixes {
            match p {
                Prefix::Quote => self.out.push_str("> "),
                Prefix::Item { marker, used } => {
                    if *used {
                        self.out.extend(std::iter::repeat_n(' ', marker.len()));
                    } else {
                        self.out.push_str(marker);
                        *used = true;
                    }
                }
            }
            written = true;
        }
        // A line that is only a prefix so far is still at its start.
        self.at_line_start = written;
    }

    fn push_prefix(&mut self, prefix: Prefix) {
        if self.prefixes.len() < MAX_PREFIXES {
            self.prefixes.push(prefix);
        } else {
            self.hidden_prefixes += 1;
        }
    }

    fn pop_prefix(&mut self) {
        if self.hidden_prefixes > 0 {
            self.hidden_prefixes -= 1;
        } else {
            self.prefixes.pop();
        }
    }

    pub fn open_quote(&mut self) {
        self.block();
        self.push_prefix(Prefix::Quote);
    }

    pub fn close_quote(&mut self) {
        self.pop_prefix();
        self.block();
    }

    /// Is the writer inside a list item (so a nested list starts on the
    /// next line, not after a blank one)?
    pub fn in_item(&self) -> bool {
        self.hidden_prefixes > 0 || matches!(self.prefixes.last(), Some(Prefix::Item { .. }))
    }

    pub fn open_item(&mut self, marker: String) {
        self.line();
        self.push_prefix(Prefix::Item {
            marker,
            used: false,
        });
        self.fresh_item = true;
    }

    pub fn close_item(&mut self) {
        self.fresh_item = false;
        self.pop_prefix();
        self.line();
    }

    /// An inline marker (`**`, `*`) that opens before the next word.
    pub fn open_mark(&mut self, mark: &'static str) {
        self.openers.push(Opener::Mark(mark));
    }

    /// Closes `mark`: nothing if no word came since it opened.
    pub fn close_mark(&mut self, mark: &'static str) {
        if let Some(i) = self.openers.iter().rposition(|o| *o == Opener::Mark(mark)) {
            self.openers.remove(i);
        } else {
            self.out.push_str(mark);
        }
    }

    pub fn open_heading(&mut self, level: usize) {
        self.block();
        self.openers.push(Opener::Heading(level));
        self.heading += 1;
    }

    pub fn close_heading(&mut self) {
        self.openers.retain(|o| !matches!(o, Opener::Heading(_)));
        self.heading = self.heading.saturating_sub(1);
        self.block();
    }

    pub fn open_code(&mut self) {
        self.code_at = None;
        self.openers.push(Opener::Code);
    }

    /// Closes a code span; one that holds backticks gets a longer fence.
    pub fn close_code(&mut self) {
        if let Some(i) = self.openers.iter().rposition(|o| *o == Opener::Code) {
            self.openers.remove(i);
            return;
        }
        let Some(at) = self.code_at.take() else {
            return;
        };
        let inner = &self.out[at + 1..];
        if !inner.contains('`') {
            self.out.push('`');
            return;
        }
        let run = longest_run(inner, '`');
        let fence = "`".repeat(run + 1);
        self.out.replace_range(at..at + 1, &format!("{fence} "));
        self.out.push(' ');
        self.out.push_str(&fence);
    }

    pub fn open_link(&mut self) {
        self.link_at = None;
        self.openers.push(Opener::Link);
    }

    /// Closes a link to `href` (already absolute). Inline content becomes
    /// `[text](href)`; block content keeps its blocks and links the text
    /// of its first line; no content writes nothing.
    pub fn close_link(&mut self, href: &str) {
        if let Some(i) = self.openers.iter().rposition(|o| *o == Opener::Link) {
            self.openers.truncate(i);
            return;
        }
        let Some(at) = self.link_at.take() else {
            return;
        };
        let destination = destination(href);
        if !self.out[at..].contains('\n') {
            self.out.push_str("](");
            self.out.push_str(&destination);
            self.out.push(')');
            return;
        }
        self.out.remove(at);
        let line_end = self.out[at..].find('\n').map_or(self.out.len(), |i| at + i);
        let line = &self.out[at..line_end];
        let text_start = at + block_marker_len(line);
        if line.starts_with("```") || text_start >= line_end {
            self.block();
            self.word(&format!("<{destination}>"));
            return;
        }
        self.out.insert_str(line_end, &format!("]({destination})"));
        self.out.insert(text_start, '[');
    }

    /// A block of finished markdown (a table, a code block): each line
    /// written with the current prefixes.
    pub fn block_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.block();
        let mut first = true;
        for line in text.split('\n') {
            if !first {
                if line.is_empty() {
                    let blank = self.continuation(self.prefixes.len());
                    self.out.push('\n');
                    self.out.push_str(blank.trim_end());
                    continue;
                }
                self.want(Break::Line);
            }
            first = false;
            self.flush();
            self.out.push_str(line);
            self.at_line_start = false;
        }
        self.block();
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// The eight bytes of `bytes` at `at`, the first the lowest.
fn load(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

const LOW: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` below `n` (`n` at most 0x80), set
/// exactly: no carry crosses a byte.
fn bytes_below(word: u64, n: u8) -> u64 {
    let t = (word & !HIGH) + LOW * u64::from(0x80 - n);
    !(t | word) & HIGH
}

/// The high bit of each byte of `word` (the bytes at some `i`; `next`:
/// those at `i + 1`) where a run of whitespace other than one space may
/// start: a byte below `' '`, or a space before a byte at most `' '`. A
/// superset: control characters that are not whitespace are flagged too.
fn irregular_spaces(word: u64, next: u64) -> u64 {
    let spaces = bytes_below(word ^ (LOW * u64::from(b' ')), 1);
    bytes_below(word, b' ') | (spaces & bytes_below(next, b' ' + 1))
}

/// The longest run of `c` in `text`.
pub fn longest_run(text: &str, c: char) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for ch in text.chars() {
        if ch == c {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}

/// How many bytes at the start of `line` are a block's marker (`## `,
/// `> `, `* `, `12. `) rather than its text.
fn block_marker_len(line: &str) -> usize {
    let bytes = line.as_bytes();
    let mut i = 0;
    loop {
        let rest = &bytes[i..];
        let hashes = rest.iter().take_while(|b| **b == b'#').count();
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if hashes > 0 && rest.get(hashes) == Some(&b' ') {
            i += hashes + 1;
        } else if [&b"> "[..], b"* ", b": ", b"**"]
            .iter()
            .any(|m| rest.starts_with(m))
        {
            i += 2;
        } else if digits > 0 && rest[digits..].starts_with(b". ") {
            i += digits + 2;
        } else if rest.first() == Some(&b' ') {
            i += 1;
        } else {
            return i;
        }
    }
}

/// A link destination as markdown takes it: the URL as written, in `<>`
/// when it holds spaces or parentheses that would end it early.
pub fn destination(url: &str) -> Cow<'_, str> {
    if !url
        .bytes()
        .any(|b| matches!(b, b'\n' | b'\r' | b'\t' | b' ' | b'<' | b'>' | b'(' | b')'))
    {
        return Cow::Borrowed(url);
    }
    let url: String = url
        .chars()
        .filter(|c| !matches!(c, '\n' | '\r' | '\t'))
        .collect();
    let mut depth = 0i32;
    let mut balanced = true;
    for c in url.chars() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                balanced &= depth >= 0;
            }
            _ => {}
        }
    }
    if url.contains([' ', '<', '>']) || !balanced || depth != 0 {
        Cow::Owned(format!("<{}>", url.replace('<', "%3C").replace('>', "%3E")))
    } else {
        Cow::Owned(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_breaks_and_blocks() {
        let mut w = Writer::default();
        w.text("  one \n two ");
        w.block();
        w.block();
        w.text(" three");
        w.hard_break();
        w.text("four");
        w.hard_break();
        w.hard_break();
        w.text("five");
        w.hard_break();
        w.block();
        assert_eq!(w.finish(), "one two\n\nthree\\\nfour\n\nfive");
    }

    #[test]
    fn empty_markers_write_nothing() {
        let mut w = Writer::default();
        w.text("a ");
        w.open_mark("**");
        w.text(" ");
        w.close_mark("**");
        w.open_link();
        w.close_link("https://x.org/");
        w.open_mark("**");
        w.text(" b ");
        w.close_mark("**");
        w.text("c");
        assert_eq!(w.finish(), "a **b** c");
    }

    #[test]
    fn links_around_blocks_link_the_first_line() {
        let mut w = Writer::default();
        w.text("before");
        w.open_link();
        w.open_heading(2);
        w.text("Title");
        w.close_heading();
        w.block();
        w.text("Summary");
        w.block();
        w.close_link("https://x.org/post");
        w.text("after");
        assert_eq!(
            w.finish(),
            "before\n\n## [Title](https://x.org/post)\n\nSummary\n\nafter"
        );
    }

    #[test]
    fn draining_keeps_what_a_link_or_code_span_may_rewrite() {
        let mut w = Writer::default();
        let mut drained = String::new();
        w.text("before");
        w.open_link();
        w.open_heading(2);
        w.text("Title");
        w.close_heading();
        w.drain(1, &mut |piece| drained.push_str(piece));
        // The `[` and what follows it wait: the link's end moves them.
        assert_eq!(drained, "before\n\n## ");
        w.text("Summary");
        w.close_link("https://x.org/post");
        w.open_code();
        w.text("a`b");
        w.drain(1, &mut |piece| drained.push_str(piece));
        assert!(drained.ends_with("Summary"));
        w.close_code();
        w.drain(1000, &mut |piece| drained.push_str(piece));
        drained.push_str(&w.finish());
        assert_eq!(
            drained,
            "before\n\n## [Title](https://x.org/post)\n\nSummary`` a`b ``"
        );
    }

    #[test]
    fn a_drained_writer_still_separates_its_first_block() {
        let mut w = Writer::default();
        w.text("one");
        let mut drained = String::new();
        w.drain(1, &mut |piece| drained.push_str(piece));
        w.block();
        w.text("two");
        assert_eq!(drained + &w.finish(), "one\n\ntwo");
    }

    /// `Writer::text` as it was written first: each word through `word`.
    fn text_by_words(w: &mut Writer, text: &str) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if is_space(bytes[i]) {
                while i < bytes.len() && is_space(bytes[i]) {
                    i += 1;
                }
                w.space();
                continue;
            }
            let start = i;
            while i < bytes.len() && !is_space(bytes[i]) {
                i += 1;
            }
            w.word(&text[start..i]);
        }
    }

    #[test]
    fn text_copies_runs_as_words_would() {
        // Every mix of words, single spaces, other whitespace, control
        // characters that are not whitespace and non-ASCII text, long
        // enough to take the eight-byte steps, after each pending state.
        let parts = [
            "ab",
            " ",
            "  ",
            "\t",
            "\n",
            " \r\n ",
            "\x01",
            "é",
            "\x0c",
            "xyzxyzxyz",
        ];
        let mut seed = 7u64;
        for case in 0..4000 {
            let mut text = String::new();
            for _ in 0..case % 40 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(parts[(seed >> 33) as usize % parts.len()]);
            }
            let mut fast = Writer::default();
            let mut slow = Writer::default();
            for w in [&mut fast, &mut slow] {
                match case % 4 {
                    0 => {}
                    1 => w.open_mark("**"),
                    2 => {
                        w.text("before");
                        w.block();
                    }
                    _ => w.open_item("* ".into()),
                }
            }
            fast.text(&text);
            text_by_words(&mut slow, &text);
            fast.text("end");
            slow.text("end");
            assert_eq!(fast.finish(), slow.finish(), "{text:?}");
        }
    }

    #[test]
    fn destinations() {
        assert_eq!(destination("https://x.org/a_(b)"), "https://x.org/a_(b)");
        assert_eq!(destination("https://x.org/a b"), "<https://x.org/a b>");
        assert_eq!(destination("https://x.org/a)"), "<https://x.org/a)>");
        assert_eq!(
            destination("https://x.org/\n<a>"),
            "<https://x.org/%3Ca%3E>"
        );
    }

    #[test]
    fn code_spans_with_backticks() {
        let mut w = Writer::default();
        w.open_code();
        w.text("a`b");
        w.close_code();
        assert_eq!(w.finish(), "`` a`b ``");
    }

    #[test]
    fn prefixes() {
        let mut w = Writer::default();
        w.open_quote();
        w.text("one");
        w.block();
        w.text("two");
        w.open_item("* ".into());
        w.text("item");
        w.block();
        w.text("more");
        w.close_item();
        w.close_quote();
        w.text("out");
        assert_eq!(w.finish(), "> one\n>\n> two\n> * item\n>\n>   more\n\nout");
    }
}
