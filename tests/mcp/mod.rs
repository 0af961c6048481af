//! MCP both ways, against real peers: the official Python SDK (`mcp` on
//! PyPI) as a client of `ikigai-tools mcp` and, as FastMCP, as a server of
//! the host; where node is present, the reference server
//! `@modelcontextprotocol/server-everything`. The peers are installed under
//! `target/` on first use (a venv, an npm prefix) and reused; without
//! python3 (or node) those tests say why and pass without running.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::common::bin;

mod client;
mod fenced;
mod http;
mod load;
mod server;

/// The SDK release the tests speak to.
const MCP_SDK: &str = "mcp==2.3.0";
/// The reference server's release.
const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp")
        .join(name)
}

/// The venv's python with the SDK installed, made once; None (with the
/// reason printed) when this machine has no python3.
pub fn python() -> Option<&'static Path> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let venv = target_dir().join("mcp-venv");
            let python = venv.join("bin/python");
            let marker = venv.join(format!(".installed-{MCP_SDK}"));
            if marker.exists() {
                return Some(python);
            }
            if Command::new("python3").arg("--version").output().is_err() {
                eprintln!("skipped: python3 is not installed, so the MCP Python SDK cannot run");
                return None;
            }
            must(Command::new("python3").arg("-m").arg("venv").arg(&venv));
            must(Command::new(venv.join("bin/pip")).args(["install", "-q", MCP_SDK]));
            std::fs::write(&marker, "").expect("venv marker");
            Some(python)
        })
        .as_deref()
}

/// The reference server's executable, installed once with npm; None (with
/// the reason printed) when this machine has no node.
pub fn everything() -> Option<&'static Path> {
    static SERVER: OnceLock<Option<PathBuf>> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            let prefix = target_dir().join("mcp-node");
            let server = prefix.join("node_modules/.bin/mcp-server-everything");
            let marker = prefix.join(".installed-server-everything");
            if marker.exists() {
                return Some(server);
            }
            if Command::new("node").arg("--version").output().is_err() {
                eprintln!("skipped: node is not installed, so server-everything cannot run");
                return None;
            }
            std::fs::create_dir_all(&prefix).expect("npm prefix");
            must(
                Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund", "--prefix"])
                    .arg(&prefix)
                    .arg(EVERYTHING),
            );
            std::fs::write(&marker, "").expect("npm marker");
            Some(server)
        })
        .as_deref()
}

fn must(cmd: &mut Command) {
    let out = cmd.output().expect("run the installer");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A system tools directory holding our ten tools (links to the binary).
pub fn tools_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let list = Command::new(bin()).arg("--list").output().expect("--list");
    for name in String::from_utf8_lossy(&list.stdout).lines() {
        std::os::unix::fs::symlink(bin(), dir.path().join(name)).expect("link");
    }
    dir
}

/// A user tools directory that does not exist.
fn tools_dir_placeholder() -> PathBuf {
    Path::new("/nonexistent/ikigai-mcp-test-tools").to_path_buf()
}

/// `ikigai-tools mcp` over stdio, spoken to line by line.
pub struct StdioServer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    _tools: tempfile::TempDir,
}

impl StdioServer {
    pub fn start(extra: &[&str]) -> StdioServer {
        StdioServer::with_user_tools(&tools_dir_placeholder(), extra)
    }

    /// The server over our ten tools and `user` as the user's tools.
    pub fn with_user_tools(user: &Path, extra: &[&str]) -> StdioServer {
        let tools = tools_dir();
        let mut child = Command::new(bin())
            .arg("mcp")
            .arg("--libexec-dir")
            .arg(tools.path())
            .arg("--tools-dir")
            .arg(user)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ikigai-tools mcp");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StdioServer {
            stdin: child.stdin.take(),
            child,
            lines,
            _tools: tools,
        }
    }

    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write to the server");
        stdin.flush().expect("flush");
    }

    pub fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    /// The next line the server prints, as JSON (every line must be JSON).
    pub fn recv(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(20))
            .expect("an answer within 20 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// No line within `wait`.
    pub fn quiet_for(&self, wait: Duration) -> bool {
        self.lines.recv_timeout(wait).is_err()
    }

    /// Closes stdin and returns the exit code.
    pub fn finish(mut self) -> Option<i32> {
        self.stdin.take();
        self.child.wait().expect("wait").code()
    }
}

/// Whether process `pid` still exists (a zombie counts as gone).
pub fn alive(pid: i32) -> bool {
    crate::common::Stat::of(pid).is_some_and(|s| !s.ended())
}

/// Holds the Python peers to one test at a time: each starts an interpreter
/// that imports the whole SDK, and a dozen at once on a small machine would
/// outlast the host's 10 s start timeout.
pub fn one_peer_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits (at most 20 s) for `done`.
pub fn eventually(done: impl Fn() -> bool) -> bool {
    for _ in 0..400 {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}
