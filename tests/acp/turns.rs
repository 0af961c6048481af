//! Turns as an editor sees them: every update kind, permission answered
//! each way, the stop reasons, cancellation, and a session loaded again.

use serde_json::json;

use super::{openai, say, user_texts, Home};
use crate::common::model_server::{calls, text, Reply};

#[test]
fn a_turn_streams_every_update_kind_and_asks_before_changing_anything() {
    let home = Home::new();
    let server = openai(vec![
        calls(&[(
            "update_plan",
            json!({"plan": [{"step": "Write the greeting", "status": "in_progress"}]}),
        )]),
        calls(&[(
            "file_write",
            json!({"file_path": "hello.txt", "content": "hi\n"}),
        )]),
        calls(&[("bash", json!({"command": "rm -rf notes"}))]),
        text("Wrote hello.txt; I did not remove notes."),
    ]);
    let scenario = json!({
        "permissions": ["allow_once", "reject_once"],
        "steps": [{"op": "initialize"}, {"op": "new"}, {"op": "prompt", "prompt": say("greet")}],
    });
    let Some(events) = home.drive(&server, &[], scenario) else {
        return;
    };
    let work = home.work();
    let init = &events.answers("initialize")[0]["result"];
    assert_eq!(init["protocolVersion"], 1, "{events:?}");
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(events.stops(), ["end_turn"], "{events:?}");
    assert_eq!(
        std::fs::read_to_string(work.join("hello.txt")).unwrap(),
        "hi\n"
    );

    let commands = events.updates("available_commands_update");
    let names: Vec<&str> = commands[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"compact") && names.contains(&"undo"),
        "{names:?}"
    );

    let plan = events.updates("plan");
    assert_eq!(
        plan[0]["entries"],
        json!([{"content": "Write the greeting", "priority": "medium", "status": "in_progress"}])
    );

    let calls = events.updates("tool_call");
    assert_eq!(calls.len(), 3, "{events:?}");
    let write = calls[1];
    assert_eq!(write["kind"], "edit");
    assert_eq!(write["title"], "Write hello.txt");
    assert_eq!(write["status"], "pending");
    assert_eq!(write["rawInput"]["content"], "hi\n");
    assert_eq!(
        write["locations"],
        json!([{"path": work.join("hello.txt")}])
    );
    let id = write["toolCallId"].as_str().unwrap();
    let updates = events.call(id);
    let statuses: Vec<&str> = updates
        .iter()
        .filter_map(|u| u["status"].as_str())
        .collect();
    assert_eq!(statuses, ["pending", "in_progress", "completed"]);
    let done = updates.last().unwrap();
    let diff = done["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "diff")
        .unwrap_or_else(|| panic!("no diff: {done}"));
    assert_eq!(diff["path"], json!(work.join("hello.txt")));
    assert_eq!(diff["oldText"], json!(null));
    assert_eq!(diff["newText"], "hi\n");

    // Both calls that change something were asked about, with the
    // protocol's three kinds of option, about the call the client knows.
    let asked = events.permissions();
    assert_eq!(asked.len(), 2, "{events:?}");
    let kinds: Vec<&str> = asked[0]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    assert_eq!(asked[0]["params"]["toolCall"]["toolCallId"], id);
    let bash = calls[2];
    assert_eq!(bash["kind"], "execute");
    assert_eq!(bash["title"], "rm -rf notes");
    let refused = events.call(bash["toolCallId"].as_str().unwrap());
    let last = refused.last().unwrap();
    assert_eq!(last["status"], "failed");
    assert!(
        last["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .starts_with("PERMISSION_DENIED"),
        "{last}"
    );
    // update_plan is the model thinking, and needs nobody's yes.
    assert_eq!(calls[0]["kind"], "think");

    assert_eq!(events.said(), "Wrote hello.txt; I did not remove notes.");
    let usage = events.updates("usage_update");
    assert_eq!(usage.len(), 4, "one a request: {events:?}");
    assert!(usage[0]["size"].as_u64().unwrap() > 0);
    assert!(usage[0]["used"].as_u64().unwrap() > 0);
    assert_eq!(events.exit()["code"], 0);
}

#[test]
fn allow_always_allows_the_like_for_the_rest_of_the_session() {
    let home = Home::new();
    let server = openai(vec![
        calls(&[("bash", json!({"command": "echo first > a.txt"}))]),
        calls(&[("bash", json!({"command": "echo second > b.txt"}))]),
        text("Both written."),
    ]);
    let scenario = json!({
        "permissions": ["allow_always"],
        "steps": [{"op": "initialize"}, {"op": "new"}, {"op": "prompt", "prompt": say("write")}],
    });
    let Some(events) = home.drive(&server, &[], scenario) else {
        return;
    };
    assert_eq!(events.stops(), ["end_turn"]);
    // A command that writes a file is never allowed by a rule (decision
    // 28): the second is asked again, and answered as the script has it.
    assert_eq!(events.permissions().len(), 2, "{events:?}");
    let always = events.permissions()[0]["params"]["options"][1]["name"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(always.contains("bash(echo first *)"), "{always}");
    let server = openai(vec![
        calls(&[("bash", json!({"command": "mkdir -p one"}))]),
        calls(&[("bash", json!({"command": "mkdir -p two"}))]),
        text("Made."),
    ]);
    let scenario = json!({
        "permissions": ["allow_always"],
        "steps": [{"op": "initialize"}, {"op": "new"}, {"op": "prompt", "prompt": say("make")}],
    });
    let events = home.drive(&server, &[], scenario).unwrap();
    assert_eq!(events.stops(), ["end_turn"]);
    assert_eq!(events.permissions().len(), 1, "{events:?}");
    assert!(home.work().join("one").exists() && home.work().join("two").exists());
}

#[test]
fn links_and_embedded_resources_reach_the_model_as_context() {
    let home = Home::new();
    let server = openai(vec![text("Seen.")]);
    let prompt = json!([
        {"type": "text", "text": "compare "},
        {"type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs"},
        {"type": "resource", "resource": {"uri": "file:///w/b.rs", "text": "fn b() {}", "mimeType": "text/x-rust"}},
    ]);
    let scenario =
        json!({"steps": [{"op": "initialize"}, {"op": "new"}, {"op": "prompt", "prompt": prompt}]});
    let Some(events) = home.drive(&server, &[], scenario) else {
        return;
    };
    assert_eq!(events.stops(), ["end_turn"]);
    let sent = user_texts(&server).pop().unwrap();
    assert!(sent.contains("compare [@a.rs](file:///w/a.rs)"), "{sent}");
    assert!(
        sent.contains("<context ref=\"file:///w/b.rs\">\nfn b() {}\n</context>"),
        "{sent}"
    );
}

#[test]
fn each_end_has_its_stop_reason() {
    let home = Home::new();
    let server = openai(vec![
        Reply::Cut("Half an ans".into(), vec![]),
        Reply::Refusal("I cannot help with that.".into()),
        calls(&[("file_read", json!({"file_path": "x"}))]),
        calls(&[("file_read", json!({"file_path": "y"}))]),
        Reply::Status(400, r#"{"error": {"message": "bad request"}}"#.into()),
        text("fine"),
    ]);
    let scenario = json!({"steps": [
        {"op": "initialize"}, {"op": "new"},
        {"op": "prompt", "prompt": say("one")},
        {"op": "prompt", "prompt": say("two")},
        {"op": "prompt", "prompt": say("three")},
        {"op": "prompt", "prompt": say("four")},
        {"op": "prompt", "prompt": say("five")},
    ]});
    let Some(events) = home.drive(&server, &["--max-tool-rounds", "1"], scenario) else {
        return;
    };
    assert_eq!(
        events.stops(),
        [
            "max_tokens",
            "refusal",
            "max_turn_requests",
            "error",
            "end_turn"
        ],
        "{events:?}"
    );
    let failed = events.answers("prompt")[3];
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("bad request"),
        "{failed}"
    );
    assert!(events.said().contains("refused"), "{}", events.said());
}

#[test]
fn cancel_stops_the_running_tool_and_the_turn_ends_cancelled() {
    let home = Home::new();
    let server = openai(vec![
        calls(&[("bash", json!({"command": "echo $$ > pid; sleep 30"}))]),
        Reply::Hang("Thinking about".into()),
        text("still here"),
    ]);
    let scenario = json!({"steps": [
        {"op": "initialize"}, {"op": "new"},
        {"op": "prompt", "prompt": say("wait"), "cancelAfter": "tool_call_update", "cancelDelayMs": 300},
        {"op": "prompt", "prompt": say("stream"), "cancelAfter": "agent_message_chunk"},
        // A cancel for a turn that has ended changes nothing.
        {"op": "cancel"},
        {"op": "prompt", "prompt": say("again")},
    ]});
    let started = std::time::Instant::now();
    let Some(events) = home.drive(&server, &["--approval", "auto"], scenario) else {
        return;
    };
    assert_eq!(
        events.stops(),
        ["cancelled", "cancelled", "end_turn"],
        "{events:?}"
    );
    assert!(
        started.elapsed().as_secs() < 20,
        "the sleep was not stopped"
    );
    let calls = events.updates("tool_call");
    let updates = events.call(calls[0]["toolCallId"].as_str().unwrap());
    assert_eq!(updates.last().unwrap()["status"], "failed", "{updates:?}");
    let pid: i32 = std::fs::read_to_string(home.work().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the cancelled command still runs"
    );
    assert!(events.said().ends_with("still here"), "{}", events.said());
}

#[test]
fn a_question_nobody_answers_waits_and_cancel_still_ends_the_turn() {
    let home = Home::new();
    let server = openai(vec![
        calls(&[(
            "file_write",
            json!({"file_path": "never.txt", "content": "x"}),
        )]),
        text("unused"),
        text("answered"),
    ]);
    let scenario = json!({
        "permissions": ["never"],
        "steps": [
            {"op": "initialize"}, {"op": "new"},
            {"op": "prompt", "prompt": say("write"), "cancelAfter": "permission", "cancelDelayMs": 500},
            {"op": "prompt", "prompt": say("go on")},
        ],
    });
    let Some(events) = home.drive(&server, &[], scenario) else {
        return;
    };
    assert_eq!(events.stops(), ["cancelled", "end_turn"], "{events:?}");
    assert!(!home.work().join("never.txt").exists());
    assert_eq!(events.permissions().len(), 1);
}

#[test]
fn a_loaded_session_replays_its_history_and_goes_on() {
    let home = Home::new();
    let server = openai(vec![
        calls(&[("file_read", json!({"file_path": "notes.txt"}))]),
        text("The note says milk."),
        text("Milk, still."),
    ]);
    std::fs::write(home.work().join("notes.txt"), "milk\n").unwrap();
    let scenario = json!({"steps": [{"op": "initialize"}, {"op": "new"}, {"op": "prompt", "prompt": say("read the note")}]});
    let Some(first) = home.drive(&server, &[], scenario) else {
        return;
    };
    assert_eq!(first.stops(), ["end_turn"]);
    let id = first.session();
    let scenario = json!({"steps": [
        {"op": "initialize"},
        {"op": "load", "sessionId": id},
        {"op": "prompt", "prompt": say("and now?")},
    ]});
    let second = home.drive(&server, &[], scenario).unwrap();
    assert_eq!(second.answers("load")[0]["event"], "result", "{second:?}");
    let user: Vec<&str> = second
        .updates("user_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(user, ["read the note"]);
    let call = second.updates("tool_call");
    assert_eq!(call[0]["kind"], "read");
    let done = second.call(call[0]["toolCallId"].as_str().unwrap());
    assert_eq!(done.last().unwrap()["status"], "completed");
    assert!(
        second.said().starts_with("The note says milk."),
        "{}",
        second.said()
    );
    assert_eq!(second.stops(), ["end_turn"]);
    assert_eq!(user_texts(&server), ["read the note", "and now?"]);
    // Loading a session that does not exist is an error, not a crash.
    let scenario = json!({"steps": [{"op": "initialize"}, {"op": "load", "sessionId": "20990101-000000-0000"}]});
    let missing = home.drive(&server, &[], scenario).unwrap();
    assert_eq!(missing.answers("load")[0]["event"], "error");
    assert_eq!(missing.exit()["code"], 0);
}

#[test]
fn closing_stdin_mid_turn_ends_the_tools_and_the_agent() {
    let home = Home::new();
    let server = openai(vec![calls(&[(
        "bash",
        json!({"command": "echo $$ > pid; sleep 30"}),
    )])]);
    let scenario = json!({"steps": [
        {"op": "initialize"}, {"op": "new"},
        {"op": "prompt", "prompt": say("wait"), "closeAfter": "tool_call_update"},
    ]});
    let Some(events) = home.drive(&server, &["--approval", "auto"], scenario) else {
        return;
    };
    let exit = events.exit();
    assert_eq!(exit["code"], 0, "{events:?}");
    assert!(exit["afterMs"].as_u64().unwrap() < 10_000, "{exit}");
    // The command may not have written its pid before it was stopped.
    if let Ok(pid) = std::fs::read_to_string(home.work().join("pid")) {
        let pid = pid.trim();
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "the command outlived the agent"
        );
    }
}

#[test]
fn the_clients_mcp_servers_join_the_configured_ones() {
    let home = Home::new();
    let notes = home.work().join("notes.txt");
    std::fs::write(&notes, "milk\n").unwrap();
    let server = openai(vec![
        calls(&[("mcp__editor__file_read", json!({"file_path": notes}))]),
        text("It says milk."),
    ]);
    let servers = json!([{
        "name": "editor",
        "command": crate::common::bin(),
        "args": ["mcp"],
        "env": [],
    }]);
    let scenario = json!({"steps": [
        {"op": "initialize"},
        {"op": "new", "mcpServers": servers},
        {"op": "prompt", "prompt": say("read it through the editor's server")},
    ]});
    let Some(events) = home.drive(&server, &[], scenario) else {
        return;
    };
    assert_eq!(events.stops(), ["end_turn"], "{events:?}");
    let tools = server.requests()[0].body["tools"].to_string();
    assert!(tools.contains("mcp__editor__file_read"), "{tools}");
    let call = events.updates("tool_call");
    assert_eq!(call[0]["kind"], "other");
    let done = events.call(call[0]["toolCallId"].as_str().unwrap());
    let last = done.last().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    assert!(last["content"].to_string().contains("milk"), "{last}");
}

#[test]
fn slash_commands_answer_without_the_model() {
    let home = Home::new();
    let server = openai(vec![text("Hello.")]);
    let scenario = json!({"steps": [
        {"op": "initialize"}, {"op": "new"},
        {"op": "prompt", "prompt": say("hi")},
        {"op": "prompt", "prompt": say("/cost")},
        {"op": "prompt", "prompt": say("/context")},
        {"op": "prompt", "prompt": say("/undo")},
    ]});
    let Some(events) = home.drive(&server, &[], scenario) else {
        return;
    };
    assert_eq!(events.stops(), ["end_turn"; 4], "{events:?}");
    assert_eq!(server.requests().len(), 1);
    let said = events.said();
    assert!(said.contains("Input 11 tokens"), "{said}");
    assert!(said.contains("Nothing to undo."), "{said}");
    assert!(said.contains("tokens"), "{said}");
}
