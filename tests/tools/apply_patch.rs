//! apply-patch as hosts run it (decisions 67 and 103): every operation and
//! matching step, every refusal leaving the tree as it was, CRLF and BOM
//! files, moves across directories, the sandbox refusing a write before
//! anything is written, concurrent patches of one file, and Codex's own
//! scenarios, each tree compared byte for byte.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::file_support::{call_unprivileged, chmod, mode, scratch};
use crate::common::{bin, run};
use crate::host::Dirs;

const TOOL: &str = "apply-patch";

/// Applies `patch` with `dir` as the working directory.
fn apply(dir: &Path, patch: &str) -> Value {
    let out = run(TOOL)
        .dir(dir)
        .json_in(&json!({ "input": patch }))
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    out.json()
}

/// Every file and directory under `dir`: path -> content (None for a
/// directory), so two trees compare byte for byte, empty directories too.
fn tree(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
        for entry in std::fs::read_dir(dir).expect("read dir") {
            let path = entry.expect("entry").path();
            let name = path
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                out.insert(name, None);
                walk(root, &path, out);
            } else {
                out.insert(name, Some(std::fs::read(&path).expect("read")));
            }
        }
    }
    let mut out = BTreeMap::new();
    if dir.exists() {
        walk(dir, dir, &mut out);
    }
    out
}

/// Copies the tree at `from` into `to`.
fn copy_tree(from: &Path, to: &Path) {
    for (name, content) in tree(from) {
        match content {
            None => std::fs::create_dir_all(to.join(&name)).expect("mkdir"),
            Some(bytes) => {
                let path = to.join(&name);
                std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
                std::fs::write(path, bytes).expect("write");
            }
        }
    }
}

fn write(dir: &Path, name: &str, content: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

fn error_of(answer: &Value) -> (&str, &str) {
    (
        answer["error_code"]
            .as_str()
            .unwrap_or_else(|| panic!("not an error: {answer}")),
        answer["error"].as_str().unwrap(),
    )
}

/// Codex's own scenarios, read where they are kept beside the checkout
/// and never copied into it (docs/apply-patch.md, "Tested against
/// Codex's scenarios").
fn scenarios() -> Option<PathBuf> {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = checkout
        .parent()?
        .join("shared")
        .join("apply-patch-scenarios");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: {} is absent, so Codex's apply_patch scenarios cannot run here",
            dir.display()
        );
        None
    }
}

#[test]
fn codex_scenarios_leave_the_expected_tree() {
    let Some(root) = scenarios() else {
        return;
    };
    let mut names: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("patch.txt").is_file())
        .collect();
    names.sort();
    assert!(names.len() >= 23, "{} scenarios", names.len());
    for scenario in names {
        let name = scenario.file_name().unwrap().to_string_lossy().into_owned();
        let work = tempfile::tempdir().unwrap();
        copy_tree(&scenario.join("input"), work.path());
        let before = tree(work.path());
        let patch = std::fs::read_to_string(scenario.join("patch.txt")).unwrap();
        let answer = apply(work.path(), &patch);
        // 015 expects a partial application; decision 67 refuses that: the
        // tree stays as it was.
        let expected = if name.starts_with("015_") {
            before.clone()
        } else {
            tree(&scenario.join("expected"))
        };
        assert_eq!(tree(work.path()), expected, "{name}: {answer}");
        let failed = answer.get("error").is_some();
        assert_eq!(failed, expected == before, "{name}: {answer}");
        if failed {
            assert!(
                answer["error"]
                    .as_str()
                    .unwrap()
                    .ends_with("No file was changed.")
                    || answer["error_code"] == "INVALID_ARG",
                "{name}: {answer}"
            );
        }
    }
}

