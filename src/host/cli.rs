//! The `ikigai` command line: the host's options, the assistant's options,
//! and the three subcommands (`tools`, `schema`, `call`). Parsing only: the
//! host runs the subcommands, and the front hands the rest to the assistant.

use std::path::PathBuf;
use std::time::Duration;

use argh::FromArgs;

use super::format::ToolFormat;
use super::settings::{parse_dir, parse_size, parse_timeout, Overrides};
use crate::sandbox::Mode;

/// The subcommands' names, which `--resume` never takes as its ID.
pub const SUBCOMMANDS: &[&str] = &["tools", "schema", "call", "sandbox", "acp"];

#[derive(FromArgs, Debug)]
/// ikigai: the host of the ikigai tools. It discovers tools (executables
/// that answer --schema or --describe) in the system and user tool
/// directories, runs them as subprocesses and wraps their answers for a
/// model. With no command it is the assistant: a conversation with a model
/// that calls those tools (-p for one message; lines on a non-terminal
/// stdin are messages or /commands). Options come before the command.
pub struct Ikigai {
    /// directory of system tools (default: $IKIGAI_LIBEXEC_DIR, else
    /// PREFIX/libexec/ikigai next to this program's bin directory)
    #[argh(option, arg_name = "DIR")]
    pub libexec_dir: Option<PathBuf>,

    /// directory of user tools, which shadow system tools of the same name
    /// (default: $IKIGAI_TOOLS_DIR, else ~/.ikigai/tools)
    #[argh(option, arg_name = "DIR")]
    pub tools_dir: Option<PathBuf>,

    /// seconds a tool call may run before its whole process group is
    /// killed (default 30; fractions allowed)
    #[argh(option, from_str_fn(parse_timeout), arg_name = "SECONDS")]
    pub timeout: Option<Duration>,

    /// bytes kept of each of a tool call's stdout and stderr; the rest is
    /// drained and counted (default 1M; K, M, G suffixes allowed)
    #[argh(option, from_str_fn(parse_size), arg_name = "BYTES")]
    pub max_output: Option<usize>,

    /// what tool calls may touch: workspace-write (writes only under the
    /// current directory, --add-dir directories, $TMPDIR and /tmp),
    /// read-only, or off (default: $IKIGAI_SANDBOX, else workspace-write;
    /// `ikigai call` runs unsandboxed unless this is given)
    #[argh(option, from_str_fn(Mode::parse), arg_name = "MODE")]
    pub sandbox: Option<Mode>,

    /// another directory tool calls may write under (repeatable)
    #[argh(option, from_str_fn(parse_dir), arg_name = "DIR")]
    pub add_dir: Vec<PathBuf>,

    /// let every tool open network connections (by default only the web
    /// tools may)
    #[argh(switch)]
    pub network: bool,

    /// trust this project's own files for this run (its .ikigai/config.toml,
    /// .mcp.json, commands, skills and agents) without asking
    #[argh(switch)]
    pub trust: bool,

    /// a path sandboxed tools may read although it is among the secret
    /// paths that `ikigai sandbox check` lists (repeatable)
    #[argh(option, arg_name = "PATH")]
    pub allow_read: Vec<PathBuf>,

    /// a Unix socket sandboxed tools may connect to although it lies
    /// outside the workspace (repeatable; SSH_AUTH_SOCK's always may)
    #[argh(option, arg_name = "PATH")]
    pub allow_unix_socket: Vec<PathBuf>,

    /// the assistant's model provider: openai, openai-responses, anthropic,
    /// google, ollama or stub (default: $IKIGAI_PROVIDER, else config, else
    /// the first that has a key, else a local Ollama server)
    #[argh(option, arg_name = "NAME")]
    pub provider: Option<String>,

    /// the assistant's model (default: $IKIGAI_MODEL, else config, else the
    /// provider's)
    #[argh(option, arg_name = "MODEL")]
    pub model: Option<String>,

    /// the most tokens one reply of the model may use (default:
    /// $IKIGAI_MAX_OUTPUT_TOKENS, else the model's own limit, 8192 for a
    /// model not known)
    #[argh(option, from_str_fn(parse_max_output_tokens), arg_name = "N")]
    pub max_output_tokens: Option<u64>,

    /// send this one message, print the answer, and leave (`-p -`: the
    /// message is read from stdin)
    #[argh(option, short = 'p', arg_name = "MESSAGE")]
    pub prompt: Option<String>,

    /// with -p: text (the answer as written), json (one result object at
    /// the end) or stream-json (one event object per line as things
    /// happen); default text
    #[argh(option, from_str_fn(OutputFormat::parse), arg_name = "FORMAT")]
    pub output_format: Option<OutputFormat>,

    /// with -p: also write the final answer to FILE
    #[argh(option, arg_name = "FILE")]
    pub output_last_message: Option<PathBuf>,

