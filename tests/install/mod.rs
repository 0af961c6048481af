//! `symlinks.sh`: installs the binary, a link per tool, and `ikigai`, so the
//! host finds every tool from its own location (spec README, decision 11).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{bin, run_main};

fn install(prefix: &Path, extra: &[&str]) -> String {
    install_with_path(prefix, extra, "/usr/bin:/bin")
}

fn install_with_path(prefix: &Path, extra: &[&str], path: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("symlinks.sh");
    let out = Command::new(script)
        .arg(prefix)
        .args(extra)
        .env("IKIGAI_TOOLS_BIN", bin())
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn installs_every_tool_and_the_host_idempotently() {
    let prefix = tempfile::tempdir().unwrap();
    let shellclaw = prefix.path().join("shellclaw");
    let names: Vec<String> = run_main()
        .arg("--list")
        .output()
        .stdout
        .lines()
        .map(String::from)
        .collect();

    for _ in 0..2 {
        let said = install(prefix.path(), &["--shellclaw", shellclaw.to_str().unwrap()]);
        assert!(said.contains(&format!("{} tools", names.len())), "{said}");
    }
    // A link for a tool that is no longer in the table goes away; other files stay.
    let libexec = prefix.path().join("libexec/ikigai");
    std::os::unix::fs::symlink("../../bin/ikigai-tools", libexec.join("retired-tool")).unwrap();
    std::fs::write(libexec.join("someone-elses"), "#!/bin/sh\n").unwrap();
    install(prefix.path(), &[]);
    assert!(!libexec.join("retired-tool").exists());
    assert!(libexec.join("someone-elses").exists());
    std::fs::remove_file(libexec.join("someone-elses")).unwrap();

    for name in &names {
        let out = Command::new(libexec.join(name))
            .arg("--schema")
            .output()
            .unwrap();
        let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(schema["name"], name.replace('-', "_"));
        let out = Command::new(shellclaw.join(name.replace('-', "_")))
            .arg("--describe")
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}");
    }

    // The installed host finds the tools next to itself, with no option.
    let out = Command::new(prefix.path().join("bin/ikigai"))
        .args(["tools", "--json"])
        .env_remove("IKIGAI_LIBEXEC_DIR")
        .env("IKIGAI_TOOLS_DIR", prefix.path().join("no-user-tools"))
        .output()
        .unwrap();
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let found: Vec<&str> = listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = {
        let mut v: Vec<String> = names.iter().map(|n| n.replace('-', "_")).collect();
        v.sort();
        v
    };
    assert_eq!(found, expected, "{listing}");
    assert_eq!(listing["skipped"], serde_json::json!([]));
}

#[test]
fn says_where_it_installed_and_how_to_reach_it() {
    let prefix = tempfile::tempdir().unwrap();
    let p = prefix.path().display();
    let said = install(prefix.path(), &[]);
    assert!(
        said.ends_with(&format!(
            "{p}/bin is not on your PATH; add this line to your shell's profile (~/.bashrc, ~/.zshrc):\n  \
             export PATH=\"{p}/bin:$PATH\"\nmeanwhile run: {p}/bin/ikigai\n"
        )),
        "{said}"
    );
    // On PATH (written with a trailing slash): just how to start it.
    let path = format!("/usr/bin:{p}/bin/:/bin");
    let said = install_with_path(prefix.path(), &[], &path);
    assert!(said.ends_with("\nrun: ikigai\n"), "{said}");
}
