//! The call's own view of the file system (decisions 72, 75, 76; decision
//! 57 says why this design). Landlock grants rights beneath a directory and
//! never takes one back beneath it, and it does not see `connect` to a
//! socket's path; so before the fence is built, the tool's process enters
//! a user and mount namespace of its own (unprivileged, as bubblewrap
//! does: the user keeps its uid, uid 0 included, mapped to itself), where:
//!
//! - each secret path (`Guard::hide`) is covered by an empty, read-only
//!   mount of mode 000: a directory by an empty directory, anything else
//!   by an empty file. Once the capabilities are dropped (`caps`), reading
//!   it fails with EACCES. A secret directory with a path given back
//!   (`allow_read`) inside (`~/.ssh/known_hosts` inside `~/.ssh`, a
//!   session's directory inside the data directory) is covered instead by
//!   a read-only tmpfs of its own whose only entries are the way to each
//!   path given back (directories of mode 0111) and, at its end, a clone
//!   of that path taken before the cover (`Veil`, decision 113): one
//!   mount and one per path given back, however many entries it holds;
//! - each protected path (`Guard::protect`, and each writable directory's
//!   `.git/hooks`, `.git/config` and what names another config) that lies
//!   in a writable directory is bound read-only onto itself: writes fail
//!   with EROFS while the rest of the directory stays writable; so are
//!   the clones of what a secret directory gives back;
//! - each directory above a protected or secret path, up to the first
//!   whose own directory is not writable, is bound onto itself, writable
//!   as before (decision 79): a mount point cannot be renamed, moved or
//!   removed (EBUSY), so what is protected stays where the next call
//!   looks for it, and a covered secret cannot be hard-linked elsewhere
//!   (EXDEV);
//! - each Unix socket bound at the call's start outside the workspace
//!   (`/proc/net/unix`, the well-known daemon sockets, the sockets under
//!   `Guard::socket_dirs`) is covered the same way, so `connect` fails with
//!   EACCES; the sockets of `Guard::sockets` stay reachable. Sockets the
//!   call makes itself are not covered (they do not exist yet).
//!
//! Mounts made here are locked to this namespace: a tool that makes a
//! nested namespace cannot remove them. The mounts are made with the new
//! mount API (`open_tree`, `move_mount`, `mount_setattr`), one source tree
//! of two inodes per call for the covers, and one tmpfs per veil.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use super::{Fence, Mode};
use mounts::{bind, Cover, Veil};

mod mounts;

/// Daemon sockets that are often served from another network namespace
/// (the container's host), so `/proc/net/unix` does not list them: each of
/// them runs commands outside any sandbox.
const WELL_KNOWN_SOCKETS: &[&str] = &[
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
    "/run/systemd/private",
    "/run/snapd.socket",
];

/// Writable directories shared with every other program: a socket found
/// there at the call's start was made outside the call (a terminal
/// multiplexer's, an agent's), so it is covered like one outside.
const SHARED_TEMP: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// Whether this process may make a user and mount namespace and map its
/// user in it (asked in a short-lived child, so this process stays as it
/// is). The kernel may refuse the first; a fence this process is already
/// in (ikigai run as a fenced MCP server of another ikigai) refuses the
/// second, since its Landlock keeps /proc unwritable.
pub fn available() -> bool {
    // SAFETY: getuid has no failure.
    let map = format!("{0} {0} 1\n\0", unsafe { libc::getuid() });
    // SAFETY: the child only calls unshare, open, write, prctl and _exit,
    // which are safe after fork even in a multi-threaded process; the text
    // it writes was made before the fork.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                libc::_exit(1);
            }
            // As `map_ids`: a non-dumpable process's /proc files are root's.
            libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
            let fd = libc::open(c"/proc/self/uid_map".as_ptr(), libc::O_WRONLY);
            let len = map.len() - 1;
            let ok = fd >= 0 && libc::write(fd, map.as_ptr().cast(), len) == len as isize;
            libc::_exit(if ok { 0 } else { 1 });
        }
        if pid < 0 {
            return false;
        }
        let mut status = 0;
        while libc::waitpid(pid, &mut status, 0) < 0 && *libc::__errno_location() == libc::EINTR {}
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    }
}