    /// continue the latest session, or the session whose ID follows
    /// (--resume ID)
    #[argh(switch)]
    pub resume: bool,

    /// tool rounds allowed per message before the assistant stops and
    /// asks (default 25)
    #[argh(option, arg_name = "N")]
    pub max_tool_rounds: Option<usize>,

    /// ask: show each call that is not read-only and not allowed by a rule,
    /// and wait for y/n/a; auto: run every call no deny rule matches
    /// (default: $IKIGAI_APPROVAL, else config, else ask at a terminal)
    #[argh(option, arg_name = "MODE")]
    pub approval: Option<String>,

    /// run calls this rule matches without asking: TOOL or TOOL(PATTERN),
    /// e.g. 'bash(cargo test*)', 'file_write(src/**)',
    /// 'web_fetch(domain:docs.rs)' (repeatable)
    #[argh(option, arg_name = "RULE")]
    pub allow: Vec<String>,

    /// never run calls this rule matches; beats --allow (repeatable)
    #[argh(option, arg_name = "RULE")]
    pub deny: Vec<String>,

    /// bytes of each output the model sees of one call; the rest is saved
    /// in a file it can read (default 32K; K, M, G suffixes allowed)
    #[argh(option, from_str_fn(parse_size), arg_name = "BYTES")]
    pub model_output: Option<usize>,

    /// the MCP servers to use as tools, in the {"mcpServers": ...} shape
    /// (default: $IKIGAI_MCP_CONFIG, else ~/.ikigai/mcp.json)
    #[argh(option, arg_name = "FILE")]
    pub mcp_config: Option<PathBuf>,

    #[argh(subcommand)]
    pub command: Option<Subcommand>,
}

impl Ikigai {
    /// The options that override the environment.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            libexec_dir: self.libexec_dir.clone(),
            tools_dir: self.tools_dir.clone(),
            timeout: self.timeout,
            max_output: self.max_output,
            sandbox: self.sandbox,
            add_dirs: self.add_dir.clone(),
            network: self.network,
            mcp_config: self.mcp_config.clone(),
        }
    }
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum Subcommand {
    Tools(ToolsCommand),
    Schema(SchemaCommand),
    Call(CallCommand),
    Sandbox(SandboxCommand),
    Acp(AcpCommand),
}

#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "acp")]
/// the assistant as an Agent Client Protocol agent for editors (Zed,
/// JetBrains, neovim, Emacs): JSON-RPC on stdin and stdout, diagnostics on
/// stderr. The editor starts it; approval asks through the editor.
pub struct AcpCommand {}

#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "sandbox")]
/// the tool sandbox: `ikigai sandbox check` says what this kernel can
/// enforce and what each mode allows.
pub struct SandboxCommand {
    #[argh(subcommand)]
    pub action: SandboxAction,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum SandboxAction {
    Check(SandboxCheck),
}

#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "check")]
/// print what this kernel supports (Landlock ABI, seccomp) and what each
/// sandbox mode allows.
pub struct SandboxCheck {}

#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "tools")]
/// list the discovered tools (name, description, path, protocol) and the
/// skipped files with the reason, or show one tool.
pub struct ToolsCommand {
    /// print JSON: {"tools": [{name, description, path, protocol}], "skipped":
    /// [{path, reason}]}, or one tool's entry with its schema
    #[argh(switch)]
    pub json: bool,

    /// the tool to show
    #[argh(positional)]
    pub name: Option<String>,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "schema")]
/// print the tools array in a model provider's format.
pub struct SchemaCommand {
    /// openai (Chat Completions), openai-responses, anthropic or google
    /// (or gemini; any case)
    #[argh(option)]
    pub provider: ToolFormat,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "call")]
/// run one tool through the registry and print its envelope as the model
/// would receive it; exit 0 when tool_success is true, 1 otherwise.
pub struct CallCommand {
    /// the tool's name (as in its schema)
    #[argh(positional)]
    pub name: String,

    /// the arguments, a JSON object (default: read from stdin)
    #[argh(positional)]
    pub arguments: Option<String>,
}

/// What `ikigai -p` prints on stdout (decision 65).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// The model's answer, as the terminal shows it.
    #[default]
    Text,
    /// One `result` object at the end.
    Json,
    /// One event object per line as things happen, the `result` last.
    StreamJson,
}

