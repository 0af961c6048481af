//! What `ikigai-tools mcp` answers, whatever carries the messages: the
//! handshake (`initialize`, for the 2024-11-05 to 2025-11-25 revisions),
//! `server/discover` and per-request `_meta` (the stateless 2026-07-28
//! revision), `ping`, `tools/list` and `tools/call`. A call goes through the
//! host's own call path, so its envelope, limits and secrets policy are the
//! assistant's; the envelope then becomes an MCP result, sized for a model
//! as the assistant's are (decision 25: `--model-output`, the whole output
//! saved and named), and a failure's text ends with its error code in
//! brackets (decision 73), for clients that give their model only the text.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};

use serde_json::{json, Map, Value};

use super::captures::Captures;
use crate::host::call;
use crate::host::envelope::Envelope;
use crate::host::for_model;
use crate::host::registry::Registry;
use crate::host::settings::Settings;
use crate::mcp::protocol::{
    self, meta_version, supported_versions, RpcError, HANDSHAKE_VERSIONS, LATEST_HANDSHAKE,
    MODERN_VERSION,
};

/// Tools per `tools/list` page.
const PAGE: usize = 100;
/// How long a stateless client may cache `tools/list` and `server/discover`:
/// the tools change only when someone changes the tool directories.
const TTL_MS: u64 = 60_000;

/// Which revision a request is served under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Era {
    /// Negotiated by `initialize` for the connection (stdio) or session (HTTP).
    Handshake(String),
    /// Named by the request's own `_meta`.
    Modern,
}

/// The tools on offer and what a call may cost.
pub struct Service {
    /// Swapped whole when the tool directories change; a running call keeps
    /// the registry it started with.
    registry: RwLock<Arc<Registry>>,
    settings: Settings,
    /// The most of each output a result carries (`--model-output`).
    model_output: usize,
    /// Where the whole of a cut output goes.
    captures: Captures,
}

impl Service {
    pub fn new(
        registry: Registry,
        settings: Settings,
        model_output: usize,
        captures: Captures,
    ) -> Service {
        Service {
            registry: RwLock::new(Arc::new(registry)),
            settings,
            model_output,
            captures,
        }
    }

