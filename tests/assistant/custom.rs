//! What people bring as files, end to end: custom commands (decision 84)
//! with each substitution and front matter field, typed in `-p` and at the
//! line prompt; skills (decision 85) in their own bounded section of the
//! system prompt, the same bytes on every request; and the files that must
//! be passed over with a warning, never a crash.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::{against, no_problems, system_text, user_texts};
use crate::common::link;
use crate::common::model_server::{calls, text, Api, ModelServer};

/// Writes `text` at `path`, making its folders.
pub(crate) fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The person's commands folder under the test's home.
fn commands(home: &Path) -> PathBuf {
    home.join("config/ikigai/commands")
}

/// Our bash and file_read, as system tools.
fn tools(home: &Path) {
    std::fs::create_dir_all(home.join("libexec")).unwrap();
    for (name, tool) in [("bash", "bash"), ("file-read", "file_read")] {
        std::os::unix::fs::symlink(link(name), home.join("libexec").join(tool)).unwrap();
    }
}

#[test]
fn a_command_puts_in_its_arguments_files_and_command_output() {
    let home = tempfile::tempdir().unwrap();
    tools(home.path());
    write(&home.path().join("notes.txt"), "line one\nline two\n");
    write(
        &commands(home.path()).join("fix.md"),
        "---\ndescription: Fix an issue\nargument-hint: <issue> <file>\n---\n\
         Fix bug $1 in $2 (all: $ARGUMENTS).\nNotes: @notes.txt\nStatus: !`echo from-bash; echo err >&2`\n",
    );
    let server = ModelServer::start(Api::OpenAi, vec![text("Done.")]);
    let out = against(&server, home.path())
        .args(["-p", r#"/fix 42 "src/a b.rs""#])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    let sent = user_texts(Api::OpenAi, &server.requests()[0].body);
    assert_eq!(sent.len(), 1);
    let sent = &sent[0];
    assert!(
        sent.starts_with(r#"Fix bug 42 in src/a b.rs (all: 42 "src/a b.rs")."#),
        "{sent}"
    );
    assert!(sent.contains("Notes: notes.txt:\n```\n"), "{sent}");
    assert!(
        sent.contains("line one") && sent.contains("line two"),
        "{sent}"
    );
    assert!(sent.contains("Status: from-bash\nerr"), "{sent}");
    // The file and the command ran as calls the person sees.
    assert!(out.stderr.contains("file_read"), "{}", out.stderr);
    assert!(out.stderr.contains("echo from-bash"), "{}", out.stderr);
}

#[test]
fn included_files_are_data_so_a_cycle_of_includes_ends() {
    let home = tempfile::tempdir().unwrap();
    tools(home.path());
    write(&home.path().join("a.md"), "A says @b.md and !`touch ran`");
    write(&home.path().join("b.md"), "B says @a.md");
    write(&commands(home.path()).join("loop.md"), "Start @a.md end");
    let server = ModelServer::start(Api::OpenAi, vec![text("ok")]);
    let out = against(&server, home.path()).args(["-p", "/loop"]).output();
    assert_eq!(out.code, 0, "{out:?}");
    let sent = &user_texts(Api::OpenAi, &server.requests()[0].body)[0];
    assert!(
        sent.contains("A says @b.md and !`touch ran`") && !sent.contains("B says"),
        "{sent}"
    );
    assert!(!home.path().join("ran").exists());
}

#[test]
fn a_missing_file_is_left_as_written_and_a_refused_command_sends_nothing() {
    let home = tempfile::tempdir().unwrap();
    tools(home.path());
    write(
        &commands(home.path()).join("gone.md"),
        "Read @missing.txt please",
    );
    write(
        &commands(home.path()).join("push.md"),
        "Pushed: !`git push`",
    );
    let server = ModelServer::start(Api::OpenAi, vec![text("ok")]);
    let out = against(&server, home.path())
        .args(["--deny", "bash(git push*)", "-p", "/gone"])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        user_texts(Api::OpenAi, &server.requests()[0].body),
        ["Read @missing.txt please"]
    );
    assert!(
        out.stderr
            .contains("/gone: @missing.txt is left as written"),
        "{}",
        out.stderr
    );
    let out = against(&server, home.path())
        .args(["--deny", "bash(git push*)", "-p", "/push"])
        .output();
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("/push: `git push` did not run (Denied by the rule bash(git push*)"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("the message was not sent"),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_file_is_read_within_the_sandbox_read_rules() {
    let home = tempfile::tempdir().unwrap();
    tools(home.path());
    let secret = home.path().join(".ssh/id_test");
    write(&secret, "PRIVATE-KEY-TEXT");
    write(
        &commands(home.path()).join("leak.md"),
        &format!("Key: @{}", secret.display()),
    );
    let server = ModelServer::start(Api::OpenAi, vec![text("ok")]);
    let out = against(&server, home.path()).args(["-p", "/leak"]).output();
    if out.stderr.contains("cannot hide") {
        eprintln!("skipped: this kernel cannot hide secret paths");
        return;
    }
    let sent = &user_texts(Api::OpenAi, &server.requests()[0].body)[0];
    assert!(!sent.contains("PRIVATE-KEY-TEXT"), "{sent}");
    assert!(out.stderr.contains("is left as written"), "{}", out.stderr);
}

#[test]
fn model_and_allowed_tools_hold_for_the_command_message_only() {
    let home = tempfile::tempdir().unwrap();
    tools(home.path());
    write(
        &commands(home.path()).join("quick.md"),
        "---\nmodel: gpt-other\nallowed-tools: Bash(echo:*), Read\n---\nRun the echo.\n",
    );
    let echo = || calls(&[("bash", json!({"command": "echo allowed-here"}))]);
    let server = ModelServer::start(
        Api::OpenAi,
        vec![echo(), text("Ran it."), echo(), text("Refused.")],
    );
    let out = against(&server, home.path())
        .args(["--approval", "ask", "--model", "gpt-main"])
        .stdin("/quick\nagain please\n")
        .output();
    no_problems(&server, &out);
    let r = server.requests();
    assert_eq!(r.len(), 4, "{out:?}");
    assert_eq!(r[0].body["model"], "gpt-other");
    assert_eq!(r[1].body["model"], "gpt-other");
    assert_eq!(r[2].body["model"], "gpt-main");
    let result = |body: &serde_json::Value| {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "tool")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        result(&r[1].body).contains("allowed-here"),
        "{}",
        result(&r[1].body)
    );
    assert!(
        result(&r[3].body).contains("PERMISSION_DENIED"),
        "{}",
        result(&r[3].body)
    );
}

#[test]
fn help_lists_commands_and_skips_a_builtin_clash_and_broken_files() {
    let home = tempfile::tempdir().unwrap();
    let dir = commands(home.path());
    write(&dir.join("help.md"), "mine");
    write(&dir.join("git/commit.md"), "# Commit the staged work\nbody");
    write(&dir.join("bad.md"), "---\ndescription: [open\n---\nbody");
    write(&dir.join("huge.md"), &"y".repeat(5 << 20));
    write(&home.path().join("elsewhere.md"), "outside");
    std::os::unix::fs::symlink(home.path().join("elsewhere.md"), dir.join("out.md")).unwrap();
    write(
        &home.path().join(".claude/commands/review.md"),
        "---\ndescription: Review the diff\nargument-hint: [focus]\n---\nReview.",
    );
    let server = ModelServer::start(Api::OpenAi, vec![text("ok")]);
    let out = against(&server, home.path()).stdin("/help\n").output();
    assert_eq!(out.code, 0, "{out:?}");
    let said = format!("{}{}", out.stdout, out.stderr);
    for line in [
        "/git:commit",
        "Commit the staged work (personal)",
        "/review [focus]",
        "Review the diff (~/.claude)",
        "help.md: skipped: /help is a built-in command",
        "bad.md: skipped: front matter, line 2, field 'description'",
        "huge.md: cut to its first 256 KB",
        "out.md: skipped: it is a link to",
    ] {
        assert!(said.contains(line), "{line}\n---\n{said}");
    }
    assert!(!said.contains("panicked"));
    assert!(server.requests().is_empty());
}

/// A skill folder with its SKILL.md.
fn skill(root: &Path, name: &str, description: &str) {
    write(
        &root.join(name).join("SKILL.md"),
        &format!("---\nname: {name}\ndescription: {description}\n---\nSteps for {name}.\n"),
    );
}

#[test]
fn skills_have_a_bounded_section_that_stays_the_same_bytes() {
    let home = tempfile::tempdir().unwrap();
    let mine = home.path().join("config/ikigai/skills");
    skill(
        &mine,
        "pdf-forms",
        "Fill in PDF forms. Use when the user names a form.",
    );
    skill(
        &home.path().join(".claude/skills"),
        "release",
        "Cut a release.",
    );
    write(
        &mine.join("broken/SKILL.md"),
        "---\nname: broken\n---\nNo description.",
    );
    write(
        &mine.join("Wrong/SKILL.md"),
        "---\nname: Wrong\ndescription: d\n---\n",
    );
    let server = ModelServer::start(Api::Anthropic, vec![text("one"), text("two")]);
    let out = against(&server, home.path())
        .stdin("first\nsecond\n/skills\n/context\n")
        .output();
    no_problems(&server, &out);
    let r = server.requests();
    let system = system_text(Api::Anthropic, &r[0].body);
    assert_eq!(system, system_text(Api::Anthropic, &r[1].body));
    let section = &system[system.find("\n# Skills\n").expect(&system)..];
    assert!(
        section.contains(&format!(
            "- pdf-forms: Fill in PDF forms. Use when the user names a form. ({})",
            mine.join("pdf-forms/SKILL.md").display()
        )),
        "{section}"
    );
    assert!(section.contains("- release: Cut a release."), "{section}");
    assert!(!section.contains("Steps for"), "bodies stay out: {section}");
    assert!(
        system.contains("read its SKILL.md"),
        "the guidance says how"
    );
    for line in [
        "broken/SKILL.md: skill skipped: field 'description' is missing",
        "Wrong/SKILL.md: skill skipped: field 'name' ('Wrong') must be",
        "Skills (2):",
        "pdf-forms  Fill in PDF forms",
        "(personal)",
        "skills ",
    ] {
        assert!(
            out.stderr.contains(line) || out.stdout.contains(line),
            "{line}\n---\n{out:?}"
        );
    }
}

#[test]
fn two_hundred_skills_stay_within_the_budget_and_the_rest_are_named() {
    let home = tempfile::tempdir().unwrap();
    let mine = home.path().join("config/ikigai/skills");
    for i in 0..200 {
        skill(
            &mine,
            &format!("skill-{i:03}"),
            &"A long description of what this skill does and when. ".repeat(10),
        );
    }
    let server = ModelServer::start(Api::OpenAi, vec![text("ok")]);
    let out = against(&server, home.path()).args(["-p", "hi"]).output();
    no_problems(&server, &out);
    let system = system_text(Api::OpenAi, &server.requests()[0].body);
    let section = &system[system.find("\n# Skills\n").unwrap()..];
    assert!(section.len().div_ceil(3) <= 4000, "{} bytes", section.len());
    assert!(
        section.contains("more skills are not listed here"),
        "{section}"
    );
    assert!(
        out.stderr
            .contains("skills left out of the prompt, over its budget of 4000 tokens: "),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("skill-199"), "{}", out.stderr);
}

/// A repository under `home` shipping a command and a config.
fn project(home: &Path) -> PathBuf {
    let root = home.join("proj");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    write(&root.join(".claude/commands/hello.md"), "Say hello to $1.");
    write(
        &root.join(".ikigai/config.toml"),
        "deny = [\"bash(rm *)\"]\nallow = [\"bash\"]\nsandbox = \"off\"\n",
    );
    root
}

#[test]
fn the_trust_question_is_asked_once_at_a_terminal_and_kept() {
    use super::terminal::{command, Pty};
    let home = tempfile::tempdir().unwrap();
    let root = project(home.path());
    let server = ModelServer::start(Api::OpenAi, vec![text("Hi."), text("Again.")]);
    let mut cmd = command(home.path());
    cmd.current_dir(&root).args(["--provider", "openai"]);
    for (k, v) in server.env() {
        cmd.env(k, v);
    }
    let mut pty = Pty::spawn(cmd);
    pty.expect("ships files that can run code or change what ikigai may do");
    pty.expect("settings in .ikigai/config.toml");
    pty.expect("1 commands, 0 skills, 0 agents");
    pty.expect("[y/N]");
    pty.type_in("y\r");
    pty.expect("trusted.");
    pty.expect_prompt(1);
    pty.type_in("/hello world\r");
    pty.expect("Hi.");
    pty.leave(2);
    assert_eq!(
        user_texts(Api::OpenAi, &server.requests()[0].body),
        ["Say hello to world."]
    );
    let kept = home.path().join("config/ikigai/trusted.toml");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&kept).unwrap().mode() & 0o777, 0o600);
    // The answer holds for -p: the command is loaded, nothing is asked.
    let out = against(&server, home.path())
        .dir(&root)
        .args(["-p", "/hello there"])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stderr.contains("[y/N]"), "{}", out.stderr);
    assert_eq!(
        user_texts(Api::OpenAi, &server.requests()[1].body),
        ["Say hello to there."]
    );
}

