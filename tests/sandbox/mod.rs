//! The fence around tool calls, run as users run it: `ikigai call` and the
//! assistant over tool directories holding links to our binary. What the
//! sandbox refuses (writes outside the workspace, internet sockets), what a
//! tool may see of the host's secrets, what the host writes to disk, and that
//! no process a call starts outlives it, even when the host is SIGKILLed.
//!
//! Tests of the file and network rules need Landlock; on a kernel without
//! it they say so and pass without asserting (the test asks the kernel
//! itself, never the binary under test).

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::model_server::{Api, ModelServer, Reply, KEY};
use crate::common::{bin, run, Output, Run};
use crate::host::{Dirs, Pid};

/// The kernel's Landlock ABI, asked of the kernel; None (with the reason
/// printed) when it has none, and the test should not assert.
pub(crate) fn landlock() -> Option<i64> {
    // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) only returns a number.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    if abi > 0 {
        Some(abi)
    } else {
        eprintln!(
            "skipped: this kernel has no Landlock ({}), so the sandbox cannot be tested here",
            std::io::Error::last_os_error()
        );
        None
    }
}

/// A workspace outside /tmp (which every workspace-write call may write),
/// with a sibling directory outside it, and tool directories holding our
/// bash and file_write.
struct World {
    _root: tempfile::TempDir,
    dirs: Dirs,
    ws: PathBuf,
    outside: PathBuf,
}

impl World {
    fn new() -> World {
        let root = crate::common::unwritable_by_default();
        let ws = root.path().join("ws");
        let outside = root.path().join("outside");
        std::fs::create_dir(&ws).unwrap();
        std::fs::create_dir(&outside).unwrap();
        let dirs = Dirs::new();
        for tool in ["bash", "file_write"] {
            dirs.link(&dirs.sys, tool, bin());
        }
        World {
            ws: ws.canonicalize().unwrap(),
            outside: outside.canonicalize().unwrap(),
            _root: root,
            dirs,
        }
    }

    /// `ikigai OPTIONS call NAME ARGS` started in the workspace, with
    /// TMPDIR inside it (so only the workspace and /tmp are writable).
    fn call(&self, options: &[&str], name: &str, args: Value) -> Value {
        self.ikigai()
            .args(options)
            .args(["call", name, &args.to_string()])
            .output()
            .json()
    }

    fn ikigai(&self) -> Run {
        self.dirs
            .ikigai()
            .env("TMPDIR", &self.ws)
            .env_remove("IKIGAI_SANDBOX")
            .dir(&self.ws)
    }

    fn bash(&self, options: &[&str], command: &str) -> Value {
        self.call(options, "bash", json!({ "command": command }))
    }

    /// A file `secret` in the workspace, and the `sandbox-exec` arguments
    /// (up to, not including, `--`) of workspace-write over the workspace
    /// with that file hidden: a call that makes the namespace and its
    /// holder.
    fn fence_hiding_a_secret(&self) -> (PathBuf, Vec<OsString>) {
        let secret = self.ws.join("secret");
        std::fs::write(&secret, "s").unwrap();
        let args = ["sandbox-exec", "--mode", "workspace-write", "--writable"]
            .map(OsString::from)
            .into_iter()
            .chain([
                self.ws.clone().into(),
                "--hide".into(),
                secret.clone().into(),
            ])
            .collect();
        (secret, args)
    }
}

fn output_of(envelope: &Value) -> &str {
    envelope["result"]["output"]
        .as_str()
        .unwrap_or_else(|| panic!("{envelope}"))
}

// Secrets.

