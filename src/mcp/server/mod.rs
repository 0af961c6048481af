//! `ikigai-tools mcp`: every tool the host discovers (the system and user
//! tool directories, both tool protocols), offered to MCP clients over stdio
//! or, with `--http HOST:PORT`, Streamable HTTP at `/mcp` behind a bearer
//! token and limits (decision 73). Calls run through the host's own call
//! path, with the host's limits and sandbox, and their results are sized
//! for a model (decision 25). The tool directories
//! are watched: when they change, the tools are discovered again (and a
//! stdio client is told with `notifications/tools/list_changed`). This
//! server never starts the MCP servers of the host's own configuration: it
//! serves local tools only, so an agent that lists us cannot make us start
//! it again.

use std::ffi::OsString;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{mpsc, Arc};
use std::time::{Duration, SystemTime};

use argh::FromArgs;

use crate::exit;
use crate::host::discovery;
use crate::host::settings::{self, parse_dir, parse_size, parse_timeout, Overrides, Settings};
use crate::sandbox::Mode;
use crate::tool::Env;

pub mod auth;
mod captures;
mod conn;
pub mod http;
mod limits;
mod pool;
pub mod service;
pub mod stdio;

#[derive(FromArgs, Debug)]
/// ikigai-tools mcp: serve the discovered tools to MCP clients, over stdio
/// (the default) or Streamable HTTP at http://HOST:PORT/mcp.
pub struct McpOptions {
    /// serve Streamable HTTP on HOST:PORT (a bare PORT means 127.0.0.1:PORT)
    #[argh(option, arg_name = "HOST:PORT")]
    pub http: Option<String>,

    /// directory of system tools (default: $IKIGAI_LIBEXEC_DIR, else
    /// PREFIX/libexec/ikigai next to this program's bin directory)
    #[argh(option, arg_name = "DIR")]
    pub libexec_dir: Option<PathBuf>,

    /// directory of user tools (default: $IKIGAI_TOOLS_DIR, else
    /// ~/.ikigai/tools)
    #[argh(option, arg_name = "DIR")]
    pub tools_dir: Option<PathBuf>,

    /// seconds a tool call may run (default 30; fractions allowed)
    #[argh(option, from_str_fn(parse_timeout), arg_name = "SECONDS")]
    pub timeout: Option<Duration>,

    /// bytes kept of each of a call's stdout and stderr (default 1M)
    #[argh(option, from_str_fn(parse_size), arg_name = "BYTES")]
    pub max_output: Option<usize>,

    /// sandbox of each call: workspace-write (writes only under the
    /// directory the server started in, --add-dir directories, $TMPDIR and
    /// /tmp), read-only or off (default: $IKIGAI_SANDBOX, else
    /// workspace-write)
    #[argh(option, from_str_fn(Mode::parse), arg_name = "MODE")]
    pub sandbox: Option<Mode>,

    /// another writable directory besides the current one (repeatable)
    #[argh(option, from_str_fn(parse_dir), arg_name = "DIR")]
    pub add_dir: Vec<PathBuf>,

    /// let sandboxed calls open network sockets
    #[argh(switch)]
    pub network: bool,

    /// a path sandboxed tools may read although it is among the secret
    /// paths (repeatable; adds to the config file's allow_read)
    #[argh(option, arg_name = "PATH")]
    pub allow_read: Vec<PathBuf>,

    /// a Unix socket sandboxed tools may connect to although it lies
    /// outside the workspace (repeatable; adds to the config file's
    /// allow_unix_sockets; SSH_AUTH_SOCK's always may)
    #[argh(option, arg_name = "PATH")]
    pub allow_unix_socket: Vec<PathBuf>,

    /// bytes of each output a result carries, the whole saved in a file
    /// the result names (default 32K)
    #[argh(option, from_str_fn(parse_size), arg_name = "BYTES")]
    pub model_output: Option<usize>,

