//! grep: the lines of files that match a POSIX extended regular expression
//! (local-tools.md, "Tool: grep"; spec README, decisions 5, 6 and 16).
//!
//! Files: those the glob `glob` (default `*`) matches relative to `path`
//! (default `.`), by the glob tool's rules: `*.c` is the top level of `path`,
//! `**/*.c` the whole tree. A `path` that names a regular file, where the
//! spec's `path/glob` would find nothing, searches that file. Only regular files are searched: directories,
//! symbolic links, devices and FIFOs are skipped, and so are files that
//! cannot be opened. Each match prints `FILE:LINE: TEXT`, FILE as the glob
//! prints it (`path/name`, so the default path gives `./a.c`), files in byte
//! order, lines in file order, the line without its `\n` (a `\r` stays), text
//! that is not UTF-8 shown with U+FFFD; `count` is the number of lines.
//!
//! The pattern is POSIX ERE, translated where the `regex` crate reads it
//! otherwise: `\` inside a bracket expression is an ordinary character, a `{`
//! that starts no interval and an unmatched `)` are literals (as GNU grep
//! has them), `{,n}` is `{0,n}`. Matching is line by line: `^`/`$` anchor at
//! line ends and no match spans lines: nothing in a pattern matches `\n`
//! (classes and negated brackets exclude it, the `s` flag is refused), so a
//! search never runs past a line end. Back-references are not supported.
//!
//! A line longer than 64 MiB ends the search of its file (what was found
//! before it stays): such a line is no text, and holding it could take all
//! memory.
//!
//! Speed: the walk and the searches share every core; each file is read in
//! large blocks and the regex runs over a whole block of lines at once, lines
//! being located (and counted) only around matches.

use std::ffi::OsStr;
use std::fs::OpenOptions;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;

use regex::bytes::{Regex, RegexBuilder};
use serde_json::{Map, Value};

use crate::error::{ErrorCode, ToolError};
use crate::tool::{Env, Tool};
use crate::tools::search::{self, translate_bracket, Flavor, Kind, Pattern, Sink};
use crate::tools::{lossy_text, output_and_count};

pub struct Grep;

const SCHEMA: &str = r#"{
  "name": "grep",
  "description": "Search for pattern in files using regular expressions",
  "parameters": {
    "type": "object",
    "properties": {
      "pattern": {
        "type": "string",
        "description": "Regular expression pattern (POSIX extended)"
      },
      "glob": {
        "type": "string",
        "description": "Glob pattern to filter files (e.g., '*.c')"
      },
      "path": {
        "type": "string",
        "description": "Directory to search in (default: current directory)"
      }
    },
    "required": ["pattern"]
  },
  "annotations": {"readOnlyHint": true}
}"#;

impl Tool for Grep {
    fn name(&self) -> &'static str {
        "grep"
    }
    fn command(&self) -> &'static str {
        "grep"
    }
    fn schema(&self) -> &'static str {
        SCHEMA
    }

    fn execute(&self, args: &Map<String, Value>, _env: &Env) -> Result<Value, ToolError> {
        let text = |key: &str, default: &'static str| -> String {
            match args.get(key).and_then(Value::as_str) {
                Some(value) if !value.is_empty() => value.to_string(),
                _ => default.to_string(),
            }
        };
        let regex = compile(args["pattern"].as_str().unwrap_or_default())?;
        let path = text("path", ".");
        let files = Pattern::new(&path, &text("glob", "*")).map_err(search::invalid_glob)?;
        let sinks = if std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            // A file given as `path` would make `path/glob` match nothing;
            // the caller plainly means that file.
            let mut searcher = Searcher::new(&regex);
            searcher.found(path.into_bytes(), Kind::File);
            vec![searcher]
        } else {
            match files {
                Some(files) => search::walk(&files, search::threads(), || Searcher::new(&regex)),
                None => Vec::new(),
            }
        };
        let mut hits: Vec<(&[u8], &[u8])> = sinks
            .iter()
            .flat_map(|s| {
                s.hits
                    .iter()
                    .map(|h| (h.path.as_slice(), &s.text[h.lines.clone()]))
            })
            .collect();
        hits.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let count: usize = sinks.iter().flat_map(|s| &s.hits).map(|h| h.count).sum();
        let mut output = Vec::with_capacity(hits.iter().map(|h| h.1.len()).sum());
        for (_, lines) in hits {
            output.extend_from_slice(lines);
        }
        output.pop(); // the last line's `\n`
        Ok(output_and_count(lossy_text(output), count))
    }
}

