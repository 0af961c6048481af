//! The sandbox's worker, as an MCP client meets it: calls of our tools that
//! start no process run in one fenced `ikigai-worker` process, reused call
//! after call, that keeps the fence, is killed by a timeout or a cancel,
//! is replaced when it died or its writable directories were made anew,
//! and ends with its host.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use super::spawner::children_of;
use super::{landlock, World};
use crate::common::{bin, Stat};
use crate::host::Pid;
use crate::mcp::{alive, eventually};

/// `ikigai-tools mcp` over the world's tools, with our file tools linked,
/// started in the workspace.
struct Server {
    process: Child,
    stdin: ChildStdin,
    answers: mpsc::Receiver<Value>,
    /// Answers read while waiting for another.
    early: HashMap<i64, Value>,
    next_id: i64,
}

impl Server {
    fn start(w: &World, options: &[&str]) -> Server {
        for tool in ["file_read", "glob", "grep", "file_edit"] {
            if !w.dirs.sys.join(tool).exists() {
                w.dirs.link(&w.dirs.sys, tool, bin());
            }
        }
        let mut process = Command::new(bin())
            .args(["mcp", "--libexec-dir"])
            .arg(&w.dirs.sys)
            .arg("--tools-dir")
            .arg(&w.dirs.user)
            .args(options)
            .current_dir(&w.ws)
            .env("TMPDIR", &w.ws)
            .env_remove("IKIGAI_SANDBOX")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = process.stdin.take().unwrap();
        let stdout = process.stdout.take().unwrap();
        let (tell, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(message) = serde_json::from_str::<Value>(&line) {
                    if tell.send(message).is_err() {
                        break;
                    }
                }
            }
        });
        let mut server = Server {
            process,
            stdin,
            answers,
            early: HashMap::new(),
            next_id: 0,
        };
        let id = server.send(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}),
        );
        server.answer(id);
        server.line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn line(&mut self, message: &Value) {
        self.stdin
            .write_all(format!("{message}\n").as_bytes())
            .unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request; returns its id.
    fn send(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Starts a tool call; returns its id.
    fn start_call(&mut self, tool: &str, arguments: Value) -> i64 {
        self.send("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// The answer to request `id` (its `result`), waiting at most 20 s.
    fn answer(&mut self, id: i64) -> Value {
        loop {
            if let Some(answer) = self.early.remove(&id) {
                return answer["result"].clone();
            }
            let message = self
                .answers
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("no answer to request {id}"));
            if let Some(other) = message["id"].as_i64() {
                self.early.insert(other, message);
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let id = self.start_call(tool, arguments);
        self.answer(id)
    }

    fn cancel(&mut self, id: i64) {
        self.line(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "test"}}),
        );
    }

    /// The server's children named `ikigai-worker`.
    fn workers(&self) -> Vec<i32> {
        children_of(self.process.id() as i32)
            .into_iter()
            .filter(|(_, name)| name == "ikigai-worker")
            .map(|(pid, _)| pid)
            .collect()
    }

    /// The one worker there is.
    fn worker(&self) -> i32 {
        let workers = self.workers();
        assert_eq!(workers.len(), 1, "one worker: {workers:?}");
        workers[0]
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// The tool's own answer (`structuredContent`) of a call that succeeded.
fn ok(result: &Value) -> &Value {
    assert_eq!(result["isError"], false, "{result}");
    &result["structuredContent"]
}

/// The text of a failed call.
fn failed(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{result}"))
        .to_string()
}

/// A call that runs until it is stopped: file_read of the second line of
/// a sparse terabyte without a line end scans it all. (Our tools never
/// block: a FIFO or a device is refused at once.)
/// Does the process hold `path` open?
fn holds_open(pid: i32, path: &std::path::Path) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == path))
    })
}

fn endless(w: &World) -> Value {
    let path = w.ws.join("sparse");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(1 << 40).unwrap();
    json!({"file_path": path, "offset": 2, "limit": 1})
}

