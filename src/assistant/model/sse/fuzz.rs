//! Random and mutated event streams (see `crate::fuzzing`): never a panic;
//! the events of a stream do not depend on how its bytes arrive (a CR and
//! its LF in two reads, a character split between them); and events
//! written in the format, with any of its line endings and comments, are
//! read back as they were.

use std::io::BufReader;

use proptest::prelude::*;

use super::*;
use crate::fuzzing::config;

fn read(bytes: &[u8], capacity: usize) -> Result<Vec<Event>, String> {
    let mut events = Vec::new();
    let mut reader = BufReader::with_capacity(capacity, bytes);
    read_events(&mut reader, &mut |e| {
        events.push(e);
        true
    })
    .map_err(|e| format!("{e:?}"))?;
    Ok(events)
}

/// Bytes that are mostly the format's own: field names, colons, spaces,
/// the three line endings, and now and then a piece of UTF-8.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data".to_vec()),
        Just(b"event".to_vec()),
        Just(b":".to_vec()),
        Just(b" ".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\r\n".to_vec()),
        Just("é€😀".as_bytes().to_vec()),
        proptest::collection::vec(any::<u8>(), 0..4),
    ];
    proptest::collection::vec(piece, 0..60).prop_map(|p| p.concat())
}

/// Text without line endings.
fn field() -> impl Strategy<Value = String> {
    "[^\r\n]{0,12}"
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn events_do_not_depend_on_how_the_bytes_arrive(bytes in stream(), capacity in 1usize..9) {
        let whole = read(&bytes, 1 << 16);
        prop_assert_eq!(read(&bytes, capacity), whole);
    }

}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn written_events_are_read_back(
        events in proptest::collection::vec(
            (proptest::option::of(field()), proptest::collection::vec(field(), 1..4)), 0..6),
        ending in proptest::sample::select(vec!["\n", "\r\n", "\r"]),
        comments in any::<bool>(),
        capacity in 1usize..9,
    ) {
        let mut text = String::new();
        for (event, data) in &events {
            if comments {
                text.push_str(&format!(": keep-alive{ending}"));
            }
            if let Some(event) = event {
                text.push_str(&format!("event: {event}{ending}"));
            }
            for line in data {
                text.push_str(&format!("data: {line}{ending}"));
            }
            text.push_str(ending);
        }
        let expected: Vec<Event> = events
            .iter()
            .map(|(event, data)| Event {
                event: event.clone().unwrap_or_default(),
                data: data.join("\n"),
            })
            .collect();
        prop_assert_eq!(read(text.as_bytes(), capacity), Ok(expected));
    }
}
