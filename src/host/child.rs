//! A tool process run well (decisions 4 and 9): its own process group, so one
//! `killpg` reaches its grandchildren; its stdin fed, its stdout and stderr
//! drained, all at once by one poll(2) loop, so neither side ever blocks on a
//! full pipe; each output kept up to a cap (its head and its tail) while the
//! rest is counted and dropped. Discovery pumps many of these together; a
//! tool call pumps one.
//!
//! A tool call runs inside a containment process (`ikigai-tools
//! sandbox-exec`), which outlives every process of the call: the host stops
//! such a call with SIGTERM to that process alone, which kills everything
//! the call started (even processes that left the group) and then exits.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{self, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::capture::HeadTail;
use crate::sandbox::worker::{Said, Worker};

/// How long pipes may stay open after the tool itself exited (a background
/// process it left may hold them): then the host stops reading.
const EXIT_GRACE: Duration = Duration::from_millis(200);
/// How long the host keeps draining after killing a group: a process that
/// escaped the group (`setsid`) and holds a pipe must not hang the host.
const KILL_DRAIN: Duration = Duration::from_millis(250);
/// While pipes are closed but the exit is not yet seen, look again this often.
const REAP_POLL: Duration = Duration::from_millis(2);
/// Without a pidfd (kernels before 5.3), how often to look for an exit while
/// the pipes stay open.
const EXIT_POLL: Duration = Duration::from_millis(50);
const CHUNK: usize = 64 * 1024;

/// What was kept of one output stream: at most `cap` bytes, the first half
/// and the last half when there was more, and the total count.
#[derive(Debug, Clone)]
pub struct Capture {
    cap: usize,
    kept: HeadTail,
}

