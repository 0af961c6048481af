//! The table of tools. `--list`, help, dispatch and `symlinks.sh` all derive
//! from `TOOLS`: adding a tool is one file here and one line in the table.

use crate::tool::Tool;

pub mod apply_patch;
pub mod bash;
mod file_edit;
mod file_read;
mod file_write;
mod fs;
mod glob;
mod grep;
pub mod patch;
mod search;
mod web;
mod web_fetch;
mod web_search_brave;
mod web_search_google;

pub static TOOLS: &[&dyn Tool] = &[
    &bash::Bash,
    &file_read::FileRead,
    &file_write::FileWrite,
    &file_edit::FileEdit,
    &glob::Glob,
    &grep::Grep,
    &web_search_brave::WebSearchBrave,
    &web_search_google::WebSearchGoogle,
    &web_fetch::WebFetch,
    &apply_patch::ApplyPatch,
];

/// Bytes as text for an answer: moved without a copy when they are UTF-8
/// (output can be gigabytes), invalid sequences replaced by U+FFFD
/// otherwise, so every answer stays valid JSON.
pub fn lossy_text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `{"output": ..., "count": N}`, the output moved in (json! would copy
/// it, and it can be big).
pub fn output_and_count(output: String, count: usize) -> serde_json::Value {
    let mut answer = serde_json::Map::new();
    answer.insert("output".into(), output.into());
    answer.insert("count".into(), count.into());
    answer.into()
}

/// A tool by its command name (`file-read`) or schema name (`file_read`).
pub fn find(name: &str) -> Option<&'static dyn Tool> {
    TOOLS
        .iter()
        .copied()
        .find(|t| t.command() == name || t.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn schemas_are_valid_and_match_names() {
        for tool in TOOLS {
            let schema: Value = serde_json::from_str(tool.schema())
                .unwrap_or_else(|e| panic!("{}: {e}", tool.name()));
            assert_eq!(schema["name"], tool.name());
            assert!(schema["description"]
                .as_str()
                .is_some_and(|d| !d.is_empty()));
            assert_eq!(schema["parameters"]["type"], "object");
            assert_eq!(tool.command(), tool.name().replace('_', "-"));
        }
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        assert_eq!(lossy_text(b"ok".to_vec()), "ok");
        assert_eq!(lossy_text(b"a\xffb\xc3".to_vec()), "a\u{FFFD}b\u{FFFD}");
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = TOOLS.iter().flat_map(|t| [t.name(), t.command()]).collect();
        names.sort();
        names.dedup();
        let distinct = TOOLS
            .iter()
            .map(|t| if t.name() == t.command() { 1 } else { 2 })
            .sum::<usize>();
        assert_eq!(names.len(), distinct);
    }
}
