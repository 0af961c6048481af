//! Project instructions (decision 61; which files, in what order, within
//! what budget: docs/instructions.md): the files that tell a model how a
//! project is built, tested and kept. The person's own file comes first,
//! then one file for each directory from the repository's root (or the
//! working directory outside a repository) down to the working directory,
//! so the nearest file is read last and weighs most.
//!
//! The whole is held to a byte budget; over it, the outermost files are cut
//! first, since the nearest instructions are the most specific. Nothing is
//! cut or skipped silently: each cut and each file that cannot be used (not
//! readable, not UTF-8, not a regular file, a loop of links) is a warning
//! for the person, and the assistant starts all the same.
//!
//! A tool may have left a project file as a link: a link is followed only
//! to a file inside the project that is not a secret path (decision 72),
//! since what is read here goes to the provider; any other is left out with
//! a warning naming the file.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The default budget for all instruction files together.
pub const DEFAULT_MAX_BYTES: usize = 32 << 10;

/// The file names project instructions go by (docs/instructions.md): the
/// one a directory's override is read from, the common one, and the one
/// read when the common one is missing. They are data: the convention's
/// names, which people and other assistants write, not files of ours.
pub const OVERRIDE: &str = "AGENTS.override.md";
pub const FILE: &str = "AGENTS.md";
pub const FALLBACK: &str = "CLAUDE.md";

/// The names looked for in each directory, in order of preference.
const NAMES: [&str; 3] = [OVERRIDE, FILE, FALLBACK];

/// What `/init` asks the model: the repository's project instructions, as
/// the next session's model will want them.
pub fn init_request() -> String {
    format!(
        "Write an {FILE} file for this repository, for the coding \
assistants that will work in it after you. Explore first (glob, grep, file_read; the build files, \
CI configuration, README and existing docs) and run what you find to check it works. Then write, \
briefly and exactly: what the project is; how to set it up, build, test (all and one test) and \
lint, with the real commands; the layout (where what lives); the conventions the code follows; \
and what to avoid (generated files, slow or dangerous commands, things not to change). Put it in \
{FILE} at the repository's root (the git root, else this directory); if one exists, improve \
it rather than replace what is still true. Keep it under 200 lines."
    )
}

/// One file that went into the prompt.
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    pub path: PathBuf,
    /// Its size on disk.
    pub bytes: u64,
    /// How much of it the prompt holds (less than `bytes` when cut).
    pub kept: usize,
}

/// The instructions found for a working directory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Instructions {
    /// The prompt's section, empty when there are no files.
    pub text: String,
    pub files: Vec<File>,
    /// Files cut or left out, each naming the file and why.
    pub warnings: Vec<String>,
}

/// The repository root above `dir`: the nearest directory, `dir` included,
/// holding a `.git` directory or file (a worktree's or submodule's).
pub fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

/// Reads the instructions for `cwd`: `personal` (the person's own file,
/// docs/instructions.md) and the project's, within `max_bytes`.
pub fn read(personal: Option<&Path>, cwd: &Path, max_bytes: usize) -> Instructions {
    let mut warnings = Vec::new();
    let mut found: Vec<(PathBuf, u64, String)> = Vec::new();
    let secrets: Vec<PathBuf> =
        crate::host::settings::guard(&crate::tool::Env::from_process(), None).hide;
    if let Some(path) = personal {
        if let Some(file) = load(path, max_bytes, &mut warnings) {
            found.push(file);
        }
    }
    let top = git_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let mut dirs: Vec<&Path> = cwd
        .ancestors()
        .take_while(|d| d.starts_with(&top))
        .collect();
    dirs.reverse();
    for dir in dirs {
        for name in NAMES {
            let path = dir.join(name);
            if std::fs::symlink_metadata(&path).is_err() {
                continue;
            }
            if let Err(why) = link_allowed(&path, &top, &secrets) {
                warnings.push(format!("{} left out of the prompt: {why}", path.display()));
                break;
            }
            if let Some(file) = load(&path, max_bytes, &mut warnings) {
                found.push(file);
                break;
            }
        }
    }
    let total: usize = found.iter().map(|(_, _, text)| text.len()).sum();
    let mut over = total.saturating_sub(max_bytes);
    let mut files = Vec::new();
    let mut sections = Vec::new();
    for (path, bytes, mut text) in found {
        if over > 0 {
            let keep = floor_char_boundary(&text, text.len().saturating_sub(over));
            over = over.saturating_sub(text.len() - keep);
            text.truncate(keep);
        }
        let kept = text.len();
        if (kept as u64) < bytes {
            warnings.push(format!(
                "{} was cut by {} of its {bytes} bytes to keep the project instructions within \
                 {max_bytes} bytes (config instructions_max_bytes)",
                path.display(),
                bytes - kept as u64,
            ));
        }
        if kept > 0 {
            let note = if (kept as u64) < bytes {
                format!("\n[... cut: {} more bytes]", bytes - kept as u64)
            } else {
                String::new()
            };
            sections.push(format!(
                "## {}\n\n{}{note}",
                path.display(),
                text.trim_end()
            ));
        }
        files.push(File { path, bytes, kept });
    }
    let text = if sections.is_empty() {
        String::new()
    } else {
        format!(
            "# Project instructions\n\nFrom the files below, outermost first; where they \
             disagree, the later (nearer) file wins.\n\n{}",
            sections.join("\n\n")
        )
    };
    Instructions {
        text,
        files,
        warnings,
    }
}

