//! No way around the walls (decisions 79 and 81), tried as an attacker
//! would, through the real binary, as the user running the tests and, when
//! that is root, as an unprivileged user too (`ways_out`'s `Place`):
//! renames, moves, removals and links of what the fence protects, with the
//! workspace set to the home directory, to a repository and to a
//! subdirectory of home, from bash and from our own tools; and each call's
//! limits, met by a fork bomb, a runaway allocation and a 10 GB file.
//!
//! Every limit test is guarded from outside by limits of its own
//! (`prlimit` on the host), set above the call's, so that a build whose
//! limits do not hold fails its test without taking the machine down.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use super::ways_out::{mcp, output, users, Place, Who, NOBODY};

/// The envelope's rules, as one text.
fn refuses(envelope: &Value) -> String {
    envelope["sandbox"]["refuses"].to_string()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Links our binary as `apply_patch` beside the place's other tools.
fn with_apply_patch(p: &Place) {
    let link = p.tools.join("apply_patch");
    std::os::unix::fs::symlink(p.tools.join("bash").canonicalize().unwrap(), link).unwrap();
}

#[test]
fn from_home_nothing_protected_moves_and_no_secret_leaves() {
    for who in users() {
        let p = Place::new(who);
        let home = &p.home;
        // The attacks of one call: the rules' directory renamed away and
        // made anew, the secrets carried off, removed, or linked.
        let text = p.bash_in(
            home,
            &[],
            "mv ~/.config ~/.c2; mv ~/.config/ikigai ~/.i2; \
             mkdir -p ~/.config/ikigai && printf 'sandbox = \"off\"\\n' > ~/.config/ikigai/config.toml; \
             mv ~/.ssh ~/s2; rm -rf ~/.ssh; mv ~/.aws ~/a2; mv ~/.netrc ~/n2; \
             ln ~/.netrc ~/n3; ln ~/.ssh/id_ed25519 ~/k; ln -s ~/.ssh/id_ed25519 ~/l; \
             mv ~/.ssh/id_ed25519 ~/.ssh/other; echo end",
        );
        assert!(text.contains("end"), "{who:?}: {text}");
        assert!(text.contains("Device or resource busy"), "{who:?}: {text}");
        assert!(text.contains("Read-only file system"), "{who:?}: {text}");
        assert!(
            text.contains("Invalid cross-device link"),
            "{who:?}: {text}"
        );
        // (`mv` of a mount point falls back to a copy, which holds what the
        // call could read: no secret, below.)
        for gone in [".c2", "s2", "a2", "n2", "n3", "k"] {
            assert!(!home.join(gone).exists(), "{who:?}: {gone}: {text}");
        }
        let config = read(&home.join(".config/ikigai/config.toml"));
        assert!(
            config.starts_with("sandbox = \"workspace-write\""),
            "{config}"
        );
        assert_eq!(read(&home.join(".ssh/known_hosts")), "KNOWN-HOSTS-LINE\n");
        assert_eq!(
            read(&home.join(".ssh/id_ed25519")),
            "SECRET-.ssh/id_ed25519\n"
        );
        assert!(!home.join(".ssh/other").exists(), "{who:?}: {text}");
        // A later call finds no secret where the first one tried to put
        // them, nor through the link it could make.
        let text = p.bash_in(
            home,
            &[],
            "cat ~/s2/id_ed25519 ~/a2/credentials ~/n2 ~/l ~/.ssh/id_ed25519; \
             grep -r SECRET ~/.i2; \
             cat ~/.ssh/known_hosts",
        );
        assert!(!text.contains("SECRET-"), "{who:?}: {text}");
        assert!(text.contains("KNOWN-HOSTS-LINE"), "{who:?}: {text}");
        // The refusal names the rule.
        let (envelope, _) = p.call_in(home, &[], "bash", json!({"command": "mv ~/.config ~/.c2"}));
        assert_eq!(envelope["result"]["exit_code"], 1, "{envelope}");
        assert!(
            refuses(&envelope).contains("no rename, move or removal"),
            "{envelope}"
        );
    }
}

#[test]
fn in_a_repository_git_cannot_be_moved_or_replaced() {
    for who in users() {
        let p = Place::new(who);
        // What tells git to read another config: covered where it exists.
        let git = p.ws.join(".git");
        std::fs::write(git.join("commondir"), ".\n").unwrap();
        std::fs::write(git.join("config.worktree"), "").unwrap();
        std::fs::create_dir(git.join("worktrees")).unwrap();
        if who == Who::Nobody {
            let status = Command::new("chown")
                .args(["-R", &format!("{NOBODY}:{NOBODY}")])
                .arg(&git)
                .status()
                .unwrap();
            assert!(status.success());
        }
        let text = p.bash(
            &[],
            "mv .git .g2; cp -a .git .g3; mv .git/hooks .git/h2; rm -rf .git/worktrees; \
             echo '[core]' >> .git/config.worktree; echo /tmp/evil > .git/commondir; \
             git config core.fsmonitor 'touch /tmp/pwned'; \
             echo x > tracked && git add tracked && echo staged",
        );
        assert!(text.contains("Device or resource busy"), "{who:?}: {text}");
        assert!(text.contains("staged"), "{who:?}: {text}");
        assert!(!p.ws.join(".g2").exists(), "{who:?}: {text}");
        assert!(git.join("hooks").is_dir() && git.join("worktrees").is_dir());
        assert_eq!(read(&git.join("commondir")), ".\n");
        assert_eq!(read(&git.join("config.worktree")), "");
        assert!(!read(&git.join("config")).contains("fsmonitor"), "{text}");
        // From our own tool: apply_patch's move of the config and deletion
        // of a hook are refused too, and change nothing.
        with_apply_patch(&p);
        let hook = git.join("hooks/pre-commit.sample");
        let sample = hook.exists().then(|| read(&hook));
        let patch = "*** Begin Patch\n*** Update File: .git/config\n*** Move to: config.moved\n\
                     @@\n [core]\n+\tfsmonitor = touch /tmp/pwned\n*** End Patch\n";
        let (envelope, out) = p.call_in(&p.ws, &[], "apply_patch", json!({ "input": patch }));
        assert!(envelope.to_string().contains("rror"), "{who:?}: {out:?}");
        assert!(!p.ws.join("config.moved").exists(), "{who:?}: {envelope}");
        assert!(!read(&git.join("config")).contains("fsmonitor"));
        if let Some(sample) = sample {
            let patch = "*** Begin Patch\n*** Delete File: .git/hooks/pre-commit.sample\n\
                         *** End Patch\n";
            p.call_in(&p.ws, &[], "apply_patch", json!({ "input": patch }));
            assert_eq!(read(&hook), sample);
        }
    }
}

#[test]
fn in_a_subdirectory_of_home_the_repository_and_the_secrets_stay() {
    for who in users() {
        let p = Place::new(who);
        let proj = p.home.join("proj");
        std::fs::create_dir(&proj).unwrap();
        let git = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&proj)
            .status();
        assert!(git.is_ok_and(|s| s.success()));
        if who == Who::Nobody {
            let status = Command::new("chown")
                .args(["-R", &format!("{NOBODY}:{NOBODY}")])
                .arg(&proj)
                .status()
                .unwrap();
            assert!(status.success());
        }
        let text = p.bash_in(
            &proj,
            &[],
            "mv .git .g2; mv ~/.ssh ~/s2; mv ~/.config ~/.c2; echo end",
        );
        assert!(text.contains("Device or resource busy"), "{who:?}: {text}");
        assert!(text.contains("Permission denied"), "{who:?}: {text}");
        assert!(proj.join(".git/config").exists() && !proj.join(".g2").exists());
        assert!(p.home.join(".ssh/id_ed25519").exists());
        assert!(p.home.join(".config/ikigai/config.toml").exists());
        // file_write cannot put a secret's copy anywhere either: it cannot
        // read one, and the rules' file stays read-only.
        let config = p.home.join(".config/ikigai/config.toml");
        let (envelope, _) = p.call_in(
            &proj,
            &[],
            "file_write",
            json!({"file_path": config, "content": "sandbox = \"off\"\n"}),
        );
        assert!(envelope.to_string().contains("denied"), "{envelope}");
        assert!(!read(&config).contains("off"));
    }
}

