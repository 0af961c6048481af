//! The host acting outside the fence on what tools could have shaped
//! (decisions 80 and 91): the traps a sandboxed call can leave where the
//! host writes or reads for itself, each refused with the path named and
//! nothing written or read outside, the session going on. The real
//! binary, its real tools, a scripted model.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use super::{against, no_problems, system_text};
use crate::common::link;
use crate::common::model_server::{calls, text, Api, ModelServer};

/// Our bash, file_write and file_read as system tools.
fn install(home: &Path) {
    let libexec = home.join("libexec");
    std::fs::create_dir_all(&libexec).unwrap();
    for file in ["bash", "file-write", "file-read"] {
        std::os::unix::fs::symlink(link(file), libexec.join(file)).unwrap();
    }
}

fn tree(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            found.push(e.path().display().to_string());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                found.extend(tree(&e.path()));
            }
        }
    }
    found
}

#[test]
fn jobs_logs_and_saved_outputs_never_go_under_tmpdir() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    let tmp = home.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[("shell_start", json!({"command": "echo from the job"}))]),
            calls(&[("bash", json!({"command": "seq 1 20000"}))]),
            text("Done."),
        ],
    );
    // No session directory at all (no HOME, no XDG_DATA_HOME): the host
    // has nowhere of its own, and keeps nothing under $TMPDIR instead.
    let out = against(&server, home.path())
        .env_remove("HOME")
        .env_remove("XDG_DATA_HOME")
        .env("TMPDIR", &tmp)
        .args(["--model-output", "1000"])
        .stdin("go\n")
        .output();
    no_problems(&server, &out);
    assert!(out.stdout.contains("Done."), "{out:?}");
    let bodies: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        bodies[1].contains("this conversation has none (neither XDG_DATA_HOME nor HOME is set)"),
        "{}",
        bodies[1]
    );
    assert!(
        bodies[2].contains("the whole output could not be saved: this conversation has no session"),
        "{}",
        bodies[2]
    );
    assert_eq!(tree(&tmp), Vec::<String>::new());
}

#[test]
fn a_session_directory_a_tool_replaced_by_a_link_is_never_written_into() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    let outside = home.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    // The data directory's sessions directory, shaped before the start as
    // a tool of an earlier run (one with the sandbox off) could have.
    let data = home.path().join("data/ikigai");
    std::fs::create_dir_all(&data).unwrap();
    std::os::unix::fs::symlink(&outside, data.join("sessions")).unwrap();
    let server = ModelServer::start(Api::OpenAi, vec![text("Hello.")]);
    let out = against(&server, home.path()).stdin("hi\n").output();
    assert!(
        out.stdout.contains("Hello."),
        "the session goes on: {out:?}"
    );
    assert!(
        out.stderr.contains("sessions is a symbolic link"),
        "{out:?}"
    );
    assert_eq!(tree(&outside), Vec::<String>::new());
}

#[test]
fn the_data_directory_is_hidden_but_for_this_sessions_logs() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    let sessions = home.path().join("data/ikigai/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(sessions.join("old.jsonl"), "ANOTHER PROJECT'S TALK").unwrap();
    std::fs::write(home.path().join("data/ikigai/history"), "TYPED BEFORE").unwrap();
    let read = "cat $XDG_DATA_HOME/ikigai/sessions/old.jsonl; cat $XDG_DATA_HOME/ikigai/history; \
                sleep 0.3; cat $XDG_DATA_HOME/ikigai/sessions/*/jobs/1.log";
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[("shell_start", json!({"command": "echo job-said-this"}))]),
            calls(&[("bash", json!({"command": read}))]),
            text("Done."),
        ],
    );
    let out = against(&server, home.path()).stdin("go\n").output();
    no_problems(&server, &out);
    let body = server.requests()[2].body.to_string();
    assert!(!body.contains("ANOTHER PROJECT"), "{body}");
    assert!(!body.contains("TYPED BEFORE"), "{body}");
    assert!(body.contains("Permission denied"), "{body}");
    assert!(body.contains("job-said-this"), "{body}");
}

