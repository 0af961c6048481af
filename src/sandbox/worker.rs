//! The sandbox's worker: a process, made by the spawner and fenced once,
//! that runs calls of our own tools one after another, each in the
//! worker's own process, instead of a new containment process and tool
//! process per call (docs/sandbox.md).
//!
//! Why: on a busy machine a process costs a few tenths of a millisecond to
//! start and end, and the containment process doubles it; a `file_read`
//! itself takes a twentieth of that. A worker serves only tools that start
//! no process and reach no network (every tool of ours but bash and the
//! web tools), and its seccomp filter refuses new processes, so nothing a
//! call does can outlive it: a worker holds decision 30 by construction,
//! with no containment process.
//!
//! What stays as for any call: the fence (built once, the same as a call's,
//! in the worker before it serves), the call's environment (its own, sent
//! with it and handed to the tool, never set in the process), its working
//! directory, its output caps, and its ending: the host stops a call that
//! runs too long or is cancelled by killing the worker, which then serves
//! no more. A worker whose writable directories were replaced
//! since it was fenced (Landlock holds the old ones) is not used again.
//!
//! The wire, on the `SOCK_SEQPACKET` socket the host sent with the request
//! that made the worker (one message each):
//!
//! - worker to host, once: ready, with the identity of each writable
//!   directory as the fence saw it (`DEV:INO`, or `-` for one that did not
//!   exist), NUL-terminated;
//! - host to worker, per call: the length of the call's input (four
//!   little-endian bytes), the input (the arguments' JSON), then the
//!   spawner's encoding of the directory, the program and its arguments,
//!   and the environment;
//! - worker to host, per call: the tool's output as it is written, each
//!   message a kind byte (`o` stdout, `e` stderr) and at most [`PIECE`]
//!   bytes, then `x` and the exit code as four little-endian bytes.
//!
//! No descriptors pass: the call's input and output ride on the socket,
//! which saves a call three pipes, their set-up and their wake-ups.

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use super::spawner::{self, decode, encode, receive};
use super::{exec, Fence};
use crate::runner::Streams;
use crate::tool::{Env, Family, Tool};

/// The most output bytes in one message.
pub const PIECE: usize = 32 * 1024;

/// Free heap memory a worker keeps between calls; above it, it gives the
/// rest back (trimming after every call would cost each call a heap grown
/// anew).
const KEEP_FREE: usize = 4 << 20;

/// A directory's identity (device, inode), or None when it does not exist.
type Identity = Option<(u64, u64)>;

/// Whether a worker runs `program` (a tool's file) in-process: our own
/// executable under the name of one of our tools that starts no process
/// and reaches no network.
pub fn serves(program: &Path) -> bool {
    exec::own_tool(program.as_os_str(), &[]).is_some_and(|(tool, _)| serves_tool(tool))
}

fn serves_tool(tool: &dyn Tool) -> bool {
    tool.family() == Family::Local && !tool.starts_processes()
}

fn identities(dirs: &[PathBuf]) -> Vec<Identity> {
    dirs.iter()
        .map(|d| std::fs::metadata(d).ok().map(|m| (m.dev(), m.ino())))
        .collect()
}

/// The host's side: a worker ready for a call, or running one.
pub struct Worker {
    socket: OwnedFd,
    pid: libc::pid_t,
    fence: Fence,
    /// What the fence's writable directories were when it was built.
    fenced: Vec<Identity>,
    /// Reaped already: its pid may name someone else now.
    reaped: bool,
}