#[test]
fn every_operation_with_its_summary() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "modify.txt", "one\ntwo\nthree\n");
    write(dir, "gone.txt", "a\nb\nc\n");
    write(dir, "src/old.rs", "fn main() {\n    old();\n}\n");
    let answer = apply(
        dir,
        "*** Begin Patch\n\
         *** Add File: deep/new/file.txt\n+first\n+second\n\
         *** Delete File: gone.txt\n\
         *** Update File: modify.txt\n@@\n one\n-two\n+2\n+2.5\n three\n\
         *** Update File: src/old.rs\n*** Move to: lib/moved/new.rs\n@@ fn main() {\n-    old();\n+    new();\n\
         *** End Patch",
    );
    assert_eq!(
        answer["output"],
        "Applied the patch:\nA deep/new/file.txt (+2 -0)\nD gone.txt (+0 -3)\n\
         M modify.txt (+2 -1)\nR src/old.rs -> lib/moved/new.rs (+1 -1)"
    );
    assert_eq!(
        answer["files"],
        json!([
            {"path": "deep/new/file.txt", "action": "added", "added": 2, "removed": 0},
            {"path": "gone.txt", "action": "deleted", "added": 0, "removed": 3},
            {"path": "modify.txt", "action": "updated", "added": 2, "removed": 1},
            {"path": "src/old.rs", "action": "moved", "added": 1, "removed": 1, "to": "lib/moved/new.rs"},
        ])
    );
    assert_eq!(read(dir, "deep/new/file.txt"), "first\nsecond\n");
    assert!(!dir.join("gone.txt").exists());
    assert_eq!(read(dir, "modify.txt"), "one\n2\n2.5\nthree\n");
    assert_eq!(
        read(dir, "lib/moved/new.rs"),
        "fn main() {\n    new();\n}\n"
    );
    assert!(!dir.join("src/old.rs").exists());
    // Nothing else: no temporary file left anywhere.
    let names: Vec<String> = tree(dir).into_keys().collect();
    assert_eq!(
        names,
        [
            "deep",
            "deep/new",
            "deep/new/file.txt",
            "lib",
            "lib/moved",
            "lib/moved/new.rs",
            "modify.txt",
            "src"
        ]
    );
}

#[test]
fn absolute_paths_and_operations_in_order_on_one_file() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("f.txt");
    let elsewhere = tempfile::tempdir().unwrap();
    let patch = format!(
        "*** Begin Patch\n*** Add File: {f}\n+a\n+b\n*** Update File: {f}\n@@\n-b\n+B\n\
         *** End Patch",
        f = file.display()
    );
    let answer = apply(elsewhere.path(), &patch);
    assert_eq!(answer["files"].as_array().unwrap().len(), 2, "{answer}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a\nB\n");
}

#[test]
fn each_matching_step() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // Exact; trailing whitespace; leading and trailing; Unicode punctuation.
    write(
        dir,
        "f.txt",
        "exact\ntrailing   \n    indented\nsay \u{201C}hi\u{201D} \u{2014} it\u{2019}s\u{00A0}ok\n",
    );
    let answer = apply(
        dir,
        "*** Begin Patch\n*** Update File: f.txt\n@@\n-exact\n+1\n@@\n-trailing\n+2\n\
         @@\n-indented\n+3\n@@\n-say \"hi\" - it's ok\n+4\n*** End Patch",
    );
    assert!(answer.get("error").is_none(), "{answer}");
    assert_eq!(read(dir, "f.txt"), "1\n2\n3\n4\n");
}

#[test]
fn context_header_and_end_of_file() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let text = "fn a() {\n    body();\n}\n\nfn b() {\n    body();\n}\n";
    write(dir, "f.rs", text);
    apply(
        dir,
        "*** Begin Patch\n*** Update File: f.rs\n@@ fn b() {\n-    body();\n+    b_body();\n\
         @@\n }\n+// end\n*** End of File\n*** End Patch",
    );
    assert_eq!(
        read(dir, "f.rs"),
        "fn a() {\n    body();\n}\n\nfn b() {\n    b_body();\n}\n// end\n"
    );
}