#[test]
fn secrets_never_reach_a_tool_through_call() {
    let w = World::new();
    let envelope = w
        .ikigai()
        .env("OPENAI_API_KEY", "sk-test-openai-secret")
        .env("GITHUB_TOKEN", "ghp-test-token")
        .env("db_password", "hunter2-test")
        .env("SSH_AUTH_SOCK", "/run/agent.sock")
        .env("PLAIN_SETTING", "visible")
        .args(["call", "bash", r#"{"command": "env"}"#])
        .output()
        .json();
    let env = output_of(&envelope);
    for secret in ["sk-test-openai-secret", "ghp-test-token", "hunter2-test"] {
        assert!(!env.contains(secret), "{secret} reached the tool: {env}");
    }
    assert!(env.contains("SSH_AUTH_SOCK=/run/agent.sock"), "{env}");
    assert!(env.contains("PLAIN_SETTING=visible"), "{env}");
}

#[test]
fn the_search_tools_get_their_own_keys_only() {
    let w = World::new();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sandbox/env.sh");
    for name in ["web_search_brave", "web_search_google", "other"] {
        w.dirs.link(&w.dirs.user, name, &script);
    }
    let names = |tool: &str| -> String {
        let envelope = w
            .ikigai()
            .env("OPENAI_API_KEY", "x")
            .env("BRAVE_API_KEY", "x")
            .env("GOOGLE_SEARCH_API_KEY", "x")
            .env("GOOGLE_SEARCH_ENGINE_ID", "x")
            .args(["call", tool, "{}"])
            .output()
            .json();
        envelope["result"]["names"]
            .as_str()
            .unwrap_or_else(|| panic!("{envelope}"))
            .to_string()
    };
    let brave = names("web_search_brave");
    assert!(brave.contains(" BRAVE_API_KEY "), "{brave}");
    assert!(!brave.contains(" GOOGLE_SEARCH_API_KEY "), "{brave}");
    let google = names("web_search_google");
    assert!(google.contains(" GOOGLE_SEARCH_API_KEY "), "{google}");
    assert!(google.contains(" GOOGLE_SEARCH_ENGINE_ID "), "{google}");
    assert!(!google.contains(" BRAVE_API_KEY "), "{google}");
    let other = names("other");
    assert!(!other.contains("_API_KEY "), "{other}");
    assert!(other.contains(" GOOGLE_SEARCH_ENGINE_ID "), "{other}");
    for list in [brave, google, other] {
        assert!(!list.contains(" OPENAI_API_KEY "), "{list}");
    }
}

/// The assistant in a home of its own (bash its one system tool),
/// started in `dir`.
fn assistant(home: &Path, dir: &Path) -> Run {
    let r = crate::assistant::ikigai(home).dir(dir);
    let _ = std::os::unix::fs::symlink(bin(), home.join("libexec").join("bash"));
    r
}

fn session_log(home: &Path) -> (PathBuf, String) {
    let dir = home.join("data/ikigai/sessions");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .expect("a session file")
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&file).unwrap();
    (file, text)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn secrets_never_reach_a_tool_through_the_assistant_and_sessions_are_private() {
    let home = tempfile::tempdir().unwrap();
    let out = assistant(home.path(), home.path())
        .env("ANTHROPIC_API_KEY", "sk-ant-test-secret-key")
        .env("MY_SERVICE_TOKEN", "tok-test-secret")
        .args([
            "--provider",
            "stub",
            "-p",
            r#"call bash {"command": "env"}"#,
        ])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    let (file, log) = session_log(home.path());
    assert!(
        log.contains("HOME="),
        "the tool's env is not in the log: {log}"
    );
    for secret in ["sk-ant-test-secret-key", "tok-test-secret"] {
        assert!(!log.contains(secret), "{secret} reached the tool: {log}");
        assert!(!out.stdout.contains(secret) && !out.stderr.contains(secret));
    }
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    assert_eq!(mode(&home.path().join("data/ikigai")), 0o700);
}

#[test]
fn a_key_echoed_in_a_provider_error_is_redacted() {
    for api in [Api::OpenAi, Api::Anthropic, Api::Google] {
        let home = tempfile::tempdir().unwrap();
        let body = format!(r#"{{"error": {{"message": "Incorrect API key provided: {KEY}."}}}}"#);
        let server = ModelServer::start(api, vec![Reply::Status(401, body)]);
        let mut r = assistant(home.path(), home.path()).args(["--provider", api.name()]);
        for (k, v) in server.env() {
            r = r.env(k, v);
        }
        let out = r.args(["-p", "hello"]).output();
        assert_eq!(out.code, 1, "{out:?}");
        assert!(
            out.stderr
                .contains("Incorrect API key provided: [redacted]."),
            "{api:?}: {}",
            out.stderr
        );
        let (_, log) = session_log(home.path());
        assert!(
            !out.stderr.contains(KEY) && !out.stdout.contains(KEY) && !log.contains(KEY),
            "{api:?}: the key was shown or stored: {out:?} {log}"
        );
    }
}

// The file system.

#[test]
fn workspace_write_allows_the_workspace_and_refuses_the_rest() {
    if landlock().is_none() {
        return;
    }
    let w = World::new();
    let inside = w.ws.join("in.txt");
    let outside = w.outside.join("out.txt");
    let command = format!(
        "echo a > {} && echo b > /tmp/ikigai-sandbox-test-$$ && rm /tmp/ikigai-sandbox-test-$$ \
         && echo ok; echo x > /dev/null && echo null-ok; echo c > {}",
        inside.display(),
        outside.display()
    );
    let envelope = w.bash(&["--sandbox", "workspace-write"], &command);
    let output = output_of(&envelope);
    assert!(output.contains("ok\n"), "{envelope}");
    assert!(output.contains("Permission denied"), "{envelope}");
    assert!(output.contains("null-ok"), "{envelope}");
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "a\n");
    assert!(!outside.exists());
    // A failed call says which fence it ran in.
    let sandbox = &envelope["sandbox"];
    assert_eq!(sandbox["mode"], "workspace-write", "{envelope}");
    assert_eq!(sandbox["network"], false);
    let writable: Vec<&str> = sandbox["writable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(writable, [w.ws.to_str().unwrap(), "/tmp", "/dev/shm"]);

    // file_write is refused the same way, and says so.
    let refused = w.call(
        &["--sandbox", "workspace-write"],
        "file_write",
        json!({"file_path": outside, "content": "x"}),
    );
    assert_eq!(
        refused["result"]["error_code"], "PERMISSION_DENIED",
        "{refused}"
    );
    assert_eq!(refused["sandbox"]["mode"], "workspace-write");
    assert!(!outside.exists());

    // --add-dir makes another directory writable.
    let allowed = w.bash(
        &[
            "--sandbox",
            "workspace-write",
            "--add-dir",
            w.outside.to_str().unwrap(),
        ],
        &format!("echo c > {} && echo ok", outside.display()),
    );
    assert_eq!(output_of(&allowed), "ok", "{allowed}");
    assert_eq!(allowed.get("sandbox"), None);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "c\n");
}

#[test]
fn the_assistant_sandboxes_by_default() {
    if landlock().is_none() {
        return;
    }
    let w = World::new();
    let home = tempfile::tempdir().unwrap();
    let target = w.outside.join("from-the-model.txt");
    let message = format!(
        r#"call bash {{"command": "echo x > {} || echo refused"}}"#,
        target.display()
    );
    let out = assistant(home.path(), &w.ws)
        .env("TMPDIR", &w.ws)
        .args(["--provider", "stub", "-p", &message])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        !target.exists(),
        "the assistant wrote outside its workspace"
    );
    let (_, log) = session_log(home.path());
    assert!(log.contains("refused"), "{log}");
    // --sandbox off lifts it.
    let out = assistant(home.path(), &w.ws)
        .args(["--sandbox", "off", "--provider", "stub", "-p", &message])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(target.exists());
}

#[test]
fn read_only_writes_nowhere() {
    if landlock().is_none() {
        return;
    }
    let w = World::new();
    let envelope = w.bash(
        &["--sandbox", "read-only"],
        "cat /etc/hostname >/dev/null && echo read-ok; echo x > in.txt; echo y > /tmp/ikigai-ro-$$",
    );
    let output = output_of(&envelope);
    assert!(output.starts_with("read-ok\n"), "{envelope}");
    assert_eq!(output.matches("Permission denied").count(), 2, "{envelope}");
    assert!(!w.ws.join("in.txt").exists());
    assert_eq!(envelope["sandbox"]["mode"], "read-only");
    assert_eq!(envelope["sandbox"]["writable"], json!([]));
}

#[test]
fn a_third_party_tool_is_fenced_in_too() {
    if landlock().is_none() {
        return;
    }
    let w = World::new();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sandbox/touch.sh");
    w.dirs.link(&w.dirs.user, "touch", &script);
    let wrote = |options: &[&str], target: &Path| {
        let out = w
            .ikigai()
            .env("IKIGAI_TEST_TARGET", target)
            .args(options)
            .args(["call", "touch", "{}"])
            .output();
        out.json()["result"]["wrote"].clone()
    };
    let outside = w.outside.join("t");
    assert_eq!(wrote(&["--sandbox", "workspace-write"], &outside), false);
    assert!(!outside.exists());
    assert_eq!(
        wrote(&["--sandbox", "workspace-write"], &w.ws.join("t")),
        true
    );
    assert_eq!(wrote(&["--sandbox", "read-only"], &w.ws.join("u")), false);
    assert_eq!(wrote(&[], &outside), true);
}

#[test]
fn sandbox_exec_refuses_bad_usage_without_running_anything() {
    let w = World::new();
    let target = w.ws.join("ran");
    let out = crate::common::run_main()
        .args(["sandbox-exec", "--mode", "strict", "--", "touch"])
        .arg(&target)
        .output();
    assert_eq!(out.code, 125, "{out:?}");
    assert!(
        out.stderr.contains("invalid sandbox mode 'strict'"),
        "{}",
        out.stderr
    );
    assert!(!target.exists());
    // Used directly, it runs any program, with its exit status.
    let out = crate::common::run_main()
        .args(["sandbox-exec", "--mode", "off", "--", "sh", "-c", "exit 7"])
        .output();
    assert_eq!(out.code, 7, "{out:?}");
}

#[test]
fn ikigai_call_runs_unsandboxed_unless_asked() {
    let w = World::new();
    let target = w.outside.join("free.txt");
    let envelope = w
        .ikigai()
        .env("IKIGAI_SANDBOX", "read-only")
        .args(["call", "bash"])
        .arg(json!({"command": format!("echo x > {}", target.display())}).to_string())
        .output()
        .json();
    assert_eq!(envelope["result"]["exit_code"], 0, "{envelope}");
    assert!(target.exists());
}

#[test]
fn a_bad_mode_or_directory_is_refused_at_start() {
    let w = World::new();
    let out = w
        .ikigai()
        .args(["--sandbox", "strict", "call", "bash", "{}"])
        .output();
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("invalid sandbox mode 'strict'"),
        "{}",
        out.stderr
    );
    let out = w
        .ikigai()
        .env("IKIGAI_SANDBOX", "loose")
        .args(["tools"])
        .output();
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("IKIGAI_SANDBOX"), "{}", out.stderr);
    let out = w
        .ikigai()
        .args(["--add-dir", "/nonexistent/dir", "tools"])
        .output();
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("/nonexistent/dir"), "{}", out.stderr);
}

