//! Where the conversation is logged (the session file, `session.rs`). A new
//! session's file is made at its first entry, so running `ikigai` only for
//! `/tool` leaves no empty session behind; likewise a resumed one gets its
//! `start` entry then, with the environment the prompt states. A write that
//! fails is said once and the conversation goes on unlogged.

use std::path::PathBuf;

use super::super::model::Message;
use super::super::session::{Entry, Session};
use super::{Conversation, Ui};

pub(super) enum Log {
    Off,
    /// A new session, to be made in this directory.
    New(PathBuf),
    Open {
        session: Session,
        started: bool,
    },
    /// A write failed (and was reported): the conversation goes on unlogged.
    Broken,
}

impl Log {
    pub(super) fn session_id(&self) -> Option<&str> {
        match self {
            Log::Open { session, .. } => Some(session.id()),
            _ => None,
        }
    }

    /// The directory beside the session's file (`ID.jsonl`, `ID/`) where
    /// whole outputs are saved, once the session exists.
    pub(super) fn beside(&self) -> Option<PathBuf> {
        match self {
            Log::Open { session, .. } => Some(session.path().with_extension("")),
            _ => None,
        }
    }

    /// The session's file, once it exists.
    pub(super) fn path(&self) -> Option<PathBuf> {
        match self {
            Log::Open { session, .. } => Some(session.path().to_path_buf()),
            _ => None,
        }
    }

    /// The log of a new conversation (`/clear`): a new session in the same
    /// directory.
    pub(super) fn next_session(&mut self) -> Log {
        match std::mem::replace(self, Log::Off) {
            Log::Open { session, .. } => match session.path().parent() {
                Some(dir) => Log::New(dir.to_path_buf()),
                None => Log::Off,
            },
            other => other,
        }
    }
}

impl Conversation {
    /// Adds a message to the history and logs it. Tool results are logged
    /// one by one as their calls end, not here.
    pub(super) fn push(&mut self, message: Message, ui: &mut dyn Ui) {
        let entry = match &message {
            Message::User { text } => Entry::User { text: text.clone() },
            Message::Assistant { text, tool_calls } => Entry::Assistant {
                text: text.clone(),
                tool_calls: tool_calls.clone(),
            },
            Message::Tool { .. } => unreachable!("tool results are logged one by one"),
        };
        self.log(entry, ui);
        self.messages.push(message);
    }

    pub(super) fn log(&mut self, entry: Entry, ui: &mut dyn Ui) {
        if let Err(e) = self.write(&entry) {
            self.log = Log::Broken;
            ui.error(&format!("{e:#}; the conversation goes on without a log"));
        }
    }

    /// Makes the session's file now (hooks are told its id and path).
    pub(super) fn open_log(&mut self, ui: &mut dyn Ui) {
        if let Err(e) = self.started() {
            self.log = Log::Broken;
            ui.error(&format!("{e:#}; the conversation goes on without a log"));
        }
    }

    fn write(&mut self, entry: &Entry) -> anyhow::Result<()> {
        self.started()?;
        match &mut self.log {
            Log::Open { session, .. } => session.append(entry),
            _ => Ok(()),
        }
    }

    /// The session made and its `start` entry written, if they were not.
    fn started(&mut self) -> anyhow::Result<()> {
        if let Log::New(dir) = &self.log {
            self.log = Log::Open {
                session: Session::create(dir)?,
                started: false,
            };
        }
        let Log::Open { session, started } = &mut self.log else {
            return Ok(());
        };
        if !*started {
            let (provider, model) = match &self.client {
                Ok(c) => (c.provider().to_string(), c.model().to_string()),
                Err(_) => (String::new(), String::new()),
            };
            let time = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let environment = &self.context.environment;
            session.append(&Entry::Start {
                id: session.id().to_string(),
                time,
                provider,
                model,
                cwd: std::env::current_dir()
                    .ok()
                    .map(|d| d.to_string_lossy().into_owned()),
                environment: (!environment.cwd.is_empty()).then(|| environment.clone()),
            })?;
            *started = true;
        }
        Ok(())
    }
}
