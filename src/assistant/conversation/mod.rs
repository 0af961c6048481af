//! The conversation loop. A turn is a few steps, each a method below:
//!
//! 1. the person's message joins the history (`send`), with a note when
//!    they interrupted the last reply (decision 64) or the environment the
//!    prompt states has changed (decision 60);
//! 2. the conversation is made to fit the model's window if it no longer
//!    does (`fit_window`, decision 62), and the model is asked (`ask`): a
//!    provider's context-overflow error compacts once and asks once more;
//! 3. the reply joins the history as a provider accepts it back
//!    (`keep_reply`): a reply cut at the output limit is shown as cut and
//!    none of its calls runs, a refusal is shown and kept out, arguments
//!    that are not an object are answered `INVALID_PARAMS` and go back as
//!    `{}`;
//! 4. its tool calls are approved and run (`calls.rs`: consecutive
//!    read-only calls at once, anything else alone, in the model's order),
//!    and their envelopes, cut to what the model should read, go back;
//!
//! and steps 2 to 4 repeat until the model answers with text, for at most
//! `--max-tool-rounds` rounds. The person's hooks run at these steps
//! (`hooked.rs`): when the message is sent, before and after each call,
//! when the model is done (which may send it back to work), around a
//! compaction and at the session's start and end. Every step is written to the session log as
//! it happens (`log.rs`). A provider error is shown and leaves the
//! conversation as it was, so the next message goes on.
//!
//! What the model is sent besides the history (the system prompt, the
//! window, compaction) lives in `super::context`; requests keep their
//! prefix byte for byte from one to the next so providers cache it
//! (decision 63). The loop reaches tools only through `ToolHost` and the
//! person only through `Ui` (`ports.rs`).

mod calls;
mod hooked;
mod log;
mod ports;
mod subagent;
mod summary;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use self::log::Log;
pub use self::ports::{ToolHost, Ui};
pub use self::subagent::{Agent, SubagentStep, Team, DEFAULT_MAX_SUBAGENTS, GENERAL};
pub use self::summary::{short_call, short_outcome};
use super::approval::Approval;
use super::context::compaction::{self, KEEP_TOOL_TOKENS, SUMMARY_REQUEST};
use super::context::environment::{self, Environment};
use super::context::window::{self, estimate, Window};
use super::context::Context;
use super::for_model::{Outputs, DEFAULT_MODEL_OUTPUT};
use super::hooks::Hooks;
use super::model::{
    arguments_problem, stream_cancellable, Message, ModelClient, ModelError, Reply, Request, Stop,
    ToolCall, ToolFormat, ToolResult,
};
use super::plan;
use super::session::{Entry, Session};
use super::undo::{self, Undo};
use crate::host::envelope::{Envelope, Failure};

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
    /// A hook blocked the message or stopped the turn.
    Blocked,
}

/// The last request the provider counted: its input tokens and the bytes
/// of its system prompt, tools and messages, so later requests are
/// estimated at the same rate of tokens per byte.
#[derive(Clone, Copy, Debug)]
struct Measure {
    tokens: u64,
    bytes: usize,
}

