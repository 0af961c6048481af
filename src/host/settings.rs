//! The host's settings, read once: which directories hold tools (decision
//! 11), how long a tool call may run (30 s) and how much of its output the
//! host keeps (decision 9: 1 MiB). Command-line options win over environment
//! variables, which win over the defaults. Also how each call is fenced and
//! contained (`SandboxSettings`) and which secrets a tool may still see
//! (`tool_env`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::mcp::client::config::ServerConfig;
use crate::sandbox::{Fence, Guard, Mode, Support};
pub use crate::size::parse_size;
use crate::tool::Env;

/// What one tool call may cost: its run time and the bytes kept of each of
/// its stdout and stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    pub max_output: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(30),
            max_output: 1 << 20,
        }
    }
}

/// Everything the host needs to know before it discovers or runs a tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// System tools: `PREFIX/libexec/ikigai`, `IKIGAI_LIBEXEC_DIR` or `--libexec-dir`.
    pub system_dir: Option<PathBuf>,
    /// User tools: `~/.ikigai/tools`, `IKIGAI_TOOLS_DIR` or `--tools-dir`;
    /// they shadow system tools of the same name.
    pub user_dir: Option<PathBuf>,
    pub limits: Limits,
    /// How long discovery waits for all `--schema` answers together.
    pub discovery_deadline: Duration,
    pub sandbox: SandboxSettings,
    /// Variables a tool gets although they look like secrets, by tool name
    /// (config `[tools.NAME] env = ["VAR"]`).
    pub tool_env: BTreeMap<String, Vec<String>>,
    /// The MCP servers' configuration: `--mcp-config`, `IKIGAI_MCP_CONFIG`
    /// or `~/.ikigai/mcp.json`; None starts no MCP server.
    pub mcp_config: Option<PathBuf>,
    /// A trusted project's `.mcp.json`, whose servers start beside those.
    pub project_mcp: Option<PathBuf>,
    /// Servers given besides the file's (an editor's, over ACP); a name the
    /// file already uses is the file's.
    pub mcp_servers: Vec<ServerConfig>,
}

/// How tool calls are fenced in and contained.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxSettings {
    /// `--sandbox` / `IKIGAI_SANDBOX` / config `sandbox`.
    pub mode: Mode,
    /// The directory the host was started in: writable in workspace-write.
    pub workspace: PathBuf,
    /// `--add-dir DIR` / config `add_dirs`: writable too.
    pub add_dirs: Vec<PathBuf>,
    /// `$TMPDIR` when set: writable too, with `/tmp`.
    pub tmpdir: Option<PathBuf>,
    /// `--network` / config `network`: every tool may open internet sockets.
    pub network: bool,
    /// Run every call through the containment process, even with the
    /// sandbox off (a confining mode always does). Off only where the
    /// running executable cannot be a containment process (unit tests).
    pub contain: bool,
    /// Have the sandbox's spawner make the containment processes (a host
    /// that makes many calls: the assistant, the MCP server). Off for one
    /// `ikigai call`, where starting the spawner would cost what it saves.
    pub spawner: bool,
    /// Why `mode` cannot be enforced on this kernel; None when it can.
    /// Calls then run with what the kernel supports, and every call that is
    /// not read-only needs the user's approval.
    pub unavailable: Option<String>,
    /// The secret paths, the read-only paths and the sockets of decisions
    /// 72, 75 and 76 (`guard`).
    pub guard: Guard,
    /// What this kernel cannot do of them, said at start.
    pub guard_gaps: Vec<String>,
    /// What each call may take (decision 81): config `[limits]`.
    pub limits: crate::sandbox::limits::Limits,
    /// The session bus where calls ask the person's systemd user manager
    /// for a scope each (`sandbox::scope`); None where there is none.
    pub scope_bus: Option<String>,
}

/// The usual places of credentials under the home directory (decision 72).
const SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
];

/// Readable although inside `~/.ssh`: what ssh and git need to connect.
const SSH_READABLE: &[&str] = &[".ssh/known_hosts", ".ssh/config"];

