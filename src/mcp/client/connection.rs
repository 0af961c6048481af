//! One live connection to an MCP server: a child process spoken to over its
//! stdin and stdout, or a Streamable HTTP endpoint. Requests carry their own
//! deadline and may be cancelled; either way the server is told with
//! `notifications/cancelled`, as the protocol asks.
//!
//! A server the host starts runs in its own process group and dies with the
//! host: it gets SIGKILL when the host ends (even by SIGKILL), through
//! `PR_SET_PDEATHSIG`. That signal is tied to the thread that forked the
//! child, so every server is started by one thread that lives as long as
//! the process.
//!
//! A fenced server (decision 82) is started as `ikigai-tools sandbox-exec
//! FENCE -- COMMAND ARGS`: the same containment and fence as a tool call,
//! for as long as the server lives.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::config::Transport;
use crate::host::child::peek_exit;
use crate::mcp::protocol::{
    self, read_line, Line, Message, RpcError, LATEST_HANDSHAKE, LINE_LIMIT,
};
use crate::sandbox::secrets::is_secret;

/// How often a waiting request looks at its cancel flag.
const POLL: Duration = Duration::from_millis(25);
/// The most of a server's stderr kept to explain why it failed.
const STDERR_KEPT: usize = 2048;

/// Why a request got no result.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// The server answered with a JSON-RPC error.
    Rpc(RpcError),
    TimedOut,
    Cancelled,
    /// The server is gone or unreachable, and why.
    Broken(String),
}

impl Failure {
    pub fn describe(&self, timeout: Duration) -> String {
        match self {
            Failure::Rpc(e) => format!("error {}: {}", e.code, e.message),
            Failure::TimedOut => format!(
                "no answer within {}",
                crate::host::settings::format_secs(timeout)
            ),
            Failure::Cancelled => "cancelled".into(),
            Failure::Broken(why) => why.clone(),
        }
    }
}

pub enum Connection {
    Stdio(StdioConnection),
    Http(HttpConnection),
}

impl Connection {
    /// Starts (or reaches) the server; no message is sent yet. `fence`:
    /// the `sandbox-exec` arguments, up to and including `--`, that a
    /// started server runs behind; None runs it with the person's rights.
    pub fn open(transport: &Transport, fence: Option<&[OsString]>) -> Result<Connection, String> {
        match transport {
            Transport::Stdio {
                command,
                args,
                env: extra,
                cwd,
                ..
            } => StdioConnection::spawn(command, args, extra, cwd.as_deref(), fence)
                .map(Connection::Stdio),
            Transport::Http { url, headers } => Ok(Connection::Http(HttpConnection {
                url: url.clone(),
                headers: headers.clone(),
                session: Arc::default(),
                version: Mutex::new(None),
                next_id: AtomicI64::new(1),
            })),
        }
    }

    /// The handshake: `initialize`, then `notifications/initialized`.
    pub fn initialize(&self, timeout: Duration) -> Result<Value, Failure> {
        let params = json!({
            "protocolVersion": LATEST_HANDSHAKE,
            "capabilities": {},
            "clientInfo": {"name": "ikigai", "version": env!("CARGO_PKG_VERSION")},
        });
        let result = self.request("initialize", params, timeout, None)?;
        let version = result["protocolVersion"]
            .as_str()
            .unwrap_or(LATEST_HANDSHAKE);
        if !protocol::HANDSHAKE_VERSIONS.contains(&version) {
            return Err(Failure::Broken(format!(
                "the server speaks protocol version {version}, which ikigai does not"
            )));
        }
        if let Connection::Http(http) = self {
            *http.version.lock().unwrap() = Some(version.to_string());
        }
        self.notify("notifications/initialized", json!({}));
        Ok(result)
    }

