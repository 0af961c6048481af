//! Background shells (decision 68; docs/decisions.md 104): commands that run
//! beside the conversation (a dev server, a watcher, a long build) while the
//! model goes on. Each job is a call of the discovered `bash` tool made the
//! way every call is made (`call::call_background`: the same sandbox,
//! containment and secrets-filtered environment), with no deadline, on a
//! thread of its own that lives exactly as long as the job, so the job's
//! parent-death signal ends it with the host, even when the host is killed.
//!
//! Our bash copies its command's output to stderr as it comes; the job
//! appends each piece to a log file (under the session's directory, made
//! through `host::files`; at most its newest `MAX_LOG` bytes) and keeps the last `KEPT` bytes in memory, from which
//! `output` answers what was written since the last read. At most
//! `MAX_RUNNING` jobs run at once. A job that ended is kept for
//! `FORGET_AFTER` (at most `MAX_ENDED` of them); after that, asking for it
//! says so and names its log.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::call;
use super::files::{self, Dir};
use super::registry::Registry;
use super::settings::Settings;

/// The most jobs running at once.
pub const MAX_RUNNING: usize = 8;
/// The bytes of a job's output kept in memory (the rest is in its log).
pub const KEPT: usize = 1 << 20;
/// The longest `shell_output` waits for output.
pub const MAX_WAIT: Duration = Duration::from_secs(30);
/// How long an ended job stays readable.
pub const FORGET_AFTER: Duration = Duration::from_secs(600);
/// The most ended jobs kept readable; the oldest go first.
const MAX_ENDED: usize = 16;
/// How long `kill` waits for a job to be gone before it answers.
const KILL_WAIT: Duration = Duration::from_secs(5);
/// The most bytes a job's log keeps: its newest output.
pub const MAX_LOG: u64 = 256 << 20;
/// The tool a job runs its command with.
const SHELL: &str = "bash";

/// The host's background jobs; clones share them.
#[derive(Clone, Default)]
pub struct Jobs {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    table: Mutex<Table>,
    /// Signalled when a job writes or ends.
    changed: Condvar,
}

#[derive(Default)]
struct Table {
    last_id: u64,
    jobs: Vec<Job>,
    /// Jobs no longer kept: (id, how they ended, when, their log).
    forgotten: Vec<(u64, Status, Instant, PathBuf)>,
}

struct Job {
    id: u64,
    command: String,
    started: Instant,
    log: PathBuf,
    /// The last `KEPT` bytes written.
    tail: VecDeque<u8>,
    /// Bytes written in all.
    total: u64,
    /// Bytes already answered by `output`.
    read: u64,
    status: Status,
    ended: Option<Instant>,
    stop: Arc<AtomicBool>,
}

/// How a job stands.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Running,
    Exited(i32),
    Killed,
    /// It could not run, or its call failed (the host's words).
    Failed(String),
}

impl Status {
    fn word(&self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Exited(_) => "exited",
            Status::Killed => "killed",
            Status::Failed(_) => "failed",
        }
    }

    fn describe(&self) -> String {
        match self {
            Status::Running => "running".into(),
            Status::Exited(code) => format!("exited with code {code}"),
            Status::Killed => "killed".into(),
            Status::Failed(why) => format!("failed: {why}"),
        }
    }
}

/// Why a job did not start.
#[derive(Clone, Debug, PartialEq)]
pub enum NotStarted {
    /// `MAX_RUNNING` jobs run already (the words name them).
    Limit(String),
    /// Anything else, in words for the model.
    Cannot(String),
}

/// One line of `/jobs`.
#[derive(Clone, Debug, PartialEq)]
pub struct Listed {
    pub id: u64,
    pub command: String,
    pub status: Status,
    /// How long it ran, or runs so far.
    pub ran: Duration,
    pub log: PathBuf,
}