/// The shell and login start-up files and `authorized_keys`: code or keys
/// that take effect later, outside the sandbox (decision 76).
const START_UP: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".config/fish/config.fish",
    ".ssh/authorized_keys",
];

/// The guard for this environment: the secret paths, ikigai's own files,
/// the start-up files, the runtime sockets and the agent's socket
/// (decisions 72, 75, 76). `mcp_config` is where the MCP servers are read.
pub fn guard(env: &Env, mcp_config: Option<&Path>) -> Guard {
    let mut guard = Guard {
        namespace: true,
        ..Guard::default()
    };
    let home = env.home();
    if let Some(home) = &home {
        guard.hide.extend(SECRETS.iter().map(|p| home.join(p)));
        guard
            .allow_read
            .extend(SSH_READABLE.iter().map(|p| home.join(p)));
        guard.protect.extend(START_UP.iter().map(|p| home.join(p)));
        // The user's tools and the MCP servers' file.
        guard.protect.push(home.join(".ikigai"));
    }
    if let Some(config) = env.config_dir() {
        guard.hide.push(config.join("credentials.json"));
        guard.protect.push(config);
    }
    if let Some(file) = env.var("IKIGAI_CONFIG") {
        guard.protect.push(PathBuf::from(file));
    }
    let data = match env.var("XDG_DATA_HOME") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => home.as_ref().map(|h| h.join(".local").join("share")),
    };
    if let Some(data) = data {
        // Sessions, history, saved outputs and undo stores: hidden (every
        // session of every project), and read-only where a session's own
        // directory is given back to its calls.
        guard.protect.push(data.join("ikigai"));
        guard.hide.push(data.join("ikigai"));
    }
    // The MCP server's bearer tokens (decision 73): secret, beside what
    // tools may read there (the MCP server's saved outputs, the person's
    // tools, MCP servers and context modules).
    if let Some(runtime) = env.var("XDG_RUNTIME_DIR").filter(|r| !r.is_empty()) {
        let ours = PathBuf::from(runtime).join("ikigai");
        guard.allow_read.push(ours.join("mcp-outputs"));
        guard.hide.push(ours);
    }
    if let Some(home) = &home {
        let ours = home.join(".ikigai");
        for readable in ["tools", "mcp.json", "context", "mcp-outputs"] {
            guard.allow_read.push(ours.join(readable));
        }
        guard.hide.push(ours);
    }
    guard.protect.extend(mcp_config.map(Path::to_path_buf));
    guard.socket_dirs.push(PathBuf::from("/tmp/.X11-unix"));
    if let Some(runtime) = env.var("XDG_RUNTIME_DIR") {
        guard.socket_dirs.push(PathBuf::from(runtime));
    }
    if let Some(agent) = env.var("SSH_AUTH_SOCK") {
        guard.sockets.push(PathBuf::from(agent));
    }
    guard
}

/// Adds the config file's and the command line's paths to `guard`
/// (decisions 72, 75), the two lists adding up: `deny_read` to the secret
/// paths, `allow_read` and `--allow-read` given back, `allow_unix_sockets`
/// and `--allow-unix-socket` reachable. The error names the file and the
/// key, or the option.
pub fn add_guard_paths(
    guard: &mut Guard,
    config: &crate::config::Config,
    allow_read: &[PathBuf],
    sockets: &[PathBuf],
    env: &Env,
) -> Result<(), String> {
    for (key, option, from_file, from_options, list) in [
        ("deny_read", "", &config.deny_read, &[][..], &mut guard.hide),
        (
            "allow_read",
            "--allow-read",
            &config.allow_read,
            allow_read,
            &mut guard.allow_read,
        ),
        (
            "allow_unix_sockets",
            "--allow-unix-socket",
            &config.allow_unix_sockets,
            sockets,
            &mut guard.sockets,
        ),
    ] {
        for path in from_file {
            let path = parse_guard_path(path, env)
                .map_err(|e| format!("config: {}", config.error(key, None, &e)))?;
            list.push(path);
        }
        for path in from_options {
            list.push(parse_guard_path(path, env).map_err(|e| format!("{option}: {e}"))?);
        }
    }
    Ok(())
}

