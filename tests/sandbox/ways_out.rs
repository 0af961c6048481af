//! Ways out of the sandbox (decisions 71, 72, 75, 76), tried the way a
//! model would try them, through the real binary: `ikigai call` (one
//! `sandbox-exec` per call) and `ikigai-tools mcp` (the spawner and the
//! worker). Each test runs as the user running the tests and, when that
//! is root (CI), again as an unprivileged user through `setpriv`.
//!
//! Where a refusal could come from something else than the fence (a file
//! mode, a missing capability), the test makes that other reason absent
//! (the files belong to the user; the sockets are mode 0777), and where it
//! is cheap the same probe is also run with `--sandbox off` to show that
//! the probe itself works.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::{bin, unwritable_by_default, Output};

/// The unprivileged user of the second run.
pub(super) const NOBODY: u32 = 65534;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Who {
    /// The user running the tests (root on CI).
    Me,
    /// `nobody`, through setpriv (only when the tests run as root).
    Nobody,
}

/// The users to try: the runner, and nobody when the runner is root and
/// setpriv is there. None (with the reason) without Landlock.
pub(super) fn users() -> Vec<Who> {
    if super::landlock().is_none() {
        return Vec::new();
    }
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    if root && !setpriv {
        eprintln!("setpriv is missing: the unprivileged run is skipped");
    }
    let mut users = vec![Who::Me];
    if root && setpriv {
        users.push(Who::Nobody);
    }
    users
}

fn has_python() -> bool {
    Command::new("python3").arg("-V").output().is_ok()
}

/// A home directory with secrets and start-up files, a workspace (a git
/// repository) beside it, a directory outside both, and a tools directory.
pub(super) struct Place {
    _tmp: tempfile::TempDir,
    pub(super) home: PathBuf,
    pub(super) ws: PathBuf,
    pub(super) outside: PathBuf,
    pub(super) tools: PathBuf,
    pub(super) who: Who,
    /// Limits set from outside on the host (`prlimit` options), so that a
    /// test of the call's own limits cannot exhaust the machine when they
    /// fail to hold.
    pub(super) outer: Vec<String>,
    /// Variables added to the plain environment of what runs here.
    pub(super) env: Vec<(String, String)>,
    /// A command that starts what runs here, as this place's user (a
    /// scope of the user's systemd manager, as a desktop's terminal is).
    pub(super) launcher: Vec<String>,
}

pub(super) const SECRET_FILES: &[&str] = &[
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".netrc",
    ".config/ikigai/credentials.json",
    ".git-credentials",
    "private.txt",
];

