//! What a tool or the host may know of the process environment: a snapshot
//! taken once, so configuration is read in one way and unit tests can hand
//! any environment they like. Also the one variable of the protocol between
//! host and tool (`IKIGAI_MAX_OUTPUT`).

use std::collections::HashMap;
use std::path::PathBuf;

/// Set by a host in a tool's environment: how many bytes of the tool's
/// stdout it keeps. Part of the protocol between host and tool, not a
/// setting for people.
pub const MAX_OUTPUT_VAR: &str = "IKIGAI_MAX_OUTPUT";

/// A snapshot of the process environment, so tools read configuration in
/// one way and unit tests can hand them any environment they like.
#[derive(Clone, Debug, Default)]
pub struct Env {
    vars: HashMap<String, String>,
}

impl Env {
    pub fn from_process() -> Self {
        Env {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        }
    }

    /// From `NAME=value` entries, as an environment block holds them
    /// (entries without `=` or not UTF-8 are passed over, as in
    /// `from_process`).
    pub fn from_entries<'a>(entries: impl IntoIterator<Item = &'a [u8]>) -> Self {
        Env {
            vars: entries
                .into_iter()
                .filter_map(|entry| {
                    let entry = std::str::from_utf8(entry).ok()?;
                    let (name, value) = entry.split_once('=')?;
                    Some((name.to_string(), value.to_string()))
                })
                .collect(),
        }
    }

    #[cfg(test)]
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Env {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// A variable's value; an empty value counts as unset.
    pub fn var(&self, key: &str) -> Option<&str> {
        self.vars
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Stub mode (decision 10): deterministic answers, no network.
    pub fn stub(&self) -> bool {
        self.var("SHELLCLAW_STUB") == Some("1") || self.var("IKIGAI_STUB") == Some("1")
    }

    /// The most bytes the host keeps of a tool's stdout, when it says so
    /// (`MAX_OUTPUT_VAR`); the answer is fitted to it (see `truncate`).
    pub fn max_output(&self) -> Option<usize> {
        self.var(MAX_OUTPUT_VAR)?.parse().ok()
    }

    pub fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from)
    }

    /// `$XDG_CONFIG_HOME/ikigai`, or `~/.config/ikigai`.
    pub fn config_dir(&self) -> Option<PathBuf> {
        match self.var("XDG_CONFIG_HOME") {
            Some(dir) => Some(PathBuf::from(dir).join("ikigai")),
            None => self.home().map(|h| h.join(".config").join("ikigai")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stub_flag_and_empty_vars() {
        assert!(Env::from_pairs([("SHELLCLAW_STUB", "1")]).stub());
        assert!(Env::from_pairs([("IKIGAI_STUB", "1")]).stub());
        assert!(!Env::from_pairs([("IKIGAI_STUB", "0")]).stub());
        assert_eq!(Env::from_pairs([("X", "")]).var("X"), None);
    }

    #[test]
    fn entries_split_at_the_first_equals_sign() {
        let entries: [&[u8]; 4] = [b"A=1=2", b"EMPTY=", b"NOEQUALS", b"BAD=\xff"];
        let env = Env::from_entries(entries);
        assert_eq!(env.var("A"), Some("1=2"));
        assert_eq!(env.var("EMPTY"), None);
        assert_eq!(env.var("NOEQUALS"), None);
        assert_eq!(env.var("BAD"), None);
    }

    #[test]
    fn config_dir_honours_xdg() {
        let env = Env::from_pairs([("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")]);
        assert_eq!(env.config_dir(), Some(PathBuf::from("/x/ikigai")));
        let env = Env::from_pairs([("HOME", "/h")]);
        assert_eq!(env.config_dir(), Some(PathBuf::from("/h/.config/ikigai")));
    }
}
