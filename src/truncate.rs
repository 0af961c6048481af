//! Fitting a tool's answer into the host's output cap: every tool truncates
//! its output the same way before building its result.
//!
//! The host cuts whatever a tool prints beyond its cap (decision 9), and a cut
//! JSON object is no answer at all: the model would get INVALID_OUTPUT for a
//! `bash` that printed too much. So when the host announces its cap (in
//! `IKIGAI_MAX_OUTPUT`), the tool shrinks its own longest text fields until
//! the whole answer fits, keeping each one's head and tail (the end of a
//! failing build's log matters as much as its start) and saying exactly how
//! much it left out. Called directly, without a cap, tools answer in full.

use std::io;

use serde::Serialize;
use serde_json::Value;

/// Shrinks `answer` until its JSON takes at most `cap` bytes, cutting the
/// middle of its longest top-level string fields. Returns whether it cut.
pub fn fit(answer: &mut Value, cap: usize) -> bool {
    // The keys cut so far: a field is cut at most once (its own text may
    // well contain the marker's wording, so the text cannot tell).
    let mut done: Vec<String> = Vec::new();
    while json_len(answer) > cap {
        let Some(key) = longest_uncut_field(answer, &done) else {
            break;
        };
        // Taken out, not cloned: the text can be gigabytes.
        let Value::String(text) = answer[key.as_str()].take() else {
            unreachable!("longest_uncut_field names a string field");
        };
        let total = text.len();
        fit_field(answer, &key, &text, &text, total, cap);
        done.push(key);
    }
    !done.is_empty()
}

/// A text of which only the first and last bytes were kept (a tool that
/// knew the cap while reading kept no more): `head` is a prefix and `tail`
/// a suffix of a text of `total` bytes, with `total - head - tail` bytes
/// between them gone.
pub struct Clipped {
    pub head: String,
    pub tail: String,
    pub total: usize,
}

/// Sets `answer[key]` to as much of `clipped`'s head and tail as lets the
/// whole answer fit in `cap` bytes, with the marker counting against the
/// true total, exactly as [`fit`] would have cut the whole text.
pub fn fit_clipped(answer: &mut Value, key: &str, clipped: Clipped, cap: usize) {
    answer[key] = Value::Null;
    fit_field(
        answer,
        key,
        &clipped.head,
        &clipped.tail,
        clipped.total,
        cap,
    );
}

/// Sets `answer[key]` to the longest run of whole lines from the start of
/// `lines` (`\n`-separated, none ending in one) that lets the answer fit in
/// `cap` bytes as printed, followed, when any of the `total` lines found is
/// not shown, by a line saying how many (`what` names them: "matching
/// lines", "paths"). For listings collected under the cap (grep, glob):
/// they kept only their first lines, so the head is all there is to show.
pub fn fit_head_lines(
    answer: &mut Value,
    key: &str,
    lines: &str,
    total: usize,
    what: &str,
    cap: usize,
) {
    let shown_all = if lines.is_empty() {
        0
    } else {
        memchr::memchr_iter(b'\n', lines.as_bytes()).count() + 1
    };
    answer[key] = Value::String(String::new());
    let others = json_len(answer) - "\"\"".len();
    if shown_all == total && others + json_len(lines) <= cap {
        answer[key] = Value::String(lines.to_string());
        return;
    }
    // The marker's length with the most digits its count can have.
    let room = cap.saturating_sub(others + json_len(&head_marker(total, total, what, cap)) + 1);
    let mut used = 2; // the quotes
    let mut end = 0; // the end of the last line that fits
    let mut shown = 0;
    for line in lines.split('\n') {
        let next = json_len(line) - 2 + usize::from(shown > 0) * 2;
        if used + next > room {
            break;
        }
        used += next;
        end += line.len() + usize::from(shown > 0);
        shown += 1;
    }
    let mut text = String::with_capacity(end + 200);
    text.push_str(&lines[..end]);
    if shown > 0 {
        text.push('\n');
    }
    text.push_str(&head_marker(total - shown, total, what, cap));
    answer[key] = Value::String(text);
}

/// The line that ends a listing of which `omitted` of `total` entries are
/// not shown.
fn head_marker(omitted: usize, total: usize, what: &str, cap: usize) -> String {
    format!(
        "[... {omitted} more of {total} {what} not shown: the answer exceeds the {cap}-byte \
         output limit; ask for less (a narrower pattern or path) ...]"
    )
}

/// Puts into `answer[key]` (now `null`) the longest head and tail of a
/// text (`head` a prefix, `tail` a suffix, `total` its length) that let the
/// answer fit in `cap`, with the marker between them.
fn fit_field(answer: &mut Value, key: &str, head: &str, tail: &str, total: usize, cap: usize) {
    // Escapes make the JSON of a text longer than the text: budget in JSON
    // bytes, then scale to text bytes.
    let (text_len, text_json) = if std::ptr::eq(head, tail) {
        (head.len(), json_len(head))
    } else {
        (head.len() + tail.len(), json_len(head) + json_len(tail))
    };
    let others = json_len(answer) - "null".len();
    let budget = cap.saturating_sub(others + MARKER_ROOM);
    let mut keep = (text_len as u128 * budget as u128 / text_json.max(1) as u128) as usize;
    loop {
        answer[key] = Value::String(shorten(head, tail, total, keep, cap));
        let len = json_len(answer);
        // Shrink by what still overflows until it fits or nothing of the
        // text is left.
        if len <= cap || keep == 0 {
            break;
        }
        keep = keep.saturating_sub(len - cap);
    }
}

