//! `ikigai-tools mcp --http` under load, on 127.0.0.1 (decision 73): many
//! clients at once, each on its own keep-alive connection, making
//! `tools/call`s (file_read and grep of a file of its own, so an answer
//! sent to the wrong client shows), then a burst past the 64 calls the
//! server runs at once. Every response must arrive and be the right one,
//! the excess must be 429 with `Retry-After`, and the server must come out
//! alive and small. The small form runs in `cargo test`; the long form
//! (200 clients x 50 calls, then 1,000 at once) is `#[ignore]`d and run by
//! `bench/run.sh mcp-load`, which records its figures.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::server::HttpServer;

/// A client on one keep-alive connection, speaking the stateless revision.
struct Client {
    stream: BufReader<TcpStream>,
    bearer: String,
}

/// One answer: the status, its `Retry-After`, the body.
struct Answer {
    status: u16,
    retry_after: Option<String>,
    body: Value,
}

impl Client {
    fn connect(server: &HttpServer) -> Client {
        let addr = server
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        Client {
            stream: BufReader::new(stream),
            bearer: server.bearer(),
        }
    }

    fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Answer {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments,
                                     "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
        .to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {}\r\n\
             Content-Type: application/json\r\nAccept: application/json\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n\
             Content-Length: {}\r\n\r\n{body}",
            self.bearer,
            body.len()
        );
        self.stream
            .get_mut()
            .write_all(request.as_bytes())
            .expect("send");
        let mut line = String::new();
        self.stream.read_line(&mut line).expect("status line");
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("a status line: {line:?}"));
        let (mut length, mut retry_after) = (0, None);
        loop {
            line.clear();
            self.stream.read_line(&mut line).expect("header");
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').expect("a header");
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap(),
                "retry-after" => retry_after = Some(value.trim().to_string()),
                _ => {}
            }
        }
        let mut body = vec![0; length];
        self.stream.read_exact(&mut body).expect("body");
        Answer {
            status,
            retry_after,
            body: serde_json::from_slice(&body).expect("a JSON body"),
        }
    }
}

/// The server's peak resident memory so far, in bytes.
fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM");
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// What a run of many clients saw.
struct Figures {
    calls: usize,
    refused: usize,
    wall: Duration,
    p50: Duration,
    p99: Duration,
    peak: u64,
}

/// `clients` clients at once, `calls` calls each, alternating file_read
/// and grep of the client's own file; a 429 is retried after the time it
/// names. Every answer is checked to be that client's.
fn steady(server: &HttpServer, dir: &Path, clients: usize, calls: usize) -> Figures {
    for c in 0..clients {
        let text: String = (0..20).map(|l| format!("client {c} line {l}\n")).collect();
        std::fs::write(dir.join(format!("c{c}.txt")), text).unwrap();
    }
    let start = Arc::new(Barrier::new(clients));
    let began = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let mut client = Client::connect(server);
            let (start, file) = (start.clone(), dir.join(format!("c{c}.txt")));
            std::thread::Builder::new()
                .stack_size(256 << 10)
                .spawn(move || {
                    start.wait();
                    let mut latencies = Vec::with_capacity(calls);
                    let mut refused = 0;
                    for k in 0..calls {
                        let id = (c * 1_000_000 + k) as u64;
                        let (tool, arguments) = if k % 2 == 0 {
                            (
                                "file_read",
                                json!({"file_path": file, "offset": 3, "limit": 1}),
                            )
                        } else {
                            (
                                "grep",
                                json!({"pattern": format!("client {c} line 1[0-9]"),
                                            "path": file}),
                            )
                        };
                        let answer = loop {
                            let t0 = Instant::now();
                            let answer = client.call(id, tool, arguments.clone());
                            if answer.status != 429 {
                                latencies.push(t0.elapsed());
                                break answer;
                            }
                            refused += 1;
                            let wait: u64 = answer.retry_after.unwrap().parse().unwrap();
                            std::thread::sleep(Duration::from_secs(wait));
                        };
                        assert_eq!(answer.status, 200, "{}", answer.body);
                        assert_eq!(answer.body["id"], id, "another request's answer");
                        let result = &answer.body["result"];
                        assert_eq!(result["isError"], false, "{result}");
                        let output = result["structuredContent"]["output"].as_str().unwrap();
                        if k % 2 == 0 {
                            assert_eq!(output, format!("client {c} line 2\n"), "{result}");
                        } else {
                            assert_eq!(output.lines().count(), 10, "{result}");
                            assert!(
                                output
                                    .lines()
                                    .all(|l| l.contains(&format!("client {c} line 1"))),
                                "{result}"
                            );
                        }
                    }
                    (latencies, refused)
                })
                .unwrap()
        })
        .collect();
    let mut latencies = Vec::new();
    let mut refused = 0;
    for t in threads {
        let (l, r) = t.join().expect("a client failed");
        latencies.extend(l);
        refused += r;
    }
    let wall = began.elapsed();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Figures {
        calls: latencies.len(),
        refused,
        wall,
        p50: at(0.5),
        p99: at(0.99),
        peak: peak_memory(server.pid()),
    }
}

