//! Providers as they really behave: retried statuses and dropped
//! connections, waits the provider asks for, replies cut at the output
//! limit, refusals, arguments that are not JSON, the reply limit in each
//! provider's field, optional nulls under strict mode, and servers that
//! answer with one JSON reply instead of a stream.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::{against, envelopes, ikigai, no_problems, APIS};
use crate::common::link;
use crate::common::model_server::{calls, text, Api, ModelServer, Reply};

const RETRYABLE: [u16; 8] = [408, 409, 429, 500, 502, 503, 504, 529];

fn error_body(message: &str) -> String {
    json!({"error": {"message": message}}).to_string()
}

#[test]
fn every_retryable_status_and_a_dropped_connection_is_answered_after_a_retry() {
    let mut failures: Vec<(String, Reply)> = RETRYABLE
        .iter()
        .map(|s| (s.to_string(), Reply::Status(*s, error_body("try again"))))
        .collect();
    failures.push(("dropped".into(), Reply::Drop));
    // The provider may say a status it would not retry is worth another try.
    failures.push((
        "400 with x-should-retry: true".into(),
        Reply::StatusWith(
            400,
            vec![("x-should-retry", "true".into())],
            error_body("x"),
        ),
    ));
    for (what, failure) in failures {
        let home = tempfile::tempdir().unwrap();
        let server = ModelServer::start(Api::OpenAi, vec![failure, text("Answered.")]);
        let out = against(&server, home.path()).args(["-p", "hi"]).output();
        no_problems(&server, &out);
        assert_eq!(out.code, 0, "{what}: {out:?}");
        assert_eq!(out.stdout, "Answered.\n", "{what}");
        assert_eq!(server.requests().len(), 2, "{what}");
        assert!(out.stderr.contains("retrying in"), "{what}: {}", out.stderr);
        assert!(out.stderr.contains("(1/4)"), "{what}: {}", out.stderr);
    }
}

#[test]
fn a_stream_that_breaks_off_is_retried_only_while_nothing_was_shown() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        let server = ModelServer::start(
            api,
            vec![
                Reply::BreakOff(String::new()),
                text("Whole."),
                Reply::BreakOff("Half of it".into()),
                text("never"),
            ],
        );
        let out = against(&server, home.path()).stdin("one\ntwo\n").output();
        assert!(
            server.problems().is_empty(),
            "{api:?}: {:?}",
            server.problems()
        );
        assert_eq!(out.code, 1, "{api:?} {out:?}");
        assert!(
            out.stderr.contains("the reply broke off, retrying in"),
            "{api:?}: {}",
            out.stderr
        );
        // The second break came after text was shown: not retried.
        assert_eq!(out.stdout, "Whole.\nHalf \n", "{api:?}");
        assert!(
            out.stderr.contains("error: ") && out.stderr.contains("the reply broke off"),
            "{api:?}: {}",
            out.stderr
        );
        assert_eq!(server.requests().len(), 3, "{api:?}");
    }
}

#[test]
fn the_wait_the_provider_asks_for_is_honoured_and_shown() {
    for (header, value, shown, least) in [
        (
            "retry-after-ms",
            "300",
            "rate limited, retrying in 0.3 s (1/4)",
            300,
        ),
        (
            "retry-after",
            "1",
            "rate limited, retrying in 1 s (1/4)",
            1000,
        ),
    ] {
        let home = tempfile::tempdir().unwrap();
        let server = ModelServer::start(
            Api::Anthropic,
            vec![
                Reply::StatusWith(429, vec![(header, value.into())], error_body("slow down")),
                text("Later."),
            ],
        );
        let out = against(&server, home.path()).args(["-p", "hi"]).output();
        no_problems(&server, &out);
        assert_eq!(out.code, 0, "{out:?}");
        assert!(out.stderr.contains(shown), "{}", out.stderr);
        let r = server.requests();
        let waited = r[1].at.duration_since(r[0].at);
        assert!(
            waited >= Duration::from_millis(least),
            "{header}: {value} waited only {waited:?}"
        );
    }
}

