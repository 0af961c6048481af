//! A glob pattern compiled for the walker: the literal directory the walk
//! starts from, then one matcher per path component (decisions 6 and
//! 16).
//!
//! POSIX semantics: `*`, `?` and bracket expressions match within one
//! component (never `/`); a name starting with `.` is matched only by a
//! component that starts with a literal `.`; `\` quotes the next character.
//! Our additions: a component that is exactly `**` matches any number of
//! directories, zero included; a trailing `**` means everything below
//! (`**/*`); a pattern ending in `/` matches directories only, printed with
//! the `/`, as POSIX glob prints them. A malformed bracket expression is an
//! error rather than literal text, so a typo never silently finds nothing.

use regex::bytes::Regex;

use super::bracket::{self, Flavor};

/// The most components a pattern may have after its leading literal ones:
/// the walker keeps its position set in a `u64`, one bit per component plus
/// one for "matched".
const MAX_COMPONENTS: usize = 63;

#[derive(Debug)]
pub struct Pattern {
    /// Where the walk starts, exactly as results are printed: `""` (the
    /// working directory, printed as nothing), `"/"`, or `path` joined with
    /// the pattern's leading literal components (`"src/tools"`).
    pub root: Vec<u8>,
    pub segs: Vec<Seg>,
    /// The pattern ended in `/`: only directories match.
    pub dir_only: bool,
}

#[derive(Debug)]
pub enum Seg {
    /// A component without wildcards: a name to look up, never to list.
    Literal(Vec<u8>),
    /// A component with `*`, `?` or `[...]`.
    Name(NameMatcher),
    /// `**`: any number of directories, not entering dot or symlinked ones.
    Globstar,
}

/// Matches one file name against one pattern component.
#[derive(Debug)]
pub struct NameMatcher {
    kind: MatchKind,
    /// The component starts with a literal `.`, so it may match dotfiles.
    dot: bool,
}

#[derive(Debug)]
enum MatchKind {
    /// `*`: the most common component, decided without a regex.
    Any,
    /// `*` followed by literal text (`*.rs`).
    Suffix(Vec<u8>),
    /// The general case, compiled twice: for names that are UTF-8, where
    /// `?` is one character, and for the rare others, matched byte by byte
    /// as POSIX fnmatch falls back to doing.
    Regex { text: Regex, bytes: Regex },
}

impl NameMatcher {
    pub fn matches(&self, name: &[u8]) -> bool {
        if name.first() == Some(&b'.') && !self.dot {
            return false;
        }
        match &self.kind {
            MatchKind::Any => true,
            MatchKind::Suffix(suffix) => name.ends_with(suffix),
            MatchKind::Regex { text, bytes } => match std::str::from_utf8(name) {
                Ok(_) => text.is_match(name),
                Err(_) => bytes.is_match(name),
            },
        }
    }

    fn compile(component: &[char]) -> Result<NameMatcher, String> {
        let dot = component.first() == Some(&'.')
            || (component.first() == Some(&'\\') && component.get(1) == Some(&'.'));
        let stars = component.iter().take_while(|&&c| c == '*').count();
        let rest = &component[stars..];
        let kind = if stars == component.len() {
            MatchKind::Any
        } else if stars > 0 && !has_wildcard(rest) {
            MatchKind::Suffix(unescape(rest))
        } else {
            MatchKind::Regex {
                text: component_regex(component, true)?,
                bytes: component_regex(component, false)?,
            }
        };
        Ok(NameMatcher { kind, dot })
    }
}

