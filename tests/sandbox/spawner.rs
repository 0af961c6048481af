//! The spawner: the process that forks each call's containment process
//! for a host that makes many calls (docs/sandbox.md). It and the call it
//! makes in advance end with their host; a spawner killed, dead or stuck
//! is replaced and the calls go on; a call too large for it still runs.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::World;
use crate::common::{bin, Stat};
use crate::host::Pid;

/// The children of `parent` (from /proc/*/stat), with their `comm` names.
pub(super) fn children_of(parent: i32) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Some(stat) = Stat::of(pid).filter(|s| s.ppid == parent && !s.ended()) {
            found.push((pid, stat.comm));
        }
    }
    found
}

/// `ikigai-tools mcp` over the world's tools, in its workspace, and a
/// function that makes one bash call through it and returns the output
/// (or, for a failed call, its error text).
fn mcp_server(
    w: &World,
    env: &[(&str, &str)],
) -> (std::process::Child, impl FnMut(&str) -> String) {
    use std::io::{BufRead, BufReader, Write};
    let mut server = Command::new(bin())
        .envs(env.iter().copied())
        .args(["mcp", "--libexec-dir"])
        .arg(&w.dirs.sys)
        .arg("--tools-dir")
        .arg(&w.dirs.user)
        .current_dir(&w.ws)
        .env("TMPDIR", &w.ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let mut id = 0;
    let call = move |command: &str| {
        id += 1;
        let request = if id == 1 {
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}})
            .to_string()
                + "\n"
        } else {
            String::new()
        };
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": command}}});
        stdin
            .write_all(format!("{request}{call}\n").as_bytes())
            .unwrap();
        loop {
            let line = lines.next().expect("an answer").unwrap();
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == id {
                // The output; for a failed call, the text the client sees.
                let result = &answer["result"];
                return result["structuredContent"]["output"]
                    .as_str()
                    .or(result["content"][0]["text"].as_str())
                    .unwrap_or_else(|| panic!("{answer}"))
                    .to_string();
            }
        }
    };
    (server, call)
}

#[test]
fn the_spawner_and_its_spare_call_end_with_their_host() {
    let w = World::new();
    let (mut server, mut call) = mcp_server(&w, &[]);
    assert_eq!(call("echo one"), "one");
    let server_pid = server.id() as i32;
    let children = children_of(server_pid);
    // The spawner, and the containment process it made ready for the next
    // call (a child of the host, as `sandbox-exec` would be).
    assert!(
        children.iter().any(|(_, name)| name == "ikigai-contain"),
        "{children:?}"
    );
    // Each in a process group of its own, not the host's: a Ctrl-C sent to
    // the host's group (the terminal's foreground) must not end them.
    let group = |pid: i32| Stat::of(pid).map(|s| s.pgrp);
    for (pid, name) in &children {
        assert_ne!(
            group(*pid),
            group(server_pid),
            "{name} ({pid}) shares the host's group"
        );
    }
    let mut all: Vec<i32> = children.iter().map(|(pid, _)| *pid).collect();
    for (pid, _) in &children {
        all.extend(children_of(*pid).iter().map(|(p, _)| *p));
    }
    assert!(all.len() >= 3, "spawner, containment, tool: {all:?}");
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(
        crate::mcp::eventually(|| all.iter().all(|pid| !crate::mcp::alive(*pid))),
        "a process outlived its host: {all:?}"
    );
}

/// The spawners among the server's children, by name. A process a spawner
/// has just forked bears its name for a moment, until it names itself:
/// the list is taken once there is one (or after 20 s, whatever it is).
fn spawners(server: i32) -> Vec<i32> {
    let list = || -> Vec<i32> {
        children_of(server)
            .into_iter()
            .filter(|(_, name)| name == "ikigai-spawner")
            .map(|(pid, _)| pid)
            .collect()
    };
    crate::mcp::eventually(|| list().len() == 1);
    list()
}

