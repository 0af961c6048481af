//! The assistant with real tools: the model's calls run through the host
//! (discovery, subprocess, timeout, envelope) and the envelopes reach the
//! provider as its tool-result messages.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{json, Value};

use super::{against, envelopes, no_problems, user_texts, APIS};
use crate::common::link;
use crate::common::model_server::{calls, text, Api, ModelServer, Reply};

/// A shell-script tool speaking the ikigai protocol.
fn script(dir: &Path, file: &str, schema: Value, body: &str) {
    let path = dir.join(file);
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --schema ]; then\ncat <<'JSON'\n{schema}\nJSON\nexit 0\nfi\ninput=$(cat)\n{body}\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn schema(name: &str, properties: Value) -> Value {
    json!({
        "name": name,
        "description": format!("Test tool {name}."),
        "parameters": {"type": "object", "properties": properties, "required": []}
    })
}

/// The tools of these tests: our `bash` as a system tool, and scripts as
/// user tools.
fn install_tools(home: &Path) {
    std::fs::create_dir_all(home.join("libexec")).unwrap();
    std::fs::create_dir_all(home.join("tools")).unwrap();
    std::os::unix::fs::symlink(link("bash"), home.join("libexec/bash")).unwrap();
    let tools = home.join("tools");
    // Waits (at most 10 s) for a file its sibling call creates: only calls
    // that run at the same time both meet.
    // Read-only, so that two calls of one reply may run together.
    let mut barrier = schema(
        "barrier",
        json!({"me": {"type": "string"}, "other": {"type": "string"}}),
    );
    barrier["annotations"] = json!({"readOnlyHint": true});
    script(
        &tools,
        "barrier",
        barrier,
        r#"field() { printf '%s' "$input" | sed -n "s/.*\"$1\" *: *\"\([^\"]*\)\".*/\1/p"; }
me=$(field me); other=$(field other)
touch "$me"
i=0
while [ ! -e "$other" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
if [ -e "$other" ]; then met=true; else met=false; fi
printf '{"me":"%s","met":%s}\n' "$(basename "$me")" "$met""#,
    );
    script(
        &tools,
        "crash",
        schema("crash", json!({})),
        "echo 'half a result' ; echo 'disk on fire' >&2; exit 3",
    );
    script(&tools, "sleepy", schema("sleepy", json!({})), "sleep 30");
    script(
        &tools,
        "needs_key",
        schema("needs_key", json!({})),
        r#"echo '{"kind":"config_required","content":"Configuration Required: set NEEDS_KEY_TOKEN"}' >&2
echo '{"success":false,"error":"No key configured","error_code":"AUTH_MISSING"}'
exit 1"#,
    );
}

#[test]
fn a_multi_round_tool_conversation_per_provider() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        install_tools(home.path());
        let server = ModelServer::start(
            api,
            vec![
                calls(&[("bash", json!({"command": "echo round one"}))]),
                Reply::Calls(
                    "Now two more.".into(),
                    vec![
                        ("bash".into(), json!({"command": "echo two-a"})),
                        ("bash".into(), json!({"command": "echo two-b >&2; exit 4"})),
                    ],
                ),
                text("All done."),
            ],
        );
        let out = against(&server, home.path())
            .args(["-p", "run things"])
            .output();
        no_problems(&server, &out);
        assert_eq!(out.code, 0, "{api:?} {out:?}");
        assert_eq!(out.stdout, "Now two more.\nAll done.\n", "{api:?}");
        assert!(
            out.stderr.contains(r#"→ bash(command: "echo round one")"#),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr.contains("✓ Ran echo round one (exit 0, 1 line)"),
            "{}",
            out.stderr
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 3);
        // Every request offers the discovered tools in the provider's format.
        for r in &requests {
            let names = tool_names(api, &r.body);
            for expected in ["barrier", "bash", "crash", "needs_key", "sleepy"] {
                assert!(names.contains(&expected.to_string()), "{api:?} {names:?}");
            }
        }
        let second = envelopes(api, &requests[1].body);
        assert_eq!(second.len(), 1);
        assert_eq!(
            second[0].1,
            json!({"tool_success": true, "result": {"output": "round one", "exit_code": 0}})
        );
        let third = envelopes(api, &requests[2].body);
        assert_eq!(third.len(), 3, "{api:?}");
        assert_eq!(third[1].1["result"]["output"], "two-a");
        assert_eq!(
            third[2].1["result"],
            json!({"output": "two-b", "exit_code": 4})
        );
        assert_eq!(user_texts(api, &requests[2].body), ["run things"]);
    }
}

