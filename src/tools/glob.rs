//! glob: the paths that match a glob pattern (decisions 6 and 16).
//!
//! The pattern is taken relative to `path` (`path/pattern`; just `pattern`
//! when `path` is absent or empty; an absolute pattern ignores `path`), and
//! every result is printed in that form: `{"pattern": "*.txt", "path":
//! "/tmp"}` gives `/tmp/file1.txt`, without `path` it gives `file1.txt`.
//! `path` is a directory name, never itself a pattern, so `app/[id]` works.
//! Results are POSIX glob's (dotfiles only for a literal leading `.`,
//! directories included, `dir/` for a pattern ending in `/`) plus `**`,
//! sorted by the bytes of the printed path, one a line.
//!
//! Directories below `path` that cannot be read are skipped, as POSIX glob
//! without `GLOB_ERR` (docs/local-tools.md's call) skips them. `path` itself is another
//! matter: when the directory the caller named cannot be read at all (missing,
//! not a directory, no permission), nothing was searched, and "0 matches"
//! would mislead the model into thinking the files are absent, so that is
//! READ_ERROR, saying why. A malformed pattern is INVALID_PATTERN, saying what
//! is wrong.
//!
//! Memory: under the host's output cap (`IKIGAI_MAX_OUTPUT`) each thread
//! keeps only the first paths in byte order that the answer could show and
//! counts the rest; `count` is every path found, and the answer says how
//! many are not shown.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::args;
use crate::error::{ErrorCode, ToolError};
use crate::tool::{Env, Tool};
use crate::tools::fs;
use crate::tools::search::{self, Dir, Kind, Pattern, Sink};
use crate::tools::{lossy_text, output_and_count};
use crate::truncate;

pub struct Glob;

#[derive(Deserialize)]
struct Args<'a> {
    pattern: &'a str,
    #[serde(default)]
    path: &'a str,
}

const SCHEMA: &str = r#"{
  "name": "glob",
  "description": "Find files matching a glob pattern",
  "parameters": {
    "type": "object",
    "properties": {
      "pattern": {
        "type": "string",
        "description": "Glob pattern (e.g., '*.txt', 'src/**/*.c')"
      },
      "path": {
        "type": "string",
        "description": "Directory to search in (default: current directory)"
      }
    },
    "required": ["pattern"]
  },
  "annotations": {"readOnlyHint": true}
}"#;

impl Tool for Glob {
    fn name(&self) -> &'static str {
        "glob"
    }
    fn command(&self) -> &'static str {
        "glob"
    }
    fn schema(&self) -> &'static str {
        SCHEMA
    }

    fn execute(&self, args: &Map<String, Value>, env: &Env) -> Result<Value, ToolError> {
        let Args { pattern, path } = args::typed(args)?;
        let glob = Pattern::new(path, pattern).map_err(search::invalid_glob)?;
        if !path.is_empty() && !pattern.starts_with('/') {
            if let Err(e) = std::fs::read_dir(path) {
                return Err(ToolError::new(
                    ErrorCode::ReadError,
                    format!(
                        "Read error during glob: cannot read directory {path}: {}",
                        fs::plain_reason(&e)
                    ),
                ));
            }
        }
        let cap = env.max_output();
        let sinks = match glob {
            Some(glob) => search::walk(&glob, search::threads(), || Paths::new(cap)),
            None => Vec::new(),
        };
        let count = sinks.iter().map(|s| s.count).sum();
        let out_of_memory = || {
            ToolError::new(
                ErrorCode::OutOfMemory,
                format!(
                    "Out of memory: the {count} paths found do not fit in memory; \
                     narrow the pattern or path"
                ),
            )
        };
        if sinks.iter().any(|s| s.out_of_memory) {
            return Err(out_of_memory());
        }
        // Each sink sorted its own paths on its own thread (`done`): what
        // is left is merging them.
        let lists: Vec<Vec<Vec<u8>>> = sinks.into_iter().map(|s| s.paths).collect();
        let mut joined = Vec::new();
        joined
            .try_reserve_exact(lists.iter().flatten().map(|p| p.len() + 1).sum())
            .map_err(|_| out_of_memory())?;
        let mut first = true;
        merge(&lists, |path| {
            if !first {
                joined.push(b'\n');
            }
            first = false;
            joined.extend_from_slice(path);
        });
        drop(lists);
        let output = lossy_text(joined);
        Ok(match cap {
            Some(cap) => {
                let mut answer = output_and_count(String::new(), count);
                truncate::fit_head_lines(&mut answer, "output", &output, count, "paths", cap);
                answer
            }
            None => output_and_count(output, count),
        })
    }
}