impl Jobs {
    /// Starts `command` as a job, its log in `dir/jobs/` (`dir`: the
    /// session's directory; without one no job starts), and answers at
    /// once with its id. Err: why it cannot start, for the model.
    pub fn start(
        &self,
        registry: &Registry,
        settings: &Settings,
        command: &str,
        dir: Option<&Path>,
    ) -> Result<Value, NotStarted> {
        let Some(shell) = registry.lookup(SHELL).cloned() else {
            return Err(NotStarted::Cannot(format!(
                "background shells run their command with the '{SHELL}' tool, which is not \
                 installed here"
            )));
        };
        if command.trim().is_empty() {
            return Err(NotStarted::Cannot("'command' is empty".into()));
        }
        let mut table = self.lock();
        table.tidy();
        let running: Vec<String> = table
            .jobs
            .iter()
            .filter(|j| j.status == Status::Running)
            .map(|j| format!("{} ({})", j.id, crate::host::text::clip(&j.command, 40)))
            .collect();
        if running.len() >= MAX_RUNNING {
            return Err(NotStarted::Limit(format!(
                "{MAX_RUNNING} background jobs are running already (jobs {}); end one with \
                 shell_kill first",
                running.join(", ")
            )));
        }
        let id = table.last_id + 1;
        // Only in the session's directory: a directory of the host's own
        // that tools cannot write (never `$TMPDIR`, where a tool could
        // plant a link for the host to write through).
        let dir = dir.ok_or_else(|| {
            NotStarted::Cannot(
                "background shells keep their output in the session's directory, and this \
                 conversation has none (neither XDG_DATA_HOME nor HOME is set)"
                    .into(),
            )
        })?;
        let (file, log) = Log::create(&dir.join("jobs"), id, MAX_LOG)
            .map_err(|e| NotStarted::Cannot(format!("cannot make the job's log: {e}")))?;
        table.last_id = id;
        let stop = Arc::new(AtomicBool::new(false));
        table.jobs.push(Job {
            id,
            command: command.to_string(),
            started: Instant::now(),
            log: log.clone(),
            tail: VecDeque::new(),
            total: 0,
            read: 0,
            status: Status::Running,
            ended: None,
            stop: Arc::clone(&stop),
        });
        drop(table);
        let jobs = self.clone();
        let settings = settings.clone();
        let command = command.to_string();
        let spawned = std::thread::Builder::new()
            .name(format!("job-{id}"))
            .spawn(move || jobs.run(id, shell, settings, command, file, stop));
        if let Err(e) = spawned {
            self.ended(
                id,
                Status::Failed(format!("cannot start its thread: {e}")),
                None,
            );
        }
        Ok(json!({
            "job_id": id,
            "status": "running",
            "log": log.to_string_lossy(),
        }))
    }

    /// The job's thread: the call, then its ending.
    fn run(
        &self,
        id: u64,
        shell: super::registry::Entry,
        settings: Settings,
        command: String,
        file: Log,
        stop: Arc<AtomicBool>,
    ) {
        let registry = Registry::build(vec![shell], vec![]);
        let jobs = self.clone();
        let file = Arc::new(Mutex::new(file));
        let log = Arc::clone(&file);
        let watch: super::child::Watch = Box::new(move |piece: &[u8]| {
            // The log holds the output's last `MAX_LOG` bytes; a full disk
            // loses only the log.
            let _ = log.lock().unwrap_or_else(|e| e.into_inner()).write(piece);
            jobs.append(id, piece);
        });
        let arguments = json!({ "command": command });
        let outcome = call::call_background(&registry, SHELL, &arguments, &settings, &stop, watch);
        let result = outcome.to_json();
        let status = if stop.load(Ordering::SeqCst) {
            Status::Killed
        } else if outcome.success() {
            match result["result"]["exit_code"].as_i64() {
                Some(code) => Status::Exited(code as i32),
                None => Status::Failed("the shell gave no exit code".into()),
            }
        } else {
            Status::Failed(result["error"].as_str().unwrap_or("failed").to_string())
        };
        // What the shell said without copying it (a command it could not
        // start at all) is output too.
        let said = result["result"]["output"].as_str().map(str::to_string);
        let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
        if file.written == 0 {
            if let Some(text) = said.as_deref().filter(|t| !t.is_empty()) {
                let _ = file.write(text.as_bytes());
            }
        }
        drop(file);
        self.ended(id, status, said);
    }

    fn append(&self, id: u64, piece: &[u8]) {
        let mut table = self.lock();
        if let Some(job) = table.jobs.iter_mut().find(|j| j.id == id) {
            job.push(piece);
        }
        drop(table);
        self.shared.changed.notify_all();
    }

    fn ended(&self, id: u64, status: Status, said: Option<String>) {
        let mut table = self.lock();
        if let Some(job) = table.jobs.iter_mut().find(|j| j.id == id) {
            if job.total == 0 {
                if let Some(text) = said.filter(|t| !t.is_empty()) {
                    job.push(text.as_bytes());
                }
            }
            job.status = status;
            job.ended = Some(Instant::now());
        }
        drop(table);
        self.shared.changed.notify_all();
    }