#[test]
fn crlf_and_bom_files_keep_their_form() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    std::fs::write(dir.join("crlf.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
    std::fs::write(dir.join("bom.txt"), "\u{FEFF}first\nsecond\n").unwrap();
    std::fs::write(dir.join("both.txt"), "\u{FEFF}a\r\nb\r\n").unwrap();
    apply(
        dir,
        "*** Begin Patch\n*** Update File: crlf.txt\n@@\n one\n-two\n+2\n+2b\n three\n\
         *** Update File: bom.txt\n@@\n-first\n+1st\n\
         *** Update File: both.txt\n@@\n a\n-b\n+B\n*** End Patch",
    );
    assert_eq!(
        std::fs::read(dir.join("crlf.txt")).unwrap(),
        b"one\r\n2\r\n2b\r\nthree\r\n"
    );
    assert_eq!(read(dir, "bom.txt"), "\u{FEFF}1st\nsecond\n");
    assert_eq!(read(dir, "both.txt"), "\u{FEFF}a\r\nB\r\n");
}

#[test]
fn mode_and_symbolic_links_are_kept() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "script.sh", "echo old\n");
    chmod(&dir.join("script.sh"), 0o751);
    write(dir, "real.txt", "x\n");
    std::os::unix::fs::symlink("real.txt", dir.join("link.txt")).unwrap();
    apply(
        dir,
        "*** Begin Patch\n*** Update File: script.sh\n@@\n-echo old\n+echo new\n\
         *** Update File: link.txt\n@@\n-x\n+y\n*** End Patch",
    );
    assert_eq!(read(dir, "script.sh"), "echo new\n");
    assert_eq!(mode(&dir.join("script.sh")), 0o751);
    assert!(std::fs::symlink_metadata(dir.join("link.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(read(dir, "real.txt"), "y\n");
}

/// A patch whose first operation is good and whose last fails: the tree
/// must stay exactly as it was, and the error name the failing operation.
fn refused(setup: &[(&str, &str)], last_op: &str) -> (String, String) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "ok.txt", "keep\n");
    for (name, content) in setup {
        write(dir, name, content);
    }
    let before = tree(dir);
    let patch = format!(
        "*** Begin Patch\n*** Update File: ok.txt\n@@\n-keep\n+changed\n\
         *** Add File: new.txt\n+new\n{last_op}*** End Patch"
    );
    let answer = apply(dir, &patch);
    assert_eq!(tree(dir), before, "{answer}");
    let (code, message) = error_of(&answer);
    (code.to_string(), message.to_string())
}

#[test]
fn failures_name_the_operation_and_write_nothing() {
    let (code, m) = refused(&[], "*** Update File: missing.txt\n@@\n-a\n+b\n");
    assert_eq!(code, "FILE_NOT_FOUND");
    assert!(
        m.starts_with("Update File: missing.txt: File not found: missing.txt"),
        "{m}"
    );
    assert!(m.ends_with("\nNo file was changed."), "{m}");

    let (code, m) = refused(&[], "*** Frobnicate File: x\n");
    assert_eq!(code, "INVALID_ARG");
    assert!(
        m.contains("'*** Frobnicate File: x' is not an operation"),
        "{m}"
    );

    let (code, m) = refused(&[], "*** Add File: ../escape.txt\n+x\n");
    assert_eq!(code, "INVALID_ARG");
    assert!(
        m.starts_with("Add File: ../escape.txt: '../escape.txt' leaves the working directory"),
        "{m}"
    );
    let (code, m) = refused(&[], "*** Delete File: a/../../x\n");
    assert_eq!(code, "INVALID_ARG", "{m}");
    let (code, m) = refused(&[], "*** Delete File: /etc/../etc/hosts\n");
    assert_eq!(code, "INVALID_ARG", "{m}");
    assert!(m.contains("holds '..'"), "{m}");
    let (code, m) = refused(
        &[("x.txt", "x\n")],
        "*** Update File: x.txt\n*** Move to: ../out.txt\n@@\n-x\n+y\n",
    );
    assert_eq!(code, "INVALID_ARG", "{m}");

    let (code, m) = refused(
        &[("bin.dat", "a\0b\nline\n")],
        "*** Update File: bin.dat\n@@\n-line\n+other\n",
    );
    assert_eq!(code, "UNSUPPORTED_CONTENT");
    assert!(
        m.starts_with("Update File: bin.dat: bin.dat: the file is binary"),
        "{m}"
    );

    let (code, m) = refused(&[("adir/inner.txt", "x")], "*** Add File: adir\n+x\n");
    assert_eq!(code, "OPEN_FAILED");
    assert!(
        m.starts_with("Add File: adir: Cannot open file: adir (is a directory)"),
        "{m}"
    );

    let (code, m) = refused(&[("adir/inner.txt", "x")], "*** Delete File: adir\n");
    assert_eq!(code, "OPEN_FAILED", "{m}");

    let (code, m) = refused(&[("plain", "x")], "*** Add File: plain/sub.txt\n+x\n");
    assert_eq!(code, "OPEN_FAILED");
    assert!(m.contains("'plain' is not a directory"), "{m}");

    let twice = "fn a() {\n    same();\n}\nfn b() {\n    same();\n}\n";
    let (code, m) = refused(
        &[("twice.rs", twice)],
        "*** Update File: twice.rs\n@@\n-    same();\n+    other();\n",
    );
    assert_eq!(code, "NOT_UNIQUE");
    assert!(
        m.starts_with("Update File: twice.rs: chunk 1 of 1: its lines occur more than once"),
        "{m}"
    );
    assert!(m.contains("(at lines 2 and 5)"), "{m}");

    let (code, m) = refused(
        &[("near.rs", "fn main() {\n    let x = 1;\n    run(x);\n}\n")],
        "*** Update File: near.rs\n@@\n     let x = 2;\n-    run(x);\n+    go(x);\n",
    );
    assert_eq!(code, "NOT_FOUND");
    assert!(
        m.starts_with("Update File: near.rs: chunk 1 of 1: could not find these lines"),
        "{m}"
    );
    assert!(m.contains("\n      let x = 2;\n      run(x);\n"), "{m}");
    assert!(
        m.contains("The file's nearest lines (1-4):\n       1 | fn main() {\n       2 |     let x = 1;\n       3 |     run(x);"),
        "{m}"
    );

    let (code, m) = refused(&[], "*** Update File: ok.txt\n@@ fn nowhere()\n-keep\n+x\n");
    assert_eq!(code, "NOT_FOUND");
    assert!(m.contains("the line 'fn nowhere()' that '@@' names"), "{m}");
}

