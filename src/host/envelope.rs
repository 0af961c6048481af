//! The envelope the model sees for one tool call (decisions 8, 9 and 19).
//! Pure: from how the process ended and what it printed, to
//!
//! - `{"tool_success": true, "result": <the tool's JSON object>}`, or
//! - `{"tool_success": false, "error", "error_code", "exit_code", "stdout",
//!   "stderr"}`, plus `"truncated"` with exact byte counts when the host cut
//!   an output at its cap.
//!
//! `config_required` lines on stderr are events for the person: they are
//! taken out of the stderr the model sees and returned apart.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::child::Capture;
use super::registry::Protocol;
use super::settings::format_secs;
use crate::args::type_name as kind;

/// How a tool process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Exited by itself with this status code.
    Code(i32),
    /// Killed by this signal (not by the host).
    Signal(i32),
    /// Killed by the host at its deadline.
    TimedOut(Duration),
    /// Killed by the host because the person interrupted it.
    Interrupted(Duration),
}

/// Why a call failed: each kind carries its `error_code`, and the host's own
/// codes are spelled here and nowhere else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The tool explained its failure itself (decision 8): its own code.
    Tool(String),
    /// Killed at the deadline.
    Timeout,
    /// Stopped by the person (Ctrl-C) before it finished.
    Cancelled,
    /// Killed by a signal, or exited non-zero without explaining itself.
    Crashed,
    /// Exited 0 but printed no usable answer.
    InvalidOutput,
    /// Not in the registry (default-deny).
    NotFound,
    /// The arguments are not a JSON object.
    InvalidParams,
    /// Asked for after the last tool round the assistant allows per message.
    RoundLimit,
    /// An MCP server answered the call with a result marked `isError`.
    ToolError,
    /// Not run: a rule or the person refused it (the error says who and why).
    Denied,
    /// A background job was not started: as many as the host allows run
    /// already (decision 68).
    JobLimit,
    /// Ended at one of the call's resource limits (decision 81); the error
    /// names the limit and the config key that raises it.
    ResourceLimit,
}

impl Failure {
    pub fn code(&self) -> &str {
        match self {
            Failure::Tool(code) => code,
            Failure::Timeout => "TOOL_TIMEOUT",
            Failure::Cancelled => "CANCELLED",
            Failure::Crashed => "TOOL_CRASHED",
            Failure::InvalidOutput => "INVALID_OUTPUT",
            Failure::NotFound => "TOOL_NOT_FOUND",
            Failure::InvalidParams => "INVALID_PARAMS",
            Failure::RoundLimit => "TOOL_ROUND_LIMIT",
            Failure::ToolError => "TOOL_ERROR",
            Failure::Denied => crate::error::ErrorCode::PermissionDenied.as_str(),
            Failure::JobLimit => "JOB_LIMIT",
            Failure::ResourceLimit => "RESOURCE_LIMIT",
        }
    }
}

/// Every outcome of one call, as the model receives it. `to_json` gives
/// the shape of docs/protocols.md, keys in this order:
///
/// - `{"tool_success": true, "result", ["truncated"]}`
/// - `{"tool_success": false, "error", "error_code", "exit_code", "stdout",
///   "stderr", ["truncated"]}`
#[derive(Clone, Debug, PartialEq)]
pub enum Envelope {
    Success {
        result: Value,
        /// A shellclaw tool's plain text cut at the cap: what was cut.
        truncated: Option<Value>,
    },
    Failure {
        why: Failure,
        error: String,
        /// None when there is no status to report (timeout, refusal).
        exit_code: Option<i32>,
        stdout: String,
        stderr: String,
        /// `{"stdout": {"total_bytes", "omitted_bytes"}, ...}` for each
        /// output the host cut at its cap.
        truncated: Option<Value>,
    },
}

impl Envelope {
    /// A host-side failure before any process ran.
    pub fn refused(why: Failure, error: impl Into<String>) -> Envelope {
        Envelope::Failure {
            why,
            error: error.into(),
            exit_code: None,
            stdout: String::new(),
            stderr: String::new(),
            truncated: None,
        }
    }

