//! Subagents (decision 86; docs/decisions.md 125-127): a `task` call runs
//! one more `Conversation` in the same host, on a thread of the caller's
//! round of calls, with a fresh context (the built-in guidance, the
//! environment block and AGENTS.md as the caller's prompt has them, then
//! the agent's own instructions) and the task's prompt as its one message.
//! It uses the caller's provider, host (so the same sandbox and limits),
//! and the caller's `Approval` through a `Judge` that asks the caller's
//! thread, so rules, `a` answers and questions are shared and one question
//! is asked at a time. What it does reaches the caller as `Report`s on the
//! round's channel: its steps (for the terminal and `stream-json`), its
//! usage (for `/cost`, the status line and `result.usage`), its questions.
//! The caller gets its final answer with its usage, number of tool calls
//! and duration, never its transcript, which its own session file keeps,
//! beside the caller's (`ID/subagents/`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::super::approval::{Approval, Judge, Ruled, Verdict};
use super::super::context::{prompt, Context};
use super::super::hooks::Hooks;
use super::super::model::{Message, ModelClient, ToolCall, Usage};
use super::calls::Progress;
use super::{Conversation, ToolHost, TurnEnd, Ui};
use crate::host::call::CallOutcome;
use crate::host::envelope::{Envelope, Failure};
use crate::host::own::TASK;

/// How many subagents of one reply run at once unless `max_subagents`
/// says otherwise.
pub const DEFAULT_MAX_SUBAGENTS: usize = 4;

/// The name of the agent a `task` call without `agent` gets.
pub const GENERAL: &str = "general";

/// What every subagent is told after the caller's prompt and before its
/// agent's own instructions: who reads its answer, and how it ends.
const ROLE: &str = "You are a subagent: another assistant gave you the task in the next message \
and will read only your final answer, never your tool calls or what they returned. Work until the \
task is done, then answer once without calling a tool. Put in that answer everything the caller \
needs (conclusions, with the paths and line numbers they rest on) and nothing it does not: it \
cannot ask you a follow-up question.";

/// An agent a `task` call may name: from a Markdown file
/// (`custom::agents`), or the general one.
#[derive(Clone, Debug, PartialEq)]
pub struct Agent {
    pub name: String,
    pub description: String,
    /// Its instructions, after the caller's prompt.
    pub instructions: String,
    /// The tools it may call, by our names; None: every tool but `task`.
    pub tools: Option<Vec<String>>,
    /// Another model of the caller's provider; None: the caller's.
    pub model: Option<String>,
    /// Where it was read from, for `/agents`.
    pub from: String,
    /// Why its file cannot be used (a bad `tools` list): a call that names
    /// it gets this, the others run.
    pub problem: Option<String>,
}

impl Agent {
    /// The agent of a `task` call without `agent`: every tool but `task`.
    pub fn general() -> Agent {
        Agent {
            name: GENERAL.into(),
            description: "Any task, with every tool but task".into(),
            instructions: String::new(),
            tools: None,
            model: None,
            from: "built in".into(),
            problem: None,
        }
    }
}

/// Makes a client for another model of the caller's provider; Err says
/// why there is none.
pub type ModelMaker = dyn Fn(&str) -> Result<Arc<dyn ModelClient>, String> + Send + Sync;

/// What a conversation needs to start subagents: at most `max` of one
/// reply at once, the agents `task` may name, and how to reach another
/// model of the same provider (`model`).
#[derive(Clone)]
pub struct Team {
    pub max: usize,
    pub agents: Vec<Agent>,
    /// A client for another model of the caller's provider, for an agent
    /// whose file names one; Err says why there is none.
    pub model: Arc<ModelMaker>,
}

impl Default for Team {
    fn default() -> Team {
        Team {
            max: DEFAULT_MAX_SUBAGENTS,
            agents: Vec::new(),
            model: Arc::new(|name| {
                Err(format!(
                    "no model other than the caller's can be chosen here ('{name}')"
                ))
            }),
        }
    }
}

