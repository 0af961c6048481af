//! The host's own files: the one way the host makes and opens what it
//! writes for itself (sessions and their directories, saved outputs,
//! background jobs' logs, the undo store, the prompt history, the MCP
//! token). A tool runs with the person's rights inside its fence; the host
//! runs with them outside it, so a link or a loose directory a tool left
//! where the host writes would lead the host's write anywhere. Here a
//! directory of ikigai's is made by the host with mode 0700 and opened
//! without following a link, then checked: a directory, owned by whoever
//! runs the host, writable by nobody else. Files are created in such a
//! directory through its handle, with their final mode, never through a
//! link (`O_NOFOLLOW`, `O_EXCL` when new). A shape the host did not make is
//! refused with an error naming it, never written through.
//!
//! The walk beneath a directory without links that `/undo` and
//! `--output-last-message` need is here too (`Beneath`): each component is
//! opened relative to the one before with `O_NOFOLLOW`, so a directory a
//! tool swaps for a link between a check and a use is never crossed.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::tool::Env;

/// ikigai's data directory: `$XDG_DATA_HOME/ikigai`, else
/// `~/.local/share/ikigai` (sessions, history, undo stores).
pub fn data_dir(env: &Env) -> Option<PathBuf> {
    let data = match env.var("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => env.home()?.join(".local").join("share"),
    };
    Some(data.join("ikigai"))
}

/// Makes ikigai's config and data directories when they are missing, so
/// the covers that keep tools from writing them hold from the first run
/// (a cover needs a path that exists). A directory in a shape the host did
/// not make is reported, and the host goes on: the error names it.
pub fn make_own_dirs(env: &Env) -> Vec<String> {
    [env.config_dir(), data_dir(env)]
        .into_iter()
        .flatten()
        .filter_map(|dir| Dir::own(&dir).err().map(|e| e.to_string()))
        .collect()
}

