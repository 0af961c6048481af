//! Fitting a tool's answer into the host's output cap (the output-truncation
//! rule that legacy-internal-tools.md keeps: every tool truncates its output
//! the same way before building its result).
//!
//! The host cuts whatever a tool prints beyond its cap (decision 9), and a cut
//! JSON object is no answer at all: the model would get INVALID_OUTPUT for a
//! `bash` that printed too much. So when the host announces its cap (in
//! `IKIGAI_MAX_OUTPUT`), the tool shrinks its own longest text fields until
//! the whole answer fits, keeping each one's head and tail (the end of a
//! failing build's log matters as much as its start) and saying exactly how
//! much it left out. Called directly, without a cap, tools answer in full.

use serde_json::Value;

/// Shrinks `answer` until its JSON takes at most `cap` bytes, cutting the
/// middle of its longest top-level string fields. Returns whether it cut.
pub fn fit(answer: &mut Value, cap: usize) -> bool {
    // The keys cut so far: a field is cut at most once (its own text may
    // well contain the marker's wording, so the text cannot tell).
    let mut done: Vec<String> = Vec::new();
    while json_len(answer) > cap {
        let Some((key, text)) = longest_uncut_field(answer, &done) else {
            break;
        };
        // Escapes make the JSON of a text longer than the text: budget in
        // JSON bytes, then scale to text bytes.
        let text_json = json_len(&Value::String(text.clone()));
        let others = json_len(answer) - text_json;
        let budget = cap.saturating_sub(others + MARKER_ROOM);
        let mut keep = (text.len() as u128 * budget as u128 / text_json as u128) as usize;
        loop {
            answer[key.as_str()] = Value::String(shorten(&text, keep, cap));
            let len = json_len(answer);
            // Shrink by what still overflows until it fits or nothing of the
            // text is left.
            if len <= cap || keep == 0 {
                break;
            }
            keep = keep.saturating_sub(len - cap);
        }
        done.push(key);
    }
    !done.is_empty()
}

/// Room for the marker line, so the first attempt usually fits.
const MARKER_ROOM: usize = 200;

fn json_len(value: &Value) -> usize {
    serde_json::to_vec(value).map(|v| v.len()).unwrap_or(0)
}

/// The longest string field not in `done`.
fn longest_uncut_field(answer: &Value, done: &[String]) -> Option<(String, String)> {
    answer
        .as_object()?
        .iter()
        .filter(|(k, _)| !done.contains(k))
        .filter_map(|(k, v)| Some((k, v.as_str()?)))
        .max_by_key(|(_, s)| s.len())
        .filter(|(_, s)| !s.is_empty())
        .map(|(k, s)| (k.clone(), s.to_string()))
}

const MARKER_START: &str = "[... ";

/// `text` with only about `keep` bytes left, split between its head and its
/// tail at line ends where one is near, and a line saying what went.
fn shorten(text: &str, keep: usize, cap: usize) -> String {
    let head_end = snap_to_line(text, floor_char(text, keep / 2), true);
    let tail_start = snap_to_line(text, ceil_char(text, text.len() - (keep - keep / 2)), false);
    let (head, tail) = if head_end < tail_start {
        (&text[..head_end], &text[tail_start..])
    } else {
        (&text[..floor_char(text, keep / 2)], "")
    };
    let omitted = text.len() - head.len() - tail.len();
    format!(
        "{head}{sep}{MARKER_START}{omitted} of {total} bytes omitted: the answer exceeds the {cap}-byte output limit; \
         ask for less (a range, a narrower pattern or path, `| head`) ...]\n{tail}",
        sep = if head.is_empty() || head.ends_with('\n') { "" } else { "\n" },
        total = text.len(),
    )
}

/// Moves a cut point to just after the nearest `\n` within 256 bytes
/// (backwards for the head's end, forwards for the tail's start).
fn snap_to_line(text: &str, at: usize, backwards: bool) -> usize {
    const NEAR: usize = 256;
    let bytes = text.as_bytes();
    let found = if backwards {
        let from = at.saturating_sub(NEAR);
        memchr::memrchr(b'\n', &bytes[from..at]).map(|i| from + i + 1)
    } else {
        let to = (at + NEAR).min(bytes.len());
        memchr::memchr(b'\n', &bytes[at..to]).map(|i| at + i + 1)
    };
    found.unwrap_or(at)
}

fn floor_char(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(text: &str, mut i: usize) -> usize {
    while i < text.len() && !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_answers_are_untouched() {
        let mut answer = json!({"output": "short", "exit_code": 0});
        assert!(!fit(&mut answer, 1000));
        assert_eq!(answer, json!({"output": "short", "exit_code": 0}));
    }

    #[test]
    fn keeps_head_and_tail_and_counts_what_went() {
        let text: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        let mut answer = json!({"output": text, "exit_code": 2});
        assert!(fit(&mut answer, 4096));
        assert!(serde_json::to_vec(&answer).unwrap().len() <= 4096);
        let out = answer["output"].as_str().unwrap();
        assert!(
            out.starts_with("line 0\nline 1\n"),
            "{}",
            &out[..200.min(out.len())]
        );
        assert!(out.ends_with("line 9998\nline 9999\n"));
        assert_eq!(answer["exit_code"], 2);
        // Cuts fall on line ends, and the count is exact.
        let marker = out.lines().find(|l| l.starts_with("[... ")).unwrap();
        let omitted: usize = marker[5..].split(' ').next().unwrap().parse().unwrap();
        let kept = out.len() - marker.len() - 1;
        assert_eq!(kept + omitted, text.len());
        assert!(marker.contains(&format!("of {} bytes omitted", text.len())));
        assert!(marker.contains("4096-byte output limit"));
    }

    #[test]
    fn escapes_and_multibyte_text_still_fit() {
        let text = "\u{1}é\"".repeat(50_000);
        let mut answer = json!({"output": text});
        assert!(fit(&mut answer, 10_000));
        assert!(serde_json::to_vec(&answer).unwrap().len() <= 10_000);
    }

    #[test]
    fn cuts_several_fields_when_one_is_not_enough() {
        let mut answer = json!({"a": "x".repeat(3000), "b": "y".repeat(3000), "n": 1});
        assert!(fit(&mut answer, 2000));
        assert!(serde_json::to_vec(&answer).unwrap().len() <= 2000);
        assert!(answer["a"].as_str().unwrap().contains("bytes omitted"));
        assert!(answer["b"].as_str().unwrap().contains("bytes omitted"));
    }

    #[test]
    fn text_that_looks_like_a_marker_is_still_cut() {
        let text = format!("[... start\n{}", "x\n".repeat(10_000));
        let mut answer = json!({"output": text, "exit_code": 0});
        assert!(fit(&mut answer, 2000));
        assert!(serde_json::to_vec(&answer).unwrap().len() <= 2000);
    }

    #[test]
    fn gives_up_gracefully_when_nothing_can_be_cut() {
        let mut answer = json!({"n": 12345});
        assert!(!fit(&mut answer, 3));
    }
}
