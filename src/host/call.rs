//! One tool call, as the model asks for it (decisions 2, 4, 8, 9 and 19):
//! look the name up (default-deny), check the arguments are an object, run
//! the tool's file in its own process group with the arguments on stdin
//! (ikigai protocol) or as `$1` (shellclaw protocol), drain both outputs up
//! to the cap, kill the whole group at the deadline or when the person
//! interrupts, and wrap what happened in the envelope.
//!
//! The tool runs inside `ikigai-tools sandbox-exec` (our own executable,
//! again): fenced in as the settings say, with the host's environment less
//! its secrets, and contained, so nothing it starts outlives the call.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::child::{self, Proc};
use super::envelope::{self, Ending, Envelope, Failure};
use super::registry::{Entry, Protocol, Registry};
use super::settings::Settings;
use crate::args::type_name as kind;
use crate::sandbox::{exec, secrets, Fence};

/// How often a running call looks at its cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(25);

/// What a call produced.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOutcome {
    /// How the call ended.
    pub envelope: Envelope,
    /// `config_required` events from the tool's stderr: for the person only.
    pub events: Vec<Value>,
    /// The fence a failed sandboxed call ran in (`envelope::sandbox_note`).
    pub sandbox: Option<Value>,
}

impl CallOutcome {
    pub fn new(envelope: Envelope, events: Vec<Value>) -> Self {
        CallOutcome {
            envelope,
            events,
            sandbox: None,
        }
    }

    /// The envelope's `tool_success`.
    pub fn success(&self) -> bool {
        self.envelope.success()
    }

    /// What the model receives: the envelope, and `"sandbox"` when the
    /// call failed inside one.
    pub fn to_json(&self) -> Value {
        let mut json = self.envelope.to_json();
        if let Some(note) = &self.sandbox {
            json["sandbox"] = note.clone();
        }
        json
    }
}

/// Runs tool `name` with `arguments` (a JSON object). Blocks until the tool
/// ends, its timeout passes, or `cancel` becomes true (then the tool's
/// process group is killed within a few tens of milliseconds and the
/// envelope says the user cancelled it, code `CANCELLED`).
pub fn call(
    registry: &Registry,
    name: &str,
    arguments: &Value,
    settings: &Settings,
    cancel: Option<&AtomicBool>,
) -> CallOutcome {
    call_watched(registry, name, arguments, settings, cancel, None)
}

/// `call`, handing the tool's output to `watch` as it is read.
pub fn call_watched(
    registry: &Registry,
    name: &str,
    arguments: &Value,
    settings: &Settings,
    cancel: Option<&AtomicBool>,
    watch: Option<child::Watch>,
) -> CallOutcome {
    let limits = &settings.limits;
    let Some(entry) = registry.lookup(name) else {
        return CallOutcome::new(Envelope::not_found(name, &registry.names()), vec![]);
    };
    if let Value::String(text) = arguments {
        // Text the model meant as JSON but that does not parse (kept as a
        // string by `model::parse_arguments`): say so, as `call_text` does.
        if let Err(e) = serde_json::from_str::<Value>(text) {
            return CallOutcome::new(not_json(name, &e), vec![]);
        }
    }
    if !arguments.is_object() {
        let what = format!("expected a JSON object, got {}", kind(arguments));
        return CallOutcome::new(Envelope::invalid_params(name, &what), vec![]);
    }
    let (args, input) = match entry.protocol {
        Protocol::Ikigai => (vec![], Some(arguments.to_string().into_bytes())),
        Protocol::Shellclaw => (vec![OsString::from(arguments.to_string())], None),
        // An MCP tool runs in its server, which the host started (and
        // fenced like any process it starts); the client carries the call.
        Protocol::Mcp => {
            let reply = crate::mcp::client::call(name, arguments, limits.timeout, cancel);
            return CallOutcome::new(crate::mcp::client::envelope(name, &reply), vec![]);
        }
    };
    let fence = settings.sandbox.fence(name, open_world(entry));
    let contained = settings.sandbox.contain || fence.mode.confines();
    if contained && !entry.path.exists() {
        // Checked here, since the containment process would only report it
        // as an exit code.
        let gone = std::io::Error::from_raw_os_error(libc::ENOENT);
        return CallOutcome::new(spawn_failure(name, &entry.path, &gone), vec![]);
    }
    let spawned = start(entry, &args, &fence, settings, contained, input);
    let mut proc = match spawned {
        Ok(proc) => proc,
        Err(e) => return CallOutcome::new(spawn_failure(name, &entry.path, &e), vec![]),
    };
    if let Some(watch) = watch {
        proc.watch(watch);
    }
    let (ending, finished) = run(proc, limits.timeout, cancel);
    let (envelope, events) =
        envelope::wrap(name, entry.protocol, ending, &finished.out, &finished.err);
    let mut outcome = CallOutcome::new(envelope, events);
    if fence.mode.confines() {
        outcome.sandbox = envelope::sandbox_note(&outcome.envelope, &fence);
    }
    outcome
}