/// Enters the call's namespace and makes its mounts, when there is
/// anything to cover; with `count` (the call may start processes), a user
/// namespace at least, in which the call's process limit counts its own
/// processes (`limits`). Returns whether this process is now in a user
/// namespace of its own. This process must be single-threaded (the
/// kernel's rule for a new user namespace). With `hold`, a mount namespace
/// made is also held by a process of its own ([`holder`], decision 108),
/// so that its end is not in the exit of this process.
pub fn enter(fence: &Fence, hold: bool, count: bool) -> Result<bool, String> {
    let reach = crate::sandbox::seccomp::unix_sockets(fence.network, count);
    let plan = Plan::of(fence, reach);
    // SAFETY: plain calls on this process.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    if plan == Plan::default() {
        if !count {
            // Nothing to cover: a namespace would cost its making and its
            // end (about 0.2 ms) for nothing.
            return Ok(false);
        }
        // A user namespace alone: no mount table to copy or to end.
        // SAFETY: unshare changes only this process's namespaces.
        if unsafe { libc::unshare(libc::CLONE_NEWUSER) } != 0 {
            return Err(format!(
                "cannot make the call's user namespace: {} (the kernel refuses \
                 unprivileged namespaces)",
                io::Error::last_os_error()
            ));
        }
        map_ids(uid, gid)?;
        return Ok(true);
    }
    // SAFETY: unshare changes only this process's namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
        return Err(format!(
            "cannot make the call's user and mount namespace: {} (the kernel refuses \
             unprivileged namespaces)",
            io::Error::last_os_error()
        ));
    }
    map_ids(uid, gid)?;
    plan.apply()?;
    if hold {
        start_holder();
    }
    // A working directory inside a path just mounted over still points
    // below the mount (run from `~/.config/ikigai`, it would write there):
    // entering it again by name puts it on top.
    if let Ok(dir) = std::env::current_dir() {
        std::env::set_current_dir(&dir)
            .map_err(|e| format!("cannot enter {} again: {e}", dir.display()))?;
    }
    Ok(true)
}

/// The pid of the process holding this process's namespace, 0 when none.
static HOLDER: AtomicI32 = AtomicI32::new(0);

/// The process that holds the namespace this process made (decision 108),
/// if it made one with `hold`. It is this process's child, but one that
/// `waitpid` without `__WALL` does not see (it reports its end by no
/// signal), so containment's wait for "no child left" is not kept by it;
/// whoever lists this process's children must leave it out.
pub fn holder() -> Option<libc::pid_t> {
    match HOLDER.load(Ordering::Relaxed) {
        0 => None,
        pid => Some(pid),
    }
}

/// Starts the holder: a process that shares this one's memory
/// (`CLONE_VM`: no page tables copied, and the memory is freed by the
/// last of the two to end), is in the namespace just made, and does
/// nothing but wait on a pidfd for this process to end, and then end.
/// When the last process in a mount namespace ends, the kernel unmounts
/// its whole tree and waits for an RCU grace period (`namespace_unlock`),
/// milliseconds on a loaded machine; with the holder, that happens in the
/// holder's end, after this process's parent has seen it end, and not on
/// the call's way back. The holder runs no code of the tool's, is made
/// before the tool's Landlock domain (so the tool cannot signal it) and
/// shares this process's non-dumpable memory (so it cannot be traced); it
/// gives the tool nothing this process did not. Without it (a kernel
/// without pidfds or `close_range`, before 5.9; the clone refused), the
/// namespace simply ends with this process.
///
/// Not a parent-death signal: a parent that runs the tool itself holds
/// the tool's signal scope, and the kernel refuses that signal out of its
/// Landlock domain (decision 109).
fn start_holder() {
    const STACK: usize = 64 * 1024;
    // SAFETY: pidfd_open of this very process, and close_range on an empty
    // range (fds above the highest possible), which only says whether the
    // kernel has it: the holder's calls are then known not to fail.
    let pidfd = unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0u32);
        if fd < 0 {
            return;
        }
        if libc::syscall(libc::SYS_close_range, u32::MAX, u32::MAX, 0u32) != 0 {
            libc::close(fd as libc::c_int);
            return;
        }
        fd as libc::c_int
    };
    // SAFETY: an anonymous private mapping, never unmapped: the holder runs
    // on it until it ends (the mapping goes with the shared memory).
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if stack != libc::MAP_FAILED {
        // SAFETY: the child runs `hold` on its own stack (the top of the
        // mapping above) in this memory, with a copy of this process's
        // descriptors (no CLONE_FILES); `hold` makes only system calls and
        // touches nothing this process uses. No exit signal: only a wait
        // with `__WALL` or `__WCLONE` sees it.
        let pid = unsafe {
            libc::clone(
                hold,
                stack.cast::<u8>().add(STACK).cast(),
                libc::CLONE_VM,
                pidfd as usize as *mut libc::c_void,
            )
        };
        if pid > 0 {
            HOLDER.store(pid, Ordering::Relaxed);
        }
    }
    // SAFETY: this process's copy; the holder has its own.
    unsafe { libc::close(pidfd) };
}

