//! The assistant (`ikigai` without a subcommand) end to end: the real
//! binary talks to a provider played by `common::model_server` on
//! 127.0.0.1, with HOME and the XDG directories in a temporary directory.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::model_server::{calls, text, Api, ModelServer, Reply};
use crate::common::{run, Output, Run};

mod agent;
mod context;
mod custom;
mod headless;
mod hooks;
mod hostfiles;
mod policy;
mod robustness;
mod subagents;
mod terminal;
mod tools;

const APIS: [Api; 4] = [Api::OpenAi, Api::Responses, Api::Anthropic, Api::Google];

/// `ikigai` in a clean world: HOME, XDG dirs and tool dirs under `home`,
/// no inherited keys, providers, policy or proxies.
pub(crate) fn ikigai(home: &Path) -> Run {
    let mut r = run("ikigai");
    for var in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "IKIGAI_MAX_OUTPUT_TOKENS",
        "IKIGAI_RETRY_BASE_MS",
        "IKIGAI_GOOGLE_AI_URL",
        "IKIGAI_PROVIDER",
        "IKIGAI_MODEL",
        "IKIGAI_CONTEXT_DIR",
        "IKIGAI_APPROVAL",
        "IKIGAI_CONFIG",
        "IKIGAI_SANDBOX",
        "OLLAMA_HOST",
        "NO_COLOR",
        "http_proxy",
        "https_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "all_proxy",
    ] {
        r = r.env_remove(var);
    }
    let tools = home.join("tools");
    let libexec = home.join("libexec");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::create_dir_all(&libexec).unwrap();
    // Retries wait a millisecond, not half a second, unless a test says.
    // Ollama's address is one where nothing listens (port 1), so the search
    // for a local server without a key finds none unless a test serves one.
    r.env("HOME", home)
        .env("IKIGAI_RETRY_BASE_MS", "1")
        .env("OLLAMA_HOST", "127.0.0.1:1")
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("IKIGAI_TOOLS_DIR", tools)
        .env("IKIGAI_LIBEXEC_DIR", libexec)
        .dir(home)
}

/// `ikigai` pointed at `server`.
fn against(server: &ModelServer, home: &Path) -> Run {
    let mut r = ikigai(home).args(["--provider", server.api.name()]);
    for (k, v) in server.env() {
        r = r.env(k, v);
    }
    r
}

fn no_problems(server: &ModelServer, out: &Output) {
    assert!(
        server.problems().is_empty(),
        "{:?}: {:?}\n{out:?}",
        server.api,
        server.problems()
    );
}

/// The system prompt of a request body, in any of the four formats.
pub(crate) fn system_text(api: Api, body: &Value) -> String {
    let text = match api {
        Api::OpenAi => &body["messages"][0]["content"],
        Api::Responses => &body["instructions"],
        Api::Anthropic => match &body["system"] {
            Value::Array(blocks) => &blocks[0]["text"],
            other => other,
        },
        Api::Google => &body["systemInstruction"]["parts"][0]["text"],
    };
    text.as_str().unwrap_or_default().to_string()
}

/// The user texts the provider received in request `r`, in order.
fn user_texts(api: Api, body: &Value) -> Vec<String> {
    let (list, role) = match api {
        Api::Google => (&body["contents"], "user"),
        Api::Responses => (&body["input"], "user"),
        _ => (&body["messages"], "user"),
    };
    let mut out = Vec::new();
    for m in list.as_array().unwrap() {
        if m["role"] != role {
            continue;
        }
        match &m["content"] {
            Value::String(s) => out.push(s.clone()),
            Value::Array(blocks) => out.extend(
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str().map(str::to_string)),
            ),
            _ => out.extend(
                m["parts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p["text"].as_str().map(str::to_string)),
            ),
        }
    }
    out
}

