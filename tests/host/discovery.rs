//! Discovery (decisions 1, 2, 11, 18 and 20): what becomes a tool, what is skipped and
//! why, shadowing, and the deadline.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{fixture, names, Dirs, Pid};
use crate::common::{bin, run_main};

#[test]
fn links_scripts_of_both_protocols_and_flat_schemas_become_tools() {
    let d = Dirs::new();
    let bash = d.link(&d.sys, "bash", bin());
    let echo = d.sys_tool("tool.sh", "echo");
    let claw = d.user_tool("shellclaw.sh", "claw");
    let flat = d.sys_tool("flat.sh", "legacy");
    let listing = d.listing();
    let row = |name: &str, path: &std::path::Path, description: &str, protocol: &str| json!({"name": name, "description": description, "path": path.to_string_lossy(), "protocol": protocol});
    assert_eq!(
        listing,
        json!({"tools": [
            row("bash", &bash, "Execute a shell command and return output", "ikigai"),
            row("claw", &claw, "Shellclaw fixture claw", "shellclaw"),
            row("echo", &echo, "Fixture tool echo", "ikigai"),
            row("legacy_exec", &flat, "Execute a shell command", "ikigai"),
        ], "skipped": []})
    );
    // The flat legacy schema, normalised to JSON Schema; "returns" dropped.
    let out = d.ikigai().args(["tools", "--json", "legacy_exec"]).output();
    assert_eq!(out.code, 0);
    assert_eq!(
        out.json(),
        json!({"name": "legacy_exec", "description": "Execute a shell command",
            "path": flat.to_string_lossy(), "protocol": "ikigai", "origin": "system",
            "schema": {"name": "legacy_exec", "description": "Execute a shell command", "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "Command to execute"},
                    "cwd": {"type": "string", "description": "Working directory"}},
                "required": ["command"]}}})
    );
    // Our own bash schema arrives as tests/fixtures/schemas/bash.json has it.
    let out = d.ikigai().args(["tools", "--json", "bash"]).output();
    let spec: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/schemas/bash.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(out.json()["schema"], spec);
}