/// The holder's body: keep nothing of the call's open, and wait for the
/// parent (`pidfd`) to end.
extern "C" fn hold(pidfd: *mut libc::c_void) -> libc::c_int {
    let fd = pidfd as usize as libc::c_uint;
    // SAFETY: plain system calls on this process, each with arguments that
    // make it succeed (start_holder checked the kernel has them), so none
    // sets errno, which lives in the parent's memory (but a ppoll that a
    // host's own filter refuses, once, as the wait ends). Every signal is
    // blocked (SIGKILL and SIGSTOP cannot be), so the wait returns only
    // when the pidfd is readable: the parent has ended.
    unsafe {
        let all: u64 = !0;
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &all as *const u64,
            std::ptr::null_mut::<u64>(),
            8usize,
        );
        // Copies of the call's descriptors (its output among them) would
        // keep them open for whoever reads them to their end.
        if fd > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, fd - 1, 0u32);
        }
        libc::syscall(libc::SYS_close_range, fd + 1, u32::MAX, 0u32);
        let mut ended = libc::pollfd {
            fd: fd as libc::c_int,
            events: libc::POLLIN,
            revents: 0,
        };
        // A failure (a host's own filter refusing ppoll) ends the wait,
        // and the namespace with it, rather than spinning.
        while ended.revents == 0 {
            let r = libc::syscall(
                libc::SYS_ppoll,
                &mut ended as *mut libc::pollfd,
                1usize,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            );
            if r < 0 {
                break;
            }
        }
        libc::syscall(libc::SYS_exit, 0);
    }
    0
}

/// Maps the user's own uid and gid to themselves in the new namespace.
fn map_ids(uid: libc::uid_t, gid: libc::gid_t) -> Result<(), String> {
    // A non-dumpable process's /proc files belong to root, and an ordinary
    // user could not write its own maps: dumpable for these three writes,
    // before any code of the tool runs.
    // SAFETY: prctl only reads and sets this process's dumpable flag.
    let was = unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) };
    if was != 1 {
        // SAFETY: as above.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) };
    }
    let result = (|| {
        write("/proc/self/uid_map", &format!("{uid} {uid} 1\n"))?;
        write("/proc/self/setgroups", "deny")?;
        write("/proc/self/gid_map", &format!("{gid} {gid} 1\n"))
    })();
    if was != 1 {
        // SAFETY: as above.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    }
    result
}

fn write(path: &str, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {path}: {e}"))
}

/// What one call's namespace covers, found before it is made.
#[derive(Debug, Default, PartialEq)]
struct Plan {
    /// Directories bound onto themselves, writable as before, so that they
    /// cannot be renamed, moved or removed (EBUSY): each directory above a
    /// protected or secret path that a writable directory holds
    /// (decision 79), the shallowest first.
    pinned: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
    hide_dirs: Vec<PathBuf>,
    hide_files: Vec<PathBuf>,
    /// Secret directories that keep paths given back (`~/.ssh` and its
    /// `known_hosts`), each covered by a tmpfs of its own that holds only
    /// the way to those paths and a clone of each.
    veils: Vec<Veil>,
}

