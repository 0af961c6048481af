//! file_edit (docs/local-tools.md, "Tool: file-edit"; docs/decisions.md, decisions 5,
//! 7 and 17): exact byte matches, uniqueness, replace_all, every INVALID_ARG
//! case, untouched bytes kept exactly, near-miss hints, and the atomic write.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde_json::{json, Value};

use super::file_support::{
    call_memory_limited, call_unprivileged, call_with_small_file_limit, call_within, chmod,
    entries, in_full_fs, is_root, mode, scratch,
};
use crate::common::{call, call_shellclaw, run};

fn edit(path: &Path, old: &str, new: &str) -> Value {
    call(
        "file-edit",
        json!({"file_path": path, "old_string": old, "new_string": new}),
    )
}

fn edit_all(path: &Path, old: &str, new: &str) -> Value {
    call(
        "file-edit",
        json!({"file_path": path, "old_string": old, "new_string": new, "replace_all": true}),
    )
}

fn error(message: &str, code: &str) -> Value {
    json!({"error": message, "error_code": code})
}

/// A scratch directory holding `name` with `content`.
fn file_with(name: &str, content: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = scratch();
    let path = dir.path().join(name);
    std::fs::write(&path, content).unwrap();
    (dir, path)
}

#[test]
fn spec_example() {
    let (dir, path) = file_with("config.txt", b"verbose = 1\ndebug = false\nport = 80\n");
    assert_eq!(
        edit(&path, "debug = false", "debug = true"),
        json!({"output": "Replaced 1 occurrence in config.txt", "replacements": 1})
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "verbose = 1\ndebug = true\nport = 80\n"
    );
    assert_eq!(entries(dir.path()), ["config.txt"]);
}

#[test]
fn multi_line_edits_and_deletion() {
    let (_dir, path) = file_with("f.c", b"int a;\nint b;\nint c;\n");
    edit(&path, "int a;\nint b;\n", "long ab;\n");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "long ab;\nint c;\n"
    );
    assert_eq!(edit(&path, "int c;\n", "")["replacements"], 1);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "long ab;\n");
}

#[test]
fn replace_all_replaces_every_occurrence() {
    let (_dir, path) = file_with("f", b"foo bar foo baz foo");
    assert_eq!(
        edit_all(&path, "foo", "qux"),
        json!({"output": "Replaced 3 occurrences in f", "replacements": 3})
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "qux bar qux baz qux"
    );
    // A single occurrence with replace_all is fine too.
    assert_eq!(
        edit_all(&path, "bar", "BAR"),
        json!({"output": "Replaced 1 occurrence in f", "replacements": 1})
    );
}

#[test]
fn replace_all_across_many_occurrences_matches_str_replace() {
    let original: String = (0..50_000)
        .map(|i| format!("item {i}: old value\n"))
        .collect();
    let (_dir, path) = file_with("many", original.as_bytes());
    assert_eq!(edit_all(&path, "old", "brand new")["replacements"], 50_000);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        original.replace("old", "brand new")
    );
}

#[test]
fn a_large_file_is_edited_exactly() {
    // About 12 MB: the scan crosses many reads and the copy several pieces.
    let original: String = (0..400_000).map(|i| format!("row {i:07} data\n")).collect();
    let (dir, path) = file_with("large.txt", original.as_bytes());
    assert_eq!(
        edit(&path, "row 0200000 data\n", "row 0200000 EDITED\n")["replacements"],
        1
    );
    let edited = original.replacen("row 0200000 data\n", "row 0200000 EDITED\n", 1);
    assert!(std::fs::read_to_string(&path).unwrap() == edited);
    assert_eq!(edit_all(&path, " data\n", "\n")["replacements"], 399_999);
    assert!(std::fs::read_to_string(&path).unwrap() == edited.replace(" data\n", "\n"));
    assert_eq!(entries(dir.path()), ["large.txt"]);
}

#[test]
fn replace_all_with_no_match_succeeds_and_leaves_the_file_alone() {
    let (dir, path) = file_with("f", b"nothing here\n");
    let before = std::fs::metadata(&path).unwrap();
    assert_eq!(
        edit_all(&path, "absent", "x"),
        json!({"output": "Replaced 0 occurrences in f", "replacements": 0})
    );
    let after = std::fs::metadata(&path).unwrap();
    assert_eq!(after.ino(), before.ino(), "the file was not rewritten");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "nothing here\n");
    assert_eq!(entries(dir.path()), ["f"]);
}