    /// Sends a request and waits for its result, at most `timeout`, or until
    /// `cancel` is set; then the server is told to stop.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: Option<&AtomicBool>,
    ) -> Result<Value, Failure> {
        let (id, rx) = match self {
            Connection::Stdio(c) => c.send(method, params)?,
            Connection::Http(c) => c.send(method, params, timeout),
        };
        let deadline = Instant::now() + timeout;
        let failure = loop {
            let now = Instant::now();
            if cancel.is_some_and(|c| c.load(Ordering::SeqCst)) {
                break Failure::Cancelled;
            }
            if now >= deadline {
                break Failure::TimedOut;
            }
            match rx.recv_timeout((deadline - now).min(POLL)) {
                Ok(outcome) => return outcome,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break Failure::Broken(self.gone_reason())
                }
            }
        };
        if let Connection::Stdio(c) = self {
            if let Some(id) = id.as_i64() {
                c.pending.lock().unwrap().remove(&id);
            }
        }
        if matches!(failure, Failure::Cancelled | Failure::TimedOut) {
            let reason = if failure == Failure::Cancelled {
                "cancelled by the user"
            } else {
                "timed out"
            };
            self.notify(
                "notifications/cancelled",
                json!({"requestId": id, "reason": reason}),
            );
        }
        Err(failure)
    }

    pub fn notify(&self, method: &str, params: Value) {
        match self {
            Connection::Stdio(c) => {
                let _ = c.write(&protocol::notification(method, params));
            }
            Connection::Http(c) => c.notify(method, params),
        }
    }

    fn gone_reason(&self) -> String {
        match self {
            Connection::Stdio(c) => c.gone_reason(),
            Connection::Http(_) => "the connection ended before the answer came".into(),
        }
    }

    /// Ends the connection: a started server is stopped, group and all; an
    /// HTTP session is deleted.
    pub fn close(&self) {
        match self {
            Connection::Stdio(c) => c.stop(),
            Connection::Http(c) => c.end_session(),
        }
    }
}

type Reply = mpsc::Sender<Result<Value, Failure>>;

pub struct StdioConnection {
    child: Mutex<Child>,
    /// Shared with the reader thread, which answers the server's own
    /// requests; one descriptor, so taking it closes the server's stdin.
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    pending: Arc<Mutex<HashMap<i64, Reply>>>,
    next_id: AtomicI64,
    stderr: Arc<Mutex<String>>,
    pgid: i32,
}

impl StdioConnection {
    fn spawn(
        command: &str,
        args: &[String],
        extra: &BTreeMap<String, String>,
        cwd: Option<&std::path::Path>,
        fence: Option<&[OsString]>,
    ) -> Result<StdioConnection, String> {
        let cannot = |e: std::io::Error| format!("cannot start '{command}': {e}");
        let mut cmd = match fence {
            None => Command::new(command),
            Some(fence) => {
                // Found here, not by sandbox-exec's exec, so that a missing
                // command is named as it is for a server run unfenced.
                let path = extra
                    .get("PATH")
                    .map(OsString::from)
                    .or_else(|| std::env::var_os("PATH"))
                    .unwrap_or_default();
                let program = find_program(command, &path, cwd).map_err(cannot)?;
                let mut cmd = Command::new(crate::host::call::own_executable());
                // The name decides the personality; "ikigai-tools" is none
                // of the tools, so the first argument (sandbox-exec) does.
                cmd.arg0("ikigai-tools")
                    .arg(crate::sandbox::exec::NAME)
                    .args(fence)
                    .arg(program);
                cmd
            }
        };
        cmd.args(args)
            .env_clear()
            // Provider keys and anything that looks like a credential stay home
            // unless the configuration names them in the server's `env`.
            .envs(std::env::vars_os().filter(|(k, _)| !is_secret(k)))
            .envs(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        // SAFETY: prctl is async-signal-safe; it only sets the signal this
        // child gets when the thread that forked it ends.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = spawn_kept(cmd).map_err(cannot)?;
        let pgid = child.id() as i32;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr_pipe = child.stderr.take().expect("piped stderr");
        let stderr = Arc::new(Mutex::new(String::new()));
        let kept = stderr.clone();
        std::thread::spawn(move || keep_tail(stderr_pipe, &kept));
        let connection = StdioConnection {
            child: Mutex::new(child),
            stdin: Arc::new(Mutex::new(stdin)),
            pending: Arc::default(),
            next_id: AtomicI64::new(1),
            stderr,
            pgid,
        };
        let pending = connection.pending.clone();
        let stdin = connection.stdin.clone();
        std::thread::spawn(move || read_replies(stdout, &pending, &stdin));
        Ok(connection)
    }

    fn send(
        &self,
        method: &str,
        params: Value,
    ) -> Result<(Value, mpsc::Receiver<Result<Value, Failure>>), Failure> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::channel();
        self.pending.lock().unwrap().insert(id, tx);
        let id = json!(id);
        if let Err(e) = self.write(&protocol::request(&id, method, params)) {
            self.pending
                .lock()
                .unwrap()
                .remove(&id.as_i64().unwrap_or_default());
            return Err(Failure::Broken(format!(
                "cannot write to the server: {e}; {}",
                self.gone_reason()
            )));
        }
        Ok((id, rx))
    }

