//! file_read (docs/local-tools.md, "Tool: file-read"; docs/decisions.md, decision 5):
//! whole files, line ranges, bytes that are not UTF-8, and every error code,
//! including files that cannot be sought or sized, which must answer at once.

use std::io::Write;
use std::os::unix::net::UnixListener;

use serde_json::{json, Value};

use super::file_support::{
    call_memory_limited, call_unprivileged, call_within, chmod, is_root, mkfifo, scratch,
};
use crate::common::{call, call_shellclaw, run};

fn read(args: Value) -> Value {
    call("file-read", args)
}

fn error(message: &str, code: &str) -> Value {
    json!({"error": message, "error_code": code})
}

#[test]
fn spec_example_reads_the_whole_file() {
    let dir = scratch();
    let path = dir.path().join("hostname");
    std::fs::write(&path, "myserver.example.com\n").unwrap();
    assert_eq!(
        read(json!({"file_path": path})),
        json!({"output": "myserver.example.com\n"})
    );
}

#[test]
fn empty_file_is_empty_output() {
    let dir = scratch();
    let path = dir.path().join("empty");
    std::fs::write(&path, "").unwrap();
    assert_eq!(read(json!({"file_path": path})), json!({"output": ""}));
    assert_eq!(
        read(json!({"file_path": path, "offset": 1, "limit": 5})),
        json!({"output": ""})
    );
}

#[test]
fn offset_and_limit_select_lines() {
    let dir = scratch();
    let path = dir.path().join("lines.txt");
    std::fs::write(&path, "one\ntwo\nthree\nfour").unwrap();
    let cases = [
        (json!({"offset": 2, "limit": 2}), "two\nthree\n"),
        (json!({"offset": 2}), "two\nthree\nfour"),
        (json!({"limit": 1}), "one\n"),
        (json!({"offset": 1}), "one\ntwo\nthree\nfour"),
        (json!({"offset": 4, "limit": 1}), "four"),
        (json!({"offset": 3, "limit": 100}), "three\nfour"),
        (json!({"offset": 5}), ""),
        (json!({"offset": 1000000, "limit": 2}), ""),
        (json!({"limit": 0}), ""),
        // OpenAI strict mode sends unused optionals as null.
        (
            json!({"offset": null, "limit": null}),
            "one\ntwo\nthree\nfour",
        ),
    ];
    for (mut args, expected) in cases {
        args["file_path"] = json!(path);
        assert_eq!(read(args.clone()), json!({"output": expected}), "{args}");
    }
}

#[test]
fn offset_right_after_the_last_newline_is_empty() {
    let dir = scratch();
    let path = dir.path().join("f");
    std::fs::write(&path, "a\nb\n").unwrap();
    assert_eq!(
        read(json!({"file_path": path, "offset": 2}))["output"],
        "b\n"
    );
    assert_eq!(read(json!({"file_path": path, "offset": 3}))["output"], "");
}

#[test]
fn a_deep_range_in_a_large_file_is_exact() {
    // About 3.5 MB: the range and the lines before it cross many read chunks.
    let dir = scratch();
    let path = dir.path().join("big.txt");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for n in 1..=300_000 {
        writeln!(file, "line {n}").unwrap();
    }
    file.flush().unwrap();
    drop(file);
    assert_eq!(
        read(json!({"file_path": path, "offset": 250_000, "limit": 3}))["output"],
        "line 250000\nline 250001\nline 250002\n"
    );
    assert_eq!(
        read(json!({"file_path": path, "offset": 299_999}))["output"],
        "line 299999\nline 300000\n"
    );
}

#[test]
fn reading_stops_at_the_end_of_the_range() {
    // Two lines, then a terabyte of hole: reading it all would outlast the
    // deadline (or memory), a range must stop after its last line.
    let dir = scratch();
    let path = dir.path().join("sparse");
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(b"first\nsecond\n").unwrap();
    file.set_len(1 << 40).unwrap();
    assert_eq!(
        call_within(
            "file-read",
            &json!({"file_path": path, "offset": 2, "limit": 1})
        ),
        json!({"output": "second\n"})
    );
}

