//! The assistant's own tools (decisions 68-70): background shells that print
//! while the conversation goes on, exit, are killed, outlive a cancelled
//! call but not the host; the plan; `/undo` of writes, edits and patches,
//! with and without a later change by someone else. The real binary, its
//! real tools, a scripted model.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{json, Value};

use super::{against, envelopes, no_problems, user_texts};
use crate::common::link;
use crate::common::model_server::{calls, text, Api, ModelServer};
use crate::host::Pid;

/// Our bash, file_write, file_edit, file_read and apply_patch as system
/// tools.
fn install(home: &Path) {
    let libexec = home.join("libexec");
    std::fs::create_dir_all(&libexec).unwrap();
    std::fs::create_dir_all(home.join("tools")).unwrap();
    for tool in [
        "bash",
        "file_write",
        "file_edit",
        "file_read",
        "apply_patch",
    ] {
        let file = tool.replace('_', "-");
        std::os::unix::fs::symlink(link(&file), libexec.join(&file)).unwrap();
    }
}

/// The newest envelope request `r` carried back to the model.
fn answer(server: &ModelServer, r: usize) -> Value {
    let all = envelopes(Api::OpenAi, &server.requests()[r].body);
    all.last().expect("a tool result").1.clone()
}

#[test]
fn a_job_prints_while_the_model_goes_on_then_exits_and_its_output_is_read_once() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    // A job that prints for a while (a minute's dev server, made short).
    let job = "for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.25; done; exit 3";
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[("shell_start", json!({"command": job}))]),
            // Read while it runs, waiting for something new.
            calls(&[("shell_output", json!({"job_id": 1, "wait_ms": 5000}))]),
            // Meanwhile the model works on.
            calls(&[("bash", json!({"command": "sleep 2; echo meanwhile"}))]),
            calls(&[("shell_output", json!({"job_id": 1, "wait_ms": 10000}))]),
            calls(&[("shell_output", json!({"job_id": 1}))]),
            calls(&[("shell_output", json!({"job_id": 7}))]),
            calls(&[("shell_kill", json!({"job_id": 1}))]),
            text("Done."),
        ],
    );
    let out = against(&server, home.path())
        .args(["-p", "run the job"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    // The host's tools are offered like any other.
    let tools = server.requests()[0].body["tools"].clone();
    for name in ["shell_start", "shell_output", "shell_kill", "update_plan"] {
        assert!(
            tools
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["function"]["name"] == name),
            "{name} not offered: {tools}"
        );
    }
    let started = answer(&server, 1);
    assert_eq!(started["result"]["job_id"], 1, "{started}");
    assert_eq!(started["result"]["status"], "running");
    let first = answer(&server, 2)["result"].clone();
    assert_eq!(first["status"], "running", "{first}");
    let first_text = first["output"].as_str().unwrap();
    assert!(first_text.starts_with("tick 1\n"), "{first}");
    let last = answer(&server, 4)["result"].clone();
    assert_eq!(
        (&last["status"], &last["exit_code"]),
        (&json!("exited"), &json!(3)),
        "{last}"
    );
    // Each byte once: the two reads are the whole output.
    let whole: String = (1..=6).map(|i| format!("tick {i}\n")).collect();
    assert_eq!(
        format!("{first_text}{}", last["output"].as_str().unwrap()),
        whole
    );
    let again = answer(&server, 5)["result"].clone();
    assert_eq!(
        (&again["output"], &again["exit_code"]),
        (&json!(""), &json!(3))
    );
    let log = Path::new(started["result"]["log"].as_str().unwrap());
    assert_eq!(std::fs::read_to_string(log).unwrap(), whole);
    // Under the session's directory, private.
    assert!(
        log.starts_with(home.path().join("data/ikigai/sessions")),
        "{log:?}"
    );
    let mode = std::fs::metadata(log).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // Each call in words on the screen.
    for line in [
        "✓ Started job 1 in the background: for i in 1 2 3 4 5 6; do echo tick $i;",
        "✓ Read job 1 (exited 3, ",
        "✓ Ended job 1 (exited)",
    ] {
        assert!(out.stderr.contains(line), "{line}: {}", out.stderr);
    }
    let unknown = answer(&server, 6);
    assert_eq!(unknown["error_code"], "NOT_FOUND", "{unknown}");
    assert_eq!(unknown["error"], "there is no job 7 (jobs: 1)");
    let killed = answer(&server, 7)["result"].clone();
    assert!(
        killed["note"]
            .as_str()
            .unwrap()
            .contains("had already ended"),
        "{killed}"
    );
}

