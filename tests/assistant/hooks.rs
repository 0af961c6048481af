//! Hooks (decision 83) end to end: the real binary with the stub provider
//! or the fake one, real hook scripts (sh and python3) in the config file,
//! one test per event and exit code, and the ways a hook can go wrong.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{json, Value};

use super::{against, ikigai, user_texts};
use crate::common::model_server::{calls as model_calls, text, Api, ModelServer};
use crate::common::{link, Output, Run};

/// A home whose system tools are ours and whose config file holds `config`.
fn home(config: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    for dir in ["libexec", "tools", "config/ikigai", "hooks"] {
        std::fs::create_dir_all(home.path().join(dir)).unwrap();
    }
    for tool in ["bash", "file-read", "file-write", "file-edit"] {
        std::os::unix::fs::symlink(link(tool), home.path().join("libexec").join(tool)).unwrap();
    }
    let config = config.replace("$HOME", &home.path().display().to_string());
    std::fs::write(home.path().join("config/ikigai/config.toml"), config).unwrap();
    home
}

/// An executable script `name` in the home's `hooks/`.
fn script(home: &Path, name: &str, body: &str) {
    let path = home.join("hooks").join(name);
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The stub provider, every call allowed.
fn stub(home: &Path) -> Run {
    ikigai(home).args(["--provider", "stub", "--approval", "auto"])
}

/// `call NAME {ARGS}` phrases, one message for the stub.
fn message(calls: &[(&str, Value)]) -> String {
    calls
        .iter()
        .map(|(name, args)| format!("call {name} {args}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The envelopes the stub model received, in order.
fn seen(out: &Output) -> Vec<(String, Value)> {
    out.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("[stub] "))
        .filter_map(|l| l.split_once(" returned "))
        .map(|(name, e)| (name.to_string(), serde_json::from_str(e).unwrap()))
        .collect()
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn echo_hi() -> String {
    message(&[("bash", json!({"command": "echo hi > hi.txt"}))])
}

#[test]
fn pre_tool_use_exit_2_blocks_the_call_and_its_stderr_reaches_the_model() {
    let home = home(
        r#"
[[hooks.PreToolUse]]
matcher = "Bash"
command = "$HOME/hooks/guard.sh"

[[hooks.PreToolUse]]
matcher = "file_read|Write"
command = "touch $HOME/not-for-bash"
"#,
    );
    script(
        home.path(),
        "guard.sh",
        "#!/bin/sh\ncat > \"$IKIGAI_PROJECT_DIR/input.json\"\necho 'no writing with bash' >&2\nexit 2\n",
    );
    let out = stub(home.path())
        .env("OPENAI_API_KEY", "sk-must-not-leak")
        .args(["-p", &echo_hi()])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    let got = seen(&out);
    assert_eq!(got[0].1["error_code"], "PERMISSION_DENIED", "{out:?}");
    assert_eq!(
        got[0].1["error"],
        "Blocked by a PreToolUse hook: no writing with bash"
    );
    assert!(!home.path().join("hi.txt").exists());
    assert!(!home.path().join("not-for-bash").exists());
    let input = read_json(&home.path().join("input.json"));
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["ikigai_tool_name"], "bash");
    assert_eq!(input["tool_input"], json!({"command": "echo hi > hi.txt"}));
    assert_eq!(input["cwd"], home.path().display().to_string());
    let id = input["session_id"].as_str().unwrap();
    assert!(!id.is_empty());
    let transcript = input["transcript_path"].as_str().unwrap();
    assert!(transcript.ends_with(&format!("{id}.jsonl")), "{input}");
}

#[test]
fn hooks_run_outside_the_sandbox_in_the_project_without_the_provider_keys() {
    let home = home(
        r#"
[[hooks.PreToolUse]]
command = "env > $HOME/env.txt; pwd > $HOME/pwd.txt; touch /tmp/.ikigai-hook-outside-$$ && echo $$ > $HOME/pid.txt"
"#,
    );
    let out = stub(home.path())
        .env("OPENAI_API_KEY", "sk-must-not-leak")
        .env("MY_SECRET_TOKEN", "also-not")
        .env("PLAIN_VAR", "passes")
        .args(["--sandbox", "read-only", "-p", &echo_hi()])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    let env = std::fs::read_to_string(home.path().join("env.txt")).unwrap();
    assert!(
        !env.contains("sk-must-not-leak") && !env.contains("also-not"),
        "{env}"
    );
    assert!(env.contains("PLAIN_VAR=passes"), "{env}");
    let dir = home.path().display().to_string();
    assert!(
        env.contains(&format!("IKIGAI_PROJECT_DIR={dir}\n")),
        "{env}"
    );
    assert!(
        env.contains(&format!("CLAUDE_PROJECT_DIR={dir}\n")),
        "{env}"
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join("pwd.txt"))
            .unwrap()
            .trim(),
        dir
    );
    // The hook wrote outside what the read-only sandbox lets tools write.
    let pid = std::fs::read_to_string(home.path().join("pid.txt")).unwrap();
    let marker = format!("/tmp/.ikigai-hook-outside-{}", pid.trim());
    assert!(Path::new(&marker).exists());
    let _ = std::fs::remove_file(marker);
}

#[test]
fn deny_beats_ask_beats_allow_and_allow_never_passes_a_deny_rule() {
    let allow = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"fine"}}'"#;
    let deny = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not on fridays"}}'"#;
    let home = home(&format!(
        "[[hooks.PreToolUse]]\ncommand = '''{allow}'''\n\n[[hooks.PreToolUse]]\ncommand = '''{deny}'''\n"
    ));
    let out = stub(home.path()).args(["-p", &echo_hi()]).output();
    let got = seen(&out);
    assert_eq!(
        got[0].1["error"], "Denied by a PreToolUse hook: not on fridays",
        "{out:?}"
    );
    assert!(!home.path().join("hi.txt").exists());

    // An allow skips the question, never a deny rule.
    let home = self::home(&format!("[[hooks.PreToolUse]]\ncommand = '''{allow}'''\n"));
    let out = ikigai(home.path())
        .args(["--provider", "stub", "--approval", "ask"])
        .args(["--deny", "bash(echo *)", "-p", &echo_hi()])
        .output();
    let got = seen(&out);
    assert!(
        got[0].1["error"]
            .as_str()
            .unwrap()
            .starts_with("Denied by the rule bash(echo *)"),
        "{out:?}"
    );
    // Without a deny rule, the allow runs what `ask` without a terminal
    // would have refused.
    let out = ikigai(home.path())
        .args(["--provider", "stub", "--approval", "ask", "-p", &echo_hi()])
        .output();
    assert_eq!(seen(&out)[0].1["tool_success"], true, "{out:?}");
    assert!(home.path().join("hi.txt").exists());
}

