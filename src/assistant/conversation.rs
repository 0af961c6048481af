//! The conversation loop: a message goes to the model with the
//! conversation so far, the system prompt and the host's tools; tool calls
//! in the reply are approved (`approval`) and run through the host,
//! consecutive read-only calls at once and every other call alone, in the
//! model's order (`schedule`), and their envelopes, cut to what the model
//! should read (`for_model`), go back in that order; this repeats until the
//! model answers with text, for at most `--max-tool-rounds` rounds. A
//! running call's output reaches the person as the tool writes it; a call
//! that failed inside the sandbox may run again outside it when the person
//! says so. Every step is written to the session log as it happens. A
//! provider error is shown and leaves the conversation as it was, so the
//! next message goes on.
//!
//! Replies are taken as providers really send them: a reply cut at the
//! output limit is shown as cut and none of its tool calls runs (each is
//! answered that it was cut, so the model can send it again in the same
//! turn); a refusal is shown as one and kept out of the history; a call
//! whose arguments are not a JSON object is answered `INVALID_PARAMS`
//! without running and goes back to the provider as `{}`; and under OpenAI
//! strict mode, optional parameters the model set to `null` are dropped
//! before the tool sees them.
//!
//! The loop reaches tools only through `ToolHost` and the person only
//! through `Ui`, so it is tested with a fake host and a scripted model.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use serde_json::{json, Value};

use super::approval::{Approval, Verdict};
use super::for_model::{self, Outputs, DEFAULT_MODEL_OUTPUT};
use super::model::{
    arguments_problem, stream_cancellable, Message, ModelClient, ModelError, Reply, Request, Stop,
    ToolCall, ToolFormat, ToolResult, Usage,
};
use super::plan;
use super::schedule;
use super::session::{Entry, Session};
use super::undo::{self, Undo};
use crate::host::call::CallOutcome;
use crate::host::child::Watch;
use crate::host::envelope::{Envelope, Failure};
use crate::host::format::strict;
use crate::host::text::clip;

/// The built-in part of the system prompt.
const BUILT_IN_PROMPT: &str = "You are ikigai, an assistant that works on the user's computer \
through tools. Each tool result is a JSON envelope: {\"tool_success\": true, \"result\": ...} when \
the tool ran, or {\"tool_success\": false, \"error\", \"error_code\", ...} when it could not; a \
result may itself report an error the tool found. Prefer doing over describing, check what \
tools return, and answer briefly.";

/// What `/compact` asks the model; kept in the conversation with its answer.
const COMPACT_REQUEST: &str = "Summarise our conversation so far for your own later use: \
what I asked for, what was done (files read or changed, commands run, their results), what was \
decided, and what is still open. Be complete but brief; this summary replaces the conversation.";

/// What the conversation needs of the host.
pub trait ToolHost: Sync {
    /// True once discovery has finished (tools_array would not wait).
    fn ready(&self) -> bool {
        true
    }
    /// The tools array in `format`, waiting for discovery if it still runs.
    fn tools_array(&self, format: ToolFormat) -> Value;
    /// The tools `format` cannot offer, by name (see `format::left_out`).
    fn left_out(&self, _format: ToolFormat) -> Vec<String> {
        Vec::new()
    }
    /// The `parameters` schema of tool `name`, as the tool declares it.
    fn parameters(&self, _name: &str) -> Option<Value> {
        None
    }

    /// True when the tool declared itself read-only (`readOnlyHint`): its
    /// calls may run together and need no approval.
    fn read_only(&self, _name: &str) -> bool {
        false
    }
    /// Runs one tool call: registry lookup, subprocess, timeout, envelope.
    /// Setting `cancel` kills the tool's process group.
    fn call(&self, name: &str, arguments: &Value, cancel: Option<&AtomicBool>) -> CallOutcome;
    /// `call` with the sandbox off, for a call the person chose to run
    /// again outside it.
    fn call_unsandboxed(
        &self,
        name: &str,
        arguments: &Value,
        cancel: Option<&AtomicBool>,
    ) -> CallOutcome {
        self.call(name, arguments, cancel)
    }
    /// True when the kernel cannot fence calls as the settings ask: in
    /// `ask` mode every call that is not read-only is then asked, whatever
    /// the allow rules say.
    fn unsandboxed(&self) -> bool {
        false
    }
    /// `call`, handing the tool's output to `watch` as it is read.
    fn call_watched(
        &self,
        name: &str,
        arguments: &Value,
        cancel: Option<&AtomicBool>,
        watch: Watch,
    ) -> CallOutcome {
        let _ = watch;
        self.call(name, arguments, cancel)
    }
    /// Where the session keeps its files (background jobs' logs go there:
    /// decision 68); told before each round of calls.
    fn session_dir(&self, _dir: Option<&Path>) {}
}

/// What the person sees, in the order things happen.
pub trait Ui {
    /// Something is under way (`what`): a spinner until the next output.
    fn waiting(&mut self, what: &str);
    /// A piece of the model's reply, as it streams.
    fn text(&mut self, piece: &str);
    /// The reply (or what came of it) is over.
    fn end_text(&mut self);
    fn tool_call(&mut self, call: &ToolCall);
    fn tool_outcome(&mut self, call: &ToolCall, outcome: &CallOutcome);
    /// A piece of a running call's output, as the tool writes it.
    fn tool_output(&mut self, _call: &ToolCall, _output: &[u8]) {}
    /// An event a tool reported for the person (`config_required`).
    fn event(&mut self, event: &Value);
    fn notice(&mut self, text: &str);
    fn error(&mut self, text: &str);
    /// The tokens one request cost, when the provider said.
    fn usage(&mut self, _usage: &Usage) {}
    /// The model's plan changed (`update_plan`, decision 69): `{"plan":
    /// [{step, status}], "explanation"?}`.
    fn plan(&mut self, _plan: &Value) {}
}

/// How one message ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnEnd {
    /// The model answered with text.
    Answered,
    /// No model is configured: the message was not sent.
    NotConfigured,
    /// The provider failed; the conversation is as it was.
    Failed,
    /// The person pressed Ctrl-C.
    Cancelled,
    /// The model still wanted tools after the last allowed round.
    RoundLimit,
}

pub struct Conversation {
    client: Result<Arc<dyn ModelClient>, String>,
    system: String,
    messages: Vec<Message>,
    max_tool_rounds: usize,
    log: Log,
    /// Tools already said to be left out of the provider's array.
    told_left_out: Vec<String>,
    /// Who says whether a call may run (by default, every call runs).
    approval: Approval,
    /// The most bytes of each output the model sees (`--model-output`).
    model_output: usize,
    /// Where the whole of a cut output is saved.
    outputs: Outputs,
    /// One message only (`-p`): no "send another message" advice.
    one_shot: bool,
    /// Hook (decisions 69, 70): the files kept for `/undo`, the model's
    /// plan, and what the model is to be told with the next message.
    undo: Undo,
    plan: Option<Value>,
    notes: Vec<String>,
}

/// Where the conversation is logged. A new session's file is made at its
/// first entry, so running `ikigai` only for `/tool` leaves no empty
/// session behind; likewise a resumed one gets its `start` entry then.
enum Log {
    Off,
    /// A new session, to be made in this directory.
    New(PathBuf),
    Open {
        session: Session,
        started: bool,
    },
    /// A write failed (and was reported): the conversation goes on unlogged.
    Broken,
}

impl Conversation {
    pub fn new(
        client: Result<Arc<dyn ModelClient>, String>,
        system: String,
        max_tool_rounds: usize,
    ) -> Self {
        Conversation {
            client,
            system,
            messages: Vec::new(),
            max_tool_rounds,
            log: Log::Off,
            told_left_out: Vec::new(),
            approval: Approval::run_all(),
            model_output: DEFAULT_MODEL_OUTPUT,
            outputs: Outputs::default(),
            one_shot: false,
            undo: Undo::default(),
            plan: None,
            notes: Vec::new(),
        }
    }

    /// Asks `approval` before each call.
    pub fn with_approval(mut self, approval: Approval) -> Self {
        self.approval = approval;
        self
    }

