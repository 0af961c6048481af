//! `ikigai-tools sandbox-exec`: the process between the host and one tool
//! call. It fences itself in (Landlock, seccomp), starts the tool as its
//! child, and stays as the call's containment process:
//!
//! - it is a child subreaper, so every process the tool leaves behind, even
//!   one that called `setsid` or forked twice to leave its parent, is
//!   re-parented to it rather than to init, and stays findable;
//! - when the tool ends, it kills every descendant left and reaps them, then
//!   ends the way the tool ended (its code, or the same signal), so the
//!   host's envelope reads as if it had run the tool itself;
//! - SIGTERM, SIGINT or SIGHUP (the host stopping the call) kill everything
//!   the same way; and the host's death, even by SIGKILL, sends it SIGTERM
//!   (`PR_SET_PDEATHSIG`), so a dead host leaves no tool running.
//!
//! Our own tool that starts no process skips all of this (decision 109):
//! it cannot leave anything behind, so it runs in this very process, behind
//! the same fence and a filter that refuses it any new process.
//!
//! The fence is built before the fork, in this single-threaded process, so
//! the child only has to exec. The tool gets its own process group, so a
//! `kill 0` in the tool cannot reach this process. When the program is this
//! very executable under a tool's name (every tool of ours), the child does
//! not exec it again: it runs the tool's personality itself, which saves the
//! cost of starting the binary a second time (most of this process's cost).
//!
//! Usage: `ikigai-tools sandbox-exec [--mode M] [--writable DIR]...
//! [--network] [--hide PATH]... [--allow-read PATH]... [--protect PATH]...
//! [--socket-dir DIR]... [--allow-socket PATH]... [--no-namespace]
//! [--processes N] [--memory BYTES] [--file-size BYTES]
//! [--memory-total BYTES] [--scope BUS] [--best-effort] -- PROGRAM
//! [ARGS...]` (the paths are `Guard`'s, the numbers `Limits`', the bus the
//! one to ask for the call's scope on). Without
//! `--best-effort`, a fence the kernel cannot build is an error (exit 125)
//! and the program does not run: a call never runs unsandboxed silently.

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::OnceLock;

use super::limits::{self, Limits};
use super::{caps, landlock, namespace, scope, seccomp, Fence, Guard, Mode};
use std::os::fd::AsRawFd;

/// A limit read from the command line, into its own type.
trait SetLimit {
    fn set(&mut self, value: u64) -> Result<(), String>;
}

impl SetLimit for u64 {
    fn set(&mut self, value: u64) -> Result<(), String> {
        *self = value;
        Ok(())
    }
}

impl SetLimit for u32 {
    fn set(&mut self, value: u64) -> Result<(), String> {
        *self = u32::try_from(value).map_err(|_| format!("{value} is too large"))?;
        Ok(())
    }
}

/// The exit code when sandbox-exec itself fails (bad usage, a fence that
/// cannot be built), as `env` and `timeout` use 125.
pub const SETUP_FAILED: u8 = 125;

/// The personality's name, as the first argument of `ikigai-tools`.
pub const NAME: &str = "sandbox-exec";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
pub struct Request {
    pub fence: Fence,
    /// Apply what the kernel supports and skip the rest (the host has told
    /// the user the sandbox is incomplete).
    pub best_effort: bool,
    pub program: OsString,
    pub args: Vec<OsString>,
}

