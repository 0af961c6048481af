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
//!
//! The host does this outside the fence, on paths a tool could have shaped,
//! so it follows no link (`host::files::Beneath`): a file is kept only when
//! it is a regular file reached without one (a link to a key, a FIFO or
//! `/proc/self/environ` is not kept); each directory on the way is noted
//! (device and inode), and `/undo` walks the path again the same way, puts
//! the file back only when every directory is still the one that held it,
//! and creates, replaces or removes it relative to that directory's handle.
//! A path that no longer resolves so is reported and left alone.

use std::ffi::{CString, OsStr};
use std::fs;
use std::io::{self, Write};
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::host::files::{self, Beneath, Dir, Identity};

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
    /// The store, once made (`ID/undo/` of the session's directory).
    dir: Option<Dir>,
}

struct Turn {
    message: u64,
    files: Vec<Kept>,
    /// A bash call (or background shell) ran in this message.
    bash: bool,
}

struct Kept {
    path: PathBuf,
    /// The directories on its way when it was kept, from the workspace
    /// (or `/`) down, as far as they existed.
    dirs: Vec<Identity>,
    before: Before,
    /// The file as it was before the first call, and after the last.
    first: Option<Stamp>,
    last: Option<Stamp>,
}

enum Before {
    Absent,
    /// Its bytes, in this file of the store (message, number), its size
    /// and its permission bits.
    Saved((u64, usize), u64, u32),
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

/// The file at `path` as it is, reached without a link, not followed if
/// it is one itself.
fn stamp(path: &Path) -> Option<Stamp> {
    let st = Beneath::walk(&workspace(), path).ok()?.stat()?;
    Some(Stamp {
        ino: st.st_ino,
        len: st.st_size as u64,
        mtime: (st.st_mtime, st.st_mtime_nsec),
        ctime: (st.st_ctime, st.st_ctime_nsec),
    })
}

/// Where the tools run, from which paths are walked (the person chose it,
/// so it is taken as it is).
fn workspace() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
}

