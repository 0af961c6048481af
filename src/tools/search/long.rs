//! Paths longer than PATH_MAX (decision 32): the kernel refuses them whole
//! (ENAMETOOLONG), so they are reached one directory descriptor at a time.
//! [`At`] opens the directories of a long path's leading part in pieces the
//! kernel accepts (openat from the previous one) and leaves a last piece
//! short enough to name relative to the innermost descriptor; the walk's
//! operations (stat, listing, opening a file) then take that pair.
//!
//! The walk and grep use plain paths first and come here only when the
//! kernel says a path is too long, so the common case pays nothing.
//!
//! [`Dir`] is a directory being walked, listed through its descriptor and
//! kept open while the files found in it are searched: opening a file
//! relative to it (openat) spares the kernel a lookup of every directory of
//! the path for each file.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::walk::Kind;

/// The kernel's limit on a path given whole, terminating NUL included.
const PATH_MAX: usize = libc::PATH_MAX as usize;

/// A long path as a directory descriptor and a name relative to it.
pub struct At {
    /// `None`: relative to the working directory (the path was short).
    dir: Option<OwnedFd>,
    rest: CString,
}

/// Whether an error is the kernel refusing a path for its length.
pub fn too_long(err: &io::Error) -> bool {
    err.raw_os_error() == Some(libc::ENAMETOOLONG)
}

impl At {
    /// Opens the leading directories of `path` in pieces shorter than
    /// PATH_MAX, following symbolic links in them as the whole path would.
    pub fn new(path: &[u8]) -> io::Result<At> {
        let mut dir: Option<OwnedFd> = None;
        let mut rest = path;
        while rest.len() >= PATH_MAX {
            // The last `/` that leaves a piece the kernel takes.
            let cut = memchr::memrchr(b'/', &rest[..PATH_MAX - 1])
                .filter(|&i| i > 0)
                .ok_or_else(|| io::Error::from_raw_os_error(libc::ENAMETOOLONG))?;
            let piece = cstring(&rest[..cut])?;
            let fd = open_at(
                dir.as_ref().map_or(libc::AT_FDCWD, AsRawFd::as_raw_fd),
                &piece,
                libc::O_PATH | libc::O_DIRECTORY,
            )?;
            dir = Some(fd);
            rest = &rest[cut + 1..];
        }
        Ok(At {
            dir,
            rest: cstring(rest)?,
        })
    }

    fn dirfd(&self) -> RawFd {
        self.dir.as_ref().map_or(libc::AT_FDCWD, AsRawFd::as_raw_fd)
    }

    /// What the path is, and its (device, inode); `follow` follows a final
    /// symbolic link.
    pub fn stat(&self, follow: bool) -> io::Result<(Kind, (u64, u64))> {
        let flags = if follow { 0 } else { libc::AT_SYMLINK_NOFOLLOW };
        stat_at(self.dirfd(), &self.rest, flags)
    }

    /// Opens the path as a regular file for reading, without blocking on a
    /// FIFO.
    pub fn open_file(&self) -> io::Result<File> {
        let fd = open_at(self.dirfd(), &self.rest, libc::O_RDONLY | libc::O_NONBLOCK)?;
        Ok(File::from(fd))
    }
}

/// Opens the file at `path` for reading, without blocking on a FIFO: by
/// its whole name or, when that is too long, piece by piece.
pub fn open_file(path: &[u8]) -> io::Result<File> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(std::ffi::OsStr::from_bytes(path));
    match opened {
        Err(e) if too_long(&e) => At::new(path)?.open_file(),
        other => other,
    }
}