/// The arguments the host passes for `fence`, up to and including `--`.
pub fn arguments(fence: &Fence, best_effort: bool) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![NAME.into(), "--mode".into(), fence.mode.as_str().into()];
    for dir in &fence.writable {
        args.push("--writable".into());
        args.push(dir.into());
    }
    if fence.network {
        args.push("--network".into());
    }
    let guard = &fence.guard;
    for (option, paths) in [
        ("--hide", &guard.hide),
        ("--allow-read", &guard.allow_read),
        ("--protect", &guard.protect),
        ("--socket-dir", &guard.socket_dirs),
        ("--allow-socket", &guard.sockets),
    ] {
        for path in paths {
            args.push(option.into());
            args.push(path.into());
        }
    }
    if !guard.namespace {
        args.push("--no-namespace".into());
    }
    let limits = &fence.limits;
    for (option, value) in [
        ("--processes", u64::from(limits.processes)),
        ("--memory", limits.memory),
        ("--file-size", limits.file_size),
        ("--memory-total", limits.memory_total),
    ] {
        args.push(option.into());
        args.push(value.to_string().into());
    }
    if let Some(bus) = &fence.scope_bus {
        args.push("--scope".into());
        args.push(bus.into());
    }
    if best_effort {
        args.push("--best-effort".into());
    }
    args.push("--".into());
    args
}

pub fn parse(args: &[OsString]) -> Result<Request, String> {
    let mut it = args.iter();
    let (fence, best_effort) = parse_fence(&mut it)?;
    let program = it.next().ok_or("no program after --")?.clone();
    Ok(Request {
        fence,
        best_effort,
        program,
        args: it.cloned().collect(),
    })
}

/// The fence options, up to and including `--` (as `arguments` makes
/// them), and whether it is built best-effort.
pub fn parse_fence<'a>(
    it: &mut impl Iterator<Item = &'a OsString>,
) -> Result<(Fence, bool), String> {
    let mut mode = None;
    let mut writable = Vec::new();
    let mut network = false;
    let mut best_effort = false;
    let mut guard = Guard {
        namespace: true,
        ..Guard::default()
    };
    let mut limits = Limits::default();
    let mut scope_bus = None;
    while let Some(arg) = it.next() {
        let limit = match arg.to_str() {
            Some("--processes") => Some(&mut limits.processes as &mut dyn SetLimit),
            Some("--memory") => Some(&mut limits.memory as &mut dyn SetLimit),
            Some("--file-size") => Some(&mut limits.file_size as &mut dyn SetLimit),
            Some("--memory-total") => Some(&mut limits.memory_total as &mut dyn SetLimit),
            _ => None,
        };
        if let Some(limit) = limit {
            let value = it
                .next()
                .and_then(|v| v.to_str())
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|v| *v > 0);
            let name = arg.to_string_lossy();
            let value = value.ok_or_else(|| format!("{name} needs a number above 0"))?;
            limit.set(value).map_err(|e| format!("{name}: {e}"))?;
            continue;
        }
        let list = match arg.to_str() {
            Some("--hide") => Some(&mut guard.hide),
            Some("--allow-read") => Some(&mut guard.allow_read),
            Some("--protect") => Some(&mut guard.protect),
            Some("--socket-dir") => Some(&mut guard.socket_dirs),
            Some("--allow-socket") => Some(&mut guard.sockets),
            _ => None,
        };
        if let Some(list) = list {
            let path = it
                .next()
                .ok_or_else(|| format!("{} needs a path", arg.to_string_lossy()))?;
            list.push(PathBuf::from(path));
            continue;
        }
        match arg.to_str() {
            Some("--mode") => {
                let value = it.next().ok_or("--mode needs a value")?;
                mode = Some(Mode::parse(&value.to_string_lossy())?);
            }
            Some("--writable") => {
                let dir = it.next().ok_or("--writable needs a directory")?;
                writable.push(PathBuf::from(dir));
            }
            Some("--network") => network = true,
            Some("--scope") => {
                let bus = it.next().and_then(|b| b.to_str());
                scope_bus = Some(bus.ok_or("--scope needs a bus address")?.to_string());
            }
            Some("--no-namespace") => guard.namespace = false,
            Some("--best-effort") => best_effort = true,
            Some("--") => {
                let fence = Fence {
                    mode: mode.unwrap_or(Mode::WorkspaceWrite),
                    writable,
                    network,
                    guard,
                    limits,
                    scope_bus,
                };
                return Ok((fence, best_effort));
            }
            _ => {
                return Err(format!(
                    "unknown argument '{}' (usage: {NAME} [--mode M] [--writable DIR]... \
                     [--network] [--hide PATH]... [--allow-read PATH]... [--protect PATH]... \
                     [--socket-dir DIR]... [--allow-socket PATH]... [--no-namespace] \
                     [--processes N] [--memory BYTES] [--file-size BYTES] \
                     [--memory-total BYTES] [--scope BUS] [--best-effort] -- PROGRAM [ARGS...])",
                    arg.to_string_lossy()
                ))
            }
        }
    }
    Err("no program: the command ends with -- PROGRAM [ARGS...]".into())
}