/// Whether `path`, when it is a link, may be followed: only to a file in
/// `project` that no secret path holds. Err says why not.
fn link_allowed(path: &Path, project: &Path, secrets: &[PathBuf]) -> Result<(), String> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(());
    }
    // A loop or a dangling link: `load` says why it cannot be read.
    let Ok(target) = path.canonicalize() else {
        return Ok(());
    };
    let project = project
        .canonicalize()
        .unwrap_or_else(|_| project.to_path_buf());
    if !target.starts_with(&project) {
        return Err(format!(
            "it is a link to {}, outside the project",
            target.display()
        ));
    }
    let secret = secrets.iter().find(|s| {
        target.starts_with(s) || s.canonicalize().is_ok_and(|real| target.starts_with(real))
    });
    match secret {
        Some(secret) => Err(format!(
            "it is a link to {}, under the secret path {}",
            target.display(),
            secret.display()
        )),
        None => Ok(()),
    }
}

/// One file's text, at most `max_bytes` of it, with its size on disk; None,
/// with a warning, when it cannot be used. Only regular files are read, and
/// opening never blocks (a FIFO in a file's place would hang a plain open).
fn load(
    path: &Path,
    max_bytes: usize,
    warnings: &mut Vec<String>,
) -> Option<(PathBuf, u64, String)> {
    let mut skip = |why: String| {
        warnings.push(format!("{} left out of the prompt: {why}", path.display()));
        None
    };
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return skip(e.to_string()),
    };
    let bytes = match file.metadata() {
        Ok(m) if m.is_file() => m.len(),
        Ok(m) if m.is_dir() => return skip("it is a directory".into()),
        Ok(_) => return skip("it is not a regular file".into()),
        Err(e) => return skip(e.to_string()),
    };
    let mut raw = Vec::new();
    if let Err(e) = file.take(max_bytes as u64 + 4).read_to_end(&mut raw) {
        return skip(e.to_string());
    }
    let text = match String::from_utf8(raw) {
        Ok(text) => text,
        // A read cut mid-character is still UTF-8 up to the cut.
        Err(e) if (bytes as usize) > max_bytes && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut raw = e.into_bytes();
            raw.truncate(valid);
            String::from_utf8(raw).unwrap_or_default()
        }
        Err(e) => {
            return skip(format!(
                "it is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ))
        }
    };
    Some((path.to_path_buf(), bytes, text))
}

