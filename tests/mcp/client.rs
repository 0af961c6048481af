//! The host as an MCP client: servers from `--mcp-config`, listed by
//! `ikigai tools`, called by `ikigai call`, against FastMCP (the official
//! Python SDK) over stdio and HTTP, our own `ikigai-tools mcp`, and the
//! reference server-everything.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use super::{alive, eventually, everything, fixture, one_peer_at_a_time, python, tools_dir};
use crate::common::{bin, run, Output, Run};

/// `ikigai` with this MCP configuration, no tool directories of its own and
/// a HOME of its own.
pub(super) fn host(config: &Path, home: &Path) -> Run {
    let empty = home.join("empty");
    let _ = std::fs::create_dir_all(&empty);
    run("ikigai")
        .env("HOME", home)
        // A loaded machine must not fail a test that is not about the time.
        .env("IKIGAI_MCP_START_TIMEOUT", "60")
        .env_remove("IKIGAI_MCP_CONFIG")
        .arg("--mcp-config")
        .arg(config)
        .arg("--libexec-dir")
        .arg(&empty)
        .arg("--tools-dir")
        .arg(&empty)
}

pub(super) fn write_config(dir: &Path, servers: Value) -> std::path::PathBuf {
    let path = dir.join("mcp.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    path
}

pub(super) fn fastmcp_stdio(python: &Path, mark: &Path) -> Value {
    json!({"command": python, "args": [fixture("fastmcp_server.py"), "stdio", mark]})
}

fn call(config: &Path, home: &Path, name: &str, args: Value) -> Output {
    host(config, home)
        .args(["call", name])
        .arg(args.to_string())
        .output()
}

#[test]
fn fastmcp_tools_are_listed_and_called() {
    let Some(python) = python() else { return };
    let _peer = one_peer_at_a_time();
    let home = tempfile::tempdir().unwrap();
    let mark = home.path().join("mark");
    let config = write_config(
        home.path(),
        json!({
            "fast": fastmcp_stdio(python, &mark),
            "broken": {"command": home.path().join("no-such-server")},
            "unset": {"command": "${IKIGAI_TEST_NEVER_SET}"},
        }),
    );
    let listing = host(&config, home.path()).args(["tools", "--json"]).json();
    let tools: Vec<&Value> = listing["tools"].as_array().unwrap().iter().collect();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "mcp__fast__add",
            "mcp__fast__connect_unix",
            "mcp__fast__fail",
            "mcp__fast__getenv",
            "mcp__fast__hello",
            "mcp__fast__read_text",
            "mcp__fast__sleepy",
            "mcp__fast__write_text"
        ]
    );
    assert_eq!(
        (tools[0]["protocol"].as_str(), tools[0]["path"].as_str()),
        (Some("mcp"), Some("fast"))
    );
    let skipped = listing["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 2, "{listing}");
    assert_eq!(skipped[0]["path"], "broken");
    assert!(skipped[0]["reason"]
        .as_str()
        .unwrap()
        .contains("cannot start"));
    assert!(skipped[1]["reason"]
        .as_str()
        .unwrap()
        .contains("IKIGAI_TEST_NEVER_SET is not set"));

    let page = host(&config, home.path())
        .args(["tools", "--json", "mcp__fast__hello"])
        .json();
    assert_eq!(page["schema"]["annotations"], json!({"readOnlyHint": true}));
    assert_eq!(page["schema"]["parameters"]["type"], "object");

    // Offered to the model like any tool, without the annotations.
    let array = host(&config, home.path())
        .args(["schema", "--provider", "anthropic"])
        .json();
    let hello = array
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__fast__hello")
        .expect("the MCP tool in the tools array");
    assert_eq!(
        hello["input_schema"]["properties"]["name"]["type"],
        "string"
    );
    assert!(!array.to_string().contains("readOnlyHint"));

    let out = call(
        &config,
        home.path(),
        "mcp__fast__add",
        json!({"a": 2, "b": 3}),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.json(),
        json!({"tool_success": true, "result": {"result": 5}})
    );

    let out = call(
        &config,
        home.path(),
        "mcp__fast__fail",
        json!({"message": "boom"}),
    );
    assert_eq!(out.code, 1);
    let e = out.json();
    assert_eq!(e["error_code"], "TOOL_ERROR");
    assert!(e["error"]
        .as_str()
        .unwrap()
        .starts_with("Tool 'mcp__fast__fail' failed: "));

    // The timeout cancels the call on the server, which says so.
    let out = host(&config, home.path())
        .args([
            "--timeout",
            "1",
            "call",
            "mcp__fast__sleepy",
            r#"{"seconds": 30}"#,
        ])
        .output();
    let e = out.json();
    assert_eq!(e["error_code"], "TOOL_TIMEOUT");
    assert_eq!(e["error"], "Tool 'mcp__fast__sleepy' timed out after 1s");
    assert!(eventually(
        || std::fs::read_to_string(&mark).is_ok_and(|t| t == "cancelled")
    ));
}

