//! The assistant's policy, end to end with the stub provider and our real
//! tools: the order of a reply's calls, what the model sees of a long
//! output, approval rules in `auto` and in `ask` without a terminal, the
//! config file, and the `ask` prompt at a real terminal (tmux).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::ikigai;
use crate::common::model_server::{calls as model_calls, text, Api, ModelServer};
use crate::common::{link, Output, Run};

/// Links our tools into `home`'s system tool directory.
fn link_tools(home: &Path) {
    for tool in ["bash", "file-read", "file-write", "file-edit", "grep"] {
        let _ = std::os::unix::fs::symlink(link(tool), home.join("libexec").join(tool));
    }
}

/// The stub provider over a home whose system tools are ours.
fn stub(home: &Path) -> Run {
    link_tools(home);
    ikigai(home).args(["--provider", "stub"])
}

/// A home with its tool directories made.
fn home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("libexec")).unwrap();
    std::fs::create_dir_all(home.path().join("tools")).unwrap();
    home
}

/// The envelopes the stub model received, in order: it quotes each one as
/// `[stub] NAME returned ENVELOPE`.
fn seen(out: &Output) -> Vec<(String, Value)> {
    out.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("[stub] "))
        .filter_map(|l| l.split_once(" returned "))
        .map(|(name, e)| (name.to_string(), serde_json::from_str(e).unwrap()))
        .collect()
}

