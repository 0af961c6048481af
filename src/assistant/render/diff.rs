//! The unified diff of a file as a tool changed it (or would change it):
//! hunks with three lines of context, removed lines red, added lines
//! green, hunk headers cyan; long diffs are cut with a line saying how
//! much was left out. Line-based (the `similar` crate), on text; a file
//! that is not UTF-8 is compared as its lossy text, which is what a person
//! can read anyway.

use std::path::Path;
use std::time::Duration;

use similar::{ChangeTag, TextDiff};

use super::{visible, Paint};

/// Files larger than this are not diffed: reading and comparing them would
/// keep the person waiting, and a diff that long is no help on a terminal.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// The file at `path` as text to diff, unless it is larger than
/// `MAX_FILE_BYTES` (an error saying so). The host reads it outside the
/// fence, before and after a call a tool may have shaped the path for, so
/// it reads as a call would be let: no link followed on the way (a link to
/// a key shows nothing), nothing under a secret path or the files the
/// system makes (`/proc`, `/sys`, `/dev`), only a regular file, opened
/// without blocking (a FIFO never holds the host), and no more than the cap.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let cwd = std::env::current_dir()?;
    let path = crate::host::files::lexical(&cwd.join(path));
    if let Some(why) = kept_from_view(&path) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            why,
        ));
    }
    let (file, st) = crate::host::files::Beneath::walk(&cwd, &path)?.open_regular()?;
    let size = st.st_size as u64;
    if size > MAX_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "the file is {size} bytes, too large to show a diff"
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES).read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Why the host shows nothing of `path` (absolute), if it must not: a
/// secret path (decision 72) or a file the system makes.
fn kept_from_view(path: &Path) -> Option<String> {
    use std::sync::OnceLock;
    static GUARD: OnceLock<crate::sandbox::Guard> = OnceLock::new();
    for system in ["/proc", "/sys", "/dev"] {
        if path.starts_with(system) {
            return Some(format!(
                "{} is a file the system makes; not shown",
                path.display()
            ));
        }
    }
    let guard =
        GUARD.get_or_init(|| crate::host::settings::guard(&crate::tool::Env::from_process(), None));
    let given_back = guard.allow_read.iter().any(|a| path.starts_with(a));
    let secret = guard.hide.iter().find(|h| path.starts_with(h))?;
    (!given_back).then(|| {
        format!(
            "{} is under the secret path {}; not shown",
            path.display(),
            secret.display()
        )
    })
}

/// A diff drawn for a person, with its counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diff {
    pub added: usize,
    pub removed: usize,
    /// The drawn hunks, every line ending in a newline and starting with
    /// `indent`.
    pub text: String,
}

/// The diff from `old` to `new`, at most `max_lines` lines of it drawn.
/// None when the two are the same.
pub fn unified(old: &str, new: &str, paint: Paint, indent: &str, max_lines: usize) -> Option<Diff> {
    if old == new {
        return None;
    }
    // Two large files that differ everywhere could take long to compare
    // exactly; past the deadline the diff is coarser but still correct.
    let diff = TextDiff::configure()
        .timeout(Duration::from_millis(500))
        .diff_lines(old, new);
    let mut added = 0;
    let mut removed = 0;
    let mut lines: Vec<String> = Vec::new();
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        lines.push(paint.sgr("36", &hunk.header().to_string()));
        for change in hunk.iter_changes() {
            let value = change.to_string_lossy();
            // The file's own control characters are shown (decision 59).
            let value = visible(value.trim_end_matches(['\n', '\r']));
            let (sign, code) = match change.tag() {
                ChangeTag::Delete => {
                    removed += 1;
                    ('-', "31")
                }
                ChangeTag::Insert => {
                    added += 1;
                    ('+', "32")
                }
                ChangeTag::Equal => (' ', "2"),
            };
            let mut line = paint.sgr(code, &format!("{sign}{value}"));
            if change.missing_newline() {
                line.push_str(&paint.sgr("2", " (no newline at end of file)"));
            }
            lines.push(line);
        }
    }
    let mut text = String::new();
    let total = lines.len();
    for line in lines.iter().take(max_lines) {
        text.push_str(indent);
        text.push_str(line);
        text.push('\n');
    }
    if total > max_lines {
        text.push_str(indent);
        text.push_str(&paint.sgr("2", &format!("… {} more diff lines", total - max_lines)));
        text.push('\n');
    }
    Some(Diff {
        added,
        removed,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_with_context_and_counts() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nD\ne\nf\ng\nh\ni\n";
        let d = unified(old, new, Paint::OFF, "  ", 100).unwrap();
        assert_eq!((d.added, d.removed), (2, 1));
        assert_eq!(
            d.text,
            "  @@ -1,8 +1,9 @@\n   a\n   b\n   c\n  -d\n  +D\n   e\n   f\n   g\n   h\n  +i\n"
        );
        assert!(unified("same", "same", Paint::OFF, "", 10).is_none());
    }

    #[test]
    fn colour_and_cut() {
        let d = unified("x\n", "y\n", Paint::ON, "", 2).unwrap();
        assert_eq!(
            d.text,
            "\x1b[36m@@ -1 +1 @@\x1b[0m\n\x1b[31m-x\x1b[0m\n\x1b[2m… 1 more diff lines\x1b[0m\n"
        );
        let d = unified("x", "x\ny", Paint::OFF, "", 10).unwrap();
        assert_eq!(
            d.text,
            "@@ -1 +1,2 @@\n-x (no newline at end of file)\n+x\n+y (no newline at end of file)\n"
        );
    }
}
