//! The tools the host may run, by name (default-deny, only discovered names
//! run), and the files it skipped with the reason, so a person adding a tool
//! can see what went wrong. Built by discovery; read by everything else.

use std::path::PathBuf;

use serde_json::{json, Map, Value};

pub use crate::protocol::Protocol;

/// Which directory a tool came from (decision 11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    System,
    User,
    /// Listed by an MCP server of the user's configuration.
    Mcp,
    /// The assistant's own tools (shell_start, update_plan, ...:
    /// `host::own`), answered by the assistant itself, never served over MCP.
    Host,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::System => "system",
            Origin::User => "user",
            Origin::Mcp => "mcp",
            Origin::Host => "host",
        }
    }
}

/// One runnable tool.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The schema's name, the one the model calls.
    pub name: String,
    pub description: String,
    /// The file as found in its directory (not resolved through links, so a
    /// link to a multicall binary keeps the name that selects the tool); for
    /// an MCP tool, the name of its server.
    pub path: PathBuf,
    pub protocol: Protocol,
    pub origin: Origin,
    /// The normalised schema: `{"name", "description", "parameters",
    /// ["annotations"]}` with `parameters` in JSON-Schema form (an MCP
    /// tool's annotations are its server's). Provider formats read only the
    /// first three keys.
    pub schema: Value,
}

impl Entry {
    /// The `parameters` JSON Schema.
    pub fn parameters(&self) -> &Value {
        &self.schema["parameters"]
    }

    /// The MCP annotations the tool declared (`readOnlyHint`, ...), as it
    /// declared them; None for a tool that declared none.
    pub fn annotations(&self) -> Option<&Map<String, Value>> {
        self.schema.get("annotations").and_then(Value::as_object)
    }

    /// One hint, false unless the tool declared it true: a tool that says
    /// nothing about itself is neither read-only nor safe.
    pub fn hint(&self, name: &str) -> bool {
        self.annotations()
            .and_then(|a| a.get(name))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// True when the tool declared `readOnlyHint: true`: such calls may run
    /// together and need no approval.
    pub fn read_only(&self) -> bool {
        self.hint("readOnlyHint")
    }
}

/// A file that is not a tool, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// The discovered tools, sorted by name, and the skipped files, sorted by path.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Registry {
    entries: Vec<Entry>,
    skipped: Vec<Skipped>,
}

