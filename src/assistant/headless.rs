//! `ikigai -p` for scripts and CI (decision 65, docs/headless.md): the one
//! message from the command line or stdin, run to its end, told in the
//! format asked for. `text` is the terminal's own view; `json` prints only
//! the `result` object at the end; `stream-json` prints one event object per
//! line as things happen (`session.started`, `assistant.message`,
//! `tool.started`, `tool.finished`, `compacted`, `error`) and the `result`
//! last. The events are published as a JSON Schema
//! (docs/headless-events.schema.json). In the JSON formats nothing else
//! reaches stdout; notices and diagnostics go to stderr.
//!
//! The exit code says how the run ended: 0 answered, 1 failed, 2 a usage
//! error, 3 stopped at `--max-tool-rounds`, 130 interrupted. In the JSON
//! formats SIGINT, SIGTERM and SIGHUP all stop the running request or call
//! (decision 30), the `result` is still written and the exit is 130; so is
//! a `stream-json` reader that went away (decision 106).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde_json::{json, Value};

use super::conversation::{Conversation, SubagentStep, ToolHost, TurnEnd, Ui};
use super::cost;
use super::model::{Message, ToolCall, ToolFormat, Usage};
use super::terminal;
use crate::exit;
use crate::host::call::CallOutcome;
use crate::host::cli::OutputFormat;
use crate::host::envelope::Failure;
use crate::host::signals;

/// The most bytes of a message read from stdin (`-p -`): a message is text
/// for a model, and this is far beyond any model's context.
const MAX_STDIN_MESSAGE: u64 = 64 << 20;

/// Error codes of a run that are not a tool's (those are in
/// host/envelope.rs and error.rs): each spelled here only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunError {
    /// No provider key, no configured provider, no local server.
    NotConfigured,
    /// The provider failed after its retries, refused, or sent nothing.
    Model,
    /// `--output-last-message` could not be written.
    LastMessage,
}

impl RunError {
    pub fn code(self) -> &'static str {
        match self {
            RunError::NotConfigured => "NOT_CONFIGURED",
            RunError::Model => "MODEL_ERROR",
            RunError::LastMessage => "OUTPUT_WRITE_FAILED",
        }
    }
}

/// How `-p` prints, from `--output-format` and `--output-last-message`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    pub format: OutputFormat,
    pub last_message: Option<PathBuf>,
    /// Its file, opened at start without following a link: the answer is
    /// written through this handle, whatever a tool does to the path.
    opened: Option<Opened>,
}

/// An open `--output-last-message` file; equal only to itself.
#[derive(Clone, Debug)]
struct Opened(std::sync::Arc<std::fs::File>);

impl PartialEq for Opened {
    fn eq(&self, other: &Opened) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Output {
    /// The options as given, checked before anything is sent: Err is a
    /// usage error to print as it is (exit 2).
    pub fn checked(
        prompt: bool,
        format: Option<OutputFormat>,
        last_message: Option<PathBuf>,
    ) -> Result<Output, String> {
        if !prompt {
            if format.is_some() {
                return Err("--output-format applies to -p MESSAGE only".into());
            }
            if last_message.is_some() {
                return Err("--output-last-message applies to -p MESSAGE only".into());
            }
        }
        let opened = match &last_message {
            Some(path) => {
                check_writable_place(path)?;
                Some(open_last_message(path)?)
            }
            None => None,
        };
        Ok(Output {
            format: format.unwrap_or_default(),
            last_message,
            opened,
        })
    }
}

/// Opens (or makes) `path` for the answer before any tool runs, reached
/// without a link from the working directory (or `/`): a link a tool left
/// there, to `~/.bashrc` say, is refused rather than written through, and
/// only a regular file is opened (a FIFO would block the run).
fn open_last_message(path: &Path) -> Result<Opened, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("--output-last-message: {e}"))?;
    let why = |e: std::io::Error| format!("--output-last-message: {}: {e}", path.display());
    let walk = crate::host::files::Beneath::walk(&cwd, &cwd.join(path)).map_err(why)?;
    let file = walk.open_write().map_err(|e| {
        format!(
            "--output-last-message: {} {e}; ikigai writes the answer only to a file reached \
             without a link",
            path.display()
        )
    })?;
    Ok(Opened(std::sync::Arc::new(file)))
}

