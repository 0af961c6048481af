//! bash: run a shell command, answer its output and exit status (decision 4).
//!
//! stdout and stderr share one pipe, so `output` interleaves them in the order
//! written, as `2>&1` would. stdin is `/dev/null`, so a command waiting for
//! input ends at once instead of hanging. The tool sets no timeout: the host
//! kills its whole process group when the deadline passes. A background
//! job that keeps the output pipe open (`server &`) is not waited for: once
//! sh has exited, output is read for 200 ms more, then the answer is given.
//!
//! When the host announces its output cap, only the first and the last
//! `cap` bytes of the output are kept while reading (the rest is counted),
//! so a command printing gigabytes costs the tool O(cap) memory and the
//! answer still says exactly how many bytes it left out.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::args;
use crate::capture::{char_end, char_start, HeadTail};
use crate::error::ToolError;
use crate::tool::{Env, Tool};
use crate::tools::lossy_text;
use crate::truncate::{self, Clipped};

pub struct Bash;

/// The arguments, as the schema states them.
#[derive(Deserialize)]
struct Args<'a> {
    command: &'a str,
}

const SCHEMA: &str = r#"{
  "name": "bash",
  "description": "Execute a shell command and return output",
  "parameters": {
    "type": "object",
    "properties": {
      "command": {
        "type": "string",
        "description": "Shell command to execute"
      }
    },
    "required": ["command"]
  },
  "annotations": {"readOnlyHint": false, "destructiveHint": true, "openWorldHint": true}
}"#;

/// What a shell reports for a command it cannot start: 127.
const SPAWN_FAILED: i32 = 127;

impl Tool for Bash {
    fn name(&self) -> &'static str {
        "bash"
    }
    fn command(&self) -> &'static str {
        "bash"
    }
    fn schema(&self) -> &'static str {
        SCHEMA
    }
    fn starts_processes(&self) -> bool {
        true
    }

    fn execute(&self, args: &Map<String, Value>, env: &Env) -> Result<Value, ToolError> {
        let Args { command } = args::typed(args)?;
        let cap = env.max_output();
        // An empty command is a shell error (127), not an empty script that
        // succeeds.
        let outcome = if command.trim().is_empty() {
            Err(std::io::Error::other("empty command"))
        } else {
            run(command, cap, env.var(PROGRESS_VAR) == Some("stderr"))
        };
        let (capture, exit_code) = match outcome {
            Ok(done) => done,
            Err(e) => {
                let mut capture = Capture::new(None);
                capture.push(format!("sh: {e}").as_bytes());
                (capture, SPAWN_FAILED)
            }
        };
        let mut answer = Map::new();
        answer.insert("output".into(), Value::Null);
        answer.insert("exit_code".into(), exit_code.into());
        let mut answer = Value::Object(answer);
        match capture.finish() {
            Captured::Whole(output) => answer["output"] = Value::String(lossy_text(output)),
            Captured::Clipped(clipped, cap) => {
                truncate::fit_clipped(&mut answer, "output", clipped, cap)
            }
        }
        Ok(answer)
    }
}

/// Set to `stderr` (the assistant does), the command's output is also
/// copied to stderr as it comes, so a host can show it while the command
/// runs, and keep it when the call is stopped before its answer.
pub const PROGRESS_VAR: &str = "IKIGAI_TOOL_PROGRESS";