/// Runs the personality: returns once the tool and everything it started
/// have ended, with the tool's exit code (or ends by the tool's signal).
pub fn main(args: &[OsString]) -> ExitCode {
    let request = match parse(args) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    // SAFETY: getppid has no preconditions and cannot fail.
    let host = unsafe { libc::getppid() };
    contain(&request, host)
}

/// Fences this process in, runs the tool as its child and contains it:
/// the body of the personality. Returns the code to exit with, or ends by
/// the tool's signal.
pub fn contain(request: &Request, host: libc::pid_t) -> ExitCode {
    let own = own_tool(&request.program, &request.args);
    if let Some((tool, rest)) = &own {
        if runs_alone(*tool) {
            return run_alone(request, *tool, rest, host);
        }
    }
    // SAFETY: getpid has no failure.
    let me = unsafe { libc::getpid() };
    // First, while this process is still the person's plain process that
    // can reach the bus and see its control group: what it starts is then
    // in the scope.
    let watched = request.fence.scope().and_then(|spec| {
        let watch = scope::enter(&spec, me as u32).ok()?;
        Some(Watched::new(watch, spec, Report::Own))
    });
    let signals = match prepare(host) {
        Ok(signals) => signals,
        Err(code) => return code,
    };
    // Built before the fork, so the tool and everything it starts inherit
    // it; this process runs nothing of the tool's.
    let layers = Layers::CONTAINMENT.held_for(host);
    if let Err(e) = build_fence(&request.fence, request.best_effort, layers) {
        return fail(&e);
    }
    // SAFETY: this process is single-threaded (nothing here starts a
    // thread), so the child may run ordinary code.
    let tool = unsafe { libc::fork() };
    if tool < 0 {
        return fail(&format!("cannot fork: {}", std::io::Error::last_os_error()));
    }
    if tool == 0 {
        become_tool(&signals, me);
        // The scopes go on the tool alone: it may not signal this process.
        if request.fence.mode.confines() {
            if let Err(e) = landlock::scope() {
                if !request.best_effort {
                    return fail(&e);
                }
            }
        }
        return run_resolved(request, own);
    }
    see_through(&signals, tool, watched)
}

/// Whether our own `tool` runs in this process rather than a forked
/// child: it starts no process, and the kernel can be made to refuse it
/// any (the worker's seccomp filter; mode off needs the filter too, and the
/// host passes `--best-effort` only with a gap). Such a call can leave
/// nothing behind, so it needs no containment process (decision 109).
fn runs_alone(tool: &dyn crate::tool::Tool) -> bool {
    !tool.starts_processes() && seccomp::available()
}

/// Runs `tool` in this process behind the call's fence, with no process
/// allowed to it: ends with the host (`PR_SET_PDEATHSIG`), and the host's
/// stop (SIGTERM) ends it as it ends a containment process.
fn run_alone(
    request: &Request,
    tool: &'static dyn crate::tool::Tool,
    rest: &[OsString],
    host: libc::pid_t,
) -> ExitCode {
    // As the containment process is: other processes of the user may not
    // read its memory or environment (a web search's key) through /proc or
    // trace it, nor its holder, which shares that memory; and a crash
    // writes no core file into the workspace.
    if let Err(code) = tie_to(host) {
        return code;
    }
    let layers = Layers::ALONE.held_for(host);
    if let Err(e) = build_fence(&request.fence, request.best_effort, layers) {
        return fail(&e);
    }
    crate::runner::run(tool, rest)
}