#[test]
fn output_last_message_is_never_written_through_a_link() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    let bashrc = home.path().join(".bashrc");
    std::fs::write(&bashrc, "# mine\n").unwrap();
    // A link left before the start is refused, naming the file.
    std::os::unix::fs::symlink(&bashrc, home.path().join("old-notes.txt")).unwrap();
    let server = ModelServer::start(Api::OpenAi, vec![text("unused")]);
    let out = against(&server, home.path())
        .args(["-p", "q", "--output-last-message", "old-notes.txt"])
        .output();
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("--output-last-message: old-notes.txt is a symbolic link"),
        "{out:?}"
    );
    // One a tool makes during the run: the answer goes where the file
    // was opened at start, never to the link's target.
    let make_link = format!(
        "rm release-notes.txt; ln -s {} release-notes.txt",
        bashrc.display()
    );
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[("bash", json!({"command": make_link}))]),
            text("echo pwned"),
        ],
    );
    let out = against(&server, home.path())
        .args(["-p", "q", "--output-last-message", "release-notes.txt"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), "# mine\n");
}

#[test]
fn agents_md_linked_to_a_secret_is_left_out_with_a_warning() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    std::fs::create_dir(home.path().join(".ssh")).unwrap();
    let key = home.path().join(".ssh/id_ed25519");
    std::fs::write(&key, "-----BEGIN OPENSSH PRIVATE KEY-----").unwrap();
    std::os::unix::fs::symlink(&key, home.path().join("AGENTS.md")).unwrap();
    let server = ModelServer::start(Api::OpenAi, vec![text("Hi.")]);
    let out = against(&server, home.path()).args(["-p", "hi"]).output();
    no_problems(&server, &out);
    let system = system_text(Api::OpenAi, &server.requests()[0].body);
    assert!(!system.contains("PRIVATE KEY"), "{system}");
    assert!(
        out.stderr
            .contains("AGENTS.md left out of the prompt: it is a link to")
            && out.stderr.contains("under the secret path"),
        "{out:?}"
    );
}

/// `git` in `dir`, with no global config.
fn git(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn start_up_git_runs_no_fsmonitor_a_tool_wrote() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    if !git(&repo, &["init", "-q", "-b", "trunk"]) {
        eprintln!("skipped: git is not installed");
        return;
    }
    install(home.path());
    // What a tool could leave through a `.git` file pointing at a copy of
    // the repository it wrote: an fsmonitor hook of its own.
    let marker = home.path().join("ran-outside");
    let hook = home.path().join("hook.sh");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\ntouch {}\nexit 1\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(repo.join("a"), "a").unwrap();
    let copy = home.path().join("g2");
    assert!(Command::new("cp")
        .args(["-a"])
        .arg(repo.join(".git"))
        .arg(&copy)
        .status()
        .unwrap()
        .success());
    assert!(git(
        &repo,
        &[
            "--git-dir",
            copy.to_str().unwrap(),
            "config",
            "core.fsmonitor",
            hook.to_str().unwrap()
        ]
    ));
    std::fs::remove_dir_all(repo.join(".git")).unwrap();
    std::fs::write(repo.join(".git"), format!("gitdir: {}\n", copy.display())).unwrap();
    let server = ModelServer::start(Api::OpenAi, vec![text("Hi.")]);
    let out = against(&server, home.path())
        .dir(&repo)
        .args(["-p", "hi"])
        .output();
    no_problems(&server, &out);
    let system = system_text(Api::OpenAi, &server.requests()[0].body);
    assert!(
        system.contains(&format!("- Git: repository at {}", repo.display())),
        "{system}"
    );
    assert!(!marker.exists(), "the hook ran outside the fence");
}
