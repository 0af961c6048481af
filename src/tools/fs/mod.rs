//! What the three file tools share (decisions 7 and 17): checking the `file_path` argument,
//! following a symbolic link to the file it finally names, opening an
//! existing target for writing only when it is a regular file, and docs/local-tools.md's
//! messages for each failure. [`atomic`] holds the all-or-nothing replacement
//! that file_write and file_edit both use.
//!
//! Messages name the path exactly as the caller gave it, never the resolved
//! link target, so the model recognises its own argument.

pub mod atomic;

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{ErrorCode, ToolError};

/// Linux's own limit on symbolic links followed in one lookup (past it, ELOOP).
const MAX_LINKS: usize = 40;

/// Rejects a `file_path` that no file can have (decision 3).
pub fn check_path(path: &str) -> Result<(), ToolError> {
    if path.is_empty() {
        return Err(ToolError::invalid_arg(
            "parameter 'file_path' is empty: give the path of a file",
        ));
    }
    if path.contains('\0') {
        return Err(ToolError::invalid_arg(
            "parameter 'file_path' contains a NUL character, which no path can hold",
        ));
    }
    Ok(())
}

/// The last component of the path as the caller wrote it, as basename(3)
/// gives it: the name the success messages show ("Wrote 14 bytes to test.txt").
pub fn basename(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.is_empty() { "" } else { "/" };
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// The path a write must replace: `path` itself, or, when it is a symbolic
/// link (to a link, ...), the path it finally names, whether that exists or
/// not: writing through a dangling link creates its target, as open(2) with
/// O_CREAT would. Replacing the resolved path leaves every link in place.
pub fn resolve_link(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from_raw_os_error(libc::ELOOP))
}

/// Whether the path's last component can name a file to create: not empty
/// (a trailing `/`), not `.` or `..`. `Path` hides these (it drops a trailing
/// `/.`), so the raw bytes decide.
pub fn names_a_file(path: &Path) -> bool {
    let bytes = path.as_os_str().as_bytes();
    let last = bytes.rsplit(|&b| b == b'/').next().unwrap_or(bytes);
    !matches!(last, b"" | b"." | b"..")
}

