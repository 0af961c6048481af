//! Installing: `symlinks.sh` (build, then `ikigai-tools install`) and
//! `ikigai-tools install` itself lay the binary, a link per tool, `ikigai`,
//! completions, man pages and a manifest, so the host finds every tool from
//! its own location (docs/decisions.md, decisions 11, 89); nothing that is not
//! ours is replaced, and `--uninstall` takes away exactly what was laid.
//! The completions are checked by the shells themselves and the man pages
//! by groff and man, where they are installed (else the test says so).

use std::path::{Path, PathBuf};
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

/// `ikigai-tools install ARGS...` with a PATH that holds no prefix and no
/// shell named, so only the PATH and man hints apply.
fn ikigai_install(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(bin())
        .arg("install")
        .args(args)
        .env("PATH", "/usr/bin:/bin")
        .env_remove("SHELL")
        .env_remove("MANPATH")
        .output()
        .unwrap()
}

fn text(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every path under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            out.push(path.strip_prefix(base).unwrap().display().to_string());
            if entry.file_type().unwrap().is_dir() {
                walk(base, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

const LAID: &[&str] = &[
    "share/bash-completion/completions/ikigai",
    "share/bash-completion/completions/ikigai-tools",
    "share/zsh/site-functions/_ikigai",
    "share/zsh/site-functions/_ikigai-tools",
    "share/fish/vendor_completions.d/ikigai.fish",
    "share/fish/vendor_completions.d/ikigai-tools.fish",
    "share/man/man1/ikigai.1",
    "share/man/man1/ikigai-tools.1",
    "share/ikigai-tools/manifest",
];

#[test]
fn install_lays_everything_and_uninstall_takes_exactly_that_away() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("p");
    std::fs::create_dir_all(prefix.join("share/man")).unwrap();
    std::fs::write(prefix.join("share/man/someone-elses"), "x").unwrap();
    let before = tree(&prefix);
    let out = ikigai_install(&[prefix.as_os_str()]);
    let (said, err) = text(&out);
    assert!(out.status.success(), "{said}{err}");
    assert!(said.contains("and 10 tools in"), "{said}");
    assert!(said.contains("export MANPATH="), "{said}");
    assert!(said.ends_with(&format!("meanwhile run: {}/bin/ikigai\n", prefix.display())));
    for path in LAID {
        assert!(prefix.join(path).is_file(), "{path}");
    }
    assert_eq!(
        std::fs::read_link(prefix.join("bin/ikigai")).unwrap(),
        Path::new("ikigai-tools")
    );
    assert_eq!(
        std::fs::read_link(prefix.join("libexec/ikigai/grep")).unwrap(),
        Path::new("../../bin/ikigai-tools")
    );
    let version = Command::new(prefix.join("bin/ikigai-tools"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(version.status.success());
    let manifest = std::fs::read_to_string(prefix.join("share/ikigai-tools/manifest")).unwrap();
    assert!(manifest.contains("link\tlibexec/ikigai/grep\t../../bin/ikigai-tools\n"));
    assert!(!manifest.contains("someone-elses"));

    // A second run changes nothing and says the same.
    let again = ikigai_install(&[prefix.as_os_str()]);
    assert_eq!(text(&again).0, said);

    // The person makes a page their own; uninstall leaves it, and what
    // was there before.
    let page = prefix.join("share/man/man1/ikigai.1");
    std::fs::write(&page, ".TH MINE 1\n").unwrap();
    let out = ikigai_install(&["--uninstall".as_ref(), prefix.as_os_str()]);
    let (said, err) = text(&out);
    assert!(out.status.success(), "{said}{err}");
    assert!(
        said.contains(&format!(
            "{}: changed since it was installed, so it is yours now",
            page.display()
        )),
        "{said}"
    );
    let mut expected = before;
    expected.extend([
        "share/man/man1".to_string(),
        "share/man/man1/ikigai.1".to_string(),
    ]);
    expected.sort();
    assert_eq!(tree(&prefix), expected);
    // Nothing left to uninstall: said, and a failure.
    let out = ikigai_install(&["--uninstall".as_ref(), prefix.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).1.contains("has no manifest"), "{:?}", text(&out));
}

#[test]
fn nothing_foreign_is_replaced_and_the_install_stops_before_any_change() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path();
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::fs::create_dir_all(prefix.join("libexec/ikigai")).unwrap();
    std::fs::write(prefix.join("bin/ikigai"), "#!/bin/sh\necho mine\n").unwrap();
    std::os::unix::fs::symlink("/usr/bin/true", prefix.join("libexec/ikigai/grep")).unwrap();
    let before = tree(prefix);
    let out = ikigai_install(&[prefix.as_os_str()]);
    let (said, err) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    assert!(
        err.contains(&format!(
            "{}/bin/ikigai: a file ikigai-tools did not make",
            prefix.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("libexec/ikigai/grep: a link to /usr/bin/true that is not ikigai's"),
        "{err}"
    );
    assert_eq!(tree(prefix), before, "nothing laid");
    assert_eq!(
        std::fs::read_to_string(prefix.join("bin/ikigai")).unwrap(),
        "#!/bin/sh\necho mine\n"
    );
}

#[test]
fn old_links_of_ours_and_an_interrupted_run_are_finished() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path();
    for sub in ["bin", "libexec/ikigai", "share/man/man1"] {
        std::fs::create_dir_all(prefix.join(sub)).unwrap();
    }
    // A link to a binary of ours that is gone, one to an old copy of it,
    // a temporary and a page left by a run that was stopped halfway.
    std::os::unix::fs::symlink("/opt/old/bin/ikigai-tools", prefix.join("bin/ikigai")).unwrap();
    let old = prefix.join("old-ikigai-tools");
    std::fs::copy(bin(), &old).unwrap();
    std::os::unix::fs::symlink(&old, prefix.join("libexec/ikigai/glob")).unwrap();
    std::fs::write(prefix.join("bin/.ikigai-tools.ikigai-new"), "half").unwrap();
    let page = run_main()
        .args(["manpage", "ikigai"])
        .output()
        .stdout
        .into_bytes();
    std::fs::write(
        prefix.join("share/man/man1/ikigai.1"),
        &page[..page.len() / 2],
    )
    .unwrap();
    let out = ikigai_install(&[prefix.as_os_str()]);
    assert!(out.status.success(), "{:?}", text(&out));
    assert_eq!(
        std::fs::read_link(prefix.join("bin/ikigai")).unwrap(),
        Path::new("ikigai-tools")
    );
    assert_eq!(
        std::fs::read_link(prefix.join("libexec/ikigai/glob")).unwrap(),
        Path::new("../../bin/ikigai-tools")
    );
    assert!(!prefix.join("bin/.ikigai-tools.ikigai-new").exists());
    assert_eq!(
        std::fs::read(prefix.join("share/man/man1/ikigai.1")).unwrap(),
        page
    );
}

#[test]
fn a_prefix_that_cannot_be_written_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let prefix = file.join("prefix");
    let out = ikigai_install(&[prefix.as_os_str()]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with(&format!(
            "ikigai-tools install: cannot create {}/",
            prefix.display()
        )),
        "{err}"
    );
}

/// A shell's own syntax check of our completions for it, or None (with
/// why) when the shell is not installed.
fn checked_by(shell: &str, check: &[&str]) -> Option<()> {
    if Command::new(shell).arg("-c").arg("true").output().is_err() {
        eprintln!("skipped: {shell} is not installed (apt-get install {shell})");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join(format!("completions.{shell}"));
    let out = run_main().args(["completions", shell]).output();
    assert_eq!(out.code, 0, "{out:?}");
    std::fs::write(&script, &out.stdout).unwrap();
    let checked = Command::new(shell)
        .args(check)
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        checked.status.success() && checked.stderr.is_empty(),
        "{shell}: {}",
        String::from_utf8_lossy(&checked.stderr)
    );
    Some(())
}

#[test]
fn completions_pass_each_shells_own_check() {
    checked_by("bash", &["-n"]);
    checked_by("zsh", &["-n"]);
    checked_by("fish", &["--no-execute"]);
    let out = run_main().args(["completions", "tcsh"]).output();
    assert_eq!(out.code, 2);
    assert!(out
        .stderr
        .contains("unknown shell 'tcsh': choose bash, zsh, fish"));
}

/// What bash's completion machinery offers for `line` (the words typed,
/// the last one being completed), with our completions loaded.
fn bash_completes(script: &Path, words: &[&str]) -> Vec<String> {
    let array: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source '{}'\n\
         spec=$(complete -p {cmd})\n\
         function=${{spec##*-F }}; function=${{function%% *}}\n\
         COMP_WORDS=({words}); COMP_CWORD={last}\n\
         COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}\n\
         \"$function\" {cmd} \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script.display(),
        cmd = words[0],
        words = array.join(" "),
        last = words.len() - 1,
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(program)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn bash_completes_tools_subcommands_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let out = ikigai_install(&[dir.path().as_os_str()]);
    assert!(out.status.success());
    let completions: PathBuf = dir.path().join("share/bash-completion/completions");
    let tools = completions.join("ikigai-tools");
    let host = completions.join("ikigai");
    assert_eq!(bash_completes(&tools, &["ikigai-tools", "gr"]), ["grep"]);
    assert_eq!(
        bash_completes(&tools, &["ikigai-tools", "comp"]),
        ["completions"]
    );
    assert_eq!(
        bash_completes(&host, &["ikigai", "--timeout", "5", "call", "file_r"]),
        ["file_read"]
    );
    assert_eq!(
        bash_completes(&host, &["ikigai", "--sandbox", "re"]),
        ["read-only"]
    );
    assert_eq!(
        bash_completes(&host, &["ikigai", "sandbox", ""]),
        ["--help", "check"]
    );
    assert_eq!(
        bash_completes(&tools, &["ikigai-tools", "ikigai", "sch"]),
        ["schema"]
    );
    assert_eq!(
        bash_completes(&tools, &["ikigai-tools", "completions", "z"]),
        ["zsh"]
    );
}

#[test]
fn man_pages_render_without_warnings() {
    if Command::new("groff").arg("--version").output().is_err() {
        eprintln!("skipped: groff is not installed (apt-get install groff-base man-db)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for name in ["ikigai", "ikigai-tools"] {
        let out = run_main().args(["manpage", name]).output();
        assert_eq!(out.code, 0, "{out:?}");
        let page = dir.path().join(format!("{name}.1"));
        std::fs::write(&page, &out.stdout).unwrap();
        let groff = Command::new("groff")
            .args(["-ww", "-z", "-man"])
            .arg(&page)
            .output()
            .unwrap();
        assert!(
            groff.status.success() && groff.stderr.is_empty(),
            "{name}: {}",
            String::from_utf8_lossy(&groff.stderr)
        );
        let Ok(man) = Command::new("man")
            .arg("-l")
            .arg(&page)
            .env("MANWIDTH", "80")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .output()
        else {
            eprintln!("skipped: man is not installed (apt-get install man-db)");
            continue;
        };
        let shown = String::from_utf8_lossy(&man.stdout);
        assert!(
            man.status.success(),
            "{}",
            String::from_utf8_lossy(&man.stderr)
        );
        for section in [
            "NAME",
            "SYNOPSIS",
            "COMMANDS",
            "TOOLS",
            "ENVIRONMENT",
            "FILES",
            "EXIT STATUS",
        ] {
            assert!(shown.contains(section), "{name}: {section}");
        }
        assert!(shown.contains("file_read"), "{name}");
    }
    let out = run_main().args(["manpage", "nope"]).output();
    assert_eq!(out.code, 2);
}
