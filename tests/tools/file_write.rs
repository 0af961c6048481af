//! file_write (docs/local-tools.md, "Tool: file-write"; docs/decisions.md, decisions 7
//! and 17): content written atomically, modes and symbolic links kept, no
//! temporary file left behind, and every error code.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use super::file_support::{
    call_unprivileged, call_with_small_file_limit, call_within, chmod, entries, in_full_fs,
    is_root, mkfifo, mode, run_within, scratch,
};
use crate::common::{bin, call, call_shellclaw, run};

fn write(path: &Path, content: &str) -> Value {
    call("file-write", json!({"file_path": path, "content": content}))
}

fn error(message: &str, code: &str) -> Value {
    json!({"error": message, "error_code": code})
}

#[test]
fn spec_example() {
    let dir = scratch();
    let path = dir.path().join("test.txt");
    assert_eq!(
        write(&path, "Hello, world!\n"),
        json!({"output": "Wrote 14 bytes to test.txt", "bytes": 14})
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "Hello, world!\n");
    assert_eq!(entries(dir.path()), ["test.txt"]);
}

#[test]
fn empty_content_makes_an_empty_file() {
    let dir = scratch();
    let path = dir.path().join("empty");
    assert_eq!(
        write(&path, ""),
        json!({"output": "Wrote 0 bytes to empty", "bytes": 0})
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

#[test]
fn an_existing_file_is_overwritten_whole() {
    let dir = scratch();
    let path = dir.path().join("f");
    std::fs::write(&path, "a much longer old content\n").unwrap();
    write(&path, "new\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
    assert_eq!(entries(dir.path()), ["f"]);
}

#[test]
fn bytes_count_utf8_and_relative_paths_use_the_basename() {
    let dir = scratch();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let out = run("file-write")
        .dir(dir.path())
        .json_in(&json!({"file_path": "sub/h\u{e9}llo.txt", "content": "caf\u{e9} \u{2713}\u{0}"}))
        .json();
    assert_eq!(
        out,
        json!({"output": "Wrote 10 bytes to h\u{e9}llo.txt", "bytes": 10})
    );
    assert_eq!(
        std::fs::read(dir.path().join("sub/h\u{e9}llo.txt")).unwrap(),
        "caf\u{e9} \u{2713}\u{0}".as_bytes()
    );
}

#[test]
fn new_files_get_the_default_mode_under_the_umask() {
    let dir = scratch();
    for (umask, expected) in [("022", 0o644), ("077", 0o600), ("002", 0o664)] {
        let path = dir.path().join(format!("new-{umask}"));
        let args = json!({"file_path": path, "content": "x"}).to_string();
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            &format!("umask {umask}; exec \"$0\" file-write \"$1\""),
        ])
        .arg(bin())
        .arg(args);
        let out = run_within(cmd, b"");
        assert_eq!(out.json()["bytes"], 1, "{out:?}");
        assert_eq!(mode(&path), expected, "umask {umask}");
    }
}

#[test]
fn an_existing_files_mode_is_kept() {
    let dir = scratch();
    for original in [0o755, 0o600, 0o640, 0o4755] {
        let path = dir.path().join(format!("script-{original:o}"));
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        chmod(&path, original);
        write(&path, "#!/bin/sh\necho hi\n");
        assert_eq!(mode(&path), original);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "#!/bin/sh\necho hi\n"
        );
    }
}

#[test]
fn an_existing_files_owner_is_kept_where_the_caller_may() {
    let dir = scratch();
    let path = dir.path().join("owned");
    std::fs::write(&path, "old").unwrap();
    if is_root() {
        // Root replaces nobody's file: it must stay nobody's.
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    }
    let before = std::fs::metadata(&path).unwrap();
    write(&path, "new");
    let after = std::fs::metadata(&path).unwrap();
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    assert_ne!(
        after.ino(),
        before.ino(),
        "replaced by rename, not in place"
    );
}

#[test]
fn a_symlink_is_written_through_and_kept() {
    let dir = scratch();
    let d = dir.path();
    std::fs::create_dir(d.join("real")).unwrap();
    std::fs::write(d.join("real/target.txt"), "old").unwrap();
    chmod(&d.join("real/target.txt"), 0o755);
    std::os::unix::fs::symlink("real/target.txt", d.join("link")).unwrap();
    std::os::unix::fs::symlink(d.join("link"), d.join("link2")).unwrap();

    let out = write(&d.join("link2"), "new");
    assert_eq!(out, json!({"output": "Wrote 3 bytes to link2", "bytes": 3}));
    assert_eq!(
        std::fs::read_to_string(d.join("real/target.txt")).unwrap(),
        "new"
    );
    assert_eq!(
        std::fs::read_link(d.join("link")).unwrap(),
        Path::new("real/target.txt")
    );
    assert_eq!(std::fs::read_link(d.join("link2")).unwrap(), d.join("link"));
    assert_eq!(mode(&d.join("real/target.txt")), 0o755);
    assert_eq!(entries(d), ["link", "link2", "real"]);
    assert_eq!(entries(&d.join("real")), ["target.txt"]);
}

