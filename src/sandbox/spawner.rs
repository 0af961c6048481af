//! `ikigai-tools sandbox-spawner`: a small process of this executable that
//! a host starts once and that then makes each call's processes by forking
//! itself, instead of the host exec'ing `ikigai-tools sandbox-exec` for
//! every call (docs/sandbox.md).
//!
//! Why: starting this executable costs about a millisecond (the loader,
//! std's start-up, the page faults of a large image), a fork of a small
//! single-threaded process a fraction of that; and the host itself, being
//! multi-threaded and large, cannot fork and run Rust code in the child.
//!
//! It keeps one call made in advance ([`Spare`]): a containment process,
//! created with `CLONE_PARENT` so that its parent is the host, exactly as
//! if the host had started `sandbox-exec` (the host waits for it, signals
//! it and reads its exit status as before, and its `PR_SET_PDEATHSIG` still
//! names the host), which does `sandbox-exec`'s containment
//! (`exec::prepare`, `exec::see_through`); and below it the tool process,
//! waiting for its call. A call's request goes to that waiting process,
//! which takes the call's descriptors, environment and directory, builds
//! the fence around itself (`exec::build_fence`: the fence is per call) and
//! becomes the tool (`exec::run_tool`). The spawner answers the containment
//! process's pid, and makes the next spare.
//!
//! The wire, on `SOCK_SEQPACKET` socket pairs (one request, one message):
//! the request is NUL-terminated strings, the working directory, the number
//! of arguments, the arguments of `sandbox-exec` (after its name), then the
//! environment as `NAME=value`; its three descriptors (the call's stdin,
//! stdout, stderr) ride along as `SCM_RIGHTS`. The answer is the pid, or
//! minus an errno (the call was not taken), as four little-endian bytes. A
//! request that does not fit in one message is never sent, and the host
//! starts `sandbox-exec` the old way.
//!
//! A request with one descriptor instead of three asks for a worker
//! (`worker`): its arguments are the fence's (`sandbox-exec`'s options up
//! to `--`), the descriptor a socket the worker serves on. The spawner
//! forks it, as the host's child too, and answers its pid.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};

use super::worker::{self, Worker};
use super::{exec, scope, Fence};

/// The personality's name, as the first argument of `ikigai-tools`.
pub const NAME: &str = "sandbox-spawner";

/// The largest request, in bytes (the socket's buffers are sized for it):
/// the fence, the program and its arguments, the environment.
pub(super) const MAX_REQUEST: usize = 256 * 1024;

/// How long the host waits for the spawner's answer to one request (it
/// takes well under a millisecond).
const ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// The host's side: a running spawner and the socket to it.
pub struct Spawner {
    socket: OwnedFd,
    process: Child,
}

impl Spawner {
    /// Starts `exe` (this executable) as the spawner, with `env` as its
    /// environment (each call's own is sent with the call); each call it
    /// makes asks for a scope as `scope` says (made with the call in
    /// advance, so it costs a call nothing).
    pub fn start(
        exe: &Path,
        env: impl IntoIterator<Item = (OsString, OsString)>,
        scope: Option<&scope::Spec>,
    ) -> io::Result<Spawner> {
        let (ours, theirs) = socket_pair()?;
        let mut cmd = Command::new(exe);
        // The name decides the personality; "ikigai-tools" is none of the
        // tools, so the first argument does.
        std::os::unix::process::CommandExt::arg0(&mut cmd, "ikigai-tools");
        // A group of its own: the terminal's Ctrl-C, which reaches the
        // host's group (the host handles it), must not end the spawner.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd.arg(NAME);
        if let Some(spec) = scope {
            cmd.args(["--scope", &spec.bus]);
            cmd.args(["--memory-total", &spec.memory.to_string()]);
            cmd.args(["--processes", &spec.tasks.to_string()]);
        }
        let process = cmd
            .env_clear()
            .envs(env)
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()?;
        // A spawner that stopped answering (stopped, stuck) fails the call
        // in hand instead of holding every call of the host forever.
        set_option(&ours, libc::SO_RCVTIMEO, &answer_within());
        Ok(Spawner {
            socket: ours,
            process,
        })
    }

