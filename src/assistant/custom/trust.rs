//! Project trust (decision 87): nothing a repository ships runs code or
//! widens the agent's rights before the person says so. What a project
//! ships (its `.ikigai/config.toml`, `.mcp.json`, and the commands, skills
//! and agents under `.ikigai/`, `.claude/` and `.agents/`) is found and
//! digested file by file; the person's answer is kept with those digests
//! (`trusted_file`), and a change to any file asks again, showing what
//! changed. Without a terminal nobody can be asked: an untrusted project's
//! files stay unloaded unless `--trust` (or config `trust_projects`) trusts
//! it for the run.
//!
//! The project's config is read whether trusted or not, since what it
//! narrows (a deny rule, a stricter sandbox) holds either way; what it
//! widens holds only when trusted (`narrowed`).

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::trusted_file::{self, Record};
use super::{count_in_project, Kind, Places};
use crate::config::{ApprovalMode, Config};
use crate::sandbox::Mode;

/// The most files of a project digested: past it, the rest count as one
/// change, which still asks.
const MAX_FILES: usize = 5000;

/// What a project ships, and whether it is trusted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Project {
    pub root: PathBuf,
    /// `.ikigai/config.toml`, read by the person's config's reader, when
    /// the project has one.
    pub config: Option<Config>,
    /// `.mcp.json`, when the project has one.
    pub mcp: Option<PathBuf>,
    /// Each hook's event and command, as the question shows them.
    pub hooks: Vec<String>,
    /// Each MCP server's name and command line (or address).
    pub servers: Vec<String>,
    /// How many commands, skills and agents the project's folders hold.
    pub commands: usize,
    pub skills: usize,
    pub agents: usize,
    /// Each shipped file's path under the root and its digest.
    pub files: BTreeMap<String, String>,
    /// Whether its files are loaded (decided by `decide`).
    pub trusted: bool,
}

impl Project {
    /// Finds what the project of `places` ships. Err names a project
    /// config that cannot be read, which stops the start as the person's
    /// own would: its deny rules must not be dropped silently.
    pub fn find(places: &Places) -> Result<Project, String> {
        let root = places.project.clone();
        let mut project = Project {
            root: root.clone(),
            ..Project::default()
        };
        // The home directory is no project: what is there is the person's.
        if places.home.as_deref() == Some(root.as_path()) {
            return Ok(project);
        }
        let bounds = match root.canonicalize() {
            Ok(real) => super::read::Bounds {
                root: real,
                secret: &places.secret,
                readable: &places.readable,
            },
            Err(_) => return Ok(project),
        };
        let config_path = root.join(".ikigai").join("config.toml");
        if std::fs::symlink_metadata(&config_path).is_ok() {
            let real = bounds
                .resolve(&config_path)
                .map_err(|why| format!("{}: {why}", config_path.display()))?;
            let mut warnings = Vec::new();
            let text = super::read::text(&config_path, &real, &mut warnings)
                .ok_or_else(|| warnings.iter().map(|w| w.to_string()).collect::<String>())?;
            project.hooks = hooks(&text);
            let config = crate::config::parse(&text, &config_path).map_err(|e| e.to_string())?;
            project.config = Some(config);
        }
        let mcp = root.join(".mcp.json");
        if std::fs::symlink_metadata(&mcp).is_ok() {
            project.servers = servers(&mcp, &bounds);
            project.mcp = Some(mcp);
        }
        project.commands = count_in_project(Kind::Commands, places);
        project.skills = count_in_project(Kind::Skills, places);
        project.agents = count_in_project(Kind::Agents, places);
        let mut shipped = vec![config_path, root.join(".mcp.json")];
        for kind in [Kind::Commands, Kind::Skills, Kind::Agents] {
            shipped.extend(
                places
                    .all_folders(kind)
                    .into_iter()
                    .filter(|(origin, _)| origin.in_project())
                    .map(|(_, folder)| folder),
            );
        }
        for path in shipped {
            digest_tree(&root, &path, 0, &mut project.files);
        }
        Ok(project)
    }

    /// Whether the project ships anything trust decides on.
    pub fn ships_anything(&self) -> bool {
        !self.files.is_empty()
    }

    /// What the question and the start line list.
    pub fn summary(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for hook in &self.hooks {
            lines.push(format!("hook {hook}"));
        }
        for server in &self.servers {
            lines.push(format!("MCP server {server}"));
        }
        if self.config.is_some() {
            lines.push("settings in .ikigai/config.toml".into());
        }
        lines.push(format!(
            "{} commands, {} skills, {} agents",
            self.commands, self.skills, self.agents
        ));
        lines
    }

