//! Discovery (decisions 2, 11 and 18): every executable file (or link to one)
//! at the top of the system and the user directory is run with `--schema`,
//! all at once, each under a deadline (1 s) from its start. A tool that
//! answers unusably but in time is asked again with `--describe` (shellclaw
//! protocol) and remembered as such; one that hangs is killed, group and all,
//! and skipped without a second try, so a directory of broken tools costs at
//! most the deadline. Every file that does not become a tool is kept with the
//! reason. Probes in flight are capped by the open-file limit; queued ones
//! start as others finish, each with its own deadline, so every tool is found
//! whatever the limit (a small one only makes discovery take longer).
//!
//! Links to this very executable under its tools' names (what symlinks.sh
//! installs) are asked at once: one run of it with `--schemas` answers what
//! each link would answer to `--schema`, and saves starting the executable
//! once per tool, most of what discovery costs.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use super::child::{self, Finished, Proc};
use super::registry::{Entry, Origin, Protocol, Registry, Skipped};
use super::schema;
use super::settings::{format_secs, Settings};

/// A schema is small: more than this on stdout is not a schema.
const SCHEMA_CAP: usize = 1 << 20;
/// Enough stderr to quote why a tool failed.
const STDERR_CAP: usize = 4096;
/// The longest quote of a tool's own words in a reason.
const QUOTE: usize = 160;

/// Scans the configured directories and returns the registry, with the
/// tools of the configured MCP servers, which (re)start meanwhile. Blocking
/// (at most about the discovery deadline, or the MCP servers' start
/// timeout when there are any); safe to call from any thread.
pub fn discover(settings: &Settings) -> Registry {
    std::thread::scope(|s| {
        let mcp = s.spawn(|| {
            let files: Vec<&Path> = [&settings.mcp_config, &settings.project_mcp]
                .into_iter()
                .flatten()
                .map(PathBuf::as_path)
                .collect();
            crate::mcp::client::start_all(&files, &settings.mcp_servers, &settings.sandbox)
        });
        let mut candidates = Vec::new();
        let mut skipped = Vec::new();
        for (dir, origin) in directories(settings) {
            scan(&dir, origin, &mut candidates, &mut skipped);
        }
        let (mut found, candidates) = ours_at_once(candidates, settings);
        found.extend(probe_all(candidates, settings, &mut skipped));
        let (tools, failed) = mcp.join().unwrap_or_default();
        found.extend(tools.into_iter().map(|t| Entry {
            name: t.name,
            description: t.description,
            path: PathBuf::from(t.server),
            protocol: Protocol::Mcp,
            origin: Origin::Mcp,
            schema: t.schema,
        }));
        skipped.extend(failed.into_iter().map(|f| Skipped {
            path: PathBuf::from(f.what),
            reason: format!("MCP server not started: {}", f.reason),
        }));
        Registry::build(found, skipped)
    })
}

/// The directories to scan, system first; one directory named twice is
/// scanned once.
fn directories(settings: &Settings) -> Vec<(PathBuf, Origin)> {
    let mut dirs: Vec<(PathBuf, Origin)> = Vec::new();
    let named = [
        (settings.system_dir.as_ref(), Origin::System),
        (settings.user_dir.as_ref(), Origin::User),
    ];
    for (dir, origin) in named {
        let Some(dir) = dir else { continue };
        let same = |d: &PathBuf| match (d.canonicalize(), dir.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => d == dir,
        };
        if !dirs.iter().any(|(d, _)| same(d)) {
            dirs.push((dir.clone(), origin));
        }
    }
    dirs
}

struct Candidate {
    path: PathBuf,
    origin: Origin,
    /// The file it names (device, inode), links followed.
    file: (u64, u64),
}

