//! The person's settings file, `config.toml`: the same choices as the
//! command line and the environment, written down once. It lives in
//! `$XDG_CONFIG_HOME/ikigai/` (else `~/.config/ikigai/`), or wherever
//! `IKIGAI_CONFIG` names. A missing default file means no settings; a file
//! named by `IKIGAI_CONFIG` must exist.
//!
//! The file is read strictly: an unknown key, a value of the wrong type or
//! out of range is an error at start that names the file, the line and the
//! key, because a setting silently ignored (a typo in `deny`) is worse than
//! none. Options beat environment variables, which beat this file, which
//! beats the defaults; the callers apply that order, this module only reads.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::sandbox::Mode;
use crate::tool::Env;

/// The variable that names another config file.
pub const CONFIG_VAR: &str = "IKIGAI_CONFIG";

/// Everything the file may say. Every field is optional: what the file
/// leaves out falls back to the defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// The file this came from (None when there was none).
    pub path: Option<PathBuf>,
    /// The assistant's provider (`openai`, `anthropic`, `google`, `stub`, ...).
    pub provider: Option<String>,
    pub model: Option<String>,
    /// `workspace-write`, `read-only` or `off`.
    pub sandbox: Option<Mode>,
    pub approval: Option<ApprovalMode>,
    /// Network sockets for every tool, bash included.
    pub network: Option<bool>,
    /// Approval rules (`TOOL` or `TOOL(PATTERN)`), each with its line, so
    /// a rule that does not parse is reported where it was written.
    pub allow: Vec<Located<String>>,
    pub deny: Vec<Located<String>>,
    /// More directories the sandbox lets tools write, each with its line
    /// (one that does not exist is reported where it was written).
    pub add_dirs: Vec<Located<PathBuf>>,
    /// More paths no sandboxed tool may read (decision 72); `~/` is the
    /// home directory.
    pub deny_read: Vec<PathBuf>,
    /// Paths given back out of the unreadable ones.
    pub allow_read: Vec<PathBuf>,
    /// Unix sockets a sandboxed tool may still connect to (decision 75).
    pub allow_unix_sockets: Vec<PathBuf>,
    /// Bytes of each output the model sees of one call.
    pub model_output: Option<usize>,
    /// The model's reply limit, in tokens.
    pub max_output_tokens: Option<u32>,
    /// The model's context window in tokens, for a model the host does not
    /// know (decision 62).
    pub context_window: Option<u32>,
    /// How many subagents of one reply run at once (decision 86).
    pub max_subagents: Option<u32>,
    /// The fraction of the window at which the conversation is compacted
    /// (0 turns it off).
    pub auto_compact: Option<f64>,
    /// The most bytes of project instructions in the prompt
    /// (docs/instructions.md).
    pub instructions_max_bytes: Option<usize>,
    /// `[tools.NAME]`: per-tool settings, by tool name.
    pub tools: BTreeMap<String, ToolConfig>,
    /// `[limits]`: what one call may take (decision 81).
    pub limits: LimitsConfig,
    /// Trust every project's own files without asking (decision 87).
    pub trust_projects: Option<bool>,
    /// `[[hooks.EVENT]]`: programs run at fixed points of a conversation
    /// (docs/hooks.md), in the order written.
    pub hooks: Vec<Hook>,
}

impl Config {
    /// An error about what the file says at `key` (and `line`, when
    /// known), worded as the file's own errors are: a mistake found after
    /// reading (a directory that does not exist) still names the file.
    pub fn error(&self, key: &str, line: Option<usize>, message: &str) -> String {
        match &self.path {
            Some(path) => ConfigError {
                path: path.clone(),
                line,
                key: Some(key.to_string()),
                message: message.to_string(),
            }
            .to_string(),
            None => format!("{key}: {message}"),
        }
    }
}

/// `[limits]`: each call's resources (decision 81); what is left out keeps
/// the sandbox's default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimitsConfig {
    /// `processes`: processes and threads at once.
    pub processes: Option<u32>,
    /// `memory`: bytes of data per process.
    pub memory: Option<usize>,
    /// `file_size`: bytes per file a call writes.
    pub file_size: Option<usize>,
    /// `memory_total`: bytes of the whole call, where it has a scope.
    pub memory_total: Option<usize>,
}