#[test]
fn refused_retries_and_client_errors_are_not_retried() {
    for (what, failure, shown) in [
        (
            "503 with x-should-retry: false",
            Reply::StatusWith(
                503,
                vec![("x-should-retry", "false".into())],
                error_body("down for maintenance"),
            ),
            "HTTP 503: down for maintenance",
        ),
        (
            "400",
            Reply::Status(400, error_body("max_tokens is too large")),
            "HTTP 400: max_tokens is too large",
        ),
        (
            "401",
            Reply::Status(401, error_body("invalid x-api-key")),
            "HTTP 401: invalid x-api-key",
        ),
    ] {
        let home = tempfile::tempdir().unwrap();
        let server = ModelServer::start(Api::Anthropic, vec![failure, text("never")]);
        let out = against(&server, home.path()).args(["-p", "hi"]).output();
        assert_eq!(out.code, 1, "{what}: {out:?}");
        assert_eq!(server.requests().len(), 1, "{what}");
        assert!(out.stderr.contains(shown), "{what}: {}", out.stderr);
        assert!(!out.stderr.contains("retrying"), "{what}: {}", out.stderr);
    }
}

#[test]
fn a_persistent_failure_gives_up_after_four_retries() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        let script = vec![Reply::Status(529, error_body("Overloaded")); 5];
        let server = ModelServer::start(api, script);
        let out = against(&server, home.path()).args(["-p", "hi"]).output();
        no_problems(&server, &out);
        assert_eq!(out.code, 1, "{api:?} {out:?}");
        assert_eq!(server.requests().len(), 5, "{api:?}: 1 + 4 requests");
        assert_eq!(
            out.stderr.matches("overloaded, retrying in ").count(),
            4,
            "{}",
            out.stderr
        );
        for n in 1..=4 {
            assert!(out.stderr.contains(&format!("({n}/4)")), "{}", out.stderr);
        }
        assert!(
            out.stderr
                .contains("HTTP 529: Overloaded (gave up after 4 retries)"),
            "{api:?}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"));
    }
}

#[test]
fn ctrl_c_during_a_retry_wait_cancels_it() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            Reply::StatusWith(429, vec![("retry-after", "30".into())], error_body("wait")),
            text("never"),
        ],
    );
    let out = against(&server, home.path())
        .args(["-p", "hi"])
        .output_interrupting(|| !server.requests().is_empty());
    assert_eq!(out.code, 130, "{out:?}");
    assert!(
        out.stderr
            .contains("Cancelled by you: the request was stopped."),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests().len(), 1, "the wait was not cancelled");
}

/// Our file_write as a system tool in `home`'s libexec.
fn with_file_write(home: &Path) {
    install(home, "libexec", "file_write", &link("file_write"));
}

/// The host tests' fixture as user tool `echo`: it answers with the input
/// it got.
fn with_echo(home: &Path) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/host/tool.sh");
    install(home, "tools", "echo", &fixture);
}

fn install(home: &Path, dir: &str, name: &str, target: &Path) {
    std::fs::create_dir_all(home.join(dir)).unwrap();
    std::os::unix::fs::symlink(target, home.join(dir).join(name)).unwrap();
}

#[test]
fn a_cut_tool_call_is_not_run_and_the_model_is_told_per_provider() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        with_file_write(home.path());
        let target = home.path().join("made.txt");
        let call = json!({"file_path": target, "content": "a long file ".repeat(20)});
        let server = ModelServer::start(
            api,
            vec![
                Reply::Cut("Writing it.".into(), vec![("file_write".into(), call)]),
                text("I will write it in parts."),
            ],
        );
        let out = against(&server, home.path())
            .args(["--max-output-tokens", "50", "-p", "write it"])
            .output();
        no_problems(&server, &out);
        assert_eq!(out.code, 0, "{api:?} {out:?}");
        assert!(!target.exists(), "{api:?}: the cut call ran");
        assert_eq!(
            out.stdout, "Writing it.\nI will write it in parts.\n",
            "{api:?}"
        );
        assert!(
            out.stderr.contains(
                "[cut: the reply reached the output limit of 50 tokens; --max-output-tokens raises it]"
            ),
            "{api:?}: {}",
            out.stderr
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{api:?}: told in the same turn");
        let got = envelopes(api, &requests[1].body);
        assert_eq!(got.len(), 1, "{api:?}");
        assert_eq!(got[0].1["error_code"], "INVALID_PARAMS", "{api:?}");
        let error = got[0].1["error"].as_str().unwrap();
        assert!(
            error.contains("not run") && error.contains("output limit of 50 tokens"),
            "{api:?}: {error}"
        );
    }
}

