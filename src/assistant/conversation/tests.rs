//! The loop against a fake host and a scripted model: rounds, order,
//! approval, the sandbox's second chance, cut and refused replies, the log,
//! compaction and interruption.

use super::calls::fence_refusal;
use super::*;
use crate::assistant::approval::{rules::Rule, Mode, Prompter, Sourced};
use crate::assistant::model::{Reply, Usage};
use crate::host::call::CallOutcome;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

/// A model that answers from a script and keeps every request.
struct Scripted {
    replies: Mutex<VecDeque<Result<Reply, ModelError>>>,
    seen: Mutex<Vec<Request>>,
    format: ToolFormat,
}

impl Scripted {
    fn new(replies: Vec<Result<Reply, ModelError>>) -> Arc<Scripted> {
        Self::speaking(ToolFormat::Anthropic, replies)
    }

    fn speaking(format: ToolFormat, replies: Vec<Result<Reply, ModelError>>) -> Arc<Scripted> {
        Arc::new(Scripted {
            replies: Mutex::new(replies.into()),
            seen: Mutex::new(vec![]),
            format,
        })
    }
}

impl ModelClient for Scripted {
    fn provider(&self) -> &'static str {
        "scripted"
    }
    fn model(&self) -> &str {
        "m1"
    }
    fn tool_format(&self) -> ToolFormat {
        self.format
    }
    fn max_output_tokens(&self) -> Option<u64> {
        Some(100)
    }
    fn stream(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ModelError> {
        self.seen.lock().unwrap().push(request.clone());
        let reply = self
            .replies
            .lock()
            .unwrap()
            .pop_front()
            .expect("a scripted reply");
        if let Ok(r) = &reply {
            on_text(&r.text);
        }
        reply
    }
}

/// Tools `echo` (answers its arguments), `slow` (sleeps `ms`, answers
/// `n`), `needs_key` (reports a config_required event), `forever`
/// (waits for cancel) and `fenced` (fails inside the sandbox with
/// `error`, by default the fence's "Permission denied"; works outside
/// it).
struct FakeHost {
    calls: Mutex<Vec<String>>,
    /// What `unsandboxed` answers.
    unsandboxed: bool,
}

impl ToolHost for FakeHost {
    fn tools_array(&self, format: ToolFormat) -> Value {
        json!([{"format": format!("{format:?}")}])
    }
    fn parameters(&self, name: &str) -> Option<Value> {
        (name == "echo").then(|| {
            json!({"type": "object", "properties": {
                "path": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["path"]})
        })
    }

    fn read_only(&self, name: &str) -> bool {
        // task as the host's registry declares it.
        name == "slow" || name == "task"
    }
    fn unsandboxed(&self) -> bool {
        self.unsandboxed
    }
    fn call_unsandboxed(&self, name: &str, _: &Value, _: Option<&AtomicBool>) -> CallOutcome {
        self.calls
            .lock()
            .unwrap()
            .push(format!("{name} unsandboxed"));
        CallOutcome::new(
            Envelope::Success {
                result: json!({"outside": true}),
                truncated: None,
            },
            vec![],
        )
    }
    fn call(&self, name: &str, arguments: &Value, cancel: Option<&AtomicBool>) -> CallOutcome {
        self.calls.lock().unwrap().push(name.to_string());
        let ok = |result: Value| {
            CallOutcome::new(
                Envelope::Success {
                    result,
                    truncated: None,
                },
                vec![],
            )
        };
        match name {
            "echo" => ok(arguments.clone()),
            "slow" => {
                std::thread::sleep(Duration::from_millis(arguments["ms"].as_u64().unwrap_or(0)));
                ok(json!({"n": arguments["n"]}))
            }
            "needs_key" => CallOutcome::new(
                Envelope::refused(Failure::Tool("AUTH_MISSING".into()), "no key"),
                vec![json!({"kind": "config_required", "message": "set KEY"})],
            ),
            "fenced" => {
                if arguments["interrupt"] == json!(true) {
                    // The person presses Ctrl-C while it runs.
                    cancel.expect("a cancel flag").store(true, Ordering::SeqCst);
                }
                let error = arguments["error"].as_str().unwrap_or("Permission denied");
                CallOutcome {
                    sandbox: Some(json!({"mode": "workspace-write", "network": false})),
                    ..CallOutcome::new(
                        Envelope::refused(Failure::Tool("EXIT".into()), error),
                        vec![],
                    )
                }
            }
            "forever" => {
                let cancel = cancel.expect("a cancel flag");
                while !cancel.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                CallOutcome::new(Envelope::refused(Failure::Cancelled, "killed"), vec![])
            }
            _ => CallOutcome::new(
                Envelope::refused(Failure::NotFound, format!("Tool '{name}' not found")),
                vec![],
            ),
        }
    }
}

#[derive(Default)]
struct Record(Vec<String>);

impl Ui for Record {
    fn waiting(&mut self, _: &str) {}
    fn text(&mut self, piece: &str) {
        self.0.push(format!("text {piece}"));
    }
    fn end_text(&mut self) {}
    fn tool_call(&mut self, call: &ToolCall) {
        self.0.push(format!("call {}", short_call(call, 80)));
    }
    fn tool_outcome(&mut self, call: &ToolCall, outcome: &CallOutcome) {
        self.0.push(format!(
            "outcome {} {}",
            call.name,
            short_outcome(outcome, 80).1
        ));
    }
    fn event(&mut self, event: &Value) {
        self.0.push(format!("event {event}"));
    }
    fn notice(&mut self, text: &str) {
        self.0.push(format!("notice {text}"));
    }
    fn error(&mut self, text: &str) {
        self.0.push(format!("error {text}"));
    }
    fn usage(&mut self, usage: &Usage) {
        self.0.push(format!(
            "usage {} in, {} out",
            usage.input_tokens, usage.output_tokens
        ));
    }
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        local_id: false,
        signature: None,
    }
}