/// "a directory", "a FIFO", ...: what a path names when it is not a regular file.
pub fn kind_of(file_type: FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// OPEN_FAILED, docs/local-tools.md's "Cannot open file: PATH", with the reason when
/// there is one the model can act on.
pub fn cannot_open(path: &str, why: Option<&str>) -> ToolError {
    let message = match why {
        Some(why) => format!("Cannot open file: {path} ({why})"),
        None => format!("Cannot open file: {path}"),
    };
    ToolError::new(ErrorCode::OpenFailed, message)
}

/// OPEN_FAILED for a path that names a directory, a FIFO, a device...
pub fn not_a_file(path: &str, file_type: FileType) -> ToolError {
    let kind = kind_of(file_type);
    let why = if kind.starts_with("a ") {
        format!("is {kind}")
    } else {
        kind.to_string()
    };
    cannot_open(path, Some(&why))
}

/// An open(2) or stat(2) failure in docs/local-tools.md's terms: FILE_NOT_FOUND,
/// PERMISSION_DENIED, or OPEN_FAILED (saying so when the path is a directory).
pub fn open_error(err: &io::Error, path: &str) -> ToolError {
    if err.raw_os_error() == Some(libc::EISDIR) {
        return cannot_open(path, Some("is a directory"));
    }
    ToolError::from_io(err, path, "Cannot open file", ErrorCode::OpenFailed)
}

/// The whole content of an open file of fstat size `size`. The size is
/// only a hint: files in /proc say 0 and still have content, so reading
/// goes on to end of file. A size no allocation can hold is OUT_OF_MEMORY,
/// not an abort.
pub fn read_whole(file: &File, size: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(
            usize::try_from(size)
                .unwrap_or(usize::MAX)
                .saturating_add(1),
        )
        .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
    // Through `take`: std's File::read_to_end would ask fstat and lseek for
    // the size again, two system calls a small read feels.
    Read::take(file, u64::MAX).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// What went wrong, in the system's words without Rust's "(os error 13)"
/// tail, which tells a model nothing: "Permission denied".
pub fn plain_reason(err: &io::Error) -> String {
    let text = err.to_string();
    match err.raw_os_error() {
        Some(code) => text
            .strip_suffix(&format!(" (os error {code})"))
            .unwrap_or(&text)
            .to_string(),
        None => text,
    }
}

/// A read failure: READ_FAILED unless the errno says something more precise.
pub fn read_error(err: &io::Error, path: &str) -> ToolError {
    if err.kind() == io::ErrorKind::OutOfMemory {
        return ToolError::new(ErrorCode::OutOfMemory, format!("Out of memory: {path}"));
    }
    ToolError::from_io(err, path, "Failed to read file", ErrorCode::ReadFailed)
}

/// Opens the existing regular file `target` (a resolved path) for writing,
/// and for reading too when `read` is set, without truncating it: the check
/// decision 17 asks for (a target the caller may not write is refused before
/// anything changes, exactly as opening it for writing would refuse), and
/// the metadata whose mode and owner the replacement keeps. `Ok(None)`: no
/// such file. Directories, FIFOs and devices are refused before they are
/// opened, so no open(2) ever blocks on a FIFO or wakes a device.
pub fn open_for_update(
    target: &Path,
    path: &str,
    read: bool,
) -> Result<Option<(File, Metadata)>, ToolError> {
    match std::fs::metadata(target) {
        Ok(meta) if !meta.is_file() => return Err(not_a_file(path, meta.file_type())),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(open_error(&e, path)),
    }
    // O_NONBLOCK: should the path turn into a FIFO after the stat above, the
    // open still returns at once; fstat below then refuses it.
    let file = OpenOptions::new()
        .read(read)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(target)
        .map_err(|e| open_error(&e, path))?;
    let meta = file.metadata().map_err(|e| open_error(&e, path))?;
    if !meta.is_file() {
        return Err(not_a_file(path, meta.file_type()));
    }
    Ok(Some((file, meta)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basename_is_the_last_component() {
        assert_eq!(basename("/tmp/test.txt"), "test.txt");
        assert_eq!(basename("test.txt"), "test.txt");
        assert_eq!(basename("a/b/"), "b");
        assert_eq!(basename("/"), "/");
    }

    #[test]
    fn names_a_file_rejects_directory_forms() {
        for bad in ["dir/", ".", "..", "a/.", "a/..", "/"] {
            assert!(!names_a_file(Path::new(bad)), "{bad}");
        }
        for good in ["a", "a/b", "/tmp/x.txt", ".hidden"] {
            assert!(names_a_file(Path::new(good)), "{good}");
        }
    }

    #[test]
    fn check_path_rejects_empty_and_nul() {
        assert_eq!(check_path("").unwrap_err().code, ErrorCode::InvalidArg);
        assert_eq!(check_path("a\0b").unwrap_err().code, ErrorCode::InvalidArg);
        assert!(check_path("a").is_ok());
    }

    #[test]
    fn resolve_link_follows_chains_and_dangling_links() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("real"), "x").unwrap();
        std::os::unix::fs::symlink("real", d.join("one")).unwrap();
        std::os::unix::fs::symlink(d.join("one"), d.join("two")).unwrap();
        std::os::unix::fs::symlink("missing", d.join("dangling")).unwrap();
        std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
        assert_eq!(resolve_link(&d.join("two")).unwrap(), d.join("real"));
        assert_eq!(resolve_link(&d.join("real")).unwrap(), d.join("real"));
        assert_eq!(
            resolve_link(&d.join("dangling")).unwrap(),
            d.join("missing")
        );
        assert_eq!(resolve_link(&d.join("new")).unwrap(), d.join("new"));
        let err = resolve_link(&d.join("loop")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP));
    }

    #[test]
    fn errno_mapping_for_open_and_read() {
        let e = io::Error::from_raw_os_error(libc::EISDIR);
        assert_eq!(
            open_error(&e, "d").message,
            "Cannot open file: d (is a directory)"
        );
        let e = io::Error::from_raw_os_error(libc::EIO);
        let t = read_error(&e, "f");
        assert_eq!(
            (t.code, t.message.as_str()),
            (ErrorCode::ReadFailed, "Failed to read file: f")
        );
        let e = io::Error::from(io::ErrorKind::OutOfMemory);
        assert_eq!(read_error(&e, "f").code, ErrorCode::OutOfMemory);
    }
}