/// Makes this process the containment process of a call for `host`: a
/// subreaper that dies with the host and that the tool cannot attach to,
/// with the signals it waits for blocked. Fails (with the code to exit
/// with) when the host is already gone.
pub(super) fn prepare(host: libc::pid_t) -> Result<Signals, ExitCode> {
    // SAFETY: a prctl that only changes a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    // The tool runs as the same user: it must not be able to attach to
    // this process and stop it from cleaning up.
    tie_to(host)?;
    Ok(Signals::block())
}

/// Makes this process end with `host` (SIGTERM) and non-dumpable; fails
/// (with the code to exit with) when the host is already gone.
fn tie_to(host: libc::pid_t) -> Result<(), ExitCode> {
    // SAFETY: plain prctl/getppid calls that only change flags of this process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        // The host may have died before the line above: then no signal
        // will come, and the call has no one to answer to.
        if libc::getppid() != host {
            return Err(ExitCode::from(SETUP_FAILED));
        }
    }
    Ok(())
}

/// In the tool's process (forked, fenced): becomes the tool, our own
/// in this very process, any other by exec.
pub(super) fn run_tool(request: &Request) -> ExitCode {
    run_resolved(request, own_tool(&request.program, &request.args))
}

/// `run_tool`, with `own_tool`'s answer already known.
fn run_resolved(
    request: &Request,
    own: Option<(&'static dyn crate::tool::Tool, Vec<OsString>)>,
) -> ExitCode {
    if let Some((tool, rest)) = own {
        return crate::runner::run(tool, &rest);
    }
    match c_strings(request) {
        Ok(argv) => exec(&argv),
        Err(e) => fail(&e),
    }
}

/// In the containment process, once the tool runs as `tool`: waits for it
/// or for a stop, kills whatever is left, says whether the call met its
/// scope's limits, and ends as the tool ended.
pub(super) fn see_through(
    signals: &Signals,
    tool: libc::pid_t,
    watched: Option<Watched>,
) -> ExitCode {
    let ending = signals.wait_for(tool);
    kill_descendants();
    if let Some(watched) = watched {
        watched.report();
    }
    relay(ending)
}

/// A containment process's scope: what it counts, its bounds, and where
/// the line that names a limit met goes.
pub(super) struct Watched {
    watch: scope::Watch,
    spec: scope::Spec,
    report: Report,
}

/// Where the containment process writes the call's stderr line.
pub(super) enum Report {
    /// Its own stderr is the call's (`sandbox-exec`).
    Own,
    /// The call's stderr comes on this socket from the tool process (the
    /// spawner's containment process started before the call was known).
    Handed(std::os::fd::OwnedFd),
}

impl Watched {
    pub(super) fn new(watch: scope::Watch, spec: scope::Spec, report: Report) -> Watched {
        Watched {
            watch,
            spec,
            report,
        }
    }

    /// Writes the line that names the limit the call met, if it met one
    /// (the host decides what it means for the call: a refused fork only
    /// fails a call that failed).
    fn report(mut self) {
        let Some(reached) = self.watch.reached() else {
            return;
        };
        let line = scope::mark(&reached, self.spec.memory, self.spec.tasks);
        let handed;
        let fd = match &self.report {
            Report::Own => 2,
            Report::Handed(socket) => {
                let mut buf = [0u8; 8];
                handed = match super::spawner::receive(socket.as_raw_fd(), &mut buf) {
                    Ok(Some((_, mut fds))) if fds.len() == 1 => fds.remove(0),
                    _ => return,
                };
                handed.as_raw_fd()
            }
        };
        // SAFETY: writes a live buffer to a descriptor this process holds.
        unsafe {
            libc::write(fd, line.as_ptr().cast(), line.len());
        }
    }
}

pub(super) fn fail(what: &str) -> ExitCode {
    eprintln!("ikigai-tools {NAME}: {what}");
    ExitCode::from(SETUP_FAILED)
}

/// Which process a fence is built in, and so what it holds besides the
/// fence itself.
#[derive(Clone, Copy)]
pub(super) struct Layers {
    /// The namespace is held past this process's end (decision 108): this
    /// process ends with the call, and the host waits for it.
    pub hold: bool,
    /// The scopes (`landlock::scope`) go on this process: it runs the
    /// tool. Not on a containment process, which the tool must not reach.
    pub scopes: bool,
    /// It may start processes; if not, the seccomp filter refuses them
    /// (in every mode, `off` included).
    pub processes: bool,
}

impl Layers {
    /// `sandbox-exec`'s containment process: the tool is forked after.
    pub const CONTAINMENT: Layers = Layers {
        hold: false,
        scopes: false,
        processes: true,
    };
    /// A tool's own process, which may start others (the spawner's).
    pub const TOOL: Layers = Layers {
        hold: false,
        scopes: true,
        processes: true,
    };
    /// A process that runs our own code and starts nothing: the worker,
    /// and `sandbox-exec` running our tool itself (decision 109).
    pub const ALONE: Layers = Layers {
        hold: false,
        scopes: true,
        processes: false,
    };

    /// These layers, with the namespace held past this process's end,
    /// unless `host` is PID 1 (of a container): the holder, once this
    /// process ends, is re-parented to the host, which reaps only the
    /// children it started, and would stay a zombie until the host ends.
    fn held_for(self, host: libc::pid_t) -> Layers {
        Layers {
            hold: host != 1,
            ..self
        }
    }
}

/// Builds the fence around this process; with `best_effort`, the parts the
/// kernel lacks are skipped. In order: the OOM score, the call's namespace
/// (its mounts need the namespace's capabilities), the limits (after the
/// namespace, in which a process limit counts the call's own), Landlock,
/// seccomp, every capability dropped, and last the scopes.
pub(super) fn build_fence(fence: &Fence, best_effort: bool, layers: Layers) -> Result<(), String> {
    limits::first_in_line()?;
    if !fence.mode.confines() {
        // No namespace with the sandbox off: a process limit would count
        // every process of the user, so there is none.
        fence.limits.apply(false)?;
        return match layers.processes {
            true => Ok(()),
            false => seccomp::deny_processes(),
        };
    }
    // A process that may start none needs no namespace for counting them.
    let counted = fence.guard.namespace && namespace::enter(fence, layers.hold, layers.processes)?;
    fence.limits.apply(counted)?;
    if !best_effort || landlock::abi_version().is_some() {
        landlock::restrict(fence.mode, &fence.writable)?;
    }
    if !best_effort || seccomp::available() || !layers.processes {
        seccomp::confine(fence.network, layers.processes)?;
    }
    // A process that may start none can exec nothing: its bounding set
    // bounds nothing (decision 135).
    caps::drop_all(layers.processes)?;
    if layers.scopes {
        if let Err(e) = landlock::scope() {
            if !best_effort {
                return Err(e);
            }
        }
    }
    Ok(())
}

/// The fence of a tool's own process, built where the tool runs (the
/// spawner's tool process): it may start others.
pub(super) fn fence_tool(fence: &Fence, best_effort: bool) -> Result<(), String> {
    build_fence(fence, best_effort, Layers::TOOL)
}

/// The program and its argv as C strings, made before the fork.
fn c_strings(request: &Request) -> Result<Vec<CString>, String> {
    std::iter::once(&request.program)
        .chain(&request.args)
        .map(|a| {
            CString::new(a.as_bytes())
                .map_err(|_| format!("argument holds a NUL byte: {}", a.to_string_lossy()))
        })
        .collect()
}

/// Our own tool, when `program` is this executable (the same file,
/// usually through a link named after the tool): the tool and its
/// arguments, as dispatch reads them from the program's name.
pub(super) fn own_tool(
    program: &OsStr,
    args: &[OsString],
) -> Option<(&'static dyn crate::tool::Tool, Vec<OsString>)> {
    use std::os::unix::fs::MetadataExt;
    static ME: OnceLock<Option<(u64, u64)>> = OnceLock::new();
    let me = *ME.get_or_init(|| {
        let me = std::fs::metadata("/proc/self/exe").ok()?;
        Some((me.dev(), me.ino()))
    });
    let program_file = std::fs::metadata(program).ok()?;
    if me? != (program_file.dev(), program_file.ino()) {
        return None;
    }
    tool_named(program, args)
}

/// The tool and its arguments that `program`'s name names, as the front
/// door reads them: a link named after one of our tools (`file-read`), or
/// our executable with the tool's name as its first argument.
pub(super) fn tool_named(
    program: &OsStr,
    args: &[OsString],
) -> Option<(&'static dyn crate::tool::Tool, Vec<OsString>)> {
    let base = std::path::Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(tool) = crate::tools::find(&base) {
        return Some((tool, args.to_vec()));
    }
    let first = args.first()?.to_str()?;
    crate::tools::find(first).map(|tool| (tool, args[1..].to_vec()))
}

/// The forked child, before it runs the tool: its own process group, killed
/// with its parent, the signal mask it had.
pub(super) fn become_tool(signals: &Signals, containment: libc::pid_t) {
    // SAFETY: plain calls on this process, single-threaded after the fork.
    unsafe {
        libc::setpgid(0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if libc::getppid() != containment {
            // The containment process is gone already: so is the call.
            libc::_exit(SETUP_FAILED as i32);
        }
    }
    signals.restore();
}

/// Replaces the forked child with the program.
fn exec(argv: &[CString]) -> ! {
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    // SAFETY: the pointers are into `argv`, alive until exec.
    unsafe {
        // The Rust runtime ignores SIGPIPE; programs expect the default.
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::execvp(ptrs[0], ptrs.as_ptr());
        let errno = *libc::__errno_location();
        let msg = format!(
            "ikigai-tools {NAME}: cannot run {}: {}\n",
            argv[0].to_string_lossy(),
            std::io::Error::from_raw_os_error(errno)
        );
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::_exit(if errno == libc::ENOENT { 127 } else { 126 });
    }
}

/// How the call ended, as far as this process is concerned.
enum Ending {
    /// The tool ended with this wait status.
    Tool(libc::c_int),
    /// Stopped by this signal (the host stopping the call, or dying).
    Stopped(libc::c_int),
}

/// The signals this process waits for, blocked so they queue instead of
/// acting, and the mask to give back to the tool.
pub(super) struct Signals {
    set: libc::sigset_t,
    old: libc::sigset_t,
}

impl Signals {
    fn block() -> Signals {
        // SAFETY: sigset_t is plain data, initialised by sigemptyset.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
                libc::sigaddset(&mut set, s);
            }
            libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
            Signals { set, old }
        }
    }

    fn restore(&self) {
        // SAFETY: sets this thread's mask to the saved one.
        unsafe {
            libc::sigprocmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
        }
    }

    /// Waits until the tool ends or a stop signal comes, reaping every
    /// child that ends meanwhile (orphans re-parented here among them).
    fn wait_for(&self, tool: libc::pid_t) -> Ending {
        loop {
            if let Some(status) = reap_all(Some(tool)) {
                return Ending::Tool(status);
            }
            // SAFETY: waits for one of the blocked signals; siginfo is
            // plain data.
            let signal = unsafe {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                libc::sigwaitinfo(&self.set, &mut info)
            };
            match signal {
                libc::SIGTERM | libc::SIGINT | libc::SIGHUP => return Ending::Stopped(signal),
                // SIGCHLD, or EINTR: look again.
                _ => {}
            }
        }
    }
}