#[test]
fn a_killed_spawner_is_replaced_and_calls_go_on() {
    let w = World::new();
    let (mut server, mut call) = mcp_server(&w, &[]);
    assert_eq!(call("echo one"), "one");
    let first = spawners(server.id() as i32);
    assert_eq!(first.len(), 1, "one spawner: {first:?}");
    drop(Pid(first[0]));
    assert!(crate::mcp::eventually(|| !crate::mcp::alive(first[0])));
    assert_eq!(call("echo two"), "two");
    let second = spawners(server.id() as i32);
    assert!(second.len() == 1 && second != first, "{first:?} {second:?}");
    server.kill().unwrap();
    server.wait().unwrap();
}

#[test]
fn a_call_made_in_advance_that_died_is_made_again() {
    let w = World::new();
    let (mut server, mut call) = mcp_server(&w, &[]);
    assert_eq!(call("echo one"), "one");
    // The tool process waiting for the next call, under its containment
    // process (a child of the server).
    let waiting: Vec<i32> = children_of(server.id() as i32)
        .into_iter()
        .filter(|(_, name)| name == "ikigai-contain")
        .flat_map(|(pid, _)| children_of(pid))
        .filter(|(_, name)| name == "ikigai-tool")
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    drop(Pid(waiting[0]));
    assert!(crate::mcp::eventually(|| !crate::mcp::alive(waiting[0])));
    // The next call finds it gone, and the spawner makes another at once;
    // the call runs and ends as its tool did.
    assert_eq!(call("echo after; exit 3"), "after");
    assert_eq!(call("echo again"), "again");
    server.kill().unwrap();
    server.wait().unwrap();
}

#[test]
fn a_spawner_that_stops_answering_fails_one_call_and_is_replaced() {
    let w = World::new();
    let (mut server, mut call) = mcp_server(&w, &[]);
    assert_eq!(call("echo one"), "one");
    let stuck = spawners(server.id() as i32);
    assert_eq!(stuck.len(), 1, "{stuck:?}");
    // SAFETY: stops the spawner this test's server started.
    unsafe {
        libc::kill(stuck[0], libc::SIGSTOP);
    }
    let started = Instant::now();
    let failed = call("echo lost");
    assert!(failed.contains("gave no answer"), "{failed}");
    assert!(
        started.elapsed() >= Duration::from_secs(9),
        "{:?}",
        started.elapsed()
    );
    // The stopped spawner was ended; a new one serves the next call.
    assert!(crate::mcp::eventually(|| !crate::mcp::alive(stuck[0])));
    assert_eq!(call("echo again"), "again");
    server.kill().unwrap();
    server.wait().unwrap();
}

#[test]
fn a_call_too_large_for_the_spawner_still_runs() {
    let w = World::new();
    // The environment rides with each request to the spawner; one larger
    // than its message is started the old way, by exec. (Three variables:
    // one string may not pass 128 KiB in an exec.)
    let big = "x".repeat(100_000);
    let env = [
        ("IKIGAI_TEST_BIG1", big.as_str()),
        ("IKIGAI_TEST_BIG2", big.as_str()),
        ("IKIGAI_TEST_BIG3", big.as_str()),
    ];
    let (mut server, mut call) = mcp_server(&w, &env);
    let sum = "echo $((${#IKIGAI_TEST_BIG1} + ${#IKIGAI_TEST_BIG2} + ${#IKIGAI_TEST_BIG3}))";
    assert_eq!(call(sum), "300000");
    assert_eq!(call("echo again"), "again");
    server.kill().unwrap();
    server.wait().unwrap();
}

#[test]
fn a_tool_killed_by_a_signal_reports_128_plus_n() {
    let w = World::new();
    w.dirs
        .link(&w.dirs.sys, "segv", crate::host::fixture("tool.sh"));
    for options in [&[][..], &["--sandbox", "read-only"][..]] {
        let out = w
            .ikigai()
            .args(options)
            .args(["call", "segv", "{}"])
            .output();
        let envelope = out.json();
        assert_eq!(envelope["exit_code"], 139, "{options:?} {envelope}");
        assert_eq!(envelope["error"], "Tool 'segv' crashed with exit code 139");
    }
}
