//! What every tool shares: both protocols, schema output, bad input
//! (docs/decisions.md, decisions 1-3), and a closed stdout.

use serde_json::{json, Value};

use crate::common::{run, run_main};

fn spec_schemas() -> Vec<Value> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schemas");
    let mut schemas = Vec::new();
    for name in run_main().arg("--list").output().stdout.lines() {
        let path = dir.join(format!("{name}.json"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        schemas.push(serde_json::from_str(&text).expect("fixture is JSON"));
    }
    schemas
}

#[test]
fn schema_and_describe_print_the_spec_schema_under_both_names() {
    for expected in spec_schemas() {
        let name = expected["name"].as_str().unwrap().to_string();
        for link in [name.clone(), name.replace('_', "-")] {
            for flag in ["--schema", "--describe"] {
                let out = run(&link).arg(flag).output();
                assert_eq!(out.code, 0, "{link} {flag}");
                assert_eq!(out.json(), expected, "{link} {flag}");
                // Key order too: serde_json keeps it (preserve_order).
                assert_eq!(
                    serde_json::to_string(&out.json()).unwrap(),
                    serde_json::to_string(&expected).unwrap()
                );
            }
        }
    }
}

#[test]
fn bad_input_is_invalid_arg_for_every_tool() {
    let cases: [(&[u8], &str); 4] = [
        (b"not json", "input is not valid JSON"),
        (b"[1,2]", "arguments must be a JSON object, got an array"),
        (b"", "no input"),
        (b"{}", "missing required parameter"),
    ];
    for name in run_main().arg("--list").output().stdout.lines() {
        for (input, message) in cases {
            let out = run(name).stdin(input).output();
            let answer = out.json();
            assert_eq!(answer["error_code"], "INVALID_ARG", "{name}: {answer}");
            assert!(
                answer["error"].as_str().unwrap().starts_with(message),
                "{name}: {answer}"
            );
        }
    }
}

#[test]
fn wrong_type_names_the_parameter() {
    let answer = run("bash").json_in(&json!({"command": 5})).json();
    assert_eq!(
        answer,
        json!({"error": "parameter 'command' must be a string, got 5", "error_code": "INVALID_ARG"})
    );
}

#[test]
fn shellclaw_protocol_takes_dollar_one_and_never_reads_stdin() {
    // stdin holds a different command: it must be ignored.
    let out = run("bash")
        .arg(json!({"command": "echo from-arg"}).to_string())
        .stdin(json!({"command": "echo from-stdin"}).to_string())
        .output();
    assert_eq!(out.code, 0);
    assert_eq!(out.json(), json!({"output": "from-arg", "exit_code": 0}));
    assert_eq!(out.stderr, "");
}

#[test]
fn shellclaw_errors_exit_1_with_the_message_on_stderr() {
    let out = run("bash").arg("{}").output();
    assert_eq!(out.code, 1);
    assert_eq!(out.json()["error_code"], "INVALID_ARG");
    assert_eq!(out.stderr, "bash: missing required parameter 'command'\n");
}

#[test]
fn ikigai_protocol_local_errors_exit_0() {
    let out = run("bash").stdin("{}").output();
    assert_eq!(out.code, 0);
    assert_eq!(out.stderr, "");
}

#[test]
fn answers_carry_no_trailing_newline() {
    let out = run("bash").json_in(&json!({"command": "true"})).output();
    assert_eq!(out.stdout, r#"{"output":"","exit_code":0}"#);
}

#[test]
fn unknown_option_is_invalid_arg() {
    for tool in ["bash", "file-read", "web-fetch"] {
        let out = run(tool).arg("--frob").output();
        let answer = out.json();
        assert_eq!(answer["error_code"], "INVALID_ARG");
        assert!(answer["error"].as_str().unwrap().contains("--frob"));
        // A command-line mistake exits 1, as `file-read bogus` does.
        assert_eq!(out.code, 1, "{tool}");
        assert!(out.stderr.contains("unknown option '--frob'"), "{out:?}");
    }
}

#[test]
fn closed_stdout_is_not_a_panic() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(crate::common::link("bash"))
        .arg(json!({"command": "head -c 1000000 /dev/zero"}).to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}