/// Reaps every child that has ended; returns the wait status of `tool` if
/// it was among them.
fn reap_all(tool: Option<libc::pid_t>) -> Option<libc::c_int> {
    let mut found = None;
    loop {
        let mut status = 0;
        // SAFETY: waitpid on our own children.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return found;
        }
        if Some(pid) == tool {
            found = Some(status);
        }
    }
}

/// Whether this process has no child left (waitpid's ECHILD), reaping
/// those that have ended.
fn no_children() -> bool {
    loop {
        let mut status = 0;
        // SAFETY: waitpid on our own children.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return pid < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD);
        }
    }
}

/// Kills every descendant of this process and reaps them. Rounds repeat
/// until none is left, so a process that forked while the previous round
/// ran is found in the next (its orphans come back here, the subreaper).
fn kill_descendants() {
    // Every process the tool left was re-parented here (a subreaper) by the
    // time the tool's exit was seen: none left when this process has no
    // child at all, the common case, which needs no look through /proc.
    if no_children() {
        return;
    }
    for round in 0.. {
        let found = descendants();
        if found.is_empty() {
            // Orphans already dead but not yet reaped are children too,
            // and show in the list; an empty list means nothing is left.
            reap_all(None);
            return;
        }
        for pid in &found {
            // SAFETY: kill(2) on a descendant; it cannot have been reaped
            // and reused yet, since only this process reaps its children
            // and a descendant's own children are re-parented here.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
        reap_all(None);
        // Killed processes take a moment to become zombies; the first
        // rounds only yield, later ones (a process stuck in the kernel)
        // wait a little, not to spin.
        if round < 3 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// Every live or unreaped descendant, from /proc's lists of children (or a
/// scan of all processes, where the kernel keeps no such lists), but the
/// namespace's holder: it runs nothing of the call's and ends with this
/// process (decision 108); killing it here would put the namespace's end
/// back on the call's way.
fn descendants() -> Vec<libc::pid_t> {
    let mut found = all_descendants();
    if let Some(holder) = namespace::holder() {
        found.retain(|&pid| pid != holder);
    }
    found
}

fn all_descendants() -> Vec<libc::pid_t> {
    // SAFETY: getpid has no failure.
    let me = unsafe { libc::getpid() };
    let mut found = Vec::new();
    let mut queue = vec![me];
    while let Some(pid) = queue.pop() {
        let Some(children) = children_of(pid) else {
            return scan_descendants(me);
        };
        for child in children {
            found.push(child);
            queue.push(child);
        }
    }
    found
}

/// The children of `pid` from /proc/PID/task/*/children; None when the
/// kernel does not provide these files. A process gone meanwhile has none.
fn children_of(pid: libc::pid_t) -> Option<Vec<libc::pid_t>> {
    let tasks = match std::fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(tasks) => tasks,
        Err(_) => return Some(Vec::new()),
    };
    let mut children = Vec::new();
    for task in tasks.flatten() {
        let path = task.path().join("children");
        match std::fs::read_to_string(&path) {
            Ok(text) => children.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<libc::pid_t>().ok()),
            ),
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound && pid == std::process::id() as i32 =>
            {
                return None
            }
            Err(_) => {}
        }
    }
    Some(children)
}

