//! The interactive assistant at a real (pseudo) terminal: the prompt, line
//! editing, multi-line input and pastes, Ctrl-C and Ctrl-D in each state,
//! rendered replies (coloured, and plain under NO_COLOR, byte for byte),
//! tool output as it runs, diffs, the slash commands, resuming.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::model_server::{text, Api, ModelServer, Reply};

/// `ikigai` with a pseudo-terminal as its controlling terminal and stdio.
pub(super) struct Pty {
    child: Child,
    master: std::fs::File,
    screen: Arc<Mutex<String>>,
}

impl Pty {
    pub(super) fn spawn(mut cmd: Command) -> Pty {
        let (master, slave) = crate::common::openpty();
        cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                libc::ioctl(0, libc::TIOCSCTTY, 0);
                Ok(())
            });
        }
        let child = cmd.spawn().expect("spawn ikigai on a pty");
        let screen = Arc::new(Mutex::new(String::new()));
        let (mut reader, sink) = (master.try_clone().unwrap(), Arc::clone(&screen));
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Pty {
            child,
            master,
            screen,
        }
    }

    pub(super) fn type_in(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits until the screen shows `what` (a hang fails after 30 s).
    pub(super) fn expect(&self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.screen.lock().unwrap().contains(what) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("never saw {what:?} on:\n{}", self.screen.lock().unwrap());
    }

    /// Waits until the prompt has been drawn for the `n`th time, so that
    /// keys like Ctrl-D reach the line editor, not the terminal's cooked
    /// mode. (rustyline turns bracketed paste on each time it reads a line.)
    pub(super) fn expect_prompt(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.screen.lock().unwrap().matches("\x1b[?2004h").count() >= n {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("prompt {n} never came:\n{}", self.screen.lock().unwrap());
    }

    /// Waits for the process to leave (a hang fails after 30 s).
    pub(super) fn exit_code(&mut self) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        panic!("ikigai did not leave:\n{}", self.screen.lock().unwrap());
    }

    pub(super) fn screen(&self) -> String {
        self.screen.lock().unwrap().clone()
    }

    /// Waits until `what` shows `n` times.
    fn expect_count(&self, what: &str, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.screen.lock().unwrap().matches(what).count() >= n {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("never saw {what:?} {n} times on:\n{}", self.screen());
    }

    /// Leaves with Ctrl-D at the `n`th prompt, which must exit 0.
    pub(super) fn leave(&mut self, prompt: usize) -> String {
        self.expect_prompt(prompt);
        self.type_in("\x04");
        assert_eq!(self.exit_code(), 0, "{}", self.screen());
        self.screen()
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) fn command(home: &std::path::Path) -> Command {
    // The same clean world as the other assistant tests.
    let mut cmd = Command::new(crate::common::link("ikigai"));
    for var in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "IKIGAI_PROVIDER",
        "NO_COLOR",
        "COLORTERM",
        "IKIGAI_MODEL",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "http_proxy",
        "HTTP_PROXY",
    ] {
        cmd.env_remove(var);
    }
    std::fs::create_dir_all(home.join("tools")).unwrap();
    std::fs::create_dir_all(home.join("libexec")).unwrap();
    cmd.env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("IKIGAI_TOOLS_DIR", home.join("tools"))
        .env("IKIGAI_LIBEXEC_DIR", home.join("libexec"))
        .env("TERM", "xterm")
        // These tests are about what the person sees of calls that run;
        // the approval prompt has tests of its own.
        .env("IKIGAI_APPROVAL", "auto")
        .current_dir(home);
    cmd
}

#[test]
fn a_person_types_edits_and_leaves_with_ctrl_d() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = command(home.path());
    cmd.args(["--provider", "stub"]);
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    // A typo fixed with backspace: line editing.
    pty.type_in("helo\x08\x08llo there\r");
    pty.expect("[stub] You said: hello there");
    // Up-arrow brings the last line back from history.
    pty.expect_prompt(2);
    pty.type_in("\x1b[A\r");
    pty.expect_prompt(3);
    pty.type_in("\x04");
    assert_eq!(pty.exit_code(), 0);
    let screen = pty.screen();
    assert_eq!(
        screen.matches("[stub] You said: hello there").count(),
        2,
        "{screen}"
    );
    assert!(screen.contains("\x1b["), "colours on a terminal: {screen}");
    let history = std::fs::read_to_string(home.path().join("data/ikigai/history")).unwrap();
    assert!(history.contains("hello there"), "{history}");
}