fn text(t: &str) -> Result<Reply, ModelError> {
    Ok(Reply {
        text: t.into(),
        ..Reply::default()
    })
}

fn calls(list: Vec<ToolCall>) -> Result<Reply, ModelError> {
    Ok(Reply {
        tool_calls: list,
        ..Reply::default()
    })
}

fn host() -> FakeHost {
    FakeHost {
        calls: Mutex::new(vec![]),
        unsandboxed: false,
    }
}

/// The person at the prompt: answers from a script, keeps what it was
/// shown and asked.
#[derive(Clone, Default)]
struct Person {
    answers: Arc<Mutex<VecDeque<&'static str>>>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Person {
    fn answering(answers: &[&'static str]) -> Person {
        Person {
            answers: Arc::new(Mutex::new(answers.iter().copied().collect())),
            seen: Arc::default(),
        }
    }
    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl Prompter for Person {
    fn show(&mut self, text: &str) {
        self.seen.lock().unwrap().push(text.to_string());
    }
    fn answer(&mut self, question: &str, _: &AtomicBool) -> Option<String> {
        self.seen.lock().unwrap().push(question.to_string());
        self.answers.lock().unwrap().pop_front().map(str::to_string)
    }
}

/// `ask` mode with the allow rules `allow`, asking `person`.
fn asking(allow: &[&str], person: &Person) -> Approval {
    let allow = allow
        .iter()
        .map(|r| Sourced {
            rule: Rule::parse(r).unwrap(),
            from: "--allow".into(),
        })
        .collect();
    Approval::new(Mode::Ask, allow, vec![], Some(Box::new(person.clone())))
}

fn conversation(model: &Arc<Scripted>, rounds: usize) -> Conversation {
    let client: Arc<dyn ModelClient> = model.clone();
    Conversation::new(Ok(client), Context::plain("sys"), rounds)
}

#[test]
fn tool_rounds_until_text_with_results_in_call_order() {
    let model = Scripted::new(vec![
        calls(vec![
            call("a", "slow", json!({"ms": 150, "n": 1})),
            call("b", "slow", json!({"ms": 0, "n": 2})),
        ]),
        calls(vec![call("c", "echo", json!({"x": "y"}))]),
        text("done"),
    ]);
    let mut c = conversation(&model, 25);
    let mut ui = Record::default();
    let end = c.send("go", &host(), &mut ui, &AtomicBool::new(false));
    assert_eq!(end, TurnEnd::Answered);
    let seen = model.seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].system, "sys");
    assert_eq!(seen[0].tools, json!([{"format": "Anthropic"}]));
    let Message::Tool { results } = &seen[1].messages[2] else {
        panic!()
    };
    let order: Vec<_> = results
        .iter()
        .map(|r| (r.call_id.as_str(), r.envelope["result"]["n"].clone()))
        .collect();
    assert_eq!(order, [("a", json!(1)), ("b", json!(2))]);
    // The quick call finished first and was shown first.
    let outcomes: Vec<_> = ui.0.iter().filter(|l| l.starts_with("outcome")).collect();
    assert_eq!(outcomes[0], "outcome slow ok, 7 bytes");
    assert_eq!(c.messages().len(), 6);
    assert_eq!(ui.0.last().unwrap(), "text done");
}

