//! All-or-nothing replacement of a file's content, for file_write and
//! file_edit (decisions 7, 17 and 33): no torn file, no lost update, no
//! temporary file left behind.
//!
//! **One writer at a time.** [`lock`] takes an exclusive flock(2) on the
//! target before anything is read: on the file itself when it exists, on its
//! directory when the write creates it. A waiter may wake to find that the
//! file it locked was replaced meanwhile (the previous writer renamed its
//! new content over it); it then locks the new file and looks again, so an
//! edit always reads the content the previous writer left and applies on
//! top of it. Just before the new content takes the target's place, the
//! target is checked once more: still the file that was locked and read,
//! with the same size and modification time. A program that ignores the
//! lock and changes the file meanwhile makes the write fail with
//! FILE_CHANGED, and nothing is replaced; one that changes it in the few
//! microseconds between that check and the rename is the one case no lock
//! that others may ignore can catch.
//!
//! **Nothing left behind.** The new content goes into an unnamed file
//! (O_TMPFILE) in the target's own directory (so the final rename(2) stays
//! on one file system and is atomic): a kill at any instant before it is
//! complete leaves nothing to clean up. It is flushed with fdatasync(2)
//! (its writeback started early, see [`Sink`]), given a name with
//! linkat(2), and renamed over the target; a new file is linked straight to
//! its name. Where the file system itself writes a file's data before a
//! rename over an existing file commits (journaled ext4, see
//! [`rename_is_ordered`]), the flush and the directory's fsync are left to
//! it: a crash still leaves the old content or the new. On file systems without O_TMPFILE the temporary file is named
//! from the start. Either way its name is fixed, `.NAME.ikigai-tmp`, and it
//! is only ever used under the target's lock: a file of that name found by
//! the lock's holder can only be left from a writer that was killed, and is
//! removed before the name is used again. So a kill leaves at most that one
//! file, and the next write of the same file removes it.
//!
//! An existing target keeps its permission bits and, as far as the caller
//! may give them, its owner and group. The target is always a resolved path
//! (see [`super::resolve_link`]), so a symbolic link that led to it stays a
//! link. What a rename cannot keep: other hard links to the old file keep
//! the old content, and extended attributes and ACLs of the old file are not
//! copied. Replacing needs write permission on the directory; when the file
//! is writable but its directory is not, the answer says so.

use std::ffi::{CString, OsString};
use std::fs::{File, Metadata, OpenOptions, Permissions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{ErrorCode, ToolError};

/// The longest piece of the target's name copied into the temporary file's
/// name, so that name stays under NAME_MAX (255) with its dot, hash and
/// suffix.
const MAX_NAME_IN_TEMP: usize = 200;

/// The temporary file's suffix: what marks a leftover as ours.
const TEMP_SUFFIX: &[u8] = b".ikigai-tmp";

/// How much the temporary file accumulates before its writeback is started.
const WRITEBACK: u64 = 8 << 20;

/// The right to replace `target`: held from before it is read until after
/// the new content is in place. Dropping it releases the lock.
pub struct Locked {
    target: PathBuf,
    dir: PathBuf,
    /// The existing target, opened and locked, with its metadata as of
    /// when the lock was taken; `None` when the write creates the file.
    existing: Option<(File, Metadata)>,
    /// The directory, locked, when the write creates the file (`None` when
    /// the directory cannot be opened for reading: then no lock is taken).
    _dir_lock: Option<File>,
}

impl Locked {
    /// The existing target, open (for reading too when [`lock`] was asked
    /// to), and its metadata.
    pub fn existing(&self) -> Option<(&File, &Metadata)> {
        self.existing.as_ref().map(|(f, m)| (f, m))
    }
}

/// Locks `target` (a resolved path) for an update, waiting for any other
/// writer of ours to finish. Opens an existing target for writing, and
/// reading too when `read` is set, refusing what [`super::open_for_update`]
/// refuses; `shown` is the path as the caller gave it, for messages.
pub fn lock(target: &Path, shown: &str, read: bool) -> Result<Locked, ToolError> {
    if !super::names_a_file(target) {
        return Err(super::cannot_open(shown, None));
    }
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        Some(_) => PathBuf::from("."),
        None => return Err(super::cannot_open(shown, None)),
    };
    loop {
        match super::open_for_update(target, shown, read)? {
            Some((file, _)) => {
                flock(&file).map_err(|e| super::open_error(&e, shown))?;
                // The previous holder may have renamed its new content over
                // the file we waited on: then that one is the file to edit.
                let meta = file.metadata().map_err(|e| super::open_error(&e, shown))?;
                if same_file(target, &meta) {
                    return Ok(Locked {
                        target: target.to_path_buf(),
                        dir,
                        existing: Some((file, meta)),
                        _dir_lock: None,
                    });
                }
            }
            None => {
                let dir_lock = match File::open(&dir) {
                    Ok(d) => {
                        flock(&d).map_err(|e| super::open_error(&e, shown))?;
                        Some(d)
                    }
                    Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {
                        return Err(super::cannot_open(shown, None))
                    }
                    // A directory we may write but not read: no lock to take;
                    // the final link still never overwrites a file.
                    Err(_) => None,
                };
                if matches!(std::fs::symlink_metadata(target), Err(e) if e.kind() == io::ErrorKind::NotFound)
                {
                    return Ok(Locked {
                        target: target.to_path_buf(),
                        dir,
                        existing: None,
                        _dir_lock: dir_lock,
                    });
                }
            }
        }
    }
}