    fn record(&self, trusted: bool) -> Record {
        Record {
            root: self.root.clone(),
            trusted,
            files: self.files.clone(),
            summary: self.summary(),
        }
    }
}

/// `EVENT: command` for each `[[hooks.EVENT]]` table of a config's text,
/// read loosely: the question shows what would run even when another part
/// of the file is wrong.
pub fn hooks(text: &str) -> Vec<String> {
    let Ok(value) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let Some(toml::Value::Table(events)) = value.get("hooks") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (event, tables) in events {
        let tables = match tables {
            toml::Value::Array(tables) => tables.clone(),
            other => vec![other.clone()],
        };
        for table in tables {
            let command = table
                .get("command")
                .and_then(|c| c.as_str())
                .unwrap_or("(no command)");
            out.push(format!("{event}: {command}"));
        }
    }
    out
}

/// Each server of a `.mcp.json` as `NAME: COMMAND ARGS` or `NAME: URL`.
fn servers(path: &Path, bounds: &super::read::Bounds<'_>) -> Vec<String> {
    let mut warnings = Vec::new();
    let text = bounds
        .resolve(path)
        .ok()
        .and_then(|real| super::read::text(path, &real, &mut warnings));
    let Some(value) = text.and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok()) else {
        return vec![format!("(cannot read {})", path.display())];
    };
    let Some(servers) = value.get("mcpServers").and_then(|s| s.as_object()) else {
        return Vec::new();
    };
    servers
        .iter()
        .map(|(name, server)| {
            let line = match (server.get("command"), server.get("url")) {
                (Some(command), _) => {
                    let mut words = vec![command.as_str().unwrap_or("?").to_string()];
                    if let Some(args) = server.get("args").and_then(|a| a.as_array()) {
                        words.extend(args.iter().map(|a| a.as_str().unwrap_or("?").to_string()));
                    }
                    words.join(" ")
                }
                (None, Some(url)) => url.as_str().unwrap_or("?").to_string(),
                (None, None) => "(no command)".into(),
            };
            format!("{name}: {line}")
        })
        .collect()
}

/// Adds the digest of `path` (a file, or every file beneath a folder) to
/// `files`, by its path under `root`. Links are not followed: a link is
/// digested as its target's name.
fn digest_tree(root: &Path, path: &Path, depth: usize, files: &mut BTreeMap<String, String>) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    let name = path
        .strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned();
    if files.len() >= MAX_FILES {
        files.insert("(more files)".into(), String::new());
        return;
    }
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).unwrap_or_default();
        files.insert(name, hex(format!("link {}", target.display()).as_bytes()));
    } else if meta.is_dir() && depth < 8 {
        let mut entries: Vec<PathBuf> = match std::fs::read_dir(path) {
            Ok(listing) => listing.flatten().map(|e| e.path()).collect(),
            Err(_) => return,
        };
        entries.sort();
        for entry in entries {
            digest_tree(root, &entry, depth + 1, files);
        }
    } else if meta.is_file() {
        files.insert(name, digest_file(path));
    }
}

/// The SHA-256 of a regular file, read without following a link or
/// blocking; an unreadable file digests as its error, so it still counts.
fn digest_file(path: &Path) -> String {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let mut file = match file {
        Ok(file) => file,
        Err(e) => return hex(format!("unreadable {e}").as_bytes()),
    };
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buffer = [0u8; 64 << 10];
    loop {
        match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => context.update(&buffer[..n]),
            Err(e) => return hex(format!("unreadable {e}").as_bytes()),
        }
    }
    to_hex(context.finish().as_ref())
}