#[test]
fn without_a_terminal_an_untrusted_project_narrows_and_loads_nothing() {
    let home = tempfile::tempdir().unwrap();
    tools(home.path());
    let root = project(home.path());
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[("bash", json!({"command": "rm -f nothing"}))]),
            text("Refused."),
            text("Trusted."),
        ],
    );
    let out = against(&server, home.path())
        .dir(&root)
        .args(["-p", "/hello there"])
        .output();
    no_problems(&server, &out);
    assert!(!out.stderr.contains("[y/N]"), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "Project files of {} not loaded: the project is not trusted",
            root.display()
        )),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("sandbox, allow not applied: the project is not trusted"),
        "{}",
        out.stderr
    );
    let r = server.requests();
    // Not a command: the words went as typed.
    assert_eq!(user_texts(Api::OpenAi, &r[0].body), ["/hello there"]);
    // The project's deny rule holds all the same.
    let result = r[1].body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.contains("PERMISSION_DENIED"), "{result}");
    assert!(result.contains(".ikigai/config.toml, line 1"), "{result}");
    // --trust loads it for this run.
    let out = against(&server, home.path())
        .dir(&root)
        .args(["--trust", "-p", "/hello there"])
        .output();
    assert!(
        out.stderr.contains("trusted for this run (--trust)"),
        "{}",
        out.stderr
    );
    assert_eq!(
        user_texts(Api::OpenAi, &server.requests()[2].body),
        ["Say hello to there."]
    );
    assert!(!home.path().join("config/ikigai/trusted.toml").exists());
}

