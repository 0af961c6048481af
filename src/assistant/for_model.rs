//! What the model sees of one call: at most `--model-output` bytes (32 KiB
//! by default) of each output, so one noisy command does not fill the
//! model's context. The outputs are bash's `output`, a failed call's
//! `stdout` and `stderr`, and for any other result its JSON text as a whole
//! (a plain-text result, its text). A longer output keeps its head and its
//! tail, and between them one line saying how many bytes and lines were
//! left out and the path of a file that holds the whole output, so the
//! model can read the rest with file_read or grep. The host's capture cap
//! (`--max-output`, 1 MiB) is separate and applies first.
//!
//! The cutting itself is `host::for_model`'s, shared with the MCP server;
//! here is where the assistant keeps the whole outputs: a directory of the
//! session (mode 0700, files 0600: they may hold anything a command printed),
//! at most `MAX_SAVED` bytes of them per session, the oldest dropped first.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::host::files;
pub use crate::host::for_model::{envelope, DEFAULT_MODEL_OUTPUT};

/// The most bytes of whole outputs a session keeps; the oldest go first.
pub const MAX_SAVED: u64 = 1 << 30;

/// Where whole outputs are saved: the session's directory (its `ID/`,
/// beside `ID.jsonl`, which the model's tools may read). Without a session
/// there is nowhere of the host's own to keep them, and the cut line says
/// so: nothing of the host's is kept under `$TMPDIR`, where a tool could
/// have planted a link.
#[derive(Debug, Default)]
pub struct Outputs {
    /// The session directory the saved files below are in.
    dir: Option<PathBuf>,
    /// Its saved outputs, oldest first, with their sizes.
    saved: VecDeque<(PathBuf, u64)>,
    bytes: u64,
}

impl Outputs {
    /// Writes `bytes` to a new file named after the call and the output,
    /// in `session` (the session's directory); returns its path.
    pub fn save(
        &mut self,
        session: Option<&Path>,
        call_id: &str,
        what: &str,
        bytes: &[u8],
    ) -> io::Result<PathBuf> {
        self.save_within(session, call_id, what, bytes, MAX_SAVED)
    }

    fn save_within(
        &mut self,
        session: Option<&Path>,
        call_id: &str,
        what: &str,
        bytes: &[u8],
        limit: u64,
    ) -> io::Result<PathBuf> {
        let session = session.ok_or_else(|| {
            io::Error::other("this conversation has no session directory to keep it in")
        })?;
        let dir = super::session::private_dir(session)?;
        if self.dir.as_deref() != Some(session) {
            self.count(&dir);
        }
        let id: String = call_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        let len = bytes.len() as u64;
        self.make_room(&dir, len, limit);
        for n in 0.. {
            let name = match n {
                0 => format!("{id}.{what}"),
                n => format!("{id}-{n}.{what}"),
            };
            let path = dir.path().join(&name);
            let mut file = match dir.create_new(&name, 0o600) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                other => other?,
            };
            if let Err(e) = file.write_all(bytes) {
                // Half an output is not the whole output the line promises.
                let _ = dir.remove_file(&name);
                return Err(files::plain(e, dir.path(), &path));
            }
            self.saved.push_back((path.clone(), len));
            self.bytes += len;
            return Ok(path);
        }
        unreachable!("an unbounded range ends only by returning")
    }

    /// The outputs a session directory holds already (a resumed session's),
    /// oldest first.
    fn count(&mut self, dir: &files::Dir) {
        let mut found: Vec<((i64, i64), PathBuf, u64)> = std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                meta.is_file()
                    .then(|| ((meta.mtime(), meta.mtime_nsec()), e.path(), meta.len()))
            })
            .collect();
        found.sort();
        self.dir = Some(dir.path().to_path_buf());
        self.bytes = found.iter().map(|f| f.2).sum();
        self.saved = found.into_iter().map(|(_, p, len)| (p, len)).collect();
    }

    /// Removes the oldest outputs until `more` bytes fit in `limit`.
    fn make_room(&mut self, dir: &files::Dir, more: u64, limit: u64) {
        while self.bytes + more > limit {
            let Some((path, len)) = self.saved.pop_front() else {
                return;
            };
            if let Some(name) = path.file_name() {
                let _ = dir.remove_file(name);
            }
            self.bytes -= len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_files_are_private_and_never_overwritten() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let s1 = dir.path().join("s1");
        let mut outputs = Outputs::default();
        let a = outputs
            .save(Some(&s1), "call/1", "output.txt", b"one")
            .unwrap();
        let b = outputs
            .save(Some(&s1), "call/1", "output.txt", b"two")
            .unwrap();
        assert_eq!(a, dir.path().join("s1/call_1.output.txt"));
        assert_eq!(b, dir.path().join("s1/call_1-1.output.txt"));
        assert_eq!(std::fs::read(&a).unwrap(), b"one");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&a), 0o600);
        assert_eq!(mode(&dir.path().join("s1")), 0o700);
        let none = outputs.save(None, "c", "stdout.txt", b"x").unwrap_err();
        assert!(none.to_string().contains("no session directory"), "{none}");
        // Over the bound, the oldest go first; a resumed session's count.
        let mut again = Outputs::default();
        let c = again.save_within(Some(&s1), "c", "t", b"333", 8).unwrap();
        assert!(!a.exists() && b.exists() && c.exists());
        // A session directory a tool replaced by a link is not written.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join("s2")).unwrap();
        let e = outputs
            .save(Some(&dir.path().join("s2")), "c", "t", b"x")
            .unwrap_err();
        assert!(e.to_string().contains("s2 is a symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }
}