    /// What job `id` wrote since the last read (at most `cap` bytes: the
    /// latest; what is left out is counted and in the log), and how it
    /// stands. Waits up to `wait` for output or the job's end when there is
    /// nothing new yet. Err: no such job, for the model.
    pub fn output(&self, id: u64, wait: Duration, cap: usize) -> Result<Value, String> {
        let deadline = Instant::now() + wait.min(MAX_WAIT);
        let mut table = self.lock();
        table.tidy();
        loop {
            let job = table.find(id)?;
            let now = Instant::now();
            if job.total > job.read || job.status != Status::Running || now >= deadline {
                break;
            }
            table = self
                .shared
                .changed
                .wait_timeout(table, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let job = table.jobs.iter_mut().find(|j| j.id == id).expect("found");
        Ok(job.answer(cap))
    }

    /// Stops job `id` and everything it started; answers once it is gone
    /// (or, at worst, after a few seconds).
    pub fn kill(&self, id: u64) -> Result<Value, String> {
        let deadline = Instant::now() + KILL_WAIT;
        let mut table = self.lock();
        table.tidy();
        let job = table.find(id)?;
        if job.status != Status::Running {
            let status = job.status.describe();
            return Ok(json!({
                "job_id": id,
                "status": job.status.word(),
                "note": format!("job {id} had already ended ({status}); nothing was killed"),
            }));
        }
        job.stop.store(true, Ordering::SeqCst);
        loop {
            let job = table.find(id)?;
            let now = Instant::now();
            if job.status != Status::Running || now >= deadline {
                break;
            }
            table = self
                .shared
                .changed
                .wait_timeout(table, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let job = table.find(id)?;
        let unread = job.total - job.read;
        Ok(json!({
            "job_id": id,
            "status": job.status.word(),
            "unread_bytes": unread,
            "log": job.log.to_string_lossy(),
        }))
    }

    /// Every job still kept, oldest first.
    pub fn list(&self) -> Vec<Listed> {
        let mut table = self.lock();
        table.tidy();
        let now = Instant::now();
        table
            .jobs
            .iter()
            .map(|j| Listed {
                id: j.id,
                command: j.command.clone(),
                status: j.status.clone(),
                ran: j.ended.unwrap_or(now) - j.started,
                log: j.log.clone(),
            })
            .collect()
    }

    /// Stops every running job (the host is leaving); returns at once.
    pub fn stop_all(&self) {
        for job in &self.lock().jobs {
            job.stop.store(true, Ordering::SeqCst);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.shared.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Table {
    /// Forgets ended jobs kept long enough.
    fn tidy(&mut self) {
        let now = Instant::now();
        let mut ended: Vec<(Instant, u64)> = self
            .jobs
            .iter()
            .filter_map(|j| j.ended.map(|at| (at, j.id)))
            .collect();
        ended.sort();
        let over = ended.len().saturating_sub(MAX_ENDED);
        let gone: Vec<u64> = ended
            .iter()
            .enumerate()
            .filter(|(i, (at, _))| *i < over || now.duration_since(*at) >= FORGET_AFTER)
            .map(|(_, (_, id))| *id)
            .collect();
        for id in gone {
            if let Some(at) = self.jobs.iter().position(|j| j.id == id) {
                let job = self.jobs.remove(at);
                let ended = job.ended.unwrap_or(now);
                self.forgotten.push((job.id, job.status, ended, job.log));
            }
        }
    }

    fn find(&mut self, id: u64) -> Result<&mut Job, String> {
        if let Some(at) = self.jobs.iter().position(|j| j.id == id) {
            return Ok(&mut self.jobs[at]);
        }
        if let Some((_, status, at, log)) = self.forgotten.iter().find(|f| f.0 == id) {
            return Err(format!(
                "job {id} {} {} ago and is no longer kept; its whole output is in {} \
                 (file_read can read it)",
                status.describe(),
                words(at.elapsed()),
                log.display()
            ));
        }
        let known: Vec<String> = self.jobs.iter().map(|j| j.id.to_string()).collect();
        Err(match known.is_empty() {
            true => format!("there is no job {id}: no background job has been started"),
            false => format!("there is no job {id} (jobs: {})", known.join(", ")),
        })
    }
}

impl Job {
    fn push(&mut self, piece: &[u8]) {
        self.total += piece.len() as u64;
        let piece = &piece[piece.len().saturating_sub(KEPT)..];
        let over = (self.tail.len() + piece.len()).saturating_sub(KEPT);
        self.tail.drain(..over);
        self.tail.extend(piece);
    }

    /// The unread output (its latest `cap` bytes) and the job's state; what
    /// is answered counts as read.
    fn answer(&mut self, cap: usize) -> Value {
        let kept_from = self.total - self.tail.len() as u64;
        let mut from = self
            .read
            .max(kept_from)
            .max(self.total.saturating_sub(cap as u64));
        let offset = (from - kept_from) as usize;
        let (a, b) = self.tail.as_slices();
        let mut bytes: Vec<u8> = if offset < a.len() {
            a[offset..].iter().chain(b).copied().collect()
        } else {
            b[offset - a.len()..].to_vec()
        };
        // Whole characters only: a cut start skips a character's tail, and
        // a running job's last, unfinished character waits for the next read.
        let skip = bytes
            .iter()
            .take(3)
            .take_while(|b| (**b & 0xC0) == 0x80)
            .count();
        if from > self.read {
            bytes.drain(..skip);
            from += skip as u64;
        }
        let mut to = self.total;
        if self.status == Status::Running {
            let held = unfinished_char(&bytes);
            bytes.truncate(bytes.len() - held);
            to -= held as u64;
        }
        let omitted = from - self.read;
        self.read = to;
        let mut answer = json!({
            "job_id": self.id,
            "status": self.status.word(),
            "output": String::from_utf8_lossy(&bytes),
        });
        match &self.status {
            Status::Exited(code) => answer["exit_code"] = json!(code),
            Status::Failed(why) => answer["error"] = json!(why),
            _ => {}
        }
        if omitted > 0 {
            answer["omitted_bytes"] = json!(omitted);
            answer["note"] = json!(format!(
                "{omitted} earlier bytes of output were left out; the whole output is in {}",
                self.log.display()
            ));
        }
        answer
    }
}

/// How many bytes at the end of `bytes` begin a character not yet whole.
fn unfinished_char(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 == 0xC0 {
            let need = if b >= 0xF0 {
                4
            } else if b >= 0xE0 {
                3
            } else {
                2
            };
            return if back < need { back } else { 0 };
        }
        if b & 0xC0 != 0x80 {
            return 0;
        }
    }
    0
}

/// The log, new, 0600 in a 0700 directory (decision 26).
/// A job's log: the last `limit` bytes of its output at most. Past the
/// limit, its newest half is copied to a new file that replaces it (one
/// copy per half a limit written: the log stays a plain file any tool
/// reads, at twice the writes at worst).
struct Log {
    dir: Dir,
    name: String,
    file: File,
    len: u64,
    limit: u64,
    /// Bytes written in all.
    written: u64,
}

impl Log {
    /// A new log for job `id` in `dir` (made the host's own when missing):
    /// `ID.log`, or `ID-N.log` when a resumed session's job had the id.
    fn create(dir: &Path, id: u64, limit: u64) -> std::io::Result<(Log, PathBuf)> {
        let dir = Dir::own(dir)?;
        for n in 0.. {
            let name = match n {
                0 => format!("{id}.log"),
                n => format!("{id}-{n}.log"),
            };
            match dir.create_new(&name, 0o600) {
                Ok(file) => {
                    let path = dir.path().join(&name);
                    let log = Log {
                        dir,
                        name,
                        file,
                        len: 0,
                        limit,
                        written: 0,
                    };
                    return Ok((log, path));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        unreachable!("an unbounded range ends only by returning")
    }

    fn write(&mut self, piece: &[u8]) -> std::io::Result<()> {
        self.written += piece.len() as u64;
        let piece = &piece[piece.len().saturating_sub(self.limit as usize)..];
        if self.len + piece.len() as u64 > self.limit {
            self.keep_newest((self.limit / 2).min(self.limit - piece.len() as u64))?;
        }
        self.file
            .write_all(piece)
            .map_err(|e| files::plain(e, self.dir.path(), &self.dir.path().join(&self.name)))?;
        self.len += piece.len() as u64;
        Ok(())
    }

    /// Replaces the log by a file holding its newest `keep` bytes.
    fn keep_newest(&mut self, keep: u64) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let temp = format!(".{}.new", self.name);
        let _ = self.dir.remove_file(&temp);
        let mut new = self.dir.create_new(&temp, 0o600)?;
        let from = self.len.saturating_sub(keep);
        let mut at = from;
        let mut buf = vec![0; 1 << 20];
        while at < self.len {
            let n = self.file.read_at(&mut buf, at)?;
            if n == 0 {
                break;
            }
            new.write_all(&buf[..n])?;
            at += n as u64;
        }
        self.dir.rename(&temp, &self.name)?;
        self.len = at - from;
        self.file = new;
        Ok(())
    }
}

/// "3m05s", "12s", "1h02m".
pub fn words(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_keeps_its_newest_bytes_and_is_never_written_through_a_link() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("s/jobs");
        let (mut log, path) = Log::create(&dir, 1, 10).unwrap();
        assert_eq!(path, dir.join("1.log"));
        for piece in ["abcd", "efgh", "ijkl"] {
            log.write(piece.as_bytes()).unwrap();
        }
        // Past 10 bytes, the newest half was kept and the rest added.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "defghijkl");
        log.write(b"0123456789abc").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "3456789abc");
        assert_eq!(log.written, 25);
        // A resumed session's job 1 has its own file; a link is refused.
        let (_, again) = Log::create(&dir, 1, 10).unwrap();
        assert_eq!(again, dir.join("1-1.log"));
        let outside = root.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::create_dir_all(root.path().join("ikigai/sessions")).unwrap();
        std::os::unix::fs::symlink(&outside, root.path().join("ikigai/sessions/t")).unwrap();
        let e = Log::create(&root.path().join("ikigai/sessions/t/jobs"), 1, 10)
            .err()
            .unwrap();
        assert!(e.to_string().contains("t is a symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    }

    fn job() -> Job {
        Job {
            id: 1,
            command: "x".into(),
            started: Instant::now(),
            log: "/tmp/l".into(),
            tail: VecDeque::new(),
            total: 0,
            read: 0,
            status: Status::Running,
            ended: None,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    #[test]
    fn output_since_the_last_read_latest_first_whole_characters() {
        let mut j = job();
        j.push(b"hello ");
        assert_eq!(j.answer(100)["output"], "hello ");
        assert_eq!(j.answer(100)["output"], "");
        // "é" split across two writes waits for its second byte.
        j.push(b"caf\xC3");
        assert_eq!(j.answer(100)["output"], "caf");
        j.push(b"\xA9!");
        assert_eq!(j.answer(100)["output"], "é!");
        // More than the cap: the latest bytes, the rest counted.
        j.push(b"0123456789");
        let a = j.answer(4);
        assert_eq!(a["output"], "6789");
        assert_eq!(a["omitted_bytes"], 6);
        assert!(a["note"].as_str().unwrap().contains("/tmp/l"));
        j.status = Status::Exited(3);
        let a = j.answer(10);
        assert_eq!(
            (&a["status"], &a["exit_code"]),
            (&json!("exited"), &json!(3))
        );
    }

    #[test]
    fn the_tail_keeps_the_last_mebibyte() {
        let mut j = job();
        j.push(&vec![b'a'; KEPT]);
        j.push(b"bc");
        assert_eq!(j.tail.len(), KEPT);
        assert_eq!(j.total, KEPT as u64 + 2);
        assert_eq!(j.tail.back(), Some(&b'c'));
        let a = j.answer(KEPT * 2);
        assert_eq!(a["omitted_bytes"], 2);
    }

    #[test]
    fn unknown_and_forgotten_jobs_are_named() {
        let jobs = Jobs::default();
        let e = jobs.output(4, Duration::ZERO, 10).unwrap_err();
        assert_eq!(e, "there is no job 4: no background job has been started");
        let mut table = jobs.lock();
        let mut j = job();
        j.status = Status::Exited(0);
        j.ended = Some(Instant::now() - FORGET_AFTER - Duration::from_secs(1));
        table.jobs.push(j);
        drop(table);
        let e = jobs.kill(1).unwrap_err();
        assert!(
            e.starts_with("job 1 exited with code 0 10m01s ago and is no longer kept"),
            "{e}"
        );
        assert!(jobs.list().is_empty());
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(words(Duration::from_secs(5)), "5s");
        assert_eq!(words(Duration::from_secs(125)), "2m05s");
        assert_eq!(words(Duration::from_secs(3720)), "1h02m");
        assert_eq!(unfinished_char(b"a\xE2\x82"), 2);
        assert_eq!(unfinished_char(b"a\xE2\x82\xAC"), 0);
    }
}