/// The events a hook may be configured for, as Claude Code names them.
pub const HOOK_EVENTS: [&str; 9] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "Notification",
    "SessionEnd",
];

/// The events whose hooks a `matcher` chooses among: the tool events (the
/// tool's name), SessionStart (its source) and PreCompact (its trigger).
pub const MATCHED_EVENTS: [&str; 4] = ["PreToolUse", "PostToolUse", "SessionStart", "PreCompact"];

/// The default of a hook's `timeout`, in seconds.
pub const HOOK_TIMEOUT: u32 = 60;

/// One `[[hooks.EVENT]]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hook {
    /// One of `HOOK_EVENTS`.
    pub event: String,
    /// A regular expression on the tool's name (or the source, the
    /// trigger); None matches everything.
    pub matcher: Option<String>,
    /// What `sh -c` runs.
    pub command: String,
    /// Seconds before the hook is killed.
    pub timeout: u32,
    /// `fail = "block"`: every failure blocks, as exit 2 does.
    pub fail_block: bool,
    /// `sequential = true` on the event's first table: its hooks run one
    /// after another, in the order written.
    pub sequential: bool,
    /// The line of the table's header.
    pub line: usize,
}

/// A value and the line (1-based) it was written on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located<T> {
    pub value: T,
    pub line: usize,
}

/// `[tools.NAME]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    /// Environment variables passed to this tool although they look like
    /// secrets (`env = ["GITHUB_TOKEN"]`).
    #[serde(default)]
    pub env: Vec<String>,
}

/// How the assistant approves calls (`approval::Mode` there).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    Ask,
    Auto,
}

/// The file as serde reads it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    provider: Option<String>,
    model: Option<String>,
    sandbox: Option<Mode>,
    approval: Option<ApprovalMode>,
    network: Option<bool>,
    #[serde(default)]
    allow: Vec<Spanned<String>>,
    #[serde(default)]
    deny: Vec<Spanned<String>>,
    #[serde(default)]
    add_dirs: Vec<Spanned<PathBuf>>,
    #[serde(default)]
    deny_read: Vec<PathBuf>,
    #[serde(default)]
    allow_read: Vec<PathBuf>,
    #[serde(default)]
    allow_unix_sockets: Vec<PathBuf>,
    model_output: Option<Size>,
    max_output_tokens: Option<Positive>,
    context_window: Option<Positive>,
    max_subagents: Option<Positive>,
    auto_compact: Option<Fraction>,
    instructions_max_bytes: Option<Size>,
    #[serde(default)]
    tools: BTreeMap<String, ToolConfig>,
    limits: Option<RawLimits>,
    trust_projects: Option<bool>,
    #[serde(default)]
    hooks: RawHooks,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    processes: Option<Positive>,
    memory: Option<Size>,
    file_size: Option<Size>,
    memory_total: Option<Size>,
}

/// `[hooks]`: one list of tables per event; a misspelt event is an unknown
/// field, named with its line.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
struct RawHooks {
    #[serde(default)]
    SessionStart: Vec<Spanned<RawHook>>,
    #[serde(default)]
    UserPromptSubmit: Vec<Spanned<RawHook>>,
    #[serde(default)]
    PreToolUse: Vec<Spanned<RawHook>>,
    #[serde(default)]
    PostToolUse: Vec<Spanned<RawHook>>,
    #[serde(default)]
    Stop: Vec<Spanned<RawHook>>,
    #[serde(default)]
    SubagentStop: Vec<Spanned<RawHook>>,
    #[serde(default)]
    PreCompact: Vec<Spanned<RawHook>>,
    #[serde(default)]
    Notification: Vec<Spanned<RawHook>>,
    #[serde(default)]
    SessionEnd: Vec<Spanned<RawHook>>,
}

