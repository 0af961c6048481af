//! The test harness: runs the built binary the way users and hosts do, under
//! a tool's own name (a symlink), with JSON on stdin (ikigai protocol) or as
//! the first argument (shellclaw protocol), and parses what it prints.
#![allow(dead_code)]

pub mod http;

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

pub mod model_server;

use serde_json::Value;

/// The binary cargo built for this test run.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ikigai-tools"))
}

/// A directory holding a symlink to the binary for every name given by
/// `--list`, its schema name, and `ikigai`: made once per test process.
pub fn links_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let list = Command::new(bin())
            .arg("--list")
            .output()
            .expect("run --list");
        let names = String::from_utf8(list.stdout).expect("utf-8 list");
        for name in names.lines().chain(["ikigai"]) {
            std::os::unix::fs::symlink(bin(), dir.path().join(name)).expect("symlink");
            let schema_name = name.replace('-', "_");
            if schema_name != name {
                std::os::unix::fs::symlink(bin(), dir.path().join(schema_name)).expect("symlink");
            }
        }
        dir
    })
    .path()
}

/// The path of the link that makes the binary `name`.
pub fn link(name: &str) -> PathBuf {
    links_dir().join(name)
}

/// What one run printed.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// stdout as JSON; panics with everything printed if it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }
}

/// A command under construction: `run("file-read")` is the binary called
/// through a link of that name.
pub struct Run {
    cmd: Command,
    stdin: Option<Vec<u8>>,
}

pub fn run(name: &str) -> Run {
    Run {
        cmd: Command::new(link(name)),
        stdin: None,
    }
}

/// The binary under its own name, `ikigai-tools`.
pub fn run_main() -> Run {
    Run {
        cmd: Command::new(bin()),
        stdin: None,
    }
}

impl Run {
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.cmd.arg(arg);
        self
    }
    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> Self {
        self.cmd.args(args);
        self
    }
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }
    pub fn env_remove(mut self, key: &str) -> Self {
        self.cmd.env_remove(key);
        self
    }
    pub fn dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cmd.current_dir(dir);
        self
    }
    pub fn stdin(mut self, input: impl AsRef<[u8]>) -> Self {
        self.stdin = Some(input.as_ref().to_vec());
        self
    }
    /// Arguments as JSON on stdin (ikigai protocol).
    pub fn json_in(self, args: &Value) -> Self {
        self.stdin(args.to_string())
    }

    pub fn output(mut self) -> Output {
        self.cmd.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        self.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = self.cmd.spawn().expect("spawn the binary");
        if let Some(input) = self.stdin.take() {
            let mut pipe = child.stdin.take().expect("stdin pipe");
            // A tool may answer without reading all its input.
            let _ = pipe.write_all(&input);
        }
        let out = child.wait_with_output().expect("wait for the binary");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs, and sends SIGINT (as Ctrl-C at a terminal would) once `when`
    /// says so, checked every 20 ms for at most 30 s.
    pub fn output_interrupting(self, when: impl Fn() -> bool) -> Output {
        self.output_signalling(libc::SIGINT, when)
    }

    /// Runs, sends `signal` once `when` holds (or after 30 s), and waits.
    pub fn output_signalling(mut self, signal: libc::c_int, when: impl Fn() -> bool) -> Output {
        self.cmd.stdin(Stdio::piped());
        self.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = self.cmd.spawn().expect("spawn the binary");
        let mut pipe = child.stdin.take().expect("stdin pipe");
        let _ = pipe.write_all(&self.stdin.take().unwrap_or_default());
        drop(pipe);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !when() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let out = child.wait_with_output().expect("wait for the binary");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs and parses stdout as JSON.
    pub fn json(self) -> Value {
        self.output().json()
    }
}

/// Calls tool `name` with `args` on stdin and returns its JSON answer.
pub fn call(name: &str, args: Value) -> Value {
    run(name).json_in(&args).json()
}

/// Calls tool `name` with `args` as `$1` (shellclaw protocol).
pub fn call_shellclaw(name: &str, args: Value) -> Output {
    run(name).arg(args.to_string()).output()
}

/// A fresh directory that a workspace-write sandbox does not let a call
/// write by default: not under /tmp, /dev/shm or $TMPDIR (which every
/// sandboxed call may write). The build's own temporary directory, unless
/// the checkout itself lives under /tmp (as a CI clone may), else /var/tmp,
/// else the home directory.
pub fn unwritable_by_default() -> tempfile::TempDir {
    let writable: Vec<PathBuf> = ["/tmp", "/dev/shm"]
        .into_iter()
        .map(PathBuf::from)
        .chain(std::env::var_os("TMPDIR").map(PathBuf::from))
        .filter_map(|d| d.canonicalize().ok())
        .collect();
    let candidates = [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        Some(PathBuf::from("/var/tmp")),
        std::env::var_os("HOME").map(PathBuf::from),
    ];
    for base in candidates.into_iter().flatten() {
        let Ok(real) = base.canonicalize() else {
            continue;
        };
        if writable.iter().any(|w| real.starts_with(w)) {
            continue;
        }
        if let Ok(dir) = tempfile::tempdir_in(&real) {
            return dir;
        }
    }
    panic!("no directory outside /tmp, /dev/shm and $TMPDIR to test the sandbox with");
}

/// A fresh pseudo-terminal: (master, slave), both owned by the caller.
pub fn openpty() -> (std::fs::File, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills two descriptors we then own.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both are fresh descriptors owned by nobody else.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::os::fd::OwnedFd::from_raw_fd(slave),
        )
    }
}

/// What the tests read of `/proc/PID/stat`: the command name, the state
/// letter, the parent and the process group. None when the process is gone.
pub struct Stat {
    pub comm: String,
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
}

impl Stat {
    pub fn of(pid: i32) -> Option<Stat> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The name may hold spaces and parentheses: it ends at the last ')'.
        let (head, rest) = stat.rsplit_once(')')?;
        let comm = head.split_once('(')?.1.to_string();
        let mut fields = rest.split_whitespace();
        let state = fields.next()?.chars().next()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgrp = fields.next()?.parse().ok()?;
        Some(Stat {
            comm,
            state,
            ppid,
            pgrp,
        })
    }

    /// Ended: a zombie waiting for its reaper, or dead.
    pub fn ended(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}
