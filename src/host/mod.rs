//! The `ikigai` host: discovers tools, runs them as subprocesses and talks to
//! a model (host-architecture.md). Built in its own issue.

use std::ffi::OsString;
use std::process::ExitCode;

pub fn main(_args: Vec<OsString>) -> ExitCode {
    eprintln!("ikigai: the host is not built yet");
    ExitCode::from(2)
}