#[test]
fn a_damaged_trust_file_trusts_nothing() {
    let home = tempfile::tempdir().unwrap();
    let root = project(home.path());
    write(
        &home.path().join("config/ikigai/trusted.toml"),
        &format!(
            "[[project]]\nroot = \"{}\"\ntrusted = true\nfiles = 7\n",
            root.display()
        ),
    );
    let server = ModelServer::start(Api::OpenAi, vec![text("ok")]);
    let out = against(&server, home.path())
        .dir(&root)
        .args(["-p", "/hello there"])
        .output();
    assert!(out.stderr.contains("not loaded"), "{}", out.stderr);
    assert_eq!(
        user_texts(Api::OpenAi, &server.requests()[0].body),
        ["/hello there"]
    );
}

#[test]
fn tab_completes_a_custom_command_at_the_terminal() {
    use super::terminal::{command, Pty};
    let home = tempfile::tempdir().unwrap();
    write(
        &commands(home.path()).join("greet-all.md"),
        "Greet $ARGUMENTS.",
    );
    let server = ModelServer::start(Api::OpenAi, vec![text("Hello.")]);
    let mut cmd = command(home.path());
    cmd.args(["--provider", "openai"]);
    for (k, v) in server.env() {
        cmd.env(k, v);
    }
    let mut pty = Pty::spawn(cmd);
    pty.expect_prompt(1);
    pty.type_in("/greet\t");
    pty.expect("/greet-all ");
    pty.type_in("everyone\r");
    pty.expect("Hello.");
    pty.leave(2);
    assert_eq!(
        user_texts(Api::OpenAi, &server.requests()[0].body),
        ["Greet everyone."]
    );
}