impl OutputFormat {
    pub const NAMES: [&'static str; 3] = ["text", "json", "stream-json"];

    pub fn parse(text: &str) -> Result<OutputFormat, String> {
        match text {
            "text" => Ok(OutputFormat::Text),
            "json" => Ok(OutputFormat::Json),
            "stream-json" => Ok(OutputFormat::StreamJson),
            _ => Err(format!(
                "'{text}' is not an output format; choose {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// A reply limit as written by a person: a whole number from 1.
pub fn parse_max_output_tokens(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "the output-token limit must be a whole number from 1, not '{text}'"
        )),
    }
}

/// Options that take a value: a `-h` after one of them is that value.
const TAKES_VALUE: &[&str] = &[
    "--libexec-dir",
    "--tools-dir",
    "--timeout",
    "--max-output",
    "--sandbox",
    "--add-dir",
    "--allow-read",
    "--allow-unix-socket",
    "--provider",
    "--model",
    "--max-output-tokens",
    "-p",
    "--prompt",
    "--output-format",
    "--output-last-message",
    "--max-tool-rounds",
    "--approval",
    "--allow",
    "--deny",
    "--model-output",
    "--mcp-config",
];

/// `-h` as `--help`, which is all argh knows, wherever it is not an
/// option's value.
pub fn short_help(args: Vec<String>) -> Vec<String> {
    let mut previous = String::new();
    args.into_iter()
        .map(|arg| {
            let arg = if arg == "-h" && !TAKES_VALUE.contains(&previous.as_str()) {
                "--help".to_string()
            } else {
                arg
            };
            previous.clone_from(&arg);
            arg
        })
        .collect()
}

/// " Did you mean ...?" for argh's "Unrecognized argument: X": the nearest
/// subcommand for a word, the nearest option (as `--help` lists them, so
/// every option counts) for a flag; empty when nothing is close.
pub fn suggestion(error: &str) -> String {
    let Some(typed) = error.strip_prefix("Unrecognized argument: ") else {
        return String::new();
    };
    let hint = if typed.starts_with('-') {
        let help = match Ikigai::from_args(&["ikigai"], &["--help"]) {
            Err(exit) => exit.output,
            Ok(_) => return String::new(),
        };
        let options: Vec<&str> = help
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .collect();
        crate::suggest::did_you_mean(typed, options)
    } else {
        // A word where a subcommand goes.
        crate::suggest::did_you_mean(typed, SUBCOMMANDS.iter().copied())
    };
    if hint.is_empty() {
        hint
    } else {
        format!(".{hint}")
    }
}

/// Takes the optional ID of `--resume [ID]` out of `args` (argh cannot say
/// "optional value"), leaving the switch: the argument after `--resume` is
/// its ID unless it is a flag or one of `subcommands`.
pub fn take_resume_id(args: Vec<String>, subcommands: &[&str]) -> (Vec<String>, Option<String>) {
    let mut rest = Vec::new();
    let mut id = None;
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        if arg == "--" {
            rest.push(arg);
            rest.extend(args.by_ref());
            break;
        }
        let is_resume = arg == "--resume";
        rest.push(arg);
        if is_resume {
            if let Some(next) =
                args.next_if(|next| !next.starts_with('-') && !subcommands.contains(&next.as_str()))
            {
                id = Some(next);
            }
        }
    }
    (rest, id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn resume_takes_an_optional_id() {
        let subs = ["tools", "call"];
        let take = |s: &str| take_resume_id(words(s), &subs);
        assert_eq!(take("--resume"), (words("--resume"), None));
        assert_eq!(
            take("--resume abc -p hi"),
            (words("--resume -p hi"), Some("abc".into()))
        );
        assert_eq!(
            take("--resume --model m"),
            (words("--resume --model m"), None)
        );
        assert_eq!(take("--resume tools"), (words("--resume tools"), None));
        assert_eq!(take("-p x"), (words("-p x"), None));
        assert_eq!(take("-- --resume x"), (words("-- --resume x"), None));
    }

    #[test]
    fn short_help_is_help_except_as_a_value() {
        assert_eq!(short_help(words("-h")), words("--help"));
        assert_eq!(short_help(words("call -h")), words("call --help"));
        assert_eq!(short_help(words("-p -h")), words("-p -h"));
    }

    #[test]
    fn suggestions_for_subcommands_and_options() {
        assert_eq!(
            suggestion("Unrecognized argument: toosl"),
            ". Did you mean 'tools'?"
        );
        assert_eq!(
            suggestion("Unrecognized argument: --modle"),
            ". Did you mean '--model'?"
        );
        assert_eq!(suggestion("Unrecognized argument: zzzzzz"), "");
        assert_eq!(suggestion("Required positional arguments not provided"), "");
    }

    #[test]
    fn every_option_with_a_value_is_known_to_short_help() {
        let Err(exit) = Ikigai::from_args(&["ikigai"], &["--help"]) else {
            panic!("--help parsed");
        };
        // The usage line: `[--timeout <SECONDS>]` for each option with a value.
        let usage = exit.output.lines().next().unwrap_or_default();
        let with_value: Vec<&str> = usage
            .split('[')
            .filter_map(|part| part.split_once(" <"))
            .map(|(flag, _)| flag)
            .collect();
        assert!(with_value.len() > 10, "{usage}");
        for flag in with_value {
            assert!(TAKES_VALUE.contains(&flag), "{flag} takes a value");
        }
    }
}
