//! `ikigai acp` (decision 88) driven as an editor drives it: by the
//! official TypeScript SDK's client side (`@agentclientprotocol/sdk`,
//! installed under `target/` on first use; without node the tests say so
//! and pass without running), through the scenario runner in
//! `tests/fixtures/acp/client.mjs`, against the scripted provider of
//! `common::model_server`. The SDK parses every message with the
//! protocol's own schema, so an update it accepts is one the protocol
//! defines. The faults are also sent as raw lines, which no SDK would
//! write.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::common::link;
use crate::common::model_server::{Api, ModelServer};

mod faults;
mod turns;

/// The SDK release the tests speak through.
const SDK: &str = "@agentclientprotocol/sdk@2.4.0";

/// The SDK's package directory, installed once with npm; None (with the
/// reason printed) when this machine has no node.
fn sdk() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let prefix = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/acp-node");
        let package = prefix.join("node_modules/@agentclientprotocol/sdk");
        let marker = prefix.join(".installed-sdk-2.4.0");
        if marker.exists() {
            return Some(package);
        }
        if Command::new("node").arg("--version").output().is_err() {
            eprintln!("skipped: node is not installed, so the ACP SDK's client cannot run");
            return None;
        }
        std::fs::create_dir_all(&prefix).expect("npm prefix");
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg(SDK)
            .output()
            .expect("run npm");
        assert!(
            out.status.success(),
            "npm install {SDK} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(&marker, "").expect("marker");
        Some(package)
    })
    .as_deref()
}

/// A home for one agent: HOME, the XDG directories, our tools as system
/// tools, and a workspace directory `work`.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let libexec = dir.path().join("libexec");
        std::fs::create_dir_all(&libexec).unwrap();
        std::fs::create_dir_all(dir.path().join("tools")).unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        for tool in ["bash", "file-read", "file-write"] {
            std::os::unix::fs::symlink(link(tool), libexec.join(tool)).unwrap();
        }
        Home { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn work(&self) -> PathBuf {
        self.path().join("work").canonicalize().unwrap()
    }

    /// `cmd` set to run in this home against `server`, with nothing
    /// inherited that could reach a real provider or change the policy.
    fn environment(&self, cmd: &mut Command, server: &ModelServer) {
        for var in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "OPENAI_BASE_URL",
            "ANTHROPIC_BASE_URL",
            "IKIGAI_MAX_OUTPUT_TOKENS",
            "IKIGAI_PROVIDER",
            "IKIGAI_MODEL",
            "IKIGAI_CONTEXT_DIR",
            "IKIGAI_APPROVAL",
            "IKIGAI_CONFIG",
            "IKIGAI_SANDBOX",
            "IKIGAI_MCP_CONFIG",
            "http_proxy",
            "https_proxy",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "all_proxy",
        ] {
            cmd.env_remove(var);
        }
        let home = self.path();
        cmd.env("HOME", home)
            .env("IKIGAI_RETRY_BASE_MS", "1")
            .env("OLLAMA_HOST", "127.0.0.1:1")
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("IKIGAI_TOOLS_DIR", home.join("tools"))
            .env("IKIGAI_LIBEXEC_DIR", home.join("libexec"))
            .current_dir(self.work());
        for (k, v) in server.env() {
            cmd.env(k, v);
        }
    }

    /// The agent as the client starts it: `ikigai [OPTIONS] acp`.
    fn agent(&self, server: &ModelServer, options: &[&str]) -> Vec<String> {
        let mut argv = vec![
            link("ikigai").display().to_string(),
            "--provider".into(),
            server.api.name().into(),
        ];
        argv.extend(options.iter().map(|o| o.to_string()));
        argv.push("acp".into());
        argv
    }

    /// Runs `scenario` through the SDK's client against `ikigai acp`; the
    /// events it printed, or None when node is missing.
    fn drive(&self, server: &ModelServer, options: &[&str], scenario: Value) -> Option<Events> {
        let sdk = sdk()?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp/client.mjs");
        let mut cmd = Command::new("node");
        self.environment(&mut cmd, server);
        cmd.arg(script)
            .arg(scenario.to_string())
            .env("ACP_SDK", sdk)
            .env(
                "ACP_AGENT",
                serde_json::to_string(&self.agent(server, options)).unwrap(),
            );
        let out = cmd.output().expect("run node");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success(),
            "the client failed:\n{stdout}\n{stderr}"
        );
        let events = stdout
            .lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}\n{stderr}"))
            })
            .collect();
        Some(Events {
            all: events,
            stderr,
        })
    }
}

/// What the client saw.
#[derive(Debug)]
struct Events {
    all: Vec<Value>,
    /// The client's and the agent's stderr, shown when a test fails.
    #[allow(dead_code)]
    stderr: String,
}

impl Events {
    /// The results and errors of requests `op`, in order.
    fn answers(&self, op: &str) -> Vec<&Value> {
        self.all
            .iter()
            .filter(|e| e["op"] == op && (e["event"] == "result" || e["event"] == "error"))
            .collect()
    }

    /// The stop reasons of the prompts, in order (`error` for an error).
    fn stops(&self) -> Vec<String> {
        self.answers("prompt")
            .iter()
            .map(|a| {
                a["result"]["stopReason"]
                    .as_str()
                    .unwrap_or("error")
                    .to_string()
            })
            .collect()
    }

    /// The updates of kind `kind`, in order.
    fn updates(&self, kind: &str) -> Vec<&Value> {
        self.all
            .iter()
            .filter(|e| e["event"] == "update" && e["update"]["sessionUpdate"] == kind)
            .map(|e| &e["update"])
            .collect()
    }

    /// The agent's message text, chunks joined.
    fn said(&self) -> String {
        self.updates("agent_message_chunk")
            .iter()
            .filter_map(|u| u["content"]["text"].as_str())
            .collect()
    }

    fn permissions(&self) -> Vec<&Value> {
        self.all
            .iter()
            .filter(|e| e["event"] == "permission")
            .collect()
    }

    /// The updates of call `id`, in order.
    fn call(&self, id: &str) -> Vec<&Value> {
        self.all
            .iter()
            .filter(|e| e["event"] == "update" && e["update"]["toolCallId"] == id)
            .map(|e| &e["update"])
            .collect()
    }

    fn exit(&self) -> &Value {
        self.all
            .iter()
            .find(|e| e["event"] == "exit")
            .unwrap_or_else(|| panic!("no exit: {self:?}"))
    }

    fn session(&self) -> String {
        self.answers("new")[0]["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {self:?}"))
            .to_string()
    }
}

/// A prompt of one text block.
fn say(text: &str) -> Value {
    json!([{"type": "text", "text": text}])
}

/// The user messages the provider received in the last request (OpenAI's
/// Chat Completions format).
fn user_texts(server: &ModelServer) -> Vec<String> {
    let requests = server.requests();
    let last = requests.last().expect("a request");
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

fn openai(script: Vec<crate::common::model_server::Reply>) -> ModelServer {
    ModelServer::start(Api::OpenAi, script)
}
