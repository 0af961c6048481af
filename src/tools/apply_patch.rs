//! apply_patch: add, delete, update and move files with one patch in the
//! format OpenAI's models write (decisions 67 and 103; docs/apply-patch.md).
//!
//! All or nothing: every operation is checked before any file is written.
//! Each existing file the patch touches is locked (in the order of its path,
//! so two patches never wait on each other in a circle) and opened for
//! writing, which is where a file the caller, or the sandbox, may not write
//! is refused; each directory that must receive a new file, a temporary file
//! or lose a file is tried by making an unnamed file in it (O_TMPFILE, which
//! the sandbox refuses outside its writable directories and which leaves
//! nothing behind); every update is applied in memory. Only then are the
//! files written, each as file_write writes one (decisions 7 and 33, through
//! `fs::atomic`: a temporary file renamed into place, the mode kept, a
//! symbolic link written through), new contents first, deletions last, so a
//! move interrupted by a kill leaves both copies rather than none.
//!
//! Paths are relative to the working directory or absolute; a relative path
//! that climbs out of the working directory with `..`, or an absolute one
//! holding `..`, is refused (decision 103). Operations apply in order, each
//! on the result of the ones before (an update after an add of the same
//! file sees the added content).
//!
//! Errors name the operation as the patch wrote it: INVALID_ARG (the patch is
//! not in the format, or a path is refused), FILE_NOT_FOUND (a file to update
//! or delete is missing), OPEN_FAILED (a directory or device where a file is
//! expected, a file where a directory is), UNSUPPORTED_CONTENT (a file to
//! update holds NUL bytes: binary), NOT_FOUND and NOT_UNIQUE (a chunk's lines
//! are missing or occur twice), PERMISSION_DENIED, and those of the writes
//! (NO_SPACE, WRITE_FAILED, FILE_CHANGED).

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::fs;
use super::fs::atomic::{self, Locked};
use super::patch::apply::{self, Text};
use super::patch::parse::{self, Op};
use crate::args;
use crate::error::{ErrorCode, ToolError};
use crate::tool::{Env, Tool};

pub struct ApplyPatch;

#[derive(Deserialize)]
struct Args<'a> {
    input: &'a str,
}

const SCHEMA: &str = r#"{
  "name": "apply_patch",
  "description": "Add, delete, update or move files with one patch. The patch starts with '*** Begin Patch' and ends with '*** End Patch'. Between them, operations: '*** Add File: PATH' followed by the new file's lines, each starting with '+'; '*** Delete File: PATH'; '*** Update File: PATH', optionally followed by '*** Move to: NEWPATH', then one or more chunks. A chunk starts with '@@' (optionally '@@ LINE', a line such as a function's signature to find first) and holds the lines around the change: ' ' (a space) then a context line, '-' then a removed line, '+' then an added line. Give 3 lines of context before and after each change, enough to make its place unique; end a chunk that must match the end of the file with '*** End of File'. Paths are relative to the working directory, or absolute. Every operation is checked before any file is written: if one fails, nothing changes.",
  "parameters": {
    "type": "object",
    "properties": {
      "input": {
        "type": "string",
        "description": "The whole patch, from '*** Begin Patch' to '*** End Patch'"
      }
    },
    "required": ["input"]
  },
  "annotations": {"readOnlyHint": false, "destructiveHint": true}
}"#;

impl Tool for ApplyPatch {
    fn name(&self) -> &'static str {
        "apply_patch"
    }
    fn command(&self) -> &'static str {
        "apply-patch"
    }
    fn schema(&self) -> &'static str {
        SCHEMA
    }

    fn execute(&self, args: &Map<String, Value>, _env: &Env) -> Result<Value, ToolError> {
        let Args { input } = args::typed(args)?;
        let ops = parse::parse(input)
            .map_err(|e| ToolError::invalid_arg(format!("parameter 'input': {}", e.0)))?;
        let plan = Plan::check(&ops).map_err(|mut e| {
            e.message.push_str("\nNo file was changed.");
            e
        })?;
        plan.write()?;
        Ok(plan.answer())
    }
}