/// What a worker's call said last (`Worker::next`).
pub enum Said<'b> {
    Out(&'b [u8]),
    Err(&'b [u8]),
    /// The call ended with this status (the worker's own, when it died).
    Ended(ExitStatus),
    /// Nothing yet.
    Nothing,
}

impl Worker {
    /// Takes charge of `pid`, a worker the spawner made as this process's
    /// child, serving on `socket`: waits for it to be fenced and ready.
    pub(super) fn ready(socket: OwnedFd, pid: libc::pid_t, fence: Fence) -> io::Result<Worker> {
        let mut worker = Worker {
            socket,
            pid,
            fence,
            fenced: Vec::new(),
            reaped: false,
        };
        let mut buf = [0u8; 4096];
        let (len, _) = receive(worker.socket.as_raw_fd(), &mut buf)?
            .ok_or_else(|| io::Error::other("the worker ended before it was ready"))?;
        let malformed = || io::Error::other("the worker's ready message is malformed");
        let body = buf[..len].strip_suffix(&[0]).unwrap_or_default();
        for part in body.split(|&c| c == 0).filter(|p| !p.is_empty()) {
            worker.fenced.push(match part {
                b"-" => None,
                _ => {
                    let text = std::str::from_utf8(part).map_err(|_| malformed())?;
                    let (dev, ino) = text.split_once(':').ok_or_else(malformed)?;
                    Some((
                        dev.parse().map_err(|_| malformed())?,
                        ino.parse().map_err(|_| malformed())?,
                    ))
                }
            });
        }
        if worker.fenced.len() != worker.fence.writable.len() {
            return Err(malformed());
        }
        Ok(worker)
    }

    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// Its fence still holds the writable directories as they are now.
    pub fn current(&self) -> bool {
        identities(&self.fence.writable) == self.fenced
    }

    /// Hands it a call: `program` (a file it `serves`) with `args`, `env`,
    /// `cwd` and `input`. Fails when the request does not fit in one
    /// message (E2BIG) or the worker is gone; then nothing ran.
    pub fn call(
        &self,
        program: &Path,
        args: &[OsString],
        env: &[(OsString, OsString)],
        cwd: &Path,
        input: &[u8],
    ) -> io::Result<()> {
        let argv: Vec<OsString> = std::iter::once(program.as_os_str().to_os_string())
            .chain(args.iter().cloned())
            .collect();
        let too_big = || io::Error::from_raw_os_error(libc::E2BIG);
        let rest = encode(cwd, &argv, env).ok_or_else(too_big)?;
        let len = u32::try_from(input.len()).map_err(|_| too_big())?;
        if 4 + input.len() + rest.len() > spawner::MAX_REQUEST {
            return Err(too_big());
        }
        let request = [&len.to_le_bytes()[..], input, &rest].concat();
        send(self.socket.as_raw_fd(), &request)
    }

    /// Polls readable when the call in hand has more to say (or the worker
    /// has ended).
    pub fn fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }

    /// The next thing the call in hand says, without waiting, read into
    /// `buf` (more than `PIECE` bytes). When the worker itself ended
    /// (crashed, killed), or said something it should not, its own status,
    /// reaped: it serves no more.
    pub fn next<'b>(&mut self, buf: &'b mut [u8]) -> Said<'b> {
        // SAFETY: reads into a buffer of the length given.
        let n = unsafe {
            libc::recv(
                self.socket.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) {
                return Said::Nothing;
            }
        }
        let message = &buf[..n.max(0) as usize];
        match message {
            [b'o', data @ ..] if !data.is_empty() => Said::Out(data),
            [b'e', data @ ..] if !data.is_empty() => Said::Err(data),
            [b'x', a, b, c, d] => {
                let code = i32::from_le_bytes([*a, *b, *c, *d]) & 0xff;
                Said::Ended(ExitStatus::from_raw(code << 8))
            }
            _ => {
                self.kill();
                Said::Ended(self.wait().unwrap_or(ExitStatus::from_raw(libc::SIGKILL)))
            }
        }
    }

    /// Kills the worker (and so the call in hand).
    pub fn kill(&mut self) {
        if !self.reaped {
            // SAFETY: kill(2) on our unreaped child: its pid is still ours.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
            }
        }
    }

    /// Waits for the worker to end (after a `kill`, or once its socket
    /// closed) and reaps it.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            let mut status = 0;
            // SAFETY: waitpid on our own child, with a valid status pointer.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r == self.pid {
                self.reaped = true;
                return Ok(ExitStatus::from_raw(status));
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                self.reaped = true;
                return Err(e);
            }
        }
    }

    /// It ended, or was killed: it serves no more calls.
    pub fn spent(&self) -> bool {
        self.reaped
    }
}

