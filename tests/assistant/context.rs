//! What the model is given and how the conversation fits its window, end to
//! end against the fake providers: the environment block and project
//! instructions in the system prompt (decisions 60, 61), prompt caching
//! (63: stable prefixes, Anthropic breakpoints, `prompt_cache_key`, cached
//! tokens priced), compaction (62: pruning first, then a summary; on a
//! provider's overflow error; after `--resume`) and the interrupted-reply
//! note (64).

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use super::{against, no_problems, system_text, user_texts, APIS};
use crate::common::link;
use crate::common::model_server::{calls, text, Api, ModelServer, Reply};

/// The names project instructions go by (docs/instructions.md): the common
/// one, a directory's override, and the fallback.
const AGENTS: &str = "AGENTS.md";
const OVERRIDE: &str = "AGENTS.override.md";
const FALLBACK: &str = "CLAUDE.md";

/// Writes the person's config file under `home`.
fn config(home: &Path, text: &str) {
    let dir = home.join("config/ikigai");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

/// `git` in `dir`, with no global config.
fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}

fn has_git() -> bool {
    Command::new("git").arg("--version").output().is_ok()
}

/// The request body without its cache breakpoints: what a cache compares.
fn without_breakpoints(body: &Value) -> Value {
    match body {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), without_breakpoints(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_breakpoints).collect()),
        other => other.clone(),
    }
}

/// The conversation part of a request body, in the API's own list.
fn history(api: Api, body: &Value) -> Vec<Value> {
    let key = match api {
        Api::OpenAi | Api::Anthropic => "messages",
        Api::Responses => "input",
        Api::Google => "contents",
    };
    without_breakpoints(&body[key]).as_array().unwrap().clone()
}