#[test]
fn bad_offset_and_limit_are_invalid_arg() {
    let dir = scratch();
    let path = dir.path().join("f");
    std::fs::write(&path, "x\n").unwrap();
    let cases = [
        (
            json!({"offset": 0}),
            "parameter 'offset' must be at least 1 (lines are numbered from 1), got 0",
        ),
        (
            json!({"offset": -2}),
            "parameter 'offset' must be at least 1 (lines are numbered from 1), got -2",
        ),
        (
            json!({"limit": -1}),
            "parameter 'limit' must be at least 0, got -1",
        ),
        (
            json!({"offset": "3"}),
            "parameter 'offset' must be an integer, got a string",
        ),
    ];
    for (mut args, message) in cases {
        args["file_path"] = json!(path);
        assert_eq!(read(args), error(message, "INVALID_ARG"));
    }
    assert_eq!(
        read(json!({"file_path": ""})),
        error(
            "parameter 'file_path' is empty: give the path of a file",
            "INVALID_ARG"
        )
    );
}

#[test]
fn bytes_that_are_not_utf8_never_break_the_json() {
    let dir = scratch();
    let path = dir.path().join("bin");
    std::fs::write(&path, b"caf\xe9\n\x00\x01\xff\xfe\nok \xe2\x9c\x93\n").unwrap();
    let out = run("file-read")
        .json_in(&json!({"file_path": path}))
        .output();
    assert_eq!(
        out.json(),
        json!({"output": "caf\u{FFFD}\n\u{0}\u{1}\u{FFFD}\u{FFFD}\nok \u{2713}\n"})
    );
    assert_eq!(
        read(json!({"file_path": path, "offset": 2, "limit": 1})),
        json!({"output": "\u{0}\u{1}\u{FFFD}\u{FFFD}\n"})
    );
}

#[test]
fn missing_file_names_the_path_as_given() {
    let dir = scratch();
    let out = run("file-read")
        .dir(dir.path())
        .json_in(&json!({"file_path": "sub/../missing.txt"}))
        .json();
    assert_eq!(
        out,
        error("File not found: sub/../missing.txt", "FILE_NOT_FOUND")
    );
}

#[test]
fn relative_paths_and_symlinks() {
    let dir = scratch();
    std::fs::write(dir.path().join("real.txt"), "content\n").unwrap();
    std::os::unix::fs::symlink("real.txt", dir.path().join("link")).unwrap();
    let out = run("file-read")
        .dir(dir.path())
        .json_in(&json!({"file_path": "link"}))
        .json();
    assert_eq!(out, json!({"output": "content\n"}));
}

#[test]
fn unreadable_file_is_permission_denied() {
    let dir = scratch();
    let path = dir.path().join("secret");
    std::fs::write(&path, "s3cret\n").unwrap();
    chmod(&path, 0o000);
    let args = json!({"file_path": path});
    assert_eq!(
        call_unprivileged("file-read", &args),
        error(
            &format!("Permission denied: {}", path.display()),
            "PERMISSION_DENIED"
        )
    );
    if is_root() {
        // Root reads any file: what root really gets.
        assert_eq!(read(args), json!({"output": "s3cret\n"}));
    }
}

#[test]
fn a_directory_is_open_failed() {
    let dir = scratch();
    let out = read(json!({"file_path": dir.path()}));
    assert_eq!(
        out,
        error(
            &format!(
                "Cannot open file: {} (is a directory)",
                dir.path().display()
            ),
            "OPEN_FAILED"
        )
    );
}

#[test]
fn a_path_through_a_file_is_open_failed() {
    let dir = scratch();
    std::fs::write(dir.path().join("file"), "x").unwrap();
    let out = run("file-read")
        .dir(dir.path())
        .json_in(&json!({"file_path": "file/inside"}))
        .json();
    assert_eq!(out, error("Cannot open file: file/inside", "OPEN_FAILED"));
}

#[test]
fn a_socket_is_open_failed() {
    let dir = scratch();
    let path = dir.path().join("sock");
    let _listener = UnixListener::bind(&path).unwrap();
    assert_eq!(
        call_within("file-read", &json!({"file_path": path})),
        error(
            &format!("Cannot open file: {}", path.display()),
            "OPEN_FAILED"
        )
    );
}

