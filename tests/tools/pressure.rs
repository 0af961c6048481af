//! The local tools under pressure (docs/decisions.md, decisions 32 and 33): writes
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

/// Runs `tool` with `args` on stdin, the host's output cap `cap` and an
/// address-space limit of `limit_mb` (RLIMIT_AS, `ulimit -v`): its answer,
/// and its peak resident memory in bytes. The peak is the tool's VmHWM, read
/// while the tool waits to print the rest of its answer into a one-page
/// pipe, after every allocation that built it (a child's rusage would not
/// do: a process started with vfork inherits its parent's peak); `None`
/// when the answer was shorter than a page and the tool had already gone.
fn measured(
    tool: &str,
    args: &Value,
    cap: usize,
    limit_mb: u64,
    dir: &std::path::Path,
) -> (Value, Option<u64>) {
    use std::os::fd::AsRawFd;
    let mut child = Command::new("sh")
        .args(["-c", "ulimit -v $2; exec \"$0\" \"$1\""])
        .arg(crate::common::bin())
        .arg(tool)
        .arg((limit_mb * 1024).to_string())
        .env("IKIGAI_MAX_OUTPUT", cap.to_string())
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdout = child.stdout.take().unwrap();
    // SAFETY: fcntl and poll on a pipe fd we own, with a valid pollfd.
    unsafe {
        libc::fcntl(stdout.as_raw_fd(), libc::F_SETPIPE_SZ, 4096);
    }
    child
        .stdin
        .take()
        .unwrap()
        .write_all(args.to_string().as_bytes())
        .unwrap();
    let mut poll = libc::pollfd {
        fd: stdout.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: as above.
    unsafe { libc::poll(&mut poll, 1, 300_000) };
    std::thread::sleep(Duration::from_millis(100));
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024);
    let mut printed = Vec::new();
    std::io::Read::read_to_end(&mut stdout, &mut printed).unwrap();
    let _ = child.wait();
    let answer = serde_json::from_slice(&printed)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&printed)));
    assert!(
        printed.len() <= cap,
        "{} bytes printed for a {cap}-byte cap",
        printed.len()
    );
    (answer, peak)
}

const MB: u64 = 1 << 20;

/// A 6 GB file (sparse: its bytes are NULs, each printed as the six bytes
/// `\u0000`) read whole and as one huge line, under a 1 MiB cap and a
/// 256 MB address-space limit: the answer fits the cap as printed, says it
/// was cut, and the memory stays far below the file's size.
#[test]
fn file_read_of_a_huge_file_costs_its_answer() {
    let dir = scratch();
    let path = dir.path().join("huge");
    std::fs::File::create(&path)
        .unwrap()
        .set_len(6 << 30)
        .unwrap();
    let cap = 1 << 20;
    let (answer, peak) = measured(
        "file-read",
        &json!({"file_path": path}),
        cap,
        256,
        dir.path(),
    );
    let output = answer["output"].as_str().unwrap();
    assert!(output.starts_with('\0'));
    assert!(output.contains(&format!(
        "bytes omitted: the answer exceeds the {cap}-byte output limit"
    )));
    assert!(
        output.contains(&format!(" of {} bytes", 6u64 << 30)),
        "{}",
        &output[output.len() / 2 - 200..][..400]
    );
    assert!(peak.unwrap() < 64 * MB, "peak {peak:?}");

    // A range: one line of 1 GB (the whole of a smaller file) is streamed.
    std::fs::File::create(&path)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let args = json!({"file_path": path, "offset": 1, "limit": 1});
    let (answer, peak) = measured("file-read", &args, cap, 256, dir.path());
    assert!(answer["output"]
        .as_str()
        .unwrap()
        .contains(&format!(" of {} bytes", 1u64 << 30)));
    assert!(peak.unwrap() < 64 * MB, "peak {peak:?}");
}