#[test]
fn ctrl_c_clears_a_line_then_leaves_at_an_empty_prompt() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = command(home.path());
    cmd.args(["--provider", "stub"]).env("NO_COLOR", "1");
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    pty.type_in("never sent");
    pty.expect("never sent");
    // The editor reads keys in order: the first Ctrl-C clears the line,
    // the second finds it empty and says how to leave, the third leaves.
    pty.type_in("\x03\x03");
    pty.expect("Press Ctrl-C again to leave (or Ctrl-D, or /quit).");
    pty.type_in("\x03");
    assert_eq!(pty.exit_code(), 0);
    let screen = pty.screen();
    assert!(!screen.contains("[stub]"), "{screen}");
    assert!(!screen.contains("\x1b[2m"), "NO_COLOR: {screen}");
}

#[test]
fn one_ctrl_c_at_an_empty_prompt_does_not_leave_nor_does_a_slow_second() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = command(home.path());
    cmd.args(["--provider", "stub"]);
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    pty.type_in("\x03");
    pty.expect("Press Ctrl-C again to leave");
    // More than two seconds later, a Ctrl-C counts as a first one again.
    std::thread::sleep(Duration::from_millis(2200));
    pty.type_in("\x03");
    pty.expect_count("Press Ctrl-C again to leave", 2);
    pty.type_in("still here\r");
    pty.expect("[stub] You said: still here");
    pty.leave(4);
}

#[test]
fn ctrl_c_at_the_terminal_stops_a_request_and_the_prompt_returns() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(
        Api::Anthropic,
        vec![Reply::Hang("Thinking".into()), text("Answered.")],
    );
    let mut cmd = command(home.path());
    cmd.args(["--provider", "anthropic"]);
    for (k, v) in server.env() {
        cmd.env(k, v);
    }
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    pty.type_in("first\r");
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.requests().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    pty.type_in("\x03");
    pty.expect("Cancelled by you: the request was stopped.");
    assert!(
        !pty.screen().contains("Press Ctrl-C again"),
        "a Ctrl-C during a request only stops it"
    );
    pty.expect_prompt(2);
    pty.type_in("second\r");
    pty.expect("Answered.");
    pty.expect_prompt(3);
    pty.type_in("\x04");
    assert_eq!(pty.exit_code(), 0);
    assert!(server.problems().is_empty(), "{:?}", server.problems());
}

/// `command` with our bash, file_edit and file_write as its tools.
fn with_tools(home: &std::path::Path) -> Command {
    let cmd = command(home);
    for name in ["bash", "file-edit", "file-write"] {
        std::os::unix::fs::symlink(crate::common::link(name), home.join("libexec").join(name))
            .unwrap();
    }
    cmd
}

fn pointed_at(server: &ModelServer, home: &std::path::Path) -> Command {
    let mut cmd = command(home);
    cmd.args(["--provider", server.api.name()]);
    for (k, v) in server.env() {
        cmd.env(k, v);
    }
    cmd
}

/// The screen without the spinner's frames and the erasures after them.
fn without_spinner(screen: &str) -> String {
    let mut out = String::new();
    for (i, piece) in screen.split("\r\x1b[2K").enumerate() {
        let frame = piece
            .chars()
            .next()
            .is_some_and(|c| ('\u{2800}'..='\u{28ff}').contains(&c));
        if i > 0 && frame {
            // "⠋ thinking": up to the next erasure, all spinner.
            continue;
        }
        out.push_str(piece);
    }
    out
}