/// The envelopes of the last tool message `model` was sent.
fn last_results(model: &Scripted) -> Vec<ToolResult> {
    let seen = model.seen.lock().unwrap();
    let messages = &seen.last().unwrap().messages;
    match messages
        .iter()
        .rev()
        .find(|m| matches!(m, Message::Tool { .. }))
    {
        Some(Message::Tool { results }) => results.clone(),
        _ => panic!("no tool results in {messages:?}"),
    }
}

#[test]
fn a_cut_reply_runs_no_call_and_the_model_is_told_in_the_same_turn() {
    let model = Scripted::new(vec![
        Ok(Reply {
            usage: Some(Usage {
                input_tokens: 3,
                output_tokens: 100,
                ..Usage::default()
            }),
            text: "Writing it".into(),
            tool_calls: vec![call(
                "a",
                "echo",
                json!("{\"path\": \"x\", \"content\": \"ab"),
            )],
            stop: Stop::Cut,
        }),
        text("I will write it in parts."),
    ]);
    let mut c = conversation(&model, 25);
    let mut ui = Record::default();
    let h = host();
    assert_eq!(
        c.send("go", &h, &mut ui, &AtomicBool::new(false)),
        TurnEnd::Answered
    );
    assert!(h.calls.lock().unwrap().is_empty(), "a cut call ran");
    // Counted once: the status line and the cost add up what they get.
    let usage: Vec<_> = ui.0.iter().filter(|l| l.starts_with("usage")).collect();
    assert_eq!(usage, ["usage 3 in, 100 out"]);
    assert!(
        ui.0.contains(&"notice [cut: the reply reached the output limit of 100 tokens; --max-output-tokens raises it]".to_string()),
        "{:?}",
        ui.0
    );
    let results = last_results(&model);
    assert_eq!(results[0].envelope["error_code"], "INVALID_PARAMS");
    let error = results[0].envelope["error"].as_str().unwrap();
    assert!(error.contains("output limit of 100 tokens"), "{error}");
    // The history replays the cut call as `{}`.
    let Message::Assistant { tool_calls, .. } = &c.messages()[1] else {
        panic!()
    };
    assert_eq!(tool_calls[0].arguments, json!({}));

    // Cut before any text: an error, not "an empty reply".
    let model = Scripted::new(vec![Ok(Reply {
        stop: Stop::Cut,
        ..Reply::default()
    })]);
    let mut ui = Record::default();
    let end = conversation(&model, 25).send("go", &h, &mut ui, &AtomicBool::new(false));
    assert_eq!(end, TurnEnd::Failed);
    assert!(
        ui.0.iter()
            .any(|l| l.contains("reached the output limit of 100 tokens before it said anything")),
        "{:?}",
        ui.0
    );
}

#[test]
fn a_refusal_is_named_and_kept_out_of_the_history() {
    let model = Scripted::new(vec![
        Ok(Reply {
            text: "Partly".into(),
            stop: Stop::Refused("I can't help with that.".into()),
            ..Reply::default()
        }),
        text("ok"),
    ]);
    let mut c = conversation(&model, 25);
    let mut ui = Record::default();
    let h = host();
    let cancel = AtomicBool::new(false);
    assert_eq!(c.send("bad", &h, &mut ui, &cancel), TurnEnd::Failed);
    assert!(
        ui.0.iter().any(
            |l| l.starts_with("error scripted (m1) refused to answer: I can't help with that.")
        ),
        "{:?}",
        ui.0
    );
    assert_eq!(c.send("good", &h, &mut ui, &cancel), TurnEnd::Answered);
    let sent = &model.seen.lock().unwrap()[1].messages;
    assert!(
        sent.iter().all(|m| !matches!(m, Message::Assistant { .. })),
        "{sent:?}"
    );
}