/// A file may be made at `path`: its directory exists and it is not itself
/// a directory. Said before any request, so a typo costs no tokens.
fn check_writable_place(path: &Path) -> Result<(), String> {
    let shown = path.display();
    if path.is_dir() {
        return Err(format!(
            "--output-last-message: {shown} is a directory; name a file"
        ));
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!(
            "--output-last-message: the directory {} does not exist",
            dir.display()
        ));
    }
    Ok(())
}

/// The message of `-p MESSAGE`: MESSAGE itself, or stdin for `-`. Err is a
/// usage error naming what is wrong with it.
pub fn message(prompt: &str, stdin: &mut dyn Read) -> Result<String, String> {
    if prompt != "-" {
        return Ok(prompt.to_string());
    }
    let mut bytes = Vec::new();
    stdin
        .take(MAX_STDIN_MESSAGE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("-p -: reading the message from stdin: {e}"))?;
    if bytes.len() as u64 > MAX_STDIN_MESSAGE {
        return Err(format!(
            "-p -: the message on stdin is over {} MiB",
            MAX_STDIN_MESSAGE >> 20
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "-p -: the message on stdin is not UTF-8 (byte {} is not valid)",
            e.utf8_error().valid_up_to()
        )
    })?;
    if text.trim().is_empty() {
        return Err("-p -: the message on stdin is empty".into());
    }
    Ok(text)
}

/// Runs `message` to its end and says how it ended, in `output`'s format.
pub fn run(
    message: &str,
    conversation: &mut Conversation,
    host: &dyn ToolHost,
    output: &Output,
) -> ExitCode {
    let started = Instant::now();
    let before = conversation.messages().len();
    if output.format == OutputFormat::Text {
        let end = terminal::one_shot(message, conversation, host);
        let answer = answer(&conversation.messages()[before..]);
        if let Err(e) = write_last_message(output, &answer) {
            eprintln!("ikigai: {e}");
            return ExitCode::from(exit::FAILURE);
        }
        return ExitCode::from(code_of(end, false));
    }
    let stream = output.format == OutputFormat::StreamJson;
    let (end, tally, gone) = signals::guarded(|cancel| {
        let mut events = Events::new(stream, cancel, Box::new(crate::out::try_say));
        events.session_started(conversation, host);
        let end =
            crate::assistant::custom::run::send(message, conversation, host, &mut events, cancel);
        (end, events.tally, events.gone)
    });
    let code = code_of(end, gone);
    let added = &conversation.messages()[before..];
    let text = answer(added);
    // What is left to say is said after the run: nothing can stop it now.
    let idle = AtomicBool::new(false);
    let mut events = Events::new(stream, &idle, Box::new(crate::out::try_say));
    events.gone = gone;
    events.tally = tally;
    let mut error = events.tally.error.clone();
    match end {
        TurnEnd::Answered => events.flush_error(None),
        TurnEnd::NotConfigured => events.flush_error(Some(RunError::NotConfigured.code())),
        TurnEnd::Failed => events.flush_error(Some(RunError::Model.code())),
        TurnEnd::RoundLimit => {
            events.flush_error(None);
            let why = "stopped at the tool-round limit (--max-tool-rounds) with the model \
                       still calling tools";
            events.error_event(why, Some(Failure::RoundLimit.code()));
            error = Some(why.to_string());
        }
        TurnEnd::Blocked => {
            events.flush_error(None);
            let why = "a hook blocked the message or stopped the turn";
            events.error_event(why, Some("HOOK_BLOCKED"));
            error = Some(why.to_string());
        }
        TurnEnd::Cancelled => {
            events.flush_error(None);
            let why = if gone {
                "stdout was closed: the run was stopped"
            } else {
                "interrupted: the running request or tool call was stopped"
            };
            events.error_event(why, Some(Failure::Cancelled.code()));
            error = Some(why.to_string());
        }
    }
    let mut code = code;
    if let Err(e) = write_last_message(output, &text) {
        events.error_event(&e, Some(RunError::LastMessage.code()));
        error = Some(e);
        if code == 0 {
            code = exit::FAILURE;
        }
    }
    let ok = code == 0;
    let mut result = json!({
        "type": "result",
        "ok": ok,
        "text": text,
        "session_id": conversation.session_id(),
        "turns": added.iter().filter(|m| matches!(m, Message::Assistant { .. })).count(),
        "tool_calls": events.tally.tool_calls,
        "usage": {
            "input": events.tally.usage.input_tokens,
            "cached_input": events.tally.cached_input,
            "output": events.tally.usage.output_tokens,
        },
        "cost_usd": events.tally.cost(conversation),
        "duration_ms": started.elapsed().as_millis() as u64,
        "exit_code": code,
    });
    if !ok {
        result["error"] = json!(error.unwrap_or_else(|| "the run failed".into()));
    }
    // The result is written in both formats, and is the only line of json.
    events.stream = true;
    events.emit(result);
    ExitCode::from(code)
}

