//! What people bring to the agent as files: custom commands, skills and
//! agents, each a Markdown file with front matter, found in the person's
//! ikigai folder, a trusted project's `.ikigai/`, and the folders people
//! already have for other agents (`~/.claude`, a project's `.claude`,
//! `~/.codex`, a project's `.agents`). This room finds and reads them,
//! safely and once, and says where each came from; what a command, a skill
//! or an agent then does is the business of its own module.
//!
//! A project's folders are read only when the project is trusted
//! (decision 87): until then a repository's files are not ours to load.
//! Nothing here stops a start: a file that cannot be used is a `Warning`
//! naming it.

pub mod agents;
pub mod commands;
pub mod front;
pub mod listing;
pub mod project;
pub mod read;
pub mod run;
pub mod skills;
pub mod trust;
pub mod trusted_file;

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::sandbox::Guard;
use crate::tool::Env;

/// Where a file came from, in the words listings use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// `~/.config/ikigai/` (the person's).
    Personal,
    /// A trusted project's `.ikigai/`.
    Project,
    /// `~/.claude/`.
    ClaudeHome,
    /// A trusted project's `.claude/`.
    ClaudeProject,
    /// `~/.codex/`.
    CodexHome,
    /// A trusted project's `.agents/`.
    AgentsProject,
}

impl Origin {
    /// The label a listing shows beside a name.
    pub fn label(self) -> &'static str {
        match self {
            Origin::Personal => "personal",
            Origin::Project => "project",
            Origin::ClaudeHome => "~/.claude",
            Origin::ClaudeProject => "project .claude",
            Origin::CodexHome => "~/.codex",
            Origin::AgentsProject => "project .agents",
        }
    }

    /// Whether the file came with the project (and so needs its trust).
    pub fn in_project(self) -> bool {
        matches!(
            self,
            Origin::Project | Origin::ClaudeProject | Origin::AgentsProject
        )
    }
}

/// The kinds of file this room finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A Markdown file each, named by its file; subfolders give
    /// `DIR:NAME` (docs/custom.md).
    Commands,
    /// A folder each, holding the skill's Markdown file (docs/custom.md).
    Skills,
    /// A Markdown file each, named by its file (docs/custom.md).
    Agents,
}

/// The places files are looked for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Places {
    pub home: Option<PathBuf>,
    /// ikigai's config directory (`~/.config/ikigai`).
    pub config_dir: Option<PathBuf>,
    /// The project's root: the git root above the working directory, else
    /// the working directory.
    pub project: PathBuf,
    /// Whether the project's folders are read (decision 87).
    pub trusted: bool,
    /// Paths no read may reach (decision 72), and those given back.
    pub secret: Vec<PathBuf>,
    pub readable: Vec<PathBuf>,
}

impl Places {
    /// The places for working in `cwd`, with the sandbox's secret paths.
    pub fn here(env: &Env, cwd: &Path, trusted: bool, guard: &Guard) -> Places {
        Places {
            home: env.home(),
            config_dir: env.config_dir(),
            project: project_root(cwd),
            trusted,
            secret: guard.hide.clone(),
            readable: guard.allow_read.clone(),
        }
    }

    /// Every folder of `kind`, highest precedence first: the project's
    /// before the person's (the project's wins a clash), ikigai's own
    /// before other agents'. A project folder that is also a personal one
    /// (a project at the home directory) counts as personal.
    pub fn all_folders(&self, kind: Kind) -> Vec<(Origin, PathBuf)> {
        let (ikigai, claude, codex, agents) = match kind {
            Kind::Commands => ("commands", Some("commands"), Some("prompts"), None),
            Kind::Skills => ("skills", Some("skills"), Some("skills"), Some("skills")),
            Kind::Agents => ("agents", Some("agents"), None, None),
        };
        let mut folders = vec![(Origin::Project, self.project.join(".ikigai").join(ikigai))];
        if let Some(claude) = claude {
            folders.push((
                Origin::ClaudeProject,
                self.project.join(".claude").join(claude),
            ));
        }
        if let Some(agents) = agents {
            folders.push((
                Origin::AgentsProject,
                self.project.join(".agents").join(agents),
            ));
        }
        let mut personal = Vec::new();
        if let Some(dir) = &self.config_dir {
            personal.push((Origin::Personal, dir.join(ikigai)));
        }
        if let Some(home) = &self.home {
            if let Some(claude) = claude {
                personal.push((Origin::ClaudeHome, home.join(".claude").join(claude)));
            }
            if let Some(codex) = codex {
                personal.push((Origin::CodexHome, home.join(".codex").join(codex)));
            }
        }
        folders.retain(|(_, f)| !personal.iter().any(|(_, p)| p == f));
        folders.extend(personal);
        folders
    }