/// Lists the candidates of one directory, by file name. Dotfiles and
/// directories are passed over in silence; broken links and files that
/// cannot run are skipped with the reason, since they are most likely
/// tools someone forgot to finish.
fn scan(dir: &Path, origin: Origin, out: &mut Vec<Candidate>, skipped: &mut Vec<Skipped>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            skipped.push(Skipped {
                path: dir.to_path_buf(),
                reason: format!("cannot read the tools directory: {e}"),
            });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().as_encoded_bytes().starts_with(b"."))
        .map(|e| e.path())
        .collect();
    paths.sort();
    for path in paths {
        let reason = match std::fs::metadata(&path) {
            Err(e) if path.is_symlink() && e.kind() == std::io::ErrorKind::NotFound => {
                let target = std::fs::read_link(&path).unwrap_or_default();
                format!("broken symbolic link (to {})", target.display())
            }
            Err(e) => format!("cannot read: {e}"),
            Ok(m) if m.is_dir() => continue,
            Ok(m) if !m.is_file() => "not a regular file".to_string(),
            Ok(m) if m.permissions().mode() & 0o111 == 0 => {
                "not executable (chmod +x it to make it a tool)".to_string()
            }
            Ok(m) => {
                use std::os::unix::fs::MetadataExt;
                let file = (m.dev(), m.ino());
                out.push(Candidate { path, origin, file });
                continue;
            }
        };
        skipped.push(Skipped { path, reason });
    }
}

/// The candidates that are links to (or copies of the very file of) this
/// executable under one of its tools' names, found by one run of it with
/// `--schemas` instead of one `--schema` run each: each answer is the one
/// its `--schema` would give, and starting this executable is most of what
/// a probe costs. Returns their entries and the other candidates; when the
/// run fails in any way, every candidate goes back to be probed alone.
fn ours_at_once(candidates: Vec<Candidate>, settings: &Settings) -> (Vec<Entry>, Vec<Candidate>) {
    use std::os::unix::fs::MetadataExt;
    let Ok(me) = std::fs::metadata("/proc/self/exe") else {
        return (Vec::new(), candidates);
    };
    let me = (me.dev(), me.ino());
    let (ours, others): (Vec<Candidate>, Vec<Candidate>) =
        candidates.into_iter().partition(|c| c.file == me);
    if ours.len() < 2 {
        return (Vec::new(), others.into_iter().chain(ours).collect());
    }
    let Some(schemas) = schemas_of(&ours[0].path, settings) else {
        return (Vec::new(), others.into_iter().chain(ours).collect());
    };
    let mut found = Vec::new();
    let mut rest = others;
    for candidate in ours {
        let name = candidate
            .path
            .file_name()
            .and_then(OsStr::to_str)
            .unwrap_or("");
        // The tool its `--schema` run would be: by command or schema name.
        let schema = schemas
            .iter()
            .find(|(command, schema)| *command == name || schema["name"].as_str() == Some(name));
        match schema.map(|(_, schema)| schema::normalise(schema)) {
            Some(Ok(schema)) => found.push(entry(candidate, Protocol::Ikigai, schema)),
            // Not one of its tools' names: probed alone, to say why.
            _ => rest.push(candidate),
        }
    }
    (found, rest)
}

