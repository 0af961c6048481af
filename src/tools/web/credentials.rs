//! Where the search tools find their API credentials: each credential from its environment
//! variable first, else from `credentials.json` in the config directory
//! (`$XDG_CONFIG_HOME/ikigai/`, or `~/.config/ikigai/`), in the nested form
//! `{"web_search": {"brave": {"api_key": "..."}}}`. The file is read only
//! when the environment does not answer, and a file that cannot be used is
//! an error naming it, never silently ignored. The file itself is found
//! and parsed by `crate::credentials`, which the assistant shares.

use std::path::PathBuf;

use serde_json::Value;

use crate::error::{ErrorCode, ToolError};
use crate::tool::Env;

/// A credential and where it came from (for messages; never the value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub value: String,
    pub origin: String,
}

/// The credentials file, read at most once and only when needed.
pub struct Store<'a> {
    env: &'a Env,
    file: Option<Option<(PathBuf, Value)>>,
}

impl<'a> Store<'a> {
    pub fn new(env: &'a Env) -> Self {
        Store { env, file: None }
    }

    /// The credential from `var`, else from the file at `keys`
    /// (`["web_search", "brave", "api_key"]`). Surrounding whitespace (a
    /// newline from `echo`) is not part of a key.
    pub fn find(&mut self, var: &str, keys: &[&str]) -> Result<Option<Credential>, ToolError> {
        if let Some(value) = self.env.var(var).map(str::trim).filter(|v| !v.is_empty()) {
            return Ok(Some(Credential {
                value: value.to_string(),
                origin: format!("the environment variable {var}"),
            }));
        }
        let Some((path, json)) = self.load()? else {
            return Ok(None);
        };
        let mut node = json;
        for key in keys {
            match node.get(key) {
                Some(next) => node = next,
                None => return Ok(None),
            }
        }
        let dotted = keys.join(".");
        match node {
            Value::Null => Ok(None),
            Value::String(s) if s.trim().is_empty() => Ok(None),
            Value::String(s) => Ok(Some(Credential {
                value: s.trim().to_string(),
                origin: format!("'{dotted}' in {}", path.display()),
            })),
            _ => Err(file_error(format!(
                "'{dotted}' in {} must be a string",
                path.display()
            ))),
        }
    }

    fn load(&mut self) -> Result<Option<&(PathBuf, Value)>, ToolError> {
        if self.file.is_none() {
            self.file = Some(read(self.env)?);
        }
        Ok(self.file.as_ref().and_then(Option::as_ref))
    }
}

fn read(env: &Env) -> Result<Option<(PathBuf, Value)>, ToolError> {
    crate::credentials::read(env).map_err(file_error)
}

/// A credentials file that exists but cannot be used: no usable
/// credentials, so AUTH_MISSING, with the file's own problem as the message.
fn file_error(message: String) -> ToolError {
    ToolError::new(ErrorCode::AuthMissing, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::FILE_NAME;

    const KEYS: &[&str] = &["web_search", "brave", "api_key"];

    fn env_with_file(contents: &str, extra: &[(&str, &str)]) -> (tempfile::TempDir, Env) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ikigai")).unwrap();
        std::fs::write(dir.path().join("ikigai").join(FILE_NAME), contents).unwrap();
        let mut pairs = vec![(
            "XDG_CONFIG_HOME".to_string(),
            dir.path().display().to_string(),
        )];
        pairs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        (dir, Env::from_pairs(pairs))
    }

    #[test]
    fn environment_wins_and_the_file_is_then_not_read() {
        let (_dir, env) = env_with_file("not json", &[("BRAVE_API_KEY", " k-env\n")]);
        let found = Store::new(&env)
            .find("BRAVE_API_KEY", KEYS)
            .unwrap()
            .unwrap();
        assert_eq!(found.value, "k-env");
        assert_eq!(found.origin, "the environment variable BRAVE_API_KEY");
    }

    #[test]
    fn file_in_xdg_config_home() {
        let (dir, env) = env_with_file(r#"{"web_search": {"brave": {"api_key": "k-file"}}}"#, &[]);
        let found = Store::new(&env)
            .find("BRAVE_API_KEY", KEYS)
            .unwrap()
            .unwrap();
        assert_eq!(found.value, "k-file");
        let file = dir.path().join("ikigai/credentials.json");
        assert_eq!(
            found.origin,
            format!("'web_search.brave.api_key' in {}", file.display())
        );
    }

    #[test]
    fn file_under_home_without_xdg() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".config/ikigai");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(FILE_NAME),
            r#"{"web_search": {"google": {"engine_id": "cx1"}}}"#,
        )
        .unwrap();
        let env = Env::from_pairs([("HOME", home.path().to_str().unwrap())]);
        let mut store = Store::new(&env);
        let keys = ["web_search", "google", "engine_id"];
        assert_eq!(
            store
                .find("GOOGLE_SEARCH_ENGINE_ID", &keys)
                .unwrap()
                .unwrap()
                .value,
            "cx1"
        );
        assert_eq!(store.find("BRAVE_API_KEY", KEYS).unwrap(), None);
    }

    #[test]
    fn missing_file_or_entry_is_none() {
        let home = tempfile::tempdir().unwrap();
        let env = Env::from_pairs([("HOME", home.path().to_str().unwrap())]);
        assert_eq!(Store::new(&env).find("BRAVE_API_KEY", KEYS).unwrap(), None);
        assert_eq!(
            Store::new(&Env::default())
                .find("BRAVE_API_KEY", KEYS)
                .unwrap(),
            None
        );
        let (_dir, env) = env_with_file(r#"{"web_search": {"brave": {"api_key": "  "}}}"#, &[]);
        assert_eq!(Store::new(&env).find("BRAVE_API_KEY", KEYS).unwrap(), None);
        let (_dir, env) = env_with_file("[1, 2]", &[]);
        assert_eq!(Store::new(&env).find("BRAVE_API_KEY", KEYS).unwrap(), None);
    }

    #[test]
    fn unusable_file_is_an_error_naming_it() {
        let (dir, env) = env_with_file("{\"web_search\": ", &[]);
        let err = Store::new(&env).find("BRAVE_API_KEY", KEYS).unwrap_err();
        assert_eq!(err.code, ErrorCode::AuthMissing);
        let file = dir.path().join("ikigai/credentials.json");
        assert!(
            err.message.starts_with(&format!(
                "credentials file {} is not valid JSON (EOF while parsing",
                file.display()
            )),
            "{}",
            err.message
        );
        let (_dir, env) = env_with_file(r#"{"web_search": {"brave": {"api_key": 42}}}"#, &[]);
        let err = Store::new(&env).find("BRAVE_API_KEY", KEYS).unwrap_err();
        assert!(err.message.starts_with("'web_search.brave.api_key' in "));
        assert!(err.message.ends_with("credentials.json must be a string"));
    }
}