#[test]
fn a_patch_without_its_begin_line_is_refused() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "f.txt", "a\n");
    let answer = apply(
        d.path(),
        "*** Update File: f.txt\n@@\n-a\n+b\n*** End Patch",
    );
    let (code, message) = error_of(&answer);
    assert_eq!(code, "INVALID_ARG");
    assert!(
        message.starts_with(
            "parameter 'input': the first line of the patch must be '*** Begin Patch'"
        ),
        "{message}"
    );
    assert_eq!(read(d.path(), "f.txt"), "a\n");
}

#[test]
fn a_read_only_file_is_permission_denied_before_anything_is_written() {
    let d = scratch();
    let dir = d.path();
    write(dir, "a.txt", "a\n");
    write(dir, "locked.txt", "l\n");
    chmod(&dir.join("a.txt"), 0o666);
    chmod(&dir.join("locked.txt"), 0o444);
    let patch = format!(
        "*** Begin Patch\n*** Update File: {a}\n@@\n-a\n+b\n*** Update File: {l}\n@@\n-l\n+m\n\
         *** End Patch",
        a = dir.join("a.txt").display(),
        l = dir.join("locked.txt").display()
    );
    let answer = call_unprivileged(TOOL, &json!({ "input": patch }));
    let (code, message) = error_of(&answer);
    assert_eq!(code, "PERMISSION_DENIED", "{answer}");
    assert!(message.contains("locked.txt"), "{message}");
    assert_eq!(read(dir, "a.txt"), "a\n");
    assert_eq!(read(dir, "locked.txt"), "l\n");
}

#[test]
fn both_protocols_and_the_schema() {
    let schema = run(TOOL).arg("--schema").json();
    assert_eq!(schema["name"], "apply_patch");
    assert_eq!(
        schema["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true})
    );
    assert_eq!(schema["parameters"]["required"], json!(["input"]));
    let d = tempfile::tempdir().unwrap();
    let args = json!({"input": "*** Begin Patch\n*** Add File: s.txt\n+shellclaw\n*** End Patch"});
    let out = run("apply_patch")
        .dir(d.path())
        .arg(args.to_string())
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(read(d.path(), "s.txt"), "shellclaw\n");
    // A failure, shellclaw-style: exit 1 and the message on stderr.
    let out = run("apply_patch")
        .dir(d.path())
        .arg(json!({"input": "nope"}).to_string())
        .output();
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("first line of the patch"), "{out:?}");
}

/// Twenty patches of one file at once, each changing its own line: the
/// file's lock makes each apply on top of the others, none lost.
#[test]
fn concurrent_patches_of_one_file_all_apply() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_path_buf();
    let lines: String = (0..20).map(|i| format!("slot {i}\n")).collect();
    write(&dir, "shared.txt", &lines);
    let workers: Vec<_> = (0..20)
        .map(|i| {
            let dir = dir.clone();
            std::thread::spawn(move || {
                apply(
                    &dir,
                    &format!(
                        "*** Begin Patch\n*** Update File: shared.txt\n@@\n-slot {i}\n+done {i}\n\
                         *** End Patch"
                    ),
                )
            })
        })
        .collect();
    for w in workers {
        let answer = w.join().unwrap();
        assert!(answer.get("error").is_none(), "{answer}");
    }
    let expected: String = (0..20).map(|i| format!("done {i}\n")).collect();
    assert_eq!(read(&dir, "shared.txt"), expected);
}