    /// Shows the model at most `bytes` of each output.
    pub fn with_model_output(mut self, bytes: usize) -> Self {
        self.model_output = bytes;
        self
    }

    /// Continues from `messages` (a resumed session).
    pub fn with_history(mut self, messages: Vec<Message>) -> Self {
        self.plan = plan::latest(&messages); // hook (decision 69)
        self.messages = messages;
        self
    }

    /// Logs to a new session in `dir`, made when there is something to log.
    pub fn with_new_session(mut self, dir: PathBuf) -> Self {
        self.log = Log::New(dir);
        self
    }

    /// Logs to `session` (a resumed one) from now on.
    pub fn with_session(mut self, session: Session) -> Self {
        self.log = Log::Open {
            session,
            started: false,
        };
        self
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// One message only (`-p`): texts say nothing of a next message.
    pub fn one_shot(mut self) -> Self {
        self.one_shot = true;
        self
    }

    /// `/clear`: a new conversation, logged to a new session.
    pub fn clear(&mut self) {
        self.messages.clear();
        self.told_left_out.clear();
        // Hook (decisions 69, 70): the new conversation has no plan and
        // nothing to be told; the files kept for /undo stay (they are files).
        self.plan = None;
        self.notes.clear();
        self.log = match std::mem::replace(&mut self.log, Log::Off) {
            Log::Open { session, .. } => match session.path().parent() {
                Some(dir) => Log::New(dir.to_path_buf()),
                None => Log::Off,
            },
            other => other,
        };
    }

    /// `/model`: the conversation goes on with another model.
    pub fn set_client(&mut self, client: Arc<dyn ModelClient>) {
        self.client = Ok(client);
        self.told_left_out.clear();
    }

    /// `/resume`: continues `session` and its `history` from here on.
    pub fn switch_session(&mut self, session: Session, history: Vec<Message>) {
        self.plan = plan::latest(&history); // hook (decision 69)
        self.messages = history;
        self.log = Log::Open {
            session,
            started: false,
        };
    }

    /// `/compact`: asks the model to summarise the conversation, which then
    /// continues from that summary alone (the request and its answer).
    pub fn compact(&mut self, ui: &mut dyn Ui, cancel: &AtomicBool) -> TurnEnd {
        let client = match &self.client {
            Ok(client) => Arc::clone(client),
            Err(why) => {
                ui.error(why);
                return TurnEnd::NotConfigured;
            }
        };
        if self.messages.is_empty() {
            ui.notice("Nothing to compact yet.");
            return TurnEnd::Answered;
        }
        let mut messages = self.messages.clone();
        messages.push(Message::User {
            text: COMPACT_REQUEST.to_string(),
        });
        ui.waiting("summarising the conversation");
        let request = Request {
            system: self.system.clone(),
            messages,
            // No tools: the answer must be the summary itself.
            tools: Value::Array(vec![]),
        };
        let result = stream_cancellable(
            &client,
            request,
            &mut |_| {},
            &mut |notice| ui.notice(notice),
            cancel,
        );
        ui.end_text();
        match result {
            Ok(reply) if !reply.text.trim().is_empty() => {
                if let Some(usage) = &reply.usage {
                    ui.usage(usage);
                }
                let before = self.messages.len();
                self.messages = vec![
                    Message::User {
                        text: COMPACT_REQUEST.to_string(),
                    },
                    Message::Assistant {
                        // Hook (decision 69): the plan outlives compaction.
                        text: match &self.plan {
                            Some(plan) => format!("{}\n\n{}", reply.text, plan::as_text(plan)),
                            None => reply.text.clone(),
                        },
                        tool_calls: vec![],
                    },
                ];
                self.log(
                    Entry::Compact {
                        request: COMPACT_REQUEST.to_string(),
                        summary: reply.text,
                    },
                    ui,
                );
                ui.notice(&format!(
                    "Compacted {before} messages into a summary; the conversation goes on from it."
                ));
                TurnEnd::Answered
            }
            Ok(_) => self.failed(&*client, ModelError::Empty, ui),
            Err(error) => self.failed(&*client, error, ui),
        }
    }

    /// Hook (decision 69): the model's current plan, if it keeps one
    /// (`plan::as_text` words it for a compaction summary).
    pub fn plan(&self) -> Option<&Value> {
        self.plan.as_ref()
    }

    /// Hook (decision 70): `/undo`, asking `ask` about each file changed
    /// since; the model is told with the next message. None: nothing to undo.
    pub fn undo(&mut self, ask: &mut dyn FnMut(&Path) -> bool) -> Option<undo::Report> {
        let report = self.undo.undo(ask)?;
        self.notes.push(report.for_model());
        Some(report)
    }

    /// The session's id, once its file exists.
    pub fn session_id(&self) -> Option<&str> {
        match &self.log {
            Log::Open { session, .. } => Some(session.id()),
            _ => None,
        }
    }

    pub fn client(&self) -> Option<&Arc<dyn ModelClient>> {
        self.client.as_ref().ok()
    }

    /// One message from the person, to completion.
    pub fn send(
        &mut self,
        text: &str,
        host: &dyn ToolHost,
        ui: &mut dyn Ui,
        cancel: &AtomicBool,
    ) -> TurnEnd {
        let client = match &self.client {
            Ok(client) => Arc::clone(client),
            Err(why) => {
                ui.error(why);
                return TurnEnd::NotConfigured;
            }
        };
        // Hook (decision 70): a new message for /undo, and what the model is
        // to be told of what happened since the last one.
        self.undo.next_message();
        let text = undo::with_notes(std::mem::take(&mut self.notes), text);
        self.push(Message::User { text }, ui);
        if !host.ready() {
            ui.waiting("waiting for tool discovery");
        }
        let tools = host.tools_array(client.tool_format());
        let fresh: Vec<String> = host
            .left_out(client.tool_format())
            .into_iter()
            .filter(|n| !self.told_left_out.contains(n))
            .collect();
        if !fresh.is_empty() {
            ui.notice(&crate::host::format::left_out_notice(&fresh));
            self.told_left_out.extend(fresh);
        }
        let mut rounds = 0;
        loop {
            ui.waiting("thinking");
            let request = Request {
                system: self.system.clone(),
                messages: self.messages.clone(),
                tools: tools.clone(),
            };
            let mut partial = String::new();
            let shared = RefCell::new(&mut *ui);
            let result = stream_cancellable(
                &client,
                request,
                &mut |piece| {
                    partial.push_str(piece);
                    shared.borrow_mut().text(piece);
                },
                &mut |notice| {
                    let mut ui = shared.borrow_mut();
                    ui.notice(notice);
                    ui.waiting("thinking");
                },
                cancel,
            );
            ui.end_text();
            let reply = match result {
                Ok(reply) => reply,
                Err(error) => {
                    // What the person saw stays in the conversation.
                    if !partial.is_empty() {
                        self.push(
                            Message::Assistant {
                                text: partial,
                                tool_calls: vec![],
                            },
                            ui,
                        );
                    }
                    return self.failed(&*client, error, ui);
                }
            };
            if let Some(usage) = &reply.usage {
                ui.usage(usage);
            }
            let cut = reply.stop == Stop::Cut;
            match &reply.stop {
                Stop::Refused(why) => return self.refused(&*client, why, ui),
                Stop::Cut if reply.text.is_empty() && reply.tool_calls.is_empty() => {
                    let error = ModelError::Reported(format!(
                        "the reply reached the output limit{} before it said anything",
                        limit_words(&*client)
                    ));
                    return self.failed(&*client, error, ui);
                }
                _ if reply.text.is_empty() && reply.tool_calls.is_empty() => {
                    return self.failed(&*client, ModelError::Empty, ui);
                }
                Stop::Cut => {
                    let text = format!(
                        "[cut: the reply reached the output limit{}; --max-output-tokens raises it]",
                        limit_words(&*client)
                    );
                    ui.notice(&text);
                    self.log(Entry::Notice { text }, ui);
                }
                _ => {}
            }
            let Reply {
                text, tool_calls, ..
            } = reply;
            // Each call's answer when it is not to run: a cut reply's calls,
            // and calls whose arguments are not a JSON object.
            let preset: Vec<Option<Envelope>> = tool_calls
                .iter()
                .map(|c| {
                    if cut {
                        Some(cut_envelope(c, &*client))
                    } else {
                        arguments_problem(&c.arguments)
                            .map(|what| Envelope::invalid_params(&c.name, &what))
                    }
                })
                .collect();
            // The history holds what a provider accepts back: `{}` for
            // arguments that were not an object.
            let history: Vec<ToolCall> = tool_calls
                .iter()
                .map(|c| ToolCall {
                    arguments: if c.arguments.is_object() {
                        c.arguments.clone()
                    } else {
                        json!({})
                    },
                    ..c.clone()
                })
                .collect();
            self.push(
                Message::Assistant {
                    text,
                    tool_calls: history,
                },
                ui,
            );
            if tool_calls.is_empty() {
                return TurnEnd::Answered;
            }
            if rounds == self.max_tool_rounds {
                let limit = self.max_tool_rounds;
                let results = tool_calls
                    .iter()
                    .map(|c| ToolResult {
                        call_id: c.id.clone(),
                        name: c.name.clone(),
                        envelope: Envelope::refused(
                            Failure::RoundLimit,
                            format!("Tool '{}' was not run: the limit of {limit} tool rounds for one message was reached", c.name),
                        )
                        .to_json(),
                    })
                    .collect::<Vec<_>>();
                for r in &results {
                    self.log(
                        Entry::ToolResult {
                            call_id: r.call_id.clone(),
                            name: r.name.clone(),
                            envelope: r.envelope.clone(),
                            events: vec![],
                        },
                        ui,
                    );
                }
                self.messages.push(Message::Tool { results });
                let text = if self.one_shot {
                    format!("Stopped after {limit} tool rounds (raise --max-tool-rounds to allow more).")
                } else {
                    format!(
                        "Stopped after {limit} tool rounds (--max-tool-rounds); send a message to let the model go on."
                    )
                };
                ui.notice(&text);
                self.log(Entry::Notice { text }, ui);
                return TurnEnd::RoundLimit;
            }
            let strict = matches!(
                client.tool_format(),
                ToolFormat::OpenAiChat | ToolFormat::OpenAiResponses
            );
            let results = self.run_calls(&tool_calls, preset, strict, host, ui, cancel);
            self.messages.push(Message::Tool { results });
            if cancel.load(Ordering::SeqCst) {
                let text = "Cancelled by you: the running tools were stopped; the model is told, \
                            with the output they had written."
                    .to_string();
                ui.notice(&text);
                self.log(Entry::Notice { text }, ui);
                return TurnEnd::Cancelled;
            }
            rounds += 1;
        }
    }

    /// Runs `calls` in the order `schedule` gives (consecutive reads at
    /// once, anything else alone), each once approval lets it; shows each
    /// outcome as it ends, logs what the model will see of it, and returns
    /// the results in the order of the calls. A call with a `preset`
    /// envelope is not run: that envelope is its answer. Under `strict`
    /// (OpenAI strict mode), a strict tool's optional parameters that the
    /// model set to `null` are dropped before it runs.
    fn run_calls(
        &mut self,
        calls: &[ToolCall],
        preset: Vec<Option<Envelope>>,
        strict: bool,
        host: &dyn ToolHost,
        ui: &mut dyn Ui,
        cancel: &AtomicBool,
    ) -> Vec<ToolResult> {
        let read_only: Vec<bool> = calls.iter().map(|c| host.read_only(&c.name)).collect();
        // What each call runs with: under strict mode, without the optional
        // parameters the model set to null.
        let arguments: Vec<Value> = calls
            .iter()
            .map(|call| match host.parameters(&call.name) {
                Some(params) if strict && strict::parameters(&params).is_some() => {
                    strict::without_optional_nulls(&params, &call.arguments)
                }
                _ => call.arguments.clone(),
            })
            .collect();
        // Uncontained calls are asked more often; the host knows whether
        // the kernel can fence them.
        self.approval.unsandboxed = host.unsandboxed();
        host.session_dir(self.beside().as_deref()); // hook (decision 68)
        let mut envelopes: Vec<Option<Value>> = vec![None; calls.len()];
        let mut preset = preset;
        for batch in schedule::batches(&read_only) {
            let mut approved = Vec::new();
            for index in batch {
                let call = &calls[index];
                ui.tool_call(call);
                let refusal = if let Some(envelope) = preset[index].take() {
                    Some(envelope)
                } else if cancel.load(Ordering::SeqCst) {
                    Some(Envelope::refused(
                        Failure::Cancelled,
                        format!("Tool '{}' was not run: the user interrupted", call.name),
                    ))
                } else {
                    match self
                        .approval
                        .check(&call.name, &call.arguments, read_only[index], cancel)
                    {
                        Verdict::Run => None,
                        Verdict::Refuse(why) => Some(Envelope::denied(why)),
                    }
                };
                match refusal {
                    Some(envelope) => {
                        let outcome = CallOutcome::new(envelope, vec![]);
                        envelopes[index] = Some(self.finish_call(call, outcome, ui));
                    }
                    None => {
                        // Hook (decision 70): the files it may change, kept.
                        let beside = self.beside();
                        let kept =
                            self.undo
                                .before_call(&call.name, &arguments[index], beside.as_deref());
                        kept.inspect(|note| ui.notice(note));
                        approved.push(index)
                    }
                }
            }
            self.run_together(
                &approved,
                calls,
                &arguments,
                host,
                ui,
                cancel,
                &mut envelopes,
            );
        }
        calls
            .iter()
            .zip(envelopes)
            .map(|(call, envelope)| ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                // A call thread that died (a panic in the host) still answers.
                envelope: envelope.unwrap_or_else(|| {
                    Envelope::refused(
                        Failure::Crashed,
                        format!("Tool '{}' produced no result", call.name),
                    )
                    .to_json()
                }),
            })
            .collect()
    }

