//! file_read: a file's content, whole or a range of lines (local-tools.md,
//! "Tool: file-read"; spec README, decision 5).
//!
//! Lines end at `\n` and keep it; `offset` is the 1-based first line,
//! `limit` the number of lines. An offset past the end gives empty output,
//! an offset without a limit reads to the end, `limit: 0` reads nothing; an
//! offset below 1 or a negative limit is INVALID_ARG. A range is read
//! streaming: newlines are counted with memchr over a large buffer, nothing
//! before the range is kept, and reading stops at the range's last line, so
//! a range deep in a huge file costs one pass up to it and memory for the
//! range only. Bytes that are not UTF-8 are shown as U+FFFD.
//!
//! Memory: what cannot be allocated is OUT_OF_MEMORY saying what to ask
//! instead (a range, fewer lines), never an abort. A file that reports size 0
//! (procfs, sysfs) may still have content, even without end
//! (/proc/self/pagemap): at most 64 MiB is read from it, and more is
//! OUT_OF_MEMORY.
//!
//! Only regular files are read. The file is opened non-blocking and checked
//! with fstat before any read, so nothing can hang or read forever:
//!
//! | path names | answer |
//! |---|---|
//! | nothing | FILE_NOT_FOUND "File not found: PATH" |
//! | a file the caller may not read | PERMISSION_DENIED "Permission denied: PATH" |
//! | a directory | OPEN_FAILED "Cannot open file: PATH (is a directory)" |
//! | a socket, a link loop, a path through a file, ... (open(2) fails) | OPEN_FAILED "Cannot open file: PATH" |
//! | a FIFO, a pipe (`/dev/stdin`), a terminal (lseek fails) | SEEK_FAILED "Cannot seek file: PATH" |
//! | a device that seeks but has no size (`/dev/zero`, `/dev/null`, disks) | SIZE_FAILED "Cannot get file size: PATH" |
//! | an I/O error while reading | READ_FAILED "Failed to read file: PATH" |

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};

use serde_json::{json, Map, Value};

use super::fs;
use crate::error::{ErrorCode, ToolError};
use crate::tool::{Env, Tool};
use crate::tools::lossy_text;

pub struct FileRead;

const SCHEMA: &str = r#"{
  "name": "file_read",
  "description": "Read contents of a file",
  "parameters": {
    "type": "object",
    "properties": {
      "file_path": {
        "type": "string",
        "description": "Absolute or relative path to file"
      },
      "offset": {
        "type": "integer",
        "description": "Line number to start reading from (1-based)"
      },
      "limit": {
        "type": "integer",
        "description": "Number of lines to read"
      }
    },
    "required": ["file_path"]
  },
  "annotations": {"readOnlyHint": true}
}"#;

/// Read size while scanning for a range: large enough that the per-read cost
/// vanishes next to the newline scan.
const CHUNK: usize = 1 << 20;

/// The most file_read takes from a file that reports no size (see
/// `execute`).
const UNSIZED_LIMIT: u64 = 64 << 20;

impl Tool for FileRead {
    fn name(&self) -> &'static str {
        "file_read"
    }
    fn command(&self) -> &'static str {
        "file-read"
    }
    fn schema(&self) -> &'static str {
        SCHEMA
    }

    fn execute(&self, args: &Map<String, Value>, _env: &Env) -> Result<Value, ToolError> {
        let path = args["file_path"].as_str().unwrap_or_default();
        fs::check_path(path)?;
        let offset = line_count(args, "offset", 1, " (lines are numbered from 1)")?;
        let limit = line_count(args, "limit", 0, "")?;
        let mut file = open(path)?;
        // A file that reports size 0 may still have content (procfs,
        // sysfs), even without end (/proc/self/pagemap): take at most
        // UNSIZED_LIMIT bytes of it. A sized file is bounded by its size.
        let unsized_file = file.metadata().map(|m| m.len()).unwrap_or(0) == 0;
        let whole = (offset.unwrap_or(1), limit) == (1, None);
        let mut over_bound = false;
        let bytes = if !unsized_file && whole {
            fs::read_whole(&mut file)
        } else if !unsized_file {
            read_lines(&mut file, offset.unwrap_or(1), limit)
        } else {
            // One page more than the limit: reaching the bound means there
            // is more. Read in chunks of CHUNK bytes: pagemap refuses reads
            // of partial entries, which read_to_end's probing reads can be.
            let mut input = Read::take(&file, UNSIZED_LIMIT + 4096);
            let bytes = read_lines(&mut input, offset.unwrap_or(1), limit);
            over_bound = input.limit() == 0;
            bytes
        };
        if over_bound {
            return Err(ToolError::new(
                ErrorCode::OutOfMemory,
                format!(
                    "Out of memory: {path} (it reports no size and holds more than {} MiB, \
                     all that file_read takes from such a file)",
                    UNSIZED_LIMIT >> 20
                ),
            ));
        }
        let bytes = bytes.map_err(|e| match e.kind() {
            io::ErrorKind::OutOfMemory => ToolError::new(
                ErrorCode::OutOfMemory,
                if whole {
                    format!(
                        "Out of memory: {path} (too large to read whole; \
                         read a range with offset and limit)"
                    )
                } else {
                    format!(
                        "Out of memory: {path} (the range is too large to hold; \
                         ask for fewer lines with a smaller limit)"
                    )
                },
            ),
            _ => fs::read_error(&e, path),
        })?;
        Ok(json!({ "output": lossy_text(bytes) }))
    }
}

