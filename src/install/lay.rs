//! What `ikigai-tools install` lays under a prefix, and how it makes sure
//! each path is its own before it touches it.
//!
//! A path is ikigai's when it is absent, listed unchanged in the manifest,
//! or recognisably ours: a link to our binary (as `symlinks.sh` laid them,
//! relative or to any file that is an ikigai-tools binary, even an old or
//! deleted one), a binary carrying our help's first line, or a file whose
//! first line says `completions` or `manpage` made it. Every path is
//! checked before the first change: one that is not ours is named, and
//! nothing is changed. Each file and link is laid as a temporary name
//! renamed into place, so an interrupted run leaves either the old path or
//! the new one (and its temporaries, which the next run removes), and a
//! second run finishes the job.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::{commands, completions, manpage};
use crate::tools::TOOLS;

/// Bytes every ikigai-tools binary holds (its help's first line, in every
/// release so far): how an installed binary is known as ours.
const BINARY_MARK: &str = "ikigai-tools: the tools an LLM assistant calls, in one binary.";
/// The manifest's first line.
const MANIFEST_MARK: &str = "# made by `ikigai-tools install`";
/// Where the manifest lives, under the prefix.
const MANIFEST: &str = "share/ikigai-tools/manifest";
/// What a laid path's temporary name ends with.
const TEMPORARY: &str = ".ikigai-new";
/// The binary's place and the links' target, relative to the prefix and
/// to `libexec/ikigai/`.
const BIN: &str = "bin/ikigai-tools";
const TOOL_TARGET: &str = "../../bin/ikigai-tools";

/// One path the install lays.
enum Item {
    /// This executable, copied.
    Binary,
    Link(&'static str),
    File(String),
}

/// The prefix to install under: the one given (made absolute), else
/// `~/.local`.
pub fn prefix(given: Option<&Path>) -> Result<PathBuf, String> {
    let path = match given {
        Some(p) => p.to_path_buf(),
        None => match std::env::var_os("HOME") {
            Some(home) if !home.is_empty() => PathBuf::from(home).join(".local"),
            _ => return Err("HOME is not set: name a PREFIX".into()),
        },
    };
    if path.as_os_str().is_empty() {
        return Err("the PREFIX is empty".into());
    }
    if path.is_absolute() {
        return Ok(path);
    }
    let here = std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?;
    Ok(here.join(path))
}

/// Everything laid, by path relative to the prefix, in the order laid
/// (the binary first: the links point at it).
fn plan() -> Result<Vec<(String, Item)>, String> {
    let mut items: Vec<(String, Item)> = vec![
        (BIN.into(), Item::Binary),
        ("bin/ikigai".into(), Item::Link("ikigai-tools")),
    ];
    for tool in TOOLS {
        items.push((
            format!("libexec/ikigai/{}", tool.command()),
            Item::Link(TOOL_TARGET),
        ));
    }
    for tree in [commands::ikigai(), commands::ikigai_tools()] {
        let name = &tree.name;
        for (shell, path) in [
            ("bash", format!("share/bash-completion/completions/{name}")),
            ("zsh", format!("share/zsh/site-functions/_{name}")),
            (
                "fish",
                format!("share/fish/vendor_completions.d/{name}.fish"),
            ),
        ] {
            items.push((path, Item::File(completions::for_shell(shell, &tree)?)));
        }
    }
    for name in commands::NAMES {
        items.push((
            format!("share/man/man1/{name}.1"),
            Item::File(manpage::page(name)?),
        ));
    }
    Ok(items)
}

/// What the manifest says of each path: the link's target, or the file's
/// identity (inode, size, modification time) when it was laid.
type Manifest = BTreeMap<String, String>;

fn identity(meta: &fs::Metadata) -> String {
    format!(
        "{}:{}:{}.{}",
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec()
    )
}

fn read_manifest(prefix: &Path) -> Result<Option<Manifest>, String> {
    let path = prefix.join(MANIFEST);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        // A prefix beneath a file has no manifest either; making its
        // directories says what is wrong.
        Err(e)
            if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if !text.starts_with(MANIFEST_MARK) {
        return Err(format!(
            "{} is not a manifest ikigai-tools wrote; nothing was changed",
            path.display()
        ));
    }
    let mut manifest = Manifest::new();
    for line in text.lines().skip(1) {
        let mut fields = line.splitn(3, '\t');
        match (fields.next(), fields.next(), fields.next()) {
            (Some(kind @ ("link" | "file" | "dir")), Some(path), Some(what)) => {
                manifest.insert(path.to_string(), format!("{kind}:{what}"));
            }
            _ => {
                return Err(format!(
                    "{}: a line that is not 'link|file|dir TAB PATH TAB WHAT': {line}",
                    path.display()
                ))
            }
        }
    }
    Ok(Some(manifest))
}

/// The manifest's entry for `path` as it is now, if it is still there.
fn entry_now(path: &Path) -> Option<String> {
    let meta = fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() {
        let target = fs::read_link(path).ok()?;
        Some(format!("link:{}", target.display()))
    } else if meta.is_file() {
        Some(format!("file:{}", identity(&meta)))
    } else {
        None
    }
}

/// Whether the file at `path` is an ikigai-tools binary.
fn is_our_binary(path: &Path) -> bool {
    let Ok(bytes) = fs::read(path) else {
        return false;
    };
    memchr::memmem::find(&bytes, BINARY_MARK.as_bytes()).is_some()
}

/// Whether the file at `path` starts (in its first lines) with `mark`.
fn made_by(path: &Path, marks: &[&str]) -> bool {
    use io::Read;
    let mut head = vec![0u8; 512];
    let Ok(n) = fs::File::open(path).and_then(|mut f| f.read(&mut head)) else {
        return false;
    };
    let head = String::from_utf8_lossy(&head[..n]);
    let first_lines: String = head.lines().take(2).collect::<Vec<_>>().join("\n");
    marks.iter().any(|m| first_lines.contains(m))
}

/// Why the path at `full` (`rel` under the prefix) is not ours to
/// replace; None when it is (or is absent).
fn foreign(full: &Path, rel: &str, item: &Item, manifest: &Manifest) -> Option<String> {
    let meta = match fs::symlink_metadata(full) {
        Ok(meta) => meta,
        Err(e)
            if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            return None
        }
        Err(e) => return Some(format!("cannot be looked at: {e}")),
    };
    if manifest
        .get(rel)
        .is_some_and(|laid| Some(laid) == entry_now(full).as_ref())
    {
        return None;
    }
    if meta.file_type().is_symlink() {
        let target = fs::read_link(full).unwrap_or_default();
        return if link_is_ours(full, &target) {
            None
        } else {
            Some(format!(
                "a link to {} that is not ikigai's",
                target.display()
            ))
        };
    }
    if meta.is_dir() {
        return Some("a directory".into());
    }
    let ours = match item {
        Item::Binary => is_our_binary(full),
        Item::Link(_) => false,
        Item::File(_) => made_by(full, &[completions::MARK, manpage::MARK]),
    };
    (!ours).then(|| "a file ikigai-tools did not make".into())
}