fn tool_names(api: Api, body: &Value) -> Vec<String> {
    let tools = match api {
        Api::Google => &body["tools"][0]["functionDeclarations"],
        _ => &body["tools"],
    };
    tools
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            t["name"]
                .as_str()
                .or(t["function"]["name"].as_str())
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn parallel_read_only_calls_run_at_once_and_return_in_the_models_order() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        install_tools(home.path());
        let meet = home.path().join("meet");
        std::fs::create_dir(&meet).unwrap();
        let (a, b) = (meet.join("a"), meet.join("b"));
        let server = ModelServer::start(
            api,
            vec![
                calls(&[
                    ("barrier", json!({"me": a, "other": b})),
                    ("barrier", json!({"me": b, "other": a})),
                ]),
                text("Met."),
            ],
        );
        let out = against(&server, home.path()).args(["-p", "meet"]).output();
        no_problems(&server, &out);
        assert_eq!(out.code, 0, "{out:?}");
        let got = envelopes(api, &server.requests()[1].body);
        let results: Vec<&Value> = got.iter().map(|(_, e)| &e["result"]).collect();
        assert_eq!(
            results,
            [
                &json!({"me": "a", "met": true}),
                &json!({"me": "b", "met": true})
            ],
            "{api:?}"
        );
    }
}

