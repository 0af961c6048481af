//! The environment block of the system prompt (decision 60): where the
//! model is, so its first calls are not `pwd` and `ls`. It holds only what
//! stays the same within a day unless the person changes it (no clock
//! time), so the prompt's bytes, and the provider's cache of them, last
//! the session; a value that does change (a new day on resume, another
//! model) reaches the model as a note in the conversation instead
//! (`changes`).
//!
//! The git facts come from a git that runs inside the sandbox's read-only
//! fence (`host::call::ReadOnly`): git obeys a repository's config, its
//! `.git` file and `commondir`, which a tool may have written (an
//! fsmonitor, a clean filter), so the host never runs it outside. Where the
//! kernel cannot build that fence, git is not run and the line says so.

use std::path::Path;
use std::process::Stdio;

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

use super::instructions::git_root;
use crate::host::call::ReadOnly;

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
        fence: Option<&ReadOnly>,
    ) -> Environment {
        Environment {
            cwd: cwd.display().to_string(),
            os: os(),
            shell: shell.unwrap_or("/bin/sh").to_string(),
            date: today(),
            git: git(cwd, fence),
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
fn git(cwd: &Path, fence: Option<&ReadOnly>) -> String {
    let Some(root) = git_root(cwd) else {
        return "not a git repository".into();
    };
    let Some(fence) = fence else {
        return format!(
            "repository at {} (branch and changes unknown: git runs only inside the sandbox's \
             read-only fence, which this kernel cannot build)",
            root.display()
        );
    };
    let (branch, changed) = match status(cwd, fence) {
        Some((branch, n)) => (
            branch.unwrap_or_else(|| "detached HEAD".into()),
            match n {
                0 => "no files differ from HEAD at start".to_string(),
                1 => "1 file differs from HEAD at start".to_string(),
                n => format!("{n} files differ from HEAD at start"),
            },
        ),
        None => (
            "unknown".into(),
            "changes unknown (git status did not answer)".to_string(),
        ),
    };
    format!(
        "repository at {}, branch {branch}, {changed}",
        root.display()
    )
}

/// The branch from `git status --branch`'s first line (`## main...origin/main
/// [ahead 1]`, `## No commits yet on main`, `## HEAD (no branch)`).
fn branch_of(line: &str) -> Option<String> {
    let rest = line.strip_prefix("## ")?;
    let name = rest
        .strip_prefix("No commits yet on ")
        .or_else(|| rest.strip_prefix("Initial commit on "))
        .unwrap_or(rest);
    if name.starts_with("HEAD (no branch)") {
        return None;
    }
    let name = name.split("...").next()?.split(" [").next()?;
    (!name.is_empty()).then(|| name.to_string())
}

/// The branch and `git status --porcelain`'s line count, from a git run
/// inside `fence`; None when git is missing, fails or takes longer than
/// `GIT_DEADLINE` (a huge repository).
fn status(cwd: &Path, fence: &ReadOnly) -> Option<(Option<String>, usize)> {
    let mut child = fence
        .command(
            "git",
            &["--no-optional-locks", "status", "--porcelain", "--branch"],
        )
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
            Ok(None) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    let text = reader.join().ok()?.ok()?;
    let text = String::from_utf8_lossy(&text);
    let mut lines = text.lines().filter(|l| !l.is_empty());
    let first = lines.next()?;
    let branch = branch_of(first);
    let count = lines.count() + usize::from(!first.starts_with("## "));
    Some((branch, count))
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
    fn git_facts_come_from_a_fenced_git_or_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(git(dir.path(), None), "not a git repository");
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let line = git(dir.path(), None);
        assert!(
            line.ends_with(
                "(branch and changes unknown: git runs only inside the sandbox's \
                 read-only fence, which this kernel cannot build)"
            ),
            "{line}"
        );
        for (first, branch) in [
            ("## trunk", Some("trunk")),
            ("## main...origin/main [ahead 1]", Some("main")),
            ("## No commits yet on dev", Some("dev")),
            ("## HEAD (no branch)", None),
        ] {
            assert_eq!(branch_of(first).as_deref(), branch, "{first}");
        }
        assert!(today().starts_with("20"), "{}", today());
        assert!(os().contains(' '));
    }
}