/// A link of ours: to our binary by the relative path `symlinks.sh` lays,
/// or to any ikigai-tools binary, or to one that is gone but was named
/// as ours (a link left by an old install whose binary moved).
fn link_is_ours(link: &Path, target: &Path) -> bool {
    if target == Path::new("ikigai-tools") || target == Path::new(TOOL_TARGET) {
        return true;
    }
    let resolved = link
        .parent()
        .map_or(target.to_path_buf(), |d| d.join(target));
    match fs::metadata(&resolved) {
        Ok(meta) => meta.is_file() && is_our_binary(&resolved),
        Err(_) => target.file_name() == Some("ikigai-tools".as_ref()),
    }
}

/// Lays `item` at `full` through a temporary name renamed into place.
fn lay(full: &Path, item: &Item, source: &Path) -> io::Result<()> {
    let name = full.file_name().unwrap_or_default().to_string_lossy();
    let temporary = full.with_file_name(format!(".{name}{TEMPORARY}"));
    let _ = fs::remove_file(&temporary);
    match item {
        Item::Binary => {
            fs::copy(source, &temporary)?;
            fs::set_permissions(&temporary, fs::Permissions::from_mode(0o755))?;
            fs::File::open(&temporary)?.sync_all()?;
        }
        Item::Link(target) => std::os::unix::fs::symlink(target, &temporary)?,
        Item::File(text) => {
            fs::write(&temporary, text)?;
            fs::set_permissions(&temporary, fs::Permissions::from_mode(0o644))?;
        }
    }
    fs::rename(&temporary, full).inspect_err(|_| {
        let _ = fs::remove_file(&temporary);
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Installs under `prefix`; returns what to tell the person.
pub fn install(prefix: &Path) -> Result<String, String> {
    // The running file itself, even when it was replaced or deleted since
    // it started (a rebuild); without /proc, the path it was started from.
    let proc_exe = Path::new("/proc/self/exe");
    let source = if proc_exe.exists() {
        proc_exe.to_path_buf()
    } else {
        std::env::current_exe().map_err(|e| format!("cannot find this program's own file: {e}"))?
    };
    let manifest = read_manifest(prefix)?.unwrap_or_default();
    let items = plan()?;
    let shown = |rel: &str| prefix.join(rel).display().to_string();

    // Every path first: a foreign one stops the install before any change.
    let mut refused = Vec::new();
    for (rel, item) in &items {
        if let Some(why) = foreign(&prefix.join(rel), rel, item, &manifest) {
            refused.push(format!("  {}: {why}", shown(rel)));
        }
    }
    if !refused.is_empty() {
        return Err(format!(
            "these paths are in the way and are not ikigai's, so nothing was changed; \
             move them away or choose another PREFIX:\n{}",
            refused.join("\n")
        ));
    }
    let mut dirs: Vec<PathBuf> = items
        .iter()
        .filter_map(|(rel, _)| prefix.join(rel).parent().map(Path::to_path_buf))
        .collect();
    dirs.push(
        prefix
            .join(MANIFEST)
            .parent()
            .unwrap_or(prefix)
            .to_path_buf(),
    );
    dirs.sort();
    dirs.dedup();
    // The directories this install makes, listed so that uninstall can
    // take them away again when it leaves them empty; those an earlier
    // install made stay listed.
    let mut made: Vec<String> = manifest
        .iter()
        .filter(|(_, entry)| entry.as_str() == "dir:-")
        .map(|(rel, _)| rel.clone())
        .collect();
    for dir in &dirs {
        let mut missing = Some(dir.as_path());
        while let Some(d) = missing.filter(|d| d.starts_with(prefix) && *d != prefix) {
            if d.exists() {
                break;
            }
            if let Ok(rel) = d.strip_prefix(prefix) {
                made.push(rel.to_string_lossy().into_owned());
            }
            missing = d.parent();
        }
    }
    for dir in &dirs {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let probe = dir.join(format!(".probe{TEMPORARY}"));
        fs::write(&probe, b"")
            .and_then(|()| fs::remove_file(&probe))
            .map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    }

    let mut laid = Manifest::new();
    for rel in made {
        laid.insert(rel, "dir:-".into());
    }
    for (rel, item) in &items {
        let full = prefix.join(rel);
        let running_it = matches!(item, Item::Binary) && same_file(&source, &full);
        if !running_it {
            lay(&full, item, &source)
                .map_err(|e| format!("cannot write {}: {e}", full.display()))?;
        }
        if let Some(entry) = entry_now(&full) {
            laid.insert(rel.clone(), entry);
        }
    }

    // Links of ours for tools no longer in the table, and paths the last
    // install laid that this one does not: gone, unless changed since.
    let mut removed = Vec::new();
    let libexec = prefix.join("libexec/ikigai");
    if let Ok(entries) = fs::read_dir(&libexec) {
        for entry in entries.flatten() {
            let rel = format!("libexec/ikigai/{}", entry.file_name().to_string_lossy());
            let target = fs::read_link(entry.path()).ok();
            let stale =
                !laid.contains_key(&rel) && target.is_some_and(|t| t == Path::new(TOOL_TARGET));
            if stale && fs::remove_file(entry.path()).is_ok() {
                removed.push(rel);
            }
        }
    }
    for (rel, was) in &manifest {
        let full = prefix.join(rel);
        if was != "dir:-"
            && !laid.contains_key(rel)
            && !removed.contains(rel)
            && entry_now(&full).as_ref() == Some(was)
            && fs::remove_file(&full).is_ok()
        {
            removed.push(rel.clone());
        }
    }
    write_manifest(prefix, &laid)?;

    let tools = TOOLS.len();
    let mut said = format!(
        "installed {}, {} and {tools} tools in {}\n\
         completions (bash, zsh, fish) and man pages (ikigai(1), ikigai-tools(1)) in {}; \
         the list of it all in {}\n",
        shown(BIN),
        shown("bin/ikigai"),
        libexec.display(),
        prefix.join("share").display(),
        shown(MANIFEST),
    );
    for rel in &removed {
        said += &format!("removed {}, no longer ikigai's\n", shown(rel));
    }
    said += &hints(prefix);
    Ok(said)
}

fn write_manifest(prefix: &Path, laid: &Manifest) -> Result<(), String> {
    let mut text = format!(
        "{MANIFEST_MARK} under {}: `ikigai-tools install --uninstall` removes what is \
         listed, unless it changed since\n",
        prefix.display()
    );
    for (rel, entry) in laid {
        let (kind, what) = entry.split_once(':').unwrap_or(("file", entry));
        text += &format!("{kind}\t{rel}\t{what}\n");
    }
    let path = prefix.join(MANIFEST);
    lay(&path, &Item::File(text), Path::new(""))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Removes what the manifest lists and is unchanged; says what it left.
pub fn uninstall(prefix: &Path) -> Result<String, String> {
    let Some(manifest) = read_manifest(prefix)? else {
        return Err(format!(
            "{} has no manifest ({}), so there is nothing ikigai-tools install laid to \
             remove (an install by an older symlinks.sh has none: install once, then \
             uninstall)",
            prefix.display(),
            prefix.join(MANIFEST).display()
        ));
    };
    let mut removed = 0;
    let mut left = Vec::new();
    let mut dirs = Vec::new();
    for (rel, was) in &manifest {
        let full = prefix.join(rel);
        if was == "dir:-" {
            dirs.push(full);
            continue;
        }
        match entry_now(&full) {
            None => {}
            Some(now) if &now == was => match fs::remove_file(&full) {
                Ok(()) => removed += 1,
                Err(e) => left.push(format!("  {}: {e}", full.display())),
            },
            Some(_) => left.push(format!(
                "  {}: changed since it was installed, so it is yours now",
                full.display()
            )),
        }
    }
    let manifest_path = prefix.join(MANIFEST);
    fs::remove_file(&manifest_path)
        .map_err(|e| format!("cannot remove {}: {e}", manifest_path.display()))?;
    // The directories the installs made go when nothing else is in them,
    // the deepest first.
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    for dir in dirs {
        let _ = fs::remove_dir(dir);
    }
    let mut said = format!(
        "removed {removed} paths ikigai-tools laid under {}\n",
        prefix.display()
    );
    if !left.is_empty() {
        said += &format!("left as they are:\n{}\n", left.join("\n"));
    }
    Ok(said)
}

/// Whether `dir` is one of the directories in the `:`-separated `list`
/// (a trailing slash or a link to it counts as the same).
fn listed(dir: &Path, list: &str) -> bool {
    let real = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    list.split(':')
        .filter(|d| !d.is_empty())
        .any(|d| Path::new(d).canonicalize().is_ok_and(|d| d == real))
}

/// The lines that say what the person still has to do, only where it is
/// needed: a `bin` not on PATH, man pages `man` does not find, completions
/// the person's shell does not look for there. The PATH hint comes last.
pub fn hints(prefix: &Path) -> String {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let bin = prefix.join("bin");
    let share = prefix.join("share");
    let on_path = listed(&bin, &var("PATH"));
    let mut said = String::new();
    // man-db finds PREFIX/share/man by itself for a PREFIX/bin on PATH.
    let man = share.join("man");
    let man_found = on_path || listed(&man, &var("MANPATH"));
    if !man_found {
        said += &format!(
            "man does not look in {m}; to read `man ikigai`, add to your shell's profile:\n  \
             export MANPATH=\"{m}:$MANPATH\"\n",
            m = man.display()
        );
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let data_home = match std::env::var_os("XDG_DATA_HOME") {
        Some(d) if !d.is_empty() => Some(PathBuf::from(d)),
        _ => home.as_ref().map(|h| h.join(".local/share")),
    };
    let data_dirs = match var("XDG_DATA_DIRS") {
        d if d.is_empty() => "/usr/local/share:/usr/share".to_string(),
        d => d,
    };
    let searched = data_home.is_some_and(|d| listed(&share, &d.to_string_lossy()))
        || listed(&share, &data_dirs);
    let shell = var("SHELL");
    let shell = shell.rsplit('/').next().unwrap_or_default();
    match shell {
        "bash" if !searched => {
            said += &format!(
                "bash-completion does not look in {d}; add to ~/.bashrc:\n  \
                 for f in {d}/*; do . \"$f\"; done\n",
                d = share.join("bash-completion/completions").display()
            );
        }
        "zsh" if !listed(&share.join("zsh/site-functions"), &var("FPATH")) => {
            said += &format!(
                "zsh: add this line to ~/.zshrc, before compinit:\n  fpath=({} $fpath)\n",
                share.join("zsh/site-functions").display()
            );
        }
        "fish" if !searched => {
            said += &format!(
                "fish: add this line to ~/.config/fish/config.fish:\n  \
                 set -p fish_complete_path {}\n",
                share.join("fish/vendor_completions.d").display()
            );
        }
        _ => {}
    }
    if on_path {
        said += "run: ikigai\n";
    } else {
        said += &format!(
            "{p}/bin is not on your PATH; add this line to your shell's profile (~/.bashrc, ~/.zshrc):\n  \
             export PATH=\"{p}/bin:$PATH\"\nmeanwhile run: {p}/bin/ikigai\n",
            p = prefix.display()
        );
    }
    said
}