#[test]
fn arguments_that_are_not_an_object_are_not_run_and_replay_as_empty() {
    let model = Scripted::new(vec![
        calls(vec![
            call("a", "echo", json!("{\"path\": oops")),
            call("b", "echo", json!({"path": "fine"})),
        ]),
        text("done"),
    ]);
    let mut c = conversation(&model, 25);
    let h = host();
    c.send("go", &h, &mut Record::default(), &AtomicBool::new(false));
    assert_eq!(*h.calls.lock().unwrap(), ["echo"], "only the good call ran");
    let results = last_results(&model);
    assert_eq!(results[0].envelope["error_code"], "INVALID_PARAMS");
    let error = results[0].envelope["error"].as_str().unwrap();
    assert!(
        error.starts_with("Invalid arguments for tool 'echo': arguments are not valid JSON: "),
        "{error}"
    );
    assert_eq!(results[1].envelope["result"], json!({"path": "fine"}));
    let seen = model.seen.lock().unwrap();
    let Message::Assistant { tool_calls, .. } = &seen[1].messages[1] else {
        panic!()
    };
    assert_eq!(tool_calls[0].arguments, json!({}));
}

#[test]
fn optional_nulls_are_dropped_under_strict_mode_only() {
    let args = json!({"path": null, "limit": null});
    for (format, expected) in [
        (ToolFormat::OpenAiChat, json!({"path": null})),
        (ToolFormat::OpenAiResponses, json!({"path": null})),
        (ToolFormat::Anthropic, args.clone()),
    ] {
        let model = Scripted::speaking(
            format,
            vec![calls(vec![call("a", "echo", args.clone())]), text("ok")],
        );
        conversation(&model, 25).send(
            "go",
            &host(),
            &mut Record::default(),
            &AtomicBool::new(false),
        );
        assert_eq!(
            last_results(&model)[0].envelope["result"],
            expected,
            "{format:?}"
        );
    }
}

#[test]
fn a_call_that_may_write_runs_alone_between_the_reads() {
    // Run all at once, the quick calls would end before the slow one.
    let model = Scripted::new(vec![
        calls(vec![
            call("a", "slow", json!({"ms": 150, "n": 1})),
            call("b", "echo", json!({"x": 1})),
            call("c", "slow", json!({"ms": 0, "n": 2})),
            call("d", "slow", json!({"ms": 0, "n": 3})),
        ]),
        text("done"),
    ]);
    let mut c = conversation(&model, 25);
    let mut ui = Record::default();
    c.send("go", &host(), &mut ui, &AtomicBool::new(false));
    let shown: Vec<&str> =
        ui.0.iter()
            .filter(|l| l.starts_with("outcome") || l.starts_with("call"))
            .map(String::as_str)
            .collect();
    assert_eq!(
        shown[..4],
        [
            "call slow(ms: 150, n: 1)",
            "outcome slow ok, 7 bytes",
            "call echo(x: 1)",
            "outcome echo ok, 7 bytes"
        ]
    );
    assert_eq!(
        shown[4..6],
        ["call slow(ms: 0, n: 2)", "call slow(ms: 0, n: 3)"]
    );
}

#[test]
fn a_call_that_failed_in_the_sandbox_runs_again_outside_it_when_the_person_says_y() {
    for (answer, ran, seen) in [
        (
            "y",
            vec!["fenced", "fenced unsandboxed"],
            json!({"outside": true}),
        ),
        ("n", vec!["fenced"], Value::Null),
    ] {
        let model = Scripted::new(vec![
            calls(vec![call("a", "fenced", json!({}))]),
            text("ok"),
        ]);
        let person = Person::answering(&[answer]);
        let h = host();
        let mut c = conversation(&model, 25).with_approval(asking(&["fenced"], &person));
        let end = c.send("go", &h, &mut Record::default(), &AtomicBool::new(false));
        assert_eq!(end, TurnEnd::Answered);
        assert_eq!(*h.calls.lock().unwrap(), ran, "answer {answer}");
        assert_eq!(
            person.seen(),
            [
                "fenced failed inside the sandbox: Permission denied",
                "Run it again outside the sandbox? y / n: "
            ]
        );
        let results = last_results(&model);
        assert_eq!(results[0].envelope["result"], seen, "answer {answer}");
        if answer == "n" {
            // The model learns the sandbox may be why.
            assert_eq!(results[0].envelope["sandbox"]["mode"], "workspace-write");
        }
    }
}

