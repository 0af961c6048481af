//! A bash command split into the simple commands it runs, so approval rules
//! judge each one: `cargo test && rm -rf /` is two commands, and an allow
//! rule for the first must not let the second through. Splits at `;`, `&&`,
//! `||`, `|`, `|&`, `&` and newlines, and goes inside `$(...)`, backticks,
//! `<(...)`/`>(...)`, subshells `( ... )`, `{ ...; }` groups and the bodies
//! of unquoted here-documents, respecting single quotes, double quotes and
//! backslashes. Leading reserved words (`if`, `then`, `do`, `!`, ...) are
//! dropped from a part, so `if grep -q x f; then rm f; fi` gives `grep -q x
//! f` and `rm f`.
//!
//! This is not a shell: it is a careful tokenizer that errs on the side of
//! more parts. A command it cannot read (an unclosed quote or parenthesis) is
//! an error, and the caller then lets no allow rule match it.

/// One simple command of a bash command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// The command as written (quotes kept), without leading reserved words,
    /// whitespace trimmed.
    pub text: String,
    /// It sends output into a file (`>`, `>>`, `&>`, `>|`, `2>file`); `>&2`,
    /// `2>&1` and anything into `/dev/null` do not count.
    pub writes_file: bool,
}

/// Words that open or close a compound command rather than run anything.
pub const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "time", "{", "}",
    "coproc",
];

/// The simple commands of `command`: those inside a substitution come
/// before the command that holds it, a here-document's after its line (the
/// order means nothing to the rules). Err says what could not be read.
pub fn split(command: &str) -> Result<Vec<Part>, String> {
    let mut s = Splitter {
        s: command.as_bytes(),
        text: command,
        i: 0,
        parts: Vec::new(),
        heredocs: Vec::new(),
        depth: 0,
    };
    s.commands(None, command.len())?;
    Ok(s.parts)
}

struct Splitter<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
    parts: Vec<Part>,
    /// Here-documents announced on the current line: (delimiter, strip
    /// leading tabs, body expanded).
    heredocs: Vec<(String, bool, bool)>,
    /// Substitutions and subshells open around `i`.
    depth: usize,
}

/// Substitutions and subshells nested deeper than this are not read: the
/// reader's stack and the parts' text (each part holds those inside it)
/// stay bounded by the command's length, whatever the model sends.
const MAX_NESTING: usize = 64;

/// The simple command being read.
struct Current {
    /// Where its text starts.
    start: usize,
    writes_file: bool,
    /// Only blanks (or a finished subshell) since `start`.
    at_start: bool,
}

impl Current {
    fn at(start: usize) -> Current {
        Current {
            start,
            writes_file: false,
            at_start: true,
        }
    }
}

/// A byte that ends an unquoted word: a blank or an operator.
fn is_metacharacter(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')'
    )
}