/// Under `--sandbox workspace-write`, a patch that also writes outside the
/// workspace is refused by the fence before its first file is written.
#[test]
fn the_sandbox_refuses_before_anything_is_written() {
    if crate::sandbox::landlock().is_none() {
        return;
    }
    let root = crate::common::unwritable_by_default();
    let ws = root.path().join("ws");
    let outside = root.path().join("outside");
    std::fs::create_dir(&ws).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(ws.join("in.txt"), "in\n").unwrap();
    std::fs::write(outside.join("existing.txt"), "out\n").unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dirs = Dirs::new();
    dirs.link(&dirs.sys, "apply_patch", bin());
    let call = |patch: String| {
        let args = json!({ "input": patch });
        let out = dirs
            .ikigai()
            .env("TMPDIR", &ws)
            .env_remove("IKIGAI_SANDBOX")
            .dir(&ws)
            .args(["--sandbox", "workspace-write", "call", "apply_patch"])
            .arg(args.to_string())
            .output();
        out.json()
    };
    let first = "*** Update File: in.txt\n@@\n-in\n+changed\n*** Add File: new.txt\n+n\n";
    for (last, code) in [
        (
            format!(
                "*** Add File: {}\n+x\n",
                outside.join("sub/new.txt").display()
            ),
            "PERMISSION_DENIED",
        ),
        (
            format!(
                "*** Update File: {}\n@@\n-out\n+x\n",
                outside.join("existing.txt").display()
            ),
            "PERMISSION_DENIED",
        ),
        (
            format!(
                "*** Delete File: {}\n",
                outside.join("existing.txt").display()
            ),
            "PERMISSION_DENIED",
        ),
    ] {
        let envelope = call(format!("*** Begin Patch\n{first}{last}*** End Patch"));
        assert_eq!(envelope["result"]["error_code"], code, "{envelope}");
        let message = envelope["result"]["error"].as_str().unwrap();
        assert!(message.ends_with("No file was changed."), "{message}");
        assert_eq!(std::fs::read_to_string(ws.join("in.txt")).unwrap(), "in\n");
        assert!(!ws.join("new.txt").exists(), "{envelope}");
        assert_eq!(
            std::fs::read_to_string(outside.join("existing.txt")).unwrap(),
            "out\n"
        );
        assert!(!outside.join("sub").exists());
    }
    // Inside the workspace the same patch applies.
    let envelope = call(format!("*** Begin Patch\n{first}*** End Patch"));
    assert_eq!(envelope["tool_success"], true, "{envelope}");
    assert_eq!(
        std::fs::read_to_string(ws.join("in.txt")).unwrap(),
        "changed\n"
    );
}

/// Served by `ikigai-tools mcp` like every tool: listed with its
/// annotations, and called (in the sandbox's worker) with its answer as
/// the result's structured content.
#[test]
fn served_over_mcp() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("m.txt");
    std::fs::write(&file, "alpha\nbeta\n").unwrap();
    let mut s = crate::mcp::StdioServer::start(&[]);
    let rpc = |id: i64, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    s.send(&rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "apply-patch-test", "version": "1"}}),
    ));
    assert_eq!(s.recv()["id"], 1);
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    s.send(&rpc(2, "tools/list", json!({})));
    let list = s.recv();
    let tool = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "apply_patch")
        .unwrap_or_else(|| panic!("{list}"))
        .clone();
    assert_eq!(tool["annotations"]["destructiveHint"], true, "{tool}");
    assert_eq!(tool["annotations"]["readOnlyHint"], false, "{tool}");
    let patch = format!(
        "*** Begin Patch\n*** Update File: {}\n@@\n alpha\n-beta\n+gamma\n*** End Patch",
        file.display()
    );
    s.send(&rpc(
        3,
        "tools/call",
        json!({"name": "apply_patch", "arguments": {"input": patch}}),
    ));
    let answer = s.recv();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["files"][0]["action"], "updated",
        "{answer}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "alpha\ngamma\n");
    assert_eq!(s.finish(), Some(0));
}
