//! The host, run as `ikigai` the way people and scripts run it, over tool
//! directories the tests build: links to our binary and the small scripts of
//! `tests/fixtures/host/` (linked, never written here, so no test ever runs a
//! file another thread may still hold open for writing).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{run, Output, Run};

mod commands;
mod discovery;
mod exec;
mod providers;

/// A fixture script of `tests/fixtures/host/`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/host")
        .join(name)
}

/// A system and a user tools directory, empty at first.
pub struct Dirs {
    tmp: tempfile::TempDir,
    pub sys: PathBuf,
    pub user: PathBuf,
}

impl Dirs {
    pub fn new() -> Dirs {
        let tmp = tempfile::tempdir().expect("temp dir");
        let sys = tmp.path().join("libexec");
        let user = tmp.path().join("tools");
        std::fs::create_dir(&sys).unwrap();
        std::fs::create_dir(&user).unwrap();
        Dirs { tmp, sys, user }
    }

    /// A scratch path next to the directories.
    pub fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// Links `dir/name` to `target`.
    pub fn link(&self, dir: &Path, name: &str, target: impl AsRef<Path>) -> PathBuf {
        let path = dir.join(name);
        std::os::unix::fs::symlink(target, &path).expect("symlink");
        path
    }

    /// A system tool `name` played by the fixture script `script`.
    pub fn sys_tool(&self, script: &str, name: &str) -> PathBuf {
        self.link(&self.sys, name, fixture(script))
    }

    /// A user tool `name` played by the fixture script `script`.
    pub fn user_tool(&self, script: &str, name: &str) -> PathBuf {
        self.link(&self.user, name, fixture(script))
    }

    /// `ikigai` over these directories, with `options` before the command.
    pub fn ikigai(&self) -> Run {
        // No model and no inherited HOME: a message line is answered with
        // how to set a key, and nothing is written outside the temp dir.
        let mut r = run("ikigai");
        for var in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "IKIGAI_PROVIDER",
        ] {
            r = r.env_remove(var);
        }
        // Nor a local Ollama server: its address is one where nothing
        // listens (port 1), whatever runs on this machine.
        r.env("HOME", self.tmp.path())
            .env("OLLAMA_HOST", "127.0.0.1:1")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .arg("--libexec-dir")
            .arg(&self.sys)
            .arg("--tools-dir")
            .arg(&self.user)
    }

    /// `ikigai tools --json`.
    pub fn listing(&self) -> Value {
        let out = self.ikigai().args(["tools", "--json"]).output();
        assert_eq!(out.code, 0, "{out:?}");
        out.json()
    }

    /// The reason a file was skipped, from the listing.
    pub fn reason(listing: &Value, path: &Path) -> Option<String> {
        listing["skipped"]
            .as_array()?
            .iter()
            .find(|s| s["path"] == path.to_string_lossy().as_ref())
            .map(|s| s["reason"].as_str().unwrap_or("").to_string())
    }

    /// `ikigai call NAME ARGS` with `options` before the command: the
    /// envelope and the whole run.
    pub fn call(&self, options: &[&str], name: &str, args: &Value) -> (Value, Output) {
        let out = self
            .ikigai()
            .args(options)
            .args(["call", name, &args.to_string()])
            .output();
        let envelope = out.json();
        let expected = if envelope["tool_success"] == true {
            0
        } else {
            1
        };
        assert_eq!(out.code, expected, "{out:?}");
        (envelope, out)
    }
}

/// The names in a `tools --json` listing.
pub fn names(listing: &Value) -> Vec<String> {
    listing["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// A process that must not outlive its test: killed when dropped.
pub struct Pid(pub i32);

impl Pid {
    /// The pid a fixture wrote to `file`.
    pub fn read(file: &Path) -> Pid {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("pid file {}: {e}", file.display()));
        Pid(text.trim().parse().expect("a pid"))
    }

    /// Gone, or a zombie waiting for its reaper (dead all the same).
    pub fn dead(&self) -> bool {
        // SAFETY: signal 0 only checks that the process exists.
        if unsafe { libc::kill(self.0, 0) } != 0 {
            return true;
        }
        crate::common::Stat::of(self.0).is_none_or(|s| s.ended())
    }

    /// Waits (generously) for the process to die.
    pub fn dies(&self) -> bool {
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if self.dead() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Pid {
    fn drop(&mut self) {
        if !self.dead() {
            // SAFETY: kills the fixture process this test started.
            unsafe {
                libc::kill(self.0, libc::SIGKILL);
            }
        }
    }
}