/// The exit code of a run that ended so (decision 65).
fn code_of(end: TurnEnd, gone: bool) -> u8 {
    match end {
        TurnEnd::Answered => 0,
        TurnEnd::RoundLimit => exit::ROUND_LIMIT,
        TurnEnd::Cancelled => exit::INTERRUPTED,
        _ if gone => exit::INTERRUPTED,
        TurnEnd::Failed | TurnEnd::NotConfigured | TurnEnd::Blocked => exit::FAILURE,
    }
}

/// The final answer: the text of the last reply of this run ("" when the
/// model said nothing).
fn answer(added: &[Message]) -> String {
    added
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Writes the answer to `--output-last-message`'s file, even when empty, so
/// that a file left by an earlier run is never taken for this one's answer.
fn write_last_message(output: &Output, text: &str) -> Result<(), String> {
    use std::io::{Seek, Write};
    match (&output.last_message, &output.opened) {
        (Some(path), Some(Opened(file))) => {
            let mut file: &std::fs::File = file;
            file.set_len(0)
                .and_then(|()| file.rewind())
                .and_then(|()| file.write_all(text.as_bytes()))
                .map_err(|e| {
                    format!(
                        "--output-last-message: cannot write {}: {e}",
                        path.display()
                    )
                })
        }
        _ => Ok(()),
    }
}

/// What a run adds up, for its `result`.
#[derive(Debug, Default)]
struct Tally {
    tool_calls: u64,
    usage: Usage,
    /// Input tokens the provider read from its cache, part of `usage`'s
    /// input: `Usage` carries no such figure yet, so none is counted.
    cached_input: u64,
    /// The cost of the replies whose model has a price.
    priced: f64,
    /// Some reply came from a model without a known price.
    unpriced: bool,
    /// The last error said, not yet written as an event: its code is known
    /// only once the turn has ended.
    error: Option<String>,
    /// Sent as an event already (`error` keeps it for the result).
    error_sent: bool,
}

impl Tally {
    /// US dollars: a local server costs nothing; unknown when a reply came
    /// from a model without a known price.
    fn cost(&self, conversation: &Conversation) -> Option<f64> {
        let local = conversation
            .client()
            .is_some_and(|c| c.provider() == "ollama");
        match (local, self.unpriced) {
            (true, _) => Some(0.0),
            (false, true) => None,
            (false, false) => Some(self.priced),
        }
    }
}

/// The `Ui` of the JSON formats: events on stdout (`stream-json` only),
/// the rest on stderr, everything counted for the `result`.
struct Events<'a> {
    /// Print events as they happen (`stream-json`); `json` prints only the
    /// result.
    stream: bool,
    /// Set when stdout's reader went away: the run stops.
    cancel: &'a AtomicBool,
    /// Writes one line (stdout's, but for the unit tests).
    sink: Sink<'a>,
    gone: bool,
    tally: Tally,
    model: String,
    /// The reply under way.
    reply: String,
    /// The running calls and when each began.
    running: Vec<(String, Instant)>,
}

