//! Random and mutated input for the JSON-RPC layer (see `crate::fuzzing`):
//! any JSON value is a message or the error response to send, never a
//! panic, and a message is only what the value says; a byte stream is cut
//! into lines exactly where its newlines are, a line over the limit dropped
//! whole, whatever the stream holds and however it arrives.

use std::io::BufReader;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::fuzzing::{config, json, mutate};

const WORDS: &[&str] = &[
    "jsonrpc",
    "2.0",
    "id",
    "method",
    "params",
    "result",
    "error",
    "code",
    "message",
    "tools/call",
    "_meta",
];

/// The lines `read_line` must give for `input`: each piece up to and with
/// its newline (the last may lack one), or `TooLong` for one whose content
/// is over `limit`.
fn expected_lines(input: &[u8], limit: usize) -> Vec<Result<Vec<u8>, ()>> {
    let mut lines = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let end = rest
            .iter()
            .position(|&b| b == b'\n')
            .map_or(rest.len(), |i| i + 1);
        let (line, after) = rest.split_at(end);
        let content = line.strip_suffix(b"\n").unwrap_or(line);
        lines.push(if content.len() <= limit {
            Ok(line.to_vec())
        } else {
            Err(())
        });
        rest = after;
    }
    lines
}

fn message() -> impl Strategy<Value = Value> {
    let id = prop_oneof![
        (0i64..1000).prop_map(Value::from),
        "[a-z0-9]{0,8}".prop_map(Value::from)
    ];
    (id, "[a-z/]{1,12}", json(WORDS)).prop_map(|(id, method, params)| {
        let params = if params.is_object() {
            params
        } else {
            json!({"x": params})
        };
        request(&id, &method, params)
    })
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn any_value_is_a_message_or_an_invalid_request(value in json(WORDS)) {
        let object = value.as_object().cloned();
        match parse(value) {
            Ok(message) => {
                let object = object.expect("only an object is a message");
                prop_assert_eq!(object.get("jsonrpc"), Some(&json!("2.0")));
                match message {
                    Message::Request { id, method, params } => {
                        prop_assert!(id.is_string() || id.is_number());
                        prop_assert_eq!(object.get("id"), Some(&id));
                        prop_assert_eq!(object.get("method"), Some(&json!(method)));
                        prop_assert!(params.is_object() || params.is_array());
                    }
                    Message::Notification { method, .. } => {
                        prop_assert!(object.get("id").is_none());
                        prop_assert_eq!(object.get("method"), Some(&json!(method)));
                    }
                    Message::Response { id, outcome } => {
                        prop_assert_eq!(object.get("id"), Some(&id));
                        prop_assert!(object.get("method").is_none());
                        match outcome {
                            Ok(result) => {
                                prop_assert_eq!(object.get("result"), Some(&result));
                                prop_assert!(object.get("error").is_none());
                            }
                            Err(_) => prop_assert!(object.get("result").is_none()),
                        }
                    }
                }
            }
            Err(answer) => {
                prop_assert_eq!(&answer["jsonrpc"], "2.0");
                prop_assert_eq!(&answer["error"]["code"], code::INVALID_REQUEST);
                prop_assert!(answer["error"]["message"].is_string());
            }
        }
    }

}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn mutated_requests_parse_or_are_refused(
        message in message(),
        path in proptest::collection::vec(any::<usize>(), 0..4),
        new in json(WORDS),
    ) {
        let Ok(Message::Request { .. }) = parse(message.clone()) else {
            return Err(TestCaseError::fail(format!("a valid request refused: {message}")));
        };
        let mutated = mutate(&message, &path, new);
        let _ = parse(mutated);
    }

    #[test]
    fn lines_are_cut_at_their_newlines_however_they_arrive(
        input in proptest::collection::vec(
            prop_oneof![4 => any::<u8>(), 1 => Just(b'\n')], 0..400),
        limit in 1usize..40,
        chunk in 1usize..17,
    ) {
        let mut reader = BufReader::with_capacity(chunk, &input[..]);
        let mut line = Vec::new();
        let mut got = Vec::new();
        loop {
            match read_line(&mut reader, &mut line, limit as u64).unwrap() {
                Line::End => break,
                Line::Message => got.push(Ok(line.clone())),
                Line::TooLong => got.push(Err(())),
            }
            prop_assert!(got.len() <= input.len(), "no progress");
        }
        prop_assert_eq!(got, expected_lines(&input, limit));
    }
}