/// A path from the config file or the command line: `~/` is the home
/// directory; it must then be absolute.
pub fn parse_guard_path(text: &Path, env: &Env) -> Result<PathBuf, String> {
    let path = match (text.strip_prefix("~"), env.home()) {
        (Ok(rest), Some(home)) => home.join(rest),
        (Ok(_), None) => return Err(format!("'{}': HOME is not set", text.display())),
        (Err(_), _) => text.to_path_buf(),
    };
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(format!(
            "'{}' is not an absolute path (or one starting with ~/)",
            text.display()
        ))
    }
}

impl SandboxSettings {
    /// Where a call may write in workspace-write mode: the workspace, the
    /// added directories, `$TMPDIR`, `/tmp` and `/dev/shm`.
    pub fn writable(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.workspace.clone()];
        dirs.extend(self.add_dirs.iter().cloned());
        dirs.extend(self.tmpdir.iter().cloned());
        dirs.push(PathBuf::from("/tmp"));
        dirs.push(PathBuf::from(crate::sandbox::SHARED_MEMORY));
        let mut unique: Vec<PathBuf> = Vec::with_capacity(dirs.len());
        for dir in dirs {
            if !unique.contains(&dir) {
                unique.push(dir);
            }
        }
        unique
    }

    /// The fence of one call. `open_world`: the tool says it talks to the
    /// outside world (annotation `openWorldHint`); bash never gets the
    /// network by that alone, since it could do anything with it.
    pub fn fence(&self, tool: &str, open_world: bool) -> Fence {
        Fence {
            mode: self.mode,
            writable: match self.mode {
                Mode::WorkspaceWrite => self.writable(),
                Mode::ReadOnly | Mode::Off => Vec::new(),
            },
            network: self.network || self.mode == Mode::Off || (open_world && tool != "bash"),
            guard: self.guard.clone(),
            limits: self.limits,
            scope_bus: self.scope_bus.clone(),
        }
    }

    /// Takes the config file's `[limits]` over the defaults.
    pub fn take_limits(&mut self, config: &crate::config::Config) {
        let file = &config.limits;
        let limits = &mut self.limits;
        limits.processes = file.processes.unwrap_or(limits.processes);
        limits.memory = file.memory.map_or(limits.memory, |m| m as u64);
        limits.file_size = file.file_size.map_or(limits.file_size, |f| f as u64);
        limits.memory_total = file.memory_total.map_or(limits.memory_total, |m| m as u64);
    }
}

/// The options that override the environment for one run.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub libexec_dir: Option<PathBuf>,
    pub tools_dir: Option<PathBuf>,
    pub timeout: Option<Duration>,
    pub max_output: Option<usize>,
    /// `--sandbox`, already merged with `IKIGAI_SANDBOX` where that applies
    /// (see `sandbox_mode`).
    pub sandbox: Option<Mode>,
    pub add_dirs: Vec<PathBuf>,
    pub network: bool,
    pub mcp_config: Option<PathBuf>,
}