#[test]
fn a_failure_the_fence_did_not_cause_is_not_offered_a_run_outside_it() {
    let model = Scripted::new(vec![
        calls(vec![call(
            "a",
            "fenced",
            json!({"error": "3 tests failed"}),
        )]),
        text("ok"),
    ]);
    let person = Person::answering(&["y"]);
    let h = host();
    let mut c = conversation(&model, 25).with_approval(asking(&["fenced"], &person));
    c.send("go", &h, &mut Record::default(), &AtomicBool::new(false));
    assert_eq!(*h.calls.lock().unwrap(), ["fenced"]);
    assert!(person.seen().is_empty(), "{:?}", person.seen());
    assert_eq!(last_results(&model)[0].envelope["error"], "3 tests failed");
}

#[test]
fn the_fences_refusal_is_the_line_that_shows_it() {
    let fenced = |result: Value| CallOutcome {
        sandbox: Some(json!({"mode": "workspace-write"})),
        ..CallOutcome::new(
            Envelope::Success {
                result,
                truncated: None,
            },
            vec![],
        )
    };
    let denied =
        json!({"output": "making\nsh: 1: cannot create /x: Permission denied\n", "exit_code": 2});
    assert_eq!(
        fence_refusal(&fenced(denied.clone())).as_deref(),
        Some("sh: 1: cannot create /x: Permission denied")
    );
    let failed = json!({"output": "test a ... FAILED\n", "exit_code": 101});
    assert_eq!(fence_refusal(&fenced(failed)), None);
    let unfenced = CallOutcome {
        sandbox: None,
        ..fenced(denied)
    };
    assert_eq!(fence_refusal(&unfenced), None);
}

#[test]
fn an_interrupted_call_is_not_offered_a_run_outside_the_sandbox() {
    let model = Scripted::new(vec![calls(vec![call(
        "a",
        "fenced",
        json!({"interrupt": true}),
    )])]);
    let person = Person::answering(&["y"]);
    let h = host();
    let mut c = conversation(&model, 25).with_approval(asking(&["fenced"], &person));
    let end = c.send("go", &h, &mut Record::default(), &AtomicBool::new(false));
    assert_eq!(end, TurnEnd::Cancelled);
    assert_eq!(*h.calls.lock().unwrap(), ["fenced"]);
    assert!(person.seen().is_empty(), "{:?}", person.seen());
}

#[test]
fn without_the_sandbox_what_the_rules_allow_is_asked_all_the_same() {
    for unsandboxed in [false, true] {
        let model = Scripted::new(vec![
            calls(vec![
                call("a", "echo", json!({"x": 1})),
                call("b", "slow", json!({"n": 2})),
            ]),
            text("ok"),
        ]);
        let person = Person::answering(&["n", ""]);
        let h = FakeHost {
            unsandboxed,
            ..host()
        };
        let mut c = conversation(&model, 25).with_approval(asking(&["echo"], &person));
        c.send("go", &h, &mut Record::default(), &AtomicBool::new(false));
        let results = last_results(&model);
        // The read-only call runs unasked either way.
        assert_eq!(results[1].envelope["result"]["n"], 2);
        if unsandboxed {
            assert_eq!(*h.calls.lock().unwrap(), ["slow"]);
            assert!(person.seen()[0].starts_with("echo wants to run with:"));
            assert_eq!(results[0].envelope["error_code"], "PERMISSION_DENIED");
        } else {
            assert_eq!(*h.calls.lock().unwrap(), ["echo", "slow"]);
            assert!(person.seen().is_empty(), "{:?}", person.seen());
        }
    }
}

