//! What the file tools' tests share: a scratch directory every user can work
//! in, running a tool with a deadline (a FIFO or a device must not hang it),
//! running it as an unprivileged user when the tests run as root (so
//! permission checks are real either way), and a tiny full file system for
//! NO_SPACE (a tmpfs mounted in a private user and mount namespace).

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{bin, link, Output};

/// Long enough for a loaded 2-core machine; only a hang takes this long.
const DEADLINE: Duration = Duration::from_secs(60);

/// The uid and gid of `nobody`, the user root's tests run tools as.
const NOBODY: u32 = 65534;

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A temporary directory that `nobody` may enter and write in.
pub fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    dir
}

/// The names in `dir`, sorted: a leftover temporary file shows up here.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

pub fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").mode() & 0o7777
}

pub fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

pub fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).expect("path without NUL");
    // SAFETY: a valid C string; mkfifo only creates a directory entry.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// Runs `cmd` with `input` on stdin; panics if it is still running at the
/// deadline (after killing it), which is how a hang fails a test.
pub fn run_within(mut cmd: Command, input: &[u8]) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn the binary");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let feeder = thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stdout.read_to_end(&mut v);
        v
    });
    let err = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stderr.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still running after {DEADLINE:?}: it hangs");
        }
        thread::sleep(Duration::from_millis(10));
    };
    let _ = feeder.join();
    Output {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.join().expect("stdout thread")).into_owned(),
        stderr: String::from_utf8_lossy(&err.join().expect("stderr thread")).into_owned(),
    }
}

/// Calls `tool` (ikigai protocol) under the deadline.
pub fn call_within(tool: &str, args: &Value) -> Value {
    run_within(Command::new(link(tool)), args.to_string().as_bytes()).json()
}

/// Calls `tool` as an unprivileged user: `nobody` when the tests run as
/// root, the current user otherwise.
pub fn call_unprivileged(tool: &str, args: &Value) -> Value {
    let mut cmd = Command::new(bin());
    cmd.arg(tool);
    if is_root() {
        // std drops root's supplementary groups along with the uid.
        cmd.uid(NOBODY).gid(NOBODY);
    }
    run_within(cmd, args.to_string().as_bytes()).json()
}

/// Calls `tool` with a file size limit of 512 bytes (`ulimit -f 1`, SIGXFSZ
/// ignored): a bigger write fails with EFBIG, an honest write failure that
/// needs no privileges.
pub fn call_with_small_file_limit(tool: &str, args: &Value) -> Value {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "trap '' XFSZ; ulimit -f 1; exec \"$0\" \"$1\""])
        .arg(bin())
        .arg(tool);
    run_within(cmd, args.to_string().as_bytes()).json()
}

/// Calls `tool` with its address space limited to `megabytes` (`ulimit
/// -v`): a tool that would hold a big file in memory fails there.
pub fn call_memory_limited(tool: &str, args: &Value, megabytes: u64) -> Output {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "ulimit -v $2; exec \"$0\" \"$1\""])
        .arg(bin())
        .arg(tool)
        .arg((megabytes * 1024).to_string());
    run_within(cmd, args.to_string().as_bytes())
}

/// Runs `tool` with `args` on stdin inside a fresh 64 KiB tmpfs, after
/// `setup` (shell) has run there; prints the tool's answer, then the
/// directory listing and `f.txt`, separated by lines `---`. `None` when this
/// system allows no unprivileged user namespace (the NO_SPACE mapping is then
/// covered only by the unit tests of `fs::atomic`).
pub fn in_full_fs(setup: &str, tool: &str, args: &Value) -> Option<(Value, Vec<String>, String)> {
    let probe = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("note: no user namespaces here; NO_SPACE checked by unit tests only");
        return None;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let script = format!(
        "set -e; mount -t tmpfs -o size=64k tmpfs \"$1\"; cd \"$1\"; {setup}\n\
         \"$2\" {tool}; echo; echo ---; ls -A; echo ---; cat f.txt"
    );
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--user",
        "--map-root-user",
        "--mount",
        "sh",
        "-c",
        &script,
        "sh",
    ])
    .arg(dir.path())
    .arg(bin());
    let out = run_within(cmd, args.to_string().as_bytes());
    assert_eq!(out.code, 0, "{out:?}");
    let mut parts = out.stdout.split("\n---\n");
    let answer = serde_json::from_str(parts.next().unwrap_or_default().trim())
        .unwrap_or_else(|e| panic!("answer is not JSON ({e}): {out:?}"));
    let listing = parts
        .next()
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    let content = parts.next().unwrap_or_default().to_string();
    Some((answer, listing, content))
}