impl RawHooks {
    /// The tables by event, in `HOOK_EVENTS`' order.
    fn into_events(self) -> [(&'static str, Vec<Spanned<RawHook>>); 9] {
        [
            ("SessionStart", self.SessionStart),
            ("UserPromptSubmit", self.UserPromptSubmit),
            ("PreToolUse", self.PreToolUse),
            ("PostToolUse", self.PostToolUse),
            ("Stop", self.Stop),
            ("SubagentStop", self.SubagentStop),
            ("PreCompact", self.PreCompact),
            ("Notification", self.Notification),
            ("SessionEnd", self.SessionEnd),
        ]
    }
}

/// One `[[hooks.EVENT]]` table as serde reads it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHook {
    matcher: Option<Spanned<String>>,
    command: Spanned<String>,
    timeout: Option<Positive>,
    fail: Option<Fail>,
    sequential: Option<Spanned<bool>>,
}

/// `fail`: what a hook's failure (an exit other than 0 and 2, a timeout, a
/// crash, output that is not the JSON it should be) does.
#[derive(Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum Fail {
    /// Shown to the person; nothing is blocked (Claude Code's way).
    Report,
    /// Blocks as exit 2 does: a guard fails closed.
    Block,
}

/// A byte count: an integer, or a string with a `K`, `M` or `G` suffix.
struct Size(usize);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Size, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Size;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of bytes above 0, or a string such as \"32K\"")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Size, E> {
                match usize::try_from(n) {
                    Ok(n) if n > 0 => Ok(Size(n)),
                    _ => Err(E::custom(format!(
                        "invalid size {n}: expected a number of bytes above 0"
                    ))),
                }
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Size, E> {
                crate::size::parse_size(s).map(Size).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// An integer above 0 that fits in 32 bits.
struct Positive(u32);

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Positive, D::Error> {
        let n = i64::deserialize(d)?;
        match u32::try_from(n) {
            Ok(n) if n > 0 => Ok(Positive(n)),
            _ => Err(de::Error::custom(format!(
                "{n} is out of range: expected a number from 1 to {}",
                u32::MAX
            ))),
        }
    }
}

/// A number from 0 to 1 (`auto_compact`).
struct Fraction(f64);

impl<'de> Deserialize<'de> for Fraction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fraction, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Fraction;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a fraction from 0 to 1 (0.85; 0 turns it off)")
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Fraction, E> {
                if (0.0..=1.0).contains(&n) {
                    Ok(Fraction(n))
                } else {
                    Err(E::custom(format!(
                        "{n} is out of range: expected a fraction from 0 to 1 (0 turns it off)"
                    )))
                }
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Fraction, E> {
                self.visit_f64(n as f64)
            }
        }
        d.deserialize_any(V)
    }
}

/// Why the file could not be used: everything a person needs to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub path: PathBuf,
    /// 1-based; None when the file could not be read at all.
    pub line: Option<usize>,
    /// The key, dotted for nested tables (`tools.bash.env`), when known.
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ", key '{key}'")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Which file to read: `IKIGAI_CONFIG` (which must exist), else the
/// default place (which may not).
pub fn location(env: &Env) -> Option<(PathBuf, bool)> {
    if let Some(named) = env.var(CONFIG_VAR) {
        return Some((PathBuf::from(named), true));
    }
    env.config_dir().map(|d| (d.join("config.toml"), false))
}