    /// The folders of `kind` that are read: the project's only when trusted.
    pub fn folders(&self, kind: Kind) -> Vec<(Origin, PathBuf)> {
        let mut folders = self.all_folders(kind);
        folders.retain(|(origin, _)| self.trusted || !origin.in_project());
        folders
    }
}

/// The git root above `cwd`, else `cwd`.
pub fn project_root(cwd: &Path) -> PathBuf {
    crate::assistant::context::instructions::git_root(cwd).unwrap_or_else(|| cwd.to_path_buf())
}

/// One file found: a command, a skill's `SKILL.md` or an agent.
#[derive(Clone, Debug, PartialEq)]
pub struct Doc {
    /// `NAME`, `DIR:NAME` for a command in a subfolder, a skill's folder.
    pub name: String,
    /// The file as found (a skill's `SKILL.md`).
    pub path: PathBuf,
    pub origin: Origin,
    /// The front matter, empty when there was none.
    pub meta: Map<String, Value>,
    pub body: String,
}

impl Doc {
    /// A front matter field as text, when it is a string (or a number or
    /// boolean written plainly).
    pub fn field(&self, key: &str) -> Option<String> {
        match self.meta.get(key)? {
            Value::String(s) => Some(s.clone()),
            v @ (Value::Number(_) | Value::Bool(_)) => Some(v.to_string()),
            _ => None,
        }
    }

