//! What the model sees of one call: at most `--model-output` bytes (32 KiB
//! by default) of each output, so one noisy command does not fill the
//! model's context. The outputs are bash's `output`, a failed call's
//! `stdout` and `stderr`, and for any other result its JSON text as a whole
//! (a plain-text result, its text). A longer output keeps its head and its
//! tail, and between them one line saying how many bytes and lines were
//! left out and the path of a file that holds the whole output, so the
//! model can read the rest with file_read or grep. The host's capture cap
//! (`--max-output`, 1 MiB) is separate and applies first.
//!
//! The files go in a directory of the session (mode 0700, files 0600: they
//! may hold anything a command printed).

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The default of `--model-output`.
pub const DEFAULT_MODEL_OUTPUT: usize = 32 << 10;

/// Where whole outputs are saved: the session's directory when the
/// conversation is logged, else a private temporary directory made when
/// the first output needs it and removed when the assistant ends.
#[derive(Debug, Default)]
pub struct Outputs {
    temp: Option<tempfile::TempDir>,
}

impl Outputs {
    fn dir(&mut self, session: Option<&Path>) -> io::Result<PathBuf> {
        if let Some(dir) = session {
            super::session::private_dir(dir)?;
            return Ok(dir.to_path_buf());
        }
        if self.temp.is_none() {
            let temp = tempfile::Builder::new()
                .prefix("ikigai-outputs-")
                .tempdir()?;
            // Private before anything is written into it.
            std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o700))?;
            self.temp = Some(temp);
        }
        Ok(self
            .temp
            .as_ref()
            .map(|t| t.path().to_path_buf())
            .unwrap_or_default())
    }

    /// Writes `bytes` to a new file named after the call and the output,
    /// in `session` (the session's directory) if given; returns its path.
    pub fn save(
        &mut self,
        session: Option<&Path>,
        call_id: &str,
        what: &str,
        bytes: &[u8],
    ) -> io::Result<PathBuf> {
        let dir = self.dir(session)?;
        let id: String = call_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        for n in 0.. {
            let name = match n {
                0 => format!("{id}.{what}"),
                n => format!("{id}-{n}.{what}"),
            };
            let path = dir.join(name);
            match write_new(&path, bytes) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                other => return other.map(|()| path),
            }
        }
        unreachable!("an unbounded range ends only by returning")
    }
}

fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)
}

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

    #[test]
    fn saved_files_are_private_and_never_overwritten() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let s1 = dir.path().join("s1");
        let mut outputs = Outputs::default();
        let a = outputs
            .save(Some(&s1), "call/1", "output.txt", b"one")
            .unwrap();
        let b = outputs
            .save(Some(&s1), "call/1", "output.txt", b"two")
            .unwrap();
        assert_eq!(a, dir.path().join("s1/call_1.output.txt"));
        assert_eq!(b, dir.path().join("s1/call_1-1.output.txt"));
        assert_eq!(std::fs::read(&a).unwrap(), b"one");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&a), 0o600);
        assert_eq!(mode(&dir.path().join("s1")), 0o700);
        let t = outputs.save(None, "c", "stdout.txt", b"x").unwrap();
        assert_eq!(mode(t.parent().unwrap()), 0o700);
    }
}
