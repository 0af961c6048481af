//! The agent's half of the JSON-RPC connection: one writer of stdout that
//! puts each message on a line of its own (several session threads write
//! at once, and a line is never interleaved with another), and the
//! requests the agent sends the client (`session/request_permission`),
//! each waiting for its answer, which the reading thread hands over.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

use crate::mcp::protocol::{self, RpcError};

/// How often a thread waiting for the client's answer looks at its cancel
/// flag: a cancelled question ends within this.
const CANCEL_POLL: Duration = Duration::from_millis(20);

pub struct Wire {
    out: Mutex<Box<dyn Write + Send>>,
    /// Set once stdout cannot be written: the client is gone.
    closed: AtomicBool,
    next_id: AtomicU64,
    /// The agent's requests still waiting, by id.
    waiting: Mutex<HashMap<u64, Sender<Result<Value, RpcError>>>>,
}

impl Wire {
    pub fn new(out: Box<dyn Write + Send>) -> Wire {
        Wire {
            out: Mutex::new(out),
            closed: AtomicBool::new(false),
            next_id: AtomicU64::new(0),
            waiting: Mutex::new(HashMap::new()),
        }
    }

    /// Writes one message as one line. A client that went away is noted
    /// once on stderr; the agent ends when its stdin does.
    pub fn send(&self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let written = out.write_all(line.as_bytes()).and_then(|()| out.flush());
        if written.is_err() && !self.closed.swap(true, Ordering::SeqCst) {
            eprintln!("ikigai acp: stdout was closed; the client is gone");
        }
    }

    pub fn result(&self, id: &Value, result: Value) {
        self.send(&protocol::result_response(id, result));
    }

    pub fn error(&self, id: &Value, error: &RpcError) {
        self.send(&protocol::error_response(id, error));
    }

    pub fn notify(&self, method: &str, params: Value) {
        self.send(&protocol::notification(method, params));
    }

    /// A `session/update` of session `session`.
    pub fn update(&self, session: &str, update: Value) {
        self.notify(
            "session/update",
            json!({"sessionId": session, "update": update}),
        );
    }

    /// Sends request `method` and waits for its answer; None when `cancel`
    /// is set first, or when the client is gone (its answer can no longer
    /// come). A client that never answers keeps this waiting until then.
    pub fn ask(
        &self,
        method: &str,
        params: Value,
        cancel: &AtomicBool,
    ) -> Option<Result<Value, RpcError>> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx): (_, Receiver<Result<Value, RpcError>>) = mpsc::channel();
        self.lock_waiting().insert(id, tx);
        self.send(&protocol::request(&json!(id), method, params));
        let answer = loop {
            if cancel.load(Ordering::SeqCst) {
                break None;
            }
            match rx.recv_timeout(CANCEL_POLL) {
                Ok(answer) => break Some(answer),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => break None,
            }
        };
        self.lock_waiting().remove(&id);
        answer
    }

    /// Hands a response from the client to the request waiting for it;
    /// false when no request of ours has that id (answered already,
    /// cancelled, or never sent).
    pub fn answered(&self, id: &Value, outcome: Result<Value, RpcError>) -> bool {
        let Some(id) = id.as_u64() else {
            return false;
        };
        match self.lock_waiting().remove(&id) {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    /// The client's stdin ended: no answer will come to any request.
    pub fn hang_up(&self) {
        self.lock_waiting().clear();
    }

    fn lock_waiting(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<u64, Sender<Result<Value, RpcError>>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}