    /// Runs the calls at `indices` (with `arguments`) at once and finishes
    /// each as it ends.
    #[allow(clippy::too_many_arguments)]
    fn run_together(
        &mut self,
        indices: &[usize],
        calls: &[ToolCall],
        arguments: &[Value],
        host: &dyn ToolHost,
        ui: &mut dyn Ui,
        cancel: &AtomicBool,
        envelopes: &mut [Option<Value>],
    ) {
        if indices.is_empty() {
            return;
        }
        std::thread::scope(|scope| {
            enum Progress {
                Output(usize, Vec<u8>),
                Done(usize, Box<CallOutcome>),
            }
            let (tx, rx) = mpsc::channel();
            for &index in indices {
                let (call, arguments) = (&calls[index], &arguments[index]);
                let tx = tx.clone();
                scope.spawn(move || {
                    let output = tx.clone();
                    let watch: Watch = Box::new(move |piece: &[u8]| {
                        let _ = output.send(Progress::Output(index, piece.to_vec()));
                    });
                    let outcome = host.call_watched(&call.name, arguments, Some(cancel), watch);
                    let _ = tx.send(Progress::Done(index, Box::new(outcome)));
                });
            }
            drop(tx);
            let label = match indices {
                [one] => format!("running {}", calls[*one].name),
                many => format!("running {} tools", many.len()),
            };
            ui.waiting(&label);
            let mut running = indices.len();
            for progress in rx {
                let (index, mut outcome) = match progress {
                    Progress::Output(index, piece) => {
                        ui.tool_output(&calls[index], &piece);
                        continue;
                    }
                    Progress::Done(index, outcome) => (index, *outcome),
                };
                let call = &calls[index];
                // A call the fence may have stopped can, if the person says
                // so at the prompt, run again outside it; not one the
                // person has just interrupted.
                let refusal = fence_refusal(&outcome).filter(|_| !cancel.load(Ordering::SeqCst));
                if let Some(why) = refusal {
                    if self
                        .approval
                        .rerun_outside_sandbox(&call.name, &why, cancel)
                    {
                        ui.waiting(&format!("running {} outside the sandbox", call.name));
                        outcome =
                            host.call_unsandboxed(&call.name, &arguments[index], Some(cancel));
                    }
                }
                envelopes[index] = Some(self.finish_call(call, outcome, ui));
                running -= 1;
                if running > 0 {
                    ui.waiting(&label);
                }
            }
        });
    }