/// Adds `[limits]` to the place's config file.
pub(super) fn limit(p: &Place, limits: &str) {
    let config = p.home.join(".config/ikigai/config.toml");
    let text = read(&config) + "\n[limits]\n" + limits + "\n";
    std::fs::write(&config, text).unwrap();
}

#[test]
fn a_file_past_its_size_ends_the_call_with_resource_limit() {
    for who in users() {
        let mut p = Place::new(who);
        limit(&p, "file_size = \"64K\"");
        // Guarded from outside: whatever happens, the host and its tools
        // write at most 64 MiB per file.
        p.outer = vec!["--fsize=67108864".into()];
        let (envelope, out) = p.call_in(
            &p.ws,
            &[],
            "bash",
            json!({"command": "head -c 10G /dev/zero > big"}),
        );
        assert_eq!(envelope["error_code"], "RESOURCE_LIMIT", "{who:?}: {out:?}");
        let error = envelope["error"].as_str().unwrap();
        assert!(
            error.contains("64 KiB") && error.contains("limits.file_size"),
            "{error}"
        );
        assert_eq!(std::fs::metadata(p.ws.join("big")).unwrap().len(), 64 << 10);
        // Our own tool, stopped by the kernel's signal itself.
        // (Under the 128 KiB the kernel allows one argument of `ikigai call`.)
        let content = "a".repeat(100_000);
        let target = p.ws.join("written");
        let args = json!({ "file_path": target, "content": content });
        let (envelope, out) = p.call_in(&p.ws, &[], "file_write", args.clone());
        assert_eq!(envelope["error_code"], "RESOURCE_LIMIT", "{who:?}: {out:?}");
        assert!(!target.exists(), "{who:?}: a torn file was left");
        // The same through the MCP server, whose file_write runs in a worker.
        let (mut server, mut call) = mcp(&p, &[]);
        let text = call("file_write", args);
        assert!(text.contains("RESOURCE_LIMIT"), "{who:?}: {text}");
        let text = call("bash", json!({"command": "echo still here"}));
        assert!(text.contains("still here"), "{who:?}: {text}");
        server.kill().unwrap();
        server.wait().unwrap();
    }
}