#[test]
fn spec_example_not_unique() {
    let (dir, path) = file_with("f", b"x = 1\nx = 1\nx = 1\n");
    assert_eq!(
        edit(&path, "x = 1", "x = 2"),
        error(
            "String found 3 times, use replace_all to replace all",
            "NOT_UNIQUE"
        )
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "x = 1\nx = 1\nx = 1\n"
    );
    assert_eq!(entries(dir.path()), ["f"]);
    // Overlapping occurrences make the place ambiguous as well, and say so.
    let (_dir, path) = file_with("g", b"aaa");
    assert_eq!(
        edit(&path, "aa", "b"),
        error(
            "String found 2 times where occurrences overlap, so the place is ambiguous; \
             include more of the surrounding text in old_string (replace_all would replace \
             only the first)",
            "NOT_UNIQUE"
        )
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "aaa");
}

/// NOT_UNIQUE counts as replace_all replaces: non-overlapping occurrences.
#[test]
fn not_unique_count_is_what_replace_all_replaces() {
    let (_dir, path) = file_with("f", b"aaaaa");
    assert_eq!(
        edit(&path, "aa", "b"),
        error(
            "String found 2 times, use replace_all to replace all",
            "NOT_UNIQUE"
        )
    );
    assert_eq!(edit_all(&path, "aa", "b")["replacements"], 2);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "bba");
}

#[test]
fn spec_example_not_found() {
    let (_dir, path) = file_with("f", b"alpha\nbeta\n");
    assert_eq!(
        edit(&path, "gamma", "delta"),
        error("String not found in file", "NOT_FOUND")
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "alpha\nbeta\n");
    // Matching is exact: case and inner whitespace count.
    assert_eq!(edit(&path, "Alpha", "x")["error_code"], "NOT_FOUND");
}

/// The near-miss hint holds the file and normalised copies of it, so a
/// huge file gets the plain NOT_FOUND, never OUT_OF_MEMORY.
#[test]
fn not_found_in_a_huge_file_is_not_out_of_memory() {
    let (_dir, path) = file_with("big", b"");
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let args = json!({"file_path": path, "old_string": "gamma\n", "new_string": "x"});
    assert_eq!(
        call_memory_limited("file-edit", &args, 300).json(),
        error("String not found in file", "NOT_FOUND")
    );
}

#[test]
fn spec_examples_invalid_arguments() {
    let (_dir, path) = file_with("f", b"same\n");
    assert_eq!(
        edit(&path, "same", "same"),
        error("old_string and new_string are identical", "INVALID_ARG")
    );
    assert_eq!(
        edit(&path, "", "x"),
        error("old_string cannot be empty", "INVALID_ARG")
    );
    assert_eq!(
        edit(&path, "", ""),
        error("old_string cannot be empty", "INVALID_ARG")
    );
    // Checked before the file is touched: a missing file says the same.
    assert_eq!(
        edit(&path.with_file_name("missing"), "a", "a"),
        error("old_string and new_string are identical", "INVALID_ARG")
    );
    let out = call(
        "file-edit",
        json!({"file_path": path, "old_string": "same", "new_string": "x", "replace_all": "yes"}),
    );
    assert_eq!(
        out,
        error(
            "parameter 'replace_all' must be a boolean, got a string",
            "INVALID_ARG"
        )
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "same\n");
}

#[test]
fn spec_example_missing_file() {
    let dir = scratch();
    let out = run("file-edit")
        .dir(dir.path())
        .json_in(&json!({"file_path": "missing.txt", "old_string": "a", "new_string": "b"}))
        .json();
    assert_eq!(out, error("File not found: missing.txt", "FILE_NOT_FOUND"));
    // A dangling link has no file to edit either.
    std::os::unix::fs::symlink("gone", dir.path().join("dangling")).unwrap();
    let out = edit(&dir.path().join("dangling"), "a", "b");
    assert_eq!(out["error_code"], "FILE_NOT_FOUND");
}

