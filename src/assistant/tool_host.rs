//! The conversation's view of the host (docs/architecture.md): discovery
//! runs on its own thread from startup, so the prompt appears at once; the
//! first message or command that needs the registry waits for it. Tool
//! calls go through `host::call` (registry lookup, subprocess, sandbox,
//! timeout, envelope), several at once under a shared read lock;
//! `/refresh` replaces the registry between messages.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, RwLock, RwLockReadGuard};
use std::thread::JoinHandle;

use serde_json::Value;

use super::commands::{self, Flow, HostState};
use super::conversation::ToolHost;
use super::own_tools;
use super::render::visible;
use super::terminal::{say, Commands};
use crate::host::call::CallOutcome;
use crate::host::child::Watch;
use crate::host::format::{self, ToolFormat};
use crate::host::registry::Registry;
use crate::host::settings::Settings;

pub struct Tools {
    /// The discovery still running, until someone needs its result.
    pending: Mutex<Option<JoinHandle<HostState>>>,
    /// The host's state once discovered (None only while `pending` runs).
    state: RwLock<Option<HostState>>,
    settings: Settings,
    /// The session's directory, where background jobs keep their logs.
    session: Mutex<Option<PathBuf>>,
}

impl Tools {
    /// Starts discovery in the background and returns at once.
    pub fn start(settings: Settings) -> Tools {
        Tools::start_with(settings, HostState::discover)
    }

    fn start_with(settings: Settings, discover: fn(Settings) -> HostState) -> Tools {
        let for_thread = settings.clone();
        let handle = std::thread::spawn(move || discover(for_thread));
        Tools {
            pending: Mutex::new(Some(handle)),
            state: RwLock::new(None),
            settings,
            session: Mutex::new(None),
        }
    }

    /// The host's state, waiting for discovery if it still runs.
    fn state(&self) -> RwLockReadGuard<'_, Option<HostState>> {
        self.settle();
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn settle(&self) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(handle) = pending.take() {
            let state = handle.join().unwrap_or_else(|_| HostState {
                // Discovery itself never panics; if it did, the assistant
                // goes on with no tools rather than dying.
                settings: self.settings.clone(),
                registry: Registry::build(Vec::new(), Vec::new()),
                jobs: Default::default(),
            });
            *self.state.write().unwrap_or_else(|e| e.into_inner()) = Some(state);
        }
    }

    fn with_registry<T>(&self, f: impl FnOnce(&HostState) -> T) -> T {
        let guard = self.state();
        f(guard.as_ref().expect("settled state"))
    }

    /// One call, the assistant's own tools answered here (`own_tools`),
    /// every other through the runtime: one path for both.
    fn run(
        &self,
        name: &str,
        arguments: &Value,
        cancel: Option<&AtomicBool>,
        watch: Option<Watch>,
        sandboxed: bool,
    ) -> CallOutcome {
        let session = self
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        self.with_registry(|s| {
            let mut settings = s.settings.clone();
            if let Some(dir) = &session {
                // ikigai's data directory is hidden from tools, but for this
                // session's saved outputs and jobs' logs, which the model is
                // pointed to (its undo store stays hidden).
                let guard = &mut settings.sandbox.guard;
                guard.allow_read.push(dir.clone());
                guard.hide.push(dir.join("undo"));
            }
            if !sandboxed {
                settings.sandbox.mode = crate::sandbox::Mode::Off;
            }
            if let Some(outcome) =
                own_tools::call(s, &settings, name, arguments, session.as_deref())
            {
                return outcome;
            }
            crate::host::call::call_watched(&s.registry, name, arguments, &settings, cancel, watch)
        })
    }
}

impl Drop for Tools {
    /// The jobs end with the host; their processes would end anyway (their
    /// parent-death signal), this only makes it sooner on a normal exit.
    fn drop(&mut self) {
        if let Ok(state) = self.state.get_mut() {
            if let Some(state) = state.as_ref() {
                state.jobs.stop_all();
            }
        }
    }
}

