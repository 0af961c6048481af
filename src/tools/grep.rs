//! grep: the lines of files that match a POSIX extended regular expression
//! (decisions 5, 6 and 16).
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
//! A line longer than 64 MiB (or than memory allows) is not searched: such
//! a line is no text, and holding it could take all memory. The answer
//! lists it under `skipped` (`FILE:LINE: a line of N bytes ...`), and the
//! search goes on after it.
//!
//! Memory: under the host's output cap (`IKIGAI_MAX_OUTPUT`) each thread
//! keeps at most the cap's worth of matching lines, those of the files
//! first in byte order, and only counts the rest; the answer shows the
//! first lines that fit and says how many more there are, so 600,000
//! matches cost what one answer costs. Without a cap every line is shown;
//! lines that memory cannot hold make the answer OUT_OF_MEMORY.
//!
//! Speed: the walk and the searches share every core; each file is read in
//! large blocks and the regex runs over a whole block of lines at once, lines
//! being located (and counted) only around matches.

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::args;
use crate::error::{ErrorCode, ToolError};
use crate::tool::{Env, Tool};
use crate::tools::search::ere::{compile, Matcher};
use crate::tools::search::{self, Dir, Kind, Pattern, Sink};
use crate::tools::{lossy_text, output_and_count};
use crate::truncate;

pub struct Grep;

#[derive(Deserialize)]
struct Args<'a> {
    pattern: &'a str,
    #[serde(default = "top_level")]
    glob: &'a str,
    #[serde(default = "working_dir")]
    path: &'a str,
}

fn top_level<'a>() -> &'a str {
    "*"
}

fn working_dir<'a>() -> &'a str {
    "."
}

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

    fn execute(&self, args: &Map<String, Value>, env: &Env) -> Result<Value, ToolError> {
        let args: Args = args::typed(args)?;
        // An empty glob or path means the default, as an absent one does.
        let glob = if args.glob.is_empty() {
            top_level()
        } else {
            args.glob
        };
        let path = if args.path.is_empty() {
            working_dir()
        } else {
            args.path
        };
        let matcher = compile(args.pattern)?;
        let cap = env.max_output();
        let files = Pattern::new(path, glob).map_err(search::invalid_glob)?;
        let sinks = if std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            // A file given as `path` would make `path/glob` match nothing;
            // the caller plainly means that file.
            let mut searcher = Searcher::new(&matcher, cap);
            searcher.found(path.as_bytes().to_vec(), Kind::File, None);
            vec![searcher]
        } else {
            match files {
                Some(files) => {
                    search::walk(&files, search::threads(), || Searcher::new(&matcher, cap))
                }
                None => Vec::new(),
            }
        };
        let count: usize = sinks.iter().map(|s| s.count).sum();
        let out_of_memory = || {
            ToolError::new(
                ErrorCode::OutOfMemory,
                format!(
                    "Out of memory: the {count} matching lines found do not fit in memory; \
                     narrow the pattern, glob or path"
                ),
            )
        };
        if sinks.iter().any(|s| s.out_of_memory) {
            return Err(out_of_memory());
        }
        let mut files: Vec<(&[u8], &[u8])> = sinks
            .iter()
            .flat_map(|s| s.files.iter().map(|(p, t)| (p.as_slice(), t.as_slice())))
            .collect();
        files.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut output = Vec::new();
        output
            .try_reserve_exact(files.iter().map(|f| f.1.len()).sum())
            .map_err(|_| out_of_memory())?;
        for (_, lines) in files {
            if cap.is_some_and(|cap| output.len() > cap) {
                break; // more than the answer can show
            }
            output.extend_from_slice(lines);
        }
        output.pop(); // the last line's `\n`
        let output = lossy_text(output);
        let mut answer = match cap {
            Some(cap) => {
                let mut answer = output_and_count(String::new(), count);
                truncate::fit_head_lines(
                    &mut answer,
                    "output",
                    &output,
                    count,
                    "matching lines",
                    cap,
                );
                answer
            }
            None => output_and_count(output, count),
        };
        let mut skipped: Vec<&LongLine> = sinks.iter().flat_map(|s| &s.long_lines).collect();
        if !skipped.is_empty() {
            skipped.sort_unstable_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
            let text: Vec<String> = skipped.iter().map(|l| l.describe()).collect();
            answer["skipped"] = Value::String(text.join("\n"));
        }
        Ok(answer)
    }
}

