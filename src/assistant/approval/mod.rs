//! Whether a tool call the model asked for may run, and asking the person
//! when it is theirs to say.
//!
//! Two modes: `auto` runs every call that no deny rule matches; `ask` runs
//! read-only calls (their tool's `readOnlyHint`) and calls an allow rule
//! matches at once, and shows any other call (bash: the command; file_write
//! and file_edit: the diff they would make) and waits for `y` (run), `n`
//! (refuse, then an optional sentence for the model) or `a` (run, and allow
//! calls like it for the rest of the session: for bash, commands that start
//! with the same first two words, one for a one-word command; for another
//! tool, the tool). Deny rules beat everything. Without a terminal to ask,
//! `ask` refuses what it would have asked. A refused call never runs; the
//! model gets `PERMISSION_DENIED` saying who refused it and why, and goes on.
//!
//! The sandbox's part (the conversation sets it from its `ToolHost`):
//! `Approval::unsandboxed` says calls cannot be contained on this machine,
//! so in `ask` mode every call that is not read-only is asked, rules or
//! not; `Approval::rerun_outside_sandbox` asks whether a call that failed in
//! the sandbox may run again without it.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use super::render::{visible, Paint};
use rules::{Place, Rule};

pub mod preview;
pub mod rules;
pub mod runs;
pub mod shell;

/// `--approval`, `IKIGAI_APPROVAL`, config `approval`: one type, which
/// the config file reads (the file may not know the assistant).
pub use crate::config::ApprovalMode as Mode;

impl Mode {
    pub fn parse(text: &str) -> Result<Mode, String> {
        match text {
            "ask" => Ok(Mode::Ask),
            "auto" => Ok(Mode::Auto),
            other => Err(format!(
                "unknown approval mode '{other}' (choose ask or auto)"
            )),
        }
    }

    /// `ask` when a person is there to answer (stdin and stdout are
    /// terminals), else `auto`.
    pub fn default_here() -> Mode {
        if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
            Mode::Ask
        } else {
            Mode::Auto
        }
    }
}

/// A rule and where it was given, for the message of a call it refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sourced {
    pub rule: Rule,
    /// `--deny`, `/home/me/.config/ikigai/config.toml line 4`, ...
    pub from: String,
}

/// How the person is asked: the terminal, an editor over ACP, or a script
/// in tests.
pub trait Prompter: Send {
    /// Shows a block of text.
    fn show(&mut self, text: &str);
    /// Shows `question` and returns the line typed, None when there will be
    /// no answer (end of input, or `cancel` was set by Ctrl-C).
    fn answer(&mut self, question: &str, cancel: &AtomicBool) -> Option<String>;
    /// Asks `question`, whose answers are `choices`, and returns the key of
    /// the one chosen (or what was typed, which the caller checks); None as
    /// for `answer`. A prompter that offers buttons rather than a line
    /// shows the choices themselves.
    fn choose(
        &mut self,
        question: &str,
        choices: &[Choice],
        cancel: &AtomicBool,
    ) -> Option<String> {
        let _ = choices;
        self.answer(question, cancel)
    }
    /// How to colour what is shown.
    fn paint(&self) -> Paint {
        Paint::for_stream(false)
    }
}

/// Who judges a subagent's calls: the caller's own `Approval`, reached
/// through the caller's conversation, so rules, `a` answers and the
/// person's questions are the caller's, one question at a time.
/// Its halves are `Approval`'s own, so hooks run between them in a
/// subagent as in its caller.
pub trait Judge: Send {
    /// What the caller's rules say of the call (`Approval::rules`).
    fn rules(&self, tool: &str, arguments: &Value, read_only: bool) -> Ruled;
    /// The caller's person asked about the call (`Approval::question`).
    fn question(&mut self, tool: &str, arguments: &Value) -> Verdict;
    fn rerun_outside_sandbox(&mut self, tool: &str, why: &str) -> bool;
}