/// Whether the tool says it reaches the world outside this machine (MCP's
/// `openWorldHint` annotation in its schema).
fn open_world(entry: &Entry) -> bool {
    entry.hint("openWorldHint")
}

/// Starts one call: the tool's file, inside the containment process when
/// `contained` (made by the spawner when it can, else by exec'ing
/// `sandbox-exec`), with the environment the tool may see.
fn start(
    entry: &Entry,
    args: &[OsString],
    fence: &Fence,
    settings: &Settings,
    contained: bool,
    input: Option<Vec<u8>>,
) -> std::io::Result<Proc> {
    let cap = settings.limits.max_output;
    let pass = settings
        .tool_env
        .get(&entry.name)
        .map_or(&[][..], Vec::as_slice);
    let env = secrets::tool_env(std::env::vars_os(), &entry.name, pass);
    if !contained {
        let mut cmd = Command::new(&entry.path);
        cmd.args(args).env_clear().envs(env);
        return Proc::start(cmd, input, cap, cap, false);
    }
    let best_effort = settings.sandbox.unavailable.is_some();
    let mut contain_args = exec::arguments(fence, best_effort);
    contain_args.remove(0); // the personality's name
    contain_args.push(entry.path.clone().into_os_string());
    contain_args.extend(args.iter().cloned());
    // The spawner passes the environment as it is, so the cap's variable,
    // which `Proc::start` sets, goes in here (the same value twice on the
    // way below, which is harmless).
    let mut env = env;
    env.push((crate::env::MAX_OUTPUT_VAR.into(), cap.to_string().into()));
    let input = if settings.sandbox.spawner {
        match spawned::start(&contain_args, &env, input, cap) {
            spawned::Started::Proc(proc) => return Ok(*proc),
            spawned::Started::Lost(e) => return Err(e),
            spawned::Started::Not(input) => input,
        }
    } else {
        input
    };
    let mut cmd = Command::new(own_executable());
    // The name decides the personality; "ikigai-tools" is none of the
    // tools, so the first argument (sandbox-exec) does.
    std::os::unix::process::CommandExt::arg0(&mut cmd, "ikigai-tools");
    cmd.arg(exec::NAME).args(contain_args).env_clear().envs(env);
    Proc::start(cmd, input, cap, cap, true)
}

/// Calls whose containment process the sandbox's spawner makes: one
/// spawner per host, started at the first such call and kept for the
/// host's life (it ends with the host).
mod spawned {
    use std::ffi::OsString;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;

    use super::own_executable;
    use crate::host::child::{set_nonblocking, Proc};
    use crate::sandbox::secrets;
    use crate::sandbox::spawner::{Failure, Spawner};

    static SPAWNER: Mutex<Option<Spawner>> = Mutex::new(None);
    /// Set when a spawner could not be started: then every call execs.
    static UNAVAILABLE: AtomicBool = AtomicBool::new(false);