#[test]
fn crlf_bom_and_invalid_utf8_bytes_are_kept() {
    let original = b"\xef\xbb\xbfname = caf\xe9\r\nmode = old\r\n\x00\xff tail\r\n";
    let (_dir, path) = file_with("win.ini", original);
    assert_eq!(edit(&path, "mode = old", "mode = new")["replacements"], 1);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"\xef\xbb\xbfname = caf\xe9\r\nmode = new\r\n\x00\xff tail\r\n"
    );
    // A match that spans CRLF line endings, given with them.
    edit(&path, "new\r\n\u{0}", "newer\r\n\u{0}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"\xef\xbb\xbfname = caf\xe9\r\nmode = newer\r\n\x00\xff tail\r\n"
    );
}

#[test]
fn not_found_explains_line_ending_and_whitespace_near_misses() {
    let (_dir, crlf) = file_with("crlf.txt", b"one\r\ntwo\r\nthree\r\n");
    assert_eq!(
        edit(&crlf, "one\ntwo", "x"),
        error(
            "String not found in file (it would match with CRLF line endings: the file uses \
             \\r\\n, old_string uses \\n)",
            "NOT_FOUND"
        )
    );
    let (_dir, lf) = file_with("lf.txt", b"one\ntwo\n");
    assert_eq!(
        edit(&lf, "one\r\ntwo", "x"),
        error(
            "String not found in file (it would match with LF line endings: the file uses \
             \\n, old_string uses \\r\\n)",
            "NOT_FOUND"
        )
    );
    let (_dir, ws) = file_with("ws.txt", b"fn main() {  \n\tbody();\t\n}\n");
    assert_eq!(
        edit(&ws, "fn main() {\n\tbody();\n}", "x"),
        error(
            "String not found in file (it would match if trailing whitespace were ignored: \
             the file and old_string differ in spaces or tabs at the ends of lines)",
            "NOT_FOUND"
        )
    );
    let (_dir, both) = file_with("both.txt", b"a = 1 \r\nb = 2\r\n");
    assert_eq!(
        edit(&both, "a = 1\nb = 2", "x"),
        error(
            "String not found in file (it would match if line endings and trailing whitespace \
             were ignored: the file uses \\r\\n, old_string uses \\n, and they differ in spaces \
             or tabs at the ends of lines)",
            "NOT_FOUND"
        )
    );
    for path in [&crlf, &lf, &ws, &both] {
        assert_ne!(std::fs::read(path).unwrap(), b"x");
    }
}

#[test]
fn not_found_explains_replacement_characters() {
    // file_read showed the byte 0xE9 as U+FFFD; that text cannot match it.
    let (_dir, path) = file_with("latin1.txt", b"caf\xe9 = 1\n");
    let shown = call("file-read", json!({"file_path": path}))["output"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(shown, "caf\u{FFFD} = 1\n");
    assert_eq!(
        edit(&path, "caf\u{FFFD} = 1", "x"),
        error(
            "String not found in file (it would match bytes of the file that are not UTF-8, \
             which file_read shows as U+FFFD; choose an old_string around them)",
            "NOT_FOUND"
        )
    );
    // Around them it works, and the byte stays.
    edit(&path, " = 1", " = 2");
    assert_eq!(std::fs::read(&path).unwrap(), b"caf\xe9 = 2\n");
}

#[test]
fn mode_and_symlinks_are_kept_and_no_temp_is_left() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("run.sh"), "#!/bin/sh\necho old\n").unwrap();
    chmod(&d.join("run.sh"), 0o755);
    std::os::unix::fs::symlink("run.sh", d.join("link.sh")).unwrap();
    assert_eq!(
        edit(&d.join("link.sh"), "old", "new"),
        json!({"output": "Replaced 1 occurrence in link.sh", "replacements": 1})
    );
    assert_eq!(
        std::fs::read_to_string(d.join("run.sh")).unwrap(),
        "#!/bin/sh\necho new\n"
    );
    assert_eq!(mode(&d.join("run.sh")), 0o755);
    assert_eq!(
        std::fs::read_link(d.join("link.sh")).unwrap(),
        Path::new("run.sh")
    );
    assert_eq!(entries(d), ["link.sh", "run.sh"]);
}

