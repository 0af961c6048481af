//! Tool calls through the host (decisions 2, 4, 8, 9 and 19 in
//! docs/decisions.md; the envelope in docs/protocols.md): every envelope and
//! code, both protocols, the timeout and the cap, process
//! groups, and `config_required` events kept from the model.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{Dirs, Pid};
use crate::common::{bin, run_main};

/// Directories holding one tool per fixture behaviour, and our bash.
fn host() -> Dirs {
    let d = Dirs::new();
    for name in [
        "echo",
        "segv",
        "junk",
        "array",
        "empty",
        "big",
        "bigerr",
        "sleepy",
        "grandchild",
        "escapee",
        "lingering",
        "noread",
        "fail_json",
        "fail_plain",
        "events",
    ] {
        d.sys_tool("tool.sh", name);
    }
    d.sys_tool("shellclaw.sh", "claw");
    d.sys_tool("shellclaw.sh", "weather");
    d.sys_tool("flat.sh", "legacy");
    d.user_tool("broken.sh", "junkyard");
    d.link(&d.sys, "bash", bin());
    d
}

fn failure(error: &str, code: &str, exit: Value, stdout: &str, stderr: &str) -> Value {
    json!({"tool_success": false, "error": error, "error_code": code,
           "exit_code": exit, "stdout": stdout, "stderr": stderr})
}

#[test]
fn ikigai_protocol_gets_arguments_on_stdin() {
    let d = host();
    let args = json!({"text": "héllo \"quoted\"\n", "n": 3});
    let (envelope, out) = d.call(&[], "echo", &args);
    assert_eq!(
        envelope,
        json!({"tool_success": true, "result": {"tool": "echo",
            "path": d.sys.join("echo").to_string_lossy(), "argc": 0, "input": args}})
    );
    // Exactly as the model receives it: one compact JSON line.
    assert_eq!(
        out.stdout,
        format!("{}\n", serde_json::to_string(&envelope).unwrap())
    );
    assert_eq!(out.stderr, "");
}

