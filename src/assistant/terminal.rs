//! What the person sees and types (issue 5, "The loop"): the prompt with
//! line editing and history (rustyline), the streamed reply on stdout, tool
//! calls and their outcomes on stderr, a spinner while a tool or the model
//! works, `config_required` events in dim yellow, and Ctrl-C, which stops
//! the running request or tool and comes back to the prompt (at an empty
//! prompt, like Ctrl-D, it leaves). Colours follow `NO_COLOR` and are off
//! for a stream that is not a terminal. Lines from a non-terminal stdin are
//! handled one by one, commands and messages alike.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rustyline::error::ReadlineError;
use rustyline::{
    Cmd, ConditionalEventHandler, Event, EventContext, EventHandler, KeyEvent, Movement,
    RepeatCount,
};
use serde_json::Value;

use super::conversation::{short_call, short_outcome, Conversation, ToolHost, TurnEnd, Ui};
use super::model::ToolCall;
use crate::host::call::CallOutcome;
use crate::host::signals;

/// Slash commands (/tool, /refresh, /help, /quit), run by the host.
pub trait Commands {
    /// Runs one `/...` line; false when the person asked to leave.
    fn run(&mut self, line: &str) -> bool;
}

/// ANSI styling, on only for a terminal and without `NO_COLOR`.
#[derive(Clone, Copy)]
pub struct Style {
    on: bool,
}

impl Style {
    pub fn for_stream(is_terminal: bool) -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            on: is_terminal && !no_color,
        }
    }
    fn paint(self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }
    pub fn dim_yellow(self, text: &str) -> String {
        self.paint("2;33", text)
    }
    pub fn red(self, text: &str) -> String {
        self.paint("31", text)
    }
    pub fn green(self, text: &str) -> String {
        self.paint("32", text)
    }
    pub fn cyan(self, text: &str) -> String {
        self.paint("36", text)
    }
    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }
}

/// A spinner on stderr, drawn by its own thread while something runs.
struct Spinner {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Spinner {
    fn start(label: &str, style: Style) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let label = label.to_string();
        let thread = std::thread::spawn(move || {
            const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            let mut i = 0;
            while !flag.load(Ordering::SeqCst) {
                let mut err = std::io::stderr().lock();
                let frame = format!("{} {label}", FRAMES[i % FRAMES.len()]);
                let _ = write!(err, "\r\x1b[2K{}", style.dim(&frame));
                let _ = err.flush();
                drop(err);
                i += 1;
                std::thread::sleep(Duration::from_millis(80));
            }
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        });
        Spinner { stop, thread }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.thread.join();
    }
}

/// The `Ui` of a terminal or of pipes: the reply on stdout, the rest on
/// stderr.
pub struct TermUi {
    out: Style,
    err: Style,
    spinner_allowed: bool,
    spinner: Option<Spinner>,
    /// Whether stdout is at the start of a line.
    at_line_start: bool,
}

impl TermUi {
    pub fn new() -> TermUi {
        let stderr_tty = std::io::stderr().is_terminal();
        TermUi {
            out: Style::for_stream(std::io::stdout().is_terminal()),
            err: Style::for_stream(stderr_tty),
            spinner_allowed: stderr_tty,
            spinner: None,
            at_line_start: true,
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
        if !self.at_line_start {
            say("\n");
            self.at_line_start = true;
        }
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{text}");
    }

    pub fn style(&self) -> Style {
        self.out
    }
}

impl Default for TermUi {
    fn default() -> Self {
        TermUi::new()
    }
}

impl Ui for TermUi {
    fn waiting(&mut self, what: &str) {
        if self.spinner_allowed {
            self.quiet();
            self.spinner = Some(Spinner::start(what, self.err));
        }
    }

    fn text(&mut self, piece: &str) {
        self.quiet();
        say(piece);
        self.at_line_start = piece.ends_with('\n');
    }

    fn end_text(&mut self) {
        self.quiet();
        if !self.at_line_start {
            say("\n");
            self.at_line_start = true;
        }
    }