impl Place {
    pub(super) fn new(who: Who) -> Place {
        let tmp = unwritable_by_default();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let home = root.join("home");
        let ws = root.join("ws");
        let outside = root.join("outside");
        let tools = root.join("tools");
        for dir in [
            home.join(".ssh"),
            home.join(".aws"),
            home.join(".config/ikigai"),
            ws.clone(),
            outside.clone(),
            tools.clone(),
            root.join("libexec"),
        ] {
            std::fs::create_dir_all(dir).unwrap();
        }
        for file in SECRET_FILES {
            std::fs::write(home.join(file), format!("SECRET-{file}\n")).unwrap();
        }
        std::fs::write(home.join(".ssh/known_hosts"), "KNOWN-HOSTS-LINE\n").unwrap();
        std::fs::write(home.join(".ssh/authorized_keys"), "AUTHORIZED\n").unwrap();
        std::fs::write(home.join(".bashrc"), "BASHRC\n").unwrap();
        std::fs::write(
            home.join(".config/ikigai/config.toml"),
            "sandbox = \"workspace-write\"\nallow_read = [\"~/.git-credentials\"]\n\
             deny_read = [\"~/private.txt\"]\n",
        )
        .unwrap();
        for name in ["bash", "file_read", "file_write", "ikigai"] {
            std::os::unix::fs::symlink(bin(), tools.join(name)).unwrap();
        }
        let git = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&ws)
            .status();
        assert!(git.is_ok_and(|s| s.success()), "git init");
        if who == Who::Nobody {
            let status = Command::new("chown")
                .args(["-R", &format!("{NOBODY}:{NOBODY}")])
                .arg(&root)
                .status()
                .unwrap();
            assert!(status.success());
        }
        Place {
            _tmp: tmp,
            home,
            ws,
            outside,
            tools,
            who,
            outer: Vec::new(),
            env: Vec::new(),
            launcher: Vec::new(),
        }
    }

    /// `program` run as this place's user, with a plain environment.
    pub(super) fn command(&self, program: &Path) -> Command {
        let mut argv: Vec<std::ffi::OsString> = Vec::new();
        if !self.outer.is_empty() {
            argv.push("prlimit".into());
            argv.extend(self.outer.iter().map(Into::into));
            argv.push("--".into());
        }
        if self.who == Who::Nobody {
            argv.extend(
                [
                    "setpriv".to_string(),
                    format!("--reuid={NOBODY}"),
                    format!("--regid={NOBODY}"),
                    "--clear-groups".to_string(),
                    "--".to_string(),
                ]
                .map(Into::into),
            );
        }
        argv.extend(self.launcher.iter().map(Into::into));
        argv.push(program.into());
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        cmd.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
            .env("HOME", &self.home)
            .env("TMPDIR", &self.ws)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.ws);
        cmd
    }

    /// `ikigai --sandbox workspace-write OPTIONS call TOOL ARGS` in `dir`.
    pub(super) fn call_in(
        &self,
        dir: &Path,
        options: &[&str],
        tool: &str,
        args: Value,
    ) -> (Value, Output) {
        let mut cmd = self.command(&self.tools.join("ikigai"));
        cmd.current_dir(dir)
            .args(["--tools-dir"])
            .arg(&self.tools)
            .arg("--libexec-dir")
            .arg(self.tools.parent().unwrap().join("libexec"))
            .args(["--sandbox", "workspace-write"])
            .args(options)
            .args(["call", tool, &args.to_string()]);
        let out = output(cmd);
        (out.json(), out)
    }

    pub(super) fn bash_in(&self, dir: &Path, options: &[&str], command: &str) -> String {
        let (envelope, out) = self.call_in(dir, options, "bash", json!({ "command": command }));
        envelope["result"]["output"]
            .as_str()
            .unwrap_or_else(|| panic!("{out:?}"))
            .to_string()
    }

    pub(super) fn bash(&self, options: &[&str], command: &str) -> String {
        self.bash_in(&self.ws, options, command)
    }
}

