//! Reading the files of a folder as if a tool had planted traps there
//! (decision 91): a link is followed only when what it reaches lies inside
//! the folder and outside the secret paths (decision 72), only regular
//! files are opened (a FIFO never blocks the host), and a file is read up
//! to a cap, so a 5 MB body costs what the cap costs. Whatever is passed
//! over is a warning naming the file, never an error that stops a start.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::Warning;

/// The most bytes of one file read; past it the body is cut with a warning.
pub const MAX_BYTES: usize = 256 << 10;
/// How deep subfolders of a commands folder are walked (`a:b:c:d`).
const MAX_DEPTH: usize = 4;
/// The most entries taken from one folder: a folder of a million files is
/// someone's mistake, not a thousand commands.
pub const MAX_ENTRIES: usize = 2000;

/// Where reading may go: the folder's real path and the paths no read may
/// reach (with those given back).
pub struct Bounds<'a> {
    pub root: PathBuf,
    pub secret: &'a [PathBuf],
    pub readable: &'a [PathBuf],
}

impl Bounds<'_> {
    /// `path` resolved, when it lies within the folder and no secret; else
    /// why not.
    pub fn resolve(&self, path: &Path) -> Result<PathBuf, String> {
        let real = path
            .canonicalize()
            .map_err(|e| format!("cannot resolve it: {e}"))?;
        if !real.starts_with(&self.root) {
            return Err(format!(
                "it is a link to {}, outside {}; links are followed only within the folder",
                real.display(),
                self.root.display()
            ));
        }
        if let Some(secret) = secret_of(&real, self.secret, self.readable) {
            return Err(format!(
                "it reaches {}, a secret path (the sandbox's rule)",
                secret.display()
            ));
        }
        Ok(real)
    }
}

/// The secret path `real` lies under, unless a readable one gives it back.
pub fn secret_of<'a>(real: &Path, secret: &'a [PathBuf], readable: &[PathBuf]) -> Option<&'a Path> {
    let hit = secret.iter().find(|s| real.starts_with(s))?;
    (!readable.iter().any(|r| real.starts_with(r))).then_some(hit.as_path())
}

/// A file's text, cut at `MAX_BYTES`; None, with a warning, when it cannot
/// be used. `real` is a path `Bounds::resolve` gave, opened without
/// following a link in its last part, in case one was put there since.
pub fn text(shown: &Path, real: &Path, warnings: &mut Vec<Warning>) -> Option<String> {
    let mut skip = |what: String| {
        warnings.push(Warning::new(shown, what));
        None
    };
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(real)
    {
        Ok(file) => file,
        Err(e) => return skip(format!("skipped: cannot open it: {e}")),
    };
    let size = match file.metadata() {
        Ok(m) if m.is_file() => m.len(),
        Ok(_) => return skip("skipped: it is not a regular file".into()),
        Err(e) => return skip(format!("skipped: {e}")),
    };
    let mut raw = Vec::new();
    if let Err(e) = file.take(MAX_BYTES as u64).read_to_end(&mut raw) {
        return skip(format!("skipped: cannot read it: {e}"));
    }
    let text = match String::from_utf8(raw) {
        Ok(text) => text,
        // Cut mid-character: UTF-8 up to the cut.
        Err(e) if size > MAX_BYTES as u64 && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut raw = e.into_bytes();
            raw.truncate(valid);
            String::from_utf8(raw).unwrap_or_default()
        }
        Err(e) => {
            return skip(format!(
                "skipped: it is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ))
        }
    };
    if size > MAX_BYTES as u64 {
        warnings.push(Warning::new(
            shown,
            format!("cut to its first {} KB of {size} bytes", MAX_BYTES >> 10),
        ));
    }
    Some(text)
}

/// One file found in a folder: its path as listed, its real path, and its
/// name relative to the folder without `.md`, subfolders joined by `:`.
pub struct Found {
    pub shown: PathBuf,
    pub real: PathBuf,
    pub name: String,
}

/// The extension of the files commands and agents are written in.
pub const EXTENSION: &str = ".md";

/// A command's or agent's file name for `stem`.
#[cfg(test)]
pub fn file_name(stem: &str) -> String {
    format!("{stem}{EXTENSION}")
}

/// The Markdown files of `folder`, walking `nested` levels of subfolders
/// (a file in subfolder DIR is named `DIR:NAME`, docs/custom.md), sorted
/// by name.
pub fn markdown(
    folder: &Path,
    bounds: &Bounds<'_>,
    nested: bool,
    warnings: &mut Vec<Warning>,
) -> Vec<Found> {
    let mut found = Vec::new();
    let depth = if nested { MAX_DEPTH } else { 1 };
    walk(folder, "", depth, bounds, &mut found, warnings);
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    bounds: &Bounds<'_>,
    found: &mut Vec<Found>,
    warnings: &mut Vec<Warning>,
) {
    for (path, file_name) in entries(dir, warnings) {
        let real = match bounds.resolve(&path) {
            Ok(real) => real,
            Err(why) => {
                warnings.push(Warning::new(&path, format!("skipped: {why}")));
                continue;
            }
        };
        if real.is_dir() {
            if depth > 1 && !file_name.starts_with('.') {
                let inner = format!("{prefix}{file_name}:");
                walk(&path, &inner, depth - 1, bounds, found, warnings);
            }
            continue;
        }
        let Some(stem) = file_name.strip_suffix(EXTENSION) else {
            continue;
        };
        if stem.is_empty() || stem.starts_with('.') {
            continue;
        }
        found.push(Found {
            shown: path.clone(),
            real,
            name: format!("{prefix}{stem}"),
        });
    }
}

/// The entries of `dir` as (path, name), at most `MAX_ENTRIES`, names that
/// are not UTF-8 left out with a warning; a missing folder is no entries.
pub fn entries(dir: &Path, warnings: &mut Vec<Warning>) -> Vec<(PathBuf, String)> {
    let listing = match std::fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            warnings.push(Warning::new(dir, format!("cannot list it: {e}")));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for entry in listing.flatten() {
        if out.len() == MAX_ENTRIES {
            warnings.push(Warning::new(
                dir,
                format!("only its first {MAX_ENTRIES} entries are read"),
            ));
            break;
        }
        match entry.file_name().into_string() {
            Ok(name) => out.push((entry.path(), name)),
            Err(name) => warnings.push(Warning::new(
                &dir.join(&name),
                "skipped: its name is not UTF-8".into(),
            )),
        }
    }
    out.sort();
    out
}