#[test]
fn a_server_gets_no_secrets_but_what_its_config_names() {
    let Some(python) = python() else { return };
    let _peer = one_peer_at_a_time();
    let home = tempfile::tempdir().unwrap();
    let mut server = fastmcp_stdio(python, &home.path().join("mark"));
    server["env"] = json!({"GIVEN_TOKEN": "${IKIGAI_TEST_TOKEN}"});
    let config = write_config(home.path(), json!({ "fast": server }));
    let getenv = |name: &str| {
        host(&config, home.path())
            .env("OPENAI_API_KEY", "sk-secret")
            .env("IKIGAI_TEST_TOKEN", "t0k")
            .args(["call", "mcp__fast__getenv"])
            .arg(json!({ "name": name }).to_string())
            .json()["result"]
            .clone()
    };
    assert_eq!(getenv("GIVEN_TOKEN"), json!({"result": "t0k"}));
    assert_eq!(getenv("OPENAI_API_KEY"), json!({"result": null}));
    assert_eq!(getenv("IKIGAI_TEST_TOKEN"), json!({"result": null}));
    assert_ne!(getenv("PATH"), json!({"result": null}));
}

#[test]
fn ctrl_c_cancels_the_call_on_the_server() {
    let Some(python) = python() else { return };
    let _peer = one_peer_at_a_time();
    let home = tempfile::tempdir().unwrap();
    let mark = home.path().join("mark");
    let config = write_config(home.path(), json!({ "fast": fastmcp_stdio(python, &mark) }));
    let pidfile = home.path().join("mark.pid");
    let out = host(&config, home.path())
        .args(["call", "mcp__fast__sleepy", r#"{"seconds": 60}"#])
        .output_interrupting(|| pidfile.exists());
    assert_eq!(out.code, 130, "{out:?}");
    let e = out.json();
    assert_eq!(e["error_code"], "CANCELLED");
    let error = e["error"].as_str().unwrap();
    assert!(
        error.starts_with("Tool 'mcp__fast__sleepy' was cancelled by the user after ")
            && error.ends_with(", before it finished"),
        "{error}"
    );
    assert!(eventually(
        || std::fs::read_to_string(&mark).is_ok_and(|t| t == "cancelled")
    ));
}

#[test]
fn servers_end_with_the_host() {
    let Some(python) = python() else { return };
    let _peer = one_peer_at_a_time();
    let home = tempfile::tempdir().unwrap();
    let mark = home.path().join("mark");
    let config = write_config(home.path(), json!({ "fast": fastmcp_stdio(python, &mark) }));
    let pidfile = home.path().join("mark.pid");
    // Unfenced (`ikigai call` alone), and fenced inside sandbox-exec.
    for sandbox in ["off", "workspace-write"] {
        let _ = std::fs::remove_file(&pidfile);
        let out = host(&config, home.path())
            .args(["--sandbox", sandbox])
            .args(["call", "mcp__fast__sleepy", r#"{"seconds": 60}"#])
            // The pid once written: the file is made before its digits,
            // which come in one write when it is closed.
            .output_signalling(libc::SIGKILL, || {
                std::fs::read_to_string(&pidfile).is_ok_and(|pid| pid.trim().parse::<i32>().is_ok())
            });
        assert_eq!(out.code, -1, "killed");
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            eventually(|| !alive(pid)),
            "the server outlived the host ({sandbox})"
        );
    }
}

/// FastMCP over Streamable HTTP on a free port of 127.0.0.1.
struct HttpFastMcp(Child, u16);

impl Drop for HttpFastMcp {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn fastmcp_http(python: &Path) -> HttpFastMcp {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(python)
        .arg(fixture("fastmcp_server.py"))
        .arg(format!("http:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start FastMCP");
    let server = HttpFastMcp(child, port);
    assert!(
        eventually(|| TcpStream::connect(("127.0.0.1", port)).is_ok()),
        "FastMCP did not listen"
    );
    server
}

#[test]
fn fastmcp_over_http() {
    let Some(python) = python() else { return };
    let _peer = one_peer_at_a_time();
    let server = fastmcp_http(python);
    let home = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}/mcp", server.1);
    let config = write_config(
        home.path(),
        json!({"web": {"url": url, "headers": {"X-Test": "${IKIGAI_TEST_HEADER:-yes}"}}}),
    );
    let listing = host(&config, home.path()).args(["tools", "--json"]).json();
    assert_eq!(listing["skipped"], json!([]), "{listing}");
    let out = call(
        &config,
        home.path(),
        "mcp__web__add",
        json!({"a": 40, "b": 2}),
    );
    assert_eq!(
        out.json(),
        json!({"tool_success": true, "result": {"result": 42}}),
        "{out:?}"
    );
    let out = call(
        &config,
        home.path(),
        "mcp__web__hello",
        json!({"name": "http"}),
    );
    assert_eq!(out.json()["result"], json!({"result": "hello http"}));
}

#[test]
fn our_own_server_round_trip() {
    let tools = tools_dir();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("note.txt"), "round trip\n").unwrap();
    let config = write_config(
        home.path(),
        json!({"ours": {"command": bin(), "args": ["mcp", "--libexec-dir", tools.path(),
                                                   "--tools-dir", tools.path().join("none")]}}),
    );
    let out = call(
        &config,
        home.path(),
        "mcp__ours__file_read",
        json!({"file_path": home.path().join("note.txt")}),
    );
    assert_eq!(
        out.json(),
        json!({"tool_success": true, "result": {"output": "round trip\n"}})
    );
    let out = call(
        &config,
        home.path(),
        "mcp__ours__file_read",
        json!({"file_path": "/nonexistent/x"}),
    );
    let e = out.json();
    assert_eq!(e["error_code"], "TOOL_ERROR");
    assert!(
        e["error"].as_str().unwrap().contains("File not found"),
        "{e}"
    );
    let listing = host(&config, home.path()).args(["tools", "--json"]).json();
    assert_eq!(listing["tools"].as_array().unwrap().len(), 10);
}

#[test]
fn the_reference_server_everything() {
    let Some(server) = everything() else { return };
    let home = tempfile::tempdir().unwrap();
    let config = write_config(home.path(), json!({"everything": {"command": server}}));
    let out = call(
        &config,
        home.path(),
        "mcp__everything__echo",
        json!({"message": "hi there"}),
    );
    assert_eq!(
        out.json(),
        json!({"tool_success": true, "result": {"text": "Echo: hi there"}}),
        "{out:?}"
    );
    let out = call(
        &config,
        home.path(),
        "mcp__everything__get-structured-content",
        json!({"location": "Chicago"}),
    );
    let result = &out.json()["result"];
    assert!(result["temperature"].is_number(), "{out:?}");
}

#[test]
fn refresh_restarts_the_servers() {
    let tools = tools_dir();
    let home = tempfile::tempdir().unwrap();
    let starts = home.path().join("starts");
    // A server that notes each start, then becomes ikigai-tools mcp.
    let script = format!(
        "echo started >> '{}'; exec '{}' mcp --libexec-dir '{}' --tools-dir '{}'",
        starts.display(),
        bin().display(),
        tools.path().display(),
        tools.path().join("none").display()
    );
    let config = write_config(
        home.path(),
        json!({"ours": {"command": "sh", "args": ["-c", script]}}),
    );
    let mut assistant = host(&config, home.path());
    for var in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "IKIGAI_PROVIDER",
    ] {
        assistant = assistant.env_remove(var);
    }
    let out = assistant
        .stdin("/tool mcp__ours__glob\n/refresh\n")
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("Tool: mcp__ours__glob\nServer: ours (MCP)\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("Tools refreshed. 10 tools available."),
        "{}",
        out.stdout
    );
    let started = std::fs::read_to_string(&starts).unwrap();
    assert_eq!(started.lines().count(), 2, "one start, one restart");
}