    /// Has a containment process started with `args` (what follows
    /// `sandbox-exec` on its command line), `env` and `cwd`, and `stdio` as
    /// its stdin, stdout and stderr; returns its pid. The process is the
    /// caller's child: the caller must reap it.
    pub fn spawn(
        &mut self,
        args: &[OsString],
        env: &[(OsString, OsString)],
        cwd: &Path,
        stdio: [RawFd; 3],
    ) -> Result<libc::pid_t, Failure> {
        let request = encode(cwd, args, env).ok_or(Failure::Refused)?;
        send_with_fds(self.socket.as_raw_fd(), &request, &stdio).map_err(|_| Failure::Gone)?;
        self.answer()
    }

    /// Has a worker made (docs/sandbox.md), fenced as `fence_args` say (the
    /// options of `sandbox-exec` up to `--`, which hold `fence`), and
    /// returns it once it is ready. The worker is the caller's child.
    pub fn worker(&mut self, fence_args: &[OsString], fence: Fence) -> Result<Worker, Failure> {
        let request = encode(Path::new("/"), fence_args, &[]).ok_or(Failure::Refused)?;
        let (ours, theirs) = socket_pair().map_err(|_| Failure::Refused)?;
        send_with_fds(self.socket.as_raw_fd(), &request, &[theirs.as_raw_fd()])
            .map_err(|_| Failure::Gone)?;
        drop(theirs);
        let pid = self.answer()?;
        set_option(&ours, libc::SO_RCVTIMEO, &answer_within());
        // A worker that could not fence itself ends instead of being
        // ready; reaped as it is dropped.
        Worker::ready(ours, pid, fence).map_err(|_| Failure::Refused)
    }

    /// The spawner's answer to a request: the pid of what it made.
    fn answer(&mut self) -> Result<libc::pid_t, Failure> {
        let mut answer = [0u8; 4];
        loop {
            // SAFETY: reads into a buffer of the length given.
            let n =
                unsafe { libc::recv(self.socket.as_raw_fd(), answer.as_mut_ptr().cast(), 4, 0) };
            if n == 4 {
                break;
            }
            let e = io::Error::last_os_error();
            if n < 0 && e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Failure::Lost(if n < 0 {
                e
            } else {
                io::Error::from(io::ErrorKind::UnexpectedEof)
            }));
        }
        match i32::from_le_bytes(answer) {
            pid if pid > 0 => Ok(pid),
            _errno => Err(Failure::Refused),
        }
    }
}

fn answer_within() -> libc::timeval {
    libc::timeval {
        tv_sec: ANSWER_WITHIN.as_secs() as libc::time_t,
        tv_usec: 0,
    }
}

/// Why [`Spawner::spawn`] gave no process.
#[derive(Debug)]
pub enum Failure {
    /// The spawner did not take the call (too large for one message, or it
    /// could not fork): nothing ran, the call may start another way.
    Refused,
    /// The spawner is gone and never saw the call: start another one.
    Gone,
    /// The spawner ended after taking the call, which may be running: it
    /// must not be started again.
    Lost(io::Error),
}