impl Team {
    /// The agent called `name`, the general one without a name.
    fn agent(&self, name: Option<&str>) -> Result<Agent, String> {
        let Some(name) = name else {
            return Ok(self
                .agents
                .iter()
                .find(|a| a.name == GENERAL)
                .cloned()
                .unwrap_or_else(Agent::general));
        };
        if let Some(agent) = self.agents.iter().find(|a| a.name == name) {
            return match &agent.problem {
                Some(problem) => Err(format!("the agent '{name}' cannot run: {problem}")),
                None => Ok(agent.clone()),
            };
        }
        if name == GENERAL {
            return Ok(Agent::general());
        }
        let mut known: Vec<&str> = self.agents.iter().map(|a| a.name.as_str()).collect();
        if !known.contains(&GENERAL) {
            known.insert(0, GENERAL);
        }
        Err(format!(
            "no agent named '{name}'; the agents are: {}",
            known.join(", ")
        ))
    }
}

/// What a subagent tells its caller's thread.
pub(super) enum Report {
    Step(SubagentStep),
    /// The tokens one of its requests cost.
    Usage(Usage),
    /// A call of its that the caller's rules must judge; what they say
    /// goes back.
    Rules {
        tool: String,
        arguments: Value,
        read_only: bool,
        ruled: Sender<Ruled>,
    },
    /// A call of its that the caller's person must be asked about; the
    /// verdict goes back.
    Question {
        tool: String,
        arguments: Value,
        verdict: Sender<Verdict>,
    },
    /// A call of its failed in the sandbox: may it run again outside?
    Rerun {
        tool: String,
        why: String,
        answer: Sender<bool>,
    },
}

/// A step of a running subagent, as the caller's `Ui` shows it
/// (`Ui::subagent`).
#[derive(Clone, Debug, PartialEq)]
pub enum SubagentStep {
    /// It started (after waiting for a place among `max_subagents`).
    Started {
        agent: String,
    },
    /// One whole reply's text.
    Text(String),
    ToolStarted(ToolCall),
    /// A call of its ended, with the envelope the tool gave.
    ToolFinished {
        call: ToolCall,
        envelope: Value,
    },
    /// A notice or an error it said.
    Notice(String),
    Error(String),
    /// It asks the person something (through the caller's approval).
    Asking,
    /// It ended: `ok` and, when not, the error code of the caller's result.
    Ended {
        ok: bool,
        code: Option<String>,
    },
}

/// A subagent ready to run on a thread of the caller's round: everything
/// taken from the caller's conversation before the round starts.
pub(super) struct Launch {
    index: usize,
    description: String,
    prompt: String,
    agent: Agent,
    client: Arc<dyn ModelClient>,
    context: Context,
    max_tool_rounds: usize,
    model_output: usize,
    window: (Option<u64>, Option<f64>),
    /// Where its session file goes (`ID/subagents/` beside the caller's).
    log_dir: Option<std::path::PathBuf>,
    /// The caller's hooks: a subagent runs them too, and its end fires
    /// SubagentStop where the caller's would fire Stop.
    hooks: Arc<Hooks>,
}

/// At most `max` subagents of one round at once; the others wait here.
pub(super) struct Gate {
    free: Mutex<usize>,
    opened: Condvar,
}

impl Gate {
    pub(super) fn new(max: usize) -> Gate {
        Gate {
            free: Mutex::new(max.max(1)),
            opened: Condvar::new(),
        }
    }