/// One answer to a question with fixed answers: what a terminal types
/// (`key`), what a button says (`label`), and what choosing it does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub key: &'static str,
    pub label: String,
    pub kind: ChoiceKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChoiceKind {
    /// Run this call.
    AllowOnce,
    /// Run it, and calls like it for the rest of the session.
    AllowAlways,
    /// Do not run it.
    RejectOnce,
}

impl Choice {
    fn new(key: &'static str, label: impl Into<String>, kind: ChoiceKind) -> Choice {
        Choice {
            key,
            label: label.into(),
            kind,
        }
    }
}

/// What becomes of one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Run,
    /// Not run; who refused it and why, for the model.
    Refuse(String),
}

pub struct Approval {
    mode: Mode,
    allow: Vec<Sourced>,
    deny: Vec<Sourced>,
    /// Rules the person added with `a`.
    session: Vec<Rule>,
    place: Place,
    /// None when no terminal can be asked.
    prompter: Option<Box<dyn Prompter>>,
    /// The sandbox cannot contain calls here (the kernel lacks what it
    /// needs): in `ask` mode, every call that is not read-only is asked,
    /// whatever the allow rules say. The conversation sets it from the host
    /// before each round of calls.
    pub unsandboxed: bool,
    /// Set: every call is judged there instead (a subagent's approval).
    judge: Option<Box<dyn Judge>>,
    /// Who asks, when it is not the person's own assistant (`subagent
    /// 'find config reads'`): said before the question.
    pub asking_for: Option<String>,
}

impl Approval {
    /// Every call runs: what a conversation does unless told otherwise.
    pub fn run_all() -> Approval {
        Approval::new(Mode::Auto, Vec::new(), Vec::new(), None)
    }

    pub fn new(
        mode: Mode,
        allow: Vec<Sourced>,
        deny: Vec<Sourced>,
        prompter: Option<Box<dyn Prompter>>,
    ) -> Approval {
        let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
        let home = std::env::var_os("HOME").map(Into::into);
        Approval {
            mode,
            allow,
            deny,
            session: Vec::new(),
            place: Place { cwd, home },
            prompter,
            unsandboxed: false,
            judge: None,
            asking_for: None,
        }
    }

    /// Every call judged by `judge` (a subagent's, by its caller's).
    pub fn judged_by(judge: Box<dyn Judge>) -> Approval {
        Approval {
            judge: Some(judge),
            ..Approval::run_all()
        }
    }

    /// Resolves relative paths in rules and calls against `place`.
    #[cfg(test)]
    pub fn with_place(mut self, place: Place) -> Approval {
        self.place = place;
        self
    }

    /// Adds allow rules until `end_for_now` (a custom command's
    /// `allowed-tools`, for its one message); returns the mark to end at.
    pub fn allow_for_now(&mut self, rules: Vec<Sourced>) -> usize {
        let mark = self.allow.len();
        self.allow.extend(rules);
        mark
    }

    /// Drops the rules `allow_for_now` added.
    pub fn end_for_now(&mut self, mark: usize) {
        self.allow.truncate(mark);
    }

    /// Decides on one call, asking the person when it is theirs to say.
    /// `read_only` is the tool's `readOnlyHint`. (The conversation runs
    /// hooks between the two halves, `rules` and `question`.)
    #[cfg(test)]
    pub fn check(
        &mut self,
        tool: &str,
        arguments: &Value,
        read_only: bool,
        cancel: &AtomicBool,
    ) -> Verdict {
        match self.rules(tool, arguments, read_only) {
            Ruled::Run => Verdict::Run,
            Ruled::Refuse(why) => Verdict::Refuse(why),
            Ruled::Ask => self.question(tool, arguments, cancel),
        }
    }

