//! The assistant's own tools (decisions 68, 69 and 86; docs/decisions.md
//! 104 and 125): `shell_start`, `shell_output`, `shell_kill`,
//! `update_plan` and `task`, as
//! registry entries beside the discovered tools, so that the provider's
//! tools array, approval, scheduling and envelopes treat them as any tool.
//! The assistant answers their calls itself (they change what the host
//! holds: its jobs, its plan); they are never served over MCP, whose
//! server builds its registry from discovery alone.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::registry::{Entry, Origin, Protocol};

pub const SHELL_START: &str = "shell_start";
pub const SHELL_OUTPUT: &str = "shell_output";
pub const SHELL_KILL: &str = "shell_kill";
pub const UPDATE_PLAN: &str = "update_plan";
pub const TASK: &str = "task";

/// The longest `wait_ms` of shell_output.
pub const MAX_WAIT_MS: u64 = 30_000;

/// The schemas, with annotations as our tools carry them (decision 23).
fn schemas() -> [Value; 5] {
    [
        json!({
            "name": SHELL_START,
            "description": "Start a shell command in the background (a dev server, a watcher, a long \
                build) and return at once with its job_id; the command runs under the same sandbox \
                and approval as bash, with no timeout, until it exits, shell_kill ends it, or the \
                session ends. Read its output with shell_output. At most 8 jobs run at once.",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "Shell command to run in the background"}
                },
                "required": ["command"]
            },
            "annotations": {"readOnlyHint": false, "destructiveHint": true, "openWorldHint": true}
        }),
        json!({
            "name": SHELL_OUTPUT,
            "description": "Read what a background job (shell_start) wrote since the last read, and \
                whether it still runs or its exit code. With wait_ms, waits up to that long for new \
                output or the job's end.",
            "parameters": {
                "type": "object",
                "properties": {
                    "job_id": {"type": "integer", "description": "The job_id shell_start returned", "minimum": 1},
                    "wait_ms": {"type": "integer", "description": "Wait up to this many milliseconds for output (default 0, at most 30000)", "minimum": 0, "maximum": MAX_WAIT_MS}
                },
                "required": ["job_id"]
            },
            "annotations": {"readOnlyHint": true}
        }),
        json!({
            "name": SHELL_KILL,
            "description": "End a background job (shell_start) and every process it started.",
            "parameters": {
                "type": "object",
                "properties": {
                    "job_id": {"type": "integer", "description": "The job_id shell_start returned", "minimum": 1}
                },
                "required": ["job_id"]
            },
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true}
        }),
        json!({
            "name": UPDATE_PLAN,
            "description": "Keep a short plan of the task as a checklist the user sees: send the whole \
                list each time a step starts or is done. Use it for tasks of several steps; at most \
                one step is in_progress.",
            "parameters": {
                "type": "object",
                "properties": {
                    "plan": {
                        "type": "array",
                        "description": "Every step, in order",
                        "items": {
                            "type": "object",
                            "properties": {
                                "step": {"type": "string", "description": "What the step does, briefly"},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                            },
                            "required": ["step", "status"]
                        }
                    },
                    "explanation": {"type": "string", "description": "Why the plan changed (optional)"}
                },
                "required": ["plan"]
            },
            "annotations": {"readOnlyHint": true}
        }),
        // Read-only: the call itself changes nothing, so several run at
        // once and none is asked; each call its subagent makes is approved
        // as the caller's own would be.
        json!({
            "name": TASK,
            "description": "Hand a self-contained task to a subagent: it works in a fresh context of its \
                own with the same tools (but task) and answers once, and only that answer comes back \
                to you, not what it read. Use it for searches and investigations that would fill \
                your context with files, and run several at once for independent parts. The prompt \
                must say everything the subagent needs: it sees nothing of this conversation.",
            "parameters": {
                "type": "object",
                "properties": {
                    "description": {"type": "string", "description": "A short (3-5 word) name for the task, shown to the user"},
                    "prompt": {"type": "string", "description": "The whole task for the subagent, and what its answer should hold"},
                    "agent": {"type": "string", "description": "The agent to run it (one of the agents listed by /agents); without it, a general agent with every tool but task"}
                },
                "required": ["description", "prompt"]
            },
            "annotations": {"readOnlyHint": true}
        }),
    ]
}

/// The entries to add to a registry (`Registry::with_own`).
pub fn entries() -> Vec<Entry> {
    schemas()
        .into_iter()
        .map(|schema| {
            let name = schema["name"].as_str().unwrap_or_default().to_string();
            Entry {
                description: schema["description"].as_str().unwrap_or_default().into(),
                path: PathBuf::from(format!("(the assistant's own tool {name})")),
                protocol: Protocol::Ikigai,
                origin: Origin::Host,
                name,
                schema,
            }
        })
        .collect()
}

/// Whether `name` is one of these tools.
pub fn is_own(name: &str) -> bool {
    [SHELL_START, SHELL_OUTPUT, SHELL_KILL, UPDATE_PLAN, TASK].contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::registry::{tests::entry, Registry};

    #[test]
    fn own_tools_take_their_names_and_keep_schemas_the_host_accepts() {
        let impostor = entry(
            "shell_start",
            "/u/shell_start",
            Origin::User,
            json!({"type": "object", "properties": {}}),
        );
        let registry = Registry::build(vec![impostor], vec![]).with_own(entries());
        assert_eq!(
            registry.names(),
            [
                "shell_kill",
                "shell_output",
                "shell_start",
                "task",
                "update_plan"
            ]
        );
        assert_eq!(registry.lookup("shell_start").unwrap().origin, Origin::Host);
        assert_eq!(registry.skipped()[0].path, PathBuf::from("/u/shell_start"));
        for e in registry.entries() {
            assert!(is_own(&e.name));
            // Each schema is already in the normalised form.
            let normal = crate::host::schema::normalise(&e.schema).unwrap();
            assert_eq!(normal["parameters"], e.schema["parameters"], "{}", e.name);
        }
        assert!(registry.lookup("shell_output").unwrap().read_only());
        assert!(!registry.lookup("shell_start").unwrap().read_only());
    }
}