/// What `path` is and its (device, inode), `follow`ing a final symbolic
/// link or not: by its whole name or, when that is too long, piece by
/// piece. `None` when it cannot be known (gone, no permission).
pub fn stat(path: &[u8], follow: bool) -> Option<(Kind, (u64, u64))> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let name = if path.is_empty() { b"." } else { path };
    let name = std::path::Path::new(std::ffi::OsStr::from_bytes(name));
    let meta = if follow {
        std::fs::metadata(name)
    } else {
        std::fs::symlink_metadata(name)
    };
    match meta {
        Ok(m) => Some((Kind::of(m.file_type()), (m.dev(), m.ino()))),
        Err(e) if too_long(&e) => At::new(path).and_then(|a| a.stat(follow)).ok(),
        Err(_) => None,
    }
}

/// An open directory: listed once, then the base its files are opened from.
/// Listed with getdents64 straight into a buffer on the stack: no `DIR`
/// stream (whose opening costs an fstat and a heap buffer per directory)
/// and no allocation per entry.
pub struct Dir {
    fd: OwnedFd,
}

/// The getdents64 buffer, in u64s so its records are aligned.
const DIRENT_BUFFER: usize = 4096;

impl Dir {
    /// Opens the directory `path` (`""`: the working directory).
    pub fn open(path: &[u8]) -> io::Result<Dir> {
        let name = cstring(if path.is_empty() { b"." } else { path })?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY;
        let fd = match open_at(libc::AT_FDCWD, &name, flags) {
            Err(e) if too_long(&e) => {
                let at = At::new(path)?;
                open_at(at.dirfd(), &at.rest, flags)?
            }
            other => other?,
        };
        Ok(Dir { fd })
    }

