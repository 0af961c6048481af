//! The one credentials file: `credentials.json` in the config directory
//! (`$XDG_CONFIG_HOME/ikigai/`, or `~/.config/ikigai/`), shared by the web
//! search tools (`{"web_search": {...}}`) and the assistant's providers
//! (`{"openai": {"api_key": ...}}`). Found and parsed here only, so both read
//! the same file the same way; a file that cannot be used is an error naming
//! it.

use std::path::PathBuf;

use serde_json::Value;

use crate::tool::Env;

pub const FILE_NAME: &str = "credentials.json";

/// The file's path, when HOME or XDG_CONFIG_HOME says where it is.
pub fn path(env: &Env) -> Option<PathBuf> {
    env.config_dir().map(|dir| dir.join(FILE_NAME))
}

/// The file and its JSON; None when there is no file (or no place for it).
/// Err says what is wrong with the file, naming it, never its content.
pub fn read(env: &Env) -> Result<Option<(PathBuf, Value)>, String> {
    let Some(path) = path(env) else {
        return Ok(None);
    };
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "cannot read credentials file {}: {}",
                path.display(),
                io_reason(&e)
            ))
        }
    };
    match serde_json::from_slice::<Value>(&text) {
        Ok(json) => Ok(Some((path, json))),
        // serde_json's message gives the position only, never the content.
        Err(e) => Err(format!(
            "credentials file {} is not valid JSON ({e}); fix it or remove it",
            path.display()
        )),
    }
}

fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(end) => text[..end].to_lowercase(),
        None => text,
    }
}
