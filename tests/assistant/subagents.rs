//! Subagents (decision 86): a `task` call runs a conversation of its own,
//! in a fresh context, with its agent's tools, and only its answer comes
//! back; several of one reply run at once within `max_subagents`; their
//! spend is the caller's; their steps are tagged in `stream-json`; Ctrl-C
//! stops them; each fault is an error result and the caller goes on. The
//! fake provider tells a subagent's requests from its caller's by a marker
//! in the task's prompt, the subagent's first message.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::headless::events;
use super::{against, envelopes, no_problems, system_text, APIS};
use crate::common::link;
use crate::common::model_server::{calls, text, Api, ModelServer, Reply};

/// Our bash, file_read and grep as system tools.
fn install(home: &Path) {
    let libexec = home.join("libexec");
    std::fs::create_dir_all(&libexec).unwrap();
    for tool in ["bash", "file-read", "grep"] {
        std::os::unix::fs::symlink(link(tool), libexec.join(tool)).unwrap();
    }
}

fn task(description: &str, prompt: &str) -> (&'static str, Value) {
    (
        "task",
        json!({"description": description, "prompt": prompt}),
    )
}

/// The names in a request's tools array, in any format.
fn tool_names(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for t in body["tools"].as_array().into_iter().flatten() {
        if let Some(list) = t["functionDeclarations"].as_array() {
            out.extend(list.iter().map(|d| d["name"].as_str().unwrap().to_string()));
        } else {
            let name = t["name"].as_str().or(t["function"]["name"].as_str());
            out.push(name.unwrap().to_string());
        }
    }
    out.sort();
    out
}

/// The one envelope the caller's request `r` carried back for its task
/// call(s), in order.
fn task_results(api: Api, server: &ModelServer, r: usize) -> Vec<Value> {
    envelopes(api, &server.main_requests()[r].body)
        .into_iter()
        .map(|(_, e)| e)
        .collect()
}

#[test]
fn a_subagent_works_in_a_fresh_context_and_only_its_answer_comes_back() {
    for api in APIS {
        let home = tempfile::tempdir().unwrap();
        install(home.path());
        let big = home.path().join("big.txt");
        std::fs::write(&big, "SECRET-CONTENT ".repeat(2000)).unwrap();
        std::fs::write(home.path().join("AGENTS.md"), "Project rule: be brief.").unwrap();
        let server = ModelServer::start(
            api,
            vec![
                calls(&[task("read big", "SUB-A read big.txt and say what it holds")]),
                text("The subagent says it repeats."),
            ],
        );
        server.route(
            "SUB-A",
            vec![
                calls(&[("file_read", json!({"path": big.to_str().unwrap()}))]),
                text("It holds one phrase, repeated."),
            ],
        );
        let out = against(&server, home.path())
            .args(["-p", "what is in big.txt?"])
            .output();
        no_problems(&server, &out);
        assert_eq!(out.code, 0, "{api:?} {out:?}");
        assert_eq!(out.stdout, "The subagent says it repeats.\n", "{api:?}");

        // Its context: the guidance, the environment and AGENTS.md, then
        // what a subagent is; its one message is the prompt; no task tool.
        let sub = server.requests_of("SUB-A");
        assert_eq!(sub.len(), 2, "{api:?}");
        let system = system_text(api, &sub[0].body);
        assert!(
            system.contains("Project rule: be brief."),
            "{api:?} {system}"
        );
        assert!(system.contains("You are a subagent"), "{api:?} {system}");
        assert!(system.contains("Working directory"), "{api:?} {system}");
        let parent = server.main_requests();
        assert_eq!(
            system_text(api, &parent[0].body),
            system_text(api, &parent[1].body)
        );
        assert!(!system_text(api, &parent[0].body).contains("You are a subagent"));
        assert_eq!(
            super::user_texts(api, &sub[0].body),
            ["SUB-A read big.txt and say what it holds"],
            "{api:?}"
        );
        assert!(!sub[0].body.to_string().contains("what is in big.txt"));
        let names = tool_names(&sub[0].body);
        assert!(names.contains(&"file_read".to_string()), "{names:?}");
        assert!(!names.contains(&"task".to_string()), "{names:?}");
        assert!(tool_names(&parent[0].body).contains(&"task".to_string()));
        // A subagent's requests keep their prefix byte for byte.
        let tools = |r: &Value| r["tools"].to_string();
        assert_eq!(tools(&sub[0].body), tools(&sub[1].body));

        // The caller gets the answer, usage, calls and duration only.
        let results = task_results(api, &server, 1);
        assert_eq!(results.len(), 1, "{api:?}");
        let result = &results[0]["result"];
        assert_eq!(
            result["answer"], "It holds one phrase, repeated.",
            "{result}"
        );
        assert_eq!(result["agent"], "general");
        assert_eq!(result["tool_calls"], 1);
        assert_eq!(result["usage"]["input"], 22, "{result}");
        assert!(result["duration_ms"].is_u64(), "{result}");
        assert!(!parent[1].body.to_string().contains("SECRET-CONTENT"));

        // Its conversation is saved beside the caller's session.
        let sessions = home.path().join("data/ikigai/sessions");
        let parent_log = std::fs::read_dir(&sessions)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .unwrap();
        let beside = parent_log.with_extension("").join("subagents");
        let logs: Vec<_> = std::fs::read_dir(&beside).unwrap().collect();
        assert_eq!(logs.len(), 1, "{api:?}");
        let log = std::fs::read_to_string(logs[0].as_ref().unwrap().path()).unwrap();
        assert!(log.contains("SUB-A read big.txt"), "{log}");
        assert!(log.contains("It holds one phrase"), "{log}");
        let parent_text = std::fs::read_to_string(&parent_log).unwrap();
        assert!(!parent_text.contains("SECRET-CONTENT"));
    }
}