/// Where event lines go; Err when nobody reads them any more.
type Sink<'a> = Box<dyn FnMut(&str) -> std::io::Result<()> + 'a>;

impl<'a> Events<'a> {
    fn new(stream: bool, cancel: &'a AtomicBool, sink: Sink<'a>) -> Events<'a> {
        Events {
            stream,
            cancel,
            sink,
            gone: false,
            tally: Tally::default(),
            model: String::new(),
            reply: String::new(),
            running: Vec::new(),
        }
    }

    /// One event line; a reader that went away stops the run.
    fn emit(&mut self, event: Value) {
        if !self.stream || self.gone {
            return;
        }
        if (self.sink)(&event.to_string()).is_err() {
            self.gone = true;
            self.cancel.store(true, Ordering::SeqCst);
            eprintln!("ikigai: stdout was closed; stopping the run");
        }
    }

    fn session_started(&mut self, conversation: &Conversation, host: &dyn ToolHost) {
        let client = conversation.client();
        self.model = client.map(|c| c.model().to_string()).unwrap_or_default();
        if !self.stream {
            return;
        }
        let format = client.map_or(ToolFormat::OpenAiChat, |c| c.tool_format());
        let tools = tool_names(&host.tools_array(format));
        let cwd = std::env::current_dir()
            .ok()
            .map(|d| d.to_string_lossy().into_owned());
        self.emit(json!({
            "type": "session.started",
            "session_id": conversation.session_id(),
            "provider": client.map(|c| c.provider()),
            "model": client.map(|c| c.model()),
            "cwd": cwd,
            "tools": tools,
        }));
    }

    /// An `error` event now, with its code.
    fn error_event(&mut self, message: &str, code: Option<&str>) {
        let mut event = json!({"type": "error", "message": message});
        if let Some(code) = code {
            event["code"] = json!(code);
        }
        self.emit(event);
    }

    /// Writes the error held back, with `code` when the end of the turn
    /// gave it one.
    fn flush_error(&mut self, code: Option<&str>) {
        if self.tally.error_sent {
            return;
        }
        if let Some(message) = self.tally.error.clone() {
            self.tally.error_sent = true;
            self.error_event(&message, code);
        }
    }
}