/// Waits for an exclusive flock on `file`. A file system that has no
/// locks (ENOLCK, EOPNOTSUPP) leaves only the final check before the
/// rename to catch a concurrent change.
fn flock(file: &File) -> io::Result<()> {
    loop {
        // SAFETY: flock on an fd we own; it touches no memory of ours.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::ENOLCK | libc::EOPNOTSUPP | libc::EINVAL) => return Ok(()),
            _ => return Err(err),
        }
    }
}

/// Whether `path` names the file whose metadata is `meta`.
fn same_file(path: &Path, meta: &Metadata) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == (meta.dev(), meta.ino()))
}

/// Replaces the content of the locked target with what `fill` writes into
/// the temporary file, and returns what `fill` returned; an error from
/// `fill` (write errors mapped with [`write_error`]) abandons the
/// replacement. An existing target's mode and owner are kept; a new file
/// gets the default mode, 0666 less the umask. `shown` is the path as the
/// caller gave it, for messages.
pub fn replace<T>(
    locked: &Locked,
    shown: &str,
    fill: impl FnOnce(&mut Sink) -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    replace_with(locked, shown, true, fill)
}

/// [`replace`], with an unnamed temporary file when `unnamed` and the file
/// system allows it (`false` tests the named way on any file system).
fn replace_with<T>(
    locked: &Locked,
    shown: &str,
    unnamed: bool,
    fill: impl FnOnce(&mut Sink) -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    let exists = locked.existing.is_some();
    let Some(name) = locked.target.file_name() else {
        return Err(super::cannot_open(shown, None));
    };
    let temp_path = locked.dir.join(temp_name(name.as_bytes()));
    // Only a writer killed while holding this lock can have left it.
    remove_leftover(&temp_path);
    let mut temp = Temp::create(&locked.dir, &temp_path, unnamed)
        .map_err(|e| create_error(&e, shown, exists))?;

    // Where the file system itself puts a renamed file's data on disk
    // before the rename, flushing it ourselves buys nothing "old or new"
    // needs; the same holds for starting its writeback early.
    let ordered = locked
        .existing
        .as_ref()
        .is_some_and(|(file, _)| rename_is_ordered(file));
    let written = fill(&mut Sink {
        file: &mut temp.file,
        written: 0,
        started: 0,
        writeback: !ordered,
    })?;
    if let Some((_, meta)) = &locked.existing {
        keep_owner_and_mode(&temp.file, meta).map_err(|e| write_error(&e, shown))?;
    }
    if !ordered {
        temp.file.sync_data().map_err(|e| write_error(&e, shown))?;
    }
    if let Some((file, meta)) = &locked.existing {
        unchanged(file, meta, &locked.target, shown)?;
    }
    temp.put_in_place(&locked.target, exists)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::EEXIST) => changed(shown),
            // A failed rename (a sticky directory owned by someone else, a
            // mount point) is PERMISSION_DENIED or WRITE_FAILED, like a
            // failed write.
            _ => write_error(&e, shown),
        })?;
    // The rename itself becomes durable with the directory; a failure here
    // changes nothing the caller could act on, the new content is in place.
    // Where the rename is ordered, the journal commits it in its own time:
    // until then a crash leaves the old file, which "old or new" allows.
    if !ordered {
        if let Ok(d) = File::open(&locked.dir) {
            let _ = d.sync_all();
        }
    }
    Ok(written)
}