    fn write(&self, message: &Value) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().unwrap();
        let Some(stdin) = stdin.as_mut() else {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        };
        let mut line = message.to_string();
        line.push('\n');
        stdin.write_all(line.as_bytes())?;
        stdin.flush()
    }

    fn gone_reason(&self) -> String {
        // Not reaped here: `stop` signals the server's group, which is safe
        // only while the server's pid cannot have been reused.
        let status = peek_exit(self.child.lock().unwrap().id()).flatten();
        let said = last_line(&self.stderr.lock().unwrap());
        let mut why = match status {
            Some(status) => format!("the server exited ({status})"),
            None => "the server closed its output".to_string(),
        };
        if !said.is_empty() {
            why += &format!(": {said}");
        }
        why
    }

    /// Ends the server as the protocol asks: stdin closed, a second to
    /// exit by itself (a pending `notifications/cancelled` is handled
    /// first), then SIGTERM, then SIGKILL for whatever is left of its group.
    fn stop(&self) {
        self.stdin.lock().unwrap().take();
        let mut child = self.child.lock().unwrap();
        // Looked at without reaping until the end: the group's id is the
        // server's pid, which is not reused while the server is unreaped.
        let exits_within = |child: &mut Child, wait: Duration| {
            let deadline = Instant::now() + wait;
            loop {
                if peek_exit(child.id()) != Some(None) {
                    return true;
                }
                if Instant::now() >= deadline {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        if !exits_within(&mut child, Duration::from_secs(1)) {
            // SAFETY: kill only sends a signal, to the group the server leads.
            unsafe { libc::kill(-self.pgid, libc::SIGTERM) };
            exits_within(&mut child, Duration::from_millis(500));
        }
        // SAFETY: as above; whatever is left of the group ends now.
        unsafe { libc::kill(-self.pgid, libc::SIGKILL) };
        let _ = child.wait();
    }
}

/// Reads the server's lines: responses go to whoever waits for them; a
/// request of the server's own gets an answer (`ping`) or "not supported";
/// notifications are not needed. At the end, every waiter learns the
/// server is gone.
fn read_replies(
    stdout: impl Read,
    pending: &Mutex<HashMap<i64, Reply>>,
    stdin: &Mutex<Option<ChildStdin>>,
) {
    let mut lines = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        match read_line(&mut lines, &mut line, LINE_LIMIT) {
            Ok(Line::End) | Err(_) => break,
            Ok(Line::TooLong) => continue,
            Ok(Line::Message) => {}
        }
        let Ok(value) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        match protocol::parse(value) {
            Ok(Message::Response { id, outcome }) => {
                let waiter = id
                    .as_i64()
                    .and_then(|id| pending.lock().unwrap().remove(&id));
                if let Some(waiter) = waiter {
                    let _ = waiter.send(outcome.map_err(Failure::Rpc));
                }
            }
            Ok(Message::Request { id, method, .. }) => {
                let answer = if method == "ping" {
                    protocol::result_response(&id, json!({}))
                } else {
                    let e = RpcError::new(
                        protocol::code::METHOD_NOT_FOUND,
                        format!("ikigai does not support {method}"),
                    );
                    protocol::error_response(&id, &e)
                };
                if let Some(stdin) = stdin.lock().unwrap().as_mut() {
                    let _ = writeln!(stdin, "{answer}").and_then(|()| stdin.flush());
                }
            }
            Ok(Message::Notification { .. }) | Err(_) => {}
        }
    }
    pending.lock().unwrap().clear();
}

/// The file `command` names, as `execvp` would find it: a name with a `/`
/// as it is (from `cwd` when relative), else the first executable file of
/// that name on `path`.
fn find_program(
    command: &str,
    path: &std::ffi::OsStr,
    cwd: Option<&std::path::Path>,
) -> std::io::Result<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let file = match cwd {
            Some(dir) => dir.join(command),
            None => std::path::PathBuf::from(command),
        };
        return if runnable(&file) {
            Ok(file)
        } else if file.exists() {
            Err(std::io::ErrorKind::PermissionDenied.into())
        } else {
            Err(std::io::ErrorKind::NotFound.into())
        };
    }
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(command))
        .find(|file| runnable(file))
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "not found on PATH"))
}