pub(super) fn output(mut cmd: Command) -> Output {
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

// Decision 71: root without privileges.

#[test]
fn a_tool_has_no_capability_and_cannot_read_the_hosts_memory() {
    for who in users() {
        let p = Place::new(who);
        let mut cmd = p.command(&p.tools.join("ikigai"));
        // The host: the parent of the containment process, which is the
        // parent of the tool process, which is the parent of sh.
        let script = "h=$(awk '/^PPid/{print $2}' /proc/$PPID/status); \
                      h=$(awk '/^PPid/{print $2}' /proc/$h/status); \
                      grep CapEff /proc/self/status; grep CapBnd /proc/self/status; \
                      tr '\\0' '\\n' < /proc/$h/environ; echo environ=$?; \
                      head -c 16 /proc/$h/mem; echo mem=$?; id -u";
        cmd.env("OPENAI_API_KEY", "sk-ways-out-host-key")
            .args(["--tools-dir"])
            .arg(&p.tools)
            .args(["--sandbox", "workspace-write", "call", "bash"])
            .arg(json!({ "command": script }).to_string());
        let out = output(cmd);
        let text = out.json()["result"]["output"]
            .as_str()
            .unwrap_or_else(|| panic!("{out:?}"))
            .to_string();
        assert!(
            text.contains("CapEff:\t0000000000000000"),
            "{who:?}: {text}"
        );
        assert!(
            text.contains("CapBnd:\t0000000000000000"),
            "{who:?}: {text}"
        );
        assert!(!text.contains("sk-ways-out-host-key"), "{who:?}: {text}");
        assert!(
            text.contains("environ: Permission denied"),
            "{who:?}: {text}"
        );
        let mem = text.lines().find(|l| l.contains("/mem")).unwrap_or("");
        assert!(mem.contains("Permission denied"), "{who:?}: {text}");
        assert!(
            !text.contains("environ=0") && !text.contains("mem=0"),
            "{who:?}: {text}"
        );
        let uid = if who == Who::Nobody {
            NOBODY
        } else {
            // SAFETY: geteuid cannot fail.
            unsafe { libc::geteuid() }
        };
        assert!(
            text.trim_end().ends_with(&uid.to_string()),
            "{who:?}: {text}"
        );
        // Our own tool runs in sandbox-exec's process, non-dumpable as its
        // containment process was: its /proc files are root's, so an
        // ordinary user (root owns them anyway) reads not even its own.
        if who == Who::Nobody {
            let environ = json!({ "file_path": "/proc/self/environ" });
            let (envelope, _) = p.call_in(&p.ws, &[], "file_read", environ);
            assert_eq!(
                envelope["result"]["error_code"], "PERMISSION_DENIED",
                "{envelope}"
            );
        }
    }
}

// Decision 72: secrets on disk.

#[test]
fn secret_paths_are_unreadable_every_way_until_given_back() {
    for who in users() {
        let p = Place::new(who);
        let text = p.bash(
            &[],
            "cat ~/.ssh/id_ed25519; ln -s ~/.ssh/id_ed25519 link; cat link; \
             cp ~/.aws/credentials copy; cat copy; tar cf t.tar -C ~ .netrc .aws; tar xOf t.tar; \
             grep -r SECRET ~; cat ~/private.txt ~/.config/ikigai/credentials.json; \
             cat ~/.ssh/known_hosts; cat ~/.git-credentials",
        );
        for file in SECRET_FILES {
            if *file == ".git-credentials" {
                // Given back by the config file's allow_read.
                assert!(text.contains(&format!("SECRET-{file}")), "{who:?}: {text}");
            } else {
                assert!(!text.contains(&format!("SECRET-{file}")), "{who:?}: {text}");
            }
        }
        assert!(text.contains("Permission denied"), "{who:?}: {text}");
        assert!(text.contains("KNOWN-HOSTS-LINE"), "{who:?}: {text}");

        let secret = p.home.join(".aws/credentials");
        let (envelope, _) = p.call_in(&p.ws, &[], "file_read", json!({ "file_path": secret }));
        assert!(!envelope.to_string().contains("SECRET-"), "{envelope}");
        let refuses = envelope["sandbox"]["refuses"].to_string();
        assert!(
            refuses.contains(".aws") && refuses.contains("--allow-read"),
            "{envelope}"
        );

        // --allow-read gives one back.
        let allow = secret.to_str().unwrap();
        let text = p.bash(&["--allow-read", allow], "cat ~/.aws/credentials ~/.netrc");
        assert!(text.contains("SECRET-.aws/credentials"), "{text}");
        assert!(!text.contains("SECRET-.netrc"), "{text}");
    }
}

/// An MCP server over the place's tools and a function that calls one
/// tool and returns the text the client sees.
pub(super) fn mcp(
    p: &Place,
    options: &[&str],
) -> (std::process::Child, impl FnMut(&str, Value) -> String) {
    let mut cmd = p.command(&bin());
    cmd.arg("mcp")
        .args(options)
        .arg("--tools-dir")
        .arg(&p.tools)
        .arg("--libexec-dir")
        .arg(p.tools.parent().unwrap().join("libexec"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut server = cmd.spawn().unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let mut id = 0;
    let call = move |tool: &str, arguments: Value| {
        id += 1;
        let mut request = String::new();
        if id == 1 {
            request = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}})
            .to_string()
                + "\n";
        }
        request += &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}})
        .to_string();
        stdin.write_all(format!("{request}\n").as_bytes()).unwrap();
        loop {
            let line = lines.next().expect("an answer").unwrap();
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == id {
                return answer["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{answer}"))
                    .to_string();
            }
        }
    };
    (server, call)
}