    /// What became of a call handed to the spawner.
    pub enum Started {
        Proc(Box<Proc>),
        /// It cannot make this call (none could be started, or the request
        /// is too large for it): the input, to start it the old way.
        Not(Option<Vec<u8>>),
        /// The spawner ended after taking the call, which may be running:
        /// the call fails rather than run twice.
        Lost(io::Error),
    }

    pub fn start(
        args: &[OsString],
        env: &[(OsString, OsString)],
        input: Option<Vec<u8>>,
        cap: usize,
    ) -> Started {
        if UNAVAILABLE.load(Ordering::Relaxed) {
            return Started::Not(input);
        }
        let Ok(cwd) = std::env::current_dir() else {
            return Started::Not(input);
        };
        let Ok((stdin, stdout, stderr)) = pipes(input.is_some()) else {
            return Started::Not(input);
        };
        let mut slot = SPAWNER.lock().unwrap_or_else(|e| e.into_inner());
        // A spawner that died (killed by someone) is replaced once.
        for _ in 0..2 {
            if slot.is_none() {
                match start_spawner() {
                    Ok(spawner) => *slot = Some(spawner),
                    Err(_) => {
                        UNAVAILABLE.store(true, Ordering::Relaxed);
                        return Started::Not(input);
                    }
                }
            }
            let Some(spawner) = slot.as_mut() else {
                return Started::Not(input);
            };
            let theirs = [&stdin.1, &stdout.1, &stderr.1].map(AsRawFd::as_raw_fd);
            match spawner.spawn(args, env, &cwd, theirs) {
                Ok(pid) => {
                    drop(slot);
                    // Only the call's processes hold the other ends now.
                    let (ours_in, ours_out, ours_err) = (stdin.0, stdout.0, stderr.0);
                    return Started::Proc(Box::new(Proc::adopt(
                        pid, ours_in, ours_out, ours_err, input, cap, cap,
                    )));
                }
                Err(Failure::Refused) => return Started::Not(input),
                Err(Failure::Gone) => *slot = None,
                Err(Failure::Lost(e)) => {
                    *slot = None;
                    return Started::Lost(io::Error::other(format!(
                        "the sandbox's spawner took the call but gave no answer ({e})"
                    )));
                }
            }
        }
        Started::Not(input)
    }

    /// Starts a spawner from a thread that lives as long as the host: a
    /// process's parent-death signal (which ends the spawner, and the
    /// containment processes it makes, with the host) fires when the
    /// *thread* that started it ends, and calls run on short-lived threads.
    fn start_spawner() -> io::Result<Spawner> {
        let (tell, told) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("sandbox-spawner".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let started =
                    Spawner::start(own_executable(), secrets::base_env(std::env::vars_os()));
                let _ = tell.send(started);
                loop {
                    std::thread::park();
                }
            })?;
        told.recv()
            .unwrap_or_else(|_| Err(io::Error::other("the spawner's thread ended")))
    }

    /// The three pipes of a call, each (the host's end, the call's end);
    /// stdin is /dev/null (no host end) when there is no input.
    #[allow(clippy::type_complexity)]
    fn pipes(
        input: bool,
    ) -> io::Result<(
        (Option<OwnedFd>, OwnedFd),
        (OwnedFd, OwnedFd),
        (OwnedFd, OwnedFd),
    )> {
        let stdin = if input {
            let (read, write) = pipe()?;
            set_nonblocking(write.as_raw_fd())?;
            (Some(write), read)
        } else {
            (None, OwnedFd::from(std::fs::File::open("/dev/null")?))
        };
        let (stdout, stderr) = (pipe()?, pipe()?);
        set_nonblocking(stdout.0.as_raw_fd())?;
        set_nonblocking(stderr.0.as_raw_fd())?;
        Ok((stdin, stdout, stderr))
    }

    /// A pipe, (read end, write end), both close-on-exec.
    fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills the two-element array on success.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors are new and owned by nothing else.
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    }
}