fn keep_tail(mut pipe: impl Read, kept: &Mutex<String>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut buf) {
        if n == 0 {
            break;
        }
        let mut kept = kept.lock().unwrap();
        kept.push_str(&String::from_utf8_lossy(&buf[..n]));
        if kept.len() > STDERR_KEPT {
            let mut cut = kept.len() - STDERR_KEPT;
            while !kept.is_char_boundary(cut) {
                cut += 1;
            }
            kept.drain(..cut);
        }
    }
}

fn last_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("");
    crate::host::text::clip(line, 200)
}

/// Spawns on the one thread that lives as long as the process, so the
/// child's `PR_SET_PDEATHSIG` fires when the host ends, not when the thread
/// that asked for it does.
fn spawn_kept(cmd: Command) -> std::io::Result<Child> {
    type Job = (Command, mpsc::Sender<std::io::Result<Child>>);
    static KEEPER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let keeper = KEEPER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::spawn(move || {
            for (mut cmd, reply) in rx {
                let _ = reply.send(cmd.spawn());
            }
        });
        Mutex::new(tx)
    });
    let (tx, rx) = mpsc::channel();
    keeper
        .lock()
        .unwrap()
        .send((cmd, tx))
        .map_err(|_| std::io::Error::other("the spawning thread is gone"))?;
    rx.recv()
        .map_err(|_| std::io::Error::other("the spawning thread is gone"))?
}

pub struct HttpConnection {
    url: String,
    headers: BTreeMap<String, String>,
    /// The `Mcp-Session-Id` the server gave at `initialize`, if any.
    session: Arc<Mutex<Option<String>>>,
    /// The negotiated revision, sent as `MCP-Protocol-Version`.
    version: Mutex<Option<String>>,
    next_id: AtomicI64,
}

/// Everything one POST needs, owned, so it can run on its own thread.
struct Post {
    url: String,
    headers: Vec<(String, String)>,
    session: Arc<Mutex<Option<String>>>,
    version: Option<String>,
    timeout: Duration,
}

/// The most read of one HTTP answer.
const ANSWER_LIMIT: u64 = 64 << 20;

impl HttpConnection {
    /// Posts the request on its own thread, so a deadline or a cancel need
    /// not wait for the network.
    fn send(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> (Value, mpsc::Receiver<Result<Value, Failure>>) {
        let id = json!(self.next_id.fetch_add(1, Ordering::SeqCst));
        let body = protocol::request(&id, method, params);
        let (tx, rx) = mpsc::channel();
        let post = self.post(timeout);
        let want = id.clone();
        std::thread::spawn(move || {
            let _ = tx.send(post.exchange(&body, Some(&want)));
        });
        (id, rx)
    }

    fn post(&self, timeout: Duration) -> Post {
        Post {
            url: self.url.clone(),
            headers: self
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            session: self.session.clone(),
            version: self.version.lock().unwrap().clone(),
            timeout,
        }
    }

    /// Notifications need no answer: they are posted in the background.
    fn notify(&self, method: &str, params: Value) {
        let post = self.post(Duration::from_secs(5));
        let body = protocol::notification(method, params);
        std::thread::spawn(move || {
            let _ = post.exchange(&body, None);
        });
    }

    /// Tells the server the session is over (DELETE), when it gave one.
    fn end_session(&self) {
        let Some(id) = self.session.lock().unwrap().take() else {
            return;
        };
        let post = self.post(Duration::from_secs(2));
        let mut request = agent(post.timeout)
            .delete(&post.url)
            .header("Mcp-Session-Id", &id);
        if let Some(v) = &post.version {
            request = request.header("MCP-Protocol-Version", v);
        }
        for (k, v) in &post.headers {
            request = request.header(k, v);
        }
        let _ = request.call();
    }
}

fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .build()
        .into()
}

