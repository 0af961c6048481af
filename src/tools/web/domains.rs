//! Domain filters of the search tools (`allowed_domains` and
//! `blocked_domains`): a filter names a domain and matches it and
//! its subdomains — `example.com` matches `docs.example.com`, never
//! `badexample.com`. Filters are written loosely by models (`https://x.org/`,
//! `*.x.org`, `X.org.`), so each is reduced to its bare domain first.

use crate::error::ToolError;

/// The entries of the array parameter `param`, reduced to bare lowercase
/// domains; INVALID_ARG names an entry that holds no domain.
pub fn from_list(list: &[String], param: &str) -> Result<Vec<String>, ToolError> {
    list.iter()
        .enumerate()
        .map(|(i, raw)| {
            normalize(raw).ok_or_else(|| {
                ToolError::invalid_arg(format!(
                    "parameter '{param}[{i}]' must be a domain such as example.com, got '{raw}'"
                ))
            })
        })
        .collect()
}

/// `https://Docs.Example.com:443/path` -> `docs.example.com`; `*.x.org`,
/// `.x.org` -> `x.org`. None when nothing domain-like is left.
pub fn normalize(raw: &str) -> Option<String> {
    let s = raw.trim();
    let s = s.split_once("://").map_or(s, |(_, rest)| rest);
    let s = s.split(['/', '?', '#']).next().unwrap_or("");
    let s = s.rsplit_once('@').map_or(s, |(_, host)| host);
    let s = strip_port(s);
    let s = s.trim_start_matches("*.").trim_start_matches('.');
    let s = s.trim_end_matches('.').to_lowercase();
    let ok = !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '.' | '_' | ':' | '[' | ']'));
    ok.then_some(s)
}

fn strip_port(hostport: &str) -> &str {
    if hostport.starts_with('[') {
        return hostport.split_inclusive(']').next().unwrap_or(hostport);
    }
    match hostport.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host,
        _ => hostport,
    }
}

/// The host of a result URL, lowercase, without port or trailing dot.
pub fn host(url: &str) -> Option<String> {
    let (_, rest) = url.trim().split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = strip_port(host).trim_end_matches('.').to_lowercase();
    (!host.is_empty()).then_some(host)
}

/// `host` is `domain` or one of its subdomains.
pub fn matches(host: &str, domain: &str) -> bool {
    host == domain
        || (host.len() > domain.len()
            && host.ends_with(domain)
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.')
}

/// Keeps a URL when it is under one of `allowed` (if any are given) and
/// under none of `blocked`. A URL without a readable host passes only when
/// nothing is required of it.
pub fn keep(url: &str, allowed: &[String], blocked: &[String]) -> bool {
    let Some(host) = host(url) else {
        return allowed.is_empty();
    };
    let allowed_ok = allowed.is_empty() || allowed.iter().any(|d| matches(&host, d));
    allowed_ok && !blocked.iter().any(|d| matches(&host, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdomains_match_lookalikes_do_not() {
        assert!(matches("example.com", "example.com"));
        assert!(matches("docs.example.com", "example.com"));
        assert!(matches("a.b.example.com", "example.com"));
        assert!(!matches("badexample.com", "example.com"));
        assert!(!matches("example.com.evil.org", "example.com"));
        assert!(!matches("com", "example.com"));
    }

    #[test]
    fn loose_filters_become_domains() {
        for raw in [
            "example.com",
            "Example.COM",
            "https://example.com/path?q",
            "*.example.com",
            ".example.com",
            "example.com.",
            "example.com:443",
            " user@example.com ",
        ] {
            assert_eq!(normalize(raw).as_deref(), Some("example.com"), "{raw}");
        }
        for bad in ["", "  ", "https://", "*.", "two words.com"] {
            assert_eq!(normalize(bad), None, "{bad}");
        }
    }

    #[test]
    fn hosts_of_urls() {
        assert_eq!(
            host("https://Docs.Example.com:8443/a?b#c").as_deref(),
            Some("docs.example.com")
        );
        assert_eq!(
            host("http://u:p@example.com./").as_deref(),
            Some("example.com")
        );
        assert_eq!(host("http://[::1]:80/").as_deref(), Some("[::1]"));
        assert_eq!(host("not a url"), None);
    }

    #[test]
    fn keep_applies_both_lists() {
        let allowed = vec!["rust-lang.org".to_string()];
        let blocked = vec!["blog.rust-lang.org".to_string()];
        assert!(keep("https://doc.rust-lang.org/book", &allowed, &blocked));
        assert!(!keep("https://blog.rust-lang.org/x", &allowed, &blocked));
        assert!(!keep("https://example.com/", &allowed, &[]));
        assert!(keep("https://example.com/", &[], &blocked));
        assert!(!keep("garbage", &allowed, &[]));
        assert!(keep("garbage", &[], &blocked));
    }

    #[test]
    fn invalid_entries_name_the_parameter() {
        let list = ["ok.org".to_string(), "  ".to_string()];
        let err = from_list(&list, "blocked_domains").unwrap_err();
        assert_eq!(
            err.message,
            "parameter 'blocked_domains[1]' must be a domain such as example.com, got '  '"
        );
        assert_eq!(
            from_list(&["https://A.org/x".to_string()], "allowed_domains").unwrap(),
            vec!["a.org"]
        );
    }
}