/// ext2, ext3 and ext4 share this superblock magic (statfs(2)).
const EXT4_SUPER_MAGIC: libc::c_long = 0xEF53;

/// Whether a file renamed over `file` is sure to reach the disk with its
/// data before the rename does, so that a crash leaves the old content or
/// the new one without our fdatasync. ext4 does this (its `auto_da_alloc`,
/// on by default) when it has a journal in `data=ordered` or `data=journal`
/// mode: the rename then forces the new file's blocks to be allocated, and
/// the journal commits no transaction before the data of the blocks it
/// allocated is written. The kernel's full option list for the file
/// system, `/proc/fs/ext4/DEV/options`, is the one place that says all
/// three (a journal-less ext4 lists no `data=` mode there, and its mount
/// options in /proc/self/mountinfo look like a journaled one's). Anything
/// unknown (another file system, the list unreadable) is `false`: the
/// caller then flushes as before.
pub fn rename_is_ordered(file: &File) -> bool {
    if fs_magic(file) != Some(EXT4_SUPER_MAGIC) {
        return false;
    }
    let Ok(meta) = file.metadata() else {
        return false;
    };
    let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
    // The kernel's name of the block device, which names its ext4 entry.
    let Ok(device) = std::fs::read_link(format!("/sys/dev/block/{major}:{minor}")) else {
        return false;
    };
    let Some(name) = device.file_name() else {
        return false;
    };
    let mut options = PathBuf::from("/proc/fs/ext4");
    options.push(name);
    options.push("options");
    std::fs::read_to_string(options).is_ok_and(|text| ext4_orders_renames(&text))
}

/// The magic number of the file system `file` is on (statfs(2)'s f_type).
fn fs_magic(file: &File) -> Option<libc::c_long> {
    // SAFETY: an all-zero statfs is a valid value of that plain C struct.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatfs fills the struct we pass and reads nothing else of
    // ours; the fd is open for the life of `file`.
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut fs) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast)] // f_type's C type differs by target
    Some(fs.f_type as libc::c_long)
}

/// Whether an ext4 option list, one option a line as in
/// `/proc/fs/ext4/DEV/options`, names a journal that orders data
/// (`data=ordered` or `data=journal`) and `auto_da_alloc`.
fn ext4_orders_renames(options: &str) -> bool {
    let has = |option: &str| options.lines().any(|line| line.trim() == option);
    (has("data=ordered") || has("data=journal")) && has("auto_da_alloc") && !has("noauto_da_alloc")
}

/// FILE_CHANGED unless `path` still names `file`, with the size and
/// modification time it had when it was locked: a program that ignores the
/// lock wrote it, replaced it or removed it meanwhile.
fn unchanged(file: &File, before: &Metadata, path: &Path, shown: &str) -> Result<(), ToolError> {
    let now = file.metadata().map_err(|e| super::read_error(&e, shown))?;
    let same = now.len() == before.len()
        && (now.mtime(), now.mtime_nsec()) == (before.mtime(), before.mtime_nsec())
        && same_file(path, before);
    if same {
        Ok(())
    } else {
        Err(changed(shown))
    }
}

