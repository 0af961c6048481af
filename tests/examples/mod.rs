//! The examples in `examples/` work as the README says.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

#[test]
fn shim_describes_itself_and_wraps_du() {
    let out = Command::new(example("disk_usage"))
        .arg("--describe")
        .output()
        .unwrap();
    assert!(out.status.success());
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["name"], "disk_usage");
    assert_eq!(schema["parameters"]["type"], "object");

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), vec![b'x'; 10_000]).unwrap();
    let args = serde_json::json!({ "path": dir.path() }).to_string();
    let out = Command::new(example("disk_usage"))
        .arg(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["path"], dir.path().to_str().unwrap());
    assert!(
        answer["size"].as_str().is_some_and(|s| s.ends_with('K')),
        "{answer}"
    );

    let out = Command::new(example("disk_usage"))
        .arg("[1]")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid arguments"));
}

#[test]
fn call_each_tool_calls_every_tool_and_each_answers_json() {
    let out = Command::new(example("call-each-tool.sh"))
        .arg(crate::common::bin())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let answers: Vec<Value> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("  -> "))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let tools = crate::common::run_main().arg("--list").output().stdout;
    assert_eq!(answers.len(), tools.lines().count(), "{stdout}");
    for answer in answers {
        assert!(answer.get("error").is_none(), "{answer}");
    }
}
