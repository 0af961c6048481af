//! `ikigai` without a subcommand: the assistant. Chooses the model, builds
//! the system prompt, opens or resumes the session log (showing the last
//! exchanges of a resumed one), and runs the conversation the way it was
//! asked for: `-p MESSAGE` once, lines from a non-terminal stdin one by
//! one, or the interactive prompt.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use self::approval::rules::Rule;
use self::approval::{Approval, Mode, Prompter, Sourced, TerminalPrompter};
use self::conversation::{system_prompt, Conversation, ToolHost, TurnEnd};
use self::render::Paint;
use self::session::{sessions_dir, Session};
use self::terminal::Commands;
use crate::config::{Config, Located};
use crate::exit;
use crate::host::cli::Ikigai;
use crate::host::settings::Settings;
use crate::host::signals;
use crate::tool::Env;

pub mod approval;
pub mod commands;
pub mod conversation;
pub mod cost;
pub mod for_model;
pub mod keys;
pub mod model;
pub mod own_tools;
pub mod plan;
pub mod render;
pub mod schedule;
pub mod session;
pub mod terminal;
pub mod tool_host;
pub mod undo;

/// The default of `--max-tool-rounds`.
pub const DEFAULT_MAX_TOOL_ROUNDS: usize = 25;

/// The assistant's options, from the command line.
#[derive(Debug, Default, PartialEq)]
pub struct Options {
    /// `--provider`: openai, openai-responses, anthropic, google or stub.
    pub provider: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `-p MESSAGE`: one message to completion.
    pub prompt: Option<String>,
    /// `--resume` (Some(None): the latest session) or `--resume ID`.
    pub resume: Option<Option<String>>,
    pub max_tool_rounds: usize,
    /// `--max-output-tokens`: the most tokens one reply may use.
    pub max_output_tokens: Option<u64>,
    /// How calls are approved and how much of each the model sees.
    pub policy: Policy,
}

/// `--approval`, `--allow`, `--deny`, `--model-output`, with the
/// environment and the config file already applied.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Policy {
    /// None: `ask` at a terminal, else `auto`.
    pub approval: Option<Mode>,
    /// The rules of the command line, then those of the config file: both
    /// hold, so an option never drops a rule the file sets.
    pub allow: Vec<Sourced>,
    pub deny: Vec<Sourced>,
    /// None: `for_model::DEFAULT_MODEL_OUTPUT`.
    pub model_output: Option<usize>,
}

impl Policy {
    /// Reads the policy from options, environment and config file, in that
    /// order of precedence; Err names the bad value and where it was given.
    pub fn resolve(cli: &Ikigai, env: &Env, config: &Config) -> Result<Policy, String> {
        let approval = match (&cli.approval, env.var("IKIGAI_APPROVAL")) {
            (Some(mode), _) => Some(Mode::parse(mode).map_err(|e| format!("--approval: {e}"))?),
            (None, Some(mode)) => {
                Some(Mode::parse(mode).map_err(|e| format!("IKIGAI_APPROVAL: {e}"))?)
            }
            (None, None) => config.approval,
        };
        let file = config
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let rules = |given: &[String], option: &str, written: &[Located<String>]| {
            let mut out = Vec::new();
            for text in given {
                let rule = Rule::parse(text).map_err(|e| format!("{option}: {e}"))?;
                out.push(Sourced {
                    rule,
                    from: option.to_string(),
                });
            }
            for text in written {
                let from = format!("{file}, line {}", text.line);
                let rule = Rule::parse(&text.value).map_err(|e| format!("config: {from}: {e}"))?;
                out.push(Sourced { rule, from });
            }
            Ok::<_, String>(out)
        };
        Ok(Policy {
            approval,
            allow: rules(&cli.allow, "--allow", &config.allow)?,
            deny: rules(&cli.deny, "--deny", &config.deny)?,
            model_output: cli.model_output.or(config.model_output),
        })
    }
}

