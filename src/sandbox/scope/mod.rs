//! A systemd scope per call (decision 81; decision 134): where the
//! person's systemd user manager answers on a session bus, the call's
//! containment process asks it for a transient scope of its own, with the
//! call's memory (`limits.memory_total`) and task count
//! (`limits.processes`) as the scope's `MemoryMax` and `TasksMax`, before
//! it starts the tool. Everything the call starts is then in that control
//! group, and the kernel bounds the whole call tree, whatever user
//! namespace or process group its parts are in, root's calls included.
//!
//! The containment process stays in the scope until the call ends, so the
//! scope's control group still exists when it looks at what happened: its
//! OOM kills and refused forks ([`Watch`]). When the call met either, it
//! says so in one line on the call's stderr ([`MARK`]), which the host
//! turns into `RESOURCE_LIMIT` naming the limit and its config key.
//!
//! A scope that cannot be had (no bus, no manager, a manager that may not
//! move the process: a login over ssh on some systems) is no error: the
//! call runs under the per-process limits alone, as on a machine without
//! systemd, and `ikigai sandbox check` says which holds here.

mod bus;

use std::fs::File;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bus::{Bus, Writer};

/// How long the manager may take to start a scope (its job runs at once;
/// a busy manager answers within milliseconds).
const START_WITHIN: Duration = Duration::from_secs(5);

/// What the host asks for: the bus to ask on and the scope's bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The session bus's address (`unix:path=...`).
    pub bus: String,
    /// `MemoryMax`, bytes for the whole call.
    pub memory: u64,
    /// `TasksMax`, processes and threads of the whole call at once.
    pub tasks: u32,
}

/// The session bus the host's calls ask for scopes on: the one the
/// environment names, or the user's runtime directory's `bus` socket,
/// where systemd's user manager keeps it. None where there is neither.
pub fn session_bus(env: impl Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(address) = env("DBUS_SESSION_BUS_ADDRESS").filter(|a| a.contains("unix:")) {
        return Some(address);
    }
    let runtime = env("XDG_RUNTIME_DIR").filter(|d| !d.is_empty())?;
    let socket = Path::new(&runtime).join("bus");
    use std::os::unix::fs::FileTypeExt;
    let is_socket = std::fs::metadata(&socket).is_ok_and(|m| m.file_type().is_socket());
    is_socket.then(|| format!("unix:path={}", socket.display()))
}

/// Set once this process is in a scope of its call, and so everything it
/// forks: then the scope counts the call's tasks (`Limits::apply`).
static ENTERED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Moves this process (`pid`) into a new scope bounded as `spec` says,
/// and waits until the manager has done it.
pub fn enter(spec: &Spec, pid: u32) -> Result<Watch, String> {
    let name = unit_name();
    start(spec, &[pid], &name).map_err(|e| format!("no scope from the user manager: {e}"))?;
    ENTERED.store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(Watch::of_self())
}

