//! Resolving a link against the URL of the page it is on (RFC 3986,
//! section 5.2), on strings: the reference keeps every character as the
//! page wrote it (nothing percent-decoded or re-encoded), only the parts
//! taken from the base and the dot segments of the path change. Used for
//! the links and images of a converted page and for redirect `Location`s.

use std::borrow::Cow;

/// `reference` made absolute against `base` (an absolute URL). A reference
/// that has a scheme of its own is returned as it is.
pub fn resolve(base: &str, reference: &str) -> String {
    if scheme_of(reference).is_some() {
        return reference.to_string();
    }
    let Some(base) = Parts::of(base) else {
        return reference.to_string();
    };
    if let Some(rest) = reference.strip_prefix("//") {
        let (authority, tail) = split_authority(rest);
        let (path, after) = split_path(tail);
        return format!("{}://{authority}{}{after}", base.scheme, remove_dots(path));
    }
    let (path, after) = split_path(reference);
    let path = if path.is_empty() {
        if !after.starts_with('?') {
            return format!("{}{}{after}", base.origin(), base.path_and_query());
        }
        Cow::Borrowed(base.path)
    } else if path.starts_with('/') {
        remove_dots(path)
    } else {
        let dir = match base.path.rfind('/') {
            Some(i) => &base.path[..=i],
            None => "/",
        };
        Cow::Owned(remove_dots(&format!("{dir}{path}")).into_owned())
    };
    // Put together in one allocation: a page resolves every link.
    let mut url = String::with_capacity(
        base.scheme.len() + 3 + base.authority.len() + path.len() + after.len(),
    );
    for part in [base.scheme, "://", base.authority, &path, after] {
        url.push_str(part);
    }
    url
}

/// The scheme of an absolute URL (`https` of `https://...`, `mailto` of
/// `mailto:x`), as written.
pub fn scheme_of(url: &str) -> Option<&str> {
    // Read up to the first byte a scheme cannot hold, which must be its
    // `:`: a relative link is not scanned to its end for one.
    let bytes = url.as_bytes();
    if !bytes.first()?.is_ascii_alphabetic() {
        return None;
    }
    let colon = bytes
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')))?;
    (bytes[colon] == b':').then(|| &url[..colon])
}

struct Parts<'a> {
    scheme: &'a str,
    authority: &'a str,
    path: &'a str,
    query: &'a str,
}

impl<'a> Parts<'a> {
    fn of(url: &'a str) -> Option<Self> {
        let scheme = scheme_of(url)?;
        let rest = url[scheme.len() + 1..].strip_prefix("//")?;
        let (authority, tail) = split_authority(rest);
        let tail = tail.split('#').next().unwrap_or("");
        let (path, query) = match tail.find('?') {
            Some(i) => (&tail[..i], &tail[i..]),
            None => (tail, ""),
        };
        Some(Parts {
            scheme,
            authority,
            path: if path.is_empty() { "/" } else { path },
            query,
        })
    }

    fn origin(&self) -> String {
        format!("{}://{}", self.scheme, self.authority)
    }

    fn path_and_query(&self) -> String {
        format!("{}{}", self.path, self.query)
    }
}

fn split_authority(rest: &str) -> (&str, &str) {
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    rest.split_at(end)
}

/// A reference's path and what follows it (`?query#fragment`).
fn split_path(reference: &str) -> (&str, &str) {
    let end = reference.find(['?', '#']).unwrap_or(reference.len());
    reference.split_at(end)
}

/// The path with its `.` and `..` segments applied.
fn remove_dots(path: &str) -> Cow<'_, str> {
    if !path.contains("/.") && !path.starts_with('.') {
        return Cow::Borrowed(path);
    }
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len() - 1;
    for (i, segment) in segments.iter().enumerate() {
        match *segment {
            "." => {
                if i == last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if i == last {
                    out.push("");
                }
            }
            other => out.push(other),
        }
    }
    let joined = out.join("/");
    Cow::Owned(if path.starts_with('/') && !joined.starts_with('/') {
        format!("/{joined}")
    } else {
        joined
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_3986_examples() {
        let base = "http://a/b/c/d;p?q";
        for (reference, want) in [
            ("g:h", "g:h"),
            ("g", "http://a/b/c/g"),
            ("./g", "http://a/b/c/g"),
            ("g/", "http://a/b/c/g/"),
            ("/g", "http://a/g"),
            ("//g", "http://g"),
            ("?y", "http://a/b/c/d;p?y"),
            ("g?y", "http://a/b/c/g?y"),
            ("#s", "http://a/b/c/d;p?q#s"),
            ("g#s", "http://a/b/c/g#s"),
            (";x", "http://a/b/c/;x"),
            ("", "http://a/b/c/d;p?q"),
            (".", "http://a/b/c/"),
            ("./", "http://a/b/c/"),
            ("..", "http://a/b/"),
            ("../", "http://a/b/"),
            ("../g", "http://a/b/g"),
            ("../..", "http://a/"),
            ("../../g", "http://a/g"),
            ("../../../g", "http://a/g"),
            ("/./g", "http://a/g"),
            ("/../g", "http://a/g"),
            ("g.", "http://a/b/c/g."),
            ("..g", "http://a/b/c/..g"),
            ("./g/.", "http://a/b/c/g/"),
            ("g/./h", "http://a/b/c/g/h"),
            ("g/../h", "http://a/b/c/h"),
        ] {
            assert_eq!(resolve(base, reference), want, "{reference}");
        }
    }

    #[test]
    fn references_keep_their_characters() {
        let base = "https://example.com/docs/page.html";
        assert_eq!(
            resolve(base, "a%20b/c d?x=%2F&y=é#frag"),
            "https://example.com/docs/a%20b/c d?x=%2F&y=é#frag"
        );
        assert_eq!(resolve("https://example.com", "x"), "https://example.com/x");
        assert_eq!(
            resolve("https://example.com:8443/a/", "//cdn.example.org/i.png"),
            "https://cdn.example.org/i.png"
        );
        assert_eq!(resolve(base, "mailto:me@x.org"), "mailto:me@x.org");
        assert_eq!(scheme_of("javascript:void(0)"), Some("javascript"));
        assert_eq!(scheme_of("/a:b"), None);
        assert_eq!(scheme_of("1a:b"), None);
    }
}
