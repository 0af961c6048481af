//! A custom command, typed: its body made into the message (arguments,
//! then each `@PATH` read by file_read and each `` !`COMMAND` `` run by
//! bash, both as calls the approval and the sandbox judge), then sent with
//! the command's model and allow rules for that message alone.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{json, Value};

use super::commands::{pieces, rule_text, with_arguments, Command, Piece};
use crate::assistant::approval::rules::Rule;
use crate::assistant::approval::Sourced;
use crate::assistant::conversation::{Conversation, ToolHost, TurnEnd, Ui};
use crate::assistant::keys;
use crate::host::envelope::Envelope;
use crate::tool::Env;

/// Runs `command` with `args` (the text typed after its name).
pub fn run(
    command: &Command,
    args: &str,
    conversation: &mut Conversation,
    host: &dyn ToolHost,
    ui: &mut dyn Ui,
    cancel: &AtomicBool,
) -> TurnEnd {
    let name = &command.name;
    let text = with_arguments(&command.body, args);
    let mut message = String::with_capacity(text.len());
    for piece in pieces(&text) {
        if cancel.load(Ordering::SeqCst) {
            return TurnEnd::Cancelled;
        }
        match piece {
            Piece::Text(text) => message.push_str(text),
            Piece::File(path) => {
                let outcome = conversation.call_for_command(
                    "file_read",
                    json!({"file_path": path}),
                    host,
                    ui,
                    cancel,
                );
                match output(&outcome.envelope) {
                    Ok((text, _)) => {
                        message.push_str(&format!("{path}:\n```\n{}\n```", text.trim_end()))
                    }
                    Err(why) => {
                        ui.notice(&format!("/{name}: @{path} is left as written: {why}"));
                        message.push('@');
                        message.push_str(path);
                    }
                }
            }
            Piece::Shell(line) => {
                let outcome = conversation.call_for_command(
                    "bash",
                    json!({"command": line}),
                    host,
                    ui,
                    cancel,
                );
                match output(&outcome.envelope) {
                    Ok((text, code)) => {
                        message.push_str(text.trim_end());
                        if let Some(code) = code.filter(|c| *c != 0) {
                            message.push_str(&format!("\n(exit {code})"));
                        }
                    }
                    Err(why) => {
                        ui.error(&format!(
                            "/{name}: `{line}` did not run ({why}); the message was not sent"
                        ));
                        return TurnEnd::Failed;
                    }
                }
            }
        }
    }
    let mut allow = Vec::new();
    for item in &command.allowed {
        for text in rule_text(item) {
            match Rule::parse(&text) {
                Ok(rule) => allow.push(Sourced {
                    rule,
                    from: format!("{} allowed-tools", command.path.display()),
                }),
                Err(e) => ui.notice(&format!("/{name}: allowed-tools '{item}' is not used: {e}")),
            }
        }
    }
    let previous = conversation.client().cloned();
    if let Some(model) = &command.model {
        let (provider, model) = crate::assistant::terminal::parse_model(model);
        let provider = provider.or(previous.as_ref().map(|c| c.provider()));
        match keys::choose(provider, model, None, &Env::from_process()).map(|c| c.client) {
            Ok(Ok(client)) => conversation.set_client(client),
            Ok(Err(why)) | Err(why) => {
                ui.error(&format!("/{name}: its model cannot be used: {why}"));
                return TurnEnd::NotConfigured;
            }
        }
    }
    let end = conversation.send_allowing(&message, allow, host, ui, cancel);
    if let (Some(_), Some(previous)) = (&command.model, previous) {
        conversation.set_client(previous);
    }
    end
}

/// A call's text output (file_read's content, bash's output and exit
/// code), or why there is none.
fn output(envelope: &Envelope) -> Result<(String, Option<i64>), String> {
    match envelope {
        Envelope::Success { result, .. } => {
            if let Some(error) = result.get("error").and_then(Value::as_str) {
                return Err(error.to_string());
            }
            let text = match result.get("output") {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            Ok((text, result.get("exit_code").and_then(Value::as_i64)))
        }
        Envelope::Failure { error, .. } => Err(error.clone()),
    }
}

/// A message from the person: a custom command's line runs the command,
/// anything else is sent as it is.
pub fn send(
    text: &str,
    conversation: &mut Conversation,
    host: &dyn ToolHost,
    ui: &mut dyn Ui,
    cancel: &AtomicBool,
) -> TurnEnd {
    match typed(text, &conversation.context().commands) {
        Some((command, args)) => {
            let (command, args) = (command.clone(), args.to_string());
            run(&command, &args, conversation, host, ui, cancel)
        }
        None => conversation.send(text, host, ui, cancel),
    }
}

/// The custom command `line` names (`/NAME args`), with its arguments.
pub fn typed<'a>(
    line: &'a str,
    commands: &'a super::commands::Commands,
) -> Option<(&'a Command, &'a str)> {
    let body = line.trim().strip_prefix('/')?;
    let (name, args) = match body.split_once(char::is_whitespace) {
        Some((name, args)) => (name, args.trim()),
        None => (body, ""),
    };
    commands.find(name).map(|c| (c, args))
}
