//! Random and mutated patches (see `crate::fuzzing`) against the parser,
//! and the chunks of random updates against random files: never a panic,
//! and what the parser accepts is a patch the tool can act on (at least
//! one operation, every path named, every update with a chunk), and what
//! applying gives is bounded by the file and the patch.

use proptest::prelude::*;

use super::apply::{apply, Text};
use super::parse::{parse, Op};
use crate::fuzzing::config;

/// The lines a patch is made of, and some that are not.
const LINES: &[&str] = &[
    "*** Begin Patch",
    "*** End Patch",
    "*** Add File: a.txt",
    "*** Add File: ",
    "*** Delete File: b.txt",
    "*** Update File: c.txt",
    "*** Update File: a.txt",
    "*** Move to: d/e.txt",
    "*** End of File",
    "@@",
    "@@ fn main() {",
    "@@ -1,3 +1,3 @@",
    "+added",
    "+",
    "-old",
    "-",
    " same",
    "",
    "   *** Begin Patch  ",
    "<<EOF",
    "EOF",
    "plain text",
    "\r",
];

/// A patch: lines from `LINES`, sometimes random text.
fn patch() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            6 => proptest::sample::select(LINES).prop_map(str::to_string),
            1 => ".{0,20}",
        ],
        0..40,
    )
    .prop_map(|lines| lines.join("\n"))
}

/// A well-formed update of `c.txt`, with its lines.
fn update() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just(" same".to_string()),
            Just("-old".to_string()),
            Just("+new".to_string()),
            Just("-same".to_string()),
            Just(" old".to_string()),
        ],
        1..12,
    )
    .prop_map(|lines| {
        format!(
            "*** Begin Patch\n*** Update File: c.txt\n@@\n{}\n*** End Patch",
            lines.join("\n")
        )
    })
}

/// A file of lines from the same few words, LF or CRLF.
fn file() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(
            proptest::sample::select(&["same", "old", "new", "other", " same ", ""][..]),
            0..30,
        ),
        any::<bool>(),
    )
        .prop_map(|(lines, crlf)| lines.join(if crlf { "\r\n" } else { "\n" }).into_bytes())
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn what_parses_is_a_patch_the_tool_can_act_on(text in patch()) {
        if let Ok(ops) = parse(&text) {
            prop_assert!(!ops.is_empty());
            for op in &ops {
                prop_assert!(!op.path().trim().is_empty(), "{op:?}");
                if let Op::Update { chunks, .. } = op {
                    prop_assert!(!chunks.is_empty(), "{op:?}");
                }
            }
            prop_assert!(!crate::tools::apply_patch::paths(&text).is_empty());
        }
    }

    #[test]
    fn a_mutated_patch_is_read_or_refused(
        text in update(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut bytes = text.into_bytes();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse(&text);
    }

    #[test]
    fn applying_is_bounded_by_the_file_and_the_patch(text in update(), content in file()) {
        let Ok(ops) = parse(&text) else { return Ok(()); };
        let Op::Update { chunks, .. } = &ops[0] else { return Ok(()); };
        if let Ok(out) = apply(&Text::new(&content), chunks) {
            let added: usize = chunks.iter().flat_map(|c| &c.new).map(|l| l.len() + 2).sum();
            prop_assert!(out.len() <= content.len() + added + 2);
        }
    }
}