/// Whether this process is in a scope of its call (made by `enter` here
/// or in the process it was forked from).
pub fn entered() -> bool {
    ENTERED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Asks the manager for scope `name` holding `pids`, and waits for the
/// job that starts it to end.
fn start(spec: &Spec, pids: &[u32], name: &str) -> Result<(), bus::Error> {
    let mut bus = Bus::connect(&spec.bus)?;
    // The job's end comes as a signal to whoever asked for the job.
    let rule = "type='signal',sender='org.freedesktop.systemd1',\
                interface='org.freedesktop.systemd1.Manager',member='JobRemoved'";
    let mut body = Writer::default();
    body.string(rule);
    bus.call(
        "org.freedesktop.DBus",
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus",
        "AddMatch",
        "s",
        body.buf,
    )?;
    let reply = bus.call(
        "org.freedesktop.systemd1",
        "/org/freedesktop/systemd1",
        "org.freedesktop.systemd1.Manager",
        "StartTransientUnit",
        "ssa(sv)a(sa(sv))",
        properties(spec, pids, name),
    )?;
    let job = reply.body().string()?;
    let deadline = Instant::now() + START_WITHIN;
    loop {
        let signal = bus.signal(deadline)?;
        if signal.member.as_deref() != Some("JobRemoved") || signal.signature != "uoss" {
            continue;
        }
        let mut r = signal.body();
        let (_id, path, _unit, result) = (r.u32()?, r.string()?, r.string()?, r.string()?);
        if path == job {
            return match result.as_str() {
                "done" => Ok(()),
                other => Err(bus::Error::Refused {
                    name: format!("the scope's job ended '{other}'"),
                    message: String::new(),
                }),
            };
        }
    }
}

/// The body of `StartTransientUnit`: the unit's name, the job mode, its
/// properties, and no auxiliary units.
fn properties(spec: &Spec, pids: &[u32], name: &str) -> Vec<u8> {
    let mut w = Writer::default();
    w.string(name);
    w.string("fail");
    w.array(8, |w| {
        let mut text = |key: &str, value: &str| {
            w.structure(|w| {
                w.string(key);
                w.signature("s");
                w.string(value);
            })
        };
        text("Description", "ikigai tool call");
        // A scope that failed (its memory ran out) is not kept loaded: the
        // containment process has read what it needs by then.
        text("CollectMode", "inactive-or-failed");
        for (key, value) in [
            ("MemoryMax", spec.memory),
            ("TasksMax", u64::from(spec.tasks)),
        ] {
            w.structure(|w| {
                w.string(key);
                w.signature("t");
                w.u64(value);
            });
        }
        w.structure(|w| {
            w.string("PIDs");
            w.signature("au");
            w.array(4, |w| pids.iter().for_each(|&pid| w.u32(pid)));
        });
    });
    w.array(8, |_| {});
    w.buf
}

/// A unit name no other call of any host holds: this process's pid and
/// the monotonic clock's nanoseconds.
fn unit_name() -> String {
    // SAFETY: clock_gettime fills the struct; getpid has no failure.
    let (pid, nanos) = unsafe {
        let mut now: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now);
        (
            libc::getpid(),
            now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64,
        )
    };
    format!("ikigai-call-{pid}-{nanos}.scope")
}

/// What a scope's control group counts: OOM kills and refused forks, read
/// from files opened while this process could still see them (before its
/// fence) and read again when the call has ended.
pub struct Watch {
    oom_kills: Option<Counter>,
    forks_refused: Option<Counter>,
}

/// What the call met, as the watch saw it.
#[derive(Debug, PartialEq, Eq)]
pub enum Reached {
    /// The kernel ended a process of the call: its memory ran out.
    Memory,
    /// A fork or a thread was refused: the call had its most tasks.
    Tasks,
}

impl Watch {
    /// The counters of this process's own control groups.
    fn of_self() -> Watch {
        let groups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let file = |controller: &str, v1: &str, v2: &str, key: &'static str| {
            let path = group_file(&groups, &mounts, controller, v1, v2)?;
            Counter::open(&path, key)
        };
        Watch {
            oom_kills: file("memory", "memory.oom_control", "memory.events", "oom_kill"),
            forks_refused: file("pids", "pids.events", "pids.events", "max"),
        }
    }

    /// What the call met since the scope was made; memory first, which
    /// ends processes, where a refused fork only fails one.
    pub fn reached(&mut self) -> Option<Reached> {
        if self.oom_kills.as_mut().is_some_and(Counter::rose) {
            return Some(Reached::Memory);
        }
        if self.forks_refused.as_mut().is_some_and(Counter::rose) {
            return Some(Reached::Tasks);
        }
        None
    }
}

/// One `KEY N` line of a control group's file, and its value when opened.
struct Counter {
    file: File,
    key: &'static str,
    at_start: u64,
}

impl Counter {
    fn open(path: &Path, key: &'static str) -> Option<Counter> {
        let mut file = File::open(path).ok()?;
        let at_start = read_key(&mut file, key)?;
        Some(Counter {
            file,
            key,
            at_start,
        })
    }

    fn rose(&mut self) -> bool {
        read_key(&mut self.file, self.key).is_some_and(|now| now > self.at_start)
    }
}

/// The value of `key` in a file of `KEY N` lines, read from its start.
fn read_key(file: &mut File, key: &str) -> Option<u64> {
    file.rewind().ok()?;
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

/// The path of `v1_file` in the version-1 hierarchy of `controller`, or
/// of `v2_file` in the unified hierarchy, for this process's group:
/// `groups` is /proc/self/cgroup, `mounts` /proc/self/mountinfo.
fn group_file(
    groups: &str,
    mounts: &str,
    controller: &str,
    v1_file: &str,
    v2_file: &str,
) -> Option<PathBuf> {
    let mut v2 = None;
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, group) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == controller) {
            let (root, at) = mount_of(mounts, |kind, options| {
                kind == "cgroup" && options.split(',').any(|o| o == controller)
            })?;
            return Some(under(&at, &root, group).join(v1_file));
        }
        if controllers.is_empty() {
            v2 = Some(group.to_string());
        }
    }
    let group = v2?;
    let (root, at) = mount_of(mounts, |kind, _| kind == "cgroup2")?;
    let dir = under(&at, &root, &group);
    // The unified hierarchy has the controller only where it is enabled.
    let file = dir.join(v2_file);
    file.exists().then_some(file)
}

