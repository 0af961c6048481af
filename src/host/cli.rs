//! The `ikigai` command line: the host's options, the assistant's options,
//! and the three subcommands (`tools`, `schema`, `call`). Parsing only: the
//! host runs the subcommands, and the front hands the rest to the assistant.

use std::path::PathBuf;
use std::time::Duration;

use argh::FromArgs;

use super::format::ToolFormat;
use super::settings::{parse_size, parse_timeout, Overrides};

/// The subcommands' names, which `--resume` never takes as its ID.
pub const SUBCOMMANDS: &[&str] = &["tools", "schema", "call"];

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

    /// the assistant's model provider: openai, anthropic, google or stub
    /// (default: $IKIGAI_PROVIDER, else the first that has a key)
    #[argh(option, arg_name = "NAME")]
    pub provider: Option<String>,

    /// the assistant's model (default: $IKIGAI_MODEL, else the provider's)
    #[argh(option, arg_name = "MODEL")]
    pub model: Option<String>,

    /// send this one message, print the answer, and leave
    #[argh(option, short = 'p', arg_name = "MESSAGE")]
    pub prompt: Option<String>,

    /// continue the latest session, or the session whose ID follows
    /// (--resume ID)
    #[argh(switch)]
    pub resume: bool,

    /// tool rounds allowed per message before the assistant stops and
    /// asks (default 25)
    #[argh(option, arg_name = "N")]
    pub max_tool_rounds: Option<usize>,

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
}

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
}