/// An open directory of the host's own, checked.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// ikigai's directory at `path`, made (mode 0700) when missing. Every
    /// component from the nearest one named `ikigai` down to `path` (else
    /// `path` alone) is the host's: opened without following a link and
    /// checked; the ones above it are the person's, taken as they are.
    pub fn own(path: &Path) -> io::Result<Dir> {
        let path = lexical(path);
        let comps: Vec<&OsStr> = path.iter().collect();
        let from = comps
            .iter()
            .rposition(|c| *c == "ikigai")
            .unwrap_or(comps.len().saturating_sub(1))
            .max(1);
        let top: PathBuf = comps[..from].iter().collect();
        if !top.as_os_str().is_empty() && !top.exists() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&top)
                .map_err(|e| named(&top, &format!("cannot be made ({e})")))?;
        }
        let fd = open_raw(None, &top, libc::O_DIRECTORY | libc::O_PATH)
            .map_err(|e| named(&top, &format!("cannot be opened ({e})")))?;
        let mut dir = Dir { fd, path: top };
        for name in &comps[from..] {
            dir = dir.sub(name)?;
        }
        Ok(dir)
    }

    /// The directory `name` in this one, made (0700) when missing, checked.
    pub fn sub(&self, name: impl AsRef<OsStr>) -> io::Result<Dir> {
        let name = name.as_ref();
        let path = self.path.join(name);
        let c = cstring(name)?;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        let made = unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o700) };
        if made != 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(plain(e, &self.path, &path));
            }
        }
        let fd = open_raw(
            Some(&self.fd),
            Path::new(name),
            libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_RDONLY,
        )
        .map_err(|e| self.shape_error(name, e))?;
        let st = fstat(&fd)?;
        check_owned(&st, &path, true)?;
        if st.st_mode & 0o077 != 0 {
            // An older version's directory, readable by others: made
            // private, as a new one is.
            // SAFETY: a valid descriptor.
            if unsafe { libc::fchmod(fd.as_raw_fd(), 0o700) } != 0 {
                return Err(named(
                    &path,
                    &format!("cannot be made private ({})", io::Error::last_os_error()),
                ));
            }
        }
        Ok(Dir { fd, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A new file `name` here, mode `mode`, open for writing (and reading); an existing
    /// name of any kind is `AlreadyExists`, never opened.
    pub fn create_new(&self, name: impl AsRef<OsStr>, mode: u32) -> io::Result<File> {
        let name = name.as_ref();
        let c = cstring(name)?;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        let fd = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(match e.kind() {
                io::ErrorKind::AlreadyExists => e,
                _ => plain(e, &self.path, &self.path.join(name)),
            });
        }
        // SAFETY: a descriptor just opened and owned by nobody else.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// The existing file `name` here, for appending (`write`) or reading:
    /// a regular file of the person's, not a link, writable by nobody
    /// else. Made 0600 when an older version left it readable by others.
    pub fn open_existing(&self, name: impl AsRef<OsStr>, write: bool) -> io::Result<File> {
        let name = name.as_ref();
        let path = self.path.join(name);
        let access = if write {
            libc::O_WRONLY | libc::O_APPEND
        } else {
            libc::O_RDONLY
        };
        let fd = open_raw(
            Some(&self.fd),
            Path::new(name),
            access | libc::O_NOFOLLOW | libc::O_NONBLOCK,
        )
        .map_err(|e| self.shape_error(name, e))?;
        let st = fstat(&fd)?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(named(&path, "is not a regular file"));
        }
        check_owned(&st, &path, false)?;
        if write && st.st_mode & 0o077 != 0 {
            // SAFETY: a valid descriptor.
            unsafe { libc::fchmod(fd.as_raw_fd(), 0o600) };
        }
        let file = File::from(fd);
        clear_nonblock(&file);
        Ok(file)
    }

    /// Removes the file `name` here (not a directory); a missing one is
    /// no error.
    pub fn remove_file(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        let c = cstring(name.as_ref())?;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        match unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) } {
            0 => Ok(()),
            _ => match io::Error::last_os_error() {
                e if e.kind() == io::ErrorKind::NotFound => Ok(()),
                e => Err(e),
            },
        }
    }

    /// Renames `from` to `to`, both here (`to` replaced, even a link: the
    /// link itself, never what it names).
    pub fn rename(&self, from: impl AsRef<OsStr>, to: impl AsRef<OsStr>) -> io::Result<()> {
        let (from, to) = (cstring(from.as_ref())?, cstring(to.as_ref())?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: valid directory descriptors and NUL-terminated names.
        match unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) } {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }

    /// Removes the empty directory `name` here; a missing or non-empty one
    /// is left.
    pub fn remove_dir(&self, name: impl AsRef<OsStr>) {
        if let Ok(c) = cstring(name.as_ref()) {
            // SAFETY: a valid directory descriptor and a NUL-terminated name.
            unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) };
        }
    }

    /// Why `name` could not be opened as the host's: its shape named.
    fn shape_error(&self, name: &OsStr, e: io::Error) -> io::Error {
        let path = self.path.join(name);
        match lstat_at(&self.fd, name) {
            Some(st) if st.st_mode & libc::S_IFMT == libc::S_IFLNK => {
                named(&path, "is a symbolic link")
            }
            Some(st) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                named(&path, &format!("is {}, not a directory", kind(st.st_mode)))
            }
            _ => io::Error::new(e.kind(), format!("{}: {e}", path.display())),
        }
    }
}

/// An error naming `path` and what is wrong with it, which the host refuses
/// to write through.
fn named(path: &Path, why: &str) -> io::Error {
    io::Error::other(format!(
        "{} {why}: ikigai writes its own files only in directories it made",
        path.display()
    ))
}

/// `e`, in plain words when the disk is full: the directory named.
pub fn plain(e: io::Error, dir: &Path, path: &Path) -> io::Error {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => io::Error::new(
            e.kind(),
            format!(
                "the disk that holds {} is full: {} could not be written",
                dir.display(),
                path.display()
            ),
        ),
        Some(libc::EDQUOT) => io::Error::new(
            e.kind(),
            format!(
                "the disk quota for {} is used up: {} could not be written",
                dir.display(),
                path.display()
            ),
        ),
        _ => io::Error::new(e.kind(), format!("{}: {e}", path.display())),
    }
}

