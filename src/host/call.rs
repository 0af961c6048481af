//! One tool call, as the model asks for it (decisions 2, 4, 8, 9 and 19):
//! look the name up (default-deny), check the arguments are an object, run
//! the tool's file in its own process group with the arguments on stdin
//! (ikigai protocol) or as `$1` (shellclaw protocol), drain both outputs up
//! to the cap, kill the whole group at the deadline or when the person
//! interrupts, and wrap what happened in the envelope.
//!
//! The tool runs inside `ikigai-tools sandbox-exec` (our own executable,
//! again): fenced in as the settings say, with the host's environment less
//! its secrets, and contained, so nothing it starts outlives the call. A
//! host that makes many calls has these processes forked by the sandbox's
//! spawner, and the calls of our tools that start no process served by a
//! fenced worker (`spawned`, docs/sandbox.md).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::child::{self, Proc};
use super::envelope::{self, Ending, Envelope, Failure};
use super::registry::{Entry, Origin, Protocol, Registry};
use super::settings::Settings;
use super::spawned;
use crate::args::type_name as kind;
use crate::sandbox::{exec, secrets, worker, Fence};

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
    let watch = watch.map(Watched::All);
    call_with(registry, name, arguments, settings, cancel, watch, None)
}

/// A background job's call (decision 68): `call` with no deadline, ended
/// only by `stop`, handing the tool's stderr alone to `watch` (our bash
/// copies its command's output there; its stdout is the answer). The
/// process starts on the calling thread, whose end is the process's
/// parent-death signal: the caller's thread must live as long as the call.
pub fn call_background(
    registry: &Registry,
    name: &str,
    arguments: &Value,
    settings: &Settings,
    stop: &AtomicBool,
    watch: child::Watch,
) -> CallOutcome {
    call_with(
        registry,
        name,
        arguments,
        settings,
        Some(stop),
        Some(Watched::Stderr(watch)),
        Some(NO_DEADLINE),
    )
}

/// What "no deadline" is: far enough, and still an `Instant` that adds.
const NO_DEADLINE: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// Which of a call's outputs its watch sees.
enum Watched {
    All(child::Watch),
    Stderr(child::Watch),
}

fn call_with(
    registry: &Registry,
    name: &str,
    arguments: &Value,
    settings: &Settings,
    cancel: Option<&AtomicBool>,
    watch: Option<Watched>,
    timeout: Option<Duration>,
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
    if entry.origin == Origin::Host {
        // The host's own tools are answered by the host that offers them
        // (the assistant); reaching here means one was asked of a runtime
        // that does not.
        let why = format!("Tool '{name}' is the assistant's own and cannot be run here");
        return CallOutcome::new(Envelope::refused(Failure::NotFound, why), vec![]);
    }
    let (args, input) = match entry.protocol {
        Protocol::Ikigai => (vec![], Some(arguments.to_string().into_bytes())),
        Protocol::Shellclaw => (vec![OsString::from(arguments.to_string())], None),
        // An MCP tool runs in its server, which the host started (and
        // fenced like any process it starts); the client carries the call.
        Protocol::Mcp => {
            let reply = crate::mcp::client::call(name, arguments, limits.timeout, cancel);
            let mut outcome = CallOutcome::new(crate::mcp::client::envelope(name, &reply), vec![]);
            if let Some(fence) = crate::mcp::client::fence_of(name) {
                outcome.sandbox = envelope::sandbox_note(&outcome.envelope, &fence);
            }
            return outcome;
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
    match watch {
        Some(Watched::All(watch)) => proc.watch(watch),
        Some(Watched::Stderr(watch)) => proc.watch_stderr(watch),
        None => {}
    }
    let (ending, finished) = run(proc, timeout.unwrap_or(limits.timeout), cancel);
    let (envelope, events) =
        envelope::wrap(name, entry.protocol, ending, &finished.out, &finished.err);
    let envelope = match contained {
        true => {
            let envelope = envelope::past_scope_limit(envelope, name, &finished.err);
            envelope::past_limit(envelope, &ending, name, fence.limits.file_size)
        }
        false => envelope,
    };
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
    let env = tool_env(&entry.name, pass);
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
    // Our own tools that start no process run in a worker, fenced alike
    // (a fence the kernel cannot build whole keeps them on the way below).
    let input = if settings.sandbox.spawner && !best_effort && worker::serves(&entry.path) {
        let fence_args = &contain_args[..contain_args.len() - 1 - args.len()];
        match spawned::serve(&entry.path, args, fence, fence_args, &env, input, cap) {
            spawned::Started::Proc(proc) => return Ok(*proc),
            spawned::Started::Lost(e) => return Err(e),
            spawned::Started::Not(input) => input,
        }
    } else {
        input
    };
    let input = if settings.sandbox.spawner {
        match spawned::start(&contain_args, fence, &env, input, cap) {
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

/// The environment tool `name` gets (`secrets::tool_env`), worked out once
/// per tool: the host's own environment is settled before its first call,
/// and a host making many calls would otherwise sift it for each.
fn tool_env(name: &str, pass: &[String]) -> Vec<(OsString, OsString)> {
    type Known = Vec<(String, Vec<String>, Vec<(OsString, OsString)>)>;
    static KNOWN: std::sync::Mutex<Known> = std::sync::Mutex::new(Vec::new());
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, env)) = known.iter().find(|(n, p, _)| n == name && p == pass) {
        return env.clone();
    }
    let env = secrets::tool_env(std::env::vars_os(), name, pass);
    known.push((name.to_string(), pass.to_vec(), env.clone()));
    env
}

/// A program the host runs for itself on a workspace a tool could have
/// shaped (git's facts at start, which obey a repository's config and so
/// could run what a tool wrote there): inside the read-only fence, with no
/// network, the guard's paths hidden, and an environment without secrets.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadOnly {
    args: Vec<OsString>,
}

impl ReadOnly {
    /// The fence for `settings`, or None where this kernel cannot build it
    /// (then the program is not run at all).
    pub fn new(settings: &Settings) -> Option<ReadOnly> {
        use crate::sandbox::{Mode, Support};
        let gap = match settings.sandbox.mode {
            Mode::Off => Support::detect().gap(Mode::ReadOnly),
            _ => settings.sandbox.unavailable.clone(),
        };
        if gap.is_some() {
            return None;
        }
        let fence = Fence {
            mode: crate::sandbox::Mode::ReadOnly,
            writable: Vec::new(),
            network: false,
            guard: settings.sandbox.guard.clone(),
            limits: settings.sandbox.limits,
            // The host's own program is short and bounded by its limits;
            // it waits on no scope.
            scope_bus: None,
        };
        Some(ReadOnly {
            args: exec::arguments(&fence, false),
        })
    }

    /// `program` with `args`, to run inside the fence.
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(own_executable());
        // The name decides the personality; "ikigai-tools" is none of the
        // tools, so the first argument (sandbox-exec) does.
        std::os::unix::process::CommandExt::arg0(&mut cmd, "ikigai-tools");
        cmd.args(&self.args)
            .arg(program)
            .args(args)
            .env_clear()
            .envs(secrets::base_env(std::env::vars_os()));
        cmd
    }
}

/// This executable, to run as the containment process: `/proc/self/exe`
/// names the very file the host runs from, even if it was replaced or
/// deleted since (a rebuild while the assistant runs); without /proc, the
/// path it was started from, looked up once.
pub fn own_executable() -> &'static Path {
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
    let mut finished = proc.finish();
    if let Some(worker) = finished.worker.take() {
        spawned::give_back(worker);
    }
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