// The network.

/// A listener on 127.0.0.1 and a bash command that connects to it.
fn listener() -> (std::net::TcpListener, String) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    // bash's /dev/tcp opens an AF_INET socket and connects.
    let command = format!(
        "bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo connected; \
         bash -c 'echo hi > /dev/tcp/::1/{port}' 2>/dev/null; true"
    );
    (l, command)
}

fn accepted(l: &std::net::TcpListener) -> bool {
    l.accept().is_ok()
}

#[test]
fn network_is_refused_unless_allowed() {
    if landlock().is_none() {
        return;
    }
    let w = World::new();
    let (l, command) = listener();
    let refused = w.bash(&["--sandbox", "workspace-write"], &command);
    let output = output_of(&refused);
    assert!(output.contains("Permission denied"), "{refused}");
    assert!(!output.contains("connected"), "{refused}");
    assert!(!accepted(&l), "a connection reached the listener");

    let allowed = w.bash(&["--sandbox", "workspace-write", "--network"], &command);
    assert!(output_of(&allowed).contains("connected"), "{allowed}");
    assert!(accepted(&l));
}

#[test]
fn a_web_tool_works_inside_the_fence_when_it_has_the_network() {
    if landlock().is_none() {
        return;
    }
    let w = World::new();
    w.dirs.link(&w.dirs.sys, "web_fetch", bin());
    let server = crate::common::http::Server::start(|_| {
        crate::common::http::Reply::html(
            "<html><head><title>T</title></head><body><p>fenced</p></body></html>",
        )
    });
    let envelope = w
        .ikigai()
        .env("IKIGAI_FETCH_ALLOW_PRIVATE", "1")
        .args(["--sandbox", "read-only", "--network", "call", "web_fetch"])
        .arg(json!({"url": server.url("/")}).to_string())
        .output()
        .json();
    assert_eq!(envelope["result"]["content"], "fenced", "{envelope}");
}