pub struct Conversation {
    client: Result<Arc<dyn ModelClient>, String>,
    context: Context,
    /// What the model has been told of its environment: the prompt's block,
    /// then every note since.
    told: Environment,
    /// The environment now, less the date and the model (read at each
    /// message).
    current: Environment,
    /// `context_window` and `auto_compact` from the config file.
    window_setting: (Option<u64>, Option<f64>),
    messages: Vec<Message>,
    /// The person's latest message as they wrote it, which a summary keeps
    /// verbatim.
    latest: Option<String>,
    max_tool_rounds: usize,
    log: Log,
    /// Tools already said to be left out of the provider's array.
    told_left_out: Vec<String>,
    /// Who says whether a call may run (by default, every call runs).
    approval: Approval,
    /// The most bytes of each output the model sees (`--model-output`).
    model_output: usize,
    /// Where the whole of a cut or pruned output is saved.
    outputs: Outputs,
    /// One message only (`-p`): no "send another message" advice.
    one_shot: bool,
    measured: Option<Measure>,
    /// The person interrupted the model's last reply: Some(true) when it had
    /// written something, which stays in the history.
    interrupted: Option<bool>,
    /// The key that routes this session's requests to one cache, until the
    /// session's own id exists.
    cache_key: String,
    /// The files kept for `/undo` (decision 70).
    undo: Undo,
    /// The model's plan (decision 69), which a summary keeps.
    plan: Option<Value>,
    /// What the model is to be told with the next message (an undo, a
    /// SessionStart hook's context).
    notes: Vec<String>,
    /// The person's hooks (decision 83).
    hooks: Arc<Hooks>,
    /// A subagent's conversation: SubagentStop fires where Stop would.
    subagent: bool,
    /// How many times in a row Stop hooks have sent the model back.
    stop_rounds: usize,
    /// A hook said `continue: false` during the calls: the turn ends.
    halted: Option<String>,
    /// Who `task` may start (decision 86); None in a subagent, as
    /// subagents do not nest.
    team: Option<Team>,
    /// The only tools this conversation offers and may call (a subagent's
    /// agent narrows them); None: every tool the host has.
    only_tools: Option<Vec<String>>,
    /// The last reply stopped at the output limit.
    cut: bool,
    /// How the model's last reply of the last message ended (None before
    /// the first reply), for a front end that names why a turn stopped.
    last_stop: Option<Stop>,
}

impl Conversation {
    pub fn new(
        client: Result<Arc<dyn ModelClient>, String>,
        context: Context,
        max_tool_rounds: usize,
    ) -> Self {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Conversation {
            client,
            told: context.environment.clone(),
            current: context.current.clone(),
            context,
            window_setting: (None, None),
            messages: Vec::new(),
            latest: None,
            max_tool_rounds,
            log: Log::Off,
            told_left_out: Vec::new(),
            approval: Approval::run_all(),
            model_output: DEFAULT_MODEL_OUTPUT,
            outputs: Outputs::default(),
            one_shot: false,
            measured: None,
            interrupted: None,
            cache_key: format!("ikigai-{}-{}", std::process::id(), now.as_nanos()),
            undo: Undo::default(),
            plan: None,
            notes: Vec::new(),
            hooks: Arc::new(Hooks::none()),
            subagent: false,
            stop_rounds: 0,
            halted: None,
            team: Some(Team::default()),
            only_tools: None,
            cut: false,
            last_stop: None,
        }
    }

    /// Runs `hooks` at the conversation's steps.
    pub fn with_hooks(mut self, hooks: Arc<Hooks>) -> Self {
        self.hooks = hooks;
        self
    }

