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
//!
//! Everything here is the tool's side of the fence; the host decides the
//! settings (`host::settings`) and starts `sandbox-exec` for each call.

pub mod exec;
pub mod landlock;
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
}

impl Support {
    pub fn detect() -> Support {
        Support {
            landlock_abi: landlock::abi_version(),
            seccomp: seccomp::available(),
        }
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

    /// `ikigai sandbox check`: what the kernel supports and what each mode
    /// allows on it.
    pub fn report(&self, writable: &[PathBuf]) -> String {
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
        for mode in [Mode::WorkspaceWrite, Mode::ReadOnly] {
            if let Some(gap) = self.gap(mode) {
                text += &format!("Warning: {gap}.\n");
            }
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
        };
        assert_eq!(full.gap(Mode::WorkspaceWrite), None);
        let none = Support {
            landlock_abi: None,
            seccomp: false,
        };
        assert_eq!(none.gap(Mode::Off), None);
        let gap = none.gap(Mode::ReadOnly).unwrap();
        assert!(gap.contains("Landlock") && gap.contains("seccomp"), "{gap}");
        let report = none.report(&[]);
        assert!(report.contains("Landlock: no"), "{report}");
        assert!(report.contains("Warning:"), "{report}");
        let report = full.report(&[PathBuf::from("/w")]);
        assert!(report.contains("ABI version 7") && report.contains("under /w"));
        assert!(!report.contains("Warning:"));
    }
}