impl Pattern {
    /// Compiles `pattern` relative to `path` (docs/local-tools.md's `path/pattern`).
    /// `path` is a directory name taken literally, never a pattern; an
    /// absolute `pattern` ignores it. `Ok(None)`: the pattern is empty and
    /// matches nothing, as POSIX glob of `""` does.
    pub fn new(path: &str, pattern: &str) -> Result<Option<Pattern>, String> {
        if pattern.is_empty() {
            return Ok(None);
        }
        let (mut root, rest) = match pattern.strip_prefix('/') {
            Some(rest) => (b"/".to_vec(), rest),
            None => (base(path), pattern),
        };
        let dir_only = pattern.ends_with('/');
        let mut segs: Vec<Seg> = Vec::new();
        for component in rest.split('/').filter(|c| !c.is_empty()) {
            let chars: Vec<char> = component.chars().collect();
            let seg = if component == "**" {
                if matches!(segs.last(), Some(Seg::Globstar)) {
                    continue;
                }
                Seg::Globstar
            } else if has_wildcard(&chars) {
                Seg::Name(NameMatcher::compile(&chars)?)
            } else {
                Seg::Literal(unescape(&chars))
            };
            segs.push(seg);
        }
        // `a/**` lists everything below `a`; `a/**/` every directory from
        // `a` down, as zero-or-more directories then the final `/` say.
        if matches!(segs.last(), Some(Seg::Globstar)) && !dir_only {
            segs.push(Seg::Name(NameMatcher {
                kind: MatchKind::Any,
                dot: false,
            }));
        }
        // Leading literal components need no listing: they join the root.
        let literals = segs
            .iter()
            .take_while(|s| matches!(s, Seg::Literal(_)))
            .count();
        for seg in segs.drain(..literals) {
            if let Seg::Literal(name) = seg {
                root = join(&root, &name);
            }
        }
        if segs.len() > MAX_COMPONENTS {
            return Err(format!(
                "too many components after the first wildcard ({}, at most {MAX_COMPONENTS})",
                segs.len()
            ));
        }
        Ok(Some(Pattern {
            root,
            segs,
            dir_only,
        }))
    }
}

/// `path` as the prefix of every result: trailing slashes dropped (`src/`
/// prints `src/a.c`), `/` kept.
fn base(path: &str) -> Vec<u8> {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() && !path.is_empty() {
        b"/".to_vec()
    } else {
        trimmed.as_bytes().to_vec()
    }
}

/// `dir/name` as printed; `dir` empty means the working directory.
pub fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(dir.len() + 1 + name.len());
    out.extend_from_slice(dir);
    if !dir.is_empty() && !dir.ends_with(b"/") {
        out.push(b'/');
    }
    out.extend_from_slice(name);
    out
}

/// Whether a component has an unquoted `*`, `?` or `[`.
fn has_wildcard(component: &[char]) -> bool {
    let mut i = 0;
    while i < component.len() {
        match component[i] {
            '\\' => i += 2,
            '*' | '?' | '[' => return true,
            _ => i += 1,
        }
    }
    false
}

/// The text of a component without wildcards: `\x` is `x`; a lone trailing
/// `\` stands for itself.
fn unescape(component: &[char]) -> Vec<u8> {
    let mut out = String::new();
    let mut chars = component.iter();
    while let Some(&c) = chars.next() {
        out.push(if c == '\\' {
            *chars.next().unwrap_or(&'\\')
        } else {
            c
        });
    }
    out.into_bytes()
}

/// The regex for a whole component, anchored at both ends; `*` and `?`
/// stand for characters when `utf8`, for bytes otherwise.
fn component_regex(component: &[char], utf8: bool) -> Result<Regex, String> {
    let text = component_regex_text(component, utf8)?;
    Regex::new(&text).map_err(|e| format!("cannot compile the component: {e}"))
}

