//! Random and mutated Messages API events (see `crate::fuzzing`): never a
//! panic, and a reply that assembles shows the person exactly its text.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::fuzzing::{config, events};

const WORDS: &[&str] = &[
    "type",
    "index",
    "content_block",
    "text",
    "tool_use",
    "id",
    "name",
    "input",
    "delta",
    "text_delta",
    "input_json_delta",
    "partial_json",
    "stop_reason",
    "end_turn",
    "max_tokens",
    "refusal",
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "error",
    "usage",
    "output_tokens",
];

fn templates() -> Vec<Value> {
    vec![
        json!({"type":"message_start","message":{"id":"msg_1","role":"assistant","content":[],
               "usage":{"input_tokens":5,"cache_read_input_tokens":100,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        json!({"type":"ping"}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"grep","input":{}}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pattern\": \"fn"}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"}"}}),
        json!({"type":"content_block_stop","index":1}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":42}}),
        json!({"type":"message_delta","delta":{"stop_reason":"end_turn"}}),
        json!({"type":"message_stop"}),
        json!({"type":"error","error":{"type":"overloaded_error","message":"busy"}}),
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
            if let Ok(reply) = assembler.finish() {
                prop_assert_eq!(&shown, &reply.text);
            }
        }
    }
}
