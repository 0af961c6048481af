//! file_edit: replace an exact string in a file (decisions 5, 7
//! and 17).
//!
//! The match is byte for byte on the file's raw bytes, and every byte outside
//! the replaced spans is written back exactly as it was, whatever its
//! encoding: CRLF stays CRLF, a BOM stays, invalid UTF-8 stays. Without
//! `replace_all` the string must occur exactly once (occurrences that overlap
//! count, since they make the place ambiguous, and the answer says so; the
//! count NOT_UNIQUE reports is the non-overlapping one replace_all would
//! replace); with it, every
//! non-overlapping occurrence is replaced, and none at all is a success that
//! leaves the file untouched.
//!
//! Big files are cheap to edit: a successful edit never holds the file in
//! memory. A first pass streams it through one reused buffer (pread, memmem)
//! to find and count the occurrences; then the new content goes into the
//! temporary file of [`fs::atomic`]: for one occurrence, the unchanged head
//! and tail are copied in the kernel (copy_file_range) around the
//! replacement; for `replace_all`, a second streaming pass writes unchanged
//! slices and replacements in turn. The rename keeps the file's mode and any
//! symbolic link that led to it.
//!
//! No edit is lost: the file is locked before it is read (see
//! [`fs::atomic`]), so edits of one file by our tools run one after the
//! other, each on the content the one before left. Should another program
//! change the file while it is being edited, nothing is replaced and the
//! answer is FILE_CHANGED.
//!
//! When the string is missing, the NOT_FOUND message says whether it would
//! have matched with the file's line endings, with trailing whitespace
//! ignored, or with the bytes that file_read shows as U+FFFD: the usual
//! reasons a string copied from the file does not match it.
//!
//! Errors: INVALID_ARG for an empty `old_string` or one equal to
//! `new_string`, checked before the file is touched; then those of opening
//! (FILE_NOT_FOUND, PERMISSION_DENIED when the file may not be written,
//! decision 17, OPEN_FAILED for directories and devices), READ_FAILED,
//! NOT_FOUND, NOT_UNIQUE, and those of the write (NO_SPACE, WRITE_FAILED,
//! FILE_CHANGED).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use memchr::memmem;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::fs;
use crate::args;
use crate::error::{ErrorCode, ToolError};
use crate::tool::{Env, Tool};

pub struct FileEdit;

#[derive(Deserialize)]
struct Args<'a> {
    file_path: &'a str,
    old_string: &'a str,
    new_string: &'a str,
    #[serde(default)]
    replace_all: bool,
}

const SCHEMA: &str = r#"{
  "name": "file_edit",
  "description": "Edit a file by replacing exact text matches. You must read the file before editing.",
  "parameters": {
    "type": "object",
    "properties": {
      "file_path": {
        "type": "string",
        "description": "Absolute or relative path to file"
      },
      "old_string": {
        "type": "string",
        "description": "Exact text to find and replace"
      },
      "new_string": {
        "type": "string",
        "description": "Text to replace old_string with"
      },
      "replace_all": {
        "type": "boolean",
        "description": "Replace all occurrences (default: false, fails if not unique)"
      }
    },
    "required": ["file_path", "old_string", "new_string"]
  },
  "annotations": {"readOnlyHint": false, "destructiveHint": true}
}"#;

/// Buffer for the small writes of many replacements; large unchanged slices
/// pass through it straight to the file.
const WRITE_BUFFER: usize = 1 << 18;

/// Read size of a streaming pass: large enough that the per-read cost
/// vanishes, small enough that the kernel's copy into it stays in the
/// CPU's cache.
const READ_BUFFER: usize = 64 << 10;

