//! Tests by tool: each module drives one tool through its own name.

mod bash;
mod glob;
mod grep;
mod protocol;
