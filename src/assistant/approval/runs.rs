//! What a bash command line runs, as the rules see it (decision 100): each
//! simple command that `shell::split` finds is read into words the way the
//! shell reads them (quotes and backslashes removed, `$'...'` decoded,
//! variable assignments before the program dropped, the program by its
//! base name), and followed through what runs its arguments as a command:
//! the wrappers (`command`, `exec`, `env`, `nice`, `nohup`, `timeout`,
//! `time`, `stdbuf`, `setsid`, `sudo`, `doas`, `xargs`, and `builtin`),
//! the scripts of `sh -c`/`bash -c` (any option cluster holding `c`),
//! `eval` and `trap`, parsed in turn, and `find -exec CMD`/`-delete` (read as
//! CMD and as `rm`). A program that cannot be known without running it (a
//! substitution, a variable, a glob or a brace expansion in its place, a
//! script built from one, or a shell reading its script from its input) is
//! marked `Unknowable`: it matches every deny rule and no allow rule.
//!
//! Each simple command gives one `Run` as written (quotes removed, the
//! program's path kept) and, when they differ, one by base name and one for
//! each command it wraps: an allow rule set must match every one of them,
//! a deny rule any. Readings that exist only to catch more (the part as
//! written with its quotes, both ways of reading an option a wrapper does
//! not know) are `DenyOnly`.
//!
//! Everything is bounded: nesting deeper than `MAX_DEPTH` is `Unknowable`,
//! and each level adds at most a few readings of text no longer than the
//! input.

use std::rc::Rc;

use super::shell;

/// Wrappers, `-c` scripts and `eval` followed this deep; deeper is
/// unknowable.
const MAX_DEPTH: usize = 8;

/// How a reading counts for the rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A command that runs: allow rules must match it, deny rules may.
    Runs,
    /// Its program cannot be known without running it: every deny rule
    /// matches it, no allow rule does.
    Unknowable,
    /// A script that cannot be read (an unclosed quote): no allow rule
    /// matches it; deny rules see it whole and in rough pieces.
    Unreadable,
    /// A further reading for deny rules only.
    DenyOnly,
}

/// One command of the line, as the rules see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// Its words, blank-separated, quotes removed: what a pattern is
    /// matched against.
    pub text: String,
    /// The simple command of the line it comes from, as written; shared by
    /// all the readings of one part, so that memory stays linear.
    pub part: Rc<str>,
    /// It sends output into a file (decision 28: never allowed by a rule).
    pub writes_file: bool,
    pub kind: Kind,
}

/// The readings of `command`. An unreadable line gives one `Unreadable`
/// run for the whole and `DenyOnly` rough pieces.
pub fn read(command: &str) -> Vec<Run> {
    let mut out = Vec::new();
    read_into(command, 0, &mut out);
    out
}

fn read_into(script: &str, depth: usize, out: &mut Vec<Run>) {
    let whole: Rc<str> = Rc::from(script);
    if depth > MAX_DEPTH {
        out.push(run(script, &whole, Kind::Unknowable));
        return;
    }
    match shell::split(script) {
        Ok(parts) => {
            for part in parts {
                let before = out.len();
                simple(&part.text, depth, out);
                if out.len() == before && part.writes_file {
                    // Only a redirection (`(a; b) > f`): still a write.
                    out.push(run("", &Rc::from(part.text.as_str()), Kind::Runs));
                }
                for r in &mut out[before..] {
                    r.writes_file |= part.writes_file;
                }
            }
        }
        Err(_) => {
            out.push(run(script, &whole, Kind::Unreadable));
            for piece in rough_pieces(script) {
                out.push(run(piece, &whole, Kind::DenyOnly));
            }
        }
    }
}

fn run(text: &str, part: &Rc<str>, kind: Kind) -> Run {
    Run {
        text: text.to_string(),
        part: Rc::clone(part),
        writes_file: false,
        kind,
    }
}

