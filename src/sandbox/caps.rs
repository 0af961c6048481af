//! Root without privileges (decision 71). A host that runs as root (a dev
//! container, CI) would hand every capability to its tools: reading any
//! process's memory through /proc despite non-dumpable, raw sockets,
//! mounting, loading modules, ignoring file permissions. So a confined
//! tool drops every capability set (bounding, ambient, then permitted,
//! effective and inheritable) before it runs; with the bounding set empty
//! and no-new-privileges set, no exec can give one back. The tool still
//! runs as its user, uid 0 included, with the file access the fence allows.
//!
//! Inside the call's user namespace (`namespace`) the process holds every
//! capability of that namespace until this runs; an unprivileged process
//! outside one has none to drop, and dropping the bounding set is then
//! refused (EPERM), which is no failure. A process whose filter refuses
//! every exec (our own tool that starts no process, the worker) keeps its
//! bounding set: it bounds only what an exec gives, and with the other
//! sets empty nothing can be raised within it (decision 135).

/// The capability that allows dropping from the bounding set.
const CAP_SETPCAP: u32 = 8;

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Drops every capability of this process, for good; the bounding set
/// too when `bounding` (the process may exec).
pub fn drop_all(bounding: bool) -> Result<(), String> {
    // SAFETY: prctl calls that only lower this process's capability sets;
    // capset/capget are given valid header and data arrays of two entries.
    unsafe {
        let mut have_setpcap = false;
        let mut header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let mut data = [Data::default(); 2];
        if libc::syscall(
            libc::SYS_capget,
            &mut header as *mut Header,
            data.as_mut_ptr(),
        ) == 0
        {
            have_setpcap = data[0].effective & (1 << CAP_SETPCAP) != 0;
        }
        // The bounding set: one call per capability, until the kernel says
        // there is no such capability (EINVAL).
        for cap in (0..64).take_while(|_| bounding) {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                let errno = *libc::__errno_location();
                if errno == libc::EINVAL {
                    break;
                }
                if have_setpcap {
                    return Err(format!(
                        "cannot drop capability {cap} from the bounding set: {}",
                        std::io::Error::from_raw_os_error(errno)
                    ));
                }
                // Nothing to drop without CAP_SETPCAP: an ordinary user.
                break;
            }
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        let mut header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let data = [Data::default(); 2];
        if libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) != 0 {
            return Err(format!(
                "cannot drop the capabilities: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_child_that_drops_them_has_none() {
        // In a forked child, so this test process keeps its own.
        // SAFETY: the child only calls drop_all, reads a file and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let ok = super::drop_all(true).is_ok()
                && std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
                    ["CapInh", "CapPrm", "CapEff", "CapAmb"].iter().all(|k| {
                        s.lines()
                            .any(|l| l.starts_with(k) && l.ends_with("0000000000000000"))
                    })
                });
            // SAFETY: ends the child without running the parent's exit code.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
}
