//! The one trait every tool implements. A tool knows nothing of its caller:
//! it receives validated JSON arguments and what it may know of the world it
//! runs in (`Env`), and returns a JSON result or a typed error.

use std::io::{self, Write};

use serde_json::{Map, Value};

pub use crate::env::Env;
use crate::error::ToolError;
use crate::truncate;

/// Which answer convention a tool follows (decisions 3 and 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// The local tools: `{"error", "error_code"}` on failure, exit 0 (ikigai
    /// protocol).
    Local,
    /// The web tools: `{"success": false, "error", "error_code"}`, exit 1.
    Web,
}

pub trait Tool: Sync {
    /// The schema name the model sees: `file_read`.
    fn name(&self) -> &'static str;
    /// The command (file) name: `file-read`.
    fn command(&self) -> &'static str;
    /// The spec's `--schema` JSON, verbatim.
    fn schema(&self) -> &'static str;
    fn family(&self) -> Family {
        Family::Local
    }
    /// Whether a call may start other programs (bash). One that cannot,
    /// and reaches no network, may be served by a worker that runs many
    /// calls (docs/sandbox.md).
    fn starts_processes(&self) -> bool {
        false
    }
    /// Runs the tool on arguments already validated against `schema()`
    /// (optional parameters given as `null` have been removed).
    fn execute(&self, args: &Map<String, Value>, env: &Env) -> Result<Value, ToolError>;
    /// `execute` for a caller that prints the answer: fitted to the
    /// host's cap when `env` has one (`truncate::fit`). A tool whose answer
    /// can be as big as its input may do better than hold it whole: fit it
    /// as it is made, or, without a cap, return it as a writer. Either way
    /// the bytes printed must be those of `execute`'s value, fitted.
    fn answer(&self, args: &Map<String, Value>, env: &Env) -> Result<Answer, ToolError> {
        let mut value = self.execute(args, env)?;
        if let Some(cap) = env.max_output() {
            truncate::fit(&mut value, cap);
        }
        Ok(Answer::Value(value))
    }
}

/// A tool's successful answer: a value, or what writes its JSON text.
/// Everything that can fail has failed before a writer is returned, so an
/// answer that has started to be written is always finished.
pub enum Answer {
    Value(Value),
    Written(WriteAnswer),
}

/// Writes an answer's JSON text; an error is the reader's (a closed pipe).
pub type WriteAnswer = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()>>;

/// The first sentence of a tool's description, for help listings.
pub fn summary(tool: &dyn Tool) -> String {
    let schema: Value = serde_json::from_str(tool.schema()).unwrap_or(Value::Null);
    let description = schema["description"].as_str().unwrap_or("");
    match description.find(". ") {
        Some(end) => description[..end].to_string(),
        None => description.trim_end_matches('.').to_string(),
    }
}