/// 600,000 matching lines (in one file and across many), a 64 KiB cap:
/// grep keeps what it can show, counts the rest, and says so.
#[test]
fn grep_with_many_matches_keeps_what_it_can_show() {
    let dir = scratch();
    let line = "a match of the pattern here\n";
    std::fs::write(dir.path().join("one.txt"), line.repeat(400_000)).unwrap();
    std::fs::create_dir(dir.path().join("many")).unwrap();
    for i in 0..200 {
        std::fs::write(
            dir.path().join(format!("many/{i:03}.txt")),
            line.repeat(1000),
        )
        .unwrap();
    }
    let cap = 64 << 10;
    let args = json!({"pattern": "match", "glob": "**/*.txt"});
    let (answer, peak) = measured("grep", &args, cap, 512, dir.path());
    assert_eq!(answer["count"], 600_000);
    let output = answer["output"].as_str().unwrap();
    assert!(
        output.starts_with("./many/000.txt:1: a match"),
        "{}",
        &output[..100]
    );
    let shown = output.lines().count() - 1;
    assert!(output.ends_with(&format!(
        "[... {} more of 600000 matching lines not shown: the answer exceeds the {cap}-byte \
         output limit; ask for less (a narrower pattern or path) ...]",
        600_000 - shown
    )));
    // Without the cap the answer alone is 24 MB.
    assert!(peak.unwrap() < 40 * MB, "peak {peak:?}");
}

/// A match full of NULs: each prints as six bytes, and the answer still
/// fits the cap as printed.
#[test]
fn escapes_count_against_the_cap() {
    let dir = scratch();
    let line = format!("x{}\n", "\0".repeat(1000));
    std::fs::write(dir.path().join("nul.txt"), line.repeat(2000)).unwrap();
    let cap = 100_000;
    let (answer, _) = measured("grep", &json!({"pattern": "x"}), cap, 512, dir.path());
    assert_eq!(answer["count"], 2000);
    assert!(answer["output"]
        .as_str()
        .unwrap()
        .contains("more of 2000 matching lines not shown"));
    let args = json!({"file_path": dir.path().join("nul.txt")});
    let (answer, _) = measured("file-read", &args, cap, 512, dir.path());
    assert!(answer["output"].as_str().unwrap().contains("bytes omitted"));
}

/// glob finding 30,000 paths under a 16 KiB cap: the first paths, the
/// count of all, and a line saying how many are not shown.
#[test]
fn glob_with_many_paths_keeps_what_it_can_show() {
    let dir = scratch();
    for d in 0..30 {
        let sub = dir.path().join(format!("d{d:02}"));
        std::fs::create_dir(&sub).unwrap();
        for f in 0..1000 {
            std::fs::write(sub.join(format!("file-with-a-longish-name-{f:04}.rs")), "").unwrap();
        }
    }
    let cap = 16 << 10;
    let (answer, peak) = measured("glob", &json!({"pattern": "**/*.rs"}), cap, 512, dir.path());
    assert_eq!(answer["count"], 30_000);
    let output = answer["output"].as_str().unwrap();
    assert!(output.starts_with(
        "d00/file-with-a-longish-name-0000.rs\nd00/file-with-a-longish-name-0001.rs\n"
    ));
    assert!(output.contains("more of 30000 paths not shown"));
    assert!(peak.unwrap() < 40 * MB, "peak {peak:?}");
}

/// A 100 MB line between matches: reported, and the search goes on past it.
#[test]
fn grep_reports_a_line_too_long_and_goes_on() {
    let dir = scratch();
    let mut content = b"needle before\n".to_vec();
    content.extend(std::iter::repeat_n(b'x', 100 << 20));
    content.extend_from_slice(b"\nneedle after\nand needle last");
    std::fs::write(dir.path().join("f.txt"), &content).unwrap();
    let (answer, _) = measured(
        "grep",
        &json!({"pattern": "needle"}),
        1 << 20,
        1024,
        dir.path(),
    );
    assert_eq!(
        answer,
        json!({
            "output": "./f.txt:1: needle before\n./f.txt:3: needle after\n./f.txt:4: and needle last",
            "count": 3,
            "skipped": format!("./f.txt:2: a line of {} bytes, longer than the 67108864 bytes grep can hold: not searched", (100 << 20) + 1),
        })
    );
}

