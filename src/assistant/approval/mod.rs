//! placeholder
pub mod shell;
