//! The exit codes every personality uses, named once. They follow the
//! shell's conventions, so scripts and hosts read them the usual way.

/// Something failed and was reported (a tool error under the shellclaw
/// protocol, a web tool's error, a failed call, an unanswered message).
pub const FAILURE: u8 = 1;
/// The command line was wrong: an unknown option, subcommand or tool.
pub const USAGE: u8 = 2;
/// `ikigai -p` stopped at `--max-tool-rounds` with the model still calling
/// tools (decision 65): not a failure of anything, yet not an answer.
pub const ROUND_LIMIT: u8 = 3;
/// Ended by SIGINT (Ctrl-C): 128 + 2.
pub const INTERRUPTED: u8 = 130;

/// The code a shell reports for a process ended by `signal`: 128 + N.
pub fn of_signal(signal: i32) -> i32 {
    128 + signal
}