#[test]
fn secret_paths_are_unreadable_through_mcp_too() {
    for who in users() {
        let p = Place::new(who);
        let aws = p.home.join(".aws/credentials");
        let allow = ["--allow-read", aws.to_str().unwrap()];
        let (mut server, mut call) = mcp(&p, &allow);
        for _ in 0..2 {
            // file_read runs in a worker, bash by the spawner.
            let secret = p.home.join(".ssh/id_ed25519");
            let text = call("file_read", json!({ "file_path": secret }));
            assert!(!text.contains("SECRET-"), "{who:?}: {text}");
            let known = p.home.join(".ssh/known_hosts");
            let text = call("file_read", json!({ "file_path": known }));
            assert!(text.contains("KNOWN-HOSTS-LINE"), "{who:?}: {text}");
            let text = call(
                "bash",
                json!({"command": "cat ~/.netrc; grep -r SECRET ~/.ssh"}),
            );
            assert!(!text.contains("SECRET-"), "{who:?}: {text}");
            assert!(text.contains("Permission denied"), "{who:?}: {text}");
            // The config file's deny_read and allow_read, and --allow-read.
            let text = call(
                "bash",
                json!({"command": "cat ~/private.txt ~/.git-credentials ~/.aws/credentials"}),
            );
            assert!(!text.contains("SECRET-private.txt"), "{who:?}: {text}");
            assert!(text.contains("SECRET-.git-credentials"), "{who:?}: {text}");
            assert!(text.contains("SECRET-.aws/credentials"), "{who:?}: {text}");
            let private = p.home.join("private.txt");
            let text = call("file_read", json!({ "file_path": private }));
            assert!(!text.contains("SECRET-"), "{who:?}: {text}");
            let given = p.home.join(".git-credentials");
            let text = call("file_read", json!({ "file_path": given }));
            assert!(text.contains("SECRET-.git-credentials"), "{who:?}: {text}");
        }
        server.kill().unwrap();
        server.wait().unwrap();
    }
}

// Decision 75: sockets, signals, the terminal.

