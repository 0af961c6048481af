//! `ikigai acp`: the assistant as an Agent Client Protocol agent (protocol
//! version 1) for editors, over stdio: JSON-RPC 2.0, one message a line on
//! stdin and stdout, diagnostics on stderr (docs/acp.md). The editor is
//! the person's place: it creates sessions (`session/new`, `session/load`),
//! sends prompts, shows what the turn does as `session/update`s, answers
//! approval questions (`session/request_permission`) and may cancel.
//!
//! This thread reads the client's messages and never waits on a turn: each
//! session runs on a thread of its own (`session.rs`) with a
//! `Conversation` whose `Ui` speaks updates (`updates.rs`) and whose
//! approval asks the client (`permission.rs`). Responses to the agent's
//! own requests are handed to the thread that waits for them (`wire.rs`).
//! When stdin ends, every running turn is cancelled, its tools killed, and
//! the agent ends.
//!
//! The agent serves one workspace, the `cwd` of its first session: tools,
//! the sandbox and the MCP servers (the configured ones and the client's)
//! are set up for it once; a session elsewhere is refused with a message
//! saying so.

use std::collections::HashMap;
use std::io::BufReader;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{json, Value};

use super::keys;
use super::session::{sessions_dir, Session};
use super::tool_host::Tools;
use super::Options;
use crate::exit;
use crate::host::settings::Settings;
use crate::mcp::client::config::{ServerConfig, Transport};
use crate::mcp::protocol::{self, code, read_line, Line, RpcError, LINE_LIMIT};
use crate::tool::Env;

mod permission;
mod session;
mod updates;
mod wire;

use session::{Handle, Shared};
use wire::Wire;

/// The protocol version this agent speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// Runs the agent until the client closes stdin.
pub fn run(options: Options, settings: Settings) -> ExitCode {
    let env = Env::from_process();
    let choice = match keys::choose(
        options.provider.as_deref(),
        options.model.as_deref(),
        options.max_output_tokens,
        &env,
    ) {
        Ok(choice) => choice,
        Err(e) => {
            eprintln!("ikigai acp: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    for warning in &choice.warnings {
        eprintln!("ikigai acp: warning: {warning}");
    }
    if let Some(found) = &choice.found {
        eprintln!("ikigai acp: {found}");
    }
    let out = match protocol_stdout() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("ikigai acp: cannot set up stdout for the protocol: {e}");
            return ExitCode::from(exit::FAILURE);
        }
    };
    let mut agent = Agent {
        wire: Arc::new(Wire::new(Box::new(out))),
        client: choice.client,
        options: Arc::new(options),
        settings: Some(settings),
        shared: None,
        sessions: HashMap::new(),
        sessions_dir: sessions_dir(&env),
    };
    let mut input = BufReader::new(std::io::stdin().lock());
    let mut line = Vec::new();
    loop {
        match read_line(&mut input, &mut line, LINE_LIMIT) {
            Ok(Line::Message) => agent.receive(&line),
            Ok(Line::TooLong) => agent.wire.error(
                &Value::Null,
                &RpcError::new(
                    code::PARSE_ERROR,
                    format!("a message over {} MiB was dropped", LINE_LIMIT >> 20),
                ),
            ),
            Ok(Line::End) => break,
            Err(e) => {
                eprintln!("ikigai acp: reading stdin: {e}");
                break;
            }
        }
    }
    agent.shut_down();
    ExitCode::SUCCESS
}

/// The protocol's own copy of stdout, and stdout itself pointed at stderr:
/// whatever else in the process prints (a library, a stray `println!`)
/// lands among the diagnostics, never inside the protocol.
fn protocol_stdout() -> std::io::Result<std::fs::File> {
    // SAFETY: plain descriptor calls; the duplicate is owned at once and
    // closed on exec, so no tool inherits the protocol.
    unsafe {
        let fd = libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let owned = OwnedFd::from_raw_fd(fd);
        if libc::dup2(2, 1) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(std::fs::File::from(owned))
    }
}

