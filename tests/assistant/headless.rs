//! `ikigai -p` for scripts (decision 65) and local model servers (decision
//! 66), end to end: the real binary against the fake provider, every event
//! line checked against the published schema (docs/headless-events.schema.json)
//! with the Python `jsonschema` package of the venv the MCP tests make, so
//! the schema is read by a validator that is not ours.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::{json, Value};

use super::{against, ikigai, no_problems};
use crate::common::model_server::{calls, text, Api, ModelServer, Reply};
use crate::common::{link, Output, Run};

/// The jsonschema release the tests validate with.
const JSONSCHEMA: &str = "jsonschema==4.26.0";

fn schema_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/headless-events.schema.json")
}

/// The venv's python with `jsonschema`, installed once; None (the reason
/// printed) without python3.
fn validator() -> Option<&'static Path> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let python = crate::mcp::python()?.to_path_buf();
            let marker = python
                .parent()?
                .parent()?
                .join(format!(".installed-{JSONSCHEMA}"));
            if !marker.exists() {
                let pip = python.with_file_name("pip");
                let status = Command::new(pip)
                    .args(["install", "-q", JSONSCHEMA])
                    .status()
                    .expect("run pip");
                assert!(status.success(), "pip install {JSONSCHEMA} failed");
                std::fs::write(&marker, "").expect("marker");
            }
            Some(python)
        })
        .as_deref()
}

/// Checks every event against the published schema: the schema itself
/// first (it must be a valid 2020-12 schema), then each object.
fn validate(events: &[Value]) {
    const CHECK: &str = r#"
import json, sys
from jsonschema import Draft202012Validator
schema = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(schema)
v = Draft202012Validator(schema)
bad = 0
for n, line in enumerate(sys.stdin, 1):
    for e in v.iter_errors(json.loads(line)):
        bad += 1
        print(f"line {n}: {e.message} at {list(e.absolute_path)}")
sys.exit(1 if bad else 0)
"#;
    let Some(python) = validator() else {
        return;
    };
    let mut child = Command::new(python)
        .args(["-c", CHECK])
        .arg(schema_path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python");
    let lines: String = events.iter().map(|e| format!("{e}\n")).collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "events against the schema:\n{}{}\n{lines}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A home with our bash and file_read as system tools.
fn home_with_tools() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("libexec")).unwrap();
    for tool in ["bash", "file-read"] {
        std::os::unix::fs::symlink(link(tool), home.path().join("libexec").join(tool)).unwrap();
    }
    home
}

/// The lines of a stream-json run, parsed, all valid against the schema.
pub(super) fn events(out: &Output) -> Vec<Value> {
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}\n{out:?}")))
        .collect();
    validate(&events);
    events
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn streaming(run: Run) -> Run {
    run.args(["--output-format", "stream-json"])
}

