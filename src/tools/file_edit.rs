//! file_edit: replace an exact string in a file (local-tools.md,
//! "Tool: file-edit"; spec README, decisions 5, 7 and 17).
//!
//! The match is byte for byte on the file's raw bytes, and every byte outside
//! the replaced spans is written back exactly as it was, whatever its
//! encoding: CRLF stays CRLF, a BOM stays, invalid UTF-8 stays. Without
//! `replace_all` the string must occur exactly once (occurrences that overlap
//! count, since they make the place ambiguous); with it, every
//! non-overlapping occurrence is replaced, and none at all is a success that
//! leaves the file untouched. The file is read once; the new content is
//! streamed into the temporary file of [`fs::atomic`] (unchanged slices and
//! replacements in turn, no second copy in memory) and renamed over the
//! target, keeping its mode and any symbolic link that led to it.
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
//! NOT_FOUND, NOT_UNIQUE, and those of the write (NO_SPACE, WRITE_FAILED).

use std::io::{self, BufWriter, Write};
use std::path::Path;

use memchr::memmem;
use serde_json::{json, Map, Value};

use super::fs;
use crate::error::{ErrorCode, ToolError};
use crate::tool::{Env, Tool};

pub struct FileEdit;

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
  }
}"#;

/// Buffer for the small writes of many replacements; large unchanged slices
/// pass through it straight to the file.
const WRITE_BUFFER: usize = 1 << 18;

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
        let path = args["file_path"].as_str().unwrap_or_default();
        let old = args["old_string"].as_str().unwrap_or_default();
        let new = args["new_string"].as_str().unwrap_or_default();
        let replace_all = args
            .get("replace_all")
            .and_then(Value::as_bool)
            .unwrap_or(false);
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
        let (mut file, meta) = fs::open_for_update(&target, path, true)?.ok_or_else(|| {
            ToolError::new(ErrorCode::FileNotFound, format!("File not found: {path}"))
        })?;
        let content = fs::read_whole(&mut file).map_err(|e| fs::read_error(&e, path))?;
        drop(file);

        let (old, new) = (old.as_bytes(), new.as_bytes());
        let finder = memmem::Finder::new(old);
        let Some(first) = finder.find(&content) else {
            if replace_all {
                return Ok(answer(0, path));
            }
            return Err(not_found(&content, old));
        };
        let count = if replace_all {
            fs::atomic::replace(&target, path, Some(&meta), |file| {
                replace_every(file, &content, &finder, new)
            })?
        } else {
            let found = occurrences(&content, &finder, first);
            if found > 1 {
                return Err(ToolError::new(
                    ErrorCode::NotUnique,
                    format!("String found {found} times, use replace_all to replace all"),
                ));
            }
            fs::atomic::replace(&target, path, Some(&meta), |file| {
                file.write_all(&content[..first])?;
                file.write_all(new)?;
                file.write_all(&content[first + old.len()..])?;
                Ok(1)
            })?
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

/// How often the needle occurs, overlapping occurrences included, given the
/// first one at `first`.
fn occurrences(content: &[u8], finder: &memmem::Finder, first: usize) -> usize {
    let mut count = 1;
    let mut from = first + 1;
    while let Some(at) = finder.find(&content[from..]) {
        count += 1;
        from += at + 1;
    }
    count
}

/// Writes `content` with every non-overlapping match replaced by `new`, and
/// returns how many there were.
fn replace_every(
    file: &mut std::fs::File,
    content: &[u8],
    finder: &memmem::Finder,
    new: &[u8],
) -> io::Result<usize> {
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, file);
    let mut count = 0;
    let mut done = 0;
    for at in finder.find_iter(content) {
        out.write_all(&content[done..at])?;
        out.write_all(new)?;
        done = at + finder.needle().len();
        count += 1;
    }
    out.write_all(&content[done..])?;
    out.flush()?;
    Ok(count)
}

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

    #[test]
    fn overlapping_occurrences_count() {
        let finder = memmem::Finder::new(b"aa");
        assert_eq!(occurrences(b"aaa", &finder, 0), 2);
        assert_eq!(occurrences(b"aab", &finder, 0), 1);
        let finder = memmem::Finder::new(b"x");
        assert_eq!(occurrences(b"x.x.x", &finder, 0), 3);
    }
}