/// Reads the config file the environment points at; no file at the
/// default place is an empty config.
pub fn load(env: &Env) -> Result<Config, ConfigError> {
    let Some((path, required)) = location(env) else {
        return Ok(Config::default());
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(&text, &path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => Ok(Config::default()),
        Err(e) => Err(ConfigError {
            message: format!("cannot read the config file: {e}"),
            path,
            line: None,
            key: None,
        }),
    }
}

/// Parses the text of the file at `path`.
pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
    let raw: Raw = toml::from_str(text).map_err(|e| {
        let span = e.span();
        ConfigError {
            path: path.to_path_buf(),
            line: span.as_ref().map(|s| line_of(text, s.start)),
            key: span.and_then(|s| key_at(text, s.start)),
            message: e.message().trim_end().to_string(),
        }
    })?;
    fn located<T>(text: &str, items: Vec<Spanned<T>>) -> Vec<Located<T>> {
        items
            .into_iter()
            .map(|r| Located {
                line: line_of(text, r.span().start),
                value: r.into_inner(),
            })
            .collect()
    }
    let limits = raw
        .limits
        .map_or(LimitsConfig::default(), |l| LimitsConfig {
            processes: l.processes.map(|p| p.0),
            memory: l.memory.map(|s| s.0),
            file_size: l.file_size.map(|s| s.0),
            memory_total: l.memory_total.map(|s| s.0),
        });
    let hooks = hooks(raw.hooks, text, path)?;
    Ok(Config {
        hooks,
        path: Some(path.to_path_buf()),
        provider: raw.provider,
        model: raw.model,
        sandbox: raw.sandbox,
        approval: raw.approval,
        network: raw.network,
        allow: located(text, raw.allow),
        deny: located(text, raw.deny),
        add_dirs: located(text, raw.add_dirs),
        deny_read: raw.deny_read,
        allow_read: raw.allow_read,
        allow_unix_sockets: raw.allow_unix_sockets,
        model_output: raw.model_output.map(|s| s.0),
        max_output_tokens: raw.max_output_tokens.map(|p| p.0),
        context_window: raw.context_window.map(|p| p.0),
        max_subagents: raw.max_subagents.map(|p| p.0),
        auto_compact: raw.auto_compact.map(|f| f.0),
        instructions_max_bytes: raw.instructions_max_bytes.map(|s| s.0),
        tools: raw.tools,
        limits,
        trust_projects: raw.trust_projects,
    })
}

/// The hook tables, checked beyond their types: a command that is empty,
/// a matcher on an event that has nothing to match or that is not a
/// regular expression, `sequential` anywhere but on the event's first
/// table.
fn hooks(raw: RawHooks, text: &str, path: &Path) -> Result<Vec<Hook>, ConfigError> {
    let mut out = Vec::new();
    for (event, tables) in raw.into_events() {
        for (index, table) in tables.into_iter().enumerate() {
            let line = line_of(text, table.span().start);
            let table = table.into_inner();
            let wrong = |at: usize, field: &str, message: String| ConfigError {
                path: path.to_path_buf(),
                line: Some(line_of(text, at)),
                key: Some(format!("hooks.{event}.{field}")),
                message,
            };
            let command = table.command.get_ref().trim();
            if command.is_empty() {
                return Err(wrong(
                    table.command.span().start,
                    "command",
                    "the command is empty: name the program the hook runs".into(),
                ));
            }
            let matcher = match table.matcher {
                None => None,
                Some(m) if !MATCHED_EVENTS.contains(&event) => {
                    return Err(wrong(
                        m.span().start,
                        "matcher",
                        format!(
                            "{event} hooks have nothing to match: a matcher applies to {}",
                            MATCHED_EVENTS.join(", ")
                        ),
                    ))
                }
                Some(m) => {
                    // `*` (Claude Code's "every tool") is not an expression.
                    let every = m.get_ref().is_empty() || m.get_ref() == "*";
                    let checked = if every {
                        Ok(())
                    } else {
                        regex::Regex::new(m.get_ref()).map(drop)
                    };
                    if let Err(e) = checked {
                        let why = e.to_string();
                        let why = why.lines().last().unwrap_or("").trim();
                        return Err(wrong(
                            m.span().start,
                            "matcher",
                            format!("'{}' is not a regular expression: {why}", m.get_ref()),
                        ));
                    }
                    Some(m.into_inner())
                }
            };
            let sequential = match table.sequential {
                Some(s) if index > 0 => {
                    return Err(wrong(
                        s.span().start,
                        "sequential",
                        format!(
                            "sequential belongs on the first [[hooks.{event}]] table (it orders \
                             all of the event's hooks)"
                        ),
                    ))
                }
                Some(s) => s.into_inner(),
                None => false,
            };
            out.push(Hook {
                event: event.to_string(),
                matcher,
                command: command.to_string(),
                timeout: table.timeout.map_or(HOOK_TIMEOUT, |t| t.0),
                fail_block: table.fail == Some(Fail::Block),
                sequential,
                line,
            });
        }
    }
    // In the order written, whatever the event.
    out.sort_by_key(|h| h.line);
    Ok(out)
}