impl Plan {
    /// What to mount for `fence`; `sockets`: the process may make Unix
    /// sockets (else its filter refuses them, and no socket bound outside
    /// needs covering).
    fn of(fence: &Fence, sockets: bool) -> Plan {
        let guard = &fence.guard;
        let mut plan = Plan::default();
        let writable: Vec<PathBuf> = match fence.mode {
            Mode::WorkspaceWrite => fence
                .writable
                .iter()
                .map(|w| w.canonicalize().unwrap_or_else(|_| w.clone()))
                .collect(),
            Mode::ReadOnly | Mode::Off => Vec::new(),
        };
        // Read-only: only what a writable directory holds (Landlock refuses
        // writes everywhere else already).
        let mut protect = guard.protect.clone();
        for dir in &writable {
            protect.extend(git_paths(dir));
        }
        for path in protect {
            if let Some(real) = real_path(&path) {
                if writable.iter().any(|w| real.starts_with(w)) && !plan.read_only.contains(&real) {
                    plan.read_only.push(real);
                }
            }
        }
        for path in &guard.hide {
            plan.hide(path, &guard.allow_read);
        }
        // A secret directory that keeps readable entries is read-only as a
        // whole where it is writable: nothing given back can be removed
        // (`rm -rf ~/.ssh` keeps known_hosts) and nothing new put beside
        // (its cover is read-only, the clones are made so).
        for veil in &mut plan.veils {
            veil.read_only = writable.iter().any(|w| veil.dir.starts_with(w));
        }
        // The shallowest first: a veil inside a path another gives back is
        // made once that path is back in place; one elsewhere inside
        // another is hidden already.
        plan.veils.sort_by_key(|v| v.dir.components().count());
        let veils = std::mem::take(&mut plan.veils);
        for veil in veils {
            if !plan.veiled(&veil.dir) {
                plan.veils.push(veil);
            }
        }
        // Each of them stays where it is: neither it (a mount point
        // already) nor any directory above it that a writable directory
        // holds can be renamed away, to be replaced by a writable copy or
        // to carry a secret to a path that a later call reads.
        let guarded: Vec<PathBuf> = plan
            .read_only
            .iter()
            .chain(&plan.hide_dirs)
            .chain(&plan.hide_files)
            .chain(plan.veils.iter().map(|v| &v.dir))
            .cloned()
            .collect();
        for path in &guarded {
            plan.pin_above(path, &writable);
        }
        plan.pinned.sort_by_key(|p| p.components().count());
        let workspace: Vec<&PathBuf> = writable
            .iter()
            .filter(|w| !SHARED_TEMP.iter().any(|t| Path::new(t) == w.as_path()))
            .collect();
        let bound = match sockets {
            true => self::sockets(&guard.socket_dirs),
            false => Vec::new(),
        };
        for socket in bound {
            let allowed = guard
                .sockets
                .iter()
                .any(|a| *a == socket || a.canonicalize().is_ok_and(|a| a == socket));
            let in_socket_dir = guard.socket_dirs.iter().any(|d| socket.starts_with(d));
            let in_workspace = workspace.iter().any(|w| socket.starts_with(w));
            if !allowed && (in_socket_dir || !in_workspace) && !plan.hide_files.contains(&socket) {
                plan.hide_files.push(socket);
            }
        }
        // What lies under a veil and is not given back is gone from view:
        // nothing to cover there.
        let (mut dirs, mut files) = (
            std::mem::take(&mut plan.hide_dirs),
            std::mem::take(&mut plan.hide_files),
        );
        dirs.retain(|p| !plan.veiled(p));
        files.retain(|p| !plan.veiled(p));
        (plan.hide_dirs, plan.hide_files) = (dirs, files);
        plan
    }

    /// Whether `path` lies under a veil and not in a path it gives back.
    fn veiled(&self, path: &Path) -> bool {
        self.veils.iter().any(|v| {
            path.strip_prefix(&v.dir).is_ok_and(|rel| {
                !rel.as_os_str().is_empty() && !v.keep.iter().any(|(k, _)| rel.starts_with(k))
            })
        })
    }