    /// Waits for a place; false when `cancel` was set first.
    fn enter(&self, cancel: &AtomicBool) -> bool {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if cancel.load(Ordering::SeqCst) {
                return false;
            }
            if *free > 0 {
                *free -= 1;
                return true;
            }
            free = self
                .opened
                .wait_timeout(free, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn leave(&self) {
        *self.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.opened.notify_one();
    }
}

impl Conversation {
    /// Subagents may be started here (a subagent's own conversation has no
    /// team: subagents do not nest).
    pub fn with_team(mut self, team: Team) -> Self {
        self.team = Some(team);
        self
    }

    /// The team, for `/agents`.
    pub fn team(&self) -> Option<&Team> {
        self.team.as_ref()
    }

    /// How many subagents of one reply run at once.
    pub(super) fn subagents_at_once(&self) -> usize {
        self.team.as_ref().map_or(1, |t| t.max)
    }

    /// The answer a call gets instead of running because this conversation
    /// may not make it: a tool its agent was not given, or `task` inside a
    /// subagent. None: it may run.
    pub(super) fn not_offered(&self, name: &str) -> Option<Envelope> {
        if name == TASK && self.team.is_none() {
            return Some(Envelope::refused(
                Failure::Tool("INVALID_ARG".into()),
                "task was not run: a subagent cannot start subagents of its own (they do not \
                 nest); do the work with your other tools and answer",
            ));
        }
        let only = self.only_tools.as_ref()?;
        (!only.iter().any(|t| t == name)).then(|| {
            Envelope::refused(
                Failure::NotFound,
                format!(
                    "Tool '{name}' is not one this agent may use; its tools are: {}",
                    only.join(", ")
                ),
            )
        })
    }

    /// The tools array this conversation offers: the host's, less `task`
    /// in a subagent, and only its agent's tools when it names them.
    pub(super) fn narrowed(&self, tools: Value) -> Value {
        if self.team.is_some() && self.only_tools.is_none() {
            return tools;
        }
        crate::host::format::keep_only(&tools, &|name| self.not_offered(name).is_none())
    }

    /// The subagent a `task` call asks for, ready to run, or the answer it
    /// gets at once (bad arguments, an unknown agent or one that cannot
    /// run, no model for it).
    pub(super) fn launch(
        &self,
        index: usize,
        call: &ToolCall,
        arguments: &Value,
        host: &dyn ToolHost,
    ) -> Result<Launch, Box<Envelope>> {
        if let Some(refusal) = self.not_offered(TASK) {
            return Err(Box::new(refusal));
        }
        let team = self.team.as_ref().expect("checked by not_offered");
        let schema = json!({"name": TASK, "parameters": host.parameters(TASK).unwrap_or_else(
            || crate::host::own::entries().into_iter().find(|e| e.name == TASK)
                .map(|e| e.schema["parameters"].clone()).unwrap_or(Value::Null))});
        let args =
            super::super::own_tools::checked(&call.name, &schema, arguments).map_err(|e| *e)?;
        let text = |key: &str| args[key].as_str().unwrap_or("").trim().to_string();
        let (description, prompt) = (text("description"), text("prompt"));
        let invalid =
            |why: String| Box::new(Envelope::refused(Failure::Tool("INVALID_ARG".into()), why));
        if prompt.is_empty() {
            return Err(invalid(
                "task: prompt is empty; say the whole task the subagent is to do".into(),
            ));
        }
        let agent = team
            .agent(args["agent"].as_str())
            .map_err(|why| invalid(format!("task: {why}")))?;
        let client = match (&agent.model, &self.client) {
            (_, Err(why)) => return Err(invalid(format!("task: {why}"))),
            (None, Ok(client)) => Arc::clone(client),
            (Some(model), Ok(client)) if model == client.model() => Arc::clone(client),
            (Some(model), Ok(_)) => (team.model)(model).map_err(|why| {
                invalid(format!(
                    "task: the agent '{}' asks for the model '{model}': {why}",
                    agent.name
                ))
            })?,
        };
        Ok(Launch {
            index,
            description: if description.is_empty() {
                agent.name.clone()
            } else {
                description
            },
            prompt,
            context: fresh_context(&self.context, &agent),
            agent,
            client,
            max_tool_rounds: self.max_tool_rounds,
            model_output: self.model_output,
            window: self.window_setting,
            log_dir: self.log.beside().map(|dir| dir.join("subagents")),
            hooks: Arc::clone(&self.hooks),
        })
    }

    /// What the caller's thread does with a subagent's report on the call
    /// `parent`: shows its steps, counts its usage, judges its calls with
    /// this conversation's approval (saying who asks).
    pub(super) fn on_report(
        &mut self,
        parent: &ToolCall,
        report: Report,
        ui: &mut dyn Ui,
        cancel: &AtomicBool,
    ) {
        let who = || {
            let what = parent.arguments["description"]
                .as_str()
                .filter(|d| !d.trim().is_empty())
                .or(parent.arguments["agent"].as_str())
                .unwrap_or(GENERAL);
            format!("Subagent '{what}'")
        };
        match report {
            Report::Step(step) => ui.subagent(parent, &step),
            Report::Usage(usage) => ui.usage(&usage),
            Report::Rules {
                tool,
                arguments,
                read_only,
                ruled,
            } => {
                let _ = ruled.send(self.approval.rules(&tool, &arguments, read_only));
            }
            Report::Question {
                tool,
                arguments,
                verdict,
            } => {
                ui.subagent(parent, &SubagentStep::Asking);
                self.approval.asking_for = Some(who());
                let answer = self.approval.question(&tool, &arguments, cancel);
                self.approval.asking_for = None;
                let _ = verdict.send(answer);
            }
            Report::Rerun { tool, why, answer } => {
                ui.subagent(parent, &SubagentStep::Asking);
                self.approval.asking_for = Some(who());
                let yes = self.approval.rerun_outside_sandbox(&tool, &why, cancel);
                self.approval.asking_for = None;
                let _ = answer.send(yes);
            }
        }
    }
}

/// The subagent's system prompt: the caller's guidance, environment block
/// and project instructions as they stand, then what a subagent is, then
/// its agent's instructions. Nothing of the caller's conversation.
fn fresh_context(caller: &Context, agent: &Agent) -> Context {
    let mut own = ROLE.to_string();
    if !agent.instructions.trim().is_empty() {
        own.push_str("\n\n");
        own.push_str(agent.instructions.trim());
    }
    let prompt = prompt::assemble(
        &caller.environment.block(),
        &caller.instructions.text,
        "",
        &[(format!("agent {}", agent.name), own)],
    );
    Context {
        prompt,
        ..caller.clone()
    }
}

impl Launch {
    /// Runs the subagent to its end once the gate lets it, reporting on
    /// `tx`; the caller's result for the `task` call.
    pub(super) fn run(
        self,
        host: &dyn ToolHost,
        cancel: &AtomicBool,
        gate: &Gate,
        tx: Sender<Progress>,
    ) -> CallOutcome {
        let index = self.index;
        let report = |r: Report| {
            let _ = tx.send(Progress::Sub(index, r));
        };
        if !gate.enter(cancel) {
            report(Report::Step(SubagentStep::Ended {
                ok: false,
                code: Some(Failure::Cancelled.code().into()),
            }));
            return CallOutcome::new(
                Envelope::refused(
                    Failure::Cancelled,
                    "task was not run: the user interrupted before it started",
                ),
                vec![],
            );
        }
        let started = Instant::now();
        report(Report::Step(SubagentStep::Started {
            agent: self.agent.name.clone(),
        }));
        let judge = ByCaller {
            index,
            tx: tx.clone(),
        };
        let mut conversation = Conversation::new(
            Ok(Arc::clone(&self.client)),
            self.context,
            self.max_tool_rounds,
        )
        .with_approval(Approval::judged_by(Box::new(judge)))
        .with_model_output(self.model_output)
        .with_window(self.window.0, self.window.1)
        .with_hooks(Arc::clone(&self.hooks))
        .as_subagent();
        conversation.only_tools = self.agent.tools.clone();
        // One message, whose failure no one can answer with another; and
        // no team: subagents do not nest.
        conversation.one_shot = true;
        conversation.team = None;
        if let Some(dir) = self.log_dir {
            conversation = conversation.with_new_session(dir);
        }
        let mut ui = SubUi {
            tx: &report,
            reply: String::new(),
            tool_calls: 0,
            usage: Usage::default(),
            error: None,
        };
        let end = conversation.send(&self.prompt, host, &mut ui, cancel);
        gate.leave();
        let answer = conversation
            .messages()
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Assistant { text, .. } => Some(text.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let (tool_calls, usage) = (ui.tool_calls, ui.usage);
        let duration_ms = started.elapsed().as_millis() as u64;
        let who = format!("the subagent '{}'", self.description);
        let failed = |failure: Failure, why: String| Envelope::refused(failure, why);
        let envelope = match end {
            TurnEnd::Answered if conversation.cut => failed(
                Failure::Tool("SUBAGENT_FAILED".into()),
                format!(
                    "{who} stopped: its final reply reached the output limit and is cut, so it \
                     is not given as an answer; ask again for a shorter answer, or split the task"
                ),
            ),
            TurnEnd::Answered => Envelope::Success {
                result: json!({
                    "answer": answer,
                    "agent": self.agent.name,
                    "tool_calls": tool_calls,
                    "usage": {
                        "input": usage.input_tokens,
                        "cached_input": usage.cached_input_tokens,
                        "output": usage.output_tokens,
                    },
                    "duration_ms": duration_ms,
                }),
                truncated: None,
            },
            TurnEnd::RoundLimit => failed(
                Failure::RoundLimit,
                format!(
                    "{who} reached its limit of {} tool rounds without answering; its work is \
                     lost to you: give it a narrower task",
                    self.max_tool_rounds
                ),
            ),
            TurnEnd::Cancelled => failed(
                Failure::Cancelled,
                format!("{who} was stopped: the user interrupted"),
            ),
            TurnEnd::Blocked => failed(
                Failure::Tool("SUBAGENT_FAILED".into()),
                format!(
                    "{who} was stopped by a hook: {}",
                    ui.error.unwrap_or_else(|| "a hook ended its turn".into())
                ),
            ),
            TurnEnd::Failed | TurnEnd::NotConfigured => failed(
                Failure::Tool("SUBAGENT_FAILED".into()),
                format!(
                    "{who} failed: {}",
                    ui.error
                        .unwrap_or_else(|| "its model gave no answer".into())
                ),
            ),
        };
        let (ok, code) = match &envelope {
            Envelope::Success { .. } => (true, None),
            other => (
                false,
                other.to_json()["error_code"].as_str().map(str::to_string),
            ),
        };
        report(Report::Step(SubagentStep::Ended { ok, code }));
        CallOutcome::new(envelope, vec![])
    }
}

/// Why a subagent's call is refused when its caller has gone.
const CALLER_ENDED: &str = "Not run: the caller's conversation has ended";

/// A subagent's approval: its caller's, asked on the caller's thread.
struct ByCaller {
    index: usize,
    tx: Sender<Progress>,
}

impl Judge for ByCaller {
    fn rules(&self, tool: &str, arguments: &Value, read_only: bool) -> Ruled {
        let (ruled, answered) = mpsc::channel();
        let asked = self.tx.send(Progress::Sub(
            self.index,
            Report::Rules {
                tool: tool.to_string(),
                arguments: arguments.clone(),
                read_only,
                ruled,
            },
        ));
        match asked.ok().and_then(|_| answered.recv().ok()) {
            Some(ruled) => ruled,
            None => Ruled::Refuse(CALLER_ENDED.into()),
        }
    }

    fn question(&mut self, tool: &str, arguments: &Value) -> Verdict {
        let (verdict, answered) = mpsc::channel();
        let asked = self.tx.send(Progress::Sub(
            self.index,
            Report::Question {
                tool: tool.to_string(),
                arguments: arguments.clone(),
                verdict,
            },
        ));
        match asked.ok().and_then(|_| answered.recv().ok()) {
            Some(verdict) => verdict,
            None => Verdict::Refuse(CALLER_ENDED.into()),
        }
    }

    fn rerun_outside_sandbox(&mut self, tool: &str, why: &str) -> bool {
        let (answer, answered) = mpsc::channel();
        let asked = self.tx.send(Progress::Sub(
            self.index,
            Report::Rerun {
                tool: tool.to_string(),
                why: why.to_string(),
                answer,
            },
        ));
        asked.ok().and_then(|_| answered.recv().ok()) == Some(true)
    }
}

/// What a subagent shows: nothing itself; its steps go to the caller.
struct SubUi<'a> {
    tx: &'a dyn Fn(Report),
    reply: String,
    tool_calls: u64,
    usage: Usage,
    /// The last error it said: why it failed, for the caller.
    error: Option<String>,
}

impl Ui for SubUi<'_> {
    fn waiting(&mut self, _what: &str) {}

    fn text(&mut self, piece: &str) {
        self.reply.push_str(piece);
    }

    fn end_text(&mut self) {
        if !self.reply.is_empty() {
            (self.tx)(Report::Step(SubagentStep::Text(std::mem::take(
                &mut self.reply,
            ))));
        }
    }

    fn tool_call(&mut self, call: &ToolCall) {
        self.tool_calls += 1;
        (self.tx)(Report::Step(SubagentStep::ToolStarted(call.clone())));
    }

    fn tool_outcome(&mut self, call: &ToolCall, outcome: &CallOutcome) {
        (self.tx)(Report::Step(SubagentStep::ToolFinished {
            call: call.clone(),
            envelope: outcome.to_json(),
        }));
    }

    fn event(&mut self, event: &Value) {
        let text = event["content"]
            .as_str()
            .map_or_else(|| event.to_string(), str::to_string);
        (self.tx)(Report::Step(SubagentStep::Notice(text)));
    }

    fn notice(&mut self, text: &str) {
        (self.tx)(Report::Step(SubagentStep::Notice(text.to_string())));
    }

    fn error(&mut self, text: &str) {
        self.error = Some(text.to_string());
        (self.tx)(Report::Step(SubagentStep::Error(text.to_string())));
    }

    fn usage(&mut self, usage: &Usage) {
        let u = &mut self.usage;
        u.input_tokens += usage.input_tokens;
        u.output_tokens += usage.output_tokens;
        u.cached_input_tokens += usage.cached_input_tokens;
        u.cache_write_tokens += usage.cache_write_tokens;
        (self.tx)(Report::Usage(*usage));
    }
}