fn check_owned(st: &libc::stat, path: &Path, dir: bool) -> io::Result<()> {
    // SAFETY: no arguments, cannot fail.
    let me = unsafe { libc::geteuid() };
    if st.st_uid != me {
        return Err(named(
            path,
            &format!(
                "belongs to user {}, not to the one running ikigai",
                st.st_uid
            ),
        ));
    }
    if st.st_mode & 0o022 != 0 {
        let what = if dir { "directory" } else { "file" };
        return Err(named(
            path,
            &format!("is a {what} writable by group or others"),
        ));
    }
    Ok(())
}

/// What kind of file `mode` is, in words.
pub fn kind(mode: libc::mode_t) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFREG => "a file",
        libc::S_IFDIR => "a directory",
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFSOCK => "a socket",
        libc::S_IFCHR | libc::S_IFBLK => "a device",
        _ => "a special file",
    }
}

fn cstring(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name holds a NUL byte"))
}

fn open_raw(at: Option<&OwnedFd>, path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = cstring(path.as_os_str())?;
    let dirfd = at.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: a valid directory descriptor (or AT_FDCWD) and a
    // NUL-terminated path.
    let fd = unsafe { libc::openat(dirfd, c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn fstat(fd: &impl AsRawFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a stat to fill.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

fn lstat_at(dir: &OwnedFd, name: &OsStr) -> Option<libc::stat> {
    let c = cstring(name).ok()?;
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor, a NUL-terminated name, a stat to fill.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    (r == 0).then_some(st)
}

fn clear_nonblock(file: &File) {
    // SAFETY: a valid descriptor; F_GETFL and F_SETFL take no pointer.
    unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
}

/// `path` with `.` dropped and `..` taken back lexically (never through
/// the file system, where `..` after a link would go elsewhere).
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// A directory and its identity (device, inode), as a walk found it.
pub type Identity = (u64, u64);

/// A path walked from a trusted directory without following any link:
/// the handle of the last directory on the way, the identities of every
/// directory from the start down, and the last component's name.
#[derive(Debug)]
pub struct Beneath {
    pub parent: OwnedFd,
    pub dirs: Vec<Identity>,
    pub name: std::ffi::OsString,
}

impl Beneath {
    /// Walks `path` (absolute) beneath `root` (absolute, taken as it is:
    /// the workspace the person chose). A path outside `root` is walked
    /// from `/`. Every directory on the way is opened with `O_NOFOLLOW`;
    /// a link among them fails with an error naming it.
    pub fn walk(root: &Path, path: &Path) -> io::Result<Beneath> {
        let path = lexical(path);
        let (start, rest) = match path.strip_prefix(root) {
            Ok(rest) if !rest.as_os_str().is_empty() => (root.to_path_buf(), rest.to_path_buf()),
            _ => (
                PathBuf::from("/"),
                path.strip_prefix("/").unwrap_or(&path).to_path_buf(),
            ),
        };
        let mut comps: Vec<&OsStr> = rest.iter().collect();
        let name = comps
            .pop()
            .ok_or_else(|| io::Error::other(format!("{} names no file", path.display())))?
            .to_os_string();
        let mut fd = open_raw(None, &start, libc::O_DIRECTORY | libc::O_PATH)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", start.display())))?;
        let id = |fd: &OwnedFd| fstat(fd).map(|st| (st.st_dev, st.st_ino));
        let mut dirs = vec![id(&fd)?];
        let mut at = start;
        for comp in comps {
            at.push(comp);
            let next = open_raw(
                Some(&fd),
                Path::new(comp),
                libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_PATH,
            )
            .map_err(|e| {
                let why = match lstat_at(&fd, comp) {
                    Some(st) if st.st_mode & libc::S_IFMT == libc::S_IFLNK => {
                        "is a symbolic link".to_string()
                    }
                    Some(st) if st.st_mode & libc::S_IFMT != libc::S_IFDIR => {
                        format!("is {}, not a directory", kind(st.st_mode))
                    }
                    _ => e.to_string(),
                };
                io::Error::new(e.kind(), format!("{} {why}", at.display()))
            })?;
            dirs.push(id(&next)?);
            fd = next;
        }
        Ok(Beneath {
            parent: fd,
            dirs,
            name,
        })
    }

    /// The last component as it is now, without following it.
    pub fn stat(&self) -> Option<libc::stat> {
        lstat_at(&self.parent, &self.name)
    }

    /// Opens the last component for reading: only a regular file, never a
    /// link, never blocking on a FIFO or a device.
    pub fn open_regular(&self) -> io::Result<(File, libc::stat)> {
        let fd = open_raw(
            Some(&self.parent),
            Path::new(&self.name),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY,
        )
        .map_err(|e| match self.stat() {
            Some(st) if st.st_mode & libc::S_IFMT == libc::S_IFLNK => {
                io::Error::other("is a symbolic link")
            }
            _ => e,
        })?;
        let st = fstat(&fd)?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(io::Error::other(format!(
                "is {}, not a regular file",
                kind(st.st_mode)
            )));
        }
        let file = File::from(fd);
        clear_nonblock(&file);
        Ok((file, st))
    }

    /// Opens (creating, 0644 less the umask, when missing) the last
    /// component for writing: never through a link, only a regular file.
    pub fn open_write(&self) -> io::Result<File> {
        let c = cstring(&self.name)?;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        let fd = unsafe {
            libc::openat(
                self.parent.as_raw_fd(),
                c.as_ptr(),
                libc::O_WRONLY
                    | libc::O_CREAT
                    | libc::O_NOFOLLOW
                    | libc::O_NONBLOCK
                    | libc::O_NOCTTY
                    | libc::O_CLOEXEC,
                0o644 as libc::c_uint,
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(match self.stat() {
                Some(st) if st.st_mode & libc::S_IFMT == libc::S_IFLNK => {
                    io::Error::other("is a symbolic link")
                }
                _ => e,
            });
        }
        // SAFETY: a descriptor just opened and owned by nobody else.
        let file = unsafe { File::from_raw_fd(fd) };
        let st = fstat(&file)?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(io::Error::other(format!(
                "is {}, not a regular file",
                kind(st.st_mode)
            )));
        }
        clear_nonblock(&file);
        Ok(file)
    }

    /// The directory handle's raw descriptor, for `*at` calls.
    pub fn dirfd(&self) -> libc::c_int {
        self.parent.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn a_full_disk_is_said_in_plain_words_naming_the_directory() {
        let (dir, file) = (Path::new("/d/sessions"), Path::new("/d/sessions/s.jsonl"));
        let full = plain(io::Error::from_raw_os_error(libc::ENOSPC), dir, file).to_string();
        assert_eq!(
            full,
            "the disk that holds /d/sessions is full: /d/sessions/s.jsonl could not be written"
        );
        let quota = plain(io::Error::from_raw_os_error(libc::EDQUOT), dir, file).to_string();
        assert!(
            quota.starts_with("the disk quota for /d/sessions is used up"),
            "{quota}"
        );
        let other = plain(io::Error::from_raw_os_error(libc::EIO), dir, file).to_string();
        assert!(other.starts_with("/d/sessions/s.jsonl: "), "{other}");
    }

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn own_directories_are_made_private_and_files_new() {
        let root = tempfile::tempdir().unwrap();
        let dir = Dir::own(&root.path().join("data/ikigai/sessions")).unwrap();
        assert_eq!(mode(&root.path().join("data/ikigai")), 0o700);
        assert_eq!(mode(dir.path()), 0o700);
        let mut f = dir.create_new("a.jsonl", 0o600).unwrap();
        f.write_all(b"x").unwrap();
        assert_eq!(mode(&dir.path().join("a.jsonl")), 0o600);
        let again = dir.create_new("a.jsonl", 0o600).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        assert!(dir.open_existing("a.jsonl", true).is_ok());
        // An older version's loose directory is made private.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Dir::own(dir.path()).unwrap();
        assert_eq!(mode(dir.path()), 0o700);
    }

    #[test]
    fn links_and_loose_shapes_are_refused_by_name() {
        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let ikigai = root.path().join("data/ikigai");
        std::fs::create_dir_all(&ikigai).unwrap();
        // A link at the last component and at a middle one.
        symlink(&outside, ikigai.join("sessions")).unwrap();
        let e = Dir::own(&ikigai.join("sessions")).unwrap_err().to_string();
        assert!(e.contains("sessions is a symbolic link"), "{e}");
        let e = Dir::own(&ikigai.join("sessions/x"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("sessions is a symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        // A directory others may write.
        std::fs::remove_file(ikigai.join("sessions")).unwrap();
        std::fs::create_dir(ikigai.join("sessions")).unwrap();
        std::fs::set_permissions(
            ikigai.join("sessions"),
            std::fs::Permissions::from_mode(0o777),
        )
        .unwrap();
        let e = Dir::own(&ikigai.join("sessions")).unwrap_err().to_string();
        assert!(e.contains("writable by group or others"), "{e}");
        // A file where a directory should be; a link where a file is.
        std::fs::write(ikigai.join("jobs"), "").unwrap();
        let e = Dir::own(&ikigai.join("jobs")).unwrap_err().to_string();
        assert!(e.contains("jobs is a file, not a directory"), "{e}");
        let dir = Dir::own(&ikigai).unwrap();
        symlink(outside.join("t"), ikigai.join("log")).unwrap();
        assert_eq!(
            dir.create_new("log", 0o600).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        let e = dir.open_existing("log", true).unwrap_err().to_string();
        assert!(e.contains("log is a symbolic link"), "{e}");
        assert!(!outside.join("t").exists());
    }

    #[test]
    fn another_owners_directory_is_refused() {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: only root can give a directory to another user");
            return;
        }
        let root = tempfile::tempdir().unwrap();
        let theirs = root.path().join("ikigai/sessions");
        std::fs::create_dir_all(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let e = Dir::own(&theirs).unwrap_err().to_string();
        assert!(e.contains("sessions belongs to user 65534"), "{e}");
    }

    #[test]
    fn a_link_swapped_in_after_the_walk_is_never_crossed() {
        let root = tempfile::tempdir().unwrap();
        let w = root.path().canonicalize().unwrap();
        std::fs::create_dir_all(w.join("out")).unwrap();
        std::fs::create_dir_all(w.join("elsewhere")).unwrap();
        let walk = Beneath::walk(&w, &w.join("out/answer.txt")).unwrap();
        // A tool renames the directory away and puts a link in its place
        // between the host's walk and its write.
        std::fs::rename(w.join("out"), w.join("moved")).unwrap();
        symlink(w.join("elsewhere"), w.join("out")).unwrap();
        walk.open_write().unwrap().write_all(b"answer").unwrap();
        assert_eq!(std::fs::read_dir(w.join("elsewhere")).unwrap().count(), 0);
        assert_eq!(
            std::fs::read_to_string(w.join("moved/answer.txt")).unwrap(),
            "answer"
        );
    }

    #[test]
    fn a_walk_crosses_no_link_and_knows_each_directory() {
        let root = tempfile::tempdir().unwrap();
        let w = root.path().canonicalize().unwrap();
        std::fs::create_dir_all(w.join("a/b")).unwrap();
        std::fs::write(w.join("a/b/f"), "f").unwrap();
        let walk = Beneath::walk(&w, &w.join("a/./b/f")).unwrap();
        assert_eq!(walk.dirs.len(), 3);
        assert_eq!(walk.name, "f");
        assert!(walk.open_regular().is_ok());
        symlink(w.join("a"), w.join("l")).unwrap();
        let e = Beneath::walk(&w, &w.join("l/b/f")).unwrap_err().to_string();
        assert!(e.ends_with("/l is a symbolic link"), "{e}");
        symlink(w.join("a/b/f"), w.join("a/b/g")).unwrap();
        let walk = Beneath::walk(&w, &w.join("a/b/g")).unwrap();
        assert_eq!(
            walk.open_regular().unwrap_err().to_string(),
            "is a symbolic link"
        );
        assert!(walk.open_write().is_err());
        assert_eq!(std::fs::read_to_string(w.join("a/b/f")).unwrap(), "f");
        // A FIFO and a device are never opened to block.
        let fifo = w.join("fifo");
        let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = Beneath::walk(&w, &fifo)
            .unwrap()
            .open_regular()
            .unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let e = Beneath::walk(&w, Path::new("/dev/null"))
            .unwrap()
            .open_regular()
            .unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
    }
}
