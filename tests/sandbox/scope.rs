//! A scope per call (decision 81's bound on the whole call), against a real
//! systemd user manager: Debian's `systemd --user` on a session bus of
//! `dbus-daemon`, both started once for this test process, each call made
//! through the real binary as users make it (`ikigai call`, one
//! `sandbox-exec` per call; `ikigai-tools mcp`, the spawner's calls made
//! in advance).
//!
//! The manager needs what a login gives it: a control group of its own to
//! manage, here a new one in every hierarchy (`ikigai-test-PID`; started
//! in the machine's own group, it would move every process there into its
//! `init.scope`), and `/run/systemd/system`, which it takes as the sign
//! that systemd runs the machine, here on a tmpfs of its own mount
//! namespace. Nothing outside the test changes but those groups, which a
//! later run removes. Where it cannot run (not root, no systemd or
//! dbus-daemon), the tests say so and pass without asserting; the scope's
//! own logic has unit tests besides.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::json;

use super::walls::limit;
use super::ways_out::{mcp, output, Place, Who, NOBODY};

/// A session bus and its user manager, one per user, shared by the tests
/// of this process.
struct Manager {
    runtime: PathBuf,
    who: Who,
}

impl Manager {
    fn bus(&self) -> String {
        format!("unix:path={}", self.runtime.join("bus").display())
    }

    /// A place whose calls see this manager's bus where ikigai looks for
    /// it (`$XDG_RUNTIME_DIR/bus`). An unprivileged user's manager may only
    /// move processes already in its own tree, as on a desktop, where the
    /// terminal is one of its units: so is ikigai here, a service the
    /// manager starts with the place's environment, directory and stdio.
    fn place(&self) -> Place {
        let mut p = Place::new(self.who);
        p.env
            .push(("XDG_RUNTIME_DIR".into(), self.runtime.display().to_string()));
        if self.who == Who::Nobody {
            let mut launcher: Vec<String> = [
                "systemd-run",
                "--user",
                "--wait",
                "--pipe",
                "--quiet",
                "--collect",
                "--same-dir",
            ]
            .map(String::from)
            .to_vec();
            // The service's environment: these, taken from systemd-run's.
            for var in ["PATH", "HOME", "TMPDIR", "XDG_RUNTIME_DIR"] {
                launcher.extend(["-E".to_string(), var.to_string()]);
            }
            launcher.push("--".into());
            p.launcher = launcher;
        }
        p
    }

    /// `program` as this manager's user, on its bus.
    fn command(&self, program: &str) -> Command {
        let mut cmd = match self.who {
            Who::Me => Command::new(program),
            Who::Nobody => {
                let mut cmd = Command::new("setpriv");
                cmd.args(as_nobody()).arg(program);
                cmd
            }
        };
        cmd.env("DBUS_SESSION_BUS_ADDRESS", self.bus())
            .env("XDG_RUNTIME_DIR", &self.runtime);
        cmd
    }

    /// Those of the `units` still loaded.
    fn loaded(&self, units: &[String]) -> String {
        let out = self
            .command("systemctl")
            .args(["--user", "list-units", "--all", "--plain", "--no-legend"])
            .args(units)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// setpriv's options that make a command `nobody`'s, ending with its
/// parent (a change of user clears the parent-death signal: set again).
fn as_nobody() -> [String; 5] {
    [
        format!("--reuid={NOBODY}"),
        format!("--regid={NOBODY}"),
        "--clear-groups".into(),
        "--pdeathsig=SIGTERM".into(),
        "--".into(),
    ]
}

/// The managers to try: root's (the test runner's) and nobody's; none
/// (with the reason) where this machine cannot run them.
fn managers() -> Vec<&'static Manager> {
    static MANAGERS: OnceLock<Vec<Result<Manager, String>>> = OnceLock::new();
    let all = MANAGERS.get_or_init(|| [Who::Me, Who::Nobody].map(start).into_iter().collect());
    let mut found = Vec::new();
    for (who, manager) in [Who::Me, Who::Nobody].iter().zip(all) {
        match manager {
            Ok(manager) => found.push(manager),
            Err(why) => eprintln!("skipped: no systemd user manager for {who:?} ({why})"),
        }
    }
    found
}

fn systemd() -> Option<&'static Path> {
    ["/lib/systemd/systemd", "/usr/lib/systemd/systemd"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists())
}

