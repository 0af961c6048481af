//! One ACP session: a thread that owns its `Conversation` (one more front
//! end on the same turn the terminal and `-p` run) and takes the client's
//! prompts one at a time. It answers `session/new` once it is ready and
//! `session/load` once the history has been replayed as updates; each
//! prompt becomes one message to the model, or one of the slash commands
//! it offers, and is answered with the protocol's stop reason.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{json, Value};

use super::super::approval::{Approval, Mode, Prompter};
use super::super::context::{self, Context, Setup};
use super::super::conversation::{Conversation, TurnEnd};
use super::super::model::{Message, ModelClient, Stop};
use super::super::session::Session;
use super::super::tool_host::Tools;
use super::super::{approval_words, cost, for_model, Options};
use super::permission::EditorPrompter;
use super::updates::{self, EditorUi};
use super::wire::Wire;
use crate::mcp::protocol::{code, RpcError};
use crate::tool::Env;

/// What every session of the agent shares.
pub struct Shared {
    pub wire: Arc<Wire>,
    pub tools: Arc<Tools>,
    pub client: Result<Arc<dyn ModelClient>, String>,
    pub options: Arc<Options>,
    pub cwd: PathBuf,
}

/// The slash commands a prompt may start with, as the client lists them.
const COMMANDS: &[(&str, &str)] = &[
    (
        "compact",
        "Summarise the conversation to free the model's context window",
    ),
    (
        "context",
        "What the model is given and how much of its window is in use",
    ),
    ("cost", "Tokens used and their cost in this session"),
    (
        "undo",
        "Put back the files changed since the last message that changed any",
    ),
    ("init", "Write an AGENTS.md describing this project"),
];

enum Job {
    Prompt { id: Value, prompt: Value },
}

