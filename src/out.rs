//! The one way every personality prints its answer on stdout: whole, flushed,
//! and quiet when the reader went away (a closed pipe is not our failure,
//! where println! would panic). Diagnostics go to stderr with eprintln!.

use std::io::{self, Write};

/// Writes to stdout; a reader that went away (EPIPE) is not our failure.
/// (println! would panic there.)
pub fn print_out(bytes: &[u8], newline: bool) {
    let mut out = io::stdout().lock();
    let _ = out.write_all(bytes);
    if newline {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
}

/// Writes `line` and a newline, whole, and says whether the reader is still
/// there: a stream of events stops when nobody reads it any more.
pub fn try_say(line: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(line.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Prints `text` and a newline.
pub fn say(text: &str) {
    print_out(text.as_bytes(), true);
}