/// Descendants of `root` from every process's parent in /proc/*/stat.
fn scan_descendants(root: libc::pid_t) -> Vec<libc::pid_t> {
    let mut parent_of = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // The command name may hold spaces and parentheses: the fields
            // after the last ')' are "state ppid ...".
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<libc::pid_t>().ok());
            if let Some(ppid) = ppid {
                parent_of.push((pid, ppid));
            }
        }
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(p) = queue.pop() {
        for &(pid, ppid) in &parent_of {
            if ppid == p {
                found.push(pid);
                queue.push(pid);
            }
        }
    }
    found
}

/// Ends this process the way the call ended: the tool's exit code, or the
/// same signal (so the host reads 128+N), core dumps off so a re-raised
/// SIGSEGV writes no core file of this process.
fn relay(ending: Ending) -> ExitCode {
    let signal = match ending {
        Ending::Tool(status) if libc::WIFEXITED(status) => {
            return ExitCode::from(libc::WEXITSTATUS(status) as u8)
        }
        Ending::Tool(status) if libc::WIFSIGNALED(status) => libc::WTERMSIG(status),
        Ending::Tool(_) => return ExitCode::from(SETUP_FAILED),
        Ending::Stopped(signal) => signal,
    };
    // SAFETY: resetting this process's own limit, disposition and mask, then
    // signalling itself.
    unsafe {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        // kill, not raise: raise(3) signals the thread id glibc keeps for
        // this thread, which a process the spawner made by a raw clone(2)
        // inherited from the spawner; kill(2) names this process itself.
        libc::kill(libc::getpid(), signal);
    }
    // A signal whose default is not to end the process: say it as a shell.
    ExitCode::from(crate::exit::of_signal(signal) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn arguments_round_trip() {
        let fence = Fence {
            mode: Mode::ReadOnly,
            writable: vec!["/w".into(), "/tmp".into()],
            network: true,
            guard: Guard {
                hide: vec!["/h/.aws".into()],
                allow_read: vec!["/h/.ssh/config".into()],
                protect: vec!["/h/.bashrc".into()],
                socket_dirs: vec!["/run/user/1".into()],
                sockets: vec!["/run/agent".into()],
                namespace: false,
            },
            limits: Limits {
                processes: 64,
                memory: 1 << 30,
                file_size: 5 << 20,
                memory_total: 3 << 30,
            },
            scope_bus: Some("unix:path=/run/user/1/bus".into()),
        };
        let mut args = arguments(&fence, true);
        assert_eq!(args[0], NAME);
        args.extend(words("/bin/tool a b"));
        let request = parse(&args[1..]).unwrap();
        assert_eq!(request.fence, fence);
        assert!(request.best_effort);
        assert_eq!(request.program, "/bin/tool");
        assert_eq!(request.args, words("a b"));
        let plain = parse(&words("-- x")).unwrap();
        assert_eq!(plain.fence.mode, Mode::WorkspaceWrite);
        assert!(!plain.fence.network && !plain.best_effort);
        assert!(plain.fence.guard.namespace);
        assert_eq!(plain.fence.limits, Limits::default());
    }

    #[test]
    fn bad_usage_is_named() {
        for (args, says) in [
            ("--mode", "--mode needs a value"),
            ("--mode strict -- x", "invalid sandbox mode 'strict'"),
            ("--writable", "--writable needs a directory"),
            ("--hide", "--hide needs a path"),
            ("--allow-socket", "--allow-socket needs a path"),
            ("--bogus -- x", "unknown argument '--bogus'"),
            ("--network", "no program"),
            ("--", "no program after --"),
            ("--processes 0 -- x", "--processes needs a number above 0"),
            ("--memory 1G -- x", "--memory needs a number above 0"),
            (
                "--processes 5000000000 -- x",
                "--processes: 5000000000 is too large",
            ),
        ] {
            let err = parse(&words(args)).unwrap_err();
            assert!(err.contains(says), "{args}: {err}");
        }
    }

    #[test]
    fn proc_stat_parsing_finds_our_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id() as libc::pid_t;
        let scanned = scan_descendants(me);
        assert!(
            scanned.contains(&(child.id() as libc::pid_t)),
            "{scanned:?}"
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