impl Drop for Spawner {
    /// Ends the spawner (it holds nothing to clean up; the calls it made
    /// are the host's children) and reaps it, leaving no zombie.
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// The spawner's side: serves requests on stdin until the host closes it.
pub fn main(args: &[OsString]) -> ExitCode {
    let scope = match scope_of(args) {
        Ok(scope) => scope,
        Err(e) => {
            eprintln!("ikigai-tools {NAME}: {e} (the host starts it)");
            return ExitCode::from(exec::SETUP_FAILED);
        }
    };
    // SAFETY: plain prctl/getppid calls on this process.
    let host = unsafe {
        let host = libc::getppid();
        // Nothing to clean up: die with the host.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        // Started as /proc/self/exe, it would show as "exe" in `ps`.
        libc::prctl(libc::PR_SET_NAME, c"ikigai-spawner".as_ptr(), 0, 0, 0);
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        if libc::getppid() != host {
            return ExitCode::from(exec::SETUP_FAILED);
        }
        host
    };
    let mut buf = vec![0u8; MAX_REQUEST];
    let mut spare = None;
    loop {
        // Made while no call waits: a call only hands its request over.
        if spare.is_none() {
            spare = match Spare::make(host, scope.as_ref()) {
                Ok(Made::Spare(s)) => Some(s),
                Ok(Made::Containment(code)) | Ok(Made::Tool(code)) => return code,
                Err(_) => None,
            };
        }
        let (len, fds) = match receive(0, &mut buf) {
            Ok(Some(got)) => got,
            // The host closed its end: its work is done.
            Ok(None) => return ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ikigai-tools {NAME}: {e}");
                return ExitCode::from(exec::SETUP_FAILED);
            }
        };
        let request = decode(&buf[..len]);
        let answer = if let (1, Some(request)) = (fds.len(), &request) {
            // A request with one descriptor asks for a worker, to serve on it.
            match fork_for_host() {
                Ok(0) => {
                    let socket = fds[0].as_raw_fd();
                    close_all_but(socket);
                    // Exits here: what this process held as the spawner
                    // (closed just now) is never dropped.
                    std::process::exit(worker::serve(socket, &request.args, host));
                }
                Ok(pid) => pid,
                Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
            }
        } else if fds.len() != 3 || request.is_none() {
            -libc::EINVAL
        } else {
            // A spare that could not be made, or whose tool process died
            // waiting, is made again once, now.
            let mut answer = -libc::EAGAIN;
            for _ in 0..2 {
                let current = match spare.take() {
                    Some(s) => s,
                    None => match Spare::make(host, scope.as_ref()) {
                        Ok(Made::Spare(s)) => s,
                        Ok(Made::Containment(code)) | Ok(Made::Tool(code)) => {
                            // In the forked processes these descriptors were
                            // closed already (`close_all_but`): not again.
                            std::mem::forget(fds);
                            return code;
                        }
                        Err(e) => {
                            answer = -e.raw_os_error().unwrap_or(libc::EIO);
                            break;
                        }
                    },
                };
                let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
                if send_with_fds(current.socket.as_raw_fd(), &buf[..len], &raw).is_ok() {
                    answer = current.containment;
                    break;
                }
            }
            answer
        };
        drop(fds);
        // SAFETY: writes four bytes from a live array.
        let sent = unsafe {
            libc::send(
                0,
                answer.to_le_bytes().as_ptr().cast(),
                4,
                libc::MSG_NOSIGNAL,
            )
        };
        if sent != 4 {
            return ExitCode::SUCCESS;
        }
    }
}

/// A call made in advance: a containment process (the host's child) and
/// its tool process, which waits for its request on `socket`.
struct Spare {
    containment: libc::pid_t,
    socket: OwnedFd,
}

/// Who returns from [`Spare::make`]: the spawner, with the spare; or, in
/// the processes it forked, the containment process or the tool, each with
/// the code its process ends with.
enum Made {
    Spare(Spare),
    Containment(ExitCode),
    Tool(ExitCode),
}

/// The spawner's arguments: none, or the scope each call asks for
/// (`--scope BUS --memory-total BYTES --processes N`, as `Spawner::start`
/// passes them).
fn scope_of(args: &[OsString]) -> Result<Option<scope::Spec>, String> {
    if args.is_empty() {
        return Ok(None);
    }
    let text: Vec<&str> = args.iter().filter_map(|a| a.to_str()).collect();
    match text[..] {
        ["--scope", bus, "--memory-total", memory, "--processes", tasks] => {
            let number = |what: &str, v: &str| {
                v.parse::<u64>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or(format!("{what} needs a number above 0, not '{v}'"))
            };
            let tasks = u32::try_from(number("--processes", tasks)?)
                .map_err(|_| format!("--processes {tasks} is too large"))?;
            Ok(Some(scope::Spec {
                bus: bus.to_string(),
                memory: number("--memory-total", memory)?,
                tasks,
            }))
        }
        _ => Err("takes no arguments but --scope BUS --memory-total BYTES --processes N".into()),
    }
}