/// `clients` clients at once, each one call that holds its place for
/// `hold` seconds: at most 64 are served, the rest get 429 with
/// `Retry-After`, and all of them get an answer. Returns (served, refused).
fn burst(server: &HttpServer, clients: usize, hold: u32) -> (usize, usize) {
    let start = Arc::new(Barrier::new(clients));
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let mut client = Client::connect(server);
            let start = start.clone();
            std::thread::Builder::new()
                .stack_size(256 << 10)
                .spawn(move || {
                    start.wait();
                    let command = format!("sleep {hold}; echo {c}");
                    client.call(c as u64, "bash", json!({"command": command}))
                })
                .unwrap()
        })
        .collect();
    let (mut served, mut refused) = (0, 0);
    for (c, t) in threads.into_iter().enumerate() {
        let answer = t.join().expect("a client failed");
        assert_eq!(answer.body["id"], c, "another request's answer");
        match answer.status {
            200 => {
                let output = &answer.body["result"]["structuredContent"]["output"];
                let output = output.as_str().map(str::trim_end);
                assert_eq!(output, Some(c.to_string().as_str()), "{}", answer.body);
                served += 1;
            }
            429 => {
                assert_eq!(answer.retry_after.as_deref(), Some("1"));
                assert_eq!(answer.body["error"]["code"], -32000, "{}", answer.body);
                refused += 1;
            }
            other => panic!("status {other}: {}", answer.body),
        }
    }
    (served, refused)
}

fn report(label: &str, f: &Figures) {
    eprintln!(
        "mcp load, {label}: {} calls in {:.2} s ({:.0}/s), p50 {:.2} ms, p99 {:.2} ms, \
         {} refused with 429 and retried, server peak memory {:.1} MB",
        f.calls,
        f.wall.as_secs_f64(),
        f.calls as f64 / f.wall.as_secs_f64(),
        f.p50.as_secs_f64() * 1e3,
        f.p99.as_secs_f64() * 1e3,
        f.refused,
        f.peak as f64 / 1e6
    );
}

/// The whole test: steady load, then a burst, then a check that the server
/// still answers.
fn load(clients: usize, calls: usize, burst_clients: usize) {
    let scratch = tempfile::tempdir().unwrap();
    let server = HttpServer::start();
    let figures = steady(&server, scratch.path(), clients, calls);
    report(&format!("{clients} clients x {calls} calls"), &figures);
    assert_eq!(figures.calls, clients * calls);
    if clients <= 64 {
        assert_eq!(figures.refused, 0, "under the limit, nothing is refused");
    }
    assert!(
        figures.peak < 100 << 20,
        "server peak memory {} bytes",
        figures.peak
    );
    let (served, refused) = burst(&server, burst_clients, 3);
    eprintln!(
        "mcp load, {burst_clients} clients at once: {served} served, {refused} refused with 429"
    );
    assert_eq!(served + refused, burst_clients);
    assert!(served <= 64, "{served} calls ran at once");
    assert!(refused >= burst_clients - 64, "{refused} refused");
    // Still alive, still right, and no larger than the bound.
    let after = steady(&server, scratch.path(), 4, 4);
    assert_eq!(after.calls, 16);
    assert!(
        after.peak < 100 << 20,
        "server peak memory {} bytes",
        after.peak
    );
    if let Ok(path) = std::env::var("IKIGAI_LOAD_FIGURES") {
        let figures = json!({
            "clients": clients, "calls_each": calls, "calls": figures.calls,
            "wall_s": figures.wall.as_secs_f64(), "p50_s": figures.p50.as_secs_f64(),
            "p99_s": figures.p99.as_secs_f64(), "refused_retried": figures.refused,
            "peak_bytes": after.peak, "burst_clients": burst_clients,
            "burst_served": served, "burst_refused": refused,
        });
        std::fs::write(path, figures.to_string()).unwrap();
    }
}

#[test]
fn many_clients_at_once_every_answer_right_and_the_excess_refused() {
    load(24, 10, 100);
}

/// The long form: `cargo test --release --test all mcp::load -- --ignored`.
#[test]
#[ignore]
fn long_form_200_clients_50_calls_then_1000_at_once() {
    load(200, 50, 1000);
}
