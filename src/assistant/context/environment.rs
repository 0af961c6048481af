//! The environment block of the system prompt (decision 60): where the
//! model is, so its first calls are not `pwd` and `ls`. It holds only what
//! stays the same within a day unless the person changes it (no clock
//! time), so the prompt's bytes, and the provider's cache of them, last
//! the session; a value that does change (a new day on resume, another
//! model) reaches the model as a note in the conversation instead
//! (`changes`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

use super::instructions::git_root;

/// How long `git status` may take at start before the count is left out.
const GIT_DEADLINE: Duration = Duration::from_secs(2);

/// The facts the block states, each as it will be shown.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    pub cwd: String,
    /// `Linux 6.18.44 (Debian GNU/Linux 12 (bookworm))`.
    pub os: String,
    pub shell: String,
    /// `2026-11-28 (UTC)`.
    pub date: String,
    /// `repository at /p, branch main, 3 files differ from HEAD`, or that
    /// it is not in one.
    pub git: String,
    /// `workspace-write: writable /p, /tmp; network off`.
    pub sandbox: String,
    /// `auto (...)` or `ask (...)`.
    pub approval: String,
    pub model: String,
}

impl Environment {
    /// The facts of this process: `sandbox`, `approval` and `model` as the
    /// caller words them.
    pub fn here(
        cwd: &Path,
        shell: Option<&str>,
        sandbox: String,
        approval: String,
        model: String,
    ) -> Environment {
        Environment {
            cwd: cwd.display().to_string(),
            os: os(),
            shell: shell.unwrap_or("/bin/sh").to_string(),
            date: today(),
            git: git(cwd),
            sandbox,
            approval,
            model,
        }
    }

    /// The block as it goes into the system prompt.
    pub fn block(&self) -> String {
        format!(
            "# Environment\n\n\
             - Working directory: {}\n\
             - OS: {}\n\
             - Shell: {}\n\
             - Today: {}\n\
             - Git: {}\n\
             - Sandbox: {}\n\
             - Approval: {}\n\
             - Model: {}",
            self.cwd,
            self.os,
            self.shell,
            self.date,
            self.git,
            self.sandbox,
            self.approval,
            self.model
        )
    }

    /// A note for the model naming what differs in `now` from `self` (the
    /// values the prompt states), or None when nothing the block names
    /// has changed. The git line is left out: files change all the time
    /// and the model sees them change.
    pub fn changes(&self, now: &Environment) -> Option<String> {
        let mut lines = Vec::new();
        for (name, was, is) in [
            ("Today", &self.date, &now.date),
            ("Working directory", &self.cwd, &now.cwd),
            ("Sandbox", &self.sandbox, &now.sandbox),
            ("Approval", &self.approval, &now.approval),
            ("Model", &self.model, &now.model),
        ] {
            if was != is {
                lines.push(format!("- {name}: {is} (was {was})"));
            }
        }
        (!lines.is_empty()).then(|| {
            format!(
                "[Environment update: these values of the environment block have changed]\n{}",
                lines.join("\n")
            )
        })
    }
}

/// `Linux 6.18.44 (Debian GNU/Linux 12 (bookworm))`: the kernel from
/// uname, the distribution from os-release.
fn os() -> String {
    // SAFETY: utsname is plain data that uname fills.
    let mut names: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a utsname.
    let kernel = if unsafe { libc::uname(&mut names) } == 0 {
        let field = |f: &[libc::c_char]| {
            let bytes: Vec<u8> = f
                .iter()
                .take_while(|c| **c != 0)
                .map(|c| *c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        format!("{} {}", field(&names.sysname), field(&names.release))
    } else {
        std::env::consts::OS.to_string()
    };
    let pretty = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        })
        .filter(|p| !p.is_empty());
    match pretty {
        Some(p) => format!("{kernel} ({p})"),
        None => kernel,
    }
}

