//! `ikigai-tools mcp --http` behind its token and limits (decision 73), as
//! raw requests see it: without the token, with a wrong one, with a made
//! one read from where the server saved it; `--no-auth` where it is and is
//! not allowed; a request whose body never comes; an output too large for
//! a model.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::server::{head, post, HttpServer};
use super::tools_dir;
use crate::common::bin;

fn init() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "t", "version": "1"}}})
}

/// A stateless `tools/call` and the headers it needs.
fn call(id: i64, tool: &str, arguments: Value) -> (Value, [(&'static str, String); 3]) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": tool, "arguments": arguments,
                                 "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28".to_string()),
        ("Mcp-Method", "tools/call".to_string()),
        ("Mcp-Name", tool.to_string()),
    ];
    (body, headers)
}

#[test]
fn requests_without_the_token_or_with_a_wrong_one_get_401() {
    let server = HttpServer::start();
    let (status, heads, body) = post(&server.url, &[], &init());
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        head(&heads, "www-authenticate"),
        Some(r#"Bearer realm="ikigai-tools mcp""#)
    );
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Authorization: Bearer"));
    for wrong in [
        format!("Bearer {}x", server.token),
        format!("Bearer {}", &server.token[1..]),
        format!("Basic {}", server.token),
        server.token.clone(),
    ] {
        let (status, heads, _) = post(&server.url, &[("Authorization", &wrong)], &init());
        assert_eq!(status, 401, "{wrong}");
        assert!(
            head(&heads, "www-authenticate").is_some_and(|h| h.contains("invalid_token")),
            "{wrong}"
        );
    }
    // Every method is behind the token, DELETE too.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let deleted = agent
        .delete(&server.url)
        .header("Mcp-Session-Id", "x")
        .call()
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 401);
    let (status, heads, _) = server.post(&[], &init());
    assert_eq!(status, 200);
    assert!(head(&heads, "mcp-session-id").is_some());
}

#[test]
fn a_made_token_is_shown_once_and_saved_privately() {
    let runtime = tempfile::tempdir().unwrap();
    let server = HttpServer::start_with(
        &[],
        &[("XDG_RUNTIME_DIR", runtime.path().to_str().unwrap())],
    );
    assert_eq!(server.token.len(), 64, "{}", server.said);
    assert_eq!(server.said.matches(&server.token).count(), 1);
    let port = server
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp");
    let file = runtime.path().join(format!("ikigai/mcp-{port}.token"));
    assert!(
        server.said.contains(file.to_str().unwrap()),
        "{}",
        server.said
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), server.token);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let (status, _, _) = server.post(&[], &init());
    assert_eq!(status, 200);
    let (status, _, _) = post(&server.url, &[], &init());
    assert_eq!(status, 401);
}

#[test]
fn a_token_file_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "from-a-file-0123456789\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server = HttpServer::start_with(
        &["--token-file", file.to_str().unwrap()],
        &[("IKIGAI_MCP_TOKEN", "from-the-environment-0123")],
    );
    assert!(server.token.is_empty(), "no token is made: {}", server.said);
    let bearer = [("Authorization", "Bearer from-a-file-0123456789")];
    assert_eq!(post(&server.url, &bearer, &init()).0, 200);
    let env = [("Authorization", "Bearer from-the-environment-0123")];
    assert_eq!(post(&server.url, &env, &init()).0, 401);
}

