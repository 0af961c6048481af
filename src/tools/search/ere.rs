//! grep's patterns: a POSIX extended regular expression read as the
//! `regex` crate must read it to give POSIX's answers (decision 40, and
//! grep's module paragraph), compiled for line matching, with the literal
//! text every match holds, which lets the search skip lines without
//! running the regex.

use memchr::memmem;
use regex::bytes::{Regex, RegexBuilder};

use super::{translate_bracket, Flavor};
use crate::error::{ErrorCode, ToolError};

fn invalid_pattern(reason: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidPattern,
        format!("Invalid pattern: {reason}"),
    )
}

/// A compiled pattern: the regex, and a piece of literal text every match
/// contains, when the pattern has one worth searching for.
#[derive(Clone, Debug)]
pub(crate) struct Matcher {
    pub regex: Regex,
    /// Lines without it cannot match: the search looks for it (memmem) and
    /// runs the regex only on the lines that hold it. The regex's own
    /// prefilter knows only a match's first bytes (`fn ` of
    /// `fn [a-z_]+_mut\(`, in every other line of Rust), this one the
    /// rarest-looking (longest) run of literal text anywhere (`_mut(`).
    pub literal: Option<memmem::Finder<'static>>,
}

/// Compiles a POSIX ERE for line matching.
pub(crate) fn compile(pattern: &str) -> Result<Matcher, ToolError> {
    let translated = translate_ere(pattern).map_err(invalid_pattern)?;
    let regex = RegexBuilder::new(&translated)
        .multi_line(true)
        .build()
        .map_err(|e| invalid_pattern(regex_reason(&e)))?;
    let literal = required_literal(pattern)
        .filter(|l| l.len() >= MIN_LITERAL)
        .map(|l| memmem::Finder::new(l.as_bytes()).into_owned());
    Ok(Matcher { regex, literal })
}

/// The shortest literal worth a search of its own: shorter ones are too
/// common to skip many lines.
const MIN_LITERAL: usize = 3;

/// The longest run of literal characters that every match of the ERE
/// `pattern` contains, or `None` when that cannot be told simply: an
/// alternation at the top level or a flag group (`(?i)`) gives none; text
/// inside groups, brackets, classes and anything a quantifier may repeat or
/// leave out does not count.
pub(crate) fn required_literal(pattern: &str) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut best = String::new();
    let mut run = String::new();
    let mut depth = 0usize;
    let mut i = 0;
    let end_run = |run: &mut String, best: &mut String| {
        if run.len() > best.len() {
            *best = std::mem::take(run);
        }
        run.clear();
    };
    while i < chars.len() {
        // One element: a literal character, or something else; and where
        // the next one starts.
        let (literal, next) = match chars[i] {
            '\\' => {
                let escaped = *chars.get(i + 1)?;
                if escaped.is_ascii_punctuation() {
                    (Some(escaped), i + 2)
                } else {
                    (None, i + 2 + escape_rest(&chars[i + 2..], escaped))
                }
            }
            '[' => (None, translate_bracket(&chars, i, Flavor::Ere).ok()?.1),
            '(' if chars.get(i + 1) == Some(&'?') => return None,
            '(' => {
                depth += 1;
                (None, i + 1)
            }
            ')' if depth > 0 => {
                depth -= 1;
                (None, i + 1)
            }
            '|' if depth == 0 => return None,
            '{' => match interval(&chars[i..]) {
                Some((_, len)) => (None, i + len),
                None => (Some('{'), i + 1),
            },
            '.' | '^' | '$' | '*' | '+' | '?' | '|' | '\n' => (None, i + 1),
            c => (Some(c), i + 1),
        };
        let quantifier = match chars.get(next) {
            Some('*' | '?') => Some(true),
            Some('+') => Some(false),
            Some('{') => interval(&chars[next..]).map(|_| true),
            _ => None,
        };
        match (literal, depth, quantifier) {
            // Required once, then repeated: it ends the run.
            (Some(c), 0, Some(false)) => {
                run.push(c);
                end_run(&mut run, &mut best);
            }
            (Some(c), 0, None) => run.push(c),
            _ => end_run(&mut run, &mut best),
        }
        i = next;
    }
    end_run(&mut run, &mut best);
    Some(best)
}

/// How many characters after `\X` belong to the escape (as
/// `translate_ere` reads them): `\p{Greek}`, `\x41`, `\u00e9`, ...
fn escape_rest(rest: &[char], escaped: char) -> usize {
    if matches!(escaped, 'p' | 'P' | 'x' | 'u' | 'U' | 'b' | 'B') && rest.first() == Some(&'{') {
        return rest
            .iter()
            .position(|&c| c == '}')
            .map_or(0, |close| close + 1);
    }
    let more = match escaped {
        'p' | 'P' => 1,
        'x' => 2,
        'u' => 4,
        'U' => 8,
        _ => 0,
    };
    more.min(rest.len())
}

