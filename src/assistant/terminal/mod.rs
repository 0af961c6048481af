//! What the person sees and types: the prompt with line editing, history
//! and multi-line input (rustyline); the reply streamed on stdout as
//! rendered markdown; tool calls on stderr, each with its running output
//! (the last lines, folded into the call's line when it ends), a line in
//! words when done, and the diff of a file it changed; a spinner while
//! the model or a tool works; a status line of tokens and cost after each
//! reply; `config_required` events in dim yellow. Ctrl-C stops the running
//! request or tool; at an empty prompt it says how to leave, and a second
//! one within two seconds leaves. Colours follow `NO_COLOR` and are off for
//! a stream that is not a terminal; a reply written to a pipe is the
//! model's markdown exactly. Lines from a non-terminal stdin are handled
//! one by one, commands and messages alike. Whatever a model or a tool
//! supplied reaches the terminal through `render::visible` (decision 59):
//! its control characters are shown, never obeyed.

use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{
    Cmd, ConditionalEventHandler, Editor, Event, EventContext, EventHandler, Helper, KeyEvent,
    Movement, RepeatCount,
};
use serde_json::Value;

use super::commands::CONVERSATION_COMMANDS;
use super::conversation::{short_call, Conversation, SubagentStep, ToolHost, TurnEnd, Ui};
use super::cost::{self, Meter};
use super::keys;
use super::model::{Message, ToolCall, Usage};
use super::plan::Mark;
use super::render::calls::{self, Before};
use super::render::markdown::{self, Form, Markdown};
use super::render::{self, visible, Paint};
use super::session::{self, sessions_dir, Session};
use crate::host::call::CallOutcome;
use crate::host::signals;
use crate::host::text::clip;
use crate::tool::Env;

/// Slash commands (/tool, /refresh, /help, /quit), run by the host.
pub trait Commands {
    /// Runs one `/...` line; false when the person asked to leave.
    fn run(&mut self, line: &str) -> bool;
}

mod slash;

pub use self::slash::parse_model;

use self::slash::conversation_command;

/// How the reply is drawn on stdout: rendered on a terminal (without colour
/// under `NO_COLOR`), the model's text as it is anywhere else.
fn reply_form() -> Form {
    if !std::io::stdout().is_terminal() {
        Form::Raw
    } else if render::no_color() {
        Form::Plain
    } else {
        Form::Colour
    }
}

/// A spinner on stderr, drawn by its own thread while something runs.
/// Stopping it is immediate (the thread waits on a channel, not a sleep),
/// so a reply streaming line by line is never held up by it.
struct Spinner {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<()>,
}

impl Spinner {
    /// Starts drawing after `delay`, so a pause shorter than that (between
    /// two lines of a reply) shows no spinner at all.
    fn start(label: &str, style: Paint, delay: Duration) -> Spinner {
        let (stop, stopped) = mpsc::channel::<()>();
        let label = label.to_string();
        let thread = std::thread::spawn(move || {
            const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            if stopped.recv_timeout(delay) != Err(mpsc::RecvTimeoutError::Timeout) {
                return;
            }
            let mut i = 0;
            loop {
                let mut err = std::io::stderr().lock();
                let frame = format!("{} {label}", FRAMES[i % FRAMES.len()]);
                let _ = write!(err, "\r\x1b[2K{}", style.dim(&frame));
                let _ = err.flush();
                drop(err);
                i += 1;
                if stopped.recv_timeout(Duration::from_millis(80))
                    != Err(mpsc::RecvTimeoutError::Timeout)
                {
                    break;
                }
            }
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        });
        Spinner { stop, thread }
    }

    fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

/// The spinner's label while a reply pauses between two parts.
const WRITING: &str = "writing";

/// Lines of a running call's output shown under its call line.
const LIVE_LINES: usize = 5;
/// At most this often is the live output redrawn.
const LIVE_REDRAW: Duration = Duration::from_millis(50);
/// Two Ctrl-C at an empty prompt within this time leave.
const LEAVE_WINDOW: Duration = Duration::from_secs(2);

/// The tail of the running calls' output, drawn under the call lines.
#[derive(Default)]
struct Live {
    lines: VecDeque<String>,
    partial: String,
    /// Lines on the screen now, to be drawn over.
    drawn: usize,
    last_draw: Option<Instant>,
}

impl Live {
    fn push(&mut self, piece: &[u8]) {
        self.partial.push_str(&String::from_utf8_lossy(piece));
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            self.lines.push_back(printable(&line));
            if self.lines.len() > LIVE_LINES {
                self.lines.pop_front();
            }
        }
    }

