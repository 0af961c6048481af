//! The host's settings, read once: which directories hold tools (spec README,
//! decision 11), how long a tool call may run (local-tools.md, "Error Codes":
//! 30 s) and how much of its output the host keeps (decision 9: 1 MiB).
//! Command-line options win over environment variables, which win over the
//! defaults.

use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// The MCP servers' configuration: `--mcp-config`, `IKIGAI_MCP_CONFIG`
    /// or `~/.ikigai/mcp.json`; None starts no MCP server.
    pub mcp_config: Option<PathBuf>,
}

/// The options that override the environment for one run.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub libexec_dir: Option<PathBuf>,
    pub tools_dir: Option<PathBuf>,
    pub timeout: Option<Duration>,
    pub max_output: Option<usize>,
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
        let defaults = Limits::default();
        Settings {
            system_dir,
            user_dir,
            limits: Limits {
                timeout: overrides.timeout.unwrap_or(defaults.timeout),
                max_output: overrides.max_output.unwrap_or(defaults.max_output),
            },
            discovery_deadline: Duration::from_secs(1),
            mcp_config,
        }
    }

    /// The settings of this process: its environment and its own executable.
    pub fn from_process(overrides: Overrides) -> Settings {
        let exe = std::env::current_exe().ok();
        Settings::resolve(overrides, &Env::from_process(), exe.as_deref())
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

/// Parses `--max-output`: bytes, with an optional binary suffix (`64K`, `1M`,
/// `1MiB`).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    let unit: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => 0,
    };
    match digits.parse::<u64>() {
        Ok(n) if unit != 0 && n > 0 => n
            .checked_mul(unit)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| format!("invalid size '{text}': too large")),
        _ => Err(format!(
            "invalid size '{text}': expected a number of bytes above 0, optionally with K, M or G (e.g. 1048576 or 1M)"
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
            mcp_config: None,
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
    fn timeouts() {
        assert_eq!(parse_timeout("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_timeout("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_timeout("2s"), Ok(Duration::from_secs(2)));
        for bad in ["0", "-1", "x", "", "inf", "NaN", "100000"] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("2m"), Ok(2 << 20));
        for bad in ["0", "", "1T", "-5", "1.5M", "M"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_secs(Duration::from_secs(30)), "30s");
        assert_eq!(format_secs(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_secs(Duration::from_millis(250)), "0.25s");
    }
}