fn component_regex_text(component: &[char], utf8: bool) -> Result<String, String> {
    let any = if utf8 { "(?s:.)" } else { "(?s-u:.)" };
    let mut out = String::from(r"\A(?:");
    let mut i = 0;
    let mut after_star = false;
    while i < component.len() {
        let star = component[i] == '*';
        match component[i] {
            '*' => {
                // `**` inside a component is just `*`.
                if !after_star {
                    out.push_str(any);
                    out.push('*');
                }
                i += 1;
            }
            '?' => {
                out.push_str(any);
                i += 1;
            }
            '[' => {
                let (class, next) = bracket::translate(component, i, Flavor::Glob)?;
                out.push_str(&class);
                i = next;
            }
            c => {
                let literal = match (c, component.get(i + 1)) {
                    ('\\', Some(&quoted)) => {
                        i += 1;
                        quoted
                    }
                    _ => c,
                };
                let mut buf = [0u8; 4];
                out.push_str(&regex::escape(literal.encode_utf8(&mut buf)));
                i += 1;
            }
        }
        after_star = star;
    }
    out.push_str(r")\z");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(component: &str) -> NameMatcher {
        let chars: Vec<char> = component.chars().collect();
        NameMatcher::compile(&chars).unwrap()
    }

    fn glob(path: &str, pattern: &str) -> Pattern {
        Pattern::new(path, pattern).unwrap().unwrap()
    }

    fn shape(g: &Pattern) -> Vec<String> {
        g.segs
            .iter()
            .map(|s| match s {
                Seg::Literal(l) => format!("lit:{}", String::from_utf8_lossy(l)),
                Seg::Name(_) => "name".to_string(),
                Seg::Globstar => "**".to_string(),
            })
            .collect()
    }

    #[test]
    fn wildcards_match_within_a_name() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "abc", true),
            ("*.txt", "file1.txt", true),
            ("*.txt", "file1.txtx", false),
            ("a*c", "abbbc", true),
            ("a*c", "ab", false),
            ("?", "é", true),
            ("?", "ab", false),
            ("a?c", "abc", true),
            ("[abc]x", "bx", true),
            ("[!abc]x", "bx", false),
            ("[^abc]x", "dx", true),
            ("[a-c]*", "cat", true),
            ("[[:digit:]]*", "7up", true),
            ("[[:digit:]]*", "up", false),
            (r"\*", "*", true),
            (r"\*", "a", false),
            (r"x\[y*", "x[yz", true),
            ("**", "anything", true),
            ("a**b", "axxb", true),
            ("*.{c,h}", "a.c", false),
            ("*.{c,h}", "a.{c,h}", true),
            ("*", "", true),
        ];
        for &(pattern, name, expected) in cases {
            assert_eq!(
                matcher(pattern).matches(name.as_bytes()),
                expected,
                "{pattern} on {name}"
            );
        }
    }

    #[test]
    fn names_that_are_not_utf8_still_match() {
        assert!(matcher("*").matches(b"a\xffb"));
        assert!(matcher("a*b").matches(b"a\xffb"));
        assert!(matcher("a?b").matches(b"a\xffb"));
        assert!(matcher("*.txt").matches(b"\xfe.txt"));
        assert!(matcher("a?*").matches(b"a\n"));
        assert!(!matcher("??").matches("é".as_bytes()), "one character");
        assert!(
            matcher("??").matches(b"\xc3x"),
            "a lone byte, as fnmatch falls back"
        );
    }

    #[test]
    fn a_leading_dot_must_be_literal() {
        for pattern in ["*", "?*", "[.]*", "*rc", "[!a]*", "**"] {
            assert!(!matcher(pattern).matches(b".bashrc"), "{pattern}");
        }
        for pattern in [".*", ".b*", r"\.*", ".bash?c"] {
            assert!(matcher(pattern).matches(b".bashrc"), "{pattern}");
        }
        assert!(
            matcher("a*").matches(b"a.b"),
            "a dot inside a name is plain"
        );
    }

    #[test]
    fn translation_text() {
        let text = |p: &str| component_regex_text(&p.chars().collect::<Vec<_>>(), true).unwrap();
        assert_eq!(text("a*b"), r"\A(?:a(?s:.)*b)\z");
        assert_eq!(text("a**b"), r"\A(?:a(?s:.)*b)\z");
        assert_eq!(text("a.?"), r"\A(?:a\.(?s:.))\z");
        assert_eq!(text("[!x]+"), r"\A(?:[^x]\+)\z");
        assert_eq!(text(r"\[x"), r"\A(?:\[x)\z");
        assert_eq!(text(r"\**"), r"\A(?:\*(?s:.)*)\z");
        let bytes = |p: &str| component_regex_text(&p.chars().collect::<Vec<_>>(), false).unwrap();
        assert_eq!(bytes("a?*"), r"\A(?:a(?s-u:.)(?s-u:.)*)\z");
    }

    #[test]
    fn fast_paths_are_chosen() {
        assert!(matches!(matcher("*").kind, MatchKind::Any));
        assert!(matches!(matcher("***").kind, MatchKind::Any));
        assert!(matches!(&matcher("*.rs").kind, MatchKind::Suffix(s) if s == b".rs"));
        assert!(matches!(&matcher(r"*\*").kind, MatchKind::Suffix(s) if s == b"*"));
        assert!(matches!(matcher("*.r?").kind, MatchKind::Regex { .. }));
        assert!(matches!(matcher("a*").kind, MatchKind::Regex { .. }));
    }

    #[test]
    fn leading_literals_join_the_root() {
        let g = glob("/tmp", "*.txt");
        assert_eq!(
            (g.root.as_slice(), shape(&g)),
            (&b"/tmp"[..], vec!["name".into()])
        );
        let g = glob("", "src/tools/*.rs");
        assert_eq!(g.root, b"src/tools");
        let g = glob(".", "**/*.c");
        assert_eq!(
            (g.root.as_slice(), shape(&g)),
            (&b"."[..], vec!["**".into(), "name".into()])
        );
        let g = glob("src/", "*/mod.rs");
        assert_eq!(
            (g.root.as_slice(), shape(&g)),
            (&b"src"[..], vec!["name".into(), "lit:mod.rs".into()])
        );
        let g = glob("", "a.c");
        assert_eq!((g.root.as_slice(), g.segs.len()), (&b"a.c"[..], 0));
        let g = glob("", r"x\[y");
        assert_eq!(g.root, b"x[y");
    }

    #[test]
    fn path_is_literal_and_absolute_patterns_ignore_it() {
        let g = glob("app/[slug]", "*.tsx");
        assert_eq!(g.root, b"app/[slug]");
        let g = glob("/tmp", "/etc/*.conf");
        assert_eq!(g.root, b"/etc");
        let g = glob("/", "etc");
        assert_eq!(g.root, b"/etc");
        let g = glob("//", "*");
        assert_eq!(g.root, b"/");
        let g = glob("", "/");
        assert_eq!(
            (g.root.as_slice(), g.segs.len(), g.dir_only),
            (&b"/"[..], 0, true)
        );
    }

    #[test]
    fn separators_collapse_and_globstars_merge() {
        let g = glob("", "a//**/**/b/");
        assert_eq!(g.root, b"a");
        assert_eq!(shape(&g), vec!["**", "lit:b"]);
        assert!(g.dir_only);
    }

    #[test]
    fn trailing_globstar_means_everything_below() {
        assert_eq!(shape(&glob("", "src/**")), vec!["**", "name"]);
        assert_eq!(shape(&glob("", "src/**/")), vec!["**"]);
    }

    #[test]
    fn empty_and_malformed_patterns() {
        assert!(Pattern::new("/tmp", "").unwrap().is_none());
        assert_eq!(Pattern::new("", "x[").unwrap_err(), "unclosed '['");
        assert_eq!(Pattern::new("", "a/[b/c]").unwrap_err(), "unclosed '['");
        assert_eq!(
            Pattern::new("", "[z-a]").unwrap_err(),
            "range 'z-a' is reversed"
        );
        let deep = vec!["*"; 70].join("/");
        assert!(Pattern::new("", &deep)
            .unwrap_err()
            .starts_with("too many components"));
    }

    #[test]
    fn join_prints_paths_as_given() {
        assert_eq!(join(b"", b"a"), b"a");
        assert_eq!(join(b"/", b"a"), b"/a");
        assert_eq!(join(b"src", b"a"), b"src/a");
        assert_eq!(join(b".", b"a"), b"./a");
    }
}
