//! The parallel walk that expands a compiled glob (decisions 6 and 16).
//!
//! Every directory is listed once, by whichever thread takes it from a shared
//! stack, against the set of pattern positions that reach it (a small NFA:
//! `**` keeps its position and also moves past itself), so no path is found
//! twice and no directory is read twice. Literal components are looked up,
//! never listed. `**` descends only into real directories whose names do not
//! start with `.`, so it can never loop. A wildcard component follows a
//! symbolic link to a directory as POSIX glob does, except to a directory
//! already on the path being walked (known by device and inode): two links
//! to `.` and `*/*/.../*` would otherwise list 2^n paths, exponential in the
//! pattern's length.
//!
//! What is found goes to a per-thread `Sink` (a list of paths for glob, a
//! searcher for grep), so finding and searching overlap on every core. A
//! directory with many matches hands most of them back to the shared stack
//! in chunks, so one huge directory still keeps every thread busy.
//!
//! Unreadable directories and entries that vanish are skipped: docs/local-tools.md's
//! glob runs without `GLOB_ERR`, and grep ignores what it cannot read.

use std::fs;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use super::long::{self, Dir};
use super::pattern::{join, Pattern, Seg};

/// What a found path is, from the directory entry itself (never following
/// a symbolic link).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    Dir,
    Symlink,
    /// A device, FIFO or socket.
    Other,
}

impl Kind {
    pub(super) fn of(ft: fs::FileType) -> Kind {
        if ft.is_file() {
            Kind::File
        } else if ft.is_dir() {
            Kind::Dir
        } else if ft.is_symlink() {
            Kind::Symlink
        } else {
            Kind::Other
        }
    }
}

/// Receives the paths a walk finds, on the thread that found them. A
/// dir-only pattern's results carry their trailing `/`. `dir`, when given,
/// is the open directory the path's last component is in.
pub trait Sink: Send {
    fn found(&mut self, path: Vec<u8>, kind: Kind, dir: Option<&Dir>);

    /// Called once the walk is over, on the sink's own thread: what is
    /// done here (glob sorts its paths) runs on every core at once rather
    /// than after the walk on one.
    fn done(&mut self) {}
}

/// How deep below the search's root a directory is still opened relative
/// to its parent's descriptor, which stays open until every directory found
/// in it is listed. Deeper, directories are opened by their whole path, so
/// a walk of a very deep tree (decision 32) never holds more than about
/// this many descriptors per thread.
const HELD_DEPTH: usize = 64;

/// How many matches of one directory a thread keeps for itself; the rest go
/// back to the shared stack in chunks of this size.
const CHUNK: usize = 64;

/// The threads a walk uses: every core the process may run on, up to a
/// bound past which reading from the page cache no longer gets faster and
/// a small search would only pay for spawning.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(16))
}

/// Walks `pattern` on `threads` threads, each with its own sink from
/// `make`; returns the sinks.
pub fn walk<S: Sink>(pattern: &Pattern, threads: usize, make: impl Fn() -> S + Sync) -> Vec<S> {
    let walker = Walker {
        pattern,
        done: 1u64 << pattern.segs.len(),
    };
    let queue = Queue {
        state: Mutex::new(QueueState {
            work: Vec::new(),
            busy: 0,
        }),
        ready: Condvar::new(),
    };
    let mut first = make();
    let mut dirs = Vec::new();
    let mut found = Vec::new();
    let start = walker.closure(1);
    walker.visit_root(start, &mut dirs, &mut found);
    for (path, kind) in found {
        first.found(path, kind, None);
    }
    queue.push(&mut dirs);

    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads.max(1))
            .map(|_| {
                let (walker, queue, make) = (&walker, &queue, &make);
                scope.spawn(move || {
                    let mut sink = make();
                    walker.work(queue, &mut sink);
                    sink.done();
                    sink
                })
            })
            .collect();
        walker.work(&queue, &mut first);
        first.done();
        let mut sinks = vec![first];
        // A sink only holds data; a helper can only panic on a bug, which
        // then surfaces here as it would on the main thread.
        sinks.extend(helpers.into_iter().map(|h| match h.join() {
            Ok(sink) => sink,
            Err(panic) => std::panic::resume_unwind(panic),
        }));
        sinks
    })
}

/// The directories on the path to one being listed, innermost first: a
/// symbolic link back to one of them (the same device and inode) is not
/// followed. Their identities are looked up only when a link needs the
/// check, so a tree without such links costs no stat per directory.
struct Ancestors {
    path: Vec<u8>,
    /// How many directories are above it on the walk.
    depth: usize,
    id: OnceLock<Option<(u64, u64)>>,
    up: Option<Arc<Ancestors>>,
}