#[test]
fn no_auth_only_on_loopback() {
    let tools = tools_dir();
    let out = Command::new(bin())
        .args(["mcp", "--http", "0.0.0.0:0", "--no-auth", "--libexec-dir"])
        .arg(tools.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("--no-auth is refused on 0.0.0.0"), "{said}");
    let out = Command::new(bin())
        .args([
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--no-auth",
            "--token-file",
            "/x",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(bin())
        .args(["mcp", "--no-auth"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "--no-auth without --http");
    let out = Command::new(bin())
        .args(["mcp", "--http", "127.0.0.1:0"])
        .env("IKIGAI_MCP_TOKEN", "short")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("IKIGAI_MCP_TOKEN"));

    let server = HttpServer::start_with(&["--no-auth"], &[]);
    assert!(
        server.said.contains("warning: --no-auth"),
        "{}",
        server.said
    );
    let (status, _, body) = post(&server.url, &[], &init());
    assert_eq!(status, 200, "{body}");
}

/// Reads what the server sends until it closes the connection.
fn read_all(stream: &mut TcpStream) -> String {
    let mut text = Vec::new();
    let _ = stream.read_to_end(&mut text);
    String::from_utf8_lossy(&text).into_owned()
}

#[test]
fn a_request_that_does_not_arrive_in_30_s_is_dropped() {
    let server = HttpServer::start();
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let started = Instant::now();
    // One body that stops half-way, one head that never ends, one that
    // drips a byte every 5 s: each holds only its own connection.
    let mut slow_body = TcpStream::connect(&addr).unwrap();
    write!(
        slow_body,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
        server.bearer()
    )
    .unwrap();
    let mut slow_head = TcpStream::connect(&addr).unwrap();
    slow_head
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0")
        .unwrap();
    let mut drip = TcpStream::connect(&addr).unwrap();
    drip.write_all(b"POST /mcp HTTP/1.1\r\nContent-Length: 20\r\n\r\n")
        .unwrap();
    let mut answered = drip.try_clone().unwrap();
    let dripping = std::thread::spawn(move || read_all(&mut answered));
    std::thread::spawn(move || {
        // Until the server closes the connection (or 50 s pass).
        for _ in 0..10 {
            std::thread::sleep(Duration::from_secs(5));
            if drip.write_all(b" ").is_err() {
                break;
            }
        }
    });
    // Meanwhile the server answers others.
    std::thread::sleep(Duration::from_secs(1));
    let (status, _, _) = server.post(&[], &init());
    assert_eq!(status, 200);
    for stream in [&mut slow_body, &mut slow_head] {
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let answer = read_all(stream);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    }
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(29) && waited < Duration::from_secs(45),
        "{waited:?}"
    );
    let dripped = dripping.join().unwrap();
    assert!(dripped.starts_with("HTTP/1.1 408"), "{dripped}");
    assert!(started.elapsed() < Duration::from_secs(45));
}

#[test]
fn a_large_output_is_sized_for_a_model_and_saved() {
    let runtime = tempfile::tempdir().unwrap();
    let token = "large-output-token-0123";
    let server = HttpServer::start_with(
        &["--model-output", "4K"],
        &[
            ("IKIGAI_MCP_TOKEN", token),
            ("XDG_RUNTIME_DIR", runtime.path().to_str().unwrap()),
        ],
    );
    let bearer = format!("Bearer {token}");
    // 5 MB of output: the host keeps its 1 MiB cap, the model gets 4 KiB.
    let (body, headers) = call(7, "bash", json!({"command": "seq 1 700000; echo the-end"}));
    let mut all: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    all.push(("Authorization", &bearer));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.post(&server.url).header("Accept", "application/json");
    for (k, v) in &all {
        request = request.header(*k, *v);
    }
    let mut response = request.send(body.to_string()).unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let text = response.body_mut().read_to_string().unwrap();
    assert!(text.len() < 16 << 10, "a {} byte response", text.len());
    let answer: Value = serde_json::from_str(&text).unwrap();
    let shown = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(shown.contains("lines left out"), "{shown}");
    let saved = shown
        .split("the whole output is in ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .expect("the saved file is named");
    assert!(saved.starts_with(runtime.path().join("ikigai/mcp-outputs").to_str().unwrap()));
    let whole = std::fs::read_to_string(saved).unwrap();
    assert!(whole.starts_with("1\n2\n3\n"));
    // All the host captured (its cap is 1 MiB), far more than was shown.
    assert!(
        whole.len() > 512 << 10,
        "the whole capture: {}",
        whole.len()
    );
    let mode = std::fs::metadata(saved).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(answer["result"]["structuredContent"]["exit_code"], 0);
}