#[test]
fn what_is_not_a_tool_is_skipped_with_its_reason() {
    let d = Dirs::new();
    d.sys_tool("tool.sh", "echo");
    // Passed over in silence: dotfiles and directories.
    d.sys_tool("tool.sh", ".hidden");
    std::fs::create_dir(d.sys.join("subdir")).unwrap();
    std::os::unix::fs::symlink(fixture("tool.sh"), d.sys.join("subdir/inner")).unwrap();
    // Skipped with a reason: a broken link and a file that cannot run.
    let broken = d.link(&d.sys, "dangling", d.path("nowhere"));
    let readme = d.sys.join("README");
    std::fs::write(&readme, "notes\n").unwrap();
    let cases = [
        ("hang", "--schema: no answer within 1s (killed)".to_string()),
        ("crash", "--schema and --describe: crashed with exit code 139 (signal 11)".into()),
        ("junk", "--schema and --describe: printed no JSON (expected value at line 1 column 1): usage: junk [options]".into()),
        ("nothing", "--schema and --describe: printed nothing".into()),
        ("noname", "--schema and --describe: schema lacks 'name'".into()),
        ("nodesc", "--schema and --describe: schema lacks 'description'".into()),
        ("noparams", "--schema and --describe: schema lacks 'parameters'".into()),
        ("badname", "--schema and --describe: name \"bad name!\" is not 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'".into()),
        ("fails", "--schema and --describe: exited with code 1 (cannot start: missing dependency libfoo)".into()),
        ("huge", "--schema and --describe: printed more than 1048576 bytes (killed)".into()),
        ("describe_hangs", "--schema: printed no JSON (expected ident at line 1 column 2): not a schema; --describe: no answer within 1s (killed)".into()),
    ];
    for (name, _) in &cases {
        d.user_tool("broken.sh", name);
    }
    let listing = d.listing();
    assert_eq!(names(&listing), ["echo"]);
    assert_eq!(
        Dirs::reason(&listing, &broken).as_deref(),
        Some(format!("broken symbolic link (to {})", d.path("nowhere").display()).as_str())
    );
    assert_eq!(
        Dirs::reason(&listing, &readme).as_deref(),
        Some("not executable (chmod +x it to make it a tool)")
    );
    for (name, reason) in &cases {
        assert_eq!(
            Dirs::reason(&listing, &d.user.join(name)).as_deref(),
            Some(reason.as_str()),
            "{name}"
        );
    }
    let skipped = listing["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), cases.len() + 2, "{listing:#}");
    // Sorted by path, so a person finds a file where expected.
    let paths: Vec<&str> = skipped
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
}

#[test]
fn the_user_directory_shadows_the_system_directory() {
    let d = Dirs::new();
    let system = d.sys_tool("tool.sh", "echo");
    let user = d.user_tool("tool.sh", "echo");
    d.sys_tool("tool.sh", "echo_sys_only");
    let listing = d.listing();
    assert_eq!(names(&listing), ["echo", "echo_sys_only"]);
    assert_eq!(listing["tools"][0]["path"], user.to_string_lossy().as_ref());
    assert_eq!(
        Dirs::reason(&listing, &system).unwrap(),
        format!("tool 'echo' is shadowed by the user's {}", user.display())
    );
    let (envelope, _) = d.call(&[], "echo", &json!({}));
    assert_eq!(envelope["result"]["path"], user.to_string_lossy().as_ref());
    // The environment names the directories when no option does.
    let out = crate::common::run("ikigai")
        .env("IKIGAI_LIBEXEC_DIR", &d.sys)
        .env("IKIGAI_TOOLS_DIR", &d.user)
        .args(["tools", "--json"])
        .output();
    assert_eq!(out.json(), listing);
}

#[test]
fn a_tool_hanging_on_schema_is_killed_with_its_children() {
    let d = Dirs::new();
    d.user_tool("hangkids.sh", "hangkids");
    let pidfile = d.path("pid");
    let out = d
        .ikigai()
        .env("IKIGAI_TEST_PIDFILE", &pidfile)
        .args(["tools", "--json"])
        .output();
    assert_eq!(
        Dirs::reason(&out.json(), &d.user.join("hangkids")).as_deref(),
        Some("--schema: no answer within 1s (killed)")
    );
    assert!(
        Pid::read(&pidfile).dies(),
        "the grandchild outlived discovery"
    );
}

#[test]
fn fifty_broken_tools_cost_one_deadline() {
    let d = Dirs::new();
    d.sys_tool("tool.sh", "echo");
    for i in 0..50 {
        let kind = ["hang", "crash", "junk", "nothing", "describe_hangs"][i % 5];
        d.user_tool("broken.sh", &format!("{kind}{i}"));
    }
    let started = Instant::now();
    let listing = d.listing();
    let took = started.elapsed();
    assert_eq!(names(&listing), ["echo"]);
    assert_eq!(listing["skipped"].as_array().unwrap().len(), 50);
    // One after another, the hanging ones alone would take 10 s and more.
    assert!(took < Duration::from_secs(5), "discovery took {took:?}");
}

#[test]
fn candidates_answer_in_parallel() {
    // Each takes 0.2 s to answer: ten in a row would miss the 1 s deadline.
    let d = Dirs::new();
    let expected: Vec<String> = (0..10).map(|i| format!("slow{i}")).collect();
    for name in &expected {
        d.sys_tool("tool.sh", name);
    }
    let listing = d.listing();
    assert_eq!(names(&listing), expected, "{listing:#}");
}

#[test]
fn our_own_tools_are_found_under_both_names() {
    // Every link symlinks.sh makes: one per command name.
    let d = Dirs::new();
    let list = run_main().arg("--list").output().stdout;
    let mut expected = Vec::new();
    for command in list.lines() {
        d.link(&d.sys, command, bin());
        expected.push(command.replace('-', "_"));
    }
    expected.sort();
    let started = Instant::now();
    let listing = d.listing();
    let took = started.elapsed();
    assert_eq!(names(&listing), expected);
    assert_eq!(listing["skipped"], json!([]));
    eprintln!("discovered {} tools in {took:?}", expected.len());
    // Shellclaw's dispatch links the schema names: the same tools again, in
    // the user directory, shadowing the system links one for one.
    for command in list.lines() {
        d.link(&d.user, &command.replace('-', "_"), bin());
    }
    let listing = d.listing();
    assert_eq!(names(&listing), expected);
    for tool in listing["tools"].as_array().unwrap() {
        assert!(tool["path"]
            .as_str()
            .unwrap()
            .starts_with(d.user.to_str().unwrap()));
    }
}

#[test]
fn our_links_answer_at_once_as_each_would_alone() {
    // The host asks its own executable for every schema in one run; what
    // it lists must be what each link answers to `--schema` itself, and a
    // link under a name that is none of our tools is probed on its own.
    let d = Dirs::new();
    let links = ["grep", "file_read", "web-fetch"];
    for name in links {
        d.link(&d.sys, name, bin());
    }
    let stray = d.link(&d.sys, "frobnicate", bin());
    let listing = d.listing();
    assert_eq!(names(&listing), ["file_read", "grep", "web_fetch"]);
    for link in links {
        let own = std::process::Command::new(d.sys.join(link))
            .arg("--schema")
            .output()
            .unwrap();
        let own: serde_json::Value = serde_json::from_slice(&own.stdout).unwrap();
        let name = own["name"].as_str().unwrap();
        let listed = d.ikigai().args(["tools", "--json", name]).output().json();
        assert_eq!(listed["schema"], own, "{link}");
        assert_eq!(listed["path"], d.sys.join(link).to_string_lossy().as_ref());
    }
    let reason = Dirs::reason(&listing, &stray).expect("the stray link is skipped");
    assert!(reason.contains("exited with code"), "{reason}");
}

#[test]
fn missing_directories_are_an_empty_registry() {
    let d = Dirs::new();
    let out = crate::common::run("ikigai")
        .arg("--libexec-dir")
        .arg(d.path("none1"))
        .arg("--tools-dir")
        .arg(d.path("none2"))
        .args(["tools", "--json"])
        .output();
    assert_eq!(out.json(), json!({"tools": [], "skipped": []}));
}

#[test]
fn a_directory_larger_than_the_open_file_limit_is_probed_whole() {
    // 40 probes hold 120 descriptors; the limit is 80, soft and hard.
    let d = Dirs::new();
    for i in 0..40 {
        d.sys_tool("tool.sh", &format!("echo{i:02}"));
    }
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 80 && exec \"$0\" \"$@\"")
        .arg(crate::common::link("ikigai"))
        .arg("--libexec-dir")
        .arg(&d.sys)
        .arg("--tools-dir")
        .arg(&d.user)
        .args(["tools", "--json"])
        .env("HOME", d.path("home"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let listing: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listing["skipped"], json!([]), "{listing}");
    assert_eq!(names(&listing).len(), 40);
}

#[test]
fn a_background_job_a_probe_leaves_dies_with_the_probe() {
    let d = Dirs::new();
    d.sys_tool("tool.sh", "forker");
    let pidfile = d.path("pid");
    let out = d
        .ikigai()
        .env("IKIGAI_TEST_PIDFILE", &pidfile)
        .args(["tools", "--json"])
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(names(&out.json()), ["forker"]);
    assert!(
        Pid::read(&pidfile).dies(),
        "a probe's background job outlived discovery"
    );
}