#[test]
fn the_environment_block_names_where_the_model_is() {
    if !has_git() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("proj");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    git(&repo, &["init", "-q", "-b", "trunk"]);
    std::fs::write(repo.join("README"), "x").unwrap();
    std::fs::write(repo.join("changed"), "x").unwrap();
    git(&repo, &["add", "README"]);
    git(&repo, &["commit", "-qm", "init"]);
    let server = ModelServer::start(Api::Anthropic, vec![text("ok")]);
    let out = against(&server, home.path())
        .dir(repo.join("src"))
        .env("SHELL", "/bin/testsh")
        .args(["-p", "hi"])
        .output();
    no_problems(&server, &out);
    let system = system_text(Api::Anthropic, &server.requests()[0].body);
    let today = String::from_utf8(
        Command::new("date")
            .arg("+%Y-%m-%d")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let src = repo.join("src");
    for line in [
        format!("- Working directory: {}", src.display()),
        "- OS: Linux ".to_string(),
        "- Shell: /bin/testsh".to_string(),
        format!("- Today: {}", today.trim()),
        format!(
            "- Git: repository at {}, branch trunk, 1 file differs from HEAD at start",
            repo.display()
        ),
        format!(
            "- Sandbox: workspace-write: tools write only under {}",
            src.display()
        ),
        "network off (web tools excepted)".to_string(),
        "- Approval: auto: every call runs without asking".to_string(),
        "- Model: anthropic claude-sonnet-4-5".to_string(),
    ] {
        assert!(system.contains(&line), "{line}\n---\n{system}");
    }
    // Guidance first, then the block; no clock time anywhere in it.
    assert!(system.find("You are ikigai").unwrap() < system.find("# Environment").unwrap());
    let block = &system[system.find("# Environment").unwrap()..];
    let clock = block.as_bytes().windows(5).any(|w| {
        w[0].is_ascii_digit()
            && w[1].is_ascii_digit()
            && w[2] == b':'
            && w[3].is_ascii_digit()
            && w[4].is_ascii_digit()
    });
    assert!(!clock, "a clock time in the block: {block}");
}

#[test]
fn agents_files_join_outermost_first_and_a_cut_is_said() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("repo");
    let sub = repo.join("crates/core");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir(repo.join(".git")).unwrap();
    std::fs::create_dir_all(home.path().join("config/ikigai")).unwrap();
    std::fs::write(
        home.path().join("config/ikigai").join(AGENTS),
        "PERSONAL rules.",
    )
    .unwrap();
    std::fs::write(repo.join(AGENTS), format!("ROOT {}", "r".repeat(3000))).unwrap();
    std::fs::write(repo.join("crates").join(FALLBACK), "CLAUDE fallback.").unwrap();
    std::fs::write(sub.join(AGENTS), "NEAR plain (overridden).").unwrap();
    std::fs::write(sub.join(OVERRIDE), "NEAR override.").unwrap();
    let server = ModelServer::start(Api::OpenAi, vec![text("ok"), text("ok")]);
    let out = against(&server, home.path())
        .dir(&sub)
        .stdin("hi\n/context\n")
        .output();
    no_problems(&server, &out);
    let system = system_text(Api::OpenAi, &server.requests()[0].body);
    let at = |s: &str| system.find(s).unwrap_or_else(|| panic!("{s}: {system}"));
    assert!(at("# Project instructions") > at("# Environment"));
    assert!(
        at("PERSONAL") < at("ROOT")
            && at("ROOT") < at("CLAUDE fallback")
            && at("CLAUDE fallback") < at("NEAR override")
    );
    assert!(!system.contains("NEAR plain"));
    assert!(system.contains(&format!("## {}", repo.join(AGENTS).display())));
    assert!(!system.contains("[... cut: "), "{system}");
    // The start line lists what was read; /context shows it with sizes.
    assert!(out.stderr.contains("Instructions: "), "{out:?}");
    assert!(
        out.stderr.contains(&format!("{OVERRIDE} (14 B)")),
        "{out:?}"
    );
    assert!(out.stdout.contains("System prompt:"), "{out:?}");
    assert!(out.stdout.contains("built-in guidance"), "{out:?}");
    assert!(
        out.stdout
            .contains(&format!("{} (", sub.join(OVERRIDE).display())),
        "{out:?}"
    );
    assert!(out.stdout.contains("Context window: "), "{out:?}");

    // Over the budget, the outermost files are cut first (the person's own
    // file is outermost), the nearest kept whole, and each cut is said.
    config(home.path(), "instructions_max_bytes = 1000\n");
    let server = ModelServer::start(Api::OpenAi, vec![text("ok")]);
    let out = against(&server, home.path())
        .dir(&sub)
        .args(["-p", "hi"])
        .output();
    no_problems(&server, &out);
    let system = system_text(Api::OpenAi, &server.requests()[0].body);
    assert!(!system.contains("PERSONAL"), "{system}");
    assert!(system.contains("[... cut: 2035 more bytes]"), "{system}");
    assert!(system.contains("CLAUDE fallback") && system.contains("NEAR override"));
    for (file, by) in [
        (home.path().join("config/ikigai").join(AGENTS), 15),
        (repo.join(AGENTS), 2035),
    ] {
        let said = format!("warning: {} was cut by {by} of its ", file.display());
        assert!(out.stderr.contains(&said), "{said}\n{out:?}");
    }
    assert!(out.stderr.contains("instructions_max_bytes"), "{out:?}");
}