#[test]
fn a_denied_call_tells_the_model_who_refused_and_the_turn_goes_on() {
    let model = Scripted::new(vec![
        calls(vec![
            call("a", "echo", json!({"x": 1})),
            call("b", "slow", json!({"n": 2})),
        ]),
        text("understood"),
    ]);
    let deny = vec![Sourced {
        rule: Rule::parse("echo").unwrap(),
        from: "--deny".into(),
    }];
    let h = host();
    let mut c =
        conversation(&model, 25).with_approval(Approval::new(Mode::Auto, vec![], deny, None));
    let end = c.send("go", &h, &mut Record::default(), &AtomicBool::new(false));
    assert_eq!(end, TurnEnd::Answered);
    assert_eq!(*h.calls.lock().unwrap(), ["slow"]);
    let Message::Tool { results } = &model.seen.lock().unwrap()[1].messages[2] else {
        panic!()
    };
    assert_eq!(results[0].envelope["error_code"], "PERMISSION_DENIED");
    assert_eq!(
        results[0].envelope["error"],
        "Denied by the rule echo (--deny); do not try to get around it, ask the user instead"
    );
    assert_eq!(results[1].envelope["result"]["n"], 2);
}

#[test]
fn the_model_and_the_log_see_a_long_output_cut_and_the_whole_is_saved() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(5000);
    let model = Scripted::new(vec![
        calls(vec![call("a", "echo", json!({ "text": long }))]),
        text("ok"),
    ]);
    let session = Session::create(dir.path()).unwrap();
    let log = session.path().to_path_buf();
    let mut c = conversation(&model, 25)
        .with_session(session)
        .with_model_output(1000);
    c.send(
        "go",
        &host(),
        &mut Record::default(),
        &AtomicBool::new(false),
    );
    let Message::Tool { results } = &model.seen.lock().unwrap()[1].messages[2] else {
        panic!()
    };
    let seen = results[0].envelope["result"].as_str().unwrap().to_string();
    assert!(seen.len() <= 1000, "{}", seen.len());
    let saved = log.with_extension("").join("a.result.json");
    assert!(seen.contains(&saved.display().to_string()), "{seen}");
    let whole: Value = serde_json::from_slice(&std::fs::read(&saved).unwrap()).unwrap();
    assert_eq!(whole["text"], long);
    let logged = std::fs::read_to_string(&log).unwrap();
    let result = logged
        .lines()
        .find(|l| l.contains("\"tool_result\""))
        .unwrap();
    assert!(result.contains("bytes and 0 lines left out"), "{result}");
    assert!(!result.contains(&long));
}

#[test]
fn round_limit_answers_every_call_and_stops() {
    let model = Scripted::new(vec![
        calls(vec![call("a", "echo", json!({}))]),
        calls(vec![call("b", "echo", json!({}))]),
    ]);
    let mut c = conversation(&model, 1);
    let mut ui = Record::default();
    let end = c.send("go", &host(), &mut ui, &AtomicBool::new(false));
    assert_eq!(end, TurnEnd::RoundLimit);
    let Some(Message::Tool { results }) = c.messages().last() else {
        panic!()
    };
    assert_eq!(results[0].envelope["error_code"], "TOOL_ROUND_LIMIT");
    assert!(ui.0.last().unwrap().contains("Stopped after 1 tool rounds"));
}

