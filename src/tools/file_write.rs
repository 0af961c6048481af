//! file_write: create or overwrite a file with the given content
//! (local-tools.md, "Tool: file-write"; spec README, decisions 7 and 17).
//!
//! The content replaces the file atomically ([`fs::atomic`]): the old
//! content or the new, never a torn file, and no temporary file left behind
//! on failure. An existing file keeps its permission bits; a new one gets the
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
//! | another write, flush or rename failure | WRITE_FAILED "Failed to write file: PATH" |

use std::io::Write;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::fs;
use crate::error::ToolError;
use crate::tool::{Env, Tool};

pub struct FileWrite;

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
        let path = args["file_path"].as_str().unwrap_or_default();
        let content = args["content"].as_str().unwrap_or_default().as_bytes();
        fs::check_path(path)?;
        let target = fs::resolve_link(Path::new(path)).map_err(|e| fs::open_error(&e, path))?;
        // Opened only to prove the caller may write it; the fd is not written.
        let existing = fs::open_for_update(&target, path, false)?.map(|(_, meta)| meta);
        fs::atomic::replace(&target, path, existing.as_ref(), |sink| {
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