impl Tool for FileEdit {
    fn name(&self) -> &'static str {
        "file_edit"
    }
    fn command(&self) -> &'static str {
        "file-edit"
    }
    fn schema(&self) -> &'static str {
        SCHEMA
    }

    fn execute(&self, args: &Map<String, Value>, _env: &Env) -> Result<Value, ToolError> {
        let Args {
            file_path: path,
            old_string: old,
            new_string: new,
            replace_all,
        } = args::typed(args)?;
        fs::check_path(path)?;
        if old.is_empty() {
            return Err(ToolError::invalid_arg("old_string cannot be empty"));
        }
        if old == new {
            return Err(ToolError::invalid_arg(
                "old_string and new_string are identical",
            ));
        }

        let target = fs::resolve_link(Path::new(path)).map_err(|e| fs::open_error(&e, path))?;
        // Opened for reading and writing: a file the caller may not write is
        // refused here, before anything is read or replaced (decision 17).
        // Locked before it is read, so no other edit of ours slips between
        // the read and the rename.
        let locked = fs::atomic::lock(&target, path, true)?;
        let (file, meta) = locked.existing().ok_or_else(|| {
            ToolError::new(ErrorCode::FileNotFound, format!("File not found: {path}"))
        })?;
        let (old, new) = (old.as_bytes(), new.as_bytes());
        let finder = memmem::Finder::new(old);
        let read_error = |e: Failure| e.into_tool_error(path);

        let count = if replace_all {
            if scan(file, &finder, false, 1, None)
                .map_err(read_error)?
                .count
                == 0
            {
                return Ok(answer(0, path));
            }
            fs::atomic::replace(&locked, path, |sink| {
                let mut out = BufWriter::with_capacity(WRITE_BUFFER, sink);
                let found = scan(file, &finder, false, usize::MAX, Some((&mut out, new)))
                    .map_err(read_error)?;
                out.flush().map_err(|e| fs::atomic::write_error(&e, path))?;
                Ok(found.count)
            })?
        } else {
            let found = scan(file, &finder, true, usize::MAX, None).map_err(read_error)?;
            match (found.first, found.count) {
                (Some(first), 1) => fs::atomic::replace(&locked, path, |sink| {
                    let after = first + old.len() as u64;
                    let tail = meta.len().saturating_sub(after);
                    let write_error = |e: io::Error| fs::atomic::write_error(&e, path);
                    sink.copy_from(file, 0, first).map_err(write_error)?;
                    sink.write_all(new).map_err(write_error)?;
                    sink.copy_from(file, after, tail).map_err(write_error)?;
                    Ok(1)
                })?,
                (None, _) if meta.len() > NEAR_MISS_LIMIT => {
                    // The hint would hold the file and normalised copies of
                    // it: on a huge file NOT_FOUND would become OUT_OF_MEMORY.
                    return Err(ToolError::new(
                        ErrorCode::NotFound,
                        "String not found in file",
                    ));
                }
                (None, _) => {
                    let content =
                        fs::read_whole(file, meta.len()).map_err(|e| fs::read_error(&e, path))?;
                    return Err(not_found(&content, old));
                }
                (Some(_), overlapping) => {
                    // Counted as replace_all counts (non-overlapping), so
                    // "found N times" and "Replaced N" agree.
                    let apart = scan(file, &finder, false, usize::MAX, None)
                        .map_err(read_error)?
                        .count;
                    let message = if apart > 1 {
                        format!("String found {apart} times, use replace_all to replace all")
                    } else {
                        format!(
                            "String found {overlapping} times where occurrences overlap, so \
                             the place is ambiguous; include more of the surrounding text \
                             in old_string (replace_all would replace only the first)"
                        )
                    };
                    return Err(ToolError::new(ErrorCode::NotUnique, message));
                }
            }
        };
        Ok(answer(count, path))
    }
}

fn answer(count: usize, path: &str) -> Value {
    let noun = if count == 1 {
        "occurrence"
    } else {
        "occurrences"
    };
    json!({
        "output": format!("Replaced {count} {noun} in {}", fs::basename(path)),
        "replacements": count,
    })
}

/// What one streaming pass found.
#[derive(Debug, PartialEq)]
struct Found {
    first: Option<u64>,
    count: usize,
}

/// A failed pass: reading the file, or writing the new content.
enum Failure {
    Read(io::Error),
    Write(io::Error),
}

impl Failure {
    fn into_tool_error(self, path: &str) -> ToolError {
        match self {
            Failure::Read(e) => fs::read_error(&e, path),
            Failure::Write(e) => fs::atomic::write_error(&e, path),
        }
    }
}