#[test]
fn provider_error_keeps_the_conversation_for_the_next_message() {
    let model = Scripted::new(vec![
        text("first answer"),
        Err(ModelError::Http {
            status: 500,
            message: "boom".into(),
        }),
        text("recovered"),
    ]);
    let mut c = conversation(&model, 25);
    let mut ui = Record::default();
    let h = host();
    let cancel = AtomicBool::new(false);
    assert_eq!(c.send("one", &h, &mut ui, &cancel), TurnEnd::Answered);
    assert_eq!(c.send("two", &h, &mut ui, &cancel), TurnEnd::Failed);
    assert!(
        ui.0.iter()
            .any(|l| l.starts_with("error scripted (m1): HTTP 500: boom")),
        "{:?}",
        ui.0
    );
    assert_eq!(c.send("three", &h, &mut ui, &cancel), TurnEnd::Answered);
    let last = model.seen.lock().unwrap().last().unwrap().messages.clone();
    let users: Vec<_> = last
        .iter()
        .filter_map(|m| match m {
            Message::User { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(users, ["one", "two", "three"]);
}

#[test]
fn events_go_to_the_person_not_the_model() {
    let model = Scripted::new(vec![
        calls(vec![call("a", "needs_key", json!({}))]),
        text("ok"),
    ]);
    let mut c = conversation(&model, 25);
    let mut ui = Record::default();
    c.send("go", &host(), &mut ui, &AtomicBool::new(false));
    assert!(ui
        .0
        .contains(&r#"event {"kind":"config_required","message":"set KEY"}"#.to_string()));
    let sent = serde_json::to_string(&model.seen.lock().unwrap()[1].messages).unwrap();
    assert!(!sent.contains("config_required"), "{sent}");
    assert!(ui
        .0
        .contains(&"outcome needs_key AUTH_MISSING: no key".to_string()));
}

#[test]
fn cancel_stops_running_tools_and_keeps_results() {
    let model = Scripted::new(vec![calls(vec![
        call("a", "forever", json!({})),
        call("b", "echo", json!({})),
    ])]);
    let mut c = conversation(&model, 25);
    let mut ui = Record::default();
    let cancel = Arc::new(AtomicBool::new(false));
    let setter = Arc::clone(&cancel);
    let trigger = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        setter.store(true, Ordering::SeqCst);
    });
    assert_eq!(c.send("go", &host(), &mut ui, &cancel), TurnEnd::Cancelled);
    trigger.join().unwrap();
    let Some(Message::Tool { results }) = c.messages().last() else {
        panic!()
    };
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].envelope["error"], "killed");
    assert_eq!(model.seen.lock().unwrap().len(), 1);
}

#[test]
fn no_model_means_an_instruction_and_nothing_sent() {
    let mut c = Conversation::new(Err("configure a key".into()), Context::plain("s"), 25);
    let mut ui = Record::default();
    let end = c.send("hi", &host(), &mut ui, &AtomicBool::new(false));
    assert_eq!(end, TurnEnd::NotConfigured);
    assert_eq!(ui.0, ["error configure a key"]);
    assert!(c.messages().is_empty());
}

#[test]
fn session_log_replays_to_the_same_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let model = Scripted::new(vec![
        calls(vec![call("a", "echo", json!({"k": 1}))]),
        text("fine"),
    ]);
    let session = Session::create(dir.path()).unwrap();
    let path = session.path().to_path_buf();
    let mut c = conversation(&model, 25).with_session(session);
    c.send(
        "go",
        &host(),
        &mut Record::default(),
        &AtomicBool::new(false),
    );
    let (_, replayed) = Session::resume(dir.path(), None).unwrap();
    assert_eq!(replayed, c.messages());
    let log = std::fs::read_to_string(path).unwrap();
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
        ["start", "user", "assistant", "tool_result", "assistant"]
    );
}

#[test]
fn compact_goes_on_from_the_summary_and_clear_from_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let model = Scripted::new(vec![text("first answer"), text("SUMMARY"), text("after")]);
    let mut c = conversation(&model, 25).with_new_session(dir.path().to_path_buf());
    let mut ui = Record::default();
    let cancel = AtomicBool::new(false);
    c.send("one", &host(), &mut ui, &cancel);
    assert_eq!(c.compact_now(&host(), &mut ui, &cancel), TurnEnd::Answered);
    // The summary request went without tools, after the conversation.
    let seen = model.seen.lock().unwrap()[1].clone();
    assert_eq!(seen.tools, json!([]));
    assert_eq!(seen.messages.len(), 3);
    assert_eq!(
        seen.messages[2],
        Message::User {
            text: SUMMARY_REQUEST.into()
        }
    );
    let [Message::User { text }] = c.messages() else {
        panic!("{:?}", c.messages())
    };
    assert!(
        text.contains("SUMMARY") && text.ends_with("verbatim:]\n\none"),
        "{text}"
    );
    c.send("two", &host(), &mut ui, &cancel);
    assert_eq!(model.seen.lock().unwrap()[2].messages.len(), 2);
    let (_, replayed) = Session::resume(dir.path(), None).unwrap();
    assert_eq!(replayed, c.messages());
    assert!(c.session_id().is_some());
    c.clear(&mut ui);
    assert!(c.messages().is_empty());
    assert_eq!(
        c.session_id(),
        None,
        "a new session is made at its first entry"
    );
}