impl ToolHost for Tools {
    fn ready(&self) -> bool {
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.as_ref().is_none_or(|h| h.is_finished())
    }

    fn tools_array(&self, kind: ToolFormat) -> Value {
        self.with_registry(|s| format::tools_array(kind, &s.registry))
    }

    fn left_out(&self, kind: ToolFormat) -> Vec<String> {
        self.with_registry(|s| format::left_out(kind, &s.registry))
    }

    fn parameters(&self, name: &str) -> Option<Value> {
        self.with_registry(|s| {
            s.registry
                .lookup(name)
                .map(|e| e.schema["parameters"].clone())
        })
    }

    fn read_only(&self, name: &str) -> bool {
        self.with_registry(|s| s.registry.lookup(name).is_some_and(|e| e.read_only()))
    }

    fn call(&self, name: &str, arguments: &Value, cancel: Option<&AtomicBool>) -> CallOutcome {
        self.run(name, arguments, cancel, None, true)
    }

    fn call_unsandboxed(
        &self,
        name: &str,
        arguments: &Value,
        cancel: Option<&AtomicBool>,
    ) -> CallOutcome {
        self.run(name, arguments, cancel, None, false)
    }

    fn unsandboxed(&self) -> bool {
        let sandbox = &self.settings.sandbox;
        sandbox.mode.confines() && sandbox.unavailable.is_some()
    }

    fn call_watched(
        &self,
        name: &str,
        arguments: &Value,
        cancel: Option<&AtomicBool>,
        watch: Watch,
    ) -> CallOutcome {
        self.run(name, arguments, cancel, Some(watch), true)
    }

    fn session_dir(&self, dir: Option<&Path>) {
        *self.session.lock().unwrap_or_else(|e| e.into_inner()) = dir.map(Path::to_path_buf);
    }
}

impl Commands for &Tools {
    fn run(&mut self, line: &str) -> bool {
        self.settle();
        let mut guard = self.state.write().unwrap_or_else(|e| e.into_inner());
        let state = guard.as_mut().expect("settled state");
        // Tool descriptions and answers are the tools' words (decision 59).
        let flow = commands::execute(line, state, &mut |text| {
            say(&format!("{}\n", visible(text)))
        });
        flow == Flow::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::registry::tests::entry;
    use crate::host::registry::Origin;
    use crate::tool::Env;
    use serde_json::json;
    use std::sync::atomic::Ordering;

    static RELEASE: AtomicBool = AtomicBool::new(false);

    /// A discovery that finds `echo` only once the test lets it finish.
    fn held_back(settings: Settings) -> HostState {
        while !RELEASE.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let echo = entry(
            "echo",
            "/bin/echo-tool",
            Origin::User,
            json!({"type": "object", "properties": {}}),
        );
        HostState {
            settings,
            registry: Registry::build(vec![echo], vec![]),
            jobs: Default::default(),
        }
    }

    #[test]
    fn startup_does_not_wait_but_the_first_message_does() {
        let settings = Settings::resolve(
            Default::default(),
            &Env::from_pairs([("HOME", "/nonexistent")]),
            None,
        );
        let tools = Tools::start_with(settings, held_back);
        // start returned while discovery is still held back.
        assert!(!tools.ready());
        std::thread::scope(|scope| {
            let asking = scope.spawn(|| tools.tools_array(ToolFormat::Anthropic));
            // Most likely the request is waiting by now; either way it must
            // get the discovered tools, never an empty array.
            std::thread::sleep(std::time::Duration::from_millis(50));
            RELEASE.store(true, Ordering::SeqCst);
            let array = asking.join().unwrap();
            assert_eq!(array[0]["name"], "echo");
        });
        assert!(tools.ready());
        let outcome = tools.call("nope", &json!({}), None);
        assert_eq!(outcome.to_json()["error_code"], "TOOL_NOT_FOUND");
    }
}