/// One streaming pass over `src` (pread into one reused buffer, so the fd's
/// offset is left alone) looking for `finder`'s needle: every occurrence when
/// `overlapping`, else non-overlapping ones from the left, stopping after
/// `max`. Given `out`, it also writes the file with each occurrence replaced
/// by the replacement. The last `needle - 1` bytes of each read are kept for
/// the next, so an occurrence across two reads is found once.
fn scan(
    src: &File,
    finder: &memmem::Finder,
    overlapping: bool,
    max: usize,
    mut out: Option<(&mut dyn Write, &[u8])>,
) -> Result<Found, Failure> {
    let len = finder.needle().len();
    let mut buf = vec![0u8; READ_BUFFER.max(len.saturating_mul(2))];
    let mut filled = 0; // bytes in `buf`
    let mut base = 0u64; // file offset of buf[0]
    let mut done = 0u64; // input consumed into `out` so far
    let mut next = 0u64; // earliest start of the next occurrence
    let mut found = Found {
        first: None,
        count: 0,
    };
    let emit = |out: &mut Option<(&mut dyn Write, &[u8])>, bytes: &[u8], with_new: bool| {
        if let Some((w, new)) = out {
            w.write_all(bytes).map_err(Failure::Write)?;
            if with_new {
                w.write_all(new).map_err(Failure::Write)?;
            }
        }
        Ok(())
    };
    loop {
        let n = read_at(src, &mut buf[filled..], base + filled as u64).map_err(Failure::Read)?;
        filled += n;
        let window = &buf[..filled];
        let mut from = 0;
        while let Some(i) = finder.find(&window[from..]) {
            let at = from + i;
            from = at + 1;
            let pos = base + at as u64;
            if pos < next {
                continue;
            }
            found.first.get_or_insert(pos);
            found.count += 1;
            next = if overlapping {
                pos + 1
            } else {
                pos + len as u64
            };
            if out.is_some() {
                emit(&mut out, &window[(done - base) as usize..at], true)?;
                done = pos + len as u64;
            }
            if found.count >= max {
                return Ok(found);
            }
        }
        if n == 0 {
            if out.is_some() {
                emit(&mut out, &window[(done - base) as usize..], false)?;
            }
            return Ok(found);
        }
        // Pass on what no occurrence can start in any more; keep the rest.
        let keep = (len - 1).min(filled);
        let cut = filled - keep;
        let cut_at = base + cut as u64;
        if out.is_some() && done < cut_at {
            emit(&mut out, &window[(done - base) as usize..cut], false)?;
            done = cut_at;
        }
        buf.copy_within(cut..filled, 0);
        base = cut_at;
        filled = keep;
    }
}

/// pread that retries when interrupted by a signal.
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    loop {
        match file.read_at(buf, offset) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// The largest file whose NOT_FOUND gets a near-miss hint: the hint costs
/// the file and up to two normalised copies of it in memory.
const NEAR_MISS_LIMIT: u64 = 64 << 20;

/// NOT_FOUND, with the reason when a near miss explains it.
fn not_found(content: &[u8], old: &[u8]) -> ToolError {
    let message = match near_miss(content, old) {
        Some(hint) => format!("String not found in file ({hint})"),
        None => "String not found in file".to_string(),
    };
    ToolError::new(ErrorCode::NotFound, message)
}

/// Why `old` would have matched: line endings, trailing whitespace, or bytes
/// the model saw as U+FFFD. Costs a normalised copy of the file, and only on
/// this failure path.
fn near_miss(content: &[u8], old: &[u8]) -> Option<String> {
    let contains = |haystack: &[u8], needle: &[u8]| memmem::find(haystack, needle).is_some();
    let file_crlf = contains(content, b"\r\n");
    let old_crlf = contains(old, b"\r\n");
    if old.contains(&b'\n') {
        if file_crlf && has_bare_lf(old) && contains(content, &to_crlf(old)) {
            return Some(
                "it would match with CRLF line endings: the file uses \\r\\n, old_string uses \\n"
                    .to_string(),
            );
        }
        if old_crlf && has_bare_lf(content) && contains(content, &to_lf(old)) {
            return Some(
                "it would match with LF line endings: the file uses \\n, old_string uses \\r\\n"
                    .to_string(),
            );
        }
        if contains(
            &strip_line_ends(content, true),
            &strip_line_ends(old, false),
        ) {
            let style = |crlf| if crlf { "\\r\\n" } else { "\\n" };
            return Some(if file_crlf == old_crlf {
                "it would match if trailing whitespace were ignored: the file and old_string \
                 differ in spaces or tabs at the ends of lines"
                    .to_string()
            } else {
                format!(
                    "it would match if line endings and trailing whitespace were ignored: the \
                     file uses {}, old_string uses {}, and they differ in spaces or tabs at the \
                     ends of lines",
                    style(file_crlf),
                    style(old_crlf)
                )
            });
        }
    }
    let old_text = std::str::from_utf8(old).ok()?;
    if old_text.contains('\u{FFFD}')
        && !contains(content, "\u{FFFD}".as_bytes())
        && String::from_utf8_lossy(content).contains(old_text)
    {
        return Some(
            "it would match bytes of the file that are not UTF-8, which file_read shows as \
             U+FFFD; choose an old_string around them"
                .to_string(),
        );
    }
    None
}

/// Whether some `\n` has no `\r` before it.
fn has_bare_lf(bytes: &[u8]) -> bool {
    memchr::memchr_iter(b'\n', bytes).any(|at| at == 0 || bytes[at - 1] != b'\r')
}

/// Every bare `\n` as `\r\n`.
fn to_crlf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 8);
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' && (i == 0 || bytes[i - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

