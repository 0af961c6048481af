//! What a model sees of one call (decision 25): at most `--model-output`
//! bytes (32 KiB by default) of each output, so one noisy command does not
//! fill the model's context. The outputs are bash's `output`, a failed
//! call's `stdout` and `stderr`, and for any other result its JSON text as
//! a whole (a plain-text result, its text). A longer output keeps its head
//! and its tail, and between them one line saying how many bytes and lines
//! were left out and where the whole output was saved, so the model can
//! read the rest with file_read or grep. The host's capture cap
//! (`--max-output`, 1 MiB) is separate and applies first. Both hosts that
//! serve a model use it: the assistant, and the MCP server (decision 73).
//! Where the whole outputs go is each host's own business.

use std::io;
use std::path::PathBuf;

use serde_json::Value;

/// The default of `--model-output`.
pub const DEFAULT_MODEL_OUTPUT: usize = 32 << 10;

/// The envelope as the model gets it: each output longer than `limit` cut
/// to its head and tail, the whole of it saved with `save(what, text)`,
/// which returns the file's path. An output that cannot be saved is still
/// cut, and the line says why the rest cannot be read.
pub fn envelope(
    tool: &str,
    mut envelope: Value,
    limit: usize,
    save: &mut dyn FnMut(&str, &str) -> io::Result<PathBuf>,
) -> Value {
    let mut cut_field = |value: &mut Value, what: &str| {
        if let Value::String(text) = value {
            if text.len() > limit {
                *text = cut(text, limit, &saved(save(what, text)));
            }
        }
    };
    if envelope["tool_success"] == Value::Bool(false) {
        cut_field(&mut envelope["stdout"], "stdout.txt");
        cut_field(&mut envelope["stderr"], "stderr.txt");
        return envelope;
    }
    let result = &mut envelope["result"];
    match result {
        Value::Object(map) if tool == "bash" && map.get("output").is_some_and(Value::is_string) => {
            if let Some(output) = map.get_mut("output") {
                cut_field(output, "output.txt");
            }
        }
        Value::String(_) => cut_field(result, "result.txt"),
        Value::Null => {}
        other => {
            let text = other.to_string();
            if text.len() > limit {
                *other = Value::String(cut(&text, limit, &saved(save("result.json", &text))));
            }
        }
    }
    envelope
}

/// Where the whole output is, as the cut line says it.
fn saved(outcome: io::Result<PathBuf>) -> String {
    match outcome {
        Ok(path) => format!("the whole output is in {}", path.display()),
        Err(e) => format!("the whole output could not be saved: {e}"),
    }
}

/// `text` cut to at most `limit` bytes: the head, a line saying what was
/// left out (`where_` says where the rest is), the tail. Cuts fall on
/// character boundaries.
pub fn cut(text: &str, limit: usize, where_: &str) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let marker = |bytes: usize, lines: usize| {
        format!("\n[... {bytes} bytes and {lines} lines left out; {where_} ...]\n")
    };
    // Room for the line with the largest counts it could give.
    let budget = limit.saturating_sub(marker(text.len(), text.len()).len());
    let head_end = floor_boundary(text, budget / 2);
    let tail_start = ceil_boundary(text, text.len() - (budget - budget / 2));
    let tail_start = tail_start.max(head_end);
    let left_out = &text[head_end..tail_start];
    let lines = left_out.bytes().filter(|&b| b == b'\n').count();
    format!(
        "{}{}{}",
        &text[..head_end],
        marker(left_out.len(), lines),
        &text[tail_start..]
    )
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn short_text_is_whole_and_long_text_fits_the_limit() {
        assert_eq!(cut("abc", 3, "x"), "abc");
        let text = numbered(10_000);
        for limit in [200, 1000, 32 << 10] {
            let out = cut(&text, limit, "the whole output is in /s/o.txt");
            assert!(out.len() <= limit, "{limit}: {}", out.len());
            assert!(out.starts_with("line 1\n"), "{limit}");
            assert!(out.ends_with("line 10000\n"), "{limit}");
            let line = out
                .lines()
                .find(|l| l.starts_with("[... "))
                .expect("the cut line");
            // The counts are exact: head + left out + tail = the whole.
            let bytes: usize = line[5..].split(' ').next().unwrap().parse().unwrap();
            assert_eq!(out.len() - line.len() - 2 + bytes, text.len(), "{limit}");
            assert!(
                line.ends_with("; the whole output is in /s/o.txt ...]"),
                "{line}"
            );
        }
        let out = cut(&numbered(100), 300, "w");
        assert!(out.contains("lines left out"), "{out}");
    }

    #[test]
    fn counts_lines_and_respects_characters() {
        let text = "é".repeat(1000);
        let out = cut(&text, 120, "w");
        assert!(out.len() <= 120);
        assert!(out.contains("bytes and 0 lines left out"), "{out}");
        // A limit smaller than the line itself keeps only the line.
        let out = cut(&text, 10, "w");
        assert!(out.starts_with("\n[... 2000 bytes"), "{out}");
    }

    fn save_into(
        saved: &mut Vec<(String, String)>,
    ) -> impl FnMut(&str, &str) -> io::Result<PathBuf> + '_ {
        move |what, text| {
            saved.push((what.to_string(), text.to_string()));
            Ok(PathBuf::from(format!("/s/c1.{what}")))
        }
    }

    #[test]
    fn bash_output_failed_streams_and_other_results() {
        let long = numbered(50);
        let mut saved = Vec::new();
        let e = envelope(
            "bash",
            json!({"tool_success": true, "result": {"output": long, "exit_code": 0}}),
            100,
            &mut save_into(&mut saved),
        );
        let output = e["result"]["output"].as_str().unwrap();
        assert!(output.len() <= 100);
        assert!(output.contains("/s/c1.output.txt"), "{output}");
        assert_eq!(e["result"]["exit_code"], 0);
        assert_eq!(saved, [("output.txt".to_string(), long.clone())]);

        let mut saved = Vec::new();
        let e = envelope(
            "x",
            json!({"tool_success": false, "error": "e", "stdout": long, "stderr": "short"}),
            100,
            &mut save_into(&mut saved),
        );
        assert!(e["stdout"].as_str().unwrap().contains("c1.stdout.txt"));
        assert_eq!(e["stderr"], "short");
        assert_eq!(e["error"], "e");
        assert_eq!(saved.len(), 1);

        let mut saved = Vec::new();
        let result = json!({"output": long});
        let e = envelope(
            "file_read",
            json!({"tool_success": true, "result": result}),
            300,
            &mut save_into(&mut saved),
        );
        let text = e["result"].as_str().unwrap();
        assert!(text.starts_with("{\"output\":\"line 1\\n"), "{text}");
        assert!(text.contains("c1.result.json"), "{text}");
        assert_eq!(saved[0].1, result.to_string());

        // Small envelopes pass untouched, and nothing is saved.
        let mut saved = Vec::new();
        let small = json!({"tool_success": true, "result": {"output": "hi", "exit_code": 0}});
        assert_eq!(
            envelope("bash", small.clone(), 100, &mut save_into(&mut saved)),
            small
        );
        assert!(saved.is_empty());
    }
}
