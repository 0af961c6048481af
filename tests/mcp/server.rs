//! `ikigai-tools mcp` as MCP clients see it: the official Python SDK over
//! stdio and Streamable HTTP, in both eras (the initialize handshake and the
//! stateless revision), and raw messages for the error paths.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use super::{alive, eventually, fixture, one_peer_at_a_time, python, tools_dir, StdioServer};
use crate::common::bin;

/// Runs the SDK client against `target` and returns what it saw; over
/// HTTP, `token` is the bearer token it sends.
fn sdk(target: &str, mode: &str, token: Option<&str>, server_args: &[&str]) -> Option<Value> {
    let python = python()?;
    let _peer = one_peer_at_a_time();
    let scratch = tempfile::tempdir().unwrap();
    let mut client = Command::new(python);
    match token {
        Some(token) => client.env("IKIGAI_MCP_TOKEN", token),
        None => client.env_remove("IKIGAI_MCP_TOKEN"),
    };
    let out = client
        .arg(fixture("sdk_client.py"))
        .arg(target)
        .arg(mode)
        .arg(scratch.path())
        .args(server_args)
        .output()
        .expect("run the SDK client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "SDK client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_str(stdout.trim()).expect("the client prints JSON"))
}

fn check_sdk_view(seen: &Value, version: &str) {
    assert_eq!(seen["version"], version);
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        tools,
        [
            "apply_patch",
            "bash",
            "file_edit",
            "file_read",
            "file_write",
            "glob",
            "grep",
            "web_fetch",
            "web_search_brave",
            "web_search_google"
        ]
    );
    let schema = &seen["schemas"]["file_read"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["file_path"]));
    assert_eq!(
        seen["read"],
        json!({"isError": false, "text": "{\"output\":\"hello\\n\"}",
               "structured": {"output": "hello\n"}})
    );
    assert_eq!(seen["missing"]["isError"], true);
    // A client that hands its model only the text still gives it the code.
    let missing = seen["missing"]["text"].as_str().unwrap();
    assert!(missing.starts_with("File not found"), "{seen}");
    assert!(missing.ends_with(" [FILE_NOT_FOUND]"), "{seen}");
    assert_eq!(
        seen["missing"]["structured"]["error_code"],
        "FILE_NOT_FOUND"
    );
    assert_eq!(seen["bad_args"]["isError"], true);
    assert_eq!(seen["bad_args"]["structured"]["error_code"], "INVALID_ARG");
    assert_eq!(seen["unknown"], -32602);
    assert_eq!(seen["concurrent"]["output"], "both");
    assert_eq!(seen["cancel_ended_the_process"], true);
    assert_eq!(seen["after_cancel"], "{\"output\":\"hello\\n\"}");
}

fn stdio_args(tools: &tempfile::TempDir) -> Vec<String> {
    vec![
        "mcp".into(),
        "--libexec-dir".into(),
        tools.path().display().to_string(),
        "--tools-dir".into(),
        tools.path().join("none").display().to_string(),
    ]
}

#[test]
fn the_python_sdk_over_stdio_with_the_handshake() {
    let tools = tools_dir();
    let args = stdio_args(&tools);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(seen) = sdk(bin().to_str().unwrap(), "legacy", None, &args) else {
        return;
    };
    check_sdk_view(&seen, "2025-11-25");
}

#[test]
fn the_python_sdk_over_stdio_stateless() {
    let tools = tools_dir();
    let args = stdio_args(&tools);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(seen) = sdk(bin().to_str().unwrap(), "auto", None, &args) else {
        return;
    };
    check_sdk_view(&seen, "2026-07-28");
}

/// `ikigai-tools mcp --http 127.0.0.1:0` with a token given in
/// `IKIGAI_MCP_TOKEN`, the URL it listens on and what it said at start.
pub struct HttpServer {
    child: Child,
    pub url: String,
    pub token: String,
    pub said: String,
    _tools: tempfile::TempDir,
}

impl HttpServer {
    pub fn start() -> HttpServer {
        let token = format!("test-token-0123456789-{}", std::process::id());
        HttpServer::start_with(&[], &[("IKIGAI_MCP_TOKEN", &token)]).with_token(&token)
    }

    fn with_token(mut self, token: &str) -> HttpServer {
        self.token = token.to_string();
        self
    }