    /// The lines to show: the complete ones and the one being written.
    fn shown(&self) -> Vec<String> {
        let mut shown: Vec<String> = self.lines.iter().cloned().collect();
        if !self.partial.is_empty() {
            shown.push(printable(&self.partial));
        }
        let skip = shown.len().saturating_sub(LIVE_LINES);
        shown.split_off(skip)
    }
}

/// A line of a program's output as the person sees it: what follows its
/// last carriage return (a progress bar's latest state), tabs as spaces,
/// any other control character shown, not obeyed (decision 59).
fn printable(line: &str) -> String {
    let line = line.trim_end_matches(['\n', '\r']);
    let line = line.rsplit('\r').next().unwrap_or(line);
    visible(&line.replace('\t', "    ")).into_owned()
}

/// `text` cut to `max` columns.
fn clip_columns(text: &str, max: usize) -> String {
    if render::width(text) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// The `Ui` of a terminal or of pipes: the reply on stdout, the rest on
/// stderr.
pub struct TermUi {
    err: Paint,
    err_tty: bool,
    spinner: Option<Spinner>,
    /// Whether stdout is at the start of a line.
    at_line_start: bool,
    markdown: Markdown,
    form: Form,
    width: usize,
    live: Live,
    /// Files as they were before the running file_write/file_edit calls.
    before: Vec<(String, Before)>,
    /// The tokens of the message under way.
    turn: Option<Usage>,
    meter: Meter,
    /// The running subagents: the task call's id, its description and its
    /// latest step, each drawn on a line of its own.
    subagents: Vec<(String, String, String)>,
}

impl TermUi {
    pub fn new() -> TermUi {
        let err_tty = std::io::stderr().is_terminal();
        let form = reply_form();
        if form == Form::Colour {
            super::render::highlight::warm_up();
        }
        let width = render::terminal_width();
        TermUi {
            err: Paint::for_stream(err_tty),
            err_tty,
            spinner: None,
            at_line_start: true,
            markdown: Markdown::new(form, width),
            form,
            width,
            live: Live::default(),
            before: Vec::new(),
            turn: None,
            meter: Meter::default(),
            subagents: Vec::new(),
        }
    }

    fn quiet(&mut self) {
        if let Some(spinner) = self.spinner.take() {
            spinner.stop();
        }
    }

    /// A line on stderr, after ending any half-written reply line.
    fn line(&mut self, text: &str) {
        self.quiet();
        self.clear_live();
        if !self.at_line_start {
            say("\n");
            self.at_line_start = true;
        }
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{text}");
    }

    fn draw_live(&mut self) {
        let shown = self.live.shown();
        let mut err = std::io::stderr().lock();
        if self.live.drawn > 0 {
            // Back to the first drawn line, and clear from there down.
            let _ = write!(err, "\x1b[{}F\x1b[J", self.live.drawn);
        }
        for line in &shown {
            let line = clip_columns(line, self.width.saturating_sub(6).max(10));
            let _ = writeln!(err, "  {}", self.err.dim(&format!("│ {line}")));
        }
        let _ = err.flush();
        self.live.drawn = shown.len();
        self.live.last_draw = Some(Instant::now());
    }

    /// One line per running subagent, with its latest step, where a
    /// call's live output would be.
    fn draw_subagents(&mut self) {
        self.quiet();
        let mut err = std::io::stderr().lock();
        if self.live.drawn > 0 {
            let _ = write!(err, "\x1b[{}F\x1b[J", self.live.drawn);
        }
        for (_, what, step) in &self.subagents {
            let line = format!("⇢ {what} · {step}");
            let line = clip_columns(&line, self.width.saturating_sub(6).max(10));
            let _ = writeln!(err, "  {}", self.err.dim(&line));
        }
        let _ = err.flush();
        self.live.drawn = self.subagents.len();
    }

    fn clear_live(&mut self) {
        if self.live.drawn > 0 {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\x1b[{}F\x1b[J", self.live.drawn);
            let _ = err.flush();
            self.live.drawn = 0;
        }
    }

    /// After a message: its tokens counted for `/cost`, and shown with
    /// their cost (when the provider said) at an interactive prompt.
    fn status(&mut self, model: Option<&str>, mode: Mode) {
        let Some(turn) = self.turn.take() else {
            return;
        };
        let model = model.unwrap_or("");
        let cost = self.meter.add(model, turn);
        if mode != Mode::Interactive {
            return;
        }
        let mut text = format!(
            "{} in{} · {} out",
            cost::count(turn.input_tokens),
            cost::cached_words(turn),
            cost::count(turn.output_tokens)
        );
        if let Some(cost) = cost {
            text += &format!(" · {}", cost::dollars(cost));
            if self.meter.cost > cost {
                text += &format!(" ({} since start)", cost::dollars(self.meter.cost));
            }
        }
        let text = self.err.dim(&text);
        self.line(&text);
    }
}

impl Default for TermUi {
    fn default() -> Self {
        TermUi::new()
    }
}

impl Ui for TermUi {
    fn waiting(&mut self, what: &str) {
        if self.err_tty && self.live.drawn == 0 {
            self.quiet();
            // Between two parts of a reply, a spinner only if it pauses.
            let delay = if what == WRITING {
                Duration::from_millis(300)
            } else {
                Duration::ZERO
            };
            self.spinner = Some(Spinner::start(&visible(what), self.err, delay));
        }
    }

    fn text(&mut self, piece: &str) {
        let drawn = self.markdown.push(piece);
        if self.form == Form::Raw {
            self.quiet();
        }
        if !drawn.is_empty() {
            self.quiet();
            say(&drawn);
            self.at_line_start = drawn.ends_with('\n');
            if self.form != Form::Raw {
                // The next block is still coming in.
                self.waiting(WRITING);
            }
        }
    }

    fn end_text(&mut self) {
        self.quiet();
        let rest = self.markdown.finish();
        if !rest.is_empty() {
            say(&rest);
            self.at_line_start = rest.ends_with('\n');
        }
        if !self.at_line_start {
            say("\n");
            self.at_line_start = true;
        }
    }

    fn tool_call(&mut self, call: &ToolCall) {
        if let Some(before) = calls::before(call) {
            self.before.push((call.id.clone(), before));
        }
        let text = format!(
            "{} {}",
            self.err.cyan("→"),
            // One line on the screen: the arrow and a space take two columns.
            self.err.bold(&visible(&short_call(
                call,
                self.width.saturating_sub(2).min(100)
            )))
        );
        self.line(&text);
    }

    fn tool_output(&mut self, _call: &ToolCall, output: &[u8]) {
        if !self.err_tty {
            return;
        }
        self.live.push(output);
        let due = self
            .live
            .last_draw
            .is_none_or(|t| t.elapsed() >= LIVE_REDRAW);
        if due {
            self.quiet();
            self.draw_live();
        }
    }

    fn tool_outcome(&mut self, call: &ToolCall, outcome: &CallOutcome) {
        self.clear_live();
        self.live = Live::default();
        let before = self
            .before
            .iter()
            .position(|(id, _)| *id == call.id)
            .map(|at| self.before.remove(at).1);
        let account = calls::account(call, outcome, before.as_ref(), self.err, "    ");
        let text = if account.ok {
            format!("{} {}", self.err.green("✓"), account.line)
        } else {
            let envelope = outcome.envelope.to_json();
            let kept = envelope["error_code"] == "CANCELLED"
                && [&envelope["stdout"], &envelope["stderr"]]
                    .iter()
                    .any(|v| v.as_str().is_some_and(|s| !s.is_empty()));
            let note = if kept {
                " (the output so far is kept for the model)"
            } else {
                ""
            };
            format!(
                "{} {}",
                self.err.red("✗"),
                self.err.dim(&format!("{}{note}", account.line))
            )
        };
        self.line(&text);
        if let Some(diff) = account.diff {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(diff.as_bytes());
        }
    }

    fn usage(&mut self, usage: &Usage) {
        let turn = self.turn.get_or_insert_with(Usage::default);
        turn.input_tokens += usage.input_tokens;
        turn.output_tokens += usage.output_tokens;
        turn.cached_input_tokens += usage.cached_input_tokens;
        turn.cache_write_tokens += usage.cache_write_tokens;
    }

    fn event(&mut self, event: &Value) {
        let text = match event["content"].as_str() {
            Some(content) => content.to_string(),
            None => event.to_string(),
        };
        let text = self.err.dim_yellow(&visible(&text));
        self.line(&text);
    }

    fn notice(&mut self, text: &str) {
        let text = self.err.dim(&visible(text));
        self.line(&text);
    }

    fn plan(&mut self, plan: &Value) {
        let mut text = self.err.bold("Plan:");
        for (mark, step) in super::plan::checklist(plan) {
            let step = printable(&step);
            let line = match mark {
                Mark::Done => format!(
                    "  {} {}",
                    self.err.green(mark.symbol()),
                    self.err.dim(&step)
                ),
                Mark::Now => format!(
                    "  {} {}",
                    self.err.cyan(mark.symbol()),
                    self.err.bold(&step)
                ),
                Mark::Later => format!("  {} {step}", mark.symbol()),
                Mark::Note => format!("    {}", self.err.dim(&step)),
            };
            text.push('\n');
            text.push_str(&line);
        }
        self.line(&text);
    }

    fn error(&mut self, text: &str) {
        let text = self.err.red(&format!("error: {}", visible(text)));
        self.line(&text);
    }

    fn subagent(&mut self, parent: &ToolCall, step: &SubagentStep) {
        let latest = match step {
            SubagentStep::Started { agent } => {
                let what = parent.arguments["description"]
                    .as_str()
                    .map_or_else(|| agent.clone(), printable);
                self.subagents
                    .push((parent.id.clone(), what, format!("started ({agent})")));
                None
            }
            SubagentStep::Text(text) => Some(printable(text.lines().next().unwrap_or(""))),
            SubagentStep::ToolStarted(call) => {
                Some(format!("→ {}", printable(&short_call(call, 80))))
            }
            SubagentStep::ToolFinished { call, envelope } => {
                let mark = if envelope["tool_success"] == false {
                    "✗"
                } else {
                    "✓"
                };
                Some(format!("{mark} {}", call.name))
            }
            SubagentStep::Notice(text) => Some(printable(text)),
            SubagentStep::Error(text) => Some(format!("error: {}", printable(text))),
            SubagentStep::Asking => {
                // The question is written below whatever is on the screen.
                self.quiet();
                self.clear_live();
                return;
            }
            SubagentStep::Ended { .. } => {
                self.subagents.retain(|(id, _, _)| *id != parent.id);
                None
            }
        };
        if let Some(latest) = latest {
            if let Some(entry) = self.subagents.iter_mut().find(|(id, ..)| *id == parent.id) {
                entry.2 = latest;
            }
        }
        if self.err_tty {
            self.draw_subagents();
        }
    }
}

/// Writes to stdout at once. A reader that went away (`ikigai -p ... | head`)
/// is not worth a panic; the conversation and its log go on.
pub fn say(text: &str) {
    crate::out::print_out(text.as_bytes(), false);
}

/// Where a message comes from, for what is said after it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Interactive,
    Lines,
}

/// A message or a command from the person, to completion.
fn handle(
    line: &str,
    conversation: &mut Conversation,
    host: &dyn ToolHost,
    commands: &mut dyn Commands,
    ui: &mut TermUi,
    mode: Mode,
) -> Step {
    let line = line.trim();
    if line.is_empty() {
        return Step::Continue(None);
    }
    if let Some(body) = line.strip_prefix('/') {
        ui.quiet();
        let _ = std::io::stdout().flush();
        let (name, args) = match body.split_once(char::is_whitespace) {
            Some((name, args)) => (name, args.trim()),
            None => (body, ""),
        };
        if conversation.context().commands.find(name).is_some() {
            let end = signals::guarded(|cancel| {
                crate::assistant::custom::run::send(line, conversation, host, ui, cancel)
            });
            ui.status(conversation.client().map(|c| c.model()), mode);
            signals::end_if_signalled();
            return Step::Continue(Some(end));
        }
        if CONVERSATION_COMMANDS.iter().any(|c| c.0 == name) {
            let end = conversation_command(name, args, conversation, host, ui);
            ui.status(conversation.client().map(|c| c.model()), mode);
            return Step::Continue(end);
        }
        let leave = !commands.run(line);
        if name == "help" {
            let custom = &conversation.context().commands;
            if !custom.list.is_empty() || !custom.skipped.is_empty() {
                say(&format!(
                    "{}\n",
                    crate::assistant::custom::listing::commands(custom)
                ));
            }
        }
        return if !leave {
            Step::Continue(None)
        } else {
            Step::Leave
        };
    }
    let end = signals::guarded(|cancel| conversation.send(line, host, ui, cancel));
    ui.status(conversation.client().map(|c| c.model()), mode);
    signals::end_if_signalled();
    Step::Continue(Some(end))
}

enum Step {
    Continue(Option<TurnEnd>),
    Leave,
}

/// Exchanges of a resumed session shown before the prompt.
pub const EXCHANGES_SHOWN: usize = 3;

/// The last `exchanges` messages of the person and what followed each,
/// as they were shown: the message, the reply rendered, each tool call and
/// whether it worked.
pub fn show_history(messages: &[Message], exchanges: usize) {
    let form = reply_form();
    let paint = Paint::for_stream(std::io::stdout().is_terminal());
    let width = render::terminal_width();
    let users: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::User { .. }))
        .map(|(i, _)| i)
        .collect();
    let from = users.len().checked_sub(exchanges).map_or(0, |k| users[k]);
    let mut text = String::new();
    if from > 0 {
        text += &paint.dim(&format!("… {from} earlier messages\n"));
    }
    for message in &messages[from..] {
        match message {
            Message::User { text: said } => {
                for (i, line) in said.lines().enumerate() {
                    let lead = if i == 0 { "> " } else { "  " };
                    text += &format!(
                        "{}{}\n",
                        paint.bold(&paint.cyan(lead)),
                        paint.bold(&visible(line))
                    );
                }
            }
            Message::Assistant {
                text: reply,
                tool_calls,
            } => {
                if !reply.is_empty() {
                    text += &markdown::render(reply, form, width);
                }
                for call in tool_calls {
                    text += &format!(
                        "{} {}\n",
                        paint.cyan("→"),
                        paint.dim(&visible(&short_call(call, 100)))
                    );
                }
            }
            Message::Tool { results } => {
                for r in results {
                    let line = if r.success() {
                        format!("{} {}", paint.green("✓"), paint.dim(&visible(&r.name)))
                    } else {
                        let code = r.envelope["error_code"].as_str().unwrap_or("failed");
                        format!(
                            "{} {}",
                            paint.red("✗"),
                            paint.dim(&visible(&format!("{}: {code}", r.name)))
                        )
                    };
                    text += &line;
                    text.push('\n');
                }
            }
        }
    }
    text += &paint.dim("─── continue below ───\n");
    say(&text);
}

