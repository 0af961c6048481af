//! The host as an MCP client: the servers of the configuration file start
//! beside tool discovery, each with 10 s to answer `initialize` and
//! `tools/list`; their tools join the registry as `mcp__SERVER__TOOL`, and a
//! call of one is sent to its server and comes back as an envelope like any
//! other tool's. A server that fails is reported with its reason, like a
//! skipped tool. Discovering again (`/refresh`) stops the servers and
//! starts them anew.
//!
//! A server the host starts runs fenced (decision 82): inside the
//! session's sandbox, with the network, writing the workspace, `/tmp`, its
//! caches and its entry's `add_dirs`, as `sandbox-exec` builds it for a
//! tool call. An entry with `"sandbox": "off"` runs with the person's
//! rights, and the start line says so (`unfenced`).
//!
//! Only the file the user names (`--mcp-config`, `IKIGAI_MCP_CONFIG`) or
//! `~/.ikigai/mcp.json` is read: a project's `.mcp.json` could start any
//! program, so the host never loads one by itself.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub mod config;
pub mod connection;

use connection::{Connection, Failure};

use crate::host::envelope::{self, Envelope};
use crate::host::settings::{parse_timeout, SandboxSettings};
use crate::mcp::protocol::sanitise_name;
use crate::sandbox::{exec, Fence, Mode};
use crate::tool::Env;

/// What a server has to start, shake hands and list its tools, unless
/// `IKIGAI_MCP_START_TIMEOUT` (seconds) says otherwise: a server run through
/// `npx` may first download itself.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest tool name providers accept.
const NAME_MAX: usize = 64;
/// `tools/list` pages read at most, against a server that never ends.
const PAGES_MAX: usize = 100;

/// One tool of one server, as the registry lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct McpTool {
    /// `mcp__SERVER__TOOL`, sanitised and cut to 64 characters.
    pub name: String,
    pub server: String,
    pub description: String,
    /// `{"name", "description", "parameters"}` plus `annotations` when the
    /// server gave any.
    pub schema: Value,
}

/// A server or a configuration file that gave no tools, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failed {
    /// The server's name, or the configuration file.
    pub what: String,
    pub reason: String,
}

#[derive(Default)]
struct Live {
    servers: HashMap<String, Arc<Connection>>,
    /// The fence each fenced server runs behind, for the note a failed
    /// call carries.
    fences: HashMap<String, Fence>,
    /// Registered name -> (server, the tool's own name).
    tools: HashMap<String, (String, String)>,
}

fn live() -> &'static Mutex<Live> {
    static LIVE: OnceLock<Mutex<Live>> = OnceLock::new();
    LIVE.get_or_init(Mutex::default)
}

/// Stops the servers started before, then starts those of every file in
/// `paths` (the person's, then a trusted project's `.mcp.json`) and `more`
/// (an editor's, over ACP) all at once, fenced as `sandbox` says, and lists
/// their tools; a server whose name an earlier one took is reported, not
/// started.
pub fn start_all(
    paths: &[&Path],
    more: &[config::ServerConfig],
    sandbox: &SandboxSettings,
) -> (Vec<McpTool>, Vec<Failed>) {
    stop_all();
    let env = Env::from_process();
    let timeout = env
        .var("IKIGAI_MCP_START_TIMEOUT")
        .and_then(|t| parse_timeout(t).ok())
        .unwrap_or(START_TIMEOUT);
    let mut configs: Vec<config::ServerConfig> = Vec::new();
    let mut failed = Vec::new();
    for path in paths {
        match config::load(path, &env) {
            Ok(found) => {
                for server in found {
                    if configs.iter().any(|c| c.name == server.name) {
                        failed.push(Failed {
                            reason: format!(
                                "not started from {}: an earlier file names a server '{}'",
                                path.display(),
                                server.name
                            ),
                            what: server.name,
                        });
                    } else {
                        configs.push(server);
                    }
                }
            }
            Err(reason) => failed.push(Failed {
                what: path.display().to_string(),
                reason,
            }),
        }
    }
    for server in more {
        if configs.iter().any(|c| c.name == server.name) {
            failed.push(Failed {
                reason: "not started: the MCP configuration file already has a server of \
                         this name, which is the one started"
                    .into(),
                what: server.name.clone(),
            });
        } else {
            configs.push(server.clone());
        }
    }
    let started: Vec<_> = std::thread::scope(|s| {
        let jobs: Vec<_> = configs
            .iter()
            .map(|c| {
                let env = &env;
                (c, s.spawn(move || open(c, timeout, sandbox, env)))
            })
            .collect();
        jobs.into_iter()
            .map(|(c, job)| {
                let outcome = job
                    .join()
                    .unwrap_or_else(|_| Err("the start failed".into()));
                (c.name.clone(), outcome)
            })
            .collect()
    });
    let mut tools = Vec::new();
    let mut state = live().lock().unwrap();
    for (server, outcome) in started {
        match outcome {
            Ok((connection, listed, fence)) => {
                for tool in listed {
                    let Some(own) = tool["name"].as_str() else {
                        continue;
                    };
                    let entry = mcp_tool(&server, own, &tool);
                    state
                        .tools
                        .insert(entry.name.clone(), (server.clone(), own.to_string()));
                    tools.push(entry);
                }
                if let Some(fence) = fence {
                    state.fences.insert(server.clone(), fence);
                }
                state.servers.insert(server, Arc::new(connection));
            }
            Err(reason) => failed.push(Failed {
                what: server,
                reason,
            }),
        }
    }
    (tools, failed)
}