/// 300 tools (our six local ones and 294 shell scripts) under an open-file
/// limit of 64, soft and hard: the host probes them a few at a time, each
/// with its own deadline, and finds every one.
#[test]
fn discovery_finds_every_tool_under_a_small_open_file_limit() {
    let dir = scratch();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    for name in [
        "bash",
        "file-read",
        "file-write",
        "file-edit",
        "glob",
        "grep",
    ] {
        std::os::unix::fs::symlink(crate::common::bin(), tools.join(name)).unwrap();
    }
    for i in 0..294 {
        let script = format!(
            "#!/bin/sh\necho '{{\"name\":\"t{i}\",\"description\":\"d\",\"parameters\":{{\"type\":\"object\",\"properties\":{{}}}}}}'\n"
        );
        let path = tools.join(format!("t{i}"));
        std::fs::write(&path, script).unwrap();
        super::file_support::chmod(&path, 0o755);
    }
    let out = Command::new("sh")
        .args([
            "-c",
            "ulimit -S -n 64 && ulimit -H -n 64 && exec \"$0\" ikigai tools --json",
        ])
        .arg(crate::common::bin())
        .env("IKIGAI_TOOLS_DIR", &tools)
        .env("IKIGAI_LIBEXEC_DIR", dir.path().join("none"))
        .output()
        .unwrap();
    let listing: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(listing["skipped"], json!([]));
    assert_eq!(listing["tools"].as_array().unwrap().len(), 300);
}

/// Makes `root/d.../d.../f.txt` holding `needle`, 25 directories of 200
/// bytes deep (more than PATH_MAX), from descriptor to descriptor as no
/// whole path could; returns the file's path relative to `root`.
fn deeper_than_path_max(root: &std::path::Path) -> String {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let name = "d".repeat(200);
    let c_name = CString::new(name.clone()).unwrap();
    let c_root = CString::new(root.as_os_str().as_bytes()).unwrap();
    // SAFETY: valid NUL-terminated names; every fd opened here is closed.
    unsafe {
        let mut fd = libc::open(c_root.as_ptr(), libc::O_PATH | libc::O_DIRECTORY);
        for _ in 0..25 {
            assert_eq!(libc::mkdirat(fd, c_name.as_ptr(), 0o755), 0);
            let next = libc::openat(fd, c_name.as_ptr(), libc::O_PATH | libc::O_DIRECTORY);
            libc::close(fd);
            fd = next;
        }
        let file = libc::openat(fd, c"f.txt".as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o644);
        assert_eq!(libc::write(file, b"needle\n".as_ptr().cast(), 7), 7);
        libc::close(file);
        libc::close(fd);
    }
    let mut path = vec![name; 25].join("/");
    path.push_str("/f.txt");
    path
}

#[test]
fn glob_and_grep_find_a_path_longer_than_path_max() {
    let dir = scratch();
    let deep = deeper_than_path_max(dir.path());
    let root = dir.path().to_str().unwrap();
    let full = format!("{root}/{deep}");
    assert!(full.len() > libc::PATH_MAX as usize);
    let answer = crate::common::call("glob", json!({"pattern": "**/*.txt", "path": root}));
    assert_eq!(answer, json!({"output": full, "count": 1}));
    let args = json!({"pattern": "needle", "glob": "**/*.txt", "path": root});
    let answer = crate::common::call("grep", args);
    assert_eq!(
        answer,
        json!({"output": format!("{full}:1: needle"), "count": 1})
    );
    // Relative to the working directory, too.
    let answer = crate::common::run("glob")
        .dir(dir.path())
        .json_in(&json!({"pattern": "d*/**/f.txt"}))
        .json();
    assert_eq!(answer, json!({"output": deep, "count": 1}));
    // The scratch directory cannot remove what no whole path reaches.
    let _ = Command::new("rm").arg("-rf").arg(dir.path()).status();
}

/// Without a cap grep answers in full, and an answer that memory cannot
/// hold (100 MB of matching lines under a 160 MB address-space limit) is
/// OUT_OF_MEMORY as JSON, not an abort.
#[test]
fn grep_out_of_memory_is_an_answer() {
    let dir = scratch();
    let line = format!("match {}\n", "x".repeat(250));
    std::fs::write(dir.path().join("big.txt"), line.repeat(400_000)).unwrap();
    let out = super::file_support::call_memory_limited(
        "grep",
        &json!({"pattern": "match", "path": dir.path()}),
        160,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json(),
        json!({
            "error": "Out of memory: the 400000 matching lines found do not fit in memory; \
                      narrow the pattern, glob or path",
            "error_code": "OUT_OF_MEMORY",
        })
    );
}