    /// Covers `path`, or, when a path given back lies inside it, each of
    /// its entries that is not given back.
    fn hide(&mut self, path: &Path, allow: &[PathBuf]) {
        let Some(real) = real_path(path) else {
            return;
        };
        if allow.iter().any(|a| a == path || *a == real) {
            return;
        }
        let is_dir = real.is_dir();
        let inside = allow
            .iter()
            .any(|a| a.starts_with(path) || a.starts_with(&real));
        if self.veils.iter().any(|v| v.dir == real) {
            // Hidden twice (the guard and the config file): veiled once.
            return;
        }
        if is_dir && inside {
            let mut keep: Vec<(PathBuf, bool)> = Vec::new();
            for a in allow {
                let Ok(rel) = a.strip_prefix(path).or_else(|_| a.strip_prefix(&real)) else {
                    continue;
                };
                let plain = rel
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)));
                let Ok(meta) = std::fs::metadata(a) else {
                    continue;
                };
                if plain && !rel.as_os_str().is_empty() {
                    keep.push((rel.to_path_buf(), meta.is_dir()));
                }
            }
            // A path inside another given back comes back with it.
            keep.sort();
            keep.dedup();
            let all = keep.clone();
            keep.retain(|(k, _)| !all.iter().any(|(o, _)| o != k && k.starts_with(o)));
            if !keep.is_empty() {
                self.veils.push(Veil {
                    dir: real,
                    keep,
                    read_only: false,
                });
                return;
            }
        }
        let list = if is_dir {
            &mut self.hide_dirs
        } else {
            &mut self.hide_files
        };
        if !list.contains(&real) {
            list.push(real);
        }
    }

    /// Pins each directory above `path` whose own directory is writable
    /// (so that it could be renamed), up to the first that is not.
    fn pin_above(&mut self, path: &Path, writable: &[PathBuf]) {
        let mut dir = path.parent();
        while let Some(d) = dir {
            let Some(parent) = d.parent() else {
                break;
            };
            if !writable.iter().any(|w| parent.starts_with(w)) {
                break;
            }
            let mounted = self
                .read_only
                .iter()
                .chain(&self.hide_dirs)
                .chain(self.veils.iter().map(|v| &v.dir))
                .any(|m| m == d);
            if !mounted && !self.pinned.iter().any(|p| p == d) {
                self.pinned.push(d.to_path_buf());
            }
            dir = Some(parent);
        }
    }

    fn apply(&self) -> Result<(), String> {
        for path in &self.pinned {
            bind(path, false)?;
        }
        for path in &self.read_only {
            bind(path, true)?;
        }
        for veil in &self.veils {
            veil.apply()?;
        }
        if self.hide_dirs.is_empty() && self.hide_files.is_empty() {
            return Ok(());
        }
        let cover = Cover::new()?;
        let mut dirs = self.hide_dirs.iter();
        // The cover's own tree goes over the first directory: a detached
        // mount that is closed is unmounted, and an unmount waits for an
        // RCU grace period (milliseconds on a busy machine), while a tree
        // attached here goes with the namespace.
        let attached = match dirs.next() {
            Some(first) => cover.attach(first)?,
            None => false,
        };
        if !attached {
            cover.attach_aside()?;
        }
        for path in dirs {
            cover.over(path, true)?;
        }
        for path in &self.hide_files {
            cover.over(path, false)?;
        }
        Ok(())
    }
}

/// `path` with every link resolved, when it exists. Most of the guard's
/// paths do not (a home without `.aws`, `.zshrc`...): one `stat` says so,
/// where resolving asks `readlink` of each component (about 100 µs for
/// the 28 paths of a home, decision 108).
fn real_path(path: &Path) -> Option<PathBuf> {
    std::fs::metadata(path).ok()?;
    path.canonicalize().ok()
}

/// A writable directory's repository files that run code later: its
/// `.git/hooks` (made when missing, as `git init` makes it, so that it can
/// be covered), `.git/config`, and what tells git to read another
/// repository's config (`.git/commondir`, `.git/config.worktree`,
/// `.git/worktrees/`), each covered where it exists.
fn git_paths(dir: &Path) -> Vec<PathBuf> {
    let git = dir.join(".git");
    if !git.is_dir() {
        return Vec::new();
    }
    let hooks = git.join("hooks");
    if !hooks.exists() {
        let _ = std::fs::create_dir(&hooks);
    }
    vec![
        hooks,
        git.join("config"),
        git.join("commondir"),
        git.join("config.worktree"),
        git.join("worktrees"),
    ]
}

/// The Unix sockets bound when the call starts: every path in
/// `/proc/net/unix` (this network namespace's), the well-known daemon
/// sockets, and the sockets up to two levels under `socket_dirs`.
fn sockets(socket_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut candidates: Vec<PathBuf> = WELL_KNOWN_SOCKETS.iter().map(PathBuf::from).collect();
    if let Ok(table) = read_whole("/proc/net/unix") {
        // "Num RefCount Protocol Flags Type St Inode Path": the path is
        // what follows the seventh field; abstract names start with '@'.
        for line in table.split(|&b| b == b'\n').skip(1) {
            let mut rest = line;
            for _ in 0..7 {
                let at = rest.iter().position(|&b| b != b' ').unwrap_or(rest.len());
                rest = &rest[at..];
                let end = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
                rest = &rest[end..];
            }
            let path = rest.strip_prefix(b" ").unwrap_or(rest);
            if path.first() == Some(&b'/') {
                candidates.push(PathBuf::from(std::ffi::OsStr::from_bytes(path)));
            }
        }
    }
    for dir in socket_dirs {
        walk(dir, 2, &mut candidates);
    }
    for path in candidates {
        let is_socket = std::fs::metadata(&path).is_ok_and(|m| m.file_type().is_socket());
        if is_socket {
            let real = path.canonicalize().unwrap_or(path);
            if !found.contains(&real) {
                found.push(real);
            }
        }
    }
    found
}