#[test]
fn updated_input_is_what_runs_and_two_rewriters_are_a_conflict() {
    let rewrite = |to: &str| {
        format!(
            r#"python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({{"hookSpecificOutput":{{"hookEventName":"PreToolUse","updatedInput":{{"command":d["tool_input"]["command"].replace("hi.txt","{to}")}}}}}}))'"#
        )
    };
    let home = home(&format!(
        "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = '''{}'''\n",
        rewrite("other.txt")
    ));
    let out = stub(home.path()).args(["-p", &echo_hi()]).output();
    assert_eq!(seen(&out)[0].1["tool_success"], true, "{out:?}");
    assert!(home.path().join("other.txt").exists(), "{out:?}");
    assert!(!home.path().join("hi.txt").exists());

    // A rewrite is judged by the deny rules as what it is.
    let out = stub(home.path())
        .args(["--deny", "bash(echo hi > other.txt)", "-p", &echo_hi()])
        .output();
    assert_eq!(
        seen(&out)[0].1["error_code"],
        "PERMISSION_DENIED",
        "{out:?}"
    );

    let home = self::home(&format!(
        "[[hooks.PreToolUse]]\ncommand = '''{}'''\n\n[[hooks.PreToolUse]]\ncommand = '''{}'''\n",
        rewrite("a.txt"),
        rewrite("b.txt")
    ));
    let out = stub(home.path()).args(["-p", &echo_hi()]).output();
    let error = seen(&out)[0].1["error"].as_str().unwrap().to_string();
    assert!(
        error.contains("two PreToolUse hooks rewrote its input differently"),
        "{out:?}"
    );
    assert!(out.stderr.contains("bash was not run"), "{out:?}");
    for file in ["a.txt", "b.txt", "hi.txt"] {
        assert!(!home.path().join(file).exists(), "{file}");
    }
}

