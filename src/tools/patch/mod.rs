//! apply_patch's parts that touch no file: reading the patch format
//! ([`parse`]) and applying an update's chunks to a file's content
//! ([`apply`]). The tool itself, which checks and writes files, is
//! `tools/apply_patch.rs`.

pub mod apply;
#[cfg(test)]
mod fuzz;
pub mod parse;
