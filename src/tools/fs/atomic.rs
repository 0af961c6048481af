//! All-or-nothing replacement of a file's content, for file_write and
//! file_edit (spec README, decisions 7 and 17).
//!
//! The new content goes into a temporary file created in the target's own
//! directory (so the final rename(2) stays on one file system and is atomic),
//! is flushed to disk with fdatasync(2) (its writeback started early, see
//! [`Sink`]), and is renamed over the target: a crash, a kill or a full disk
//! leaves either the old content or the new, never a torn file. On any
//! failure the temporary file is removed before the tool answers. An existing target keeps its permission bits and, as far as
//! the caller may give them, its owner and group. The target is always a
//! resolved path (see [`super::resolve_link`]), so a symbolic link that led to
//! it stays a link.
//!
//! What a rename cannot keep: other hard links to the old file keep the old
//! content, and extended attributes and ACLs of the old file are not copied.
//! Replacing needs write permission on the directory; when the file is
//! writable but its directory is not, the answer says so.

use std::ffi::OsString;
use std::fs::{File, Metadata, OpenOptions, Permissions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::error::{ErrorCode, ToolError};

/// The longest piece of the target's name copied into the temporary file's
/// name, so that name stays under NAME_MAX (255) with its dot, random part
/// and suffix.
const MAX_NAME_IN_TEMP: usize = 200;

/// How much the temporary file accumulates before its writeback is started.
const WRITEBACK: u64 = 8 << 20;

/// Replaces the content of `target` with what `fill` writes into the
/// temporary file, and returns what `fill` returned; an error from `fill`
/// (write errors mapped with [`write_error`]) abandons the replacement.
/// `existing` is the target's metadata when it exists (its mode and owner
/// are kept); `None` creates a new file with the default mode, 0666 less the
/// umask. `shown` is the path as the caller gave it, for messages.
pub fn replace<T>(
    target: &Path,
    shown: &str,
    existing: Option<&Metadata>,
    fill: impl FnOnce(&mut Sink) -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    if !super::names_a_file(target) {
        return Err(super::cannot_open(shown, None));
    }
    let (dir, name) = match (target.parent(), target.file_name()) {
        (Some(dir), Some(name)) => (dir, name),
        _ => return Err(super::cannot_open(shown, None)),
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = temp_prefix(name.as_bytes());
    // `make_in` with our own open keeps the errno (tempfile's own `tempfile_in`
    // wraps it away), and mode 0666 lets the kernel apply the umask.
    let mut temp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .make_in(dir, |path| {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o666)
                .open(path)
        })
        .map_err(|e| create_error(&e, shown, existing.is_some()))?;

    // From here on, dropping `temp` (any early return) removes the file.
    let written = fill(&mut Sink {
        file: temp.as_file_mut(),
        written: 0,
        started: 0,
    })?;
    if let Some(meta) = existing {
        keep_owner_and_mode(temp.as_file(), meta).map_err(|e| write_error(&e, shown))?;
    }
    temp.as_file()
        .sync_data()
        .map_err(|e| write_error(&e, shown))?;
    // A failed rename (a sticky directory owned by someone else, a mount
    // point) is PERMISSION_DENIED or WRITE_FAILED, like a failed write.
    temp.persist(target)
        .map_err(|e| write_error(&e.error, shown))?;
    // The rename itself becomes durable with the directory; a failure here
    // changes nothing the caller could act on, the new content is in place.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(written)
}

/// `.NAME.` (NAME cut to a safe length): a leftover after a kill -9 is a
/// hidden file that says which file it belonged to.
fn temp_prefix(name: &[u8]) -> OsString {
    let mut prefix = vec![b'.'];
    prefix.extend_from_slice(&name[..name.len().min(MAX_NAME_IN_TEMP)]);
    prefix.push(b'.');
    OsString::from_vec(prefix)
}

/// The temporary file could not be created in the target's directory.
fn create_error(err: &io::Error, shown: &str, target_exists: bool) -> ToolError {
    match err.raw_os_error() {
        // The parent directory is missing or is not a directory: the spec's
        // "Cannot open file: /nonexistent/dir/file.txt".
        Some(libc::ENOENT) | Some(libc::ENOTDIR) => super::cannot_open(shown, None),
        Some(libc::EACCES) | Some(libc::EPERM) if target_exists => ToolError::new(
            ErrorCode::PermissionDenied,
            format!(
                "Permission denied: {shown} (the file is writable but its directory \
                 is not, and replacing the file safely needs a temporary file there)"
            ),
        ),
        _ => ToolError::from_io(err, shown, "Cannot open file", ErrorCode::OpenFailed),
    }
}

/// The temporary file being filled. Every [`WRITEBACK`] bytes it asks the
/// kernel to start writing them out (sync_file_range), so the disk works
/// while the rest is produced and the final fdatasync finds little left: on
/// a 200 MB file that saves most of the flush time.
pub struct Sink<'a> {
    file: &'a mut File,
    written: u64,
    started: u64,
}

