//! What one call may take of the machine (decision 81): processes and
//! threads at once, data per process, bytes per file written, and no core
//! dumps, each set with its soft and hard limit equal (a tool cannot raise
//! them again: raising a hard limit needs a capability it no longer has),
//! and an OOM score that puts the tool first in line when memory runs out.
//!
//! They are set in the process that builds the fence, after its user
//! namespace is made: the kernel counts a process limit per user in each
//! user namespace, so inside the call's own one it counts the call's
//! processes, not every process of the person's desktop. That namespace's
//! own ceiling is taken from the process limit when it is made, so setting
//! ours before would bound the person's processes as a whole too. The
//! kernel never applies a process limit to uid 0, so a root host's calls
//! have none; `ikigai sandbox check` says so.

use std::io;

/// The process limit's default: processes and threads of one call at once.
pub const PROCESSES: u32 = 2048;
/// The data limit's default: 8 GiB per process (`RLIMIT_DATA`, not the
/// address space: runtimes that reserve large ranges, Node's 10 GB cage,
/// only count what they use).
pub const MEMORY: u64 = 8 << 30;
/// The file-size limit's default: 4 GiB per file a call writes.
pub const FILE_SIZE: u64 = 4 << 30;

/// The whole call's memory by default, where a scope bounds it: half the
/// machine's, so that a runaway call leaves the person's other programs
/// the rest.
pub fn half_the_machine() -> u64 {
    // SAFETY: sysconf only reads the system's configuration.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    match (u64::try_from(pages), u64::try_from(size)) {
        (Ok(pages), Ok(size)) if pages > 0 && size > 0 => pages.saturating_mul(size) / 2,
        _ => MEMORY,
    }
}

/// The OOM score adjustment of a tool: the most there is, so that when
/// memory runs out the kernel ends a tool before the host or anything
/// else of the person's. Raising it needs no privilege.
const OOM_SCORE_ADJ: &str = "1000";

/// One call's limits (config `limits.processes`, `limits.memory`,
/// `limits.file_size`, `limits.memory_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub processes: u32,
    pub memory: u64,
    pub file_size: u64,
    /// The whole call's memory, the bound of its scope (`super::scope`);
    /// no one process of it may have more data either.
    pub memory_total: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            processes: PROCESSES,
            memory: MEMORY,
            file_size: FILE_SIZE,
            memory_total: half_the_machine(),
        }
    }
}

impl Limits {
    /// Sets the limits on this process (and so on everything it starts).
    /// `counted`: this process is in a user namespace of its own, where a
    /// process limit counts the call's processes alone; without one it
    /// would count all of the user's, and is not set. The OOM score is set
    /// apart, before (`first_in_line`).
    pub fn apply(&self, counted: bool) -> Result<(), String> {
        // A process may not have more than the whole call: where there is
        // no scope, this is what bounds a call that starts no process.
        let data = self.memory.min(self.memory_total);
        set(libc::RLIMIT_DATA, data, "limits.memory")?;
        set(libc::RLIMIT_FSIZE, self.file_size, "limits.file_size")?;
        set(libc::RLIMIT_CORE, 0, "core dumps")?;
        // In a scope, its task limit counts the same and says when it was
        // met (the process limit would refuse first, and say nothing).
        if counted && !super::scope::entered() {
            set(
                libc::RLIMIT_NPROC,
                u64::from(self.processes),
                "limits.processes",
            )?;
        }
        Ok(())
    }
}

/// Puts this process first in line for the OOM killer. Written before
/// Landlock, which would refuse it (/proc is not a writable directory),
/// and before the namespace's holder shares this process's memory: the
/// kernel then sets the score of every process sharing it, and looks
/// through every process of the machine to find them.
pub fn first_in_line() -> Result<(), String> {
    // A non-dumpable process's /proc files belong to root, so an ordinary
    // user could not write its own: dumpable for this one write, before
    // any code of the tool runs.
    // SAFETY: prctl only reads and sets this process's dumpable flag.
    let was = unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) };
    if was != 1 {
        // SAFETY: as above.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) };
    }
    let written = std::fs::write("/proc/self/oom_score_adj", OOM_SCORE_ADJ);
    if was != 1 {
        // SAFETY: as above.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    }
    match written {
        // No /proc (a bare chroot): there is no score to set.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        // Inside another fence (a fenced MCP server that runs tools of its
        // own), whose Landlock refuses the write: the score is inherited,
        // and already the most there is when that fence set it.
        Err(_) if already_first() => Ok(()),
        Err(e) => Err(format!("cannot set the tool's OOM score: {e}")),
        Ok(()) => Ok(()),
    }
}

/// True when this process's OOM score adjustment is already the most.
fn already_first() -> bool {
    std::fs::read_to_string("/proc/self/oom_score_adj").is_ok_and(|now| now.trim() == OOM_SCORE_ADJ)
}

/// Sets `resource` to `value`, soft and hard, or to the hard limit already
/// there when that is lower (only a capability could raise it).
fn set(resource: libc::__rlimit_resource_t, value: u64, what: &str) -> Result<(), String> {
    let mut now = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit on this process, with a valid struct.
    unsafe {
        if libc::getrlimit(resource, &mut now) != 0 {
            return Err(format!(
                "cannot read the limit of {what}: {}",
                io::Error::last_os_error()
            ));
        }
        let value = value.min(now.rlim_max);
        let limit = libc::rlimit {
            rlim_cur: value,
            rlim_max: value,
        };
        if libc::setrlimit(resource, &limit) != 0 {
            return Err(format!(
                "cannot set the limit of {what}: {}",
                io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// A size as the limits' messages print it: `4 GiB`, `512 MiB`, `100 KiB`,
/// or bytes.
pub fn size_text(bytes: u64) -> String {
    for (unit, name) in [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{} {name}", bytes / unit);
        }
    }
    format!("{bytes} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size_text(FILE_SIZE), "4 GiB");
        assert_eq!(size_text(MEMORY), "8 GiB");
        assert_eq!(size_text(3 << 20), "3 MiB");
        assert_eq!(size_text(1536), "1536 bytes");
        assert_eq!(size_text(2048), "2 KiB");
    }
}