// Containment.

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        // A Pid kills its process when dropped: only look.
        let process = std::mem::ManuallyDrop::new(Pid(pid));
        if String::from_utf8_lossy(&cmdline).contains(marker) && !process.dead() {
            found.push(pid);
        }
    }
    found
}

/// Waits (generously) until no process holds `marker`.
fn all_gone(marker: &str) -> bool {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if processes_with(marker).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Not ours to leave running.
    for pid in processes_with(marker) {
        drop(Pid(pid));
    }
    false
}

/// A sleep that `processes_with` can find: its duration is unique.
fn marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{}.{:09}", 300 + std::process::id() % 100, nanos)
}

#[test]
fn setsid_and_double_fork_do_not_outlive_the_call() {
    let w = World::new();
    for options in [&[][..], &["--sandbox", "workspace-write"][..]] {
        let m = marker();
        let command = format!(
            "setsid sleep {m} & (sleep {m} &) ; nohup sleep {m} >/dev/null 2>&1 & echo started"
        );
        let started = Instant::now();
        let envelope = w.bash(options, &command);
        assert_eq!(output_of(&envelope), "started", "{envelope}");
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(all_gone(&m), "{options:?}: a process outlived its call");
    }
}

/// Decision 108: the call's namespace is held past the containment
/// process's end by a process of its own, which the tool cannot reach and
/// which ends right after the call, leaving nothing behind; containment
/// still kills what the tool left, and the exit code is the tool's.
#[test]
fn the_namespace_holder_ends_with_the_call() {
    let Some(abi) = landlock() else {
        return;
    };
    let w = World::new();
    let (_, fence) = w.fence_hiding_a_secret();
    let m = marker();
    let out = crate::common::run_main()
        .args(fence)
        .args(["--", "sh", "-c"])
        .arg(format!(
            "echo $$; cat /proc/$PPID/task/*/children; echo; cat secret; \
             for p in $(cat /proc/$PPID/task/*/children); do \
               [ $p = $$ ] || ! kill -9 $p 2>/dev/null || echo killed $p; \
             done; (sleep {m} &); exit 3"
        ))
        .dir(&w.ws)
        .output();
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains("Permission denied"), "{out:?}");
    let mut lines = out.stdout.lines();
    let me: i32 = lines.next().unwrap().trim().parse().unwrap();
    let others: Vec<i32> = lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .filter(|&p| p != me)
        .collect();
    assert_eq!(others.len(), 1, "the holder, and only it: {out:?}");
    if abi >= 6 {
        // The scopes: the tool may not signal it.
        assert!(!out.stdout.contains("killed"), "{out:?}");
    }
    assert!(
        crate::mcp::eventually(|| !crate::mcp::alive(others[0])),
        "the holder outlived its call"
    );
    assert!(all_gone(&m), "a process outlived its call");
}