/// Starts one server and lists its tools within `timeout`; also the fence
/// it runs behind, if any.
fn open(
    config: &config::ServerConfig,
    timeout: Duration,
    sandbox: &SandboxSettings,
    env: &Env,
) -> Result<(Connection, Vec<Value>, Option<Fence>), String> {
    let transport = config.transport.clone()?;
    let fence = match &transport {
        config::Transport::Stdio {
            fenced: true,
            add_dirs,
            ..
        } if sandbox.mode.confines() => Some(server_fence(sandbox, add_dirs, env)),
        _ => None,
    };
    let fence_args = fence.as_ref().map(|f| {
        let mut args = exec::arguments(f, sandbox.unavailable.is_some());
        args.remove(0); // the personality's name
        args
    });
    let connection = Connection::open(&transport, fence_args.as_deref())?;
    let deadline = Instant::now() + timeout;
    let left = || deadline.saturating_duration_since(Instant::now());
    let listed = connection
        .initialize(left())
        .map_err(|f| format!("initialize: {}", f.describe(timeout)))
        .and_then(|_| {
            let mut tools = Vec::new();
            let mut cursor: Option<String> = None;
            for _ in 0..PAGES_MAX {
                let params = match &cursor {
                    Some(c) => json!({ "cursor": c }),
                    None => json!({}),
                };
                let page = connection
                    .request("tools/list", params, left(), None)
                    .map_err(|f| format!("tools/list: {}", f.describe(timeout)))?;
                tools.extend(page["tools"].as_array().cloned().unwrap_or_default());
                cursor = page["nextCursor"].as_str().map(str::to_string);
                if cursor.is_none() {
                    break;
                }
            }
            Ok(tools)
        });
    match listed {
        Ok(tools) => Ok((connection, tools, fence)),
        Err(reason) => {
            connection.close();
            Err(reason)
        }
    }
}

/// The fence of a server the host starts (decision 82): the session's
/// rules for secrets, sockets and the files that run later, with the
/// network. It writes what a tool call may write in workspace-write (in
/// read-only: `$TMPDIR`, `/tmp` and `/dev/shm`), plus its caches
/// (`cache_dirs`) and its entry's `add_dirs`: a server that cannot keep its
/// cache (npx's packages, pip's wheels) does not start at all.
pub fn server_fence(sandbox: &SandboxSettings, add_dirs: &[PathBuf], env: &Env) -> Fence {
    let mut writable = sandbox.writable();
    if sandbox.mode != Mode::WorkspaceWrite {
        writable.retain(|d| d != &sandbox.workspace && !sandbox.add_dirs.contains(d));
    }
    for dir in cache_dirs(env).into_iter().chain(add_dirs.iter().cloned()) {
        if !writable.contains(&dir) {
            writable.push(dir);
        }
    }
    Fence {
        mode: Mode::WorkspaceWrite,
        writable,
        network: true,
        guard: sandbox.guard.clone(),
        limits: sandbox.limits,
        scope_bus: sandbox.scope_bus.clone(),
    }
}

/// The caches every server may write: `$XDG_CACHE_HOME` (else `~/.cache`)
/// and `~/.npm`. Made when missing (0700), since the fence can only open
/// a directory that exists, and a first `npx` run makes `~/.npm`.
fn cache_dirs(env: &Env) -> Vec<PathBuf> {
    let home = env.home();
    let cache = match env.var("XDG_CACHE_HOME").filter(|d| d.starts_with('/')) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => home.as_ref().map(|h| h.join(".cache")),
    };
    let dirs: Vec<PathBuf> = cache
        .into_iter()
        .chain(home.map(|h| h.join(".npm")))
        .collect();
    for dir in &dirs {
        if !dir.exists() {
            use std::os::unix::fs::DirBuilderExt;
            // Not made, the directory is only left out of the fence.
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir);
        }
    }
    dirs
}

