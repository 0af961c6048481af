//! web-fetch's public-internet guard (decision 31): private, local and
//! every other non-public address refused before connecting, in every
//! spelling, after every redirect and through a proxy.

use std::io::Write;
use std::net::TcpListener;
use std::time::Duration;

use serde_json::json;

use super::{fetch_url, serve, TOOL};
use crate::common::http::Reply;
use crate::common::Output;
use crate::tools::web_support::{failure, success, Sandbox};

/// web-fetch as the host runs it: private addresses refused.
fn fetch_guarded(url: &str) -> Output {
    Sandbox::new()
        .run(TOOL)
        .json_in(&json!({ "url": url }))
        .output()
}

#[test]
fn private_and_local_addresses_are_refused_before_connecting() {
    // A live server, so that a request that got through would be seen.
    let server = serve(Reply::html("<title>Secret</title><p>internal</p>"));
    let port = server.addr().port();
    let cases = [
        (
            format!("http://127.0.0.1:{port}/"),
            "127.0.0.1",
            "is a loopback",
        ),
        (
            format!("http://127.1:{port}/"),
            "127.1",
            "is 127.0.0.1, a loopback",
        ),
        (
            format!("http://2130706433:{port}/"),
            "2130706433",
            "is 127.0.0.1, a loopback",
        ),
        (
            format!("http://0x7f000001:{port}/"),
            "0x7f000001",
            "is 127.0.0.1, a loopback",
        ),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/"),
            "[::ffff:127.0.0.1]",
            "is ::ffff:127.0.0.1, a loopback",
        ),
        (
            format!("http://LOCALHOST:{port}/"),
            "LOCALHOST",
            "resolves to 127.0.0.1, a loopback",
        ),
        ("http://[::1]/".to_string(), "[::1]", "is ::1, a loopback"),
        ("http://10.0.0.1/".to_string(), "10.0.0.1", "is a private"),
        (
            "http://172.16.5.4/".to_string(),
            "172.16.5.4",
            "is a private",
        ),
        (
            "http://192.168.1.1/".to_string(),
            "192.168.1.1",
            "is a private",
        ),
        (
            "http://[fd00:ec2::254]/".to_string(),
            "[fd00:ec2::254]",
            "is fd00:ec2::254, a unique-local (private)",
        ),
        (
            "http://169.254.169.254/latest/meta-data/".to_string(),
            "169.254.169.254",
            "is a cloud metadata",
        ),
        (
            "http://169.254.10.1/".to_string(),
            "169.254.10.1",
            "is a link-local",
        ),
        (
            "http://[fe80::1]/".to_string(),
            "[fe80::1]",
            "is fe80::1, a link-local",
        ),
        (
            "http://100.64.0.1/".to_string(),
            "100.64.0.1",
            "is a shared (CGNAT)",
        ),
        (
            "http://0.0.0.0/".to_string(),
            "0.0.0.0",
            "is an unspecified",
        ),
        ("http://[::]/".to_string(), "[::]", "is ::, an unspecified"),
        (
            "http://224.0.0.1/".to_string(),
            "224.0.0.1",
            "is a multicast",
        ),
        (
            "http://[ff02::1]/".to_string(),
            "[ff02::1]",
            "is ff02::1, a multicast",
        ),
    ];
    for (url, host, class) in &cases {
        let out = fetch_guarded(url);
        assert_eq!(
            failure(&out, "ADDRESS_BLOCKED"),
            format!(
                "Refused to fetch URL: host {host} {class} address: web_fetch only fetches pages on the public internet"
            ),
            "{url}"
        );
    }
    assert!(server.requests().is_empty(), "{:?}", server.requests());

    // IKIGAI_FETCH_ALLOW_PRIVATE=1 turns the check off.
    for url in [
        format!("http://127.1:{port}/"),
        format!("http://LOCALHOST:{port}/"),
    ] {
        let answer = success(&fetch_url(&url));
        assert_eq!(answer["title"], "Secret");
    }
    // Any other value does not.
    let out = Sandbox::new()
        .run(TOOL)
        .env(crate::tools::web_support::ALLOW_PRIVATE, "yes")
        .json_in(&json!({ "url": format!("http://127.0.0.1:{port}/") }))
        .output();
    failure(&out, "ADDRESS_BLOCKED");
    assert_eq!(server.requests().len(), 2);
}