/// The paths a patch may change, in the order it names them (an update's
/// source and its `Move to`), each once, as written: relative paths are
/// relative to the call's working directory. A patch that does not parse
/// changes nothing and yields none. Pure: reads no file, so a host may
/// call it before running the tool (to keep the files' old content for
/// undo, decision 70).
pub fn paths(patch: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for op in parse::parse(patch).unwrap_or_default() {
        let moved = match &op {
            Op::Update {
                move_to: Some(to), ..
            } => Some(to.as_str()),
            _ => None,
        };
        for path in std::iter::once(op.path()).chain(moved) {
            let path = PathBuf::from(path);
            if !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

/// A file as the operations so far leave it.
enum Now {
    /// As on disk (a file, or nothing).
    Disk,
    /// No file.
    Gone,
    Content(Vec<u8>),
}

/// One path the patch touches, keyed by the file it finally names.
struct Entry {
    /// The path as the patch first wrote it, for messages.
    shown: String,
    /// What is written or removed: the resolved path (a symbolic link
    /// written through), or the link itself for a Delete of a link.
    target: PathBuf,
    /// The file as it was, locked and open, when it existed.
    lock: Option<Locked>,
    /// Something that is not a regular file (a directory, a device) is at
    /// the target: what it is.
    other: Option<std::fs::FileType>,
    /// A symbolic link that a Delete removes.
    link: bool,
    /// The content before the patch, once an update has read it.
    before: Option<Vec<u8>>,
    now: Now,
}

impl Entry {
    /// Whether the file existed before the patch (a link to delete counts).
    fn existed(&self) -> bool {
        self.lock.is_some() || self.link
    }

    /// Whether the patch changes it.
    fn changes(&self) -> bool {
        match &self.now {
            Now::Disk => false,
            Now::Gone => self.existed(),
            Now::Content(c) => self.before.as_ref() != Some(c) || self.lock.is_none(),
        }
    }
}

/// One line of the summary.
struct Change {
    path: String,
    action: &'static str,
    to: Option<String>,
    added: usize,
    removed: usize,
}

/// Every operation checked, every existing file locked and every new
/// content computed: what remains is writing.
struct Plan {
    entries: Vec<Entry>,
    changes: Vec<Change>,
}

impl Plan {
    fn check(ops: &[Op]) -> Result<Plan, ToolError> {
        let mut keys: HashMap<PathBuf, usize> = HashMap::new();
        let mut entries: Vec<Entry> = Vec::new();
        // Each path of each operation, checked and resolved, in order.
        let mut slots: Vec<(usize, Option<usize>)> = Vec::with_capacity(ops.len());
        for op in ops {
            let mut slot = |path: &str, delete: bool| -> Result<usize, ToolError> {
                check_path(path).map_err(|e| named(op, e))?;
                let (target, link) = resolve(path, delete).map_err(|e| named(op, e))?;
                Ok(*keys.entry(target.clone()).or_insert_with(|| {
                    entries.push(Entry {
                        shown: path.to_string(),
                        target,
                        lock: None,
                        other: None,
                        link,
                        before: None,
                        now: Now::Disk,
                    });
                    entries.len() - 1
                }))
            };
            let first = slot(op.path(), matches!(op, Op::Delete { .. }))?;
            let second = match op {
                Op::Update {
                    move_to: Some(to), ..
                } => Some(slot(to, false)?),
                _ => None,
            };
            slots.push((first, second));
        }

        // Lock what exists, in the order of the paths.
        let mut order: Vec<usize> = (0..entries.len()).collect();
        order.sort_by(|&a, &b| entries[a].target.cmp(&entries[b].target));
        for &i in &order {
            let reads = ops
                .iter()
                .zip(&slots)
                .any(|(op, s)| s.0 == i && !matches!(op, Op::Add { .. }));
            let first_op = ops
                .iter()
                .zip(&slots)
                .find(|(_, s)| s.0 == i || s.1 == Some(i))
                .map(|(op, _)| op);
            let entry = &mut entries[i];
            if entry.link {
                continue;
            }
            let named_err = |e: ToolError| match first_op {
                Some(op) => named(op, e),
                None => e,
            };
            match std::fs::metadata(&entry.target) {
                Ok(meta) if !meta.is_file() => entry.other = Some(meta.file_type()),
                Ok(_) => {
                    let locked =
                        atomic::lock(&entry.target, &entry.shown, reads).map_err(named_err)?;
                    if locked.existing().is_some() {
                        entry.lock = Some(locked);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(named_err(fs::open_error(&e, &entry.shown))),
            }
        }

        let mut changes = Vec::with_capacity(ops.len());
        for (op, &(i, to)) in ops.iter().zip(&slots) {
            changes.push(apply_op(op, i, to, &mut entries).map_err(|e| named(op, e))?);
        }

        // Every directory that will gain or lose a file must let us.
        let mut tried: HashMap<PathBuf, ()> = HashMap::new();
        for (op, &(i, to)) in ops.iter().zip(&slots) {
            for i in std::iter::once(i).chain(to) {
                let entry = &entries[i];
                if !entry.changes() {
                    continue;
                }
                let dir = existing_dir(&entry.target, &entry.shown).map_err(|e| named(op, e))?;
                if tried.insert(dir.clone(), ()).is_none() {
                    can_create_in(&dir)
                        .map_err(|e| named(op, dir_refused(&e, &entry.shown, &dir)))?;
                }
            }
        }
        Ok(Plan { entries, changes })
    }

    /// New contents first, removals last; each file as file_write writes one.
    fn write(&self) -> Result<(), ToolError> {
        let mut done: Vec<&str> = Vec::new();
        let partial = |done: &[&str], mut e: ToolError| {
            if !done.is_empty() {
                e.message.push_str(&format!(
                    "\nThe files before it were already written: {}",
                    done.join(", ")
                ));
            }
            e
        };
        for entry in self.entries.iter().filter(|e| e.changes()) {
            let Now::Content(content) = &entry.now else {
                continue;
            };
            let shown = entry.shown.as_str();
            let fill = |sink: &mut atomic::Sink| {
                sink.write_all(content)
                    .map_err(|e| atomic::write_error(&e, shown))
            };
            let result = match &entry.lock {
                Some(locked) => atomic::replace(locked, shown, fill),
                None => create_parents(&entry.target, shown)
                    .and_then(|()| atomic::lock(&entry.target, shown, false))
                    .and_then(|locked| atomic::replace(&locked, shown, fill)),
            };
            result.map_err(|e| partial(&done, e))?;
            done.push(shown);
        }
        for entry in self.entries.iter().filter(|e| e.changes()) {
            if matches!(entry.now, Now::Gone) {
                std::fs::remove_file(&entry.target).map_err(|e| {
                    let e = ToolError::from_io(
                        &e,
                        &entry.shown,
                        "Failed to delete file",
                        ErrorCode::WriteFailed,
                    );
                    partial(&done, e)
                })?;
                done.push(&entry.shown);
            }
        }
        Ok(())
    }

    fn answer(&self) -> Value {
        let mut output = String::from("Applied the patch:");
        let files: Vec<Value> = self
            .changes
            .iter()
            .map(|c| {
                let letter = match c.action {
                    "added" => 'A',
                    "deleted" => 'D',
                    "moved" => 'R',
                    _ => 'M',
                };
                let path = match &c.to {
                    Some(to) => format!("{} -> {to}", c.path),
                    None => c.path.clone(),
                };
                output.push_str(&format!("\n{letter} {path} (+{} -{})", c.added, c.removed));
                let mut file = json!({
                    "path": c.path,
                    "action": c.action,
                    "added": c.added,
                    "removed": c.removed,
                });
                if let Some(to) = &c.to {
                    file["to"] = json!(to);
                }
                file
            })
            .collect();
        json!({"output": output, "files": files})
    }
}

/// Applies one operation to the planned state of its files.
fn apply_op(
    op: &Op,
    i: usize,
    to: Option<usize>,
    entries: &mut [Entry],
) -> Result<Change, ToolError> {
    match op {
        Op::Add { path, lines } => {
            let entry = &mut entries[i];
            refuse_other(entry)?;
            let mut content = Vec::new();
            for line in lines {
                content.extend_from_slice(line.as_bytes());
                content.push(b'\n');
            }
            entry.now = Now::Content(content);
            Ok(Change {
                path: path.clone(),
                action: "added",
                to: None,
                added: lines.len(),
                removed: 0,
            })
        }
        Op::Delete { path } => {
            let entry = &mut entries[i];
            if entry.link && matches!(entry.now, Now::Disk) {
                entry.now = Now::Gone;
                return Ok(change(path, "deleted", 0, 0));
            }
            refuse_other(entry)?;
            let removed = match current(entry)? {
                Some(content) => count_lines(content),
                None => return Err(not_found(path)),
            };
            entry.now = Now::Gone;
            Ok(change(path, "deleted", 0, removed))
        }
        Op::Update {
            path,
            move_to,
            chunks,
        } => {
            let entry = &mut entries[i];
            refuse_other(entry)?;
            let shown = entry.shown.clone();
            let Some(content) = current(entry)? else {
                return Err(not_found(&shown));
            };
            if memchr::memchr(0, content).is_some() {
                return Err(ToolError::new(
                    ErrorCode::UnsupportedContent,
                    format!(
                        "{}: the file is binary (it holds NUL bytes); apply_patch changes text \
                         files only",
                        shown
                    ),
                ));
            }
            let new = apply::apply(&Text::new(content), chunks)
                .map_err(|(code, message)| ToolError::new(code, message))?;
            let added = chunks.iter().map(|c| c.added).sum();
            let removed = chunks.iter().map(|c| c.removed).sum();
            match (move_to, to) {
                (Some(to_path), Some(j)) if j != i => {
                    entries[i].now = Now::Gone;
                    let dest = &mut entries[j];
                    refuse_other(dest)?;
                    dest.now = Now::Content(new);
                    Ok(Change {
                        path: path.clone(),
                        action: "moved",
                        to: Some(to_path.clone()),
                        added,
                        removed,
                    })
                }
                _ => {
                    entries[i].now = Now::Content(new);
                    Ok(change(path, "updated", added, removed))
                }
            }
        }
    }
}

fn change(path: &str, action: &'static str, added: usize, removed: usize) -> Change {
    Change {
        path: path.to_string(),
        action,
        to: None,
        added,
        removed,
    }
}

/// The file's content as the operations so far leave it, read from disk
/// (through its lock) the first time.
fn current(entry: &mut Entry) -> Result<Option<&[u8]>, ToolError> {
    if matches!(entry.now, Now::Disk) && entry.before.is_none() {
        if let Some((file, meta)) = entry.lock.as_ref().and_then(|l| l.existing()) {
            let bytes =
                fs::read_whole(file, meta.len()).map_err(|e| fs::read_error(&e, &entry.shown))?;
            entry.before = Some(bytes);
        }
    }
    Ok(match &entry.now {
        Now::Disk => entry.before.as_deref(),
        Now::Gone => None,
        Now::Content(c) => Some(c),
    })
}

/// OPEN_FAILED when a directory, FIFO or device is where the operation
/// needs a file (and the operations before it did not remove it: they
/// cannot, a Delete refuses a directory).
fn refuse_other(entry: &Entry) -> Result<(), ToolError> {
    match entry.other {
        Some(kind) => Err(fs::not_a_file(&entry.shown, kind)),
        None => Ok(()),
    }
}

fn not_found(shown: &str) -> ToolError {
    ToolError::new(ErrorCode::FileNotFound, format!("File not found: {shown}"))
}

/// The lines of a deleted file, for the summary.
fn count_lines(content: &[u8]) -> usize {
    let newlines = memchr::memchr_iter(b'\n', content).count();
    newlines + usize::from(!content.is_empty() && !content.ends_with(b"\n"))
}

/// The error, prefixed with the operation as the patch wrote it.
fn named(op: &Op, mut e: ToolError) -> ToolError {
    e.message = format!("{}: {}", op.header(), e.message);
    e
}

/// Refuses a path no file can have, a relative path that climbs out of the
/// working directory, and an absolute path holding `..` (decision 103).
fn check_path(path: &str) -> Result<(), ToolError> {
    if path.contains('\0') {
        return Err(ToolError::invalid_arg(
            "the path contains a NUL character, which no path can hold",
        ));
    }
    if !fs::names_a_file(Path::new(path)) {
        return Err(ToolError::invalid_arg(format!(
            "'{path}' does not name a file (it ends in '/', '.' or '..')"
        )));
    }
    let absolute = path.starts_with('/');
    let mut depth = 0usize;
    for part in Path::new(path).components() {
        match part {
            Component::ParentDir if absolute => {
                return Err(ToolError::invalid_arg(format!(
                    "the absolute path '{path}' holds '..': write the path it means without it"
                )))
            }
            Component::ParentDir if depth == 0 => {
                return Err(ToolError::invalid_arg(format!(
                    "'{path}' leaves the working directory through '..': apply_patch changes \
                     files under the working directory, or at an absolute path"
                )))
            }
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
    }
    Ok(())
}

/// The path to write or remove: a symbolic link is followed to the file
/// it names (decision 7), except by a Delete, which removes the link.
fn resolve(path: &str, delete: bool) -> Result<(PathBuf, bool), ToolError> {
    let path = Path::new(path);
    let shown = path.to_string_lossy();
    if delete && std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Ok((path.to_path_buf(), true));
    }
    match fs::resolve_link(path) {
        Ok(target) => Ok((target, false)),
        // Some directory on the way is a file: say which.
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => Err(existing_dir(path, &shown)
            .err()
            .unwrap_or_else(|| fs::open_error(&e, &shown))),
        Err(e) => Err(fs::open_error(&e, &shown)),
    }
}

/// The nearest directory at or above the target's parent that exists: where
/// the first new entry will be made. An ancestor that is not a directory
/// is OPEN_FAILED.
fn existing_dir(target: &Path, shown: &str) -> Result<PathBuf, ToolError> {
    let mut dir = target.parent();
    while let Some(d) = dir {
        let d = if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        };
        match std::fs::metadata(d) {
            Ok(meta) if meta.is_dir() => return Ok(d.to_path_buf()),
            Ok(_) => {
                return Err(fs::cannot_open(
                    shown,
                    Some(&format!("'{}' is not a directory", d.display())),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => dir = d.parent(),
            Err(e) => return Err(fs::open_error(&e, shown)),
        }
    }
    Ok(PathBuf::from("/"))
}

/// Whether a file can be made in `dir`: an unnamed file made and closed,
/// which leaves nothing behind. This is the very right the sandbox
/// (Landlock) and the directory's permissions check when a write makes its
/// temporary file there, so a refusal comes here, before anything is
/// written. A file system without unnamed files is asked with access(2),
/// which sees permissions but not the sandbox.
fn can_create_in(dir: &Path) -> io::Result<()> {
    match OpenOptions::new()
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
    {
        Ok(_) => Ok(()),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
            ) =>
        {
            let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
                .map_err(io::Error::other)?;
            // SAFETY: a valid NUL-terminated string; access reads nothing else.
            if unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        }
        Err(e) => Err(e),
    }
}

/// A directory that refused a new file.
fn dir_refused(err: &io::Error, shown: &str, dir: &Path) -> ToolError {
    let mut e = ToolError::from_io(err, shown, "Cannot open file", ErrorCode::OpenFailed);
    e.message.push_str(&format!(
        " (no file can be made in '{}': {})",
        dir.display(),
        fs::plain_reason(err)
    ));
    e
}

/// Makes the directories a new file needs.
fn create_parents(target: &Path, shown: &str) -> Result<(), ToolError> {
    match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => {
            std::fs::create_dir_all(dir).map_err(|e| fs::open_error(&e, shown))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_lists_what_a_patch_may_change() {
        let patch = "*** Begin Patch\n*** Add File: a\n+x\n*** Update File: b\n\
                     *** Move to: c/b\n@@\n-x\n+y\n*** Delete File: a\n*** End Patch";
        assert_eq!(paths(patch), ["a", "b", "c/b"].map(PathBuf::from));
        assert!(paths("not a patch").is_empty());
    }

    #[test]
    fn paths_may_not_climb_out() {
        for good in ["a", "a/b", "a/../b", "./a", "/abs/file", "a/./b"] {
            assert!(check_path(good).is_ok(), "{good}");
        }
        for bad in [
            "../a",
            "a/../../b",
            "/abs/../etc/passwd",
            "a/",
            "a/..",
            "x\0y",
        ] {
            let e = check_path(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArg, "{bad}");
        }
        assert!(check_path("../a")
            .unwrap_err()
            .message
            .contains("leaves the working directory"));
    }

    #[test]
    fn lines_of_a_deleted_file() {
        assert_eq!(count_lines(b""), 0);
        assert_eq!(count_lines(b"a\nb\n"), 2);
        assert_eq!(count_lines(b"a\nb"), 2);
    }
}