/// Today's local date and its time zone's abbreviation: `2026-11-28 (CET)`.
pub fn today() -> String {
    // SAFETY: time(NULL) only returns the time.
    let now = unsafe { libc::time(std::ptr::null_mut()) };
    // SAFETY: tm is plain data that localtime_r fills.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to a time_t and a tm.
    if unsafe { libc::localtime_r(&now, &mut tm) }.is_null() {
        return "unknown".into();
    }
    let mut buf = [0u8; 64];
    let format = c"%Y-%m-%d (%Z, UTC%z)";
    // SAFETY: buf is writable for its length, the format is NUL-terminated
    // and tm was filled above.
    let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), buf.len(), format.as_ptr(), &tm) };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// The git line: the repository's root, branch and how many files differ
/// from HEAD (git's own count, with untracked files), or that there is no
/// repository.
fn git(cwd: &Path) -> String {
    let Some(root) = git_root(cwd) else {
        return "not a git repository".into();
    };
    let branch = branch(&root).unwrap_or_else(|| "detached HEAD".into());
    let changed = match status_count(cwd) {
        Some(0) => "no files differ from HEAD at start".to_string(),
        Some(1) => "1 file differs from HEAD at start".to_string(),
        Some(n) => format!("{n} files differ from HEAD at start"),
        None => "changes unknown (git status did not answer)".to_string(),
    };
    format!(
        "repository at {}, branch {branch}, {changed}",
        root.display()
    )
}

/// The branch `.git/HEAD` names (following a worktree's `gitdir:` file).
fn branch(root: &Path) -> Option<String> {
    let dot = root.join(".git");
    let dir: PathBuf = if dot.is_dir() {
        dot
    } else {
        let text = std::fs::read_to_string(&dot).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        root.join(target)
    };
    let head = std::fs::read_to_string(dir.join("HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_string)
}

/// `git status --porcelain`'s line count, or None when git is missing,
/// fails or takes longer than `GIT_DEADLINE` (a huge repository).
fn status_count(cwd: &Path) -> Option<usize> {
    let mut child = Command::new("git")
        .args(["--no-optional-locks", "status", "--porcelain"])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut text).map(|_| text)
    });
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(_)) | Err(_) => return None,
            Ok(None) if start.elapsed() > GIT_DEADLINE => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    let text = reader.join().ok()?.ok()?;
    Some(
        text.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Environment {
        Environment {
            cwd: "/p".into(),
            os: "Linux 6.1".into(),
            shell: "/bin/bash".into(),
            date: "2026-11-28 (UTC, UTC+0000)".into(),
            git: "not a git repository".into(),
            sandbox: "off".into(),
            approval: "auto".into(),
            model: "openai gpt-4.1".into(),
        }
    }

    #[test]
    fn the_block_names_every_fact_and_changes_are_a_note() {
        let env = sample();
        let block = env.block();
        for line in [
            "- Working directory: /p",
            "- OS: Linux 6.1",
            "- Shell: /bin/bash",
            "- Today: 2026-11-28",
            "- Git: not a git",
            "- Sandbox: off",
            "- Approval: auto",
            "- Model: openai gpt-4.1",
        ] {
            assert!(block.contains(line), "{line}: {block}");
        }
        assert_eq!(env.changes(&env), None);
        let later = Environment {
            date: "2026-11-29 (UTC, UTC+0000)".into(),
            model: "anthropic claude".into(),
            git: "changed".into(),
            ..sample()
        };
        let note = env.changes(&later).unwrap();
        assert!(
            note.contains("- Today: 2026-11-29 (UTC, UTC+0000) (was 2026-11-28"),
            "{note}"
        );
        assert!(note.contains("- Model: anthropic claude (was openai gpt-4.1)"));
        assert!(!note.contains("Git"));
    }

    #[test]
    fn git_facts_come_from_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(git(dir.path()), "not a git repository");
        let git_ok = Command::new("git").arg("--version").output().is_ok();
        if !git_ok {
            eprintln!("skipped: git is not installed");
            return;
        }
        let run = |args: &[&str]| {
            let ok = Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        run(&["init", "-q", "-b", "trunk"]);
        std::fs::write(dir.path().join("a"), "a").unwrap();
        std::fs::write(dir.path().join("b"), "b").unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let line = git(&sub);
        assert_eq!(
            line,
            format!(
                "repository at {}, branch trunk, 2 files differ from HEAD at start",
                dir.path().display()
            )
        );
        assert!(today().starts_with("20"), "{}", today());
        assert!(os().contains(' '));
    }
}