    /// What the rules and the mode say of one call, before anyone is asked:
    /// a deny rule refuses; `auto`, a read-only tool or an allow rule runs
    /// it; anything else is the person's to say. Hooks run between this and
    /// the question.
    pub fn rules(&self, tool: &str, arguments: &Value, read_only: bool) -> Ruled {
        if let Some(judge) = self.judge.as_ref() {
            return judge.rules(tool, arguments, read_only);
        }
        let tool = judged_as(tool);
        let denial = self.deny.iter().find_map(|d| {
            d.rule
                .refuses(tool, arguments, &self.place)
                .map(|what| (d, what))
        });
        if let Some((d, what)) = denial {
            let what = if what.is_empty() {
                String::new()
            } else {
                format!(", which matches {what}")
            };
            return Ruled::Refuse(format!(
                "Denied by the rule {} ({}){what}; do not try to get around it, ask the user instead",
                d.rule, d.from
            ));
        }
        if self.mode == Mode::Auto || read_only {
            return Ruled::Run;
        }
        let rules: Vec<&Rule> = self
            .allow
            .iter()
            .map(|s| &s.rule)
            .chain(&self.session)
            .collect();
        let allowed = rules::allowed(&rules, tool, arguments, &self.place);
        if allowed && !self.unsandboxed {
            return Ruled::Run;
        }
        Ruled::Ask
    }

    /// Asks the person about one call (what `rules` left to them, or what a
    /// hook asked to be asked).
    pub fn question(&mut self, tool: &str, arguments: &Value, cancel: &AtomicBool) -> Verdict {
        if let Some(judge) = self.judge.as_mut() {
            return judge.question(tool, arguments);
        }
        self.ask(judged_as(tool), tool, arguments, cancel)
    }

    /// Whether a question would reach a person (a terminal is there, or,
    /// for a subagent, its caller's).
    pub fn can_ask(&self) -> bool {
        self.prompter.is_some() || self.judge.is_some()
    }

    /// Asks about a call of `asked`, judged as `tool`.
    fn ask(&mut self, tool: &str, asked: &str, arguments: &Value, cancel: &AtomicBool) -> Verdict {
        let Some(prompter) = self.prompter.as_mut() else {
            return Verdict::Refuse(
                "Not run: it needs the user's approval (--approval ask) and there is no \
                 terminal to ask; the user may allow it with --allow or run with --approval auto"
                    .into(),
            );
        };
        let always = always_rules(tool, arguments);
        let listed = always
            .iter()
            .map(Rule::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let paint = prompter.paint();
        if let Some(who) = &self.asking_for {
            prompter.show(&paint.bold(&format!("{} asks:", visible(who))));
        }
        prompter.show(&preview::describe(asked, arguments, paint));
        if let Some(flag) = preview::hidden_characters(tool, arguments) {
            prompter.show(&paint.bold(&flag));
        }
        if tool == "bash" {
            let rules: Vec<&Rule> = self
                .allow
                .iter()
                .map(|s| &s.rule)
                .chain(&self.session)
                .filter(|r| r.tool == "bash")
                .collect();
            if let Some(reading) = preview::reading(arguments, &rules) {
                prompter.show(&paint.dim(&reading));
            }
        }
        let listed = visible(&listed).into_owned();
        let question =
            format!("Run it? y yes / n no / a yes, and allow {listed} for this session: ");
        let choices = [
            Choice::new("y", "Allow once", ChoiceKind::AllowOnce),
            Choice::new(
                "a",
                format!("Allow {listed} for this session"),
                ChoiceKind::AllowAlways,
            ),
            Choice::new("n", "Reject", ChoiceKind::RejectOnce),
        ];
        loop {
            let Some(line) = prompter.choose(&question, &choices, cancel) else {
                return Verdict::Refuse(
                    "The user did not answer (interrupted); the call was not run".into(),
                );
            };
            match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return Verdict::Run,
                "a" | "always" => {
                    prompter.show(&paint.dim(&format!("Allowed for this session: {listed}")));
                    self.session.extend(always);
                    return Verdict::Run;
                }
                "n" | "no" => {
                    let why = prompter
                        .answer("Tell the model why (optional; Enter to skip): ", cancel)
                        .map(|s| s.trim().to_string())
                        .unwrap_or_default();
                    return Verdict::Refuse(if why.is_empty() {
                        "The user refused this call".into()
                    } else {
                        format!("The user refused this call: {why}")
                    });
                }
                _ => prompter.show("Please answer y, n or a."),
            }
        }
    }