/// The reading thread's hold on a session.
pub struct Handle {
    jobs: Option<Sender<Job>>,
    /// Set by `session/cancel`: stops the model, the running tools and a
    /// pending question.
    cancel: Arc<AtomicBool>,
    /// A prompt is running.
    busy: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Handle {
    /// Starts the session's thread; it answers `reply_to` when ready (after
    /// replaying `history`, for a loaded session).
    pub fn open(
        shared: Arc<Shared>,
        session: Session,
        history: Option<Vec<Message>>,
        reply_to: Value,
    ) -> Handle {
        let cancel = Arc::new(AtomicBool::new(false));
        let busy = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let (c, b) = (Arc::clone(&cancel), Arc::clone(&busy));
        let thread = std::thread::spawn(move || {
            serve(&shared, session, history, reply_to, rx, &c, &b);
        });
        Handle {
            jobs: Some(tx),
            cancel,
            busy,
            thread: Some(thread),
        }
    }

    /// Hands a prompt to the session; Err when one is running already.
    pub fn prompt(&self, id: Value, prompt: Value) -> Result<(), RpcError> {
        if self.busy.swap(true, Ordering::SeqCst) {
            return Err(RpcError::new(
                code::INVALID_REQUEST,
                "a prompt is already running in this session: wait for its answer or send \
                 session/cancel",
            ));
        }
        // Cleared here, not in the thread, so a cancel that follows at once
        // is never lost.
        self.cancel.store(false, Ordering::SeqCst);
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job::Prompt { id, prompt });
        }
        Ok(())
    }

    /// `session/cancel`: a running turn stops; an idle session is unchanged.
    pub fn cancel(&self) {
        if self.busy.load(Ordering::SeqCst) {
            self.cancel.store(true, Ordering::SeqCst);
        }
    }

    /// Stops what runs and waits for the thread to end.
    pub fn close(mut self) {
        self.cancel.store(true, Ordering::SeqCst);
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(
    shared: &Shared,
    session: Session,
    history: Option<Vec<Message>>,
    reply_to: Value,
    jobs: Receiver<Job>,
    cancel: &AtomicBool,
    busy: &AtomicBool,
) {
    let env = Env::from_process();
    let options = &shared.options;
    let id = session.id().to_string();
    let mode = options.policy.approval.unwrap_or(Mode::Ask);
    let setup = Setup {
        cwd: shared.cwd.clone(),
        shell: env.var("SHELL").map(str::to_string),
        sandbox: options.sandbox.clone(),
        approval: approval_words(mode),
        model: match &shared.client {
            Ok(c) => format!("{} {}", c.provider(), c.model()),
            Err(_) => "none configured".into(),
        },
        personal: env
            .config_dir()
            .map(|d| d.join(context::instructions::FILE)),
        instructions_max_bytes: options
            .instructions_max_bytes
            .unwrap_or(context::instructions::DEFAULT_MAX_BYTES),
        modules: env
            .var("IKIGAI_CONTEXT_DIR")
            .map(PathBuf::from)
            .or_else(|| env.home().map(|h| h.join(".ikigai").join("context"))),
        stated: history.as_ref().and_then(|_| session.environment()),
        git: options.git.clone(),
        // The project the agent started in keeps the trust it was given;
        // another session's project is trusted only as `--trust` says.
        places: options.places.as_ref().map(|started| {
            let project = crate::assistant::custom::project_root(&shared.cwd);
            crate::assistant::custom::Places {
                trusted: started.trusted && started.project == project,
                project,
                ..started.clone()
            }
        }),
    };
    let (context, warnings) = Context::build(&setup);
    for warning in &warnings {
        eprintln!("ikigai acp: warning: {warning}");
    }
    if let Some(line) = context.files_line(&shared.cwd) {
        eprintln!("ikigai acp: {line}");
    }
    let current = Arc::new(Mutex::new(None));
    let prompter = EditorPrompter::new(Arc::clone(&shared.wire), id.clone(), Arc::clone(&current));
    let approval = Approval::new(
        mode,
        options.policy.allow.clone(),
        options.policy.deny.clone(),
        Some(Box::new(prompter) as Box<dyn Prompter>),
    );
    let mut conversation =
        Conversation::new(shared.client.clone(), context, options.max_tool_rounds)
            .with_approval(approval)
            .with_window(options.context_window, options.auto_compact)
            .with_model_output(
                options
                    .policy
                    .model_output
                    .unwrap_or(for_model::DEFAULT_MODEL_OUTPUT),
            );
    let loaded = history.is_some();
    if let Some(history) = history {
        conversation = conversation.with_history(history);
    }
    conversation = conversation.with_session(session);
    let mut ui = EditorUi::new(
        Arc::clone(&shared.wire),
        id.clone(),
        current,
        shared.cwd.clone(),
    );
    ui.model = conversation
        .client()
        .map(|c| c.model().to_string())
        .unwrap_or_default();
    if loaded {
        replay(&ui, conversation.messages());
        if let Some(plan) = conversation.plan() {
            ui.update(updates::plan_update(plan));
        }
        shared.wire.result(&reply_to, json!({}));
    } else {
        shared.wire.result(&reply_to, json!({"sessionId": id}));
    }
    let commands: Vec<Value> = COMMANDS
        .iter()
        .map(|(name, description)| json!({"name": name, "description": description}))
        .collect();
    ui.update(json!({
        "sessionUpdate": "available_commands_update",
        "availableCommands": commands,
    }));
    for job in jobs {
        let Job::Prompt { id, prompt } = job;
        let answer = turn(&prompt, &mut conversation, shared, &mut ui, cancel);
        ui.end_turn();
        // Free before the answer, so a prompt sent the moment it arrives is
        // taken.
        busy.store(false, Ordering::SeqCst);
        match answer {
            Ok(reason) => shared.wire.result(&id, json!({"stopReason": reason})),
            Err(error) => shared.wire.error(&id, &error),
        }
    }
}

/// One prompt to its end: the stop reason, or the error that ended it.
fn turn(
    prompt: &Value,
    conversation: &mut Conversation,
    shared: &Shared,
    ui: &mut EditorUi,
    cancel: &AtomicBool,
) -> Result<&'static str, RpcError> {
    let text = prompt_text(prompt).map_err(RpcError::invalid_params)?;
    ui.window = conversation.window().tokens;
    let host = &*shared.tools;
    let (name, args) = command(&text);
    let end = match name {
        Some("compact") => conversation.compact_now(host, ui, cancel),
        Some("context") => {
            let (tokens, measured) = conversation.tokens_in_use(host);
            let report = conversation
                .context()
                .report(tokens, &conversation.window(), measured);
            ui.say(&format!("```\n{report}\n```\n"));
            TurnEnd::Answered
        }
        Some("cost") => {
            ui.say(&spent(ui));
            TurnEnd::Answered
        }
        Some("undo") => {
            // A file changed since the model wrote it is left as it is:
            // there is no question to ask through the protocol.
            let report = conversation.undo(&mut |_| false);
            ui.say(&report.map_or_else(|| "Nothing to undo.".to_string(), |r| r.for_person()));
            TurnEnd::Answered
        }
        Some("init") => {
            let mut request = context::instructions::init_request();
            if !args.is_empty() {
                request = format!("{request}\n\n{args}");
            }
            conversation.send(&request, host, ui, cancel)
        }
        _ => conversation.send(&text, host, ui, cancel),
    };
    if cancel.load(Ordering::SeqCst) {
        // A cancelled turn ends `cancelled`, whatever it was doing, never
        // with an error (the protocol asks this).
        ui.take_error();
        return Ok("cancelled");
    }
    let stop = conversation.last_stop();
    match end {
        TurnEnd::Answered if stop == Some(&Stop::Cut) => Ok("max_tokens"),
        TurnEnd::Answered => Ok("end_turn"),
        TurnEnd::RoundLimit => Ok("max_turn_requests"),
        TurnEnd::Cancelled => Ok("cancelled"),
        // A hook blocked the prompt or stopped the turn.
        TurnEnd::Blocked => Ok("refusal"),
        TurnEnd::Failed if matches!(stop, Some(Stop::Refused(_))) => Ok("refusal"),
        TurnEnd::Failed if stop == Some(&Stop::Cut) => Ok("max_tokens"),
        TurnEnd::Failed | TurnEnd::NotConfigured => {
            let why = ui
                .take_error()
                .unwrap_or_else(|| "the model did not answer".into());
            Err(RpcError::new(code::INTERNAL_ERROR, why))
        }
    }
}

