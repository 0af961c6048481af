//! The exit codes every personality uses, named once. They follow the
//! shell's conventions, so scripts and hosts read them the usual way.

/// Something failed and was reported (a tool error under the shellclaw
/// protocol, a web tool's error, a failed call, an unanswered message).
pub const FAILURE: u8 = 1;
/// The command line was wrong: an unknown option, subcommand or tool.
pub const USAGE: u8 = 2;
/// Ended by SIGINT (Ctrl-C): 128 + 2.
pub const INTERRUPTED: u8 = 130;

/// The code a shell reports for a process ended by `signal`: 128 + N.
pub fn of_signal(signal: i32) -> i32 {
    128 + signal
}
