//! What no SDK would send: lines that are not JSON, unknown methods,
//! requests about sessions that do not exist, a response nobody asked
//! for. Each gets the answer JSON-RPC gives it (or none, for a
//! notification), nothing but protocol reaches stdout, and the agent goes
//! on answering.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

use super::{openai, Home};
use crate::common::model_server::text;

/// `ikigai acp` spoken to line by line.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Raw {
    fn start(home: &Home, server: &crate::common::model_server::ModelServer) -> Raw {
        let argv = home.agent(server, &[]);
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        home.environment(&mut cmd, server);
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ikigai acp");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Raw {
            stdin: child.stdin.take(),
            child,
            lines: rx,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line on stdout, which must be a JSON-RPC 2.0 message.
    fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(20))
            .expect("an answer within 20 s");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout holds something that is not JSON ({e}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        message
    }

    /// The response with `id`, past any notifications.
    fn answer(&self, id: u64) -> Value {
        loop {
            let message = self.next();
            if message["id"] == json!(id) && message.get("method").is_none() {
                return message;
            }
            assert!(
                message.get("method").is_some(),
                "an answer out of turn: {message}"
            );
        }
    }

    fn close(mut self) -> i32 {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        // Whatever is left on stdout is protocol too.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
            let message: Value = serde_json::from_str(&line).expect("JSON on stdout");
            assert_eq!(message["jsonrpc"], "2.0");
        }
        status.code().unwrap_or(-1)
    }
}

fn code(message: &Value) -> i64 {
    message["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {message}"))
}

#[test]
fn bad_input_gets_json_rpc_answers_and_the_agent_lives() {
    let home = Home::new();
    let server = openai(vec![text("fine")]);
    let mut agent = Raw::start(&home, &server);
    agent.send("this is not json");
    let parse = agent.next();
    assert_eq!(code(&parse), -32700);
    assert_eq!(parse["id"], json!(null));
    agent.send("[1, 2]");
    assert_eq!(code(&agent.next()), -32600);
    agent.send(r#"{"jsonrpc":"2.0","id":1,"method":"session/frobnicate","params":{}}"#);
    let unknown = agent.answer(1);
    assert_eq!(code(&unknown), -32601);
    assert!(unknown["error"]["message"]
        .as_str()
        .unwrap()
        .contains("session/frobnicate"));
    agent.send(r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}"#);
    let prompt = agent.answer(2);
    assert_eq!(code(&prompt), -32602);
    assert!(prompt["error"]["message"]
        .as_str()
        .unwrap()
        .contains("nope"));
    // Notifications and stray responses get no answer at all.
    agent.send(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"nope"}}"#);
    agent.send(r#"{"jsonrpc":"2.0","id":77,"result":{}}"#);
    agent.send(r#"{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"work","mcpServers":[]}}"#);
    let relative = agent.answer(3);
    assert_eq!(code(&relative), -32602);
    assert!(relative["error"]["message"]
        .as_str()
        .unwrap()
        .contains("absolute"));
    agent.send(r#"{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"/nonexistent/dir","mcpServers":[]}}"#);
    assert_eq!(code(&agent.answer(4)), -32602);

    let work = home.work();
    agent.send(
        &json!({"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd": work, "mcpServers":[]}})
            .to_string(),
    );
    let session = agent.answer(5)["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let image = json!({"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{
        "sessionId": session,
        "prompt": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}],
    }});
    agent.send(&image.to_string());
    let refused = agent.answer(6);
    assert_eq!(code(&refused), -32602);
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("image"));
    // Another workspace is refused, with the one this agent serves named.
    agent.send(
        r#"{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#,
    );
    let elsewhere = agent.answer(7);
    assert!(elsewhere["error"]["message"]
        .as_str()
        .unwrap()
        .contains("start another agent"));
    let prompt = json!({"jsonrpc":"2.0","id":8,"method":"session/prompt","params":{
        "sessionId": session,
        "prompt": [{"type": "text", "text": "hello"}],
    }});
    agent.send(&prompt.to_string());
    assert_eq!(agent.answer(8)["result"]["stopReason"], "end_turn");
    assert_eq!(agent.close(), 0);
}