/// Every markdown element a reply may hold.
const MARKDOWN: &str = "# Title\n\nSome *emphasis*, **strong** and `code` with a \
[link](https://example.com).\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n\n\
- [x] done\n\n> quoted\n\n| name | n |\n|------|--:|\n| a    | 1 |\n\n```rust\nfn main() {}\n```\n\n---\n\nThe end.";

/// The same, laid out for a terminal without colour.
const MARKDOWN_PLAIN: &str = "# Title\n\nSome emphasis, strong and `code` with a link \
(https://example.com).\n\n• one\n• two\n  ◦ nested\n\n1. first\n2. second\n\n• [x] done\n\n\
> quoted\n\n┌──────┬───┐\n│ name │ n │\n├──────┼───┤\n│ a    │ 1 │\n└──────┴───┘\n\n\
```rust\nfn main() {}\n```\n\n────────────────────────────────────────────────────────────\n\nThe end.\n";

#[test]
fn replies_are_rendered_plain_under_no_color_byte_for_byte() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Api::OpenAi, vec![text(MARKDOWN)]);
    let mut cmd = pointed_at(&server, home.path());
    cmd.env("NO_COLOR", "1");
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    pty.type_in("show me\r");
    pty.expect("The end.");
    let screen = pty.leave(2);
    // The terminal turns each newline into CR LF; the spinner on stderr
    // (drawn and erased between blocks) is no part of the reply.
    let expected = MARKDOWN_PLAIN.replace('\n', "\r\n");
    let reply = without_spinner(&screen);
    assert!(reply.contains(&expected), "{reply:?}");
    assert!(!screen.contains("\x1b[1m"), "{screen:?}");
}

#[test]
fn replies_are_rendered_in_colour_on_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Api::Anthropic, vec![text(MARKDOWN)]);
    let mut pty = Pty::spawn(pointed_at(&server, home.path()));
    pty.expect_prompt(1);
    pty.type_in("show me\r");
    pty.expect("The end.");
    let screen = pty.leave(2);
    for styled in [
        "\x1b[1;4;35mTitle\x1b[0m",
        "\x1b[3memphasis\x1b[0m",
        "\x1b[1mstrong\x1b[0m",
        "\x1b[36mcode\x1b[0m",
        "\x1b[4;34mlink\x1b[0m\x1b[2m (https://example.com)\x1b[0m",
        "\x1b[36m• \x1b[0mone",
        "\x1b[2m│ \x1b[0mquoted",
        "\x1b[1mname\x1b[0m",
        "\x1b[2m```rust\x1b[0m",
        // rust's keyword `fn`, coloured by the highlighter.
        "m\x1b[38;5;",
    ] {
        assert!(
            screen.contains(styled),
            "{styled:?} missing from {screen:?}"
        );
    }
    assert!(!screen.contains("**strong**"), "{screen:?}");
}

#[test]
fn bash_output_streams_under_its_call_and_folds_when_done() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = with_tools(home.path());
    cmd.args(["--provider", "stub"]).env("NO_COLOR", "1");
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    pty.type_in(
        "call bash {\"command\": \"echo first line; sleep 1; echo second line; sleep 1\"}\r",
    );
    // The first line shows while the command still runs.
    pty.expect("│ first line");
    assert!(!pty.screen().contains("✓ Ran"), "{}", pty.screen());
    pty.expect("✓ Ran echo first line; sleep 1; echo second line; sleep 1 (exit 0, 2 lines)");
    let screen = pty.leave(2);
    // Folded: the live lines were erased before the call's line.
    let after = screen.split("✓ Ran").nth(1).unwrap();
    assert!(!after.contains("│ first line"), "{screen:?}");
    assert!(screen.contains("\x1b[J"), "{screen:?}");
}