/// Puts the shell in a control group of its own in every hierarchy the
/// manager uses (the unified one, and systemd's, memory and pids where
/// they are version 1), delegated to the user ($1) as a login's is, then
/// becomes the manager ($0, as that user) with a /run of its own.
const MANAGER_START: &str = r#"
for dir in $(awk '{ for (i = 1; i < NF; i++) if ($i == "-") { t = $(i + 1); o = $(i + 3); break }
                    if (t == "cgroup2" || (t == "cgroup" && o ~ /name=systemd|memory|pids/))
                        print $5 }' /proc/self/mountinfo); do
    mkdir -p "$dir/ikigai-test-$$" && chown -R "$1:$1" "$dir/ikigai-test-$$" &&
        echo $$ > "$dir/ikigai-test-$$/cgroup.procs" || exit 1
done
mount -t tmpfs ikigai-test /run && mkdir -p /run/systemd/system || exit 1
[ "$1" = 0 ] && exec "$0" --user
exec setpriv --reuid="$1" --regid="$1" --clear-groups --pdeathsig=SIGTERM -- "$0" --user
"#;

/// Removes the control groups of earlier runs' managers that have ended
/// (deepest first; a group still in use is left).
fn clear_stale_groups() {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for line in mounts.lines() {
        let Some((before, after)) = line.split_once(" - ") else {
            continue;
        };
        if !after.starts_with("cgroup ") && !after.starts_with("cgroup2 ") {
            continue;
        }
        let Some(at) = before.split(' ').nth(4) else {
            continue;
        };
        for entry in std::fs::read_dir(at).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.strip_prefix("ikigai-test-") else {
                continue;
            };
            if !Path::new("/proc").join(pid).exists() {
                remove_groups(&entry.path());
            }
        }
    }
}

fn remove_groups(dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_groups(&entry.path());
        }
    }
    let _ = std::fs::remove_dir(dir);
}