/// Room for the marker line, so the first attempt usually fits.
const MARKER_ROOM: usize = 200;

/// The length of `value`'s JSON, counted without keeping it: the answer
/// can be gigabytes.
fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Serialising a Value or a str cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// The key of the longest string field not in `done`.
fn longest_uncut_field(answer: &Value, done: &[String]) -> Option<String> {
    answer
        .as_object()?
        .iter()
        .filter(|(k, _)| !done.contains(k))
        .filter_map(|(k, v)| Some((k, v.as_str()?)))
        .max_by_key(|(_, s)| s.len())
        .filter(|(_, s)| !s.is_empty())
        .map(|(k, _)| k.clone())
}

/// The line that stands where `omitted` of `total` bytes were left out to
/// fit a `cap`-byte answer: the marker's one wording.
fn marker(omitted: usize, total: usize, cap: usize) -> String {
    format!(
        "[... {omitted} of {total} bytes omitted: the answer exceeds the {cap}-byte output limit; \
         ask for less (a range, a narrower pattern or path, `| head`) ...]\n"
    )
}

/// About `keep` bytes of a text (`head` a prefix, `tail` a suffix, `total`
/// its length), split between its start and its end at line ends where one
/// is near, and the marker saying what went.
fn shorten(head: &str, tail: &str, total: usize, keep: usize, cap: usize) -> String {
    let want_head = (keep / 2).min(head.len());
    let want_tail = (keep - want_head).min(tail.len()).min(total - want_head);
    let head = &head[..snap_to_line(head, floor_char(head, want_head), true)];
    let tail = &tail[snap_to_line(tail, ceil_char(tail, tail.len() - want_tail), false)..];
    let omitted = total.saturating_sub(head.len() + tail.len());
    let sep = if head.is_empty() || head.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!("{head}{sep}{}{tail}", marker(omitted, total, cap))
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

    #[test]
    fn head_lines_fit_with_a_count_of_the_rest() {
        let lines: Vec<String> = (0..1000).map(|i| format!("f:{i}: \u{0}x")).collect();
        let text = lines.join("\n");
        let mut answer = json!({"output": null, "count": 5000});
        fit_head_lines(&mut answer, "output", &text, 5000, "matching lines", 2000);
        let printed = serde_json::to_vec(&answer).unwrap().len();
        assert!(printed <= 2000, "{printed}");
        assert!(printed > 1700, "{printed}: room was left unused");
        let out = answer["output"].as_str().unwrap();
        let shown = out.lines().count() - 1;
        assert!(out.starts_with("f:0: \u{0}x\nf:1: "));
        assert!(out.ends_with(&format!(
            "[... {} more of 5000 matching lines not shown: the answer exceeds the 2000-byte \
             output limit; ask for less (a narrower pattern or path) ...]",
            5000 - shown
        )));

        // All of it fits: untouched, no marker.
        let mut answer = json!({"output": null, "count": 2});
        fit_head_lines(&mut answer, "output", "a\nb", 2, "paths", 2000);
        assert_eq!(answer["output"], "a\nb");
        // Nothing fits but the marker.
        let mut answer = json!({"output": null});
        fit_head_lines(&mut answer, "output", &"x".repeat(500), 1, "paths", 200);
        assert!(answer["output"]
            .as_str()
            .unwrap()
            .starts_with("[... 1 more of 1 paths"));
    }

    #[test]
    fn clipped_text_counts_against_its_true_total() {
        let head: String = (0..1000).map(|i| format!("h{i}\n")).collect();
        let tail: String = (0..1000).map(|i| format!("t{i}\n")).collect();
        let total = 1_000_000;
        let mut answer = json!({"output": null, "exit_code": 0});
        let clipped = Clipped {
            head: head.clone(),
            tail: tail.clone(),
            total,
        };
        fit_clipped(&mut answer, "output", clipped, 3000);
        assert!(serde_json::to_vec(&answer).unwrap().len() <= 3000);
        let out = answer["output"].as_str().unwrap();
        assert!(out.starts_with("h0\nh1\n"));
        assert!(out.ends_with("t998\nt999\n"));
        let marker = out.lines().find(|l| l.starts_with("[... ")).unwrap();
        let omitted: usize = marker[5..].split(' ').next().unwrap().parse().unwrap();
        assert_eq!(out.len() - marker.len() - 1 + omitted, total);
        assert!(marker.contains("of 1000000 bytes omitted"));
    }
}
