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
//! session (mode 0700, files 0600: they may hold anything a command printed).

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub use crate::host::for_model::{envelope, DEFAULT_MODEL_OUTPUT};

/// Where whole outputs are saved: the session's directory when the
/// conversation is logged, else a private temporary directory made when
/// the first output needs it and removed when the assistant ends.
#[derive(Debug, Default)]
pub struct Outputs {
    temp: Option<tempfile::TempDir>,
}

impl Outputs {
    fn dir(&mut self, session: Option<&Path>) -> io::Result<PathBuf> {
        if let Some(dir) = session {
            super::session::private_dir(dir)?;
            return Ok(dir.to_path_buf());
        }
        if self.temp.is_none() {
            let temp = tempfile::Builder::new()
                .prefix("ikigai-outputs-")
                .tempdir()?;
            // Private before anything is written into it.
            std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o700))?;
            self.temp = Some(temp);
        }
        Ok(self
            .temp
            .as_ref()
            .map(|t| t.path().to_path_buf())
            .unwrap_or_default())
    }

    /// Writes `bytes` to a new file named after the call and the output,
    /// in `session` (the session's directory) if given; returns its path.
    pub fn save(
        &mut self,
        session: Option<&Path>,
        call_id: &str,
        what: &str,
        bytes: &[u8],
    ) -> io::Result<PathBuf> {
        let dir = self.dir(session)?;
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
        for n in 0.. {
            let name = match n {
                0 => format!("{id}.{what}"),
                n => format!("{id}-{n}.{what}"),
            };
            let path = dir.join(name);
            match write_new(&path, bytes) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                other => return other.map(|()| path),
            }
        }
        unreachable!("an unbounded range ends only by returning")
    }
}

fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)
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
        let t = outputs.save(None, "c", "stdout.txt", b"x").unwrap();
        assert_eq!(mode(t.parent().unwrap()), 0o700);
    }
}
