//! One tool call, as the model asks for it (host-architecture.md, "External
//! Tool Executor"; shellclaw-interface.md, "Execution Mode"; spec README,
//! decisions 2, 4, 8, 9 and 19): look the name up (default-deny), check the
//! arguments are an object, run the tool's file in its own process group
//! with the arguments on stdin (ikigai protocol) or as `$1` (shellclaw
//! protocol), drain both outputs up to the cap, kill the whole group at the
//! deadline or when the person interrupts, and wrap what happened in the
//! envelope.

use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::child::{self, Proc};
use super::config::Limits;
use super::envelope::{self, Ending};
use super::registry::{Protocol, Registry};
use super::schema::kind;
use crate::error::ErrorCode;

/// How often a running call looks at its cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(25);

/// What a call produced.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOutcome {
    /// Exactly what the model receives.
    pub envelope: Value,
    /// `config_required` events from the tool's stderr: for the person only.
    pub events: Vec<Value>,
    /// The envelope's `tool_success`.
    pub success: bool,
}

impl CallOutcome {
    fn new(envelope: Value, events: Vec<Value>) -> Self {
        let success = envelope["tool_success"] == Value::Bool(true);
        CallOutcome {
            envelope,
            events,
            success,
        }
    }
}

/// Runs tool `name` with `arguments` (a JSON object). Blocks until the tool
/// ends, its timeout passes, or `cancel` becomes true (then the tool's
/// process group is killed within a few tens of milliseconds and the
/// envelope says the user interrupted it, code `TOOL_TIMEOUT`).
pub fn call(
    registry: &Registry,
    name: &str,
    arguments: &Value,
    limits: &Limits,
    cancel: Option<&AtomicBool>,
) -> CallOutcome {
    let Some(entry) = registry.lookup(name) else {
        return CallOutcome::new(envelope::not_found(name, &registry.names()), vec![]);
    };
    if !arguments.is_object() {
        let what = format!("expected a JSON object, got {}", kind(arguments));
        return CallOutcome::new(envelope::invalid_params(name, &what), vec![]);
    }
    let json = arguments.to_string();
    let spawned = match entry.protocol {
        Protocol::Ikigai => Proc::spawn(
            &entry.path,
            &[],
            Some(json.into_bytes()),
            limits.max_output,
            limits.max_output,
        ),
        Protocol::Shellclaw => Proc::spawn(
            &entry.path,
            &[OsStr::new(&json)],
            None,
            limits.max_output,
            limits.max_output,
        ),
    };
    let proc = match spawned {
        Ok(proc) => proc,
        Err(e) => return CallOutcome::new(spawn_failure(name, &entry.path, &e), vec![]),
    };
    let (ending, finished) = run(proc, limits.timeout, cancel);
    let (envelope, events) =
        envelope::wrap(name, entry.protocol, ending, &finished.out, &finished.err);
    CallOutcome::new(envelope, events)
}

/// Like `call`, with the arguments as JSON text, as OpenAI sends them: text
/// that is not JSON is `INVALID_PARAMS`.
pub fn call_text(
    registry: &Registry,
    name: &str,
    arguments: &str,
    limits: &Limits,
    cancel: Option<&AtomicBool>,
) -> CallOutcome {
    if registry.lookup(name).is_none() {
        return CallOutcome::new(envelope::not_found(name, &registry.names()), vec![]);
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => call(registry, name, &value, limits, cancel),
        Err(e) => CallOutcome::new(
            envelope::invalid_params(name, &format!("arguments are not valid JSON: {e}")),
            vec![],
        ),
    }
}

/// Pumps the process until it ends, times out or is cancelled.
fn run(
    mut proc: Proc,
    timeout: Duration,
    cancel: Option<&AtomicBool>,
) -> (Ending, child::Finished) {
    let deadline = proc.started() + timeout;
    let mut stopped: Option<Ending> = None;
    loop {
        let now = Instant::now();
        if proc.settled(now) {
            break;
        }
        if stopped.is_none() && !proc.exited() {
            let elapsed = now - proc.started();
            if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                proc.kill();
                stopped = Some(Ending::Interrupted(elapsed));
            } else if now >= deadline {
                proc.kill();
                stopped = Some(Ending::TimedOut(timeout));
            }
        }
        let until = match (stopped, cancel) {
            // The kill's drain time wakes us.
            (Some(_), _) => now + timeout,
            (None, Some(_)) => deadline.min(now + CANCEL_POLL),
            (None, None) => deadline,
        };
        child::step(&mut [&mut proc], until);
    }
    let finished = proc.finish();
    let ending = stopped.unwrap_or_else(|| match finished.status {
        Some(status) => ending_of(status),
        // Settled without a status only after a kill, which sets `stopped`.
        None => Ending::Code(-1),
    });
    (ending, finished)
}

fn ending_of(status: std::process::ExitStatus) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Code(code),
        (None, Some(signal)) => Ending::Signal(signal),
        (None, None) => Ending::Code(-1),
    }
}

fn spawn_failure(name: &str, path: &std::path::Path, e: &std::io::Error) -> Value {
    match e.raw_os_error() {
        Some(libc::ENOENT) => envelope::refused(
            &format!(
                "Tool '{name}' cannot be run: its file {} is gone (run /refresh)",
                path.display()
            ),
            ErrorCode::ToolNotFound,
        ),
        Some(libc::E2BIG) => envelope::invalid_params(
            name,
            "the arguments are too long to pass as a command-line argument (shellclaw protocol)",
        ),
        _ => envelope::refused(
            &format!(
                "Tool '{name}' could not be started ({}): {e}",
                path.display()
            ),
            ErrorCode::ToolCrashed,
        ),
    }
}