#[test]
fn a_failure_a_timeout_and_an_unknown_tool_reach_the_model_as_envelopes() {
    let home = tempfile::tempdir().unwrap();
    install_tools(home.path());
    let server = ModelServer::start(
        Api::Anthropic,
        vec![
            calls(&[
                ("crash", json!({})),
                ("sleepy", json!({})),
                ("nope", json!({})),
            ]),
            text("Three failures."),
        ],
    );
    let out = against(&server, home.path())
        .args(["--timeout", "1", "-p", "fail"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    let got = envelopes(Api::Anthropic, &server.requests()[1].body);
    let crash = &got[0].1;
    assert_eq!(crash["tool_success"], false);
    assert_eq!(crash["error_code"], "TOOL_CRASHED");
    assert_eq!(crash["exit_code"], 3);
    assert!(
        crash["stderr"].as_str().unwrap().contains("disk on fire"),
        "{crash}"
    );
    let timeout = &got[1].1;
    assert_eq!(timeout["error_code"], "TOOL_TIMEOUT", "{timeout}");
    assert_eq!(timeout["exit_code"], Value::Null);
    assert_eq!(got[2].1["error_code"], "TOOL_NOT_FOUND");
    assert!(
        out.stderr.contains("✗ crash: TOOL_CRASHED"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("✗ sleepy: TOOL_TIMEOUT"),
        "{}",
        out.stderr
    );
}

#[test]
fn config_required_events_reach_the_person_not_the_model() {
    let home = tempfile::tempdir().unwrap();
    install_tools(home.path());
    let server = ModelServer::start(
        Api::OpenAi,
        vec![calls(&[("needs_key", json!({}))]), text("Needs a key.")],
    );
    let out = against(&server, home.path())
        .args(["-p", "search"])
        .output();
    no_problems(&server, &out);
    assert!(
        out.stderr
            .contains("Configuration Required: set NEEDS_KEY_TOKEN"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("\x1b["),
        "no colours off a terminal: {}",
        out.stderr
    );
    let body = server.requests()[1].body.to_string();
    assert!(!body.contains("NEEDS_KEY_TOKEN"), "{body}");
    let got = envelopes(Api::OpenAi, &server.requests()[1].body);
    assert_eq!(got[0].1["error_code"], "AUTH_MISSING");
    // The session log keeps the event with the envelope.
    let sessions = home.path().join("data/ikigai/sessions");
    let log = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let log = std::fs::read_to_string(log).unwrap();
    assert!(
        log.contains("NEEDS_KEY_TOKEN") && log.contains("AUTH_MISSING"),
        "{log}"
    );
}

#[test]
fn the_tool_round_limit_stops_a_looping_model() {
    let home = tempfile::tempdir().unwrap();
    install_tools(home.path());
    let step = || calls(&[("bash", json!({"command": "true"}))]);
    let server = ModelServer::start(
        Api::OpenAi,
        vec![step(), step(), step(), text("Continuing.")],
    );
    let out = against(&server, home.path())
        .args(["--max-tool-rounds", "2"])
        .stdin("loop forever\ngo on\n")
        .output();
    no_problems(&server, &out);
    assert!(
        out.stderr.contains("Stopped after 2 tool rounds"),
        "{}",
        out.stderr
    );
    assert_eq!(out.code, 1, "{out:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let last = envelopes(Api::OpenAi, &requests[3].body);
    assert_eq!(last.len(), 3);
    assert_eq!(last[2].1["error_code"], "TOOL_ROUND_LIMIT");
    assert_eq!(out.stdout, "Continuing.\n");
}

#[test]
fn commands_and_messages_on_stdin_and_the_stub_calling_tools() {
    let home = tempfile::tempdir().unwrap();
    install_tools(home.path());
    let out = super::ikigai(home.path())
        .args(["--provider", "stub"])
        .stdin("/tool\ncall bash {\"command\": \"echo from the stub\"}\n/quit\nnever\n")
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.starts_with("Available tools:\n"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("  barrier"), "{}", out.stdout);
    assert!(
        out.stdout.contains(r#"[stub] bash returned {"tool_success":true,"result":{"output":"from the stub","exit_code":0}}"#),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("never"));
}

#[test]
fn sigterm_and_sighup_kill_the_running_tool_and_end_the_assistant() {
    for (signal, code) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let home = tempfile::tempdir().unwrap();
        install_tools(home.path());
        let pidfile = home.path().join("sleeper.pid");
        let command = format!(
            "echo $$ > {}.tmp; mv {0}.tmp {0}; sleep 322",
            pidfile.display()
        );
        let message = format!("call bash {}", json!({ "command": command }));
        let out = super::ikigai(home.path())
            .args(["--provider", "stub", "-p", &message])
            .output_signalling(signal, || pidfile.exists());
        assert_eq!(out.code, code, "signal {signal}: {out:?}");
        let pid = crate::host::Pid::read(&pidfile);
        assert!(pid.dies(), "the tool outlived signal {signal}");
    }
}

#[test]
fn ctrl_c_kills_a_running_tool_and_the_conversation_goes_on() {
    let home = tempfile::tempdir().unwrap();
    install_tools(home.path());
    let pidfile = home.path().join("sleeper.pid");
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[(
                "bash",
                json!({"command": format!("echo $$ > {}; sleep 60", pidfile.display())}),
            )]),
            text("Next answer."),
        ],
    );
    let out = against(&server, home.path())
        .stdin("sleep please\nnext\n")
        .output_interrupting(|| pidfile.exists());
    no_problems(&server, &out);
    assert!(
        out.stderr
            .contains("Cancelled by you: the running tools were stopped"),
        "{out:?}"
    );
    assert!(out.stdout.ends_with("Next answer.\n"), "{out:?}");
    // Gone, or a zombie nobody reaped yet: either way no longer running.
    assert!(
        crate::host::Pid::read(&pidfile).dead(),
        "the tool's shell survived Ctrl-C"
    );
    let requests = server.requests();
    let got = envelopes(Api::OpenAi, &requests[1].body);
    assert_eq!(got[0].1["tool_success"], false, "{got:?}");
    assert_eq!(
        user_texts(Api::OpenAi, &requests[1].body),
        ["sleep please", "next"]
    );
}

#[test]
fn arguments_that_are_not_json_are_reported_as_such() {
    let home = tempfile::tempdir().unwrap();
    install_tools(home.path());
    let call = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
        "id": "call_1", "type": "function",
        "function": {"name": "bash", "arguments": "{\"command\": oops"}}]}}]});
    let end = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            Reply::Raw(format!("data: {call}\n\ndata: {end}\n\ndata: [DONE]\n\n")),
            text("Sorry."),
        ],
    );
    let out = against(&server, home.path()).args(["-p", "go"]).output();
    no_problems(&server, &out);
    let got = envelopes(Api::OpenAi, &server.requests()[1].body);
    assert_eq!(got[0].1["error_code"], "INVALID_PARAMS", "{got:?}");
    let error = got[0].1["error"].as_str().unwrap();
    assert!(error.contains("arguments are not valid JSON: "), "{error}");
}

#[test]
fn gemini_users_are_told_which_tools_it_cannot_be_offered() {
    let home = tempfile::tempdir().unwrap();
    install_tools(home.path());
    script(
        &home.path().join("tools"),
        "9lives",
        schema("9lives", json!({})),
        "echo '{}'",
    );
    let server = ModelServer::start(Api::Google, vec![text("One."), text("Two.")]);
    let out = against(&server, home.path()).stdin("one\ntwo\n").output();
    no_problems(&server, &out);
    let notice = "not offered to the model: 9lives";
    assert_eq!(out.stderr.matches(notice).count(), 1, "{}", out.stderr);
}