impl Ancestors {
    fn id(&self) -> Option<(u64, u64)> {
        *self
            .id
            .get_or_init(|| long::stat(&self.path, true).map(|(_, id)| id))
    }

    fn contains(chain: &Option<Arc<Ancestors>>, id: (u64, u64)) -> bool {
        let mut at = chain.as_deref();
        while let Some(a) = at {
            if a.id() == Some(id) {
                return true;
            }
            at = a.up.as_deref();
        }
        false
    }
}

enum Work {
    /// A directory to list, with the pattern positions that reach it, the
    /// directories above it, and (when its parent was listed) the open
    /// parent and where the directory's own name starts in its path.
    Dir(Vec<u8>, u64, Option<Arc<Ancestors>>, Option<Parent>),
    /// Matches to hand to a sink, and the directory they are in.
    Found(Option<Arc<Dir>>, Vec<(Vec<u8>, Kind)>),
}

/// The open directory another was found in, and where that one's name
/// starts in its path: opening it relative to the parent's descriptor
/// (openat) spares the kernel a lookup of every directory of the path.
type Parent = (Arc<Dir>, usize);

struct Queue {
    state: Mutex<QueueState>,
    ready: Condvar,
}

struct QueueState {
    work: Vec<Work>,
    /// Threads holding an item; while any does, more work may appear.
    busy: usize,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        // Nothing panics while holding the lock, so poison cannot happen.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next item, or `None` once the stack is empty and nobody can add
    /// to it any more.
    fn pop(&self) -> Option<Work> {
        let mut state = self.lock();
        loop {
            if let Some(work) = state.work.pop() {
                state.busy += 1;
                return Some(work);
            }
            if state.busy == 0 {
                self.ready.notify_all();
                return None;
            }
            state = self.ready.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn push(&self, items: &mut Vec<Work>) {
        if items.is_empty() {
            return;
        }
        self.lock().work.append(items);
        self.ready.notify_all();
    }

    fn finished_one(&self) {
        let mut state = self.lock();
        state.busy -= 1;
        if state.busy == 0 && state.work.is_empty() {
            self.ready.notify_all();
        }
    }
}

struct Walker<'g> {
    pattern: &'g Pattern,
    /// The position bit meaning "the whole pattern matched".
    done: u64,
}

impl Walker<'_> {
    fn work<S: Sink>(&self, queue: &Queue, sink: &mut S) {
        let mut dirs = Vec::new();
        let mut found = Vec::new();
        while let Some(work) = queue.pop() {
            match work {
                Work::Dir(path, positions, above, parent) => {
                    let dir = self.list(&path, positions, above, parent, &mut dirs, &mut found);
                    if found.len() > CHUNK {
                        let mut rest = found.split_off(CHUNK);
                        while !rest.is_empty() {
                            let tail = rest.split_off(rest.len().saturating_sub(CHUNK));
                            dirs.push(Work::Found(dir.clone(), tail));
                        }
                    }
                    queue.push(&mut dirs);
                    for (path, kind) in found.drain(..) {
                        sink.found(path, kind, dir.as_deref());
                    }
                }
                Work::Found(dir, items) => {
                    for (path, kind) in items {
                        sink.found(path, kind, dir.as_deref());
                    }
                }
            }
            queue.finished_one();
        }
    }

    /// Adds the positions that `**` lets a path skip: zero directories.
    fn closure(&self, mut positions: u64) -> u64 {
        for (i, seg) in self.pattern.segs.iter().enumerate() {
            if positions & (1 << i) != 0 && matches!(seg, Seg::Globstar) {
                positions |= 1 << (i + 1);
            }
        }
        positions
    }

    /// The root is a match itself when the pattern is all literal (or
    /// `**/` reaches it), and a directory to list otherwise.
    fn visit_root(&self, positions: u64, dirs: &mut Vec<Work>, found: &mut Vec<(Vec<u8>, Kind)>) {
        let root = &self.pattern.root;
        if root.is_empty() {
            // The working directory is no name of its own to print.
            if positions & !self.done != 0 {
                dirs.push(Work::Dir(Vec::new(), positions & !self.done, None, None));
            }
            return;
        }
        self.reached(root.clone(), positions, None, &None, None, dirs, found);
    }