#[test]
fn an_edit_and_a_new_file_show_their_diffs() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("notes.txt"), "alpha\nbeta\ngamma\n").unwrap();
    let mut cmd = with_tools(home.path());
    cmd.args(["--provider", "stub"]).env("NO_COLOR", "1");
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    pty.type_in(
        "call file_edit {\"file_path\": \"notes.txt\", \"old_string\": \"beta\", \"new_string\": \"BETA\"}\r",
    );
    pty.expect("✓ Edited notes.txt (+1 -1)");
    pty.expect("    @@ -1,3 +1,3 @@\r\n     alpha\r\n    -beta\r\n    +BETA\r\n     gamma\r\n");
    pty.expect_prompt(2);
    pty.type_in("call file_write {\"file_path\": \"new.txt\", \"content\": \"x\\ny\\n\"}\r");
    pty.expect("✓ Created new.txt (2 lines)\r\n    @@ -0,0 +1,2 @@\r\n    +x\r\n    +y\r\n");
    pty.leave(3);
}

#[test]
fn ctrl_c_during_a_tool_cancels_it_and_keeps_its_output_for_the_model() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            crate::common::model_server::calls(&[(
                "bash",
                serde_json::json!({"command": "echo started; sleep 30; echo never"}),
            )]),
            text("Understood, you stopped it."),
        ],
    );
    let mut cmd = pointed_at(&server, home.path());
    std::os::unix::fs::symlink(
        crate::common::link("bash"),
        home.path().join("libexec/bash"),
    )
    .unwrap();
    cmd.env("NO_COLOR", "1");
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    pty.type_in("run it\r");
    pty.expect("│ started");
    pty.type_in("\x03");
    pty.expect("(the output so far is kept for the model)");
    pty.expect("Cancelled by you: the running tools were stopped");
    pty.expect_prompt(2);
    // The next message carries the cancelled call's envelope to the model.
    pty.type_in("why?\r");
    pty.expect("Understood, you stopped it.");
    pty.leave(3);
    let requests = server.requests();
    // The conversation, without the system prompt (which names every code).
    let sent = requests[1].body["messages"].as_array().unwrap()[1..]
        .iter()
        .map(|m| m.to_string())
        .collect::<String>();
    assert!(sent.contains("CANCELLED"), "{sent}");
    assert!(sent.contains("cancelled by the user"), "{sent}");
    assert!(sent.contains("started"), "{sent}");
    assert!(!sent.contains("TOOL_TIMEOUT"), "{sent}");
}

/// The user messages of the newest session in `home`'s data directory.
fn logged_user_texts(home: &std::path::Path) -> Vec<String> {
    let dir = home.join("data/ikigai/sessions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let log = std::fs::read_to_string(files.last().unwrap()).unwrap();
    log.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "user")
        .map(|v| v["text"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_trailing_backslash_and_a_paste_each_make_one_message() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = command(home.path());
    cmd.args(["--provider", "stub"]);
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    pty.type_in("first line \\\r");
    pty.type_in("second line\r");
    pty.expect("[stub] You said: first line");
    pty.expect_prompt(2);
    // A paste with newlines, in bracketed-paste markers, then Enter.
    pty.type_in("\x1b[200~pasted one\npasted two\x1b[201~");
    pty.type_in("\r");
    pty.expect("[stub] You said: pasted one");
    pty.leave(3);
    assert_eq!(
        logged_user_texts(home.path()),
        ["first line \nsecond line", "pasted one\npasted two"]
    );
}

#[test]
fn history_is_kept_from_the_first_run() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = command(home.path());
    cmd.args(["--provider", "stub"]);
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    // A command only: no session is made, so nothing else makes the directory.
    pty.type_in("/cost\r");
    pty.expect("No tokens used yet.");
    pty.leave(2);
    let history = std::fs::read_to_string(home.path().join("data/ikigai/history")).unwrap();
    assert!(history.contains("/cost"), "{history}");
}

#[test]
fn clear_compact_model_cost_and_the_status_line() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = command(home.path());
    cmd.args(["--provider", "stub"]).env("NO_COLOR", "1");
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    pty.type_in("remember the word kiwi\r");
    pty.expect("[stub] You said: remember the word kiwi");
    // The status line after the reply: the stub's token counts.
    pty.expect(" out\r\n");
    pty.expect_prompt(2);
    pty.type_in("/cost\r");
    pty.expect("Tokens since start: ");
    pty.expect("No price is known for stub.");
    pty.expect_prompt(3);
    pty.type_in("/compact\r");
    pty.expect("Compacted into a summary: about ");
    pty.expect("tokens; the conversation goes on from it.");
    pty.expect_prompt(4);
    pty.type_in("/model\r");
    pty.expect("Model: stub stub.");
    pty.expect_prompt(5);
    pty.type_in("/model stub\r");
    pty.expect("Now talking to stub stub.");
    pty.expect_prompt(6);
    pty.type_in("/model claude-sonnet-4-5\r");
    pty.expect("No API key for anthropic, so the model was not switched.");
    pty.expect_prompt(7);
    pty.type_in("/clear\r");
    pty.expect("Started a new conversation");
    pty.expect_prompt(8);
    pty.type_in("after clear\r");
    pty.expect("[stub] You said: after clear");
    pty.expect_prompt(9);
    pty.type_in("/hlep\r");
    pty.expect("Did you mean '/help'?");
    pty.leave(10);
    let dir = home.path().join("data/ikigai/sessions");
    let mut logs: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    logs.sort_by_key(|l| l.contains("after clear"));
    assert_eq!(logs.len(), 2, "/clear starts a new session: {logs:?}");
    assert!(logs[0].contains("\"type\":\"compacted\""), "{}", logs[0]);
    assert!(!logs[1].contains("kiwi"), "{}", logs[1]);
}