    /// A field given as a list, or as one string of comma- or
    /// space-separated items (both are written: `allowed-tools: Read, Grep`).
    pub fn list(&self, key: &str) -> Option<Vec<String>> {
        match self.meta.get(key)? {
            Value::Array(items) => Some(
                items
                    .iter()
                    .map(|i| match i {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect(),
            ),
            Value::String(s) => Some(split_items(s)),
            _ => None,
        }
    }
}

/// `Read, Grep` or `Read Grep` or `Bash(git add:*), Read`: items split at
/// commas, or at spaces outside parentheses when there is no comma.
pub fn split_items(text: &str) -> Vec<String> {
    if text.contains(',') {
        return text
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
    }
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            c if c.is_whitespace() && depth == 0 => {
                if !current.is_empty() {
                    items.push(std::mem::take(&mut current));
                }
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.is_empty() {
        items.push(current);
    }
    items
}

/// A file passed over or cut, and why: shown to the person at start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub path: PathBuf,
    pub what: String,
}

impl Warning {
    pub fn new(path: &Path, what: String) -> Warning {
        Warning {
            path: path.to_path_buf(),
            what,
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.what)
    }
}

/// The files of one kind found in the places.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Listing {
    /// One per name, the highest precedence's, in name order.
    pub docs: Vec<Doc>,
    /// Files of a name taken by a file of higher precedence, each with
    /// the path of the one that won.
    pub overridden: Vec<(Doc, PathBuf)>,
    pub warnings: Vec<Warning>,
}

/// Finds and reads every file of `kind` in `places`.
pub fn list(kind: Kind, places: &Places) -> Listing {
    let mut listing = Listing::default();
    for (origin, folder) in places.folders(kind) {
        for doc in read_folder(kind, origin, &folder, places, &mut listing.warnings) {
            match listing.docs.iter().find(|d| d.name == doc.name) {
                Some(winner) => {
                    let by = winner.path.clone();
                    listing.overridden.push((doc, by));
                }
                None => listing.docs.push(doc),
            }
        }
    }
    listing.docs.sort_by(|a, b| a.name.cmp(&b.name));
    listing
}

/// How many files of `kind` a project's own folders hold, read or not:
/// what the trust question counts.
pub fn count_in_project(kind: Kind, places: &Places) -> usize {
    let mut warnings = Vec::new();
    places
        .all_folders(kind)
        .into_iter()
        .filter(|(origin, _)| origin.in_project())
        .map(|(origin, folder)| read_folder(kind, origin, &folder, places, &mut warnings).len())
        .sum()
}

/// The files of one folder, each read and its front matter parsed.
fn read_folder(
    kind: Kind,
    origin: Origin,
    folder: &Path,
    places: &Places,
    warnings: &mut Vec<Warning>,
) -> Vec<Doc> {
    let Some(bounds) = bounds(origin, folder, places, warnings) else {
        return Vec::new();
    };
    let found = match kind {
        Kind::Commands => read::markdown(folder, &bounds, true, warnings),
        Kind::Agents => read::markdown(folder, &bounds, false, warnings),
        Kind::Skills => skill_files(folder, &bounds, warnings),
    };
    let mut docs = Vec::new();
    for file in found {
        let Some(text) = read::text(&file.shown, &file.real, warnings) else {
            continue;
        };
        match front::split(&text) {
            Ok((meta, body)) => docs.push(Doc {
                name: file.name,
                path: file.shown,
                origin,
                meta,
                body: body.to_string(),
            }),
            Err(broken) => warnings.push(Warning::new(&file.shown, format!("skipped: {broken}"))),
        }
    }
    docs
}

/// The bounds of `folder`: its real path, which for a project's folder
/// must lie in the project, and must never be a secret path. None when
/// the folder is missing or out of bounds (with a warning).
fn bounds<'a>(
    origin: Origin,
    folder: &Path,
    places: &'a Places,
    warnings: &mut Vec<Warning>,
) -> Option<read::Bounds<'a>> {
    let root = match folder.canonicalize() {
        Ok(root) => root,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            warnings.push(Warning::new(folder, format!("skipped: {e}")));
            return None;
        }
    };
    if origin.in_project() {
        let project = places.project.canonicalize().unwrap_or_default();
        if !root.starts_with(&project) {
            warnings.push(Warning::new(
                folder,
                format!(
                    "skipped: it is a link to {}, outside the project",
                    root.display()
                ),
            ));
            return None;
        }
    }
    if let Some(secret) = read::secret_of(&root, &places.secret, &places.readable) {
        warnings.push(Warning::new(
            folder,
            format!("skipped: it reaches {}, a secret path", secret.display()),
        ));
        return None;
    }
    if !root.is_dir() {
        return None;
    }
    Some(read::Bounds {
        root,
        secret: &places.secret,
        readable: &places.readable,
    })
}

/// The `SKILL.md` of each skill folder in `folder`, named by its folder.
fn skill_files(
    folder: &Path,
    bounds: &read::Bounds<'_>,
    warnings: &mut Vec<Warning>,
) -> Vec<read::Found> {
    let mut found = Vec::new();
    for (path, name) in read::entries(folder, warnings) {
        if name.starts_with('.') {
            continue;
        }
        let dir = match bounds.resolve(&path) {
            Ok(real) if real.is_dir() => real,
            Ok(_) => continue,
            Err(why) => {
                warnings.push(Warning::new(&path, format!("skipped: {why}")));
                continue;
            }
        };
        let shown = path.join("SKILL.md");
        if std::fs::symlink_metadata(dir.join("SKILL.md")).is_err() {
            continue;
        }
        match bounds.resolve(&shown) {
            Ok(real) => found.push(read::Found { shown, real, name }),
            Err(why) => warnings.push(Warning::new(&shown, format!("skipped: {why}"))),
        }
    }
    found
}

#[cfg(test)]
mod tests;