    /// Lists directory `dir`, reached at `positions`, and records what its
    /// entries reach (all of them entries of `dir`); returns the directory,
    /// open, when it was listed.
    fn list(
        &self,
        dir: &[u8],
        positions: u64,
        above: Option<Arc<Ancestors>>,
        parent: Option<Parent>,
        dirs: &mut Vec<Work>,
        found: &mut Vec<(Vec<u8>, Kind)>,
    ) -> Option<Arc<Dir>> {
        let segs = &self.pattern.segs;
        let active = || (0..segs.len()).filter(move |&i| positions & (1 << i) != 0);
        let depth = above.as_ref().map_or(0, |a| a.depth + 1);
        let here = Some(Arc::new(Ancestors {
            path: dir.to_vec(),
            depth,
            id: OnceLock::new(),
            up: above,
        }));
        // Names read from the directory serve `*`, `**` and, while we are at
        // it, plain names; `.` and `..` are never listed, so they (and every
        // name when nothing needs a listing) are looked up directly.
        let listing = active().any(|i| !matches!(segs[i], Seg::Literal(_)));
        let mut lookups: Vec<(&[u8], u64)> = Vec::new();
        for i in active() {
            if let Seg::Literal(name) = &segs[i] {
                if !listing || name == b"." || name == b".." {
                    match lookups.iter_mut().find(|(n, _)| *n == name.as_slice()) {
                        Some((_, next)) => *next |= 1 << (i + 1),
                        None => lookups.push((name, 1 << (i + 1))),
                    }
                }
            }
        }
        for (name, next) in lookups {
            self.reached(
                join(dir, name),
                self.closure(next),
                None,
                &here,
                None,
                dirs,
                found,
            );
        }
        if !listing {
            return None;
        }
        let opened = Arc::new(match parent {
            Some((parent, name_at)) => parent.open_dir(&dir[name_at..]).ok()?,
            None => Dir::open(dir).ok()?,
        });
        let hold = depth < HELD_DEPTH;

        let mut visit = |name: &[u8], kind: Kind| {
            let mut next = 0u64;
            for i in active() {
                let hit = match &segs[i] {
                    Seg::Globstar => {
                        if kind == Kind::Dir && !name.starts_with(b".") {
                            next |= 1 << i;
                        }
                        continue;
                    }
                    Seg::Name(m) => m.matches(name),
                    Seg::Literal(lit) => lit.as_slice() == name,
                };
                if hit {
                    next |= 1 << (i + 1);
                }
            }
            if next != 0 {
                let path = join(dir, name);
                let name_at = path.len() - name.len();
                self.reached(
                    path,
                    self.closure(next),
                    Some(kind),
                    &here,
                    hold.then_some((&opened, name_at)),
                    dirs,
                    found,
                );
            }
        };
        opened.each_entry(&mut visit);
        Some(opened)
    }

    /// `path` (of `kind`, when the listing said) reaches `positions`: it may
    /// be a match, a directory to list, or both.
    // Where the path was found (above, parent) and the two lists it may go
    // to are what a struct would bundle for this one caller pair.
    #[allow(clippy::too_many_arguments)]
    fn reached(
        &self,
        path: Vec<u8>,
        positions: u64,
        kind: Option<Kind>,
        above: &Option<Arc<Ancestors>>,
        parent: Option<(&Arc<Dir>, usize)>,
        dirs: &mut Vec<Work>,
        found: &mut Vec<(Vec<u8>, Kind)>,
    ) {
        // Only a wildcard's listing can loop without end; a literal name
        // (`up/..`, a link spelled out) is followed as written.
        let listed = kind.is_some();
        let kind = match kind {
            Some(kind) => kind,
            None => match long::stat(&path, false) {
                Some((kind, _)) => kind,
                None => return,
            },
        };
        let further = positions & !self.done;
        let mut descend = further != 0 && matches!(kind, Kind::Dir | Kind::Symlink);
        if descend && listed && kind == Kind::Symlink {
            // A link back to a directory on the path: no new names there.
            if let Some((_, id)) = long::stat(&path, true) {
                descend = !Ancestors::contains(above, id);
            }
        }
        if positions & self.done != 0 {
            if self.pattern.dir_only {
                if is_dir(&path, kind) {
                    let mut shown = path.clone();
                    if !shown.ends_with(b"/") {
                        shown.push(b'/');
                    }
                    found.push((shown, Kind::Dir));
                }
            } else if descend {
                found.push((path.clone(), kind));
            } else {
                found.push((path, kind));
                return;
            }
        }
        if descend {
            let parent = parent.map(|(dir, name_at)| (Arc::clone(dir), name_at));
            dirs.push(Work::Dir(path, further, above.clone(), parent));
        }
    }
}

