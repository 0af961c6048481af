//! The HTTP client of the web tools: one GET with the
//! limits every web tool shares, so none of them can hang past the host's
//! 30 s deadline or fill memory.
//!
//! - connect within 10 s, whole request (redirects and body included) within
//!   20 s; `IKIGAI_WEB_TIMEOUT` may lower the whole-request limit (1-20 s) for
//!   hosts configured with a shorter tool timeout;
//! - at most 10 redirects, followed here so that each hop's host is checked
//!   (`guard`) before anything connects to it, the final URL reported (none
//!   for the search APIs, whose key must not follow a redirect elsewhere);
//! - the body read up to 10 MiB, the rest cut (and reported as cut);
//! - statuses >= 400 are answers, not errors: each tool maps them itself.
//!
//! Failures come back as a `Failure` with a plain reason; the tools put it in
//! their own words and error codes.

use std::io::Read;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};
use ureq::{Agent, Timeout};

use super::guard::{self, Refusal};

use crate::error::ToolError;
use crate::tool::Env;

pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
pub const MAX_REDIRECTS: u32 = 10;
/// The most body bytes read from one response.
pub const BODY_CAP: usize = 10 * 1024 * 1024;

/// Lowers the whole-request timeout, in whole seconds from 1 to 20.
pub const TIMEOUT_VAR: &str = "IKIGAI_WEB_TIMEOUT";

const USER_AGENT: &str = concat!("ikigai-tools/", env!("CARGO_PKG_VERSION"));

/// What came back from a server.
#[derive(Debug)]
pub struct Fetched {
    pub status: u16,
    /// The URL of the last response, after redirects.
    pub url: String,
    /// The `Content-Type` header, as sent.
    pub content_type: Option<String>,
    /// At most `BODY_CAP` bytes, content-encoding (gzip) already undone.
    pub body: Vec<u8>,
    /// The body was longer than `BODY_CAP` and was cut there.
    pub truncated: bool,
}

/// Why no answer came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Connecting, sending or receiving failed (refused, DNS, timeout, TLS,
    /// too many redirects, a broken response).
    Network(String),
    /// The response arrived but its content encoding (gzip) is corrupt.
    Decode(String),
    /// The host (of the URL or of a redirect) is not on the public
    /// internet (see `guard`).
    Blocked(String),
}

pub struct Client {
    timeout: Duration,
    /// How many redirects are followed (each one resolved and checked).
    redirects: u32,
    /// Pages (web_fetch): every host is resolved and checked by `guard`,
    /// and the connection made only to the checked addresses. `None` for
    /// the search APIs, whose endpoints the user configures.
    guard: Option<Guard>,
}

#[derive(Debug, Clone, Copy)]
struct Guard {
    allow_private: bool,
}

impl Client {
    /// A client for pages: the shared limits, up to `MAX_REDIRECTS`
    /// redirects, and every host, the first and each redirect's, kept on
    /// the public internet unless `IKIGAI_FETCH_ALLOW_PRIVATE=1`.
    /// `IKIGAI_WEB_TIMEOUT` is checked here.
    pub fn new(env: &Env) -> Result<Self, ToolError> {
        let mut client = Self::with_redirects(env, MAX_REDIRECTS)?;
        client.guard = Some(Guard {
            allow_private: env.var(guard::ALLOW_PRIVATE_VAR) == Some("1"),
        });
        Ok(client)
    }

    /// A client for an API that authenticates by header or query: it never
    /// follows a redirect, which would hand the key to whatever host the
    /// `Location` names (ureq only holds back `Authorization`).
    pub fn for_api(env: &Env) -> Result<Self, ToolError> {
        Self::with_redirects(env, 0)
    }

    fn with_redirects(env: &Env, redirects: u32) -> Result<Self, ToolError> {
        let timeout = request_timeout(env)?;
        Ok(Client {
            timeout,
            redirects,
            guard: None,
        })
    }

    /// Redirects are followed here, not by ureq, so that each hop's host
    /// is checked before anything connects to it.
    fn config(timeout: Duration) -> Config {
        Agent::config_builder()
            .timeout_connect(Some(CONNECT_TIMEOUT.min(timeout)))
            .timeout_global(Some(timeout))
            .max_redirects(0)
            .http_status_as_error(false)
            .user_agent(USER_AGENT)
            .build()
    }

