//! glob (docs/local-tools.md, "Tool: glob"; docs/decisions.md, decisions 6 and 16),
//! run as users and hosts run it, on trees made for each test.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use serde_json::{json, Value};

use crate::common::{call, call_shellclaw, run};

/// A temporary tree: `files` are created with their parent directories; a
/// name ending in `/` is an empty directory.
fn tree(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in files {
        let path = dir.path().join(name);
        if name.ends_with('/') {
            fs::create_dir_all(&path).unwrap();
        } else {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, "").unwrap();
        }
    }
    dir
}

/// glob with no `path`, run inside `dir`.
fn glob_in(dir: &Path, pattern: &str) -> Value {
    run("glob")
        .dir(dir)
        .json_in(&json!({ "pattern": pattern }))
        .json()
}

fn lines(answer: &Value) -> Vec<String> {
    let output = answer["output"].as_str().unwrap();
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

fn found(dir: &Path, pattern: &str) -> Vec<String> {
    lines(&glob_in(dir, pattern))
}

#[test]
fn spec_example_prints_path_slash_name() {
    let dir = tree(&["file1.txt", "file2.txt", "notes.txt", "other.md"]);
    let base = dir.path().to_str().unwrap();
    let answer = call("glob", json!({"pattern": "*.txt", "path": base}));
    assert_eq!(
        answer,
        json!({
            "output": format!("{base}/file1.txt\n{base}/file2.txt\n{base}/notes.txt"),
            "count": 3
        })
    );
    // Key order as the spec shows it.
    let out = run("glob")
        .json_in(&json!({"pattern": "*.md", "path": base}))
        .output();
    assert_eq!(
        out.stdout,
        format!(r#"{{"output":"{base}/other.md","count":1}}"#)
    );
}

#[test]
fn without_path_names_are_relative_and_bare() {
    let dir = tree(&["file1.txt", "file2.txt", "sub/x.txt"]);
    assert_eq!(found(dir.path(), "*.txt"), ["file1.txt", "file2.txt"]);
    assert_eq!(found(dir.path(), "sub/*.txt"), ["sub/x.txt"]);
    let answer = run("glob")
        .dir(dir.path())
        .json_in(&json!({"pattern": "*.txt", "path": ""}))
        .json();
    assert_eq!(
        lines(&answer),
        ["file1.txt", "file2.txt"],
        "empty path = none"
    );
}

#[test]
fn path_joining_keeps_the_form_given() {
    let dir = tree(&["src/a.c"]);
    let base = dir.path().to_str().unwrap();
    let answer = run("glob")
        .dir(dir.path())
        .json_in(&json!({"pattern": "*.c", "path": "src/"}))
        .json();
    assert_eq!(answer, json!({"output": "src/a.c", "count": 1}));
    let answer = run("glob")
        .dir(dir.path())
        .json_in(&json!({"pattern": "*", "path": "."}))
        .json();
    assert_eq!(answer, json!({"output": "./src", "count": 1}));
    let answer = call(
        "glob",
        json!({"pattern": "src//*.c", "path": format!("{base}/")}),
    );
    assert_eq!(answer["output"], format!("{base}/src/a.c"));
    let answer = run("glob")
        .dir(dir.path().join("src"))
        .json_in(&json!({"pattern": "../src/*.c"}))
        .json();
    assert_eq!(answer["output"], "../src/a.c");
}

#[test]
fn path_is_a_directory_name_not_a_pattern() {
    let dir = tree(&["app/[slug]/page.tsx", "app/s/page.tsx"]);
    let answer = run("glob")
        .dir(dir.path())
        .json_in(&json!({"pattern": "*.tsx", "path": "app/[slug]"}))
        .json();
    assert_eq!(answer, json!({"output": "app/[slug]/page.tsx", "count": 1}));
}

#[test]
fn absolute_patterns_ignore_path() {
    let dir = tree(&["a.txt", "b.txt"]);
    let base = dir.path().to_str().unwrap();
    let expected = json!({"output": format!("{base}/a.txt\n{base}/b.txt"), "count": 2});
    assert_eq!(
        call("glob", json!({"pattern": format!("{base}/*.txt")})),
        expected
    );
    assert_eq!(
        call(
            "glob",
            json!({"pattern": format!("{base}/*.txt"), "path": "/nonexistent"})
        ),
        expected
    );
}

#[test]
fn no_match_is_empty_not_an_error() {
    let dir = tree(&["a.txt"]);
    let none = json!({"output": "", "count": 0});
    assert_eq!(glob_in(dir.path(), "*.rs"), none);
    assert_eq!(glob_in(dir.path(), "missing/*.txt"), none);
    assert_eq!(glob_in(dir.path(), ""), none);
}

#[test]
fn a_path_that_cannot_be_read_is_read_error() {
    let dir = tree(&["a.txt"]);
    let file = dir.path().join("a.txt");
    for (path, why) in [
        ("/nonexistent/dir", "No such file or directory"),
        (file.to_str().unwrap(), "Not a directory"),
    ] {
        let answer = call("glob", json!({"pattern": "*", "path": path}));
        assert_eq!(answer["error_code"], "READ_ERROR", "{answer}");
        let message = answer["error"].as_str().unwrap();
        assert!(
            message.starts_with(&format!(
                "Read error during glob: cannot read directory {path}: "
            )),
            "{message}"
        );
        assert!(message.ends_with(why), "{message}");
    }
}

#[test]
fn single_match_has_no_newline() {
    let dir = tree(&["only.txt"]);
    assert_eq!(
        glob_in(dir.path(), "*.txt"),
        json!({"output": "only.txt", "count": 1})
    );
}

#[test]
fn a_pattern_without_wildcards_is_an_existence_test() {
    let dir = tree(&["exact.txt", "d/"]);
    assert_eq!(found(dir.path(), "exact.txt"), ["exact.txt"]);
    assert_eq!(found(dir.path(), "d"), ["d"]);
    assert!(found(dir.path(), "absent.txt").is_empty());
    assert_eq!(found(dir.path(), r"exa\ct.txt"), ["exact.txt"], "\\ quotes");
}

#[test]
fn posix_wildcards() {
    let dir = tree(&["a1", "b2", "c3", "ab", "x*y", "x-y", "é"]);
    let d = dir.path();
    assert_eq!(found(d, "?"), ["é"], "? is one character, not one byte");
    assert_eq!(found(d, "??"), ["a1", "ab", "b2", "c3"]);
    assert_eq!(found(d, "[ab]?"), ["a1", "ab", "b2"]);
    assert_eq!(found(d, "[!ab]?"), ["c3"]);
    assert_eq!(found(d, "[a-b][[:digit:]]"), ["a1", "b2"]);
    assert_eq!(found(d, r"x\*y"), ["x*y"]);
    assert_eq!(found(d, "x[*]y"), ["x*y"]);
    assert_eq!(found(d, "x?y"), ["x*y", "x-y"]);
    assert_eq!(
        found(d, "{a,b}*"),
        Vec::<String>::new(),
        "no brace expansion"
    );
}

#[test]
fn dotfiles_need_a_literal_dot() {
    let dir = tree(&[".hidden", ".config/x", "shown", "a.b"]);
    let d = dir.path();
    assert_eq!(found(d, "*"), ["a.b", "shown"]);
    assert_eq!(found(d, "?hidden"), Vec::<String>::new());
    assert_eq!(found(d, "[.]hidden"), Vec::<String>::new());
    assert_eq!(found(d, ".*"), [".config", ".hidden"], "never . or ..");
    assert_eq!(found(d, ".config/*"), [".config/x"]);
    assert_eq!(found(d, "*/*"), Vec::<String>::new());
}

#[test]
fn directories_match_and_a_trailing_slash_keeps_only_them() {
    let dir = tree(&["dir1/f", "dir2/", "file"]);
    symlink(dir.path().join("dir1"), dir.path().join("link")).unwrap();
    let d = dir.path();
    assert_eq!(found(d, "*"), ["dir1", "dir2", "file", "link"]);
    assert_eq!(found(d, "*/"), ["dir1/", "dir2/", "link/"]);
}

#[test]
fn globstar_matches_zero_and_many_directories() {
    let dir = tree(&["a.c", "src/b.c", "src/x/y/z/c.c", "src/x/d.h", "e.h"]);
    let d = dir.path();
    assert_eq!(found(d, "**/*.c"), ["a.c", "src/b.c", "src/x/y/z/c.c"]);
    assert_eq!(found(d, "src/**/*.c"), ["src/b.c", "src/x/y/z/c.c"]);
    assert_eq!(found(d, "**/x/**/*.c"), ["src/x/y/z/c.c"]);
    assert_eq!(found(d, "**/z"), ["src/x/y/z"]);
    assert_eq!(
        found(d, "src/**"),
        [
            "src/b.c",
            "src/x",
            "src/x/d.h",
            "src/x/y",
            "src/x/y/z",
            "src/x/y/z/c.c"
        ]
    );
    assert_eq!(
        found(d, "src/**/"),
        ["src/", "src/x/", "src/x/y/", "src/x/y/z/"]
    );
}

#[test]
fn globstar_skips_dot_and_symlinked_directories() {
    let dir = tree(&[
        "a.c",
        ".git/b.c",
        "src/.cache/c.c",
        "src/d.c",
        "elsewhere/e.c",
    ]);
    symlink(dir.path().join("elsewhere"), dir.path().join("src/link")).unwrap();
    // A loop: followed, it would never end.
    symlink(dir.path(), dir.path().join("src/loop")).unwrap();
    let d = dir.path();
    assert_eq!(found(d, "**/*.c"), ["a.c", "elsewhere/e.c", "src/d.c"]);
    // Named explicitly, they are entered, as in POSIX glob.
    assert_eq!(found(d, "**/.cache/*.c"), ["src/.cache/c.c"]);
    assert_eq!(found(d, "src/link/*.c"), ["src/link/e.c"]);
    assert_eq!(found(d, "src/*/*.c"), ["src/link/e.c", "src/loop/a.c"]);
    assert!(found(d, "**").iter().all(|p| !p.starts_with("src/loop/")));
}

#[test]
fn results_are_sorted_by_bytes_of_the_whole_path() {
    let dir = tree(&["a.b", "a/b", "B", "_", "Z10", "Z2", "a-c/x"]);
    assert_eq!(
        found(dir.path(), "**"),
        ["B", "Z10", "Z2", "_", "a", "a-c", "a-c/x", "a.b", "a/b"]
    );
}

#[test]
fn many_entries_come_back_sorted_and_complete() {
    let names: Vec<String> = (0..300)
        .map(|i| format!("d{}/f{:03}.rs", i % 7, (i * 37) % 300))
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let dir = tree(&refs);
    let mut expected = names.clone();
    expected.sort();
    assert_eq!(found(dir.path(), "**/*.rs"), expected);
}

#[test]
fn names_that_are_not_utf8_stay_valid_json() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tree(&[]);
    fs::write(
        dir.path().join(std::ffi::OsStr::from_bytes(b"bad\xff.txt")),
        "",
    )
    .unwrap();
    assert_eq!(found(dir.path(), "*.txt"), ["bad\u{FFFD}.txt"]);
}

#[test]
fn invalid_pattern_says_what_is_wrong() {
    let dir = tree(&["x[y"]);
    assert_eq!(
        glob_in(dir.path(), "x["),
        json!({"error": "Invalid glob pattern: unclosed '['", "error_code": "INVALID_PATTERN"})
    );
    assert_eq!(
        glob_in(dir.path(), "[z-a]")["error"],
        "Invalid glob pattern: range 'z-a' is reversed"
    );
    // Quoted, the bracket is a plain character.
    assert_eq!(found(dir.path(), r"x\[y"), ["x[y"]);
}

#[test]
fn unreadable_directories_are_skipped() {
    let dir = tree(&["ok/a.c", "locked/b.c"]);
    // A symbolic link to itself cannot be listed by anyone, root included.
    symlink("self", dir.path().join("self")).unwrap();
    let d = dir.path();
    assert_eq!(found(d, "*/*.c"), ["locked/b.c", "ok/a.c"]);

    fs::set_permissions(d.join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
    let answer = unprivileged::call(d, "glob", json!({"pattern": "*/*.c"}));
    fs::set_permissions(d.join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(answer, json!({"output": "ok/a.c", "count": 1}));
}

#[test]
fn both_protocols_give_the_same_answer() {
    let dir = tree(&["a.txt"]);
    let args = json!({"pattern": "*.txt", "path": dir.path()});
    let expected = call("glob", args.clone());
    let out = call_shellclaw("glob", args);
    assert_eq!((out.code, out.json()), (0, expected));

    let out = call_shellclaw("glob", json!({"pattern": "["}));
    assert_eq!(out.code, 1);
    assert_eq!(out.json()["error_code"], "INVALID_PATTERN");
    assert_eq!(out.stderr, "glob: Invalid glob pattern: unclosed '['\n");
    let out = run("glob").json_in(&json!({"pattern": "["})).output();
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
}

#[test]
fn bad_arguments_are_invalid_arg() {
    let answer = call("glob", json!({"pattern": 5}));
    assert_eq!(answer["error_code"], "INVALID_ARG");
    assert!(answer["error"].as_str().unwrap().contains("'pattern'"));
}

/// Runs a tool as a user without privileges, so permission bits hold:
/// as `nobody` when the tests run as root (as they may in CI), else as we are.
pub mod unprivileged {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    use std::path::Path;
    use std::process::Command;

    use serde_json::Value;

    const NOBODY: u32 = 65534;

    pub fn call(dir: &Path, tool: &str, args: Value) -> Value {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let mut cmd = if root {
            // nobody must reach the binary and the tree: copy the binary
            // next to the tree and open the tree's root directory to all.
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            let copy = dir.join(".ikigai-tools");
            std::fs::copy(crate::common::bin(), &copy).unwrap();
            let mut cmd = Command::new(copy);
            cmd.uid(NOBODY).gid(NOBODY);
            cmd
        } else {
            Command::new(crate::common::bin())
        };
        let out = cmd
            .current_dir(dir)
            .arg(tool)
            .arg(args.to_string())
            .output()
            .expect("run the binary");
        let text = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }
}

/// A wildcard follows a link to a directory, but not back to one on the
/// path walked: two links to `.` under `*/*/.../*` (24 levels) would
/// otherwise list 2^24 paths and run until the host's timeout. A link to a
/// directory elsewhere is still followed, and a link spelled out is too.
#[test]
fn links_back_up_the_path_are_not_followed_by_wildcards() {
    let dir = tree(&["f", "other/g"]);
    symlink(".", dir.path().join("l1")).unwrap();
    symlink(".", dir.path().join("l2")).unwrap();
    symlink("other", dir.path().join("l3")).unwrap();
    let deep = vec!["*"; 24].join("/");
    let answer = super::file_support::call_within(
        "glob",
        &json!({"pattern": deep, "path": dir.path().to_str().unwrap()}),
    );
    assert_eq!(answer["count"], 0, "{answer}");
    assert_eq!(found(dir.path(), "*/*"), ["l3/g", "other/g"]);
    assert_eq!(
        found(dir.path(), "l1/l2/*"),
        ["l1/l2/f", "l1/l2/l1", "l1/l2/l2", "l1/l2/l3", "l1/l2/other"]
    );
}