/// Decision 109: a call of our own tool that starts no process runs in
/// sandbox-exec's own process (its parent is the caller), behind the same
/// fence and one seccomp filter that also refuses it any new process; its
/// output ends when it does, and the namespace's holder ends with it.
#[test]
fn our_own_tool_runs_alone_behind_the_fence() {
    if landlock().is_none() {
        return;
    }
    let w = World::new();
    let (secret, fence) = w.fence_hiding_a_secret();
    let m = marker();
    let read = |path: &str| {
        crate::common::run_main()
            .args(&fence)
            // A directory that does not exist is passed over: it puts
            // the marker in the holder's command line, which is this one's.
            .arg("--writable")
            .arg(w.ws.join(&m))
            .arg("--")
            .arg(crate::common::link("file-read"))
            .arg(json!({ "file_path": path, "limit": 60 }).to_string())
            .dir(&w.ws)
            .output()
    };
    let out = read("/proc/self/status");
    assert_eq!(out.code, 0, "{out:?}");
    let status = out.json()["output"].as_str().unwrap().to_string();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no {name} in {status}"))
            .to_string()
    };
    assert_eq!(field("PPid"), std::process::id().to_string(), "{status}");
    assert_eq!(field("Seccomp_filters"), "1", "{status}");
    assert_eq!(field("NoNewPrivs"), "1");
    // Every set a capability could come from is empty; the bounding set
    // is kept, since nothing can be raised within it and the filter
    // refuses the exec it bounds (decision 135).
    for set in ["CapEff", "CapPrm", "CapInh", "CapAmb"] {
        assert_eq!(field(set), "0000000000000000", "{set}");
    }
    let out = read(secret.to_str().unwrap());
    assert!(out.stdout.contains("Permission denied"), "{out:?}");
    assert!(all_gone(&m), "the holder outlived its call");
}