    /// Calls `visit` with each entry's name and what it is (not following
    /// symbolic links), `.` and `..` left out. Called once.
    pub fn each_entry(&self, mut visit: impl FnMut(&[u8], Kind)) {
        // Uninitialised: zeroing 32 KB per directory showed in profiles,
        // and only what the kernel wrote is ever read.
        let mut buf = [std::mem::MaybeUninit::<u64>::uninit(); DIRENT_BUFFER];
        loop {
            // SAFETY: getdents64 writes at most the buffer's size into it.
            let n = unsafe {
                libc::syscall(
                    libc::SYS_getdents64,
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr(),
                    std::mem::size_of_val(&buf),
                )
            };
            if n <= 0 {
                return; // the end, or an error: what was listed stands
            }
            // SAFETY: the kernel filled (initialised) `n` bytes of the
            // buffer.
            let bytes =
                unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n as usize) };
            let mut at = 0;
            // linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type
            // u8, then the NUL-terminated name.
            while at + 19 < bytes.len() {
                let reclen = u16::from_ne_bytes([bytes[at + 16], bytes[at + 17]]) as usize;
                if reclen == 0 || at + reclen > bytes.len() {
                    return;
                }
                let d_type = bytes[at + 18];
                let record = &bytes[at + 19..at + reclen];
                let name = &record[..memchr::memchr(0, record).unwrap_or(record.len())];
                at += reclen;
                if name == b"." || name == b".." {
                    continue;
                }
                let kind = match d_type {
                    libc::DT_REG => Kind::File,
                    libc::DT_DIR => Kind::Dir,
                    libc::DT_LNK => Kind::Symlink,
                    libc::DT_UNKNOWN => {
                        let Ok(c) = cstring(name) else { continue };
                        match stat_at(self.fd.as_raw_fd(), &c, libc::AT_SYMLINK_NOFOLLOW) {
                            Ok((kind, _)) => kind,
                            Err(_) => continue,
                        }
                    }
                    _ => Kind::Other,
                };
                visit(name, kind);
            }
        }
    }

    /// Opens the directory `name` of this directory (following a symbolic
    /// link, as its whole path would): the kernel looks up one name, not
    /// every directory of the path.
    pub fn open_dir(&self, name: &[u8]) -> io::Result<Dir> {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY;
        let fd = open_at(self.fd.as_raw_fd(), &cstring(name)?, flags)?;
        Ok(Dir { fd })
    }

    /// Opens the file `name` of this directory for reading, without
    /// blocking on a FIFO.
    pub fn open_file(&self, name: &[u8]) -> io::Result<File> {
        let fd = open_at(
            self.fd.as_raw_fd(),
            &cstring(name)?,
            libc::O_RDONLY | libc::O_NONBLOCK,
        )?;
        Ok(File::from(fd))
    }
}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn open_at(dir: RawFd, name: &std::ffi::CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: a valid NUL-terminated name; the fd returned is ours alone.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn stat_at(
    dir: RawFd,
    name: &std::ffi::CStr,
    flags: libc::c_int,
) -> io::Result<(Kind, (u64, u64))> {
    // SAFETY: fstatat fills the zeroed struct it is given.
    let mut st: libc::stat64 = unsafe { std::mem::zeroed() };
    // SAFETY: a valid NUL-terminated name, a directory fd the caller owns,
    // and a stat buffer that outlives the call.
    if unsafe { libc::fstatat64(dir, name.as_ptr(), &mut st, flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let kind = match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => Kind::File,
        libc::S_IFDIR => Kind::Dir,
        libc::S_IFLNK => Kind::Symlink,
        _ => Kind::Other,
    };
    Ok((kind, (st.st_dev, st.st_ino)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    /// A tree deeper than PATH_MAX, made with mkdirat from descriptor to
    /// descriptor (no whole path could make it); returns its deepest path
    /// relative to `root`.
    fn deep_tree(root: &std::path::Path) -> Vec<u8> {
        let name = "d".repeat(200);
        let mut fd = open_at(
            libc::AT_FDCWD,
            &cstring(root.as_os_str().as_bytes()).unwrap(),
            libc::O_PATH | libc::O_DIRECTORY,
        )
        .unwrap();
        let c = cstring(name.as_bytes()).unwrap();
        let mut path = Vec::new();
        for _ in 0..25 {
            // SAFETY: a valid name and directory fd.
            let made = unsafe { libc::mkdirat(fd.as_raw_fd(), c.as_ptr(), 0o755) };
            assert_eq!(made, 0);
            fd = open_at(fd.as_raw_fd(), &c, libc::O_PATH | libc::O_DIRECTORY).unwrap();
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(name.as_bytes());
        }
        let file = cstring(b"f.txt").unwrap();
        // SAFETY: as above; the fd returned is closed at once.
        let f = unsafe {
            libc::openat(
                fd.as_raw_fd(),
                file.as_ptr(),
                libc::O_CREAT | libc::O_WRONLY,
                0o644,
            )
        };
        assert!(f >= 0);
        // SAFETY: the fd just opened.
        unsafe { libc::close(f) };
        path
    }

    #[test]
    fn a_path_longer_than_path_max_is_reached_piece_by_piece() {
        let dir = tempfile::tempdir().unwrap();
        let deep = deep_tree(dir.path());
        let mut whole = dir.path().as_os_str().as_bytes().to_vec();
        whole.push(b'/');
        whole.extend_from_slice(&deep);
        assert!(whole.len() > PATH_MAX);
        let err = std::fs::metadata(std::ffi::OsStr::from_bytes(&whole)).unwrap_err();
        assert!(too_long(&err));
        let at = At::new(&whole).unwrap();
        assert_eq!(at.stat(false).unwrap().0, Kind::Dir);
        let dir = Dir::open(&whole).unwrap();
        let mut entries = Vec::new();
        dir.each_entry(|name, kind| entries.push((name.to_vec(), kind)));
        assert_eq!(entries, [(b"f.txt".to_vec(), Kind::File)]);
        assert!(dir.open_file(b"f.txt").is_ok());
        let mut file = whole.clone();
        file.extend_from_slice(b"/f.txt");
        let at = At::new(&file).unwrap();
        assert_eq!(at.stat(true).unwrap().0, Kind::File);
        assert!(at.open_file().is_ok());
    }
}