#[test]
fn a_killed_job_takes_everything_it_started_with_it() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    let (shell, child) = (home.path().join("shell.pid"), home.path().join("child.pid"));
    let job = format!(
        "sleep 401 & echo $! > {}; echo $$ > {}; wait",
        child.display(),
        shell.display()
    );
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[("shell_start", json!({"command": job}))]),
            calls(&[(
                "bash",
                json!({"command": format!("while [ ! -s {} ]; do sleep 0.05; done", shell.display())}),
            )]),
            calls(&[("shell_kill", json!({"job_id": 1}))]),
            calls(&[("shell_output", json!({"job_id": 1}))]),
            text("Killed."),
        ],
    );
    let out = against(&server, home.path()).args(["-p", "go"]).output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    let killed = answer(&server, 3)["result"].clone();
    assert_eq!(killed["status"], "killed", "{killed}");
    assert!(
        Pid::read(&shell).dies(),
        "the job's shell outlived shell_kill"
    );
    assert!(
        Pid::read(&child).dies(),
        "what the job started outlived shell_kill"
    );
    assert_eq!(answer(&server, 4)["result"]["status"], "killed");
}

#[test]
fn at_most_eight_jobs_run_at_once() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    let nine: Vec<(&str, Value)> = (0..9)
        .map(|i| ("shell_start", json!({"command": format!("sleep 40{i}")})))
        .collect();
    let server = ModelServer::start(Api::OpenAi, vec![calls(&nine), text("ok")]);
    let out = against(&server, home.path()).args(["-p", "go"]).output();
    no_problems(&server, &out);
    let answers = envelopes(Api::OpenAi, &server.requests()[1].body);
    assert!(
        answers[..8].iter().all(|a| a.1["tool_success"] == true),
        "{answers:?}"
    );
    assert_eq!(answers[8].1["error_code"], "JOB_LIMIT", "{answers:?}");
    let error = answers[8].1["error"].as_str().unwrap();
    assert!(
        error.starts_with("8 background jobs are running already (jobs 1 (sleep 400), 2"),
        "{error}"
    );
}

#[test]
fn a_job_outlives_a_cancelled_call_but_not_the_host() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    let (job_pid, busy) = (home.path().join("job.pid"), home.path().join("busy"));
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[(
                "shell_start",
                json!({"command": format!("echo $$ > {}; exec sleep 402", job_pid.display())}),
            )]),
            calls(&[(
                "bash",
                json!({"command": format!("touch {}; sleep 60", busy.display())}),
            )]),
            // The next message, after Ctrl-C stopped the bash call.
            calls(&[("shell_output", json!({"job_id": 1}))]),
            text("Still running."),
        ],
    );
    let out = against(&server, home.path())
        .stdin("start it\nhow is it\n")
        .output_interrupting(|| busy.exists());
    no_problems(&server, &out);
    assert!(out.stdout.ends_with("Still running.\n"), "{out:?}");
    assert_eq!(answer(&server, 3)["result"]["status"], "running");
    // The host has left: so has the job.
    assert!(Pid::read(&job_pid).dies(), "a job outlived its host");
}

#[test]
fn a_job_ends_with_a_host_killed_by_sigkill() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    let job_pid = home.path().join("job.pid");
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[(
                "shell_start",
                json!({"command": format!("sleep 403 & echo $! > {}.tmp; mv {0}.tmp {0}; wait", job_pid.display())}),
            )]),
            calls(&[("bash", json!({"command": "sleep 60"}))]),
            text("never"),
        ],
    );
    let out = against(&server, home.path())
        .args(["-p", "go"])
        .output_signalling(libc::SIGKILL, || job_pid.exists());
    assert_eq!(out.code, -1, "{out:?}");
    assert!(
        Pid::read(&job_pid).dies(),
        "a job outlived a host killed by SIGKILL"
    );
}