    /// GETs `url` with extra `headers`, and `query` parameters appended to
    /// whatever query the URL already has, following redirects.
    pub fn get(
        &self,
        url: &Uri,
        headers: &[(&str, &str)],
        query: &[(&str, &str)],
    ) -> Result<Fetched, Failure> {
        let deadline = Instant::now() + self.timeout;
        let mut url = url.clone();
        let mut hops = 0;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(self.failure(ureq::Error::Timeout(Timeout::Global), false));
            }
            let agent = self.agent_for(&url, remaining)?;
            let mut request = agent.get(&url);
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            if hops == 0 {
                for (name, value) in query {
                    request = request.query(*name, *value);
                }
            }
            let https = url.scheme_str() == Some("https");
            let response = request.call().map_err(|e| self.failure(e, https))?;
            let status = response.status().as_u16();
            let location = response
                .headers()
                .get("location")
                .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string());
            if let (true, Some(location)) = (self.redirects > 0 && is_redirect(status), location) {
                if hops == self.redirects {
                    return Err(self.failure(ureq::Error::TooManyRedirects, https));
                }
                hops += 1;
                let next = super::url::resolve(&url.to_string(), &location);
                url = parse_url(&next).map_err(|why| {
                    Failure::Network(format!("redirect to an invalid URL '{next}': {why}"))
                })?;
                continue;
            }
            return self.read(response, url.to_string(), https);
        }
    }

    /// An agent for one request to `url`. For pages, `url`'s host is
    /// resolved and checked first, and the agent connects only to those
    /// addresses (with a proxy, ureq asks for the proxy's host instead,
    /// which resolves as usual: the target was checked all the same).
    /// With private addresses allowed, nothing needs checking: a name is
    /// left to ureq (through a proxy, the target's name need not resolve
    /// here), and an address is taken as written, which spares the thread
    /// ureq's resolver starts for every lookup under a timeout.
    fn agent_for(&self, url: &Uri, remaining: Duration) -> Result<Agent, Failure> {
        let config = Self::config(remaining);
        let Some(guard) = self.guard else {
            return Ok(config.into());
        };
        let host = url.host().unwrap_or_default().to_string();
        if guard.allow_private && guard::literal(&host).is_none() {
            return Ok(config.into());
        }
        let port = url
            .port_u16()
            .unwrap_or(if url.scheme_str() == Some("https") {
                443
            } else {
                80
            });
        let addrs = guard::resolve(
            &host,
            port,
            guard.allow_private,
            CONNECT_TIMEOUT.min(remaining),
        )
        .map_err(|refusal| match refusal {
            Refusal::Blocked { .. } => Failure::Blocked(refusal.message()),
            _ => Failure::Network(refusal.message()),
        })?;
        Ok(Agent::with_parts(
            config,
            DefaultConnector::default(),
            Pinned { host, addrs },
        ))
    }

    fn read(
        &self,
        mut response: ureq::http::Response<ureq::Body>,
        url: String,
        https: bool,
    ) -> Result<Fetched, Failure> {
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        // Sized once from Content-Length (within the cap): a body that grows
        // by doubling can hold two copies at the moment it moves.
        let declared = response
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok()?.trim().parse::<usize>().ok())
            .unwrap_or(0);
        let mut body = Vec::with_capacity(declared.min(BODY_CAP + 1));
        response
            .body_mut()
            .as_reader()
            .take(BODY_CAP as u64 + 1)
            .read_to_end(&mut body)
            .map_err(|e| self.failure(ureq::Error::from(e), https))?;
        let truncated = body.len() > BODY_CAP;
        body.truncate(BODY_CAP);
        Ok(Fetched {
            status,
            url,
            content_type,
            body,
            truncated,
        })
    }

    fn failure(&self, err: ureq::Error, https: bool) -> Failure {
        describe(err, self.timeout, https)
    }
}

fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// A resolver that answers for one host with addresses already checked,
/// so nothing resolves that host again between the check and the connect.
/// Any other host (a proxy's) resolves as usual.
#[derive(Debug)]
struct Pinned {
    host: String,
    addrs: Vec<SocketAddr>,
}

impl Resolver for Pinned {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        if uri.host() != Some(self.host.as_str()) {
            return DefaultResolver::default().resolve(uri, config, timeout);
        }
        let mut out = self.empty();
        for addr in self.addrs.iter().take(16) {
            out.push(*addr);
        }
        Ok(out)
    }
}