#[test]
fn a_fifo_is_seek_failed_at_once() {
    let dir = scratch();
    let path = dir.path().join("fifo");
    mkfifo(&path);
    let expected = error(
        &format!("Cannot seek file: {}", path.display()),
        "SEEK_FAILED",
    );
    // No writer: a blocking open would wait forever.
    assert_eq!(
        call_within("file-read", &json!({"file_path": path})),
        expected
    );
    assert_eq!(
        call_within(
            "file-read",
            &json!({"file_path": path, "offset": 1, "limit": 1})
        ),
        expected
    );
}

#[test]
fn spec_example_dev_stdin_is_seek_failed() {
    // Called ikigai-style, the tool's stdin is the pipe its arguments came on.
    assert_eq!(
        call_within("file-read", &json!({"file_path": "/dev/stdin"})),
        error("Cannot seek file: /dev/stdin", "SEEK_FAILED")
    );
}

#[test]
fn spec_example_dev_zero_is_size_failed() {
    for args in [
        json!({"file_path": "/dev/zero"}),
        json!({"file_path": "/dev/zero", "offset": 2, "limit": 1}),
    ] {
        assert_eq!(
            call_within("file-read", &args),
            error("Cannot get file size: /dev/zero", "SIZE_FAILED")
        );
    }
    assert_eq!(
        call_within("file-read", &json!({"file_path": "/dev/null"})),
        error("Cannot get file size: /dev/null", "SIZE_FAILED")
    );
}

#[test]
fn a_read_error_is_read_failed() {
    // /proc/self/mem opens, but reading address 0 of the reader is EIO.
    assert_eq!(
        read(json!({"file_path": "/proc/self/mem"})),
        error("Failed to read file: /proc/self/mem", "READ_FAILED")
    );
}

#[test]
fn files_that_report_size_zero_are_read_to_the_end() {
    let out = read(json!({"file_path": "/proc/self/status"}));
    assert!(
        out["output"].as_str().unwrap().starts_with("Name:"),
        "{out}"
    );
}

#[test]
fn shellclaw_protocol() {
    let dir = scratch();
    let path = dir.path().join("f");
    std::fs::write(&path, "a\nb\n").unwrap();
    let out = call_shellclaw("file_read", json!({"file_path": path, "limit": 1}));
    assert_eq!((out.code, out.json()), (0, json!({"output": "a\n"})));
    let missing = dir.path().join("missing");
    let out = call_shellclaw("file_read", json!({"file_path": missing}));
    let message = format!("File not found: {}", missing.display());
    assert_eq!(out.code, 1);
    assert_eq!(out.json(), error(&message, "FILE_NOT_FOUND"));
    assert_eq!(out.stderr, format!("file_read: {message}\n"));
}

/// A 3 GB line (a sparse file without a newline) is more than 1 GB of
/// address space holds: OUT_OF_MEMORY saying what to ask instead, never an
/// abort.
#[test]
fn a_line_too_big_to_hold_is_out_of_memory() {
    let dir = scratch();
    let path = dir.path().join("sparse");
    std::fs::File::create(&path)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let p = path.to_str().unwrap();
    let out = call_memory_limited(
        "file-read",
        &json!({"file_path": p, "offset": 1, "limit": 1}),
        1000,
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.json(),
        error(
            &format!("Out of memory: {p} (the range is too large to hold; ask for fewer lines with a smaller limit)"),
            "OUT_OF_MEMORY"
        )
    );
    let out = call_memory_limited("file-read", &json!({"file_path": p}), 1000);
    assert_eq!(
        out.json(),
        error(
            &format!(
                "Out of memory: {p} (too large to read whole; read a range with offset and limit)"
            ),
            "OUT_OF_MEMORY"
        )
    );
}

/// A file that reports no size may have no end (/proc/self/pagemap is as
/// big as the address space): file_read takes at most 64 MiB of it, and
/// small ones read as usual.
#[test]
fn files_without_a_size_are_read_up_to_a_bound() {
    let out = call_memory_limited(
        "file-read",
        &json!({"file_path": "/proc/self/pagemap"}),
        500,
    );
    let answer = out.json();
    assert_eq!(answer["error_code"], "OUT_OF_MEMORY", "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("reports no size and holds more than 64 MiB"),
        "{answer}"
    );
    let status = read(json!({"file_path": "/proc/self/status"}));
    assert!(
        status["output"].as_str().unwrap().starts_with("Name:"),
        "{status}"
    );
}