impl Registry {
    /// Builds a registry from discovered tools in scan order (system
    /// directory first, then user directory, each by file name): a later
    /// user tool shadows an earlier system tool of the same name; within one
    /// directory the first file keeps the name. The losers are skipped, with
    /// the winner's path as the reason.
    pub fn build(found: Vec<Entry>, mut skipped: Vec<Skipped>) -> Registry {
        let mut entries: Vec<Entry> = Vec::new();
        for entry in found {
            match entries.iter().position(|e| e.name == entry.name) {
                None => entries.push(entry),
                Some(i) if entries[i].origin == Origin::System && entry.origin == Origin::User => {
                    let shadowed = std::mem::replace(&mut entries[i], entry);
                    skipped.push(Skipped {
                        reason: format!(
                            "tool '{}' is shadowed by the user's {}",
                            shadowed.name,
                            entries[i].path.display()
                        ),
                        path: shadowed.path,
                    });
                }
                Some(i) => skipped.push(Skipped {
                    reason: format!(
                        "tool '{}' is already provided by {}",
                        entry.name,
                        entries[i].path.display()
                    ),
                    path: entry.path,
                }),
            }
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        Registry { entries, skipped }
    }

    /// This registry with the host's own tools (`host::own`) added: they
    /// take their names from any discovered tool, which is skipped, so a
    /// file in a tool directory cannot stand in for the host.
    pub fn with_own(mut self, own: Vec<Entry>) -> Registry {
        for entry in own {
            if let Some(i) = self.entries.iter().position(|e| e.name == entry.name) {
                let shadowed = self.entries.remove(i);
                self.skipped.push(Skipped {
                    reason: format!("tool '{}' is one of the assistant's own", shadowed.name),
                    path: shadowed.path,
                });
            }
            self.entries.push(entry);
        }
        self.entries.sort_by(|a, b| a.name.cmp(&b.name));
        self.skipped.sort_by(|a, b| a.path.cmp(&b.path));
        self
    }

    /// This registry without the host's own tools: what discovery found.
    pub fn discovered(&self) -> Registry {
        Registry {
            entries: self
                .entries
                .iter()
                .filter(|e| e.origin != Origin::Host)
                .cloned()
                .collect(),
            skipped: self.skipped.clone(),
        }
    }

    /// Every tool, sorted by name.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The tool of that name, if discovered: nothing else may run.
    pub fn lookup(&self, name: &str) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| e.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.entries[i])
    }

    /// Files that were considered and are not tools, with the reason.
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// How many tools there are, the assistant's own (`Origin::Host`) left
    /// out: those found on disk or listed by MCP servers.
    pub fn found(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| e.origin != Origin::Host)
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The tool names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// The listing of `ikigai tools --json` (decision 20).
    pub fn to_json(&self) -> Value {
        json!({
            "tools": self.entries.iter().map(|e| json!({
                "name": e.name,
                "description": e.description,
                "path": e.path.to_string_lossy(),
                "protocol": e.protocol.as_str(),
            })).collect::<Vec<_>>(),
            "skipped": self.skipped.iter().map(|s| json!({
                "path": s.path.to_string_lossy(),
                "reason": s.reason,
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn entry(name: &str, path: &str, origin: Origin, parameters: Value) -> Entry {
        Entry {
            name: name.into(),
            description: format!("{name} does things"),
            path: path.into(),
            protocol: Protocol::Ikigai,
            origin,
            schema: json!({"name": name, "description": format!("{name} does things"), "parameters": parameters}),
        }
    }

    fn plain(name: &str, path: &str, origin: Origin) -> Entry {
        entry(
            name,
            path,
            origin,
            json!({"type": "object", "properties": {}}),
        )
    }

    #[test]
    fn sorted_lookup_and_default_deny() {
        let r = Registry::build(
            vec![
                plain("zeta", "/s/zeta", Origin::System),
                plain("alpha", "/s/alpha", Origin::System),
            ],
            vec![],
        );
        assert_eq!(r.names(), ["alpha", "zeta"]);
        assert_eq!(r.lookup("zeta").unwrap().path, PathBuf::from("/s/zeta"));
        assert!(r.lookup("beta").is_none());
        assert!(r.lookup("").is_none());
    }

    #[test]
    fn user_shadows_system_and_first_file_keeps_its_name() {
        let r = Registry::build(
            vec![
                plain("x", "/s/a", Origin::System),
                plain("x", "/s/b", Origin::System),
                plain("x", "/u/x", Origin::User),
                plain("x", "/u/y", Origin::User),
            ],
            vec![Skipped {
                path: "/s/0".into(),
                reason: "r".into(),
            }],
        );
        assert_eq!(r.lookup("x").unwrap().path, PathBuf::from("/u/x"));
        let skipped: Vec<(String, String)> = r
            .skipped()
            .iter()
            .map(|s| (s.path.display().to_string(), s.reason.clone()))
            .collect();
        assert_eq!(
            skipped,
            [
                ("/s/0".to_string(), "r".to_string()),
                (
                    "/s/a".into(),
                    "tool 'x' is shadowed by the user's /u/x".into()
                ),
                ("/s/b".into(), "tool 'x' is already provided by /s/a".into()),
                ("/u/y".into(), "tool 'x' is already provided by /u/x".into()),
            ]
        );
    }

    #[test]
    fn annotations_say_what_a_tool_declared_and_nothing_more() {
        let mut e = plain("r", "/s/r", Origin::System);
        assert!(e.annotations().is_none());
        assert!(!e.read_only());
        e.schema["annotations"] = json!({"readOnlyHint": true, "openWorldHint": true});
        assert!(e.read_only());
        assert!(e.hint("openWorldHint"));
        assert!(!e.hint("destructiveHint"));
    }

    #[test]
    fn json_listing() {
        let r = Registry::build(
            vec![plain("a", "/s/a", Origin::System)],
            vec![Skipped {
                path: "/s/b".into(),
                reason: "why".into(),
            }],
        );
        assert_eq!(
            r.to_json(),
            json!({"tools": [{"name": "a", "description": "a does things", "path": "/s/a", "protocol": "ikigai"}],
                   "skipped": [{"path": "/s/b", "reason": "why"}]})
        );
    }
}
