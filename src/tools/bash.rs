//! bash: run a shell command, answer its output and exit status
//! (local-tools.md, "Tool: bash"; spec README, decision 4).
//!
//! stdout and stderr share one pipe, so `output` interleaves them in the order
//! written, as `2>&1` would. stdin is `/dev/null`, so a command waiting for
//! input ends at once instead of hanging. The tool sets no timeout: the host
//! kills its whole process group when the deadline passes.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};

use serde_json::{json, Map, Value};

use crate::error::ToolError;
use crate::tool::{Env, Tool};

pub struct Bash;

const SCHEMA: &str = r#"{
  "name": "bash",
  "description": "Execute a shell command and return output",
  "parameters": {
    "type": "object",
    "properties": {
      "command": {
        "type": "string",
        "description": "Shell command to execute"
      }
    },
    "required": ["command"]
  }
}"#;

/// What local-tools.md says a failed spawn reports.
const SPAWN_FAILED: i32 = 127;

impl Tool for Bash {
    fn name(&self) -> &'static str {
        "bash"
    }
    fn command(&self) -> &'static str {
        "bash"
    }
    fn schema(&self) -> &'static str {
        SCHEMA
    }

    fn execute(&self, args: &Map<String, Value>, _env: &Env) -> Result<Value, ToolError> {
        let command = args["command"].as_str().unwrap_or_default();
        let (mut output, exit_code) = match run(command) {
            Ok(done) => done,
            Err(e) => (format!("sh: {e}").into_bytes(), SPAWN_FAILED),
        };
        if output.last() == Some(&b'\n') {
            output.pop();
        }
        Ok(json!({
            "output": String::from_utf8_lossy(&output),
            "exit_code": exit_code,
        }))
    }
}

fn run(command: &str) -> std::io::Result<(Vec<u8>, i32)> {
    let (mut reader, writer) = std::io::pipe()?;
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .spawn()?;
    // The temporary Command, holding the parent's copies of the write end, is
    // gone by now; otherwise the pipe would never report end of file.
    let mut output = Vec::new();
    reader.read_to_end(&mut output)?;
    let status = child.wait()?;
    Ok((output, exit_code(status)))
}

/// The exit status a shell would report: the code, or 128 + the signal.
fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(SPAWN_FAILED)
}
