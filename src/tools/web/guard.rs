//! Keeps web_fetch on the public internet: a page on the web must not be
//! able to make the tool read the machine's own services, the local
//! network, or a cloud provider's metadata endpoint (which hands out
//! credentials), by a link, a redirect or a DNS name that points inward.
//!
//! The host of every URL, the first and each redirect's, is resolved here
//! (every spelling of an address counts: `127.1`, `2130706433`,
//! `0x7f000001`, `[::ffff:127.0.0.1]`, `LOCALHOST`), every address it
//! resolves to is checked, and the connection is then made only to those
//! checked addresses (the HTTP client is given them instead of resolving
//! the name again, so a DNS answer that changes between check and connect
//! changes nothing). With a proxy, the URL's host is still resolved and
//! checked here before the request goes to the proxy. Nothing is checked
//! when `IKIGAI_FETCH_ALLOW_PRIVATE=1`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::Duration;

/// Set to `1` to let web_fetch reach private and local addresses.
pub const ALLOW_PRIVATE_VAR: &str = "IKIGAI_FETCH_ALLOW_PRIVATE";

/// Why a host cannot be fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The host resolves to an address outside the public internet.
    Blocked {
        host: String,
        addr: IpAddr,
        class: &'static str,
    },
    /// The name did not resolve.
    NotFound,
    /// The resolver did not answer in time.
    Timeout,
}

impl Refusal {
    /// The refusal in words a model can act on.
    pub fn message(&self) -> String {
        match self {
            Refusal::Blocked { host, addr, class } => {
                let resolves = match literal(host) {
                    Some(ip) if ip == *addr && host.parse::<IpAddr>().is_ok() => "is".to_string(),
                    Some(_) => format!("is {addr},"),
                    None => format!("resolves to {addr},"),
                };
                format!(
                    "host {host} {resolves} {class} address: web_fetch only fetches pages on the public internet"
                )
            }
            Refusal::NotFound => "host not found (DNS lookup failed)".to_string(),
            Refusal::Timeout => "DNS timeout: the host name did not resolve".to_string(),
        }
    }
}

/// The class of an address web_fetch must not reach, or None for a public
/// one.
pub fn blocked_class(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => v4_class(v4),
        IpAddr::V6(v6) => v6_class(v6),
    }
}

fn v4_class(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, d] = ip.octets();
    Some(match (a, b) {
        (0, _) => "an unspecified",
        (127, _) => "a loopback",
        (10, _) | (172, 16..=31) | (192, 168) => "a private",
        (169, 254) if (c, d) == (169, 254) => "a cloud metadata",
        (169, 254) => "a link-local",
        (100, 64..=127) => "a shared (CGNAT)",
        // IETF protocol assignments: one cloud's metadata lives here.
        (192, 0) if c == 0 => "a reserved",
        (224..=239, _) => "a multicast",
        (240..=255, _) => "a reserved",
        _ => return None,
    })
}

fn v6_class(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = embedded_v4(ip) {
        return v4_class(v4);
    }
    let first = ip.segments()[0];
    Some(if ip.is_unspecified() {
        "an unspecified"
    } else if ip.is_loopback() {
        "a loopback"
    } else if first & 0xfe00 == 0xfc00 {
        "a unique-local (private)"
    } else if first & 0xffc0 == 0xfe80 {
        "a link-local"
    } else if first & 0xffc0 == 0xfec0 {
        "a site-local (private)"
    } else if first & 0xff00 == 0xff00 {
        "a multicast"
    } else {
        return None;
    })
}

/// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`), IPv4-
/// compatible (`::a.b.c.d`) or NAT64 (`64:ff9b::a.b.c.d`) address: the
/// connection reaches that IPv4 address, so it is what is checked.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s[..6] {
        [0, 0, 0, 0, 0, 0xffff] => Some(low),
        // `::` and `::1` are IPv6's own unspecified and loopback.
        [0, 0, 0, 0, 0, 0] if s[6] != 0 => Some(low),
        [0x64, 0xff9b, 0, 0, 0, 0] => Some(low),
        _ => None,
    }
}

/// The address a host names by itself, in any spelling a resolver takes:
/// an IPv6 literal (with or without brackets), or IPv4 as dotted parts
/// (one to four, each decimal, octal with a leading 0, or hex with 0x:
/// `127.1`, `2130706433`, `0x7f.0.0.1`, `0177.0.0.1`).
pub fn literal(host: &str) -> Option<IpAddr> {
    let host = host.strip_suffix('.').unwrap_or(host);
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    if let Ok(v6) = host.parse::<Ipv6Addr>() {
        return Some(IpAddr::V6(v6));
    }
    let parts: Vec<u64> = host.split('.').map(number).collect::<Option<Vec<_>>>()?;
    let (last, init) = parts.split_last()?;
    if init.len() > 3 || init.iter().any(|&p| p > 255) {
        return None;
    }
    let bits_left = 8 * (4 - init.len() as u32);
    if *last >= 1u64 << bits_left {
        return None;
    }
    let value = init
        .iter()
        .fold(0u64, |acc, &p| (acc << 8) | p)
        .checked_shl(bits_left)?
        | last;
    Some(IpAddr::V4(Ipv4Addr::from(u32::try_from(value).ok()?)))
}

