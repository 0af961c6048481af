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
use super::envelope::{self, Ending};
use super::registry::{Protocol, Registry};
use super::settings::Limits;
use crate::args::type_name as kind;
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
    if let Value::String(text) = arguments {
        // Text the model meant as JSON but that does not parse (kept as a
        // string by `model::parse_arguments`): say so, as `call_text` does.
        if let Err(e) = serde_json::from_str::<Value>(text) {
            return CallOutcome::new(not_json(name, &e), vec![]);
        }
    }
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
        Protocol::Mcp => {
            let reply = crate::mcp::client::call(name, arguments, limits.timeout, cancel);
            return CallOutcome::new(crate::mcp::client::envelope(name, &reply), vec![]);
        }
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
        Err(e) => CallOutcome::new(not_json(name, &e), vec![]),
    }
}

fn not_json(name: &str, e: &serde_json::Error) -> Value {
    envelope::invalid_params(name, &format!("arguments are not valid JSON: {e}"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::registry::{Entry, Origin};
    use serde_json::json;
    use std::path::Path;

    /// A registry of fixture tools (tests/fixtures/host/tool.sh, which acts
    /// after the name of the link that runs it).
    fn fixtures(names: &[&str]) -> (tempfile::TempDir, Registry) {
        let dir = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/host/tool.sh");
        let entries = names
            .iter()
            .map(|name| {
                let path = dir.path().join(name);
                std::os::unix::fs::symlink(&script, &path).unwrap();
                Entry {
                    name: name.to_string(),
                    description: "d".into(),
                    path,
                    protocol: Protocol::Ikigai,
                    origin: Origin::User,
                    schema: json!({"name": name, "description": "d",
                        "parameters": {"type": "object", "properties": {}}}),
                }
            })
            .collect();
        (dir, Registry::build(entries, vec![]))
    }

    #[test]
    fn cancel_stops_the_call_at_once() {
        let (_dir, registry) = fixtures(&["sleepy"]);
        let cancel = AtomicBool::new(false);
        let started = Instant::now();
        let outcome = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                cancel.store(true, Ordering::Relaxed);
            });
            call(
                &registry,
                "sleepy",
                &json!({}),
                &Limits::default(),
                Some(&cancel),
            )
        });
        // The tool sleeps 30 s; the default timeout is 30 s.
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(!outcome.success);
        let e = &outcome.envelope;
        assert_eq!(
            (&e["error_code"], &e["exit_code"]),
            (&json!("TOOL_TIMEOUT"), &Value::Null)
        );
        let error = e["error"].as_str().unwrap();
        assert!(
            error.starts_with("Tool 'sleepy' was interrupted by the user after ")
                && error.ends_with("s, before it finished"),
            "{error}"
        );
        assert_eq!(
            (&e["stdout"], &e["stderr"]),
            (&json!("started\n"), &json!("working\n"))
        );
    }

    #[test]
    fn an_unset_cancel_flag_changes_nothing() {
        let (_dir, registry) = fixtures(&["echo"]);
        let cancel = AtomicBool::new(false);
        let outcome = call(
            &registry,
            "echo",
            &json!({"a": 1}),
            &Limits::default(),
            Some(&cancel),
        );
        assert!(outcome.success, "{:?}", outcome.envelope);
        assert_eq!(outcome.envelope["result"]["input"], json!({"a": 1}));
        assert!(outcome.events.is_empty());
    }

    #[test]
    fn text_arguments_and_refusals() {
        let (_dir, registry) = fixtures(&["echo"]);
        let limits = Limits::default();
        let ok = call_text(&registry, "echo", r#"{"x":true}"#, &limits, None);
        assert_eq!(ok.envelope["result"]["input"], json!({"x": true}));
        let bad = call_text(&registry, "echo", "{x", &limits, None);
        assert_eq!(bad.envelope["error_code"], "INVALID_PARAMS");
        // An unknown name is reported as such even with bad arguments.
        let unknown = call_text(&registry, "nope", "{x", &limits, None);
        assert_eq!(unknown.envelope["error_code"], "TOOL_NOT_FOUND");
        assert!(!unknown.success);
    }
}