/// An agent file in the person's folder.
fn agent_file(home: &Path, name: &str, text: &str) {
    let dir = home.join("config/ikigai/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.md")), text).unwrap();
}

#[test]
fn an_agent_file_narrows_the_tools_and_adds_its_instructions() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    agent_file(
        home.path(),
        "reader",
        "---\nname: reader\ndescription: Reads files\ntools: Read, Grep\nmodel: inherit\n---\nREADER-RULES: quote lines.\n",
    );
    agent_file(
        home.path(),
        "broken",
        "---\nname: broken\ndescription: x\ntools: Read, Teleport\n---\nx\n",
    );
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[(
                "task",
                json!({"description": "read", "prompt": "SUB-R look", "agent": "reader"}),
            )]),
            text("Done."),
        ],
    );
    server.route(
        "SUB-R",
        vec![
            // Not one of its tools, nor is task.
            calls(&[
                ("bash", json!({"command": "echo hi"})),
                task("nested", "SUB-N never"),
            ]),
            text("Read it."),
        ],
    );
    let out = against(&server, home.path()).args(["-p", "go"]).output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    let sub = server.requests_of("SUB-R");
    assert_eq!(tool_names(&sub[0].body), ["file_read", "grep"]);
    let system = system_text(Api::OpenAi, &sub[0].body);
    assert!(system.ends_with("READER-RULES: quote lines."), "{system}");
    let refused = envelopes(Api::OpenAi, &sub[1].body);
    assert_eq!(refused[0].1["error_code"], "TOOL_NOT_FOUND", "{refused:?}");
    assert!(
        refused[0].1["error"]
            .as_str()
            .unwrap()
            .contains("not one this agent may use; its tools are: file_read, grep"),
        "{refused:?}"
    );
    assert_eq!(refused[1].1["error_code"], "INVALID_ARG", "{refused:?}");
    assert!(
        refused[1].1["error"]
            .as_str()
            .unwrap()
            .contains("do not nest"),
        "{refused:?}"
    );
    assert!(server.requests_of("SUB-N").is_empty());
    let result = &task_results(Api::OpenAi, &server, 1)[0];
    assert_eq!(result["result"]["answer"], "Read it.", "{result}");
    assert_eq!(result["result"]["agent"], "reader");

    // /agents lists them, the broken one with why it cannot run.
    let out = against(&server, home.path()).stdin("/agents\n").output();
    assert!(out.stdout.contains("reader · Reads files"), "{out:?}");
    assert!(out.stdout.contains("tools: file_read, grep"), "{out:?}");
    assert!(out.stdout.contains("general · "), "{out:?}");
    assert!(
        out.stdout
            .contains("cannot run: its 'tools' list names 'Teleport'"),
        "{out:?}"
    );
}