impl Spare {
    fn make(host: libc::pid_t, scope: Option<&scope::Spec>) -> io::Result<Made> {
        let (ours, theirs) = socket_pair()?;
        let containment = fork_for_host()?;
        if containment > 0 {
            return Ok(Made::Spare(Spare {
                containment,
                socket: ours,
            }));
        }
        drop(ours);
        // Descriptors of a call being handed over while this spare was
        // made must not stay open here: the host waits for their end.
        close_all_but(theirs.as_raw_fd());
        // The containment process: the host's child, as `sandbox-exec`
        // would be, but unfenced: its tool fences itself once it knows the
        // call (this process runs nothing of the tool's).
        // SAFETY: getpid has no failure.
        let me = unsafe { libc::getpid() };
        // The call's scope, made now, before the call: the tool process
        // forked below is in it from its start. Its stderr line needs the
        // call's stderr, which only the tool process receives: it hands a
        // copy over on `handed`.
        let watched = scope.and_then(|spec| {
            let watch = scope::enter(spec, me as u32).ok()?;
            let (mine, its) = socket_pair().ok()?;
            set_nonblocking(&mine);
            Some((
                exec::Watched::new(watch, spec.clone(), exec::Report::Handed(mine)),
                its,
            ))
        });
        let (watched, handed) = match watched {
            Some((watched, its)) => (Some(watched), Some(its)),
            None => (None, None),
        };
        let signals = match exec::prepare(host) {
            Ok(signals) => signals,
            Err(code) => return Ok(Made::Containment(code)),
        };
        // SAFETY: plain calls on this process; fd 0 is the spawner's
        // socket to the host, which no call may hold.
        unsafe {
            libc::setpgid(0, 0);
            // What `ps` and `top` show: not the spawner's command line.
            libc::prctl(libc::PR_SET_NAME, c"ikigai-contain".as_ptr(), 0, 0, 0);
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            if null > 0 {
                libc::dup2(null, 0);
                libc::close(null);
            }
        };
        // SAFETY: this process is single-threaded; the child may run on.
        let tool = unsafe { libc::fork() };
        if tool < 0 {
            return Ok(Made::Containment(exec::fail(&format!(
                "cannot fork: {}",
                io::Error::last_os_error()
            ))));
        }
        if tool == 0 {
            drop(watched);
            exec::become_tool(&signals, me);
            return Ok(Made::Tool(tool_side(&theirs, handed)));
        }
        drop(theirs);
        drop(handed);
        Ok(Made::Containment(exec::see_through(
            &signals, tool, watched,
        )))
    }
}

/// Closes every descriptor above 2 except `keep`.
pub(super) fn close_all_but(keep: RawFd) {
    let keep = keep as libc::c_uint;
    // SAFETY: close_range(2) closes descriptors of this process only; none
    // of those it closes is used again (the spawner's are its parent's).
    let done = unsafe {
        (keep <= 3 || libc::syscall(libc::SYS_close_range, 3u32, keep - 1, 0u32) == 0)
            && libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32) == 0
    };
    if done {
        return;
    }
    // Kernels before 5.9: the open descriptors, from /proc.
    let open: Vec<RawFd> = std::fs::read_dir("/proc/self/fd")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    for fd in open {
        if fd > 2 && fd as libc::c_uint != keep {
            // SAFETY: as above.
            unsafe {
                libc::close(fd);
            }
        }
    }
}