    /// Shows how a call ended, cuts its envelope to what the model sees
    /// (the whole outputs saved beside the session) and logs that.
    fn finish_call(&mut self, call: &ToolCall, outcome: CallOutcome, ui: &mut dyn Ui) -> Value {
        ui.tool_outcome(call, &outcome);
        // Hook (decisions 69, 70): the plan shown; the files' new state noted.
        self.undo.after_call(&call.name, &call.arguments);
        if let Some(plan) = plan::from_call(call, &outcome) {
            ui.plan(&plan);
            self.plan = Some(plan);
        }
        for event in &outcome.events {
            ui.event(event);
        }
        let beside = self.beside();
        let outputs = &mut self.outputs;
        let envelope = for_model::envelope(
            &call.name,
            outcome.to_json(),
            self.model_output,
            &mut |what, text| outputs.save(beside.as_deref(), &call.id, what, text.as_bytes()),
        );
        self.log(
            Entry::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                envelope: envelope.clone(),
                events: outcome.events,
            },
            ui,
        );
        envelope
    }

    /// A refusal or safety stop: shown as what it is, and kept out of the
    /// history, as a refused reply must not be sent back to the provider.
    fn refused(&mut self, client: &dyn ModelClient, why: &str, ui: &mut dyn Ui) -> TurnEnd {
        let text = format!(
            "{} ({}) refused to answer: {why}. The refused reply is left out of the conversation.",
            client.provider(),
            client.model()
        );
        ui.error(&text);
        self.log(Entry::Notice { text }, ui);
        TurnEnd::Failed
    }

    fn failed(&mut self, client: &dyn ModelClient, error: ModelError, ui: &mut dyn Ui) -> TurnEnd {
        let (text, end) = match error {
            ModelError::Cancelled => (
                "Cancelled by you: the request was stopped.".to_string(),
                TurnEnd::Cancelled,
            ),
            e if self.one_shot => (
                format!("{} ({}): {e}.", client.provider(), client.model()),
                TurnEnd::Failed,
            ),
            e => (
                format!(
                    "{} ({}): {e}. The conversation is kept; send another message to go on.",
                    client.provider(),
                    client.model()
                ),
                TurnEnd::Failed,
            ),
        };
        if end == TurnEnd::Cancelled {
            ui.notice(&text);
        } else {
            ui.error(&text);
        }
        self.log(Entry::Notice { text }, ui);
        end
    }

    /// The session's directory: beside its log, `ID.jsonl`, `ID/`.
    fn beside(&self) -> Option<PathBuf> {
        match &self.log {
            Log::Open { session, .. } => Some(session.path().with_extension("")),
            _ => None,
        }
    }

    fn push(&mut self, message: Message, ui: &mut dyn Ui) {
        let entry = match &message {
            Message::User { text } => Entry::User { text: text.clone() },
            Message::Assistant { text, tool_calls } => Entry::Assistant {
                text: text.clone(),
                tool_calls: tool_calls.clone(),
            },
            Message::Tool { .. } => unreachable!("tool results are logged one by one"),
        };
        self.log(entry, ui);
        self.messages.push(message);
    }

    fn log(&mut self, entry: Entry, ui: &mut dyn Ui) {
        if let Err(e) = self.write(&entry) {
            self.log = Log::Broken;
            ui.error(&format!("{e:#}; the conversation goes on without a log"));
        }
    }

    fn write(&mut self, entry: &Entry) -> anyhow::Result<()> {
        if let Log::New(dir) = &self.log {
            self.log = Log::Open {
                session: Session::create(dir)?,
                started: false,
            };
        }
        let Log::Open { session, started } = &mut self.log else {
            return Ok(());
        };
        if !*started {
            let (provider, model) = match &self.client {
                Ok(c) => (c.provider().to_string(), c.model().to_string()),
                Err(_) => (String::new(), String::new()),
            };
            let time = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            session.append(&Entry::Start {
                id: session.id().to_string(),
                time,
                provider,
                model,
                cwd: std::env::current_dir()
                    .ok()
                    .map(|d| d.to_string_lossy().into_owned()),
            })?;
            *started = true;
        }
        session.append(entry)
    }
}

/// The line of a failed sandboxed call's answer that shows the fence's
/// refusal, if one does: Landlock and the socket filter both fail with
/// EACCES, which tools print as "Permission denied" (our file tools answer
/// `PERMISSION_DENIED`). Any other failure (a test that fails, a grep that
/// finds nothing) would fail outside the sandbox too, and asking after each
/// would teach the person to say yes without reading.
fn fence_refusal(outcome: &CallOutcome) -> Option<String> {
    const SIGNS: [&str; 4] = [
        "permission denied",
        "permission_denied",
        "os error 13",
        "read-only file system",
    ];
    outcome.sandbox.as_ref()?;
    let envelope = outcome.envelope.to_json();
    let mut texts = Vec::new();
    strings(&envelope, &mut texts);
    texts
        .iter()
        .flat_map(|text| text.lines())
        .find(|line| {
            let line = line.to_ascii_lowercase();
            SIGNS.iter().any(|sign| line.contains(sign))
        })
        .map(|line| clip(line.trim(), 200))
}

/// Every string in `value`, keys left out.
fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// " of N tokens" when the client knows its limit.
fn limit_words(client: &dyn ModelClient) -> String {
    client
        .max_output_tokens()
        .map(|n| format!(" of {n} tokens"))
        .unwrap_or_default()
}

/// The answer to a tool call in a reply cut at the output limit: its
/// arguments may stop mid-way, so it is not run, and the model is told.
fn cut_envelope(call: &ToolCall, client: &dyn ModelClient) -> Envelope {
    Envelope::invalid_params(
        &call.name,
        &format!(
            "the call was not run: your reply reached the output limit{} while it was \
             being written, so its arguments may be incomplete. Make the call again with \
             less in it (write a long file in parts).",
            limit_words(client)
        ),
    )
}

/// The system prompt: the built-in one, then every `*.md` in `context_dir`
/// in alphabetical order, joined with `---`, so a person can add standing
/// instructions one file at a time. Unreadable modules are reported and
/// left out.
pub fn system_prompt(context_dir: Option<&Path>) -> (String, Vec<String>) {
    let mut parts = vec![BUILT_IN_PROMPT.to_string()];
    let mut warnings = Vec::new();
    if let Some(dir) = context_dir {
        let mut files: Vec<_> = match std::fs::read_dir(dir) {
            Ok(listing) => listing
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                warnings.push(format!(
                    "cannot list the context directory {}: {e}",
                    dir.display()
                ));
                Vec::new()
            }
        };
        files.sort();
        for file in files {
            match std::fs::read(&file) {
                Ok(bytes) => parts.push(String::from_utf8_lossy(&bytes).trim().to_string()),
                Err(e) => warnings.push(format!("context module {} skipped: {e}", file.display())),
            }
        }
    }
    (parts.join("\n\n---\n\n"), warnings)
}

/// A tool call for the person: `name(key: value, ...)`, at most `max` chars.
pub fn short_call(call: &ToolCall, max: usize) -> String {
    let args = match &call.arguments {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}: {}", short_value(v)))
            .collect::<Vec<_>>()
            .join(", "),
        other => short_value(other),
    };
    clip(&format!("{}({args})", call.name), max)
}