    fn registry(&self) -> Arc<Registry> {
        self.registry
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Offers `registry` from now on; true when its tools differ from those
    /// offered before.
    pub fn replace(&self, registry: Registry) -> bool {
        let mut current = self.registry.write().unwrap_or_else(|e| e.into_inner());
        let changed = current.entries() != registry.entries();
        *current = Arc::new(registry);
        changed
    }

    /// The era of one request: its `_meta` version when it names one (which
    /// must be the stateless revision), else the connection's handshake.
    pub fn era_of(params: &Value, negotiated: Option<&str>) -> Result<Era, RpcError> {
        match meta_version(params) {
            Some(Value::String(v)) if v == MODERN_VERSION => Ok(Era::Modern),
            Some(other) => Err(RpcError::unsupported_version(other)),
            None => Ok(Era::Handshake(
                negotiated.unwrap_or(LATEST_HANDSHAKE).to_string(),
            )),
        }
    }

    /// Answers `initialize`: the client's revision when we speak it, else
    /// our newest, as the handshake asks.
    pub fn initialize(&self, params: &Value, list_changed: bool) -> (String, Value) {
        let asked = params["protocolVersion"].as_str().unwrap_or_default();
        let version = if HANDSHAKE_VERSIONS.contains(&asked) {
            asked
        } else {
            LATEST_HANDSHAKE
        };
        let result = json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": list_changed}},
            "serverInfo": server_info(),
            "instructions": INSTRUCTIONS,
        });
        (version.to_string(), result)
    }

    /// Answers one request other than `initialize`. `cancel` stops a
    /// running tool call (its processes are killed).
    pub fn handle(
        &self,
        era: &Era,
        method: &str,
        params: &Value,
        cancel: Option<&AtomicBool>,
    ) -> Result<Value, RpcError> {
        let result = match method {
            "ping" => json!({}),
            "server/discover" => json!({
                "supportedVersions": supported_versions(),
                "capabilities": {"tools": {}},
                "instructions": INSTRUCTIONS,
                "ttlMs": TTL_MS,
                "cacheScope": "private",
            }),
            "tools/list" => self.list(era, params)?,
            "tools/call" => self.call(params, cancel)?,
            _ => {
                return Err(RpcError::new(
                    protocol::code::METHOD_NOT_FOUND,
                    format!("Method not found: {method}"),
                ))
            }
        };
        Ok(stamp(era, result))
    }

    fn list(&self, era: &Era, params: &Value) -> Result<Value, RpcError> {
        let registry = self.registry();
        let entries = registry.entries();
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => c
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0 && n < entries.len())
                .ok_or_else(|| RpcError::invalid_params(format!("Invalid cursor: {c}")))?,
            Some(_) => return Err(RpcError::invalid_params("Invalid cursor: not a string")),
        };
        let end = (start + PAGE).min(entries.len());
        let with_annotations = !matches!(era, Era::Handshake(v) if v == "2024-11-05");
        let tools: Vec<Value> = entries[start..end]
            .iter()
            .map(|e| {
                let mut tool = json!({
                    "name": e.name,
                    "description": e.description,
                    "inputSchema": e.parameters(),
                });
                if let Some(a) = e.schema.get("annotations").filter(|_| with_annotations) {
                    tool["annotations"] = a.clone();
                }
                tool
            })
            .collect();
        let mut result = json!({"tools": tools});
        if end < entries.len() {
            result["nextCursor"] = json!(end.to_string());
        }
        if *era == Era::Modern {
            result["ttlMs"] = json!(TTL_MS);
            result["cacheScope"] = json!("private");
        }
        Ok(result)
    }

    fn call(&self, params: &Value, cancel: Option<&AtomicBool>) -> Result<Value, RpcError> {
        let name = match params.get("name") {
            Some(Value::String(n)) => n,
            Some(_) => return Err(RpcError::invalid_params("\"name\" must be a string")),
            None => return Err(RpcError::invalid_params("tools/call needs a \"name\"")),
        };
        let registry = self.registry();
        if registry.lookup(name).is_none() {
            return Err(RpcError::invalid_params(format!("Unknown tool: {name}")));
        }
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(a @ Value::Object(_)) => a.clone(),
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "\"arguments\" must be a JSON object",
                ))
            }
        };
        let outcome = call::call(&registry, name, &arguments, &self.settings, cancel);
        let envelope = for_model::envelope(
            name,
            outcome.to_json(),
            self.model_output,
            &mut |what, text| self.captures.save(name, what, text.as_bytes()),
        );
        Ok(tool_result(&outcome.envelope, envelope))
    }
}

/// A call's outcome as a `CallToolResult`, from its envelope and that
/// envelope as sized for the model (`sized`, decision 25): the tool's JSON
/// as text and as `structuredContent` (a result cut for the model is its
/// text alone). A failure is `isError` with its reason as text, ending with
/// its error code in brackets: a failure envelope (crash, timeout, a tool
/// that exited non-zero), whole as `structuredContent` so nothing the host
/// knows is lost, or a tool's own error answer (`{"error": ...,
/// "error_code": ...}`, which local tools give with exit status 0).
pub fn tool_result(envelope: &Envelope, sized: Value) -> Value {
    let with_code = |error: &str, code: Option<&str>| match code {
        Some(code) => format!("{error} [{code}]"),
        None => error.to_string(),
    };
    let (failed, reason, structured) = match envelope {
        Envelope::Success { result, .. } => {
            let shown = sized.get("result").cloned().unwrap_or(Value::Null);
            match (result.get("error").and_then(Value::as_str), shown) {
                (Some(error), shown) => {
                    let code = result.get("error_code").and_then(Value::as_str);
                    (true, with_code(error, code), shown)
                }
                // A plain-text answer (a shellclaw tool may give one), or
                // one cut for the model, is the text itself, not a JSON
                // string; a cut one says so in it.
                (None, Value::String(text)) => (false, text, Value::Null),
                (None, shown) => (false, shown.to_string(), shown),
            }
        }
        Envelope::Failure { why, error, .. } => (true, with_code(error, Some(why.code())), sized),
    };
    let mut answer = json!({
        "content": [{"type": "text", "text": reason}],
        "isError": failed,
    });
    if structured.is_object() {
        answer["structuredContent"] = structured;
    }
    answer
}