/// One part of an IPv4 spelling: `0x1f`, `017` (octal), `17`.
fn number(part: &str) -> Option<u64> {
    let (digits, radix) =
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
    if digits.is_empty() || digits.len() > 12 || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// `localhost` and its subdomains name this machine whatever DNS says.
fn is_localhost(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

/// The addresses `host` (as a URL writes it) resolves to, every one of them
/// checked unless `allow_private`. `timeout` bounds the DNS lookup.
pub fn resolve(
    host: &str,
    port: u16,
    allow_private: bool,
    timeout: Duration,
) -> Result<Vec<SocketAddr>, Refusal> {
    let addrs: Vec<SocketAddr> = if let Some(ip) = literal(host) {
        vec![SocketAddr::new(ip, port)]
    } else if is_localhost(host) && !allow_private {
        vec![SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)]
    } else {
        lookup(host, port, timeout)?
    };
    if !allow_private {
        for addr in &addrs {
            if let Some(class) = blocked_class(addr.ip()) {
                return Err(Refusal::Blocked {
                    host: host.to_string(),
                    addr: addr.ip(),
                    class,
                });
            }
        }
    }
    Ok(addrs)
}

/// A system DNS lookup that gives up after `timeout` (the lookup itself
/// cannot be cancelled; its thread ends with the process).
fn lookup(host: &str, port: u16, timeout: Duration) -> Result<Vec<SocketAddr>, Refusal> {
    let name = format!("{host}:{port}");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let found = name.to_socket_addrs().map(|it| it.collect::<Vec<_>>());
        let _ = tx.send(found);
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(addrs)) if !addrs.is_empty() => Ok(addrs),
        Ok(_) => Err(Refusal::NotFound),
        Err(_) => Err(Refusal::Timeout),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(5);

    fn v4(s: &str) -> IpAddr {
        IpAddr::V4(s.parse().unwrap())
    }

    #[test]
    fn every_spelling_of_an_address() {
        for spelling in [
            "127.0.0.1",
            "127.1",
            "127.0.1",
            "2130706433",
            "0x7f000001",
            "0X7F.0.0.1",
            "0177.0.0.1",
            "127.0.0.1.",
        ] {
            assert_eq!(literal(spelling), Some(v4("127.0.0.1")), "{spelling}");
        }
        assert_eq!(literal("10.1"), Some(v4("10.0.0.1")));
        assert_eq!(literal("0"), Some(v4("0.0.0.0")));
        assert_eq!(
            literal("[::ffff:127.0.0.1]"),
            Some("::ffff:7f00:1".parse().unwrap())
        );
        for name in [
            "example.com",
            "256.0.0.1",
            "1.2.3.4.5",
            "4294967296",
            "08.0.0.1",
            "0x",
            "1..2",
            "",
        ] {
            assert_eq!(literal(name), None, "{name}");
        }
    }

    #[test]
    fn blocked_classes() {
        let class = |s: &str| blocked_class(s.parse().unwrap());
        assert_eq!(class("127.0.0.1"), Some("a loopback"));
        assert_eq!(class("10.2.3.4"), Some("a private"));
        assert_eq!(class("172.16.0.1"), Some("a private"));
        assert_eq!(class("172.31.255.255"), Some("a private"));
        assert_eq!(class("192.168.1.1"), Some("a private"));
        assert_eq!(class("169.254.169.254"), Some("a cloud metadata"));
        assert_eq!(class("169.254.1.1"), Some("a link-local"));
        assert_eq!(class("100.64.0.1"), Some("a shared (CGNAT)"));
        assert_eq!(class("100.100.100.200"), Some("a shared (CGNAT)"));
        assert_eq!(class("192.0.0.192"), Some("a reserved"));
        assert_eq!(class("0.0.0.0"), Some("an unspecified"));
        assert_eq!(class("224.0.0.1"), Some("a multicast"));
        assert_eq!(class("255.255.255.255"), Some("a reserved"));
        assert_eq!(class("::1"), Some("a loopback"));
        assert_eq!(class("::"), Some("an unspecified"));
        assert_eq!(class("fd00:ec2::254"), Some("a unique-local (private)"));
        assert_eq!(class("fc00::1"), Some("a unique-local (private)"));
        assert_eq!(class("fe80::1"), Some("a link-local"));
        assert_eq!(class("ff02::1"), Some("a multicast"));
        assert_eq!(class("::ffff:127.0.0.1"), Some("a loopback"));
        assert_eq!(class("::ffff:169.254.169.254"), Some("a cloud metadata"));
        assert_eq!(class("::10.0.0.1"), Some("a private"));
        assert_eq!(class("64:ff9b::192.168.0.1"), Some("a private"));
        for public in [
            "93.184.215.14",
            "172.32.0.1",
            "100.128.0.1",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(class(public), None, "{public}");
        }
    }

    #[test]
    fn resolving_refuses_before_any_connection() {
        let refused = |host: &str| resolve(host, 80, false, T).unwrap_err().message();
        assert_eq!(
            refused("127.0.0.1"),
            "host 127.0.0.1 is a loopback address: web_fetch only fetches pages on the public internet"
        );
        assert_eq!(
            refused("2130706433"),
            "host 2130706433 is 127.0.0.1, a loopback address: web_fetch only fetches pages on the public internet"
        );
        assert!(
            refused("LOCALHOST").starts_with("host LOCALHOST resolves to 127.0.0.1, a loopback")
        );
        assert!(refused("api.localhost.").contains("loopback"));
        assert!(refused("[::ffff:127.0.0.1]").contains("is ::ffff:127.0.0.1, a loopback"));
        assert!(refused("0x0a000001").contains("is 10.0.0.1, a private"));
        // Allowed, the same hosts resolve to themselves.
        assert_eq!(
            resolve("127.1", 8080, true, T).unwrap(),
            vec!["127.0.0.1:8080".parse().unwrap()]
        );
        assert_eq!(
            resolve("[::1]", 443, true, T).unwrap(),
            vec!["[::1]:443".parse().unwrap()]
        );
        assert!(resolve("8.8.8.8", 443, false, T).is_ok());
    }
}