fn run(command: &str, cap: Option<usize>, progress: bool) -> std::io::Result<(Capture, i32)> {
    let (mut reader, writer) = std::io::pipe()?;
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .spawn()?;
    // The temporary Command, holding the parent's copies of the write end, is
    // gone by now; otherwise the pipe would never report end of file.
    let mut capture = Capture::new(cap);
    let mut buf = vec![0; 1 << 16];
    // A background job (`server &`) keeps the pipe open after sh exits:
    // from sh's exit on, read only until GRACE has passed, then answer
    // with what came (the host kills the process group afterwards).
    let mut status = None;
    let mut deadline = None;
    loop {
        if status.is_none() {
            status = child.try_wait()?;
            if status.is_some() {
                deadline = Some(Instant::now() + GRACE);
            }
        }
        let wait = match deadline {
            Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                Some(left) => left,
                None => break,
            },
            None => POLL,
        };
        if !readable(&reader, wait)? {
            continue;
        }
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                capture.push(&buf[..n]);
                if progress {
                    let mut err = std::io::stderr().lock();
                    let _ = err.write_all(&buf[..n]).and_then(|_| err.flush());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let status = match status {
        Some(status) => status,
        None => child.wait()?,
    };
    Ok((capture, exit_code(status)))
}

/// How long output is still read after sh exits while a background job
/// holds the pipe open.
const GRACE: Duration = Duration::from_millis(200);

/// How often a silent command is checked for having exited.
const POLL: Duration = Duration::from_millis(50);

/// Whether `reader` has data (or end of file) within `wait`.
fn readable(reader: &impl AsRawFd, wait: Duration) -> std::io::Result<bool> {
    let mut fd = libc::pollfd {
        fd: reader.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = wait.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd, for the duration of the call.
    match unsafe { libc::poll(&mut fd, 1, ms) } {
        -1 => {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            }
        }
        n => Ok(n > 0),
    }
}

/// What a command printed: all of it, or, under a cap, its first `cap`
/// bytes, a ring of its last `cap` bytes, and the count of all.
struct Capture {
    cap: Option<usize>,
    kept: HeadTail,
}

enum Captured {
    Whole(Vec<u8>),
    /// Under the cap it was read with.
    Clipped(Clipped, usize),
}

impl Capture {
    fn new(cap: Option<usize>) -> Self {
        let kept = match cap {
            Some(cap) => HeadTail::new(cap, cap),
            None => HeadTail::unbounded(),
        };
        Capture { cap, kept }
    }

    fn push(&mut self, data: &[u8]) {
        self.kept.push(data);
    }

    /// The output without its one trailing newline (as `$(...)` would).
    fn finish(self) -> Captured {
        let mut total = self.kept.total() as usize;
        let (mut head, mut tail) = self.kept.into_parts();
        let last = if tail.is_empty() {
            &mut head
        } else {
            &mut tail
        };
        if last.last() == Some(&b'\n') {
            last.pop();
            total -= 1;
        }
        let cap = match self.cap {
            Some(cap) if head.len() + tail.len() < total => cap,
            _ => {
                head.append(&mut tail);
                return Captured::Whole(head);
            }
        };
        // Cut at character boundaries, so the cuts add no U+FFFD of their own.
        head.truncate(char_end(&head));
        tail.drain(..char_start(&tail));
        Captured::Clipped(
            Clipped {
                head: lossy_text(head),
                tail: lossy_text(tail),
                total,
            },
            cap,
        )
    }
}
/// The exit status a shell would report: the code, or 128 + the signal.
fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(crate::exit::of_signal))
        .unwrap_or(SPAWN_FAILED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(cap: Option<usize>, chunks: &[&[u8]]) -> Captured {
        let mut capture = Capture::new(cap);
        for chunk in chunks {
            capture.push(chunk);
        }
        capture.finish()
    }

    #[test]
    fn keeps_head_and_a_ring_of_the_tail() {
        let Captured::Clipped(c, _) = capture(Some(4), &[b"abc", b"defgh", b"ij", b"klmnop\n"])
        else {
            panic!("not clipped");
        };
        assert_eq!(
            (c.head.as_str(), c.tail.as_str(), c.total),
            ("abcd", "nop", 16)
        );
        let Captured::Clipped(c, _) = capture(Some(3), &[b"abcdefghijklmnopq"]) else {
            panic!("not clipped");
        };
        assert_eq!(
            (c.head.as_str(), c.tail.as_str(), c.total),
            ("abc", "opq", 17)
        );
    }

    #[test]
    fn whole_when_nothing_was_dropped() {
        let Captured::Whole(all) = capture(Some(4), &[b"abc", b"defg\n"]) else {
            panic!("clipped");
        };
        assert_eq!(all, b"abcdefg");
        let Captured::Whole(all) = capture(None, &[b"abc", b"def\n\n"]) else {
            panic!("clipped");
        };
        assert_eq!(all, b"abcdef\n");
    }

    #[test]
    fn cuts_fall_between_characters() {
        let Captured::Clipped(c, _) =
            capture(Some(4), &["aaéé".as_bytes(), b"zz", "ééé".as_bytes()])
        else {
            panic!("not clipped");
        };
        assert_eq!((c.head.as_str(), c.tail.as_str()), ("aaé", "éé"));
    }
}