/// Calls `each` with the paths of sorted `lists`, all of them in order.
fn merge(lists: &[Vec<Vec<u8>>], mut each: impl FnMut(&[u8])) {
    let mut next = vec![0; lists.len()];
    // As many lists as walking threads, a handful: a scan for the least
    // head is as fast as a heap.
    loop {
        let mut least: Option<(usize, &[u8])> = None;
        for (i, list) in lists.iter().enumerate() {
            if let Some(path) = list.get(next[i]) {
                if least.is_none_or(|(_, l)| path.as_slice() < l) {
                    least = Some((i, path));
                }
            }
        }
        let Some((i, path)) = least else { return };
        each(path);
        next[i] += 1;
    }
}

/// The length of the start all `paths` share.
fn common_prefix(paths: &[Vec<u8>]) -> usize {
    let Some(first) = paths.first() else {
        return 0;
    };
    paths.iter().fold(first.len(), |n, p| {
        if p.len() >= n && p[..n] == first[..n] {
            n
        } else {
            first
                .iter()
                .zip(p)
                .take(n)
                .take_while(|(a, b)| a == b)
                .count()
        }
    })
}

/// Sorts `paths` by their bytes. All begin with the search's directory,
/// often long: comparing only what follows their common start halves the
/// time the sort takes.
fn sort_paths(paths: &mut [Vec<u8>]) {
    let skip = common_prefix(paths);
    paths.sort_unstable_by(|a, b| a[skip..].cmp(&b[skip..]));
}

/// One thread's findings: all of them, or under a cap only the first in
/// byte order that fill it, and how many there were.
struct Paths {
    cap: Option<usize>,
    paths: Vec<Vec<u8>>,
    /// Bytes of `paths`, a newline each included.
    bytes: usize,
    count: usize,
    /// Under a cap, once paths were dropped: the last one kept. Paths after
    /// it could never be shown.
    bound: Option<Vec<u8>>,
    /// Memory ran out for the paths: the answer is OUT_OF_MEMORY.
    out_of_memory: bool,
}

impl Paths {
    fn new(cap: Option<usize>) -> Paths {
        Paths {
            cap,
            paths: Vec::new(),
            bytes: 0,
            count: 0,
            bound: None,
            out_of_memory: false,
        }
    }

    /// Keeps the first paths in byte order that fill `cap`.
    fn compact(&mut self, cap: usize) {
        sort_paths(&mut self.paths);
        let mut bytes = 0;
        let keep = self
            .paths
            .iter()
            .take_while(|p| {
                bytes += p.len() + 1;
                bytes <= cap
            })
            .count();
        self.paths.truncate(keep);
        self.bytes = self.paths.iter().map(|p| p.len() + 1).sum();
        self.bound = Some(self.paths.last().cloned().unwrap_or_default());
    }
}

impl Sink for Paths {
    fn found(&mut self, path: Vec<u8>, _kind: Kind, _dir: Option<&Dir>) {
        self.count += 1;
        if self.out_of_memory || self.paths.try_reserve(1).is_err() {
            self.out_of_memory = true;
            return;
        }
        let Some(cap) = self.cap else {
            self.paths.push(path);
            return;
        };
        if self.bound.as_ref().is_some_and(|bound| path > *bound) {
            return;
        }
        self.bytes += path.len() + 1;
        self.paths.push(path);
        // Sorted and cut now and then, so the cost stays n log n.
        if self.bytes > 2 * cap {
            self.compact(cap);
        }
    }

    fn done(&mut self) {
        sort_paths(&mut self.paths);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|p| p.as_bytes().to_vec()).collect()
    }

    #[test]
    fn sorting_past_the_common_start_is_byte_order() {
        let mut got = paths(&["/r/b/x", "/r/a", "/r/b", "/r/a/z", "/r/", "/r/B"]);
        assert_eq!(common_prefix(&got), 3);
        sort_paths(&mut got);
        let mut expected = got.clone();
        expected.sort();
        assert_eq!(got, expected);
        assert_eq!(common_prefix(&paths(&["abc", "ab"])), 2);
        assert_eq!(common_prefix(&paths(&["abc", "xbc"])), 0);
        assert_eq!(common_prefix(&[]), 0);
    }

    #[test]
    fn merge_yields_every_path_of_sorted_lists_in_order() {
        let lists = [
            paths(&["a", "c", "e/f"]),
            paths(&[]),
            paths(&["b", "d", "e", "z"]),
            paths(&["a/b"]),
        ];
        let mut got = Vec::new();
        merge(&lists, |p| got.push(String::from_utf8(p.to_vec()).unwrap()));
        assert_eq!(got, ["a", "a/b", "b", "c", "d", "e", "e/f", "z"]);
        merge(&[], |_| panic!("nothing to merge"));
    }
}
