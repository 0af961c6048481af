//! The conversation's slash commands at the terminal: `/clear`,
//! `/compact`, `/context`, `/init`, `/undo`, `/model`, `/sessions`,
//! `/resume`, `/cost`, `/hooks`, `/agents` (the host's own, `/tool` and `/refresh`, are in
//! `assistant/commands.rs`). Each says what it did in a line or two; those
//! that can fail give a `TurnEnd`, so a script sees it in the exit code.

use super::*;
use crate::assistant::conversation::{Agent, GENERAL};

/// `/clear`, `/compact`, `/context`, `/init`, `/model`, `/sessions`,
/// `/resume`, `/cost`. Some end when the command could fail (so a script
/// sees it in the exit code).
pub(super) fn conversation_command(
    name: &str,
    args: &str,
    conversation: &mut Conversation,
    host: &dyn ToolHost,
    ui: &mut TermUi,
) -> Option<TurnEnd> {
    let env = Env::from_process();
    match name {
        "clear" => {
            conversation.clear(ui);
            ui.notice("Started a new conversation; the model sees nothing of the one before.");
            None
        }
        "compact" => {
            let end = signals::guarded(|cancel| conversation.compact_now(host, ui, cancel));
            signals::end_if_signalled();
            Some(end)
        }
        "context" => {
            let (tokens, measured) = conversation.tokens_in_use(host);
            let report = conversation
                .context()
                .report(tokens, &conversation.window(), measured);
            say(&format!("{report}\n"));
            None
        }
        "init" => {
            let request = crate::assistant::context::instructions::init_request();
            let end = signals::guarded(|cancel| conversation.send(&request, host, ui, cancel));
            signals::end_if_signalled();
            Some(end)
        }
        "model" => Some(switch_model(args, conversation, ui, &env)),
        "agents" => {
            let agents = conversation.team().map(|t| t.agents.as_slice());
            say(&format!("{}\n", list_agents(agents.unwrap_or(&[]))));
            None
        }
        "cost" => {
            let model = conversation.client().map(|c| c.model().to_string());
            say(&format!(
                "{}\n",
                ui.meter.summary(model.as_deref().unwrap_or("(no model)"))
            ));
            None
        }
        "sessions" => {
            list_sessions(conversation, ui, &env);
            None
        }
        "resume" => Some(resume(args, conversation, ui, &env)),
        "undo" => {
            undo(conversation, ui);
            None
        }
        "skills" => {
            say(&format!(
                "{}\n",
                crate::assistant::custom::listing::skills(&conversation.context().skills)
            ));
            None
        }
        "hooks" => {
            say(&format!("{}\n", conversation.hooks().listing()));
            None
        }
        _ => None,
    }
}

/// `/undo` (decision 70): the files of the model's last changing turn put
/// back; a file changed since is asked about at a terminal, else left.
fn undo(conversation: &mut Conversation, ui: &mut TermUi) {
    use crate::assistant::approval::Prompter;
    let mut prompter = std::io::stdin()
        .is_terminal()
        .then(crate::assistant::approval::TerminalPrompter::new);
    let no_cancel = std::sync::atomic::AtomicBool::new(false);
    let mut ask = |path: &std::path::Path| match prompter.as_mut() {
        Some(prompter) => {
            let question = format!(
                "{} has changed since the model wrote it. Restore it anyway? y / n: ",
                printable(&path.display().to_string())
            );
            let answer = prompter.answer(&question, &no_cancel);
            matches!(
                answer.as_deref().map(str::trim),
                Some("y" | "Y" | "yes" | "Yes")
            )
        }
        None => false,
    };
    match conversation.undo(&mut ask) {
        Some(report) => {
            let text = report.for_person();
            ui.notice(&text);
        }
        None => ui.notice("Nothing to undo: the model has changed no file (file_write, file_edit, apply_patch) since the start or the last /undo."),
    }
}

/// `/model NAME`: `provider:model`, a provider alone (its default model),
/// or a model, whose provider its name tells (claude-*, gemini-*, gpt-*).
fn switch_model(
    args: &str,
    conversation: &mut Conversation,
    ui: &mut TermUi,
    env: &Env,
) -> TurnEnd {
    let current = conversation
        .client()
        .map(|c| (c.provider(), c.model().to_string()));
    if args.is_empty() {
        let text = match &current {
            Some((p, m)) => format!("Model: {p} {m}. Switch with /model NAME (e.g. /model claude-sonnet-4-5, /model openai:gpt-4.1, /model google)."),
            None => "No model is configured. /model NAME chooses one once its key is set.".into(),
        };
        say(&format!("{text}\n"));
        return TurnEnd::Answered;
    }
    let (provider, model) = parse_model(args);
    let provider = provider.or(current.as_ref().map(|c| c.0));
    match keys::choose(provider, model, None, env) {
        Ok(choice) => match choice.client {
            Ok(client) => {
                let text = format!("Now talking to {} {}.", client.provider(), client.model());
                conversation.set_client(client);
                ui.notice(&text);
                TurnEnd::Answered
            }
            Err(why) => {
                // The key's explanation, worded for a switch, not a message.
                let why = why
                    .replace("this message was not sent", "the model was not switched")
                    .replace("then start ikigai again", "then /model again");
                ui.error(&why);
                TurnEnd::NotConfigured
            }
        },
        Err(why) => {
            ui.error(&why);
            TurnEnd::Failed
        }
    }
}