/// A line not searched: longer than MAX_LINE, or than memory allowed.
struct LongLine {
    path: Vec<u8>,
    line: usize,
    bytes: u64,
}

impl LongLine {
    fn describe(&self) -> String {
        format!(
            "{}:{}: a line of {} bytes, longer than the {} bytes grep can hold: not searched",
            String::from_utf8_lossy(&self.path),
            self.line,
            self.bytes,
            MAX_LINE
        )
    }
}

/// One thread's searcher: a regex of its own (no sharing of the regex's
/// scratch space between threads), one read buffer reused for every file,
/// and the matching lines of its files, by file. Under a cap it keeps at
/// most `cap` bytes of them, from the files first in byte order.
struct Searcher {
    matcher: Matcher,
    buf: Vec<u8>,
    cap: Option<usize>,
    /// Each file's matching lines, formatted, each ending in `\n`.
    files: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Bytes in `files`.
    kept: usize,
    /// Matching lines found, kept or not.
    count: usize,
    long_lines: Vec<LongLine>,
    /// Memory ran out for the lines to show: the answer is OUT_OF_MEMORY.
    out_of_memory: bool,
}

/// The read block; it grows only for a line longer than itself. Small
/// enough that the kernel's copy into it stays in the CPU's cache: with
/// 256 KiB, copying the files cost a third more system time (perf stat over
/// the benchmark's corpus: 290 ms against 193 ms).
const BLOCK: usize = 64 * 1024;

/// The longest line searched: a longer one is reported and passed over.
const MAX_LINE: usize = 64 << 20;

impl Sink for Searcher {
    fn found(&mut self, path: Vec<u8>, kind: Kind, dir: Option<&Dir>) {
        if kind != Kind::File {
            return;
        }
        // Opened without blocking: should the file have been swapped for a
        // FIFO since the directory was listed, reading fails instead of
        // hanging. From its directory when the walk holds it open.
        let name = path.rsplit(|&b| b == b'/').next().unwrap_or(&path);
        let opened = match dir {
            Some(dir) => dir.open_file(name),
            None => search::open_file(&path),
        };
        let Ok(file) = opened else {
            return;
        };
        // Once the cap is full, a file after every kept one in byte order
        // could never be shown: its matches are only counted.
        let room = match self.cap {
            Some(cap)
                if self.kept >= cap
                    && self
                        .files
                        .last_key_value()
                        .is_some_and(|(last, _)| path > *last) =>
            {
                0
            }
            Some(cap) => cap,
            None => usize::MAX,
        };
        let mut text = Vec::new();
        let mut long = Vec::new();
        let mut budget = Budget {
            room,
            out_of_memory: false,
        };
        let count = search_file(
            &self.matcher,
            file,
            &mut self.buf,
            &path,
            &mut budget,
            &mut text,
            &mut long,
        );
        self.out_of_memory |= budget.out_of_memory;
        if self.buf.len() > BLOCK {
            // One long line must not keep its buffer for the other files.
            self.buf = vec![0; BLOCK];
        }
        self.count += count;
        self.long_lines
            .extend(long.into_iter().map(|(line, bytes)| LongLine {
                path: path.clone(),
                line,
                bytes,
            }));
        if !text.is_empty() {
            self.kept += text.len();
            self.files.insert(path, text);
            if let Some(cap) = self.cap {
                self.evict(cap);
            }
        }
    }
}

impl Searcher {
    fn new(matcher: &Matcher, cap: Option<usize>) -> Searcher {
        Searcher {
            matcher: matcher.clone(),
            buf: vec![0; BLOCK],
            cap,
            files: BTreeMap::new(),
            kept: 0,
            count: 0,
            long_lines: Vec::new(),
            out_of_memory: false,
        }
    }

    /// Drops lines from the end (the files last in byte order) until at
    /// most `cap` bytes are kept.
    fn evict(&mut self, cap: usize) {
        while self.kept > cap {
            let Some(mut last) = self.files.last_entry() else {
                return;
            };
            let over = self.kept - cap;
            let text = last.get_mut();
            let keep = text.len().saturating_sub(over);
            let cut = memchr::memrchr(b'\n', &text[..keep]).map_or(0, |i| i + 1);
            self.kept -= text.len() - cut;
            if cut == 0 {
                last.remove();
            } else {
                text.truncate(cut);
            }
        }
    }
}

/// How much more matching text one file's search may keep, and whether
/// memory ran out while keeping it.
struct Budget {
    room: usize,
    out_of_memory: bool,
}