    /// Whether a call that failed inside the sandbox (`why`) may run again
    /// outside it: only in `ask` mode, only when the person says `y`.
    pub fn rerun_outside_sandbox(&mut self, tool: &str, why: &str, cancel: &AtomicBool) -> bool {
        if let Some(judge) = self.judge.as_mut() {
            return judge.rerun_outside_sandbox(tool, why);
        }
        if self.mode != Mode::Ask {
            return false;
        }
        let Some(prompter) = self.prompter.as_mut() else {
            return false;
        };
        let who = self
            .asking_for
            .as_ref()
            .map(|w| format!("{} · ", visible(w)))
            .unwrap_or_default();
        prompter.show(&format!(
            "{who}{tool} failed inside the sandbox: {}",
            visible(why)
        ));
        let choices = [
            Choice::new(
                "y",
                "Run it again outside the sandbox",
                ChoiceKind::AllowOnce,
            ),
            Choice::new("n", "Leave it failed", ChoiceKind::RejectOnce),
        ];
        let answer = prompter.choose(
            "Run it again outside the sandbox? y / n: ",
            &choices,
            cancel,
        );
        matches!(
            answer.as_deref().map(str::trim),
            Some("y" | "Y" | "yes" | "Yes")
        )
    }
}

/// What the rules say of a call (`Approval::rules`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ruled {
    Run,
    /// A deny rule refuses it: who and why, for the model.
    Refuse(String),
    /// The person is to be asked.
    Ask,
}

/// The tool whose rules judge a call of `tool`: a background shell runs a
/// command as bash does, and is judged as bash is (its rules, its prompt,
/// its `a`: docs/decisions.md 104).
fn judged_as(tool: &str) -> &str {
    if tool == crate::host::own::SHELL_START {
        "bash"
    } else {
        tool
    }
}

/// What `a` allows: for bash, each command's first two words (one for a
/// one-word command); for any other tool, the tool.
fn always_rules(tool: &str, arguments: &Value) -> Vec<Rule> {
    if tool != "bash" {
        return vec![Rule {
            tool: tool.to_string(),
            pattern: None,
        }];
    }
    // Each command it runs that a rule could allow (decision 100).
    let command = rules::Command::of(arguments);
    let texts: Vec<String> = command
        .runs
        .into_iter()
        .filter(|r| r.kind != runs::Kind::DenyOnly)
        .map(|r| r.text)
        .collect();
    let mut out: Vec<Rule> = Vec::new();
    for text in texts.iter().filter(|t| !t.trim().is_empty()) {
        let rule = Rule::first_words(text);
        if !out.contains(&rule) {
            out.push(rule);
        }
    }
    out
}

/// The person at the terminal: questions on stderr, answers from stdin,
/// read a line at a time so Ctrl-C (which sets `cancel`) is noticed.
pub struct TerminalPrompter {
    paint: Paint,
}

impl TerminalPrompter {
    pub fn new() -> TerminalPrompter {
        TerminalPrompter {
            paint: Paint::for_stream(std::io::stderr().is_terminal()),
        }
    }
}

impl Default for TerminalPrompter {
    fn default() -> Self {
        TerminalPrompter::new()
    }
}

impl Prompter for TerminalPrompter {
    fn show(&mut self, text: &str) {
        eprintln!("{text}");
    }

    fn answer(&mut self, question: &str, cancel: &AtomicBool) -> Option<String> {
        use std::io::Write;
        let mut err = std::io::stderr();
        let _ = write!(err, "{}", self.paint.bold(question));
        let _ = err.flush();
        let line = read_line(cancel);
        if line.is_none() {
            let _ = writeln!(err);
        }
        line
    }