/// The servers of `config` that run with the person's rights although the
/// session is sandboxed (`"sandbox": "off"`), for the start line. A file
/// that cannot be read names none: starting the servers reports it.
pub fn unfenced(config: Option<&Path>, mode: Mode) -> Vec<String> {
    let Some(path) = config.filter(|_| mode.confines()) else {
        return Vec::new();
    };
    let configs = config::load(path, &Env::from_process()).unwrap_or_default();
    configs
        .into_iter()
        .filter(|c| {
            matches!(
                c.transport,
                Ok(config::Transport::Stdio { fenced: false, .. })
            )
        })
        .map(|c| c.name)
        .collect()
}

/// The fence the server of MCP tool `name` (as registered) runs behind;
/// None for a server unfenced or reached over HTTP.
pub fn fence_of(name: &str) -> Option<Fence> {
    let state = live().lock().unwrap();
    let (server, _) = state.tools.get(name)?;
    state.fences.get(server).cloned()
}

/// The registry's view of one listed tool.
fn mcp_tool(server: &str, own: &str, tool: &Value) -> McpTool {
    let name = sanitise_name(&format!("mcp__{server}__{own}"), NAME_MAX);
    let description = tool["description"].as_str().unwrap_or_default().to_string();
    let mut parameters = match &tool["inputSchema"] {
        Value::Object(schema) => Value::Object(schema.clone()),
        _ => json!({"type": "object"}),
    };
    if parameters.get("properties").is_none() {
        parameters["properties"] = json!({});
    }
    let mut schema = json!({"name": name, "description": description, "parameters": parameters});
    if let Some(annotations) = tool.get("annotations").filter(|a| a.is_object()) {
        schema["annotations"] = annotations.clone();
    }
    McpTool {
        name,
        server: server.to_string(),
        description,
        schema,
    }
}

/// Stops every server (at `/refresh`, and before the host ends).
pub fn stop_all() {
    let servers: Vec<Arc<Connection>> = {
        let mut state = live().lock().unwrap();
        state.tools.clear();
        state.fences.clear();
        state.servers.drain().map(|(_, c)| c).collect()
    };
    std::thread::scope(|s| {
        for server in &servers {
            s.spawn(move || server.close());
        }
    });
}

/// How a call of an MCP tool ended, for the host to wrap in its envelope.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// The tool's result (`CallToolResult`); `isError` may be true.
    Result(Value),
    TimedOut(Duration),
    /// The person interrupted the call after this long.
    Interrupted(Duration),
    /// The server or the transport failed, and why.
    Failed(String),
    /// A JSON-RPC error: the server refused the call (unknown tool, bad
    /// arguments).
    Refused(String),
}

/// Calls MCP tool `name` (as registered) with `arguments`. A timeout or a
/// cancel sends `notifications/cancelled` to the server.
pub fn call(
    name: &str,
    arguments: &Value,
    timeout: Duration,
    cancel: Option<&AtomicBool>,
) -> Reply {
    let found = {
        let state = live().lock().unwrap();
        state.tools.get(name).and_then(|(server, own)| {
            let connection = state.servers.get(server)?.clone();
            Some((server.clone(), own.clone(), connection))
        })
    };
    let Some((server, own, connection)) = found else {
        return Reply::Failed(format!(
            "the MCP server of '{name}' is not running (run /refresh)"
        ));
    };
    let params = json!({"name": own, "arguments": arguments});
    let started = Instant::now();
    match connection.request("tools/call", params, timeout, cancel) {
        Ok(result) => Reply::Result(result),
        Err(Failure::TimedOut) => Reply::TimedOut(timeout),
        Err(Failure::Cancelled) => Reply::Interrupted(started.elapsed()),
        Err(Failure::Rpc(e)) => Reply::Refused(format!(
            "MCP server '{server}' refused the call: {} ({})",
            e.message, e.code
        )),
        Err(Failure::Broken(why)) => Reply::Failed(format!("MCP server '{server}': {why}")),
    }
}

