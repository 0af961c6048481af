//! bash (docs/local-tools.md, "Tool: bash"; docs/decisions.md, decision 4).

use serde_json::json;

use crate::common::{call, link, run};

fn bash(command: &str) -> serde_json::Value {
    call("bash", json!({ "command": command }))
}

#[test]
fn output_and_exit_code() {
    assert_eq!(
        bash("echo hello"),
        json!({"output": "hello", "exit_code": 0})
    );
    assert_eq!(bash("exit 3"), json!({"output": "", "exit_code": 3}));
}

#[test]
fn stdout_and_stderr_interleave_in_order() {
    let answer = bash("echo one; echo two >&2; echo three");
    assert_eq!(answer["output"], "one\ntwo\nthree");
}

#[test]
fn only_one_trailing_newline_is_stripped() {
    assert_eq!(bash("printf 'a\\n\\n'")["output"], "a\n");
    assert_eq!(bash("printf 'a'")["output"], "a");
}

#[test]
fn not_found_is_127() {
    let answer = bash("nonexistent-command-xyz");
    assert_eq!(answer["exit_code"], 127);
    assert!(
        answer["output"].as_str().unwrap().contains("not found"),
        "{answer}"
    );
}

/// docs/local-tools.md: "Empty command: shell error (exit code 127)".
#[test]
fn empty_command_is_127() {
    for command in ["", "  \n\t"] {
        assert_eq!(
            bash(command),
            json!({"output": "sh: empty command", "exit_code": 127}),
            "{command:?}"
        );
    }
}

#[test]
fn signal_is_128_plus_n() {
    assert_eq!(bash("kill -9 $$")["exit_code"], 137);
    assert_eq!(bash("kill -TERM $$")["exit_code"], 143);
}

#[test]
fn stdin_is_dev_null() {
    assert_eq!(
        bash("cat; echo done"),
        json!({"output": "done", "exit_code": 0})
    );
}

#[test]
fn binary_and_invalid_utf8_stay_valid_json() {
    let answer = bash("printf 'a\\000b\\377c'");
    assert_eq!(answer["output"], "a\u{0}b\u{FFFD}c");
}

#[test]
fn large_output_works() {
    let answer = bash("head -c 100000000 /dev/zero | tr '\\0' 'x'");
    assert_eq!(answer["output"].as_str().unwrap().len(), 100_000_000);
}

/// Output that itself contains the marker's opening is still cut to fit
/// the host's cap (the host would cut the JSON otherwise).
#[test]
fn marker_lookalike_output_still_fits_the_cap() {
    let out = run("bash")
        .env("IKIGAI_MAX_OUTPUT", "2000")
        .json_in(&json!({"command": "echo '[... start'; seq 1 100000"}))
        .output();
    assert!(out.stdout.len() <= 2000, "{} bytes", out.stdout.len());
    let answer = out.json();
    let text = answer["output"].as_str().unwrap();
    assert!(text.starts_with("[... start\n1\n"), "{text}");
    assert!(text.ends_with("99999\n100000"), "{text}");
}

/// Under the host's cap the tool keeps only the head and tail of what the
/// command prints: 1.5 GB of output fits in 500 MB of address space, and
/// the marker still counts every byte.
#[test]
fn capped_output_takes_memory_of_the_cap_not_of_the_output() {
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg("ulimit -v 500000; exec \"$0\" \"$1\"")
        .arg(link("bash"))
        .arg(
            json!({"command": "head -c 1500000000 /dev/zero | tr '\\0' x; echo; seq 1 3"})
                .to_string(),
        )
        .env("IKIGAI_MAX_OUTPUT", "3000")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.len() <= 3000, "{} bytes", out.stdout.len());
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = answer["output"].as_str().unwrap();
    assert!(text.starts_with("xxxx"), "{text}");
    assert!(text.ends_with("\n1\n2\n3"), "{text}");
    assert!(text.contains("of 1500000006 bytes omitted"), "{text}");
    assert_eq!(answer["exit_code"], 0);
}

/// A background job holding the output pipe open is not waited for: the
/// answer comes soon after sh exits (a hang deadline of a minute, against
/// a job of ten minutes).
#[test]
fn background_jobs_are_not_waited_for() {
    let answer = super::file_support::call_within(
        "bash",
        &json!({"command": "sleep 600 & echo started $!"}),
    );
    let output = answer["output"].as_str().unwrap().to_string();
    let pid: i32 = output.strip_prefix("started ").unwrap().parse().unwrap();
    // SAFETY: kill has no memory preconditions; the pid is the job's.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(answer["exit_code"], 0);
}

/// Output still in the pipe when sh exits is all read.
#[test]
fn all_output_is_read_after_sh_exits() {
    let answer = bash("seq 1 200000 | tail -c 100000; echo end");
    assert!(answer["output"].as_str().unwrap().ends_with("200000\nend"));
}