/// This executable, to run as the containment process: `/proc/self/exe`
/// names the very file the host runs from, even if it was replaced or
/// deleted since (a rebuild while the assistant runs); without /proc, the
/// path it was started from, looked up once.
fn own_executable() -> &'static Path {
    static EXE: OnceLock<std::path::PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let proc_exe = Path::new("/proc/self/exe");
        if proc_exe.exists() {
            proc_exe.to_path_buf()
        } else {
            std::env::current_exe().unwrap_or_else(|_| proc_exe.to_path_buf())
        }
    })
}

/// Like `call`, with the arguments as JSON text, as OpenAI sends them: text
/// that is not JSON is `INVALID_PARAMS`.
pub fn call_text(
    registry: &Registry,
    name: &str,
    arguments: &str,
    settings: &Settings,
    cancel: Option<&AtomicBool>,
) -> CallOutcome {
    if registry.lookup(name).is_none() {
        return CallOutcome::new(Envelope::not_found(name, &registry.names()), vec![]);
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => call(registry, name, &value, settings, cancel),
        Err(e) => CallOutcome::new(not_json(name, &e), vec![]),
    }
}

fn not_json(name: &str, e: &serde_json::Error) -> Envelope {
    Envelope::invalid_params(name, &format!("arguments are not valid JSON: {e}"))
}

/// Pumps the process until it ends, times out or is cancelled.
fn run(
    mut proc: Proc,
    timeout: Duration,
    cancel: Option<&AtomicBool>,
) -> (Ending, child::Finished) {
    let deadline = proc.started() + timeout;
    let mut stopped: Option<Ending> = None;
    loop {
        let now = Instant::now();
        if proc.settled(now) {
            break;
        }
        if stopped.is_none() && !proc.exited() {
            let elapsed = now - proc.started();
            if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                proc.kill();
                stopped = Some(Ending::Interrupted(elapsed));
            } else if now >= deadline {
                proc.kill();
                stopped = Some(Ending::TimedOut(timeout));
            }
        }
        let until = match (stopped, cancel) {
            // The kill's drain time wakes us.
            (Some(_), _) => now + timeout,
            (None, Some(_)) => deadline.min(now + CANCEL_POLL),
            (None, None) => deadline,
        };
        child::step(&mut [&mut proc], until);
    }
    let finished = proc.finish();
    let ending = stopped.unwrap_or_else(|| match finished.status {
        Some(status) => ending_of(status),
        // Settled without a status only after a kill, which sets `stopped`.
        None => Ending::Code(-1),
    });
    (ending, finished)
}

fn ending_of(status: std::process::ExitStatus) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Code(code),
        (None, Some(signal)) => Ending::Signal(signal),
        (None, None) => Ending::Code(-1),
    }
}