/// A directory, or a symbolic link to one (POSIX glob's `dir/` follows it).
fn is_dir(path: &[u8], kind: Kind) -> bool {
    match kind {
        Kind::Dir => true,
        Kind::Symlink => long::stat(path, true).is_some_and(|(kind, _)| kind == Kind::Dir),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    struct Paths(Vec<String>);

    impl Sink for Paths {
        fn found(&mut self, path: Vec<u8>, _kind: Kind, _dir: Option<&Dir>) {
            self.0.push(String::from_utf8(path).unwrap());
        }
    }

    fn expand(dir: &Path, pattern: &str, threads: usize) -> Vec<String> {
        let base = dir.to_str().unwrap();
        let glob = Pattern::new(base, pattern).unwrap().unwrap();
        let mut all: Vec<String> = walk(&glob, threads, || Paths(Vec::new()))
            .into_iter()
            .flat_map(|p| p.0)
            .map(|p| p[base.len() + 1..].to_string())
            .collect();
        all.sort();
        all
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in [
            "a.c",
            "b.h",
            ".hidden.c",
            "src/main.c",
            "src/lib/util.c",
            "src/lib/deep/x.c",
            "src/.git/config.c",
            ".dot/inside.c",
        ] {
            let path = dir.path().join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "").unwrap();
        }
        std::os::unix::fs::symlink(dir.path().join("src"), dir.path().join("link")).unwrap();
        for i in 0..200 {
            fs::create_dir_all(dir.path().join(format!("many/d{i:03}"))).unwrap();
            fs::write(dir.path().join(format!("many/f{i:03}.c")), "").unwrap();
        }
        dir
    }

    #[test]
    fn globstar_matches_zero_or_more_real_non_dot_directories() {
        let dir = tree();
        let found = expand(dir.path(), "**/*.c", 2);
        let mut expected = vec![
            "a.c".to_string(),
            "src/lib/deep/x.c".into(),
            "src/lib/util.c".into(),
            "src/main.c".into(),
        ];
        expected.extend((0..200).map(|i| format!("many/f{i:03}.c")));
        expected.sort();
        assert_eq!(found, expected);
    }

    #[test]
    fn one_thread_and_many_find_the_same() {
        let dir = tree();
        for pattern in [
            "**",
            "**/",
            "*/*",
            "many/*",
            "**/lib/*.c",
            "*/**/x.c",
            ".*/*",
        ] {
            let one = expand(dir.path(), pattern, 1);
            assert!(!one.is_empty(), "{pattern}");
            assert_eq!(one, expand(dir.path(), pattern, 3), "{pattern}");
        }
    }

    #[test]
    fn wildcards_follow_symlinks_but_globstar_does_not() {
        let dir = tree();
        assert_eq!(
            expand(dir.path(), "*/main.c", 2),
            ["link/main.c", "src/main.c"]
        );
        assert_eq!(expand(dir.path(), "li*/**/x.c", 2), ["link/lib/deep/x.c"]);
        assert!(!expand(dir.path(), "**/main.c", 2).contains(&"link/main.c".to_string()));
    }

    #[test]
    fn literal_names_and_dot_components_are_looked_up() {
        let dir = tree();
        assert_eq!(expand(dir.path(), "src/.git/*", 2), ["src/.git/config.c"]);
        assert_eq!(expand(dir.path(), "**/.git/*.c", 2), ["src/.git/config.c"]);
        assert_eq!(
            expand(dir.path(), "src/lib/../*.c", 2),
            ["src/lib/../main.c"]
        );
        assert_eq!(
            expand(dir.path(), "*/lib/../main.c", 2),
            ["link/lib/../main.c", "src/lib/../main.c"]
        );
        assert_eq!(expand(dir.path(), "src/nope/*.c", 2), Vec::<String>::new());
    }

    #[test]
    fn dir_only_patterns_print_a_trailing_slash() {
        let dir = tree();
        assert_eq!(expand(dir.path(), "s*/", 2), ["src/"]);
        assert_eq!(expand(dir.path(), "*/l*/", 2), ["link/lib/", "src/lib/"]);
        assert_eq!(
            expand(dir.path(), "src/**/", 2),
            ["src/", "src/lib/", "src/lib/deep/"]
        );
    }
}