#[test]
fn a_failing_hook_is_one_line_and_blocks_only_with_fail_block() {
    let home = home(
        r#"
[[hooks.PreToolUse]]
command = "echo 'linter broke' >&2; exit 1"
"#,
    );
    let out = stub(home.path()).args(["-p", &echo_hi()]).output();
    assert_eq!(seen(&out)[0].1["tool_success"], true, "{out:?}");
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("exited with 1"))
        .collect();
    assert_eq!(lines.len(), 1, "{out:?}");
    assert!(lines[0].contains("linter broke") && lines[0].contains("nothing was blocked"));

    // A guard whose path is mistyped fails closed.
    let home = self::home(
        r#"
[[hooks.PreToolUse]]
command = "$HOME/hooks/no-such-guard.sh"
fail = "block"
"#,
    );
    let out = stub(home.path()).args(["-p", &echo_hi()]).output();
    let error = seen(&out)[0].1["error"].as_str().unwrap().to_string();
    assert!(
        error.contains("fails closed (fail = \"block\"): exited with 127"),
        "{out:?}"
    );
    assert!(!home.path().join("hi.txt").exists());
}

#[test]
fn bad_hooks_each_cost_one_line_and_the_session_goes_on() {
    let home = home(
        r#"
[[hooks.PreToolUse]]
command = "$HOME/hooks/not-executable.sh"

[[hooks.PreToolUse]]
command = "echo '{not json'"

[[hooks.PreToolUse]]
command = "head -c 10000000 /dev/zero | tr '\\0' x"

[[hooks.PreToolUse]]
command = "sleep 30"
timeout = 1

[[hooks.PreToolUse]]
command = "kill -9 $$"
"#,
    );
    std::fs::write(
        home.path().join("hooks/not-executable.sh"),
        "#!/bin/sh\nexit 0\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = stub(home.path()).args(["-p", &echo_hi()]).output();
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(seen(&out)[0].1["tool_success"], true, "{out:?}");
    for says in [
        "exited with 126",
        "printed output that is not valid JSON",
        "more than the 256 KiB a hook may",
        "did not end within its timeout of 1 s and was killed",
        "was killed by signal 9",
    ] {
        let n = out.stderr.lines().filter(|l| l.contains(says)).count();
        assert_eq!(n, 1, "{says}: {out:?}");
    }
}

#[test]
fn post_tool_use_sees_the_envelope_and_exit_2_tells_the_model() {
    let home = home(
        r#"
[[hooks.PostToolUse]]
matcher = "Write|Edit"
command = "cat > $HOME/post.json; echo 'run the formatter next time' >&2; exit 2"

[[hooks.PostToolUse]]
matcher = "file_write"
command = '''python3 -c 'import json; print(json.dumps({"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"y"*20000}}))' '''
"#,
    );
    let msg = message(&[(
        "file_write",
        json!({"file_path": "a.txt", "content": "x\n"}),
    )]);
    let out = stub(home.path()).args(["-p", &msg]).output();
    let envelope = &seen(&out)[0].1;
    assert_eq!(envelope["tool_success"], true, "{out:?}");
    assert_eq!(envelope["hook_feedback"], "run the formatter next time");
    let context = envelope["hook_context"].as_str().unwrap();
    assert_eq!(context.chars().count(), 10_000, "{context}");
    let input = read_json(&home.path().join("post.json"));
    assert_eq!(input["tool_name"], "Write");
    assert_eq!(input["tool_response"]["tool_success"], true);
}

#[test]
fn user_prompt_submit_adds_context_or_blocks_the_message() {
    let server = ModelServer::start(Api::OpenAi, vec![text("ok")]);
    let home = home(
        r#"
[[hooks.UserPromptSubmit]]
command = "python3 -c 'import json,sys; d=json.load(sys.stdin); print(\"ticket \" + d[\"prompt\"].upper())'"
"#,
    );
    let out = against(&server, home.path())
        .args(["-p", "fix it"])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    let sent = user_texts(Api::OpenAi, &server.requests()[0].body).join("\n");
    assert!(
        sent.contains("fix it") && sent.contains("ticket FIX IT"),
        "{sent}"
    );

    let server = ModelServer::start(Api::OpenAi, vec![text("never")]);
    let home = self::home(
        r#"
[[hooks.UserPromptSubmit]]
command = "echo 'that prompt holds a password' >&2; exit 2"
"#,
    );
    let out = against(&server, home.path())
        .args(["-p", "my password is x"])
        .output();
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("Your message was not sent: that prompt holds a password"),
        "{out:?}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn session_start_context_reaches_the_model_and_session_end_runs() {
    let server = ModelServer::start(Api::OpenAi, vec![text("ok")]);
    let home = home(
        r#"
[[hooks.SessionStart]]
matcher = "startup"
command = "echo 'branch: main, 3 open issues'"

[[hooks.SessionStart]]
matcher = "resume"
command = "echo 'never on a new start'"

[[hooks.SessionEnd]]
command = "cat > $HOME/end.json"
"#,
    );
    let out = against(&server, home.path()).args(["-p", "hello"]).output();
    assert_eq!(out.code, 0, "{out:?}");
    let sent = user_texts(Api::OpenAi, &server.requests()[0].body).join("\n");
    assert!(
        sent.contains("branch: main, 3 open issues") && sent.contains("hello"),
        "{sent}"
    );
    assert!(!sent.contains("never on a new start"), "{sent}");
    let end = read_json(&home.path().join("end.json"));
    assert_eq!(end["hook_event_name"], "SessionEnd");
    assert_eq!(end["reason"], "other");
}

#[test]
fn a_stop_hook_sends_the_model_back_once_then_lets_it_stop() {
    let server = ModelServer::start(Api::OpenAi, vec![text("done?"), text("now done")]);
    let home = home(
        r#"
[[hooks.Stop]]
command = "$HOME/hooks/stop.py"
"#,
    );
    script(
        home.path(),
        "stop.py",
        "#!/usr/bin/env python3\nimport json, sys\nd = json.load(sys.stdin)\nif not d['stop_hook_active']:\n    print('run the tests first', file=sys.stderr)\n    sys.exit(2)\n",
    );
    let out = against(&server, home.path()).args(["-p", "go"]).output();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("now done"), "{out:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let sent = user_texts(Api::OpenAi, &requests[1].body).join("\n");
    assert!(
        sent.contains("Stop hook feedback:\nrun the tests first"),
        "{sent}"
    );
}

#[test]
fn stop_hooks_that_never_let_go_end_the_turn_after_eight() {
    let server = ModelServer::start(
        Api::OpenAi,
        (0..9).map(|i| text(&format!("try {i}"))).collect(),
    );
    let home = home(
        r#"
[[hooks.Stop]]
command = "echo 'keep going' >&2; exit 2"
"#,
    );
    let out = against(&server, home.path()).args(["-p", "go"]).output();
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(server.requests().len(), 9, "{out:?}");
    assert!(
        out.stderr
            .contains("Stop hooks sent the model back 8 times in a row; the turn ends here."),
        "{out:?}"
    );
}

#[test]
fn sequential_hooks_run_in_order_and_a_block_stops_the_rest() {
    let home = home(
        r#"
[[hooks.PreToolUse]]
command = "sleep 0.3; echo first >> $HOME/order"
sequential = true

[[hooks.PreToolUse]]
command = "echo second >> $HOME/order; exit 2"

[[hooks.PreToolUse]]
command = "echo third >> $HOME/order"
"#,
    );
    let out = stub(home.path()).args(["-p", &echo_hi()]).output();
    assert_eq!(
        seen(&out)[0].1["error_code"],
        "PERMISSION_DENIED",
        "{out:?}"
    );
    let order = std::fs::read_to_string(home.path().join("order")).unwrap();
    assert_eq!(order, "first\nsecond\n");

    // All at once otherwise: the slow one finishes last.
    let home = self::home(
        r#"
[[hooks.PreToolUse]]
command = "sleep 0.3; echo first >> $HOME/order"

[[hooks.PreToolUse]]
command = "echo second >> $HOME/order"
"#,
    );
    stub(home.path()).args(["-p", &echo_hi()]).output();
    let order = std::fs::read_to_string(home.path().join("order")).unwrap();
    assert_eq!(order, "second\nfirst\n");
}

#[test]
fn continue_false_ends_the_turn_with_its_reason() {
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            model_calls(&[("bash", json!({"command": "echo hi"}))]),
            text("never"),
        ],
    );
    let home = home(
        r#"
[[hooks.PostToolUse]]
command = '''echo '{"continue": false, "stopReason": "budget spent", "systemMessage": "hook says hello"}' '''
"#,
    );
    let out = against(&server, home.path())
        .args(["--approval", "auto", "-p", "go"])
        .output();
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("A hook stopped the turn: budget spent"),
        "{out:?}"
    );
    assert!(out.stderr.contains("hook says hello"), "{out:?}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn pre_compact_runs_on_compact_with_its_trigger() {
    let server = ModelServer::start(Api::OpenAi, vec![text("hi"), text("the summary")]);
    let home = home(
        r#"
[[hooks.PreCompact]]
matcher = "manual"
command = "cat > $HOME/compact.json"
"#,
    );
    let out = against(&server, home.path())
        .stdin("hello\n/compact\n")
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    let input = read_json(&home.path().join("compact.json"));
    assert_eq!(input["hook_event_name"], "PreCompact");
    assert_eq!(input["trigger"], "manual");
}

