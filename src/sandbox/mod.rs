//! The fence around one tool call. A tool runs with the user's rights unless
//! the host asks for less; this module is how it asks, without privileges,
//! setuid helpers or a daemon:
//!
//! - `landlock`: the file system. Reads anywhere; writes only under the
//!   writable directories (workspace-write) or nowhere (read-only), except
//!   the few devices every program writes to (`/dev/null` and the like).
//! - `seccomp`: the network. New internet sockets (AF_INET, AF_INET6) are
//!   refused with EACCES; every other socket call stays allowed, so local
//!   sockets, pipes and the descriptors a tool inherits keep working.
//! - `exec`: the `sandbox-exec` personality, which applies both to itself and
//!   then runs the tool as its child, staying behind as the call's
//!   containment process: no process the tool starts outlives the call.
//! - `spawner`: a process the host starts once, which forks the containment
//!   process of each call instead of the host exec'ing `sandbox-exec` anew.
//! - `worker`: a process the spawner makes, fenced once, that runs the calls
//!   of our tools that start no process, one after another.
//! - `secrets`: the environment a tool gets, without the host's keys.
//! - `namespace`: the call's own user and mount namespace, where the
//!   secret paths and the sockets that lead out are hidden and the files
//!   that run later are read-only (decisions 72, 75, 76; docs/sandbox.md).
//! - `limits`: what one call may take (processes, data, file size, no
//!   core dumps) and its OOM score (decision 81).
//! - `scope`: where the person's systemd user manager answers, a scope
//!   per call that bounds the whole call tree's memory and tasks.
//! - `caps`: every capability dropped, so a root host's tool is fenced as
//!   an ordinary user's (decision 71).
//!
//! Everything here is the tool's side of the fence; the host decides the
//! settings (`host::settings`) and starts `sandbox-exec` for each call.

pub mod caps;
pub mod exec;
pub mod landlock;
pub mod limits;
pub mod namespace;
pub mod scope;
pub mod seccomp;
pub mod secrets;
pub mod spawner;
pub mod worker;

use std::fmt;
use std::path::PathBuf;

/// What a sandboxed call may write. The config file spells it as the
/// option does (`workspace-write`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Writes only under the writable directories (the workspace, each
    /// added directory, `$TMPDIR`, `/tmp`) and to a few devices.
    WorkspaceWrite,
    /// Writes only to a few devices (`/dev/null` and the like).
    ReadOnly,
    /// No sandbox: the tool has the user's rights.
    Off,
}

impl Mode {
    pub const NAMES: &'static str = "workspace-write, read-only or off";