/// A stateless result says it is complete and who answered.
fn stamp(era: &Era, mut result: Value) -> Value {
    if *era == Era::Modern {
        result["resultType"] = json!("complete");
        result["_meta"] = json!({ protocol::META_SERVER_INFO: server_info() });
    }
    result
}

pub fn server_info() -> Value {
    json!({"name": "ikigai-tools", "version": env!("CARGO_PKG_VERSION")})
}

const INSTRUCTIONS: &str =
    "Local tools: read, write and edit files, search them (glob, grep), run \
     bash commands, fetch web pages and search the web. Each tool answers JSON; a failure says \
     why in its text.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::call::CallOutcome;
    use crate::host::envelope::Failure;
    use crate::host::registry::tests::entry;
    use crate::host::registry::Origin;

    fn service(n: usize) -> Service {
        let entries = (0..n)
            .map(|i| {
                entry(
                    &format!("t{i:03}"),
                    &format!("/x/t{i:03}"),
                    Origin::System,
                    json!({"type": "object", "properties": {}}),
                )
            })
            .collect();
        Service::new(
            Registry::build(entries, vec![]),
            test_settings(),
            for_model::DEFAULT_MODEL_OUTPUT,
            Captures::at(None),
        )
    }

    fn test_settings() -> Settings {
        Settings::resolve(Default::default(), &Default::default(), None)
    }

    #[test]
    fn eras_come_from_meta_or_the_handshake() {
        assert_eq!(
            Service::era_of(&json!({}), Some("2025-03-26")),
            Ok(Era::Handshake("2025-03-26".into()))
        );
        let modern = json!({"_meta": {protocol::META_VERSION: MODERN_VERSION}});
        assert_eq!(Service::era_of(&modern, None), Ok(Era::Modern));
        let odd = json!({"_meta": {protocol::META_VERSION: "1900-01-01"}});
        let e = Service::era_of(&odd, None).unwrap_err();
        assert_eq!(e.code, protocol::code::UNSUPPORTED_VERSION);
        assert_eq!(e.data.unwrap()["requested"], "1900-01-01");
    }

    #[test]
    fn initialize_negotiates() {
        let s = service(0);
        assert_eq!(
            s.initialize(&json!({"protocolVersion": "2025-03-26"}), false)
                .0,
            "2025-03-26"
        );
        assert_eq!(
            s.initialize(&json!({"protocolVersion": "2099-01-01"}), false)
                .0,
            LATEST_HANDSHAKE
        );
        assert_eq!(
            s.initialize(&json!({}), true).1["capabilities"],
            json!({"tools": {"listChanged": true}})
        );
    }

    #[test]
    fn a_new_registry_is_offered_at_once() {
        let s = service(2);
        let era = Era::Modern;
        assert!(!s.replace(service(2).registry().as_ref().clone()));
        assert!(s.replace(service(3).registry().as_ref().clone()));
        let listed = s.handle(&era, "tools/list", &json!({}), None).unwrap();
        assert_eq!(listed["tools"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn lists_are_paged() {
        let s = service(150);
        let era = Era::Handshake(LATEST_HANDSHAKE.into());
        let first = s.handle(&era, "tools/list", &json!({}), None).unwrap();
        assert_eq!(first["tools"].as_array().unwrap().len(), 100);
        assert_eq!(first["nextCursor"], "100");
        let rest = s
            .handle(&era, "tools/list", &json!({"cursor": "100"}), None)
            .unwrap();
        assert_eq!(rest["tools"].as_array().unwrap().len(), 50);
        assert_eq!(rest["tools"][0]["name"], "t100");
        assert!(rest.get("nextCursor").is_none());
        for bad in [
            json!({"cursor": "x"}),
            json!({"cursor": "0"}),
            json!({"cursor": 5}),
        ] {
            let e = s.handle(&era, "tools/list", &bad, None).unwrap_err();
            assert_eq!(e.code, protocol::code::INVALID_PARAMS);
        }
        let modern = s
            .handle(&Era::Modern, "tools/list", &json!({}), None)
            .unwrap();
        assert_eq!(modern["resultType"], "complete");
        assert_eq!(modern["ttlMs"], TTL_MS);
        assert_eq!(
            modern["_meta"][protocol::META_SERVER_INFO]["name"],
            "ikigai-tools"
        );
    }

    #[test]
    fn malformed_calls_and_unknown_methods() {
        let s = service(1);
        let era = Era::Modern;
        for params in [
            json!({}),
            json!({"name": 3}),
            json!({"name": "nope"}),
            json!({"name": "t000", "arguments": [1]}),
        ] {
            let e = s.handle(&era, "tools/call", &params, None).unwrap_err();
            assert_eq!(e.code, protocol::code::INVALID_PARAMS, "{params}");
        }
        let e = s
            .handle(&era, "resources/list", &json!({}), None)
            .unwrap_err();
        assert_eq!(e.code, protocol::code::METHOD_NOT_FOUND);
    }

    /// The result of `outcome` as a model of `limit` bytes sees it, the
    /// whole outputs "saved" in a list.
    fn result(outcome: &CallOutcome, limit: usize) -> (Value, Vec<(String, String)>) {
        let mut saved = Vec::new();
        let sized = for_model::envelope("bash", outcome.to_json(), limit, &mut |what, text| {
            saved.push((what.to_string(), text.to_string()));
            Ok(std::path::PathBuf::from(format!("/c/1.{what}")))
        });
        (tool_result(&outcome.envelope, sized), saved)
    }

    fn success(result: Value) -> CallOutcome {
        CallOutcome::new(
            Envelope::Success {
                result,
                truncated: None,
            },
            vec![],
        )
    }

    #[test]
    fn outcomes_become_results() {
        let (ok, _) = result(&success(json!({"a": 1})), 1000);
        assert_eq!(
            ok,
            json!({"content": [{"type": "text", "text": "{\"a\":1}"}],
                   "structuredContent": {"a": 1}, "isError": false})
        );
        let mut failed = CallOutcome::new(Envelope::refused(Failure::Crashed, "why"), vec![]);
        failed.sandbox = Some(json!({"mode": "read-only"}));
        let (bad, _) = result(&failed, 1000);
        assert_eq!(bad["isError"], true);
        assert_eq!(bad["content"][0]["text"], "why [TOOL_CRASHED]");
        assert_eq!(bad["structuredContent"], failed.to_json());
        assert_eq!(bad["structuredContent"]["sandbox"]["mode"], "read-only");
        let own = json!({"error": "File not found: /x", "error_code": "FILE_NOT_FOUND"});
        let (bad, _) = result(&success(own.clone()), 1000);
        assert_eq!(bad["isError"], true);
        assert_eq!(
            bad["content"][0]["text"],
            "File not found: /x [FILE_NOT_FOUND]"
        );
        assert_eq!(bad["structuredContent"], own);
        // A third-party tool's error without a code: the text alone.
        let (bad, _) = result(&success(json!({"error": "no"})), 1000);
        assert_eq!(bad["content"][0]["text"], "no");
        let (text, _) = result(&success(json!("plain \"text\"")), 1000);
        assert_eq!(
            text,
            json!({"content": [{"type": "text", "text": "plain \"text\""}], "isError": false})
        );
    }

    #[test]
    fn large_outputs_are_cut_for_the_model_and_saved() {
        let long: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let (r, saved) = result(&success(json!({"output": long, "exit_code": 0})), 1000);
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(text.len() < 1200, "{}", text.len());
        assert!(text.contains("/c/1.output.txt"), "{text}");
        assert_eq!(r["structuredContent"]["exit_code"], 0);
        assert_eq!(saved, [("output.txt".to_string(), long.clone())]);
        // A failure's streams are cut the same way.
        let failed = CallOutcome::new(
            Envelope::Failure {
                why: Failure::Crashed,
                error: "crashed".into(),
                exit_code: Some(139),
                stdout: long.clone(),
                stderr: long.clone(),
                truncated: None,
            },
            vec![],
        );
        let (r, saved) = result(&failed, 1000);
        assert_eq!(r["content"][0]["text"], "crashed [TOOL_CRASHED]");
        assert!(r.to_string().len() < 3000);
        assert_eq!(saved.len(), 2);
    }
}
