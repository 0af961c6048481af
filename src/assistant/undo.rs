//! Undo (decision 70; docs/decisions.md 105): before a file_write,
//! file_edit or apply_patch call runs, the bytes of every file it may change
//! (or the fact that the file did not exist) are kept, grouped by the
//! person's message; `/undo` puts back the files of the newest message that
//! changed any, asking first about a file that someone changed since.
//!
//! A file's first state in a message is the one kept (a later call in the
//! same message finds it kept already); after each call the file's identity
//! (inode, size, modification and change times) is noted, so `/undo` can
//! tell the model's last write from a later change by someone else. The
//! store lives under the session's directory (`ID/undo/`), at most
//! `MAX_STORE` bytes (older messages dropped first); a file over
//! `MAX_FILE` is not kept, and the call says so. Changes made through bash
//! (or a background shell) are not tracked: the message remembers that one
//! ran, and `/undo` says so.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The most bytes kept per session.
pub const MAX_STORE: u64 = 1 << 30;
/// The largest file kept.
pub const MAX_FILE: u64 = 64 << 20;

/// The tools whose files are kept, and the shells whose are not.
const WRITERS: [&str; 3] = ["file_write", "file_edit", "apply_patch"];
const SHELLS: [&str; 2] = ["bash", "shell_start"];

#[derive(Default)]
pub struct Undo {
    /// The person's message now being answered (counts from 1).
    message: u64,
    turns: Vec<Turn>,
    /// The bytes the store holds.
    bytes: u64,
    dir: Option<PathBuf>,
    temp: Option<tempfile::TempDir>,
}

struct Turn {
    message: u64,
    files: Vec<Kept>,
    /// A bash call (or background shell) ran in this message.
    bash: bool,
}

struct Kept {
    path: PathBuf,
    before: Before,
    /// The file as it was before the first call, and after the last.
    first: Option<Stamp>,
    last: Option<Stamp>,
}

enum Before {
    Absent,
    /// Its bytes, in this file of the store, and its permission bits.
    Saved(PathBuf, u64, u32),
    /// Over `MAX_FILE` (or the store is full): not kept.
    NotKept(String),
}

/// What tells one state of a file from another without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

