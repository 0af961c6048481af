//! grep (docs/local-tools.md, "Tool: grep"; docs/decisions.md, decisions 5, 6 and 16),
//! run as users and hosts run it, on trees made for each test.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use serde_json::{json, Value};

use super::glob::unprivileged;
use crate::common::{call, call_shellclaw, run};

/// A temporary tree of files with the given contents.
fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, content) in files {
        let path = dir.path().join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
    }
    dir
}

/// grep with `args`, run inside `dir`.
fn grep_in(dir: &Path, args: Value) -> Value {
    run("grep").dir(dir).json_in(&args).json()
}

/// The output lines of a grep answer, checked against its count.
fn lines(answer: &Value) -> Vec<String> {
    let output = answer["output"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    let lines: Vec<String> = if output.is_empty() {
        Vec::new()
    } else {
        output.split('\n').map(String::from).collect()
    };
    assert_eq!(
        answer["count"],
        lines.len(),
        "count matches the lines: {answer}"
    );
    lines
}

/// The lines `pattern` finds in the top-level files of `dir`.
fn matches(dir: &Path, pattern: &str) -> Vec<String> {
    lines(&grep_in(dir, json!({ "pattern": pattern })))
}

fn numbered(lines: &[&str]) -> String {
    lines.join("\n") + "\n"
}

#[test]
fn spec_example() {
    let mut main = vec!["int main(void) {"; 41];
    main.push("// TODO: implement error handling");
    main.push("}");
    let mut util = vec!["static int x;"; 14];
    util.push("// TODO: optimize this");
    let dir = tree(&[
        ("src/main.c", numbered(&main).as_bytes()),
        ("src/util.c", numbered(&util).as_bytes()),
        ("src/util.h", b"// TODO: not a .c file\n"),
        ("src/sub/deep.c", b"// TODO: below the top level\n"),
    ]);
    let answer = grep_in(
        dir.path(),
        json!({"pattern": "TODO", "glob": "*.c", "path": "src"}),
    );
    assert_eq!(
        answer,
        json!({
            "output": "src/main.c:42: // TODO: implement error handling\nsrc/util.c:15: // TODO: optimize this",
            "count": 2
        })
    );
    let out = run("grep")
        .dir(dir.path())
        .json_in(&json!({"pattern": "optimize", "glob": "*.c", "path": "src"}))
        .output();
    assert_eq!(
        out.stdout,
        r#"{"output":"src/util.c:15: // TODO: optimize this","count":1}"#
    );
}

#[test]
fn defaults_are_every_top_level_file_of_dot() {
    let dir = tree(&[
        ("a.c", b"hit\n"),
        ("b.txt", b"miss\nhit\n"),
        ("sub/c.c", b"hit\n"),
    ]);
    let expected = ["./a.c:1: hit", "./b.txt:2: hit"];
    assert_eq!(matches(dir.path(), "hit"), expected);
    let answer = grep_in(
        dir.path(),
        json!({"pattern": "hit", "glob": "", "path": ""}),
    );
    assert_eq!(
        lines(&answer),
        expected,
        "empty glob and path are the defaults"
    );
}

#[test]
fn globstar_searches_the_whole_tree() {
    let dir = tree(&[
        ("a.rs", b"fn a() {}\n"),
        ("src/b.rs", b"fn b() {}\n"),
        ("src/deep/er/c.rs", b"x\nfn c() {}\n"),
        ("src/d.txt", b"fn d() {}\n"),
    ]);
    let base = dir.path().to_str().unwrap();
    let answer = call(
        "grep",
        json!({"pattern": "fn", "glob": "**/*.rs", "path": base}),
    );
    assert_eq!(
        lines(&answer),
        [
            format!("{base}/a.rs:1: fn a() {{}}"),
            format!("{base}/src/b.rs:1: fn b() {{}}"),
            format!("{base}/src/deep/er/c.rs:2: fn c() {{}}"),
        ]
    );
    let answer = grep_in(dir.path(), json!({"pattern": "fn", "glob": "src/**/*.rs"}));
    assert_eq!(
        lines(&answer),
        ["./src/b.rs:1: fn b() {}", "./src/deep/er/c.rs:2: fn c() {}"]
    );
}

#[test]
fn a_file_as_path_is_searched_itself() {
    let dir = tree(&[("src/main.c", b"int x;\n// TODO\n")]);
    let answer = grep_in(dir.path(), json!({"pattern": "TODO", "path": "src/main.c"}));
    assert_eq!(
        answer,
        json!({"output": "src/main.c:2: // TODO", "count": 1})
    );
}

#[test]
fn no_match_is_empty_not_an_error() {
    let dir = tree(&[("a.txt", b"hello\n")]);
    let none = json!({"output": "", "count": 0});
    assert_eq!(grep_in(dir.path(), json!({"pattern": "absent"})), none);
    assert_eq!(
        grep_in(dir.path(), json!({"pattern": "hello", "glob": "*.rs"})),
        none
    );
    assert_eq!(
        grep_in(
            dir.path(),
            json!({"pattern": "hello", "path": "nonexistent"})
        ),
        none
    );
}

#[test]
fn a_single_match_has_no_trailing_newline_even_without_one_in_the_file() {
    let dir = tree(&[("a.txt", b"first\nlast line")]);
    assert_eq!(
        grep_in(dir.path(), json!({"pattern": "last"})),
        json!({"output": "./a.txt:2: last line", "count": 1})
    );
}

#[test]
fn count_is_matching_lines_and_a_line_prints_once() {
    let dir = tree(&[("a.txt", b"a a a\nb\na\n")]);
    assert_eq!(
        grep_in(dir.path(), json!({"pattern": "a"})),
        json!({"output": "./a.txt:1: a a a\n./a.txt:3: a", "count": 2})
    );
}

#[test]
fn files_come_in_byte_order_lines_in_file_order() {
    let dir = tree(&[
        ("b", b"x1\nx2\n"),
        ("a.b", b"x\n"),
        ("a/b", b"x\n"),
        ("B", b"x\n"),
        ("_", b"x\n"),
    ]);
    let answer = grep_in(dir.path(), json!({"pattern": "x", "glob": "**"}));
    assert_eq!(
        lines(&answer),
        [
            "./B:1: x",
            "./_:1: x",
            "./a.b:1: x",
            "./a/b:1: x",
            "./b:1: x1",
            "./b:2: x2"
        ]
    );
}

#[test]
fn many_files_in_one_directory_stay_sorted_and_complete() {
    let dir = tree(&[]);
    let mut expected = Vec::new();
    for i in 0..500 {
        let name = format!("f{i:03}.txt");
        fs::write(dir.path().join(&name), format!("line\nneedle {i}\n")).unwrap();
        expected.push(format!("./{name}:2: needle {i}"));
    }
    assert_eq!(matches(dir.path(), "needle"), expected);
}

#[test]
fn symlinks_are_skipped_and_never_followed() {
    let dir = tree(&[
        ("real.txt", b"target\n"),
        ("sub/inner.txt", b"target\n"),
        (".hidden/h.txt", b"target\n"),
        (".dotfile", b"target\n"),
    ]);
    symlink(dir.path().join("real.txt"), dir.path().join("link.txt")).unwrap();
    symlink(dir.path().join("sub"), dir.path().join("linkdir")).unwrap();
    let answer = grep_in(dir.path(), json!({"pattern": "target", "glob": "**/*"}));
    assert_eq!(
        lines(&answer),
        ["./real.txt:1: target", "./sub/inner.txt:1: target"]
    );
    // Named explicitly, a link is still not a regular file.
    let answer = grep_in(dir.path(), json!({"pattern": "target", "glob": "link.txt"}));
    assert_eq!(lines(&answer), Vec::<String>::new());
    // Dotfiles and dot directories are searched when named.
    let answer = grep_in(dir.path(), json!({"pattern": "target", "glob": ".*"}));
    assert_eq!(lines(&answer), ["./.dotfile:1: target"]);
    let answer = grep_in(
        dir.path(),
        json!({"pattern": "target", "glob": ".hidden/*"}),
    );
    assert_eq!(lines(&answer), ["./.hidden/h.txt:1: target"]);
}

#[test]
fn fifos_and_directories_are_skipped() {
    let dir = tree(&[("a.txt", b"x\n"), ("d/x", b"x\n")]);
    let fifo = std::ffi::CString::new(dir.path().join("fifo").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    // Opening the FIFO would block for ever: the answer proves it was not.
    assert_eq!(matches(dir.path(), "x"), ["./a.txt:1: x"]);
}

#[test]
fn ere_features() {
    let dir = tree(&[(
        "f",
        b"foo\nbar\nfooo\nfo\ncolor\ncolour\n123\nabc123\n  indented\nend.\nendx\nmain() {\n(paren)\n",
    )]);
    let d = dir.path();
    let n = |pattern: &str| -> Vec<String> {
        matches(d, pattern)
            .into_iter()
            .map(|l| l.split_once(": ").unwrap().1.to_string())
            .collect()
    };
    assert_eq!(n("foo|bar"), ["foo", "bar", "fooo"]);
    assert_eq!(n("^fo+$"), ["foo", "fooo", "fo"]);
    assert_eq!(n("^colou?r$"), ["color", "colour"]);
    assert_eq!(n("^[0-9]+$"), ["123"]);
    assert_eq!(n("^[[:digit:]]{3}$"), ["123"]);
    assert_eq!(n("^[[:alpha:]]+[[:digit:]]+$"), ["abc123"]);
    assert_eq!(n("^[^a-z0-9]"), ["  indented", "(paren)"]);
    assert_eq!(n("^(fo){1}o$"), ["foo"]);
    assert_eq!(n(r"end\."), ["end."]);
    assert_eq!(n("end."), ["end.", "endx"]);
    assert_eq!(n("main() {"), Vec::<String>::new(), "() is an empty group");
    assert_eq!(n(r"main\(\) \{"), ["main() {"]);
    assert_eq!(n(r"\) \{$|^\(p"), ["main() {", "(paren)"]);
    assert_eq!(n("paren)"), ["(paren)"], "an unmatched ) is literal");
    assert_eq!(n(r"\bcolou?r\b"), ["color", "colour"]);
}

#[test]
fn invalid_regex_is_invalid_pattern() {
    let dir = tree(&[("a", b"x\n")]);
    assert_eq!(
        grep_in(dir.path(), json!({"pattern": "(unclosed"})),
        json!({"error": r"Invalid pattern: Unmatched ( or \(", "error_code": "INVALID_PATTERN"})
    );
    for (pattern, reason) in [
        ("[abc", "Unmatched [, [^, [:, [., or [="),
        ("a\\", "Trailing backslash"),
        ("[[:nope:]]", "unknown character class '[:nope:]'"),
        ("*x", "repetition operator missing expression"),
    ] {
        let answer = grep_in(dir.path(), json!({ "pattern": pattern }));
        assert_eq!(answer["error_code"], "INVALID_PATTERN", "{pattern}");
        let error = answer["error"].as_str().unwrap();
        assert!(
            error.starts_with(&format!("Invalid pattern: {reason}")),
            "{pattern}: {error}"
        );
    }
}

#[test]
fn invalid_glob_is_invalid_pattern_too() {
    let dir = tree(&[("a", b"x\n")]);
    assert_eq!(
        grep_in(dir.path(), json!({"pattern": "x", "glob": "*.[ch"})),
        json!({"error": "Invalid glob pattern: unclosed '['", "error_code": "INVALID_PATTERN"})
    );
}

#[test]
fn binary_and_invalid_utf8_are_searched_as_text_and_stay_valid_json() {
    let dir = tree(&[("bin", b"\x00\x01needle\xff\xfe end\r\nother\x00\n")]);
    let out = run("grep")
        .dir(dir.path())
        .json_in(&json!({"pattern": "needle"}))
        .output();
    let answer: Value = serde_json::from_str(&out.stdout).expect("valid JSON");
    assert_eq!(
        answer,
        json!({"output": "./bin:1: \u{0}\u{1}needle\u{FFFD}\u{FFFD} end\r", "count": 1})
    );
}

#[test]
fn lines_keep_their_carriage_return() {
    let dir = tree(&[("dos.txt", b"one\r\ntwo\r\n")]);
    assert_eq!(matches(dir.path(), "two"), ["./dos.txt:2: two\r"]);
}

#[test]
fn very_long_lines_come_back_whole() {
    let long = "x".repeat(3_000_000) + "needle" + &"y".repeat(1_000_000);
    let content = format!("short\n{long}\nafter needle\n");
    let dir = tree(&[("long.txt", content.as_bytes())]);
    let answer = lines(&grep_in(dir.path(), json!({"pattern": "needle"})));
    assert_eq!(answer.len(), 2);
    assert_eq!(answer[0], format!("./long.txt:2: {long}"));
    assert_eq!(answer[1], "./long.txt:3: after needle");
}

#[test]
fn line_numbers_hold_in_large_files() {
    let mut content = String::new();
    let mut expected = Vec::new();
    for i in 1..=200_000 {
        if i % 20_000 == 0 {
            content.push_str(&format!("match {i}\n"));
            expected.push(format!("./big.txt:{i}: match {i}"));
        } else {
            content.push_str("some ordinary text on this line\n");
        }
    }
    let dir = tree(&[("big.txt", content.as_bytes())]);
    assert_eq!(matches(dir.path(), "^match"), expected);
}

#[test]
fn no_match_spans_lines() {
    let dir = tree(&[("f", b"a\nb\na b\n")]);
    assert_eq!(matches(dir.path(), "a[^x]b"), ["./f:3: a b"]);
    assert_eq!(matches(dir.path(), r"a\s*b$"), ["./f:3: a b"]);
    assert_eq!(matches(dir.path(), "^$"), Vec::<String>::new());
}

#[test]
fn unreadable_files_are_skipped() {
    let dir = tree(&[("ok.txt", b"secret\n"), ("locked.txt", b"secret\n")]);
    fs::set_permissions(
        dir.path().join("locked.txt"),
        fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    let answer = unprivileged::call(dir.path(), "grep", json!({"pattern": "secret"}));
    assert_eq!(answer, json!({"output": "./ok.txt:1: secret", "count": 1}));
}

#[test]
fn both_protocols_give_the_same_answer() {
    let dir = tree(&[("a.txt", b"hello\n")]);
    let args = json!({"pattern": "hel+o", "path": dir.path()});
    let expected = call("grep", args.clone());
    assert_eq!(expected["count"], 1);
    let out = call_shellclaw("grep", args);
    assert_eq!((out.code, out.json()), (0, expected));

    let out = call_shellclaw("grep", json!({"pattern": "("}));
    assert_eq!(out.code, 1);
    assert_eq!(out.json()["error_code"], "INVALID_PATTERN");
    assert_eq!(out.stderr, "grep: Invalid pattern: Unmatched ( or \\(\n");
    let out = run("grep").json_in(&json!({"pattern": "("})).output();
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
}

/// Patterns whose match could run across lines (`[^x]*`, `\s`,
/// `[[:space:]]`) stay linear: on 200 000 short lines the old search took
/// time quadratic in them (about 45 minutes), GNU grep takes milliseconds.
#[test]
fn patterns_that_could_cross_lines_do_not_hang() {
    use std::time::{Duration, Instant};
    let mut text = "a\n".repeat(200_000);
    text.push('b');
    let dir = tree(&[("big.txt", text.as_bytes())]);
    for pattern in ["a[^x]*b", r"a\s*b", "a[[:space:]]*b", r"a\W*b"] {
        let args = json!({"pattern": pattern, "path": "big.txt"});
        let mut child = std::process::Command::new(crate::common::link("grep"))
            .arg(args.to_string())
            .current_dir(dir.path())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A generous bound that only a hang exceeds.
        let deadline = Instant::now() + Duration::from_secs(120);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                child.kill().unwrap();
                panic!("grep {pattern} hangs");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().unwrap();
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(answer, json!({"output": "", "count": 0}), "{pattern}");
    }
}

/// A line longer than 64 MiB (here a 3 GB sparse file without a newline)
/// is reported instead of taking all memory; the other files are searched
/// as usual.
#[test]
fn a_huge_line_is_reported_not_held() {
    let dir = tree(&[("a.txt", b"needle\n")]);
    std::fs::File::create(dir.path().join("b.bin"))
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", "ulimit -v 1000000; exec \"$0\""])
        .arg(crate::common::link("grep"))
        .current_dir(dir.path());
    let out =
        super::file_support::run_within(cmd, json!({"pattern": "needle"}).to_string().as_bytes());
    assert_eq!(
        out.json(),
        json!({"output": "./a.txt:1: needle", "count": 1, "skipped": format!(
            "./b.bin:1: a line of {} bytes, longer than the 67108864 bytes grep can hold: not searched",
            3u64 << 30
        )}),
        "{out:?}"
    );
}
