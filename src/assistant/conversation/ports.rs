//! What the conversation needs of the world, as two traits: `ToolHost`
//! (the runtime: the tools array, calls, what a tool declares) and `Ui`
//! (the person: text as it streams, calls and their outcomes, notices). The
//! loop reaches tools and the person only through these, so it is tested
//! with a fake host and a scripted model, and the terminal, the headless
//! formats and the ACP agent are three implementations of `Ui`.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use serde_json::Value;

use super::super::model::{ToolCall, ToolFormat, Usage};
use super::subagent::SubagentStep;
use crate::host::call::CallOutcome;
use crate::host::child::Watch;

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
    /// A call the model asked for, before it is approved.
    fn tool_call(&mut self, call: &ToolCall);
    /// An approved call starts running (a refused one never does).
    fn tool_started(&mut self, _call: &ToolCall) {}
    fn tool_outcome(&mut self, call: &ToolCall, outcome: &CallOutcome);
    /// A piece of a running call's output, as the tool writes it.
    fn tool_output(&mut self, _call: &ToolCall, _output: &[u8]) {}
    /// An event a tool reported for the person (`config_required`).
    fn event(&mut self, event: &Value);
    fn notice(&mut self, text: &str);
    fn error(&mut self, text: &str);
    /// The tokens one request cost, when the provider said.
    fn usage(&mut self, _usage: &Usage) {}
    /// The conversation was compacted to fit its window (decision 62),
    /// from about `before` tokens to about `after`; the notice that says so
    /// comes too.
    fn compacted(&mut self, _before: u64, _after: u64) {}
    /// The model's plan changed (`update_plan`, decision 69): `{"plan":
    /// [{step, status}], "explanation"?}`.
    fn plan(&mut self, _plan: &Value) {}
    /// A step of the subagent that the `task` call `parent` runs
    /// (decision 86); its usage comes through `usage`, with the caller's.
    fn subagent(&mut self, _parent: &ToolCall, _step: &SubagentStep) {}
}