impl Drop for Worker {
    /// Ends the worker and reaps it, leaving no zombie.
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            let _ = self.wait();
        }
    }
}

/// The worker's side, in the process the spawner forked for it (a child of
/// `host`, descriptors above 2 closed but `socket`): fences itself as
/// `fence_args` say and serves calls until the host closes the socket.
/// Returns the code to exit with.
pub(super) fn serve(socket: RawFd, fence_args: &[OsString], host: libc::pid_t) -> i32 {
    // SAFETY: plain calls on this process.
    unsafe {
        libc::setpgid(0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        libc::prctl(libc::PR_SET_NAME, c"ikigai-worker".as_ptr(), 0, 0, 0);
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        if libc::getppid() != host {
            return exec::SETUP_FAILED.into();
        }
        // Fd 0 is still the spawner's socket to the host, which no call
        // may hold; stdout is /dev/null, stderr the host's, where a fence
        // that cannot be built is reported.
        libc::close(0);
        if libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) != 0 {
            return exec::SETUP_FAILED.into();
        }
    }
    let (fence, best_effort) = match exec::parse_fence(&mut fence_args.iter()) {
        Ok(parsed) => parsed,
        Err(e) => return setup_failed(&e),
    };
    let before = identities(&fence.writable);
    if let Err(e) = exec::build_fence(&fence, best_effort, exec::Layers::ALONE) {
        return setup_failed(&e);
    }
    // A directory replaced while the fence was built: the fence may hold
    // the old one. The host makes another worker.
    if identities(&fence.writable) != before {
        return setup_failed("a writable directory changed while the fence was built");
    }
    let mut ready = Vec::new();
    for id in &before {
        match id {
            Some((dev, ino)) => ready.extend_from_slice(format!("{dev}:{ino}").as_bytes()),
            None => ready.push(b'-'),
        }
        ready.push(0);
    }
    if send(socket, &ready).is_err() {
        return 0;
    }
    // A tool that panics ends its worker as it would end its own process:
    // the message on the call's stderr, exit code 101. (Ended here, not
    // unwound: the spawner's frames below hold descriptors closed since.)
    std::panic::set_hook(Box::new(move |info| {
        let _ = send(socket, format!("e{info}\n").as_bytes());
        // SAFETY: _exit ends the process at once, as intended.
        unsafe { libc::_exit(101) }
    }));
    let mut buf = vec![0u8; spawner::MAX_REQUEST];
    // The environment of the last call: most calls bring the same one.
    let mut last_env: Option<(Vec<u8>, Env)> = None;
    loop {
        let len = match receive(socket, &mut buf) {
            Ok(Some((len, _))) => len,
            // The host closed its end: its work is done.
            Ok(None) => return 0,
            Err(e) => return setup_failed(&e.to_string()),
        };
        let Some(code) = serve_one(socket, &buf[..len], &mut last_env) else {
            return setup_failed("a malformed request");
        };
        if send(
            socket,
            &[&b"x"[..], &i32::from(code).to_le_bytes()].concat(),
        )
        .is_err()
        {
            return 0;
        }
        // A call that needed much memory (a large file, many matches)
        // leaves it free but held: given back, so an idle worker is small.
        // SAFETY: mallinfo2 and malloc_trim only read and trim the heap.
        unsafe {
            if libc::mallinfo2().fordblks > KEEP_FREE {
                libc::malloc_trim(0);
            }
        }
    }
}