/// The command a prompt starts with (`/compact`) and what follows it; no
/// command for any other text, which goes to the model as written.
fn command(text: &str) -> (Option<&'static str>, &str) {
    let Some(rest) = text.trim_start().strip_prefix('/') else {
        return (None, "");
    };
    let (word, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let known = COMMANDS.iter().map(|(n, _)| *n).find(|n| *n == word);
    (known, args.trim())
}

/// `/cost`: the tokens and money this session has spent.
fn spent(ui: &EditorUi) -> String {
    let money = if ui.unpriced {
        "cost unknown (no price for this model)".to_string()
    } else {
        format!("${:.4}", ui.cost)
    };
    format!(
        "Input {} tokens ({} from the cache), output {} tokens; {money}.",
        cost::count(ui.spent.input_tokens),
        cost::count(ui.spent.cached_input_tokens),
        cost::count(ui.spent.output_tokens),
    )
}

/// The person's message from a prompt's content blocks: text as written,
/// a resource link as a Markdown link the model can follow with its tools,
/// an embedded resource's text after the message in a `<context>` block.
/// Err names what the agent cannot take (it offers no images or audio).
fn prompt_text(prompt: &Value) -> Result<String, String> {
    let Some(blocks) = prompt.as_array() else {
        return Err("\"prompt\" must be an array of content blocks".into());
    };
    let mut message = String::new();
    let mut context = String::new();
    for (n, block) in blocks.iter().enumerate() {
        let kind = block["type"].as_str().unwrap_or_default();
        match kind {
            "text" => match block["text"].as_str() {
                Some(text) => message.push_str(text),
                None => return Err(format!("prompt[{n}]: a text block needs \"text\"")),
            },
            "resource_link" => {
                let Some(uri) = block["uri"].as_str() else {
                    return Err(format!("prompt[{n}]: a resource_link needs \"uri\""));
                };
                let name = block["name"].as_str().unwrap_or(uri);
                message.push_str(&format!("[@{name}]({uri})"));
            }
            "resource" => {
                let resource = &block["resource"];
                let Some(uri) = resource["uri"].as_str() else {
                    return Err(format!("prompt[{n}]: a resource needs \"resource.uri\""));
                };
                message.push_str(&format!("[@{uri}]"));
                match resource["text"].as_str() {
                    Some(text) => {
                        context.push_str(&format!("\n<context ref=\"{uri}\">\n{text}\n</context>"))
                    }
                    None => context.push_str(&format!(
                        "\n<context ref=\"{uri}\">(binary content, not included)</context>"
                    )),
                }
            }
            "image" | "audio" => {
                return Err(format!(
                    "prompt[{n}]: {kind} content is not supported (promptCapabilities.{kind} \
                     is false)"
                ))
            }
            other => return Err(format!("prompt[{n}]: unknown content block type '{other}'")),
        }
    }
    if message.trim().is_empty() && context.is_empty() {
        return Err("the prompt is empty".into());
    }
    Ok(format!("{message}{context}"))
}

/// A loaded session's history as the updates that would have shown it.
fn replay(ui: &EditorUi, messages: &[Message]) {
    for message in messages {
        match message {
            Message::User { text } => ui.update(json!({
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": text},
            })),
            Message::Assistant { text, tool_calls } => {
                ui.say(text);
                for call in tool_calls {
                    ui.update(ui.announce(call, "pending"));
                }
            }
            Message::Tool { results } => {
                for result in results {
                    ui.update(updates::finished(&result.call_id, &result.envelope));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_from_text_links_and_embedded_resources() {
        let prompt = json!([
            {"type": "text", "text": "look at "},
            {"type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs"},
            {"type": "resource", "resource": {"uri": "file:///w/b.rs", "text": "fn b() {}"}},
        ]);
        assert_eq!(
            prompt_text(&prompt).unwrap(),
            "look at [@a.rs](file:///w/a.rs)[@file:///w/b.rs]\n<context ref=\"file:///w/b.rs\">\nfn b() {}\n</context>"
        );
        let why = prompt_text(&json!([{"type": "image", "data": "", "mimeType": "image/png"}]))
            .unwrap_err();
        assert!(why.contains("image content is not supported"), "{why}");
        assert!(prompt_text(&json!([{"type": "text", "text": "  "}])).is_err());
        assert!(prompt_text(&json!("hi")).is_err());
        assert!(prompt_text(&json!([{"type": "text"}])).is_err());
    }

    #[test]
    fn commands_are_ours_only() {
        assert_eq!(command("/compact"), (Some("compact"), ""));
        assert_eq!(command("/init  for rust"), (Some("init"), "for rust"));
        assert_eq!(command("/frob x").0, None);
        assert_eq!(command("fix /compact"), (None, ""));
    }
}