#[test]
fn sessions_resume_and_dash_dash_resume_show_the_last_exchanges() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = command(home.path());
    cmd.args(["--provider", "stub"]).env("NO_COLOR", "1");
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    for (i, word) in ["apple", "banana", "cherry", "damson"].iter().enumerate() {
        pty.type_in(&format!("fruit {word}\r"));
        pty.expect(&format!("You said: fruit {word}"));
        pty.expect_prompt(i + 2);
    }
    pty.leave(5);
    let first_id = {
        let dir = home.path().join("data/ikigai/sessions");
        let entry = std::fs::read_dir(dir).unwrap().next().unwrap().unwrap();
        entry
            .path()
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };

    // --resume shows the last three exchanges before the prompt.
    let mut cmd = command(home.path());
    cmd.args(["--provider", "stub", "--resume"])
        .env("NO_COLOR", "1");
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    let screen = pty.screen();
    assert!(screen.contains("… 2 earlier messages"), "{screen}");
    assert!(!screen.contains("> fruit apple"), "{screen}");
    for word in ["banana", "cherry", "damson"] {
        assert!(
            screen.contains(&format!("> fruit {word}\r\n[stub] You said: fruit {word}")),
            "{screen}"
        );
    }
    assert!(screen.contains("─── continue below ───"), "{screen}");
    pty.type_in("/clear\r");
    pty.expect_prompt(2);
    pty.type_in("a new one\r");
    pty.expect("You said: a new one");
    pty.expect_prompt(3);
    pty.type_in("/sessions\r");
    pty.expect("Continue one with /resume ID.");
    let screen = pty.screen();
    let listing = screen
        .split("Sessions in this directory, newest first:")
        .nth(1)
        .unwrap();
    let new_at = listing.find("a new one").unwrap();
    let old_at = listing.find("fruit apple").unwrap();
    assert!(new_at < old_at, "newest first: {listing}");
    assert!(listing.contains("  4 messages"), "{listing}");
    pty.type_in(&format!("/resume {first_id}\r"));
    pty.expect(&format!("Resumed session {first_id} (8 messages)."));
    pty.expect_count("> fruit damson", 2);
    pty.expect_prompt(5);
    pty.type_in("/resume nope\r");
    pty.expect("no session 'nope'");
    pty.leave(6);
}

#[test]
fn a_pipe_gets_the_markdown_exactly_as_written() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Api::OpenAi, vec![text(MARKDOWN)]);
    let out = super::against(&server, home.path())
        .args(["-p", "show me"])
        .env("NO_COLOR", "1")
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, format!("{MARKDOWN}\n"));
}