#[test]
fn two_tool_rounds_in_events_in_order() {
    let home = home_with_tools();
    std::fs::write(home.path().join("notes.txt"), "remember the milk\n").unwrap();
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[("bash", json!({"command": "echo first"}))]),
            Reply::Calls(
                "Reading now.".into(),
                vec![("file_read".into(), json!({"path": "notes.txt"}))],
            ),
            text("The note says: remember the milk."),
        ],
    );
    let out = streaming(against(&server, home.path()))
        .args(["-p", "what does the note say?"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    let events = events(&out);
    assert_eq!(
        types(&events),
        [
            "session.started",
            "tool.started",
            "tool.finished",
            "assistant.message",
            "tool.started",
            "tool.finished",
            "assistant.message",
            "result"
        ],
        "{out:?}"
    );
    let started = &events[0];
    assert_eq!(started["provider"], "openai");
    assert_eq!(started["model"], "gpt-4.1");
    let tools: Vec<&str> = started["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"bash") && tools.contains(&"file_read"),
        "{tools:?}"
    );
    assert_eq!(
        started["cwd"].as_str().map(Path::new),
        Some(home.path().canonicalize().unwrap().as_path())
    );
    assert_eq!(events[1]["name"], "bash");
    assert_eq!(events[1]["arguments"], json!({"command": "echo first"}));
    assert_eq!(events[2]["call_id"], events[1]["call_id"]);
    assert_eq!(events[2]["ok"], true);
    assert!(events[2].get("error_code").is_none());
    assert_eq!(events[3]["text"], "Reading now.");
    assert_eq!(events[4]["name"], "file_read");
    assert_eq!(events[6]["text"], "The note says: remember the milk.");
    let result = &events[7];
    assert_eq!(result["ok"], true);
    assert_eq!(result["exit_code"], 0);
    assert_eq!(result["text"], "The note says: remember the milk.");
    assert_eq!(result["turns"], 3);
    assert_eq!(result["tool_calls"], 2);
    assert_eq!(result["session_id"], started["session_id"]);
    // The session the events name is the log on disk.
    let id = started["session_id"].as_str().unwrap();
    let log = home.path().join(format!("data/ikigai/sessions/{id}.jsonl"));
    assert!(log.is_file(), "{}", log.display());
    // The fake provider counts usage per reply; gpt-4.1 has a price.
    let usage = &result["usage"];
    assert!(usage["input"].as_u64().unwrap() > 0, "{result}");
    assert!(usage["output"].as_u64().unwrap() > 0, "{result}");
    assert!(result["cost_usd"].as_f64().unwrap() > 0.0, "{result}");
    // Nothing but events on stdout, and nothing of the terminal's view.
    assert!(!out.stdout.contains('→'), "{}", out.stdout);
}

#[test]
fn json_prints_exactly_one_result_object() {
    let home = home_with_tools();
    let server = ModelServer::start(
        Api::Anthropic,
        vec![
            calls(&[("bash", json!({"command": "echo hi"}))]),
            text("Done: hi."),
        ],
    );
    let out = against(&server, home.path())
        .args(["--output-format", "json", "-p", "say hi"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    let result = out.json();
    validate(std::slice::from_ref(&result));
    assert_eq!(result["type"], "result");
    assert_eq!(result["text"], "Done: hi.");
    assert_eq!(result["tool_calls"], 1);
    assert_eq!(result["turns"], 2);
    assert!(result["duration_ms"].as_u64().is_some());
}

#[test]
fn a_refused_call_is_a_finished_call_with_permission_denied() {
    let home = home_with_tools();
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[("bash", json!({"command": "rm -rf build"}))]),
            text("I was not allowed to."),
        ],
    );
    let out = streaming(against(&server, home.path()))
        .args(["--deny", "bash(rm *)", "-p", "clean up"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    let events = events(&out);
    let finished = events
        .iter()
        .find(|e| e["type"] == "tool.finished")
        .unwrap();
    assert_eq!(finished["ok"], false);
    assert_eq!(finished["error_code"], "PERMISSION_DENIED");
    assert_eq!(events.last().unwrap()["text"], "I was not allowed to.");
}

#[test]
fn a_provider_500_that_recovers_is_not_an_error() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            Reply::Status(500, r#"{"error": {"message": "overloaded"}}"#.into()),
            text("Fine now."),
        ],
    );
    let out = streaming(against(&server, home.path()))
        .args(["-p", "hello"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    let events = events(&out);
    assert_eq!(
        types(&events),
        ["session.started", "assistant.message", "result"]
    );
    // The retry is a diagnostic, on stderr.
    assert!(out.stderr.contains("retrying"), "{}", out.stderr);
}

#[test]
fn a_provider_500_that_does_not_recover_ends_with_an_error_and_exit_1() {
    let home = tempfile::tempdir().unwrap();
    let failing = || Reply::Status(500, r#"{"error": {"message": "overloaded"}}"#.into());
    let server = ModelServer::start(Api::OpenAi, (0..5).map(|_| failing()).collect());
    let out = streaming(against(&server, home.path()))
        .args(["-p", "hello"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(server.requests().len(), 5, "the first try and 4 retries");
    let events = events(&out);
    assert_eq!(types(&events), ["session.started", "error", "result"]);
    assert_eq!(events[1]["code"], "MODEL_ERROR");
    let message = events[1]["message"].as_str().unwrap();
    assert!(message.contains("HTTP 500: overloaded"), "{message}");
    assert!(message.contains("gave up after 4 retries"), "{message}");
    let result = &events[2];
    assert_eq!(result["ok"], false);
    assert_eq!(result["exit_code"], 1);
    assert_eq!(result["error"], events[1]["message"]);
}

#[test]
fn the_tool_round_limit_exits_3() {
    let home = home_with_tools();
    let step = || calls(&[("bash", json!({"command": "true"}))]);
    let server = ModelServer::start(Api::OpenAi, vec![step(), step()]);
    let out = streaming(against(&server, home.path()))
        .args(["--max-tool-rounds", "1", "-p", "loop"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 3, "{out:?}");
    let events = events(&out);
    assert_eq!(
        types(&events),
        [
            "session.started",
            "tool.started",
            "tool.finished",
            "error",
            "result"
        ]
    );
    assert_eq!(events[3]["code"], "TOOL_ROUND_LIMIT");
    assert_eq!(events[4]["exit_code"], 3);
    assert_eq!(events[4]["ok"], false);
    // The same code in the text format.
    let server = ModelServer::start(Api::OpenAi, vec![step(), step()]);
    let out = against(&server, home.path())
        .args(["--max-tool-rounds", "1", "-p", "loop"])
        .output();
    assert_eq!(out.code, 3, "{out:?}");
}

/// A run whose model calls bash to sleep, ended by `signal` once the
/// sleeper runs: the result is written, the exit is 130, the tool is dead.
fn interrupted_by(signal: libc::c_int) {
    let home = home_with_tools();
    let pidfile = home.path().join("sleeper.pid");
    let command = format!(
        "echo $$ > {0}.tmp; mv {0}.tmp {0}; sleep 300",
        pidfile.display()
    );
    let server = ModelServer::start(
        Api::OpenAi,
        vec![calls(&[("bash", json!({ "command": command }))])],
    );
    let out = streaming(against(&server, home.path()))
        .args(["-p", "sleep"])
        .output_signalling(signal, || pidfile.exists());
    no_problems(&server, &out);
    assert_eq!(out.code, 130, "signal {signal}: {out:?}");
    let events = events(&out);
    assert_eq!(
        types(&events),
        [
            "session.started",
            "tool.started",
            "tool.finished",
            "error",
            "result"
        ],
        "{out:?}"
    );
    assert_eq!(events[2]["error_code"], "CANCELLED");
    assert_eq!(events[3]["code"], "CANCELLED");
    assert_eq!(events[4]["exit_code"], 130);
    let pid = crate::host::Pid::read(&pidfile);
    assert!(pid.dies(), "the tool outlived signal {signal}");
}

#[test]
fn sigint_ends_the_running_call_writes_the_result_and_exits_130() {
    interrupted_by(libc::SIGINT);
}

#[test]
fn sigterm_ends_the_running_call_writes_the_result_and_exits_130() {
    interrupted_by(libc::SIGTERM);
}

#[test]
fn the_last_message_goes_to_a_file_too() {
    let home = tempfile::tempdir().unwrap();
    let answer = home.path().join("answer.md");
    std::fs::write(&answer, "an old answer").unwrap();
    let server = ModelServer::start(Api::Google, vec![text("# Title\n\nThe answer.")]);
    let out = against(&server, home.path())
        .args(["-p", "q", "--output-last-message"])
        .arg(&answer)
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&answer).unwrap(),
        "# Title\n\nThe answer."
    );
    // A run without an answer leaves no old one behind.
    let server = ModelServer::start(Api::Google, vec![Reply::Status(400, "bad".into())]);
    let out = against(&server, home.path())
        .args([
            "--output-format",
            "json",
            "-p",
            "q",
            "--output-last-message",
        ])
        .arg(&answer)
        .output();
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(std::fs::read_to_string(&answer).unwrap(), "");
}

#[test]
fn the_message_from_stdin() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Api::OpenAi, vec![text("Got it.")]);
    let out = against(&server, home.path())
        .args(["--output-format", "json", "-p", "-"])
        .stdin("a message\nof two lines\n")
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        super::user_texts(Api::OpenAi, &server.requests()[0].body),
        ["a message\nof two lines\n"]
    );
}

#[test]
fn bad_input_is_a_usage_error_before_any_request() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Api::OpenAi, vec![text("never")]);
    let usage_error = |given: &dyn Fn(Run) -> Run, says: &str| {
        let out = given(against(&server, home.path())).output();
        assert_eq!(out.code, 2, "{out:?}");
        assert!(out.stderr.contains(says), "{}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    };
    usage_error(
        &|r| r.args(["--output-format", "yaml", "-p", "x"]),
        "'yaml' is not an output format; choose text, json, stream-json",
    );
    let nowhere = home.path().join("no/such/dir/answer.txt");
    usage_error(
        &|r| r.args(["-p", "x", "--output-last-message"]).arg(&nowhere),
        "does not exist",
    );
    usage_error(
        &|r| r.args(["-p", "-"]).stdin(" \n"),
        "the message on stdin is empty",
    );
    usage_error(
        &|r| r.args(["-p", "-"]).stdin(b"caf\xe9\n"),
        "the message on stdin is not UTF-8 (byte 3 is not valid)",
    );
    usage_error(
        &|r| r.args(["--output-format", "json"]).stdin("hi\n"),
        "--output-format applies to -p MESSAGE only",
    );
    assert!(server.requests().is_empty(), "a request was sent");
}

/// `program` run in `home` as `ikigai` runs in these tests, against
/// `server`: for a reader of our own, or a script that runs `ikigai`.
fn command(program: &Path, home: &Path, server: &ModelServer) -> Command {
    let mut cmd = Command::new(program);
    for (k, v) in server.env() {
        cmd.env(k, v);
    }
    for var in [
        "IKIGAI_APPROVAL",
        "IKIGAI_CONFIG",
        "IKIGAI_PROVIDER",
        "IKIGAI_MODEL",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("IKIGAI_LIBEXEC_DIR", home.join("libexec"))
        .env("IKIGAI_TOOLS_DIR", home.join("tools"))
        .env("IKIGAI_RETRY_BASE_MS", "1")
        .env("OLLAMA_HOST", "127.0.0.1:1")
        .current_dir(home);
    cmd
}

#[test]
fn the_example_logs_one_line_per_call() {
    let home = home_with_tools();
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[
                ("bash", json!({"command": "echo hi"})),
                ("bash", json!({"command": "rm -rf x"})),
            ]),
            text("Said hi; not allowed to remove x."),
        ],
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tool-call-log.sh");
    let answer = home.path().join("answer.txt");
    let out = command(&script, home.path(), &server)
        .env("IKIGAI", link("ikigai"))
        .env("ANSWER", &answer)
        .args(["greet", "--provider", "openai", "--deny", "bash(rm *)"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{out:?}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    assert!(
        lines[0].starts_with("session ") && lines[0].ends_with("openai gpt-4.1"),
        "{stdout}"
    );
    assert!(
        lines[1].starts_with("ok   ") && lines[1].ends_with(r#"bash {"command":"echo hi"}"#),
        "{stdout}"
    );
    assert!(
        lines[2].starts_with("FAIL ")
            && lines[2].ends_with(r#"bash {"command":"rm -rf x"}  [PERMISSION_DENIED]"#),
        "{stdout}"
    );
    assert!(
        lines[3].starts_with("done: exit 0, 2 replies, 2 calls, "),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(&answer).unwrap(),
        "Said hi; not allowed to remove x."
    );
    // A failed run's code comes through the pipe.
    let server = ModelServer::start(Api::OpenAi, vec![Reply::Status(400, "no".into())]);
    let out = command(&script, home.path(), &server)
        .env("IKIGAI", link("ikigai"))
        .args(["greet", "--provider", "openai"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{out:?}");
    assert!(stdout.contains("[MODEL_ERROR]"), "{stdout}");
}

#[test]
fn a_reader_that_goes_away_ends_the_run_cleanly() {
    let home = home_with_tools();
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[("bash", json!({"command": "sleep 2; echo late"}))]),
            text("never read"),
        ],
    );
    let mut child = command(&link("ikigai"), home.path(), &server)
        .args(["--provider", "openai", "--output-format", "stream-json"])
        .args(["-p", "go"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // As `head -1` would: one line, then the pipe is closed.
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("session.started"), "{first}");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("stdout was closed"), "{stderr}");
    // Stopped at once: the model was not asked again.
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn ollama_is_found_without_a_key_and_not_with_one() {
    let home = tempfile::tempdir().unwrap();
    let ollama = ModelServer::start_ollama(
        &["qwen3:4b", "llama3.2:latest"],
        vec![text("Hello from a local model.")],
    );
    let out = streaming(ikigai(home.path()))
        .env("OLLAMA_HOST", ollama.host_port())
        .args(["-p", "hi"])
        .output();
    no_problems(&ollama, &out);
    assert_eq!(out.code, 0, "{out:?}");
    let events = events(&out);
    assert_eq!(events[0]["provider"], "ollama");
    assert_eq!(events[0]["model"], "qwen3:4b");
    assert_eq!(events.last().unwrap()["text"], "Hello from a local model.");
    assert_eq!(events.last().unwrap()["cost_usd"], 0.0);
    // The start line says which model was chosen, and where.
    assert!(
        out.stderr.contains(&format!(
            "using the Ollama server at http://{}, model qwen3:4b",
            ollama.host_port()
        )),
        "{}",
        out.stderr
    );
    let requests = ollama.requests();
    assert_eq!(
        (requests[0].method.as_str(), requests[0].target.as_str()),
        ("GET", "/api/tags")
    );
    assert_eq!(requests[1].target, "/v1/chat/completions");
    assert_eq!(requests[1].body["model"], "qwen3:4b");

    // With a key, the keyed provider is used and Ollama is never asked.
    let ollama = ModelServer::start_ollama(&["qwen3:4b"], vec![]);
    let keyed = ModelServer::start(Api::Anthropic, vec![text("From the cloud.")]);
    let mut run = ikigai(home.path()).env("OLLAMA_HOST", ollama.host_port());
    for (k, v) in keyed.env() {
        run = run.env(k, v);
    }
    let out = run.args(["-p", "hi"]).output();
    no_problems(&keyed, &out);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "From the cloud.\n");
    assert!(ollama.requests().is_empty(), "Ollama was asked");
}

#[test]
fn provider_ollama_takes_the_first_model_or_the_named_one() {
    let home = tempfile::tempdir().unwrap();
    let ollama =
        ModelServer::start_ollama(&["mistral:7b"], vec![text("First listed."), text("Named.")]);
    let out = ikigai(home.path())
        .env("OLLAMA_HOST", format!("http://{}", ollama.host_port()))
        .args(["--provider", "ollama", "-p", "hi"])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("mistral:7b, the first model it lists"),
        "{}",
        out.stderr
    );
    let out = ikigai(home.path())
        .env("OLLAMA_HOST", ollama.host_port())
        .args(["--provider", "ollama", "--model", "phi4", "-p", "hi"])
        .output();
    no_problems(&ollama, &out);
    assert_eq!(out.code, 0, "{out:?}");
    let requests = ollama.requests();
    let chats: Vec<&str> = requests
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.body["model"].as_str().unwrap())
        .collect();
    assert_eq!(chats, ["mistral:7b", "phi4"]);
    // No key goes to a local server.
    assert!(requests
        .iter()
        .all(|r| !r.headers.contains_key("authorization")));
    // Nothing listening: said in words, exit 1.
    let out = ikigai(home.path())
        .args([
            "--provider",
            "ollama",
            "--output-format",
            "json",
            "-p",
            "hi",
        ])
        .output();
    assert_eq!(out.code, 1, "{out:?}");
    let result = out.json();
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("no Ollama server answered at http://127.0.0.1:1"),
        "{result}"
    );
}