/// The directories on `path`'s way that exist, walked without a link.
fn identities(path: &Path) -> Vec<Identity> {
    let mut at = path.to_path_buf();
    // The nearest ancestor that walks: a call may make the ones below.
    while at.pop() {
        if let Ok(walk) = Beneath::walk(&workspace(), &at.join(".ikigai-undo-probe")) {
            return walk.dirs;
        }
    }
    Vec::new()
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
            let (before, dirs) = self.keep(&path, session);
            if let Before::NotKept(why) = &before {
                notes.push(format!("{}: {why}", path.display()));
            }
            let first = stamp(&path);
            self.turn().files.push(Kept {
                path,
                dirs,
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

    /// Saves the file's bytes into the store: only a regular file reached
    /// without a link. Returns them with the directories on its way.
    fn keep(&mut self, path: &Path, session: Option<&Path>) -> (Before, Vec<Identity>) {
        let walk = match Beneath::walk(&workspace(), path) {
            Ok(walk) => walk,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return (Before::Absent, identities(path));
            }
            Err(e) => {
                let why = format!("not reached without a link: {e}");
                return (Before::NotKept(why), Vec::new());
            }
        };
        let dirs = walk.dirs.clone();
        let (mut file, st) = match walk.open_regular() {
            Ok(opened) => opened,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return (Before::Absent, dirs),
            Err(e) => return (Before::NotKept(e.to_string()), dirs),
        };
        let len = st.st_size as u64;
        if len > MAX_FILE {
            let why = format!(
                "{} MiB is over the {} MiB that /undo keeps",
                len >> 20,
                MAX_FILE >> 20
            );
            return (Before::NotKept(why), dirs);
        }
        self.make_room(len);
        if self.bytes + len > MAX_STORE {
            let why = "this message's files already fill the undo store".to_string();
            return (Before::NotKept(why), dirs);
        }
        let n = self.turns.last().map_or(0, |t| t.files.len());
        let message = self.message;
        let copied = self.store(session).and_then(|store| {
            let turn = store.sub(message.to_string())?;
            // A previous run's store may hold the name; the copy replaces it.
            turn.remove_file(n.to_string())?;
            let mut to = turn.create_new(n.to_string(), 0o600)?;
            io::copy(&mut file, &mut to)
                .map_err(|e| files::plain(e, turn.path(), &turn.path().join(n.to_string())))
        });
        match copied {
            Ok(copied) => {
                self.bytes += copied;
                (
                    Before::Saved((message, n), copied, st.st_mode & 0o7777),
                    dirs,
                )
            }
            Err(e) => (
                Before::NotKept(format!("cannot be copied into the undo store ({e})")),
                dirs,
            ),
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
        let Some(store) = &self.dir else {
            return;
        };
        let kept = store.sub(turn.message.to_string()).ok();
        for kept_file in &turn.files {
            if let Before::Saved((_, n), len, _) = &kept_file.before {
                if let Some(dir) = &kept {
                    let _ = dir.remove_file(n.to_string());
                }
                self.bytes -= len;
            }
        }
        store.remove_dir(turn.message.to_string());
    }

    /// The store, made the host's own the first time: under the session's
    /// directory, never under `$TMPDIR`.
    fn store(&mut self, session: Option<&Path>) -> io::Result<&Dir> {
        if self.dir.is_none() {
            let session = session.ok_or_else(|| {
                io::Error::other("this conversation has no session directory to keep it in")
            })?;
            self.dir = Some(Dir::own(&session.join("undo"))?);
        }
        Ok(self.dir.as_ref().expect("made"))
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
            let saved = match &kept.before {
                Before::Saved((message, n), _, _) => self
                    .dir
                    .as_ref()
                    .ok_or_else(|| io::Error::other("the undo store is gone"))
                    .and_then(|d| d.sub(message.to_string()))
                    .and_then(|d| d.open_existing(n.to_string(), false))
                    .map(Some),
                _ => Ok(None),
            };
            match saved.and_then(|saved| restore(&path, &kept.dirs, &kept.before, saved)) {
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

/// `path` from the working directory the tools run in, `.` and `..` taken
/// lexically: never resolved through a link.
fn absolute(path: &Path) -> PathBuf {
    files::lexical(&workspace().join(path))
}

/// Puts `before` back at `path`, relative to the handle of its directory
/// reached without a link, each directory on the way the one `dirs` noted:
/// the bytes (`saved`), through a temporary file renamed over it (readers
/// see old or new), or no file.
fn restore(
    path: &Path,
    dirs: &[Identity],
    before: &Before,
    saved: Option<fs::File>,
) -> io::Result<()> {
    let left = |why: String| io::Error::other(format!("{why}; left alone"));
    let walk = Beneath::walk(&workspace(), path)
        .map_err(|e| left(format!("no longer reached without a link ({e})")))?;
    if !walk.dirs.starts_with(dirs) {
        return Err(left(
            "a directory on its way is not the one that held it".to_string(),
        ));
    }
    let now = walk.stat();
    let is_dir = now.is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR);
    if is_dir {
        return Err(left("it is a directory now".into()));
    }
    match before {
        // A file, or a link itself (never what it names).
        Before::Absent => unlink_at(&walk, &walk.name),
        Before::Saved(_, _, mode) => {
            let mut from = saved.ok_or_else(|| io::Error::other("its kept copy is gone"))?;
            let (temp_name, mut temp) = temp_at(&walk)?;
            let written = io::copy(&mut from, &mut temp)
                .and_then(|_| temp.set_permissions(fs::Permissions::from_mode(*mode)))
                .and_then(|_| temp.flush())
                .and_then(|_| rename_at(&walk, &temp_name, &walk.name));
            if written.is_err() {
                let _ = unlink_at(&walk, &temp_name);
            }
            written
        }
        Before::NotKept(why) => Err(io::Error::other(why.clone())),
    }
}

fn cstring(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::other("a name holds a NUL byte"))
}

/// A new temporary file beside the walk's last component, never a link.
fn temp_at(walk: &Beneath) -> io::Result<(std::ffi::OsString, fs::File)> {
    for n in 0..100u32 {
        let name = std::ffi::OsString::from(format!(".ikigai-undo-{}-{n}", std::process::id()));
        let c = cstring(&name)?;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        let fd = unsafe {
            libc::openat(
                walk.dirfd(),
                c.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o600 as libc::c_uint,
            )
        };
        if fd >= 0 {
            // SAFETY: a descriptor just opened and owned by nobody else.
            return Ok((name, unsafe { fs::File::from_raw_fd(fd) }));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::AlreadyExists {
            return Err(e);
        }
    }
    Err(io::Error::other("no temporary name is free beside it"))
}

fn rename_at(walk: &Beneath, from: &OsStr, to: &OsStr) -> io::Result<()> {
    let (from, to) = (cstring(from)?, cstring(to)?);
    // SAFETY: a valid directory descriptor and NUL-terminated names.
    match unsafe { libc::renameat(walk.dirfd(), from.as_ptr(), walk.dirfd(), to.as_ptr()) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

fn unlink_at(walk: &Beneath, name: &OsStr) -> io::Result<()> {
    let c = cstring(name)?;
    // SAFETY: a valid directory descriptor and a NUL-terminated name.
    match unsafe { libc::unlinkat(walk.dirfd(), c.as_ptr(), 0) } {
        0 => Ok(()),
        _ => match io::Error::last_os_error() {
            e if e.kind() == io::ErrorKind::NotFound => Ok(()),
            e => Err(e),
        },
    }
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

#[cfg(test)]
mod trap_tests {
    //! What a tool may leave where /undo acts: links at the last and at a
    //! middle component, a directory swapped for another, a file replaced
    //! by a directory, a FIFO, `/proc/self/*`.
    use super::*;
    use serde_json::json;
    use std::os::unix::fs::symlink;

    fn write(p: &Path) -> Value {
        json!({"file_path": p.to_str().unwrap()})
    }

    /// One message whose file_write of each path is kept, then `change`.
    fn written(undo: &mut Undo, session: &Path, paths: &[&Path]) -> Vec<Option<String>> {
        undo.next_message();
        let notes = paths
            .iter()
            .map(|p| undo.before_call("file_write", &write(p), Some(session)))
            .collect();
        for p in paths {
            let _ = fs::write(p, "model");
            undo.after_call("file_write", &write(p));
        }
        notes
    }

    #[test]
    fn undo_never_restores_or_removes_through_a_directory_a_tool_replaced() {
        let root = tempfile::tempdir().unwrap();
        let (w, outside) = (root.path().join("w"), root.path().join("outside"));
        fs::create_dir_all(w.join("cfg")).unwrap();
        fs::create_dir_all(w.join("new")).unwrap();
        fs::create_dir_all(w.join("other")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        let config = w.join("cfg/config.toml");
        fs::write(&config, "mine").unwrap();
        let created = w.join("new/made.txt");
        let swapped = w.join("other/f.txt");
        fs::write(&swapped, "before").unwrap();
        let became_dir = w.join("d.txt");
        fs::write(&became_dir, "before").unwrap();
        let mut undo = Undo::default();
        let session = root.path().join("session");
        written(
            &mut undo,
            &session,
            &[&config, &created, &swapped, &became_dir],
        );
        // The tool's traps: a middle component now a link to the person's
        // config; a link where the made file's directory was; a directory
        // of the same name that is another; a file become a directory.
        fs::write(outside.join("config.toml"), "person's").unwrap();
        fs::write(outside.join("made.txt"), "person's").unwrap();
        fs::remove_dir_all(w.join("cfg")).unwrap();
        symlink(&outside, w.join("cfg")).unwrap();
        fs::remove_dir_all(w.join("new")).unwrap();
        symlink(&outside, w.join("new")).unwrap();
        fs::rename(w.join("other"), w.join("other.old")).unwrap();
        fs::create_dir(w.join("other")).unwrap();
        fs::write(&swapped, "model").unwrap();
        fs::remove_file(&became_dir).unwrap();
        fs::create_dir(&became_dir).unwrap();
        let report = undo.undo(&mut |_| true).unwrap();
        assert!(report.restored.is_empty(), "{report:?}");
        let why = |p: &Path| {
            report
                .failed
                .iter()
                .find(|f| f.0 == p)
                .map(|f| f.1.clone())
                .unwrap_or_else(|| panic!("{p:?} not reported: {report:?}"))
        };
        assert!(
            why(&config).contains("/w/cfg is a symbolic link); left alone"),
            "{report:?}"
        );
        assert!(why(&created).contains("/w/new is a symbolic link); left alone"));
        assert!(why(&swapped).contains("not the one that held it; left alone"));
        assert!(why(&became_dir).contains("it is a directory now; left alone"));
        assert_eq!(
            fs::read_to_string(outside.join("config.toml")).unwrap(),
            "person's"
        );
        assert_eq!(
            fs::read_to_string(outside.join("made.txt")).unwrap(),
            "person's"
        );
        assert_eq!(fs::read_to_string(&swapped).unwrap(), "model");
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 2);
    }

    #[test]
    fn only_regular_files_reached_without_a_link_are_kept() {
        let root = tempfile::tempdir().unwrap();
        let w = root.path().join("w");
        fs::create_dir_all(w.join("real")).unwrap();
        let secret = root.path().join("id_ed25519");
        fs::write(&secret, "PRIVATE KEY").unwrap();
        symlink(&secret, w.join("key")).unwrap();
        symlink(w.join("real"), w.join("via")).unwrap();
        fs::write(w.join("real/f"), "f").unwrap();
        let fifo = w.join("fifo");
        let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let session = root.path().join("session");
        let mut undo = Undo::default();
        undo.next_message();
        let note = |undo: &mut Undo, p: &Path| {
            undo.before_call("file_write", &write(p), Some(&session))
                .unwrap_or_default()
        };
        let key = note(&mut undo, &w.join("key"));
        assert!(key.contains("key: is a symbolic link"), "{key}");
        let via = note(&mut undo, &w.join("via/f"));
        assert!(via.contains("via is a symbolic link"), "{via}");
        // Never blocks on a FIFO; never copies the host's own environment.
        let f = note(&mut undo, &fifo);
        assert!(f.contains("is a FIFO, not a regular file"), "{f}");
        let environ = note(&mut undo, Path::new("/proc/self/environ"));
        assert!(
            environ.contains("/proc/self is a symbolic link"),
            "{environ}"
        );
        let environ = note(&mut undo, Path::new("/proc/thread-self/environ"));
        assert!(environ.contains("symbolic link"), "{environ}");
        assert_eq!(undo.bytes, 0);
        let kept: Vec<_> = fs::read_dir(session.join("undo"))
            .map(|d| d.flatten().collect())
            .unwrap_or_default();
        assert!(kept
            .iter()
            .all(|e| fs::read_dir(e.path()).unwrap().count() == 0));
    }
}