#[test]
fn a_runaway_allocation_fails_inside_the_call() {
    if Command::new("python3").arg("-V").output().is_err() {
        eprintln!("skipped: no python3");
        return;
    }
    for who in users() {
        let mut p = Place::new(who);
        limit(&p, "memory = \"256M\"");
        // Guarded from outside: the host and everything it starts hold at
        // most 4 GiB of data each.
        p.outer = vec!["--data=4294967296".into()];
        let text = p.bash(
            &[],
            "python3 -c 'x = bytearray(8 << 30)'; echo rc=$?; \
             python3 -c 'x = bytearray(64 << 20); print(\"small ok\")'",
        );
        assert!(text.contains("MemoryError"), "{who:?}: {text}");
        assert!(text.contains("rc=1"), "{who:?}: {text}");
        assert!(text.contains("small ok"), "{who:?}: {text}");
    }
}

#[test]
fn a_fork_bomb_meets_the_process_limit() {
    for who in users() {
        let mut p = Place::new(who);
        limit(&p, "processes = 64");
        // Guarded from outside: the unprivileged user may have at most 2000
        // processes (the kernel applies no such limit to root, below).
        p.outer = vec!["--nproc=2000".into()];
        let check = output({
            let mut cmd = p.command(&p.tools.join("ikigai"));
            cmd.args(["sandbox", "check"]);
            cmd
        });
        // SAFETY: geteuid cannot fail.
        if who == Who::Me && unsafe { libc::geteuid() } == 0 {
            // Root: said, not pretended.
            assert!(
                check.stdout.contains("no process limit to uid 0"),
                "{}",
                check.stdout
            );
            continue;
        }
        assert!(
            check.stdout.contains("64 (limits.processes)"),
            "{}",
            check.stdout
        );
        let (envelope, out) = p.call_in(
            &p.ws,
            &["--timeout", "60"],
            "bash",
            json!({"command": "f() { f | f & }; f; sleep 1; echo survived"}),
        );
        assert_ne!(envelope["error_code"], "TOOL_TIMEOUT", "{who:?}: {out:?}");
        let text = envelope["result"]["output"].as_str().unwrap_or_default();
        assert!(text.contains("fork"), "{who:?}: {out:?}");
        assert!(text.contains("survived"), "{who:?}: {out:?}");
    }
}