    /// with --http: the bearer token clients must send, read from FILE
    /// (default: $IKIGAI_MCP_TOKEN, else one made at start, shown once and
    /// saved in $XDG_RUNTIME_DIR/ikigai/mcp-PORT.token)
    #[argh(option, arg_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// with --http on a loopback address: serve without a token
    #[argh(switch)]
    pub no_auth: bool,
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    let mut words = Vec::with_capacity(args.len());
    for arg in args {
        match arg.into_string() {
            Ok(word) => words.push(word),
            Err(bad) => {
                eprintln!(
                    "ikigai-tools mcp: argument is not UTF-8: {}",
                    bad.to_string_lossy()
                );
                return ExitCode::from(exit::USAGE);
            }
        }
    }
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let options = match McpOptions::from_args(&["ikigai-tools mcp"], &words) {
        Ok(options) => options,
        Err(early) => {
            return match early.status {
                Ok(()) => {
                    crate::out::print_out(early.output.as_bytes(), false);
                    ExitCode::SUCCESS
                }
                Err(()) => usage(early.output.trim_end()),
            }
        }
    };
    // ikigai's own directories exist before any tool runs (decision 80).
    for problem in crate::host::files::make_own_dirs(&Env::from_process()) {
        eprintln!("ikigai-tools mcp: warning: {problem}");
    }
    let addr = match options.http.as_deref().map(parse_addr).transpose() {
        Ok(addr) => addr,
        Err(e) => return usage(&e),
    };
    let env = Env::from_process();
    // The config file's secret paths and sockets hold here too (decisions
    // 72, 75); its other keys are the assistant's.
    let config = match crate::config::load(&env) {
        Ok(config) => config,
        Err(e) => return usage(&format!("ikigai-tools mcp: config: {e}")),
    };
    let access = match access(&options, addr, &env) {
        Ok(access) => access,
        Err(e) => return usage(&format!("ikigai-tools mcp: {e}")),
    };
    // The tools' keys stay out of reach of the tools, as in the assistant.
    crate::host::keep_memory_private();
    discovery::raise_open_file_limit();
    // Every call is fenced as the assistant's are: the directory the server
    // was started in is the workspace.
    let mode = match settings::sandbox_mode(options.sandbox, &env, None, false) {
        Ok(mode) => mode,
        Err(e) => return usage(&format!("ikigai-tools mcp: {e}")),
    };
    let mut settings = Settings::from_process(Overrides {
        libexec_dir: options.libexec_dir.clone(),
        tools_dir: options.tools_dir.clone(),
        timeout: options.timeout,
        max_output: options.max_output,
        sandbox: Some(mode),
        add_dirs: options.add_dir.clone(),
        network: options.network,
        ..Overrides::default()
    });
    let added = settings::add_guard_paths(
        &mut settings.sandbox.guard,
        &config,
        &options.allow_read,
        &options.allow_unix_socket,
        &env,
    );
    if let Err(e) = added {
        return usage(&format!("ikigai-tools mcp: {e}"));
    }
    settings.sandbox.take_limits(&config);
    if let Some(gap) = &settings.sandbox.unavailable {
        eprintln!("ikigai-tools mcp: warning: {gap}; tool calls run with only what it supports");
    }
    settings.mcp_config = None;
    // Taken before discovery, so a change made during it is seen.
    let seen = fingerprint(&settings);
    let registry = discovery::discover(&settings);
    for skipped in registry.skipped() {
        eprintln!(
            "ikigai-tools mcp: skipped {}: {}",
            skipped.path.display(),
            skipped.reason
        );
    }
    let service = Arc::new(service::Service::new(
        registry,
        settings.clone(),
        options
            .model_output
            .unwrap_or(crate::host::for_model::DEFAULT_MODEL_OUTPUT),
        captures::Captures::new(&env),
    ));
    let changes = watch(settings, seen, service.clone());
    match addr {
        None => {
            stdio::serve(service, changes);
            ExitCode::SUCCESS
        }
        Some(addr) => match http::serve(service, addr, access, &env) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ikigai-tools mcp: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

/// How HTTP requests are let in: a token given, `--no-auth` (which only a
/// loopback address may have), or None: a token is to be made, once the
/// port is known. Over stdio (the client started us) there is nothing to
/// let in, and the HTTP options are refused.
fn access(
    options: &McpOptions,
    addr: Option<SocketAddr>,
    env: &Env,
) -> Result<Option<auth::Access>, String> {
    let Some(addr) = addr else {
        if options.no_auth || options.token_file.is_some() {
            return Err("--no-auth and --token-file go with --http".into());
        }
        return Ok(None);
    };
    if options.no_auth {
        if options.token_file.is_some() {
            return Err("--no-auth and --token-file exclude each other".into());
        }
        if !addr.ip().is_loopback() {
            return Err(format!(
                "--no-auth is refused on {}: without a token, anyone who can reach the \
                 address runs commands as you; it is allowed on a loopback address \
                 (127.0.0.1, [::1]) only",
                addr.ip()
            ));
        }
        return Ok(Some(auth::Access::Open));
    }
    Ok(auth::given(options.token_file.as_deref(), env)?.map(auth::Access::Token))
}

/// How often the tool directories are looked at.
const WATCH_EVERY: Duration = Duration::from_secs(2);

/// Looks at the tool directories every two seconds; when a file in them
/// changed since `seen`, discovers again and offers the new tools, and says
/// so on the returned channel when the tools differ.
fn watch(
    settings: Settings,
    mut seen: Fingerprint,
    service: Arc<service::Service>,
) -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(WATCH_EVERY);
            let now = fingerprint(&settings);
            if now == seen {
                continue;
            }
            seen = now;
            // Over HTTP nobody listens; the list itself stays current.
            if service.replace(discovery::discover(&settings)) {
                let _ = tx.send(());
            }
        }
    });
    rx
}