/// The registry entry of a candidate that answered `schema` (normalised).
fn entry(candidate: Candidate, protocol: Protocol, schema: Value) -> Entry {
    Entry {
        name: schema["name"].as_str().unwrap_or_default().to_string(),
        description: schema["description"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        path: candidate.path,
        protocol,
        origin: candidate.origin,
        schema,
    }
}

/// This executable's tools' schemas, by command name, from one run of
/// `file` (this executable) with `--schemas` under the discovery deadline.
fn schemas_of(file: &Path, settings: &Settings) -> Option<serde_json::Map<String, Value>> {
    let mut cmd = std::process::Command::new(file);
    // The name decides the personality; "ikigai-tools" is none of the
    // tools, so the flag does.
    std::os::unix::process::CommandExt::arg0(&mut cmd, "ikigai-tools");
    cmd.arg(crate::dispatch::SCHEMAS_FLAG)
        .env_clear()
        .envs(crate::sandbox::secrets::base_env(std::env::vars_os()));
    let mut proc = Proc::start(cmd, None, SCHEMA_CAP, STDERR_CAP, false).ok()?;
    let deadline = Instant::now() + settings.discovery_deadline;
    while !proc.settled(Instant::now()) {
        if Instant::now() >= deadline || proc.out.truncated() {
            proc.kill();
        }
        // Past the deadline, the kill's drain time is what is waited for.
        let until = deadline.max(Instant::now() + std::time::Duration::from_millis(5));
        child::step(&mut [&mut proc], until);
    }
    let finished = proc.finish();
    if !finished.status.is_some_and(|s| s.success()) {
        return None;
    }
    match serde_json::from_slice(&finished.out.complete()?) {
        Ok(Value::Object(all)) => Some(all),
        _ => None,
    }
}

/// Why a probe was killed.
#[derive(Clone, Copy, PartialEq)]
enum Killed {
    Deadline,
    TooBig,
}

struct Probe {
    candidate: Candidate,
    protocol: Protocol,
    proc: Option<Proc>,
    killed: Option<Killed>,
    /// When the probe (both its tries) has had its time: the discovery
    /// deadline counts from its own start, so probes that wait their turn
    /// under a small open-file limit get the same time as the first.
    deadline: Instant,
    /// Why `--schema` failed, once `--describe` is being tried.
    first_failure: Option<String>,
    outcome: Option<Result<Value, String>>,
}

impl Probe {
    fn start(candidate: Candidate, protocol: Protocol, deadline: Instant) -> Probe {
        let mut probe = Probe {
            candidate,
            protocol,
            proc: None,
            killed: None,
            deadline,
            first_failure: None,
            outcome: None,
        };
        probe.spawn(protocol);
        probe
    }

    fn spawn(&mut self, protocol: Protocol) {
        self.protocol = protocol;
        self.killed = None;
        let flag = OsStr::new(protocol.schema_flag());
        match Proc::spawn(&self.candidate.path, &[flag], None, SCHEMA_CAP, STDERR_CAP) {
            Ok(proc) => self.proc = Some(proc),
            Err(e) => self.outcome = Some(Err(format!("cannot run: {e}"))),
        }
    }

    /// Looks at a settled process: a schema, a second try, or the reason.
    fn conclude(&mut self, finished: Finished, settings: &Settings) {
        let flag = self.protocol.schema_flag();
        let answer = judge(&finished, self.killed, settings);
        match answer {
            Ok(schema) => self.outcome = Some(Ok(schema)),
            Err(why)
                if self.protocol == Protocol::Ikigai && self.killed != Some(Killed::Deadline) =>
            {
                self.first_failure = Some(why);
                self.spawn(Protocol::Shellclaw);
            }
            Err(why) => {
                let reason = match self.first_failure.take() {
                    Some(first) if first == why => format!("--schema and {flag}: {why}"),
                    Some(first) => format!("--schema: {first}; {flag}: {why}"),
                    None => format!("{flag}: {why}"),
                };
                self.outcome = Some(Err(reason));
            }
        }
    }
}

/// Runs every candidate's schema flag in parallel under the deadline.
fn probe_all(
    candidates: Vec<Candidate>,
    settings: &Settings,
    skipped: &mut Vec<Skipped>,
) -> Vec<Entry> {
    let in_flight = probes_in_flight();
    let mut queue: VecDeque<Candidate> = candidates.into();
    let mut probes: Vec<Probe> = Vec::new();
    loop {
        let now = Instant::now();
        let running = probes.iter().filter(|p| p.proc.is_some()).count();
        for _ in running..in_flight {
            let Some(candidate) = queue.pop_front() else {
                break;
            };
            let deadline = now + settings.discovery_deadline;
            probes.push(Probe::start(candidate, Protocol::Ikigai, deadline));
        }
        for probe in probes.iter_mut() {
            let settled = probe.proc.as_ref().is_some_and(|p| p.settled(now));
            if settled {
                let finished = probe.proc.take().map(Proc::finish);
                if let Some(finished) = finished {
                    probe.conclude(finished, settings);
                }
            }
        }
        let mut running: Vec<&mut Proc> = Vec::new();
        // The earliest deadline of a probe still running.
        let mut until = now + settings.discovery_deadline;
        for probe in probes.iter_mut() {
            let Some(proc) = probe.proc.as_mut() else {
                continue;
            };
            if !proc.killed() && !proc.exited() {
                if now >= probe.deadline {
                    proc.kill();
                    probe.killed = Some(Killed::Deadline);
                } else if proc.out.truncated() {
                    proc.kill();
                    probe.killed = Some(Killed::TooBig);
                } else {
                    until = until.min(probe.deadline);
                }
            }
            running.push(proc);
        }
        if running.is_empty() && queue.is_empty() {
            break;
        }
        if running.is_empty() {
            // Every probe in flight just ended: start the next ones now, not
            // after waiting on nothing.
            continue;
        }
        // Killed processes' own drain times wake us too.
        child::step(&mut running, until);
    }
    let mut found = Vec::new();
    for probe in probes {
        match probe.outcome {
            Some(Ok(schema)) => found.push(entry(probe.candidate, probe.protocol, schema)),
            Some(Err(reason)) => skipped.push(Skipped {
                path: probe.candidate.path,
                reason,
            }),
            None => skipped.push(Skipped {
                path: probe.candidate.path,
                reason: "discovery ended before the tool answered".into(),
            }),
        }
    }
    found
}

/// Descriptors one probe holds open: its stdout, its stderr and its pidfd.
const FDS_PER_PROBE: usize = 3;
/// Descriptors left for everything else (and each spawn's passing ones),
/// or half the limit when it is small: under `ulimit -n 64` probes still
/// run several at once.
const FDS_SPARE: usize = 64;

/// How many probes may run at once within the open-file limit.
fn probes_in_flight() -> usize {
    let limit = open_file_limit().unwrap_or(1024);
    (limit.saturating_sub(FDS_SPARE.min(limit / 2)) / FDS_PER_PROBE).max(1)
}

/// The soft limit on open files.
fn open_file_limit() -> Option<usize> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    ok.then(|| usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX))
}

