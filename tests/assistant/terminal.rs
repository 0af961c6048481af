//! The interactive assistant at a real (pseudo) terminal: the prompt, line
//! editing, Ctrl-C and Ctrl-D as a person types them, colours on a
//! terminal and off with NO_COLOR.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::model_server::{text, Api, ModelServer, Reply};

/// `ikigai` with a pseudo-terminal as its controlling terminal and stdio.
struct Pty {
    child: Child,
    master: std::fs::File,
    screen: Arc<Mutex<String>>,
}

impl Pty {
    fn spawn(mut cmd: Command) -> Pty {
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty fills two descriptors we then own.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "openpty");
        // SAFETY: both are fresh descriptors owned by nobody else.
        let slave = unsafe { OwnedFd::from_raw_fd(slave) };
        // SAFETY: as above.
        let master = unsafe { std::fs::File::from_raw_fd(master) };
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

    fn type_in(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits until the screen shows `what` (a hang fails after 30 s).
    fn expect(&self, what: &str) {
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
    fn expect_prompt(&self, n: usize) {
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
    fn exit_code(&mut self) -> i32 {
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

    fn screen(&self) -> String {
        self.screen.lock().unwrap().clone()
    }
}

fn command(home: &std::path::Path) -> Command {
    // The same clean world as the other assistant tests.
    let mut cmd = Command::new(crate::common::link("ikigai"));
    for var in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "IKIGAI_PROVIDER",
        "NO_COLOR",
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
    // the second finds it empty.
    pty.type_in("\x03\x03");
    assert_eq!(pty.exit_code(), 0);
    let screen = pty.screen();
    assert!(!screen.contains("[stub]"), "{screen}");
    assert!(!screen.contains("\x1b[2m"), "NO_COLOR: {screen}");
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
    pty.expect("Interrupted.");
    pty.expect_prompt(2);
    pty.type_in("second\r");
    pty.expect("Answered.");
    pty.expect_prompt(3);
    pty.type_in("\x04");
    assert_eq!(pty.exit_code(), 0);
    assert!(server.problems().is_empty(), "{:?}", server.problems());
}