    /// The server with `args` and `env` beside the tool directories; its
    /// token is the one it says it made, if it made one.
    pub fn start_with(args: &[&str], env: &[(&str, &str)]) -> HttpServer {
        let tools = tools_dir();
        let mut child = Command::new(bin())
            .args(["mcp", "--http", "127.0.0.1:0", "--libexec-dir"])
            .arg(tools.path())
            .arg("--tools-dir")
            .arg(tools.path().join("none"))
            .args(args)
            .env_remove("IKIGAI_MCP_TOKEN")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the HTTP server");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        let mut line = String::new();
        while stderr.read_line(&mut line).unwrap_or(0) > 0 && !line.contains("listening on") {
            said.push_str(&line);
            line.clear();
        }
        said.push_str(&line);
        let url = line
            .split_whitespace()
            .last()
            .expect("the server says where it listens")
            .to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{said}");
        let token = said
            .lines()
            .find(|l| l.contains(": token ("))
            .and_then(|l| l.split_whitespace().last())
            .unwrap_or_default()
            .to_string();
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        HttpServer {
            child,
            url,
            token,
            said,
            _tools: tools,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Authorization: Bearer` with this server's token.
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// A POST carrying the token.
    pub fn post(
        &self,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> (u16, Vec<(String, String)>, String) {
        let bearer = self.bearer();
        let mut all = vec![("Authorization", bearer.as_str())];
        all.extend_from_slice(headers);
        post(&self.url, &all, body)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_python_sdk_over_http_with_the_handshake() {
    let server = HttpServer::start();
    let Some(seen) = sdk(&server.url, "legacy", Some(&server.token), &[]) else {
        return;
    };
    check_sdk_view(&seen, "2025-11-25");
}

#[test]
fn the_python_sdk_over_http_stateless() {
    let server = HttpServer::start();
    let Some(seen) = sdk(&server.url, "auto", Some(&server.token), &[]) else {
        return;
    };
    check_sdk_view(&seen, "2026-07-28");
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The config file's secret paths hold in the server too, so a mistake
/// in them stops it at start, naming the file and the key, as `ikigai`.
#[test]
fn a_bad_guard_path_in_the_config_file_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    let start = |text: &str, options: &[&str]| {
        std::fs::write(&config, text).unwrap();
        crate::common::run_main()
            .args(["mcp", "--libexec-dir"])
            .arg(dir.path())
            .args(options)
            .env("IKIGAI_CONFIG", &config)
            .output()
    };
    let out = start("deny_read = [\"relative/.env\"]\n", &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("deny_read") && out.stderr.contains("relative/.env"),
        "{out:?}"
    );
    let out = start("deny_red = []\n", &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("config.toml, line 1, key 'deny_red'"),
        "{out:?}"
    );
    // The options are checked the same way.
    let out = start("", &["--allow-read", "relative/key"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("--allow-read") && out.stderr.contains("relative/key"),
        "{out:?}"
    );
}

#[test]
fn stdio_answers_every_bad_line_and_goes_on() {
    let mut s = StdioServer::start(&[]);
    s.send(&request(
        1,
        "initialize",
        json!({"protocolVersion": "2099-01-01", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    ));
    let init = s.recv();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["serverInfo"]["name"], "ikigai-tools");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    s.send_line("this is not json");
    assert_eq!(s.recv()["error"]["code"], -32700);
    s.send_line(r#"{"jsonrpc": "2.0", "id": 2}"#);
    assert_eq!(s.recv()["error"]["code"], -32600);
    s.send(&request(3, "resources/list", json!({})));
    assert_eq!(
        s.recv(),
        json!({"jsonrpc": "2.0", "id": 3,
               "error": {"code": -32601, "message": "Method not found: resources/list"}})
    );
    s.send(&request(
        4,
        "tools/call",
        json!({"name": "nope", "arguments": {}}),
    ));
    let e = s.recv();
    assert_eq!((&e["id"], &e["error"]["code"]), (&json!(4), &json!(-32602)));
    s.send(&request(
        5,
        "tools/call",
        json!({"name": "glob", "arguments": "x"}),
    ));
    assert_eq!(s.recv()["error"]["code"], -32602);
    s.send(&request(6, "tools/call", json!({"arguments": {}})));
    assert_eq!(s.recv()["error"]["code"], -32602);
    s.send(&request(
        7,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01"}}),
    ));
    let e = s.recv();
    assert_eq!(e["error"]["code"], -32022);
    assert_eq!(e["error"]["data"]["supported"][0], "2026-07-28");
    s.send(&request(8, "ping", json!({})));
    assert_eq!(s.recv(), json!({"jsonrpc": "2.0", "id": 8, "result": {}}));
    s.send(&request(9, "tools/list", json!({"cursor": "bogus"})));
    assert_eq!(s.recv()["error"]["code"], -32602);
    assert_eq!(s.finish(), Some(0));
}

#[test]
fn stdio_cancel_kills_the_call_and_sends_no_answer() {
    let scratch = tempfile::tempdir().unwrap();
    let pidfile = scratch.path().join("pid");
    let mut s = StdioServer::start(&[]);
    let command = format!("echo $$ > {}; exec sleep 60", pidfile.display());
    s.send(&request(
        1,
        "tools/call",
        json!({"name": "bash", "arguments": {"command": command}}),
    ));
    assert!(eventually(
        || std::fs::read_to_string(&pidfile).is_ok_and(|t| t.trim().parse::<i32>().is_ok())
    ));
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 1, "reason": "test"}}),
    );
    assert!(
        eventually(|| !alive(pid)),
        "the cancelled call's process lives"
    );
    s.send(&request(2, "ping", json!({})));
    assert_eq!(s.recv()["id"], 2, "no answer for the cancelled call");
    assert!(s.quiet_for(Duration::from_millis(300)));
    assert_eq!(s.finish(), Some(0));
}

#[test]
fn stdio_ends_after_the_running_calls_at_eof() {
    let mut s = StdioServer::start(&[]);
    s.send(&request(
        1,
        "tools/call",
        json!({"name": "bash", "arguments": {"command": "sleep 0.3; echo done"}}),
    ));
    let mut stdin_closed = s;
    let answer = {
        stdin_closed.stdin.take();
        stdin_closed.recv()
    };
    assert_eq!(answer["result"]["structuredContent"]["output"], "done");
    assert_eq!(stdin_closed.finish(), Some(0));
}

pub fn post(
    url: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, Vec<(String, String)>, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut req = agent
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut response = req.send(body.to_string()).expect("POST");
    let status = response.status().as_u16();
    let heads = response
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    (status, heads, text)
}

pub fn head<'a>(heads: &'a [(String, String)], name: &str) -> Option<&'a str> {
    heads
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[test]
fn http_sessions_headers_and_origins() {
    let server = HttpServer::start();
    let url = server.url.as_str();
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    );

    // A web page elsewhere may not talk to a local server.
    let (status, _, _) = server.post(&[("Origin", "https://evil.example")], &init);
    assert_eq!(status, 403);
    let (status, _, _) = server.post(&[("Host", "evil.example")], &init);
    assert_eq!(status, 403);

    let (status, heads, body) = server.post(&[("Origin", "http://localhost:3000")], &init);
    assert_eq!(status, 200, "{body}");
    let session = head(&heads, "mcp-session-id")
        .expect("a session")
        .to_string();
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["result"]["protocolVersion"],
        "2025-06-18"
    );

    let list = request(2, "tools/list", json!({}));
    let (status, _, _) = server.post(&[("MCP-Protocol-Version", "2025-06-18")], &list);
    assert_eq!(status, 400, "a handshake request without its session");
    let with_session = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let (status, _, body) = server.post(&with_session, &list);
    assert_eq!(status, 200);
    let tools = serde_json::from_str::<Value>(&body).unwrap()["result"]["tools"].clone();
    assert_eq!(tools.as_array().unwrap().len(), 10);
    let bad_version = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "1999-01-01"),
    ];
    let (status, _, _) = server.post(&bad_version, &list);
    assert_eq!(status, 400);

    // A call answered as an event stream, since the client accepts one.
    let call = request(
        3,
        "tools/call",
        json!({"name": "bash", "arguments": {"command": "echo hi"}}),
    );
    let (status, heads, body) = server.post(&with_session, &call);
    assert_eq!(status, 200);
    assert_eq!(head(&heads, "content-type"), Some("text/event-stream"));
    let data = body
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .expect("a data line");
    let answer: Value = serde_json::from_str(data).unwrap();
    assert_eq!(answer["result"]["structuredContent"]["output"], "hi");

    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let deleted = agent
        .delete(url)
        .header("Authorization", server.bearer())
        .header("Mcp-Session-Id", &session)
        .call()
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 200);
    let (status, _, _) = server.post(&with_session, &list);
    assert_eq!(status, 404, "an ended session is not found");
    let got = agent
        .get(url)
        .header("Authorization", server.bearer())
        .call()
        .unwrap();
    assert_eq!(got.status().as_u16(), 405);
    let elsewhere = agent.get(url.replace("/mcp", "/other")).call().unwrap();
    assert_eq!(elsewhere.status().as_u16(), 404);

    // The stateless revision: headers must say what the body says.
    let meta = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    let list = request(4, "tools/list", meta.clone());
    let modern = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/list"),
    ];
    let (status, heads, body) = server.post(&modern, &list);
    assert_eq!(status, 200, "{body}");
    assert!(head(&heads, "mcp-session-id").is_none());
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["result"]["resultType"],
        "complete"
    );
    let wrong = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
    ];
    let (status, _, body) = server.post(&wrong, &list);
    assert_eq!(status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["code"],
        -32020
    );
    let unknown = request(5, "prompts/list", meta);
    let (status, _, body) = server.post(
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "prompts/list"),
        ],
        &unknown,
    );
    assert_eq!(status, 404);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["code"],
        -32601
    );
    let (status, _, _) = server.post(&[], &json!("not a message"));
    assert_eq!(status, 400);
}

#[test]
fn stdio_says_when_the_tools_change() {
    let user = tempfile::tempdir().unwrap();
    let mut s = StdioServer::with_user_tools(user.path(), &[]);
    s.send(&request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    ));
    assert_eq!(
        s.recv()["result"]["capabilities"]["tools"]["listChanged"],
        true
    );
    std::os::unix::fs::symlink(
        fixture("conformance/test_simple_text"),
        user.path().join("test_simple_text"),
    )
    .unwrap();
    assert_eq!(
        s.recv(),
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}})
    );
    s.send(&request(2, "tools/list", json!({})));
    let names: Vec<String> = s.recv()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"test_simple_text".to_string()), "{names:?}");
    assert_eq!(names.len(), 11);
    assert_eq!(s.finish(), Some(0));
}