#[test]
fn arguments_come_from_stdin_when_omitted() {
    let d = host();
    let out = d
        .ikigai()
        .args(["call", "echo"])
        .stdin(r#"{"text":"piped"}"#)
        .output();
    assert_eq!(out.code, 0);
    assert_eq!(out.json()["result"]["input"], json!({"text": "piped"}));
}

#[test]
fn shellclaw_protocol_gets_arguments_in_dollar_one() {
    let d = host();
    let (envelope, _) = d.call(&[], "claw", &json!({"location": "Half Moon Bay"}));
    assert_eq!(
        envelope,
        json!({"tool_success": true, "result": {"tool": "claw", "argc": 1,
            "argument": {"location": "Half Moon Bay"}, "stdin": ""}})
    );
    // A shellclaw tool may answer plain text: that text is its result.
    let (envelope, _) = d.call(&[], "weather", &json!({"location": "x"}));
    assert_eq!(
        envelope,
        json!({"tool_success": true, "result": "15C and sunny"})
    );
    // Text longer than the cap is still its answer, cut, and says so.
    let (envelope, _) = d.call(&["--max-output", "6"], "weather", &json!({"location": "x"}));
    assert_eq!(
        envelope,
        json!({"tool_success": true,
            "result": "15C\n[... 8 of 14 bytes omitted: output exceeds the 6-byte cap ...]\nny\n",
            "truncated": {"stdout": {"total_bytes": 14, "omitted_bytes": 8}}})
    );
}

#[test]
fn flat_legacy_tools_run() {
    let d = host();
    let (envelope, _) = d.call(&[], "legacy_exec", &json!({"command": "ls"}));
    assert_eq!(
        envelope,
        json!({"tool_success": true, "result": {"stdout": "legacy", "input": {"command": "ls"}}})
    );
}

#[test]
fn our_bash_through_the_host() {
    let d = host();
    let (envelope, _) = d.call(&[], "bash", &json!({"command": "echo hi; echo err >&2"}));
    assert_eq!(
        envelope,
        json!({"tool_success": true, "result": {"output": "hi\nerr", "exit_code": 0}})
    );
    // Bad arguments are the tool's own answer, wrapped as a success.
    let (envelope, _) = d.call(&[], "bash", &json!({}));
    assert_eq!(
        envelope,
        json!({"tool_success": true, "result": {"error": "missing required parameter 'command'", "error_code": "INVALID_ARG"}})
    );
}

#[test]
fn our_tools_fit_a_long_answer_into_the_cap() {
    // Without the fit the host would cut the JSON and the model would get
    // INVALID_OUTPUT; with it, a valid answer keeps the head and the tail.
    let d = host();
    let (envelope, out) = d.call(
        &["--max-output", "64K"],
        "bash",
        &json!({"command": "seq 1 100000; exit 3"}),
    );
    assert!(out.stdout.len() < 64 * 1024 + 1024, "{}", out.stdout.len());
    assert_eq!(envelope["tool_success"], true, "{envelope}");
    assert!(envelope.get("truncated").is_none(), "{envelope}");
    let output = envelope["result"]["output"].as_str().unwrap();
    assert!(output.starts_with("1\n2\n3\n"), "{}", &output[..20]);
    assert!(
        output.ends_with("\n99999\n100000"),
        "{}",
        &output[output.len() - 20..]
    );
    assert!(output.contains("bytes omitted: the answer exceeds the 65536-byte output limit"));
    assert_eq!(envelope["result"]["exit_code"], 3);

    // Called directly, with no host cap, the answer is whole.
    let direct = crate::common::call("bash", json!({"command": "seq 1 100000"}));
    assert_eq!(direct["output"].as_str().unwrap().lines().count(), 100_000);
}

#[test]
fn a_crash_by_signal_reports_128_plus_n() {
    let d = host();
    let (envelope, _) = d.call(&[], "segv", &json!({}));
    assert_eq!(
        envelope,
        failure(
            "Tool 'segv' crashed with exit code 139",
            "TOOL_CRASHED",
            json!(139),
            "partial\n",
            "about to crash\n"
        )
    );
}

#[test]
fn a_plain_nonzero_exit_is_tool_crashed() {
    let d = host();
    let (envelope, _) = d.call(&[], "fail_plain", &json!({}));
    assert_eq!(
        envelope,
        failure(
            "Tool 'fail_plain' exited with code 3",
            "TOOL_CRASHED",
            json!(3),
            "",
            "something broke\n"
        )
    );
}

#[test]
fn a_nonzero_exit_with_a_json_error_keeps_the_tools_words() {
    let d = host();
    let (envelope, _) = d.call(&[], "fail_json", &json!({}));
    let stdout = "{\"success\":false,\"error\":\"Rate limit exceeded, retry in 60s\",\"error_code\":\"RATE_LIMIT\"}\n";
    assert_eq!(
        envelope,
        failure(
            "Rate limit exceeded, retry in 60s",
            "RATE_LIMIT",
            json!(1),
            stdout,
            ""
        )
    );
}

#[test]
fn output_that_is_not_a_json_object_is_invalid_output() {
    let d = host();
    for (name, error, stdout) in [
        (
            "junk",
            "Tool 'junk' returned invalid JSON: expected ident at line 1 column 2",
            "this is not json\n",
        ),
        (
            "array",
            "Tool 'array' returned an array, not a JSON object",
            "[1,2]\n",
        ),
        (
            "empty",
            "Tool 'empty' printed nothing on stdout; expected a JSON object",
            "",
        ),
    ] {
        let (envelope, _) = d.call(&[], name, &json!({}));
        assert_eq!(
            envelope,
            failure(error, "INVALID_OUTPUT", json!(0), stdout, ""),
            "{name}"
        );
    }
}

#[test]
fn config_required_events_go_to_the_person_not_the_model() {
    let d = host();
    let (envelope, out) = d.call(&[], "events", &json!({}));
    let stdout =
        "{\"success\":false,\"error\":\"API key missing\",\"error_code\":\"AUTH_MISSING\"}\n";
    assert_eq!(
        envelope,
        failure(
            "API key missing",
            "AUTH_MISSING",
            json!(1),
            stdout,
            "plain warning\n"
        )
    );
    let events: Vec<Value> = out
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        events,
        [json!({"kind": "config_required",
                "content": "Add an API key to ~/.config/ikigai/credentials.json", "data_json": "{}"})]
    );
}

#[test]
fn a_tool_that_never_reads_its_input_is_fine() {
    let d = host();
    // 4 MB of arguments: far more than a pipe holds, on stdin.
    let args = json!({"text": "x".repeat(4 << 20)});
    let out = d.ikigai().args(["call", "noread"]).json_in(&args).output();
    assert_eq!(
        out.json(),
        json!({"tool_success": true, "result": {"ok": true}})
    );
    assert_eq!(out.code, 0);
}