fn hex(bytes: &[u8]) -> String {
    to_hex(ring::digest::digest(&ring::digest::SHA256, bytes).as_ref())
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How the question is put to the person: the text, and their yes or no
/// (None: nobody could answer).
pub type Ask<'a> = &'a mut dyn FnMut(&str) -> Option<bool>;

/// Decides whether `project` is trusted, asking through `ask` (None
/// without a terminal) when the kept answer does not cover the files as
/// they are. `given` is `--trust` or config `trust_projects`. Returns the
/// start line's words, when there is something to say.
pub fn decide(
    project: &mut Project,
    store: Option<&Path>,
    given: bool,
    ask: Option<Ask<'_>>,
) -> Option<String> {
    project.trusted = false;
    if !project.ships_anything() {
        return None;
    }
    let root = project.root.display().to_string();
    if given {
        project.trusted = true;
        return Some(format!("Project {root} trusted for this run (--trust)."));
    }
    let (kept, damage) = match store {
        Some(path) => match trusted_file::read(path) {
            Ok(records) => (records.into_iter().find(|r| r.root == project.root), None),
            Err(why) => (None, Some(why)),
        },
        None => (None, None),
    };
    let unchanged = kept.as_ref().filter(|k| k.files == project.files);
    if let Some(kept) = unchanged {
        project.trusted = kept.trusted;
        return (!kept.trusted).then(|| {
            format!("Project files of {root} not loaded: you chose not to trust it (they are unchanged since).")
        });
    }
    let mut question = String::new();
    if let Some(why) = &damage {
        question += &format!("The trust file cannot be used ({why}); asking again.\n");
    }
    match &kept {
        Some(kept) => {
            question += &format!("The files of {root} changed since you answered:\n");
            for line in changes(&kept.files, &project.files) {
                question += &format!("  {line}\n");
            }
            let before: Vec<&String> = kept.summary.iter().collect();
            for line in project.summary() {
                if !before.contains(&&line) {
                    question += &format!("  now: {line}\n");
                }
            }
        }
        None => {
            question +=
                &format!("{root} ships files that can run code or change what ikigai may do:\n");
            for line in project.summary() {
                question += &format!("  {line}\n");
            }
        }
    }
    question += "Trust this project? Its hooks and MCP servers would run with your rights. [y/N] ";
    let answer = ask.and_then(|ask| ask(&question));
    let Some(answer) = answer else {
        let what = project.summary().join("; ");
        return Some(format!(
            "Project files of {root} not loaded: the project is not trusted ({what}). Run ikigai \
             there at a terminal to answer, or pass --trust."
        ));
    };
    project.trusted = answer;
    let mut note = None;
    if let Some(path) = store {
        if let Err(e) = trusted_file::keep(path, project.record(answer)) {
            note = Some(format!("the answer is not kept: {e}"));
        }
    }
    let said = if answer {
        format!("Project {root} trusted.")
    } else {
        format!("Project files of {root} not loaded: not trusted.")
    };
    Some(match note {
        Some(note) => format!("{said} Warning: {note}"),
        None => said,
    })
}

/// Each file added, removed or changed between two digests.
fn changes(before: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Vec<String> {
    let mut lines = Vec::new();
    for (path, digest) in now {
        match before.get(path) {
            None => lines.push(format!("added {path}")),
            Some(old) if old != digest => lines.push(format!("changed {path}")),
            Some(_) => {}
        }
    }
    for path in before.keys().filter(|p| !now.contains_key(*p)) {
        lines.push(format!("removed {path}"));
    }
    lines
}

/// The part of a project's config that holds: all of it when trusted;
/// otherwise only what narrows (deny rules, `deny_read`, a stricter
/// sandbox, `network = false`, `approval = "ask"`), the rest named in the
/// returned list of what was not applied.
pub fn narrowed(config: &Config, trusted: bool, person: Mode) -> (Config, Vec<&'static str>) {
    if trusted {
        return (config.clone(), Vec::new());
    }
    let mut ignored = Vec::new();
    let mut note = |set: bool, what: &'static str| {
        if set {
            ignored.push(what);
        }
    };
    let stricter = config
        .sandbox
        .filter(|m| strictness(*m) > strictness(person));
    note(config.sandbox.is_some() && stricter.is_none(), "sandbox");
    note(!config.allow.is_empty(), "allow");
    note(config.network == Some(true), "network");
    note(config.approval == Some(ApprovalMode::Auto), "approval");
    note(!config.add_dirs.is_empty(), "add_dirs");
    note(!config.allow_read.is_empty(), "allow_read");
    note(!config.allow_unix_sockets.is_empty(), "allow_unix_sockets");
    note(!config.tools.is_empty(), "tools");
    note(!config.hooks.is_empty(), "hooks");
    note(
        config.provider.is_some() || config.model.is_some(),
        "provider and model",
    );
    let kept = Config {
        path: config.path.clone(),
        sandbox: stricter,
        deny: config.deny.clone(),
        deny_read: config.deny_read.clone(),
        network: config.network.filter(|n| !n),
        approval: config.approval.filter(|a| *a == ApprovalMode::Ask),
        ..Config::default()
    };
    (kept, ignored)
}

/// How much a sandbox mode forbids.
pub fn strictness(mode: Mode) -> u8 {
    match mode {
        Mode::Off => 0,
        Mode::WorkspaceWrite => 1,
        Mode::ReadOnly => 2,
    }
}

#[cfg(test)]
mod tests;
