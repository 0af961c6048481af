//! Random and mutated Gemini stream chunks (see `crate::fuzzing`): never a
//! panic, and a reply that assembles shows the person exactly its text.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::fuzzing::{config, events};

const WORDS: &[&str] = &[
    "candidates",
    "content",
    "parts",
    "text",
    "thought",
    "functionCall",
    "name",
    "args",
    "id",
    "thoughtSignature",
    "finishReason",
    "STOP",
    "MAX_TOKENS",
    "SAFETY",
    "usageMetadata",
    "promptTokenCount",
    "candidatesTokenCount",
    "promptFeedback",
    "blockReason",
    "error",
];

fn templates() -> Vec<Value> {
    vec![
        json!({"candidates": [{"content": {"parts": [{"text": "Hel"}]}}]}),
        json!({"candidates": [{"content": {"parts": [{"text": "lo", "thought": true}]}}]}),
        json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "glob",
               "args": {"pattern": "*"}}, "thoughtSignature": "sig"}]}}]}),
        json!({"candidates": [{"content": {"parts": []}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2,
                                 "thoughtsTokenCount": 1, "cachedContentTokenCount": 1}}),
        json!({"candidates": [{"finishReason": "MAX_TOKENS"}]}),
        json!({"promptFeedback": {"blockReason": "SAFETY"}}),
        json!({"error": {"message": "quota"}}),
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