struct Agent {
    wire: Arc<Wire>,
    client: Result<Arc<dyn super::model::ModelClient>, String>,
    options: Arc<Options>,
    /// The settings until the first session sets the workspace up.
    settings: Option<Settings>,
    /// The workspace's tools, once a session has set it up.
    shared: Option<Arc<Shared>>,
    sessions: HashMap<String, Handle>,
    sessions_dir: Option<PathBuf>,
}

impl Agent {
    /// One line from the client.
    fn receive(&mut self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let value: Value = match serde_json::from_slice(line) {
            Ok(value) => value,
            Err(e) => {
                let error = RpcError::new(code::PARSE_ERROR, format!("not JSON: {e}"));
                return self.wire.error(&Value::Null, &error);
            }
        };
        match protocol::parse(value) {
            Err(response) => self.wire.send(&response),
            Ok(protocol::Message::Request { id, method, params }) => {
                if let Err(error) = self.request(&id, &method, params) {
                    self.wire.error(&id, &error);
                }
            }
            Ok(protocol::Message::Notification { method, params }) => {
                self.notification(&method, &params)
            }
            Ok(protocol::Message::Response { id, outcome }) => {
                if !self.wire.answered(&id, outcome) {
                    eprintln!("ikigai acp: a response to no request waiting (id {id}) was dropped");
                }
            }
        }
    }

