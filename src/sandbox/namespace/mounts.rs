//! The mounts a call's namespace is made of, with the new mount API
//! (`open_tree`, `move_mount`, `mount_setattr`, `fsopen`): a directory bound
//! onto itself, the covers of what is hidden, and the veils that hide a
//! directory but for the paths given back inside it. `Plan` (the parent
//! module) decides what to mount; this module only mounts it.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub(super) const OPEN_TREE_CLONE: libc::c_uint = 1;
pub(super) const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;
pub(super) const MOUNT_ATTR_RDONLY: u64 = 1;
pub(super) const MOUNT_ATTR_NOSUID: u64 = 2;
pub(super) const MOUNT_ATTR_NODEV: u64 = 4;
pub(super) const MOUNT_ATTR_NOEXEC: u64 = 8;
pub(super) const FSOPEN_CLOEXEC: libc::c_uint = 1;
pub(super) const FSCONFIG_SET_STRING: libc::c_uint = 1;
pub(super) const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
pub(super) const FSMOUNT_CLOEXEC: libc::c_uint = 1;

/// `struct mount_attr`.
#[repr(C)]
pub(super) struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// A secret directory covered by a fresh read-only tmpfs whose only
/// entries are the way to each path given back inside it: directories of
/// mode 0111 (traversable, not listable) and, at the end of each way, a
/// clone of the path given back, moved there. Two mounts and one per path
/// given back, however many entries the directory holds.
#[derive(Debug, PartialEq)]
pub(super) struct Veil {
    /// The directory, every link resolved.
    pub(super) dir: PathBuf,
    /// Each path given back, relative to `dir` (none inside another), and
    /// whether it is a directory.
    pub(super) keep: Vec<(PathBuf, bool)>,
    /// Whether the clones are made read-only: where the directory lies in
    /// a writable directory, so that nothing given back is changed or
    /// removed (`rm -rf ~/.ssh` keeps `known_hosts`).
    pub(super) read_only: bool,
}

pub(super) fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("path holds a NUL byte: {}", path.display()))
}

pub(super) fn last_error(what: &str, path: &Path) -> String {
    format!(
        "cannot {what} {}: {}",
        path.display(),
        io::Error::last_os_error()
    )
}

/// Whether the last error says the path went away meanwhile (then there is
/// nothing left to cover).
pub(super) fn vanished() -> bool {
    io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT)
}

/// Whether the last error says `path` cannot be reached from here, and it
/// cannot: a directory above it may not be searched (another user's
/// private runtime directory, whose sockets `/proc/net/unix` lists to
/// everyone). This process holds at least the tool's rights over files
/// (the namespace's capabilities reach no file of a user it does not map),
/// so what it cannot reach the tool cannot either: there is nothing to
/// cover.
pub(super) fn unreachable(path: &Path) -> bool {
    io::Error::last_os_error().raw_os_error() == Some(libc::EACCES)
        && std::fs::symlink_metadata(path)
            .is_err_and(|e| e.kind() == io::ErrorKind::PermissionDenied)
}

/// Binds `path` onto itself (with what is mounted beneath it), read-only
/// or as writable as it was. Either way it is now a mount point, which
/// `rename`, `rmdir` and `unlink` refuse with EBUSY.
pub(super) fn bind(path: &Path, read_only: bool) -> Result<(), String> {
    let c = c_path(path)?;
    // SAFETY: syscalls on valid C strings and descriptors this function
    // opens and closes; the attribute struct is valid for its size.
    unsafe {
        let tree = libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            c.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | libc::AT_RECURSIVE as libc::c_uint,
        ) as libc::c_int;
        if tree < 0 {
            return if vanished() {
                Ok(())
            } else {
                Err(last_error("bind", path))
            };
        }
        let attr = MountAttr {
            attr_set: MOUNT_ATTR_RDONLY,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        };
        let result = if read_only
            && libc::syscall(
                libc::SYS_mount_setattr,
                tree,
                c"".as_ptr(),
                (libc::AT_EMPTY_PATH | libc::AT_RECURSIVE) as libc::c_uint,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            ) != 0
        {
            Err(last_error("make read-only", path))
        } else if libc::syscall(
            libc::SYS_move_mount,
            tree,
            c"".as_ptr(),
            libc::AT_FDCWD,
            c.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        ) != 0
        {
            Err(last_error("mount onto itself", path))
        } else {
            Ok(())
        };
        libc::close(tree);
        result
    }
}