#[test]
fn one_shot_texts_say_nothing_of_a_next_message() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Api::OpenAi, vec![Reply::Status(400, "bad request".into())]);
    let out = super::against(&server, home.path())
        .args(["-p", "hi"])
        .output();
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("bad request"), "{}", out.stderr);
    assert!(!out.stderr.contains("another message"), "{}", out.stderr);
    let out = super::ikigai(home.path())
        .args([
            "--provider",
            "stub",
            "--max-tool-rounds",
            "0",
            "-p",
            "call nope {}",
        ])
        .output();
    assert!(
        out.stderr
            .contains("Stopped after 0 tool rounds (raise --max-tool-rounds to allow more)."),
        "{}",
        out.stderr
    );
}

/// Decision 59: what a model or a tool wrote is shown, never obeyed: the
/// reply's, the call line's and the live output's escape sequences,
/// carriage returns and bidirectional overrides reach the terminal as
/// visible text, while the renderer's own colours still work.
#[test]
fn control_characters_from_the_model_and_tools_are_shown_not_obeyed() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            crate::common::model_server::calls(&[(
                "bash",
                // The pause lets the live line arrive well before the
                // answer: the live view draws at most every 50 ms, and a
                // line that came with the answer would never be drawn.
                serde_json::json!({
                    "command": "printf 'o\\033[2J\\033]0;t\\007\\n'; sleep 0.5 # \u{1b}[1A\rhid"
                }),
            )]),
            text("Reply \x1b[2J\x1b]0;pwned\x07with **strong** and \u{202e}txt.\r\nThe end."),
        ],
    );
    let cmd = pointed_at(&server, home.path());
    std::os::unix::fs::symlink(
        crate::common::link("bash"),
        home.path().join("libexec/bash"),
    )
    .unwrap();
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    pty.type_in("go\r");
    pty.expect("The end.");
    let screen = pty.leave(2);
    for obeyed in ["\x1b[2J", "\x1b]0;", "\x1b[1A", "\u{202e}", "\x07"] {
        assert!(
            !screen.contains(obeyed),
            "{obeyed:?} reached the terminal: {screen:?}"
        );
    }
    for shown in [
        // The reply, its CRLF line end taken as a line end.
        r"Reply \e[2J\e]0;pwned<U+0007>with ",
        "<U+202E>txt.\r\n",
        // The finished call's line and the live output.
        r"# \e[1A\rhid (exit 0",
        r"o\e[2J\e]0;t<U+0007>",
    ] {
        assert!(screen.contains(shown), "{shown:?} missing from {screen:?}");
    }
    // The renderer's own colour codes still work.
    assert!(screen.contains("\x1b[1mstrong\x1b[0m"), "{screen:?}");
}

#[test]
fn the_plan_shows_as_a_checklist_each_time_it_changes() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = command(home.path());
    cmd.args(["--provider", "stub"]).env("NO_COLOR", "1");
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    let plan = serde_json::json!({"plan": [
        {"step": "Read the parser", "status": "completed"},
        {"step": "Fix the off-by-one", "status": "in_progress"},
        {"step": "Run the tests", "status": "pending"}
    ], "explanation": "found the bug"});
    pty.type_in(&format!("call update_plan {plan}\r"));
    pty.expect("✓ Updated the plan (1 of 3 done)");
    pty.expect("Plan:\r\n  ✓ Read the parser\r\n  ▸ Fix the off-by-one\r\n  ☐ Run the tests\r\n    found the bug");
    pty.expect_prompt(2);
    // A plan the tool refuses (two steps in progress) is not shown.
    let bad = serde_json::json!({"plan": [
        {"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}
    ]});
    pty.type_in(&format!("call update_plan {bad}\r"));
    pty.expect("at most one may be");
    pty.expect_prompt(3);
    let done = serde_json::json!({"plan": [
        {"step": "Read the parser", "status": "completed"},
        {"step": "Fix the off-by-one", "status": "completed"},
        {"step": "Run the tests", "status": "in_progress"}
    ]});
    pty.type_in(&format!("call update_plan {done}\r"));
    pty.expect("  ✓ Fix the off-by-one\r\n  ▸ Run the tests");
    let screen = pty.leave(4);
    assert_eq!(screen.matches("Plan:").count(), 2, "{screen}");
}