#[test]
fn every_config_error_names_the_file() {
    let Some(&who) = users().first() else {
        return;
    };
    let p = Place::new(who);
    let config = p.home.join(".config/ikigai/config.toml");
    for (text, says) in [
        (
            "add_dirs = [\"/tmp{\"]\n",
            "line 1, key 'add_dirs': cannot use directory '/tmp{'",
        ),
        (
            "[limits]\nmemory = \"8T\"\n",
            "line 2, key 'limits.memory': invalid size '8T'",
        ),
        (
            "[limits]\nprocesses = -1\n",
            "line 2, key 'limits.processes'",
        ),
        (
            "[limits]\nmemory_total = \"lots\"\n",
            "line 2, key 'limits.memory_total': invalid size 'lots'",
        ),
        (
            "deny_read = [\"relative\"]\n",
            "key 'deny_read': 'relative' is not an absolute path",
        ),
    ] {
        std::fs::write(&config, text).unwrap();
        let mut cmd = p.command(&p.tools.join("ikigai"));
        cmd.args(["--sandbox", "workspace-write", "tools"]);
        let out = output(cmd);
        assert_eq!(out.code, 2, "{text}: {out:?}");
        let want = format!("{}, {says}", config.display());
        assert!(out.stderr.contains(&want), "{text}: {}", out.stderr);
    }
}

/// A place whose data directory holds `sessions` sessions (each with a
/// log), the call given back the eighth's directory: the mounts of its
/// call, and what it read.
fn sessions_seen(who: Who, sessions: usize) -> (usize, String) {
    let p = Place::new(who);
    let data = p.home.join(".local/share/ikigai/sessions");
    for i in 0..sessions {
        let dir = data.join(format!("s{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("log"), format!("LOG-s{i}\n")).unwrap();
    }
    if who == Who::Nobody {
        let status = Command::new("chown")
            .args(["-R", &format!("{NOBODY}:{NOBODY}")])
            .arg(p.home.join(".local"))
            .status()
            .unwrap();
        assert!(status.success());
    }
    let kept = data.join("s2");
    let text = p.bash(
        &["--allow-read", kept.to_str().unwrap()],
        "echo mounts=$(wc -l < /proc/self/mountinfo); \
         cat ~/.local/share/ikigai/sessions/s2/log ~/.local/share/ikigai/sessions/s1/log; \
         ls ~/.local/share/ikigai/sessions; echo x > ~/.local/share/ikigai/sessions/new; \
         mv ~/.local/share/ikigai/sessions/s2 ~/.local/share/ikigai/sessions/s9; echo end",
    );
    let mounts = text
        .lines()
        .find_map(|l| l.strip_prefix("mounts="))
        .unwrap_or_else(|| panic!("{who:?}: {text}"))
        .trim()
        .parse()
        .unwrap();
    assert!(text.contains("end"), "{who:?}: {text}");
    assert_eq!(read(&data.join("s2/log")), "LOG-s2\n", "{who:?}: {text}");
    assert!(!data.join("new").exists(), "{who:?}: {text}");
    (mounts, text)
}

#[test]
fn a_hidden_directory_costs_the_same_mounts_however_many_entries_it_holds() {
    for who in users() {
        let (few, text) = sessions_seen(who, 3);
        let (many, many_text) = sessions_seen(who, 300);
        assert_eq!(few, many, "{who:?}: {text}\n{many_text}");
        for text in [text, many_text] {
            // The session given back reads; its sibling does not, nor does
            // the directory list.
            assert!(text.contains("LOG-s2"), "{who:?}: {text}");
            assert!(!text.contains("LOG-s1"), "{who:?}: {text}");
            assert!(!text.contains("s0"), "{who:?}: {text}");
            assert!(text.contains("Permission denied"), "{who:?}: {text}");
            assert!(text.contains("Read-only file system"), "{who:?}: {text}");
        }
    }
}

#[test]
fn another_users_private_socket_does_not_stop_a_root_hosts_calls() {
    // SAFETY: geteuid cannot fail.
    if users().is_empty() || unsafe { libc::geteuid() } != 0 {
        return;
    }
    // A socket in another user's private directory (a runtime directory's
    // agent socket): /proc/net/unix lists it to everyone, and root can
    // reach it, but the call's namespace cannot, so neither can the tool.
    let p = Place::new(Who::Me);
    let private = p.outside.join("run-nobody");
    std::fs::create_dir(&private).unwrap();
    let socket = private.join("S.agent");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let status = Command::new("chown")
        .arg(format!("{NOBODY}:{NOBODY}"))
        .arg(&private)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::set_permissions(
        &private,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let text = p.bash(
        &[],
        &format!("echo ran; ls {} || echo unreachable", private.display()),
    );
    assert!(text.starts_with("ran"), "{text}");
    assert!(text.contains("unreachable"), "{text}");
}
