//! Running a reply's tool calls: each approved (the rules, the PreToolUse
//! hooks, then the person: `hooked.rs`), consecutive
//! read-only calls at once and every other call alone, in the model's order
//! (`schedule`, decision 24); a running call's output reaches the person as
//! the tool writes it; a call the sandbox refused may run again outside it
//! when the person says so; and each envelope, cut to what the model should
//! read (`for_model`, decision 25), is logged as the call ends. Under
//! OpenAI strict mode, optional parameters the model set to `null` are
//! dropped before the tool sees them. A call that ran goes through the
//! PostToolUse hooks before its envelope is logged.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use serde_json::Value;

use super::super::for_model;
use super::super::model::{ToolCall, ToolResult};
use super::super::plan;
use super::super::schedule;
use super::super::session::Entry;
use super::subagent::{Gate, Launch, Report};
use super::{Conversation, ToolHost, TurnEnd, Ui};
use crate::host::call::CallOutcome;
use crate::host::child::Watch;
use crate::host::envelope::{Envelope, Failure};
use crate::host::format::strict;
use crate::host::text::clip;

/// What the threads of one round of calls tell the conversation's thread.
pub(super) enum Progress {
    /// A piece of a running call's output.
    Output(usize, Vec<u8>),
    Done(usize, Box<CallOutcome>),
    /// A subagent's step, usage or question (`subagent`).
    Sub(usize, Report),
}