impl Post {
    /// Posts one message; for a request, reads the answer with id `want`,
    /// whether it comes as JSON or as an SSE stream.
    fn exchange(&self, body: &Value, want: Option<&Value>) -> Result<Value, Failure> {
        let mut request = agent(self.timeout)
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        if let Some(v) = &self.version {
            request = request.header("MCP-Protocol-Version", v);
        }
        if let Some(id) = self.session.lock().unwrap().clone() {
            request = request.header("Mcp-Session-Id", &id);
        }
        for (k, v) in &self.headers {
            request = request.header(k, v);
        }
        let response = request
            .send(body.to_string())
            .map_err(|e| Failure::Broken(format!("cannot reach {}: {e}", self.url)))?;
        if let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            *self.session.lock().unwrap() = Some(id.to_string());
        }
        let status = response.status().as_u16();
        let event_stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        let Some(want) = want else {
            return Ok(Value::Null);
        };
        let reader = response.into_body().into_reader().take(ANSWER_LIMIT);
        if event_stream && (200..300).contains(&status) {
            return read_events(BufReader::new(reader), want);
        }
        let mut text = String::new();
        let _ = BufReader::new(reader).read_to_string(&mut text);
        if let Ok(value) = serde_json::from_str::<Value>(&text) {
            if let Ok(Message::Response { outcome, .. }) = protocol::parse(value) {
                return outcome.map_err(Failure::Rpc);
            }
        }
        Err(Failure::Broken(format!(
            "HTTP {status} from {}: {}",
            self.url,
            crate::host::text::clip(text.trim(), 200)
        )))
    }
}

/// Reads SSE events until the response with id `want`; the server's
/// notifications and requests on the way are not needed.
fn read_events(mut reader: impl BufRead, want: &Value) -> Result<Value, Failure> {
    let mut data = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => {
                return Err(Failure::Broken(
                    "the event stream ended before the answer came".into(),
                ))
            }
            Ok(_) => {}
        }
        let text = line.trim_end_matches(['\r', '\n']);
        if let Some(rest) = text.strip_prefix("data:") {
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
            data.push('\n');
            continue;
        }
        if !text.is_empty() || data.is_empty() {
            continue;
        }
        let event = std::mem::take(&mut data);
        let Ok(value) = serde_json::from_str::<Value>(&event) else {
            continue;
        };
        if let Ok(Message::Response { id, outcome }) = protocol::parse(value) {
            if &id == want {
                return outcome.map_err(Failure::Rpc);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_as_execvp_finds_them() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let tool = bin.join("srv");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::write(bin.join("plain"), "").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths(["/nonexistent".as_ref(), bin.as_path()]).unwrap();
        assert_eq!(find_program("srv", &path, None).unwrap(), tool);
        assert_eq!(
            find_program("bin/srv", &path, Some(dir.path())).unwrap(),
            tool
        );
        assert_eq!(
            find_program("plain", &path, None).unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
        assert_eq!(
            find_program("bin/plain", &path, Some(dir.path()))
                .unwrap_err()
                .kind(),
            std::io::ErrorKind::PermissionDenied
        );
    }

    #[test]
    fn events_are_read_to_the_answer() {
        let stream = ": keepalive\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n\
                      data: {\"jsonrpc\":\"2.0\",\"id\":1,\r\ndata: \"result\":{\"ok\":true}}\r\n\r\n";
        let got = read_events(stream.as_bytes(), &json!(1));
        assert_eq!(got, Ok(json!({"ok": true})));
        let got = read_events("data: {}\n\n".as_bytes(), &json!(1));
        assert!(matches!(got, Err(Failure::Broken(_))));
    }
}