#[test]
fn a_text_conversation_per_provider_streams_and_keeps_history() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        let server = ModelServer::start(
            api,
            vec![text("Hello there, friend."), text("Second answer.")],
        );
        let out = against(&server, home.path())
            .stdin("hi\n\nhow are you?\n")
            .output();
        no_problems(&server, &out);
        assert_eq!(out.code, 0, "{api:?} {out:?}");
        assert_eq!(
            out.stdout, "Hello there, friend.\nSecond answer.\n",
            "{api:?}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(
            user_texts(api, &requests[1].body),
            ["hi", "how are you?"],
            "{api:?}"
        );
    }
}

#[test]
fn a_provider_error_is_shown_and_the_conversation_goes_on() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        let server = ModelServer::start(
            api,
            vec![
                text("First."),
                Reply::Status(
                    400,
                    r#"{"error": {"message": "The request is not valid"}}"#.into(),
                ),
                text("Back again."),
            ],
        );
        let out = against(&server, home.path())
            .stdin("one\ntwo\nthree\n")
            .output();
        no_problems(&server, &out);
        assert_eq!(
            out.code, 1,
            "a failed message makes the exit code 1: {out:?}"
        );
        assert!(
            out.stderr.contains("HTTP 400: The request is not valid"),
            "{api:?} {}",
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
        assert_eq!(out.stdout, "First.\nBack again.\n");
        let last = &server.requests()[2].body;
        assert_eq!(user_texts(api, last), ["one", "two", "three"], "{api:?}");
    }
}

#[test]
fn an_empty_reply_is_said_and_kept_out_of_the_history() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        let server = ModelServer::start(api, vec![text(""), text("Fine.")]);
        let out = against(&server, home.path()).stdin("one\ntwo\n").output();
        assert_eq!(out.code, 1, "{api:?} {out:?}");
        assert!(
            out.stderr.contains("the model returned an empty reply"),
            "{api:?} {}",
            out.stderr
        );
        assert_eq!(out.stdout, "Fine.\n", "{api:?}");
        let last = &server.requests()[1].body;
        assert_eq!(user_texts(api, last), ["one", "two"], "{api:?}");
        let body = last.to_string();
        assert!(
            !body.contains(r#""content":null"#) && !body.contains(r#""content":"""#),
            "{api:?}: an empty reply reached the history: {body}"
        );
    }
}

#[test]
fn malformed_replies_and_unreachable_servers_are_errors_not_crashes() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Api::OpenAi, vec![Reply::Raw("data: {not json\n\n".into())]);
    let out = against(&server, home.path()).args(["-p", "hi"]).output();
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("not JSON"), "{}", out.stderr);

    // A stream with no line end is refused at the line cap, not hoarded.
    let server = ModelServer::start(Api::OpenAi, vec![Reply::Raw("x".repeat(5 << 20))]);
    let out = against(&server, home.path()).args(["-p", "hi"]).output();
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("unreadable reply: a line of the event stream is longer"),
        "{}",
        out.stderr
    );

    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = dead.local_addr().unwrap().port();
    drop(dead);
    let out = ikigai(home.path())
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .args(["-p", "hi"])
        .output();
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("network error"), "{}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

#[test]
fn startup_with_no_key_explains_how_to_set_one() {
    let home = tempfile::tempdir().unwrap();
    let out = ikigai(home.path())
        .stdin("hello\n/quit\nnot reached\n")
        .output();
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("No model is configured"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("OPENAI_API_KEY"), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "{}",
            home.path().join("config/ikigai/credentials.json").display()
        )),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"));
    assert_eq!(out.stdout, "");
}

#[test]
fn keys_from_the_credentials_file_choose_the_provider() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Api::Anthropic, vec![text("From the file.")]);
    std::fs::create_dir_all(home.path().join("config/ikigai")).unwrap();
    std::fs::write(
        home.path().join("config/ikigai/credentials.json"),
        json!({"anthropic": {"api_key": crate::common::model_server::KEY}}).to_string(),
    )
    .unwrap();
    let out = ikigai(home.path())
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .args(["--model", "claude-test", "-p", "hi"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.stdout, "From the file.\n", "{out:?}");
    assert_eq!(server.requests()[0].body["model"], "claude-test");
}