/// Ctrl-C at the prompt: clears a line being typed; at an empty one it is
/// an interrupt, which the loop counts.
struct CtrlC;

impl ConditionalEventHandler for CtrlC {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if ctx.line().is_empty() {
            Some(Cmd::Interrupt)
        } else {
            Some(Cmd::Kill(Movement::WholeBuffer))
        }
    }
}

/// The line editor's helper: a line ending in `\` goes on to the next,
/// and Tab completes a slash command's name (built-in or custom).
struct Input {
    commands: Vec<String>,
}

impl Completer for Input {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let typed = &line[..pos];
        let Some(start) = typed.strip_prefix('/') else {
            return Ok((0, Vec::new()));
        };
        if start.contains(char::is_whitespace) {
            return Ok((0, Vec::new()));
        }
        let found = self
            .commands
            .iter()
            .filter(|c| c.starts_with(start))
            .map(|c| format!("/{c} "))
            .collect();
        Ok((0, found))
    }
}
impl Hinter for Input {
    type Hint = String;
}
impl Highlighter for Input {}
impl Validator for Input {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        Ok(if ctx.input().ends_with('\\') {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}
impl Helper for Input {}

/// The message typed: each `\` that ended a line removed, the line
/// breaks kept.
fn joined(input: &str) -> String {
    input.replace("\\\n", "\n")
}

/// Whether `path` can hold the prompt history: its directory ikigai's own
/// (made on the first run), the file a regular one of the person's or none.
fn own_history(path: &Path) -> std::io::Result<()> {
    let dir = crate::assistant::session::private_dir(path.parent().unwrap_or(Path::new("/")))?;
    match dir.open_existing(path.file_name().unwrap_or_default(), false) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other.map(drop),
    }
}

/// The interactive assistant at a terminal.
pub fn interactive(
    conversation: &mut Conversation,
    host: &dyn ToolHost,
    commands: &mut dyn Commands,
    history: Option<PathBuf>,
) -> anyhow::Result<()> {
    let mut ui = TermUi::new();
    let mut editor: Editor<Input, DefaultHistory> = Editor::new()?;
    let mut names: Vec<String> = super::commands::names().map(str::to_string).collect();
    names.extend(
        conversation
            .context()
            .commands
            .list
            .iter()
            .map(|c| c.name.clone()),
    );
    names.sort();
    editor.set_helper(Some(Input { commands: names }));
    editor.bind_sequence(
        KeyEvent::ctrl('C'),
        EventHandler::Conditional(Box::new(CtrlC)),
    );
    // The history is written where ikigai's own directory is, checked: a
    // history that is not a plain file of the person's (a link a tool
    // left) is neither read nor written.
    let history = history.filter(|path| match own_history(path) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("warning: the prompt history is not kept: {e}");
            false
        }
    });
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    let style = ui.err;
    let prompt = ("> ".to_string(), style.bold(&style.cyan("> ")));
    let mut interrupted: Option<Instant> = None;
    loop {
        match editor.readline(&prompt) {
            Ok(input) => {
                interrupted = None;
                if !input.trim().is_empty() {
                    let _ = editor.add_history_entry(input.as_str());
                    if let Some(path) = &history {
                        // Saved at once, so a crash keeps what was typed.
                        let _ = editor.save_history(path);
                    }
                }
                let message = joined(&input);
                if let Step::Leave = handle(
                    &message,
                    conversation,
                    host,
                    commands,
                    &mut ui,
                    Mode::Interactive,
                ) {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => {
                if interrupted.is_some_and(|at| at.elapsed() < LEAVE_WINDOW) {
                    break;
                }
                interrupted = Some(Instant::now());
                ui.notice("Press Ctrl-C again to leave (or Ctrl-D, or /quit).");
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Lines from a non-terminal stdin, one by one (a line ending in `\` goes
/// on to the next). Ok(false) when a message failed, so scripts can tell.
pub fn lines(
    input: &mut dyn BufRead,
    conversation: &mut Conversation,
    host: &dyn ToolHost,
    commands: &mut dyn Commands,
) -> anyhow::Result<bool> {
    let mut ui = TermUi::new();
    let mut all_ok = true;
    let mut line = Vec::new();
    let mut message = String::new();
    loop {
        line.clear();
        let at_end = input.read_until(b'\n', &mut line)? == 0;
        if !at_end {
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            if let Some(start) = text.strip_suffix('\\') {
                message.push_str(start);
                message.push('\n');
                continue;
            }
            message.push_str(text);
        } else if message.is_empty() {
            break;
        }
        let whole = std::mem::take(&mut message);
        match handle(&whole, conversation, host, commands, &mut ui, Mode::Lines) {
            Step::Leave => break,
            Step::Continue(Some(end)) if end != TurnEnd::Answered => all_ok = false,
            Step::Continue(_) => {}
        }
        if at_end {
            break;
        }
    }
    Ok(all_ok)
}

/// `ikigai -p MESSAGE`: one message to completion.
pub fn one_shot(message: &str, conversation: &mut Conversation, host: &dyn ToolHost) -> TurnEnd {
    let mut ui = TermUi::new();
    let end = signals::guarded(|cancel| {
        crate::assistant::custom::run::send(message, conversation, host, &mut ui, cancel)
    });
    signals::end_if_signalled();
    end
}

#[cfg(test)]
mod tests {
    use super::slash::{ago, parse_model};
    use super::*;

    #[test]
    fn output_lines_as_plain_text() {
        assert_eq!(printable("10%\r50%\r100%\n"), "100%");
        assert_eq!(
            printable("\x1b[2K\x1b[1Ared\tx\x07"),
            r"\e[2K\e[1Ared    x<U+0007>"
        );
        let mut live = Live::default();
        live.push(b"1\n2\n3\n4\n5\n6\npart");
        assert_eq!(live.shown(), ["3", "4", "5", "6", "part"]);
        assert_eq!(clip_columns("abcdef", 4), "abc…");
    }

    #[test]
    fn model_names_find_their_provider() {
        assert_eq!(
            parse_model("claude-sonnet-4-5"),
            (Some("anthropic"), Some("claude-sonnet-4-5"))
        );
        assert_eq!(
            parse_model("openai:gpt-4.1-mini"),
            (Some("openai"), Some("gpt-4.1-mini"))
        );
        assert_eq!(parse_model("google"), (Some("google"), None));
        assert_eq!(
            parse_model("gemini-2.5-pro"),
            (Some("google"), Some("gemini-2.5-pro"))
        );
        assert_eq!(
            parse_model("my-local-model"),
            (None, Some("my-local-model"))
        );
        assert_eq!(parse_model("stub"), (Some("stub"), None));
    }

    #[test]
    fn continued_lines_join_and_times_read_well() {
        assert_eq!(joined("one \\\ntwo"), "one \ntwo");
        let now = SystemTime::now();
        assert_eq!(ago(now, now), "just now");
        assert_eq!(ago(now, now - Duration::from_secs(300)), "5 min ago");
        assert_eq!(ago(now, now - Duration::from_secs(7200)), "2 h ago");
    }
}