impl Settings {
    /// Resolves the settings from options, environment and the running
    /// executable's location (`<exe dir>/../libexec/ikigai`).
    pub fn resolve(overrides: Overrides, env: &Env, exe: Option<&Path>) -> Settings {
        let system_dir = overrides
            .libexec_dir
            .or_else(|| env.var("IKIGAI_LIBEXEC_DIR").map(PathBuf::from))
            .or_else(|| {
                // Canonical, so tool paths read `/x/libexec/ikigai/bash`,
                // not `/x/bin/../libexec/ikigai/bash`.
                let bin_dir = exe?.parent()?;
                let bin_dir = bin_dir.canonicalize().unwrap_or(bin_dir.to_path_buf());
                let prefix = bin_dir.parent().unwrap_or(&bin_dir);
                Some(prefix.join("libexec").join("ikigai"))
            });
        let user_dir = overrides
            .tools_dir
            .or_else(|| env.var("IKIGAI_TOOLS_DIR").map(PathBuf::from))
            .or_else(|| env.home().map(|h| h.join(".ikigai").join("tools")));
        let mcp_config = overrides
            .mcp_config
            .or_else(|| env.var("IKIGAI_MCP_CONFIG").map(PathBuf::from))
            .or_else(|| env.home().map(|h| h.join(".ikigai").join("mcp.json")));
        let guard = guard(env, mcp_config.as_deref());
        let defaults = Limits::default();
        Settings {
            system_dir,
            user_dir,
            limits: Limits {
                timeout: overrides.timeout.unwrap_or(defaults.timeout),
                max_output: overrides.max_output.unwrap_or(defaults.max_output),
            },
            discovery_deadline: Duration::from_secs(1),
            sandbox: SandboxSettings {
                // A personality that did not call `sandbox_mode` still gets
                // the variable (when valid) and the safe default.
                mode: overrides
                    .sandbox
                    .or_else(|| sandbox_mode(None, env, None, false).ok())
                    .unwrap_or(Mode::WorkspaceWrite),
                workspace: std::env::current_dir()
                    .and_then(|d| d.canonicalize())
                    .unwrap_or_else(|_| PathBuf::from(".")),
                add_dirs: overrides.add_dirs,
                tmpdir: env
                    .var("TMPDIR")
                    .map(PathBuf::from)
                    .filter(|d| d.is_absolute())
                    .map(|d| d.canonicalize().unwrap_or(d)),
                network: overrides.network,
                contain: true,
                spawner: true,
                unavailable: None,
                guard,
                guard_gaps: Vec::new(),
                limits: crate::sandbox::limits::Limits::default(),
                scope_bus: crate::sandbox::scope::session_bus(|k| env.var(k).map(String::from)),
            },
            tool_env: BTreeMap::new(),
            mcp_config,
            project_mcp: None,
            mcp_servers: Vec::new(),
        }
        .with_kernel_support(Support::detect())
    }

    /// Notes what the kernel cannot enforce of the chosen mode.
    pub fn with_kernel_support(mut self, support: Support) -> Settings {
        self.sandbox.unavailable = support.gap(self.sandbox.mode);
        self.sandbox.guard.namespace = support.namespaces;
        self.sandbox.guard_gaps = support.guard_gaps(self.sandbox.mode);
        self
    }

    /// The settings of this process: its environment and its own executable.
    pub fn from_process(overrides: Overrides) -> Settings {
        let exe = std::env::current_exe().ok();
        Settings::resolve(overrides, &Env::from_process(), exe.as_deref())
    }
}

/// The sandbox mode: `--sandbox` beats `IKIGAI_SANDBOX` beats the config
/// file beats the default, workspace-write. A single `ikigai call` is a person running one tool by
/// hand, so it runs unsandboxed unless `--sandbox` says otherwise.
pub fn sandbox_mode(
    option: Option<Mode>,
    env: &Env,
    file: Option<Mode>,
    single_call: bool,
) -> Result<Mode, String> {
    if let Some(mode) = option {
        return Ok(mode);
    }
    if single_call {
        return Ok(Mode::Off);
    }
    match env.var("IKIGAI_SANDBOX") {
        Some(text) => Mode::parse(text).map_err(|e| format!("IKIGAI_SANDBOX: {e}")),
        None => Ok(file.unwrap_or(Mode::WorkspaceWrite)),
    }
}

/// Parses `--add-dir`: an existing directory, made absolute and canonical
/// (the sandbox names it in the envelope and opens it per call).
pub fn parse_dir(text: &str) -> Result<PathBuf, String> {
    let path = Path::new(text);
    match path.canonicalize() {
        Ok(dir) if dir.is_dir() => Ok(dir),
        Ok(_) => Err(format!("'{text}' is not a directory")),
        Err(e) => Err(format!("cannot use directory '{text}': {e}")),
    }
}

