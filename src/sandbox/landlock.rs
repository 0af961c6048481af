//! The file-system half of the sandbox: one Landlock ruleset, applied to the
//! calling process and inherited by everything it runs. Reading and
//! executing are allowed everywhere; every right that changes the file
//! system (write, truncate, create, remove, rename, make devices) is allowed
//! only beneath the writable directories and on a few devices. Device ioctls
//! are left alone, so terminals and `/dev/null` behave as usual.
//!
//! The ruleset asks for the rights of the newest ABI this crate knows and
//! drops what the running kernel does not have (Landlock's own best-effort
//! rule); it fails only when the kernel enforces nothing at all.
//!
//! A second, separate layer (`scope`, ABI 6) is applied in the tool's own
//! process: it may signal, and reach abstract Unix sockets of, only the
//! processes of its own Landlock domain, that is its call (decision 75).
//! Separate, because the containment process of `sandbox-exec` holds the
//! first layer too, and the tool must not be able to signal it.

use std::io;
use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, BitFlags, PathBeneath, PathFd, PathFdError, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, ABI,
};

use super::{Mode, DEVICES};

/// The newest ABI whose file-system rights we use.
const ABI_USED: ABI = ABI::V5;

/// The first ABI with scopes (signals, abstract Unix sockets).
pub const ABI_SCOPES: i32 = 6;

/// `LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL`.
const SCOPES: u64 = 1 | 2;

/// `struct landlock_ruleset_attr` of ABI 6: the handled file-system and
/// network rights (none here) and the scopes.
#[repr(C)]
struct ScopeAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// Confines this process's signals and abstract Unix socket connections
/// to its own domain (the call). Skipped on kernels before ABI 6, which
/// the host says at start (`Support::guard_gaps`).
pub fn scope() -> Result<(), String> {
    if abi_version().is_none_or(|abi| abi < ABI_SCOPES) {
        return Ok(());
    }
    let attr = ScopeAttr {
        handled_access_fs: 0,
        handled_access_net: 0,
        scoped: SCOPES,
    };
    // SAFETY: the attribute struct is valid for its size; the returned
    // descriptor is closed below. restrict_self needs no-new-privileges,
    // which the seccomp filter set before this.
    unsafe {
        let fd = libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const ScopeAttr,
            std::mem::size_of::<ScopeAttr>(),
            0u32,
        );
        if fd < 0 {
            return Err(format!(
                "cannot create the Landlock scopes: {}",
                io::Error::last_os_error()
            ));
        }
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        let r = libc::syscall(libc::SYS_landlock_restrict_self, fd as libc::c_int, 0u32);
        let err = io::Error::last_os_error();
        libc::close(fd as libc::c_int);
        if r != 0 {
            return Err(format!("cannot apply the Landlock scopes: {err}"));
        }
    }
    Ok(())
}

/// The kernel's Landlock ABI version, or None without Landlock.
pub fn abi_version() -> Option<i32> {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    // only returns a number; it creates nothing.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    (v > 0).then_some(v as i32)
}

/// Restricts this process (and what it will run) to `mode`'s file rules.
/// `writable` is used in workspace-write mode; directories that do not
/// exist are passed over (there is nothing under them to protect or to
/// write).
pub fn restrict(mode: Mode, writable: &[PathBuf]) -> Result<(), String> {
    let read = AccessFs::from_read(ABI_USED);
    let all = AccessFs::from_all(ABI_USED) & !BitFlags::from(AccessFs::IoctlDev);
    let write_paths: Vec<&Path> = match mode {
        Mode::Off => return Ok(()),
        Mode::ReadOnly => Vec::new(),
        Mode::WorkspaceWrite => writable.iter().map(PathBuf::as_path).collect(),
    };
    let mut rules = vec![(Path::new("/"), read)];
    rules.extend(write_paths.into_iter().map(|p| (p, all)));
    rules.extend(DEVICES.iter().map(|d| (Path::new(*d), all)));

    let error = |e: &dyn std::fmt::Display| format!("cannot set up Landlock: {e}");
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(|e| error(&e))?
        .create()
        .map_err(|e| error(&e))?;
    for (path, access) in rules {
        let fd = match PathFd::new(path) {
            Ok(fd) => fd,
            Err(PathFdError::OpenCall { source, .. })
                if source.kind() == io::ErrorKind::NotFound =>
            {
                continue
            }
            Err(e) => return Err(format!("cannot open {}: {e}", path.display())),
        };
        // A rule on a file may carry only the rights that apply to files.
        let access = if is_dir(path) {
            access
        } else {
            access & AccessFs::from_file(ABI_USED)
        };
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| error(&e))?;
    }
    let status = ruleset.restrict_self().map_err(|e| error(&e))?;
    match status.ruleset {
        RulesetStatus::NotEnforced => {
            Err("this kernel has no Landlock: the file-system rules cannot be enforced".into())
        }
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
    }
}

fn is_dir(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_dir())
}
