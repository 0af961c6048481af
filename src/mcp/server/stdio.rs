//! The stdio transport: one JSON-RPC message per line on stdin, one per line
//! on stdout, and nothing else ever on stdout (logs go to stderr). Each
//! `tools/call` runs on a thread of its own (kept for the next call, see
//! `pool`), so calls run at once and `notifications/cancelled` can stop one
//! (its processes are killed). A line that is not JSON is answered with a parse error and the server
//! reads on; at the end of stdin it lets the running calls finish, then
//! ends. When the tool directories change, the client is told.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use serde_json::{json, Value};

use super::pool::Pool;
use super::service::Service;
use crate::mcp::protocol::{self, code, read_line, Line, Message, RpcError, LINE_LIMIT};

/// Writes whole lines to stdout, one message at a time.
#[derive(Clone)]
struct Out(Arc<Mutex<io::Stdout>>);

impl Out {
    fn send(&self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        let mut out = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // A client that went away reads nothing more; stdin's end follows.
        let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
    }
}

/// The calls running now, by request id (its JSON text).
type InFlight = Arc<Mutex<HashMap<String, Arc<AtomicBool>>>>;

/// Serves until stdin ends. `changes` yields once each time the tools on
/// offer change; the client is told with `notifications/tools/list_changed`.
pub fn serve(service: Arc<Service>, changes: mpsc::Receiver<()>) {
    let out = Out(Arc::new(Mutex::new(io::stdout())));
    let notifier = out.clone();
    std::thread::spawn(move || {
        for () in changes {
            notifier.send(&protocol::notification(
                "notifications/tools/list_changed",
                json!({}),
            ));
        }
    });
    let in_flight: InFlight = Arc::default();
    let mut negotiated: Option<String> = None;
    let mut threads = Pool::new();
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut input, &mut line, LINE_LIMIT) {
            Ok(Line::End) => break,
            Ok(Line::Message) => {}
            Ok(Line::TooLong) => {
                let error = RpcError::new(
                    code::PARSE_ERROR,
                    format!("Parse error: a message longer than {LINE_LIMIT} bytes"),
                );
                out.send(&protocol::error_response(&Value::Null, &error));
                continue;
            }
            Err(e) => {
                eprintln!("ikigai-tools mcp: cannot read stdin: {e}");
                break;
            }
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value = match serde_json::from_slice::<Value>(&line) {
            Ok(value) => value,
            Err(e) => {
                let error = RpcError::new(code::PARSE_ERROR, format!("Parse error: {e}"));
                out.send(&protocol::error_response(&Value::Null, &error));
                continue;
            }
        };
        let (id, method, params) = match protocol::parse(value) {
            Err(answer) => {
                out.send(&answer);
                continue;
            }
            Ok(Message::Response { .. }) => continue,
            Ok(Message::Notification { method, params }) => {
                if method == "notifications/cancelled" {
                    let key = params["requestId"].to_string();
                    if let Some(flag) = in_flight.lock().unwrap().get(&key) {
                        flag.store(true, Ordering::SeqCst);
                    }
                }
                continue;
            }
            Ok(Message::Request { id, method, params }) => (id, method, params),
        };
        if method == "initialize" {
            let (version, result) = service.initialize(&params, true);
            negotiated = Some(version);
            out.send(&protocol::result_response(&id, result));
            continue;
        }
        let era = match Service::era_of(&params, negotiated.as_deref()) {
            Ok(era) => era,
            Err(error) => {
                out.send(&protocol::error_response(&id, &error));
                continue;
            }
        };
        if method != "tools/call" {
            out.send(&answer(&id, service.handle(&era, &method, &params, None)));
            continue;
        }
        let flag = Arc::new(AtomicBool::new(false));
        let key = id.to_string();
        in_flight.lock().unwrap().insert(key.clone(), flag.clone());
        let (service, out, in_flight) = (service.clone(), out.clone(), in_flight.clone());
        threads.run(move || {
            let result = service.handle(&era, &method, &params, Some(&flag));
            in_flight.lock().unwrap().remove(&key);
            // A cancelled request gets no response.
            if !flag.load(Ordering::SeqCst) {
                out.send(&answer(&id, result));
            }
        });
    }
    threads.finish();
}

fn answer(id: &Value, result: Result<Value, RpcError>) -> Value {
    match result {
        Ok(result) => protocol::result_response(id, result),
        Err(error) => protocol::error_response(id, &error),
    }
}
