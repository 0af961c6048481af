//! Front matter: the `---` block of YAML at the head of a command, skill or
//! agent file, read into a JSON map, and the body after it.
//!
//! These files use a small part of YAML: top-level `key: value` pairs whose
//! values are plain, quoted or block (`|`, `>`) strings, booleans, numbers,
//! flow lists (`[a, b]`), block lists (`- a`) and one nested map of such
//! scalars (a skill's `metadata`). This reader takes exactly that part and
//! names the field and line of anything else, rather than bring in a YAML
//! crate (the maintained ones are large, and the common one is deprecated)
//! whose anchors, tags and documents none of these formats use
//! (decision 119).

use serde_json::{Map, Number, Value};

/// Why front matter could not be read: the field (when one is to blame),
/// its line in the file (1-based), and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broken {
    pub field: Option<String>,
    pub line: usize,
    pub what: String,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "front matter, line {}", self.line)?;
        if let Some(field) = &self.field {
            write!(f, ", field '{field}'")?;
        }
        write!(f, ": {}", self.what)
    }
}

/// Splits `text` into its front matter and body. A file that does not
/// open with a `---` line has no front matter: all of it is the body.
pub fn split(text: &str) -> Result<(Map<String, Value>, &str), Broken> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(first) = text.lines().next() else {
        return Ok((Map::new(), text));
    };
    if first.trim_end() != "---" {
        return Ok((Map::new(), text));
    }
    let mut offset = first.len() + newline_len(text, first.len());
    let mut lines = Vec::new();
    for (index, line) in text[offset..].split_inclusive('\n').enumerate() {
        let bare = line.trim_end_matches(['\n', '\r']);
        offset += line.len();
        if bare.trim_end() == "---" || bare.trim_end() == "..." {
            return Ok((parse(&lines)?, &text[offset..]));
        }
        lines.push((index + 2, bare));
    }
    Err(Broken {
        field: None,
        line: 1,
        what: "the block that opens with '---' is never closed by another '---' line".into(),
    })
}

fn newline_len(text: &str, at: usize) -> usize {
    if text[at..].starts_with("\r\n") {
        2
    } else if text[at..].starts_with('\n') {
        1
    } else {
        0
    }
}

/// A line of the block: its number and text.
type Line<'a> = (usize, &'a str);