/// A ureq error in words a model can act on. `https`: rustls reports a
/// failed handshake as an I/O error of kind InvalidData.
fn describe(err: ureq::Error, timeout: Duration, https: bool) -> Failure {
    use std::io::ErrorKind;
    use ureq::Error as E;
    let reason = match err {
        E::Timeout(Timeout::Connect) => format!(
            "connection timeout: no connection within {} s",
            CONNECT_TIMEOUT.min(timeout).as_secs()
        ),
        E::Timeout(Timeout::Resolve) => "DNS timeout: the host name did not resolve".to_string(),
        E::Timeout(_) => format!(
            "timeout: no complete response within {} s",
            timeout.as_secs()
        ),
        E::HostNotFound => "host not found (DNS lookup failed)".to_string(),
        E::TooManyRedirects => format!("more than {MAX_REDIRECTS} redirects (a redirect loop?)"),
        E::Decompress(encoding, e) => {
            return Failure::Decode(format!("the {encoding}-encoded body is corrupt ({e})"))
        }
        E::Io(e) => match e.kind() {
            ErrorKind::ConnectionRefused => "connection refused".to_string(),
            ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => {
                "the server reset the connection".to_string()
            }
            ErrorKind::UnexpectedEof => {
                "the server closed the connection before the response was complete".to_string()
            }
            ErrorKind::TimedOut | ErrorKind::WouldBlock => format!(
                "timeout: no complete response within {} s",
                timeout.as_secs()
            ),
            ErrorKind::InvalidData if https => format!("TLS error: {e}"),
            _ => e.to_string(),
        },
        E::Protocol(e) => format!("the server's response is not valid HTTP ({e})"),
        E::Tls(e) => format!("TLS error: {e}"),
        E::Rustls(e) => format!("TLS error: {e}"),
        E::BadUri(e) => format!("bad URL ({e})"),
        E::LargeResponseHeader(..) => "the response headers are too large".to_string(),
        other => other.to_string(),
    };
    Failure::Network(reason)
}

fn request_timeout(env: &Env) -> Result<Duration, ToolError> {
    let Some(value) = env.var(TIMEOUT_VAR) else {
        return Ok(REQUEST_TIMEOUT);
    };
    match value.trim().parse::<u64>() {
        Ok(secs) if (1..=REQUEST_TIMEOUT.as_secs()).contains(&secs) => {
            Ok(Duration::from_secs(secs))
        }
        _ => Err(ToolError::invalid_arg(format!(
            "{TIMEOUT_VAR} must be a whole number of seconds from 1 to {}, got '{value}'",
            REQUEST_TIMEOUT.as_secs()
        ))),
    }
}

/// An `http://` or `https://` URL with a host, as `http::Uri` takes it:
/// characters a URI may not hold (spaces, non-ASCII in the path or query)
/// are percent-encoded, the fragment (never sent) dropped. The error says
/// what is wrong with the URL.
pub fn parse_url(url: &str) -> Result<Uri, String> {
    let url = url.trim();
    let url = url.split_once('#').map_or(url, |(before, _)| before);
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err("it must start with http:// or https://".to_string());
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err(format!(
            "scheme '{scheme}' is not supported (only http and https)"
        ));
    }
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let name = match host.strip_prefix('[') {
        Some(literal) => literal.split(']').next().unwrap_or(""),
        None => host.split(':').next().unwrap_or(""),
    };
    if name.is_empty() {
        return Err("it has no host".to_string());
    }
    if !name.is_ascii() {
        return Err(
            "the host name must be ASCII (write international names in punycode, xn--...)"
                .to_string(),
        );
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':')))
    {
        return Err(format!("the host name '{name}' holds '{c}'"));
    }
    // Uri takes any digits as a port; one no socket can have is the URL's
    // fault, not the network's.
    let port = match host.strip_prefix('[') {
        Some(literal) => literal.split_once("]:").map(|(_, p)| p),
        None => host.split_once(':').map(|(_, p)| p),
    };
    if let Some(port) = port.filter(|p| !p.is_empty()) {
        if !matches!(port.parse::<u32>(), Ok(1..=65535)) {
            return Err(format!("port {port} is not a port number (1-65535)"));
        }
    }
    let mut encoded = String::with_capacity(url.len());
    for &b in url.as_bytes() {
        if b > 0x7e || b <= b' ' || b"\"<>\\^`{|}".contains(&b) {
            encoded.push_str(&format!("%{b:02X}"));
        } else {
            encoded.push(b as char);
        }
    }
    encoded.parse::<Uri>().map_err(|e| e.to_string())
}

/// `host:port` of a URL, for messages that must not show its query (a
/// Google key travels there).
pub fn host_of(url: &Uri) -> String {
    match (url.host(), url.port_u16()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        _ => url.to_string(),
    }
}

