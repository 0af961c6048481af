//! Running a reply's tool calls: each approved (`approval`), consecutive
//! read-only calls at once and every other call alone, in the model's order
//! (`schedule`, decision 24); a running call's output reaches the person as
//! the tool writes it; a call the sandbox refused may run again outside it
//! when the person says so; and each envelope, cut to what the model should
//! read (`for_model`, decision 25), is logged as the call ends. Under
//! OpenAI strict mode, optional parameters the model set to `null` are
//! dropped before the tool sees them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use serde_json::Value;

use super::super::approval::Verdict;
use super::super::for_model;
use super::super::model::{ToolCall, ToolResult};
use super::super::plan;
use super::super::schedule;
use super::super::session::Entry;
use super::{Conversation, ToolHost, Ui};
use crate::host::call::CallOutcome;
use crate::host::child::Watch;
use crate::host::envelope::{Envelope, Failure};
use crate::host::format::strict;
use crate::host::text::clip;

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
                ui.tool_started(call);
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
        // The plan shown; the files' new state noted for /undo.
        self.undo.after_call(&call.name, &call.arguments);
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