/// The spare's tool process: waits for its call, takes the call's
/// descriptors as 0, 1 and 2, its environment and directory, fences itself
/// in, and becomes the tool.
fn tool_side(socket: &OwnedFd, handed: Option<OwnedFd>) -> ExitCode {
    // SAFETY: names this process, with a NUL-terminated name of 16 bytes.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"ikigai-tool".as_ptr(), 0, 0, 0);
    }
    let mut buf = vec![0u8; MAX_REQUEST];
    let (request, fds) = match receive(socket.as_raw_fd(), &mut buf) {
        Ok(Some((len, fds))) if fds.len() == 3 => match decode(&buf[..len]) {
            Some(request) => (request, fds),
            None => return ExitCode::from(exec::SETUP_FAILED),
        },
        // No call came: the spawner ended.
        _ => return ExitCode::SUCCESS,
    };
    drop(buf);
    for (target, fd) in fds.iter().enumerate() {
        // SAFETY: dup2 onto the standard descriptors of this process; the
        // received descriptors are all above 2 (0-2 were open when they
        // arrived), so none is overwritten before it is copied.
        if unsafe { libc::dup2(fd.as_raw_fd(), target as RawFd) } < 0 {
            return exec_failure(&format!(
                "cannot take the call's descriptors: {}",
                io::Error::last_os_error()
            ));
        }
    }
    // Only the copies stay open: the host sees end of file when the call's
    // processes have closed theirs.
    drop(fds);
    // The containment process writes on the call's stderr when the call
    // met its scope's limits; nothing else of the call's goes to it.
    if let Some(handed) = handed {
        let _ = send_with_fds(handed.as_raw_fd(), b"e", &[2]);
    }
    // SAFETY: this process is single-threaded; nothing reads the
    // environment concurrently.
    unsafe {
        libc::clearenv();
    }
    for pair in &request.env {
        let bytes = pair.as_bytes();
        if let Some(eq) = bytes.iter().position(|&b| b == b'=') {
            std::env::set_var(
                OsStr::from_bytes(&bytes[..eq]),
                OsStr::from_bytes(&bytes[eq + 1..]),
            );
        }
    }
    if let Err(e) = std::env::set_current_dir(&request.cwd) {
        return exec_failure(&format!(
            "cannot enter {}: {e}",
            Path::new(&request.cwd).display()
        ));
    }
    let parsed = match exec::parse(&request.args) {
        Ok(parsed) => parsed,
        Err(e) => return exec_failure(&e),
    };
    // Named after the tool in `ps` and `top` (an exec renames it anyway).
    if let Some(name) = Path::new(&parsed.program).file_name() {
        let mut name = name.as_bytes()[..name.len().min(15)].to_vec();
        name.push(0);
        // SAFETY: a NUL-terminated name of at most 16 bytes.
        unsafe {
            libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0);
        }
    }
    if let Err(e) = exec::fence_tool(&parsed.fence, parsed.best_effort) {
        return exec_failure(&e);
    }
    exec::run_tool(&parsed)
}

/// One decoded request.
pub(super) struct Request {
    pub cwd: OsString,
    pub args: Vec<OsString>,
    pub env: Vec<OsString>,
}

/// Forks a child whose parent is the host (`CLONE_PARENT`): 0 in the
/// child, its pid in the spawner.
fn fork_for_host() -> io::Result<libc::pid_t> {
    // SAFETY: clone without CLONE_VM and without a new stack behaves as
    // fork(2): the child runs on a copy of this single-threaded process.
    // glibc's fork handlers do not run, which a single-threaded process
    // holding no lock does not need.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_PARENT | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if pid < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(pid as libc::pid_t)
    }
}

fn exec_failure(what: &str) -> ExitCode {
    eprintln!("ikigai-tools {}: {what}", exec::NAME);
    ExitCode::from(exec::SETUP_FAILED)
}

/// The request's bytes, or None when it holds a NUL or does not fit.
pub(super) fn encode(
    cwd: &Path,
    args: &[OsString],
    env: &[(OsString, OsString)],
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(4096);
    let mut put = |part: &[u8]| -> Option<()> {
        if part.contains(&0) {
            return None;
        }
        out.extend_from_slice(part);
        out.push(0);
        Some(())
    };
    put(cwd.as_os_str().as_bytes())?;
    put(args.len().to_string().as_bytes())?;
    for arg in args {
        put(arg.as_bytes())?;
    }
    for (name, value) in env {
        let (name, value) = (name.as_bytes(), value.as_bytes());
        if name.contains(&0) || value.contains(&0) {
            return None;
        }
        out.extend_from_slice(name);
        out.push(b'=');
        out.extend_from_slice(value);
        out.push(0);
    }
    (out.len() <= MAX_REQUEST).then_some(out)
}

pub(super) fn decode(bytes: &[u8]) -> Option<Request> {
    let body = bytes.strip_suffix(&[0])?;
    let mut parts = body
        .split(|&b| b == 0)
        .map(|p| OsString::from_vec(p.to_vec()));
    let cwd = parts.next()?;
    let argc: usize = parts.next()?.to_str()?.parse().ok()?;
    let args: Vec<OsString> = parts.by_ref().take(argc).collect();
    if args.len() != argc {
        return None;
    }
    Some(Request {
        cwd,
        args,
        env: parts.collect(),
    })
}

pub(super) fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair fills the two-element array on success.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nothing else.
    let pair = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    for fd in [&pair.0, &pair.1] {
        // Failure leaves the default buffers, which only makes large
        // requests fail (and start the old way).
        set_option(fd, libc::SO_SNDBUF, &((MAX_REQUEST + 4096) as libc::c_int));
    }
    Ok(pair)
}

