//! `ikigai` without a subcommand: the assistant. Chooses the model, builds
//! the system prompt, opens or resumes the session log (showing the last
//! exchanges of a resumed one), and runs the conversation the way it was
//! asked for: `-p MESSAGE` once (`headless`), lines from a non-terminal
//! stdin one by one, the interactive prompt, or, as `ikigai acp`, for an
//! editor over the Agent Client Protocol (`acp`).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use self::approval::rules::Rule;
use self::approval::{Approval, Mode, Prompter, Sourced, TerminalPrompter};
use self::context::{Context, Setup};
use self::conversation::{Agent, Conversation, Team, ToolHost};
use self::hooks::Hooks;
use self::render::Paint;
use self::session::{sessions_dir, Session};
use self::terminal::Commands;
use crate::config::{Config, Located};
use crate::exit;
use crate::host::cli::{Ikigai, OutputFormat};
use crate::host::settings::Settings;
use crate::host::signals;
use crate::tool::Env;

pub mod acp;
pub mod approval;
pub mod commands;
pub mod context;
pub mod conversation;
pub mod cost;
pub mod custom;
pub mod for_model;
pub mod headless;
pub mod hooks;
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
    /// `-p MESSAGE`: one message to completion (already read from stdin
    /// for `-p -`).
    pub prompt: Option<String>,
    /// `--output-format`, `--output-last-message`: how `-p` reports.
    pub output: headless::Output,
    /// `--resume` (Some(None): the latest session) or `--resume ID`.
    pub resume: Option<Option<String>>,
    pub max_tool_rounds: usize,
    /// `--max-output-tokens`: the most tokens one reply may use.
    pub max_output_tokens: Option<u64>,
    /// How calls are approved and how much of each the model sees.
    pub policy: Policy,
    /// The sandbox as the system prompt states it (decision 60).
    pub sandbox: String,
    /// Config's `context_window`, `auto_compact` and
    /// `instructions_max_bytes` (decisions 61 and 62).
    pub context_window: Option<u64>,
    pub auto_compact: Option<f64>,
    pub instructions_max_bytes: Option<usize>,
    /// The fence git runs in for the environment block (None: not run).
    pub git: Option<crate::host::call::ReadOnly>,
    /// Config's `max_subagents` (decision 86).
    pub max_subagents: Option<usize>,
    /// Where skills and custom commands are looked for.
    pub places: Option<custom::Places>,
    /// The project's own files: whether they are trusted, and its parsed
    /// `.ikigai/config.toml` (whole, as written: what holds of it is in
    /// the policy and settings already).
    pub project: custom::trust::Project,
    /// Hooks by source: the tables of each file, with the file.
    pub hooks: Vec<(Vec<crate::config::Hook>, PathBuf)>,
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
    mut settings: Settings,
    resume_id: Option<String>,
    mut config: Config,
) -> ExitCode {
    let env = Env::from_process();
    // ikigai's own directories exist before any tool runs, so the covers
    // that keep tools from writing them hold from the first run.
    for problem in crate::host::files::make_own_dirs(&env) {
        eprintln!("ikigai: warning: {problem}");
    }
    // The project's own files: trusted or not before anything of theirs
    // is read into the settings (decision 87).
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut places = custom::Places::here(&env, &cwd, false, &settings.sandbox.guard);
    let project = match trust_project(&cli, &config, &env, &places) {
        Ok(project) => project,
        Err(e) => {
            eprintln!("ikigai: project config: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    places.trusted = project.trusted;
    let project_config = project.config.as_ref().map(|c| {
        let (kept, ignored) = custom::trust::narrowed(c, project.trusted, settings.sandbox.mode);
        if !ignored.is_empty() {
            let style = Paint::for_stream(std::io::stderr().is_terminal());
            eprintln!(
                "{}",
                style.dim_yellow(&format!(
                    "warning: {}: {} not applied: the project is not trusted",
                    c.path.as_deref().unwrap_or(Path::new("")).display(),
                    ignored.join(", ")
                ))
            );
        }
        kept
    });
    if let Some(kept) = &project_config {
        custom::project::choices(kept, &mut config);
    }
    if project.trusted {
        settings.project_mcp = project.mcp.clone();
    }
    let acp = matches!(cli.command, Some(crate::host::cli::Subcommand::Acp(_)));
    // Options beat environment variables beat the config file.
    let or_env_or_file = |option: Option<String>, var: &str, file: &Option<String>| {
        option
            .or_else(|| env.var(var).map(str::to_string))
            .or_else(|| file.clone())
    };
    let mut policy = match Policy::resolve(&cli, &env, &config) {
        Ok(policy) => policy,
        Err(e) => {
            eprintln!("ikigai: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    if let Some(kept) = &project_config {
        let given = custom::project::Given {
            sandbox: cli.sandbox.is_some() || env.var("IKIGAI_SANDBOX").is_some(),
            approval: cli.approval.is_some() || env.var("IKIGAI_APPROVAL").is_some(),
        };
        let applied = custom::project::apply(kept, &given, &mut settings, &mut policy, &env);
        if let Err(e) = applied {
            eprintln!("ikigai: project config: {e}");
            return ExitCode::from(exit::USAGE);
        }
    }
    // Wrong output options and an unusable stdin message stop the start
    // before any request (decision 65).
    let output = headless::Output::checked(
        cli.prompt.is_some(),
        cli.output_format,
        cli.output_last_message,
    );
    let prompt = cli
        .prompt
        .map(|p| headless::message(&p, &mut std::io::stdin().lock()))
        .transpose();
    let (output, prompt) = match (output, prompt) {
        (Ok(output), Ok(prompt)) => (output, prompt),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("ikigai: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let options = Options {
        provider: or_env_or_file(cli.provider, "IKIGAI_PROVIDER", &config.provider),
        model: or_env_or_file(cli.model, "IKIGAI_MODEL", &config.model),
        prompt,
        output,
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
        sandbox: sandbox_words(&settings.sandbox),
        context_window: config.context_window.map(u64::from),
        auto_compact: config.auto_compact,
        instructions_max_bytes: config.instructions_max_bytes,
        git: crate::host::call::ReadOnly::new(&settings),
        max_subagents: config.max_subagents.map(|n| n as usize),
        places: Some(places),
        project,
        // The person's hooks, then a trusted project's (an untrusted
        // project's config was narrowed to none above).
        hooks: [Some(&config), project_config.as_ref()]
            .into_iter()
            .flatten()
            .filter(|c| !c.hooks.is_empty())
            .filter_map(|c| Some((c.hooks.clone(), c.path.clone()?)))
            .collect(),
    };
    if let Some(note) = crate::host::no_tool_directory(&settings) {
        let style = Paint::for_stream(std::io::stderr().is_terminal());
        eprintln!("{}", style.dim_yellow(&format!("warning: {note}")));
    }
    // Our bash copies its command's output to stderr as it runs, so the
    // terminal shows it live and a call stopped by Ctrl-C keeps it. Set
    // before any thread starts, for every tool this process runs.
    std::env::set_var(crate::tools::bash::PROGRESS_VAR, "stderr");
    if acp {
        // The editor's sessions name the workspace: tools start with the
        // first of them.
        return acp::run(options, settings);
    }
    let tools = tool_host::Tools::start(settings);
    run(options, &tools, &mut &tools)
}

/// Finds what the project ships and decides whether it is trusted, asking
/// at a terminal (never for `-p`); prints the start line's words.
fn trust_project(
    cli: &Ikigai,
    config: &Config,
    env: &Env,
    places: &custom::Places,
) -> Result<custom::trust::Project, String> {
    use std::io::BufRead;
    let mut project = custom::trust::Project::find(places)?;
    let at_terminal =
        cli.prompt.is_none() && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let store = env.config_dir().map(|d| d.join(custom::trusted_file::NAME));
    let given = cli.trust || config.trust_projects == Some(true);
    let mut ask = |question: &str| {
        eprint!("{question}");
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer).ok()?;
        Some(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes"))
    };
    let ask: Option<custom::trust::Ask<'_>> = at_terminal.then_some(&mut ask);
    if let Some(line) = custom::trust::decide(&mut project, store.as_deref(), given, ask) {
        let style = Paint::for_stream(std::io::stderr().is_terminal());
        eprintln!("{}", style.dim(&line));
    }
    Ok(project)
}

/// Runs the assistant; the exit code says whether its messages were answered.
pub fn run(mut options: Options, host: &dyn ToolHost, commands: &mut dyn Commands) -> ExitCode {
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
    if let Some(found) = &choice.found {
        eprintln!("{}", style.dim(&format!("ikigai · {found}")));
    }
    let mode = options.policy.approval.unwrap_or_else(Mode::default_here);
    // A resumed session is opened first: its prompt states the environment
    // it stated before, and the model is told what changed (decision 60).
    let resumed = match (sessions_dir(&env), &options.resume) {
        (Some(dir), Some(id)) => match Session::resume(&dir, id.as_deref()) {
            Ok(found) => Some(found),
            Err(e) => {
                eprintln!("ikigai: {e:#}");
                return ExitCode::from(exit::FAILURE);
            }
        },
        (None, Some(_)) => {
            eprintln!("ikigai: cannot resume: neither XDG_DATA_HOME nor HOME is set");
            return ExitCode::from(exit::FAILURE);
        }
        _ => None,
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let setup = Setup {
        cwd: cwd.clone(),
        shell: env.var("SHELL").map(str::to_string),
        sandbox: options.sandbox.clone(),
        approval: approval_words(mode),
        model: match &choice.client {
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
        stated: resumed
            .as_ref()
            .and_then(|(session, _)| session.environment()),
        git: options.git.clone(),
        places: options.places.clone(),
    };
    let (context, warnings) = Context::build(&setup);
    for warning in &warnings {
        eprintln!("{}", style.dim_yellow(&format!("warning: {warning}")));
    }
    let files_line = context.files_line(&cwd);

    // Answers are read from stdin: without a terminal there, nobody is asked.
    let prompter = std::io::stdin()
        .is_terminal()
        .then(|| Box::new(TerminalPrompter::new()) as Box<dyn Prompter>);
    let approval = Approval::new(mode, options.policy.allow, options.policy.deny, prompter);
    // Hooks run in the working directory, which is the project's.
    let hooks = Arc::new(Hooks::new(
        std::mem::take(&mut options.hooks),
        cwd.clone(),
        cwd.clone(),
    ));
    let mut conversation = Conversation::new(choice.client, context, options.max_tool_rounds)
        .with_approval(approval)
        .with_hooks(hooks)
        .with_window(options.context_window, options.auto_compact)
        .with_model_output(
            options
                .policy
                .model_output
                .unwrap_or(for_model::DEFAULT_MODEL_OUTPUT),
        );
    if options.prompt.is_some() {
        conversation = conversation.one_shot();
    }
    let (agents, agent_warnings) = options
        .places
        .as_ref()
        .map(custom::agents::load)
        .unwrap_or_default();
    for warning in &agent_warnings {
        eprintln!("{}", style.dim_yellow(&format!("warning: {warning}")));
    }
    let provider = conversation.client().map(|c| c.provider());
    conversation = conversation.with_team(team(
        agents,
        options.max_subagents,
        provider,
        options.max_output_tokens,
        &env,
    ));
    let mut was_resumed = false;
    // (Not when nothing can be sent: no session is left empty.)
    let headless_json = options.prompt.is_some()
        && options.output.format != OutputFormat::Text
        && conversation.client().is_some();
    match (sessions_dir(&env), resumed) {
        (Some(_), Some((session, history))) => {
            eprintln!(
                "{}",
                style.dim(&format!(
                    "Resumed session {} ({} messages).",
                    session.id(),
                    history.len()
                ))
            );
            conversation = conversation.with_history(history).with_session(session);
            was_resumed = true;
        }
        // The JSON formats name the session in their first event, so it is
        // made before anything is sent.
        (Some(dir), None) if headless_json => match Session::create(&dir) {
            Ok(session) => conversation = conversation.with_session(session),
            Err(_) => conversation = conversation.with_new_session(dir),
        },
        (Some(dir), None) => conversation = conversation.with_new_session(dir),
        (None, _) => eprintln!(
            "{}",
            style.dim_yellow(
                "warning: neither XDG_DATA_HOME nor HOME is set: this session is not logged"
            )
        ),
    }
    if let Some(line) = &files_line {
        eprintln!("{}", style.dim(line));
    }

    // Ctrl-C stops one message; SIGTERM and SIGHUP end the assistant.
    signals::install(false);
    // The hooks' lines for the person go to stderr in every mode.
    let mut hook_ui = terminal::TermUi::new();
    conversation.start(if was_resumed { "resume" } else { "startup" }, &mut hook_ui);
    let (code, reason) = converse(
        options.prompt.as_deref(),
        &options.output,
        &mut conversation,
        host,
        commands,
        &env,
        was_resumed,
    );
    conversation.end(reason, &mut hook_ui);
    code
}

/// The conversation in the way it was asked for: one message, lines from
/// stdin, or the interactive prompt; the exit code, and the session's end
/// as SessionEnd hooks are told it.
#[allow(clippy::too_many_arguments)]
fn converse(
    prompt: Option<&str>,
    output: &headless::Output,
    conversation: &mut Conversation,
    host: &dyn ToolHost,
    commands: &mut dyn Commands,
    env: &Env,
    was_resumed: bool,
) -> (ExitCode, &'static str) {
    let style = Paint::for_stream(std::io::stderr().is_terminal());
    if let Some(message) = prompt {
        return (headless::run(message, conversation, host, output), "other");
    }
    if !std::io::stdin().is_terminal() {
        let code = match terminal::lines(&mut std::io::stdin().lock(), conversation, host, commands)
        {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(exit::FAILURE),
            Err(e) => {
                eprintln!("ikigai: reading stdin: {e}");
                ExitCode::from(exit::FAILURE)
            }
        };
        return (code, "other");
    }
    let who = match conversation.client() {
        Some(c) => format!("{} {}", c.provider(), c.model()),
        None => "no model configured (messages explain how to set a key)".into(),
    };
    let log = conversation
        .session_id()
        .map(|id| format!(" · session {id}"))
        .unwrap_or_default();
    let hooks = match conversation.hooks().count() {
        0 => String::new(),
        1 => " · 1 hook".to_string(),
        n => format!(" · {n} hooks"),
    };
    eprintln!("{}", style.dim(&format!("ikigai · {who}{log}{hooks}")));
    if was_resumed {
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
    let history = sessions_dir(env).and_then(|d| d.parent().map(|p| p.join("history")));
    match terminal::interactive(conversation, host, commands, history) {
        Ok(()) => (ExitCode::SUCCESS, "prompt_input_exit"),
        Err(e) => {
            eprintln!("ikigai: {e:#}");
            (ExitCode::from(exit::FAILURE), "other")
        }
    }
}

/// Who `task` may start: the agents read from files, at most `max` at
/// once, another model of the caller's `provider` for an agent that names
/// one (with the same keys and reply limit).
fn team(
    agents: Vec<Agent>,
    max: Option<usize>,
    provider: Option<&'static str>,
    max_output_tokens: Option<u64>,
    env: &Env,
) -> Team {
    let env = env.clone();
    Team {
        max: max.unwrap_or(conversation::DEFAULT_MAX_SUBAGENTS),
        agents,
        model: std::sync::Arc::new(move |name| {
            keys::choose(provider, Some(name), max_output_tokens, &env)?.client
        }),
    }
}

/// The sandbox as the environment block states it: the mode, where tools
/// may write, and the network.
fn sandbox_words(sandbox: &crate::host::settings::SandboxSettings) -> String {
    use crate::sandbox::Mode as Sandbox;
    let network = if sandbox.network {
        "network on"
    } else {
        "network off (web tools excepted)"
    };
    let mut words = match sandbox.mode {
        Sandbox::Off => "off: tools run unconfined".to_string(),
        Sandbox::ReadOnly => format!("read-only: tools write nowhere; {network}"),
        Sandbox::WorkspaceWrite => {
            let dirs: Vec<String> = sandbox
                .writable()
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            format!(
                "workspace-write: tools write only under {}; {network}",
                dirs.join(", ")
            )
        }
    };
    if let Some(why) = &sandbox.unavailable {
        words += &format!(" (not enforced here: {why}; calls that may write are asked)");
    }
    words
}

/// The approval mode as the environment block states it.
fn approval_words(mode: Mode) -> String {
    match mode {
        Mode::Ask => "ask: calls that may change something wait for the user's yes; read-only \
                      and allowed calls run at once"
            .into(),
        Mode::Auto => "auto: every call runs without asking unless a deny rule refuses it".into(),
    }
}