    /// Default-deny: the name is not in the registry.
    pub fn not_found(name: &str, known: &[&str]) -> Envelope {
        let available = if known.is_empty() {
            "no tools are available".to_string()
        } else {
            format!("available tools: {}", known.join(", "))
        };
        Envelope::refused(
            Failure::NotFound,
            format!("Tool '{name}' not found; {available}"),
        )
    }

    /// Not run because a rule or the person refused it; `why` says who and
    /// why, for the model to read.
    pub fn denied(why: impl Into<String>) -> Envelope {
        Envelope::refused(Failure::Denied, why)
    }

    /// The arguments are not a JSON object.
    pub fn invalid_params(name: &str, what: &str) -> Envelope {
        Envelope::refused(
            Failure::InvalidParams,
            format!("Invalid arguments for tool '{name}': {what}"),
        )
    }

    pub fn success(&self) -> bool {
        matches!(self, Envelope::Success { .. })
    }

    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        let truncated = match self {
            Envelope::Success { result, truncated } => {
                map.insert("tool_success".into(), Value::Bool(true));
                map.insert("result".into(), result.clone());
                truncated
            }
            Envelope::Failure {
                why,
                error,
                exit_code,
                stdout,
                stderr,
                truncated,
            } => {
                map.insert("tool_success".into(), Value::Bool(false));
                map.insert("error".into(), error.as_str().into());
                map.insert("error_code".into(), why.code().into());
                map.insert("exit_code".into(), (*exit_code).into());
                map.insert("stdout".into(), stdout.as_str().into());
                map.insert("stderr".into(), stderr.as_str().into());
                truncated
            }
        };
        if let Some(t) = truncated {
            map.insert("truncated".into(), t.clone());
        }
        Value::Object(map)
    }
}

/// The fence a failed call ran in, for its envelope, so the model can tell
/// the user that the sandbox may be why: `{"mode", "writable", "network"}`,
/// and in a confining mode `refuses`, the rules of decisions 72, 75 and 76
/// with how to lift each (a refused read is the kernel's bare EACCES).
/// Failed means the envelope says so, or the tool's own answer does (an
/// `error`, or bash's non-zero `exit_code`: a refused write shows there);
/// None for a success.
pub fn sandbox_note(envelope: &Envelope, fence: &crate::sandbox::Fence) -> Option<Value> {
    let failed = match envelope {
        Envelope::Failure { .. } => true,
        Envelope::Success { result, .. } => {
            result.get("error").is_some_and(|e| !e.is_null())
                || result
                    .get("exit_code")
                    .and_then(Value::as_i64)
                    .is_some_and(|c| c != 0)
        }
    };
    failed.then(|| {
        let mut note = json!({
            "mode": fence.mode.as_str(),
            "writable": fence.writable.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
            "network": fence.network,
        });
        let rules = fence.rules();
        if !rules.is_empty() {
            note["refuses"] = json!(rules);
        }
        note
    })
}

/// Wraps a finished run; returns the envelope and the events found on stderr.
pub fn wrap(
    name: &str,
    protocol: Protocol,
    ending: Ending,
    stdout: &Capture,
    stderr: &Capture,
) -> (Envelope, Vec<Value>) {
    let (events, stderr_text) = split_events(&stderr.text());
    let out_text = stdout.text();
    let truncated = truncation(stdout, stderr);
    let fail = |why: Failure, error: String, exit_code: Option<i32>| Envelope::Failure {
        why,
        error,
        exit_code,
        stdout: out_text.clone(),
        stderr: stderr_text.clone(),
        truncated: truncated.clone(),
    };
    let envelope = match ending {
        Ending::TimedOut(after) => fail(Failure::Timeout, timed_out(name, after), None),
        Ending::Interrupted(after) => fail(Failure::Cancelled, cancelled(name, after), None),
        Ending::Signal(signal) => {
            let code = crate::exit::of_signal(signal);
            fail(
                Failure::Crashed,
                format!("Tool '{name}' crashed with exit code {code}"),
                Some(code),
            )
        }
        Ending::Code(code) if code != 0 => match own_error(stdout) {
            // Decision 8: the tool explained itself; the model reads that.
            Some((error, error_code)) => fail(Failure::Tool(error_code), error, Some(code)),
            None => fail(
                Failure::Crashed,
                format!("Tool '{name}' exited with code {code}"),
                Some(code),
            ),
        },
        // A shellclaw tool may answer plain text: a long one is still an
        // answer, cut to the cap (the marker in it and `truncated` say so).
        Ending::Code(_) if protocol == Protocol::Shellclaw && stdout.truncated() => {
            Envelope::Success {
                result: Value::String(out_text.clone()),
                truncated: truncated.clone(),
            }
        }
        Ending::Code(_) => match result(name, protocol, stdout) {
            Ok(result) => Envelope::Success {
                result,
                truncated: None,
            },
            Err(why) => fail(Failure::InvalidOutput, why, Some(0)),
        },
    };
    (envelope, events)
}