/// FILE_CHANGED: another program changed the file while it was being
/// written; nothing was replaced.
pub fn changed(shown: &str) -> ToolError {
    ToolError::new(
        ErrorCode::FileChanged,
        format!(
            "File changed while being edited: {shown} (another program wrote it meanwhile; \
             nothing was replaced: read it again and redo the change)"
        ),
    )
}

/// The temporary file being filled: unnamed until it is complete, or named
/// from the start where the file system has no unnamed files.
struct Temp {
    file: File,
    /// Its name: always for a named file; for an unnamed one, where it is
    /// linked on its way into place.
    path: PathBuf,
    /// The name exists (and must go if the write fails).
    named: bool,
}

impl Temp {
    fn create(dir: &Path, path: &Path, unnamed: bool) -> io::Result<Temp> {
        // Linking an unnamed file takes /proc/self/fd (or a privilege):
        // without it, the file is named from the start.
        if unnamed && Path::new("/proc/self/fd").is_dir() {
            // Mode 0666 lets the kernel apply the umask.
            match OpenOptions::new()
                .write(true)
                .mode(0o666)
                .custom_flags(libc::O_TMPFILE)
                .open(dir)
            {
                Ok(file) => {
                    return Ok(Temp {
                        file,
                        path: path.to_path_buf(),
                        named: false,
                    })
                }
                // The file system (or an old kernel) has no O_TMPFILE.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .open(path)?;
        Ok(Temp {
            file,
            path: path.to_path_buf(),
            named: true,
        })
    }

    /// Gives the complete file the target's name: renamed over an existing
    /// target, linked to a new one (EEXIST when another program created it
    /// meanwhile: it is not overwritten).
    fn put_in_place(&mut self, target: &Path, exists: bool) -> io::Result<()> {
        if !self.named {
            if !exists {
                return self.link_to(target);
            }
            self.link_to(&self.path.clone())?;
            self.named = true;
        }
        if exists {
            std::fs::rename(&self.path, target)?;
        } else {
            rename_noreplace(&self.path, target)?;
        }
        self.named = false;
        Ok(())
    }

    /// Links the unnamed file to `name`.
    fn link_to(&self, name: &Path) -> io::Result<()> {
        let to = cstring(name)?;
        let fd = self.file.as_raw_fd();
        // SAFETY: valid NUL-terminated strings and our own fd; linkat
        // reads them and nothing else of ours.
        if unsafe {
            libc::linkat(
                fd,
                c"".as_ptr(),
                libc::AT_FDCWD,
                to.as_ptr(),
                libc::AT_EMPTY_PATH,
            )
        } == 0
        {
            return Ok(());
        }
        // AT_EMPTY_PATH needs a privilege on most kernels; the /proc link
        // to our own fd does not.
        let proc = CString::new(format!("/proc/self/fd/{fd}")).map_err(io::Error::other)?;
        // SAFETY: as above.
        if unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                proc.as_ptr(),
                libc::AT_FDCWD,
                to.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        } == 0
        {
            return Ok(());
        }
        Err(io::Error::last_os_error())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if self.named {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)
}

/// rename(2) that fails with EEXIST rather than replace an existing file.
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let (from, to) = (cstring(from)?, cstring(to)?);
    // SAFETY: valid NUL-terminated strings; renameat2 reads nothing else.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Removes a temporary file a killed writer left, when it is a regular
/// file (never a directory or whatever else someone put there).
fn remove_leftover(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        let _ = std::fs::remove_file(path);
    }
}

/// `.NAME.ikigai-tmp`: a leftover says which file it belonged to. A name
/// too long for that is cut, and a hash of the whole name keeps two long
/// names that share their start apart.
fn temp_name(name: &[u8]) -> OsString {
    let mut temp = vec![b'.'];
    if name.len() <= MAX_NAME_IN_TEMP {
        temp.extend_from_slice(name);
    } else {
        temp.extend_from_slice(&name[..MAX_NAME_IN_TEMP]);
        temp.extend_from_slice(format!("~{:016x}", fnv1a(name)).as_bytes());
    }
    temp.extend_from_slice(TEMP_SUFFIX);
    OsString::from_vec(temp)
}

/// FNV-1a, 64 bits: a stable hash with no dependency.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The temporary file could not be created in the target's directory.
fn create_error(err: &io::Error, shown: &str, target_exists: bool) -> ToolError {
    match err.raw_os_error() {
        // The parent directory is missing or is not a directory: docs/local-tools.md's
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

/// The temporary file being filled. When it is to be flushed, every
/// [`WRITEBACK`] bytes it asks the kernel to start writing them out
/// (sync_file_range), so the disk works while the rest is produced and the
/// final fdatasync finds little left: on a 200 MB file that saves most of
/// the flush time.
pub struct Sink<'a> {
    file: &'a mut File,
    written: u64,
    started: u64,
    /// Start the writeback as the file fills: only when it will be flushed.
    writeback: bool,
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
        if self.writeback && self.written - self.started >= WRITEBACK {
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

    fn write(path: &Path, bytes: &[u8]) -> Result<(), ToolError> {
        let locked = lock(path, "f", false)?;
        replace(&locked, "f", |sink| {
            sink.write_all(bytes).map_err(|e| write_error(&e, "f"))
        })
    }

    #[test]
    fn replaces_content_and_keeps_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o751)).unwrap();
        write(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let mode = std::fs::metadata(&path).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o751);
        assert_eq!(entries(dir.path()), ["f"]);
    }

