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

use std::io;
use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, BitFlags, PathBeneath, PathFd, PathFdError, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, ABI,
};

use super::{Mode, DEVICES};

/// The newest ABI whose file-system rights we use.
const ABI_USED: ABI = ABI::V5;

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