/// Makes `socket` return at once when nothing is waiting on it.
fn set_nonblocking(socket: &OwnedFd) {
    // SAFETY: fcntl on a descriptor this process owns.
    unsafe {
        let flags = libc::fcntl(socket.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(socket.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
}

/// Sets a socket-level option; best effort (see the callers).
fn set_option<T>(socket: &OwnedFd, option: libc::c_int, value: &T) {
    // SAFETY: setsockopt reads size_of::<T>() bytes from a live value of
    // the type the option expects.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        );
    }
}

/// Room for the control message carrying three descriptors.
const CONTROL_LEN: usize = 64;

pub(super) fn send_with_fds(socket: RawFd, data: &[u8], fds: &[RawFd]) -> io::Result<()> {
    let mut control = [0u8; CONTROL_LEN];
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: msghdr is plain data; every pointer set below is into a live
    // buffer of the length given, and CMSG_* compute within `control`.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        let fd_bytes = std::mem::size_of_val(fds) as u32;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(fd_bytes) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(fd_bytes) as _;
        std::ptr::copy_nonoverlapping(
            fds.as_ptr(),
            libc::CMSG_DATA(cmsg).cast::<RawFd>(),
            fds.len(),
        );
        loop {
            let n = libc::sendmsg(socket, &msg, libc::MSG_NOSIGNAL);
            if n >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// One message and the descriptors it carried; None at end of file.
pub(super) fn receive(socket: RawFd, buf: &mut [u8]) -> io::Result<Option<(usize, Vec<OwnedFd>)>> {
    let mut control = [0u8; CONTROL_LEN];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: as in `send_with_fds`; the descriptors read from the control
    // message are new ones the kernel installed for this process.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = CONTROL_LEN as _;
        let n = loop {
            let n = libc::recvmsg(socket, &mut msg, libc::MSG_CMSG_CLOEXEC);
            if n >= 0 {
                break n as usize;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        };
        let mut fds = Vec::new();
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                let count = ((*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                    / std::mem::size_of::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        if n == 0 && fds.is_empty() {
            return Ok(None);
        }
        if msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
            // Dropping `fds` closes what did arrive.
            return Ok(Some((0, Vec::new())));
        }
        Ok(Some((n, fds)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(items: &[&str]) -> Vec<OsString> {
        items.iter().map(OsString::from).collect()
    }

    #[test]
    fn requests_round_trip() {
        let env = vec![("A".into(), "1=2".into()), ("EMPTY".into(), "".into())];
        let bytes = encode(
            Path::new("/w d"),
            &os(&["--mode", "off", "--", "/bin/x", ""]),
            &env,
        )
        .unwrap();
        let request = decode(&bytes).unwrap();
        assert_eq!(request.cwd, "/w d");
        assert_eq!(request.args, os(&["--mode", "off", "--", "/bin/x", ""]));
        assert_eq!(request.env, os(&["A=1=2", "EMPTY="]));
        // Bytes that are not UTF-8 pass as they are, in every part.
        let raw = |b: &[u8]| OsString::from_vec(b.to_vec());
        let env = vec![(raw(b"N\xff"), raw(b"v\xfe"))];
        let bytes = encode(Path::new(&raw(b"/d\xff")), &[raw(b"a\x80")], &env).unwrap();
        let request = decode(&bytes).unwrap();
        assert_eq!(request.cwd, raw(b"/d\xff"));
        assert_eq!(request.args, [raw(b"a\x80")]);
        assert_eq!(request.env, [raw(b"N\xff=v\xfe")]);
    }

    #[test]
    fn bad_requests_are_refused() {
        assert!(encode(Path::new("/"), &os(&["a\0b"]), &[]).is_none());
        let nul_env = [(OsString::from("A"), OsString::from("x\0y"))];
        assert!(encode(Path::new("/"), &[], &nul_env).is_none());
        assert!(encode(
            Path::new("/"),
            &[OsString::from("x".repeat(MAX_REQUEST))],
            &[]
        )
        .is_none());
        // Empty; no count; three arguments announced, two given; a count that
        // is no number; no NUL at the end.
        let cases: [&[u8]; 5] = [b"", b"/\0", b"/\x003\0a\0b\0", b"/\0x\0", b"/\x001\0a"];
        for bytes in cases {
            assert!(decode(bytes).is_none(), "{bytes:?}");
        }
    }
}