/// A script that cannot be read, cut at every byte that might separate
/// commands, with quotes and reserved words trimmed off: more pieces than
/// bash would see, so a deny rule misses none.
fn rough_pieces(raw: &str) -> impl Iterator<Item = &str> {
    raw.split([';', '&', '|', '\n', '(', ')', '`', '{', '}'])
        .map(|piece| {
            piece.trim_matches(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '$' | '\\'))
        })
        .map(|piece| {
            let mut piece = piece;
            while let Some((first, rest)) = piece.split_once(char::is_whitespace) {
                if !shell::RESERVED.contains(&first) {
                    break;
                }
                piece = rest.trim_start();
            }
            piece
        })
        .filter(|piece| !piece.is_empty())
}

/// One word of a simple command after the shell's reading.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Word {
    /// Quotes and backslashes removed; an expansion kept as written.
    pub value: String,
    /// Holds an expansion (`$x`, `${x}`, `$(...)`, backquotes, `<(...)`):
    /// its value is known only when it runs.
    pub dynamic: bool,
    /// Holds an unquoted glob or brace expansion: it may become other or
    /// more words.
    pub pattern: bool,
    /// `NAME=value` (or `NAME+=`, `NAME[i]=`), the name unquoted.
    pub assignment: bool,
}

/// The words of one simple command as written, redirections and their
/// targets left out.
pub fn words(text: &str) -> Vec<Word> {
    let s = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b' ' | b'\t' | b'\n' => i += 1,
            b'\\' if s.get(i + 1) == Some(&b'\n') => i += 2,
            // A redirection: the operator, then its target word (a
            // here-document's delimiter, a file, a descriptor).
            b'<' | b'>' if s.get(i + 1) != Some(&b'(') => {
                i = redirection(s, i);
                let (_, end) = word_at(text, skip_blanks(s, i));
                i = end;
            }
            b'&' if s.get(i + 1) == Some(&b'>') => {
                i = redirection(s, i + 1);
                let (_, end) = word_at(text, skip_blanks(s, i));
                i = end;
            }
            b'0'..=b'9' if digits_then_redirect(s, i) => {
                while s[i].is_ascii_digit() {
                    i += 1;
                }
            }
            _ => {
                let (word, end) = word_at(text, i);
                out.push(word);
                i = end.max(i + 1);
            }
        }
    }
    out
}

fn skip_blanks(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && matches!(s[i], b' ' | b'\t') {
        i += 1;
    }
    i
}

/// Past a redirection operator at `i` (`<`, `<<`, `<<-`, `<<<`, `>`,
/// `>>`, `>|`, `<>`, `>&`, `<&`).
fn redirection(s: &[u8], mut i: usize) -> usize {
    let first = s[i];
    i += 1;
    while i < s.len() && matches!(s[i], b'<' | b'>' | b'|' | b'&' | b'-') {
        // `<<-` strips tabs; `>&`, `<&` duplicate; `>|` clobbers.
        if s[i] == b'-' && !(first == b'<' && s[i - 1] == b'<') {
            break;
        }
        i += 1;
    }
    i
}

/// `2>`, `10<` and the like: a descriptor number right before a
/// redirection.
fn digits_then_redirect(s: &[u8], i: usize) -> bool {
    let start_of_word = i == 0 || matches!(s[i - 1], b' ' | b'\t' | b'\n');
    let mut j = i;
    while j < s.len() && s[j].is_ascii_digit() {
        j += 1;
    }
    start_of_word && matches!(s.get(j), Some(b'<' | b'>')) && s.get(j + 1) != Some(&b'(')
}