    fn tool_call(&mut self, call: &ToolCall) {
        let text = format!(
            "{} {}",
            self.err.cyan("→"),
            self.err.bold(&short_call(call, 100))
        );
        self.line(&text);
    }

    fn tool_outcome(&mut self, call: &ToolCall, outcome: &CallOutcome) {
        let (ok, summary) = short_outcome(outcome, 100);
        let mark = if ok {
            self.err.green("✓")
        } else {
            self.err.red("✗")
        };
        let text = format!(
            "{mark} {}",
            self.err.dim(&format!("{}: {summary}", call.name))
        );
        self.line(&text);
    }

    fn event(&mut self, event: &Value) {
        let text = match event["content"].as_str() {
            Some(content) => content.to_string(),
            None => event.to_string(),
        };
        let text = self.err.dim_yellow(&text);
        self.line(&text);
    }

    fn notice(&mut self, text: &str) {
        let text = self.err.dim(text);
        self.line(&text);
    }

    fn error(&mut self, text: &str) {
        let text = self.err.red(&format!("error: {text}"));
        self.line(&text);
    }
}

/// Writes to stdout at once. A reader that went away (`ikigai -p ... | head`)
/// is not worth a panic; the conversation and its log go on.
pub fn say(text: &str) {
    crate::out::print_out(text.as_bytes(), false);
}

/// A message or a command from the person, to completion.
fn handle(
    line: &str,
    conversation: &mut Conversation,
    host: &dyn ToolHost,
    commands: &mut dyn Commands,
    ui: &mut TermUi,
) -> Step {
    let line = line.trim();
    if line.is_empty() {
        return Step::Continue(None);
    }
    if line.starts_with('/') {
        ui.quiet();
        let _ = std::io::stdout().flush();
        return if commands.run(line) {
            Step::Continue(None)
        } else {
            Step::Leave
        };
    }
    let end = signals::guarded(|cancel| conversation.send(line, host, ui, cancel));
    signals::end_if_signalled();
    Step::Continue(Some(end))
}

enum Step {
    Continue(Option<TurnEnd>),
    Leave,
}

/// Ctrl-C at the prompt: clears a line being typed, leaves at an empty one.
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

/// The interactive assistant at a terminal.
pub fn interactive(
    conversation: &mut Conversation,
    host: &dyn ToolHost,
    commands: &mut dyn Commands,
    history: Option<PathBuf>,
) -> anyhow::Result<()> {
    let mut ui = TermUi::new();
    let mut editor = rustyline::DefaultEditor::new()?;
    editor.bind_sequence(
        KeyEvent::ctrl('C'),
        EventHandler::Conditional(Box::new(CtrlC)),
    );
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    let style = ui.style();
    let prompt = ("> ".to_string(), style.bold(&style.cyan("> ")));
    loop {
        match editor.readline(&prompt) {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                    if let Some(path) = &history {
                        // Saved at once, so a crash keeps what was typed.
                        let _ = editor.save_history(path);
                    }
                }
                if let Step::Leave = handle(&line, conversation, host, commands, &mut ui) {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) | Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Lines from a non-terminal stdin, one by one. Ok(false) when a message
/// failed, so scripts can tell.
pub fn lines(
    input: &mut dyn BufRead,
    conversation: &mut Conversation,
    host: &dyn ToolHost,
    commands: &mut dyn Commands,
) -> anyhow::Result<bool> {
    let mut ui = TermUi::new();
    let mut all_ok = true;
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        match handle(
            &String::from_utf8_lossy(&line),
            conversation,
            host,
            commands,
            &mut ui,
        ) {
            Step::Leave => break,
            Step::Continue(Some(end)) if end != TurnEnd::Answered => all_ok = false,
            Step::Continue(_) => {}
        }
    }
    Ok(all_ok)
}

/// `ikigai -p MESSAGE`: one message to completion.
pub fn one_shot(message: &str, conversation: &mut Conversation, host: &dyn ToolHost) -> TurnEnd {
    let mut ui = TermUi::new();
    let end = signals::guarded(|cancel| conversation.send(message, host, &mut ui, cancel));
    signals::end_if_signalled();
    end
}