    /// A subagent's conversation: its end fires SubagentStop, not Stop (its
    /// caller owns the session's start and end). The entry point for the
    /// subagents' own conversations.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn as_subagent(mut self) -> Self {
        self.subagent = true;
        self
    }

    /// The hooks it runs (`/hooks`; a subagent's conversation shares them).
    pub fn hooks(&self) -> &Arc<Hooks> {
        &self.hooks
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

    /// Config's `context_window` and `auto_compact` (decision 62).
    pub fn with_window(mut self, tokens: Option<u64>, auto_compact: Option<f64>) -> Self {
        self.window_setting = (tokens, auto_compact);
        self
    }

    /// Continues from `messages` (a resumed session).
    pub fn with_history(mut self, messages: Vec<Message>) -> Self {
        self.plan = plan::latest(&messages);
        self.messages = messages;
        self
    }

    /// Logs to a new session in `dir`, made when there is something to log.
    pub fn with_new_session(mut self, dir: std::path::PathBuf) -> Self {
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

    pub fn context(&self) -> &Context {
        &self.context
    }

    /// One message only (`-p`): texts say nothing of a next message.
    pub fn one_shot(mut self) -> Self {
        self.one_shot = true;
        self
    }

    /// `/clear`: a new conversation, logged to a new session; the hooks
    /// see the one session end and the next start.
    pub fn clear(&mut self, ui: &mut dyn Ui) {
        self.end("clear", ui);
        self.messages.clear();
        self.told_left_out.clear();
        self.latest = None;
        self.measured = None;
        self.interrupted = None;
        // The new conversation has no plan and nothing to be told; the
        // files kept for /undo stay (they are files).
        self.plan = None;
        self.notes.clear();
        self.log = self.log.next_session();
        self.start("clear", ui);
    }

    /// `/model`: the conversation goes on with another model (and the
    /// model is told so with the next message).
    pub fn set_client(&mut self, client: Arc<dyn ModelClient>) {
        self.client = Ok(client);
        self.told_left_out.clear();
        self.measured = None;
    }

    /// `/resume`: continues `session` and its `history` from here on.
    pub fn switch_session(&mut self, session: Session, history: Vec<Message>) {
        self.plan = plan::latest(&history);
        self.messages = history;
        self.measured = None;
        self.log = Log::Open {
            session,
            started: false,
        };
    }

    /// The model's current plan, if it keeps one (decision 69).
    pub fn plan(&self) -> Option<&Value> {
        self.plan.as_ref()
    }

    /// `/undo`, asking `ask` about each file changed since; the model is
    /// told with the next message (decision 70). None: nothing to undo.
    pub fn undo(&mut self, ask: &mut dyn FnMut(&std::path::Path) -> bool) -> Option<undo::Report> {
        let report = self.undo.undo(ask)?;
        self.notes.push(report.for_model());
        Some(report)
    }

    /// How the last reply of the last message ended: cut at the output
    /// limit, refused, or complete (None when no reply came).
    pub fn last_stop(&self) -> Option<&Stop> {
        self.last_stop.as_ref()
    }

    /// The session's id, once its file exists.
    pub fn session_id(&self) -> Option<&str> {
        self.log.session_id()
    }

    pub fn client(&self) -> Option<&Arc<dyn ModelClient>> {
        self.client.as_ref().ok()
    }

    /// The window of the current model.
    pub fn window(&self) -> Window {
        let model = self.client.as_ref().map(|c| c.model()).unwrap_or("");
        Window::of(model, self.window_setting.0, self.window_setting.1)
    }

    /// Tokens the next request would hold, and whether that figure rests
    /// on the provider's own count.
    pub fn tokens_in_use(&self, host: &dyn ToolHost) -> (u64, bool) {
        let tools = self
            .client
            .as_ref()
            .map(|c| host.tools_array(c.tool_format()))
            .unwrap_or(Value::Null);
        (self.tokens(&tools), self.measured.is_some())
    }

    /// One message from the person, to completion.
    pub fn send(
        &mut self,
        text: &str,
        host: &dyn ToolHost,
        ui: &mut dyn Ui,
        cancel: &AtomicBool,
    ) -> TurnEnd {
        let Some(client) = self.model(ui) else {
            return TurnEnd::NotConfigured;
        };
        let text = match self.prompt_hooks(text, ui) {
            Ok(text) => text,
            Err(why) => return self.blocked(&format!("Your message was not sent: {why}"), ui),
        };
        self.latest = Some(text.to_string());
        self.last_stop = None;
        self.undo.next_message();
        let text = self.with_notes(&text, &*client);
        self.push(Message::User { text }, ui);
        let tools = self.offer_tools(&*client, host, ui);
        let mut rounds = 0;
        self.stop_rounds = 0;
        loop {
            let reply = match self.ask(&client, &tools, ui, cancel) {
                Ok(reply) => reply,
                Err(end) => return end,
            };
            let calls = match self.keep_reply(&*client, reply, ui) {
                Ok(calls) if calls.is_empty() => match self.stop_hooks(ui) {
                    // A Stop hook sends the model back with its words.
                    Some(text) => {
                        self.push(Message::User { text }, ui);
                        continue;
                    }
                    None => return TurnEnd::Answered,
                },
                Ok(calls) => calls,
                Err(end) => return end,
            };
            if rounds == self.max_tool_rounds {
                return self.stop_at_round_limit(&calls, ui);
            }
            let strict = matches!(
                client.tool_format(),
                ToolFormat::OpenAiChat | ToolFormat::OpenAiResponses
            );
            let results = self.run_calls(calls, strict, host, ui, cancel);
            self.messages.push(Message::Tool { results });
            if cancel.load(Ordering::SeqCst) {
                let text = "Cancelled by you: the running tools were stopped; the model is told, \
                            with the output they had written."
                    .to_string();
                ui.notice(&text);
                self.log(Entry::Notice { text }, ui);
                return TurnEnd::Cancelled;
            }
            if let Some(why) = self.halted.take() {
                return self.blocked(&format!("A hook stopped the turn: {why}"), ui);
            }
            rounds += 1;
        }
    }

    /// A hook blocked the message or stopped the turn: the person is told.
    fn blocked(&mut self, text: &str, ui: &mut dyn Ui) -> TurnEnd {
        ui.error(text);
        self.log(
            Entry::Notice {
                text: text.to_string(),
            },
            ui,
        );
        TurnEnd::Blocked
    }

    /// The client, or None (said to the person) when no model is set.
    fn model(&self, ui: &mut dyn Ui) -> Option<Arc<dyn ModelClient>> {
        match &self.client {
            Ok(client) => Some(Arc::clone(client)),
            Err(why) => {
                ui.error(why);
                None
            }
        }
    }

    /// `text` after what the model must hear first: that the person
    /// interrupted its last reply (decision 64), and what changed in the
    /// environment the prompt states (decision 60).
    fn with_notes(&mut self, text: &str, client: &dyn ModelClient) -> String {
        let mut notes = Vec::new();
        match self.interrupted.take() {
            Some(true) => notes.push(
                "[I interrupted your previous reply while you were writing it: it ends where I \
                 stopped it.]"
                    .to_string(),
            ),
            Some(false) => notes
                .push("[I interrupted you before you replied to my previous message.]".to_string()),
            None => {}
        }
        if !self.told.cwd.is_empty() {
            let now = Environment {
                date: environment::today(),
                model: format!("{} {}", client.provider(), client.model()),
                ..self.current.clone()
            };
            if let Some(note) = self.told.changes(&now) {
                notes.push(note);
                self.told = now;
            }
        }
        let text = undo::with_notes(std::mem::take(&mut self.notes), text);
        if notes.is_empty() {
            text
        } else {
            format!("{}\n\n{text}", notes.join("\n"))
        }
    }

    /// The tools array for this client; the person is told, once, of tools
    /// it cannot offer.
    fn offer_tools(
        &mut self,
        client: &dyn ModelClient,
        host: &dyn ToolHost,
        ui: &mut dyn Ui,
    ) -> Value {
        if !host.ready() {
            ui.waiting("waiting for tool discovery");
        }
        let tools = self.narrowed(host.tools_array(client.tool_format()));
        let fresh: Vec<String> = host
            .left_out(client.tool_format())
            .into_iter()
            .filter(|n| !self.told_left_out.contains(n))
            .collect();
        if !fresh.is_empty() {
            ui.notice(&crate::host::format::left_out_notice(&fresh));
            self.told_left_out.extend(fresh);
        }
        tools
    }

    /// The next request: the same system prompt and tools every time, and
    /// the history as it stands.
    fn request(&self, tools: &Value) -> Request {
        Request {
            system: self.context.system().to_string(),
            messages: self.messages.clone(),
            tools: tools.clone(),
            cache_key: Some(
                self.session_id()
                    .map_or_else(|| self.cache_key.clone(), str::to_string),
            ),
        }
    }

    /// Asks the model, once the conversation fits its window. A request the
    /// provider says did not fit is compacted and asked once more. What the
    /// person saw of a reply that failed stays in the history.
    fn ask(
        &mut self,
        client: &Arc<dyn ModelClient>,
        tools: &Value,
        ui: &mut dyn Ui,
        cancel: &AtomicBool,
    ) -> Result<Reply, TurnEnd> {
        self.fit_window(client, tools, ui, cancel);
        let mut retried = false;
        loop {
            ui.waiting("thinking");
            let request = self.request(tools);
            let bytes = size(&request.system, &request.tools, &request.messages);
            let mut partial = String::new();
            let shared = RefCell::new(&mut *ui);
            let result = stream_cancellable(
                client,
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
            match result {
                Ok(reply) => {
                    if let Some(usage) = &reply.usage {
                        ui.usage(usage);
                        if usage.input_tokens > 0 {
                            self.measured = Some(Measure {
                                tokens: usage.input_tokens,
                                bytes,
                            });
                        }
                    }
                    return Ok(reply);
                }
                Err(error) if !retried && partial.is_empty() && window::is_overflow(&error) => {
                    retried = true;
                    ui.notice(&format!(
                        "The request did not fit {}'s context window ({error}); compacting and \
                         sending it once more.",
                        client.model()
                    ));
                    let before = self.tokens(tools).max(self.window().tokens);
                    self.compact(client, tools, ui, cancel, before);
                }
                Err(error) => {
                    if error == ModelError::Cancelled {
                        self.interrupted = Some(!partial.is_empty());
                    }
                    if !partial.is_empty() {
                        self.push(
                            Message::Assistant {
                                text: partial,
                                tool_calls: vec![],
                            },
                            ui,
                        );
                    }
                    return Err(self.failed(&**client, error, ui));
                }
            }
        }
    }

    /// The tokens the next request would hold: the bytes of its system
    /// prompt, tools and messages at the rate the provider last counted,
    /// else at four bytes a token.
    fn tokens(&self, tools: &Value) -> u64 {
        let bytes = size(self.context.system(), tools, &self.messages);
        match self.measured {
            Some(m) if m.bytes > 0 => (bytes as f64 * m.tokens as f64 / m.bytes as f64) as u64,
            _ => estimate(bytes),
        }
    }

    /// Compacts before the next request when it would reach the window's
    /// threshold (decision 62).
    fn fit_window(
        &mut self,
        client: &Arc<dyn ModelClient>,
        tools: &Value,
        ui: &mut dyn Ui,
        cancel: &AtomicBool,
    ) {
        let Some(threshold) = self.window().threshold() else {
            return;
        };
        let before = self.tokens(tools);
        // A conversation of one message has nothing to compact: the provider
        // says whether it fits.
        if before >= threshold && self.messages.len() > 1 {
            self.compact(client, tools, ui, cancel, before);
        }
    }

    /// Prunes old tool outputs, then, when that freed too little or the
    /// conversation still does not fit, has the model summarise it. The
    /// person sees one line with the tokens before and after.
    fn compact(
        &mut self,
        client: &Arc<dyn ModelClient>,
        tools: &Value,
        ui: &mut dyn Ui,
        cancel: &AtomicBool,
        before: u64,
    ) {
        self.before_compacting("auto", ui);
        let window = self.window();
        // A window smaller than the usual share of tool output keeps a
        // quarter of itself (decision 55).
        let keep = KEEP_TOOL_TOKENS.min(window.tokens / 4);
        let freed = self.prune(keep, ui);
        let still = self.tokens(tools);
        let fits = window.threshold().is_none_or(|t| still < t);
        let how = if freed >= window.enough_freed() && fits {
            "old tool outputs pruned"
        } else if self.summarise(client, ui, cancel, before, true) {
            "summarised"
        } else if freed > 0 {
            "old tool outputs pruned; the summary failed"
        } else {
            return;
        };
        let after = self.tokens(tools);
        ui.compacted(before, after);
        let text = format!(
            "Context compacted ({how}): about {} → {} tokens of {}.",
            super::cost::count(before),
            super::cost::count(after),
            super::cost::count(window.tokens)
        );
        ui.notice(&text);
        self.log(Entry::Notice { text }, ui);
    }

    /// Replaces the outputs of calls older than the newest `keep` tokens of
    /// tool output with stubs, the whole of each saved beside the session;
    /// returns about how many tokens that freed.
    fn prune(&mut self, keep: u64, ui: &mut dyn Ui) -> u64 {
        let beside = self.log.beside();
        let outputs = &mut self.outputs;
        let pruned = compaction::prune(&mut self.messages, keep, &mut |result| {
            outputs
                .save(
                    beside.as_deref(),
                    &result.call_id,
                    "envelope.json",
                    result.envelope.to_string().as_bytes(),
                )
                .map(|path| path.display().to_string())
                .map_err(|e| e.to_string())
        });
        let freed = pruned.iter().map(|p| p.freed).sum();
        for p in pruned {
            self.log(
                Entry::Pruned {
                    call_id: p.call_id,
                    envelope: p.stub,
                },
                ui,
            );
        }
        freed
    }

    /// Asks the model for a summary, which with the plan and the person's
    /// latest message becomes the history; false, said to the person, when
    /// no summary came (the history stays as it was, and the session file
    /// keeps everything either way).
    fn summarise(
        &mut self,
        client: &Arc<dyn ModelClient>,
        ui: &mut dyn Ui,
        cancel: &AtomicBool,
        before: u64,
        must_shrink: bool,
    ) -> bool {
        // The request itself must fit: the oldest exchanges give way.
        let budget = self.window().tokens * 3 / 5;
        let mut messages = compaction::fit(&self.messages, budget).to_vec();
        messages.push(Message::User {
            text: SUMMARY_REQUEST.to_string(),
        });
        let request = Request {
            messages,
            // No tools: the answer must be the summary itself.
            tools: json!([]),
            ..self.request(&json!([]))
        };
        ui.waiting("summarising the conversation");
        let result = stream_cancellable(
            client,
            request,
            &mut |_| {},
            &mut |notice| ui.notice(notice),
            cancel,
        );
        ui.end_text();
        let summary = match result {
            Ok(reply) if !reply.text.trim().is_empty() => {
                if let Some(usage) = &reply.usage {
                    ui.usage(usage);
                }
                reply.text
            }
            Ok(_) => {
                ui.error("Compacting: the model's summary was empty; the conversation goes on as it was.");
                return false;
            }
            Err(e) => {
                ui.error(&format!(
                    "Compacting: the summary request failed ({e}); the conversation goes on as it \
                     was, and the session file keeps all of it."
                ));
                return false;
            }
        };
        let plan = self.plan.as_ref().map(plan::as_text);
        let text = compaction::summarised(&summary, plan.as_deref(), self.latest.as_deref());
        let history = vec![Message::User { text }];
        // Compacting on its own, a summary that is not smaller (the person's
        // latest message, kept verbatim, is most of it) would only lose the
        // turn's work; `/compact` asked for it whatever its size.
        if must_shrink
            && compaction::estimate_messages(&history)
                >= compaction::estimate_messages(&self.messages)
        {
            ui.error(
                "Compacting: the summary with your latest message is no smaller than the \
                 conversation; the conversation goes on as it was.",
            );
            return false;
        }
        self.messages = history;
        let after = self.tokens(&json!([]));
        self.log(
            Entry::Compacted {
                history: self.messages.clone(),
                tokens_before: before,
                tokens_after: after,
            },
            ui,
        );
        // The history starts again from the summary.
        self.start("compact", ui);
        true
    }

    /// `/compact`: summarises the conversation now, whatever its size.
    pub fn compact_now(
        &mut self,
        host: &dyn ToolHost,
        ui: &mut dyn Ui,
        cancel: &AtomicBool,
    ) -> TurnEnd {
        let Some(client) = self.model(ui) else {
            return TurnEnd::NotConfigured;
        };
        if self.messages.is_empty() {
            ui.notice("Nothing to compact yet.");
            return TurnEnd::Answered;
        }
        self.before_compacting("manual", ui);
        let tools = host.tools_array(client.tool_format());
        let before = self.tokens(&tools);
        if !self.summarise(&client, ui, cancel, before, false) {
            return if cancel.load(Ordering::SeqCst) {
                TurnEnd::Cancelled
            } else {
                TurnEnd::Failed
            };
        }
        let after = self.tokens(&tools);
        ui.compacted(before, after);
        let text = format!(
            "Compacted into a summary: about {} → {} tokens; the conversation goes on from it.",
            super::cost::count(before),
            super::cost::count(after)
        );
        ui.notice(&text);
        self.log(Entry::Notice { text }, ui);
        TurnEnd::Answered
    }

    /// Takes the reply into the history as a provider accepts it back, and
    /// returns its calls, each with the answer it gets instead of running
    /// (a cut reply's calls, arguments that are not an object); Err ends
    /// the turn (a refusal, an empty reply).
    #[allow(clippy::type_complexity)]
    fn keep_reply(
        &mut self,
        client: &dyn ModelClient,
        reply: Reply,
        ui: &mut dyn Ui,
    ) -> Result<Vec<(ToolCall, Option<Envelope>)>, TurnEnd> {
        let cut = reply.stop == Stop::Cut;
        self.cut = cut;
        self.last_stop = Some(reply.stop.clone());
        match &reply.stop {
            Stop::Refused(why) => return Err(self.refused(client, why, ui)),
            Stop::Cut if reply.text.is_empty() && reply.tool_calls.is_empty() => {
                let error = ModelError::Reported(format!(
                    "the reply reached the output limit{} before it said anything",
                    limit_words(client)
                ));
                return Err(self.failed(client, error, ui));
            }
            _ if reply.text.is_empty() && reply.tool_calls.is_empty() => {
                return Err(self.failed(client, ModelError::Empty, ui));
            }
            Stop::Cut => {
                let text = format!(
                    "[cut: the reply reached the output limit{}; --max-output-tokens raises it]",
                    limit_words(client)
                );
                ui.notice(&text);
                self.log(Entry::Notice { text }, ui);
            }
            _ => {}
        }
        let Reply {
            text, tool_calls, ..
        } = reply;
        let calls: Vec<(ToolCall, Option<Envelope>)> = tool_calls
            .into_iter()
            .map(|c| {
                let preset = if cut {
                    Some(calls::cut_envelope(&c, &limit_words(client)))
                } else {
                    arguments_problem(&c.arguments)
                        .map(|what| Envelope::invalid_params(&c.name, &what))
                        .or_else(|| self.not_offered(&c.name))
                };
                (c, preset)
            })
            .collect();
        // The history holds what a provider accepts back: `{}` for
        // arguments that were not an object.
        let history = calls
            .iter()
            .map(|(c, _)| ToolCall {
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
        Ok(calls)
    }

    /// The model asked for tools after the last round allowed: every call
    /// is answered that it did not run, and the turn ends.
    fn stop_at_round_limit(
        &mut self,
        calls: &[(ToolCall, Option<Envelope>)],
        ui: &mut dyn Ui,
    ) -> TurnEnd {
        let limit = self.max_tool_rounds;
        let results: Vec<ToolResult> = calls
            .iter()
            .map(|(c, _)| ToolResult {
                call_id: c.id.clone(),
                name: c.name.clone(),
                envelope: Envelope::refused(
                    Failure::RoundLimit,
                    format!("Tool '{}' was not run: the limit of {limit} tool rounds for one message was reached", c.name),
                )
                .to_json(),
            })
            .collect();
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
        TurnEnd::RoundLimit
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
}

/// The bytes of a request's system prompt, tools and messages: what the
/// provider's token counts are measured against (`Conversation::tokens`).
fn size(system: &str, tools: &Value, messages: &[Message]) -> usize {
    system.len() + tools.to_string().len() + serde_json::to_string(messages).map_or(0, |t| t.len())
}

/// " of N tokens" when the client knows its limit.
fn limit_words(client: &dyn ModelClient) -> String {
    client
        .max_output_tokens()
        .map(|n| format!(" of {n} tokens"))
        .unwrap_or_default()
}