fn listen(path: &Path) -> UnixListener {
    let l = UnixListener::bind(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
    l
}

#[test]
fn unix_sockets_outside_the_workspace_are_refused_but_the_agents() {
    if !has_python() {
        eprintln!("skipped: no python3 to connect with");
        return;
    }
    for who in users() {
        let p = Place::new(who);
        let served = p.outside.join("daemon.sock");
        let agent = p.outside.join("agent.sock");
        let extra = p.outside.join("extra.sock");
        let _listeners = [listen(&served), listen(&agent), listen(&extra)];
        let name = format!("ikigai-ways-out-{}-{who:?}", std::process::id());
        let abstract_addr =
            std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        use std::os::linux::net::SocketAddrExt;
        let _abstract = UnixListener::bind_addr(&abstract_addr).unwrap();
        let script = format!(
            "python3 -c \"\nimport socket\ndef t(n, a):\n    s = socket.socket(socket.AF_UNIX)\n    \
             try:\n        s.connect(a); print(n, 'connected')\n    \
             except OSError as e: print(n, 'refused', e.errno)\n\
             t('daemon', '{}')\nt('agent', '{}')\nt('extra', '{}')\nt('abstract', '\\0{name}')\n\
             l = socket.socket(socket.AF_UNIX); l.bind('inside.sock'); l.listen()\nt('inside', 'inside.sock')\n\
             m = socket.socket(socket.AF_UNIX); m.bind('\\0{name}-own'); m.listen()\nt('own', '\\0{name}-own')\n\"",
            served.display(),
            agent.display(),
            extra.display(),
        );
        let run = |options: &[&str]| {
            let _ = std::fs::remove_file(p.ws.join("inside.sock"));
            let mut cmd = p.command(&p.tools.join("ikigai"));
            cmd.env("SSH_AUTH_SOCK", &agent)
                .args(["--tools-dir"])
                .arg(&p.tools)
                .args(options)
                .args(["call", "bash"])
                .arg(json!({ "command": script }).to_string());
            let out = output(cmd);
            out.json()["result"]["output"]
                .as_str()
                .unwrap_or_else(|| panic!("{out:?}"))
                .to_string()
        };
        let extra_text = extra.to_str().unwrap();
        let text = run(&[
            "--sandbox",
            "workspace-write",
            "--allow-unix-socket",
            extra_text,
        ]);
        for line in [
            "daemon refused 13",
            "agent connected",
            "extra connected",
            "abstract refused",
            "inside connected",
            "own connected",
        ] {
            assert!(text.contains(line), "{who:?}: {line}: {text}");
        }
        // Without --allow-unix-socket the extra one is refused too; with
        // the network on, nothing changes.
        let text = run(&["--sandbox", "workspace-write", "--network"]);
        assert!(text.contains("extra refused 13"), "{who:?}: {text}");
        assert!(text.contains("daemon refused 13"), "{who:?}: {text}");
        // The probe itself reaches them all unsandboxed.
        let text = run(&["--sandbox", "off"]);
        assert!(text.contains("daemon connected"), "{who:?}: {text}");
        assert!(text.contains("abstract connected"), "{who:?}: {text}");
    }
}

#[test]
fn signals_reach_only_the_calls_own_processes() {
    for who in users() {
        let p = Place::new(who);
        let mut outside = p.command(Path::new("/bin/sleep"));
        let mut victim = outside.arg("30").spawn().unwrap();
        let pid = victim.id();
        let text = p.bash(
            &[],
            &format!(
                "kill -STOP {pid}; echo stop=$?; kill -9 {pid}; echo kill=$?; \
                 sleep 10 & kill $!; echo own=$?"
            ),
        );
        assert!(text.contains("stop=1"), "{who:?}: {text}");
        assert!(text.contains("kill=1"), "{who:?}: {text}");
        assert!(text.contains("own=0"), "{who:?}: {text}");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let state = stat.rsplit(')').next().unwrap().split_whitespace().next();
        assert_eq!(state, Some("S"), "{stat}");
        assert!(victim.try_wait().unwrap().is_none());
        victim.kill().unwrap();
        victim.wait().unwrap();
    }
}

/// Bytes waiting to be read on a terminal's input.
fn pending(fd: libc::c_int) -> libc::c_int {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int.
    unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
    n
}

#[test]
fn a_tool_cannot_type_into_the_terminal() {
    if !has_python() {
        eprintln!("skipped: no python3 to call ioctl with");
        return;
    }
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let legacy =
        std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").is_ok_and(|v| v.trim() == "1");
    for who in users() {
        let p = Place::new(who);
        let (_master, slave) = crate::common::openpty();
        // Raw, so that FIONREAD counts a byte without a line's end.
        // SAFETY: termios calls on a descriptor we own, with a zeroed
        // struct that tcgetattr fills.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            libc::tcgetattr(slave.as_raw_fd(), &mut t);
            libc::cfmakeraw(&mut t);
            libc::tcsetattr(slave.as_raw_fd(), libc::TCSANOW, &t);
        }
        if who == Who::Nobody {
            // SAFETY: fchown on a descriptor we own.
            unsafe { libc::fchown(slave.as_raw_fd(), NOBODY, NOBODY) };
        }
        let script = "python3 -c \"\nimport fcntl, termios, os\nfd = os.open('/dev/tty', os.O_RDWR)\n\
                      for request in (termios.TIOCSTI, 0x541C):\n    try:\n        \
                      fcntl.ioctl(fd, request, b'\\x0c' if request != termios.TIOCSTI else b'Z'); print('pushed')\n    \
                      except OSError as e: print('refused', e.errno)\n\"";
        let run = |mode: &str| {
            let slave_fd = slave.as_raw_fd();
            let mut cmd = p.command(&p.tools.join("ikigai"));
            cmd.args(["--tools-dir"])
                .arg(&p.tools)
                .args(["--sandbox", mode, "call", "bash"])
                .arg(json!({ "command": script }).to_string());
            // SAFETY: between fork and exec: setsid and TIOCSCTTY only,
            // making the pty the host's controlling terminal.
            unsafe {
                cmd.pre_exec(move || {
                    libc::setsid();
                    libc::ioctl(slave_fd, libc::TIOCSCTTY, 0);
                    Ok(())
                });
            }
            let out = output(cmd);
            out.json()["result"]["output"]
                .as_str()
                .unwrap_or_else(|| panic!("{out:?}"))
                .to_string()
        };
        let text = run("workspace-write");
        assert_eq!(text.matches("refused 1").count(), 2, "{who:?}: {text}");
        assert_eq!(pending(slave.as_raw_fd()), 0, "{who:?}: {text}");
        if legacy {
            let text = run("off");
            assert!(text.contains("pushed"), "{who:?}: {text}");
            assert!(pending(slave.as_raw_fd()) > 0, "{who:?}: {text}");
        }
    }
}

#[test]
fn packet_and_raw_sockets_are_refused_with_or_without_the_network() {
    if !has_python() {
        eprintln!("skipped: no python3 to open sockets with");
        return;
    }
    for who in users() {
        let p = Place::new(who);
        let script = "python3 -c \"\nimport socket\nfor f, t in ((socket.AF_PACKET, socket.SOCK_RAW), (socket.AF_INET, socket.SOCK_RAW)):\n    \
                      try:\n        socket.socket(f, t); print('opened')\n    \
                      except OSError as e: print('refused', e.errno)\n\"";
        let text = p.bash(&[], script);
        // EACCES is the filter's; a missing capability would be EPERM.
        assert_eq!(text.matches("refused 13").count(), 2, "{who:?}: {text}");
        let text = p.bash(&["--network"], script);
        assert!(text.starts_with("refused 13"), "{who:?}: {text}");
    }
}