/// The word that starts at `i`, and where it ends.
fn word_at(text: &str, mut i: usize) -> (Word, usize) {
    let s = text.as_bytes();
    let mut w = Word::default();
    let start = i;
    // Whether everything so far is unquoted name characters (for `NAME=`).
    let mut name_so_far = true;
    let mut brace_open = false;
    while i < s.len() {
        let c = s[i];
        match c {
            b' ' | b'\t' | b'\n' => break,
            b'<' | b'>' if s.get(i + 1) == Some(&b'(') => {
                let end = balanced(s, i + 1);
                w.value.push_str(&text[i..end]);
                w.dynamic = true;
                i = end;
            }
            b'<' | b'>' => break,
            b'&' if s.get(i + 1) == Some(&b'>') => break,
            b'\'' => {
                let end = s[i + 1..]
                    .iter()
                    .position(|&b| b == b'\'')
                    .map_or(s.len(), |k| i + 1 + k);
                w.value.push_str(&text[i + 1..end]);
                i = (end + 1).min(s.len());
                name_so_far = false;
            }
            b'"' => {
                i = double_quoted(text, i + 1, &mut w);
                name_so_far = false;
            }
            b'\\' => {
                // Outside quotes a backslash keeps the next character as it
                // is; before a newline it joins lines.
                match text[i + 1..].chars().next() {
                    Some('\n') => i += 2,
                    Some(ch) => {
                        w.value.push(ch);
                        i += 1 + ch.len_utf8();
                    }
                    None => i += 1,
                }
                name_so_far = false;
            }
            b'$' if s.get(i + 1) == Some(&b'\'') => {
                i = ansi_c(text, i + 2, &mut w.value);
                name_so_far = false;
            }
            b'$' if s.get(i + 1) == Some(&b'"') => {
                i = double_quoted(text, i + 2, &mut w);
                name_so_far = false;
            }
            b'$' => {
                let end = expansion_end(s, i);
                if end > i + 1 {
                    w.dynamic = true;
                }
                w.value.push_str(&text[i..end]);
                i = end;
                name_so_far = false;
            }
            b'`' => {
                let end = backquote_end(s, i);
                w.value.push_str(&text[i..end]);
                w.dynamic = true;
                i = end;
                name_so_far = false;
            }
            b'=' if name_so_far && i > start && out_of_digits(&text[start..i]) => {
                w.assignment = true;
                w.value.push('=');
                i += 1;
                name_so_far = false;
            }
            b'+' if name_so_far && s.get(i + 1) == Some(&b'=') && i > start => {
                w.assignment = true;
                w.value.push_str("+=");
                i += 2;
                name_so_far = false;
            }
            b'[' if name_so_far && i > start => {
                // `NAME[index]=`: an array element (or a glob).
                let end = s[i..].iter().position(|&b| b == b']').map(|k| i + k);
                match end {
                    Some(end) if s.get(end + 1) == Some(&b'=') => {
                        w.value.push_str(&text[i..=end + 1]);
                        w.assignment = true;
                        i = end + 2;
                    }
                    _ => {
                        w.pattern = true;
                        w.value.push('[');
                        i += 1;
                    }
                }
                name_so_far = false;
            }
            _ => {
                let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
                match ch {
                    '*' | '?' => w.pattern = true,
                    // A bracket expression needs its `]` in the same word
                    // (`[ -f x ]` is the test command, not a glob).
                    '[' if text[i + 1..]
                        .split([' ', '\t', '\n'])
                        .next()
                        .is_some_and(|rest| rest.contains(']')) =>
                    {
                        w.pattern = true
                    }
                    '{' => brace_open = true,
                    ',' if brace_open => w.pattern = true,
                    '.' if brace_open && text[i..].starts_with("..") => w.pattern = true,
                    _ => {}
                }
                if !(ch.is_ascii_alphanumeric() || ch == '_') {
                    name_so_far = false;
                }
                w.value.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    (w, i)
}

/// A shell name does not start with a digit.
fn out_of_digits(name: &str) -> bool {
    name.bytes().next().is_some_and(|b| !b.is_ascii_digit())
}

/// From inside a `"` to past its closing one, the word's value extended.
fn double_quoted(text: &str, mut i: usize, w: &mut Word) -> usize {
    let s = text.as_bytes();
    while i < s.len() {
        match s[i] {
            b'"' => return i + 1,
            b'\\' if matches!(s.get(i + 1), Some(b'$' | b'`' | b'"' | b'\\')) => {
                w.value.push(s[i + 1] as char);
                i += 2;
            }
            b'\\' if s.get(i + 1) == Some(&b'\n') => i += 2,
            b'$' => {
                let end = expansion_end(s, i);
                if end > i + 1 {
                    w.dynamic = true;
                }
                w.value.push_str(&text[i..end]);
                i = end;
            }
            b'`' => {
                let end = backquote_end(s, i);
                w.value.push_str(&text[i..end]);
                w.dynamic = true;
                i = end;
            }
            _ => {
                let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
                w.value.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    s.len()
}

/// Where the expansion that starts with the `$` at `i` ends: `$(...)`,
/// `$((...))`, `${...}`, `$name`, `$1`, `$@`...; `i + 1` for a lone `$`.
fn expansion_end(s: &[u8], i: usize) -> usize {
    match s.get(i + 1) {
        Some(b'(' | b'{') => balanced(s, i + 1),
        Some(b) if b.is_ascii_alphabetic() || *b == b'_' => {
            let mut j = i + 1;
            while j < s.len() && (s[j].is_ascii_alphanumeric() || s[j] == b'_') {
                j += 1;
            }
            j
        }
        Some(b'0'..=b'9' | b'@' | b'*' | b'#' | b'?' | b'-' | b'$' | b'!') => i + 2,
        _ => i + 1,
    }
}

/// From the bracket at `i` past the one that closes it, quotes respected;
/// the end of the text when it is never closed.
fn balanced(s: &[u8], i: usize) -> usize {
    let (open, close) = match s[i] {
        b'{' => (b'{', b'}'),
        _ => (b'(', b')'),
    };
    let mut depth = 0usize;
    let mut j = i;
    while j < s.len() {
        match s[j] {
            b'\\' => j += 1,
            b'\'' if open == b'(' => {
                j += s[j + 1..]
                    .iter()
                    .position(|&b| b == b'\'')
                    .map_or(s.len(), |k| k + 1);
            }
            b if b == open => depth += 1,
            b if b == close => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    s.len()
}

fn backquote_end(s: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < s.len() && s[j] != b'`' {
        j += if s[j] == b'\\' { 2 } else { 1 };
    }
    (j + 1).min(s.len())
}

/// A `$'...'` string from after its opening quote, decoded into `out`;
/// returns where it ends.
fn ansi_c(text: &str, mut i: usize, out: &mut String) -> usize {
    let s = text.as_bytes();
    let mut bytes: Vec<u8> = Vec::new();
    while i < s.len() && s[i] != b'\'' {
        if s[i] != b'\\' || i + 1 >= s.len() {
            bytes.push(s[i]);
            i += 1;
            continue;
        }
        let e = s[i + 1];
        i += 2;
        let simple = match e {
            b'a' => Some(7),
            b'b' => Some(8),
            b'e' | b'E' => Some(0x1b),
            b'f' => Some(12),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(11),
            b'\\' | b'\'' | b'"' | b'?' => Some(e),
            _ => None,
        };
        if let Some(b) = simple {
            bytes.push(b);
            continue;
        }
        let digits = |from: usize, max: usize, radix: u32| {
            let end = (from..s.len().min(from + max))
                .find(|&k| !(s[k] as char).is_digit(radix))
                .unwrap_or(s.len().min(from + max));
            (u32::from_str_radix(&text[from..end], radix).ok(), end)
        };
        match e {
            b'0'..=b'7' => {
                let (v, end) = digits(i - 1, 3, 8);
                bytes.push(v.unwrap_or(0) as u8);
                i = end;
            }
            b'x' => {
                let (v, end) = digits(i, 2, 16);
                match v {
                    Some(v) => bytes.push(v as u8),
                    None => bytes.extend_from_slice(b"\\x"),
                }
                i = end;
            }
            b'u' | b'U' => {
                let (v, end) = digits(i, if e == b'u' { 4 } else { 8 }, 16);
                match v.and_then(char::from_u32) {
                    Some(c) => bytes.extend_from_slice(c.to_string().as_bytes()),
                    None => bytes.extend_from_slice(&[b'\\', e]),
                }
                i = end;
            }
            b'c' if i < s.len() => {
                bytes.push(s[i] & 0x1f);
                i += 1;
            }
            _ => bytes.extend_from_slice(&[b'\\', e]),
        }
    }
    out.push_str(&String::from_utf8_lossy(&bytes));
    (i + 1).min(s.len())
}

/// The words' values, blank-separated.
fn joined(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.value.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The base name of a program written with a path.
fn base_name(program: &str) -> &str {
    program
        .rsplit('/')
        .next()
        .filter(|b| !b.is_empty())
        .unwrap_or(program)
}

/// The readings of one simple command written as `text`.
fn simple(text: &str, depth: usize, out: &mut Vec<Run>) {
    let words = words(text);
    let before = out.len();
    let part: Rc<str> = Rc::from(text);
    command(&words, &part, depth, out);
    // The part as written, quotes and all, for deny rules written that way.
    let normal = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    if !text.trim().is_empty()
        && out[before..]
            .iter()
            .all(|r| normal(&r.text) != normal(text))
    {
        out.push(run(text.trim(), &part, Kind::DenyOnly));
    }
}

/// The readings of the command `words` (assignments may lead).
fn command(words: &[Word], part: &Rc<str>, depth: usize, out: &mut Vec<Run>) {
    let first = words.iter().position(|w| !w.assignment);
    let Some(first) = first else {
        return; // assignments only: nothing runs
    };
    let words = &words[first..];
    if depth > MAX_DEPTH {
        out.push(run(&joined(words), part, Kind::Unknowable));
        return;
    }
    let program = &words[0];
    if program.dynamic || program.pattern {
        out.push(run(&joined(words), part, Kind::Unknowable));
        return;
    }
    out.push(run(&joined(words), part, Kind::Runs));
    let base = base_name(&program.value);
    if base != program.value {
        let mut text = base.to_string();
        for w in &words[1..] {
            text.push(' ');
            text.push_str(&w.value);
        }
        out.push(run(&text, part, Kind::Runs));
    }
    inner(base, words, part, depth, out);
}

/// Options of a wrapper: those that take a value (short letters, long
/// names), and the short ones that mean no command follows.
struct Options {
    with_value: &'static str,
    long_with_value: &'static [&'static str],
    /// Letters it is known to take; another is read both ways.
    flags: &'static str,
}

/// After the options at `words[i..]`: where the operands start, and
/// whether an option it does not know was seen (its value may be the
/// next word), and the short letters seen.
fn skip_options(words: &[Word], mut i: usize, o: &Options) -> (usize, bool, String) {
    let mut unknown = false;
    let mut seen = String::new();
    while i < words.len() {
        let w = &words[i].value;
        if w == "--" {
            return (i + 1, unknown, seen);
        }
        if let Some(long) = w.strip_prefix("--") {
            if !long.contains('=') {
                if o.long_with_value.contains(&long) {
                    i += 1;
                } else {
                    // `--name` may be a flag or take the next word.
                    unknown = true;
                }
            }
            i += 1;
            continue;
        }
        let Some(short) = w.strip_prefix('-').filter(|s| !s.is_empty()) else {
            break;
        };
        if short.bytes().all(|b| b.is_ascii_digit()) {
            i += 1; // `nice -5`
            continue;
        }
        let mut takes_next = false;
        for (k, c) in short.char_indices() {
            seen.push(c);
            if o.with_value.contains(c) {
                takes_next = k + c.len_utf8() == short.len();
                break;
            }
            if !o.flags.contains(c) {
                unknown = true;
            }
        }
        i += if takes_next { 2 } else { 1 };
    }
    (i, unknown, seen)
}

/// What a command runs in its turn: the command a wrapper wraps, the
/// script of `sh -c` or `eval`, what `find` runs.
fn inner(base: &str, words: &[Word], part: &Rc<str>, depth: usize, out: &mut Vec<Run>) {
    let wrapped = |o: &Options, skip_operands: usize, out: &mut Vec<Run>| {
        let (at, unknown, seen) = skip_options(words, 1, o);
        follow(words, at + skip_operands, unknown, part, depth, out);
        seen
    };
    match base {
        "command" => {
            let (at, unknown, seen) = skip_options(words, 1, &COMMAND);
            // `command -v rm` only says where rm is.
            if !seen.contains(['v', 'V']) {
                follow(words, at, unknown, part, depth, out);
            }
        }
        "builtin" | "nohup" => follow(words, 1, false, part, depth, out),
        "exec" => drop(wrapped(&EXEC, 0, out)),
        "nice" => drop(wrapped(&NICE, 0, out)),
        "timeout" => drop(wrapped(&TIMEOUT, 1, out)),
        "stdbuf" => drop(wrapped(&STDBUF, 0, out)),
        "setsid" => drop(wrapped(&SETSID, 0, out)),
        "time" => drop(wrapped(&TIME, 0, out)),
        "doas" => drop(wrapped(&DOAS, 0, out)),
        "sudo" => drop(wrapped(&SUDO, 0, out)),
        "xargs" => {
            // xargs adds the words it reads to the command: `…` stands for
            // them, so `xargs rm` is read as `rm …` and `bash(rm *)` sees it.
            let (at, unknown, _) = skip_options(words, 1, &XARGS);
            let mut with_input = words.to_vec();
            with_input.push(Word {
                value: "…".into(),
                ..Word::default()
            });
            if at < words.len() {
                follow(&with_input, at, unknown, part, depth, out);
            }
        }
        "env" => env(words, part, depth, out),
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" => {
            shell_script(words, part, depth, out)
        }
        "eval" => script(&words[1..], part, depth, out),
        // `trap 'rm x' EXIT` runs its first argument later.
        "trap" => match words.get(1) {
            Some(w) if !w.value.starts_with('-') => {
                script(std::slice::from_ref(w), part, depth, out)
            }
            _ => {}
        },
        "find" => find(words, part, depth, out),
        "function" => {
            // `function f { rm x; }`: what follows the name runs when called.
            let body = words
                .iter()
                .skip(2)
                .position(|w| !matches!(w.value.as_str(), "{" | "()" | "(" | ")"))
                .map(|k| k + 2);
            if let Some(at) = body {
                command(&words[at..], part, depth + 1, out);
            }
        }
        _ => {}
    }
}

/// The command at `words[at..]`, and when an unknown option came before
/// it, also the one a word later, for deny rules.
fn follow(
    words: &[Word],
    at: usize,
    unknown: bool,
    part: &Rc<str>,
    depth: usize,
    out: &mut Vec<Run>,
) {
    if at < words.len() {
        command(&words[at..], part, depth + 1, out);
    }
    if unknown && at + 1 < words.len() {
        let before = out.len();
        // Each such fork doubles the readings below it: it costs more of
        // the depth, so a line of many wrappers stays cheap.
        command(&words[at + 1..], part, depth + 3, out);
        for r in &mut out[before..] {
            if r.kind == Kind::Runs {
                r.kind = Kind::DenyOnly;
            }
        }
    }
}

/// `env [-i] [-u NAME] [NAME=value]... [COMMAND]`, and `env -S 'STRING'`.
fn env(words: &[Word], part: &Rc<str>, depth: usize, out: &mut Vec<Run>) {
    let mut i = 1;
    let mut unknown = false;
    while i < words.len() {
        let w = &words[i].value;
        if w == "-S" || w == "--split-string" {
            // The string is split into the command and its words.
            if let Some(s) = words.get(i + 1) {
                let mut rest = words[i + 2..].to_vec();
                let mut split = self::words(&s.value);
                if s.dynamic {
                    split.iter_mut().for_each(|w| w.dynamic = true);
                }
                split.append(&mut rest);
                command(&split, part, depth + 1, out);
            }
            return;
        }
        if let Some(s) = w
            .strip_prefix("--split-string=")
            .or_else(|| w.strip_prefix("-S").filter(|s| !s.is_empty()))
        {
            let mut split = self::words(s);
            split.extend_from_slice(&words[i + 1..]);
            command(&split, part, depth + 1, out);
            return;
        }
        if words[i].assignment || w.contains('=') && !w.starts_with('-') {
            i += 1;
            continue;
        }
        // `-` is `-i`; `--` ends the options, assignments may follow.
        if w == "-" || w == "--" {
            i += 1;
            continue;
        }
        if !w.starts_with('-') {
            break;
        }
        let (at, u, _) = skip_options(words, i, &ENV);
        unknown |= u;
        i = at.max(i + 1);
    }
    follow(words, i, unknown, part, depth, out);
}

/// `bash -c SCRIPT`, `sh -lc SCRIPT`, `bash -o pipefail -c SCRIPT`: the
/// script is read as a command line of its own.
fn shell_script(words: &[Word], part: &Rc<str>, depth: usize, out: &mut Vec<Run>) {
    let (mut has_c, mut has_s) = (false, false);
    let mut i = 1;
    while i < words.len() {
        let w = &words[i].value;
        if w == "--" || w == "-" {
            i += 1;
            break;
        }
        match w.as_bytes() {
            [b'-' | b'+', b'-', ..] => i += 1, // `--login`, `--norc`
            [b'-' | b'+', rest @ ..] if !rest.is_empty() => {
                has_c |= rest.contains(&b'c');
                has_s |= rest.contains(&b's');
                // `-o NAME`, `-O NAME`: the option takes the next word.
                i += if rest.ends_with(b"o") || rest.ends_with(b"O") {
                    2
                } else {
                    1
                };
            }
            _ => break,
        }
    }
    if has_c {
        if let Some(s) = words.get(i) {
            script(std::slice::from_ref(s), part, depth, out);
        }
    } else if i >= words.len() || has_s {
        // No script and no file: the shell runs what its input says
        // (`curl ... | sh`), which is known only when it runs.
        out.push(run(&joined(words), part, Kind::Unknowable));
    }
}

/// A script given as words (eval joins them with blanks), read as a
/// command line of its own; one built from an expansion is unknowable.
fn script(words: &[Word], part: &Rc<str>, depth: usize, out: &mut Vec<Run>) {
    let text = joined(words);
    if words.iter().any(|w| w.dynamic) {
        out.push(run(&text, part, Kind::Unknowable));
        return;
    }
    let before = out.len();
    read_into(&text, depth + 1, out);
    // Each reading names the part of the outer line it came from.
    for r in &mut out[before..] {
        r.part = Rc::clone(part);
    }
}

/// `find ... -exec CMD ... ;` (and `-execdir`, `-ok`, `-okdir`) runs CMD;
/// `-delete` removes what it finds, read as `rm` of its starting points.
fn find(words: &[Word], part: &Rc<str>, depth: usize, out: &mut Vec<Run>) {
    let starts: Vec<&str> = words[1..]
        .iter()
        .map(|w| w.value.as_str())
        .take_while(|w| !w.starts_with('-') && !matches!(*w, "(" | "!" | ","))
        .collect();
    let mut i = 1;
    while i < words.len() {
        match words[i].value.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let from = i + 1;
                let end = words[from..]
                    .iter()
                    .position(|w| matches!(w.value.as_str(), ";" | "+"))
                    .map_or(words.len(), |k| from + k);
                if from < end {
                    command(&words[from..end], part, depth + 1, out);
                }
                i = end + 1;
            }
            "-delete" => {
                let text = if starts.is_empty() {
                    "rm .".to_string()
                } else {
                    format!("rm {}", starts.join(" "))
                };
                out.push(run(&text, part, Kind::Runs));
                i += 1;
            }
            _ => i += 1,
        }
    }
}

const COMMAND: Options = Options {
    with_value: "",
    long_with_value: &[],
    flags: "pvV",
};
const EXEC: Options = Options {
    with_value: "a",
    long_with_value: &[],
    flags: "cl",
};
const NICE: Options = Options {
    with_value: "n",
    long_with_value: &["adjustment"],
    flags: "",
};
const TIMEOUT: Options = Options {
    with_value: "sk",
    long_with_value: &["signal", "kill-after"],
    flags: "v",
};
const STDBUF: Options = Options {
    with_value: "ioe",
    long_with_value: &["input", "output", "error"],
    flags: "",
};
const SETSID: Options = Options {
    with_value: "",
    long_with_value: &[],
    flags: "cfw",
};
const TIME: Options = Options {
    with_value: "fo",
    long_with_value: &["format", "output"],
    flags: "apqv",
};
const DOAS: Options = Options {
    with_value: "uC",
    long_with_value: &[],
    flags: "nsL",
};
const SUDO: Options = Options {
    with_value: "ughpCDrtUTR",
    long_with_value: &[
        "user",
        "group",
        "host",
        "prompt",
        "close-from",
        "chdir",
        "role",
        "type",
        "other-user",
        "command-timeout",
        "chroot",
    ],
    flags: "AbEeHiKklnPSsVv",
};
const XARGS: Options = Options {
    with_value: "adEILnPs",
    long_with_value: &[
        "arg-file",
        "delimiter",
        "max-lines",
        "max-args",
        "max-procs",
        "max-chars",
        "process-slot-var",
    ],
    flags: "0eilprtxo",
};
const ENV: Options = Options {
    with_value: "uC",
    long_with_value: &["unset", "chdir"],
    flags: "i0v",
};

#[cfg(test)]
#[path = "runs_tests.rs"]
mod tests;