/// Reads the block's lines into a map.
fn parse(lines: &[Line<'_>]) -> Result<Map<String, Value>, Broken> {
    let mut map = Map::new();
    let mut at = 0;
    while at < lines.len() {
        let (number, line) = lines[at];
        at += 1;
        if skippable(line) {
            continue;
        }
        if indent(line) > 0 {
            return Err(broken(
                None,
                number,
                "an indented line where a new field was expected",
            ));
        }
        let (key, rest) = key_value(line, number)?;
        let start = at;
        while at < lines.len() && (skippable(lines[at].1) || indent(lines[at].1) > 0) {
            at += 1;
        }
        let value = value(&key, rest, &lines[start..at], number)?;
        if map.insert(key.clone(), value).is_some() {
            return Err(broken(Some(&key), number, "the field is given twice"));
        }
    }
    Ok(map)
}

fn broken(field: Option<&str>, line: usize, what: &str) -> Broken {
    Broken {
        field: field.map(str::to_string),
        line,
        what: what.to_string(),
    }
}

fn skippable(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// `key: rest` of one line.
fn key_value(line: &str, number: usize) -> Result<(String, &str), Broken> {
    if line.starts_with('\t') {
        return Err(broken(None, number, "a tab where YAML wants spaces"));
    }
    let (key, rest) = if let Some(quoted) = line.strip_prefix('"').or(line.strip_prefix('\'')) {
        let quote = &line[..1];
        let end = quoted
            .find(quote)
            .ok_or_else(|| broken(None, number, "a quoted key that is never closed"))?;
        let rest = quoted[end + 1..].trim_start();
        let rest = rest
            .strip_prefix(':')
            .ok_or_else(|| broken(Some(&quoted[..end]), number, "a key without ':'"))?;
        (quoted[..end].to_string(), rest)
    } else {
        let colon = line
            .find(": ")
            .or_else(|| line.ends_with(':').then(|| line.len() - 1))
            .ok_or_else(|| {
                broken(
                    None,
                    number,
                    &format!("'{}' is not a 'key: value' line", clip(line)),
                )
            })?;
        (line[..colon].trim_end().to_string(), &line[colon + 1..])
    };
    if key.is_empty() {
        return Err(broken(None, number, "a field without a name"));
    }
    Ok((key, rest))
}

fn clip(line: &str) -> String {
    crate::host::text::clip(line.trim(), 40)
}

/// The value of `key`: `rest` on its own line, or the indented lines
/// beneath it.
fn value(key: &str, rest: &str, below: &[Line<'_>], number: usize) -> Result<Value, Broken> {
    let rest = strip_comment(rest).trim();
    let below: Vec<Line<'_>> = below
        .iter()
        .copied()
        .filter(|(_, l)| !l.trim().is_empty())
        .collect();
    if let Some(style) = rest.strip_prefix('|').or(rest.strip_prefix('>')) {
        if !matches!(style, "" | "-" | "+") {
            return Err(broken(
                Some(key),
                number,
                "a block scalar with an indentation number",
            ));
        }
        let folded = rest.starts_with('>');
        return Ok(Value::String(block_scalar(&below, folded, style)));
    }
    if rest.is_empty() {
        let Some(&(first, line)) = below.iter().find(|(_, l)| !skippable(l)) else {
            return Ok(Value::Null);
        };
        if line.trim_start().starts_with("- ") || line.trim() == "-" {
            return block_list(key, &below);
        }
        return nested_map(key, &below, first);
    }
    let mut text = rest.to_string();
    // A plain scalar may go on over indented lines, folded with spaces.
    for (n, line) in &below {
        if skippable(line) {
            continue;
        }
        if rest.starts_with(['"', '\'', '[', '{']) {
            return Err(broken(
                Some(key),
                *n,
                "a quoted or bracketed value spread over lines",
            ));
        }
        text.push(' ');
        text.push_str(strip_comment(line).trim());
    }
    scalar(key, &text, number)
}

/// `|` keeps the lines; `>` folds them into one. `-` drops the final
/// newline, `+` keeps every trailing one, plain keeps one.
fn block_scalar(lines: &[Line<'_>], folded: bool, chomp: &str) -> String {
    let depth = lines.iter().map(|(_, l)| indent(l)).min().unwrap_or(0);
    let body: Vec<&str> = lines
        .iter()
        .map(|(_, l)| l.get(depth..).unwrap_or(""))
        .collect();
    let mut text = if folded {
        body.join(" ")
    } else {
        body.join("\n")
    };
    if !text.is_empty() && chomp != "-" {
        text.push('\n');
    }
    text
}

fn block_list(key: &str, lines: &[Line<'_>]) -> Result<Value, Broken> {
    let mut items = Vec::new();
    for (n, line) in lines {
        if skippable(line) {
            continue;
        }
        let item = line.trim_start();
        let item = item
            .strip_prefix("- ")
            .or((item == "-").then_some(""))
            .ok_or_else(|| broken(Some(key), *n, "a list item without '- '"))?;
        items.push(scalar(key, strip_comment(item).trim(), *n)?);
    }
    Ok(Value::Array(items))
}

fn nested_map(key: &str, lines: &[Line<'_>], first: usize) -> Result<Value, Broken> {
    let depth = lines
        .iter()
        .find(|(_, l)| !skippable(l))
        .map_or(0, |(_, l)| indent(l));
    let mut map = Map::new();
    for (n, line) in lines {
        if skippable(line) {
            continue;
        }
        if indent(line) != depth {
            return Err(broken(
                Some(key),
                *n,
                "nesting deeper than one map (not used by these files)",
            ));
        }
        let (inner, rest) = key_value(&line[depth..], *n)?;
        let dotted = format!("{key}.{inner}");
        let rest = strip_comment(rest).trim();
        if rest.is_empty() {
            return Err(broken(Some(&dotted), *n, "nesting deeper than one map"));
        }
        let value = scalar(&dotted, rest, *n)?;
        if map.insert(inner, value).is_some() {
            return Err(broken(Some(&dotted), *n, "the field is given twice"));
        }
    }
    if map.is_empty() {
        return Err(broken(Some(key), first, "no value"));
    }
    Ok(Value::Object(map))
}

/// A `#` comment starts after a space, outside quotes.
fn strip_comment(text: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (i, c) in text.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' && previous.is_whitespace() => return &text[..i],
            None => {}
        }
        previous = c;
    }
    text
}

/// One scalar or flow list.
fn scalar(key: &str, text: &str, line: usize) -> Result<Value, Broken> {
    let bad = |what: &str| Err(broken(Some(key), line, what));
    if let Some(inner) = text.strip_prefix('[') {
        let Some(inner) = inner.strip_suffix(']') else {
            return bad("a list that opens with '[' and is not closed by ']' on its line");
        };
        let mut items = Vec::new();
        for part in split_flow(inner).map_err(|w| broken(Some(key), line, w))? {
            if !part.trim().is_empty() {
                items.push(scalar(key, part.trim(), line)?);
            }
        }
        return Ok(Value::Array(items));
    }
    if text.starts_with('{') {
        return bad("a flow map ('{...}'): write its fields on lines of their own");
    }
    if let Some(inner) = text.strip_prefix('"') {
        return match double_quoted(inner) {
            Some(s) => Ok(Value::String(s)),
            None => bad("a double-quoted string that is not closed or has a bad escape"),
        };
    }
    if let Some(inner) = text.strip_prefix('\'') {
        let Some(inner) = inner.strip_suffix('\'') else {
            return bad("a single-quoted string that is not closed");
        };
        return Ok(Value::String(inner.replace("''", "'")));
    }
    if text.starts_with(['&', '*', '!']) {
        return bad("anchors, aliases and tags are not read here");
    }
    Ok(match text {
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        "null" | "Null" | "NULL" | "~" => Value::Null,
        _ => number(text).unwrap_or_else(|| Value::String(text.to_string())),
    })
}

fn number(text: &str) -> Option<Value> {
    if let Ok(n) = text.parse::<i64>() {
        return Some(Value::Number(n.into()));
    }
    let looks = text
        .bytes()
        .all(|b| b.is_ascii_digit() || b".-+eE".contains(&b))
        && text.bytes().any(|b| b.is_ascii_digit());
    looks
        .then(|| text.parse::<f64>().ok().and_then(Number::from_f64))
        .flatten()
        .map(Value::Number)
}

/// The items of a flow list, split at commas outside quotes.
fn split_flow(text: &str) -> Result<Vec<&str>, &'static str> {
    let mut parts = Vec::new();
    let mut quote = None;
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match quote {
            Some('"') if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '[' || c == '{' => return Err("a list or map inside a flow list"),
            None if c == ',' => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            None => {}
        }
    }
    if quote.is_some() {
        return Err("a quoted string in the list is not closed");
    }
    parts.push(&text[start..]);
    Ok(parts)
}

/// The text of `"..."` after its opening quote, escapes read; None when
/// it is not closed at the end or an escape is unknown.
fn double_quoted(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return chars.as_str().trim().is_empty().then_some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '"' => out.push('"'),
                '\\' => out.push('\\'),
                '/' => out.push('/'),
                ' ' => out.push(' '),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                _ => return None,
            },
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(text: &str) -> Value {
        Value::Object(split(text).unwrap().0)
    }

    fn error(text: &str) -> String {
        split(text).unwrap_err().to_string()
    }

    #[test]
    fn no_front_matter_is_all_body() {
        assert_eq!(split("Hello\n---\n").unwrap(), (Map::new(), "Hello\n---\n"));
        assert_eq!(split("").unwrap(), (Map::new(), ""));
    }

    #[test]
    fn the_forms_these_files_use() {
        let text = "---\r\nname: pdf-tools\ndescription: Fill in PDF forms; use when\n  the user names a form. # why\n\
quoted: \"a: b \\\"c\\\" \\u00e9\"\nsingle: 'it''s'\nallowed-tools: [Read, \"Bash(git *)\", ]\n\
tools:\n  - Read\n  - Grep\n# a comment\nmetadata:\n  version: 1.2\n  author: me\n\
hint: <file> [mode]\nflag: true\nnone: ~\nempty:\ncount: 3\nlong: |\n  one\n    two\n\n  three\n\
folded: >-\n  a\n  b\n---\nBody $1\n";
        let (map, body) = split(text).unwrap();
        assert_eq!(body, "Body $1\n");
        assert_eq!(
            Value::Object(map),
            json!({
                "name": "pdf-tools",
                "description": "Fill in PDF forms; use when the user names a form.",
                "quoted": "a: b \"c\" é",
                "single": "it's",
                "allowed-tools": ["Read", "Bash(git *)"],
                "tools": ["Read", "Grep"],
                "metadata": {"version": 1.2, "author": "me"},
                "hint": "<file> [mode]",
                "flag": true,
                "none": null,
                "empty": null,
                "count": 3,
                "long": "one\n  two\nthree\n",
                "folded": "a b"
            })
        );
        assert_eq!(meta("---\n---\nx"), json!({}));
        assert_eq!(
            meta("---\nurl: http://x.y/z#frag\n...\n"),
            json!({"url": "http://x.y/z#frag"})
        );
    }

    #[test]
    fn what_is_broken_names_the_field_and_line() {
        for (text, says) in [
            (
                "---\nname: x\n",
                "line 1: the block that opens with '---' is never closed",
            ),
            (
                "---\nname: x\nname: y\n---\n",
                "line 3, field 'name': the field is given twice",
            ),
            (
                "---\njust words\n---\n",
                "line 2: 'just words' is not a 'key: value' line",
            ),
            (
                "---\nd: \"open\n---\n",
                "line 2, field 'd': a double-quoted string",
            ),
            (
                "---\nt: [a, b\n---\n",
                "line 2, field 't': a list that opens with '['",
            ),
            ("---\nm: {a: 1}\n---\n", "line 2, field 'm': a flow map"),
            ("---\na: *ref\n---\n", "line 2, field 'a': anchors"),
            ("---\n  x: 1\n---\n", "line 2: an indented line"),
            ("---\nm:\n  a:\n    b: 1\n---\n", "field 'm"),
            (
                "---\nl:\n  - a\n  b\n---\n",
                "line 4, field 'l': a list item without",
            ),
            ("---\n\tx: 1\n---\n", "line 2: a tab"),
            ("---\n: v\n---\n", "line 2: a field without a name"),
            (
                "---\nd: \"a\n  b\"\n---\n",
                "line 3, field 'd': a quoted or bracketed value",
            ),
        ] {
            let e = error(text);
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn any_input_is_an_answer_not_a_panic() {
        use proptest::prelude::*;
        proptest!(|(body in "(---\n)?([a-z:\\[\\]{}\"' |>\\-#\n\t~&*\\\\]{0,60})(\n---\n)?")| {
            let _ = split(&body);
        });
    }
}