    /// A request: answered here, or by the session it goes to (Ok then
    /// means the session will answer).
    fn request(&mut self, id: &Value, method: &str, params: Value) -> Result<(), RpcError> {
        match method {
            "initialize" => {
                self.wire.result(id, initialize(&params));
                Ok(())
            }
            // No authentication methods are offered: the provider's key is
            // ikigai's own business (its environment or credentials file).
            "authenticate" => {
                self.wire.result(id, json!({}));
                Ok(())
            }
            "session/new" => self.new_session(id, &params),
            "session/load" => self.load_session(id, &params),
            "session/prompt" => {
                let session = self.session(&params)?;
                session.prompt(id.clone(), params["prompt"].clone())
            }
            "session/cancel" => {
                self.session(&params)?.cancel();
                self.wire.result(id, Value::Null);
                Ok(())
            }
            other => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("unknown method '{other}'"),
            )),
        }
    }

    fn notification(&mut self, method: &str, params: &Value) {
        match method {
            // Cancelling a session that runs nothing (its turn has ended)
            // changes nothing.
            "session/cancel" => match self.session(params) {
                Ok(session) => session.cancel(),
                Err(e) => eprintln!("ikigai acp: session/cancel: {}", e.message),
            },
            other => eprintln!("ikigai acp: the notification '{other}' is not one we act on"),
        }
    }

    /// The session `params.sessionId` names.
    fn session(&self, params: &Value) -> Result<&Handle, RpcError> {
        let Some(id) = params["sessionId"].as_str() else {
            return Err(RpcError::invalid_params("\"sessionId\" must be a string"));
        };
        self.sessions
            .get(id)
            .ok_or_else(|| RpcError::invalid_params(format!("unknown session '{id}'")))
    }

    fn new_session(&mut self, id: &Value, params: &Value) -> Result<(), RpcError> {
        let shared = self.workspace(params)?;
        let dir = self.dir()?;
        let session = Session::create(&dir).map_err(|e| {
            RpcError::new(
                code::INTERNAL_ERROR,
                format!("cannot start a session: {e:#}"),
            )
        })?;
        let key = session.id().to_string();
        eprintln!("ikigai acp: session {key} in {}", shared.cwd.display());
        let handle = Handle::open(shared, session, None, id.clone());
        self.sessions.insert(key, handle);
        Ok(())
    }

    fn load_session(&mut self, id: &Value, params: &Value) -> Result<(), RpcError> {
        let Some(key) = params["sessionId"].as_str() else {
            return Err(RpcError::invalid_params("\"sessionId\" must be a string"));
        };
        if self.sessions.contains_key(key) {
            return Err(RpcError::new(
                code::INVALID_REQUEST,
                format!("session '{key}' is open already"),
            ));
        }
        let dir = self.dir()?;
        let (session, history) = Session::resume(&dir, Some(key))
            .map_err(|e| RpcError::invalid_params(format!("cannot load session '{key}': {e:#}")))?;
        let shared = self.workspace(params)?;
        eprintln!(
            "ikigai acp: session {key} loaded ({} messages) in {}",
            history.len(),
            shared.cwd.display()
        );
        let handle = Handle::open(shared, session, Some(history), id.clone());
        self.sessions.insert(key.to_string(), handle);
        Ok(())
    }

    fn dir(&self) -> Result<PathBuf, RpcError> {
        self.sessions_dir.clone().ok_or_else(|| {
            RpcError::new(
                code::INTERNAL_ERROR,
                "cannot keep sessions: neither XDG_DATA_HOME nor HOME is set",
            )
        })
    }

    /// The workspace a session's `cwd` names, set up by the first session:
    /// the process moves there, the sandbox's workspace is it, and the
    /// client's MCP servers join the configured ones.
    fn workspace(&mut self, params: &Value) -> Result<Arc<Shared>, RpcError> {
        let Some(cwd) = params["cwd"].as_str() else {
            return Err(RpcError::invalid_params("\"cwd\" must be a string"));
        };
        let cwd = Path::new(cwd);
        if !cwd.is_absolute() {
            return Err(RpcError::invalid_params(format!(
                "\"cwd\" must be an absolute path, not '{}'",
                cwd.display()
            )));
        }
        if !cwd.is_dir() {
            return Err(RpcError::invalid_params(format!(
                "\"cwd\" {} is not a directory",
                cwd.display()
            )));
        }
        let servers = mcp_servers(&params["mcpServers"]).map_err(RpcError::invalid_params)?;
        if let Some(shared) = &self.shared {
            if shared.cwd != cwd {
                return Err(RpcError::invalid_params(format!(
                    "this agent works in {}; start another agent for {}",
                    shared.cwd.display(),
                    cwd.display()
                )));
            }
            return Ok(Arc::clone(shared));
        }
        std::env::set_current_dir(cwd).map_err(|e| {
            RpcError::invalid_params(format!("cannot work in {}: {e}", cwd.display()))
        })?;
        let Some(mut settings) = self.settings.take() else {
            return Err(RpcError::new(code::INTERNAL_ERROR, "no settings"));
        };
        settings.sandbox.workspace = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        settings.mcp_servers = servers;
        if let Some(warning) = crate::host::wide_workspace(&settings.sandbox, &Env::from_process())
        {
            eprintln!("ikigai acp: warning: {warning}");
        }
        let who = match &self.client {
            Ok(c) => format!("{} {}", c.provider(), c.model()),
            Err(_) => "no model configured (prompts explain how to set a key)".into(),
        };
        eprintln!("ikigai acp · {who} · workspace {}", cwd.display());
        let shared = Arc::new(Shared {
            wire: Arc::clone(&self.wire),
            tools: Arc::new(Tools::start(settings)),
            client: self.client.clone(),
            options: Arc::clone(&self.options),
            cwd: cwd.to_path_buf(),
        });
        self.shared = Some(Arc::clone(&shared));
        Ok(shared)
    }

    /// stdin ended: nothing will answer a question, every turn stops, its
    /// tools are killed, and each session's thread ends.
    fn shut_down(&mut self) {
        self.wire.hang_up();
        for (_, session) in self.sessions.drain() {
            session.close();
        }
    }
}

