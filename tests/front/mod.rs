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

#[test]
fn a_mistyped_tool_name_suggests_the_nearest() {
    let out = run_main().arg("gerp").output();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("Did you mean 'grep'?"),
        "{}",
        out.stderr
    );
    let out = run_main().arg("frobnicate").output();
    assert!(!out.stderr.contains("Did you mean"), "{}", out.stderr);
}

/// `ikigai` with no tool directories and no keys of its own.
fn ikigai(home: &std::path::Path) -> crate::common::Run {
    run("ikigai")
        .env("HOME", home)
        .env("IKIGAI_TOOLS_DIR", home.join("no-user-tools"))
        .env("IKIGAI_LIBEXEC_DIR", home.join("no-system-tools"))
}

#[test]
fn ikigai_version_and_help() {
    let home = tempfile::tempdir().unwrap();
    for flag in ["--version", "-V"] {
        let out = ikigai(home.path()).arg(flag).output();
        assert_eq!(out.code, 0);
        assert_eq!(
            out.stdout,
            format!("ikigai {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
    for flag in ["-h", "--help"] {
        let out = ikigai(home.path()).arg(flag).output();
        assert_eq!(out.code, 0, "{out:?}");
        assert!(out.stdout.starts_with("Usage: ikigai"), "{}", out.stdout);
        assert!(out.stdout.contains("--resume"), "{}", out.stdout);
    }
    let out = ikigai(home.path()).args(["call", "-h"]).output();
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.starts_with("Usage: ikigai call"),
        "{}",
        out.stdout
    );
    // -h as the message of -p is a message, not a flag.
    let out = ikigai(home.path())
        .args(["--provider", "stub", "-p", "-h"])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("[stub] You said: -h"), "{}", out.stdout);
}

#[test]
fn ikigai_suggests_subcommands_and_options() {
    let home = tempfile::tempdir().unwrap();
    let out = ikigai(home.path()).arg("toosl").output();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .starts_with("Unrecognized argument: toosl. Did you mean 'tools'?\n"),
        "{}",
        out.stderr
    );
    let out = ikigai(home.path()).args(["--modle", "x"]).output();
    assert!(
        out.stderr.contains("Did you mean '--model'?"),
        "{}",
        out.stderr
    );
}

#[test]
fn ikigai_names_the_directories_it_searched_when_none_exists() {
    let home = tempfile::tempdir().unwrap();
    let out = ikigai(home.path()).arg("tools").output();
    let note = format!(
        "ikigai: no tool directory exists; searched {} (system) and {} (user). Install the tools with ./symlinks.sh",
        home.path().join("no-system-tools").display(),
        home.path().join("no-user-tools").display()
    );
    assert!(out.stderr.starts_with(&note), "{}", out.stderr);
    let out = ikigai(home.path()).args(["call", "bash", "{}"]).output();
    assert_eq!(out.code, 1);
    assert!(out.stderr.starts_with(&note), "{}", out.stderr);
    // The assistant says it too, as a warning, and goes on.
    let out = ikigai(home.path())
        .args(["--provider", "stub", "-p", "hi"])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    let warning = note.replacen("ikigai: ", "warning: ", 1);
    assert!(out.stderr.starts_with(&warning), "{}", out.stderr);
    // With tools, a typo in a call's name gets the nearest one.
    std::fs::create_dir(home.path().join("no-system-tools")).unwrap();
    std::os::unix::fs::symlink(
        crate::common::link("bash"),
        home.path().join("no-system-tools/bash"),
    )
    .unwrap();
    let out = ikigai(home.path()).args(["call", "bsah", "{}"]).output();
    assert_eq!(out.code, 1);
    assert_eq!(out.json()["error_code"], "TOOL_NOT_FOUND");
    assert_eq!(out.stderr, "ikigai: Did you mean 'bash'?\n");
    let out = ikigai(home.path()).args(["tools", "bsah"]).output();
    assert!(
        out.stderr.contains("Did you mean 'bash'?"),
        "{}",
        out.stderr
    );
}

#[test]
fn ikigai_call_on_a_terminal_says_it_waits_for_json() {
    use std::io::Write;
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("no-system-tools")).unwrap();
    std::os::unix::fs::symlink(
        crate::common::link("bash"),
        home.path().join("no-system-tools/bash"),
    )
    .unwrap();
    let (mut master, slave) = crate::common::openpty();
    let child = std::process::Command::new(crate::common::link("ikigai"))
        .args(["call", "bash"])
        .env("HOME", home.path())
        .env("IKIGAI_TOOLS_DIR", home.path().join("no-user-tools"))
        .env("IKIGAI_LIBEXEC_DIR", home.path().join("no-system-tools"))
        .stdin(std::process::Stdio::from(slave))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The arguments, then end of input (Ctrl-D on an empty line).
    master
        .write_all(b"{\"command\": \"echo hi\"}\n\x04")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    drop(master);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "ikigai: reading the arguments for bash as a JSON object from stdin; end with Ctrl-D"
        ),
        "{stderr}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\"tool_success\":true,\"result\":{\"output\":\"hi\",\"exit_code\":0}}\n"
    );
    // Piped arguments get no such note.
    let out = ikigai(home.path())
        .args(["call", "bash"])
        .stdin("{\"command\": \"true\"}")
        .output();
    assert_eq!(out.stderr, "");
}
