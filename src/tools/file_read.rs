//! file_read: a file's content, whole or a range of lines (decision 5).
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
//! Memory: under the host's output cap (`IKIGAI_MAX_OUTPUT`) only what the
//! answer can show is kept: the first and the last cap bytes of the text,
//! counting the rest, so a 5 GB file costs what its answer costs (a whole
//! file is not even read between its head and its tail). Without a cap the
//! answer is the whole text, and memory its size. What cannot be allocated
//! is OUT_OF_MEMORY saying what to ask instead (a range, fewer lines),
//! never an abort. A file that reports size 0
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
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::fs;
use crate::args;
use crate::capture::{char_end, char_start, HeadTail};
use crate::error::{ErrorCode, ToolError};
use crate::tool::{Env, Tool};
use crate::tools::lossy_text;
use crate::truncate::{self, Clipped};

pub struct FileRead;

#[derive(Deserialize)]
struct Args<'a> {
    file_path: &'a str,
    #[serde(default = "first_line")]
    offset: i64,
    limit: Option<i64>,
}

fn first_line() -> i64 {
    1
}

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
/// vanishes next to the newline scan, small enough that the kernel's copy
/// into it stays in the CPU's cache.
const CHUNK: usize = 64 << 10;

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

    fn execute(&self, args: &Map<String, Value>, env: &Env) -> Result<Value, ToolError> {
        let Args {
            file_path: path,
            offset,
            limit,
        } = args::typed(args)?;
        fs::check_path(path)?;
        let offset = at_least("offset", offset, 1, " (lines are numbered from 1)")?;
        let limit = limit
            .map(|limit| at_least("limit", limit, 0, ""))
            .transpose()?;
        let (file, size) = open(path)?;
        // A file that reports size 0 may still have content (procfs,
        // sysfs), even without end (/proc/self/pagemap): take at most
        // UNSIZED_LIMIT bytes of it. A sized file is bounded by its size.
        let whole = (offset, limit) == (1, None);
        let mut over_bound = false;
        let text = match env.max_output() {
            Some(cap) if size > 0 && whole => read_clipped_whole(&file, size, cap),
            Some(cap) => {
                let mut clip = Clip::new(cap);
                read_range(&file, size, offset, limit, &mut clip, &mut over_bound)
                    .map(|()| clip.into_text())
            }
            None if size > 0 && whole => fs::read_whole(&file, size).map(Text::Whole),
            None => {
                let mut bytes = Vec::new();
                read_range(&file, size, offset, limit, &mut bytes, &mut over_bound)
                    .map(|()| Text::Whole(bytes))
            }
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
        let text = text.map_err(|e| match e.kind() {
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
        Ok(match text {
            Text::Whole(bytes) => json!({ "output": lossy_text(bytes) }),
            Text::Clipped { head, tail, total } => {
                let mut answer = json!({ "output": null });
                let clipped = Clipped {
                    head: lossy_text(head),
                    tail: lossy_text(tail),
                    total: total as usize,
                };
                // The cap is set: this arm is only reached with one.
                truncate::fit_clipped(
                    &mut answer,
                    "output",
                    clipped,
                    env.max_output().unwrap_or(0),
                );
                answer
            }
        })
    }
}

/// What was read: all of it, or (under a cap) its start and its end.
enum Text {
    Whole(Vec<u8>),
    Clipped {
        head: Vec<u8>,
        tail: Vec<u8>,
        total: u64,
    },
}

/// A line-count argument, at least `min`.
fn at_least(name: &str, value: i64, min: i64, why: &str) -> Result<u64, ToolError> {
    if value >= min {
        Ok(value as u64)
    } else {
        Err(ToolError::invalid_arg(format!(
            "parameter '{name}' must be at least {min}{why}, got {value}"
        )))
    }
}

/// Lines `offset..offset + limit` of `file` (of fstat size `size`) into
/// `out`. A file that reports no size is read up to UNSIZED_LIMIT bytes;
/// `over_bound` says it had more.
fn read_range(
    file: &File,
    size: u64,
    offset: u64,
    limit: Option<u64>,
    out: &mut impl Keep,
    over_bound: &mut bool,
) -> io::Result<()> {
    if size > 0 {
        return read_lines(&mut &*file, offset, limit, out);
    }
    // One page more than the limit: reaching the bound means there is
    // more. Read in chunks of CHUNK bytes: pagemap refuses reads of partial
    // entries, which read_to_end's probing reads can be.
    let mut input = Read::take(file, UNSIZED_LIMIT + 4096);
    let done = read_lines(&mut input, offset, limit, out);
    *over_bound = input.limit() == 0;
    done
}

/// A whole file of `size` bytes under a cap: only its first and last `cap`
/// bytes are read; the middle could never be shown.
fn read_clipped_whole(file: &File, size: u64, cap: usize) -> io::Result<Text> {
    if size <= 2 * cap as u64 {
        return fs::read_whole(file, size).map(Text::Whole);
    }
    let read_exact_at = |len: usize, at: u64| -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        buf.try_reserve_exact(len)
            .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        buf.resize(len, 0);
        file.read_exact_at(&mut buf, at)?;
        Ok(buf)
    };
    let head = read_exact_at(cap, 0)?;
    let tail = read_exact_at(cap, size - cap as u64)?;
    Ok(Text::Clipped {
        head: head[..char_end(&head)].to_vec(),
        tail: tail[char_start(&tail)..].to_vec(),
        total: size,
    })
}

/// Where the text read is kept: all of it (a Vec), or its ends ([`Clip`]).
trait Keep {
    fn keep(&mut self, data: &[u8]) -> io::Result<()>;
}

impl Keep for Vec<u8> {
    /// Memory that cannot be had is OutOfMemory, not an abort (a range with
    /// a line of gigabytes).
    fn keep(&mut self, data: &[u8]) -> io::Result<()> {
        self.try_reserve(data.len())
            .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        self.extend_from_slice(data);
        Ok(())
    }
}

/// The first `cap` bytes of a text and its last `cap`, and its length: all
/// an answer capped at `cap` bytes can show of it.
struct Clip {
    kept: HeadTail,
}

impl Clip {
    fn new(cap: usize) -> Clip {
        Clip {
            kept: HeadTail::new(cap, cap),
        }
    }

    fn into_text(self) -> Text {
        let total = self.kept.total();
        let (head, tail) = self.kept.into_parts();
        if tail.is_empty() {
            return Text::Whole(head);
        }
        Text::Clipped {
            head: head[..char_end(&head)].to_vec(),
            tail: tail[char_start(&tail)..].to_vec(),
            total,
        }
    }
}

impl Keep for Clip {
    fn keep(&mut self, data: &[u8]) -> io::Result<()> {
        // Bounded by twice the cap, whatever the file.
        self.kept.push(data);
        Ok(())
    }
}

/// Opens `path` for reading, refusing (promptly) anything but a regular
/// file; returns it with its fstat size.
fn open(path: &str) -> Result<(File, u64), ToolError> {
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
        Ok((file, meta.len()))
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
fn read_lines(
    input: &mut impl Read,
    offset: u64,
    limit: Option<u64>,
    out: &mut impl Keep,
) -> io::Result<()> {
    if limit == Some(0) {
        return Ok(());
    }
    // Newlines still to pass before the range starts, and, with a limit,
    // newlines that end the range's remaining lines.
    let mut to_skip = offset.saturating_sub(1);
    let mut to_take = limit;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => return Ok(()),
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
            None => out.keep(chunk)?,
            Some(wanted) => match nth_newline(chunk, wanted) {
                Ok(at) => {
                    out.keep(&chunk[..=at])?;
                    return Ok(());
                }
                Err(seen) => {
                    out.keep(chunk)?;
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
        let mut whole = Vec::new();
        read_lines(&mut data.as_bytes(), offset, limit, &mut whole).unwrap();
        for step in [1, 2, 3, 7] {
            let mut trickle = Trickle {
                data: data.as_bytes(),
                step,
            };
            let mut pieces = Vec::new();
            read_lines(&mut trickle, offset, limit, &mut pieces).unwrap();
            assert_eq!(pieces, whole, "step {step}: {data:?} {offset} {limit:?}");
        }
        String::from_utf8(whole).unwrap()
    }

    #[test]
    fn clip_keeps_the_ends_and_counts_the_rest() {
        let mut clip = Clip::new(4);
        for piece in [&b"ab"[..], b"cdef", b"ghijklmnopq", b"rs"] {
            clip.keep(piece).unwrap();
        }
        let Text::Clipped { head, tail, total } = clip.into_text() else {
            panic!("not clipped");
        };
        assert_eq!(
            (&head[..], &tail[..], total),
            (&b"abcd"[..], &b"pqrs"[..], 19)
        );
        let mut clip = Clip::new(8);
        clip.keep(b"short").unwrap();
        assert!(matches!(clip.into_text(), Text::Whole(b) if b == b"short"));
    }

    #[test]
    fn cuts_fall_between_characters() {
        let text = "aé€😀".as_bytes(); // 1, 2, 3, 4 bytes
        for cut in 0..=text.len() {
            let head = &text[..cut];
            assert!(
                std::str::from_utf8(&head[..char_end(head)]).is_ok(),
                "{cut}"
            );
            let tail = &text[cut..];
            assert!(
                std::str::from_utf8(&tail[char_start(tail)..]).is_ok(),
                "{cut}"
            );
        }
        assert_eq!(char_end("aé".as_bytes()), 3);
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
