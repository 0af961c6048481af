//! Random and mutated Chat Completions chunks (see `crate::fuzzing`): never
//! a panic, and a reply that assembles shows the person exactly its text.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::fuzzing::{config, events};

const WORDS: &[&str] = &[
    "choices",
    "delta",
    "content",
    "tool_calls",
    "index",
    "id",
    "function",
    "name",
    "arguments",
    "finish_reason",
    "stop",
    "tool_calls",
    "length",
    "content_filter",
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "refusal",
    "error",
    "message",
    "\\ud83d",
];

fn templates() -> Vec<Value> {
    vec![
        json!({"choices": [{"delta": {"content": "Hi "}}]}),
        json!({"choices": [{"delta": {"content": "\u{e9}t\u{e9}"}}]}),
        json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "call_a",
            "function": {"name": "glob", "arguments": "{\"pat"}}]}}]}),
        json!({"choices": [{"delta": {"tool_calls": [{"index": 0,
            "function": {"arguments": "tern\": \"*\"}"}}]}}]}),
        json!({"choices": [{"delta": {"refusal": "no"}}]}),
        json!({"choices": [{"delta": {}, "finish_reason": "stop"}]}),
        json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4,
            "prompt_tokens_details": {"cached_tokens": 1}}}),
        json!({"error": {"message": "overloaded"}}),
    ]
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn chunks_assemble_or_fail(chunks in events(templates(), WORDS)) {
        let mut shown = String::new();
        let mut assembler = Assembler::default();
        let fed = chunks
            .iter()
            .try_for_each(|c| assembler.feed(c, &mut |t| shown.push_str(t)));
        if fed.is_ok() {
            if let Ok(reply) = assembler.finish() {
                prop_assert_eq!(&shown, &reply.text);
            }
        }
    }
}