fn stamp(path: &Path) -> Option<Stamp> {
    let m = fs::metadata(path).ok()?;
    Some(Stamp {
        ino: m.ino(),
        len: m.len(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
    })
}

/// What `/undo` did.
#[derive(Debug, Default, PartialEq)]
pub struct Report {
    pub restored: Vec<PathBuf>,
    /// Changed since by someone else, and left as they are.
    pub left: Vec<PathBuf>,
    /// Could not be restored: the file and why.
    pub failed: Vec<(PathBuf, String)>,
    /// Not kept (over the size limit): the file and why.
    pub not_kept: Vec<(PathBuf, String)>,
    /// A bash call ran in that message: its changes stay.
    pub bash: bool,
}

impl Undo {
    /// A new message from the person: calls from now on are its own.
    pub fn next_message(&mut self) {
        self.message += 1;
    }

    /// Before a call runs: keeps the files `tool` may change. `session`:
    /// the session's directory (a private temporary one when None). Returns
    /// a note for the person when a file is not kept.
    pub fn before_call(
        &mut self,
        tool: &str,
        arguments: &Value,
        session: Option<&Path>,
    ) -> Option<String> {
        if SHELLS.contains(&tool) {
            self.turn().bash = true;
            return None;
        }
        let paths = paths_of(tool, arguments);
        if paths.is_empty() {
            return None;
        }
        let mut notes = Vec::new();
        for path in paths {
            let path = absolute(&path);
            if self.turn().files.iter().any(|k| k.path == path) {
                continue;
            }
            let before = self.keep(&path, session);
            if let Before::NotKept(why) = &before {
                notes.push(format!("{}: {why}", path.display()));
            }
            let first = stamp(&path);
            self.turn().files.push(Kept {
                path,
                before,
                first,
                last: first,
            });
        }
        (!notes.is_empty()).then(|| format!("Not kept for /undo: {}", notes.join("; ")))
    }

    /// After a call ended: notes how it left the files it may have changed.
    pub fn after_call(&mut self, tool: &str, arguments: &Value) {
        let paths: Vec<PathBuf> = paths_of(tool, arguments)
            .iter()
            .map(|p| absolute(p))
            .collect();
        if let Some(turn) = self.turns.last_mut().filter(|t| t.message == self.message) {
            for kept in turn.files.iter_mut().filter(|k| paths.contains(&k.path)) {
                kept.last = stamp(&kept.path);
            }
        }
    }

    fn turn(&mut self) -> &mut Turn {
        if self.turns.last().is_none_or(|t| t.message != self.message) {
            self.turns.push(Turn {
                message: self.message,
                files: Vec::new(),
                bash: false,
            });
        }
        self.turns.last_mut().expect("pushed")
    }

    /// Saves the file's bytes into the store.
    fn keep(&mut self, path: &Path, session: Option<&Path>) -> Before {
        let meta = match fs::metadata(path) {
            Ok(meta) if meta.is_file() => meta,
            Ok(_) => return Before::NotKept("not a regular file".into()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Before::Absent,
            Err(e) => return Before::NotKept(format!("cannot be read ({e})")),
        };
        if meta.len() > MAX_FILE {
            return Before::NotKept(format!(
                "{} MiB is over the {} MiB that /undo keeps",
                meta.len() >> 20,
                MAX_FILE >> 20
            ));
        }
        self.make_room(meta.len());
        if self.bytes + meta.len() > MAX_STORE {
            return Before::NotKept("this message's files already fill the undo store".into());
        }
        let Some(dir) = self.store(session) else {
            return Before::NotKept("the undo store cannot be made".into());
        };
        let turn_dir = dir.join(self.message.to_string());
        let n = self.turns.last().map_or(0, |t| t.files.len());
        let saved = turn_dir.join(n.to_string());
        let copied = private_dir(&turn_dir).and_then(|()| {
            // A previous run's store may hold the name; the copy replaces it.
            fs::copy(path, &saved)?;
            fs::set_permissions(&saved, fs::Permissions::from_mode(0o600))
        });
        match copied {
            Ok(()) => {
                self.bytes += meta.len();
                Before::Saved(saved, meta.len(), meta.permissions().mode() & 0o7777)
            }
            Err(e) => Before::NotKept(format!("cannot be copied into the undo store ({e})")),
        }
    }

    /// Drops the oldest messages' files until `more` bytes fit (never the
    /// current message's).
    fn make_room(&mut self, more: u64) {
        while self.bytes + more > MAX_STORE && self.turns.len() > 1 {
            let old = self.turns.remove(0);
            self.forget(&old);
        }
    }

    fn forget(&mut self, turn: &Turn) {
        for kept in &turn.files {
            if let Before::Saved(file, len, _) = &kept.before {
                let _ = fs::remove_file(file);
                self.bytes -= len;
            }
        }
        if let Some(dir) = &self.dir {
            let _ = fs::remove_dir(dir.join(turn.message.to_string()));
        }
    }

    fn store(&mut self, session: Option<&Path>) -> Option<PathBuf> {
        if self.dir.is_none() {
            let dir = match session {
                Some(session) => session.join("undo"),
                None => {
                    let temp = tempfile::Builder::new()
                        .prefix("ikigai-undo-")
                        .tempdir()
                        .ok()?;
                    let path = temp.path().to_path_buf();
                    self.temp = Some(temp);
                    path
                }
            };
            private_dir(&dir).ok()?;
            self.dir = Some(dir);
        }
        self.dir.clone()
    }

    /// Restores the files of the newest message that changed any; a file
    /// changed since is restored only when `ask` says so. None: nothing to
    /// undo.
    pub fn undo(&mut self, ask: &mut dyn FnMut(&Path) -> bool) -> Option<Report> {
        let at = self.turns.iter().rposition(Turn::changed)?;
        let turn = self.turns.remove(at);
        let mut report = Report {
            bash: turn.bash,
            ..Report::default()
        };
        for kept in turn.files.iter().filter(|k| k.first != k.last) {
            let path = kept.path.clone();
            if let Before::NotKept(why) = &kept.before {
                report.not_kept.push((path, why.clone()));
                continue;
            }
            if stamp(&path) != kept.last && !ask(&path) {
                report.left.push(path);
                continue;
            }
            match restore(&path, &kept.before) {
                Ok(()) => report.restored.push(path),
                Err(e) => report.failed.push((path, e.to_string())),
            }
        }
        self.forget(&turn);
        Some(report)
    }
}

impl Turn {
    /// Whether a call of this message changed a file (or a bash ran).
    fn changed(&self) -> bool {
        self.files.iter().any(|k| k.first != k.last)
    }
}

impl Report {
    /// What the person reads.
    pub fn for_person(&self) -> String {
        let mut lines = Vec::new();
        let list = |paths: &[PathBuf]| {
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.restored.is_empty() {
            lines.push(format!("Restored {}.", list(&self.restored)));
        } else {
            lines.push("No file was restored.".into());
        }
        if !self.left.is_empty() {
            lines.push(format!(
                "Left as they are (changed since): {}.",
                list(&self.left)
            ));
        }
        for (path, why) in self.failed.iter().chain(&self.not_kept) {
            lines.push(format!("Not restored: {}: {why}.", path.display()));
        }
        if self.bash {
            lines.push(
                "A bash command ran in that turn: what it changed is not tracked and stays.".into(),
            );
        }
        lines.join("\n")
    }

    /// What the model is told with the next message.
    pub fn for_model(&self) -> String {
        let mut text = String::from("The user undid your last file changes (/undo).");
        let list = |paths: &[PathBuf]| {
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.restored.is_empty() {
            text += &format!(
                " These files are back as they were before that turn: {}.",
                list(&self.restored)
            );
        }
        if !self.left.is_empty() {
            text += &format!(" Kept as they are now: {}.", list(&self.left));
        }
        if self.bash {
            text += " Changes made through bash in that turn were not undone.";
        }
        text + " Read a file again before you change it."
    }
}

/// The person's message `text`, preceded by what the model is to be told
/// (an `/undo` since its last turn), in brackets.
pub fn with_notes(notes: Vec<String>, text: &str) -> String {
    if notes.is_empty() {
        return text.to_string();
    }
    format!("[{}]\n\n{text}", notes.join(" "))
}

/// The files a call of `tool` may change (relative paths as given).
pub fn paths_of(tool: &str, arguments: &Value) -> Vec<PathBuf> {
    if !WRITERS.contains(&tool) {
        return Vec::new();
    }
    if tool == "apply_patch" {
        return patch_paths(arguments["input"].as_str().unwrap_or(""));
    }
    arguments["file_path"]
        .as_str()
        .filter(|p| !p.is_empty())
        .map(|p| vec![PathBuf::from(p)])
        .unwrap_or_default()
}

/// The files a patch names in its `*** Add File: `, `*** Delete File: `,
/// `*** Update File: ` and `*** Move to: ` lines, each once, in order.
pub fn patch_paths(patch: &str) -> Vec<PathBuf> {
    // The tool's own parser, pure: the paths it would write are the ones
    // kept (a patch it cannot parse writes nothing).
    crate::tools::apply_patch::paths(patch)
}

/// `path` from the working directory the tools run in, through a link to
/// the file it names (the tools write the file, not the link).
fn absolute(path: &Path) -> PathBuf {
    if let Ok(real) = fs::canonicalize(path) {
        return real;
    }
    match std::env::current_dir() {
        Ok(cwd) if path.is_relative() => cwd.join(path),
        _ => path.to_path_buf(),
    }
}

/// Puts `before` back at `path`: the bytes, through a temporary file
/// renamed over it (readers see old or new), or no file.
fn restore(path: &Path, before: &Before) -> std::io::Result<()> {
    match before {
        Before::Absent => match fs::remove_file(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        },
        Before::Saved(saved, _, mode) => {
            let dir = path.parent().unwrap_or(Path::new("."));
            fs::create_dir_all(dir)?;
            let mut temp = tempfile::Builder::new()
                .prefix(".ikigai-undo-")
                .tempfile_in(dir)?;
            let mut from = fs::File::open(saved)?;
            std::io::copy(&mut from, temp.as_file_mut())?;
            temp.as_file()
                .set_permissions(fs::Permissions::from_mode(*mode))?;
            temp.as_file_mut().flush()?;
            temp.persist(path).map_err(|e| e.error)?;
            Ok(())
        }
        Before::NotKept(why) => Err(std::io::Error::other(why.clone())),
    }
}

fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// A helper for the approval prompt: the files over `MAX_FILE` a call
/// would change, which `/undo` will not keep.
pub fn not_kept_note(tool: &str, arguments: &Value) -> Option<String> {
    let large: Vec<String> = paths_of(tool, arguments)
        .iter()
        .filter(|p| fs::metadata(p).is_ok_and(|m| m.len() > MAX_FILE))
        .map(|p| p.display().to_string())
        .collect();
    (!large.is_empty()).then(|| {
        format!(
            "(over {} MiB, so /undo will not keep: {})",
            MAX_FILE >> 20,
            large.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_patch_names_its_files_once() {
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Update File: b.txt\n\
                     *** Move to: c.txt\n@@\n-y\n+z\n*** Delete File: d.txt\n\
                     *** Update File: a.txt\n@@\n-x\n+w\n*** End Patch";
        let paths: Vec<String> = patch_paths(patch)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(paths, ["a.txt", "b.txt", "c.txt", "d.txt"]);
        // A patch the tool cannot read writes nothing, so keeps nothing.
        assert!(patch_paths("*** Add File: a.txt\n+x").is_empty());
        assert!(paths_of("bash", &json!({"command": "rm x"})).is_empty());
        assert_eq!(
            paths_of("file_edit", &json!({"file_path": "/x"})),
            [PathBuf::from("/x")]
        );
    }

    #[test]
    fn undo_puts_back_the_newest_turn_and_asks_about_later_changes() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("session");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        fs::write(&a, "a0").unwrap();
        let mut undo = Undo::default();
        let write = |p: &Path| json!({"file_path": p.to_str().unwrap()});
        // Message 1 changes a; message 2 creates b and changes a again.
        undo.next_message();
        undo.before_call("file_write", &write(&a), Some(&session));
        fs::write(&a, "a1").unwrap();
        undo.after_call("file_write", &write(&a));
        undo.next_message();
        undo.before_call("file_write", &write(&a), Some(&session));
        undo.before_call("bash", &json!({"command": "x"}), Some(&session));
        fs::write(&a, "a2").unwrap();
        undo.after_call("file_write", &write(&a));
        undo.before_call("file_write", &write(&b), Some(&session));
        fs::write(&b, "b2").unwrap();
        undo.after_call("file_write", &write(&b));
        // A message that changed nothing is skipped over.
        undo.next_message();
        let report = undo.undo(&mut |_| panic!("nothing changed since")).unwrap();
        assert_eq!(report.restored, [a.clone(), b.clone()]);
        assert!(report.bash);
        assert_eq!(fs::read_to_string(&a).unwrap(), "a1");
        assert!(!b.exists());
        // Someone changes a after the model: asked, and left when refused.
        std::thread::sleep(std::time::Duration::from_millis(10));
        fs::write(&a, "someone").unwrap();
        let mut asked = Vec::new();
        let report = undo
            .undo(&mut |p| {
                asked.push(p.to_path_buf());
                false
            })
            .unwrap();
        assert_eq!((asked, report.left), (vec![a.clone()], vec![a.clone()]));
        assert_eq!(fs::read_to_string(&a).unwrap(), "someone");
        assert!(undo.undo(&mut |_| true).is_none());
        assert_eq!(undo.bytes, 0);
    }
}
