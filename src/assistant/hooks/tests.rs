use serde_json::json;

use super::run::{End, Ran};
use super::*;
use crate::host::child::Capture;

fn hook(event: &str, matcher: Option<&str>, line: usize) -> Hook {
    Hook {
        event: event.into(),
        matcher: matcher.map(str::to_string),
        command: "true".into(),
        timeout: 60,
        fail_block: false,
        sequential: false,
        line,
    }
}

fn hooks(list: Vec<Hook>) -> Hooks {
    Hooks::new(
        vec![(list, "/c/config.toml".into())],
        "/w".into(),
        "/w".into(),
    )
}

fn pre(tool: &str) -> Event<'_> {
    static INPUT: Value = Value::Null;
    Event::PreToolUse {
        tool,
        input: &INPUT,
        call_id: "c1",
    }
}

/// The lines of the hooks chosen for `event`.
fn chosen(h: &Hooks, event: &Event) -> Vec<usize> {
    h.chosen(event).iter().map(|c| c.hook.line).collect()
}

#[test]
fn matchers_take_our_names_and_claude_codes_as_claude_code_reads_them() {
    let h = hooks(vec![
        hook("PreToolUse", Some("Edit"), 1),
        hook("PreToolUse", Some("bash"), 2),
        hook("PreToolUse", Some("*"), 3),
        hook("PreToolUse", Some(""), 4),
        hook("PreToolUse", None, 5),
        hook("PreToolUse", Some("mcp__github__.*"), 6),
        hook("PreToolUse", Some("Write|Read"), 7),
        hook("PreToolUse", Some("WebSearch"), 8),
        hook("PostToolUse", None, 9),
        hook("PreToolUse", Some("mcp__*"), 10),
    ]);
    assert_eq!(chosen(&h, &pre("file_edit")), [1, 3, 4, 5]);
    assert_eq!(chosen(&h, &pre("apply_patch")), [1, 3, 4, 5]);
    assert_eq!(chosen(&h, &pre("bash")), [2, 3, 4, 5]);
    assert_eq!(chosen(&h, &pre("file_read")), [3, 4, 5, 7]);
    assert_eq!(chosen(&h, &pre("web_search_google")), [3, 4, 5, 8]);
    assert_eq!(
        chosen(&h, &pre("mcp__github__create_issue")),
        [3, 4, 5, 6, 10]
    );
    // Names alone match whole names: "bash" is not "bash_extra", "Edit"
    // not "EditNotebook"; an expression is found anywhere, as Claude Code
    // reads one ("mcp__*": every MCP tool).
    assert_eq!(chosen(&h, &pre("bash_extra")), [3, 4, 5]);
    assert_eq!(chosen(&h, &pre("EditNotebook")), [3, 4, 5]);
    let s = hooks(vec![
        hook("SessionStart", Some("startup|clear"), 1),
        hook("PreCompact", Some("auto"), 2),
    ]);
    assert_eq!(chosen(&s, &Event::SessionStart { source: "clear" }), [1]);
    assert!(chosen(&s, &Event::SessionStart { source: "resume" }).is_empty());
    assert_eq!(chosen(&s, &Event::PreCompact { trigger: "auto" }), [2]);
    assert!(chosen(&s, &Event::PreCompact { trigger: "manual" }).is_empty());
}

#[test]
fn the_stdin_names_the_tool_as_claude_code_does_and_as_we_do() {
    let input = json!({"command": "ls"});
    let mut map = Map::new();
    Event::PreToolUse {
        tool: "bash",
        input: &input,
        call_id: "c7",
    }
    .fields(&mut map);
    assert_eq!(
        Value::Object(map),
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "c7", "ikigai_tool_name": "bash"})
    );
    let mut map = Map::new();
    pre("mcp__x__y").fields(&mut map);
    assert_eq!(map["tool_name"], "mcp__x__y");
    assert_eq!(claude_name("web_fetch"), Some("WebFetch"));
    assert_eq!(claude_name("update_plan"), None);
}

fn ran(end: End, out: &str, err: &str) -> Ran {
    let mut o = Capture::new(1 << 16);
    o.push(out.as_bytes());
    let mut e = Capture::new(1 << 16);
    e.push(err.as_bytes());
    Ran {
        end,
        out: o,
        err: e,
    }
}

fn decision(d: &str, why: &str) -> String {
    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": d, "permissionDecisionReason": why}}).to_string()
}

#[test]
fn deny_beats_ask_beats_allow_whatever_the_order() {
    let h = hook("PreToolUse", None, 1);
    let orders = [
        ["allow", "ask", "deny"],
        ["deny", "allow", "ask"],
        ["ask", "deny", "allow"],
    ];
    for order in orders {
        let mut fired = Fired::default();
        for d in order {
            fired.add(
                &pre("bash"),
                &h,
                "here",
                ran(End::Exit(0), &decision(d, d), ""),
            );
        }
        assert_eq!(
            fired.permission,
            Some(Permission::Deny("deny".into())),
            "{order:?}"
        );
    }
    let mut fired = Fired::default();
    for d in ["allow", "ask"] {
        fired.add(
            &pre("bash"),
            &h,
            "here",
            ran(End::Exit(0), &decision(d, d), ""),
        );
    }
    assert_eq!(fired.permission, Some(Permission::Ask("ask".into())));
}