/// The root and mount point of the first mount `matches` (by its type and
/// super options) in mountinfo's text.
fn mount_of(mounts: &str, matches: impl Fn(&str, &str) -> bool) -> Option<(String, PathBuf)> {
    mounts.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let mut fields = before.split(' ');
        let root = fields.nth(3)?;
        let at = fields.next()?;
        let mut after = after.split(' ');
        let (kind, _source, options) = (after.next()?, after.next()?, after.next()?);
        matches(kind, options).then(|| (unescape_octal(root), PathBuf::from(unescape_octal(at))))
    })
}

/// `group` (a path from the hierarchy's root) under mount point `at`,
/// which shows the hierarchy from `root`.
fn under(at: &Path, root: &str, group: &str) -> PathBuf {
    let rest = match root {
        "/" => group,
        root => group.strip_prefix(root).unwrap_or(group),
    };
    at.join(rest.trim_start_matches('/'))
}

/// Mountinfo's `\040`-style escapes undone.
fn unescape_octal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(byte) => {
                out.push(byte as char);
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// How the line the containment process writes on the call's stderr
/// starts; the host reads it off the end of the call's stderr.
pub const MARK: &str = "ikigai-tools sandbox-exec: limit reached";

impl Reached {
    /// The word the line names it by.
    fn word(&self) -> &'static str {
        match self {
            Reached::Memory => "memory",
            Reached::Tasks => "tasks",
        }
    }
}

/// The line that says the call met `reached`, naming the limit and the
/// config key that raises it: `MARK (WORD): TEXT`.
pub fn mark(reached: &Reached, memory: u64, tasks: u32) -> String {
    let what = match reached {
        Reached::Memory => format!(
            "the call's processes together reached its memory limit of {} and the kernel \
             ended one (config limits.memory_total raises it)",
            super::limits::size_text(memory)
        ),
        Reached::Tasks => format!(
            "the call reached its limit of {tasks} processes and threads at once and a new \
             one was refused (config limits.processes raises it)"
        ),
    };
    format!("\n{MARK} ({}): {what}\n", reached.word())
}

/// A line `mark` made, read off the end of a call's stderr.
#[derive(Debug, PartialEq, Eq)]
pub struct Marked<'a> {
    /// The stderr before the line.
    pub before: &'a [u8],
    pub reached: Reached,
    /// What the line says.
    pub what: String,
}

/// The line `mark` made at the end of `stderr`, if it ends with one.
pub fn marked(stderr: &[u8]) -> Option<Marked<'_>> {
    let trimmed = stderr.strip_suffix(b"\n")?;
    let start = trimmed
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = std::str::from_utf8(&trimmed[start..]).ok()?;
    let rest = line.strip_prefix(MARK)?.strip_prefix(" (")?;
    let (word, what) = rest.split_once("): ")?;
    let reached = [Reached::Memory, Reached::Tasks]
        .into_iter()
        .find(|r| r.word() == word)?;
    Some(Marked {
        before: &stderr[..start.saturating_sub(1)],
        reached,
        what: what.to_string(),
    })
}