/// A host that is PID 1 (of a container) reaps only the children it
/// started: sandbox-exec holds no namespace there, or the holder would be
/// re-parented to the host and stay a zombie. Run in a PID namespace whose
/// first process is a Python host that waits for its calls by pid.
#[test]
fn a_host_that_is_pid_1_is_left_no_zombie() {
    if landlock().is_none() {
        return;
    }
    let w = World::new();
    let (secret, fence) = w.fence_hiding_a_secret();
    let host = r#"
import subprocess, sys, time
n = sys.argv.index("--next")
for argv in (sys.argv[1:n], sys.argv[n + 1:]):
    print(subprocess.run(argv, capture_output=True).returncode)
time.sleep(0.3)
kids = open("/proc/1/task/1/children").read().split()
print("children", [open("/proc/%s/stat" % k).read().split()[2] for k in kids])
"#;
    let call = |program: &str| -> Vec<OsString> {
        let mut argv = vec![bin().into_os_string()];
        argv.extend(fence.iter().cloned());
        argv.push("--".into());
        argv.push(crate::common::link(program).into());
        argv
    };
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--user",
        "--map-root-user",
        "--pid",
        "--fork",
        "--mount-proc",
    ])
    .args(["python3", "-c", host])
    .args(call("file-read"))
    .arg(json!({ "file_path": secret }).to_string())
    .arg("--next")
    .args(call("bash"))
    .arg(json!({ "command": "cat secret; true" }).to_string())
    .current_dir(&w.ws);
    let out = match cmd.output() {
        Ok(out) if out.status.success() => out,
        other => {
            eprintln!("no PID namespace here ({other:?}): not asserted");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["1", "0", "children []"],
        "{out:?}"
    );
}

#[test]
fn a_timeout_kills_processes_that_left_the_group() {
    let w = World::new();
    let m = marker();
    let out = w
        .ikigai()
        .args(["--timeout", "1", "call", "bash"])
        .arg(json!({"command": format!("setsid sleep {m} & (sleep {m} &); sleep {m}")}).to_string())
        .output();
    assert_eq!(out.json()["error_code"], "TOOL_TIMEOUT", "{out:?}");
    assert!(all_gone(&m), "a process outlived the timeout");
}