#[test]
fn fifty_megabytes_cost_no_more_than_the_cap_and_say_so() {
    let d = host();
    let (envelope, _) = d.call(&[], "big", &json!({}));
    assert_eq!(envelope["error_code"], "INVALID_OUTPUT");
    assert_eq!(
        envelope["error"],
        "Tool 'big' printed 52428800 bytes on stdout, more than the 1048576-byte output cap; \
         the output was cut and cannot be read as a result"
    );
    assert_eq!(
        envelope["truncated"],
        json!({"stdout": {"total_bytes": 52428800, "omitted_bytes": 52428800 - 1048576}})
    );
    let stdout = envelope["stdout"].as_str().unwrap();
    let marker = format!(
        "\n[... {} of 52428800 bytes omitted: output exceeds the 1048576-byte cap ...]\n",
        52428800 - 1048576
    );
    assert_eq!(
        stdout,
        format!("{}{marker}{}", "x".repeat(524288), "x".repeat(524288))
    );
}

#[test]
fn a_big_stderr_is_drained_while_the_tool_succeeds() {
    // 5 MB on stderr: a host reading stdout first would deadlock here.
    let d = host();
    let (envelope, _) = d.call(&[], "bigerr", &json!({}));
    assert_eq!(
        envelope,
        json!({"tool_success": true, "result": {"ok": true}})
    );
}

#[test]
fn max_output_caps_both_streams() {
    let d = host();
    let (envelope, _) = d.call(
        &["--max-output", "40"],
        "echo",
        &json!({"text": "y".repeat(100)}),
    );
    assert_eq!(envelope["error_code"], "INVALID_OUTPUT");
    let total = envelope["truncated"]["stdout"]["total_bytes"]
        .as_u64()
        .unwrap();
    assert_eq!(envelope["truncated"]["stdout"]["omitted_bytes"], total - 40);
    assert!(envelope["stdout"]
        .as_str()
        .unwrap()
        .starts_with("{\"tool\":\"echo\",\"pa"));
    let (envelope, _) = d.call(&["--max-output", "1K"], "segv", &json!({}));
    assert_eq!(envelope["error_code"], "TOOL_CRASHED");
    assert!(envelope.get("truncated").is_none());
}

#[test]
fn the_timeout_kills_and_keeps_partial_output() {
    let d = host();
    let started = Instant::now();
    let (envelope, _) = d.call(&["--timeout", "1"], "sleepy", &json!({}));
    assert_eq!(
        envelope,
        failure(
            "Tool 'sleepy' timed out after 1s",
            "TOOL_TIMEOUT",
            Value::Null,
            "started\n",
            "working\n"
        )
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    let (envelope, _) = d.call(&["--timeout", "0.5"], "sleepy", &json!({}));
    assert_eq!(envelope["error"], "Tool 'sleepy' timed out after 0.5s");
}

#[test]
fn the_timeout_kills_grandchildren_too() {
    let d = host();
    let pidfile = d.path("pid");
    let out = d
        .ikigai()
        .env("IKIGAI_TEST_PIDFILE", &pidfile)
        .args(["--timeout", "1", "call", "grandchild", "{}"])
        .output();
    assert_eq!(out.json()["error_code"], "TOOL_TIMEOUT");
    assert!(
        Pid::read(&pidfile).dies(),
        "the grandchild outlived the timeout"
    );

    // Through our bash tool: sh, then its background job.
    let command = format!("sleep 300 & echo $! > {}; sleep 300", pidfile.display());
    let out = d
        .ikigai()
        .args([
            "--timeout",
            "1",
            "call",
            "bash",
            &json!({"command": command}).to_string(),
        ])
        .output();
    assert_eq!(out.json()["error_code"], "TOOL_TIMEOUT");
    assert!(
        Pid::read(&pidfile).dies(),
        "bash's background job outlived the timeout"
    );
}

#[test]
fn a_process_that_escaped_the_group_cannot_hang_the_host() {
    // setsid takes the sleep out of the group; it keeps the pipes open.
    let d = host();
    let pidfile = d.path("pid");
    let started = Instant::now();
    let out = d
        .ikigai()
        .env("IKIGAI_TEST_PIDFILE", &pidfile)
        .args(["--timeout", "1", "call", "escapee", "{}"])
        .output();
    let escapee = Pid::read(&pidfile);
    assert_eq!(out.json()["error_code"], "TOOL_TIMEOUT");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the host waited for the escapee"
    );
    drop(escapee);
}

#[test]
fn a_background_job_left_behind_does_not_hold_the_answer() {
    let d = host();
    let pidfile = d.path("pid");
    let started = Instant::now();
    let out = d
        .ikigai()
        .env("IKIGAI_TEST_PIDFILE", &pidfile)
        .args(["call", "lingering", "{}"])
        .output();
    let job = Pid::read(&pidfile);
    assert_eq!(
        out.json(),
        json!({"tool_success": true, "result": {"ok": true}})
    );
    // Well before the 30 s timeout.
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(job.dies(), "the background job outlived the call");
}

