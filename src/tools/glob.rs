//! glob: the paths that match a glob pattern (local-tools.md, "Tool: glob";
//! spec README, decisions 6 and 16).
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
//! without `GLOB_ERR` (the spec's call) skips them. `path` itself is another
//! matter: when the directory the caller named cannot be read at all (missing,
//! not a directory, no permission), nothing was searched, and "0 matches"
//! would mislead the model into thinking the files are absent, so that is
//! READ_ERROR, saying why. A malformed pattern is INVALID_PATTERN, saying what
//! is wrong.

use serde_json::{Map, Value};

use crate::error::{ErrorCode, ToolError};
use crate::tool::{Env, Tool};
use crate::tools::fs;
use crate::tools::search::{self, Kind, Pattern, Sink};
use crate::tools::{lossy_text, output_and_count};

pub struct Glob;

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

    fn execute(&self, args: &Map<String, Value>, _env: &Env) -> Result<Value, ToolError> {
        let pattern = args["pattern"].as_str().unwrap_or_default();
        let path = args.get("path").and_then(Value::as_str).unwrap_or("");
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
        let mut paths: Vec<Vec<u8>> = match glob {
            Some(glob) => search::walk(&glob, search::threads(), || Paths(Vec::new()))
                .into_iter()
                .flat_map(|sink| sink.0)
                .collect(),
            None => Vec::new(),
        };
        paths.sort_unstable();
        let output = paths.join(&b'\n');
        Ok(output_and_count(lossy_text(output), paths.len()))
    }
}

/// One thread's findings.
struct Paths(Vec<Vec<u8>>);

impl Sink for Paths {
    fn found(&mut self, path: Vec<u8>, _kind: Kind) {
        self.0.push(path);
    }
}