fn start(who: Who) -> Result<Manager, String> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("the tests do not run as root".into());
    }
    let systemd = systemd().ok_or("no systemd")?;
    for tool in [
        "dbus-daemon",
        "unshare",
        "busctl",
        "systemctl",
        "setpriv",
        "systemd-run",
    ] {
        if Command::new(tool).arg("--version").output().is_err() {
            return Err(format!("no {tool}"));
        }
    }
    let uid = match who {
        Who::Me => 0,
        Who::Nobody => NOBODY,
    };
    // Kept for the process's life (its path is the bus's), under cargo's
    // directory for tests, where a later run clears those of processes
    // that have ended.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix("scope-bus-")
            .and_then(|r| r.split('-').next());
        if pid.is_some_and(|pid| !Path::new("/proc").join(pid).exists()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    clear_stale_groups();
    let runtime = dir.join(format!("scope-bus-{}-{uid}", std::process::id()));
    std::fs::create_dir_all(runtime.join("home")).map_err(|e| e.to_string())?;
    let chown = Command::new("chown")
        .arg("-R")
        .arg(format!("{uid}:{uid}"))
        .arg(&runtime)
        .status();
    if !chown.is_ok_and(|s| s.success()) {
        return Err(format!("cannot give {} to {uid}", runtime.display()));
    }
    let manager = Manager {
        runtime: runtime.clone(),
        who,
    };
    let bus = manager.bus();
    let (tell, told) = std::sync::mpsc::channel();
    let mut daemon = manager.command("dbus-daemon");
    daemon
        .args(["--session", "--nofork", "--nopidfile"])
        .arg(format!("--address={bus}"))
        .env("HOME", runtime.join("home"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut systemd_user = Command::new("unshare");
    systemd_user
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(MANAGER_START)
        .arg(systemd)
        .arg(uid.to_string())
        .env("DBUS_SESSION_BUS_ADDRESS", &bus)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("HOME", runtime.join("home"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let socket = runtime.join("bus");
    // Started from a thread that lives as long as the test process: the
    // parent-death signal that ends them fires when that thread ends.
    std::thread::spawn(move || {
        for (cmd, wait) in [(&mut daemon, true), (&mut systemd_user, false)] {
            // SAFETY: prctl in the child before exec, async-signal-safe.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
                    Ok(())
                });
            }
            if let Err(e) = cmd.spawn() {
                let _ = tell.send(Err(e.to_string()));
                return;
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while wait && !socket.exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = tell.send(Ok(()));
        loop {
            std::thread::park();
        }
    });
    told.recv().map_err(|e| e.to_string())??;
    // Ready when the manager says it is running.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let state = manager
            .command("busctl")
            .args(["--user", "get-property", "org.freedesktop.systemd1"])
            .args([
                "/org/freedesktop/systemd1",
                "org.freedesktop.systemd1.Manager",
            ])
            .arg("SystemState")
            .output()
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&state.stdout);
        if text.contains("running") || text.contains("degraded") {
            return Ok(manager);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the manager did not start: {text}{}",
                String::from_utf8_lossy(&state.stderr)
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The name of the scope a call ran in, from what it printed of
/// /proc/self/cgroup; None when it ran in none.
fn scope_of(cgroups: &str) -> Option<String> {
    let at = cgroups.find("ikigai-call-")?;
    let len = cgroups[at..].find(".scope")? + ".scope".len();
    Some(cgroups[at..at + len].to_string())
}

#[test]
fn every_call_runs_in_a_scope_of_its_own_and_leaves_no_unit() {
    for m in managers() {
        let p = m.place();
        let first = p.bash(&[], "cat /proc/self/cgroup");
        let second = p.bash(&[], "cat /proc/self/cgroup");
        let (a, b) = (scope_of(&first), scope_of(&second));
        assert!(a.is_some(), "{first}");
        assert!(b.is_some() && a != b, "{first}\n{second}");
        // Everything the call starts is in it: a process the tool's shell
        // started in a new session is too.
        let setsid = p.bash(&[], "setsid sh -c 'cat /proc/self/cgroup'");
        assert!(scope_of(&setsid).is_some(), "{setsid}");
        // The spawner's calls, made in advance, each have their own too.
        let (mut server, mut call) = mcp(&p, &[]);
        let one = call("bash", json!({"command": "cat /proc/self/cgroup"}));
        let two = call("bash", json!({"command": "cat /proc/self/cgroup"}));
        assert!(
            scope_of(&one).is_some() && scope_of(&one) != scope_of(&two),
            "{one}\n{two}"
        );
        server.kill().unwrap();
        server.wait().unwrap();
        // Ended calls leave no unit behind (the spawner's spare ends with it).
        let units: Vec<String> = [&first, &second, &setsid, &one, &two]
            .iter()
            .filter_map(|text| scope_of(text))
            .collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !m.loaded(&units).trim().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(m.loaded(&units).trim(), "", "units left");
    }
}

#[test]
fn a_call_past_its_whole_memory_answers_resource_limit() {
    for m in managers() {
        if Command::new("python3").arg("-V").output().is_err() {
            eprintln!("skipped: no python3");
            return;
        }
        let mut p = m.place();
        // Each process may hold 1 GiB, the call 64 MiB: three processes of
        // 40 MiB each pass the first and not the second. Guarded from outside
        // too, should the scope not hold.
        limit(&p, "memory = \"1G\"\nmemory_total = \"64M\"");
        p.outer = vec!["--data=2147483648".into()];
        let hog = "for i in 1 2 3; do python3 -c 'import time; x = bytearray(40 << 20); \
               time.sleep(3)' & done; wait; echo finished";
        let (envelope, out) = p.call_in(&p.ws, &[], "bash", json!({ "command": hog }));
        assert_eq!(envelope["error_code"], "RESOURCE_LIMIT", "{out:?}");
        let error = envelope["error"].as_str().unwrap();
        assert!(
            error.contains("64 MiB") && error.contains("limits.memory_total"),
            "{error}"
        );
        // What the tool said is kept; the containment's line is not.
        assert!(
            envelope["stdout"].as_str().unwrap().contains("finished"),
            "{out:?}"
        );
        assert!(
            !envelope.to_string().contains("sandbox-exec: limit reached"),
            "{out:?}"
        );
        // The host goes on: the next call runs.
        assert!(p.bash(&[], "echo still here").contains("still here"));
        // The same through the MCP server, whose calls the spawner made.
        let (mut server, mut call) = mcp(&p, &[]);
        let text = call("bash", json!({ "command": hog }));
        assert!(
            text.contains("RESOURCE_LIMIT") && text.contains("limits.memory_total"),
            "{text}"
        );
        let text = call("bash", json!({"command": "echo still here"}));
        assert!(text.contains("still here"), "{text}");
        server.kill().unwrap();
        server.wait().unwrap();
    }
}

#[test]
fn a_call_past_its_tasks_answers_resource_limit_even_as_root() {
    for m in managers() {
        let p = m.place();
        limit(&p, "processes = 30");
        // Bounded by its own loop: sixty at most, whatever the limits do.
        let many = "for i in $(seq 60); do sleep 3 & done; wait; echo done";
        let (envelope, out) = p.call_in(&p.ws, &[], "bash", json!({ "command": many }));
        assert_eq!(envelope["error_code"], "RESOURCE_LIMIT", "{out:?}");
        let error = envelope["error"].as_str().unwrap();
        assert!(
            error.contains("30 processes") && error.contains("limits.processes"),
            "{error}"
        );
        // Under the limit, nothing is said.
        let few = "for i in $(seq 10); do sleep 0.2 & done; wait; echo done";
        let (envelope, out) = p.call_in(&p.ws, &[], "bash", json!({ "command": few }));
        assert_eq!(envelope["tool_success"], true, "{out:?}");
        // A program that met the limit, gave up its children and succeeded
        // met no limit that mattered: no failure.
        if Command::new("python3").arg("-V").output().is_err() {
            eprintln!("skipped: no python3");
            return;
        }
        let retried =
            "python3 -c 'import os, time\nkids = []\ntry:\n    for i in range(60):\n        \
                   pid = os.fork()\n        if pid == 0:\n            time.sleep(3)\n            \
                   os._exit(0)\n        kids.append(pid)\nexcept OSError as e:\n    \
                   print(\"refused\", e.errno)\nfor k in kids:\n    os.kill(k, 9)\n    \
                   os.waitpid(k, 0)'";
        let (envelope, out) = p.call_in(&p.ws, &[], "bash", json!({ "command": retried }));
        assert_eq!(envelope["tool_success"], true, "{out:?}");
        let text = envelope["result"]["output"].as_str().unwrap();
        assert!(text.contains("refused 11"), "{text}");
    }
}

#[test]
fn sandbox_check_tries_a_scope_and_says_what_holds() {
    for m in managers() {
        let p = m.place();
        limit(&p, "memory_total = \"3G\"\nprocesses = 500");
        let check = output({
            let mut cmd = p.command(&p.tools.join("ikigai"));
            cmd.args(["sandbox", "check"]);
            cmd
        });
        let expected = format!(
            "a systemd scope per call (your user manager, on {}): 3 GiB of memory \
         (limits.memory_total) and 500 processes",
            m.bus()
        );
        assert!(check.stdout.contains(&expected), "{}", check.stdout);
    }
}

#[test]
fn without_a_manager_calls_run_bounded_per_process_and_check_says_why() {
    // A place with no bus at all.
    let p = Place::new(Who::Me);
    let check = output({
        let mut cmd = p.command(&p.tools.join("ikigai"));
        cmd.args(["sandbox", "check"]);
        cmd
    });
    assert!(
        check
            .stdout
            .contains("no scope per call here (no session bus"),
        "{}",
        check.stdout
    );
    // A bus that is not D-Bus (it hangs up at once): the calls run as
    // without one, and the check names what went wrong.
    let mut q = Place::new(Who::Me);
    let runtime = q.home.join("run");
    std::fs::create_dir(&runtime).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(runtime.join("bus")).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            drop(stream);
        }
    });
    q.env
        .push(("XDG_RUNTIME_DIR".into(), runtime.display().to_string()));
    let text = q.bash(&[], "echo ran; grep -c ikigai-call /proc/self/cgroup");
    assert!(text.starts_with("ran\n0"), "{text}");
    let check = output({
        let mut cmd = q.command(&q.tools.join("ikigai"));
        cmd.args(["sandbox", "check"]);
        cmd
    });
    assert!(
        check.stdout.contains("no scope per call here ("),
        "{}",
        check.stdout
    );
}