#[test]
fn two_different_rewrites_conflict_and_the_same_one_twice_does_not() {
    let h = hook("PreToolUse", None, 1);
    let rewrite = |c: &str| {
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": c}}})
            .to_string()
    };
    let mut fired = Fired::default();
    fired.add(
        &pre("bash"),
        &h,
        "a, line 1",
        ran(End::Exit(0), &rewrite("ls"), ""),
    );
    fired.add(
        &pre("bash"),
        &h,
        "a, line 5",
        ran(End::Exit(0), &rewrite("ls"), ""),
    );
    assert_eq!(fired.updated_input, Some(json!({"command": "ls"})));
    assert!(fired.conflict.is_none());
    fired.add(
        &pre("bash"),
        &h,
        "b, line 9",
        ran(End::Exit(0), &rewrite("rm"), ""),
    );
    let conflict = fired.conflict.unwrap();
    assert!(
        conflict.contains("a, line 1") && conflict.contains("b, line 9"),
        "{conflict}"
    );
}

#[test]
fn exit_2_blocks_where_the_event_can_and_is_shown_where_it_cannot() {
    let h = hook("SessionStart", None, 1);
    let mut fired = Fired::default();
    let start = Event::SessionStart { source: "startup" };
    assert!(!fired.add(&start, &h, "here", ran(End::Exit(2), "", "no")));
    assert!(fired.block.is_none());
    assert_eq!(fired.notices.len(), 1);
    let mut fired = Fired::default();
    let stop = Event::Stop { active: false };
    assert!(fired.add(&stop, &h, "here", ran(End::Exit(2), "", "more")));
    assert_eq!(fired.block.as_deref(), Some("more"));
    // A Stop hook's JSON block works as exit 2 does.
    let mut fired = Fired::default();
    let answer = json!({"decision": "block", "reason": "tests fail"}).to_string();
    fired.add(&stop, &h, "here", ran(End::Exit(0), &answer, ""));
    assert_eq!(fired.block.as_deref(), Some("tests fail"));
}

#[test]
fn json_of_the_wrong_shape_is_a_failure_that_fail_block_turns_into_a_block() {
    let mut h = hook("PreToolUse", None, 1);
    for bad in [
        r#"{"decision": "maybe"}"#,
        r#"{"continue": "no"}"#,
        r#"{"hookSpecificOutput": {"permissionDecision": "perhaps"}}"#,
        r#"{"hookSpecificOutput": {"updatedInput": "rm -rf /"}}"#,
        "{truncated",
    ] {
        let mut fired = Fired::default();
        fired.add(&pre("bash"), &h, "here", ran(End::Exit(0), bad, ""));
        assert!(fired.block.is_none() && fired.notices.len() == 1, "{bad}");
    }
    h.fail_block = true;
    let mut fired = Fired::default();
    fired.add(
        &pre("bash"),
        &h,
        "here",
        ran(End::Exit(0), "{truncated", ""),
    );
    assert!(fired.block.unwrap().contains("not valid JSON"));
    let mut fired = Fired::default();
    fired.add(&pre("bash"), &h, "here", ran(End::TimedOut(5), "", ""));
    assert!(fired.block.unwrap().contains("timeout of 5 s"));
}

#[test]
fn context_reaches_the_model_cut_at_ten_thousand_characters() {
    let h = hook("UserPromptSubmit", None, 1);
    let event = Event::UserPromptSubmit { prompt: "p" };
    let mut fired = Fired::default();
    fired.add(&event, &h, "here", ran(End::Exit(0), "plain words\n", ""));
    assert_eq!(fired.context.as_deref(), Some("plain words"));
    let long = "é".repeat(20_000);
    let answer = json!({"hookSpecificOutput": {"additionalContext": long}}).to_string();
    fired.add(&event, &h, "here", ran(End::Exit(0), &answer, ""));
    assert_eq!(fired.context.unwrap().chars().count(), answer::MODEL_TEXT);
    // Plain stdout of a tool hook is not context.
    let mut fired = Fired::default();
    fired.add(
        &pre("bash"),
        &hook("PreToolUse", None, 1),
        "here",
        ran(End::Exit(0), "hi", ""),
    );
    assert!(fired.context.is_none());
}

#[test]
fn the_listing_says_where_each_hook_came_from() {
    let mut first = hook("PreToolUse", Some("Bash"), 3);
    first.sequential = true;
    first.fail_block = true;
    let h = hooks(vec![
        first,
        hook("PreToolUse", None, 7),
        hook("Stop", None, 9),
    ]);
    let text = h.listing();
    assert!(text.contains("PreToolUse (one after another)"), "{text}");
    assert!(
        text.contains("[Bash] true  (timeout 60 s, fail = block; /c/config.toml, line 3)"),
        "{text}"
    );
    assert!(
        text.contains("[*] true  (timeout 60 s; /c/config.toml, line 7)"),
        "{text}"
    );
    assert!(text.contains("Stop\n"), "{text}");
    assert_eq!(h.count(), 3);
    assert!(hooks(vec![])
        .listing()
        .starts_with("No hooks are configured"));
}