/// Searches `reader` block by block (each block ending at a line end, `buf`
/// growing only for a longer line); appends the matching lines to `out`
/// while `out` holds at most `room` bytes; returns how many lines matched.
/// A line longer than MAX_LINE (or than memory allows) is passed over and
/// noted in `long` (its number and length); a read error ends the file,
/// keeping what was found.
fn search_file(
    matcher: &Matcher,
    mut reader: impl Read,
    buf: &mut Vec<u8>,
    name: &[u8],
    budget: &mut Budget,
    out: &mut Vec<u8>,
    long: &mut Vec<(usize, u64)>,
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
                    // `buf` holds the start of one line and no end.
                    let longer = buf.len() * 2;
                    if longer <= MAX_LINE && buf.try_reserve_exact(longer - buf.len()).is_ok() {
                        buf.resize(longer, 0);
                        continue;
                    }
                    // Too long to hold: pass over it to its end.
                    let (rest, after) = skip_line(&mut reader, buf);
                    long.push((lines_before + 1, (filled + rest) as u64));
                    match after {
                        Some(after) => {
                            lines_before += 1;
                            filled = after;
                            continue;
                        }
                        // It ran to the end of the file (or a read error).
                        None => return count,
                    }
                }
            }
        };
        let block = &buf[..end];
        let (found, lines) = search_lines(matcher, block, lines_before, name, out, budget, !eof);
        count += found;
        lines_before += lines;
        if eof {
            return count;
        }
        buf.copy_within(end..filled, 0);
        filled -= end;
    }
}

/// Reads on through the rest of a line, reusing `buf`: returns how many
/// bytes of the line were read here and, when its end came, how many bytes
/// after it now start `buf` (`None`: the file ended first).
fn skip_line(reader: &mut impl Read, buf: &mut [u8]) -> (usize, Option<usize>) {
    let mut read = 0;
    loop {
        let n = match reader.read(buf) {
            Ok(0) | Err(_) => return (read, None),
            Ok(n) => n,
        };
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            buf.copy_within(i + 1..n, 0);
            return (read + i + 1, Some(n - i - 1));
        }
        read += n;
    }
}