impl Sink<'_> {
    /// Appends up to `len` bytes of `src` from `offset`, fewer if it ends
    /// first, and returns how many. std's `io::copy` does it in the kernel
    /// (copy_file_range: no trip through our memory, a reflink on file
    /// systems that share extents) and falls back to read/write elsewhere.
    pub fn copy_from(&mut self, src: &File, offset: u64, len: u64) -> io::Result<u64> {
        let mut reader = src;
        reader.seek(SeekFrom::Start(offset))?;
        let mut copied = 0;
        while copied < len {
            let piece = (len - copied).min(WRITEBACK);
            let n = io::copy(&mut reader.take(piece), &mut *self.file)?;
            self.advance(n);
            copied += n;
            if n < piece {
                break;
            }
        }
        Ok(copied)
    }

    fn advance(&mut self, n: u64) {
        self.written += n;
        if self.written - self.started >= WRITEBACK {
            // Advisory: a failure only means the fdatasync does all the work.
            // SAFETY: the fd is open for the life of `self.file`; the call
            // reads no memory of ours.
            unsafe {
                libc::sync_file_range(
                    self.file.as_raw_fd(),
                    self.started as libc::off64_t,
                    (self.written - self.started) as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                );
            }
            self.started = self.written;
        }
    }
}

impl Write for Sink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.advance(n as u64);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Writing or flushing the temporary file failed: NO_SPACE on a full disk
/// or quota, WRITE_FAILED otherwise.
pub fn write_error(err: &io::Error, shown: &str) -> ToolError {
    ToolError::from_io(err, shown, "Failed to write file", ErrorCode::WriteFailed)
}

/// Gives the temporary file the old file's owner, group and permission bits.
/// Only root may give a file away, and anyone may choose one of their own
/// groups; what cannot be kept is dropped, as by any editor that saves by
/// rename, and a set-user/group-ID bit is kept only with its owner/group.
fn keep_owner_and_mode(file: &File, old: &Metadata) -> io::Result<()> {
    let mine = file.metadata()?;
    let mut mode = old.mode() & 0o7777;
    if (mine.uid(), mine.gid()) != (old.uid(), old.gid()) {
        if std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid())).is_err() {
            let _ = std::os::unix::fs::fchown(file, None, Some(old.gid()));
        }
        let now = file.metadata()?;
        if now.uid() != old.uid() {
            mode &= !0o4000;
        }
        if now.gid() != old.gid() {
            mode &= !0o2000;
        }
    }
    // After the chown, which clears set-ID bits.
    file.set_permissions(Permissions::from_mode(mode))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replaces_content_and_keeps_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o751)).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        let n = replace(&path, "f", Some(&meta), |sink| {
            sink.write_all(b"new").map_err(|e| write_error(&e, "f"))?;
            Ok(3)
        })
        .unwrap();
        assert_eq!(n, 3);
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let mode = std::fs::metadata(&path).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o751);
        assert_eq!(entries(dir.path()), ["f"]);
    }

    /// A full disk cannot be made without privileges in a unit test, so the
    /// failure is injected where the disk would report it: the errno maps to
    /// NO_SPACE, the old content stays, and the temporary file is gone.
    #[test]
    fn no_space_keeps_old_content_and_removes_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "old").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        let err = replace(&path, "shown/f", Some(&meta), |sink| {
            sink.write_all(b"partial").unwrap();
            Err::<(), _>(write_error(
                &io::Error::from_raw_os_error(libc::ENOSPC),
                "shown/f",
            ))
        })
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::NoSpace);
        assert_eq!(err.message, "No space left on device: shown/f");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(entries(dir.path()), ["f"]);

        let fail = |errno| {
            replace(&path, "f", None, |_| {
                Err::<(), _>(write_error(&io::Error::from_raw_os_error(errno), "f"))
            })
            .unwrap_err()
        };
        let err = fail(libc::EDQUOT);
        assert_eq!(err.code, ErrorCode::NoSpace);
        let err = fail(libc::EIO);
        assert_eq!(
            (err.code, err.message.as_str()),
            (ErrorCode::WriteFailed, "Failed to write file: f")
        );
        assert_eq!(entries(dir.path()), ["f"]);
    }

    #[test]
    fn missing_parent_is_open_failed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/f");
        let err = replace(&path, "no/such/f", None, |_| Ok(())).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (ErrorCode::OpenFailed, "Cannot open file: no/such/f")
        );
    }

    #[test]
    fn sink_copies_ranges_in_pieces_and_writes_between_them() {
        // More than two writeback pieces, so the piecewise copy and the
        // writeback starts are exercised.
        let dir = tempfile::tempdir().unwrap();
        let source: Vec<u8> = (0..(2 * WRITEBACK + 12345) as u32)
            .map(|i| (i % 251) as u8)
            .collect();
        let src_path = dir.path().join("src");
        std::fs::write(&src_path, &source).unwrap();
        let src = File::open(&src_path).unwrap();
        let target = dir.path().join("out");
        let len = source.len() as u64;
        let middle = len / 2;
        replace(&target, "out", None, |sink| {
            let err = |e: io::Error| write_error(&e, "out");
            assert_eq!(sink.copy_from(&src, 0, middle).map_err(err)?, middle);
            sink.write_all(b"<edit>").map_err(err)?;
            // Asking past the end copies what there is.
            let rest = sink.copy_from(&src, middle + 3, len).map_err(err)?;
            assert_eq!(rest, len - middle - 3);
            Ok(())
        })
        .unwrap();
        let mut expected = source[..middle as usize].to_vec();
        expected.extend_from_slice(b"<edit>");
        expected.extend_from_slice(&source[middle as usize + 3..]);
        assert!(std::fs::read(&target).unwrap() == expected);
    }

    #[test]
    fn temp_name_stays_short() {
        let long = vec![b'x'; 255];
        assert_eq!(temp_prefix(&long).len(), MAX_NAME_IN_TEMP + 2);
        assert_eq!(temp_prefix(b"a.txt"), OsString::from(".a.txt."));
    }
}
