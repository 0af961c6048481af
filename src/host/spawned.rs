//! Calls that the sandbox's spawner starts (docs/sandbox.md): one spawner
//! per host, started at the first such call and kept for the host's life
//! (it ends with the host).
//!
//! Two kinds of call go through it:
//!
//! - `start`: the spawner forks the call's containment process, which the
//!   host then waits for and reaps as if it had started `sandbox-exec`;
//! - `serve`: a call of one of our tools that starts no process goes to a
//!   worker, a process the spawner made and fenced once, which runs it and
//!   says how it ended. Idle workers are kept, a few per fence, for the
//!   next calls; a worker that was killed (a timeout, a cancel) or whose
//!   writable directories were replaced is not used again.
//!
//! Anything the spawner cannot do falls back to exec'ing `sandbox-exec`.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;

use super::call::own_executable;
use super::child::{set_nonblocking, Proc};
use crate::sandbox::secrets;
use crate::sandbox::spawner::{Failure, Spawner};
use crate::sandbox::worker::Worker;
use crate::sandbox::Fence;

static SPAWNER: Mutex<Option<Spawner>> = Mutex::new(None);
/// Set when a spawner could not be started: then every call execs.
static UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// Workers waiting for a call.
static IDLE: Mutex<Vec<Worker>> = Mutex::new(Vec::new());
/// The most workers kept waiting; more are made when calls run at once.
const MAX_IDLE: usize = 4;
/// Workers that could not be made in a row; at `MAX_FAILED`, no more are
/// tried (this kernel cannot fence one) and such calls start as others do.
static FAILED: AtomicU32 = AtomicU32::new(0);
const MAX_FAILED: u32 = 3;

/// What became of a call handed to the spawner.
pub enum Started {
    Proc(Box<Proc>),
    /// It cannot make this call (none could be started, or the request is
    /// too large for it): the input, to start it the old way.
    Not(Option<Vec<u8>>),
    /// The spawner ended after taking the call, which may be running: the
    /// call fails rather than run twice.
    Lost(io::Error),
}

/// Has the spawner start a containment process with `args` (what follows
/// `sandbox-exec` on its command line, for `fence`) and `env`.
pub fn start(
    args: &[OsString],
    fence: &Fence,
    env: &[(OsString, OsString)],
    input: Option<Vec<u8>>,
    cap: usize,
) -> Started {
    if UNAVAILABLE.load(Ordering::Relaxed) {
        return Started::Not(input);
    }
    let Ok(cwd) = std::env::current_dir() else {
        return Started::Not(input);
    };
    let Ok(pipes) = Pipes::new(input.is_some()) else {
        return Started::Not(input);
    };
    let mut slot = SPAWNER.lock().unwrap_or_else(|e| e.into_inner());
    // A spawner that died (killed by someone) is replaced once.
    for _ in 0..2 {
        let Some(spawner) = running(&mut slot, fence) else {
            return Started::Not(input);
        };
        match spawner.spawn(args, env, &cwd, pipes.theirs()) {
            Ok(pid) => {
                drop(slot);
                let (stdin, stdout, stderr) = pipes.ours();
                return Started::Proc(Box::new(Proc::adopt(
                    pid, stdin, stdout, stderr, input, cap, cap,
                )));
            }
            Err(Failure::Refused) => return Started::Not(input),
            Err(Failure::Gone) => *slot = None,
            Err(Failure::Lost(e)) => {
                *slot = None;
                return Started::Lost(io::Error::other(format!(
                    "the sandbox's spawner took the call but gave no answer ({e})"
                )));
            }
        }
    }
    Started::Not(input)
}

/// Has a worker fenced as `fence` (`fence_args` on the command line) run
/// `program` (a file `worker::serves`) with `args`, `env` and `input`.
pub fn serve(
    program: &Path,
    args: &[OsString],
    fence: &Fence,
    fence_args: &[OsString],
    env: &[(OsString, OsString)],
    input: Option<Vec<u8>>,
    cap: usize,
) -> Started {
    if UNAVAILABLE.load(Ordering::Relaxed) || FAILED.load(Ordering::Relaxed) >= MAX_FAILED {
        return Started::Not(input);
    }
    let Ok(cwd) = std::env::current_dir() else {
        return Started::Not(input);
    };
    // A waiting worker may have died (killed by someone): a new one is made
    // once. A worker never saw a call it could not take.
    for _ in 0..2 {
        let Some(worker) = take_worker(fence, fence_args) else {
            return Started::Not(input);
        };
        let text = input.as_deref().unwrap_or_default();
        match worker.call(program, args, env, &cwd, text) {
            Ok(()) => return Started::Proc(Box::new(Proc::serve(worker, cap, cap))),
            Err(e) if e.raw_os_error() == Some(libc::E2BIG) => {
                give_back(worker);
                return Started::Not(input);
            }
            Err(_) => drop(worker),
        }
    }
    Started::Not(input)
}