/// `envelope`, as a `RESOURCE_LIMIT` failure when the call's containment
/// process said, in the last line of the call's stderr, that the call met
/// its scope's memory limit, or its task limit and failed (a program that
/// waited and forked again met no limit that mattered); decision 81,
/// `sandbox::scope`. The line itself is taken off the stderr the model
/// reads.
pub fn past_scope_limit(envelope: Envelope, name: &str, stderr: &Capture) -> Envelope {
    use crate::sandbox::scope::{marked, Reached};
    let text = stderr.text();
    let Some(mark) = marked(text.as_bytes()) else {
        return envelope;
    };
    let failed = match &envelope {
        Envelope::Success { result, .. } => {
            result.get("exit_code").and_then(Value::as_i64).unwrap_or(0) != 0
        }
        Envelope::Failure { .. } => true,
    };
    if mark.reached == Reached::Tasks && !failed {
        return envelope;
    }
    let error = format!("Tool '{name}': {}", mark.what);
    // The envelope's stderr (its events taken out) ends with the line too.
    let unmarked = |stderr: String| match marked(stderr.as_bytes()) {
        Some(mark) => String::from_utf8_lossy(mark.before).into_owned(),
        None => stderr,
    };
    as_resource_limit(envelope, error, None, unmarked)
}

/// `envelope` as a `RESOURCE_LIMIT` failure with `error`: a success's
/// result becomes its stdout (with `exit_code`, or the result's own), a
/// failure keeps what it had, its stderr passed through `stderr`.
fn as_resource_limit(
    envelope: Envelope,
    error: String,
    exit_code: Option<i32>,
    stderr: impl FnOnce(String) -> String,
) -> Envelope {
    match envelope {
        Envelope::Success { result, truncated } => Envelope::Failure {
            why: Failure::ResourceLimit,
            error,
            exit_code: exit_code.or_else(|| {
                result
                    .get("exit_code")
                    .and_then(Value::as_i64)
                    .and_then(|c| i32::try_from(c).ok())
            }),
            stdout: result.to_string(),
            stderr: String::new(),
            truncated,
        },
        Envelope::Failure {
            exit_code,
            stdout,
            stderr: had,
            truncated,
            ..
        } => Envelope::Failure {
            why: Failure::ResourceLimit,
            error,
            exit_code,
            stdout,
            stderr: stderr(had),
            truncated,
        },
    }
}

/// The exit status a shell gives a command that the kernel stopped at the
/// file-size limit (128 + SIGXFSZ).
const PAST_FILE_SIZE: i64 = 128 + libc::SIGXFSZ as i64;

/// `envelope`, as a `RESOURCE_LIMIT` failure when the call ended at one of
/// its limits in a way the host can see (decision 81): the kernel stops a
/// process that writes past its file-size limit with SIGXFSZ, whether the
/// tool itself (`ending`) or the command a shell tool ran, which the shell
/// reports as exit code 153 (a command that says `exit 153` reads the
/// same, and is named the same way). The other limits are met inside the
/// call as the kernel reports them (a fork refused with EAGAIN, an
/// allocation with ENOMEM), which the tool's own output says.
pub fn past_limit(envelope: Envelope, ending: &Ending, name: &str, file_size: u64) -> Envelope {
    let by_signal = *ending == Ending::Signal(libc::SIGXFSZ);
    let by_shell = match &envelope {
        Envelope::Success { result, .. } => {
            result.get("exit_code").and_then(Value::as_i64) == Some(PAST_FILE_SIZE)
        }
        Envelope::Failure { .. } => false,
    };
    if !by_signal && !by_shell {
        return envelope;
    }
    let who = if by_signal {
        format!("Tool '{name}' was stopped")
    } else {
        format!("A command run by '{name}' was stopped (exit code {PAST_FILE_SIZE})")
    };
    let error = format!(
        "{who} at the file size limit (SIGXFSZ): a file it wrote reached {} \
         (config limits.file_size raises it)",
        crate::sandbox::limits::size_text(file_size)
    );
    as_resource_limit(envelope, error, Some(PAST_FILE_SIZE as i32), |s| s)
}