#[test]
fn a_cut_text_reply_is_shown_as_cut() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        let server = ModelServer::start(api, vec![Reply::Cut("The story goes".into(), vec![])]);
        let out = against(&server, home.path()).args(["-p", "tell"]).output();
        no_problems(&server, &out);
        assert_eq!(out.code, 0, "{api:?} {out:?}");
        assert_eq!(out.stdout, "The story goes\n", "{api:?}");
        assert!(out.stderr.contains("[cut: "), "{api:?}: {}", out.stderr);
    }
}

#[test]
fn refusals_and_safety_stops_are_named_not_empty() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        let server = ModelServer::start(
            api,
            vec![
                Reply::Refusal("I can't help with that.".into()),
                text("Sure."),
            ],
        );
        let out = against(&server, home.path())
            .stdin("something bad\nsomething good\n")
            .output();
        no_problems(&server, &out);
        assert_eq!(out.code, 1, "{api:?} {out:?}");
        assert!(
            !out.stderr.contains("empty reply"),
            "{api:?}: {}",
            out.stderr
        );
        let named = match api {
            Api::OpenAi | Api::Responses => "refused to answer: I can't help with that.",
            Api::Anthropic => {
                "refused to answer: stopped by Anthropic's safety classifiers (refusal)"
            }
            Api::Google => "refused to answer: stopped by Gemini's safety filters (SAFETY)",
        };
        assert!(out.stderr.contains(named), "{api:?}: {}", out.stderr);
        assert_eq!(out.stdout, "Sure.\n", "{api:?}");
        // The refused reply is not sent back.
        let next = server.requests()[1].body.to_string();
        assert!(!next.contains("help with that"), "{api:?}: {next}");
    }
}

#[test]
fn arguments_that_are_not_json_are_not_run_and_replay_as_empty() {
    for api in [Api::OpenAi, Api::Responses, Api::Anthropic] {
        let home = tempfile::tempdir().unwrap();
        with_file_write(home.path());
        let target = home.path().join("made.txt");
        let raw = format!(
            r#"{{"file_path": "{}", "content": oops}}"#,
            target.display()
        );
        let server = ModelServer::start(
            api,
            vec![
                Reply::RawArguments("file_write".into(), raw),
                text("I will fix my arguments."),
            ],
        );
        let out = against(&server, home.path()).args(["-p", "write"]).output();
        // The server refuses a history whose arguments are not JSON, so no
        // problem means `{}` went back.
        no_problems(&server, &out);
        assert_eq!(out.code, 0, "{api:?} {out:?}");
        assert!(!target.exists(), "{api:?}: the call ran");
        let body = &server.requests()[1].body;
        let got = envelopes(api, body);
        assert_eq!(got[0].1["error_code"], "INVALID_PARAMS", "{api:?}");
        let error = got[0].1["error"].as_str().unwrap();
        assert!(
            error.starts_with(
                "Invalid arguments for tool 'file_write': arguments are not valid JSON"
            ),
            "{api:?}: {error}"
        );
        let replayed = match api {
            Api::OpenAi => body["messages"][2]["tool_calls"][0]["function"]["arguments"].clone(),
            // After the user message and the reasoning that led to the call.
            Api::Responses => body["input"][2]["arguments"].clone(),
            _ => body["messages"][1]["content"][0]["input"].clone(),
        };
        let empty = if api == Api::Anthropic {
            json!({})
        } else {
            json!("{}")
        };
        assert_eq!(replayed, empty, "{api:?}: {body}");
    }
}