/// The 1-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The dotted key whose name or value holds byte `offset`, the deepest one.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let table = DeTable::parse(text).ok()?;
    let mut path = Vec::new();
    find(table.get_ref(), offset, &mut path).then(|| path.join("."))
}

fn find(table: &DeTable<'_>, offset: usize, path: &mut Vec<String>) -> bool {
    for (key, value) in table {
        path.push(key.get_ref().to_string());
        // A table's span is its header; its keys lie after it, so nested
        // tables are searched first, whatever their span says.
        if let DeValue::Table(inner) = value.get_ref() {
            if find(inner, offset, path) {
                return true;
            }
        }
        // An array of tables (`[[hooks.Stop]]`): its tables' keys, each
        // named without an index.
        if let DeValue::Array(items) = value.get_ref() {
            for item in items {
                if let DeValue::Table(inner) = item.get_ref() {
                    if find(inner, offset, path) {
                        return true;
                    }
                }
            }
        }
        if key.span().contains(&offset) || value.span().contains(&offset) {
            return true;
        }
        path.pop();
    }
    false
}

#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse(text, Path::new("/c/config.toml"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn every_key_is_read() {
        let text = r#"
provider = "anthropic"
model = "claude-x"
sandbox = "read-only"
approval = "auto"
network = true
allow = ["bash(cargo test*)", "file_write(src/**)"]
deny = ["bash(rm *)"]
add_dirs = ["/data", "../other"]
model_output = "64K"
max_output_tokens = 4096
context_window = 32000
max_subagents = 2
auto_compact = 0.7
instructions_max_bytes = "16K"
deny_read = ["~/private"]
allow_read = ["~/.aws/config"]
allow_unix_sockets = ["/run/user/1/db.sock"]
trust_projects = true

[tools.bash]
env = ["GITHUB_TOKEN"]