/// The envelope of an MCP tool's call, like any other tool's: a result's
/// `structuredContent` (or its text, as JSON when it is a JSON object) is the
/// envelope's `result`; an `isError` result is a failure carrying the
/// server's text.
pub fn envelope(name: &str, reply: &Reply) -> Envelope {
    match reply {
        Reply::Result(result) if result["isError"] == Value::Bool(true) => {
            let text = content_text(result);
            let said = if text.is_empty() { "(no text)" } else { &text };
            Envelope::refused(
                envelope::Failure::ToolError,
                format!("Tool '{name}' failed: {said}"),
            )
        }
        Reply::Result(result) => {
            let text = content_text(result);
            let value = match &result["structuredContent"] {
                Value::Object(object) => Value::Object(object.clone()),
                _ => match serde_json::from_str::<Value>(&text) {
                    Ok(Value::Object(object)) => Value::Object(object),
                    _ => json!({ "text": text }),
                },
            };
            Envelope::Success {
                result: value,
                truncated: None,
            }
        }
        Reply::TimedOut(after) => Envelope::refused(
            envelope::Failure::Timeout,
            envelope::timed_out(name, *after),
        ),
        Reply::Interrupted(after) => Envelope::refused(
            envelope::Failure::Cancelled,
            envelope::cancelled(name, *after),
        ),
        Reply::Failed(why) => Envelope::refused(
            envelope::Failure::Crashed,
            format!("Tool '{name}' failed: {why}"),
        ),
        Reply::Refused(why) => Envelope::refused(
            envelope::Failure::InvalidParams,
            format!("Tool '{name}': {why}"),
        ),
    }
}

/// The text of a result's content: its text blocks, one after another; other
/// blocks (images, resources) by their type.
pub fn content_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .map(|b| match b["text"].as_str() {
                    Some(text) if b["type"] == "text" => text.to_string(),
                    _ => format!("[{} content]", b["type"].as_str().unwrap_or("unknown")),
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_named_for_providers() {
        let tool = json!({"name": "read.file", "description": "Reads",
            "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}});
        let t = mcp_tool("my server", "read.file", &tool);
        assert_eq!(t.name, "mcp__my_server__read_file");
        assert_eq!(
            t.schema,
            json!({"name": "mcp__my_server__read_file", "description": "Reads",
                   "parameters": {"type": "object", "properties": {}},
                   "annotations": {"readOnlyHint": true}})
        );
        let long = mcp_tool(&"s".repeat(40), &"t".repeat(40), &json!({}));
        assert_eq!(long.name.len(), 64);
        assert_eq!(
            long.schema["parameters"],
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn replies_become_envelopes() {
        let ok = Reply::Result(json!({"content": [{"type": "text", "text": "hi"}]}));
        assert_eq!(
            envelope("t", &ok).to_json(),
            json!({"tool_success": true, "result": {"text": "hi"}})
        );
        let ok = Reply::Result(json!({"content": [{"type": "text", "text": "{\"a\":1}"}]}));
        assert_eq!(envelope("t", &ok).to_json()["result"], json!({"a": 1}));
        let ok = Reply::Result(json!({"content": [], "structuredContent": {"b": 2}}));
        assert_eq!(envelope("t", &ok).to_json()["result"], json!({"b": 2}));
        let bad =
            Reply::Result(json!({"content": [{"type": "text", "text": "no"}], "isError": true}));
        let e = envelope("t", &bad).to_json();
        assert_eq!(
            (&e["tool_success"], &e["error"], &e["error_code"]),
            (
                &json!(false),
                &json!("Tool 't' failed: no"),
                &json!("TOOL_ERROR")
            )
        );
        let e = envelope("t", &Reply::TimedOut(Duration::from_secs(2))).to_json();
        assert_eq!(e["error"], "Tool 't' timed out after 2s");
        assert_eq!(e["error_code"], "TOOL_TIMEOUT");
        let e = envelope("t", &Reply::Interrupted(Duration::from_millis(1500))).to_json();
        assert_eq!(
            e["error"],
            "Tool 't' was cancelled by the user after 1.5s, before it finished"
        );
        assert_eq!(e["error_code"], "CANCELLED");
        assert_eq!(
            envelope("t", &Reply::Refused("x".into())).to_json()["error_code"],
            "INVALID_PARAMS"
        );
        assert_eq!(
            envelope("t", &Reply::Failed("x".into())).to_json()["error_code"],
            "TOOL_CRASHED"
        );
    }

    #[test]
    fn content_becomes_text() {
        let r = json!({"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "x"},
                                   {"type": "text", "text": "b"}]});
        assert_eq!(content_text(&r), "a\n[image content]\nb");
        assert_eq!(content_text(&json!({})), "");
    }
}