#[test]
fn a_read_only_file_is_permission_denied_and_unchanged() {
    let (dir, path) = file_with("ro.txt", b"value = 1\n");
    chmod(&path, 0o444);
    let args = json!({"file_path": path, "old_string": "1", "new_string": "2"});
    let denied = error(
        &format!("Permission denied: {}", path.display()),
        "PERMISSION_DENIED",
    );
    assert_eq!(call_unprivileged("file-edit", &args), denied);
    // Decision 17 holds even when nothing would be replaced.
    let mut none = args.clone();
    none["old_string"] = json!("absent");
    none["replace_all"] = json!(true);
    assert_eq!(call_unprivileged("file-edit", &none), denied);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "value = 1\n");
    assert_eq!(entries(dir.path()), ["ro.txt"]);
    if is_root() {
        assert_eq!(call("file-edit", args)["replacements"], 1);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "value = 2\n");
        assert_eq!(mode(&path), 0o444);
    }
}

#[test]
fn an_unreadable_file_is_permission_denied() {
    let (_dir, path) = file_with("secret", b"k = v\n");
    chmod(&path, 0o200);
    let args = json!({"file_path": path, "old_string": "v", "new_string": "w"});
    assert_eq!(
        call_unprivileged("file-edit", &args),
        error(
            &format!("Permission denied: {}", path.display()),
            "PERMISSION_DENIED"
        )
    );
    assert_eq!(mode(&path), 0o200);
    chmod(&path, 0o600);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "k = v\n");
}

#[test]
fn directories_and_fifos_are_open_failed() {
    let dir = scratch();
    let fifo = dir.path().join("fifo");
    super::file_support::mkfifo(&fifo);
    for (path, why) in [
        (dir.path().to_path_buf(), "is a directory"),
        (fifo, "is a FIFO"),
    ] {
        let out = call_within(
            "file-edit",
            &json!({"file_path": path, "old_string": "a", "new_string": "b"}),
        );
        assert_eq!(
            out,
            error(
                &format!("Cannot open file: {} ({why})", path.display()),
                "OPEN_FAILED"
            )
        );
    }
}

#[test]
fn a_full_disk_is_no_space_with_the_old_content_intact() {
    // 40 KiB fits the 64 KiB file system once, not twice.
    let Some((answer, listing, content)) = in_full_fs(
        "head -c 40960 /dev/zero | tr '\\0' a > f.txt; echo marker >> f.txt",
        "file-edit",
        &json!({"file_path": "f.txt", "old_string": "marker", "new_string": "changed"}),
    ) else {
        return;
    };
    assert_eq!(answer, error("No space left on device: f.txt", "NO_SPACE"));
    assert_eq!(listing, ["f.txt"], "no temporary file left");
    assert_eq!(content, "a".repeat(40960) + "marker\n");
}

#[test]
fn a_failed_write_is_write_failed_with_the_old_content_intact() {
    // Past the 512-byte file size limit only through the replacement.
    let (dir, path) = file_with("f.txt", b"head\nmarker\ntail\n");
    let out = call_with_small_file_limit(
        "file-edit",
        &json!({"file_path": path, "old_string": "marker", "new_string": "y".repeat(4096)}),
    );
    assert_eq!(
        out,
        error(
            &format!("Failed to write file: {}", path.display()),
            "WRITE_FAILED"
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"head\nmarker\ntail\n");
    assert_eq!(entries(dir.path()), ["f.txt"], "no temporary file left");
}

#[test]
fn a_read_error_is_read_failed() {
    // /proc/self/mem opens for writing too, but reading address 0 is EIO.
    assert_eq!(
        edit(Path::new("/proc/self/mem"), "a", "b"),
        error("Failed to read file: /proc/self/mem", "READ_FAILED")
    );
}

#[test]
fn shellclaw_protocol() {
    let (_dir, path) = file_with("f", b"a b\n");
    let out = call_shellclaw(
        "file_edit",
        json!({"file_path": path, "old_string": "a", "new_string": "c"}),
    );
    assert_eq!(out.code, 0);
    assert_eq!(
        out.json(),
        json!({"output": "Replaced 1 occurrence in f", "replacements": 1})
    );
    let out = call_shellclaw(
        "file_edit",
        json!({"file_path": path, "old_string": "zzz", "new_string": "c"}),
    );
    assert_eq!(out.code, 1);
    assert_eq!(out.stderr, "file_edit: String not found in file\n");
}
