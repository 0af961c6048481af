//! What the web tools' tests share: a sandboxed environment (HOME and
//! XDG_CONFIG_HOME in a temp dir, no inherited keys, stub flags, endpoint
//! variables or proxies), so a developer's real credentials never leak into
//! a test and no request can leave 127.0.0.1; and the recorded-style
//! fixtures of `tests/fixtures/web/`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{run, Output, Run};

/// Variables a developer's shell may hold that would change what a web
/// tool does.
const INHERITED: &[&str] = &[
    "BRAVE_API_KEY",
    "GOOGLE_SEARCH_API_KEY",
    "GOOGLE_SEARCH_ENGINE_ID",
    "SHELLCLAW_STUB",
    "IKIGAI_STUB",
    "IKIGAI_BRAVE_URL",
    "IKIGAI_GOOGLE_URL",
    "IKIGAI_WEB_TIMEOUT",
    ALLOW_PRIVATE,
    "IKIGAI_MAX_OUTPUT",
    "XDG_CONFIG_HOME",
    "ALL_PROXY",
    "all_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// Lets web_fetch reach the test servers on 127.0.0.1, which it refuses
/// otherwise.
pub const ALLOW_PRIVATE: &str = "IKIGAI_FETCH_ALLOW_PRIVATE";

/// A temp HOME for one test.
pub struct Sandbox {
    home: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        Sandbox {
            home: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// `tool` with HOME in the sandbox and nothing inherited.
    pub fn run(&self, tool: &str) -> Run {
        let mut r = run(tool);
        for var in INHERITED {
            r = r.env_remove(var);
        }
        r.env("HOME", self.home())
    }

    /// web-fetch allowed to reach the test servers on 127.0.0.1.
    pub fn run_fetch(&self) -> Run {
        self.run("web-fetch").env(ALLOW_PRIVATE, "1")
    }

    /// `tool` with XDG_CONFIG_HOME set to `<sandbox>/xdg` too.
    pub fn run_xdg(&self, tool: &str) -> Run {
        self.run(tool).env("XDG_CONFIG_HOME", self.xdg())
    }

    pub fn xdg(&self) -> PathBuf {
        self.home().join("xdg")
    }

    /// Writes `~/.config/ikigai/credentials.json` (HOME form) and returns it.
    pub fn home_credentials(&self, contents: &str) -> PathBuf {
        write(
            &self.home().join(".config/ikigai/credentials.json"),
            contents,
        )
    }

    /// Writes `$XDG_CONFIG_HOME/ikigai/credentials.json` and returns it.
    pub fn xdg_credentials(&self, contents: &str) -> PathBuf {
        write(&self.xdg().join("ikigai/credentials.json"), contents)
    }
}

fn write(path: &Path, contents: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
    path.to_path_buf()
}

pub fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/web")
        .join(name)
}

pub fn fixture_bytes(name: &str) -> Vec<u8> {
    let path = fixture_path(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&fixture_bytes(name)).expect("fixture is JSON")
}

/// A failed web answer: exit 1, `success: false`, the code, and the message.
pub fn failure(out: &Output, code: &str) -> String {
    let answer = out.json();
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(answer["success"], false, "{answer}");
    assert_eq!(answer["error_code"], code, "{answer}");
    let keys: Vec<&str> = answer
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["success", "error", "error_code"], "{answer}");
    answer["error"].as_str().unwrap().to_string()
}

/// A successful web answer: exit 0, nothing on stderr.
pub fn success(out: &Output) -> Value {
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stderr, "", "{out:?}");
    let answer = out.json();
    assert_eq!(answer["success"], true, "{answer}");
    answer
}