impl Capture {
    pub fn new(cap: usize) -> Self {
        let head = cap.div_ceil(2);
        Capture {
            cap,
            kept: HeadTail::new(head, cap - head),
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        self.kept.push(data);
    }

    /// Bytes the stream carried in all.
    pub fn total(&self) -> u64 {
        self.kept.total()
    }

    /// Bytes dropped from the middle.
    pub fn omitted(&self) -> u64 {
        self.kept.omitted()
    }

    pub fn truncated(&self) -> bool {
        self.omitted() > 0
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// The whole stream, when nothing was dropped.
    pub fn complete(&self) -> Option<Vec<u8>> {
        (!self.truncated()).then(|| [self.kept.head(), &self.kept.tail()].concat())
    }

    /// The kept text; when bytes were dropped, a line in their place says how
    /// many, so the reader never mistakes a cut output for a whole one.
    pub fn text(&self) -> String {
        let head = String::from_utf8_lossy(self.kept.head());
        let tail = self.kept.tail();
        if !self.truncated() {
            return head.into_owned() + &String::from_utf8_lossy(&tail);
        }
        format!(
            "{head}\n[... {} of {} bytes omitted: output exceeds the {}-byte cap ...]\n{}",
            self.omitted(),
            self.total(),
            self.cap,
            String::from_utf8_lossy(&tail)
        )
    }
}

/// The process a `Proc` runs: one std started, one made for the host by
/// the sandbox's spawner (our child all the same, reaped here by pid), or
/// a sandbox worker serving the call in its own process (which outlives a
/// call that ends well, and says how it ended over its socket).
enum Leader {
    Spawned(process::Child),
    Adopted(libc::pid_t),
    /// Boxed: a worker holds its fence, many times a pid's size.
    Served(Box<Worker>),
}

impl Leader {
    fn id(&self) -> u32 {
        match self {
            Leader::Spawned(child) => child.id(),
            Leader::Adopted(pid) => *pid as u32,
            Leader::Served(worker) => worker.pid() as u32,
        }
    }

    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match self {
            Leader::Spawned(child) => child.try_wait(),
            Leader::Adopted(pid) => wait_pid(*pid, libc::WNOHANG),
            // What a worker's call says is read as it comes (`service`).
            Leader::Served(_) => Ok(None),
        }
    }

    fn wait(&mut self) -> io::Result<ExitStatus> {
        match self {
            Leader::Spawned(child) => child.wait(),
            Leader::Adopted(pid) => {
                wait_pid(*pid, 0)?.ok_or_else(|| io::Error::from(io::ErrorKind::WouldBlock))
            }
            Leader::Served(worker) => worker.wait(),
        }
    }
}

/// waitpid(2) on our child `pid`: its status once it has ended.
fn wait_pid(pid: libc::pid_t, flags: libc::c_int) -> io::Result<Option<ExitStatus>> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid on our own child, with a valid status pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        if r == pid {
            return Ok(Some(ExitStatus::from_raw(status)));
        }
        if r == 0 {
            return Ok(None);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// A running process and its pipes.
pub struct Proc {
    child: Leader,
    stdin: Option<File>,
    input: Vec<u8>,
    written: usize,
    stdout: Option<File>,
    stderr: Option<File>,
    /// Readable when the process exits, so an exit wakes the poll even while
    /// a background process it left keeps the pipes open.
    pidfd: Option<OwnedFd>,
    pub out: Capture,
    pub err: Capture,
    /// Sees every piece of output as it is read (the assistant shows a
    /// running tool's output live).
    watch: Option<Watch>,
    /// `watch` sees stdout too (a background job's watch sees only the
    /// stderr its bash copies the command's output to: docs/decisions.md 104).
    watch_stdout: bool,
    status: Option<ExitStatus>,
    exited_at: Option<Instant>,
    killed_at: Option<Instant>,
    /// The group has had its SIGKILL (at the deadline, on a cancel, or when
    /// the leader exited).
    group_killed: bool,
    /// The process is a containment process: stopped by SIGTERM, which it
    /// passes on to everything the call started.
    contained: bool,
    started: Instant,
}

/// An observer of a process's output as it is read.
pub type Watch = Box<dyn FnMut(&[u8]) + Send>;

/// What a finished process left.
pub struct Finished {
    /// None only when the process could not be reaped at all.
    pub status: Option<ExitStatus>,
    pub out: Capture,
    pub err: Capture,
    /// The worker that served the call, when it can serve another.
    pub worker: Option<Worker>,
}

#[derive(Clone, Copy)]
enum Pipe {
    In,
    Out,
    Err,
    Exit,
}

impl Proc {
    /// Starts `program` with `args` in a new process group, with the host's
    /// environment less its secrets. With `input`, stdin is a pipe fed that
    /// text and then closed; without, `/dev/null`.
    pub fn spawn(
        program: &Path,
        args: &[&OsStr],
        input: Option<Vec<u8>>,
        out_cap: usize,
        err_cap: usize,
    ) -> io::Result<Proc> {
        let mut cmd = process::Command::new(program);
        cmd.args(args)
            .env_clear()
            .envs(crate::sandbox::secrets::base_env(std::env::vars_os()));
        Proc::start(cmd, input, out_cap, err_cap, false)
    }

    /// Starts `cmd` (its program, arguments and environment set) in a new
    /// process group, as `spawn` does. `contained`: `cmd` runs a
    /// containment process (see the module's note).
    pub fn start(
        mut cmd: process::Command,
        input: Option<Vec<u8>>,
        out_cap: usize,
        err_cap: usize,
        contained: bool,
    ) -> io::Result<Proc> {
        // Tells our tools to fit their answers into the cap (see
        // `truncate`), so a long output still arrives as valid JSON.
        cmd.env(crate::env::MAX_OUTPUT_VAR, out_cap.to_string())
            .process_group(0)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn()?;
        let pipes = [
            child.stdin.take().map(OwnedFd::from),
            child.stdout.take().map(OwnedFd::from),
            child.stderr.take().map(OwnedFd::from),
        ];
        for fd in pipes.iter().flatten() {
            set_nonblocking(fd.as_raw_fd())?;
        }
        Ok(Proc::with(
            Leader::Spawned(child),
            pipes,
            input,
            (out_cap, err_cap),
            contained,
        ))
    }

    /// Takes charge of `pid`, a containment process that the sandbox's
    /// spawner started as this process's child, with the host's ends of its
    /// pipes (`stdin` only when `input` is to be fed), already non-blocking
    /// (see [`set_nonblocking`]).
    pub fn adopt(
        pid: libc::pid_t,
        stdin: Option<OwnedFd>,
        stdout: OwnedFd,
        stderr: OwnedFd,
        input: Option<Vec<u8>>,
        out_cap: usize,
        err_cap: usize,
    ) -> Proc {
        Proc::with(
            Leader::Adopted(pid),
            [stdin, Some(stdout), Some(stderr)],
            input,
            (out_cap, err_cap),
            true,
        )
    }

    /// Takes charge of a call that `worker` was handed (with its input):
    /// its output and its end come over the worker's socket.
    pub fn serve(worker: Worker, out_cap: usize, err_cap: usize) -> Proc {
        Proc::with(
            Leader::Served(Box::new(worker)),
            [None, None, None],
            None,
            (out_cap, err_cap),
            false,
        )
    }

    fn with(
        child: Leader,
        [stdin, stdout, stderr]: [Option<OwnedFd>; 3],
        input: Option<Vec<u8>>,
        (out_cap, err_cap): (usize, usize),
        contained: bool,
    ) -> Proc {
        // A worker's socket says when the call ended.
        let pidfd = match child {
            Leader::Served(_) => None,
            _ => pidfd_open(child.id()),
        };
        let mut proc = Proc {
            child,
            stdin: stdin.map(File::from),
            input: input.unwrap_or_default(),
            written: 0,
            pidfd,
            stdout: stdout.map(File::from),
            stderr: stderr.map(File::from),
            out: Capture::new(out_cap),
            err: Capture::new(err_cap),
            watch: None,
            watch_stdout: true,
            status: None,
            exited_at: None,
            killed_at: None,
            group_killed: false,
            contained,
            started: Instant::now(),
        };
        if proc.input.is_empty() {
            proc.stdin = None;
        }
        proc
    }

    /// Hands each piece of stdout and stderr to `watch` as it is read.
    pub fn watch(&mut self, watch: Watch) {
        self.watch = Some(watch);
    }

    /// Hands each piece of stderr alone to `watch`: stdout holds the
    /// tool's answer, which is not output of the command it ran.
    pub fn watch_stderr(&mut self, watch: Watch) {
        self.watch = Some(watch);
        self.watch_stdout = false;
    }

    pub fn started(&self) -> Instant {
        self.started
    }

    /// The process itself has exited (its pipes may still be open).
    pub fn exited(&self) -> bool {
        self.status.is_some()
    }

    pub fn killed(&self) -> bool {
        self.killed_at.is_some()
    }

    /// Stops the process and all it started: SIGKILL to its whole group, or,
    /// for a containment process, SIGTERM to it alone (it ends the rest).
    /// Only while the leader is unreaped: its pid, the group's id, cannot
    /// have been reused.
    pub fn kill(&mut self) {
        if self.status.is_none() && self.killed_at.is_none() {
            if self.contained {
                // SAFETY: kill(2) on our unreaped child.
                unsafe {
                    libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
                }
            } else {
                self.kill_group();
            }
            self.killed_at = Some(Instant::now());
        }
        self.stdin = None;
    }

    fn kill_group(&mut self) {
        if !self.group_killed {
            // SAFETY: kill(2) with a negative pid signals that process group.
            unsafe {
                libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL);
            }
            self.group_killed = true;
        }
    }

    fn pipes_open(&self) -> bool {
        self.stdout.is_some() || self.stderr.is_some()
    }

    /// Nothing more will come: exited (or killed) and its pipes are closed or
    /// have had their time.
    pub fn settled(&self, now: Instant) -> bool {
        if let Some(killed) = self.killed_at {
            return (self.status.is_some() && !self.pipes_open()) || now >= killed + KILL_DRAIN;
        }
        match self.exited_at {
            Some(exited) => !self.pipes_open() || now >= exited + EXIT_GRACE,
            None => false,
        }
    }

    /// What polls readable when the call ends: the pidfd of its process,
    /// or its worker's socket.
    fn exit_fd(&self) -> Option<RawFd> {
        match &self.child {
            Leader::Served(worker) => Some(worker.fd()),
            _ => self.pidfd.as_ref().map(AsRawFd::as_raw_fd),
        }
    }

    /// When this process needs looking at even if no pipe is ready.
    fn wake_at(&self, now: Instant) -> Option<Instant> {
        // With a pidfd the exit itself wakes the poll; without, look often
        // once the pipes are closed (the exit is imminent), now and then
        // while they are open.
        let look = match (self.status, self.exit_fd()) {
            (Some(_), _) | (None, Some(_)) => None,
            (None, None) if !self.pipes_open() => Some(now + REAP_POLL),
            (None, None) => Some(now + EXIT_POLL),
        };
        let limit = match (self.killed_at, self.exited_at) {
            (Some(killed), _) => Some(killed + KILL_DRAIN),
            (None, Some(exited)) => Some(exited + EXIT_GRACE),
            (None, None) => None,
        };
        match (look, limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn register(&self, index: usize, fds: &mut Vec<libc::pollfd>, map: &mut Vec<(usize, Pipe)>) {
        let mut add = |fd: RawFd, events: libc::c_short, pipe: Pipe| {
            fds.push(libc::pollfd {
                fd,
                events,
                revents: 0,
            });
            map.push((index, pipe));
        };
        if let Some(p) = &self.stdin {
            add(p.as_raw_fd(), libc::POLLOUT, Pipe::In);
        }
        if let Some(p) = &self.stdout {
            add(p.as_raw_fd(), libc::POLLIN, Pipe::Out);
        }
        if let Some(p) = &self.stderr {
            add(p.as_raw_fd(), libc::POLLIN, Pipe::Err);
        }
        if let (Some(fd), None) = (self.exit_fd(), self.status) {
            add(fd, libc::POLLIN, Pipe::Exit);
        }
    }

    fn service(&mut self, pipe: Pipe, revents: libc::c_short, buf: &mut [u8]) {
        match pipe {
            Pipe::In => self.feed(revents),
            Pipe::Out => {
                let watch = if self.watch_stdout {
                    &mut self.watch
                } else {
                    &mut None
                };
                if drain(self.stdout.as_mut(), &mut self.out, buf, watch) {
                    self.stdout = None;
                }
            }
            Pipe::Err => {
                if drain(self.stderr.as_mut(), &mut self.err, buf, &mut self.watch) {
                    self.stderr = None;
                }
            }
            Pipe::Exit => self.hear(buf),
        }
    }

    /// Reads what a worker's call said: its output, and how it ended. (A
    /// process's exit is reaped right after, in `reap`.)
    fn hear(&mut self, buf: &mut [u8]) {
        let Leader::Served(worker) = &mut self.child else {
            return;
        };
        // A bounded number, as in `drain`.
        for _ in 0..16 {
            match worker.next(buf) {
                Said::Out(data) => {
                    self.out.push(data);
                    if let Some(watch) = &mut self.watch {
                        watch(data);
                    }
                }
                Said::Err(data) => {
                    self.err.push(data);
                    if let Some(watch) = &mut self.watch {
                        watch(data);
                    }
                }
                Said::Ended(status) => {
                    self.status = Some(status);
                    self.exited_at = Some(Instant::now());
                    return;
                }
                Said::Nothing => return,
            }
        }
    }

    /// Writes what the pipe takes. A tool that exits without reading its
    /// input closes the pipe: that is its right, not an error (EPIPE).
    fn feed(&mut self, revents: libc::c_short) {
        let Some(pipe) = self.stdin.as_mut() else {
            return;
        };
        if revents & libc::POLLOUT == 0 {
            self.stdin = None;
            return;
        }
        while self.written < self.input.len() {
            match pipe.write(&self.input[self.written..]) {
                Ok(0) => break,
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => break,
            }
        }
        self.stdin = None;
    }

    /// Collects the exit of a leader that has exited. Before reaping it, the
    /// rest of its group is killed: background jobs a tool left must never
    /// outlive the call, and while the leader is an unreaped zombie its pid,
    /// the group's id, cannot name anyone else's processes.
    fn reap(&mut self) {
        if let Leader::Served(_) = self.child {
            // A call served by a worker started no process (the worker's
            // filter refuses them): there is no group to kill, and its end
            // is read with its output (`service`).
            return;
        }
        if self.status.is_none() {
            match leader_exited(self.child.id()) {
                Some(false) => return,
                Some(true) => self.kill_group(),
                // Cannot look without reaping: reap, and kill nothing.
                None => self.group_killed = true,
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                self.status = Some(status);
                self.exited_at = Some(Instant::now());
            }
        }
    }

    /// Closes the pipes and collects the exit status (the process is
    /// settled: exited, or killed and about to be).
    pub fn finish(mut self) -> Finished {
        self.stdin = None;
        self.stdout = None;
        self.stderr = None;
        if self.status.is_none() {
            if self.killed_at.is_none() {
                self.kill();
            }
            if self.contained {
                // A containment process that has not ended within the
                // drain time after its SIGTERM is stuck: end it.
                self.kill_group();
            }
            self.status = self.child.wait().ok();
        } else if !matches!(self.child, Leader::Served(_)) {
            self.kill_group();
        }
        let worker = match self.child {
            Leader::Served(worker) if !worker.spent() => Some(*worker),
            _ => None,
        };
        Finished {
            status: self.status,
            out: self.out,
            err: self.err,
            worker,
        }
    }
}

/// Reads what is there; true when the pipe is finished (end of file or error).
fn drain<R: Read>(
    pipe: Option<&mut R>,
    into: &mut Capture,
    buf: &mut [u8],
    watch: &mut Option<Watch>,
) -> bool {
    let Some(pipe) = pipe else {
        return false;
    };
    // A bounded number of reads, so one chatty process cannot starve the rest.
    for _ in 0..16 {
        match pipe.read(buf) {
            Ok(0) => return true,
            Ok(n) => {
                into.push(&buf[..n]);
                if let Some(watch) = watch {
                    watch(&buf[..n]);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
    false
}

/// Whether the process `pid` (our child) has exited, without reaping it;
/// None when waitid(2) fails.
fn leader_exited(pid: u32) -> Option<bool> {
    peek_exit(pid).map(|status| status.is_some())
}

/// How our child `pid` ended, if it has, without reaping it: while it is
/// unreaped its pid, and so the id of the group it leads, cannot be reused,
/// and signalling that group reaches no one else's processes. None when
/// waitid(2) fails.
pub fn peek_exit(pid: u32) -> Option<Option<ExitStatus>> {
    // SAFETY: siginfo_t is plain data; zeroed, its si_pid stays 0 when
    // WNOHANG finds no change.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid on our own child with a valid siginfo_t; WNOWAIT leaves
    // it waitable for `Child::try_wait`.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT | libc::WNOHANG,
        )
    };
    if r != 0 {
        return None;
    }
    // SAFETY: waitid filled (or left zeroed) the fields these read.
    let (from, status) = unsafe { (info.si_pid(), info.si_status()) };
    if from == 0 {
        return Some(None);
    }
    // The wait status waitpid would give: the code in the second byte, or
    // the signal in the low bits.
    let raw = match info.si_code {
        libc::CLD_EXITED => (status & 0xff) << 8,
        libc::CLD_DUMPED => status | 0x80,
        _ => status,
    };
    Some(Some(ExitStatus::from_raw(raw)))
}

/// A descriptor that polls readable once `pid` exits, where the kernel has
/// pidfd_open(2).
fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // (close-on-exec by definition) or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a non-negative result is a descriptor that nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor this process owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// One round for all `procs`: waits until a pipe is ready, `until` comes, or
/// a process needs looking at; moves what is ready; notes who exited.
pub fn step(procs: &mut [&mut Proc], until: Instant) {
    let now = Instant::now();
    let mut wake = until;
    let mut fds = Vec::new();
    let mut map = Vec::new();
    for (i, p) in procs.iter().enumerate() {
        if let Some(at) = p.wake_at(now) {
            wake = wake.min(at);
        }
        p.register(i, &mut fds, &mut map);
    }
    let wait = wake.saturating_duration_since(now);
    if fds.is_empty() {
        std::thread::sleep(wait);
    } else {
        let ms = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if ready > 0 {
            // One buffer per thread, not one zeroed per round: a small call
            // takes several rounds.
            thread_local! {
                static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
            }
            BUF.with_borrow_mut(|buf| {
                buf.resize(CHUNK, 0);
                for (fd, &(i, pipe)) in fds.iter().zip(&map) {
                    if fd.revents != 0 {
                        procs[i].service(pipe, fd.revents, buf);
                    }
                }
            });
        }
    }
    for p in procs.iter_mut() {
        p.reap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_everything_under_the_cap() {
        let mut c = Capture::new(10);
        c.push(b"abc");
        c.push(b"defghij");
        assert_eq!(c.complete().unwrap(), b"abcdefghij");
        assert!(!c.truncated());
        assert_eq!(c.text(), "abcdefghij");
    }

    #[test]
    fn capture_keeps_head_and_tail_and_counts_the_rest() {
        let mut c = Capture::new(6);
        for chunk in [&b"12345"[..], b"6789", b"abcdefg", b"XYZ"] {
            c.push(chunk);
        }
        assert_eq!(c.total(), 19);
        assert_eq!(c.omitted(), 13);
        assert!(c.complete().is_none());
        assert_eq!(
            c.text(),
            "123\n[... 13 of 19 bytes omitted: output exceeds the 6-byte cap ...]\nXYZ"
        );
        let mut big = Capture::new(4);
        big.push(&[b'x'; 1000]);
        assert_eq!(
            big.text().len(),
            "xx\n[... 996 of 1000 bytes omitted: output exceeds the 4-byte cap ...]\nxx".len()
        );
    }

    #[test]
    fn an_exit_is_seen_without_reaping() {
        use std::os::unix::process::ExitStatusExt;
        for (script, code, signal) in [("exit 3", Some(3), None), ("kill -9 $$", None, Some(9))] {
            let mut child = process::Command::new("sh")
                .args(["-c", script])
                .spawn()
                .unwrap();
            let seen = loop {
                match peek_exit(child.id()) {
                    Some(None) => std::thread::sleep(Duration::from_millis(5)),
                    other => break other.flatten().unwrap(),
                }
            };
            assert_eq!((seen.code(), seen.signal()), (code, signal), "{script}");
            // Still ours to reap, with the same status.
            assert_eq!(child.wait().unwrap(), seen);
        }
    }

    #[test]
    fn capture_of_one_byte() {
        let mut c = Capture::new(1);
        c.push(b"ab");
        assert_eq!(
            (c.omitted(), c.kept.head().len(), c.kept.tail().len()),
            (1, 1, 0)
        );
    }
}