#[test]
fn a_detached_background_job_dies_with_a_call_that_succeeds() {
    // No pipe held: nothing but the end of the call can stop it.
    let d = host();
    let pidfile = d.path("pid");
    let command = format!(
        "sleep 301 >/dev/null 2>&1 & echo $! > {}; echo done",
        pidfile.display()
    );
    let (envelope, _) = d.call(&[], "bash", &json!({"command": command}));
    assert_eq!(envelope["tool_success"], true, "{envelope}");
    assert!(
        Pid::read(&pidfile).dies(),
        "a background job outlived the call"
    );
}

#[test]
fn only_registered_tools_run() {
    let d = host();
    let (envelope, _) = d.call(&[], "rm_rf", &json!({}));
    assert_eq!(envelope["error_code"], "TOOL_NOT_FOUND");
    assert_eq!(envelope["exit_code"], Value::Null);
    let error = envelope["error"].as_str().unwrap();
    assert!(
        error.starts_with("Tool 'rm_rf' not found; available tools: array, bash, big"),
        "{error}"
    );
    // A file in the directory that failed discovery is not a tool either.
    let (envelope, _) = d.call(&[], "junkyard", &json!({}));
    assert_eq!(envelope["error_code"], "TOOL_NOT_FOUND");
}

#[test]
fn arguments_must_be_a_json_object() {
    let d = host();
    for (args, what) in [
        ("[1,2]", "expected a JSON object, got an array"),
        ("null", "expected a JSON object, got null"),
        (
            "{\"a\":",
            "arguments are not valid JSON: EOF while parsing a value at line 1 column 5",
        ),
    ] {
        let out = d.ikigai().args(["call", "echo", args]).output();
        assert_eq!(out.code, 1);
        assert_eq!(
            out.json(),
            failure(
                &format!("Invalid arguments for tool 'echo': {what}"),
                "INVALID_PARAMS",
                Value::Null,
                "",
                ""
            ),
            "{args}"
        );
    }
}

/// OpenAI strict mode sends every parameter, `null` for those the model
/// leaves out: each of our tools must take `null` as absent. Checked on
/// every tool `--list` names that has an optional parameter.
#[test]
fn our_tools_take_null_optionals_as_absent() {
    let d = Dirs::new();
    for command in run_main().arg("--list").output().stdout.lines() {
        d.link(&d.sys, command, bin());
    }
    let listing = d.listing();
    for tool in listing["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let out = d.ikigai().args(["tools", "--json", name]).output();
        let params = out.json()["schema"]["parameters"].clone();
        let required: Vec<&str> = params["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        let mut args = serde_json::Map::new();
        let mut optional = 0;
        for (pname, schema) in params["properties"].as_object().unwrap() {
            if !required.contains(&pname.as_str()) {
                args.insert(pname.clone(), Value::Null);
                optional += 1;
                continue;
            }
            // A value the schema accepts; what the tool makes of it is not
            // the question here.
            let value = match schema["type"].as_str() {
                Some("integer") | Some("number") => json!(schema["minimum"].as_i64().unwrap_or(1)),
                Some("boolean") => json!(false),
                Some("array") => json!([]),
                _ if schema["format"] == "uri" => json!("https://example.com/"),
                // Distinct per parameter: file_edit refuses identical strings.
                _ => json!(format!("{}-{pname}", d.path("no-such-file").display())),
            };
            args.insert(pname.clone(), value);
        }
        if optional == 0 {
            continue;
        }
        let out = d
            .ikigai()
            .env("IKIGAI_STUB", "1")
            .env("SHELLCLAW_STUB", "1")
            .args([
                "--timeout",
                "20",
                "call",
                name,
                &Value::Object(args.clone()).to_string(),
            ])
            .output();
        let envelope = out.json();
        assert_ne!(
            envelope["result"]["error_code"], "INVALID_ARG",
            "{name} refused null optionals {args:?}: {envelope}"
        );
        assert_ne!(envelope["error_code"], "INVALID_ARG", "{name}: {envelope}");
    }
}

#[test]
fn a_signal_to_the_host_kills_the_running_tool_and_ends_with_128_plus_n() {
    for (signal, code) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
    ] {
        let d = host();
        let pidfile = d.path("pid");
        let command = format!(
            "echo $$ > {}.tmp; mv {0}.tmp {0}; sleep 331",
            pidfile.display()
        );
        let out = d
            .ikigai()
            .args(["call", "bash", &json!({ "command": command }).to_string()])
            .output_signalling(signal, || pidfile.exists());
        assert_eq!(out.code, code, "signal {signal}: {out:?}");
        assert!(
            Pid::read(&pidfile).dies(),
            "the tool outlived signal {signal} to the host"
        );
    }
}
