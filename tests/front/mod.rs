//! The front door: `ikigai-tools --list`, `--help`, `--version`, unknown names.

use crate::common::{run, run_main};

#[test]
fn list_prints_one_command_name_per_line() {
    let out = run_main().arg("--list").output();
    assert_eq!(out.code, 0);
    let names: Vec<&str> = out.stdout.lines().collect();
    assert!(names.contains(&"bash"), "{names:?}");
    assert!(
        names.iter().all(|n| !n.contains('_')),
        "command names use hyphens: {names:?}"
    );
}

#[test]
fn help_lists_every_tool_with_its_summary() {
    for out in [run_main().output(), run_main().arg("--help").output()] {
        assert_eq!(out.code, 0);
        assert!(out.stdout.contains("usage:"), "{}", out.stdout);
        for name in run_main().arg("--list").output().stdout.lines() {
            assert!(
                out.stdout.contains(&format!("  {name} ")),
                "{name} missing from help"
            );
        }
        assert!(out
            .stdout
            .contains("Execute a shell command and return output"));
    }
}

#[test]
fn version() {
    let out = run_main().arg("--version").output();
    assert_eq!(out.code, 0);
    assert_eq!(
        out.stdout.trim(),
        format!("ikigai-tools {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn unknown_tool_lists_known_names_and_exits_2() {
    let out = run_main().arg("frobnicate").output();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("unknown tool 'frobnicate'"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("bash"), "{}", out.stderr);
}

#[test]
fn first_argument_names_the_tool() {
    let out = run_main().args(["bash", "--schema"]).output();
    assert_eq!(out.code, 0);
    assert_eq!(out.json()["name"], "bash");
    let direct = run("bash").arg("--schema").output();
    assert_eq!(out.stdout, direct.stdout);
}

/// A reader that went away (`ikigai-tools --help | true`) is no panic.
#[test]
fn closed_stdout_is_not_a_panic() {
    use std::process::{Command, Stdio};
    for flag in ["--list", "--help", "--version"] {
        // The reader is gone before the binary starts: its first write fails.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(crate::common::bin())
            .arg(flag)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{flag}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{flag}: {stderr}");
    }
}