/// A descriptor closed when dropped.
pub(super) struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: closes the descriptor this struct owns.
        unsafe {
            libc::close(self.0);
        }
    }
}

impl Veil {
    /// Clones each path given back, covers the directory with a fresh
    /// tmpfs holding the way to each, and moves each clone to its place.
    pub(super) fn apply(&self) -> Result<(), String> {
        let fail = |what: &str| {
            format!(
                "cannot make the cover of {} ({what}): {}",
                self.dir.display(),
                io::Error::last_os_error()
            )
        };
        let rdonly = MountAttr {
            attr_set: MOUNT_ATTR_RDONLY,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        };
        let mut clones = Vec::new();
        for (rel, is_dir) in &self.keep {
            let path = self.dir.join(rel);
            let c = c_path(&path)?;
            // SAFETY: open_tree and mount_setattr on a valid C string and on
            // the descriptor just opened; the attribute struct is valid for
            // its size.
            unsafe {
                let tree = libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    c.as_ptr(),
                    OPEN_TREE_CLONE
                        | libc::O_CLOEXEC as libc::c_uint
                        | libc::AT_RECURSIVE as libc::c_uint,
                ) as libc::c_int;
                if tree < 0 {
                    if vanished() {
                        continue;
                    }
                    return Err(last_error("clone", &path));
                }
                let tree = Fd(tree);
                if self.read_only
                    && libc::syscall(
                        libc::SYS_mount_setattr,
                        tree.0,
                        c"".as_ptr(),
                        (libc::AT_EMPTY_PATH | libc::AT_RECURSIVE) as libc::c_uint,
                        &rdonly as *const MountAttr,
                        std::mem::size_of::<MountAttr>(),
                    ) != 0
                {
                    return Err(last_error("make read-only", &path));
                }
                clones.push((tree, rel, *is_dir));
            }
        }
        // SAFETY: syscalls on valid C strings and on descriptors this
        // function opens and closes (`Fd`); the attribute struct is valid
        // for its size.
        unsafe {
            let fs =
                libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) as libc::c_int;
            if fs < 0 {
                return Err(fail("fsopen"));
            }
            let fs = Fd(fs);
            let configured = [(c"mode", c"0700"), (c"size", c"64k")]
                .iter()
                .all(|(key, value)| {
                    libc::syscall(
                        libc::SYS_fsconfig,
                        fs.0,
                        FSCONFIG_SET_STRING,
                        key.as_ptr(),
                        value.as_ptr(),
                        0,
                    ) == 0
                })
                && libc::syscall(
                    libc::SYS_fsconfig,
                    fs.0,
                    FSCONFIG_CMD_CREATE,
                    std::ptr::null::<libc::c_char>(),
                    std::ptr::null::<libc::c_char>(),
                    0,
                ) == 0;
            if !configured {
                return Err(fail("fsconfig"));
            }
            let mount = libc::syscall(
                libc::SYS_fsmount,
                fs.0,
                FSMOUNT_CLOEXEC,
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
            ) as libc::c_int;
            if mount < 0 {
                return Err(fail("fsmount"));
            }
            let mount = Fd(mount);
            // The way to each path given back: directories made 0700, and
            // made 0111 once all is in place, the deepest first.
            let mut dirs: Vec<PathBuf> = Vec::new();
            for (_, rel, is_dir) in &clones {
                let mut way = PathBuf::new();
                let parts: Vec<_> = rel.components().collect();
                for (i, part) in parts.iter().enumerate() {
                    way.push(part);
                    let last = i + 1 == parts.len();
                    let c = c_path(&way)?;
                    if last && !is_dir {
                        let file = libc::openat(
                            mount.0,
                            c.as_ptr(),
                            libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                            0,
                        );
                        if file < 0 {
                            return Err(fail("a file"));
                        }
                        libc::close(file);
                    } else if !dirs.contains(&way) {
                        if libc::mkdirat(mount.0, c.as_ptr(), 0o700) != 0 {
                            return Err(fail("a directory"));
                        }
                        dirs.push(way.clone());
                    }
                }
            }
            dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
            for dir in &dirs {
                let c = c_path(dir)?;
                if libc::fchmodat(mount.0, c.as_ptr(), 0o111, 0) != 0 {
                    return Err(fail("chmod"));
                }
            }
            let root = libc::openat(
                mount.0,
                c".".as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            );
            if root < 0 {
                return Err(fail("its root"));
            }
            let root = Fd(root);
            if libc::fchmod(root.0, 0o111) != 0 {
                return Err(fail("chmod"));
            }
            drop(root);
            if libc::syscall(
                libc::SYS_mount_setattr,
                mount.0,
                c"".as_ptr(),
                libc::AT_EMPTY_PATH as libc::c_uint,
                &rdonly as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            ) != 0
            {
                return Err(fail("read-only"));
            }
            let c = c_path(&self.dir)?;
            if libc::syscall(
                libc::SYS_move_mount,
                mount.0,
                c"".as_ptr(),
                libc::AT_FDCWD,
                c.as_ptr(),
                MOVE_MOUNT_F_EMPTY_PATH,
            ) != 0
            {
                return if vanished() {
                    Ok(())
                } else {
                    Err(last_error("cover", &self.dir))
                };
            }
            for (tree, rel, _) in &clones {
                let place = self.dir.join(rel);
                let c = c_path(&place)?;
                if libc::syscall(
                    libc::SYS_move_mount,
                    tree.0,
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    c.as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH,
                ) != 0
                {
                    return Err(last_error("give back", &place));
                }
            }
        }
        Ok(())
    }
}

