//! MCP servers the host starts run fenced: in the session's sandbox with
//! the network, refused what a tool call is refused (a secret path, a write
//! outside the workspace, a Unix socket outside), answering their other
//! tools all the while; `"sandbox": "off"` gives a server the person's
//! rights, and the start line says so. The reference server, started with
//! `npx`, works fenced.

use std::os::unix::net::UnixListener;
use std::path::Path;

use serde_json::{json, Value};

use super::client::{fastmcp_stdio, host, write_config};
use super::{everything, one_peer_at_a_time, python};
use crate::common::{unwritable_by_default, Output};

/// One headless turn of the stub model making `calls` (name, arguments)
/// at once, in `workspace`, sandboxed.
fn session(config: &Path, home: &Path, workspace: &Path, calls: &[(&str, Value)]) -> Output {
    let prompt: Vec<String> = calls
        .iter()
        .map(|(name, args)| format!("call {name} {args}"))
        .collect();
    host(config, home)
        .dir(workspace)
        .args(["--sandbox", "workspace-write", "--provider", "stub"])
        .args(["--approval", "auto", "--output-format", "json", "-p"])
        .arg(prompt.join(" "))
        .output()
}

/// The envelopes the stub quotes back, in the order of the calls.
fn envelopes(out: &Output) -> Vec<Value> {
    let result = out.json();
    let text = result["text"].as_str().unwrap_or_else(|| panic!("{out:?}"));
    text.lines()
        .filter_map(|line| line.split_once(" returned "))
        .map(|(_, envelope)| serde_json::from_str(envelope).expect("an envelope"))
        .collect()
}

/// What each server is asked: a secret, a write outside the workspace, a
/// socket outside, a write inside, and a sum.
struct Probe {
    home: tempfile::TempDir,
    workspace: tempfile::TempDir,
    outside: tempfile::TempDir,
    _socket: UnixListener,
}

impl Probe {
    fn new() -> Probe {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".ssh")).unwrap();
        std::fs::write(home.path().join(".ssh/id_ed25519"), "SECRET KEY").unwrap();
        // Bound before the host starts: the fence covers the sockets
        // present when the server starts.
        let socket = UnixListener::bind(home.path().join("daemon.sock")).unwrap();
        Probe {
            home,
            workspace: tempfile::tempdir().unwrap(),
            outside: unwritable_by_default(),
            _socket: socket,
        }
    }

    fn calls(&self) -> Vec<(&'static str, Value)> {
        let home = self.home.path();
        vec![
            (
                "mcp__fast__read_text",
                json!({"path": home.join(".ssh/id_ed25519")}),
            ),
            (
                "mcp__fast__write_text",
                json!({"path": self.outside.path().join("out.txt"), "text": "x"}),
            ),
            (
                "mcp__fast__connect_unix",
                json!({"path": home.join("daemon.sock")}),
            ),
            (
                "mcp__fast__write_text",
                json!({"path": self.workspace.path().join("in.txt"), "text": "y"}),
            ),
            ("mcp__fast__add", json!({"a": 2, "b": 3})),
        ]
    }
}

#[test]
fn a_fenced_server_is_refused_and_still_answers_its_other_tools() {
    let Some(python) = python() else { return };
    let _peer = one_peer_at_a_time();
    let probe = Probe::new();
    let home = probe.home.path();
    let config = write_config(
        home,
        json!({ "fast": fastmcp_stdio(python, &home.join("mark")) }),
    );
    let out = session(&config, home, probe.workspace.path(), &probe.calls());
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stderr.contains("unsandboxed"), "{}", out.stderr);
    let got = envelopes(&out);
    assert_eq!(got.len(), 5, "{out:?}");
    for refused in &got[..3] {
        // The server's own error, with the fence it ran in beside it.
        assert_eq!(refused["error_code"], "TOOL_ERROR", "{refused}");
        assert!(refused["error"]
            .as_str()
            .unwrap()
            .starts_with("Tool 'mcp__fast__"));
        let note = &refused["sandbox"];
        assert_eq!(note["network"], true, "{refused}");
        let writable = note["writable"].to_string();
        for dir in [".cache", ".npm"] {
            assert!(
                writable.contains(&*home.join(dir).to_string_lossy()),
                "{note}"
            );
        }
        assert!(note["refuses"].to_string().contains(".ssh"), "{note}");
    }
    assert!(!probe.outside.path().join("out.txt").exists());
    assert_eq!(got[3]["result"], json!({"result": "written"}), "{}", got[3]);
    assert_eq!(
        std::fs::read_to_string(probe.workspace.path().join("in.txt")).unwrap(),
        "y"
    );
    assert_eq!(
        got[4],
        json!({"tool_success": true, "result": {"result": 5}})
    );
}