#[test]
fn jobs_lists_them_and_bad_arguments_are_named() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    let input = format!(
        "call shell_start {}\n/jobs\ncall shell_output {{\"job_id\": \"one\"}}\ncall shell_start {{}}\n",
        json!({"command": "sleep 404; echo hi"})
    );
    let out = super::ikigai(home.path())
        .args(["--provider", "stub"])
        .stdin(input)
        .output();
    assert!(
        out.stdout.contains(
            "Background jobs:\n    1  running 0s              sleep 404; echo hi\n       log: "
        ),
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("parameter 'job_id' must be an integer, got a string"),
        "{out:?}"
    );
    assert!(
        out.stdout.contains("missing required parameter 'command'"),
        "{out:?}"
    );
}

#[test]
fn undo_puts_back_a_write_an_edit_and_a_patch_and_tells_the_model() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    let dir = home.path();
    std::fs::write(dir.join("a.txt"), "a before\n").unwrap();
    std::fs::write(dir.join("b.txt"), "b before\n").unwrap();
    let path = |f: &str| dir.join(f).display().to_string();
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[(
                "file_write",
                json!({"file_path": path("a.txt"), "content": "a after\n"}),
            )]),
            calls(&[(
                "file_edit",
                json!({"file_path": path("b.txt"), "old_string": "before", "new_string": "after"}),
            )]),
            calls(&[(
                "apply_patch",
                json!({"input": format!("*** Begin Patch\n*** Add File: {}\n+c new\n*** End Patch", path("c.txt"))}),
            )]),
            text("Changed three files."),
            text("Understood."),
        ],
    );
    let out = against(&server, dir)
        .stdin("change them\n/undo\n/undo\nwhat now\n")
        .output();
    no_problems(&server, &out);
    assert!(out.stdout.contains("Changed three files."), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "a before\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("b.txt")).unwrap(),
        "b before\n"
    );
    assert!(!dir.join("c.txt").exists(), "{out:?}");
    let canonical = |f: &str| dir.canonicalize().unwrap().join(f).display().to_string();
    assert!(
        out.stderr.contains(&format!(
            "Restored {}, {}, {}.",
            canonical("a.txt"),
            canonical("b.txt"),
            canonical("c.txt")
        )),
        "{out:?}"
    );
    assert!(out.stderr.contains("Nothing to undo"), "{out:?}");
    let told = user_texts(Api::OpenAi, &server.requests()[4].body);
    let last = told.last().unwrap();
    assert!(
        last.starts_with("[The user undid your last file changes (/undo).")
            && last.ends_with("]\n\nwhat now"),
        "{told:?}"
    );
    // The kept bytes live under the session's directory.
    let sessions = dir.join("data/ikigai/sessions");
    let kept: Vec<_> = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("undo").is_dir())
        .collect();
    assert_eq!(kept.len(), 1);
}

#[test]
fn undo_leaves_a_file_changed_since_when_nobody_can_be_asked_and_names_bash() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    let dir = home.path();
    let a = dir.join("a.txt");
    std::fs::write(&a, "a before\n").unwrap();
    let b = dir.join("b.txt");
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[(
                "file_write",
                json!({"file_path": a, "content": "a after\n"}),
            )]),
            calls(&[("file_write", json!({"file_path": b, "content": "b new\n"}))]),
            // A change after the model's write, and through bash.
            calls(&[(
                "bash",
                json!({"command": format!("echo more >> {}", a.display())}),
            )]),
            text("Done."),
        ],
    );
    let out = against(&server, dir).stdin("change\n/undo\n").output();
    no_problems(&server, &out);
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "a after\nmore\n");
    assert!(!b.exists());
    assert!(
        out.stderr.contains("Left as they are (changed since): "),
        "{out:?}"
    );
    assert!(
        out.stderr
            .contains("A bash command ran in that turn: what it changed is not tracked and stays."),
        "{out:?}"
    );
}