/// Every `\r\n` as `\n`.
fn to_lf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut done = 0;
    for at in memmem::find_iter(bytes, b"\r\n") {
        out.extend_from_slice(&bytes[done..at]);
        done = at + 1;
    }
    out.extend_from_slice(&bytes[done..]);
    out
}

/// The text with spaces, tabs and `\r` removed before each `\n` (and at the
/// very end when `at_end`): line endings and trailing whitespace erased.
fn strip_line_ends(bytes: &[u8], at_end: bool) -> Vec<u8> {
    fn trim(mut line: &[u8]) -> &[u8] {
        while let [rest @ .., b' ' | b'\t' | b'\r'] = line {
            line = rest;
        }
        line
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut start = 0;
    for at in memchr::memchr_iter(b'\n', bytes) {
        out.extend_from_slice(trim(&bytes[start..at]));
        out.push(b'\n');
        start = at + 1;
    }
    let last = &bytes[start..];
    out.extend_from_slice(if at_end { trim(last) } else { last });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hint(content: &str, old: &str) -> Option<String> {
        near_miss(content.as_bytes(), old.as_bytes())
    }

    #[test]
    fn line_ending_conversions() {
        assert_eq!(to_crlf(b"a\nb\r\nc\n"), b"a\r\nb\r\nc\r\n");
        assert_eq!(to_lf(b"a\r\nb\nc\r\n\r"), b"a\nb\nc\n\r");
        assert!(has_bare_lf(b"a\r\nb\n"));
        assert!(!has_bare_lf(b"a\r\nb\r\n"));
        assert!(has_bare_lf(b"\n"));
        assert_eq!(strip_line_ends(b"a \t\r\nb  \nc  ", true), b"a\nb\nc");
        assert_eq!(strip_line_ends(b"a \nc  ", false), b"a\nc  ");
    }

    #[test]
    fn near_misses_are_explained() {
        assert!(hint("a\r\nb\r\n", "a\nb")
            .unwrap()
            .starts_with("it would match with CRLF line endings"));
        assert!(hint("a\nb\n", "a\r\nb")
            .unwrap()
            .starts_with("it would match with LF line endings"));
        assert!(hint("a  \nb\n", "a\nb")
            .unwrap()
            .starts_with("it would match if trailing whitespace were ignored"));
        assert!(hint("a\nb\n", "a \t\nb")
            .unwrap()
            .starts_with("it would match if trailing whitespace were ignored"));
        assert!(hint("a \r\nb\r\n", "a\nb")
            .unwrap()
            .contains("the file uses \\r\\n, old_string uses \\n"));
        assert_eq!(hint("a\nb\n", "a\nc"), None);
        assert_eq!(hint("abc", "abd"), None);
        // Whitespace that is not at a line end still matters.
        assert_eq!(hint("a b\nc\n", "a  b\nc"), None);
    }

    #[test]
    fn replacement_character_near_miss() {
        let content = b"x = \xff;\n";
        let old = "x = \u{FFFD};";
        assert!(near_miss(content, old.as_bytes())
            .unwrap()
            .contains("U+FFFD"));
        // A file that really holds U+FFFD would have matched; no such hint.
        assert_eq!(near_miss("y \u{FFFD}".as_bytes(), old.as_bytes()), None);
    }

    fn scan_bytes(content: &[u8], needle: &[u8], overlapping: bool, max: usize) -> Found {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(content).unwrap();
        let finder = memmem::Finder::new(needle);
        match scan(&file, &finder, overlapping, max, None) {
            Ok(found) => found,
            Err(_) => panic!("scan failed"),
        }
    }

    fn rewrite(content: &[u8], needle: &[u8], new: &[u8]) -> (Vec<u8>, usize) {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(content).unwrap();
        let finder = memmem::Finder::new(needle);
        let mut out = Vec::new();
        let Ok(found) = scan(&file, &finder, false, usize::MAX, Some((&mut out, new))) else {
            panic!("scan failed");
        };
        (out, found.count)
    }

    #[test]
    fn occurrences_overlapping_or_not() {
        let found = |first, count| Found { first, count };
        assert_eq!(
            scan_bytes(b"aaa", b"aa", true, usize::MAX),
            found(Some(0), 2)
        );
        assert_eq!(
            scan_bytes(b"aaa", b"aa", false, usize::MAX),
            found(Some(0), 1)
        );
        assert_eq!(
            scan_bytes(b"aab", b"aa", true, usize::MAX),
            found(Some(0), 1)
        );
        assert_eq!(
            scan_bytes(b"x.x.x", b"x", true, usize::MAX),
            found(Some(0), 3)
        );
        assert_eq!(scan_bytes(b"x.x.x", b"x", false, 1), found(Some(0), 1));
        assert_eq!(scan_bytes(b"abc", b"zz", true, usize::MAX), found(None, 0));
        assert_eq!(scan_bytes(b"", b"a", true, usize::MAX), found(None, 0));
    }

    #[test]
    fn occurrences_across_read_boundaries_are_found_once() {
        // Needles placed across the read boundaries, and a needle longer
        // than the buffer's usual size.
        let mut content = vec![b'.'; READ_BUFFER * 3];
        for at in [READ_BUFFER - 3, 2 * READ_BUFFER - 1, 3 * READ_BUFFER - 6] {
            content[at..at + 6].copy_from_slice(b"needle");
        }
        let found = scan_bytes(&content, b"needle", true, usize::MAX);
        assert_eq!(
            found,
            Found {
                first: Some(READ_BUFFER as u64 - 3),
                count: 3
            }
        );
        let (out, count) = rewrite(&content, b"needle", b"N");
        assert_eq!(count, 3);
        let mut expected = content.clone();
        expected = String::from_utf8(expected)
            .unwrap()
            .replace("needle", "N")
            .into_bytes();
        assert_eq!(out, expected);

        let long = vec![b'z'; READ_BUFFER + 10];
        let mut content = b"head".to_vec();
        content.extend_from_slice(&long);
        content.extend_from_slice(b"tail");
        assert_eq!(scan_bytes(&content, &long, true, usize::MAX).count, 1);
        assert_eq!(rewrite(&content, &long, b"-").0, b"head-tail");
    }

    #[test]
    fn rewrite_matches_str_replace() {
        for (content, needle, new) in [
            ("aaaa", "aa", "b"),
            ("abcabcab", "abc", ""),
            ("xyz", "q", "r"),
            ("ab", "ab", "longer replacement"),
        ] {
            let (out, count) = rewrite(content.as_bytes(), needle.as_bytes(), new.as_bytes());
            assert_eq!(
                String::from_utf8(out).unwrap(),
                content.replace(needle, new)
            );
            assert_eq!(count, content.matches(needle).count());
        }
    }
}