#[test]
fn resume_continues_the_latest_session_or_a_given_one() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(
        Api::OpenAi,
        vec![text("A1"), text("B1"), text("A2"), text("B2")],
    );
    let first = against(&server, home.path())
        .args(["-p", "remember 7"])
        .output();
    assert_eq!(first.code, 0, "{first:?}");
    let sessions = home.path().join("data/ikigai/sessions");
    let first_id = only_new_session(&sessions, &[]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let second = against(&server, home.path())
        .args(["-p", "other topic"])
        .output();
    assert_eq!(second.code, 0, "{second:?}");
    let second_id = only_new_session(&sessions, &[&first_id]);

    let out = against(&server, home.path())
        .args(["--resume", "-p", "what number?"])
        .output();
    assert_eq!(out.stdout, "A2\n", "{out:?}");
    assert!(
        out.stderr.contains(&format!("Resumed session {second_id}")),
        "{}",
        out.stderr
    );
    let out = against(&server, home.path())
        .args(["--resume", &first_id, "-p", "what number?"])
        .output();
    assert_eq!(out.stdout, "B2\n", "{out:?}");
    no_problems(&server, &out);
    let r = server.requests();
    assert_eq!(
        user_texts(Api::OpenAi, &r[2].body),
        ["other topic", "what number?"]
    );
    assert_eq!(
        user_texts(Api::OpenAi, &r[3].body),
        ["remember 7", "what number?"]
    );
    assert_eq!(
        r[3].body["messages"][2],
        json!({"role": "assistant", "content": "A1"})
    );

    // The log holds every entry, one JSON object a line.
    let log = std::fs::read_to_string(sessions.join(format!("{first_id}.jsonl"))).unwrap();
    let types: Vec<String> = log
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        types,
        ["start", "user", "assistant", "start", "user", "assistant"]
    );

    let out = against(&server, home.path())
        .args(["--resume", "nope", "-p", "x"])
        .output();
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("no session 'nope'"), "{}", out.stderr);
}

/// The one session id in `dir` not in `known`.
fn only_new_session(dir: &Path, known: &[&str]) -> String {
    let ids: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            e.unwrap()
                .path()
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|id| !known.contains(&id.as_str()))
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

#[test]
fn context_modules_join_the_system_prompt() {
    let home = tempfile::tempdir().unwrap();
    let context = home.path().join(".ikigai/context");
    std::fs::create_dir_all(&context).unwrap();
    std::fs::write(context.join("02-later.md"), "Later module.").unwrap();
    std::fs::write(context.join("01-first.md"), "First module.").unwrap();
    let server = ModelServer::start(Api::Anthropic, vec![text("ok")]);
    let out = against(&server, home.path()).args(["-p", "hi"]).output();
    no_problems(&server, &out);
    let system = system_text(Api::Anthropic, &server.requests()[0].body);
    assert!(
        system.ends_with("\n\n---\n\nFirst module.\n\n---\n\nLater module."),
        "{system}"
    );
}

#[test]
fn the_stub_provider_answers_offline() {
    let home = tempfile::tempdir().unwrap();
    let out = ikigai(home.path())
        .args(["--provider", "stub", "-p", "hello"])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.starts_with("[stub] You said: hello\n"),
        "{}",
        out.stdout
    );
    let out = ikigai(home.path())
        .args(["--provider", "nope", "-p", "x"])
        .output();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("unknown provider 'nope'"),
        "{}",
        out.stderr
    );
}