#[test]
fn short_forms() {
    let c = call("a", "bash", json!({"command": "ls -la\nwc", "n": 2}));
    assert_eq!(short_call(&c, 80), r#"bash(command: "ls -la\nwc", n: 2)"#);
    assert_eq!(short_call(&c, 10), "bash(comm…");
    let outcome = |e: Envelope| short_outcome(&CallOutcome::new(e, vec![]), 80);
    let ok = |result: Value| Envelope::Success {
        result,
        truncated: None,
    };
    assert_eq!(
        outcome(ok(json!({"output": "x", "exit_code": 0}))),
        (true, "exit code 0, 28 bytes".to_string())
    );
    assert_eq!(
        outcome(ok(
            json!({"error": "File not found: x", "error_code": "FILE_NOT_FOUND"})
        )),
        (false, "FILE_NOT_FOUND: File not found: x".to_string())
    );
    assert_eq!(
        outcome(Envelope::refused(
            Failure::Timeout,
            "Tool 'x' timed out after 30s"
        )),
        (
            false,
            "TOOL_TIMEOUT: Tool 'x' timed out after 30s".to_string()
        )
    );
}

#[test]
fn without_usage_the_window_is_counted_in_bytes_and_a_summary_replaces_the_history() {
    let model = Scripted::new(vec![text("a"), text("THE SUMMARY"), text("b")]);
    let mut c = conversation(&model, 25).with_window(Some(3_000), None);
    let mut ui = Record::default();
    let cancel = AtomicBool::new(false);
    let long = "x".repeat(8_000);
    c.send(&long, &host(), &mut ui, &cancel);
    assert!(
        !ui.0.iter().any(|l| l.contains("Context compacted")),
        "{:?}",
        ui.0
    );
    c.send(&format!("second {long}"), &host(), &mut ui, &cancel);
    let seen = model.seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert_eq!(
        seen[1].messages.last(),
        Some(&Message::User {
            text: SUMMARY_REQUEST.into()
        })
    );
    let [Message::User { text }] = &seen[2].messages[..] else {
        panic!("{:?}", seen[2].messages)
    };
    assert!(text.contains("THE SUMMARY") && text.ends_with(&format!("second {long}")));
    assert!(
        ui.0.iter()
            .any(|l| l.contains("Context compacted (summarised)")),
        "{:?}",
        ui.0
    );
}

#[test]
fn a_subagents_call_is_asked_by_the_callers_approval_naming_who_asks() {
    let model = Scripted::new(vec![
        calls(vec![call(
            "t1",
            "task",
            json!({"description": "look around", "prompt": "find it"}),
        )]),
        calls(vec![call("e1", "echo", json!({"path": "x"}))]),
        text("found it"),
        text("done"),
    ]);
    let person = Person::answering(&["a"]);
    let mut c = conversation(&model, 25).with_approval(asking(&[], &person));
    let mut ui = Record::default();
    let end = c.send("go", &host(), &mut ui, &AtomicBool::new(false));
    assert_eq!(end, TurnEnd::Answered);
    let seen = person.seen();
    assert_eq!(seen[0], "Subagent 'look around' asks:", "{seen:?}");
    // The subagent's request: a fresh context and the prompt alone.
    let requests = model.seen.lock().unwrap().clone();
    assert!(requests[1].system.contains("You are a subagent"));
    assert_eq!(
        requests[1].messages[0],
        Message::User {
            text: "find it".into()
        }
    );
    // The caller gets the answer; its usage was the caller's to count.
    let results = last_results(&model);
    assert_eq!(results[0].envelope["result"]["answer"], "found it");
    assert_eq!(results[0].envelope["result"]["tool_calls"], 1);
    // The `a` answer holds for the caller too: echo now runs unasked.
    let model2 = Scripted::new(vec![
        calls(vec![call("e2", "echo", json!({"path": "y"}))]),
        text("ok"),
    ]);
    c.set_client(model2.clone());
    c.send("again", &host(), &mut ui, &AtomicBool::new(false));
    assert_eq!(person.seen().len(), seen.len(), "{:?}", person.seen());
}