/// Searches `hay`, whole lines (the last one may lack its `\n` only at the
/// end of the file), whose first line is number `lines_before + 1`. Appends
/// `NAME:LINE: TEXT\n` for each matching line to `out` while that leaves
/// `room` (counted down); after the first line that does not fit, lines are
/// only counted. Returns the number of matching lines, and the number of
/// lines in `hay` when `count_lines` (the caller needs it for the next
/// block).
fn search_lines(
    matcher: &Matcher,
    hay: &[u8],
    lines_before: usize,
    name: &[u8],
    out: &mut Vec<u8>,
    budget: &mut Budget,
    count_lines: bool,
) -> (usize, usize) {
    let len = hay.len();
    let mut pos = 0; // always the start of a line
    let mut counted = 0; // newlines before here are in `line`
    let mut line = lines_before;
    let mut found = 0;
    while pos < len {
        // A place where a match may start (the regex's own match, or the
        // literal every match holds), and the line around it.
        let start = match &matcher.literal {
            Some(literal) => match literal.find(&hay[pos..]) {
                Some(i) => pos + i,
                None => break,
            },
            None => match matcher.regex.find_at(hay, pos) {
                Some(m) => m.start(),
                None => break,
            },
        };
        if start == len && hay[len - 1] == b'\n' {
            break; // an empty match after the last line end: no line there
        }
        let line_start = memchr::memrchr(b'\n', &hay[pos..start]).map_or(pos, |i| pos + i + 1);
        let line_end = memchr::memchr(b'\n', &hay[start..]).map_or(len, |i| start + i);
        if matcher.literal.is_some() && !matcher.regex.is_match(&hay[line_start..line_end]) {
            pos = line_end + 1;
            continue;
        }
        line += memchr::memchr_iter(b'\n', &hay[counted..line_start]).count();
        counted = line_start;
        // The name, `:LINE: `, the text and its newline.
        let need = name.len() + 24 + (line_end - line_start);
        if budget.room > 0 && out.try_reserve(need).is_err() {
            budget.room = 0;
            budget.out_of_memory = true;
        }
        if budget.room > 0 {
            let before = out.len();
            out.extend_from_slice(name);
            // Writing into a Vec cannot fail.
            let _ = write!(out, ":{}: ", line + 1);
            out.extend_from_slice(&hay[line_start..line_end]);
            out.push(b'\n');
            let len = out.len() - before;
            if len > budget.room {
                out.truncate(before);
                budget.room = 0;
            } else {
                budget.room -= len;
            }
        }
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
    use crate::tools::search::ere::{required_literal, translate_ere};

    fn ere(pattern: &str) -> String {
        translate_ere(pattern).unwrap()
    }

    /// The matching lines of `text` as `name:line: text`, searched in
    /// blocks of `block` bytes (the buffer grows for longer lines).
    fn grep_text(pattern: &str, text: &[u8], block: usize) -> (usize, String) {
        let matcher = compile(pattern).unwrap();
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
        let mut long = Vec::new();
        let mut budget = Budget {
            room: usize::MAX,
            out_of_memory: false,
        };
        let count = search_file(
            &matcher,
            Trickle(text),
            &mut buf,
            b"f",
            &mut budget,
            &mut out,
            &mut long,
        );
        assert!(long.is_empty());
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
    fn required_literals() {
        let lit = |p: &str| required_literal(p);
        assert_eq!(lit(r"fn [a-z_]+_mut\(").as_deref(), Some("_mut("));
        assert_eq!(lit("PhantomData").as_deref(), Some("PhantomData"));
        assert_eq!(lit("ab+c").as_deref(), Some("ab"));
        assert_eq!(lit("xyzw*v").as_deref(), Some("xyz"));
        assert_eq!(lit("abc?de").as_deref(), Some("ab"));
        assert_eq!(lit("pre(fix|fox)post").as_deref(), Some("post"));
        assert_eq!(lit(r"\p{Greek}abc\x41def").as_deref(), Some("abc"));
        assert_eq!(lit("main() {").as_deref(), Some("main"));
        assert_eq!(lit("a{2}bcd").as_deref(), Some("bcd"));
        assert_eq!(lit("^start.*end$").as_deref(), Some("start"));
        assert_eq!(lit("[abc]def").as_deref(), Some("def"));
        assert_eq!(lit("x)yz").as_deref(), Some("x)yz"));
        assert_eq!(lit("one|two"), None);
        assert_eq!(lit("(?i)abc"), None);
    }

    #[test]
    fn the_literal_prefilter_never_changes_the_answer() {
        let text: String = (0..3000)
            .map(|i| {
                let words = [
                    "fn", "get_mut(", "ab", "abbc", "main() {", "x.y", "(a)", "a{2}", "é",
                ];
                format!(
                    "{} {} {}\n",
                    words[i % 9],
                    words[(i * 7) % 9],
                    words[(i * 5 + 1) % 9]
                )
            })
            .collect();
        for pattern in [
            r"fn [a-z_]+_mut\(",
            " ab+c",
            " abb?c",
            r"main\(\) \{",
            "main() {",
            r"x\.y$",
            "^ab ",
            "a{2}",
            r"\(a\)",
            "é f",
            r"get_mut\(",
        ] {
            let with = compile(pattern).unwrap();
            let without = Matcher {
                literal: None,
                ..with.clone()
            };
            let run = |m: &Matcher| {
                let (mut buf, mut out, mut long) = (vec![0; 4096], Vec::new(), Vec::new());
                let mut budget = Budget {
                    room: usize::MAX,
                    out_of_memory: false,
                };
                let n = search_file(
                    m,
                    text.as_bytes(),
                    &mut buf,
                    b"f",
                    &mut budget,
                    &mut out,
                    &mut long,
                );
                (n, out)
            };
            assert_eq!(run(&with), run(&without), "{pattern}");
        }
    }

    #[test]
    fn the_literal_prefilter_finds_what_the_regex_finds() {
        let text = b"fn a_mut(x)\nlet y_mut(\nfn get_mut(&mut self)\nfn X_mut(\n_mut( fn z_mut(";
        let (count, out) = grep_text(r"fn [a-z_]+_mut\(", text, 8);
        assert_eq!(count, 3);
        assert_eq!(
            out,
            "f:1: fn a_mut(x)\nf:3: fn get_mut(&mut self)\nf:5: _mut( fn z_mut(\n"
        );
        assert_eq!(
            grep_text("^abc$", b"abc\nxabc\nabc", 64).1,
            "f:1: abc\nf:3: abc\n"
        );
    }

    #[test]
    fn one_line_is_printed_once_and_cr_stays() {
        assert_eq!(
            grep_text("a", b"aaa\r\nbab\n", 64).1,
            "f:1: aaa\r\nf:2: bab\n"
        );
    }
}