fn invalid_pattern(reason: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidPattern,
        format!("Invalid pattern: {reason}"),
    )
}

/// Compiles a POSIX ERE for line matching.
fn compile(pattern: &str) -> Result<Regex, ToolError> {
    let translated = translate_ere(pattern).map_err(invalid_pattern)?;
    RegexBuilder::new(&translated)
        .multi_line(true)
        .build()
        .map_err(|e| invalid_pattern(regex_reason(&e)))
}

/// The short reason of a `regex` error: its last line, without the pattern
/// and caret drawing. An unclosed group gets POSIX's words, as the spec
/// shows them.
fn regex_reason(err: &regex::Error) -> String {
    match err {
        regex::Error::Syntax(text) => {
            let last = text.lines().last().unwrap_or_default();
            match last.strip_prefix("error: ").unwrap_or(last) {
                "unclosed group" => r"Unmatched ( or \(".to_string(),
                reason => reason.to_string(),
            }
        }
        regex::Error::CompiledTooBig(limit) => {
            format!("the compiled pattern is larger than the limit of {limit} bytes")
        }
        other => other.to_string(),
    }
}

/// POSIX ERE to `regex` syntax (see the module comment for what changes).
fn translate_ere(pattern: &str) -> Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut depth = 0usize;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let Some(&escaped) = chars.get(i + 1) else {
                    return Err("Trailing backslash".to_string());
                };
                let mut escape = format!("\\{escaped}");
                i += 2;
                // `\p{L}`, `\x{41}`, `\b{start}`: the braces belong to the escape.
                if matches!(escaped, 'p' | 'P' | 'x' | 'u' | 'U' | 'b' | 'B')
                    && chars.get(i) == Some(&'{')
                {
                    if let Some(close) = chars[i..].iter().position(|&c| c == '}') {
                        escape.extend(&chars[i..=i + close]);
                        i += close + 1;
                    }
                } else {
                    // `\pL`, `\x41`, `\u00e9`, `\U0001F600`: so many more
                    // characters belong to the escape.
                    let more = match escaped {
                        'p' | 'P' => 1,
                        'x' => 2,
                        'u' => 4,
                        'U' => 8,
                        _ => 0,
                    };
                    let end = (i + more).min(chars.len());
                    escape.extend(&chars[i..end]);
                    i = end;
                }
                // Classes and character codes that could match a newline
                // (`\s`, `\W`, `\x0A`, `\n`, ...) match any but it.
                if matches!(
                    escaped,
                    's' | 'S' | 'w' | 'W' | 'd' | 'D' | 'p' | 'P' | 'x' | 'u' | 'U' | 'n'
                ) {
                    escape = no_newline(&escape);
                }
                out.push_str(&escape);
            }
            '[' => {
                let (class, next) = translate_bracket(&chars, i, Flavor::Ere)?;
                out.push_str(&no_newline(&class));
                i = next;
            }
            '\n' => {
                out.push_str(&no_newline("\\n"));
                i += 1;
            }
            '(' if chars.get(i + 1) == Some(&'?') => {
                let mut flags = chars[i + 2..].iter().take_while(|&&c| c != ')' && c != ':');
                if flags.any(|&c| c == 's') {
                    return Err(
                        "the s flag (`.` matching a newline) is not supported: grep matches one line at a time"
                            .to_string(),
                    );
                }
                // `(?i)` and `(?i:...)` both close with a `)`.
                depth += 1;
                out.push_str("(?");
                i += 2;
            }
            '(' => {
                depth += 1;
                out.push('(');
                i += 1;
            }
            ')' => {
                if depth == 0 {
                    out.push_str(r"\)");
                } else {
                    depth -= 1;
                    out.push(')');
                }
                i += 1;
            }
            '{' => match interval(&chars[i..]) {
                Some((text, len)) => {
                    out.push_str(&text);
                    i += len;
                }
                None => {
                    out.push_str(r"\{");
                    i += 1;
                }
            },
            '}' => {
                out.push_str(r"\}");
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// `class` (a bracket expression or class escape) without the newline:
/// matching is line by line, and a match that could run across lines would
/// make the search quadratic on a file of many short lines.
fn no_newline(class: &str) -> String {
    format!("[{class}&&[^\\n]]")
}

/// An interval `{n}`, `{n,}`, `{n,m}` or `{,m}` at the start of `chars`:
/// its `regex` text and its length.
fn interval(chars: &[char]) -> Option<(String, usize)> {
    let close = chars.iter().position(|&c| c == '}')?;
    let body: String = chars[1..close].iter().collect();
    let (low, high) = match body.split_once(',') {
        Some((low, high)) => (low, Some(high)),
        None => (body.as_str(), None),
    };
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    let valid = digits(low)
        && high.is_none_or(digits)
        && (!low.is_empty() || high.is_some_and(|h| !h.is_empty()));
    if !valid {
        return None;
    }
    let low = if low.is_empty() { "0" } else { low };
    let text = match high {
        Some(high) => format!("{{{low},{high}}}"),
        None => format!("{{{low}}}"),
    };
    Some((text, close + 1))
}

/// One thread's searcher: a regex of its own (no sharing of the regex's
/// scratch space between threads), one read buffer reused for every file,
/// and every matching line of its files in one `text`.
struct Searcher {
    regex: Regex,
    buf: Vec<u8>,
    text: Vec<u8>,
    hits: Vec<Hits>,
}

/// The matching lines of one file, formatted, in `Searcher::text`.
struct Hits {
    path: Vec<u8>,
    lines: std::ops::Range<usize>,
    count: usize,
}

/// The read block; it grows only for a line longer than itself.
const BLOCK: usize = 256 * 1024;

/// The longest line searched: the rest of a file from a longer line on is
/// skipped.
const MAX_LINE: usize = 64 << 20;

impl Sink for Searcher {
    fn found(&mut self, path: Vec<u8>, kind: Kind) {
        if kind != Kind::File {
            return;
        }
        // O_NONBLOCK: should the file have been swapped for a FIFO since the
        // directory was listed, reading fails instead of hanging.
        let Ok(file) = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(OsStr::from_bytes(&path))
        else {
            return;
        };
        let start = self.text.len();
        let count = search_file(&self.regex, file, &mut self.buf, &path, &mut self.text);
        if self.buf.len() > BLOCK {
            // One long line must not keep its buffer for the other files.
            self.buf = vec![0; BLOCK];
        }
        if count > 0 {
            let lines = start..self.text.len();
            self.hits.push(Hits { path, lines, count });
        }
    }
}

impl Searcher {
    fn new(regex: &Regex) -> Searcher {
        Searcher {
            regex: regex.clone(),
            buf: vec![0; BLOCK],
            text: Vec::new(),
            hits: Vec::new(),
        }
    }
}

/// Searches `reader` block by block (each block ending at a line end, `buf`
/// growing only for a longer line); appends the matching lines to `out`;
/// returns how many. A read error, or a line longer than MAX_LINE, ends the
/// file, keeping what was found.
fn search_file(
    regex: &Regex,
    mut reader: impl Read,
    buf: &mut Vec<u8>,
    name: &[u8],
    out: &mut Vec<u8>,
) -> usize {
    if buf.is_empty() {
        buf.resize(BLOCK, 0);
    }
    let mut filled = 0;
    let mut lines_before = 0;
    let mut count = 0;
    loop {
        let mut eof = false;
        while filled < buf.len() {
            match reader.read(&mut buf[filled..]) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    eof = true;
                    break;
                }
            }
        }
        let end = if eof {
            filled
        } else {
            match memchr::memrchr(b'\n', &buf[..filled]) {
                Some(i) => i + 1,
                None => {
                    // A line longer than MAX_LINE (or than memory allows)
                    // ends the search of its file: it is no text a model
                    // could read, and holding it could take all memory.
                    let longer = buf.len() * 2;
                    if longer > MAX_LINE || buf.try_reserve_exact(longer - buf.len()).is_err() {
                        return count;
                    }
                    buf.resize(longer, 0);
                    continue;
                }
            }
        };
        let block = &buf[..end];
        let (found, lines) = search_lines(regex, block, lines_before, name, out, !eof);
        count += found;
        lines_before += lines;
        if eof {
            return count;
        }
        buf.copy_within(end..filled, 0);
        filled -= end;
    }
}

