//! The assistant's answers to its own tools (`host::own`; decisions 68
//! and 69): the background shells, run by the host's `Jobs`, and
//! `update_plan`, whose answer is checked here and whose plan the
//! conversation shows (`plan`). Arguments are checked against the tool's
//! schema as any tool's are (decision 38), and every answer is an envelope
//! like any call's, so the conversation treats these calls as any other.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::commands::HostState;
use super::for_model::DEFAULT_MODEL_OUTPUT;
use super::plan;
use crate::error::ErrorCode;
use crate::host::call::CallOutcome;
use crate::host::envelope::{Envelope, Failure};
use crate::host::jobs::NotStarted;
use crate::host::own::{self, SHELL_KILL, SHELL_OUTPUT, SHELL_START, TASK, UPDATE_PLAN};
use crate::host::settings::Settings;

/// What shell_output answers at most of a job's output: the model's share
/// of one output (decision 25), less room for the answer's other keys and
/// the escapes JSON adds.
const OUTPUT_SHARE: usize = DEFAULT_MODEL_OUTPUT - 2048;

/// Answers a call of one of the assistant's own tools; None for any other
/// tool. `settings`: those the call runs under (sandboxed or not);
/// `session`: the session's directory, where job logs go.
pub fn call(
    state: &HostState,
    settings: &Settings,
    name: &str,
    arguments: &Value,
    session: Option<&Path>,
) -> Option<CallOutcome> {
    if !own::is_own(name) {
        return None;
    }
    let entry = state.registry.lookup(name)?;
    let envelope = match checked(name, &entry.schema, arguments) {
        Err(envelope) => *envelope,
        Ok(args) => answer(state, settings, name, &args, session),
    };
    Some(CallOutcome::new(envelope, vec![]))
}

/// The arguments as the schema allows them, or the envelope saying why not.
pub(crate) fn checked(
    name: &str,
    schema: &Value,
    arguments: &Value,
) -> Result<Value, Box<Envelope>> {
    let Some(map) = arguments.as_object() else {
        let what = format!(
            "expected a JSON object, got {}",
            crate::args::type_name(arguments)
        );
        return Err(Box::new(Envelope::invalid_params(name, &what)));
    };
    crate::args::validate(schema, map)
        .map(Value::Object)
        .map_err(|e| Box::new(tool_error(ErrorCode::InvalidArg, e.message)))
}

fn answer(
    state: &HostState,
    settings: &Settings,
    name: &str,
    args: &Value,
    session: Option<&Path>,
) -> Envelope {
    let job = || args["job_id"].as_u64().unwrap_or(0);
    let done = |result: Result<Value, String>, code: ErrorCode| match result {
        Ok(result) => Envelope::Success {
            result,
            truncated: None,
        },
        Err(why) => tool_error(code, why),
    };
    match name {
        SHELL_START => {
            let command = args["command"].as_str().unwrap_or("");
            match state
                .jobs
                .start(&state.registry, settings, command, session)
            {
                Ok(result) => Envelope::Success {
                    result,
                    truncated: None,
                },
                Err(NotStarted::Limit(why)) => Envelope::refused(Failure::JobLimit, why),
                Err(NotStarted::Cannot(why)) => tool_error(ErrorCode::InvalidArg, why),
            }
        }
        SHELL_OUTPUT => {
            let wait = Duration::from_millis(args["wait_ms"].as_u64().unwrap_or(0));
            done(
                state.jobs.output(job(), wait, OUTPUT_SHARE),
                ErrorCode::NotFound,
            )
        }
        SHELL_KILL => done(state.jobs.kill(job()), ErrorCode::NotFound),
        UPDATE_PLAN => plan::answer(args),
        // The conversation runs task calls itself (`conversation::subagent`);
        // one that reaches the host came from somewhere that cannot.
        TASK => tool_error(
            ErrorCode::InvalidArg,
            "task runs only inside the assistant's conversation".into(),
        ),
        _ => Envelope::not_found(name, &state.registry.names()),
    }
}

fn tool_error(code: ErrorCode, why: String) -> Envelope {
    Envelope::refused(Failure::Tool(code.as_str().into()), why)
}