#[test]
fn a_bad_hook_table_stops_the_start_naming_file_line_and_key() {
    for (config, says) in [
        (
            "[[hooks.PreToolUs]]\ncommand = \"x\"\n",
            "line 1, key 'hooks.PreToolUs': unknown field `PreToolUs`",
        ),
        (
            "[[hooks.Stop]]\nmatcher = \"x\"\ncommand = \"x\"\n",
            "line 2, key 'hooks.Stop.matcher': Stop hooks have nothing to match",
        ),
        (
            "[[hooks.PreToolUse]]\nmatcher = \"(\"\ncommand = \"x\"\n",
            "line 2, key 'hooks.PreToolUse.matcher': '(' is not a regular expression",
        ),
        (
            "[[hooks.PreToolUse]]\ncommand = \"x\"\nfail = \"closed\"\n",
            "key 'hooks.PreToolUse.fail': unknown variant `closed`",
        ),
    ] {
        let home = home(config);
        let out = stub(home.path()).args(["-p", "hi"]).output();
        assert_eq!(out.code, 2, "{config}: {out:?}");
        assert!(out.stderr.contains(says), "{config}: {}", out.stderr);
    }
}

#[test]
fn at_a_terminal_a_hooks_ask_is_asked_with_its_rewrite_and_notification_runs() {
    use super::policy::{tmux_missing, Tmux};
    if tmux_missing() {
        return;
    }
    let home = home(
        r#"
[[hooks.PreToolUse]]
matcher = "Bash"
command = '''echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"a write in the project","updatedInput":{"command":"echo rewritten > hi.txt"}}}' '''

[[hooks.Notification]]
command = "cat > $HOME/notification.json"
"#,
    );
    // auto would run it unasked: the hook's ask asks.
    let t = Tmux::start(home.path(), &["--approval", "auto", "-p", &echo_hi()]);
    t.expect(
        "A PreToolUse hook asks you about this call: a write in the project",
        1,
    );
    let screen = t.expect("Run it? y yes / n no / a yes", 1);
    // The question shows what will run: the rewrite.
    assert!(screen.contains("echo rewritten > hi.txt"), "{screen}");
    t.keys(&["y", "Enter"]);
    t.expect("[exit 0]", 1);
    assert_eq!(
        std::fs::read_to_string(home.path().join("hi.txt")).unwrap(),
        "rewritten\n"
    );
    let note = read_json(&home.path().join("notification.json"));
    assert_eq!(note["hook_event_name"], "Notification");
    assert_eq!(note["message"], "ikigai needs your permission to use bash");
}