#[test]
fn a_server_with_sandbox_off_has_the_persons_rights_and_is_named() {
    let Some(python) = python() else { return };
    let _peer = one_peer_at_a_time();
    let probe = Probe::new();
    let home = probe.home.path();
    let mut server = fastmcp_stdio(python, &home.join("mark"));
    server["sandbox"] = json!("off");
    let config = write_config(home, json!({ "fast": server }));
    let out = session(&config, home, probe.workspace.path(), &probe.calls());
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("MCP server 'fast' runs unsandboxed, with your rights"),
        "{}",
        out.stderr
    );
    let got = envelopes(&out);
    let results: Vec<&Value> = got.iter().map(|e| &e["result"]["result"]).collect();
    assert_eq!(
        results,
        [
            &json!("SECRET KEY"),
            &json!("written"),
            &json!("connected"),
            &json!("written"),
            &json!(5)
        ],
        "{out:?}"
    );
    assert!(probe.outside.path().join("out.txt").exists());
}

#[test]
fn a_wrong_sandbox_value_is_named_and_the_server_not_started() {
    let home = tempfile::tempdir().unwrap();
    let config = write_config(
        home.path(),
        json!({"x": {"command": "true", "sandbox": "none"}}),
    );
    let listing = host(&config, home.path()).args(["tools", "--json"]).json();
    let reason = listing["skipped"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("\"sandbox\" can only be \"off\""),
        "{listing}"
    );
}

#[test]
fn the_reference_server_through_npx_works_fenced() {
    let Some(server) = everything() else { return };
    // The npm prefix the tests installed it in: npx finds it there,
    // offline, and keeps its logs in the fresh home's ~/.npm.
    let prefix = server.ancestors().nth(3).unwrap();
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let config = write_config(
        home.path(),
        json!({"everything": {"command": "npx", "args": ["--offline", "mcp-server-everything"],
                              "cwd": prefix}}),
    );
    let out = session(
        &config,
        home.path(),
        workspace.path(),
        &[("mcp__everything__echo", json!({"message": "fenced"}))],
    );
    assert_eq!(
        envelopes(&out),
        [json!({"tool_success": true, "result": {"text": "Echo: fenced"}})],
        "{out:?}"
    );
}

#[test]
fn our_own_mcp_server_fenced_by_ikigai_still_fences_its_calls() {
    // `ikigai-tools mcp` as a server of ikigai: the host fences it, and it
    // fences each of its own calls inside that fence (it cannot map a user
    // namespace there, and builds the rest of its fence).
    if crate::sandbox::landlock().is_none() {
        return;
    }
    let probe = Probe::new();
    let home = probe.home.path();
    let server = json!({
        "command": crate::common::bin(),
        "args": ["mcp", "--libexec-dir", crate::common::links_dir()],
    });
    let config = write_config(home, json!({ "ours": server }));
    let ws = probe.workspace.path();
    let outside = probe.outside.path().join("out.txt");
    let script = format!(
        "echo inside > in.txt && echo wrote; cat {} || echo no-secret; \
         touch {} || echo no-outside",
        home.join(".ssh/id_ed25519").display(),
        outside.display()
    );
    let out = session(
        &config,
        home,
        ws,
        &[("mcp__ours__bash", json!({ "command": script }))],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let got = envelopes(&out);
    let text = got[0]["result"]["output"]
        .as_str()
        .unwrap_or_else(|| panic!("{out:?}"));
    assert!(text.contains("wrote"), "{text}");
    assert!(
        text.contains("no-secret") && !text.contains("SECRET KEY"),
        "{text}"
    );
    assert!(text.contains("no-outside"), "{text}");
    assert_eq!(
        std::fs::read_to_string(ws.join("in.txt")).unwrap(),
        "inside\n"
    );
    assert!(!outside.exists());
}