#[test]
fn a_compaction_is_an_event_with_the_tokens_before_and_after() {
    let home = home_with_tools();
    let overflow = r#"{"error": {"message": "This model's maximum context length is 128000 tokens.", "code": "context_length_exceeded"}}"#;
    // A call whose output (some 9 KB) a summary makes smaller, then a
    // request the provider says does not fit.
    let server = ModelServer::start_counting(
        Api::OpenAi,
        vec![
            calls(&[("bash", json!({"command": "seq 1 2000"}))]),
            Reply::Status(400, overflow.into()),
            text("The summary."),
            text("Answered."),
        ],
    );
    server.report_cached(3);
    let out = streaming(against(&server, home.path()))
        .args(["-p", "count"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    let events = events(&out);
    assert_eq!(
        types(&events),
        [
            "session.started",
            "tool.started",
            "tool.finished",
            "compacted",
            "assistant.message",
            "result"
        ]
    );
    let compacted = &events[3];
    assert!(
        compacted["before_tokens"].as_u64().unwrap() > compacted["after_tokens"].as_u64().unwrap()
    );
    // The three requests that were answered each read 3 tokens from the cache.
    assert_eq!(events[5]["usage"]["cached_input"], 9);
}

#[test]
fn a_plan_update_is_an_event_with_the_whole_checklist() {
    let home = home_with_tools();
    let plan = json!({"plan": [
        {"step": "read the code", "status": "completed"},
        {"step": "fix the bug", "status": "in_progress"}
    ], "explanation": "halfway"});
    let server = ModelServer::start(
        Api::Anthropic,
        vec![calls(&[("update_plan", plan)]), text("Planned.")],
    );
    let out = streaming(against(&server, home.path()))
        .args(["-p", "plan it"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    let events = events(&out);
    let plan = events.iter().find(|e| e["type"] == "plan.updated").unwrap();
    assert_eq!(plan["plan"][1]["status"], "in_progress");
    assert_eq!(plan["explanation"], "halfway");
}