/// The envelopes the provider received in request `body`, in order.
fn envelopes(api: Api, body: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    match api {
        Api::OpenAi => {
            for m in body["messages"].as_array().unwrap() {
                if m["role"] == "tool" {
                    let envelope = serde_json::from_str(m["content"].as_str().unwrap()).unwrap();
                    out.push((m["tool_call_id"].as_str().unwrap().to_string(), envelope));
                }
            }
        }
        Api::Responses => {
            for item in body["input"].as_array().unwrap() {
                if item["type"] == "function_call_output" {
                    let envelope = serde_json::from_str(item["output"].as_str().unwrap()).unwrap();
                    out.push((item["call_id"].as_str().unwrap().to_string(), envelope));
                }
            }
        }
        Api::Anthropic => {
            for m in body["messages"].as_array().unwrap() {
                for b in m["content"].as_array().unwrap() {
                    if b["type"] == "tool_result" {
                        let envelope: Value =
                            serde_json::from_str(b["content"].as_str().unwrap()).unwrap();
                        assert_eq!(b["is_error"], envelope["tool_success"] == false);
                        out.push((b["tool_use_id"].as_str().unwrap().to_string(), envelope));
                    }
                }
            }
        }
        Api::Google => {
            for c in body["contents"].as_array().unwrap() {
                for p in c["parts"].as_array().unwrap() {
                    let r = &p["functionResponse"];
                    if r.is_object() {
                        out.push((
                            r["name"].as_str().unwrap().to_string(),
                            r["response"].clone(),
                        ));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn calls_to_unknown_tools_get_tool_not_found_envelopes() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        let server = ModelServer::start(
            api,
            vec![
                calls(&[
                    ("no_such_tool", json!({"x": 1})),
                    ("another_missing", json!({})),
                ]),
                text("Neither exists."),
            ],
        );
        let out = against(&server, home.path()).args(["-p", "try"]).output();
        no_problems(&server, &out);
        assert_eq!(out.code, 0, "{out:?}");
        assert_eq!(out.stdout, "Neither exists.\n");
        assert!(
            out.stderr.contains("→ no_such_tool(x: 1)"),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr.contains("✗ no_such_tool: TOOL_NOT_FOUND"),
            "{}",
            out.stderr
        );
        let got = envelopes(api, &server.requests()[1].body);
        assert_eq!(got.len(), 2, "{api:?}");
        for (_, envelope) in &got {
            assert_eq!(envelope["tool_success"], false);
            assert_eq!(envelope["error_code"], "TOOL_NOT_FOUND");
        }
        if api == Api::Google {
            assert_eq!(got[0].0, "no_such_tool");
            assert_eq!(got[1].0, "another_missing");
        }
    }
}

#[test]
fn ctrl_c_stops_a_hanging_request_and_the_next_message_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(
        Api::OpenAi,
        vec![Reply::Hang("Thinking ".into()), text("Second answer.")],
    );
    let out = against(&server, home.path())
        .stdin("first\nsecond\n")
        .output_interrupting(|| !server.requests().is_empty());
    no_problems(&server, &out);
    assert!(
        out.stderr
            .contains("Cancelled by you: the request was stopped."),
        "{out:?}"
    );
    assert!(out.stdout.ends_with("Second answer.\n"), "{out:?}");
    assert_eq!(out.code, 1, "an interrupted message counts as not answered");
    assert_eq!(
        user_texts(Api::OpenAi, &server.requests()[1].body),
        [
            "first",
            "[I interrupted your previous reply while you were writing it: it ends where I stopped it.]\n\nsecond"
        ]
    );
}

#[test]
fn a_blank_prompt_is_a_usage_error_and_nothing_is_sent() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Api::OpenAi, vec![text("never")]);
    for blank in ["", "   ", "\n\t"] {
        let out = against(&server, home.path()).args(["-p", blank]).output();
        assert_eq!(out.code, 2, "{blank:?}: {out:?}");
        assert!(out.stderr.contains("-p needs a message"), "{out:?}");
    }
    assert!(server.requests().is_empty());
}

#[test]
fn a_keyless_local_openai_server_is_chosen_by_its_base_url() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start_keyless(vec![text("Local.")]);
    let out = ikigai(home.path())
        .env("OPENAI_BASE_URL", server.base_url())
        .args(["-p", "hi"])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    no_problems(&server, &out);
    assert_eq!(out.stdout, "Local.\n");
}