#[test]
fn unusable_agents_files_are_warnings_and_the_assistant_starts() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("r");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let cases = root.join("a/b/c/d");
    std::fs::create_dir_all(&cases).unwrap();
    // A directory by the common name (the fallback stands in), a file that is not
    // UTF-8, a loop of links, and 10 MB.
    std::fs::create_dir(root.join(AGENTS)).unwrap();
    std::fs::write(root.join("a").join(AGENTS), b"caf\xe9 au lait").unwrap();
    std::os::unix::fs::symlink(AGENTS, root.join("a/b").join(AGENTS)).unwrap();
    std::fs::write(root.join("a/b/c").join(AGENTS), "x".repeat(10 << 20)).unwrap();
    let server = ModelServer::start(Api::Anthropic, vec![text("fine")]);
    let out = against(&server, home.path())
        .dir(&cases)
        .args(["-p", "hi"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    for (file, why) in [
        (root.join(AGENTS), "it is a directory"),
        (root.join("a").join(AGENTS), "not UTF-8"),
        (root.join("a/b").join(AGENTS), "left out of the prompt"),
        (root.join("a/b/c").join(AGENTS), "was cut by"),
    ] {
        let shown = file.display().to_string();
        assert!(
            out.stderr
                .lines()
                .any(|l| l.contains(&shown) && l.contains(why)),
            "{shown}: {why}\n{out:?}"
        );
    }
    let system = system_text(Api::Anthropic, &server.requests()[0].body);
    assert!(
        system.len() < 40_000,
        "the 10 MB file was cut: {}",
        system.len()
    );
}

#[test]
fn init_asks_the_model_to_write_agents_md() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Api::OpenAi, vec![text("Written.")]);
    let out = against(&server, home.path()).stdin("/init\n").output();
    no_problems(&server, &out);
    let texts = user_texts(Api::OpenAi, &server.requests()[0].body);
    assert!(
        texts[0].starts_with(&format!("Write an {AGENTS} file for this repository")),
        "{texts:?}"
    );
}

/// A conversation of two tool rounds and two messages, per API: each
/// request repeats the one before it byte for byte (breakpoints aside), so
/// a provider can serve that prefix from its cache.
#[test]
fn each_request_starts_with_the_one_before_it() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("libexec")).unwrap();
        std::os::unix::fs::symlink(link("bash"), home.path().join("libexec/bash")).unwrap();
        let server = ModelServer::start(
            api,
            vec![
                calls(&[("bash", json!({"command": "echo one"}))]),
                calls(&[("bash", json!({"command": "echo two"}))]),
                text("first done"),
                text("second done"),
            ],
        );
        let out = against(&server, home.path())
            .stdin("first\nsecond\n")
            .output();
        no_problems(&server, &out);
        let requests = server.requests();
        assert_eq!(requests.len(), 4, "{api:?}: {out:?}");
        for pair in requests.windows(2) {
            let (a, b) = (&pair[0].body, &pair[1].body);
            assert_eq!(system_text(api, a), system_text(api, b), "{api:?}");
            assert_eq!(
                without_breakpoints(&a["tools"]),
                without_breakpoints(&b["tools"]),
                "{api:?}"
            );
            let (ha, hb) = (history(api, a), history(api, b));
            assert!(hb.len() > ha.len(), "{api:?}");
            assert_eq!(ha[..], hb[..ha.len()], "{api:?}: the prefix changed");
        }
        let session = std::fs::read_dir(home.path().join("data/ikigai/sessions"))
            .unwrap()
            .flatten()
            .find(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
            .unwrap()
            .path();
        let id = session.file_stem().unwrap().to_str().unwrap().to_string();
        for r in &requests {
            let b = &r.body;
            match api {
                Api::OpenAi | Api::Responses => assert_eq!(b["prompt_cache_key"], id.as_str()),
                Api::Anthropic => {
                    let ephemeral = json!({"type": "ephemeral"});
                    assert_eq!(b["system"][0]["cache_control"], ephemeral);
                    let messages = b["messages"].as_array().unwrap();
                    let marked: Vec<bool> = messages
                        .iter()
                        .map(|m| {
                            m["content"].as_array().unwrap().last().unwrap()["cache_control"]
                                == ephemeral
                        })
                        .collect();
                    let n = marked.len();
                    for (i, m) in marked.iter().enumerate() {
                        assert_eq!(*m, i + 2 >= n, "breakpoint on turn {i} of {n}");
                    }
                    assert!(b.to_string().matches("cache_control").count() <= 4);
                }
                Api::Google => assert!(b.get("prompt_cache_key").is_none()),
            }
        }
    }
}