/// `call NAME {ARGS}` phrases, one message for the stub.
fn message(calls: &[(&str, Value)]) -> String {
    calls
        .iter()
        .map(|(name, args)| format!("call {name} {args}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn a_reply_that_writes_then_reads_reads_what_was_written() {
    let home = home();
    // The write is slow: run at the same time, the read would come first.
    let msg = message(&[
        (
            "bash",
            json!({"command": "sleep 0.3; echo written > note.txt"}),
        ),
        ("file_read", json!({"file_path": "note.txt"})),
        ("grep", json!({"pattern": "writ", "path": "note.txt"})),
    ]);
    let out = stub(home.path())
        .args(["--approval", "auto", "-p", &msg])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    let got = seen(&out);
    assert_eq!(got.len(), 3, "{out:?}");
    assert_eq!(got[1].1["result"]["output"], "written\n", "{out:?}");
    assert_eq!(got[2].1["result"]["count"], 1, "{out:?}");
}

/// The tool_result envelopes of the only session under `home`.
fn logged_results(home: &Path) -> Vec<Value> {
    let dir = home.join("data/ikigai/sessions");
    let log = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("a session log");
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["envelope"].clone())
        .collect()
}

#[test]
fn the_model_sees_the_head_and_tail_and_the_whole_is_saved_privately() {
    let home = home();
    let msg = message(&[("bash", json!({"command": "seq 1 5000"}))]);
    let out = stub(home.path())
        .args(["--model-output", "2K", "-p", &msg])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    let output = seen(&out)[0].1["result"]["output"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(output.len() <= 2048, "{}", output.len());
    assert!(output.starts_with("1\n2\n3\n"), "{output}");
    assert!(output.ends_with("4999\n5000"), "{output}");
    let line = output
        .lines()
        .find(|l| l.starts_with("[... "))
        .expect("the line saying what was left out");
    assert!(
        line.contains(" lines left out; the whole output is in "),
        "{line}"
    );
    let path = PathBuf::from(
        line.split(" the whole output is in ")
            .nth(1)
            .unwrap()
            .trim_end_matches(" ...]"),
    );
    assert!(
        path.starts_with(home.path().join("data/ikigai/sessions")),
        "{path:?}"
    );
    let whole: String = (1..=5000).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), whole.trim_end());
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    // The model can read the rest with file_read.
    let read = ikigai(home.path())
        .args(["call", "file_read"])
        .arg(json!({"file_path": path, "offset": 2500, "limit": 1}).to_string())
        .output();
    assert_eq!(read.json()["result"]["output"], "2500\n");
    // The session log keeps what the model saw.
    assert_eq!(logged_results(home.path())[0]["result"]["output"], output);
    // `ikigai call` prints the whole envelope.
    let call = ikigai(home.path())
        .args(["call", "bash", r#"{"command": "seq 1 5000"}"#])
        .output();
    assert_eq!(call.json()["result"]["output"], whole.trim_end());
}

#[test]
fn auto_runs_what_no_deny_rule_matches_and_deny_wins() {
    let home = home();
    std::fs::write(home.path().join("keep.txt"), "k").unwrap();
    let msg = message(&[
        ("bash", json!({"command": "echo ok"})),
        ("bash", json!({"command": "echo start && rm -f keep.txt"})),
        ("bash", json!({"command": "echo $(rm keep.txt)"})),
        ("file_read", json!({"file_path": "/etc/hostname"})),
    ]);
    let out = stub(home.path())
        .args(["--approval", "auto", "--allow", "bash"])
        .args([
            "--deny",
            "bash(rm *)",
            "--deny",
            "file_read(/etc/*)",
            "-p",
            &msg,
        ])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    let got = seen(&out);
    assert_eq!(got[0].1["result"]["output"], "ok");
    for ((_, refused), part) in got[1..3].iter().zip(["rm -f keep.txt", "rm keep.txt"]) {
        assert_eq!(
            *refused,
            json!({"tool_success": false, "error": format!("Denied by the rule bash(rm *) (--deny), which matches `{part}`; do not try to get around it, ask the user instead"),
                   "error_code": "PERMISSION_DENIED", "exit_code": null, "stdout": "", "stderr": ""})
        );
    }
    assert!(got[3].1["error"]
        .as_str()
        .unwrap()
        .contains("file_read(/etc/*)"));
    assert!(home.path().join("keep.txt").exists(), "a denied call ran");
    assert!(
        out.stderr.contains("✗ bash: PERMISSION_DENIED"),
        "{}",
        out.stderr
    );
}

#[test]
fn ask_without_a_terminal_runs_reads_and_allowed_calls_and_refuses_the_rest() {
    let home = home();
    let msg = message(&[
        (
            "bash",
            json!({"command": "echo one && echo two | tr a-z A-Z"}),
        ),
        ("bash", json!({"command": "echo three > three.txt"})),
        ("bash", json!({"command": "echo four; touch four.txt"})),
        ("file_write", json!({"file_path": "w.txt", "content": "x"})),
        ("file_read", json!({"file_path": "/etc/hostname"})),
    ]);
    let out = stub(home.path())
        .args(["--approval", "ask", "--allow", "bash(echo *)"])
        .args(["--allow", "bash(tr *)", "-p", &msg])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    let got = seen(&out);
    assert_eq!(got[0].1["result"]["output"], "one\nTWO");
    for (_, refused) in &got[1..4] {
        assert_eq!(refused["error_code"], "PERMISSION_DENIED", "{refused}");
        assert!(
            refused["error"]
                .as_str()
                .unwrap()
                .contains("there is no terminal to ask"),
            "{refused}"
        );
    }
    assert_eq!(got[4].1["tool_success"], true, "read-only calls run");
    for file in ["three.txt", "four.txt", "w.txt"] {
        assert!(!home.path().join(file).exists(), "{file}");
    }
}

#[test]
fn the_config_file_sets_rules_and_options_beat_the_environment_beat_the_file() {
    let home = home();
    let config = home.path().join("config/ikigai");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "# policy\napproval = \"auto\"\nmodel_output = 200\ndeny = [\n  \"bash(curl *)\",\n]\n",
    )
    .unwrap();
    let curl = message(&[("bash", json!({"command": "curl -s http://127.0.0.1:9"}))]);
    let out = stub(home.path()).args(["-p", &curl]).output();
    let got = seen(&out);
    let error = got[0].1["error"].as_str().unwrap();
    let file = config.join("config.toml");
    assert_eq!(
        error,
        format!(
            "Denied by the rule bash(curl *) ({}, line 5), which matches `curl -s http://127.0.0.1:9`; do not try to get around it, ask the user instead",
            file.display()
        )
    );
    // model_output from the file; --model-output beats it.
    let long = message(&[("bash", json!({"command": "seq 1 100"}))]);
    let out = stub(home.path()).args(["-p", &long]).output();
    let output = seen(&out)[0].1["result"]["output"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        output.len() <= 200 && output.contains("left out"),
        "{output}"
    );
    let out = stub(home.path())
        .args(["--model-output", "1K", "-p", &long])
        .output();
    assert_eq!(
        seen(&out)[0].1["result"]["output"].as_str().unwrap().len(),
        291
    );
    // approval: the file says auto; IKIGAI_APPROVAL=ask beats it (and
    // there is no terminal to ask); --approval auto beats that.
    let write = message(&[("bash", json!({"command": "touch t.txt"}))]);
    let out = stub(home.path()).args(["-p", &write]).output();
    assert_eq!(seen(&out)[0].1["tool_success"], true, "{out:?}");
    let out = stub(home.path())
        .env("IKIGAI_APPROVAL", "ask")
        .args(["-p", &write])
        .output();
    assert_eq!(seen(&out)[0].1["error_code"], "PERMISSION_DENIED");
    let out = stub(home.path())
        .env("IKIGAI_APPROVAL", "ask")
        .args(["--approval", "auto", "-p", &write])
        .output();
    assert_eq!(seen(&out)[0].1["tool_success"], true);
    // IKIGAI_CONFIG names another file.
    let other = home.path().join("other.toml");
    std::fs::write(&other, "provider = \"stub\"\napproval = \"ask\"\n").unwrap();
    let out = ikigai(home.path())
        .env("IKIGAI_CONFIG", &other)
        .env_remove("IKIGAI_APPROVAL")
        .args(["-p", &write])
        .output();
    assert_eq!(
        seen(&out)[0].1["error_code"],
        "PERMISSION_DENIED",
        "{out:?}"
    );
}

#[test]
fn a_bad_config_file_or_rule_stops_the_start_naming_file_line_and_key() {
    let home = home();
    let file = home.path().join("bad.toml");
    for (text, says) in [
        (
            "model = \"m\"\naproval = \"ask\"\n",
            "line 2, key 'aproval': unknown field `aproval`",
        ),
        (
            "network = \"yes\"\n",
            "line 1, key 'network': invalid type: string \"yes\", expected a boolean",
        ),
        (
            "[tools.bash]\nenv = \"X\"\n",
            "line 2, key 'tools.bash.env': invalid type: string",
        ),
        (
            "approval = \"never\"\n",
            "line 1, key 'approval': unknown variant `never`",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        for command in [&["tools"][..], &["-p", "hi"]] {
            let out = ikigai(home.path())
                .env("IKIGAI_CONFIG", &file)
                .args(command)
                .output();
            assert_eq!(out.code, 2, "{text:?} {out:?}");
            let expected = format!("ikigai: config: {}, {says}", file.display());
            assert!(
                out.stderr.starts_with(&expected),
                "{text:?}: {}",
                out.stderr
            );
        }
    }
    std::fs::write(&file, "allow = [\"bash(ls)\",\n  \"web_fetch(docs.rs)\"]\n").unwrap();
    let out = ikigai(home.path())
        .env("IKIGAI_CONFIG", &file)
        .args(["--provider", "stub", "-p", "hi"])
        .output();
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "config: {}, line 2: rule 'web_fetch(docs.rs)'",
            file.display()
        )),
        "{}",
        out.stderr
    );
    let out = stub(home.path())
        .args(["--deny", "bash(ls", "-p", "hi"])
        .output();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("--deny: rule 'bash(ls': the pattern must end with ')'"),
        "{}",
        out.stderr
    );
    let out = stub(home.path())
        .args(["--approval", "maybe", "-p", "hi"])
        .output();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("--approval: unknown approval mode 'maybe'"),
        "{}",
        out.stderr
    );
    let missing = home.path().join("missing.toml");
    let out = ikigai(home.path())
        .env("IKIGAI_CONFIG", &missing)
        .args(["tools"])
        .output();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("cannot read the config file"),
        "{}",
        out.stderr
    );
}