/// A status as every web tool words it:
/// `HTTP 404: Not Found`, or `HTTP 599` for a code without a name.
pub fn status_text(status: u16) -> String {
    match ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
    {
        Some(reason) => format!("HTTP {status}: {reason}"),
        None => format!("HTTP {status}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_texts() {
        assert_eq!(status_text(404), "HTTP 404: Not Found");
        assert_eq!(status_text(500), "HTTP 500: Internal Server Error");
        assert_eq!(status_text(599), "HTTP 599");
    }

    #[test]
    fn limits_are_the_specified_ones() {
        let client = Client::new(&Env::default()).unwrap();
        let config = &Client::config(client.timeout);
        assert_eq!(config.timeouts().connect, Some(Duration::from_secs(10)));
        assert_eq!(config.timeouts().global, Some(Duration::from_secs(20)));
        assert_eq!(client.redirects, 10);
        assert!(!client.guard.unwrap().allow_private);
        assert!(!config.http_status_as_error());
        let api = Client::for_api(&Env::default()).unwrap();
        assert_eq!(api.redirects, 0);
        assert!(api.guard.is_none());
        assert_eq!(
            Client::config(api.timeout).timeouts().global,
            Some(Duration::from_secs(20))
        );
        let open = Client::new(&Env::from_pairs([(guard::ALLOW_PRIVATE_VAR, "1")])).unwrap();
        assert!(open.guard.unwrap().allow_private);
    }

    #[test]
    fn timeout_variable_lowers_both_limits() {
        let env = Env::from_pairs([(TIMEOUT_VAR, "3")]);
        let client = Client::new(&env).unwrap();
        assert_eq!(
            Client::config(client.timeout).timeouts().connect,
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            Client::config(client.timeout).timeouts().global,
            Some(Duration::from_secs(3))
        );
        for bad in ["0", "21", "2.5", "soon"] {
            let err = Client::new(&Env::from_pairs([(TIMEOUT_VAR, bad)]))
                .err()
                .unwrap();
            assert_eq!(
                err.message,
                format!(
                    "IKIGAI_WEB_TIMEOUT must be a whole number of seconds from 1 to 20, got '{bad}'"
                )
            );
        }
    }

    #[test]
    fn errors_in_words() {
        let t = REQUEST_TIMEOUT;
        assert_eq!(
            describe(ureq::Error::HostNotFound, t, false),
            Failure::Network("host not found (DNS lookup failed)".into())
        );
        assert_eq!(
            describe(ureq::Error::Timeout(Timeout::Connect), t, false),
            Failure::Network("connection timeout: no connection within 10 s".into())
        );
        assert_eq!(
            describe(ureq::Error::Timeout(Timeout::Global), t, true),
            Failure::Network("timeout: no complete response within 20 s".into())
        );
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(
            describe(ureq::Error::Io(refused), t, true),
            Failure::Network("connection refused".into())
        );
    }

    #[test]
    fn urls() {
        let ok = |u: &str| parse_url(u).unwrap().to_string();
        assert_eq!(
            ok("https://example.com/a b?q=ü#frag"),
            "https://example.com/a%20b?q=%C3%BC"
        );
        assert_eq!(ok("  HTTP://example.com"), "http://example.com/");
        assert_eq!(
            ok("http://127.0.0.1:8080/x?y=1"),
            "http://127.0.0.1:8080/x?y=1"
        );
        let err = |u: &str| parse_url(u).unwrap_err();
        assert_eq!(err("example.com"), "it must start with http:// or https://");
        assert_eq!(
            err("ftp://example.com/f"),
            "scheme 'ftp' is not supported (only http and https)"
        );
        assert_eq!(err("http:///path"), "it has no host");
        assert_eq!(err("https://:80/"), "it has no host");
        assert!(err("https://bücher.de/").starts_with("the host name must be ASCII"));
        assert_eq!(
            err("http://exa mple.com/"),
            "the host name 'exa mple.com' holds ' '"
        );
        assert_eq!(ok("http://[::1]:8080/"), "http://[::1]:8080/");
        assert_eq!(
            err("http://127.0.0.1:99999/"),
            "port 99999 is not a port number (1-65535)"
        );
        assert_eq!(err("http://h:0/"), "port 0 is not a port number (1-65535)");
    }

    #[test]
    fn host_of_hides_the_query() {
        let url = parse_url("https://www.googleapis.com/customsearch/v1?key=secret").unwrap();
        assert_eq!(host_of(&url), "www.googleapis.com");
        let url = parse_url("http://127.0.0.1:9/x?key=secret").unwrap();
        assert_eq!(host_of(&url), "127.0.0.1:9");
    }
}
