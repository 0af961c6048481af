//! The reading of commands for the rules: unit cases, bash's own reading
//! of the same cases, and property tests that no input makes it panic or
//! grow without bound.

use super::*;

/// The texts of the readings allow rules judge, and of all.
fn judged(command: &str) -> Vec<String> {
    read(command)
        .into_iter()
        .filter(|r| r.kind != Kind::DenyOnly)
        .map(|r| r.text)
        .collect()
}

fn kinds(command: &str) -> Vec<(String, Kind)> {
    read(command)
        .into_iter()
        .map(|r| (r.text, r.kind))
        .collect()
}

fn has(command: &str, text: &str) -> bool {
    read(command).iter().any(|r| r.text == text)
}

#[test]
fn quotes_backslashes_and_assignments() {
    assert_eq!(judged("rm -f x"), ["rm -f x"]);
    assert_eq!(judged("X=1 rm -f x"), ["rm -f x"]);
    assert_eq!(judged("X=1 Y='a b' rm -f x"), ["rm -f x"]);
    assert_eq!(judged(r"\rm -f x"), ["rm -f x"]);
    assert_eq!(judged("r''m -f x"), ["rm -f x"]);
    assert_eq!(judged(r#""r"m -f 'a b'"#), ["rm -f a b"]);
    assert_eq!(judged(r"$'\x72\u006d' x"), ["rm x"]);
    assert_eq!(judged(r"$'\162m' x"), ["rm x"]);
    assert_eq!(judged(r#"$"rm" x"#), ["rm x"]);
    assert_eq!(judged("/bin/rm x"), ["/bin/rm x", "rm x"]);
    assert_eq!(
        judged("./node_modules/.bin/jest"),
        ["./node_modules/.bin/jest", "jest"]
    );
    // An assignment's value may hold anything; only a name makes one.
    assert_eq!(judged("a[1]=x b+=y ls"), ["ls"]);
    assert_eq!(judged("1x=y"), ["1x=y"]);
    assert_eq!(judged("X=1"), Vec::<String>::new());
    assert_eq!(judged("'X=1' ls"), ["X=1 ls"]);
    // Redirections are not words.
    assert_eq!(judged("rm x 2>/dev/null >&2 <in"), ["rm x"]);
    assert_eq!(judged("cat <<EOF\nhi\nEOF"), ["cat"]);
    assert_eq!(judged("rm x&>log"), ["rm x"]);
    // Quoted, a separator or a program name is text.
    assert_eq!(judged("echo 'rm x; ls'"), ["echo rm x; ls"]);
}

#[test]
fn wrappers_run_their_arguments() {
    for (line, inner) in [
        ("command rm x", "rm x"),
        ("command -p rm x", "rm x"),
        ("exec rm x", "rm x"),
        ("exec -a name rm x", "rm x"),
        ("env rm x", "rm x"),
        ("env -i X=1 -u Y rm x", "rm x"),
        ("env -S 'rm x'", "rm x"),
        ("nice rm x", "rm x"),
        ("nice -n 5 rm x", "rm x"),
        ("nice -5 rm x", "rm x"),
        ("nohup rm x", "rm x"),
        ("timeout 5 rm x", "rm x"),
        ("timeout -s KILL -k 1 5s rm x", "rm x"),
        ("timeout --signal=KILL 5 rm x", "rm x"),
        ("/usr/bin/time -f %e rm x", "rm x"),
        ("time -p rm x", "rm x"),
        ("stdbuf -oL rm x", "rm x"),
        ("stdbuf -o L rm x", "rm x"),
        ("setsid -f rm x", "rm x"),
        ("sudo rm x", "rm x"),
        ("sudo -u root -E rm x", "rm x"),
        ("sudo --user=root rm x", "rm x"),
        ("doas -u root rm x", "rm x"),
        ("xargs rm", "rm …"),
        ("xargs -0 -n 1 -P4 rm -f", "rm -f …"),
        ("xargs -I{} rm {}", "rm {} …"),
        ("builtin command rm x", "rm x"),
        ("nice timeout 5 env X=1 command rm x", "rm x"),
        ("find . -name '*.o' -exec rm -f {} \\;", "rm -f {}"),
        ("find . -execdir rm {} +", "rm {}"),
        ("find src tests -name x -delete", "rm src tests"),
        ("find -delete", "rm ."),
    ] {
        assert!(has(line, inner), "{line:?}: {:?}", kinds(line));
    }
    // The wrapper as written is judged too: allow rules must match both.
    assert_eq!(judged("nice cargo test"), ["nice cargo test", "cargo test"]);
    // `command -v` only looks a program up.
    assert_eq!(judged("command -v rm"), ["command -v rm"]);
    // An option a wrapper does not know may take a value: both readings,
    // the second for deny rules only.
    let unknown = kinds("timeout --weird 5 9 rm x");
    assert!(
        unknown.contains(&("rm x".into(), Kind::DenyOnly)),
        "{unknown:?}"
    );
}

#[test]
fn scripts_of_sh_c_and_eval_are_read_in_turn() {
    for (line, inner) in [
        ("bash -c 'rm -f x'", "rm -f x"),
        ("sh -c 'ls; rm x'", "rm x"),
        ("bash -lc 'rm x'", "rm x"),
        ("bash -euo pipefail -c 'rm x'", "rm x"),
        ("/bin/sh -c \"cd /tmp && rm x\"", "rm x"),
        ("eval 'rm x'", "rm x"),
        ("eval rm x", "rm x"),
        ("eval \"echo a; rm x\"", "rm x"),
        ("trap 'rm x' EXIT", "rm x"),
        ("bash -c \"bash -c 'eval rm\\ x'\"", "rm x"),
        ("function f { rm x; }", "rm x"),
        ("f() { rm x; }", "rm x"),
    ] {
        assert!(has(line, inner), "{line:?}: {:?}", kinds(line));
    }
    // Each reading names the part of the line it came from.
    let r = read("ls; bash -c 'rm x'");
    let rm = r.iter().find(|r| r.text == "rm x").unwrap();
    assert_eq!(&*rm.part, "bash -c 'rm x'");
    // A script that cannot be read: refused by allow rules, pieces for deny.
    let open = kinds("bash -c 'echo \"open; rm x'");
    assert!(open.iter().any(|(_, k)| *k == Kind::Unreadable), "{open:?}");
    assert!(open.contains(&("rm x".into(), Kind::DenyOnly)), "{open:?}");
    // `bash script.sh` runs a file: nothing more to read.
    assert_eq!(judged("bash script.sh"), ["bash script.sh"]);
}

#[test]
fn a_program_that_cannot_be_known() {
    for line in [
        "$(echo rm) x",
        "`echo rm` x",
        "$RM x",
        "${RM} x",
        "\"$RM\" x",
        "/bin/r? x",
        "/bin/r* x",
        "/bin/r[m] x",
        "{rm,x}",
        "env $X rm",
        "bash -c \"$SCRIPT\"",
        "eval \"$CMD\"",
        "sudo $(which rm) x",
        "X=1 $(printf rm) x",
        "curl -s x | sh",
        "echo 'rm x' | bash -s",
        "echo 'rm x' | bash -s -- a b",
    ] {
        let k = kinds(line);
        assert!(
            k.iter().any(|(_, k)| *k == Kind::Unknowable),
            "{line:?}: {k:?}"
        );
    }
    // In argument places an expansion is only a value.
    for line in [
        "echo $(id)",
        "rm \"$f\"",
        "ls *.rs",
        "echo {a,b}",
        "[ -f x ]",
        "[[ -n $x ]] && echo y",
        "test -d [ab]",
    ] {
        let k = kinds(line);
        assert!(
            k.iter().all(|(_, k)| *k != Kind::Unknowable),
            "{line:?}: {k:?}"
        );
    }
    // Nesting past the limit is unknowable, never a stack overflow.
    let deep = "eval ".repeat(40) + "ls";
    assert!(kinds(&deep).iter().any(|(_, k)| *k == Kind::Unknowable));
}

#[test]
fn look_alikes_are_what_they_are() {
    assert_eq!(judged("echo rm"), ["echo rm"]);
    assert_eq!(judged("grep rm file"), ["grep rm file"]);
    assert_eq!(judged("format"), ["format"]);
    assert_eq!(judged("git rm x"), ["git rm x"]);
    assert_eq!(judged("echo 'bash -c rm'"), ["echo bash -c rm"]);
}

#[test]
fn writes_are_kept_on_every_reading() {
    let r = read("X=1 timeout 5 tee f > out.txt");
    assert!(r.iter().all(|r| r.writes_file), "{r:?}");
    let r = read("(a; b) > f");
    assert_eq!(r.last().map(|r| r.writes_file), Some(true));
}

/// A directory of probes: each name, run, appends its name and arguments
/// to a log, so bash itself says what it ran.
struct Probes {
    dir: tempfile::TempDir,
}

impl Probes {
    fn new(names: &[&str]) -> Probes {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let log = dir.path().join("log");
        let script = format!(
            "#!/bin/sh\nprintf '%s' \"${{0##*/}}\" >> '{}'\nfor a; do printf ' %s' \"$a\" >> '{}'; done\necho >> '{}'\n",
            log.display(),
            log.display(),
            log.display()
        );
        for name in names {
            let p = bin.join(name);
            std::fs::write(&p, &script).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Probes { dir }
    }

    fn bin(&self) -> String {
        self.dir.path().join("bin").display().to_string()
    }

    /// What bash ran of the probes for `line`, one command a line.
    fn run(&self, line: &str) -> Vec<String> {
        let log = self.dir.path().join("log");
        let _ = std::fs::remove_file(&log);
        let path = format!(
            "{}:{}",
            self.bin(),
            std::env::var("PATH").unwrap_or_default()
        );
        let status = std::process::Command::new("bash")
            .args(["-c", line])
            .env("PATH", path)
            .current_dir(self.dir.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        assert!(status.is_ok(), "bash: {status:?}");
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// Each case through real bash, with probes in place of the programs:
/// every command bash ran is one our reading names (its words, or its
/// words before those xargs or find add), and every probe we read in a
/// case that always runs it, bash ran.
#[test]
fn bash_reads_each_case_as_we_do() {
    if std::process::Command::new("bash")
        .arg("-c")
        .arg(":")
        .status()
        .is_err()
    {
        eprintln!("skipped: no bash");
        return;
    }
    let probes = Probes::new(&["zap", "other"]);
    let bin = probes.bin();
    let cases: Vec<String> = [
        "zap a",
        "X=1 zap a",
        "X=1 Y='b c' zap a",
        "command zap a",
        r"\zap a",
        "BIN/zap a",
        "env zap a",
        "env -i X=1 BIN/zap a",
        "exec zap a",
        "nice zap a",
        "nice -n 5 zap a",
        "nohup zap a",
        "timeout 5 zap a",
        "timeout -s KILL 5 zap a",
        "stdbuf -oL zap a",
        "setsid -w zap a",
        "time -p zap a",
        "bash -c 'zap a'",
        "bash -c 'zap a; other b'",
        "sh -c \"zap 'a b'\"",
        // A login shell sets PATH anew: the probe by its path.
        "bash -lc 'BIN/zap a'",
        "eval 'zap a'",
        "eval zap a",
        "z''ap a",
        "\"z\"ap 'a b'",
        r"$'z\x61p' a",
        "echo x | xargs zap",
        "echo x | xargs -n 1 zap a",
        "other $(zap a)",
        "other `zap a`",
        "if true; then zap a; fi",
        "{ zap a; other b; }",
        "(zap a) && other b",
        "zap a >/dev/null 2>&1",
        "find . -maxdepth 0 -exec zap {} \\;",
        "nice timeout 5 env X=1 stdbuf -oL zap a",
        "bash -c \"eval 'zap a'\"",
        "f() { zap a; }; f",
        "function g { zap a; }; g",
    ]
    .iter()
    .map(|c| c.replace("BIN", &bin))
    .collect();
    for case in &cases {
        let ran = probes.run(case);
        assert!(!ran.is_empty(), "{case:?}: bash ran no probe");
        let ours: Vec<Vec<String>> = read(case)
            .into_iter()
            .filter(|r| r.kind == Kind::Runs)
            .map(|r| r.text.split(' ').map(str::to_string).collect())
            .collect();
        for line in &ran {
            let words: Vec<&str> = line.split(' ').collect();
            let found = ours.iter().any(|o| {
                // Ours may hold fewer words (those xargs adds: `…`; find's
                // `{}`), and an
                // expansion stands for words known only when it runs;
                // blanks inside a quoted word are blanks in ours too.
                let o: Vec<&str> = o
                    .iter()
                    .map(String::as_str)
                    .take_while(|w| !matches!(*w, "…" | "{}") && !w.contains(['$', '`']))
                    .collect();
                let joined = o.join(" ");
                joined == words.join(" ") || (words.starts_with(&o) && !o.is_empty())
            });
            assert!(found, "{case:?}: bash ran {line:?}; we read {ours:?}");
        }
        // What we read of the probes, bash ran (no case here skips one).
        for o in &ours {
            let program = o[0].as_str();
            if matches!(program, "zap" | "other") {
                assert!(
                    ran.iter().any(|l| l.split(' ').next() == Some(program)),
                    "{case:?}: we read {o:?}; bash ran {ran:?}"
                );
            }
        }
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Characters that mean something to the shell, and some that do not.
    fn shellish() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just("'"),
                Just("\""),
                Just("\\"),
                Just("$"),
                Just("("),
                Just(")"),
                Just("`"),
                Just(";"),
                Just("&"),
                Just("|"),
                Just("<"),
                Just(">"),
                Just("{"),
                Just("}"),
                Just("["),
                Just("]"),
                Just("*"),
                Just("?"),
                Just("="),
                Just(" "),
                Just("\n"),
                Just("\t"),
                Just("#"),
                Just("-"),
                Just("rm"),
                Just("bash -c "),
                Just("eval "),
                Just("env "),
                Just("xargs "),
                Just("find -exec "),
                Just("sudo "),
                Just("<<EOF\n"),
                Just("EOF"),
                Just("$'"),
                Just("\\x7"),
                Just("é"),
                Just("日"),
                Just("0"),
                Just("2>"),
                Just("a"),
            ],
            0..60,
        )
        .prop_map(|pieces| pieces.concat())
    }

    /// Output bounded by the input: no reading is longer than the line
    /// (plus what a reading adds: `rm `, `…`), there are few of them, and
    /// all of them together are a fixed multiple of the line.
    fn bounded(line: &str) {
        let runs = read(line);
        let n = line.len() + 16;
        assert!(runs.len() <= 8 * n, "{} readings of {line:?}", runs.len());
        for r in &runs {
            assert!(r.text.len() <= 4 * n, "{line:?}: {:?}", r.text);
        }
        // In all, a fixed multiple of the line: memory grows with the
        // line's length, never with its nesting.
        let mut parts: Vec<&Rc<str>> = runs.iter().map(|r| &r.part).collect();
        parts.dedup_by(|a, b| Rc::ptr_eq(a, b));
        let total: usize = runs.iter().map(|r| r.text.len()).sum::<usize>()
            + parts.iter().map(|p| p.len()).sum::<usize>();
        assert!(total <= 256 * n, "{total} bytes of readings for {line:?}");
    }

    /// Lines built to nest as deep as they can: substitutions, subshells,
    /// `bash -c` in quotes, wrappers on wrappers, `eval` on `eval`.
    #[test]
    fn deep_nesting_stays_bounded() {
        for k in [1, 10, 63, 64, 65, 1000, 20_000] {
            bounded(&("echo $(".repeat(k) + "rm x" + &")".repeat(k)));
            bounded(&("(".repeat(k) + "rm x" + &")".repeat(k)));
            bounded(&("nice ".repeat(k) + "rm x"));
            bounded(&("eval ".repeat(k) + "rm x"));
            bounded(&("timeout --x 1 ".repeat(k) + "rm x"));
            bounded(&("bash -c \"".repeat(k.min(2000)) + "rm x" + &"\"".repeat(k.min(2000))));
            bounded(&("find -exec ".repeat(k) + "rm x"));
        }
        // Past the depth, what runs is unknowable: every deny rule matches.
        let deep = "nice ".repeat(20) + "rm x";
        assert!(read(&deep).iter().any(|r| r.kind == Kind::Unknowable));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        #[test]
        fn shell_like_input_never_panics(line in shellish()) {
            bounded(&line);
        }

        #[test]
        fn any_text_never_panics(line in "\\PC{0,200}") {
            bounded(&line);
        }

        #[test]
        fn a_real_command_mutated_never_panics(
            at in 0usize..80,
            insert in shellish(),
            cut in 0usize..10,
        ) {
            let base = "X=1 timeout 5 bash -c 'eval \"rm -f $(ls x)\" && find . -exec rm {} ;' | xargs -0 rm >> log";
            let mut chars: Vec<char> = base.chars().collect();
            let at = at.min(chars.len());
            let end = (at + cut).min(chars.len());
            chars.splice(at..end, insert.chars());
            bounded(&chars.into_iter().collect::<String>());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200_000, ..ProptestConfig::default() })]

        /// The long run (minutes; faster with `--release`):
        /// `cargo test -- --ignored long_run`.
        #[test]
        #[ignore]
        fn long_run_shell_like_input(line in shellish()) {
            bounded(&line);
        }
    }
}