/// One line saying how a call went, and whether it failed.
pub fn short_outcome(outcome: &CallOutcome, max: usize) -> (bool, String) {
    let envelope = outcome.to_json();
    let failure = |e: &Value| {
        let code = e["error_code"].as_str().unwrap_or("ERROR");
        let text = e["error"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| e.to_string());
        clip(&format!("{code}: {}", text.replace('\n', " ")), max)
    };
    if envelope["tool_success"] == json!(false) {
        return (false, failure(&envelope));
    }
    let result = &envelope["result"];
    // A tool may answer its own error inside a successful run.
    if !result["error"].is_null() || result["success"] == json!(false) {
        return (false, failure(result));
    }
    let size = result.to_string().len();
    let mut line = format!("ok, {size} bytes");
    if let Some(code) = result["exit_code"].as_i64() {
        line = format!("exit code {code}, {size} bytes");
    }
    (true, line)
}

fn short_value(value: &Value) -> String {
    let text = match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    clip(&text, 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assistant::approval::{rules::Rule, Mode, Prompter, Sourced};
    use crate::assistant::model::Reply;
    use std::collections::VecDeque;
    use std::sync::Mutex;
    use std::time::Duration;

    /// A model that answers from a script and keeps every request.
    struct Scripted {
        replies: Mutex<VecDeque<Result<Reply, ModelError>>>,
        seen: Mutex<Vec<Request>>,
        format: ToolFormat,
    }

    impl Scripted {
        fn new(replies: Vec<Result<Reply, ModelError>>) -> Arc<Scripted> {
            Self::speaking(ToolFormat::Anthropic, replies)
        }

        fn speaking(format: ToolFormat, replies: Vec<Result<Reply, ModelError>>) -> Arc<Scripted> {
            Arc::new(Scripted {
                replies: Mutex::new(replies.into()),
                seen: Mutex::new(vec![]),
                format,
            })
        }
    }

    impl ModelClient for Scripted {
        fn provider(&self) -> &'static str {
            "scripted"
        }
        fn model(&self) -> &str {
            "m1"
        }
        fn tool_format(&self) -> ToolFormat {
            self.format
        }
        fn max_output_tokens(&self) -> Option<u64> {
            Some(100)
        }
        fn stream(
            &self,
            request: &Request,
            on_text: &mut dyn FnMut(&str),
        ) -> Result<Reply, ModelError> {
            self.seen.lock().unwrap().push(request.clone());
            let reply = self
                .replies
                .lock()
                .unwrap()
                .pop_front()
                .expect("a scripted reply");
            if let Ok(r) = &reply {
                on_text(&r.text);
            }
            reply
        }
    }

    /// Tools `echo` (answers its arguments), `slow` (sleeps `ms`, answers
    /// `n`), `needs_key` (reports a config_required event), `forever`
    /// (waits for cancel) and `fenced` (fails inside the sandbox with
    /// `error`, by default the fence's "Permission denied"; works outside
    /// it).
    struct FakeHost {
        calls: Mutex<Vec<String>>,
        /// What `unsandboxed` answers.
        unsandboxed: bool,
    }

    impl ToolHost for FakeHost {
        fn tools_array(&self, format: ToolFormat) -> Value {
            json!([{"format": format!("{format:?}")}])
        }
        fn parameters(&self, name: &str) -> Option<Value> {
            (name == "echo").then(|| {
                json!({"type": "object", "properties": {
                    "path": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["path"]})
            })
        }

        fn read_only(&self, name: &str) -> bool {
            name == "slow"
        }
        fn unsandboxed(&self) -> bool {
            self.unsandboxed
        }
        fn call_unsandboxed(&self, name: &str, _: &Value, _: Option<&AtomicBool>) -> CallOutcome {
            self.calls
                .lock()
                .unwrap()
                .push(format!("{name} unsandboxed"));
            CallOutcome::new(
                Envelope::Success {
                    result: json!({"outside": true}),
                    truncated: None,
                },
                vec![],
            )
        }
        fn call(&self, name: &str, arguments: &Value, cancel: Option<&AtomicBool>) -> CallOutcome {
            self.calls.lock().unwrap().push(name.to_string());
            let ok = |result: Value| {
                CallOutcome::new(
                    Envelope::Success {
                        result,
                        truncated: None,
                    },
                    vec![],
                )
            };
            match name {
                "echo" => ok(arguments.clone()),
                "slow" => {
                    std::thread::sleep(Duration::from_millis(
                        arguments["ms"].as_u64().unwrap_or(0),
                    ));
                    ok(json!({"n": arguments["n"]}))
                }
                "needs_key" => CallOutcome::new(
                    Envelope::refused(Failure::Tool("AUTH_MISSING".into()), "no key"),
                    vec![json!({"kind": "config_required", "message": "set KEY"})],
                ),
                "fenced" => {
                    if arguments["interrupt"] == json!(true) {
                        // The person presses Ctrl-C while it runs.
                        cancel.expect("a cancel flag").store(true, Ordering::SeqCst);
                    }
                    let error = arguments["error"].as_str().unwrap_or("Permission denied");
                    CallOutcome {
                        sandbox: Some(json!({"mode": "workspace-write", "network": false})),
                        ..CallOutcome::new(
                            Envelope::refused(Failure::Tool("EXIT".into()), error),
                            vec![],
                        )
                    }
                }
                "forever" => {
                    let cancel = cancel.expect("a cancel flag");
                    while !cancel.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    CallOutcome::new(Envelope::refused(Failure::Cancelled, "killed"), vec![])
                }
                _ => CallOutcome::new(
                    Envelope::refused(Failure::NotFound, format!("Tool '{name}' not found")),
                    vec![],
                ),
            }
        }
    }

    #[derive(Default)]
    struct Record(Vec<String>);

    impl Ui for Record {
        fn waiting(&mut self, _: &str) {}
        fn text(&mut self, piece: &str) {
            self.0.push(format!("text {piece}"));
        }
        fn end_text(&mut self) {}
        fn tool_call(&mut self, call: &ToolCall) {
            self.0.push(format!("call {}", short_call(call, 80)));
        }
        fn tool_outcome(&mut self, call: &ToolCall, outcome: &CallOutcome) {
            self.0.push(format!(
                "outcome {} {}",
                call.name,
                short_outcome(outcome, 80).1
            ));
        }
        fn event(&mut self, event: &Value) {
            self.0.push(format!("event {event}"));
        }
        fn notice(&mut self, text: &str) {
            self.0.push(format!("notice {text}"));
        }
        fn error(&mut self, text: &str) {
            self.0.push(format!("error {text}"));
        }
        fn usage(&mut self, usage: &Usage) {
            self.0.push(format!(
                "usage {} in, {} out",
                usage.input_tokens, usage.output_tokens
            ));
        }
    }

    fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            local_id: false,
            signature: None,
        }
    }

    fn text(t: &str) -> Result<Reply, ModelError> {
        Ok(Reply {
            text: t.into(),
            ..Reply::default()
        })
    }

    fn calls(list: Vec<ToolCall>) -> Result<Reply, ModelError> {
        Ok(Reply {
            tool_calls: list,
            ..Reply::default()
        })
    }

    fn host() -> FakeHost {
        FakeHost {
            calls: Mutex::new(vec![]),
            unsandboxed: false,
        }
    }

    /// The person at the prompt: answers from a script, keeps what it was
    /// shown and asked.
    #[derive(Clone, Default)]
    struct Person {
        answers: Arc<Mutex<VecDeque<&'static str>>>,
        seen: Arc<Mutex<Vec<String>>>,
    }

    impl Person {
        fn answering(answers: &[&'static str]) -> Person {
            Person {
                answers: Arc::new(Mutex::new(answers.iter().copied().collect())),
                seen: Arc::default(),
            }
        }
        fn seen(&self) -> Vec<String> {
            self.seen.lock().unwrap().clone()
        }
    }

    impl Prompter for Person {
        fn show(&mut self, text: &str) {
            self.seen.lock().unwrap().push(text.to_string());
        }
        fn answer(&mut self, question: &str, _: &AtomicBool) -> Option<String> {
            self.seen.lock().unwrap().push(question.to_string());
            self.answers.lock().unwrap().pop_front().map(str::to_string)
        }
    }

    /// `ask` mode with the allow rules `allow`, asking `person`.
    fn asking(allow: &[&str], person: &Person) -> Approval {
        let allow = allow
            .iter()
            .map(|r| Sourced {
                rule: Rule::parse(r).unwrap(),
                from: "--allow".into(),
            })
            .collect();
        Approval::new(Mode::Ask, allow, vec![], Some(Box::new(person.clone())))
    }

    fn conversation(model: &Arc<Scripted>, rounds: usize) -> Conversation {
        let client: Arc<dyn ModelClient> = model.clone();
        Conversation::new(Ok(client), "sys".into(), rounds)
    }

    #[test]
    fn tool_rounds_until_text_with_results_in_call_order() {
        let model = Scripted::new(vec![
            calls(vec![
                call("a", "slow", json!({"ms": 150, "n": 1})),
                call("b", "slow", json!({"ms": 0, "n": 2})),
            ]),
            calls(vec![call("c", "echo", json!({"x": "y"}))]),
            text("done"),
        ]);
        let mut c = conversation(&model, 25);
        let mut ui = Record::default();
        let end = c.send("go", &host(), &mut ui, &AtomicBool::new(false));
        assert_eq!(end, TurnEnd::Answered);
        let seen = model.seen.lock().unwrap();
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[0].system, "sys");
        assert_eq!(seen[0].tools, json!([{"format": "Anthropic"}]));
        let Message::Tool { results } = &seen[1].messages[2] else {
            panic!()
        };
        let order: Vec<_> = results
            .iter()
            .map(|r| (r.call_id.as_str(), r.envelope["result"]["n"].clone()))
            .collect();
        assert_eq!(order, [("a", json!(1)), ("b", json!(2))]);
        // The quick call finished first and was shown first.
        let outcomes: Vec<_> = ui.0.iter().filter(|l| l.starts_with("outcome")).collect();
        assert_eq!(outcomes[0], "outcome slow ok, 7 bytes");
        assert_eq!(c.messages().len(), 6);
        assert_eq!(ui.0.last().unwrap(), "text done");
    }

    /// The envelopes of the last tool message `model` was sent.
    fn last_results(model: &Scripted) -> Vec<ToolResult> {
        let seen = model.seen.lock().unwrap();
        let messages = &seen.last().unwrap().messages;
        match messages
            .iter()
            .rev()
            .find(|m| matches!(m, Message::Tool { .. }))
        {
            Some(Message::Tool { results }) => results.clone(),
            _ => panic!("no tool results in {messages:?}"),
        }
    }

    #[test]
    fn a_cut_reply_runs_no_call_and_the_model_is_told_in_the_same_turn() {
        let model = Scripted::new(vec![
            Ok(Reply {
                usage: Some(Usage {
                    input_tokens: 3,
                    output_tokens: 100,
                }),
                text: "Writing it".into(),
                tool_calls: vec![call(
                    "a",
                    "echo",
                    json!("{\"path\": \"x\", \"content\": \"ab"),
                )],
                stop: Stop::Cut,
            }),
            text("I will write it in parts."),
        ]);
        let mut c = conversation(&model, 25);
        let mut ui = Record::default();
        let h = host();
        assert_eq!(
            c.send("go", &h, &mut ui, &AtomicBool::new(false)),
            TurnEnd::Answered
        );
        assert!(h.calls.lock().unwrap().is_empty(), "a cut call ran");
        // Counted once: the status line and the cost add up what they get.
        let usage: Vec<_> = ui.0.iter().filter(|l| l.starts_with("usage")).collect();
        assert_eq!(usage, ["usage 3 in, 100 out"]);
        assert!(
            ui.0.contains(&"notice [cut: the reply reached the output limit of 100 tokens; --max-output-tokens raises it]".to_string()),
            "{:?}",
            ui.0
        );
        let results = last_results(&model);
        assert_eq!(results[0].envelope["error_code"], "INVALID_PARAMS");
        let error = results[0].envelope["error"].as_str().unwrap();
        assert!(error.contains("output limit of 100 tokens"), "{error}");
        // The history replays the cut call as `{}`.
        let Message::Assistant { tool_calls, .. } = &c.messages()[1] else {
            panic!()
        };
        assert_eq!(tool_calls[0].arguments, json!({}));

        // Cut before any text: an error, not "an empty reply".
        let model = Scripted::new(vec![Ok(Reply {
            stop: Stop::Cut,
            ..Reply::default()
        })]);
        let mut ui = Record::default();
        let end = conversation(&model, 25).send("go", &h, &mut ui, &AtomicBool::new(false));
        assert_eq!(end, TurnEnd::Failed);
        assert!(
            ui.0.iter()
                .any(|l| l
                    .contains("reached the output limit of 100 tokens before it said anything")),
            "{:?}",
            ui.0
        );
    }

    #[test]
    fn a_refusal_is_named_and_kept_out_of_the_history() {
        let model = Scripted::new(vec![
            Ok(Reply {
                text: "Partly".into(),
                stop: Stop::Refused("I can't help with that.".into()),
                ..Reply::default()
            }),
            text("ok"),
        ]);
        let mut c = conversation(&model, 25);
        let mut ui = Record::default();
        let h = host();
        let cancel = AtomicBool::new(false);
        assert_eq!(c.send("bad", &h, &mut ui, &cancel), TurnEnd::Failed);
        assert!(
            ui.0.iter()
                .any(|l| l
                    .starts_with("error scripted (m1) refused to answer: I can't help with that.")),
            "{:?}",
            ui.0
        );
        assert_eq!(c.send("good", &h, &mut ui, &cancel), TurnEnd::Answered);
        let sent = &model.seen.lock().unwrap()[1].messages;
        assert!(
            sent.iter().all(|m| !matches!(m, Message::Assistant { .. })),
            "{sent:?}"
        );
    }

    #[test]
    fn arguments_that_are_not_an_object_are_not_run_and_replay_as_empty() {
        let model = Scripted::new(vec![
            calls(vec![
                call("a", "echo", json!("{\"path\": oops")),
                call("b", "echo", json!({"path": "fine"})),
            ]),
            text("done"),
        ]);
        let mut c = conversation(&model, 25);
        let h = host();
        c.send("go", &h, &mut Record::default(), &AtomicBool::new(false));
        assert_eq!(*h.calls.lock().unwrap(), ["echo"], "only the good call ran");
        let results = last_results(&model);
        assert_eq!(results[0].envelope["error_code"], "INVALID_PARAMS");
        let error = results[0].envelope["error"].as_str().unwrap();
        assert!(
            error.starts_with("Invalid arguments for tool 'echo': arguments are not valid JSON: "),
            "{error}"
        );
        assert_eq!(results[1].envelope["result"], json!({"path": "fine"}));
        let seen = model.seen.lock().unwrap();
        let Message::Assistant { tool_calls, .. } = &seen[1].messages[1] else {
            panic!()
        };
        assert_eq!(tool_calls[0].arguments, json!({}));
    }

    #[test]
    fn optional_nulls_are_dropped_under_strict_mode_only() {
        let args = json!({"path": null, "limit": null});
        for (format, expected) in [
            (ToolFormat::OpenAiChat, json!({"path": null})),
            (ToolFormat::OpenAiResponses, json!({"path": null})),
            (ToolFormat::Anthropic, args.clone()),
        ] {
            let model = Scripted::speaking(
                format,
                vec![calls(vec![call("a", "echo", args.clone())]), text("ok")],
            );
            conversation(&model, 25).send(
                "go",
                &host(),
                &mut Record::default(),
                &AtomicBool::new(false),
            );
            assert_eq!(
                last_results(&model)[0].envelope["result"],
                expected,
                "{format:?}"
            );
        }
    }

    #[test]
    fn a_call_that_may_write_runs_alone_between_the_reads() {
        // Run all at once, the quick calls would end before the slow one.
        let model = Scripted::new(vec![
            calls(vec![
                call("a", "slow", json!({"ms": 150, "n": 1})),
                call("b", "echo", json!({"x": 1})),
                call("c", "slow", json!({"ms": 0, "n": 2})),
                call("d", "slow", json!({"ms": 0, "n": 3})),
            ]),
            text("done"),
        ]);
        let mut c = conversation(&model, 25);
        let mut ui = Record::default();
        c.send("go", &host(), &mut ui, &AtomicBool::new(false));
        let shown: Vec<&str> =
            ui.0.iter()
                .filter(|l| l.starts_with("outcome") || l.starts_with("call"))
                .map(String::as_str)
                .collect();
        assert_eq!(
            shown[..4],
            [
                "call slow(ms: 150, n: 1)",
                "outcome slow ok, 7 bytes",
                "call echo(x: 1)",
                "outcome echo ok, 7 bytes"
            ]
        );
        assert_eq!(
            shown[4..6],
            ["call slow(ms: 0, n: 2)", "call slow(ms: 0, n: 3)"]
        );
    }

    #[test]
    fn a_call_that_failed_in_the_sandbox_runs_again_outside_it_when_the_person_says_y() {
        for (answer, ran, seen) in [
            (
                "y",
                vec!["fenced", "fenced unsandboxed"],
                json!({"outside": true}),
            ),
            ("n", vec!["fenced"], Value::Null),
        ] {
            let model = Scripted::new(vec![
                calls(vec![call("a", "fenced", json!({}))]),
                text("ok"),
            ]);
            let person = Person::answering(&[answer]);
            let h = host();
            let mut c = conversation(&model, 25).with_approval(asking(&["fenced"], &person));
            let end = c.send("go", &h, &mut Record::default(), &AtomicBool::new(false));
            assert_eq!(end, TurnEnd::Answered);
            assert_eq!(*h.calls.lock().unwrap(), ran, "answer {answer}");
            assert_eq!(
                person.seen(),
                [
                    "fenced failed inside the sandbox: Permission denied",
                    "Run it again outside the sandbox? y / n: "
                ]
            );
            let results = last_results(&model);
            assert_eq!(results[0].envelope["result"], seen, "answer {answer}");
            if answer == "n" {
                // The model learns the sandbox may be why.
                assert_eq!(results[0].envelope["sandbox"]["mode"], "workspace-write");
            }
        }
    }

    #[test]
    fn a_failure_the_fence_did_not_cause_is_not_offered_a_run_outside_it() {
        let model = Scripted::new(vec![
            calls(vec![call(
                "a",
                "fenced",
                json!({"error": "3 tests failed"}),
            )]),
            text("ok"),
        ]);
        let person = Person::answering(&["y"]);
        let h = host();
        let mut c = conversation(&model, 25).with_approval(asking(&["fenced"], &person));
        c.send("go", &h, &mut Record::default(), &AtomicBool::new(false));
        assert_eq!(*h.calls.lock().unwrap(), ["fenced"]);
        assert!(person.seen().is_empty(), "{:?}", person.seen());
        assert_eq!(last_results(&model)[0].envelope["error"], "3 tests failed");
    }

    #[test]
    fn the_fences_refusal_is_the_line_that_shows_it() {
        let fenced = |result: Value| CallOutcome {
            sandbox: Some(json!({"mode": "workspace-write"})),
            ..CallOutcome::new(
                Envelope::Success {
                    result,
                    truncated: None,
                },
                vec![],
            )
        };
        let denied = json!({"output": "making\nsh: 1: cannot create /x: Permission denied\n", "exit_code": 2});
        assert_eq!(
            fence_refusal(&fenced(denied.clone())).as_deref(),
            Some("sh: 1: cannot create /x: Permission denied")
        );
        let failed = json!({"output": "test a ... FAILED\n", "exit_code": 101});
        assert_eq!(fence_refusal(&fenced(failed)), None);
        let unfenced = CallOutcome {
            sandbox: None,
            ..fenced(denied)
        };
        assert_eq!(fence_refusal(&unfenced), None);
    }

    #[test]
    fn an_interrupted_call_is_not_offered_a_run_outside_the_sandbox() {
        let model = Scripted::new(vec![calls(vec![call(
            "a",
            "fenced",
            json!({"interrupt": true}),
        )])]);
        let person = Person::answering(&["y"]);
        let h = host();
        let mut c = conversation(&model, 25).with_approval(asking(&["fenced"], &person));
        let end = c.send("go", &h, &mut Record::default(), &AtomicBool::new(false));
        assert_eq!(end, TurnEnd::Cancelled);
        assert_eq!(*h.calls.lock().unwrap(), ["fenced"]);
        assert!(person.seen().is_empty(), "{:?}", person.seen());
    }

    #[test]
    fn without_the_sandbox_what_the_rules_allow_is_asked_all_the_same() {
        for unsandboxed in [false, true] {
            let model = Scripted::new(vec![
                calls(vec![
                    call("a", "echo", json!({"x": 1})),
                    call("b", "slow", json!({"n": 2})),
                ]),
                text("ok"),
            ]);
            let person = Person::answering(&["n", ""]);
            let h = FakeHost {
                unsandboxed,
                ..host()
            };
            let mut c = conversation(&model, 25).with_approval(asking(&["echo"], &person));
            c.send("go", &h, &mut Record::default(), &AtomicBool::new(false));
            let results = last_results(&model);
            // The read-only call runs unasked either way.
            assert_eq!(results[1].envelope["result"]["n"], 2);
            if unsandboxed {
                assert_eq!(*h.calls.lock().unwrap(), ["slow"]);
                assert!(person.seen()[0].starts_with("echo wants to run with:"));
                assert_eq!(results[0].envelope["error_code"], "PERMISSION_DENIED");
            } else {
                assert_eq!(*h.calls.lock().unwrap(), ["echo", "slow"]);
                assert!(person.seen().is_empty(), "{:?}", person.seen());
            }
        }
    }

    #[test]
    fn a_denied_call_tells_the_model_who_refused_and_the_turn_goes_on() {
        let model = Scripted::new(vec![
            calls(vec![
                call("a", "echo", json!({"x": 1})),
                call("b", "slow", json!({"n": 2})),
            ]),
            text("understood"),
        ]);
        let deny = vec![Sourced {
            rule: Rule::parse("echo").unwrap(),
            from: "--deny".into(),
        }];
        let h = host();
        let mut c =
            conversation(&model, 25).with_approval(Approval::new(Mode::Auto, vec![], deny, None));
        let end = c.send("go", &h, &mut Record::default(), &AtomicBool::new(false));
        assert_eq!(end, TurnEnd::Answered);
        assert_eq!(*h.calls.lock().unwrap(), ["slow"]);
        let Message::Tool { results } = &model.seen.lock().unwrap()[1].messages[2] else {
            panic!()
        };
        assert_eq!(results[0].envelope["error_code"], "PERMISSION_DENIED");
        assert_eq!(
            results[0].envelope["error"],
            "Denied by the rule echo (--deny); do not try to get around it, ask the user instead"
        );
        assert_eq!(results[1].envelope["result"]["n"], 2);
    }

    #[test]
    fn the_model_and_the_log_see_a_long_output_cut_and_the_whole_is_saved() {
        let dir = tempfile::tempdir().unwrap();
        let long = "x".repeat(5000);
        let model = Scripted::new(vec![
            calls(vec![call("a", "echo", json!({ "text": long }))]),
            text("ok"),
        ]);
        let session = Session::create(dir.path()).unwrap();
        let log = session.path().to_path_buf();
        let mut c = conversation(&model, 25)
            .with_session(session)
            .with_model_output(1000);
        c.send(
            "go",
            &host(),
            &mut Record::default(),
            &AtomicBool::new(false),
        );
        let Message::Tool { results } = &model.seen.lock().unwrap()[1].messages[2] else {
            panic!()
        };
        let seen = results[0].envelope["result"].as_str().unwrap().to_string();
        assert!(seen.len() <= 1000, "{}", seen.len());
        let saved = log.with_extension("").join("a.result.json");
        assert!(seen.contains(&saved.display().to_string()), "{seen}");
        let whole: Value = serde_json::from_slice(&std::fs::read(&saved).unwrap()).unwrap();
        assert_eq!(whole["text"], long);
        let logged = std::fs::read_to_string(&log).unwrap();
        let result = logged
            .lines()
            .find(|l| l.contains("\"tool_result\""))
            .unwrap();
        assert!(result.contains("bytes and 0 lines left out"), "{result}");
        assert!(!result.contains(&long));
    }

    #[test]
    fn round_limit_answers_every_call_and_stops() {
        let model = Scripted::new(vec![
            calls(vec![call("a", "echo", json!({}))]),
            calls(vec![call("b", "echo", json!({}))]),
        ]);
        let mut c = conversation(&model, 1);
        let mut ui = Record::default();
        let end = c.send("go", &host(), &mut ui, &AtomicBool::new(false));
        assert_eq!(end, TurnEnd::RoundLimit);
        let Some(Message::Tool { results }) = c.messages().last() else {
            panic!()
        };
        assert_eq!(results[0].envelope["error_code"], "TOOL_ROUND_LIMIT");
        assert!(ui.0.last().unwrap().contains("Stopped after 1 tool rounds"));
    }

    #[test]
    fn provider_error_keeps_the_conversation_for_the_next_message() {
        let model = Scripted::new(vec![
            text("first answer"),
            Err(ModelError::Http {
                status: 500,
                message: "boom".into(),
            }),
            text("recovered"),
        ]);
        let mut c = conversation(&model, 25);
        let mut ui = Record::default();
        let h = host();
        let cancel = AtomicBool::new(false);
        assert_eq!(c.send("one", &h, &mut ui, &cancel), TurnEnd::Answered);
        assert_eq!(c.send("two", &h, &mut ui, &cancel), TurnEnd::Failed);
        assert!(
            ui.0.iter()
                .any(|l| l.starts_with("error scripted (m1): HTTP 500: boom")),
            "{:?}",
            ui.0
        );
        assert_eq!(c.send("three", &h, &mut ui, &cancel), TurnEnd::Answered);
        let last = model.seen.lock().unwrap().last().unwrap().messages.clone();
        let users: Vec<_> = last
            .iter()
            .filter_map(|m| match m {
                Message::User { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(users, ["one", "two", "three"]);
    }

    #[test]
    fn events_go_to_the_person_not_the_model() {
        let model = Scripted::new(vec![
            calls(vec![call("a", "needs_key", json!({}))]),
            text("ok"),
        ]);
        let mut c = conversation(&model, 25);
        let mut ui = Record::default();
        c.send("go", &host(), &mut ui, &AtomicBool::new(false));
        assert!(ui
            .0
            .contains(&r#"event {"kind":"config_required","message":"set KEY"}"#.to_string()));
        let sent = serde_json::to_string(&model.seen.lock().unwrap()[1].messages).unwrap();
        assert!(!sent.contains("config_required"), "{sent}");
        assert!(ui
            .0
            .contains(&"outcome needs_key AUTH_MISSING: no key".to_string()));
    }

    #[test]
    fn cancel_stops_running_tools_and_keeps_results() {
        let model = Scripted::new(vec![calls(vec![
            call("a", "forever", json!({})),
            call("b", "echo", json!({})),
        ])]);
        let mut c = conversation(&model, 25);
        let mut ui = Record::default();
        let cancel = Arc::new(AtomicBool::new(false));
        let setter = Arc::clone(&cancel);
        let trigger = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            setter.store(true, Ordering::SeqCst);
        });
        assert_eq!(c.send("go", &host(), &mut ui, &cancel), TurnEnd::Cancelled);
        trigger.join().unwrap();
        let Some(Message::Tool { results }) = c.messages().last() else {
            panic!()
        };
        assert_eq!(results.len(), 2);
        assert_eq!(results[0].envelope["error"], "killed");
        assert_eq!(model.seen.lock().unwrap().len(), 1);
    }

    #[test]
    fn no_model_means_an_instruction_and_nothing_sent() {
        let mut c = Conversation::new(Err("configure a key".into()), "s".into(), 25);
        let mut ui = Record::default();
        let end = c.send("hi", &host(), &mut ui, &AtomicBool::new(false));
        assert_eq!(end, TurnEnd::NotConfigured);
        assert_eq!(ui.0, ["error configure a key"]);
        assert!(c.messages().is_empty());
    }

    #[test]
    fn session_log_replays_to_the_same_conversation() {
        let dir = tempfile::tempdir().unwrap();
        let model = Scripted::new(vec![
            calls(vec![call("a", "echo", json!({"k": 1}))]),
            text("fine"),
        ]);
        let session = Session::create(dir.path()).unwrap();
        let path = session.path().to_path_buf();
        let mut c = conversation(&model, 25).with_session(session);
        c.send(
            "go",
            &host(),
            &mut Record::default(),
            &AtomicBool::new(false),
        );
        let (_, replayed) = Session::resume(dir.path(), None).unwrap();
        assert_eq!(replayed, c.messages());
        let log = std::fs::read_to_string(path).unwrap();
        let types: Vec<String> = log
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            types,
            ["start", "user", "assistant", "tool_result", "assistant"]
        );
    }

    #[test]
    fn compact_goes_on_from_the_summary_and_clear_from_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let model = Scripted::new(vec![text("first answer"), text("SUMMARY"), text("after")]);
        let mut c = conversation(&model, 25).with_new_session(dir.path().to_path_buf());
        let mut ui = Record::default();
        let cancel = AtomicBool::new(false);
        c.send("one", &host(), &mut ui, &cancel);
        assert_eq!(c.compact(&mut ui, &cancel), TurnEnd::Answered);
        // The summary request went without tools, after the conversation.
        let seen = model.seen.lock().unwrap()[1].clone();
        assert_eq!(seen.tools, json!([]));
        assert_eq!(seen.messages.len(), 3);
        assert_eq!(
            c.messages(),
            [
                Message::User {
                    text: COMPACT_REQUEST.into()
                },
                Message::Assistant {
                    text: "SUMMARY".into(),
                    tool_calls: vec![]
                }
            ]
        );
        c.send("two", &host(), &mut ui, &cancel);
        assert_eq!(model.seen.lock().unwrap()[2].messages.len(), 3);
        let (_, replayed) = Session::resume(dir.path(), None).unwrap();
        assert_eq!(replayed, c.messages());
        assert!(c.session_id().is_some());
        c.clear();
        assert!(c.messages().is_empty());
        assert_eq!(
            c.session_id(),
            None,
            "a new session is made at its first entry"
        );
    }

    #[test]
    fn context_modules_join_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("protocols.md"), "second\n").unwrap();
        std::fs::write(dir.path().join("architecture.md"), "first").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
        let (prompt, warnings) = system_prompt(Some(dir.path()));
        assert!(warnings.is_empty());
        assert!(prompt.starts_with(BUILT_IN_PROMPT));
        assert!(
            prompt.ends_with("\n\n---\n\nfirst\n\n---\n\nsecond"),
            "{prompt}"
        );
        let (prompt, _) = system_prompt(Some(&dir.path().join("missing")));
        assert_eq!(prompt, BUILT_IN_PROMPT);
    }

    #[test]
    fn short_forms() {
        let c = call("a", "bash", json!({"command": "ls -la\nwc", "n": 2}));
        assert_eq!(short_call(&c, 80), r#"bash(command: "ls -la\nwc", n: 2)"#);
        assert_eq!(short_call(&c, 10), "bash(comm…");
        let outcome = |e: Envelope| short_outcome(&CallOutcome::new(e, vec![]), 80);
        let ok = |result: Value| Envelope::Success {
            result,
            truncated: None,
        };
        assert_eq!(
            outcome(ok(json!({"output": "x", "exit_code": 0}))),
            (true, "exit code 0, 28 bytes".to_string())
        );
        assert_eq!(
            outcome(ok(
                json!({"error": "File not found: x", "error_code": "FILE_NOT_FOUND"})
            )),
            (false, "FILE_NOT_FOUND: File not found: x".to_string())
        );
        assert_eq!(
            outcome(Envelope::refused(
                Failure::Timeout,
                "Tool 'x' timed out after 30s"
            )),
            (
                false,
                "TOOL_TIMEOUT: Tool 'x' timed out after 30s".to_string()
            )
        );
    }
}