/// The reply limit as request `body` of `api` carries it.
fn limit(api: Api, body: &Value) -> Value {
    match api {
        // A server other than OpenAI's own reads `max_tokens`.
        Api::OpenAi | Api::Anthropic => body["max_tokens"].clone(),
        Api::Responses => body["max_output_tokens"].clone(),
        Api::Google => body["generationConfig"]["maxOutputTokens"].clone(),
    }
}

#[test]
fn the_reply_limit_goes_in_each_providers_field() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        let server = ModelServer::start(api, vec![text("a"), text("b"), text("c"), text("d")]);
        let run = |args: &[&str], env: Option<&str>| {
            let mut r = against(&server, home.path()).args(args).args(["-p", "hi"]);
            if let Some(v) = env {
                r = r.env("IKIGAI_MAX_OUTPUT_TOKENS", v);
            }
            let out = r.output();
            assert_eq!(out.code, 0, "{api:?} {out:?}");
        };
        run(&["--max-output-tokens", "1234"], Some("99"));
        run(&[], Some("77"));
        run(&["--model", "a-model-nobody-knows"], None);
        let known = match api {
            Api::OpenAi | Api::Responses => ("gpt-4.1", 32_768),
            Api::Anthropic => ("claude-sonnet-4-5", 64_000),
            Api::Google => ("gemini-2.5-flash", 65_536),
        };
        run(&["--model", known.0], None);
        assert!(
            server.problems().is_empty(),
            "{api:?}: {:?}",
            server.problems()
        );
        let got: Vec<Value> = server
            .requests()
            .iter()
            .map(|r| limit(api, &r.body))
            .collect();
        assert_eq!(
            got,
            [json!(1234), json!(77), json!(8192), json!(known.1)],
            "{api:?}"
        );
    }
    let home = tempfile::tempdir().unwrap();
    for bad in ["0", "-5", "many"] {
        let out = ikigai(home.path())
            .args(["--provider", "stub", "--max-output-tokens", bad, "-p", "x"])
            .output();
        assert_eq!(out.code, 2, "{bad}: {out:?}");
        assert!(out.stderr.contains("whole number from 1"), "{}", out.stderr);
    }
    let out = ikigai(home.path())
        .env("IKIGAI_MAX_OUTPUT_TOKENS", "lots")
        .args(["--provider", "stub", "-p", "x"])
        .output();
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("IKIGAI_MAX_OUTPUT_TOKENS"),
        "{}",
        out.stderr
    );
}

#[test]
fn optional_nulls_are_dropped_under_strict_mode() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        with_echo(home.path());
        let server = ModelServer::start(
            api,
            vec![
                calls(&[("echo", json!({"text": "hi", "n": null}))]),
                text("ok"),
            ],
        );
        let out = against(&server, home.path()).args(["-p", "go"]).output();
        no_problems(&server, &out);
        assert_eq!(out.code, 0, "{api:?} {out:?}");
        let got = envelopes(api, &server.requests()[1].body);
        let input = &got[0].1["result"]["input"];
        let expected = match api {
            Api::OpenAi | Api::Responses => json!({"text": "hi"}),
            _ => json!({"text": "hi", "n": null}),
        };
        assert_eq!(input, &expected, "{api:?}");
    }
}

#[test]
fn servers_that_answer_with_one_json_reply_are_read() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        with_echo(home.path());
        let server = ModelServer::start(
            api,
            vec![
                Reply::Whole(
                    "Calling.".into(),
                    vec![("echo".into(), json!({"text": "whole"}))],
                ),
                Reply::Whole("All at once.".into(), vec![]),
            ],
        );
        let out = against(&server, home.path()).args(["-p", "go"]).output();
        no_problems(&server, &out);
        assert_eq!(out.code, 0, "{api:?} {out:?}");
        assert_eq!(out.stdout, "Calling.\nAll at once.\n", "{api:?}");
        let got = envelopes(api, &server.requests()[1].body);
        assert_eq!(
            got[0].1["result"]["input"],
            json!({"text": "whole"}),
            "{api:?}"
        );
    }
}