/// Keeps a worker that served a call well for the next one.
pub fn give_back(worker: Worker) {
    let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
    if idle.len() < MAX_IDLE {
        idle.push(worker);
    }
    // Otherwise dropped (after the lock): ended and reaped.
}

/// A waiting worker with this fence, whose directories are still those it
/// was fenced on; else a new one.
fn take_worker(fence: &Fence, fence_args: &[OsString]) -> Option<Worker> {
    let mut stale = Vec::new();
    let found = {
        let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
        let mut found = None;
        while let Some(at) = idle.iter().position(|w| w.fence() == fence) {
            let worker = idle.swap_remove(at);
            if worker.current() {
                found = Some(worker);
                break;
            }
            stale.push(worker);
        }
        found
    };
    drop(stale);
    if found.is_some() {
        return found;
    }
    let mut slot = SPAWNER.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..2 {
        let spawner = running(&mut slot, fence)?;
        match spawner.worker(fence_args, fence.clone()) {
            Ok(worker) => {
                FAILED.store(0, Ordering::Relaxed);
                return Some(worker);
            }
            Err(Failure::Gone) | Err(Failure::Lost(_)) => *slot = None,
            Err(Failure::Refused) => break,
        }
    }
    FAILED.fetch_add(1, Ordering::Relaxed);
    None
}

/// The spawner in `slot`, started if there is none (its calls ask for
/// `fence`'s scope: the host's limits and bus are the same for every call).
fn running<'a>(slot: &'a mut Option<Spawner>, fence: &Fence) -> Option<&'a mut Spawner> {
    if slot.is_none() {
        match start_spawner(fence.scope()) {
            Ok(spawner) => *slot = Some(spawner),
            Err(_) => {
                UNAVAILABLE.store(true, Ordering::Relaxed);
                return None;
            }
        }
    }
    slot.as_mut()
}

/// Starts a spawner from a thread that lives as long as the host: a
/// process's parent-death signal (which ends the spawner, and the processes
/// it makes, with the host) fires when the *thread* that started it ends,
/// and calls run on short-lived threads.
fn start_spawner(scope: Option<crate::sandbox::scope::Spec>) -> io::Result<Spawner> {
    let (tell, told) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("sandbox-spawner".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let env = secrets::base_env(std::env::vars_os());
            let started = Spawner::start(own_executable(), env, scope.as_ref());
            let _ = tell.send(started);
            loop {
                std::thread::park();
            }
        })?;
    told.recv()
        .unwrap_or_else(|_| Err(io::Error::other("the spawner's thread ended")))
}

/// The three pipes of a call, each (the host's end, the call's end); stdin
/// is /dev/null (no host end) when there is no input. The call's ends are
/// closed here once handed over: only the call's processes hold them then.
struct Pipes {
    stdin: (Option<OwnedFd>, OwnedFd),
    stdout: (OwnedFd, OwnedFd),
    stderr: (OwnedFd, OwnedFd),
}

impl Pipes {
    fn new(input: bool) -> io::Result<Pipes> {
        let stdin = if input {
            let (read, write) = pipe()?;
            set_nonblocking(write.as_raw_fd())?;
            (Some(write), read)
        } else {
            (None, OwnedFd::from(std::fs::File::open("/dev/null")?))
        };
        let (stdout, stderr) = (pipe()?, pipe()?);
        set_nonblocking(stdout.0.as_raw_fd())?;
        set_nonblocking(stderr.0.as_raw_fd())?;
        Ok(Pipes {
            stdin,
            stdout,
            stderr,
        })
    }

    /// The call's ends, as its stdin, stdout and stderr.
    fn theirs(&self) -> [RawFd; 3] {
        [&self.stdin.1, &self.stdout.1, &self.stderr.1].map(AsRawFd::as_raw_fd)
    }

    /// The host's ends; the call's are closed.
    fn ours(self) -> (Option<OwnedFd>, OwnedFd, OwnedFd) {
        (self.stdin.0, self.stdout.0, self.stderr.0)
    }
}

/// A pipe, (read end, write end), both close-on-exec.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two-element array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