/// A local HTTP proxy as ureq speaks to one (`CONNECT host:port`, then
/// the request inside the tunnel), answering every tunnelled request with
/// a redirect to `location`. Records the CONNECT targets and requests.
struct Proxy {
    addr: std::net::SocketAddr,
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Proxy {
    fn start(location: &'static str) -> Proxy {
        use std::io::{BufRead, BufReader};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            // Bounded: a test makes at most a few connections.
            for stream in listener.incoming().take(4).flatten() {
                stream
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                let head = |reader: &mut BufReader<_>| -> Option<String> {
                    let mut first = String::new();
                    reader.read_line(&mut first).ok()?;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).ok()? == 0 || line == "\r\n" {
                            break;
                        }
                    }
                    Some(first.trim_end().to_string())
                };
                let Some(connect) = head(&mut reader) else {
                    continue;
                };
                log.lock().unwrap().push(connect);
                let _ = stream.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                let Some(request) = head(&mut reader) else {
                    continue;
                };
                log.lock().unwrap().push(request);
                let reply = format!(
                    "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                let _ = stream.write_all(reply.as_bytes());
            }
        });
        Proxy { addr, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

#[test]
fn through_a_proxy_the_target_and_every_redirect_are_checked_first() {
    // The target is a public address the request never reaches: the local
    // proxy answers for it, with a redirect inward.
    let proxy = Proxy::start("http://169.254.169.254/latest/meta-data/");
    let via_proxy = |url: &str| {
        Sandbox::new()
            .run(TOOL)
            .env("HTTP_PROXY", format!("http://{}", proxy.addr))
            .json_in(&json!({ "url": url }))
            .output()
    };
    // A private target is refused before the proxy sees the request.
    assert!(
        failure(&via_proxy("http://10.1.2.3/admin"), "ADDRESS_BLOCKED")
            .contains("host 10.1.2.3 is a private address")
    );
    assert!(proxy.seen().is_empty());
    // A public target goes to the proxy; its redirect inward is refused.
    let out = via_proxy("http://93.184.215.14/start");
    assert_eq!(
        failure(&out, "ADDRESS_BLOCKED"),
        "Refused to fetch URL: host 169.254.169.254 is a cloud metadata address: web_fetch only fetches pages on the public internet"
    );
    assert_eq!(
        proxy.seen(),
        ["CONNECT 93.184.215.14:80 HTTP/1.1", "GET /start HTTP/1.1"]
    );
}

#[test]
fn with_private_addresses_allowed_a_proxy_resolves_the_target_s_name() {
    // A name that resolves nowhere: only the proxy knows it.
    let proxy = Proxy::start("http://10.9.9.9/next");
    let out = Sandbox::new()
        .run_fetch()
        .env("HTTP_PROXY", format!("http://{}", proxy.addr))
        .env("IKIGAI_WEB_TIMEOUT", "5")
        .json_in(&json!({ "url": "http://pages.invalid/start" }))
        .output();
    // The proxy stops after a few connections, so the redirects end in a
    // network error; what matters is that the name went to the proxy.
    failure(&out, "NETWORK_ERROR");
    let seen = proxy.seen();
    assert!(
        seen.starts_with(&[
            "CONNECT pages.invalid:80 HTTP/1.1".to_string(),
            "GET /start HTTP/1.1".to_string(),
            "CONNECT 10.9.9.9:80 HTTP/1.1".to_string(),
        ]),
        "{seen:?}"
    );
}