/// Raises the soft limit on open files to the hard limit, so discovery can
/// probe a large directory at once. Called once, at the host's start.
pub fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            // Refused (an unbounded hard limit): keep the soft one.
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// What one `--schema`/`--describe` run amounts to.
fn judge(
    finished: &Finished,
    killed: Option<Killed>,
    settings: &Settings,
) -> Result<Value, String> {
    match killed {
        Some(Killed::Deadline) => {
            return Err(format!(
                "no answer within {} (killed)",
                format_secs(settings.discovery_deadline)
            ))
        }
        Some(Killed::TooBig) => {
            return Err(format!("printed more than {SCHEMA_CAP} bytes (killed)"));
        }
        None => {}
    }
    let Some(status) = finished.status else {
        return Err("could not be waited for".into());
    };
    let stderr = first_line(&finished.err.text());
    let said = if stderr.is_empty() {
        String::new()
    } else {
        format!(" ({stderr})")
    };
    if let Some(code) = status.code().filter(|c| *c != 0) {
        return Err(format!("exited with code {code}{said}"));
    }
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return Err(format!(
            "crashed with exit code {} (signal {signal}){said}",
            crate::exit::of_signal(signal)
        ));
    }
    let text = finished.out.text();
    if text.trim().is_empty() {
        return Err(format!("printed nothing{said}"));
    }
    let answer: Value = serde_json::from_str(&text)
        .map_err(|e| format!("printed no JSON ({e}): {}", quote(text.trim())))?;
    schema::normalise(&answer)
}

fn first_line(text: &str) -> String {
    quote(
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or(""),
    )
}

/// At most QUOTE characters of a tool's own words.
fn quote(text: &str) -> String {
    super::text::clip(text, QUOTE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_short() {
        assert_eq!(quote("abc"), "abc");
        let long = "é".repeat(200);
        assert_eq!(quote(&long).chars().count(), QUOTE);
        assert_eq!(first_line("\n  \n  oops: bad\nmore"), "oops: bad");
    }

    #[test]
    fn one_directory_named_twice_is_scanned_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = Settings::resolve(Default::default(), &Default::default(), None);
        settings.system_dir = Some(dir.path().to_path_buf());
        settings.user_dir = Some(dir.path().join("."));
        assert_eq!(
            directories(&settings),
            [(dir.path().to_path_buf(), Origin::System)]
        );
        settings.user_dir = Some(dir.path().join("sub"));
        assert_eq!(directories(&settings).len(), 2);
    }
}