#[test]
fn undo_asks_before_putting_back_a_file_someone_changed_since() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = command(home.path());
    std::os::unix::fs::symlink(
        crate::common::link("file-write"),
        home.path().join("libexec/file-write"),
    )
    .unwrap();
    cmd.args(["--provider", "stub"]).env("NO_COLOR", "1");
    let (a, b) = (home.path().join("a.txt"), home.path().join("b.txt"));
    std::fs::write(&a, "a before\n").unwrap();
    std::fs::write(&b, "b before\n").unwrap();
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    let write = |path: &std::path::Path, content: &str| serde_json::json!({"file_path": path, "content": content});
    pty.type_in(&format!(
        "call file_write {} call file_write {}\r",
        write(&a, "a model\n"),
        write(&b, "b model\n")
    ));
    pty.expect_prompt(2);
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "a model\n");
    // Someone else changes a.txt after the model did.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&a, "a by hand\n").unwrap();
    pty.type_in("/undo\r");
    pty.expect("has changed since the model wrote it. Restore it anyway? y / n: ");
    pty.type_in("n\r");
    pty.expect("Left as they are (changed since): ");
    pty.expect_prompt(3);
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "a by hand\n");
    assert_eq!(std::fs::read_to_string(&b).unwrap(), "b before\n");
    // The next message tells the model (the stub echoes it).
    pty.type_in("ok\r");
    pty.expect("[stub] You said: [The user undid your last file changes (/undo).");
    pty.expect_prompt(4);
    // Again, and this time the person says yes.
    pty.type_in(&format!(
        "call file_write {}\r",
        write(&a, "a model again\n")
    ));
    pty.expect_prompt(5);
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&a, "a by hand again\n").unwrap();
    pty.type_in("/undo\r");
    pty.expect_count("Restore it anyway? y / n: ", 2);
    pty.type_in("y\r");
    pty.expect("Restored ");
    pty.leave(6);
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "a by hand\n");
}

#[test]
fn undo_never_writes_or_removes_through_a_directory_a_tool_replaced_by_a_link() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = command(home.path());
    for tool in ["file-write", "bash"] {
        std::os::unix::fs::symlink(
            crate::common::link(tool),
            home.path().join("libexec").join(tool),
        )
        .unwrap();
    }
    cmd.args(["--provider", "stub"]).env("NO_COLOR", "1");
    // The person's real config, and a workspace file that says otherwise.
    let config = home.path().join("config/ikigai");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "# mine\n").unwrap();
    std::fs::write(config.join("notes.toml"), "# also mine\n").unwrap();
    let cfg = home.path().join("cfg");
    std::fs::create_dir(&cfg).unwrap();
    std::fs::write(cfg.join("config.toml"), "sandbox = \"off\"\n").unwrap();
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    let write = |name: &str| serde_json::json!({"file_path": cfg.join(name), "content": "x = 1\n"});
    let swap =
        serde_json::json!({"command": format!("rm -rf cfg && ln -s {} cfg", config.display())});
    pty.type_in(&format!(
        "call file_write {} call file_write {} call bash {swap}\r",
        write("config.toml"),
        write("notes.toml")
    ));
    pty.expect_prompt(2);
    pty.type_in("/undo\r");
    pty.expect_count("Restore it anyway? y / n: ", 1);
    pty.type_in("y\r");
    pty.expect_count("Restore it anyway? y / n: ", 2);
    pty.type_in("y\r");
    pty.expect("no longer reached without a link");
    let screen = pty.leave(3);
    assert!(screen.contains("No file was restored."), "{screen}");
    assert_eq!(
        std::fs::read_to_string(config.join("config.toml")).unwrap(),
        "# mine\n"
    );
    assert_eq!(
        std::fs::read_to_string(config.join("notes.toml")).unwrap(),
        "# also mine\n"
    );
}