#[test]
fn a_dangling_symlink_creates_its_target() {
    let dir = scratch();
    let d = dir.path();
    std::os::unix::fs::symlink("made.txt", d.join("link")).unwrap();
    write(&d.join("link"), "made");
    assert_eq!(std::fs::read_to_string(d.join("made.txt")).unwrap(), "made");
    assert!(std::fs::symlink_metadata(d.join("link"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn spec_example_missing_parent_is_open_failed() {
    let dir = scratch();
    let out = run("file-write")
        .dir(dir.path())
        .json_in(&json!({"file_path": "nonexistent/dir/file.txt", "content": "x"}))
        .json();
    assert_eq!(
        out,
        error("Cannot open file: nonexistent/dir/file.txt", "OPEN_FAILED")
    );
    assert_eq!(entries(dir.path()), Vec::<String>::new());
}

#[test]
fn directories_fifos_and_devices_are_never_replaced() {
    let dir = scratch();
    let d = dir.path();
    mkfifo(&d.join("fifo"));
    std::fs::create_dir(d.join("sub")).unwrap();
    let cases = [
        (d.join("sub"), "is a directory"),
        (d.join("fifo"), "is a FIFO"),
        // Even as root, the device node must stay a device.
        (
            Path::new("/dev/null").to_path_buf(),
            "is a character device",
        ),
    ];
    for (path, why) in cases {
        let out = call_within("file-write", &json!({"file_path": path, "content": "x"}));
        assert_eq!(
            out,
            error(
                &format!("Cannot open file: {} ({why})", path.display()),
                "OPEN_FAILED"
            )
        );
    }
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    assert_eq!(entries(d), ["fifo", "sub"]);
    let out = run("file-write")
        .dir(d)
        .json_in(&json!({"file_path": "newdir/", "content": "x"}))
        .json();
    assert_eq!(out, error("Cannot open file: newdir/", "OPEN_FAILED"));
    assert_eq!(entries(d), ["fifo", "sub"]);
}

#[test]
fn a_read_only_file_is_permission_denied_and_unchanged() {
    let dir = scratch();
    let path = dir.path().join("ro.txt");
    std::fs::write(&path, "keep me").unwrap();
    chmod(&path, 0o444);
    let args = json!({"file_path": path, "content": "changed"});
    assert_eq!(
        call_unprivileged("file-write", &args),
        error(
            &format!("Permission denied: {}", path.display()),
            "PERMISSION_DENIED"
        )
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
    assert_eq!(entries(dir.path()), ["ro.txt"]);
    if is_root() {
        // Root may write any file (decision 17: as opening it would allow).
        assert_eq!(call("file-write", args)["bytes"], 7);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "changed");
        assert_eq!(mode(&path), 0o444);
    }
}

#[test]
fn an_unwritable_directory_is_permission_denied() {
    let dir = scratch();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::write(locked.join("open.txt"), "old").unwrap();
    chmod(&locked.join("open.txt"), 0o666);
    chmod(&locked, 0o555);

    let new_file = locked.join("new.txt");
    let args = json!({"file_path": new_file, "content": "x"});
    assert_eq!(
        call_unprivileged("file-write", &args),
        error(
            &format!("Permission denied: {}", new_file.display()),
            "PERMISSION_DENIED"
        )
    );
    // The file itself is writable, its directory is not: a safe replace
    // needs a temporary file there, and the answer says so.
    let open = locked.join("open.txt");
    let out = call_unprivileged("file-write", &json!({"file_path": open, "content": "x"}));
    assert_eq!(out["error_code"], "PERMISSION_DENIED", "{out}");
    assert_eq!(
        out["error"],
        format!(
            "Permission denied: {} (the file is writable but its directory is not, and \
             replacing the file safely needs a temporary file there)",
            open.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&open).unwrap(), "old");
    assert_eq!(entries(&locked), ["open.txt"]);
    if is_root() {
        assert_eq!(call("file-write", args)["bytes"], 1);
        assert_eq!(entries(&locked), ["new.txt", "open.txt"]);
    }
}

#[test]
fn a_full_disk_is_no_space_with_the_old_content_intact() {
    let content = "x".repeat(1 << 20);
    let Some((answer, listing, old)) = in_full_fs(
        "printf 'old content\\n' > f.txt",
        "file-write",
        &json!({"file_path": "f.txt", "content": content}),
    ) else {
        return;
    };
    assert_eq!(answer, error("No space left on device: f.txt", "NO_SPACE"));
    assert_eq!(listing, ["f.txt"], "no temporary file left");
    assert_eq!(old, "old content\n");
}

#[test]
fn a_failed_write_is_write_failed_with_the_old_content_intact() {
    let dir = scratch();
    let path = dir.path().join("f.txt");
    std::fs::write(&path, "old\n").unwrap();
    let out = call_with_small_file_limit(
        "file-write",
        &json!({"file_path": path, "content": "x".repeat(4096)}),
    );
    assert_eq!(
        out,
        error(
            &format!("Failed to write file: {}", path.display()),
            "WRITE_FAILED"
        )
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
    assert_eq!(entries(dir.path()), ["f.txt"], "no temporary file left");
}

#[test]
fn shellclaw_protocol() {
    let dir = scratch();
    let path = dir.path().join("f.txt");
    let out = call_shellclaw("file_write", json!({"file_path": path, "content": "hi"}));
    assert_eq!(out.code, 0);
    assert_eq!(
        out.json(),
        json!({"output": "Wrote 2 bytes to f.txt", "bytes": 2})
    );
    let bad = dir.path().join("no/f.txt");
    let out = call_shellclaw("file_write", json!({"file_path": bad, "content": "hi"}));
    assert_eq!(out.code, 1);
    assert_eq!(out.json()["error_code"], "OPEN_FAILED");
}
