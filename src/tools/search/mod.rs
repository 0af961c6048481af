//! What glob and grep share (decisions 6 and 16):
//! compiling a glob pattern relative to a directory, and walking the tree it
//! describes on every core, paths longer than PATH_MAX included; and
//! grep's own regular expressions (`ere`), beside the bracket expressions
//! they share with globs.

mod bracket;
pub mod ere;
mod long;
mod pattern;
mod walk;

pub use bracket::{translate as translate_bracket, Flavor};
pub use long::{open_file, Dir};
pub use pattern::Pattern;
pub use walk::{threads, walk, Kind, Sink};

use crate::error::{ErrorCode, ToolError};

/// INVALID_PATTERN for a glob that does not compile, worded once for both
/// tools.
pub fn invalid_glob(reason: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidPattern,
        format!("Invalid glob pattern: {reason}"),
    )
}