/// A /proc file whole, in as few reads as it takes: the kernel makes the
/// socket table anew for each read, going through every socket of the
/// namespace, and a read sized from an empty start (`fs::read`, whose
/// first reads are tens of bytes) does that many times over.
fn read_whole(path: &str) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut text = Vec::with_capacity(64 << 10);
    std::fs::File::open(path)?.read_to_end(&mut text)?;
    Ok(text)
}

fn walk(dir: &Path, depth: u32, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        match entry.file_type() {
            Ok(t) if t.is_socket() => out.push(entry.path()),
            Ok(t) if t.is_dir() && depth > 1 => walk(&entry.path(), depth - 1, out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Guard;

    #[test]
    fn the_plan_covers_secrets_keeps_what_is_given_back_and_protects_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        let ws = root.join("ws");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(home.join(".aws")).unwrap();
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        for f in [
            ".ssh/id_ed25519",
            ".ssh/known_hosts",
            ".ssh/config",
            ".netrc",
        ] {
            std::fs::write(home.join(f), "x").unwrap();
        }
        std::fs::write(ws.join(".git/config"), "x").unwrap();
        std::fs::write(ws.join(".bashrc"), "x").unwrap();
        let fence = Fence {
            mode: Mode::WorkspaceWrite,
            writable: vec![ws.clone()],
            network: false,
            guard: Guard {
                hide: vec![
                    home.join(".ssh"),
                    home.join(".aws"),
                    home.join(".netrc"),
                    home.join(".gnupg"),
                ],
                allow_read: vec![home.join(".ssh/known_hosts"), home.join(".ssh/config")],
                protect: vec![ws.join(".bashrc"), home.join(".profile")],
                ..Guard::default()
            },
            limits: crate::sandbox::limits::Limits::default(),
            scope_bus: None,
        };
        let plan = Plan::of(&fence, true);
        assert_eq!(plan.hide_dirs, [home.join(".aws")]);
        // Hidden twice, veiled once and not covered whole.
        let mut twice = fence.clone();
        twice.guard.hide.push(home.join(".ssh"));
        let twice = Plan::of(&twice, true);
        assert_eq!(twice.veils.len(), 1);
        assert_eq!(twice.hide_dirs, [home.join(".aws")]);
        assert!(plan.hide_files.contains(&home.join(".netrc")));
        assert!(!plan
            .hide_files
            .iter()
            .any(|f| f.starts_with(home.join(".ssh"))));
        // `~/.ssh` is veiled whole: only what is given back comes back.
        assert_eq!(
            plan.veils,
            [Veil {
                dir: home.join(".ssh"),
                keep: vec![
                    (PathBuf::from("config"), false),
                    (PathBuf::from("known_hosts"), false)
                ],
                read_only: false,
            }]
        );
        // The hooks directory is made so that it can be covered.
        assert_eq!(
            plan.read_only,
            [
                ws.join(".bashrc"),
                ws.join(".git/hooks"),
                ws.join(".git/config")
            ]
        );
        // The directory above a protected path cannot be renamed away; the
        // workspace itself lies in a directory that is not writable.
        assert_eq!(plan.pinned, [ws.join(".git")]);
        // read-only mode has nothing writable to protect.
        let ro = Plan::of(
            &Fence {
                mode: Mode::ReadOnly,
                ..fence.clone()
            },
            true,
        );
        assert!(ro.read_only.is_empty() && ro.pinned.is_empty());
        // With the home writable (the workspace is the home directory), a
        // secret directory that keeps readable entries is read-only whole,
        // and every directory above a guarded path is pinned up to the
        // first whose own directory is not writable.
        std::fs::create_dir_all(home.join(".config/ikigai")).unwrap();
        let at_home = Plan::of(
            &Fence {
                writable: vec![home.clone()],
                guard: Guard {
                    protect: vec![home.join(".config/ikigai")],
                    ..fence.guard.clone()
                },
                ..fence
            },
            true,
        );
        assert_eq!(at_home.read_only, [home.join(".config/ikigai")]);
        assert!(at_home.veils[0].read_only);
        assert_eq!(at_home.pinned, [home.join(".config")]);
    }
}