#[test]
fn cached_tokens_are_counted_and_priced_per_provider() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        let server = ModelServer::start_counting(api, vec![text("one"), text("two")]);
        server.report_cached(100);
        let model = match api {
            Api::OpenAi | Api::Responses => "gpt-4.1",
            Api::Anthropic => "claude-sonnet-4-5",
            Api::Google => "gemini-2.5-flash",
        };
        let out = against(&server, home.path())
            .args(["--model", model])
            .stdin("hi\nagain\n/cost\n")
            .output();
        no_problems(&server, &out);
        assert!(
            out.stdout.contains(" in (200 cached), 14 out."),
            "{api:?}: {out:?}"
        );
        assert!(
            out.stdout
                .contains("% of input read from the cache; it saved $"),
            "{api:?}: {out:?}"
        );
        assert!(out.stdout.contains("cached), $"), "{api:?}: {out:?}");
    }
}

/// The bash tool and a config of a small window.
fn small_window(home: &Path, tokens: u64) {
    std::fs::create_dir_all(home.join("libexec")).unwrap();
    std::os::unix::fs::symlink(link("bash"), home.join("libexec/bash")).unwrap();
    config(home, &format!("context_window = {tokens}\n"));
}

fn session_file(home: &Path) -> String {
    let dir = home.join("data/ikigai/sessions");
    let path = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .unwrap()
        .path();
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn at_the_threshold_old_tool_outputs_are_pruned_first() {
    let home = tempfile::tempdir().unwrap();
    small_window(home.path(), 24_000);
    // Each output is about 19 KB, some 4,800 tokens.
    let seq = |n: u32| {
        calls(&[(
            "bash",
            json!({"command": format!("seq {} {}", n, n + 3999)}),
        )])
    };
    let server = ModelServer::start_counting(
        Api::Anthropic,
        vec![seq(1), seq(10_000), seq(20_000), seq(30_000), text("done")],
    );
    let out = against(&server, home.path()).args(["-p", "count"]).output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("Context compacted (old tool outputs pruned): about "),
        "{out:?}"
    );
    let requests = server.requests();
    let last = requests.last().unwrap().body.to_string();
    assert!(last.contains("[pruned] This bash result ("), "{last}");
    // The newest output is whole; the oldest became a stub naming its file.
    assert!(
        last.contains("30000\\\\n30001"),
        "the newest output stays whole"
    );
    assert!(
        !last.contains("\\\\n2\\\\n3\\\\n"),
        "the oldest output is pruned"
    );
    let saved = last
        .split("all of it is in ")
        .nth(1)
        .and_then(|rest| rest.split(" (read it").next())
        .unwrap()
        .to_string();
    assert!(std::fs::read_to_string(&saved)
        .unwrap()
        .contains("\\n2\\n3\\n"));
    // No request went over the threshold of 85% of the window, as counted.
    for r in &requests {
        assert!(r.body.to_string().len() / 4 < 24_000 * 85 / 100 + 500);
    }
    let log = session_file(home.path());
    assert!(log.contains("\"type\":\"pruned\""), "{log}");
    assert!(log.contains("Context compacted"), "{log}");
}