/// The source of the covers: a detached, read-only tmpfs whose root is an
/// empty directory of mode 000 holding one empty file of mode 000.
pub(super) struct Cover {
    mount: libc::c_int,
}

impl Cover {
    pub(super) fn new() -> Result<Cover, String> {
        let fail = |what: &str| {
            format!(
                "cannot make the cover for hidden paths ({what}): {}",
                io::Error::last_os_error()
            )
        };
        // SAFETY: syscalls on valid C strings and descriptors this function
        // opens; the attribute struct is valid for its size.
        unsafe {
            let fs =
                libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) as libc::c_int;
            if fs < 0 {
                return Err(fail("fsopen"));
            }
            let configured = [(c"mode", c"000"), (c"size", c"4k"), (c"nr_inodes", c"4")]
                .iter()
                .all(|(key, value)| {
                    libc::syscall(
                        libc::SYS_fsconfig,
                        fs,
                        FSCONFIG_SET_STRING,
                        key.as_ptr(),
                        value.as_ptr(),
                        0,
                    ) == 0
                })
                && libc::syscall(
                    libc::SYS_fsconfig,
                    fs,
                    FSCONFIG_CMD_CREATE,
                    std::ptr::null::<libc::c_char>(),
                    std::ptr::null::<libc::c_char>(),
                    0,
                ) == 0;
            if !configured {
                libc::close(fs);
                return Err(fail("fsconfig"));
            }
            let mount = libc::syscall(
                libc::SYS_fsmount,
                fs,
                FSMOUNT_CLOEXEC,
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
            ) as libc::c_int;
            libc::close(fs);
            if mount < 0 {
                return Err(fail("fsmount"));
            }
            let cover = Cover { mount };
            let file = libc::openat(
                mount,
                c"f".as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
                0,
            );
            if file < 0 {
                return Err(fail("its file"));
            }
            libc::close(file);
            let attr = MountAttr {
                attr_set: MOUNT_ATTR_RDONLY,
                attr_clr: 0,
                propagation: 0,
                userns_fd: 0,
            };
            if libc::syscall(
                libc::SYS_mount_setattr,
                mount,
                c"".as_ptr(),
                libc::AT_EMPTY_PATH as libc::c_uint,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            ) != 0
            {
                return Err(fail("read-only"));
            }
            Ok(cover)
        }
    }

    /// Moves the cover's own tree over the directory `target`; false when
    /// the directory went away meanwhile.
    pub(super) fn attach(&self, target: &Path) -> Result<bool, String> {
        let c = c_path(target)?;
        // SAFETY: move_mount of the descriptor this struct owns onto a valid
        // C string path.
        let moved = unsafe {
            libc::syscall(
                libc::SYS_move_mount,
                self.mount,
                c"".as_ptr(),
                libc::AT_FDCWD,
                c.as_ptr(),
                MOVE_MOUNT_F_EMPTY_PATH,
            )
        } == 0;
        match (moved, vanished()) {
            (true, _) => Ok(true),
            (false, true) => Ok(false),
            (false, false) => Err(last_error("cover", target)),
        }
    }

    /// Attaches the cover's own tree where nothing sees it: over `/dev`,
    /// with `/dev` as it was put back on top (a clone of it, submounts
    /// included), so the call's `/dev` is unchanged. `/dev` because it
    /// always exists and no call's working directory lies in it (a working
    /// directory inside a directory mounted over would stay below).
    pub(super) fn attach_aside(&self) -> Result<(), String> {
        let dev = Path::new("/dev");
        // SAFETY: open_tree and move_mount on valid C strings and on
        // descriptors this function or struct owns; the clone is closed
        // once it is attached.
        unsafe {
            let original = libc::syscall(
                libc::SYS_open_tree,
                libc::AT_FDCWD,
                c"/dev".as_ptr(),
                OPEN_TREE_CLONE
                    | libc::O_CLOEXEC as libc::c_uint
                    | libc::AT_RECURSIVE as libc::c_uint,
            ) as libc::c_int;
            if original < 0 {
                return Err(last_error("clone", dev));
            }
            let result = if !self.attach(dev)? {
                Err(last_error("cover", dev))
            } else if libc::syscall(
                libc::SYS_move_mount,
                original,
                c"".as_ptr(),
                libc::AT_FDCWD,
                c"/dev".as_ptr(),
                MOVE_MOUNT_F_EMPTY_PATH,
            ) != 0
            {
                Err(last_error("put back", dev))
            } else {
                Ok(())
            };
            libc::close(original);
            result
        }
    }

    /// Mounts the empty directory (or file) over `target`.
    pub(super) fn over(&self, target: &Path, dir: bool) -> Result<(), String> {
        let c = c_path(target)?;
        let (source, flags) = if dir {
            (c"", libc::AT_EMPTY_PATH as libc::c_uint)
        } else {
            (c"f", 0)
        };
        // SAFETY: syscalls on valid C strings and descriptors; the clone is
        // closed before returning.
        unsafe {
            let tree = libc::syscall(
                libc::SYS_open_tree,
                self.mount,
                source.as_ptr(),
                OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | flags,
            ) as libc::c_int;
            if tree < 0 {
                return Err(last_error("cover", target));
            }
            let moved = libc::syscall(
                libc::SYS_move_mount,
                tree,
                c"".as_ptr(),
                libc::AT_FDCWD,
                c.as_ptr(),
                MOVE_MOUNT_F_EMPTY_PATH,
            ) == 0;
            let result = if moved || vanished() || unreachable(target) {
                Ok(())
            } else {
                Err(last_error("cover", target))
            };
            libc::close(tree);
            result
        }
    }
}

impl Drop for Cover {
    fn drop(&mut self) {
        // SAFETY: closes the descriptor this struct owns.
        unsafe {
            libc::close(self.mount);
        }
    }
}