impl Ui for Events<'_> {
    fn waiting(&mut self, _what: &str) {}

    fn text(&mut self, piece: &str) {
        self.reply.push_str(piece);
    }

    fn end_text(&mut self) {
        if self.reply.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.reply);
        self.flush_error(None);
        self.emit(json!({"type": "assistant.message", "text": text}));
    }

    fn tool_call(&mut self, call: &ToolCall) {
        self.flush_error(None);
        self.tally.tool_calls += 1;
        self.running.push((call.id.clone(), Instant::now()));
        self.emit(json!({
            "type": "tool.started",
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments,
        }));
    }

    fn tool_outcome(&mut self, call: &ToolCall, outcome: &CallOutcome) {
        self.flush_error(None);
        let began = self
            .running
            .iter()
            .position(|(id, _)| *id == call.id)
            .map(|at| self.running.remove(at).1);
        let duration = began.map_or(0, |t| t.elapsed().as_millis() as u64);
        let (ok, code) = verdict(&outcome.to_json());
        let mut event = json!({
            "type": "tool.finished",
            "call_id": call.id,
            "name": call.name,
            "ok": ok,
            "duration_ms": duration,
        });
        if let Some(code) = code {
            event["error_code"] = json!(code);
        }
        self.emit(event);
    }

    fn event(&mut self, event: &Value) {
        let text = event["content"]
            .as_str()
            .map_or_else(|| event.to_string(), str::to_string);
        eprintln!("ikigai: {text}");
    }

    fn notice(&mut self, text: &str) {
        eprintln!("ikigai: {text}");
    }

    fn error(&mut self, text: &str) {
        eprintln!("ikigai: error: {text}");
        self.flush_error(None);
        self.tally.error = Some(text.to_string());
        self.tally.error_sent = false;
    }

    fn usage(&mut self, usage: &Usage) {
        self.tally.usage.input_tokens += usage.input_tokens;
        self.tally.usage.output_tokens += usage.output_tokens;
        self.tally.cached_input += usage.cached_input_tokens;
        match cost::cost(&self.model, *usage) {
            Some(c) => self.tally.priced += c,
            None => self.tally.unpriced = true,
        }
    }

    fn compacted(&mut self, before_tokens: u64, after_tokens: u64) {
        self.flush_error(None);
        self.emit(json!({
            "type": "compacted",
            "before_tokens": before_tokens,
            "after_tokens": after_tokens,
        }));
    }

    /// A subagent's steps as the caller's events are written, each with
    /// the `parent_call_id` of the task call that runs it; its usage
    /// reaches `usage` and so the result.
    fn subagent(&mut self, parent: &ToolCall, step: &SubagentStep) {
        let event = match step {
            SubagentStep::Started { agent } => json!({"type": "subagent.started", "agent": agent}),
            SubagentStep::Text(text) => json!({"type": "assistant.message", "text": text}),
            SubagentStep::ToolStarted(call) => {
                self.running.push((call.id.clone(), Instant::now()));
                json!({
                    "type": "tool.started",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                })
            }
            SubagentStep::ToolFinished { call, envelope } => {
                let began = self
                    .running
                    .iter()
                    .position(|(id, _)| *id == call.id)
                    .map(|at| self.running.remove(at).1);
                let (ok, code) = verdict(envelope);
                let mut event = json!({
                    "type": "tool.finished",
                    "call_id": call.id,
                    "name": call.name,
                    "ok": ok,
                    "duration_ms": began.map_or(0, |t| t.elapsed().as_millis() as u64),
                });
                if let Some(code) = code {
                    event["error_code"] = json!(code);
                }
                event
            }
            SubagentStep::Notice(text) => {
                eprintln!("ikigai: subagent: {text}");
                return;
            }
            SubagentStep::Error(text) => {
                eprintln!("ikigai: subagent: error: {text}");
                json!({"type": "error", "message": text})
            }
            SubagentStep::Asking => return,
            SubagentStep::Ended { ok, code } => {
                let mut event = json!({"type": "subagent.finished", "ok": ok});
                if let Some(code) = code {
                    event["error_code"] = json!(code);
                }
                event
            }
        };
        let mut event = event;
        event["parent_call_id"] = json!(parent.id);
        self.flush_error(None);
        self.emit(event);
    }

    fn plan(&mut self, plan: &Value) {
        self.flush_error(None);
        let mut event = json!({"type": "plan.updated", "plan": plan["plan"]});
        if let Some(why) = plan["explanation"].as_str() {
            event["explanation"] = json!(why);
        }
        self.emit(event);
    }
}

/// Whether a call worked, and its error code when not: the envelope's, or
/// the tool's own when it answered an error inside a run that worked.
pub(super) fn verdict(envelope: &Value) -> (bool, Option<String>) {
    let code = |e: &Value| e["error_code"].as_str().unwrap_or("ERROR").to_string();
    if envelope["tool_success"] == json!(false) {
        return (false, Some(code(envelope)));
    }
    let result = &envelope["result"];
    if !result["error"].is_null() || result["success"] == json!(false) {
        return (false, Some(code(result)));
    }
    (true, None)
}

