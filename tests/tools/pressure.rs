//! The local tools under pressure (spec README, decisions 32 and 33): writes
//! killed at random instants, many edits of one file at once, memory and
//! output bounded whatever the input, lines longer than grep holds, paths
//! longer than PATH_MAX.
//!
//! The long variants are ignored by default; run them with
//! `cargo test --release --test all tools::pressure -- --ignored`.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::file_support::{entries, scratch};
use crate::common::link;

/// A small deterministic generator, so a failing run can be repeated (the
/// seed is printed).
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        eprintln!("seed {seed}");
        Rng(seed | 1)
    }
    fn below(&mut self, n: u64) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// Starts `tool` with `input` on stdin (fed by a thread, so a large input
/// never blocks the caller), output discarded.
fn spawn(tool: &str, input: Vec<u8>) -> std::process::Child {
    let mut child = Command::new(link(tool))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the tool");
    let mut stdin = child.stdin.take().expect("stdin");
    std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    child
}

/// Kills file_write at random instants while it replaces a file of `old`
/// bytes with one of `new` bytes: afterwards the file holds all of one or
/// all of the other, and nothing else is in the directory but, should the
/// kill have fallen between linking the complete temporary file and
/// renaming it (a few microseconds), that complete file, which the next
/// write removes.
fn kill_writes(kills: usize, old: usize, new: usize) {
    let dir = scratch();
    let path = dir.path().join("f");
    let old_content = "a".repeat(old);
    let new_content = "b".repeat(new);
    let input = json!({"file_path": path, "content": new_content})
        .to_string()
        .into_bytes();
    // How long one whole write takes here, so kills land all through it.
    std::fs::write(&path, &old_content).unwrap();
    let start = Instant::now();
    let out = spawn("file-write", input.clone())
        .wait_with_output()
        .unwrap();
    let whole = start.elapsed();
    assert!(out.status.success(), "{out:?}");
    let mut rng = Rng::seeded();
    let mut complete = 0;
    for round in 0..kills {
        std::fs::write(&path, &old_content).unwrap();
        let mut child = spawn("file-write", input.clone());
        let delay = rng.below(whole.as_micros() as u64 * 3 / 2 + 1);
        std::thread::sleep(Duration::from_micros(delay));
        let _ = child.kill();
        let _ = child.wait();
        let content = std::fs::read(&path).unwrap();
        assert!(
            content == old_content.as_bytes() || content == new_content.as_bytes(),
            "round {round}: a mix of {} bytes after a kill at {delay} µs",
            content.len()
        );
        let names = entries(dir.path());
        if names.len() > 1 {
            assert_eq!(names, [".f.ikigai-tmp", "f"], "round {round}");
            let temp = std::fs::read(dir.path().join(".f.ikigai-tmp")).unwrap();
            assert!(
                temp == new_content.as_bytes(),
                "round {round}: a torn leftover"
            );
            complete += 1;
        }
    }
    eprintln!("{kills} kills, {complete} between link and rename");
    std::fs::write(&path, &old_content).unwrap();
    assert!(spawn("file-write", input).wait().unwrap().success());
    assert_eq!(entries(dir.path()), ["f"]);
}

#[test]
fn a_write_killed_at_any_instant_leaves_old_or_new_and_no_litter() {
    kill_writes(25, 3 << 20, 4 << 20);
}

#[test]
#[ignore = "long: 200 kills of 32 MB writes"]
fn a_write_killed_at_any_instant_stress() {
    kill_writes(200, 24 << 20, 32 << 20);
}

/// `edits` file_edit processes at once, each replacing its own line of one
/// file: every edit that answered success is in the file, and every other
/// answered FILE_CHANGED (none does while only our tools write the file).
fn concurrent_edits(edits: usize) {
    let dir = scratch();
    let path = dir.path().join("shared.txt");
    let text: String = (0..edits).map(|i| format!("slot {i} = old\n")).collect();
    std::fs::write(&path, text).unwrap();
    let children: Vec<_> = (0..edits)
        .map(|i| {
            let args = json!({
                "file_path": path,
                "old_string": format!("slot {i} = old\n"),
                "new_string": format!("slot {i} = new\n"),
            });
            spawn("file-edit", args.to_string().into_bytes())
        })
        .collect();
    let answers: Vec<Value> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
        })
        .collect();
    let content = std::fs::read_to_string(&path).unwrap();
    for (i, answer) in answers.iter().enumerate() {
        if answer["replacements"] == 1 {
            assert!(
                content.contains(&format!("slot {i} = new\n")),
                "edit {i} answered success and was lost"
            );
        } else {
            assert_eq!(answer["error_code"], "FILE_CHANGED", "edit {i}: {answer}");
            assert!(content.contains(&format!("slot {i} = old\n")));
        }
    }
    let applied = answers.iter().filter(|a| a["replacements"] == 1).count();
    assert_eq!(applied, edits, "only our tools wrote: every edit applies");
    assert_eq!(entries(dir.path()), ["shared.txt"]);
}

#[test]
fn many_edits_of_one_file_at_once_lose_nothing() {
    concurrent_edits(40);
}

#[test]
#[ignore = "long: 700 processes editing one file"]
fn many_edits_of_one_file_at_once_stress() {
    concurrent_edits(700);
}

/// Edits and whole writes of one file at once: each write replaces the
/// whole file, so afterwards the file is one write's content with, on top
/// of it, exactly the edits that answered after it; never a mix.
#[test]
fn writes_and_edits_of_one_file_interleave_whole() {
    let dir = scratch();
    let path = dir.path().join("f");
    let base: String = (0..20).map(|i| format!("line {i}\n")).collect();
    std::fs::write(&path, &base).unwrap();
    let mut children = Vec::new();
    for i in 0..20 {
        let args = if i % 5 == 0 {
            json!({"file_path": path, "content": base})
        } else {
            json!({"file_path": path, "old_string": format!("line {i}\n"), "new_string": format!("LINE {i}\n")})
        };
        let tool = if i % 5 == 0 {
            "file-write"
        } else {
            "file-edit"
        };
        children.push(spawn(tool, args.to_string().into_bytes()));
    }
    for child in children {
        let out = child.wait_with_output().unwrap();
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(answer.get("error").is_none(), "{answer}");
    }
    let content = std::fs::read_to_string(&path).unwrap();
    for i in 0..20 {
        let lower = content.contains(&format!("line {i}\n"));
        let upper = content.contains(&format!("LINE {i}\n"));
        assert!(lower != upper, "line {i} torn: {content}");
    }
    assert_eq!(entries(dir.path()), ["f"]);
}