// Decision 76: code that runs later, and the rules themselves.

#[test]
fn git_hooks_and_config_are_read_only_while_commits_work() {
    for who in users() {
        let p = Place::new(who);
        let text = p.bash(
            &[],
            "echo 'touch /tmp/pwned' > .git/hooks/pre-commit; echo hook=$?; \
             git config core.fsmonitor 'touch /tmp/pwned'; echo config=$?; \
             echo a > f && git add f && git -c user.name=t -c user.email=t@e commit -qm one \
             && echo committed",
        );
        assert!(
            text.contains("hook=2") || text.contains("hook=1"),
            "{who:?}: {text}"
        );
        assert!(!text.contains("config=0"), "{who:?}: {text}");
        assert!(text.contains("committed"), "{who:?}: {text}");
        assert!(!p.ws.join(".git/hooks/pre-commit").exists());
        let config = std::fs::read_to_string(p.ws.join(".git/config")).unwrap();
        assert!(!config.contains("fsmonitor"), "{config}");
        let log = Command::new("git")
            .args(["-c", "safe.directory=*", "log", "--oneline"])
            .current_dir(&p.ws)
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&log.stdout).contains("one"));
    }
}

#[test]
fn from_home_the_rules_and_start_up_files_stay_read_only() {
    for who in users() {
        let p = Place::new(who);
        let mut cmd = p.command(&p.tools.join("ikigai"));
        cmd.current_dir(&p.home)
            .args(["--tools-dir"])
            .arg(&p.tools)
            .args(["--sandbox", "workspace-write", "call", "bash"])
            .arg(
                json!({ "command": "echo 'sandbox = \"off\"' > ~/.config/ikigai/config.toml; \
                    echo evil >> ~/.bashrc; echo key >> ~/.ssh/authorized_keys; \
                    echo fine > ~/ordinary && echo wrote" })
                .to_string(),
            );
        let out = output(cmd);
        let text = out.json()["result"]["output"].as_str().unwrap().to_string();
        assert!(text.contains("wrote"), "{who:?}: {text}");
        assert_eq!(
            std::fs::read_to_string(p.home.join("ordinary")).unwrap(),
            "fine\n"
        );
        assert_eq!(
            std::fs::read_to_string(p.home.join(".bashrc")).unwrap(),
            "BASHRC\n"
        );
        let authorized = std::fs::read_to_string(p.home.join(".ssh/authorized_keys")).unwrap();
        assert_eq!(authorized, "AUTHORIZED\n");
        let config = std::fs::read_to_string(p.home.join(".config/ikigai/config.toml")).unwrap();
        assert!(!config.contains("off"), "{config}");
        assert!(
            out.stderr.contains("your home directory") && out.stderr.contains("read-only"),
            "{}",
            out.stderr
        );
        // Started inside ikigai's own directory: still read-only, relative
        // paths included.
        let own = p.home.join(".config/ikigai");
        let text = p.bash_in(
            &own,
            &[],
            "echo x > config.toml; echo y > new.txt; echo done",
        );
        assert!(text.contains("Read-only file system"), "{who:?}: {text}");
        assert!(!own.join("new.txt").exists(), "{who:?}: {text}");
        let config = std::fs::read_to_string(own.join("config.toml")).unwrap();
        assert!(config.starts_with("sandbox = "), "{config}");
    }
}

#[test]
fn sandbox_check_lists_the_guards() {
    for who in users() {
        let p = Place::new(who);
        let mut cmd = p.command(&p.tools.join("ikigai"));
        cmd.args(["sandbox", "check"]);
        let out = output(cmd);
        assert_eq!(out.code, 0, "{out:?}");
        let home = p.home.display().to_string();
        for says in [
            format!("{home}/.ssh"),
            format!("{home}/private.txt"),
            format!("{home}/.ssh/known_hosts"),
            format!("{home}/.git-credentials"),
            format!("{home}/.bashrc"),
            "no TIOCSTI".to_string(),
        ] {
            assert!(
                out.stdout.contains(&says),
                "{who:?}: {says}: {}",
                out.stdout
            );
        }
        let root = out.stdout.contains("every capability is dropped");
        // SAFETY: geteuid cannot fail.
        let me_root = unsafe { libc::geteuid() } == 0;
        assert_eq!(root, who == Who::Me && me_root);
    }
}