/// The largest index at most `at` that starts a character of `text`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    (0..=at.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn files_join_outermost_first_with_override_and_fallback() {
        let home = tempfile::tempdir().unwrap();
        let mine = home.path().join(FILE);
        fs::write(&mine, "mine").unwrap();
        let repo = home.path().join("repo");
        let sub = repo.join("a").join("b");
        fs::create_dir_all(&sub).unwrap();
        fs::create_dir(repo.join(".git")).unwrap();
        fs::write(repo.join(FILE), "root").unwrap();
        fs::write(repo.join(FALLBACK), "not read: the common name exists").unwrap();
        fs::write(repo.join("a").join(FALLBACK), "claude").unwrap();
        fs::write(sub.join(FILE), "plain").unwrap();
        fs::write(sub.join(OVERRIDE), "override").unwrap();
        // Above the repository: never read.
        fs::write(home.path().join(FALLBACK), "outside").unwrap();
        let found = read(Some(&mine), &sub, DEFAULT_MAX_BYTES);
        let paths: Vec<_> = found.files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(
            paths,
            [
                mine.clone(),
                repo.join(FILE),
                repo.join("a").join(FALLBACK),
                sub.join(OVERRIDE)
            ]
        );
        let at = |s: &str| found.text.find(s).unwrap();
        assert!(
            at("mine") < at("root") && at("root") < at("claude") && at("claude") < at("override")
        );
        assert!(found
            .text
            .contains(&format!("## {}\n\nroot", repo.join(FILE).display())));
        assert!(!found.text.contains("outside") && !found.text.contains("plain"));
        assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    }

    #[test]
    fn outside_a_repository_only_the_working_directory_counts() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("x");
        fs::create_dir(&sub).unwrap();
        fs::write(dir.path().join(FILE), "parent").unwrap();
        fs::write(sub.join(FILE), "here").unwrap();
        let found = read(None, &sub, DEFAULT_MAX_BYTES);
        assert_eq!(found.files.len(), 1);
        assert!(found.text.contains("here") && !found.text.contains("parent"));
        assert_eq!(
            read(None, dir.path().join("none").as_path(), 10),
            Instructions::default()
        );
    }

    #[test]
    fn over_the_budget_the_outermost_is_cut_first_and_said() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("s");
        fs::create_dir_all(dir.path().join(".git")).unwrap();
        fs::create_dir(&sub).unwrap();
        fs::write(dir.path().join(FILE), "o".repeat(600)).unwrap();
        fs::write(sub.join(FILE), "i".repeat(500)).unwrap();
        let found = read(None, &sub, 700);
        assert_eq!(found.files[0].kept, 200);
        assert_eq!(found.files[1].kept, 500);
        assert_eq!(found.warnings.len(), 1);
        assert!(
            found.warnings[0].contains(&format!("{FILE} was cut by 400 of its 600 bytes")),
            "{:?}",
            found.warnings
        );
        assert!(found.text.contains("[... cut: 400 more bytes]"));
        // A budget smaller than the nearest file alone cuts everything
        // outer away and the nearest one too.
        let found = read(None, &sub, 300);
        assert_eq!((found.files[0].kept, found.files[1].kept), (0, 300));
        assert_eq!(found.warnings.len(), 2);
    }

    #[test]
    fn files_that_cannot_be_used_are_warnings_not_failures() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::create_dir(d.join(".git")).unwrap();
        let bad = d.join("bad");
        fs::create_dir_all(bad.join(FILE)).unwrap();
        fs::write(bad.join(FALLBACK), "fallback").unwrap();
        let found = read(None, &bad, DEFAULT_MAX_BYTES);
        assert!(found.warnings[0]
            .contains(&format!("{FILE} left out of the prompt: it is a directory")));
        assert!(found.text.contains("fallback"));

        let latin = d.join("latin");
        fs::create_dir(&latin).unwrap();
        fs::write(latin.join(FILE), b"caf\xe9").unwrap();
        let found = read(None, &latin, DEFAULT_MAX_BYTES);
        assert!(
            found.warnings[0].contains("not UTF-8"),
            "{:?}",
            found.warnings
        );
        assert!(found.files.is_empty());

        let looped = d.join("loop");
        fs::create_dir(&looped).unwrap();
        std::os::unix::fs::symlink(FILE, looped.join(FILE)).unwrap();
        let found = read(None, &looped, DEFAULT_MAX_BYTES);
        assert!(
            found.warnings[0].contains("left out of the prompt"),
            "{:?}",
            found.warnings
        );

        let fifo = d.join("fifo");
        fs::create_dir(&fifo).unwrap();
        let name =
            std::ffi::CString::new(fifo.join(FILE).into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let found = read(None, &fifo, DEFAULT_MAX_BYTES);
        assert!(
            found.warnings[0].contains("not a regular file"),
            "{:?}",
            found.warnings
        );
    }

    #[test]
    fn a_link_leaving_the_project_or_reaching_a_secret_is_not_followed() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path().canonicalize().unwrap();
        let project = h.join("p");
        fs::create_dir_all(project.join(".git")).unwrap();
        fs::create_dir_all(h.join(".ssh")).unwrap();
        fs::write(h.join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
        fs::write(h.join("notes.md"), "outside").unwrap();
        std::os::unix::fs::symlink(h.join("notes.md"), project.join(FILE)).unwrap();
        let found = read(None, &project, DEFAULT_MAX_BYTES);
        assert!(found.text.is_empty(), "{found:?}");
        assert!(
            found.warnings[0].contains("AGENTS.md left out of the prompt: it is a link to")
                && found.warnings[0].contains("outside the project"),
            "{:?}",
            found.warnings
        );
        // Inside the project, a link to a secret path (the project is the
        // home directory here, as when ikigai starts there).
        let secrets = [h.join(".ssh")];
        std::os::unix::fs::symlink(h.join(".ssh/id_ed25519"), h.join(FILE)).unwrap();
        let why = link_allowed(&h.join(FILE), &h, &secrets).unwrap_err();
        assert!(why.contains("under the secret path"), "{why}");
        // A link inside the project to a plain file is read.
        fs::write(project.join("docs.md"), "inside").unwrap();
        fs::remove_file(project.join(FILE)).unwrap();
        std::os::unix::fs::symlink("docs.md", project.join(FILE)).unwrap();
        assert!(read(None, &project, DEFAULT_MAX_BYTES)
            .text
            .contains("inside"));
    }

    #[test]
    fn a_huge_file_is_read_only_as_far_as_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let big = "é".repeat(5 << 20);
        fs::write(dir.path().join(FILE), &big).unwrap();
        let found = read(None, dir.path(), 1001);
        assert_eq!(found.files[0].bytes, 10 << 20);
        assert_eq!(found.files[0].kept, 1000);
        assert!(found.warnings[0].contains("cut by"));
    }
}