#[test]
fn our_file_tools_share_one_worker_call_after_call() {
    let w = World::new();
    std::fs::write(w.ws.join("a.txt"), "alpha\nbeta\n").unwrap();
    let mut server = Server::start(&w, &[]);
    // A relative path is the server's directory's.
    let read = server.call("file_read", json!({"file_path": "a.txt"}));
    assert_eq!(ok(&read)["output"], "alpha\nbeta\n");
    let worker = server.worker();
    let wrote = server.call(
        "file_write",
        json!({"file_path": w.ws.join("b.txt"), "content": "gamma\n"}),
    );
    assert_eq!(ok(&wrote)["bytes"], 6);
    let edited = server.call(
        "file_edit",
        json!({"file_path": w.ws.join("b.txt"), "old_string": "gamma", "new_string": "delta"}),
    );
    ok(&edited);
    assert_eq!(
        std::fs::read_to_string(w.ws.join("b.txt")).unwrap(),
        "delta\n"
    );
    let globbed = server.call("glob", json!({"pattern": "*.txt", "path": w.ws}));
    assert_eq!(ok(&globbed)["count"], 2, "{globbed}");
    let grepped = server.call("grep", json!({"pattern": "beta", "path": w.ws}));
    assert_eq!(ok(&grepped)["count"], 1, "{grepped}");
    // One worker served them all, in a process group of its own (the
    // terminal's Ctrl-C reaches the host's, which turns it into a cancel).
    assert_eq!(server.worker(), worker);
    let group = |pid: i32| Stat::of(pid).map(|s| s.pgrp);
    assert_eq!(group(worker), Some(worker));
    assert_ne!(group(worker), group(server.process.id() as i32));
    // bash starts processes: it runs contained, not in the worker.
    let bash = server.call("bash", json!({"command": "echo hi"}));
    assert_eq!(ok(&bash)["output"], "hi");
    assert_eq!(server.workers(), [worker]);
}

#[test]
fn the_worker_keeps_the_fence() {
    if landlock().is_none() {
        return;
    }
    let w = World::new();
    std::fs::write(w.outside.join("readable.txt"), "seen\n").unwrap();
    let mut server = Server::start(&w, &[]);
    let inside = server.call(
        "file_write",
        json!({"file_path": w.ws.join("in.txt"), "content": "x"}),
    );
    ok(&inside);
    let outside = w.outside.join("out.txt");
    let refused = server.call("file_write", json!({"file_path": outside, "content": "x"}));
    let text = failed(&refused);
    assert!(text.contains("Permission denied"), "{text}");
    assert!(!outside.exists());
    // Reads are anywhere.
    let read = server.call(
        "file_read",
        json!({"file_path": w.outside.join("readable.txt")}),
    );
    assert_eq!(ok(&read)["output"], "seen\n");
    server.worker();
}

#[test]
fn a_timeout_kills_the_worker_and_the_next_call_gets_another() {
    let w = World::new();
    let endless = endless(&w);
    std::fs::write(w.ws.join("a.txt"), "a\n").unwrap();
    let mut server = Server::start(&w, &["--timeout", "1"]);
    ok(&server.call("file_read", json!({"file_path": "a.txt"})));
    let first = server.worker();
    let text = failed(&server.call("file_read", endless));
    assert!(text.contains("timed out"), "{text}");
    assert!(eventually(|| !alive(first)), "the worker outlived its call");
    let read = server.call("file_read", json!({"file_path": "a.txt"}));
    assert_eq!(ok(&read)["output"], "a\n");
    let second = server.worker();
    assert_ne!(second, first);
}

#[test]
fn a_cancel_kills_the_worker() {
    let w = World::new();
    let endless = endless(&w);
    std::fs::write(w.ws.join("a.txt"), "a\n").unwrap();
    let mut server = Server::start(&w, &[]);
    ok(&server.call("file_read", json!({"file_path": "a.txt"})));
    let first = server.worker();
    let blocked = server.start_call("file_read", endless);
    std::thread::sleep(Duration::from_millis(200));
    server.cancel(blocked);
    assert!(
        eventually(|| !alive(first)),
        "the cancelled call's worker lived on"
    );
    let read = server.call("file_read", json!({"file_path": "a.txt"}));
    assert_eq!(ok(&read)["output"], "a\n");
    assert_ne!(server.worker(), first);
}

#[test]
fn calls_at_once_get_workers_of_their_own() {
    let w = World::new();
    let endless = endless(&w);
    std::fs::write(w.ws.join("a.txt"), "a\n").unwrap();
    let mut server = Server::start(&w, &[]);
    let blocked = server.start_call("file_read", endless);
    // The endless call is under way (its worker reads the file) before the
    // others are sent, so that none of them can take its worker first.
    let sparse = w.ws.join("sparse");
    assert!(eventually(|| server
        .workers()
        .iter()
        .any(|&pid| holds_open(pid, &sparse))));
    // While one call runs, others answer.
    for _ in 0..3 {
        let read = server.call("file_read", json!({"file_path": "a.txt"}));
        assert_eq!(ok(&read)["output"], "a\n");
    }
    assert_eq!(server.workers().len(), 2, "{:?}", server.workers());
    server.cancel(blocked);
    assert!(eventually(|| server.workers().len() == 1));
}