pub fn parse_model(args: &str) -> (Option<&'static str>, Option<&str>) {
    const PROVIDERS: &[&str] = &["openai", "anthropic", "google", "gemini", "stub"];
    let known = |p: &str| {
        PROVIDERS
            .iter()
            .copied()
            .find(|k| k.eq_ignore_ascii_case(p))
    };
    if let Some((p, m)) = args.split_once([':', '/']) {
        if let Some(p) = known(p) {
            return (Some(p), Some(m.trim()).filter(|m| !m.is_empty()));
        }
    }
    if let Some(p) = known(args) {
        return (Some(p), None);
    }
    let lower = args.to_ascii_lowercase();
    let provider = if lower.starts_with("claude") {
        Some("anthropic")
    } else if lower.starts_with("gemini") {
        Some("google")
    } else if ["gpt", "o1", "o3", "o4", "chatgpt"]
        .iter()
        .any(|p| lower.starts_with(p))
    {
        Some("openai")
    } else {
        None
    };
    (provider, Some(args))
}

fn list_sessions(conversation: &Conversation, ui: &mut TermUi, env: &Env) {
    let (Some(dir), Ok(cwd)) = (sessions_dir(env), std::env::current_dir()) else {
        ui.error("no sessions directory: neither XDG_DATA_HOME nor HOME is set");
        return;
    };
    match session::list(&dir, &cwd) {
        Ok(list) if list.is_empty() => say("No sessions in this directory yet.\n"),
        Ok(list) => {
            let now = SystemTime::now();
            let mut text = String::from("Sessions in this directory, newest first:\n");
            for s in &list {
                let mark = if conversation.session_id() == Some(s.id.as_str()) {
                    "*"
                } else {
                    " "
                };
                let first = visible(&clip(&s.first.replace('\n', " "), 50)).into_owned();
                text += &format!(
                    "{mark} {}  {:>10}  {:>3} messages  {first}\n",
                    s.id,
                    ago(now, s.modified),
                    s.messages
                );
            }
            text += "Continue one with /resume ID.\n";
            say(&text);
        }
        Err(e) => ui.error(&format!("{e:#}")),
    }
}

/// "5 min ago", in the largest unit that fits.
pub(super) fn ago(now: SystemTime, then: SystemTime) -> String {
    let secs = now.duration_since(then).map_or(0, |d| d.as_secs());
    match secs {
        0..60 => "just now".into(),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86_400 => format!("{} h ago", secs / 3600),
        _ => format!("{} days ago", secs / 86_400),
    }
}

fn resume(args: &str, conversation: &mut Conversation, ui: &mut TermUi, env: &Env) -> TurnEnd {
    let Some(dir) = sessions_dir(env) else {
        ui.error("cannot resume: neither XDG_DATA_HOME nor HOME is set");
        return TurnEnd::Failed;
    };
    if args.is_empty() {
        ui.error("/resume needs a session ID; /sessions lists them");
        return TurnEnd::Failed;
    }
    match Session::resume(&dir, Some(args)) {
        Ok((session, history)) => {
            ui.notice(&format!(
                "Resumed session {} ({} messages).",
                session.id(),
                history.len()
            ));
            show_history(&history, EXCHANGES_SHOWN);
            conversation.switch_session(session, history);
            TurnEnd::Answered
        }
        Err(e) => {
            ui.error(&format!("{e:#}"));
            TurnEnd::Failed
        }
    }
}

/// `/agents`: the general agent, then each agent read from a file with
/// its description, tools, model and file, and why it cannot run if so.
fn list_agents(agents: &[Agent]) -> String {
    let mut lines = vec!["Agents (task's `agent`):".to_string()];
    // The built-in general agent, unless a file replaces it.
    let general = Agent::general();
    let builtin = (!agents.iter().any(|a| a.name == GENERAL)).then_some(&general);
    let listed = builtin.into_iter().chain(agents.iter());
    for agent in listed {
        lines.push(format!(
            "  {} · {}",
            agent.name,
            visible(&agent.description)
        ));
        let tools = match &agent.tools {
            Some(tools) => tools.join(", "),
            None => "every tool but task".into(),
        };
        let model = agent.model.as_deref().unwrap_or("the caller's");
        lines.push(format!(
            "      tools: {tools} · model: {model} · {}",
            agent.from
        ));
        if let Some(problem) = &agent.problem {
            lines.push(format!("      cannot run: {}", visible(problem)));
        }
    }
    if agents.is_empty() {
        lines.push(
            "No agent files: add Markdown files to ~/.config/ikigai/agents/ (README, Subagents)."
                .into(),
        );
    }
    lines.join("\n")
}