impl Conversation {
    /// Runs `calls` in the order `schedule` gives (consecutive reads at
    /// once, anything else alone), each once approval lets it; shows each
    /// outcome as it ends, logs what the model will see of it, and returns
    /// the results in the order of the calls. A call with a `preset`
    /// envelope is not run: that envelope is its answer. Under `strict`
    /// (OpenAI strict mode), a strict tool's optional parameters that the
    /// model set to `null` are dropped before it runs.
    pub(super) fn run_calls(
        &mut self,
        calls: Vec<(ToolCall, Option<Envelope>)>,
        strict: bool,
        host: &dyn ToolHost,
        ui: &mut dyn Ui,
        cancel: &AtomicBool,
    ) -> Vec<ToolResult> {
        let (calls, preset): (Vec<ToolCall>, Vec<Option<Envelope>>) = calls.into_iter().unzip();
        let calls = &calls[..];
        let read_only: Vec<bool> = calls.iter().map(|c| host.read_only(&c.name)).collect();
        // What each call runs with: under strict mode, without the optional
        // parameters the model set to null.
        let mut arguments: Vec<Value> = calls
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
        host.session_dir(self.log.beside().as_deref());
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
                    self.approve(call, &mut arguments[index], read_only[index], cancel, ui)
                        .map(Envelope::denied)
                };
                match refusal {
                    Some(envelope) => {
                        let outcome = CallOutcome::new(envelope, vec![]);
                        let envelope =
                            self.finish_call(call, &arguments[index], outcome, false, ui);
                        envelopes[index] = Some(envelope);
                    }
                    None => {
                        // The files it may change, kept for /undo.
                        let beside = self.log.beside();
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
        // A `task` call runs a subagent on its thread instead of a tool; one
        // that cannot start is answered at once.
        let mut launches: Vec<Option<Launch>> = Vec::new();
        let mut running_indices = Vec::new();
        for &index in indices {
            if calls[index].name != crate::host::own::TASK {
                launches.push(None);
                running_indices.push(index);
                continue;
            }
            match self.launch(index, &calls[index], &arguments[index], host) {
                Ok(launch) => {
                    launches.push(Some(launch));
                    running_indices.push(index);
                }
                Err(envelope) => {
                    let outcome = CallOutcome::new(*envelope, vec![]);
                    envelopes[index] = Some(self.finish_call(
                        &calls[index],
                        &arguments[index],
                        outcome,
                        false,
                        ui,
                    ));
                }
            }
        }
        let launches = launches.into_iter().flatten();
        let mut launches: Vec<Launch> = launches.collect();
        let indices = &running_indices[..];
        if indices.is_empty() {
            return;
        }
        let gate = Gate::new(self.subagents_at_once());
        std::thread::scope(|scope| {
            let (tx, rx) = mpsc::channel();
            for &index in indices {
                let (call, arguments) = (&calls[index], &arguments[index]);
                ui.tool_started(call);
                let tx = tx.clone();
                let launch = (call.name == crate::host::own::TASK).then(|| launches.remove(0));
                let gate = &gate;
                scope.spawn(move || {
                    let outcome = match launch {
                        Some(launch) => launch.run(host, cancel, gate, tx.clone()),
                        None => {
                            let output = tx.clone();
                            let watch: Watch = Box::new(move |piece: &[u8]| {
                                let _ = output.send(Progress::Output(index, piece.to_vec()));
                            });
                            host.call_watched(&call.name, arguments, Some(cancel), watch)
                        }
                    };
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
                    Progress::Sub(index, report) => {
                        self.on_report(&calls[index], report, ui, cancel);
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
                envelopes[index] =
                    Some(self.finish_call(call, &arguments[index], outcome, true, ui));
                running -= 1;
                if running > 0 {
                    ui.waiting(&label);
                }
            }
        });
    }

    /// A call a custom command makes before its message is sent (a file
    /// it names, a command whose output it holds): approved, fenced and
    /// shown as the model's calls are, but not part of the conversation.
    pub fn call_for_command(
        &mut self,
        name: &str,
        arguments: Value,
        host: &dyn ToolHost,
        ui: &mut dyn Ui,
        cancel: &AtomicBool,
    ) -> CallOutcome {
        let call = ToolCall {
            id: format!("command-{name}"),
            name: name.to_string(),
            arguments,
            local_id: true,
            signature: None,
        };
        ui.tool_call(&call);
        self.approval.unsandboxed = host.unsandboxed();
        let read_only = host.read_only(name);
        // The rules, the PreToolUse hooks and the person, as for the
        // model's calls; what runs is what the hooks let through.
        let mut arguments = call.arguments.clone();
        let outcome = match self.approve(&call, &mut arguments, read_only, cancel, ui) {
            None => host.call(name, &arguments, Some(cancel)),
            Some(why) => CallOutcome::new(Envelope::denied(why), vec![]),
        };
        ui.tool_outcome(&call, &outcome);
        outcome
    }

    /// One message sent with allow rules that hold for it alone.
    pub fn send_allowing(
        &mut self,
        text: &str,
        allow: Vec<super::super::approval::Sourced>,
        host: &dyn ToolHost,
        ui: &mut dyn Ui,
        cancel: &AtomicBool,
    ) -> TurnEnd {
        let mark = self.approval.allow_for_now(allow);
        let end = self.send(text, host, ui, cancel);
        self.approval.end_for_now(mark);
        end
    }

    /// Shows how a call (run with `arguments`) ended, cuts its envelope to
    /// what the model sees (the whole outputs saved beside the session),
    /// hands a call that `ran` to the PostToolUse hooks and logs what the
    /// model will see.
    fn finish_call(
        &mut self,
        call: &ToolCall,
        arguments: &Value,
        outcome: CallOutcome,
        ran: bool,
        ui: &mut dyn Ui,
    ) -> Value {
        ui.tool_outcome(call, &outcome);
        // The plan shown; the files' new state noted for /undo.
        self.undo.after_call(&call.name, arguments);
        if let Some(plan) = plan::from_call(call, &outcome) {
            ui.plan(&plan);
            self.plan = Some(plan);
        }
        for event in &outcome.events {
            ui.event(event);
        }
        // Beside the session's log when there is one: `ID.jsonl`, `ID/`.
        let beside = self.log.beside();
        let outputs = &mut self.outputs;
        let mut envelope = for_model::envelope(
            &call.name,
            outcome.to_json(),
            self.model_output,
            &mut |what, text| outputs.save(beside.as_deref(), &call.id, what, text.as_bytes()),
        );
        if ran {
            self.after_call(call, arguments, &mut envelope, ui);
        }
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
}

/// The line of a failed sandboxed call's answer that shows the fence's
/// refusal, if one does: Landlock and the socket filter both fail with
/// EACCES, which tools print as "Permission denied" (our file tools answer
/// `PERMISSION_DENIED`). Any other failure (a test that fails, a grep that
/// finds nothing) would fail outside the sandbox too, and asking after each
/// would teach the person to say yes without reading.
pub(super) fn fence_refusal(outcome: &CallOutcome) -> Option<String> {
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

/// The answer to a tool call in a reply cut at the output limit: its
/// arguments may stop mid-way, so it is not run, and the model is told.
pub(super) fn cut_envelope(call: &ToolCall, limit_words: &str) -> Envelope {
    Envelope::invalid_params(
        &call.name,
        &format!(
            "the call was not run: your reply reached the output limit{limit_words} while it was \
             being written, so its arguments may be incomplete. Make the call again with \
             less in it (write a long file in parts)."
        ),
    )
}