/// Whether this machine gives calls a scope: tries one for a short-lived
/// child, as a call's containment process would, and says what happened
/// (for `ikigai sandbox check`).
pub fn trial(spec: &Spec) -> Result<(), String> {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start a process to try one: {e}"))?;
    let name = unit_name();
    let started = start(spec, &[child.id()], &name);
    let groups = std::fs::read_to_string(format!("/proc/{}/cgroup", child.id()));
    let _ = child.kill();
    let _ = child.wait();
    started.map_err(|e| e.to_string())?;
    match groups {
        Ok(text) if text.contains(&name) => Ok(()),
        _ => Err(format!(
            "the manager started {name} but the process is not in it"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID_GROUPS: &str = "9:name=systemd:/app.slice/x.scope\n8:pids:/app.slice/x.scope\n\
        4:memory:/app.slice/x.scope\n1:cpu:/\n0::/app.slice/x.scope\n";
    const HYBRID_MOUNTS: &str = "\
        30 25 0:27 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n\
        31 25 0:28 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
        32 25 0:29 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n";

    #[test]
    fn version_one_controllers_are_found_in_their_own_hierarchy() {
        let memory = group_file(
            HYBRID_GROUPS,
            HYBRID_MOUNTS,
            "memory",
            "memory.oom_control",
            "memory.events",
        );
        assert_eq!(
            memory,
            Some(PathBuf::from(
                "/sys/fs/cgroup/memory/app.slice/x.scope/memory.oom_control"
            ))
        );
        let pids = group_file(
            HYBRID_GROUPS,
            HYBRID_MOUNTS,
            "pids",
            "pids.events",
            "pids.events",
        );
        assert_eq!(
            pids,
            Some(PathBuf::from(
                "/sys/fs/cgroup/pids/app.slice/x.scope/pids.events"
            ))
        );
    }

    #[test]
    fn a_mount_of_a_subtree_is_joined_below_its_root() {
        let mounts = "40 1 0:30 /user.slice /sys/fs/cgroup/memory rw - cgroup c rw,memory\n";
        let groups = "4:memory:/user.slice/app.slice/y.scope\n";
        let file = group_file(
            groups,
            mounts,
            "memory",
            "memory.oom_control",
            "memory.events",
        );
        assert_eq!(
            file,
            Some(PathBuf::from(
                "/sys/fs/cgroup/memory/app.slice/y.scope/memory.oom_control"
            ))
        );
    }

    #[test]
    fn the_mark_round_trips_and_is_taken_off_the_stderr() {
        let mut stderr = b"bash: fork: retry\n".to_vec();
        stderr.extend_from_slice(mark(&Reached::Tasks, 1 << 30, 64).as_bytes());
        let tasks = marked(&stderr).unwrap();
        assert_eq!(tasks.before, b"bash: fork: retry\n");
        assert_eq!(tasks.reached, Reached::Tasks);
        let what = tasks.what;
        assert!(
            what.contains("64 processes") && what.contains("limits.processes"),
            "{what}"
        );
        let alone = mark(&Reached::Memory, 2 << 30, 64);
        let memory = marked(alone.as_bytes()).unwrap();
        assert!(memory.before.is_empty());
        assert_eq!(memory.reached, Reached::Memory);
        let what = memory.what;
        assert!(
            what.contains("2 GiB") && what.contains("limits.memory_total"),
            "{what}"
        );
        assert!(marked(b"an ordinary error\n").is_none());
        assert!(marked(format!("{MARK} (other): x\n").as_bytes()).is_none());
        // Bytes that are not UTF-8 before the line do not hide it.
        let mut binary = b"\xff\xfe half a character\xe2".to_vec();
        binary.extend_from_slice(mark(&Reached::Memory, 1 << 30, 8).as_bytes());
        let found = marked(&binary).unwrap();
        assert_eq!(found.before, b"\xff\xfe half a character\xe2");
        assert!(marked(b"").is_none());
    }

    #[test]
    fn the_session_bus_comes_from_the_environment_first() {
        let named = session_bus(|k| {
            (k == "DBUS_SESSION_BUS_ADDRESS").then(|| "unix:path=/run/user/7/bus".to_string())
        });
        assert_eq!(named.as_deref(), Some("unix:path=/run/user/7/bus"));
        let dir = tempfile::tempdir().unwrap();
        let none = session_bus(|k| {
            (k == "XDG_RUNTIME_DIR").then(|| dir.path().to_string_lossy().into_owned())
        });
        assert_eq!(none, None, "no socket there");
        let _listener = std::os::unix::net::UnixListener::bind(dir.path().join("bus")).unwrap();
        let found = session_bus(|k| {
            (k == "XDG_RUNTIME_DIR").then(|| dir.path().to_string_lossy().into_owned())
        });
        assert_eq!(
            found,
            Some(format!("unix:path={}", dir.path().join("bus").display()))
        );
    }

    #[test]
    fn the_properties_body_is_well_formed() {
        let spec = Spec {
            bus: String::new(),
            memory: 1 << 30,
            tasks: 100,
        };
        let body = properties(&spec, &[42, 43], "u.scope");
        let mut r = bus::tests_reader(&body);
        assert_eq!(r.string().unwrap(), "u.scope");
        assert_eq!(r.string().unwrap(), "fail");
    }
}
