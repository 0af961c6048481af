//! file_write: create or overwrite a file with the given content
//! (decisions 7 and 17).
//!
//! The content replaces the file atomically ([`fs::atomic`]): the old
//! content or the new, never a torn file, and no temporary file left behind,
//! even by a kill. Writes of one file by our tools happen one after the
//! other (the file's lock), so concurrent writes never interleave. An existing file keeps its permission bits; a new one gets the
//! default mode (0666 less the umask, typically 0644). A symbolic link is
//! written through to the file it names and stays a link. The parent
//! directory must exist.
//!
//! | case | answer |
//! |---|---|
//! | the file exists and the caller may not write it (decision 17) | PERMISSION_DENIED "Permission denied: PATH", nothing changed |
//! | the directory does not let the caller create the file | PERMISSION_DENIED "Permission denied: PATH" |
//! | the file is writable, its directory is not (no room for the temporary file) | PERMISSION_DENIED "Permission denied: PATH (the file is writable but its directory is not, ...)" |
//! | the parent directory is missing; a link loop; ... | OPEN_FAILED "Cannot open file: PATH" |
//! | a directory, FIFO or device (never opened, never replaced) | OPEN_FAILED "Cannot open file: PATH (is a directory)" ... |
//! | the disk or quota is full | NO_SPACE "No space left on device: PATH", old content intact |
//! | another program replaced or wrote the file meanwhile | FILE_CHANGED "File changed while being edited: PATH (...)", nothing replaced |
//! | another write, flush or rename failure | WRITE_FAILED "Failed to write file: PATH" |

use std::io::Write;
use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::fs;
use crate::args;
use crate::error::ToolError;
use crate::tool::{Env, Tool};

pub struct FileWrite;

#[derive(Deserialize)]
struct Args<'a> {
    file_path: &'a str,
    content: &'a str,
}

const SCHEMA: &str = r#"{
  "name": "file_write",
  "description": "Write content to a file (creates or overwrites)",
  "parameters": {
    "type": "object",
    "properties": {
      "file_path": {
        "type": "string",
        "description": "Absolute or relative path to file"
      },
      "content": {
        "type": "string",
        "description": "Content to write to file"
      }
    },
    "required": ["file_path", "content"]
  },
  "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true}
}"#;

impl Tool for FileWrite {
    fn name(&self) -> &'static str {
        "file_write"
    }
    fn command(&self) -> &'static str {
        "file-write"
    }
    fn schema(&self) -> &'static str {
        SCHEMA
    }

    fn execute(&self, args: &Map<String, Value>, _env: &Env) -> Result<Value, ToolError> {
        let Args { file_path, content } = args::typed(args)?;
        let (path, content) = (file_path, content.as_bytes());
        fs::check_path(path)?;
        let target = fs::resolve_link(Path::new(path)).map_err(|e| fs::open_error(&e, path))?;
        // The file is opened (not written) to prove the caller may write it.
        let locked = fs::atomic::lock(&target, path, false)?;
        fs::atomic::replace(&locked, path, |sink| {
            sink.write_all(content)
                .map_err(|e| fs::atomic::write_error(&e, path))
        })?;
        let bytes = content.len();
        Ok(json!({
            "output": format!("Wrote {bytes} bytes to {}", fs::basename(path)),
            "bytes": bytes,
        }))
    }
}