/// The error of a call stopped at its deadline, in one wording whether a
/// process or an MCP server was running it.
pub fn timed_out(name: &str, after: Duration) -> String {
    format!("Tool '{name}' timed out after {}", format_secs(after))
}

/// The error of a call the person interrupted, in one wording whether a
/// process or an MCP server was running it.
pub fn cancelled(name: &str, after: Duration) -> String {
    format!(
        "Tool '{name}' was cancelled by the user after {}, before it finished",
        format_secs(after)
    )
}

/// The result of a clean exit: for the ikigai protocol a JSON object; a
/// shellclaw tool may also answer other JSON or plain text, which becomes the
/// result as is.
fn result(name: &str, protocol: Protocol, stdout: &Capture) -> Result<Value, String> {
    let Some(bytes) = stdout.complete() else {
        return Err(format!(
            "Tool '{name}' printed {} bytes on stdout, more than the {}-byte output cap; \
             the output was cut and cannot be read as a result",
            stdout.total(),
            stdout.cap()
        ));
    };
    let parsed = serde_json::from_slice::<Value>(&bytes);
    match (protocol, parsed) {
        (_, Ok(Value::Object(map))) => Ok(Value::Object(map)),
        (Protocol::Shellclaw, Ok(other)) => Ok(other),
        (Protocol::Shellclaw, Err(_)) => {
            let text = String::from_utf8_lossy(&bytes);
            Ok(Value::String(
                text.strip_suffix('\n').unwrap_or(&text).to_string(),
            ))
        }
        // MCP tools never reach here: their server answers, not a process.
        (_, _) if bytes.iter().all(u8::is_ascii_whitespace) => Err(format!(
            "Tool '{name}' printed nothing on stdout; expected a JSON object"
        )),
        (_, Ok(other)) => Err(format!(
            "Tool '{name}' returned {}, not a JSON object",
            kind(&other)
        )),
        (_, Err(e)) => Err(format!("Tool '{name}' returned invalid JSON: {e}")),
    }
}

/// A failing tool's own `{"error", "error_code"}` on stdout (decision 8).
fn own_error(stdout: &Capture) -> Option<(String, String)> {
    let bytes = stdout.complete()?;
    let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(&bytes) else {
        return None;
    };
    let error = match obj.get("error")? {
        Value::String(s) => s.clone(),
        Value::Null => return None,
        other => other.to_string(),
    };
    let code = match obj.get("error_code") {
        Some(Value::String(c)) if !c.is_empty() => c.clone(),
        _ => Failure::Crashed.code().to_string(),
    };
    Some((error, code))
}

/// `{"stdout": {"total_bytes", "omitted_bytes"}, ...}` for each cut stream.
fn truncation(stdout: &Capture, stderr: &Capture) -> Option<Value> {
    let mut cut = Map::new();
    for (key, capture) in [("stdout", stdout), ("stderr", stderr)] {
        if capture.truncated() {
            cut.insert(
                key.into(),
                json!({"total_bytes": capture.total(), "omitted_bytes": capture.omitted()}),
            );
        }
    }
    (!cut.is_empty()).then_some(Value::Object(cut))
}