/// An optional line-count argument, at least `min`.
fn line_count(
    args: &Map<String, Value>,
    name: &str,
    min: u64,
    why: &str,
) -> Result<Option<u64>, ToolError> {
    let Some(value) = args.get(name) else {
        return Ok(None);
    };
    match value.as_u64() {
        Some(n) if n >= min => Ok(Some(n)),
        _ => Err(ToolError::invalid_arg(format!(
            "parameter '{name}' must be at least {min}{why}, got {value}"
        ))),
    }
}

/// Opens `path` for reading, refusing (promptly) anything but a regular file.
fn open(path: &str) -> Result<File, ToolError> {
    // O_NONBLOCK: opening a FIFO must not wait for a writer. O_NOCTTY: a
    // terminal must not become our controlling terminal.
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| fs::open_error(&e, path))?;
    let meta = file.metadata().map_err(|_| size_failed(path))?;
    let kind = meta.file_type();
    if kind.is_file() {
        Ok(file)
    } else if kind.is_dir() {
        Err(fs::not_a_file(path, kind))
    } else if kind.is_fifo() || kind.is_socket() || file.stream_position().is_err() {
        // A pipe, or a device that cannot seek (a terminal): its content is
        // a stream that may never end.
        Err(seek_failed(path))
    } else {
        // A device that seeks: its fstat size is 0 and its content may never
        // end (/dev/zero), so there is no size to read up to.
        Err(size_failed(path))
    }
}

fn seek_failed(path: &str) -> ToolError {
    ToolError::new(ErrorCode::SeekFailed, format!("Cannot seek file: {path}"))
}

fn size_failed(path: &str) -> ToolError {
    ToolError::new(
        ErrorCode::SizeFailed,
        format!("Cannot get file size: {path}"),
    )
}

/// Lines `offset..offset + limit` (1-based; all the rest without a limit),
/// read in chunks: lines before the range are counted, never kept, and
/// reading stops at the range's last newline.
fn read_lines(input: &mut impl Read, offset: u64, limit: Option<u64>) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    if limit == Some(0) {
        return Ok(out);
    }
    // Newlines still to pass before the range starts, and, with a limit,
    // newlines that end the range's remaining lines.
    let mut to_skip = offset.saturating_sub(1);
    let mut to_take = limit;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut chunk = &buf[..n];
        if to_skip > 0 {
            match nth_newline(chunk, to_skip) {
                Ok(at) => {
                    chunk = &chunk[at + 1..];
                    to_skip = 0;
                }
                Err(seen) => {
                    to_skip -= seen;
                    continue;
                }
            }
        }
        match to_take {
            None => append(&mut out, chunk)?,
            Some(wanted) => match nth_newline(chunk, wanted) {
                Ok(at) => {
                    append(&mut out, &chunk[..=at])?;
                    return Ok(out);
                }
                Err(seen) => {
                    append(&mut out, chunk)?;
                    to_take = Some(wanted - seen);
                }
            },
        }
    }
}

/// The index of the `n`-th newline (`n` >= 1) in `bytes`, or, when there are
/// fewer, how many there are.
fn nth_newline(bytes: &[u8], n: u64) -> Result<usize, u64> {
    let mut seen = 0;
    for at in memchr::memchr_iter(b'\n', bytes) {
        seen += 1;
        if seen == n {
            return Ok(at);
        }
    }
    Err(seen)
}

/// Appends `data` to `out`; memory that cannot be had is OutOfMemory, not
/// an abort (a range with a line of gigabytes).
fn append(out: &mut Vec<u8>, data: &[u8]) -> io::Result<()> {
    out.try_reserve(data.len())
        .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
    out.extend_from_slice(data);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `step` bytes per read, so ranges that
    /// straddle chunk boundaries are exercised.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn lines(data: &str, offset: u64, limit: Option<u64>) -> String {
        let whole = read_lines(&mut data.as_bytes(), offset, limit).unwrap();
        for step in [1, 2, 3, 7] {
            let mut trickle = Trickle {
                data: data.as_bytes(),
                step,
            };
            let pieces = read_lines(&mut trickle, offset, limit).unwrap();
            assert_eq!(pieces, whole, "step {step}: {data:?} {offset} {limit:?}");
        }
        String::from_utf8(whole).unwrap()
    }

    #[test]
    fn ranges_of_lines() {
        let text = "one\ntwo\nthree\nfour";
        assert_eq!(lines(text, 1, None), text);
        assert_eq!(lines(text, 2, None), "two\nthree\nfour");
        assert_eq!(lines(text, 2, Some(2)), "two\nthree\n");
        assert_eq!(lines(text, 4, Some(1)), "four");
        assert_eq!(lines(text, 4, Some(9)), "four");
        assert_eq!(lines(text, 5, None), "");
        assert_eq!(lines(text, 99, Some(1)), "");
        assert_eq!(lines(text, 1, Some(0)), "");
        assert_eq!(lines(text, 1, Some(1)), "one\n");
        assert_eq!(lines("a\nb\n", 3, None), "");
        assert_eq!(lines("a\nb\n", 2, None), "b\n");
        assert_eq!(lines("", 1, Some(3)), "");
        assert_eq!(lines("\n\n\n", 2, Some(1)), "\n");
        assert_eq!(lines("x\r\ny\r\n", 2, Some(1)), "y\r\n");
    }

    #[test]
    fn nth_newline_counts() {
        assert_eq!(nth_newline(b"a\nb\nc", 2), Ok(3));
        assert_eq!(nth_newline(b"a\nb\nc", 3), Err(2));
        assert_eq!(nth_newline(b"", 1), Err(0));
    }
}