fn spawn_failure(name: &str, path: &std::path::Path, e: &std::io::Error) -> Envelope {
    match e.raw_os_error() {
        Some(libc::ENOENT) => Envelope::refused(
            Failure::NotFound,
            format!(
                "Tool '{name}' cannot be run: its file {} is gone (run /refresh)",
                path.display()
            ),
        ),
        Some(libc::E2BIG) => Envelope::invalid_params(
            name,
            "the arguments are too long to pass as a command-line argument (shellclaw protocol)",
        ),
        _ => Envelope::refused(
            Failure::Crashed,
            format!(
                "Tool '{name}' could not be started ({}): {e}",
                path.display()
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::registry::{Entry, Origin};
    use crate::sandbox::Mode;
    use serde_json::json;
    use std::path::Path;

    /// Unit tests run inside the test harness, which cannot be a
    /// containment process: calls run the tool directly (the integration
    /// tests run the real executable, contained).
    fn settings() -> Settings {
        let mut s = Settings::resolve(Default::default(), &crate::tool::Env::default(), None);
        s.sandbox.mode = Mode::Off;
        s.sandbox.contain = false;
        s
    }

    /// A registry of fixture tools (tests/fixtures/host/tool.sh, which acts
    /// after the name of the link that runs it).
    fn fixtures(names: &[&str]) -> (tempfile::TempDir, Registry) {
        let dir = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/host/tool.sh");
        let entries = names
            .iter()
            .map(|name| {
                let path = dir.path().join(name);
                std::os::unix::fs::symlink(&script, &path).unwrap();
                Entry {
                    name: name.to_string(),
                    description: "d".into(),
                    path,
                    protocol: Protocol::Ikigai,
                    origin: Origin::User,
                    schema: json!({"name": name, "description": "d",
                        "parameters": {"type": "object", "properties": {}}}),
                }
            })
            .collect();
        (dir, Registry::build(entries, vec![]))
    }

    #[test]
    fn the_open_world_hint_is_read_from_the_schema() {
        let (_dir, registry) = fixtures(&["echo"]);
        let mut entry = registry.lookup("echo").unwrap().clone();
        assert!(!open_world(&entry));
        entry.schema["annotations"] = json!({"readOnlyHint": true, "openWorldHint": true});
        assert!(open_world(&entry));
        entry.schema["annotations"] = json!({"openWorldHint": "yes"});
        assert!(!open_world(&entry));
    }

    #[test]
    fn cancel_stops_the_call_at_once() {
        let (_dir, registry) = fixtures(&["sleepy"]);
        let cancel = AtomicBool::new(false);
        let started = Instant::now();
        let outcome = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                cancel.store(true, Ordering::Relaxed);
            });
            call(&registry, "sleepy", &json!({}), &settings(), Some(&cancel))
        });
        // The tool sleeps 30 s; the default timeout is 30 s.
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(!outcome.success());
        let e = &outcome.to_json();
        assert_eq!(
            (&e["error_code"], &e["exit_code"]),
            (&json!("CANCELLED"), &Value::Null)
        );
        let error = e["error"].as_str().unwrap();
        assert!(
            error.starts_with("Tool 'sleepy' was cancelled by the user after ")
                && error.ends_with("s, before it finished"),
            "{error}"
        );
        assert_eq!(
            (&e["stdout"], &e["stderr"]),
            (&json!("started\n"), &json!("working\n"))
        );
    }

    #[test]
    fn an_unset_cancel_flag_changes_nothing() {
        let (_dir, registry) = fixtures(&["echo"]);
        let cancel = AtomicBool::new(false);
        let outcome = call(
            &registry,
            "echo",
            &json!({"a": 1}),
            &settings(),
            Some(&cancel),
        );
        assert!(outcome.success(), "{:?}", outcome.envelope);
        assert_eq!(outcome.to_json()["result"]["input"], json!({"a": 1}));
        assert!(outcome.events.is_empty());
    }

    #[test]
    fn text_arguments_and_refusals() {
        let (_dir, registry) = fixtures(&["echo"]);
        let limits = settings();
        let ok = call_text(&registry, "echo", r#"{"x":true}"#, &limits, None);
        assert_eq!(ok.to_json()["result"]["input"], json!({"x": true}));
        let bad = call_text(&registry, "echo", "{x", &limits, None);
        assert_eq!(bad.to_json()["error_code"], "INVALID_PARAMS");
        // An unknown name is reported as such even with bad arguments.
        let unknown = call_text(&registry, "nope", "{x", &limits, None);
        assert_eq!(unknown.to_json()["error_code"], "TOOL_NOT_FOUND");
        assert!(!unknown.success());
        // Text a model meant as JSON arrives as a string: it is named as
        // text that does not parse, not as a string where an object belongs.
        let text = call(&registry, "echo", &json!("{x"), &limits, None).to_json();
        assert_eq!(text["error_code"], "INVALID_PARAMS");
        let error = text["error"].as_str().unwrap();
        assert!(error.contains("arguments are not valid JSON"), "{error}");
        let list = call(&registry, "echo", &json!([1]), &limits, None).to_json();
        assert_eq!(list["error_code"], "INVALID_PARAMS");
        let error = list["error"].as_str().unwrap();
        assert!(
            error.ends_with("expected a JSON object, got an array"),
            "{error}"
        );
    }
}