/// Runs one call from its request; None when the request is malformed.
fn serve_one(socket: RawFd, request: &[u8], last_env: &mut Option<(Vec<u8>, Env)>) -> Option<u8> {
    let (len, rest) = request.split_first_chunk::<4>()?;
    let len = u32::from_le_bytes(*len) as usize;
    let input = rest.get(..len)?;
    let encoded = &rest[len..];
    let request = decode(encoded)?;
    let (program, args) = request.args.split_first()?;
    let mut out = Pieces::new(socket, b'o');
    let mut err = Pieces::new(socket, b'e');
    if let Err(e) = std::env::set_current_dir(&request.cwd) {
        let _ = writeln!(
            err,
            "ikigai-tools worker: cannot enter {}: {e}",
            Path::new(&request.cwd).display()
        );
        let _ = err.flush();
        return Some(exec::SETUP_FAILED);
    }
    let env_bytes = env_part(encoded, request.args.len());
    if last_env
        .as_ref()
        .is_none_or(|(bytes, _)| bytes != env_bytes)
    {
        let env = Env::from_entries(request.env.iter().map(|e| e.as_bytes()));
        *last_env = Some((env_bytes.to_vec(), env));
    }
    // The host sends only files that are this executable under a tool's
    // name (`serves`, checked for each call): the name says which.
    let code = match exec::tool_named(program, args) {
        Some((tool, rest)) if serves_tool(tool) => {
            let mut streams = Streams {
                input: Some(input),
                out: &mut out,
                err: &mut err,
            };
            let env = last_env.as_ref().map(|(_, env)| env);
            crate::runner::run_with(tool, &rest, env.unwrap_or(&Env::default()), &mut streams)
        }
        _ => {
            let _ = writeln!(
                err,
                "ikigai-tools worker: {} is not a tool a worker runs",
                Path::new(program).display()
            );
            exec::SETUP_FAILED
        }
    };
    let _ = out.flush();
    let _ = err.flush();
    Some(code)
}

/// The environment's part of an encoded request (after the directory, the
/// count and the `argc` arguments), to compare with the last call's.
fn env_part(encoded: &[u8], argc: usize) -> &[u8] {
    let mut rest = encoded;
    for _ in 0..argc + 2 {
        match rest.iter().position(|&b| b == 0) {
            Some(end) => rest = &rest[end + 1..],
            None => return &[],
        }
    }
    rest
}

/// A call's stdout or stderr: what the tool writes, sent to the host in
/// messages of at most `PIECE` bytes.
struct Pieces {
    socket: RawFd,
    buf: Vec<u8>,
}

impl Pieces {
    fn new(socket: RawFd, kind: u8) -> Pieces {
        let mut buf = Vec::with_capacity(PIECE + 1);
        buf.push(kind);
        Pieces { socket, buf }
    }
}

impl Write for Pieces {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = data.len().min(PIECE + 1 - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == PIECE + 1 {
            self.flush()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buf.len() > 1 {
            send(self.socket, &self.buf)?;
            self.buf.truncate(1);
        }
        Ok(())
    }
}

fn setup_failed(what: &str) -> i32 {
    eprintln!("ikigai-tools worker: {what}");
    exec::SETUP_FAILED.into()
}

fn send(socket: RawFd, bytes: &[u8]) -> io::Result<()> {
    loop {
        // SAFETY: writes `bytes.len()` bytes from a live slice.
        let n = unsafe {
            libc::send(
                socket,
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n == bytes.len() as isize {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if n >= 0 || e.kind() != io::ErrorKind::Interrupted {
            return Err(if n >= 0 {
                io::Error::from(io::ErrorKind::WriteZero)
            } else {
                e
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_part_follows_the_arguments() {
        let env = [("A".into(), "1".into()), ("B".into(), "2".into())];
        let args = [OsString::from("/bin/x"), OsString::from("y")];
        let encoded = encode(Path::new("/d"), &args, &env).unwrap();
        assert_eq!(env_part(&encoded, 2), b"A=1\0B=2\0");
        let bare = encode(Path::new("/d"), &args, &[]).unwrap();
        assert_eq!(env_part(&bare, 2), b"");
        assert_eq!(env_part(b"/d\0", 2), b"");
    }
}