/// The short reason of a `regex` error: its last line, without the pattern
/// and caret drawing. An unclosed group gets POSIX's words, as the spec
/// shows them.
fn regex_reason(err: &regex::Error) -> String {
    match err {
        regex::Error::Syntax(text) => {
            let last = text.lines().last().unwrap_or_default();
            match last.strip_prefix("error: ").unwrap_or(last) {
                "unclosed group" => r"Unmatched ( or \(".to_string(),
                reason => reason.to_string(),
            }
        }
        regex::Error::CompiledTooBig(limit) => {
            format!("the compiled pattern is larger than the limit of {limit} bytes")
        }
        other => other.to_string(),
    }
}

/// POSIX ERE to `regex` syntax (see the module comment for what changes).
pub(crate) fn translate_ere(pattern: &str) -> Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut depth = 0usize;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let Some(&escaped) = chars.get(i + 1) else {
                    return Err("Trailing backslash".to_string());
                };
                let mut escape = format!("\\{escaped}");
                i += 2;
                // `\p{L}`, `\x{41}`, `\b{start}`: the braces belong to the escape.
                if matches!(escaped, 'p' | 'P' | 'x' | 'u' | 'U' | 'b' | 'B')
                    && chars.get(i) == Some(&'{')
                {
                    if let Some(close) = chars[i..].iter().position(|&c| c == '}') {
                        escape.extend(&chars[i..=i + close]);
                        i += close + 1;
                    }
                } else {
                    // `\pL`, `\x41`, `\u00e9`, `\U0001F600`: so many more
                    // characters belong to the escape.
                    let more = match escaped {
                        'p' | 'P' => 1,
                        'x' => 2,
                        'u' => 4,
                        'U' => 8,
                        _ => 0,
                    };
                    let end = (i + more).min(chars.len());
                    escape.extend(&chars[i..end]);
                    i = end;
                }
                // Classes and character codes that could match a newline
                // (`\s`, `\W`, `\x0A`, `\n`, ...) match any but it.
                if matches!(
                    escaped,
                    's' | 'S' | 'w' | 'W' | 'd' | 'D' | 'p' | 'P' | 'x' | 'u' | 'U' | 'n'
                ) {
                    escape = no_newline(&escape);
                }
                out.push_str(&escape);
            }
            '[' => {
                let (class, next) = translate_bracket(&chars, i, Flavor::Ere)?;
                out.push_str(&no_newline(&class));
                i = next;
            }
            '\n' => {
                out.push_str(&no_newline("\\n"));
                i += 1;
            }
            '(' if chars.get(i + 1) == Some(&'?') => {
                let mut flags = chars[i + 2..].iter().take_while(|&&c| c != ')' && c != ':');
                if flags.any(|&c| c == 's') {
                    return Err(
                        "the s flag (`.` matching a newline) is not supported: grep matches one line at a time"
                            .to_string(),
                    );
                }
                // `(?i)` and `(?i:...)` both close with a `)`.
                depth += 1;
                out.push_str("(?");
                i += 2;
            }
            '(' => {
                depth += 1;
                out.push('(');
                i += 1;
            }
            ')' => {
                if depth == 0 {
                    out.push_str(r"\)");
                } else {
                    depth -= 1;
                    out.push(')');
                }
                i += 1;
            }
            '{' => match interval(&chars[i..]) {
                Some((text, len)) => {
                    out.push_str(&text);
                    i += len;
                }
                None => {
                    out.push_str(r"\{");
                    i += 1;
                }
            },
            '}' => {
                out.push_str(r"\}");
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// `class` (a bracket expression or class escape) without the newline:
/// matching is line by line, and a match that could run across lines would
/// make the search quadratic on a file of many short lines.
fn no_newline(class: &str) -> String {
    format!("[{class}&&[^\\n]]")
}

/// An interval `{n}`, `{n,}`, `{n,m}` or `{,m}` at the start of `chars`:
/// its `regex` text and its length.
fn interval(chars: &[char]) -> Option<(String, usize)> {
    let close = chars.iter().position(|&c| c == '}')?;
    let body: String = chars[1..close].iter().collect();
    let (low, high) = match body.split_once(',') {
        Some((low, high)) => (low, Some(high)),
        None => (body.as_str(), None),
    };
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    let valid = digits(low)
        && high.is_none_or(digits)
        && (!low.is_empty() || high.is_some_and(|h| !h.is_empty()));
    if !valid {
        return None;
    }
    let low = if low.is_empty() { "0" } else { low };
    let text = match high {
        Some(high) => format!("{{{low},{high}}}"),
        None => format!("{{{low}}}"),
    };
    Some((text, close + 1))
}