/// The tools' names in a tools array of any provider's format.
fn tool_names(tools: &Value) -> Vec<String> {
    let mut names = Vec::new();
    for tool in tools.as_array().into_iter().flatten() {
        if let Some(name) = tool["function"]["name"].as_str().or(tool["name"].as_str()) {
            names.push(name.to_string());
        }
        for declared in tool["functionDeclarations"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(name) = declared["name"].as_str() {
                names.push(name.to_string());
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::host::envelope::Envelope;

    #[test]
    fn a_stdin_message_must_be_text_and_not_empty() {
        let read = |bytes: &[u8]| message("-", &mut &bytes[..]);
        assert_eq!(read(b"fix the test\n"), Ok("fix the test\n".into()));
        assert_eq!(
            read(b" \n\t"),
            Err("-p -: the message on stdin is empty".into())
        );
        assert_eq!(
            read(b"ok \xff"),
            Err("-p -: the message on stdin is not UTF-8 (byte 3 is not valid)".into())
        );
        assert_eq!(
            message("as given", &mut &b"unread"[..]),
            Ok("as given".into())
        );
    }

    #[test]
    fn output_options_need_a_prompt_and_a_place() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("answer.txt");
        assert!(Output::checked(false, Some(OutputFormat::Json), None)
            .unwrap_err()
            .contains("-p"));
        let missing = dir.path().join("no/such/answer.txt");
        let why = Output::checked(true, None, Some(missing)).unwrap_err();
        assert!(why.contains("does not exist"), "{why}");
        let why = Output::checked(true, None, Some(dir.path().to_path_buf())).unwrap_err();
        assert!(why.contains("is a directory"), "{why}");
        let output = Output::checked(true, None, Some(file.clone())).unwrap();
        assert_eq!(output.format, OutputFormat::Text);
        assert_eq!(output.last_message, Some(file));
        let here = dir.path().join("here.txt");
        assert!(Output::checked(true, None, Some(here)).is_ok());
        // A link a tool left, at the last component and at a middle one.
        let target = dir.path().join("bashrc");
        std::fs::write(&target, "mine").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("notes.txt")).unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("via")).unwrap();
        for linked in ["notes.txt", "via/new.txt"] {
            let why = Output::checked(true, None, Some(dir.path().join(linked))).unwrap_err();
            assert!(why.contains("is a symbolic link"), "{why}");
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
        assert!(!dir.path().join("new.txt").exists());
    }

    #[test]
    fn verdicts_and_names() {
        assert_eq!(
            verdict(&json!({"tool_success": true, "result": {}})),
            (true, None)
        );
        assert_eq!(
            verdict(&json!({"tool_success": false, "error_code": "PERMISSION_DENIED"})),
            (false, Some("PERMISSION_DENIED".into()))
        );
        assert_eq!(
            verdict(&json!({"tool_success": true,
                "result": {"error": "x", "error_code": "FILE_NOT_FOUND"}})),
            (false, Some("FILE_NOT_FOUND".into()))
        );
        let openai = json!([{"type": "function", "function": {"name": "bash"}}]);
        let anthropic = json!([{"name": "grep", "input_schema": {}}]);
        let gemini = json!([{"functionDeclarations": [{"name": "a"}, {"name": "b"}]}]);
        assert_eq!(tool_names(&openai), ["bash"]);
        assert_eq!(tool_names(&anthropic), ["grep"]);
        assert_eq!(tool_names(&gemini), ["a", "b"]);
    }

    /// An `Events` in stream-json writing into `lines`, its reader gone
    /// once `readable` lines were taken.
    fn recording<'a>(
        lines: &'a RefCell<Vec<Value>>,
        cancel: &'a AtomicBool,
        readable: usize,
    ) -> Events<'a> {
        Events::new(
            true,
            cancel,
            Box::new(move |line: &str| {
                let mut lines = lines.borrow_mut();
                if lines.len() == readable {
                    return Err(std::io::ErrorKind::BrokenPipe.into());
                }
                lines.push(serde_json::from_str(line).unwrap());
                Ok(())
            }),
        )
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: json!({"command": "rm x"}),
            local_id: false,
            signature: None,
        }
    }

    #[test]
    fn events_in_the_order_things_happen_errors_with_their_code() {
        let lines = RefCell::new(Vec::new());
        let cancel = AtomicBool::new(false);
        let mut ui = recording(&lines, &cancel, usize::MAX);
        ui.text("Let me ");
        ui.text("look.");
        ui.end_text();
        ui.end_text();
        ui.tool_call(&call("c1"));
        let denied = CallOutcome::new(Envelope::denied("denied by --deny bash(rm *)"), vec![]);
        ui.tool_outcome(&call("c1"), &denied);
        ui.compacted(9000, 700);
        // A notice is a diagnostic: no event.
        ui.notice("rate limited, retrying in 1 s (1/4)");
        ui.error("openai (gpt-4.1): HTTP 500: down (gave up after 4 retries).");
        assert_eq!(lines.borrow().len(), 4, "the error waits for its code");
        ui.flush_error(Some(RunError::Model.code()));
        ui.flush_error(Some("TWICE"));
        drop(ui);
        let lines = lines.into_inner();
        let kinds: Vec<&str> = lines.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "assistant.message",
                "tool.started",
                "tool.finished",
                "compacted",
                "error"
            ]
        );
        assert_eq!(lines[0]["text"], "Let me look.");
        assert_eq!(lines[1]["arguments"], json!({"command": "rm x"}));
        assert_eq!(lines[2]["ok"], false);
        assert_eq!(lines[2]["error_code"], "PERMISSION_DENIED");
        assert!(lines[2]["duration_ms"].as_u64().is_some());
        assert_eq!(
            lines[3],
            json!({"type": "compacted", "before_tokens": 9000, "after_tokens": 700})
        );
        assert_eq!(lines[4]["code"], "MODEL_ERROR");
        assert!(!cancel.load(Ordering::SeqCst));
    }

    #[test]
    fn a_reader_that_went_away_stops_the_run_and_nothing_more_is_written() {
        let lines = RefCell::new(Vec::new());
        let cancel = AtomicBool::new(false);
        let mut ui = recording(&lines, &cancel, 1);
        ui.tool_call(&call("c1"));
        assert!(!ui.gone);
        ui.tool_call(&call("c2"));
        assert!(ui.gone && cancel.load(Ordering::SeqCst));
        ui.text("more");
        ui.end_text();
        assert_eq!(lines.borrow().len(), 1);
    }

    #[test]
    fn usage_adds_up_with_its_cost() {
        let lines = RefCell::new(Vec::new());
        let cancel = AtomicBool::new(false);
        let mut ui = recording(&lines, &cancel, usize::MAX);
        ui.model = "gpt-4.1".into();
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 500_000,
            ..Usage::default()
        };
        ui.usage(&usage);
        ui.usage(&usage);
        assert_eq!(ui.tally.usage.input_tokens, 2_000_000);
        assert_eq!(ui.tally.usage.output_tokens, 1_000_000);
        // gpt-4.1: $2 in, $8 out per million.
        assert!((ui.tally.priced - 12.0).abs() < 1e-9);
        // A million read from the cache, at $0.5.
        ui.usage(&Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 1_000_000,
            ..Usage::default()
        });
        assert_eq!(ui.tally.cached_input, 1_000_000);
        assert!((ui.tally.priced - 12.5).abs() < 1e-9);
        assert!(!ui.tally.unpriced);
        ui.model = "my-own-model".into();
        ui.usage(&usage);
        assert!(ui.tally.unpriced);
    }

    #[test]
    fn exit_codes_by_end() {
        assert_eq!(code_of(TurnEnd::Answered, false), 0);
        assert_eq!(code_of(TurnEnd::Failed, false), 1);
        assert_eq!(code_of(TurnEnd::NotConfigured, false), 1);
        assert_eq!(code_of(TurnEnd::RoundLimit, false), 3);
        assert_eq!(code_of(TurnEnd::Cancelled, false), 130);
        assert_eq!(code_of(TurnEnd::Failed, true), 130);
    }
}