/// The assistant as `ikigai` starts it: its options from the command line,
/// discovery started in the background so the prompt appears at once.
pub fn main(
    cli: Ikigai,
    settings: Settings,
    resume_id: Option<String>,
    config: Config,
) -> ExitCode {
    let env = Env::from_process();
    // Options beat environment variables beat the config file.
    let or_env_or_file = |option: Option<String>, var: &str, file: &Option<String>| {
        option
            .or_else(|| env.var(var).map(str::to_string))
            .or_else(|| file.clone())
    };
    let policy = match Policy::resolve(&cli, &env, &config) {
        Ok(policy) => policy,
        Err(e) => {
            eprintln!("ikigai: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let options = Options {
        provider: or_env_or_file(cli.provider, "IKIGAI_PROVIDER", &config.provider),
        model: or_env_or_file(cli.model, "IKIGAI_MODEL", &config.model),
        prompt: cli.prompt,
        resume: cli.resume.then_some(resume_id),
        max_tool_rounds: cli.max_tool_rounds.unwrap_or(DEFAULT_MAX_TOOL_ROUNDS),
        // The file's limit counts only where neither the option nor
        // IKIGAI_MAX_OUTPUT_TOKENS (read by `keys::choose`) gives one.
        max_output_tokens: cli.max_output_tokens.or_else(|| {
            env.var("IKIGAI_MAX_OUTPUT_TOKENS")
                .is_none()
                .then(|| config.max_output_tokens.map(u64::from))
                .flatten()
        }),
        policy,
    };
    if let Some(note) = crate::host::no_tool_directory(&settings) {
        let style = Paint::for_stream(std::io::stderr().is_terminal());
        eprintln!("{}", style.dim_yellow(&format!("warning: {note}")));
    }
    // Our bash copies its command's output to stderr as it runs, so the
    // terminal shows it live and a call stopped by Ctrl-C keeps it. Set
    // before any thread starts, for every tool this process runs.
    std::env::set_var(crate::tools::bash::PROGRESS_VAR, "stderr");
    let tools = tool_host::Tools::start(settings);
    run(options, &tools, &mut &tools)
}

/// Runs the assistant; the exit code says whether its messages were answered.
pub fn run(options: Options, host: &dyn ToolHost, commands: &mut dyn Commands) -> ExitCode {
    let env = Env::from_process();
    let style = Paint::for_stream(std::io::stderr().is_terminal());
    let choice = match keys::choose(
        options.provider.as_deref(),
        options.model.as_deref(),
        options.max_output_tokens,
        &env,
    ) {
        Ok(choice) => choice,
        Err(e) => {
            eprintln!("ikigai: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    for warning in &choice.warnings {
        eprintln!("{}", style.dim_yellow(&format!("warning: {warning}")));
    }
    let context_dir = env
        .var("IKIGAI_CONTEXT_DIR")
        .map(PathBuf::from)
        .or_else(|| env.home().map(|h| h.join(".ikigai").join("context")));
    let (system, warnings) = system_prompt(context_dir.as_deref());
    for warning in &warnings {
        eprintln!("{}", style.dim_yellow(&format!("warning: {warning}")));
    }

    let mode = options.policy.approval.unwrap_or_else(Mode::default_here);
    // Answers are read from stdin: without a terminal there, nobody is asked.
    let prompter = std::io::stdin()
        .is_terminal()
        .then(|| Box::new(TerminalPrompter::new()) as Box<dyn Prompter>);
    let approval = Approval::new(mode, options.policy.allow, options.policy.deny, prompter);
    let mut conversation = Conversation::new(choice.client, system, options.max_tool_rounds)
        .with_approval(approval)
        .with_model_output(
            options
                .policy
                .model_output
                .unwrap_or(for_model::DEFAULT_MODEL_OUTPUT),
        );
    if options.prompt.is_some() {
        conversation = conversation.one_shot();
    }
    let mut resumed = false;
    match (sessions_dir(&env), &options.resume) {
        (Some(dir), None) => conversation = conversation.with_new_session(dir),
        (Some(dir), Some(id)) => match Session::resume(&dir, id.as_deref()) {
            Ok((session, history)) => {
                eprintln!(
                    "{}",
                    style.dim(&format!(
                        "Resumed session {} ({} messages).",
                        session.id(),
                        history.len()
                    ))
                );
                conversation = conversation.with_history(history).with_session(session);
                resumed = true;
            }
            Err(e) => {
                eprintln!("ikigai: {e:#}");
                return ExitCode::from(exit::FAILURE);
            }
        },
        (None, None) => eprintln!(
            "{}",
            style.dim_yellow(
                "warning: neither XDG_DATA_HOME nor HOME is set: this session is not logged"
            )
        ),
        (None, Some(_)) => {
            eprintln!("ikigai: cannot resume: neither XDG_DATA_HOME nor HOME is set");
            return ExitCode::from(exit::FAILURE);
        }
    }

    // Ctrl-C stops one message; SIGTERM and SIGHUP end the assistant.
    signals::install(false);
    if let Some(message) = &options.prompt {
        return match terminal::one_shot(message, &mut conversation, host) {
            TurnEnd::Answered => ExitCode::SUCCESS,
            TurnEnd::Cancelled => ExitCode::from(exit::INTERRUPTED),
            _ => ExitCode::from(exit::FAILURE),
        };
    }
    if !std::io::stdin().is_terminal() {
        return match terminal::lines(
            &mut std::io::stdin().lock(),
            &mut conversation,
            host,
            commands,
        ) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(exit::FAILURE),
            Err(e) => {
                eprintln!("ikigai: reading stdin: {e}");
                ExitCode::from(exit::FAILURE)
            }
        };
    }
    let who = match conversation.client() {
        Some(c) => format!("{} {}", c.provider(), c.model()),
        None => "no model configured (messages explain how to set a key)".into(),
    };
    let log = conversation
        .session_id()
        .map(|id| format!(" · session {id}"))
        .unwrap_or_default();
    eprintln!("{}", style.dim(&format!("ikigai · {who}{log}")));
    if resumed {
        terminal::show_history(conversation.messages(), terminal::EXCHANGES_SHOWN);
        if let Some(plan) = conversation.plan() {
            use self::conversation::Ui;
            terminal::TermUi::new().plan(plan);
        }
    }
    eprintln!(
        "{}",
        style.dim(
            "Type a message (a line ending in \\ goes on); /help lists commands; Ctrl-D leaves."
        )
    );
    let history = sessions_dir(&env).and_then(|d| d.parent().map(|p| p.join("history")));
    match terminal::interactive(&mut conversation, host, commands, history) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ikigai: {e:#}");
            ExitCode::from(exit::FAILURE)
        }
    }
}