#[test]
fn when_pruning_is_not_enough_the_model_summarises_and_resume_goes_on_from_it() {
    let home = tempfile::tempdir().unwrap();
    config(home.path(), "context_window = 10000\n");
    let long = |word: &str| format!("{word} {}", "w".repeat(12_000));
    let server = ModelServer::start_counting(
        Api::OpenAi,
        vec![text("one"), text("two"), text("THE SUMMARY"), text("three")],
    );
    let input = format!("{}\n{}\n{}\n", long("first"), long("second"), long("third"));
    let out = against(&server, home.path()).stdin(input).output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("Context compacted (summarised): about "),
        "{out:?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{out:?}");
    // The third request asked for the summary, with no tools.
    let ask = &requests[2].body;
    assert!(ask.get("tools").is_none());
    let asked = user_texts(Api::OpenAi, ask);
    assert!(
        asked
            .last()
            .unwrap()
            .starts_with("Summarise our conversation"),
        "{asked:?}"
    );
    // Then the summary and the latest message, verbatim, are the history.
    let after = user_texts(Api::OpenAi, &requests[3].body);
    assert_eq!(after.len(), 1, "{after:?}");
    assert!(after[0].contains("THE SUMMARY"));
    assert!(after[0].ends_with(&long("third")));
    // Resumed, the conversation goes on from the compacted state.
    let resumed = ModelServer::start(Api::OpenAi, vec![text("four")]);
    let out = against(&resumed, home.path())
        .args(["--resume", "-p", "fourth"])
        .output();
    no_problems(&resumed, &out);
    let texts = user_texts(Api::OpenAi, &resumed.requests()[0].body);
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].contains("THE SUMMARY"));
    assert_eq!(texts[1], "fourth");
}

#[test]
fn an_overflow_error_compacts_once_and_retries_once_per_provider() {
    for (api, error) in [
        (
            Api::OpenAi,
            json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}),
        ),
        (
            Api::Anthropic,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
        ),
        (
            Api::Google,
            json!({"error": {"code": 400, "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}),
        ),
    ] {
        // The conversation before the request that does not fit: one long
        // exchange, which the summary makes smaller.
        let home = tempfile::tempdir().unwrap();
        let server = ModelServer::start(
            api,
            vec![
                text("one"),
                Reply::Status(400, error.to_string()),
                text("SUMMARY OF IT"),
                text("answered"),
            ],
        );
        let out = against(&server, home.path())
            .stdin(format!("first {}\nbig question\n", "w".repeat(4000)))
            .output();
        no_problems(&server, &out);
        assert_eq!(out.code, 0, "{api:?}: {out:?}");
        assert!(out.stderr.contains("did not fit"), "{api:?}: {out:?}");
        assert!(
            out.stderr.contains("Context compacted (summarised)"),
            "{api:?}: {out:?}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 4, "{api:?}");
        let last = user_texts(api, &requests[3].body);
        assert!(
            last[0].contains("SUMMARY OF IT") && last[0].ends_with("big question"),
            "{api:?}: {last:?}"
        );

        // A second overflow is shown, not retried again; a summary that
        // fails is said, and the session file keeps everything.
        let home = tempfile::tempdir().unwrap();
        let server = ModelServer::start(
            api,
            vec![
                Reply::Status(400, error.to_string()),
                Reply::Status(
                    400,
                    json!({"error": {"message": "bad summary"}}).to_string(),
                ),
                Reply::Status(400, error.to_string()),
            ],
        );
        let out = against(&server, home.path())
            .args(["-p", "big question"])
            .output();
        assert_eq!(out.code, 1, "{api:?}: {out:?}");
        assert!(
            out.stderr.contains("the summary request failed"),
            "{api:?}: {out:?}"
        );
        assert_eq!(server.requests().len(), 3, "{api:?}");
        assert!(session_file(home.path()).contains("big question"));
    }
}

#[test]
fn an_interrupted_reply_stays_and_the_model_is_told() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(
        Api::OpenAi,
        vec![Reply::Hang("Half of my ".into()), text("Second answer.")],
    );
    let out = against(&server, home.path())
        .stdin("first\nsecond\n")
        .output_interrupting(|| {
            // Once the request is in, the half reply has a moment to arrive.
            let asked = !server.requests().is_empty();
            if asked {
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            asked
        });
    no_problems(&server, &out);
    let body = &server.requests()[1].body;
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "assistant");
    assert!(
        messages[2]["content"].as_str().unwrap().starts_with("Half"),
        "{body}"
    );
    let texts = user_texts(Api::OpenAi, body);
    assert!(
        texts[1].starts_with("[I interrupted your previous reply while you were writing it"),
        "{texts:?}"
    );
    assert!(texts[1].ends_with("\n\nsecond"));
}
