//! `~/.config/ikigai/trusted.toml`: the person's answer for each project
//! root, with the digest of each file the project shipped when they gave
//! it. It is one of the host's own files (decision 80): read and written
//! without following a link, created 0600 in a directory of the person's
//! that no one else can write, replaced whole by a rename so a crash leaves
//! the old answer or the new one; a file in a shape the host did not make
//! is refused, never written through. Tools cannot write it: it lies in
//! ikigai's config directory, which the sandbox keeps read-only
//! (decision 76).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file's name in ikigai's config directory.
pub const NAME: &str = "trusted.toml";

/// One project's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub root: PathBuf,
    pub trusted: bool,
    /// What the question listed, to show what is new when asked again.
    #[serde(default)]
    pub summary: Vec<String>,
    /// Each shipped file's path under the root and its SHA-256.
    pub files: BTreeMap<String, String>,
}

#[derive(Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    project: Vec<Record>,
}

/// The answers kept; a missing file is none. Err says why the file cannot
/// be used (then nothing in it is trusted, and the person is asked).
pub fn read(path: &Path) -> Result<Vec<Record>, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let file = match file {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(format!("{} is a link", path.display()))
        }
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    check_shape(path, &meta, false)?;
    let mut text = String::new();
    file.take(16 << 20)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let parsed: File = toml::from_str(&text)
        .map_err(|e| format!("{}: {}", path.display(), e.message().trim_end()))?;
    Ok(parsed.project)
}

/// Keeps `record`, replacing the one of its root. A damaged file is
/// replaced: its answers were not trusted anyway.
pub fn keep(path: &Path, record: Record) -> Result<(), String> {
    let dir = path
        .parent()
        .ok_or_else(|| format!("{} has no directory", path.display()))?;
    private_dir(dir)?;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        check_shape(path, &meta, true)?;
    }
    let mut records = read(path).unwrap_or_default();
    records.retain(|r| r.root != record.root);
    records.push(record);
    records.sort_by(|a, b| a.root.cmp(&b.root));
    let text = format!(
        "# Which projects ikigai may load files from (decision 87), written by ikigai.\n\n{}",
        toml::to_string(&File { project: records }).map_err(|e| e.to_string())?
    );
    let temp = dir.join(format!(".{NAME}.{}", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temp)
        .map_err(|e| format!("{}: {e}", temp.display()))?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(format!("{}: {e}", path.display()));
    }
    Ok(())
}

/// Makes `dir` (0700) when missing; refuses one that is a link, another
/// user's, or writable by others.
fn private_dir(dir: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) => {
            if !meta.is_dir() {
                return Err(format!("{} is not a directory", dir.display()));
            }
            check_shape(dir, &meta, true)
        }
        Err(_) => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot make {}: {e}", dir.display())),
    }
}

/// Refuses a link, a file of another user, or one others may write.
fn check_shape(path: &Path, meta: &std::fs::Metadata, writing: bool) -> Result<(), String> {
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    let what = if meta.file_type().is_symlink() {
        "is a link"
    } else if meta.uid() != me {
        "belongs to another user"
    } else if meta.mode() & 0o022 != 0 {
        "is writable by others"
    } else if !writing && !meta.is_file() {
        "is not a regular file"
    } else {
        return Ok(());
    };
    Err(format!("{} {what}; ikigai does not use it", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(root: &str, trusted: bool) -> Record {
        Record {
            root: root.into(),
            trusted,
            summary: vec!["1 commands, 0 skills, 0 agents".into()],
            files: [(".mcp.json".to_string(), "ab".to_string())].into(),
        }
    }

    #[test]
    fn answers_are_kept_per_root_in_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config/ikigai").join(NAME);
        assert_eq!(read(&path), Ok(vec![]));
        keep(&path, record("/a", true)).unwrap();
        keep(&path, record("/b", false)).unwrap();
        keep(&path, record("/a", false)).unwrap();
        assert_eq!(
            read(&path),
            Ok(vec![record("/a", false), record("/b", false)])
        );
        let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
    }

    #[test]
    fn a_damaged_or_strange_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(NAME);
        std::fs::write(&path, "[[project]]\nroot = 3\n").unwrap();
        assert!(read(&path).unwrap_err().contains("invalid type"));
        std::fs::write(&path, "\u{0}garbage").unwrap();
        assert!(read(&path).is_err());
        // A damaged file is replaced by the next answer.
        keep(&path, record("/a", true)).unwrap();
        assert_eq!(read(&path), Ok(vec![record("/a", true)]));
        std::fs::remove_file(&path).unwrap();
        let elsewhere = dir.path().join("elsewhere.toml");
        std::fs::write(&elsewhere, "").unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert!(read(&path).unwrap_err().contains("is a link"));
        assert!(keep(&path, record("/a", true))
            .unwrap_err()
            .contains("is a link"));
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "");
    }
}