/// Searches `hay`, whole lines (the last one may lack its `\n` only at the
/// end of the file), whose first line is number `lines_before + 1`. Appends
/// `NAME:LINE: TEXT\n` for each matching line to `out`. Returns the number
/// of matching lines, and the number of lines in `hay` when `count_lines`
/// (the caller needs it for the next block).
fn search_lines(
    regex: &Regex,
    hay: &[u8],
    lines_before: usize,
    name: &[u8],
    out: &mut Vec<u8>,
    count_lines: bool,
) -> (usize, usize) {
    let len = hay.len();
    let mut pos = 0; // always the start of a line
    let mut counted = 0; // newlines before here are in `line`
    let mut line = lines_before;
    let mut found = 0;
    while pos < len {
        let Some(m) = regex.find_at(hay, pos) else {
            break;
        };
        let start = m.start();
        if start == len && hay[len - 1] == b'\n' {
            break; // an empty match after the last line end: no line there
        }
        let line_start = memchr::memrchr(b'\n', &hay[pos..start]).map_or(pos, |i| pos + i + 1);
        let line_end = memchr::memchr(b'\n', &hay[start..]).map_or(len, |i| start + i);
        line += memchr::memchr_iter(b'\n', &hay[counted..line_start]).count();
        counted = line_start;
        out.extend_from_slice(name);
        // Writing into a Vec cannot fail.
        let _ = write!(out, ":{}: ", line + 1);
        out.extend_from_slice(&hay[line_start..line_end]);
        out.push(b'\n');
        found += 1;
        pos = line_end + 1;
    }
    if count_lines {
        line += memchr::memchr_iter(b'\n', &hay[counted..]).count();
    }
    (found, line - lines_before)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ere(pattern: &str) -> String {
        translate_ere(pattern).unwrap()
    }

    /// The matching lines of `text` as `name:line: text`, searched in
    /// blocks of `block` bytes (the buffer grows for longer lines).
    fn grep_text(pattern: &str, text: &[u8], block: usize) -> (usize, String) {
        let regex = compile(pattern).unwrap();
        let mut buf = vec![0; block];
        let mut out = Vec::new();
        // A reader that hands out a few bytes at a time, to cross blocks.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, into: &mut [u8]) -> std::io::Result<usize> {
                let n = into.len().min(self.0.len()).min(7);
                into[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let count = search_file(&regex, Trickle(text), &mut buf, b"f", &mut out);
        (count, String::from_utf8_lossy(&out).into_owned())
    }

    #[test]
    fn ere_passes_through_what_regex_reads_alike() {
        for p in [
            "a|b", "(ab)+c?", "^x.*y$", "a{2}", "a{2,}", "a{2,3}", r"\.", r"\bx\B", "()", "(?i)x",
        ] {
            assert_eq!(ere(p), p);
        }
    }

    #[test]
    fn ere_translations() {
        assert_eq!(ere(r"[\n]"), r"[[\\n]&&[^\n]]");
        assert_eq!(ere("[]a]"), r"[[\]a]&&[^\n]]");
        assert_eq!(ere("main() {"), r"main() \{");
        assert_eq!(ere("a{,3}"), "a{0,3}");
        assert_eq!(ere("a{x}"), r"a\{x\}");
        assert_eq!(ere("a{1"), r"a\{1");
        assert_eq!(ere("a{}"), r"a\{\}");
        assert_eq!(ere("a{,}"), r"a\{,\}");
        assert_eq!(ere("x)"), r"x\)");
        assert_eq!(ere("(x))"), r"(x)\)");
        assert_eq!(ere(r"\p{Greek}{2}"), r"[\p{Greek}&&[^\n]]{2}");
        assert_eq!(ere(r"\x{41}"), r"[\x{41}&&[^\n]]");
        assert_eq!(ere(r"\pLx"), r"[\pL&&[^\n]]x");
        assert_eq!(
            ere(r"\x41\u00e9\U0001F600"),
            r"[\x41&&[^\n]][\u00e9&&[^\n]][\U0001F600&&[^\n]]"
        );
        assert_eq!(ere(r"\bx\B"), r"\bx\B");
        assert_eq!(ere(r"\w+\s"), r"[\w&&[^\n]]+[\s&&[^\n]]");
        assert_eq!(ere("[[:space:]]"), r"[[[:space:]]&&[^\n]]");
        assert_eq!(ere(r"\{"), r"\{");
    }

    #[test]
    fn ere_errors_say_what_is_wrong() {
        assert_eq!(translate_ere("a\\").unwrap_err(), "Trailing backslash");
        assert!(translate_ere("(?s)a.b").unwrap_err().contains("s flag"));
        assert_eq!(
            translate_ere("[abc").unwrap_err(),
            "Unmatched [, [^, [:, [., or [="
        );
        let reason = |p: &str| compile(p).unwrap_err().message;
        assert_eq!(reason("(abc"), r"Invalid pattern: Unmatched ( or \(");
        assert_eq!(reason("[z-a]"), "Invalid pattern: range 'z-a' is reversed");
        assert_eq!(
            reason("*a"),
            "Invalid pattern: repetition operator missing expression"
        );
        assert!(reason(r"(a)\1").contains("backreferences are not supported"));
        assert!(!reason("(abc").contains('\n'));
    }

    #[test]
    fn lines_are_numbered_across_blocks() {
        let text = b"one\ntwo match\nthree\nfour match\nfive";
        let expected = "f:2: two match\nf:4: four match\n";
        for block in [1, 4, 8, 64, 1024] {
            assert_eq!(
                grep_text("match", text, block),
                (2, expected.to_string()),
                "{block}"
            );
        }
        assert_eq!(grep_text("five", text, 4), (1, "f:5: five\n".to_string()));
    }

    #[test]
    fn anchors_and_empty_matches_respect_lines() {
        let text = b"abc\n\nxabc\n";
        assert_eq!(grep_text("^abc", text, 64).1, "f:1: abc\n");
        assert_eq!(grep_text("abc$", text, 64).1, "f:1: abc\nf:3: xabc\n");
        assert_eq!(grep_text("^$", text, 64).1, "f:2: \n");
        assert_eq!(
            grep_text("x*", text, 64).0,
            3,
            "no line after the last newline"
        );
        assert_eq!(grep_text("$", b"a\nb", 64).0, 2);
        assert_eq!(grep_text("x*", b"", 64).0, 0);
    }

    #[test]
    fn matches_never_span_lines() {
        let text = b"a\nb\nab\n";
        assert_eq!(grep_text("a[^x]*b", text, 64).1, "f:3: ab\n");
        assert_eq!(grep_text(r"a\s*b", text, 64).1, "f:3: ab\n");
        assert_eq!(
            grep_text(r"a[[:space:]]b", b"a\nb\na b\n", 64).1,
            "f:3: a b\n"
        );
        assert_eq!(grep_text("a\nb", text, 64).0, 0);
    }

    #[test]
    fn one_line_is_printed_once_and_cr_stays() {
        assert_eq!(
            grep_text("a", b"aaa\r\nbab\n", 64).1,
            "f:1: aaa\r\nf:2: bab\n"
        );
    }
}