/// Splits stderr into the `config_required` events (one JSON object a line)
/// and the rest, which the model may see.
pub fn split_events(stderr: &str) -> (Vec<Value>, String) {
    let mut events = Vec::new();
    let mut rest = String::new();
    for line in stderr.split_inclusive('\n') {
        match serde_json::from_str::<Value>(line.trim()) {
            Ok(event) if event["kind"] == "config_required" => events.push(event),
            _ => rest.push_str(line),
        }
    }
    (events, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(text: &str) -> Capture {
        let mut c = Capture::new(1 << 20);
        c.push(text.as_bytes());
        c
    }

    fn wrap_text(protocol: Protocol, ending: Ending, out: &str, err: &str) -> Value {
        wrap("t", protocol, ending, &cap(out), &cap(err))
            .0
            .to_json()
    }

    #[test]
    fn a_long_shellclaw_text_is_a_cut_success() {
        let mut out = Capture::new(10);
        out.push("line one\nline two\nline three\n".as_bytes());
        let e = wrap("t", Protocol::Shellclaw, Ending::Code(0), &out, &cap(""))
            .0
            .to_json();
        assert_eq!(e["tool_success"], true, "{e}");
        assert_eq!(e["result"], out.text());
        assert_eq!(
            e["truncated"],
            json!({"stdout": {"total_bytes": 29, "omitted_bytes": 19}})
        );
        // The ikigai protocol still needs its whole JSON object.
        let e = wrap("t", Protocol::Ikigai, Ending::Code(0), &out, &cap(""))
            .0
            .to_json();
        assert_eq!(e["error_code"], "INVALID_OUTPUT");
    }

    #[test]
    fn success_wraps_the_object() {
        let e = wrap_text(
            Protocol::Ikigai,
            Ending::Code(0),
            "{\"b\":1,\"a\":2}\n",
            "noise",
        );
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"tool_success":true,"result":{"b":1,"a":2}}"#
        );
    }

    #[test]
    fn invalid_output_says_what_was_wrong() {
        for (out, why) in [
            (
                "",
                "Tool 't' printed nothing on stdout; expected a JSON object",
            ),
            ("[1]", "Tool 't' returned an array, not a JSON object"),
            ("\"s\"", "Tool 't' returned a string, not a JSON object"),
            (
                "hello",
                "Tool 't' returned invalid JSON: expected value at line 1 column 1",
            ),
        ] {
            let e = wrap_text(Protocol::Ikigai, Ending::Code(0), out, "err");
            assert_eq!(
                e,
                json!({"tool_success": false, "error": why, "error_code": "INVALID_OUTPUT",
                       "exit_code": 0, "stdout": out, "stderr": "err"})
            );
        }
    }

    #[test]
    fn shellclaw_text_and_json_are_results() {
        let e = wrap_text(Protocol::Shellclaw, Ending::Code(0), "15C sunny\n", "");
        assert_eq!(e, json!({"tool_success": true, "result": "15C sunny"}));
        let e = wrap_text(Protocol::Shellclaw, Ending::Code(0), "[1,2]", "");
        assert_eq!(e, json!({"tool_success": true, "result": [1, 2]}));
    }

    #[test]
    fn crash_timeout_interrupt() {
        let e = wrap_text(Protocol::Ikigai, Ending::Signal(11), "partial", "segfault");
        assert_eq!(
            e,
            json!({"tool_success": false, "error": "Tool 't' crashed with exit code 139",
                   "error_code": "TOOL_CRASHED", "exit_code": 139, "stdout": "partial", "stderr": "segfault"})
        );
        let e = wrap_text(Protocol::Ikigai, Ending::Code(3), "junk", "");
        assert_eq!(e["error"], "Tool 't' exited with code 3");
        assert_eq!(
            (&e["error_code"], &e["exit_code"]),
            (&json!("TOOL_CRASHED"), &json!(3))
        );
        let e = wrap_text(
            Protocol::Ikigai,
            Ending::TimedOut(Duration::from_secs(30)),
            "p",
            "",
        );
        assert_eq!(e["error"], "Tool 't' timed out after 30s");
        assert_eq!(
            (&e["error_code"], &e["exit_code"]),
            (&json!("TOOL_TIMEOUT"), &Value::Null)
        );
        let e = wrap_text(
            Protocol::Ikigai,
            Ending::Interrupted(Duration::from_millis(1500)),
            "",
            "",
        );
        assert_eq!(
            e["error"],
            "Tool 't' was cancelled by the user after 1.5s, before it finished"
        );
        assert_eq!(
            (&e["error_code"], &e["exit_code"]),
            (&json!("CANCELLED"), &Value::Null)
        );
    }

    #[test]
    fn nonzero_exit_with_json_error_keeps_the_tools_words() {
        let out = r#"{"success":false,"error":"Rate limited","error_code":"RATE_LIMIT"}"#;
        let e = wrap_text(Protocol::Ikigai, Ending::Code(1), out, "");
        assert_eq!(
            e,
            json!({"tool_success": false, "error": "Rate limited", "error_code": "RATE_LIMIT",
                   "exit_code": 1, "stdout": out, "stderr": ""})
        );
        let e = wrap_text(Protocol::Ikigai, Ending::Code(2), r#"{"error":"bad"}"#, "");
        assert_eq!(
            (&e["error"], &e["error_code"]),
            (&json!("bad"), &json!("TOOL_CRASHED"))
        );
    }

    #[test]
    fn events_are_taken_out_of_stderr() {
        let event = r#"{"kind":"config_required","content":"Add a key"}"#;
        let err = format!("warning\n{event}\n{{\"kind\":\"other\"}}\ntail");
        let (envelope, events) = wrap(
            "t",
            Protocol::Ikigai,
            Ending::Code(1),
            &cap(r#"{"error":"no key","error_code":"AUTH_MISSING"}"#),
            &cap(&err),
        );
        assert_eq!(events, [serde_json::from_str::<Value>(event).unwrap()]);
        assert_eq!(
            envelope.to_json()["stderr"],
            "warning\n{\"kind\":\"other\"}\ntail"
        );
    }

    #[test]
    fn truncation_is_stated_with_counts() {
        let mut out = Capture::new(8);
        out.push(&[b'x'; 100]);
        let e = wrap("t", Protocol::Ikigai, Ending::Code(0), &out, &cap(""))
            .0
            .to_json();
        assert_eq!(e["error_code"], "INVALID_OUTPUT");
        assert_eq!(
            e["error"],
            "Tool 't' printed 100 bytes on stdout, more than the 8-byte output cap; \
             the output was cut and cannot be read as a result"
        );
        assert_eq!(
            e["truncated"],
            json!({"stdout": {"total_bytes": 100, "omitted_bytes": 92}})
        );
        assert!(e["stdout"]
            .as_str()
            .unwrap()
            .contains("[... 92 of 100 bytes omitted"));
    }

    #[test]
    fn a_failure_names_the_fence_it_ran_in() {
        use crate::sandbox::{Fence, Guard, Mode};
        let fence = Fence {
            mode: Mode::WorkspaceWrite,
            writable: vec!["/w".into(), "/tmp".into()],
            network: false,
            guard: Guard::default(),
            limits: crate::sandbox::limits::Limits::default(),
            scope_bus: None,
        };
        let note = |ending: Ending, out: &str| {
            let envelope = wrap("t", Protocol::Ikigai, ending, &cap(out), &cap("denied")).0;
            sandbox_note(&envelope, &fence)
        };
        let failed = note(Ending::Code(1), "").unwrap();
        assert_eq!(failed["mode"], "workspace-write");
        assert_eq!(failed["writable"], json!(["/w", "/tmp"]));
        assert_eq!(failed["network"], false);
        assert!(failed["refuses"][0].as_str().unwrap().contains("read-only"));
        for answer in [
            r#"{"error":"Permission denied: /x","error_code":"PERMISSION_DENIED"}"#,
            r#"{"output":"cannot create x","exit_code":2}"#,
        ] {
            let refused = note(Ending::Code(0), answer).expect(answer);
            assert_eq!(refused["mode"], "workspace-write", "{answer}");
        }
        for answer in ["{}", r#"{"output":"","exit_code":0}"#] {
            assert_eq!(note(Ending::Code(0), answer), None, "{answer}");
        }
    }

    #[test]
    fn a_file_past_its_limit_is_named_with_its_key() {
        let (e, _) = wrap(
            "file_write",
            Protocol::Ikigai,
            Ending::Signal(libc::SIGXFSZ),
            &cap(""),
            &cap(""),
        );
        let e = past_limit(e, &Ending::Signal(libc::SIGXFSZ), "file_write", 1 << 20).to_json();
        assert_eq!(e["error_code"], "RESOURCE_LIMIT");
        let error = e["error"].as_str().unwrap();
        assert!(
            error.contains("1 MiB") && error.contains("limits.file_size"),
            "{error}"
        );
        let shell = r#"{"output":"File size limit exceeded","exit_code":153}"#;
        let (e, _) = wrap(
            "bash",
            Protocol::Ikigai,
            Ending::Code(0),
            &cap(shell),
            &cap(""),
        );
        let e = past_limit(e, &Ending::Code(0), "bash", 4 << 30).to_json();
        assert_eq!(e["error_code"], "RESOURCE_LIMIT");
        assert_eq!(e["exit_code"], 153);
        assert!(e["stdout"]
            .as_str()
            .unwrap()
            .contains("File size limit exceeded"));
        assert!(e["error"].as_str().unwrap().contains("4 GiB"), "{e}");
        // Any other ending is left as it was.
        let (plain, _) = wrap("t", Protocol::Ikigai, Ending::Signal(9), &cap(""), &cap(""));
        assert_eq!(past_limit(plain.clone(), &Ending::Signal(9), "t", 1), plain);
        let ok = r#"{"output":"","exit_code":1}"#;
        let (plain, _) = wrap(
            "bash",
            Protocol::Ikigai,
            Ending::Code(0),
            &cap(ok),
            &cap(""),
        );
        assert_eq!(
            past_limit(plain.clone(), &Ending::Code(0), "bash", 1),
            plain
        );
    }

    #[test]
    fn a_scope_limit_said_on_stderr_is_named_and_taken_off() {
        use crate::sandbox::scope::{mark, Reached};
        let memory = format!("Killed{}", mark(&Reached::Memory, 2 << 30, 64));
        let (e, _) = wrap(
            "t",
            Protocol::Ikigai,
            Ending::Signal(9),
            &cap(""),
            &cap(&memory),
        );
        let e = past_scope_limit(e, "t", &cap(&memory)).to_json();
        assert_eq!(e["error_code"], "RESOURCE_LIMIT", "{e}");
        assert!(
            e["error"].as_str().unwrap().contains("limits.memory_total"),
            "{e}"
        );
        assert_eq!(e["stderr"], "Killed", "{e}");
        // A refused fork: named when the command failed, not when it
        // went on and succeeded.
        let tasks = mark(&Reached::Tasks, 1 << 30, 64);
        for (answer, named) in [
            (r#"{"output":"Cannot fork","exit_code":2}"#, true),
            (r#"{"output":"done","exit_code":0}"#, false),
        ] {
            let (e, _) = wrap(
                "bash",
                Protocol::Ikigai,
                Ending::Code(0),
                &cap(answer),
                &cap(&tasks),
            );
            let plain = e.clone();
            let e = past_scope_limit(e, "bash", &cap(&tasks));
            match named {
                true => {
                    let e = e.to_json();
                    assert_eq!(e["error_code"], "RESOURCE_LIMIT", "{e}");
                    assert_eq!(e["exit_code"], 2, "{e}");
                    assert!(e["error"].as_str().unwrap().contains("limits.processes"));
                }
                false => assert_eq!(e, plain),
            }
        }
        // No line, no change.
        let (plain, _) = wrap(
            "t",
            Protocol::Ikigai,
            Ending::Signal(9),
            &cap(""),
            &cap("x\n"),
        );
        assert_eq!(past_scope_limit(plain.clone(), "t", &cap("x\n")), plain);
    }

    #[test]
    fn host_refusals() {
        assert_eq!(
            Envelope::not_found("x", &["a", "b"]).to_json(),
            json!({"tool_success": false, "error": "Tool 'x' not found; available tools: a, b",
                   "error_code": "TOOL_NOT_FOUND", "exit_code": null, "stdout": "", "stderr": ""})
        );
        assert_eq!(
            Envelope::not_found("x", &[]).to_json()["error"],
            "Tool 'x' not found; no tools are available"
        );
        assert_eq!(
            Envelope::invalid_params("x", "expected a JSON object, got an array").to_json()
                ["error_code"],
            "INVALID_PARAMS"
        );
        assert_eq!(
            Envelope::denied("Denied by the rule bash(rm *)").to_json(),
            json!({"tool_success": false, "error": "Denied by the rule bash(rm *)",
                   "error_code": "PERMISSION_DENIED", "exit_code": null, "stdout": "", "stderr": ""})
        );
    }
}