#[test]
fn each_fault_is_an_error_result_and_the_caller_goes_on() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    agent_file(
        home.path(),
        "broken",
        "---\nname: broken\ndescription: x\ntools: Read, Teleport\n---\nx\n",
    );
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[
                (
                    "task",
                    json!({"description": "a", "prompt": "x", "agent": "nobody"}),
                ),
                (
                    "task",
                    json!({"description": "b", "prompt": "x", "agent": "broken"}),
                ),
                task("failing", "SUB-FAIL go"),
                task("looping", "SUB-LOOP go"),
                task("cut", "SUB-CUT go"),
                ("task", json!({"description": "c"})),
            ]),
            text("Went on."),
        ],
    );
    server.route(
        "SUB-FAIL",
        vec![Reply::Status(
            400,
            r#"{"error": {"message": "model is overloaded"}}"#.into(),
        )],
    );
    server.route(
        "SUB-LOOP",
        vec![
            calls(&[("bash", json!({"command": "true"}))]),
            calls(&[("bash", json!({"command": "true"}))]),
        ],
    );
    server.route(
        "SUB-CUT",
        vec![Reply::Cut("A long answer that".into(), vec![])],
    );
    let out = against(&server, home.path())
        .args(["--max-tool-rounds", "1", "-p", "go"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "Went on.\n");
    let results = task_results(Api::OpenAi, &server, 1);
    let said = |i: usize| {
        let e = &results[i];
        assert_eq!(e["tool_success"], false, "{e}");
        (
            e["error_code"].as_str().unwrap().to_string(),
            e["error"].as_str().unwrap().to_string(),
        )
    };
    let (code, why) = said(0);
    assert_eq!(code, "INVALID_ARG");
    assert!(
        why.contains("no agent named 'nobody'; the agents are: general, broken"),
        "{why}"
    );
    let (code, why) = said(1);
    assert_eq!(code, "INVALID_ARG");
    assert!(
        why.contains("the agent 'broken' cannot run: its 'tools' list names 'Teleport'"),
        "{why}"
    );
    let (code, why) = said(2);
    assert_eq!(code, "SUBAGENT_FAILED");
    assert!(
        why.contains("the subagent 'failing' failed") && why.contains("model is overloaded"),
        "{why}"
    );
    let (code, why) = said(3);
    assert_eq!(code, "TOOL_ROUND_LIMIT");
    assert!(why.contains("reached its limit of 1 tool rounds"), "{why}");
    let (code, why) = said(4);
    assert_eq!(code, "SUBAGENT_FAILED");
    assert!(why.contains("reached the output limit"), "{why}");
    let (code, why) = said(5);
    assert_eq!(code, "INVALID_ARG");
    assert!(why.contains("prompt"), "{why}");
}

#[test]
fn subagents_of_one_reply_run_at_once_within_max_subagents() {
    for (max, together) in [(None, 4), (Some(2), 2)] {
        let home = tempfile::tempdir().unwrap();
        if let Some(max) = max {
            std::fs::create_dir_all(home.path().join("config/ikigai")).unwrap();
            std::fs::write(
                home.path().join("config/ikigai/config.toml"),
                format!("max_subagents = {max}\n"),
            )
            .unwrap();
        }
        let server = ModelServer::start(
            Api::OpenAi,
            vec![
                calls(&[
                    task("one", "SUB-1 wait"),
                    task("two", "SUB-2 wait"),
                    task("three", "SUB-3 wait"),
                    task("four", "SUB-4 wait"),
                ]),
                text("All four."),
            ],
        );
        let slow = Duration::from_millis(800);
        for n in 1..=4 {
            server.route(
                &format!("SUB-{n}"),
                vec![Reply::After(slow, Box::new(text(&format!("answer {n}"))))],
            );
        }
        let out = against(&server, home.path()).args(["-p", "go"]).output();
        no_problems(&server, &out);
        assert_eq!(out.code, 0, "{out:?}");
        let mut arrivals: Vec<_> = (1..=4)
            .map(|n| server.requests_of(&format!("SUB-{n}"))[0].at)
            .collect();
        arrivals.sort();
        // Those let in together arrive before the first of them has its
        // answer; the next waits for one to end.
        let first = arrivals[0];
        let at_once = arrivals.iter().filter(|t| **t - first < slow).count();
        assert_eq!(at_once, together, "max {max:?}");
        let answers: Vec<Value> = task_results(Api::OpenAi, &server, 1)
            .iter()
            .map(|e| e["result"]["answer"].clone())
            .collect();
        assert_eq!(answers, ["answer 1", "answer 2", "answer 3", "answer 4"]);
    }
}