/// Parses `--timeout`: seconds, fractions allowed (`0.5`), an optional `s`.
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let number = text.trim().trim_end_matches('s');
    match number.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 => {
            Ok(Duration::from_secs_f64(secs))
        }
        _ => Err(format!(
            "invalid timeout '{text}': expected seconds, more than 0 and at most 86400 (e.g. 30 or 0.5)"
        )),
    }
}

/// A duration as a person writes it: `30s`, `1.5s`.
pub fn format_secs(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        let text = format!("{secs:.3}");
        format!("{}s", text.trim_end_matches('0').trim_end_matches('.'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_beat_environment_beat_defaults() {
        let env = Env::from_pairs([("HOME", "/home/u"), ("IKIGAI_LIBEXEC_DIR", "/env/libexec")]);
        let c = Settings::resolve(Overrides::default(), &env, Some(Path::new("/p/bin/ikigai")));
        assert_eq!(c.system_dir, Some(PathBuf::from("/env/libexec")));
        assert_eq!(c.user_dir, Some(PathBuf::from("/home/u/.ikigai/tools")));
        assert_eq!(c.limits, Limits::default());
        assert_eq!(c.discovery_deadline, Duration::from_secs(1));

        let c = Settings::resolve(
            Overrides::default(),
            &Env::from_pairs([("IKIGAI_TOOLS_DIR", "/t")]),
            Some(Path::new("/p/bin/ikigai-tools")),
        );
        assert_eq!(c.system_dir, Some(PathBuf::from("/p/libexec/ikigai")));
        assert_eq!(c.user_dir, Some(PathBuf::from("/t")));

        let o = Overrides {
            libexec_dir: Some("/o/sys".into()),
            tools_dir: Some("/o/user".into()),
            timeout: Some(Duration::from_secs(2)),
            max_output: Some(10),
            ..Overrides::default()
        };
        let c = Settings::resolve(o, &env, None);
        assert_eq!(c.system_dir, Some(PathBuf::from("/o/sys")));
        assert_eq!(c.user_dir, Some(PathBuf::from("/o/user")));
        assert_eq!(c.limits.timeout, Duration::from_secs(2));
        assert_eq!(c.limits.max_output, 10);

        let c = Settings::resolve(Overrides::default(), &Env::default(), None);
        assert_eq!((c.system_dir, c.user_dir), (None, None));
    }

    #[test]
    fn sandbox_mode_sources() {
        let env = Env::from_pairs([("IKIGAI_SANDBOX", "read-only")]);
        let none = Env::default();
        assert_eq!(
            sandbox_mode(None, &none, None, false),
            Ok(Mode::WorkspaceWrite)
        );
        assert_eq!(sandbox_mode(None, &env, None, false), Ok(Mode::ReadOnly));
        assert_eq!(
            sandbox_mode(Some(Mode::Off), &env, None, false),
            Ok(Mode::Off)
        );
        // One call by hand: unsandboxed unless the option says otherwise.
        assert_eq!(sandbox_mode(None, &env, None, true), Ok(Mode::Off));
        assert_eq!(
            sandbox_mode(Some(Mode::ReadOnly), &none, None, true),
            Ok(Mode::ReadOnly)
        );
        let bad = Env::from_pairs([("IKIGAI_SANDBOX", "strict")]);
        let err = sandbox_mode(None, &bad, None, false).unwrap_err();
        assert!(
            err.starts_with("IKIGAI_SANDBOX: invalid sandbox mode 'strict'"),
            "{err}"
        );
    }

    #[test]
    fn fences_by_mode_and_tool() {
        let env = Env::from_pairs([("TMPDIR", "/nonexistent-tmp")]);
        let mut s = Settings::resolve(Overrides::default(), &env, None).sandbox;
        s.workspace = PathBuf::from("/w");
        s.add_dirs = vec![PathBuf::from("/extra"), PathBuf::from("/w")];
        assert_eq!(
            s.writable(),
            ["/w", "/extra", "/nonexistent-tmp", "/tmp", "/dev/shm"].map(PathBuf::from)
        );
        let bash = s.fence("bash", true);
        assert_eq!(bash.mode, Mode::WorkspaceWrite);
        assert_eq!(bash.writable, s.writable());
        assert!(!bash.network);
        assert!(s.fence("web_fetch", true).network);
        assert!(!s.fence("grep", false).network);
        s.mode = Mode::ReadOnly;
        assert!(s.fence("file_write", false).writable.is_empty());
        s.network = true;
        assert!(s.fence("bash", true).network);
    }

    #[test]
    fn kernel_gaps_are_noted_for_confining_modes_only() {
        let lacking = Support {
            landlock_abi: None,
            seccomp: true,
            namespaces: false,
            root: false,
        };
        let s = Settings::resolve(Overrides::default(), &Env::default(), None);
        let s = s.with_kernel_support(lacking);
        assert!(!s.sandbox.guard.namespace);
        assert!(s.sandbox.guard_gaps[0].contains("no user namespace"));
        assert!(s.sandbox.unavailable.unwrap().contains("Landlock"));
        let o = Overrides {
            sandbox: Some(Mode::Off),
            ..Overrides::default()
        };
        let s = Settings::resolve(o, &Env::default(), None).with_kernel_support(lacking);
        assert_eq!(s.sandbox.unavailable, None);
    }

    #[test]
    fn the_guard_names_the_secrets_ikigais_files_and_the_agent() {
        let env = Env::from_pairs([
            ("HOME", "/h"),
            ("XDG_RUNTIME_DIR", "/run/user/7"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
            ("IKIGAI_CONFIG", "/etc/ik.toml"),
        ]);
        let g = guard(&env, Some(Path::new("/h/.ikigai/mcp.json")));
        for p in [
            "/h/.ssh",
            "/h/.aws",
            "/h/.netrc",
            "/h/.config/ikigai/credentials.json",
            "/h/.local/share/ikigai",
            "/run/user/7/ikigai",
            "/h/.ikigai",
        ] {
            assert!(g.hide.contains(&PathBuf::from(p)), "{p}");
        }
        for p in [
            "/h/.ssh/known_hosts",
            "/run/user/7/ikigai/mcp-outputs",
            "/h/.ikigai/tools",
            "/h/.ikigai/mcp.json",
        ] {
            assert!(g.allow_read.contains(&PathBuf::from(p)), "{p}");
        }
        for p in [
            "/h/.bashrc",
            "/h/.ssh/authorized_keys",
            "/h/.config/ikigai",
            "/h/.local/share/ikigai",
            "/etc/ik.toml",
            "/h/.ikigai/mcp.json",
        ] {
            assert!(g.protect.contains(&PathBuf::from(p)), "{p}");
        }
        assert!(g.socket_dirs.contains(&PathBuf::from("/run/user/7")));
        assert_eq!(g.sockets, [PathBuf::from("/tmp/ssh-x/agent.1")]);
        assert_eq!(
            parse_guard_path(Path::new("~/x"), &env),
            Ok(PathBuf::from("/h/x"))
        );
        assert!(parse_guard_path(Path::new("rel"), &env)
            .unwrap_err()
            .contains("not an absolute path"));
    }

    #[test]
    fn added_directories_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let canonical = dir.path().canonicalize().unwrap();
        assert_eq!(parse_dir(dir.path().to_str().unwrap()), Ok(canonical));
        assert!(parse_dir("/nonexistent/dir")
            .unwrap_err()
            .contains("/nonexistent/dir"));
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert!(parse_dir(file.to_str().unwrap())
            .unwrap_err()
            .contains("not a directory"));
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_timeout("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_timeout("2s"), Ok(Duration::from_secs(2)));
        for bad in ["0", "-1", "x", "", "inf", "NaN", "100000"] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_secs(Duration::from_secs(30)), "30s");
        assert_eq!(format_secs(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_secs(Duration::from_millis(250)), "0.25s");
    }
}