/// The answer to `initialize`: the version we speak (1, whatever the
/// client asked, as the protocol says) and what we can do.
fn initialize(_params: &Value) -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
            "mcpCapabilities": {"http": true, "sse": false},
        },
        "authMethods": [],
        "agentInfo": {"name": "ikigai", "title": "ikigai", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The client's MCP servers as our configuration has them: stdio servers
/// (`command`, `args`, `env` as `[{name, value}]`) and HTTP ones (`url`,
/// `headers`). Err names the entry that is wrong.
fn mcp_servers(list: &Value) -> Result<Vec<ServerConfig>, String> {
    let Some(items) = (match list {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => Some(items),
        _ => None,
    }) else {
        return Err("\"mcpServers\" must be an array".into());
    };
    let pairs = |value: &Value, what: &str| -> Result<Vec<(String, String)>, String> {
        value
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|p| match (p["name"].as_str(), p["value"].as_str()) {
                (Some(n), Some(v)) => Ok((n.to_string(), v.to_string())),
                _ => Err(format!(
                    "each of \"{what}\" needs a \"name\" and a \"value\""
                )),
            })
            .collect()
    };
    let mut servers = Vec::new();
    for (n, item) in items.iter().enumerate() {
        let Some(name) = item["name"].as_str() else {
            return Err(format!("mcpServers[{n}] needs a \"name\""));
        };
        let transport = match item["type"].as_str() {
            Some("http") => Transport::Http {
                url: item["url"]
                    .as_str()
                    .ok_or(format!("mcpServers[{n}] ({name}) needs a \"url\""))?
                    .to_string(),
                headers: pairs(&item["headers"], "headers")?.into_iter().collect(),
            },
            Some("sse") => {
                return Err(format!(
                    "mcpServers[{n}] ({name}): SSE servers are not supported \
                     (mcpCapabilities.sse is false)"
                ))
            }
            None | Some("stdio") => Transport::Stdio {
                command: item["command"]
                    .as_str()
                    .ok_or(format!("mcpServers[{n}] ({name}) needs a \"command\""))?
                    .to_string(),
                args: item["args"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .map(|a| a.as_str().map(str::to_string))
                    .collect::<Option<_>>()
                    .ok_or(format!(
                        "mcpServers[{n}] ({name}): \"args\" must be strings"
                    ))?,
                env: pairs(&item["env"], "env")?.into_iter().collect(),
                cwd: None,
                // The editor's servers are fenced as the configured ones are.
                fenced: true,
                add_dirs: Vec::new(),
            },
            Some(other) => {
                return Err(format!(
                    "mcpServers[{n}] ({name}): unknown transport '{other}'"
                ))
            }
        };
        servers.push(ServerConfig {
            name: name.to_string(),
            transport: Ok(transport),
        });
    }
    Ok(servers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_mcp_servers_in_our_terms() {
        let servers = mcp_servers(&json!([
            {"name": "files", "command": "/bin/srv", "args": ["-v"], "env": [{"name": "A", "value": "1"}]},
            {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": [{"name": "X", "value": "y"}]},
        ]))
        .unwrap();
        assert_eq!(servers.len(), 2);
        match &servers[0].transport {
            Ok(Transport::Stdio {
                command, args, env, ..
            }) => {
                assert_eq!(command, "/bin/srv");
                assert_eq!(args, &["-v"]);
                assert_eq!(env.get("A").map(String::as_str), Some("1"));
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&servers[1].transport, Ok(Transport::Http { url, .. }) if url == "http://127.0.0.1:9/mcp")
        );
        let why = mcp_servers(&json!([{"type": "sse", "name": "s", "url": "x", "headers": []}]))
            .unwrap_err();
        assert!(why.contains("SSE"), "{why}");
        assert!(mcp_servers(&json!([{"name": "x"}]))
            .unwrap_err()
            .contains("command"));
        assert!(mcp_servers(&json!({})).is_err());
        assert!(mcp_servers(&Value::Null).unwrap().is_empty());
    }

    #[test]
    fn initialize_says_what_we_do() {
        let answer = initialize(&json!({"protocolVersion": 1}));
        assert_eq!(answer["protocolVersion"], 1);
        assert_eq!(answer["agentCapabilities"]["loadSession"], true);
        assert_eq!(
            answer["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
            true
        );
        assert_eq!(answer["agentCapabilities"]["mcpCapabilities"]["http"], true);
    }
}