    fn paint(&self) -> Paint {
        self.paint
    }
}

/// One line from stdin, waiting in short polls so that `cancel` ends the
/// wait; None at end of input or on cancel.
fn read_line(cancel: &AtomicBool) -> Option<String> {
    let mut line = Vec::new();
    loop {
        if cancel.load(Ordering::SeqCst) {
            return None;
        }
        let mut fds = libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut fds, 1, 100) };
        if ready <= 0 {
            continue; // timeout or EINTR: look at cancel again
        }
        let mut byte = 0u8;
        // SAFETY: reads at most one byte into a live local.
        let n = unsafe { libc::read(libc::STDIN_FILENO, (&mut byte as *mut u8).cast(), 1) };
        match n {
            1 if byte == b'\n' => return Some(String::from_utf8_lossy(&line).into_owned()),
            1 => line.push(byte),
            0 => return (!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned()),
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    /// Answers from a script; records what was shown and asked.
    #[derive(Clone, Default)]
    struct Script {
        answers: Arc<Mutex<VecDeque<&'static str>>>,
        seen: Arc<Mutex<Vec<String>>>,
    }

    impl Script {
        fn new(answers: &[&'static str]) -> Script {
            Script {
                answers: Arc::new(Mutex::new(answers.iter().copied().collect())),
                seen: Arc::default(),
            }
        }
        fn seen(&self) -> Vec<String> {
            self.seen.lock().unwrap().clone()
        }
    }

    impl Prompter for Script {
        fn show(&mut self, text: &str) {
            self.seen.lock().unwrap().push(text.to_string());
        }
        fn answer(&mut self, question: &str, _: &AtomicBool) -> Option<String> {
            self.seen.lock().unwrap().push(question.to_string());
            self.answers.lock().unwrap().pop_front().map(str::to_string)
        }
    }

    fn sourced(list: &[&str], from: &str) -> Vec<Sourced> {
        list.iter()
            .map(|r| Sourced {
                rule: Rule::parse(r).unwrap(),
                from: from.into(),
            })
            .collect()
    }

    fn approval(mode: Mode, allow: &[&str], deny: &[&str], script: Option<&Script>) -> Approval {
        Approval::new(
            mode,
            sourced(allow, "--allow"),
            sourced(deny, "--deny"),
            script.map(|s| Box::new(s.clone()) as Box<dyn Prompter>),
        )
        .with_place(Place {
            cwd: "/p".into(),
            home: None,
        })
    }

    fn bash(c: &str) -> Value {
        json!({ "command": c })
    }

    static NO: AtomicBool = AtomicBool::new(false);

    #[test]
    fn auto_runs_all_but_what_a_deny_rule_matches() {
        let mut a = approval(
            Mode::Auto,
            &[],
            &["bash(rm *)", "web_fetch(domain:evil.com)"],
            None,
        );
        assert_eq!(
            a.check("bash", &bash("cargo build"), false, &NO),
            Verdict::Run
        );
        assert_eq!(
            a.check("bash", &bash("cargo build && rm -rf target"), false, &NO),
            Verdict::Refuse(
                "Denied by the rule bash(rm *) (--deny), which matches `rm -rf target`; do not try \
                 to get around it, ask the user instead"
                    .into()
            )
        );
        // Deny rules hold for read-only tools too.
        let fetch = json!({"url": "https://api.evil.com/x"});
        assert!(matches!(
            a.check("web_fetch", &fetch, true, &NO),
            Verdict::Refuse(_)
        ));
    }

    #[test]
    fn deny_beats_allow() {
        let mut a = approval(Mode::Ask, &["bash"], &["bash(git push*)"], None);
        assert_eq!(
            a.check("bash", &bash("git status"), false, &NO),
            Verdict::Run
        );
        assert!(matches!(
            a.check("bash", &bash("git status; git push --force"), false, &NO),
            Verdict::Refuse(_)
        ));
    }

    #[test]
    fn ask_without_a_terminal_refuses_what_it_would_ask() {
        let mut a = approval(Mode::Ask, &["bash(cargo *)"], &[], None);
        assert_eq!(a.check("file_read", &json!({}), true, &NO), Verdict::Run);
        assert_eq!(
            a.check("bash", &bash("cargo test"), false, &NO),
            Verdict::Run
        );
        let Verdict::Refuse(why) = a.check("bash", &bash("cargo test > log"), false, &NO) else {
            panic!()
        };
        assert!(why.contains("there is no terminal to ask"), "{why}");
    }

    #[test]
    fn y_runs_once_n_refuses_with_the_persons_words() {
        let s = Script::new(&["y", "n", "use the other file"]);
        let mut a = approval(Mode::Ask, &[], &[], Some(&s));
        let w = json!({"file_path": "/nonexistent/x", "content": "hi\n"});
        assert_eq!(a.check("file_write", &w, false, &NO), Verdict::Run);
        assert_eq!(
            a.check("file_write", &w, false, &NO),
            Verdict::Refuse("The user refused this call: use the other file".into())
        );
        let seen = s.seen();
        assert!(
            seen[0].starts_with("file_write wants to create /nonexistent/x"),
            "{seen:?}"
        );
        assert!(seen[0].contains("+hi"), "{seen:?}");
        assert!(
            seen[1].contains("allow file_write for this session"),
            "{seen:?}"
        );
        assert_eq!(
            seen.last().unwrap(),
            "Tell the model why (optional; Enter to skip): "
        );
    }

    #[test]
    fn n_without_a_reason_and_unclear_answers() {
        let s = Script::new(&["maybe", "N", ""]);
        let mut a = approval(Mode::Ask, &[], &[], Some(&s));
        assert_eq!(
            a.check("bash", &bash("ls"), false, &NO),
            Verdict::Refuse("The user refused this call".into())
        );
        assert!(s.seen().contains(&"Please answer y, n or a.".to_string()));
        // End of input: refused.
        assert!(matches!(
            a.check("bash", &bash("ls"), false, &NO),
            Verdict::Refuse(_)
        ));
    }

    #[test]
    fn a_allows_the_first_two_words_for_the_session() {
        let s = Script::new(&["a"]);
        let mut a = approval(Mode::Ask, &[], &[], Some(&s));
        assert_eq!(
            a.check("bash", &bash("git status -s"), false, &NO),
            Verdict::Run
        );
        assert!(
            s.seen()[1].contains("allow bash(git status *)"),
            "{:?}",
            s.seen()
        );
        // No more questions for commands that start the same way.
        assert_eq!(
            a.check("bash", &bash("git status"), false, &NO),
            Verdict::Run
        );
        assert_eq!(
            a.check("bash", &bash("git status --long"), false, &NO),
            Verdict::Run
        );
        // Anything else is asked (and the script has no more answers).
        assert!(matches!(
            a.check("bash", &bash("git push"), false, &NO),
            Verdict::Refuse(_)
        ));
        // A one-word command: the word; compound commands: each part.
        let s = Script::new(&["a"]);
        let mut a = approval(Mode::Ask, &[], &[], Some(&s));
        assert_eq!(
            a.check("bash", &bash("make && ls -la"), false, &NO),
            Verdict::Run
        );
        assert!(
            s.seen()[2].contains("allow bash(make *), bash(ls -la *)"),
            "{:?}",
            s.seen()
        );
        assert_eq!(
            a.check("bash", &bash("make install"), false, &NO),
            Verdict::Run
        );
        // Other tools: the tool.
        let s = Script::new(&["a"]);
        let mut a = approval(Mode::Ask, &[], &[], Some(&s));
        let e = json!({"file_path": "/nonexistent/e", "old_string": "a", "new_string": "b"});
        assert_eq!(a.check("file_edit", &e, false, &NO), Verdict::Run);
        assert_eq!(a.check("file_edit", &e, false, &NO), Verdict::Run);
    }

    #[test]
    fn the_prompt_names_which_rule_matched_each_command() {
        let s = Script::new(&["n", ""]);
        let mut a = approval(Mode::Ask, &["bash(cargo test*)"], &[], Some(&s));
        let line = "cargo test && X=1 /bin/rm -f x > log";
        assert!(matches!(
            a.check("bash", &bash(line), false, &NO),
            Verdict::Refuse(_)
        ));
        let seen = s.seen();
        assert_eq!(seen[0], format!("bash wants to run:\n  {line}"));
        assert_eq!(
            seen[1],
            "As the rules read it:\n  `cargo test`: allowed by bash(cargo test*)\n  \
             `/bin/rm -f x` (read from `X=1 /bin/rm -f x > log`): it writes into a file, \
             which only you can allow\n  `rm -f x` (read from `X=1 /bin/rm -f x > log`): it \
             writes into a file, which only you can allow"
        );
        assert!(seen[2].starts_with("Run it?"), "{seen:?}");
    }

    #[test]
    fn the_prompt_shows_hidden_characters_and_says_so() {
        let s = Script::new(&["n", ""]);
        let mut a = approval(Mode::Ask, &[], &[], Some(&s));
        let line = "rm -rf ~/x\r\x1b[2K\x1b[1Aecho harmless \u{202e}";
        a.check("bash", &bash(line), false, &NO);
        let seen = s.seen();
        assert_eq!(
            seen[0],
            "bash wants to run:\n  rm -rf ~/x\\r\\e[2K\\e[1Aecho harmless <U+202E>"
        );
        assert!(
            seen[1].starts_with("Warning: The command holds control or invisible characters"),
            "{seen:?}"
        );
        assert!(
            seen.iter().all(|t| !t.contains(['\x1b', '\r', '\u{202e}'])),
            "{seen:?}"
        );
        // Any other tool's arguments too.
        let s = Script::new(&["n", ""]);
        let mut a = approval(Mode::Ask, &[], &[], Some(&s));
        a.check("mcp__x__y", &json!({"q": "a\u{202e}b\u{9b}"}), false, &NO);
        let seen = s.seen();
        assert!(seen[0].contains("a<U+202E>b<U+009B>"), "{seen:?}");
        assert!(
            seen[1].starts_with("Warning: The arguments hold"),
            "{seen:?}"
        );
        // A plain command has neither line.
        let s = Script::new(&["n", ""]);
        let mut a = approval(Mode::Ask, &[], &[], Some(&s));
        a.check("bash", &bash("ls -la"), false, &NO);
        assert!(s.seen()[1].starts_with("Run it?"), "{:?}", s.seen());
    }

    #[test]
    fn unsandboxed_asks_even_what_rules_allow() {
        let mut a = approval(Mode::Ask, &["bash"], &[], None);
        a.unsandboxed = true;
        assert_eq!(a.check("grep", &json!({}), true, &NO), Verdict::Run);
        assert!(matches!(
            a.check("bash", &bash("ls"), false, &NO),
            Verdict::Refuse(_)
        ));
    }

    #[test]
    fn rerun_outside_the_sandbox_only_when_the_person_says_so() {
        let s = Script::new(&["y", "n"]);
        let mut a = approval(Mode::Ask, &[], &[], Some(&s));
        assert!(a.rerun_outside_sandbox("bash", "write denied", &NO));
        assert!(!a.rerun_outside_sandbox("bash", "write denied", &NO));
        let mut auto = approval(Mode::Auto, &[], &[], Some(&s));
        assert!(!auto.rerun_outside_sandbox("bash", "x", &NO));
    }

    #[test]
    fn modes() {
        assert_eq!(Mode::parse("ask"), Ok(Mode::Ask));
        assert_eq!(Mode::parse("auto"), Ok(Mode::Auto));
        assert!(Mode::parse("yolo")
            .unwrap_err()
            .contains("choose ask or auto"));
    }
}