    #[test]
    fn creates_a_new_file_and_removes_a_leftover() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        // What a writer killed between link and rename leaves.
        std::fs::write(dir.path().join(".f.ikigai-tmp"), "half").unwrap();
        write(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
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
        let locked = lock(&path, "shown/f", true).unwrap();
        let err = replace(&locked, "shown/f", |sink| {
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
            replace(&locked, "f", |_| {
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
    fn a_change_behind_the_lock_is_file_changed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "old").unwrap();
        let locked = lock(&path, "f", true).unwrap();
        // A program that ignores the lock replaces the file.
        std::fs::write(dir.path().join("other"), "theirs").unwrap();
        std::fs::rename(dir.path().join("other"), &path).unwrap();
        let err = replace(&locked, "f", |sink| {
            sink.write_all(b"mine").map_err(|e| write_error(&e, "f"))
        })
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::FileChanged);
        assert_eq!(std::fs::read(&path).unwrap(), b"theirs");
        assert_eq!(entries(dir.path()), ["f"]);

        // A file created by another program while ours was being written
        // is not overwritten either.
        let new = dir.path().join("g");
        let locked = lock(&new, "g", false).unwrap();
        std::fs::write(&new, "theirs").unwrap();
        let err = replace(&locked, "g", |sink| {
            sink.write_all(b"mine").map_err(|e| write_error(&e, "g"))
        })
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::FileChanged);
        assert_eq!(std::fs::read(&new).unwrap(), b"theirs");
    }

    #[test]
    fn a_named_temporary_file_works_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "old").unwrap();
        std::fs::write(dir.path().join(".f.ikigai-tmp"), "left by a kill").unwrap();
        let locked = lock(&path, "f", false).unwrap();
        let err = replace_with(&locked, "f", false, |sink| {
            sink.write_all(b"partial").unwrap();
            assert_eq!(entries(dir.path()), [".f.ikigai-tmp", "f"]);
            Err::<(), _>(write_error(&io::Error::from_raw_os_error(libc::EIO), "f"))
        })
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::WriteFailed);
        assert_eq!(entries(dir.path()), ["f"]);
        replace_with(&locked, "f", false, |sink| {
            sink.write_all(b"new").map_err(|e| write_error(&e, "f"))
        })
        .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(entries(dir.path()), ["f"]);
        drop(locked);
        let new = dir.path().join("g");
        let locked = lock(&new, "g", false).unwrap();
        replace_with(&locked, "g", false, |sink| {
            sink.write_all(b"created").map_err(|e| write_error(&e, "g"))
        })
        .unwrap();
        assert_eq!(std::fs::read(&new).unwrap(), b"created");
        assert_eq!(entries(dir.path()), ["f", "g"]);
    }

    #[test]
    fn missing_parent_is_open_failed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/f");
        let err = lock(&path, "no/such/f", false).err().unwrap();
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
        let locked = lock(&target, "out", false).unwrap();
        replace(&locked, "out", |sink| {
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

    /// `/proc/fs/ext4/DEV/options` of a journal-less ext4 (no `data=`
    /// line), as on a VM image made without a journal.
    const NO_JOURNAL: &str = "rw\nbsddf\nnogrpid\nblock_validity\ndioread_nolock\n\
        delalloc\nnowarn_on_error\nnojournal_checksum\nbarrier\nauto_da_alloc\n\
        user_xattr\nacl\nerrors=continue\ncommit=5\n";

    #[test]
    fn ext4_orders_renames_only_with_a_journal_and_auto_da_alloc() {
        assert!(!ext4_orders_renames(NO_JOURNAL));
        let ordered = NO_JOURNAL.replace("nojournal_checksum\n", "data=ordered\n");
        assert!(ext4_orders_renames(&ordered));
        assert!(ext4_orders_renames(
            &NO_JOURNAL.replace("barrier\n", "barrier\ndata=journal\n")
        ));
        assert!(!ext4_orders_renames(
            &NO_JOURNAL.replace("barrier\n", "barrier\ndata=writeback\n")
        ));
        assert!(!ext4_orders_renames(
            &ordered.replace("auto_da_alloc", "noauto_da_alloc")
        ));
        // An option must be a whole line, not a piece of one.
        assert!(!ext4_orders_renames("data=ordered_x\nauto_da_alloc\n"));
        assert!(!ext4_orders_renames(""));
    }

    /// The device's ext4 journal as jbd2 lists it (`DEV-INODE`), a witness
    /// independent of the option list that [`rename_is_ordered`] reads.
    fn has_journal(file: &File) -> bool {
        let dev = file.metadata().unwrap().dev();
        let link = format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev));
        let Ok(device) = std::fs::read_link(link) else {
            return false;
        };
        let prefix = format!("{}-", device.file_name().unwrap().to_string_lossy());
        std::fs::read_dir("/proc/fs/jbd2").is_ok_and(|mut dir| {
            dir.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with(&prefix)))
        })
    }

    #[test]
    fn rename_is_ordered_only_on_journaled_ext4() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "x").unwrap();
        let file = File::open(&path).unwrap();
        let ext4 = fs_magic(&file) == Some(EXT4_SUPER_MAGIC);
        if rename_is_ordered(&file) {
            assert!(ext4 && has_journal(&file));
        } else if ext4 && has_journal(&file) {
            // Journaled ext4 that does not order renames: mounted so.
            let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
            assert!(mounts.contains("data=writeback") || mounts.contains("noauto_da_alloc"));
        }
        if let Ok(shm) = tempfile::tempfile_in("/dev/shm") {
            assert!(!rename_is_ordered(&shm));
        }
    }

    #[test]
    fn temp_name_stays_short_and_distinct() {
        let long = vec![b'x'; 255];
        let mut other = long.clone();
        other[254] = b'y';
        assert!(temp_name(&long).len() <= 255);
        assert_ne!(temp_name(&long), temp_name(&other));
        assert_eq!(temp_name(b"a.txt"), OsString::from(".a.txt.ikigai-tmp"));
    }
}