    pub fn parse(text: &str) -> Result<Mode, String> {
        match text {
            "workspace-write" => Ok(Mode::WorkspaceWrite),
            "read-only" => Ok(Mode::ReadOnly),
            "off" => Ok(Mode::Off),
            _ => Err(format!(
                "invalid sandbox mode '{text}': expected {}",
                Mode::NAMES
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::WorkspaceWrite => "workspace-write",
            Mode::ReadOnly => "read-only",
            Mode::Off => "off",
        }
    }

    /// Whether the mode restricts anything at all.
    pub fn confines(self) -> bool {
        self != Mode::Off
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The fence of one call: what `sandbox-exec` is told to build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fence {
    pub mode: Mode,
    /// Where writes are allowed (workspace-write only; empty otherwise).
    pub writable: Vec<PathBuf>,
    /// New internet sockets allowed.
    pub network: bool,
    /// What the call's namespace hides and keeps read-only.
    pub guard: Guard,
    /// What the call may take of the machine, in every mode.
    pub limits: limits::Limits,
    /// The session bus on which the person's systemd user manager is asked
    /// for a scope per call (`scope`), where there is one.
    pub scope_bus: Option<String>,
}

impl Fence {
    /// The scope this fence asks for, if any: its memory and task count
    /// bound the whole call.
    pub fn scope(&self) -> Option<scope::Spec> {
        Some(scope::Spec {
            bus: self.scope_bus.clone()?,
            memory: self.limits.memory_total,
            tasks: self.limits.processes,
        })
    }

    /// What this fence refuses beyond its writable directories and
    /// network, each with how to allow it (decisions 72, 75, 76): the
    /// envelope of a failed call carries them, since a refused read or
    /// connect is the kernel's bare "Permission denied".
    pub fn rules(&self) -> Vec<String> {
        if !self.mode.confines() {
            return Vec::new();
        }
        let list = |paths: &[PathBuf]| {
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut rules = Vec::new();
        if self.mode == Mode::WorkspaceWrite {
            rules.push(format!(
                "read-only even in a writable directory (the sandbox's rule for code that \
                 runs later and for ikigai's own settings): .git/hooks, .git/config{}{}",
                if self.guard.protect.is_empty() {
                    ""
                } else {
                    ", "
                },
                list(&self.guard.protect)
            ));
        }
        if !self.guard.hide.is_empty() {
            rules.push(format!(
                "unreadable (the sandbox's secret paths): {}; config allow_read or \
                 --allow-read PATH gives one back",
                list(&self.guard.hide)
            ));
        }
        if self.mode == Mode::WorkspaceWrite {
            rules.push(
                "no rename, move or removal of a read-only or secret path, nor of any \
                 directory above one in a writable directory (the sandbox's rule that \
                 keeps them where they are: \"Device or resource busy\"), and no link to a \
                 secret (\"Invalid cross-device link\"); a secret directory that keeps \
                 readable files (~/.ssh) is read-only whole"
                    .to_string(),
            );
        }
        rules.push(
            "Unix sockets outside the workspace or under the runtime and display \
             directories are refused; config allow_unix_sockets or --allow-unix-socket PATH \
             allows one. Signals to processes outside the call, TIOCSTI and TIOCLINUX, and \
             socket families other than Unix and netlink (internet too with the network) \
             are refused"
                .to_string(),
        );
        rules
    }
}

/// The paths a confined call may not read, may not change although they
/// lie in a writable directory, and the sockets it may still reach
/// (decisions 72, 75, 76). The host computes them once (`host::settings`);
/// the tool's side applies those that exist at the call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Guard {
    /// Unreadable: the usual places of credentials and config `deny_read`.
    pub hide: Vec<PathBuf>,
    /// Given back out of `hide` (config `allow_read`, `--allow-read`, and
    /// `~/.ssh/known_hosts` and `~/.ssh/config`).
    pub allow_read: Vec<PathBuf>,
    /// Read-only even inside a writable directory: ikigai's own files, the
    /// shell start-up files, `authorized_keys`. Each writable directory's
    /// `.git/hooks` and `.git/config` are added at the call.
    pub protect: Vec<PathBuf>,
    /// Directories whose sockets are refused even inside a writable
    /// directory (`/tmp/.X11-unix`, `$XDG_RUNTIME_DIR`).
    pub socket_dirs: Vec<PathBuf>,
    /// Unix sockets that stay reachable (`SSH_AUTH_SOCK`, config
    /// `allow_unix_sockets`, `--allow-unix-socket`).
    pub sockets: Vec<PathBuf>,
    /// Build the namespace; false only where the kernel refuses it, which
    /// the host has said at start.
    pub namespace: bool,
}

/// The devices any program may write to, whatever the mode: discarding
/// output, reading zeros, its terminal, and new pseudo-terminals (programs
/// such as `script` and test runners open them). Missing ones are passed
/// over.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// POSIX shared memory and semaphores (Python's multiprocessing locks, many
/// test runners): writable where temporary files are, in workspace-write.
pub const SHARED_MEMORY: &str = "/dev/shm";

/// What this kernel can enforce, asked of the kernel itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version, or None when the kernel has no Landlock
    /// (not built in, or not enabled at boot).
    pub landlock_abi: Option<i32>,
    /// seccomp filters with SECCOMP_RET_ERRNO, and a filter written for
    /// this processor.
    pub seccomp: bool,
    /// Unprivileged user and mount namespaces (the hidden and read-only
    /// paths, the refused sockets).
    pub namespaces: bool,
    /// The host runs as root (its tools drop every capability).
    pub root: bool,
}

impl Support {
    pub fn detect() -> Support {
        Support {
            landlock_abi: landlock::abi_version(),
            seccomp: seccomp::available(),
            namespaces: namespace::available(),
            // SAFETY: geteuid cannot fail.
            root: unsafe { libc::geteuid() } == 0,
        }
    }

    /// What the kernel cannot do of the guards that need no privilege
    /// (decisions 72, 75, 76): said at start and by `ikigai sandbox check`,
    /// never skipped silently.
    pub fn guard_gaps(&self, mode: Mode) -> Vec<String> {
        let mut gaps = Vec::new();
        if !mode.confines() {
            return gaps;
        }
        if !self.namespaces {
            gaps.push(
                "no user namespace can be made here (the kernel refuses unprivileged \
                 ones, or ikigai runs inside another fence): secret files stay readable, \
                 .git/hooks and start-up files writable, and Unix sockets outside the \
                 workspace reachable, but for what a fence around ikigai keeps"
                    .to_string(),
            );
        }
        if self
            .landlock_abi
            .is_some_and(|abi| abi < landlock::ABI_SCOPES)
        {
            gaps.push(format!(
                "this kernel's Landlock (ABI {}) has no scopes (ABI {} and later): \
                 tools may signal your other processes and reach abstract Unix sockets",
                self.landlock_abi.unwrap_or(0),
                landlock::ABI_SCOPES
            ));
        }
        gaps
    }

    /// Why `mode` cannot be enforced here (None when it can). Network
    /// refusal needs seccomp; any confining mode needs Landlock.
    pub fn gap(&self, mode: Mode) -> Option<String> {
        if !mode.confines() {
            return None;
        }
        let mut missing = Vec::new();
        if self.landlock_abi.is_none() {
            missing.push("Landlock (file-system rules)");
        }
        if !self.seccomp {
            missing.push("seccomp (network rules)");
        }
        (!missing.is_empty()).then(|| {
            format!(
                "this kernel lacks {}: the {mode} sandbox cannot be enforced",
                missing.join(" and ")
            )
        })
    }

    /// The limits of each call and which of them hold here (decision 81);
    /// `scope` is the bus a scope per call was had on, or why there is none.
    fn limits_report(&self, limits: &limits::Limits, scope: &Result<String, String>) -> String {
        let processes = if self.root {
            "not enforced here: the kernel applies no process limit to uid 0 (root)".to_string()
        } else if !self.namespaces {
            "not enforced here: without a user namespace of its own a call's limit would \
             count every process of yours"
                .to_string()
        } else {
            format!(
                "{} (limits.processes), counted in the call's own user namespace; not with \
                 --sandbox off",
                limits.processes
            )
        };
        format!(
            "\nLimits of each call, every mode (config [limits]; soft and hard the same, so a \
             tool cannot raise them):\n  \
             processes and threads at once: {processes}\n  \
             data per process: {} (limits.memory; RLIMIT_DATA, so runtimes that reserve \
             address space still start)\n  \
             bytes per file written: {} (limits.file_size); a call stopped there answers \
             RESOURCE_LIMIT\n  \
             core dumps: none\n  \
             OOM score adjustment: 1000, so the kernel ends a tool before the host or your \
             other programs\n  \
             the whole call: {}\n",
            limits::size_text(limits.memory.min(limits.memory_total)),
            limits::size_text(limits.file_size),
            match scope {
                Ok(bus) => format!(
                    "a systemd scope per call (your user manager, on {bus}): {} of memory \
                     (limits.memory_total) and {} processes and threads (limits.processes) for \
                     everything it starts together, root's calls included; a call that meets \
                     either answers RESOURCE_LIMIT",
                    limits::size_text(limits.memory_total),
                    limits.processes
                ),
                Err(why) => format!(
                    "no scope per call here ({why}): a call's memory is bounded per process, \
                     not as a whole"
                ),
            }
        )
    }

    /// `ikigai sandbox check`: what the kernel supports and what each mode
    /// allows on it.
    pub fn report(
        &self,
        writable: &[PathBuf],
        guard: &Guard,
        limits: &limits::Limits,
        scope: &Result<String, String>,
    ) -> String {
        let landlock = match self.landlock_abi {
            Some(abi) => format!("yes (ABI version {abi})"),
            None => "no (not built into this kernel or not enabled at boot)".into(),
        };
        let seccomp = if self.seccomp {
            "yes (socket filter)".to_string()
        } else {
            format!(
                "no (no seccomp filters, or no filter for {})",
                std::env::consts::ARCH
            )
        };
        let dirs: Vec<String> = writable.iter().map(|p| p.display().to_string()).collect();
        let mut text = format!(
            "Landlock: {landlock}\nseccomp:  {seccomp}\n\nModes:\n  \
             workspace-write (the assistant's default): reads anywhere; writes under {}, \
             and to {}; no new internet sockets unless --network (tools marked \
             openWorldHint, other than bash, keep the network)\n  \
             read-only: reads anywhere; writes only to {}; network as in workspace-write\n  \
             off: no sandbox, the tool has your rights\n",
            if dirs.is_empty() {
                "nothing".to_string()
            } else {
                dirs.join(", ")
            },
            DEVICES.join(", "),
            DEVICES.join(", "),
        );
        text += "Every mode, off included: no process a tool starts outlives its call.\n";
        text += &format!(
            "\nIn workspace-write and read-only:\n  user and mount namespace per call: {}\n  \
             Landlock scopes (signals, abstract sockets): {}\n",
            if self.namespaces {
                "yes"
            } else {
                "no (the kernel refuses unprivileged namespaces, or ikigai runs inside \
                 another fence)"
            },
            match self.landlock_abi {
                Some(abi) if abi >= landlock::ABI_SCOPES => "yes".to_string(),
                _ => format!("no (Landlock ABI {} or later needed)", landlock::ABI_SCOPES),
            }
        );
        if self.root {
            text += "  running as root: every capability is dropped in the tool (permitted, \
                     effective, inheritable, ambient, and bounding where it may exec); it \
                     still runs as uid 0 with the file access the fence allows\n";
        }
        let list = |paths: &[PathBuf]| -> String {
            if paths.is_empty() {
                return "none".into();
            }
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        text += &format!(
            "  unreadable (config deny_read; allow_read or --allow-read PATH gives one back): {}\n  \
             readable although under them: {}\n  \
             read-only even in a writable directory: {}, and each writable directory's \
             .git/hooks and .git/config\n  \
             Unix sockets: refused unless made inside the workspace during the call, and \
             always under {}; reachable (SSH_AUTH_SOCK, config allow_unix_sockets, \
             --allow-unix-socket PATH): {}\n  \
             signals only to the call's own processes; abstract Unix sockets only of the \
             call's own processes; no TIOCSTI or TIOCLINUX; with the network off, only \
             Unix and netlink sockets (--network adds internet sockets, nothing else)\n",
            list(&guard.hide),
            list(&guard.allow_read),
            list(&guard.protect),
            list(&guard.socket_dirs),
            list(&guard.sockets),
        );
        text += &self.limits_report(limits, scope);
        for mode in [Mode::WorkspaceWrite, Mode::ReadOnly] {
            if let Some(gap) = self.gap(mode) {
                text += &format!("Warning: {gap}.\n");
            }
        }
        for gap in self.guard_gaps(Mode::WorkspaceWrite) {
            text += &format!("Warning: {gap}.\n");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print() {
        for mode in [Mode::WorkspaceWrite, Mode::ReadOnly, Mode::Off] {
            assert_eq!(Mode::parse(mode.as_str()), Ok(mode));
        }
        let err = Mode::parse("strict").unwrap_err();
        assert!(
            err.contains("'strict'") && err.contains("workspace-write"),
            "{err}"
        );
        assert!(Mode::parse("").is_err());
    }

    #[test]
    fn gaps_name_what_is_missing() {
        let full = Support {
            landlock_abi: Some(7),
            seccomp: true,
            namespaces: true,
            root: true,
        };
        assert_eq!(full.gap(Mode::WorkspaceWrite), None);
        let none = Support {
            landlock_abi: None,
            seccomp: false,
            namespaces: false,
            root: false,
        };
        assert_eq!(none.gap(Mode::Off), None);
        let gap = none.gap(Mode::ReadOnly).unwrap();
        assert!(gap.contains("Landlock") && gap.contains("seccomp"), "{gap}");
        let limits = limits::Limits {
            memory_total: 16 << 30,
            ..limits::Limits::default()
        };
        let report = none.report(
            &[],
            &Guard::default(),
            &limits,
            &Err("no session bus".into()),
        );
        assert!(report.contains("data per process: 8 GiB"), "{report}");
        assert!(
            report.contains("no scope per call here (no session bus)"),
            "{report}"
        );
        assert!(
            report.contains("processes and threads at once: not enforced"),
            "{report}"
        );
        assert!(report.contains("Landlock: no"), "{report}");
        assert!(report.contains("Warning:"), "{report}");
        assert!(
            report.contains("no user namespace can be made here"),
            "{report}"
        );
        assert!(!report.contains("running as root"), "{report}");
        let guard = Guard {
            hide: vec![PathBuf::from("/h/.aws")],
            sockets: vec![PathBuf::from("/run/agent.sock")],
            ..Guard::default()
        };
        let report = full.report(
            &[PathBuf::from("/w")],
            &guard,
            &limits,
            &Ok("unix:path=/run/user/1/bus".into()),
        );
        assert!(report.contains("uid 0 (root)"), "{report}");
        assert!(
            report.contains("a systemd scope per call (your user manager, on unix:path=/run/user/1/bus): 16 GiB of memory (limits.memory_total) and 2048 processes"),
            "{report}"
        );
        let user = Support {
            root: false,
            ..full
        };
        let as_user = user.report(
            &[],
            &guard,
            &limits::Limits::default(),
            &Err("no session bus".into()),
        );
        assert!(
            as_user.contains("at once: 2048 (limits.processes)"),
            "{as_user}"
        );
        assert!(as_user.contains("4 GiB (limits.file_size)"), "{as_user}");
        assert!(report.contains("ABI version 7") && report.contains("under /w"));
        assert!(report.contains("/h/.aws") && report.contains("/run/agent.sock"));
        assert!(report.contains("every capability is dropped"), "{report}");
        assert!(!report.contains("Warning:"), "{report}");
        let old = Support {
            landlock_abi: Some(5),
            ..full
        };
        assert_eq!(old.guard_gaps(Mode::ReadOnly).len(), 1);
        assert!(old.guard_gaps(Mode::Off).is_empty());
    }
}