impl Splitter<'_> {
    fn peek(&self, k: usize) -> Option<u8> {
        self.s.get(self.i + k).copied()
    }

    /// Reads commands up to `limit`, or up to the `)` that closes the
    /// construct when `close` is set (then the `)` is consumed).
    fn commands(&mut self, close: Option<u8>, limit: usize) -> Result<(), String> {
        if self.depth >= MAX_NESTING {
            return Err(format!(
                "substitutions or subshells are nested more than {MAX_NESTING} deep"
            ));
        }
        self.depth += 1;
        let read = self.commands_within(close, limit);
        self.depth -= 1;
        read
    }

    fn commands_within(&mut self, close: Option<u8>, limit: usize) -> Result<(), String> {
        let mut cur = Current::at(self.i);
        let mut word_start = true;
        while self.i < limit {
            let c = self.s[self.i];
            let was_word_start = word_start;
            word_start = false;
            match c {
                b' ' | b'\t' => {
                    self.i += 1;
                    word_start = true;
                    continue;
                }
                b'\n' => {
                    self.finish(&cur, self.i);
                    self.i += 1;
                    self.heredoc_bodies(limit)?;
                    cur = Current::at(self.i);
                    word_start = true;
                    continue;
                }
                b';' => {
                    self.finish(&cur, self.i);
                    // `;;` ends a case branch: a separator all the same.
                    self.i += if self.peek(1) == Some(b';') { 2 } else { 1 };
                    cur = Current::at(self.i);
                    word_start = true;
                    continue;
                }
                b'&' if self.peek(1) == Some(b'>') => {
                    // `&>file`, `&>>file`: stdout and stderr into a file.
                    self.i += if self.peek(2) == Some(b'>') { 3 } else { 2 };
                    if self.redirect_target(limit)? {
                        cur.writes_file = true;
                    }
                }
                b'&' | b'|' => {
                    self.finish(&cur, self.i);
                    let double = matches!(self.peek(1), Some(b'&' | b'|'));
                    self.i += if double { 2 } else { 1 };
                    cur = Current::at(self.i);
                    word_start = true;
                    continue;
                }
                b')' => {
                    self.finish(&cur, self.i);
                    self.i += 1;
                    if close.is_some() {
                        return Ok(());
                    }
                    // A stray `)` (a case pattern): a separator, to be safe.
                    cur = Current::at(self.i);
                    word_start = true;
                    continue;
                }
                b'(' if cur.at_start => {
                    // A subshell: its commands are parts; what follows its
                    // `)` (a redirection) belongs to a part of its own.
                    self.i += 1;
                    self.commands(Some(b')'), limit)?;
                    cur = Current::at(self.i);
                    continue;
                }
                b'#' if was_word_start => {
                    self.finish(&cur, self.i);
                    while self.i < limit && self.s[self.i] != b'\n' {
                        self.i += 1;
                    }
                    cur = Current::at(self.i);
                    continue;
                }
                b'\'' => self.single_quoted(limit)?,
                b'"' => self.double_quoted(limit)?,
                b'\\' => {
                    // A backslash-newline joins lines; any other escapes one byte.
                    self.i += 2;
                    if self.s.get(self.i - 1) == Some(&b'\n') {
                        word_start = true;
                    }
                }
                b'`' => self.backticks(limit)?,
                b'$' => self.dollar(limit)?,
                b'<' | b'>' if self.peek(1) == Some(b'(') => {
                    self.i += 2;
                    self.commands(Some(b')'), limit)?;
                }
                b'<' if self.peek(1) == Some(b'<') => {
                    if self.peek(2) == Some(b'<') {
                        self.i += 3; // a here-string: its word is plain text
                    } else {
                        self.i += 2;
                        self.heredoc_start(limit)?;
                    }
                }
                b'>' => {
                    // `>`, `>>`, `>|`, `>&N`; a digit before it names a descriptor.
                    self.i += 1;
                    if matches!(self.peek(0), Some(b'>' | b'|')) {
                        self.i += 1;
                    }
                    if self.peek(0) == Some(b'&') {
                        self.i += 1;
                        let target_start = self.i;
                        let fd = self.word_end(limit);
                        let word = &self.text[target_start..fd];
                        let dup = word == "-"
                            || (!word.is_empty() && word.bytes().all(|b| b.is_ascii_digit()));
                        self.i = fd;
                        if !dup {
                            cur.writes_file = true;
                        }
                    } else if self.redirect_target(limit)? {
                        cur.writes_file = true;
                    }
                }
                _ => self.i += 1,
            }
            cur.at_start = false;
        }
        if close.is_some() {
            return Err("a '(' is never closed".into());
        }
        self.finish(&cur, self.i.min(limit));
        Ok(())
    }

    /// Ends the part that started at `cur.start` at `end`.
    fn finish(&mut self, cur: &Current, end: usize) {
        let mut text = self.text[cur.start..end].trim();
        // Reserved words open compound commands; the command follows them.
        loop {
            let first = text.split([' ', '\t']).next().unwrap_or("");
            if !first.is_empty() && RESERVED.contains(&first) {
                text = text[first.len()..].trim_start();
                // `time -p`: the option belongs to the reserved word.
                if first == "time" {
                    if let Some(rest) = text.strip_prefix("-p") {
                        if rest.is_empty() || rest.starts_with([' ', '\t']) {
                            text = rest.trim_start();
                        }
                    }
                }
            } else {
                break;
            }
        }
        if !text.is_empty() || cur.writes_file {
            self.parts.push(Part {
                text: text.to_string(),
                writes_file: cur.writes_file,
            });
        }
    }

    /// After a `>`: skips blanks and reads the target word; true when it
    /// is a file (not `/dev/null`).
    fn redirect_target(&mut self, limit: usize) -> Result<bool, String> {
        while self.i < limit && matches!(self.s[self.i], b' ' | b'\t') {
            self.i += 1;
        }
        let start = self.i;
        self.whole_word(limit)?;
        let word = self.text[start..self.i].trim_matches(['\'', '"']);
        Ok(word != "/dev/null")
    }

    /// Moves past the word at `self.i`, its quoted parts included: a
    /// quoted part may hold blanks and operators, and a backslash escapes
    /// one byte.
    fn whole_word(&mut self, limit: usize) -> Result<(), String> {
        while self.i < limit && !is_metacharacter(self.s[self.i]) {
            match self.s[self.i] {
                b'\'' => self.single_quoted(limit)?,
                b'"' => self.double_quoted(limit)?,
                b'\\' => self.i += 2,
                _ => self.i += 1,
            }
        }
        self.i = self.i.min(limit);
        Ok(())
    }

    /// Where the word that starts at `self.i` ends (an unquoted blank or
    /// operator).
    fn word_end(&self, limit: usize) -> usize {
        let mut j = self.i;
        while j < limit && !is_metacharacter(self.s[j]) {
            j += 1;
        }
        j
    }

    fn single_quoted(&mut self, limit: usize) -> Result<(), String> {
        match self.s[self.i + 1..limit].iter().position(|&b| b == b'\'') {
            Some(k) => {
                self.i += k + 2;
                Ok(())
            }
            None => Err("a single quote is never closed".into()),
        }
    }

    /// From an opening `"` past its closing one; substitutions inside are
    /// commands too.
    fn double_quoted(&mut self, limit: usize) -> Result<(), String> {
        self.i += 1;
        while self.i < limit {
            match self.s[self.i] {
                b'"' => {
                    self.i += 1;
                    return Ok(());
                }
                b'\\' => self.i += 2,
                b'`' => self.backticks(limit)?,
                // `$'` is no ANSI-C string inside double quotes.
                b'$' if self.peek(1) != Some(b'\'') => self.dollar(limit)?,
                _ => self.i += 1,
            }
        }
        Err("a double quote is never closed".into())
    }

    /// `$(...)` is a command substitution; `$((...))` arithmetic and
    /// `${...}` a parameter, read past; a lone `$` is a character.
    fn dollar(&mut self, limit: usize) -> Result<(), String> {
        match (self.peek(1), self.peek(2)) {
            // `$'...'`: ANSI-C quoting, where `\'` does not end the string.
            (Some(b'\''), _) => {
                self.i += 2;
                while self.i < limit {
                    match self.s[self.i] {
                        b'\\' => self.i += 2,
                        b'\'' => {
                            self.i += 1;
                            return Ok(());
                        }
                        _ => self.i += 1,
                    }
                }
                Err("a $' quote is never closed".into())
            }
            (Some(b'('), Some(b'(')) => self.skip_balanced(b'(', b')', limit),
            (Some(b'('), _) => {
                self.i += 2;
                self.commands(Some(b')'), limit)
            }
            (Some(b'{'), _) => self.skip_balanced(b'{', b'}', limit),
            _ => {
                self.i += 1;
                Ok(())
            }
        }
    }

    /// From `$` past the bracket that closes the one after it.
    fn skip_balanced(&mut self, open: u8, close: u8, limit: usize) -> Result<(), String> {
        self.i += 1;
        let mut depth = 0usize;
        while self.i < limit {
            let c = self.s[self.i];
            self.i += 1;
            if c == b'\\' {
                self.i += 1;
            } else if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
                if depth == 0 {
                    return Ok(());
                }
            }
        }
        Err(format!("a '{}' is never closed", open as char))
    }

    /// From an opening backtick past its closing one; what is between is
    /// read as commands.
    fn backticks(&mut self, limit: usize) -> Result<(), String> {
        let open = self.i;
        let mut j = open + 1;
        while j < limit && self.s[j] != b'`' {
            j += if self.s[j] == b'\\' { 2 } else { 1 };
        }
        if j >= limit {
            return Err("a backtick is never closed".into());
        }
        self.i = open + 1;
        self.commands(None, j)?;
        self.i = j + 1;
        Ok(())
    }

    /// After `<<`: the optional `-` and the delimiter word. The body
    /// follows the end of the line.
    fn heredoc_start(&mut self, limit: usize) -> Result<(), String> {
        let strip_tabs = self.peek(0) == Some(b'-');
        if strip_tabs {
            self.i += 1;
        }
        while self.i < limit && matches!(self.s[self.i], b' ' | b'\t') {
            self.i += 1;
        }
        let start = self.i;
        self.whole_word(limit)?;
        let quoted = self.text[start..self.i].contains(['\'', '"', '\\']);
        let delimiter: String = self.text[start..self.i]
            .chars()
            .filter(|c| !matches!(c, '\'' | '"' | '\\'))
            .collect();
        if delimiter.is_empty() {
            return Err("a here-document has no delimiter".into());
        }
        self.heredocs.push((delimiter, strip_tabs, !quoted));
        Ok(())
    }

    /// At the start of a line: the bodies of the here-documents announced
    /// on the line before. An unquoted body's substitutions are commands.
    fn heredoc_bodies(&mut self, limit: usize) -> Result<(), String> {
        for (delimiter, strip_tabs, expanded) in std::mem::take(&mut self.heredocs) {
            loop {
                if self.i >= limit {
                    return Ok(()); // bash too accepts a body cut by the end
                }
                let end = self.s[self.i..limit]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(limit, |k| self.i + k);
                let line = &self.text[self.i..end];
                let line = if strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                if line == delimiter {
                    self.i = (end + 1).min(limit);
                    break;
                }
                if expanded {
                    let mut j = self.i;
                    while j < end {
                        self.i = j;
                        match self.s[j] {
                            b'\\' => self.i += 2,
                            b'`' => self.backticks(end)?,
                            b'$' => self.dollar(end)?,
                            _ => self.i += 1,
                        }
                        j = self.i;
                    }
                }
                self.i = (end + 1).min(limit);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(command: &str) -> Vec<String> {
        split(command)
            .unwrap_or_else(|e| panic!("{command:?}: {e}"))
            .into_iter()
            .map(|p| p.text)
            .collect()
    }

    fn writes(command: &str) -> Vec<bool> {
        split(command)
            .unwrap()
            .into_iter()
            .map(|p| p.writes_file)
            .collect()
    }

    #[test]
    fn separators() {
        assert_eq!(texts("ls"), ["ls"]);
        assert_eq!(texts("  ls -la  "), ["ls -la"]);
        assert_eq!(texts("a; b"), ["a", "b"]);
        assert_eq!(texts("a && b || c"), ["a", "b", "c"]);
        assert_eq!(texts("a | b |& c"), ["a", "b", "c"]);
        assert_eq!(texts("server & curl x"), ["server", "curl x"]);
        assert_eq!(texts("a\nb\n\nc"), ["a", "b", "c"]);
        assert_eq!(texts("a;;b"), ["a", "b"]);
        assert_eq!(texts(""), Vec::<String>::new());
        assert_eq!(texts(" ; ;"), Vec::<String>::new());
        assert_eq!(texts("cargo test&&rm -rf /"), ["cargo test", "rm -rf /"]);
    }

    #[test]
    fn quoted_separators_stay_inside_their_word() {
        assert_eq!(texts("echo 'a; b && c'"), ["echo 'a; b && c'"]);
        assert_eq!(texts(r#"echo "a | b" ; ls"#), [r#"echo "a | b""#, "ls"]);
        assert_eq!(texts(r"echo a\;b"), [r"echo a\;b"]);
        assert_eq!(texts(r#"echo "it's; fine""#), [r#"echo "it's; fine""#]);
        assert_eq!(texts(r#"echo 'say "hi"; ok'"#), [r#"echo 'say "hi"; ok'"#]);
        assert_eq!(texts(r#"echo "a\"; rm x""#), [r#"echo "a\"; rm x""#]);
        assert_eq!(texts("grep -E 'a|b' f"), ["grep -E 'a|b' f"]);
        assert_eq!(texts("echo a\\\nb"), ["echo a\\\nb"]);
    }

    #[test]
    fn substitutions_and_subshells_are_commands_too() {
        assert_eq!(texts("echo $(rm -rf /)"), ["rm -rf /", "echo $(rm -rf /)"]);
        assert_eq!(
            texts("echo `whoami; id`"),
            ["whoami", "id", "echo `whoami; id`"]
        );
        assert_eq!(
            texts(r#"echo "today: $(date; rm x)""#),
            ["date", "rm x", r#"echo "today: $(date; rm x)""#]
        );
        assert_eq!(texts("echo '$(rm x)'"), ["echo '$(rm x)'"]);
        assert_eq!(
            texts("diff <(ls a) <(ls b)"),
            ["ls a", "ls b", "diff <(ls a) <(ls b)"]
        );
        assert_eq!(
            texts("tee >(gzip > x.gz)"),
            ["gzip > x.gz", "tee >(gzip > x.gz)"]
        );
        assert_eq!(texts("(cd src && make) ; ls"), ["cd src", "make", "ls"]);
        assert_eq!(texts("{ a; b; }"), ["a", "b"]);
        assert_eq!(
            texts("echo $(echo $(id))"),
            ["id", "echo $(id)", "echo $(echo $(id))"]
        );
        assert_eq!(
            texts("echo $((1 + 2)) ${HOME} $"),
            ["echo $((1 + 2)) ${HOME} $"]
        );
    }

    #[test]
    fn ansi_c_strings_hide_nothing() {
        assert_eq!(texts(r"echo $'\'' ; rm x"), [r"echo $'\''", "rm x"]);
        assert_eq!(texts(r"echo $'it\'s; fine'"), [r"echo $'it\'s; fine'"]);
        assert!(split("echo $'open").is_err());
        assert_eq!(texts(r#"echo "$'" ; rm x"#), [r#"echo "$'""#, "rm x"]);
    }

    #[test]
    fn reserved_words_and_comments() {
        assert_eq!(
            texts("if grep -q x f; then rm f; else touch f; fi"),
            ["grep -q x f", "rm f", "touch f"]
        );
        assert_eq!(
            texts("for f in *.rs; do wc -l $f; done"),
            ["for f in *.rs", "wc -l $f"]
        );
        assert_eq!(texts("while true; do sleep 1; done"), ["true", "sleep 1"]);
        assert_eq!(texts("! grep x f"), ["grep x f"]);
        assert_eq!(texts("ls # ; rm x\npwd"), ["ls", "pwd"]);
        assert_eq!(texts("echo a#b"), ["echo a#b"]);
    }

    #[test]
    fn redirections_into_files() {
        assert_eq!(writes("echo hi > f"), [true]);
        assert_eq!(writes("echo hi >> f"), [true]);
        assert_eq!(writes("echo hi>f"), [true]);
        assert_eq!(writes("make 2> err.log"), [true]);
        assert_eq!(writes("make &> all.log"), [true]);
        assert_eq!(writes("make >| f"), [true]);
        assert_eq!(writes("make >&out.txt"), [true]);
        assert_eq!(writes("echo hi > 'my file'"), [true]);
        assert_eq!(texts("echo hi >'a; b'c; ls"), ["echo hi >'a; b'c", "ls"]);
        assert_eq!(writes("make >/dev/null; ls"), [false, false]);
        assert_eq!(writes("make 2>&1"), [false]);
        assert_eq!(writes("echo oops >&2"), [false]);
        assert_eq!(writes("make > /dev/null 2>&1"), [false]);
        assert_eq!(writes("make &>/dev/null"), [false]);
        assert_eq!(writes("sort < in.txt"), [false]);
        assert_eq!(writes("echo '>' f"), [false]);
        assert_eq!(writes("echo \"a > b\""), [false]);
        assert_eq!(writes("cat x | tee out > f; ls"), [false, true, false]);
        assert_eq!(writes("(a; b) > f"), [false, false, true]);
        assert_eq!(texts("(a; b) > f"), ["a", "b", "> f"]);
    }

    #[test]
    fn here_documents() {
        let cmd = "cat <<EOF > notes.txt\nrm -rf /; ls\n$(id)\nEOF\necho done";
        assert_eq!(texts(cmd), ["cat <<EOF > notes.txt", "id", "echo done"]);
        assert_eq!(writes(cmd), [true, false, false]);
        let quoted = "cat <<'EOF'\n$(id)\nEOF\nls";
        assert_eq!(texts(quoted), ["cat <<'EOF'", "ls"]);
        let spaced = "cat <<'A B'>f\n$(id)\nA B\nls";
        assert_eq!(texts(spaced), ["cat <<'A B'>f", "ls"]);
        assert_eq!(writes(spaced), [true, false]);
        let tabs = "cat <<-END\n\tx\n\tEND\nls";
        assert_eq!(texts(tabs), ["cat <<-END", "ls"]);
        assert_eq!(texts("cat <<< 'a; b'"), ["cat <<< 'a; b'"]);
        assert_eq!(texts("cat <<EOF\nno end"), ["cat <<EOF"]);
    }

    #[test]
    fn what_cannot_be_read_is_an_error() {
        for bad in [
            "echo 'open",
            "echo \"open",
            "echo $(ls",
            "echo `ls",
            "(ls",
            "cat <<",
        ] {
            assert!(split(bad).is_err(), "{bad:?}");
        }
        // Nesting past the limit, however long the line: an error, never a
        // stack overflow.
        let deep = "echo $(".repeat(100_000) + &")".repeat(100_000);
        assert!(split(&deep)
            .unwrap_err()
            .contains("nested more than 64 deep"));
        let deep = "(".repeat(100_000) + "ls" + &")".repeat(100_000);
        assert!(split(&deep).is_err());
        let fine = "echo $(".repeat(60) + &")".repeat(60);
        assert_eq!(split(&fine).unwrap().len(), 60);
    }

    #[test]
    fn multibyte_text_is_kept() {
        assert_eq!(
            texts("echo 'héllo; wörld' ; ls ü"),
            ["echo 'héllo; wörld'", "ls ü"]
        );
    }
}