#[test]
fn sigkill_of_the_host_ends_its_tools() {
    let w = World::new();
    let m = marker();
    let mut host = Command::new(crate::common::link("ikigai"))
        .arg("--libexec-dir")
        .arg(&w.dirs.sys)
        .arg("--tools-dir")
        .arg(&w.dirs.user)
        .args(["call", "bash"])
        .arg(json!({"command": format!("setsid sleep {m} & (sleep {m} &); sleep {m}")}).to_string())
        .current_dir(&w.ws)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while processes_with(&m).len() < 3 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    // The three sleeps, the shell and the host all name the marker.
    assert!(
        processes_with(&m).len() >= 3,
        "the tool's processes did not start"
    );
    host.kill().unwrap();
    host.wait().unwrap();
    assert!(all_gone(&m), "the tool outlived its host");
}

/// Our own tool runs in sandbox-exec's process (decision 109), which
/// still ends at the call's timeout and dies with its host: a web_fetch
/// waiting on a server that never answers ends either way, the
/// namespace's holder with it.
#[test]
fn a_call_of_our_own_tool_ends_at_its_timeout_and_with_its_host() {
    if landlock().is_none() {
        return;
    }
    let w = World::new();
    w.dirs.link(&w.dirs.sys, "web_fetch", bin());
    // Never accepted: the kernel completes the handshake, nobody answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let secret = w.ws.join("secret");
    std::fs::write(&secret, "s").unwrap();
    // A secret that exists: the call makes a namespace and its holder.
    std::fs::write(
        w.outside.join("config.toml"),
        format!("deny_read = [{:?}]\n", secret.to_str().unwrap()),
    )
    .unwrap();
    let host = |options: &[&str], m: &str| {
        let marked = w.outside.join(m);
        std::fs::create_dir(&marked).unwrap();
        let mut host = Command::new(crate::common::link("ikigai"));
        host.arg("--libexec-dir")
            .arg(&w.dirs.sys)
            .arg("--tools-dir")
            .arg(&w.dirs.user)
            .env("IKIGAI_CONFIG", w.outside.join("config.toml"))
            // The marker in every command line: the call's own come from here.
            .arg("--add-dir")
            .arg(&marked)
            .args(options)
            .args(["--sandbox", "workspace-write", "call", "web_fetch"])
            .arg(json!({ "url": format!("http://127.0.0.1:{port}/{m}") }).to_string())
            .env("IKIGAI_FETCH_ALLOW_PRIVATE", "1")
            .current_dir(&w.ws)
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        host
    };

    let m = marker();
    let out = host(&["--timeout", "1"], &m).output().unwrap();
    let envelope: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope["error_code"], "TOOL_TIMEOUT", "{envelope}");
    assert!(all_gone(&m), "the call outlived its timeout");

    let m = marker();
    let mut host = host(&[], &m).stdout(Stdio::null()).spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    // The host, sandbox-exec running web_fetch, and the holder.
    while processes_with(&m).len() < 3 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(processes_with(&m).len(), 3, "the call did not start");
    host.kill().unwrap();
    host.wait().unwrap();
    assert!(all_gone(&m), "the call outlived its host");
    drop(silent);
}

// What the kernel supports.

#[test]
fn sandbox_check_says_what_the_kernel_supports() {
    let out: Output = run("ikigai").args(["sandbox", "check"]).output();
    assert_eq!(out.code, 0, "{out:?}");
    match landlock() {
        Some(abi) => assert!(
            out.stdout
                .contains(&format!("Landlock: yes (ABI version {abi})")),
            "{}",
            out.stdout
        ),
        None => assert!(out.stdout.contains("Landlock: no"), "{}", out.stdout),
    }
    for mode in ["workspace-write", "read-only", "off"] {
        assert!(out.stdout.contains(&format!("  {mode}")), "{}", out.stdout);
    }
}

mod scope;
mod spawner;
mod walls;
mod ways_out;
mod worker;
