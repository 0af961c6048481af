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
    fit_rest(answer, cap, Vec::new())
}

/// [`fit`], the fields named in `done` already cut.
fn fit_rest(answer: &mut Value, cap: usize, mut done: Vec<String>) -> bool {
    // The keys cut so far: a field is cut at most once (its own text may
    // well contain the marker's wording, so the text cannot tell).
    while json_len(answer) > cap {
        let Some(key) = longest_uncut_field(answer, &done) else {
            break;
        };
        // Taken out, not cloned: the text can be gigabytes.
        let Value::String(text) = answer[key.as_str()].take() else {
            unreachable!("longest_uncut_field names a string field");
        };
        let total = text.len();
        fit_field(
            answer,
            &key,
            &text,
            &text,
            total,
            total,
            json_len(&text),
            cap,
        );
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
    let Clipped { head, tail, total } = clipped;
    let (kept, kept_json) = (head.len() + tail.len(), json_len(&head) + json_len(&tail));
    fit_field(answer, key, &head, &tail, total, kept, kept_json, cap);
}

/// A text that goes by in pieces, of which only what [`fit`] could show
/// under `cap` is kept: its first bytes, a ring of its last bytes, and the
/// counts the cut is chosen and described by (its length and its length as
/// JSON). So a tool can fit a text it makes as it goes, in O(cap) memory,
/// with the bytes [`fit`] would print had it held the whole text.
pub struct Sample {
    cap: usize,
    /// Each of the head's and the ring's size: a cut under `cap` shows at
    /// most half of `cap` bytes of either end (and a character more).
    half: usize,
    head: Vec<u8>,
    /// The bytes after the head, the last `half` of them once it is full,
    /// the oldest at `at`.
    ring: Vec<u8>,
    at: usize,
    total: usize,
    /// The text's JSON length, quotes excluded.
    json: usize,
}

impl Sample {
    /// A sample for `answer[key]`, or `None` when another string field of
    /// `answer` is longer than `cap`: then [`fit`] may cut that one first,
    /// and how depends on the whole text's length as no sample knows it.
    /// The other fields must not change until [`fit_sample`].
    pub fn new(answer: &Value, key: &str, cap: usize) -> Option<Sample> {
        let others_short = answer.as_object().is_some_and(|fields| {
            fields
                .iter()
                .all(|(k, v)| k == key || v.as_str().is_none_or(|s| s.len() <= cap))
        });
        let half = cap / 2 + 8;
        others_short.then(|| Sample {
            cap,
            half,
            head: Vec::new(),
            ring: Vec::new(),
            at: 0,
            total: 0,
            json: 0,
        })
    }

    /// Takes the text's next piece.
    pub fn push(&mut self, piece: &str) {
        self.total += piece.len();
        self.json += escaped_len(piece);
        let mut bytes = piece.as_bytes();
        let to_head = (self.half - self.head.len()).min(bytes.len());
        if self.head.is_empty() {
            // Each end sized once: a Vec that grows by doubling leaves
            // the smaller copies behind, in memory the process still holds.
            self.head.reserve_exact(self.half);
        }
        self.head.extend_from_slice(&bytes[..to_head]);
        bytes = &bytes[to_head..];
        if self.ring.is_empty() && !bytes.is_empty() {
            self.ring.reserve_exact(self.half);
        }
        if bytes.len() >= self.half {
            // Nothing of the ring survives this piece.
            self.ring.clear();
            self.ring
                .extend_from_slice(&bytes[bytes.len() - self.half..]);
            self.at = 0;
            return;
        }
        let room = self.half - self.ring.len();
        let (fill, mut over) = bytes.split_at(room.min(bytes.len()));
        self.ring.extend_from_slice(fill);
        // Full: overwrite the oldest bytes, in at most two runs.
        while !over.is_empty() {
            let run = (self.half - self.at).min(over.len());
            self.ring[self.at..self.at + run].copy_from_slice(&over[..run]);
            self.at = (self.at + run) % self.half;
            over = &over[run..];
        }
    }
}

/// Sets `answer[key]` to the text `sample` saw, cut as [`fit`] would cut
/// the answer holding the whole text, and fits the answer to the sample's
/// cap: the answer is the one [`fit`] gives, byte for byte. Returns
/// whether it cut.
pub fn fit_sample(answer: &mut Value, key: &str, sample: Sample) -> bool {
    let Sample {
        cap,
        half,
        mut head,
        mut ring,
        at,
        total,
        json,
    } = sample;
    ring.rotate_left(at);
    if total <= 2 * half {
        // Nothing was dropped: the whole text is here.
        head.append(&mut ring);
        let text = String::from_utf8(head).expect("the pieces were UTF-8 text");
        answer[key] = Value::String(text);
        return fit(answer, cap);
    }
    // The text is longer than `cap`, and so longer than every other field
    // (`Sample::new`): `fit` cuts it first, keeping at most `cap / 2` bytes
    // (and a character) of each end, which head and ring hold from a
    // character's start.
    let head_end = match std::str::from_utf8(&head) {
        Ok(_) => head.len(),
        Err(e) => e.valid_up_to(),
    };
    head.truncate(head_end);
    let tail_start = ring
        .iter()
        .position(|&b| b & 0xc0 != 0x80)
        .unwrap_or(ring.len());
    ring.drain(..tail_start);
    let head = String::from_utf8(head).expect("a prefix up to a character is UTF-8");
    let tail = String::from_utf8(ring).expect("a suffix from a character is UTF-8");
    answer[key] = Value::Null;
    fit_field(answer, key, &head, &tail, total, total, json + 2, cap);
    fit_rest(answer, cap, vec![key.to_string()]);
    true
}

/// The length of `text` escaped as a JSON string's inside, as serde_json
/// escapes it: `"` and `\\` and the control characters with a short
/// escape take two bytes, the other control characters six.
fn escaped_len(text: &str) -> usize {
    const EXTRA: [u8; 256] = {
        let mut extra = [0u8; 256];
        let mut b = 0;
        while b < 0x20 {
            extra[b] = 5;
            b += 1;
        }
        extra[b'\\' as usize] = 1;
        extra[b'"' as usize] = 1;
        extra[b'\n' as usize] = 1;
        extra[b'\r' as usize] = 1;
        extra[b'\t' as usize] = 1;
        extra[0x08] = 1;
        extra[0x0c] = 1;
        extra
    };
    let bytes = text.as_bytes();
    let extra: usize = bytes
        .iter()
        .map(|&b| usize::from(EXTRA[usize::from(b)]))
        .sum();
    bytes.len() + extra
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
/// answer fit in `cap`, with the marker between them. `text_len` bytes of
/// the text are known, `text_json` long as JSON.
#[allow(clippy::too_many_arguments)]
fn fit_field(
    answer: &mut Value,
    key: &str,
    head: &str,
    tail: &str,
    total: usize,
    text_len: usize,
    text_json: usize,
    cap: usize,
) {
    // Escapes make the JSON of a text longer than the text: budget in JSON
    // bytes, then scale to text bytes.
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

    /// A small deterministic generator: the property tests need many
    /// varied texts, the same on every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// A text of about `len` bytes of what makes cuts hard: lines long and
    /// short, multi-byte characters, escapes short and long.
    fn text(rng: &mut Rng, len: usize) -> String {
        const PARTS: [&str; 12] = [
            "x", "word ", "\n", "é", "€", "𝄞", "\u{0}", "\"", "\\", "\t", "\u{1f}", "\r\n",
        ];
        let mut text = String::new();
        while text.len() < len {
            match rng.below(20) {
                0 => text.push_str(&"y".repeat(rng.below(600))),
                1 => text.push_str(&"€".repeat(rng.below(300))),
                _ => text.push_str(PARTS[rng.below(PARTS.len())]),
            }
        }
        text
    }

    /// `text` handed to a sample in pieces of random sizes.
    fn sampled(rng: &mut Rng, answer: &Value, text: &str, cap: usize) -> Option<Sample> {
        let mut sample = Sample::new(answer, "content", cap)?;
        let mut rest = text;
        while !rest.is_empty() {
            let mut at = match rng.below(4) {
                0 => rest.len(),
                1 => rng.below(8),
                _ => rng.below(cap + 1),
            }
            .min(rest.len());
            while !rest.is_char_boundary(at) {
                at += 1;
            }
            sample.push(&rest[..at]);
            rest = &rest[at..];
        }
        Some(sample)
    }

    #[test]
    fn escaped_len_is_serde_json_s() {
        let mut all: String = (0u8..0x80).map(char::from).collect();
        all.push_str("é€𝄞 \"q\" b\\s \u{2028}");
        for text in ["", "plain", "\u{0}\u{1f}\u{7f}\"\\\n\r\t\u{8}\u{c}", &all] {
            assert_eq!(escaped_len(text) + 2, json_len(text), "{text:?}");
        }
    }

    #[test]
    fn a_sample_fits_as_the_whole_text_would() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut cut = 0;
        for round in 0..3000 {
            let cap = [1, 150, 200, 256, 257, 300, 512, 777, 1024, 4096][round % 10];
            let len = match rng.below(3) {
                0 => rng.below(cap * 2 + 40),
                _ => rng.below(cap * 8 + 2000),
            };
            let content = text(&mut rng, len);
            let (url_len, title_len) = (rng.below(cap.min(400) + 1), rng.below(cap / 4 + 1));
            let url = text(&mut rng, url_len);
            let title = text(&mut rng, title_len);
            let mut answer = json!({"success": true, "url": url, "title": title, "content": null});
            let Some(sample) = sampled(&mut rng, &answer, &content, cap) else {
                assert!(url.len() > cap || title.len() > cap);
                continue;
            };
            let mut whole = answer.clone();
            whole["content"] = Value::String(content.clone());
            let want = fit(&mut whole, cap);
            assert_eq!(fit_sample(&mut answer, "content", sample), want);
            assert_eq!(
                answer.to_string(),
                whole.to_string(),
                "round {round}, cap {cap}, {} bytes",
                content.len()
            );
            cut += usize::from(want && content.len() > cap);
        }
        // Most rounds cut a text the sample did not hold whole.
        assert!(cut > 1000, "{cut}");
    }

    #[test]
    fn a_field_longer_than_the_cap_refuses_a_sample() {
        let answer = json!({"url": "u".repeat(101), "content": null, "n": 1});
        assert!(Sample::new(&answer, "content", 100).is_none());
        assert!(Sample::new(&answer, "content", 101).is_some());
        // The key's own field does not count.
        let answer = json!({"content": "c".repeat(500)});
        assert!(Sample::new(&answer, "content", 100).is_some());
    }

    #[test]
    fn a_sample_holds_o_of_cap() {
        let cap = 1000;
        let mut sample = Sample::new(&json!({"content": null}), "content", cap).unwrap();
        let line = "a line of text, not short, with é in it\n";
        for _ in 0..10_000 {
            sample.push(line);
        }
        assert!(sample.head.capacity() + sample.ring.capacity() <= 4 * cap);
        let mut answer = json!({"content": null});
        assert!(fit_sample(&mut answer, "content", sample));
        let out = answer["content"].as_str().unwrap();
        assert!(out.starts_with("a line of text"));
        assert!(out.ends_with("with é in it\n"));
        let total = 10_000 * line.len();
        assert!(out.contains(&format!("of {total} bytes omitted")));
    }
}