/// `ikigai` in a tmux window of its own server: a real terminal that keys
/// are typed into and whose screen is read.
pub(super) struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    pub(super) fn start(home: &Path, args: &[&str]) -> Tmux {
        let socket = home.join("tmux.sock");
        let mut env = vec![
            format!("HOME={}", home.display()),
            format!("XDG_DATA_HOME={}", home.join("data").display()),
            format!("XDG_CONFIG_HOME={}", home.join("config").display()),
            format!("IKIGAI_TOOLS_DIR={}", home.join("tools").display()),
            format!("IKIGAI_LIBEXEC_DIR={}", home.join("libexec").display()),
            "NO_COLOR=1".to_string(),
            "TERM=xterm".to_string(),
        ];
        env.push(format!(
            "PATH={}",
            std::env::var("PATH").unwrap_or_default()
        ));
        let mut line = vec!["env".to_string(), "-i".to_string()];
        line.extend(env);
        line.push(link("ikigai").display().to_string());
        line.extend(["--provider", "stub"].map(str::to_string));
        line.extend(args.iter().map(|a| a.to_string()));
        // Keeps the window after ikigai leaves, so its last words stay readable.
        let script = format!(
            "cd {}; {}; echo \"[exit $?]\"; sleep 60",
            quote(&home.display().to_string()),
            line.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
        );
        let ok = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["-f", "/dev/null", "new-session", "-d", "-s", "ikigai"])
            .args(["-x", "200", "-y", "60", &script])
            .status()
            .expect("tmux");
        assert!(ok.success());
        Tmux { socket }
    }

    pub(super) fn keys(&self, keys: &[&str]) {
        let ok = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["send-keys", "-t", "ikigai"])
            .args(keys)
            .status()
            .unwrap();
        assert!(ok.success());
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["capture-pane", "-t", "ikigai", "-p", "-J", "-S", "-200"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen shows `what` `times` times (30 s at most).
    pub(super) fn expect(&self, what: &str, times: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if screen.matches(what).count() >= times {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "never saw {what:?} x{times} on:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Tmux {
    /// Waits until the line editor waits at an empty prompt, so keys reach it.
    fn expect_prompt(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            let last = screen.lines().rev().find(|l| !l.trim().is_empty());
            if last.map(str::trim) == Some(">") {
                return;
            }
            assert!(Instant::now() < deadline, "no prompt on:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
    }
}

fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

pub(super) fn tmux_missing() -> bool {
    let missing = Command::new("tmux").arg("-V").output().is_err();
    if missing {
        eprintln!("skipped: tmux is not installed");
    }
    missing
}

#[test]
fn at_a_terminal_n_refuses_with_a_reason_and_the_file_stays_unwritten() {
    if tmux_missing() {
        return;
    }
    let home = home();
    link_tools(home.path());
    let msg = message(&[("bash", json!({"command": "echo hi > hi.txt"}))]);
    let t = Tmux::start(home.path(), &["-p", &msg]);
    t.expect("bash wants to run:", 1);
    t.expect(
        "Run it? y yes / n no / a yes, and allow bash(echo hi *) for this session:",
        1,
    );
    t.keys(&["n", "Enter"]);
    t.expect("Tell the model why (optional; Enter to skip):", 1);
    t.keys(&["use the other file", "Enter"]);
    let screen = t.expect("[exit ", 1);
    assert!(
        screen.contains(r#""error":"The user refused this call: use the other file","error_code":"PERMISSION_DENIED""#),
        "{screen}"
    );
    assert!(screen.contains("[exit 0]"), "{screen}");
    assert!(!home.path().join("hi.txt").exists());
}

#[test]
fn at_a_terminal_the_diff_is_shown_and_y_writes() {
    if tmux_missing() {
        return;
    }
    let home = home();
    link_tools(home.path());
    std::fs::write(home.path().join("c.toml"), "a = 1\ndebug = false\n").unwrap();
    let msg = message(&[(
        "file_edit",
        json!({"file_path": "c.toml", "old_string": "debug = false", "new_string": "debug = true"}),
    )]);
    let t = Tmux::start(home.path(), &["-p", &msg]);
    let screen = t.expect("Run it?", 1);
    assert!(
        screen.contains("file_edit wants to edit c.toml:"),
        "{screen}"
    );
    assert!(
        screen.contains("c.toml:\n@@ -1,2 +1,2 @@\n a = 1\n-debug = false\n+debug = true"),
        "{screen}"
    );
    assert!(
        screen.contains("allow file_edit for this session"),
        "{screen}"
    );
    t.keys(&["y", "Enter"]);
    let screen = t.expect("[exit ", 1);
    assert!(screen.contains("[exit 0]"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(home.path().join("c.toml")).unwrap(),
        "a = 1\ndebug = true\n"
    );
}

#[test]
fn at_a_terminal_a_allows_commands_that_start_alike_for_the_session() {
    if tmux_missing() {
        return;
    }
    let home = home();
    link_tools(home.path());
    let t = Tmux::start(home.path(), &[]);
    t.expect_prompt();
    let first = message(&[("bash", json!({"command": "echo one two"}))]);
    t.keys(&["-l", &first]);
    t.keys(&["Enter"]);
    t.expect("Run it?", 1);
    t.keys(&["a", "Enter"]);
    t.expect("Allowed for this session: bash(echo one *)", 1);
    t.expect(
        r#"returned {"tool_success":true,"result":{"output":"one two""#,
        1,
    );
    // Same first two words: no question. Other words: asked again.
    t.expect_prompt();
    let second = message(&[("bash", json!({"command": "echo one three"}))]);
    t.keys(&["-l", &second]);
    t.keys(&["Enter"]);
    t.expect(r#""output":"one three""#, 1);
    t.expect_prompt();
    let third = message(&[("bash", json!({"command": "echo two"}))]);
    t.keys(&["-l", &third]);
    t.keys(&["Enter"]);
    let screen = t.expect("Run it?", 2);
    assert_eq!(screen.matches("Run it?").count(), 2, "{screen}");
    t.keys(&["n", "Enter"]);
    t.expect("Tell the model why", 1);
    t.keys(&["Enter"]);
    t.expect(r#""error":"The user refused this call""#, 1);
    t.expect_prompt();
    t.keys(&["C-d"]);
    let screen = t.expect("[exit ", 1);
    assert!(screen.contains("[exit 0]"), "{screen}");
}

#[test]
fn at_a_terminal_ctrl_c_at_the_question_runs_nothing() {
    if tmux_missing() {
        return;
    }
    let home = home();
    link_tools(home.path());
    let msg = message(&[("bash", json!({"command": "touch made.txt"}))]);
    let t = Tmux::start(home.path(), &["-p", &msg]);
    t.expect("Run it?", 1);
    t.keys(&["C-c"]);
    let screen = t.expect("[exit ", 1);
    assert!(screen.contains("[exit 130]"), "{screen}");
    assert!(screen.contains("Cancelled by you"), "{screen}");
    assert!(!home.path().join("made.txt").exists());
}

#[test]
fn at_a_terminal_a_write_the_sandbox_refused_runs_again_outside_it_on_y() {
    if tmux_missing() || crate::sandbox::landlock().is_none() {
        return;
    }
    let home = home();
    link_tools(home.path());
    // Outside the workspace (the home) and outside /tmp, which the sandbox
    // lets every call write.
    let outside = crate::common::unwritable_by_default();
    let target = outside.path().join("f.txt");
    let command = format!("echo hi > {}", target.display());
    let msg = message(&[("bash", json!({ "command": command }))]);
    let t = Tmux::start(home.path(), &["--allow", "bash", "-p", &msg]);
    let screen = t.expect("Run it again outside the sandbox? y / n:", 1);
    assert!(
        screen.contains("bash failed inside the sandbox:"),
        "{screen}"
    );
    assert!(screen.contains("Permission denied"), "{screen}");
    assert!(!target.exists(), "the sandbox let the write through");
    t.keys(&["y", "Enter"]);
    t.expect("[exit 0]", 1);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hi\n");
}

/// Decision 100: a deny rule sees through the shell. Every way of running
/// `rm` that once slipped past `bash(rm*)`, each run through the assistant
/// in auto mode, is refused and leaves the file in place; commands that
/// only look alike still run.
#[test]
fn a_deny_rule_sees_through_wrappers_quotes_scripts_and_substitutions() {
    let home = home();
    std::fs::write(home.path().join("x"), "rm is in here\n").unwrap();
    std::fs::write(home.path().join("y"), "").unwrap();
    let bypasses = [
        "X=1 rm -f x",
        "command rm -f x",
        r"\rm -f x",
        "/bin/rm -f x",
        "env rm -f x",
        "exec rm -f x",
        "nice rm -f x",
        "timeout 5 rm -f x",
        "bash -c 'rm -f x'",
        "eval 'rm -f x'",
        "r''m -f x",
        "$(echo rm) -f x",
        "echo x | xargs rm -f",
        "find . -name x -delete",
        "sh -lc \"cd . && rm -f x\"",
        "/usr/bin/env -i nice -n 1 rm -f x",
    ];
    let look_alikes = ["echo rm", "grep rm x", "format", "unlink y"];
    let calls: Vec<(&str, Value)> = bypasses
        .iter()
        .chain(&look_alikes)
        .map(|c| ("bash", json!({ "command": c })))
        .collect();
    // A scripted model asks for every call in one reply, then ends.
    let server = ModelServer::start(Api::OpenAi, vec![model_calls(&calls), text("Done.")]);
    link_tools(home.path());
    let out = super::against(&server, home.path())
        .args(["--approval", "auto", "--deny", "bash(rm*)", "-p", "tidy up"])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{out:?}");
    let got = super::envelopes(Api::OpenAi, &requests[1].body);
    assert_eq!(got.len(), calls.len(), "{out:?}");
    for (command, (_, envelope)) in bypasses.iter().zip(&got) {
        assert_eq!(
            envelope["error_code"], "PERMISSION_DENIED",
            "{command}: {envelope}"
        );
        let error = envelope["error"].as_str().unwrap();
        assert!(
            error.starts_with("Denied by the rule bash(rm*) (--deny), which matches `"),
            "{command}: {error}"
        );
    }
    // The refusal names what matched, as the shell would run it.
    assert!(
        got[2].1["error"].as_str().unwrap().contains("`rm -f x`"),
        "{:?}",
        got[2]
    );
    assert!(
        got[11].1["error"]
            .as_str()
            .unwrap()
            .contains("whose program cannot be known without running it"),
        "{:?}",
        got[11]
    );
    assert!(home.path().join("x").exists(), "a denied call ran");
    for (command, (_, envelope)) in look_alikes.iter().zip(&got[bypasses.len()..]) {
        assert_ne!(
            envelope["error_code"], "PERMISSION_DENIED",
            "{command}: {envelope}"
        );
    }
    assert_eq!(got[bypasses.len()].1["result"]["output"], "rm");
    assert_eq!(
        got[bypasses.len() + 1].1["result"]["output"],
        "rm is in here"
    );
    // The last look-alike ran in the same directory: the calls were live.
    assert!(!home.path().join("y").exists(), "unlink y did not run");
}

/// Decision 59 at a real terminal: a command holding cursor movements, a
/// carriage return and a bidirectional override is shown with them
/// visible, whole; the prompt says so before it asks, and the question is
/// not overwritten.
#[test]
fn at_a_terminal_a_command_cannot_hide_what_runs() {
    if tmux_missing() {
        return;
    }
    let home = home();
    link_tools(home.path());
    let command = "touch pwned; : \u{1b}[2K\r\u{1b}[1A\u{202e}echo harmless";
    let msg = message(&[("bash", json!({ "command": command }))]);
    let t = Tmux::start(home.path(), &["-p", &msg]);
    let screen = t.expect("Run it?", 1);
    assert!(
        screen.contains(
            "bash wants to run:\n  touch pwned; : \\e[2K\\r\\e[1A<U+202E>echo harmless\n"
        ),
        "{screen}"
    );
    assert!(
        screen.contains(
            "Warning: The command holds control or invisible characters (shown above as \\e, \\r \
             or <U+XXXX>); they are part of what would run."
        ),
        "{screen}"
    );
    // How the rules read it: each command, and why none is allowed.
    assert!(
        screen.contains("  `touch pwned`: no allow rule matches it"),
        "{screen}"
    );
    assert!(screen.contains("Run it? y yes / n no / a yes"), "{screen}");
    t.keys(&["n", "Enter"]);
    t.expect("Tell the model why", 1);
    t.keys(&["Enter"]);
    let screen = t.expect("[exit ", 1);
    assert!(screen.contains("[exit 0]"), "{screen}");
    assert!(!home.path().join("pwned").exists());
}
