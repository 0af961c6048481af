//! Random and mutated Responses API events (see `crate::fuzzing`): never a
//! panic, and a reply that assembles shows the person exactly its text.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::fuzzing::{config, events};

const WORDS: &[&str] = &[
    "type",
    "response",
    "status",
    "completed",
    "incomplete",
    "failed",
    "output",
    "item",
    "message",
    "content",
    "output_text",
    "text",
    "function_call",
    "call_id",
    "name",
    "arguments",
    "reasoning",
    "encrypted_content",
    "delta",
    "refusal",
    "usage",
    "error",
    "response.output_text.delta",
    "response.completed",
    "response.incomplete",
];

fn templates() -> Vec<Value> {
    vec![
        json!({"type": "response.created", "response": {"status": "in_progress"}}),
        json!({"type": "response.output_item.added",
               "item": {"type": "reasoning", "id": "rs_1", "encrypted_content": "x"}}),
        json!({"type": "response.output_text.delta", "delta": "Look"}),
        json!({"type": "response.output_text.delta", "delta": "ing."}),
        json!({"type": "response.refusal.delta", "delta": "I can't"}),
        json!({"type": "response.completed", "response": {"status": "completed",
               "output": [{"type": "message", "content": [{"type": "output_text", "text": "Looking."}]},
                          {"type": "function_call", "call_id": "c1", "name": "glob",
                           "arguments": "{\"pattern\": \"*\"}"}],
               "usage": {"input_tokens": 3, "output_tokens": 2}}}),
        json!({"type": "response.incomplete", "response": {"status": "incomplete",
               "incomplete_details": {"reason": "max_output_tokens"}, "output": []}}),
        json!({"type": "response.failed", "response": {"error": {"message": "bad"}}}),
        json!({"type": "error", "message": "oops"}),
    ]
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn events_assemble_or_fail(stream in events(templates(), WORDS)) {
        let mut shown = String::new();
        let mut assembler = Assembler::default();
        let fed = stream
            .iter()
            .try_for_each(|e| assembler.feed(e, &mut |t| shown.push_str(t)));
        if fed.is_ok() {
            if let Ok(reply) = assembler.finish(&mut |t| shown.push_str(t)) {
                prop_assert_eq!(&shown, &reply.text);
            }
        }
    }
}