#[test]
fn workers_end_with_their_host() {
    let w = World::new();
    let endless = endless(&w);
    std::fs::write(w.ws.join("a.txt"), "a\n").unwrap();
    let mut server = Server::start(&w, &[]);
    // One worker in a call, one idle.
    server.start_call("file_read", endless);
    ok(&server.call("file_read", json!({"file_path": "a.txt"})));
    assert!(eventually(|| server.workers().len() == 2));
    let workers = server.workers();
    server.process.kill().unwrap();
    server.process.wait().unwrap();
    assert!(
        eventually(|| workers.iter().all(|pid| !alive(*pid))),
        "a worker outlived its host: {workers:?}"
    );
}

#[test]
fn a_killed_worker_is_replaced() {
    let w = World::new();
    std::fs::write(w.ws.join("a.txt"), "a\n").unwrap();
    let mut server = Server::start(&w, &[]);
    ok(&server.call("file_read", json!({"file_path": "a.txt"})));
    let first = server.worker();
    drop(Pid(first));
    assert!(eventually(|| !alive(first)));
    let read = server.call("file_read", json!({"file_path": "a.txt"}));
    assert_eq!(ok(&read)["output"], "a\n");
    assert_ne!(server.worker(), first);
}

#[test]
fn a_writable_directory_made_anew_is_writable_still() {
    if landlock().is_none() {
        return;
    }
    let w = World::new();
    let extra = w.outside.join("extra");
    std::fs::create_dir(&extra).unwrap();
    let mut server = Server::start(&w, &["--add-dir", extra.to_str().unwrap()]);
    let write = |server: &mut Server, name: &str| {
        server.call(
            "file_write",
            json!({"file_path": extra.join(name), "content": name}),
        )
    };
    ok(&write(&mut server, "one"));
    let first = server.worker();
    // Landlock holds the directory it was given, not its path: a worker
    // fenced on the old one could write nothing in the new.
    std::fs::remove_dir_all(&extra).unwrap();
    std::fs::create_dir(&extra).unwrap();
    ok(&write(&mut server, "two"));
    assert_eq!(std::fs::read_to_string(extra.join("two")).unwrap(), "two");
    assert!(eventually(|| !alive(first)), "the stale worker lived on");
    assert_ne!(server.worker(), first);
}

#[test]
fn large_answers_cross_whole_or_cut_to_the_cap() {
    let w = World::new();
    // Over the 32 KiB of one message, under the cap: whole.
    let medium: String = (0..4000)
        .map(|i| format!("line {i:05} of text\n"))
        .collect();
    std::fs::write(w.ws.join("medium.txt"), &medium).unwrap();
    // Over the 1 MiB cap: cut as the tool cuts it, still one JSON object.
    let big: String = (0..200_000)
        .map(|i| format!("line {i:06} of text\n"))
        .collect();
    std::fs::write(w.ws.join("big.txt"), &big).unwrap();
    // What crosses from the worker is the matter here, not what a model is
    // shown of it (decision 25 would cut both at 32 KiB).
    let mut server = Server::start(&w, &["--model-output", "16M"]);
    let read = server.call("file_read", json!({"file_path": "medium.txt"}));
    assert_eq!(ok(&read)["output"], medium.as_str());
    let read = server.call("file_read", json!({"file_path": "big.txt"}));
    let served = ok(&read).clone();
    // The same answer as the tool gives on its own under the same cap.
    let alone = Command::new(w.dirs.sys.join("file_read"))
        .current_dir(&w.ws)
        .env("IKIGAI_MAX_OUTPUT", (1 << 20).to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(br#"{"file_path": "big.txt"}"#)?;
            child.wait_with_output()
        })
        .unwrap();
    let alone: Value = serde_json::from_slice(&alone.stdout).unwrap();
    assert_eq!(served, alone);
    let output = served["output"].as_str().unwrap();
    assert!(output.len() < big.len() && output.starts_with("line 000000"));
}