#[test]
fn stream_json_tags_a_subagents_events_and_the_result_counts_its_spend() {
    let home = tempfile::tempdir().unwrap();
    install(home.path());
    let server = ModelServer::start(
        Api::OpenAi,
        vec![calls(&[task("look", "SUB-S look")]), text("Done.")],
    );
    server.route(
        "SUB-S",
        vec![
            calls(&[("bash", json!({"command": "echo hi"}))]),
            text("Looked."),
        ],
    );
    let out = against(&server, home.path())
        .args(["--output-format", "stream-json", "-p", "go"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    let events = events(&out);
    let task_id = events
        .iter()
        .find(|e| e["type"] == "tool.started" && e["name"] == "task")
        .map(|e| e["call_id"].clone())
        .expect("the task call");
    let inside: Vec<&str> = events
        .iter()
        .filter(|e| e["parent_call_id"] == task_id)
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        inside,
        [
            "subagent.started",
            "tool.started",
            "tool.finished",
            "assistant.message",
            "subagent.finished"
        ]
    );
    let caller: Vec<&Value> = events
        .iter()
        .filter(|e| e.get("parent_call_id").is_none())
        .collect();
    assert!(caller
        .iter()
        .any(|e| e["type"] == "assistant.message" && e["text"] == "Done."));
    let result = events.last().unwrap();
    // Two requests of the caller and two of the subagent, 11 tokens each.
    assert_eq!(result["usage"]["input"], 44, "{result}");
    assert_eq!(result["tool_calls"], 1, "{result}");
}

#[test]
fn ctrl_c_stops_every_running_subagent_and_the_next_message_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let server = ModelServer::start(
        Api::OpenAi,
        vec![
            calls(&[task("one", "SUB-H1 wait"), task("two", "SUB-H2 wait")]),
            text("Second answer."),
        ],
    );
    server.route("SUB-H1", vec![Reply::Hang("Thinking".into())]);
    server.route("SUB-H2", vec![Reply::Hang("Thinking".into())]);
    let out = against(&server, home.path())
        .stdin("first\nsecond\n")
        .output_interrupting(|| {
            !server.requests_of("SUB-H1").is_empty() && !server.requests_of("SUB-H2").is_empty()
        });
    no_problems(&server, &out);
    assert!(out.stdout.ends_with("Second answer.\n"), "{out:?}");
    let results = task_results(Api::OpenAi, &server, 1);
    assert_eq!(results.len(), 2, "{results:?}");
    for e in &results {
        assert_eq!(e["error_code"], "CANCELLED", "{e}");
    }
}

#[test]
fn a_projects_agents_run_only_when_the_project_is_trusted() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(project.join(".claude/agents")).unwrap();
    std::fs::write(
        project.join(".claude/agents/shipped.md"),
        "---\nname: shipped\ndescription: Came with the repository\n---\nSHIPPED-RULES\n",
    )
    .unwrap();
    let script = || {
        vec![
            calls(&[(
                "task",
                json!({"description": "d", "prompt": "SUB-P go", "agent": "shipped"}),
            )]),
            text("Done."),
        ]
    };
    let server = ModelServer::start(Api::OpenAi, script());
    let out = against(&server, home.path())
        .dir(&project)
        .args(["-p", "go"])
        .output();
    no_problems(&server, &out);
    let refused = &task_results(Api::OpenAi, &server, 1)[0];
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("no agent named 'shipped'"),
        "{refused}"
    );

    let server = ModelServer::start(Api::OpenAi, script());
    server.route("SUB-P", vec![text("Shipped agent here.")]);
    let out = against(&server, home.path())
        .dir(&project)
        .args(["--trust", "-p", "go"])
        .output();
    no_problems(&server, &out);
    assert_eq!(out.code, 0, "{out:?}");
    let system = system_text(Api::OpenAi, &server.requests_of("SUB-P")[0].body);
    assert!(system.ends_with("SHIPPED-RULES"), "{system}");
    let result = &task_results(Api::OpenAi, &server, 1)[0];
    assert_eq!(
        result["result"]["answer"], "Shipped agent here.",
        "{result}"
    );
}
