//! Running the hooks of one event as processes: each `sh -c COMMAND` in its
//! own process group, in the working directory, with the person's rights and
//! the host's environment less its secrets (a hook never sees a provider
//! key), the project's directory in `IKIGAI_PROJECT_DIR` and
//! `CLAUDE_PROJECT_DIR`, the event's JSON on stdin. All at once, or one
//! after another when the event asks; each under its own timeout, past
//! which its whole group is killed. Output is kept up to a cap, so a hook
//! that prints without end costs bounded memory.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::host::child::{self, Capture, Proc};

/// The most bytes of a hook's stdout kept: far more than any JSON answer or
/// context (10,000 characters reach the model); a hook that prints more is
/// stopped and its output refused.
pub const OUT_CAP: usize = 256 << 10;
/// The most bytes of its stderr kept (head and tail).
pub const ERR_CAP: usize = 64 << 10;

/// How one hook's process ended.
#[derive(Debug)]
pub enum End {
    Exit(i32),
    Signal(i32),
    /// Killed at its timeout (seconds).
    TimedOut(u32),
    /// Stopped after printing more than `OUT_CAP` bytes on stdout.
    TooMuch(u64),
    /// `sh` itself could not be started.
    NotStarted(String),
}

/// What one hook left.
pub struct Ran {
    pub end: End,
    pub out: Capture,
    pub err: Capture,
}

/// Where and how hooks run.
pub struct Launch<'a> {
    pub cwd: &'a Path,
    pub project_dir: &'a Path,
}

/// One hook to run: its command and timeout in seconds.
pub struct Job<'a> {
    pub command: &'a str,
    pub timeout: u32,
}

/// Runs `jobs` at once with `input` on each one's stdin; the results in the
/// order of `jobs`.
pub fn together(jobs: &[Job], input: &[u8], launch: &Launch) -> Vec<Ran> {
    let mut procs: Vec<Result<(Proc, Instant), String>> = jobs
        .iter()
        .map(|job| {
            start(job.command, input, launch)
                .map(|p| (p, Instant::now() + Duration::from_secs(job.timeout.into())))
        })
        .collect();
    loop {
        let now = Instant::now();
        let mut running: Vec<&mut Proc> = Vec::new();
        let mut until = now + Duration::from_secs(1);
        for (proc, deadline) in procs.iter_mut().flatten() {
            if proc.settled(now) {
                continue;
            }
            if !proc.killed() && (now >= *deadline || proc.out.truncated()) {
                proc.kill();
            }
            until = until.min((*deadline).max(now + Duration::from_millis(5)));
            running.push(proc);
        }
        if running.is_empty() {
            break;
        }
        child::step(&mut running, until);
    }
    procs
        .into_iter()
        .zip(jobs)
        .map(|(proc, job)| match proc {
            Ok((proc, deadline)) => finish(proc, deadline, job.timeout),
            Err(why) => Ran {
                end: End::NotStarted(why),
                out: Capture::new(0),
                err: Capture::new(0),
            },
        })
        .collect()
}

/// Runs one job (`together` with one).
pub fn one(job: &Job, input: &[u8], launch: &Launch) -> Ran {
    together(std::slice::from_ref(job), input, launch)
        .pop()
        .expect("one result for one job")
}

fn start(command: &str, input: &[u8], launch: &Launch) -> Result<Proc, String> {
    let mut cmd = std::process::Command::new("/bin/sh");
    let progress = OsString::from(crate::tools::bash::PROGRESS_VAR);
    let env = crate::sandbox::secrets::base_env(std::env::vars_os())
        .into_iter()
        // The assistant's own bash reads this; a hook's bash should not.
        .filter(|(name, _)| *name != progress);
    cmd.arg("-c")
        .arg(command)
        .current_dir(launch.cwd)
        .env_clear()
        .envs(env)
        .env("IKIGAI_PROJECT_DIR", launch.project_dir)
        .env("CLAUDE_PROJECT_DIR", launch.project_dir);
    // An empty input would leave stdin at /dev/null; hooks always get one
    // object, so there is always input.
    Proc::start(cmd, Some(input.to_vec()), OUT_CAP, ERR_CAP, false).map_err(|e| e.to_string())
}

fn finish(proc: Proc, deadline: Instant, timeout: u32) -> Ran {
    let killed = proc.killed();
    let too_much = proc.out.truncated();
    let total = proc.out.total();
    let finished = proc.finish();
    let end = if too_much {
        End::TooMuch(total)
    } else if killed && Instant::now() >= deadline {
        End::TimedOut(timeout)
    } else {
        use std::os::unix::process::ExitStatusExt;
        match finished.status {
            Some(s) => match (s.code(), s.signal()) {
                (Some(code), _) => End::Exit(code),
                (None, Some(signal)) => End::Signal(signal),
                (None, None) => End::Exit(-1),
            },
            None => End::NotStarted("its exit could not be collected".into()),
        }
    };
    Ran {
        end,
        out: finished.out,
        err: finished.err,
    }
}