[limits]
processes = 100
memory = "2G"
file_size = 1048576
memory_total = "6G"
"#;
        let c = parse(text, Path::new("/c/config.toml")).unwrap();
        assert_eq!(c.provider.as_deref(), Some("anthropic"));
        assert_eq!(c.model.as_deref(), Some("claude-x"));
        assert_eq!(c.sandbox, Some(Mode::ReadOnly));
        assert_eq!(c.approval, Some(ApprovalMode::Auto));
        assert_eq!(c.network, Some(true));
        assert_eq!(c.deny_read, [PathBuf::from("~/private")]);
        assert_eq!(c.allow_read, [PathBuf::from("~/.aws/config")]);
        assert_eq!(c.allow_unix_sockets, [PathBuf::from("/run/user/1/db.sock")]);
        assert_eq!(
            c.allow,
            [
                Located {
                    value: "bash(cargo test*)".to_string(),
                    line: 7
                },
                Located {
                    value: "file_write(src/**)".to_string(),
                    line: 7
                }
            ]
        );
        assert_eq!(c.deny[0].line, 8);
        assert_eq!(
            c.add_dirs,
            [
                Located {
                    value: PathBuf::from("/data"),
                    line: 9
                },
                Located {
                    value: PathBuf::from("../other"),
                    line: 9
                }
            ]
        );
        assert_eq!(
            c.limits,
            LimitsConfig {
                processes: Some(100),
                memory: Some(2 << 30),
                file_size: Some(1 << 20),
                memory_total: Some(6 << 30),
            }
        );
        assert_eq!(c.model_output, Some(64 << 10));
        assert_eq!(c.max_output_tokens, Some(4096));
        assert_eq!(c.context_window, Some(32000));
        assert_eq!(c.max_subagents, Some(2));
        assert_eq!(c.auto_compact, Some(0.7));
        assert_eq!(c.instructions_max_bytes, Some(16 << 10));
        assert_eq!(
            parse("auto_compact = 0\n", Path::new("x"))
                .unwrap()
                .auto_compact,
            Some(0.0)
        );
        assert_eq!(c.tools["bash"].env, ["GITHUB_TOKEN"]);
        assert_eq!(c.trust_projects, Some(true));
        assert_eq!(c.path.as_deref(), Some(Path::new("/c/config.toml")));
        let c = parse("model_output = 1000\n", Path::new("x")).unwrap();
        assert_eq!(c.model_output, Some(1000));
        assert_eq!(parse("", Path::new("x")).unwrap().approval, None);
    }

    #[test]
    fn the_limits_keys_are_checked_and_named() {
        let e = err("[limits]\nmemory = \"8T\"\n");
        assert!(
            e.starts_with("/c/config.toml, line 2, key 'limits.memory': invalid size '8T'"),
            "{e}"
        );
        let e = err("[limits]\nprocesses = 0\n");
        assert!(
            e.starts_with("/c/config.toml, line 2, key 'limits.processes': 0 is out of range"),
            "{e}"
        );
        let e = err("[limits]\nfiles = 3\n");
        assert!(
            e.starts_with("/c/config.toml, line 2, key 'limits.files': unknown field `files`"),
            "{e}"
        );
        let c = parse("add_dirs = [\"/a\"]\n", Path::new("/c/config.toml")).unwrap();
        assert_eq!(
            c.error("add_dirs", Some(1), "'/a' is not a directory"),
            "/c/config.toml, line 1, key 'add_dirs': '/a' is not a directory"
        );
        assert_eq!(
            Config::default().error("deny_read", None, "x"),
            "deny_read: x"
        );
    }

    #[test]
    fn unknown_keys_name_file_line_and_key() {
        let e = err("model = \"m\"\naproval = \"ask\"\n");
        assert!(
            e.starts_with("/c/config.toml, line 2, key 'aproval': unknown field `aproval`"),
            "{e}"
        );
        let e = err("[tools.bash]\nenv = []\nenvs = [\"X\"]\n");
        assert!(
            e.starts_with("/c/config.toml, line 3, key 'tools.bash.envs': unknown field `envs`"),
            "{e}"
        );
    }

    #[test]
    fn wrong_types_and_values_name_file_line_and_key() {
        for (text, line, key, says) in [
            (
                "\nnetwork = \"yes\"\n",
                2,
                "network",
                "invalid type: string",
            ),
            (
                "approval = \"sometimes\"\n",
                1,
                "approval",
                "unknown variant `sometimes`",
            ),
            (
                "sandbox = \"none\"\n",
                1,
                "sandbox",
                "unknown variant `none`",
            ),
            ("a = 1\n", 1, "a", "unknown field"),
            (
                "allow = [\"bash\",\n  3]\n",
                2,
                "allow",
                "invalid type: integer",
            ),
            ("model_output = 0\n", 1, "model_output", "invalid size 0"),
            (
                "model_output = \"lots\"\n",
                1,
                "model_output",
                "invalid size 'lots'",
            ),
            (
                "max_output_tokens = -5\n",
                1,
                "max_output_tokens",
                "-5 is out of range",
            ),
            (
                "[tools.bash]\nenv = \"X\"\n",
                2,
                "tools.bash.env",
                "invalid type: string",
            ),
            ("tools = 3\n", 1, "tools", "invalid type: integer"),
            (
                "auto_compact = 1.5\n",
                1,
                "auto_compact",
                "1.5 is out of range",
            ),
            (
                "auto_compact = \"85%\"\n",
                1,
                "auto_compact",
                "a fraction from 0 to 1",
            ),
            (
                "context_window = 0\n",
                1,
                "context_window",
                "0 is out of range",
            ),
        ] {
            let e = err(text);
            let head = format!("/c/config.toml, line {line}, key '{key}': ");
            assert!(e.starts_with(&head) && e.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn hook_tables_are_read_in_the_order_written() {
        let text = r#"
[[hooks.PreToolUse]]
matcher = "Bash"
command = "  ./guard.sh  "
timeout = 5
fail = "block"
sequential = true

[[hooks.Stop]]
command = "./stop.sh"

[[hooks.PreToolUse]]
matcher = "*"
command = "./log.sh"
fail = "report"
"#;
        let c = parse(text, Path::new("/c/config.toml")).unwrap();
        // event, matcher, command, timeout, fail_block, sequential, line
        type Row<'a> = (&'a str, Option<&'a str>, &'a str, u32, bool, bool, usize);
        let got: Vec<Row> = c
            .hooks
            .iter()
            .map(|h| {
                (
                    h.event.as_str(),
                    h.matcher.as_deref(),
                    h.command.as_str(),
                    h.timeout,
                    h.fail_block,
                    h.sequential,
                    h.line,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("PreToolUse", Some("Bash"), "./guard.sh", 5, true, true, 2),
                ("Stop", None, "./stop.sh", 60, false, false, 9),
                ("PreToolUse", Some("*"), "./log.sh", 60, false, false, 12),
            ]
        );
    }

    #[test]
    fn a_wrong_hook_table_names_file_line_and_key() {
        for (text, line, key, says) in [
            (
                "[[hooks.PreToolUse]]\ncommand = \"a\"\n[[hooks.PreToolUse]]\ncommand = \"b\"\nsequential = true\n",
                5,
                "hooks.PreToolUse.sequential",
                "sequential belongs on the first [[hooks.PreToolUse]] table",
            ),
            (
                "[[hooks.Stop]]\ncommand = \"  \"\n",
                2,
                "hooks.Stop.command",
                "the command is empty",
            ),
            (
                "[[hooks.Notification]]\nmatcher = \"x\"\ncommand = \"a\"\n",
                2,
                "hooks.Notification.matcher",
                "Notification hooks have nothing to match",
            ),
            (
                "[[hooks.PreToolUse]]\nmatcher = \"[\"\ncommand = \"a\"\n",
                2,
                "hooks.PreToolUse.matcher",
                "'[' is not a regular expression",
            ),
            (
                "[[hooks.Stop]]\ncommand = \"a\"\ntimeout = 0\n",
                3,
                "hooks.Stop.timeout",
                "0 is out of range",
            ),
            (
                "[[hooks.Stop]]\ncomand = \"a\"\n",
                2,
                "hooks.Stop.comand",
                "unknown field `comand`",
            ),
            (
                "[[hooks.Stopp]]\ncommand = \"a\"\n",
                1,
                "hooks.Stopp",
                "unknown field `Stopp`",
            ),
        ] {
            let e = err(text);
            let head = format!("/c/config.toml, line {line}, key '{key}': ");
            assert!(e.starts_with(&head) && e.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = err("model = \"m\"\nprovider = \n");
        assert!(e.starts_with("/c/config.toml, line 2"), "{e}");
    }

    #[test]
    fn where_the_file_is() {
        let env = Env::from_pairs([("HOME", "/h")]);
        assert_eq!(
            location(&env),
            Some((PathBuf::from("/h/.config/ikigai/config.toml"), false))
        );
        let env = Env::from_pairs([("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")]);
        assert_eq!(
            location(&env),
            Some((PathBuf::from("/x/ikigai/config.toml"), false))
        );
        let env = Env::from_pairs([("HOME", "/h"), (CONFIG_VAR, "/o.toml")]);
        assert_eq!(location(&env), Some((PathBuf::from("/o.toml"), true)));
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap();
        assert_eq!(
            load(&Env::from_pairs([("HOME", home)])),
            Ok(Config::default())
        );
        let missing = dir.path().join("nope.toml");
        let e = load(&Env::from_pairs([(CONFIG_VAR, missing.to_str().unwrap())])).unwrap_err();
        assert!(e.to_string().contains("cannot read the config file"), "{e}");
    }

    #[test]
    fn a_file_that_is_not_utf8_is_named_not_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, b"model = \"\xff\xfe\"\n").unwrap();
        let e = load(&Env::from_pairs([(CONFIG_VAR, bad.to_str().unwrap())])).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains(bad.to_str().unwrap()) && text.contains("valid UTF-8"),
            "{text}"
        );
    }
}