/// What the tool directories hold: each file's path, modification time,
/// size and mode (through links), and the directories' own times.
type Fingerprint = Vec<(PathBuf, Option<SystemTime>, u64, u32)>;

/// The tool directories' fingerprint now.
fn fingerprint(settings: &Settings) -> Fingerprint {
    let mut marks = Vec::new();
    let mut mark = |path: PathBuf| {
        let meta = std::fs::metadata(&path).ok();
        let modified = meta.as_ref().and_then(|m| m.modified().ok());
        let (len, mode) = meta.map_or((0, 0), |m| (m.len(), m.permissions().mode()));
        marks.push((path, modified, len, mode));
    };
    for dir in [&settings.system_dir, &settings.user_dir]
        .into_iter()
        .flatten()
    {
        mark(dir.clone());
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                mark(entry.path());
            }
        }
    }
    marks.sort();
    marks
}

fn usage(what: &str) -> ExitCode {
    eprintln!("{what}");
    eprintln!("Run ikigai-tools mcp --help for the options.");
    ExitCode::from(exit::USAGE)
}

/// `HOST:PORT`, `[::1]:PORT` or a bare `PORT` (on 127.0.0.1).
pub fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    let bad = |why: String| format!("ikigai-tools mcp: invalid --http '{text}': {why}");
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    let mut addrs = text
        .to_socket_addrs()
        .map_err(|e| bad(format!("{e} (expected HOST:PORT, e.g. 127.0.0.1:8080)")))?;
    addrs
        .next()
        .ok_or_else(|| bad("the host has no address".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(parse_addr("8080"), Ok("127.0.0.1:8080".parse().unwrap()));
        assert_eq!(
            parse_addr("127.0.0.1:0"),
            Ok("127.0.0.1:0".parse().unwrap())
        );
        assert_eq!(parse_addr("[::1]:9"), Ok("[::1]:9".parse().unwrap()));
        for bad in ["", "x", "127.0.0.1", "1.2.3.4:99999"] {
            assert!(parse_addr(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sandbox_options() {
        let o = McpOptions::from_args(
            &["mcp"],
            &["--sandbox", "read-only", "--add-dir", "/tmp", "--network"],
        )
        .unwrap();
        assert_eq!(
            (o.sandbox, o.add_dir.len(), o.network),
            (Some(Mode::ReadOnly), 1, true)
        );
        let o = McpOptions::from_args(&["mcp"], &[]).unwrap();
        assert_eq!(o.sandbox, None);
        assert!(McpOptions::from_args(&["mcp"], &["--sandbox", "nope"]).is_err());
    }
}
