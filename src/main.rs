//! ikigai-tools: one executable, many personalities. argv[0] (or the first
//! argument) decides whether this process is a tool, the `ikigai` host, or
//! the front door that lists what it can be.

mod args;
mod assistant;
mod capture;
mod config;
mod credentials;
mod dispatch;
mod env;
mod error;
mod exit;
#[cfg(test)]
mod fuzzing;
mod host;
mod install;
mod mcp;
mod out;
mod protocol;
mod runner;
mod sandbox;
mod size;
mod suggest;
mod tool;
mod tools;
mod truncate;

use std::process::ExitCode;

use dispatch::Personality;

fn main() -> ExitCode {
    match dispatch::resolve(std::env::args_os().collect()) {
        Personality::Tool(tool, rest) => runner::run(tool, &rest),
        Personality::Host(rest) => {
            let code = match host::main(rest) {
                host::Start::Done(code) => code,
                host::Start::Assistant(cli, settings, resume_id, config) => {
                    assistant::main(*cli, *settings, resume_id, *config)
                }
            };
            // The MCP servers the host started end before it does, in order.
            mcp::client::stop_all();
            code
        }
        Personality::SandboxExec(rest) => sandbox::exec::main(&rest),
        Personality::SandboxSpawner(rest) => sandbox::spawner::main(&rest),
        Personality::Mcp(rest) => mcp::server::main(rest),
        Personality::Install(rest) => install::install(&rest),
        Personality::Completions(rest) => install::completions(&rest),
        Personality::Manpage(rest) => install::manpage(&rest),
        Personality::List => {
            let names: Vec<&str> = tools::TOOLS.iter().map(|t| t.command()).collect();
            out::print_out(names.join("\n").as_bytes(), true);
            ExitCode::SUCCESS
        }
        Personality::Schemas => {
            // Each tool's `--schema` answer, parsed, under its command name.
            let all: serde_json::Map<String, serde_json::Value> = tools::TOOLS
                .iter()
                .map(|t| {
                    let schema = serde_json::from_str(t.schema()).unwrap_or_default();
                    (t.command().to_string(), schema)
                })
                .collect();
            out::print_out(serde_json::Value::Object(all).to_string().as_bytes(), true);
            ExitCode::SUCCESS
        }
        Personality::Help => {
            out::print_out(help().as_bytes(), false);
            ExitCode::SUCCESS
        }
        Personality::Version => {
            let version = format!("ikigai-tools {}", env!("CARGO_PKG_VERSION"));
            out::print_out(version.as_bytes(), true);
            ExitCode::SUCCESS
        }
        Personality::Unknown(name) => {
            let names: Vec<&str> = tools::TOOLS.iter().map(|t| t.command()).collect();
            eprintln!(
                "ikigai-tools: unknown tool '{name}'.{} (tools: {})",
                suggest::did_you_mean(&name, names.iter().copied()),
                names.join(", ")
            );
            ExitCode::from(exit::USAGE)
        }
    }
}

fn help() -> String {
    let width = tools::TOOLS
        .iter()
        .map(|t| t.command().len())
        .max()
        .unwrap_or(0);
    let mut text = String::from(
        "ikigai-tools: the tools an LLM assistant calls, in one binary.\n\n\
         usage: ikigai-tools TOOL [--schema | --describe | ARGS_JSON] < ARGS.json\n       \
         TOOL [...]              (through a link named after the tool)\n       \
         ikigai [...]            (the host)\n       \
         ikigai-tools mcp [--http HOST:PORT]  (the tools as an MCP server)\n       \
         ikigai-tools install [PREFIX] [--uninstall]  (default ~/.local)\n       \
         ikigai-tools completions bash|zsh|fish | manpage [ikigai|ikigai-tools]\n       \
         ikigai-tools --list | --help | --version\n\ntools:\n",
    );
    for tool in tools::TOOLS {
        text += &format!("  {:width$}  {}\n", tool.command(), tool::summary(*tool));
    }
    text
}
