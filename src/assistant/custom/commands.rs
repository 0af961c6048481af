//! Custom commands (decision 84): a Markdown file is a slash command whose
//! body is the message sent. Its front matter may give a `description`, an
//! `argument-hint`, a `model` and `allowed-tools` for that one message; the
//! body's `$ARGUMENTS` and `$1`..`$9` take what was typed after the name,
//! `@PATH` a file's contents and `` !`COMMAND` `` a command's output.
//!
//! This module reads the commands and rewrites a body; the file reads and
//! the commands themselves run as tool calls (file_read, bash) through the
//! approval and the sandbox like any call, so a command file can reach no
//! more than the model could (decision 120). What a file or a command gave
//! is never scanned again: an included file cannot run anything.

use std::path::PathBuf;

use super::{Kind, Listing, Origin, Places, Warning};

/// One command.
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    /// `NAME`, or `DIR:NAME` for a file in a subfolder.
    pub name: String,
    /// The front matter's, else the body's first line.
    pub description: String,
    /// `argument-hint`: what to type after the name.
    pub hint: Option<String>,
    /// `model`: the model of this message only.
    pub model: Option<String>,
    /// `allowed-tools`: rules (as `--allow`) for this message only.
    pub allowed: Vec<String>,
    pub body: String,
    pub path: PathBuf,
    pub origin: Origin,
}

/// The commands found, and the files not used, each with why.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Commands {
    pub list: Vec<Command>,
    pub skipped: Vec<(PathBuf, String)>,
}

impl Commands {
    pub fn find(&self, name: &str) -> Option<&Command> {
        self.list.iter().find(|c| c.name == name)
    }

    /// (name, description, argument hint) of each command: what an editor
    /// lists (decision 88).
    pub fn menu(&self) -> Vec<(String, String, String)> {
        self.list
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    c.description.clone(),
                    c.hint.clone().unwrap_or_default(),
                )
            })
            .collect()
    }
}

/// Reads the commands of `places`. A file named as a built-in command is
/// never used (it is listed as skipped), nor one of a name a file of
/// higher precedence took.
pub fn load(places: &Places) -> (Commands, Vec<Warning>) {
    let Listing {
        docs,
        overridden,
        mut warnings,
    } = super::list(Kind::Commands, places);
    let builtin: Vec<&str> = crate::assistant::commands::names().collect();
    let mut commands = Commands::default();
    for doc in docs {
        if builtin.contains(&doc.name.as_str()) {
            let why = format!(
                "/{} is a built-in command, which a file never replaces",
                doc.name
            );
            warnings.push(Warning::new(&doc.path, format!("skipped: {why}")));
            commands.skipped.push((doc.path, why));
            continue;
        }
        let field = |key: &str| match doc.meta.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(_) => doc
                .field(key)
                .map(Some)
                .ok_or_else(|| format!("field '{key}' is not a text")),
        };
        let read = (|| {
            let description = field("description")?;
            // `argument-hint: [message]` is a YAML list, written as a hint.
            let hint = match doc.meta.get("argument-hint") {
                Some(serde_json::Value::Array(items)) => {
                    let items: Vec<String> = items
                        .iter()
                        .map(|i| i.as_str().map_or(i.to_string(), str::to_string))
                        .collect();
                    Some(format!("[{}]", items.join(", ")))
                }
                _ => field("argument-hint")?,
            };
            let model = field("model")?;
            let allowed = match doc.meta.get("allowed-tools") {
                None | Some(serde_json::Value::Null) => Vec::new(),
                Some(_) => doc
                    .list("allowed-tools")
                    .ok_or("field 'allowed-tools' is neither a list nor a text")?,
            };
            Ok::<_, String>((description, hint, model, allowed))
        })();
        let (description, hint, model, allowed) = match read {
            Ok(read) => read,
            Err(why) => {
                warnings.push(Warning::new(&doc.path, format!("skipped: {why}")));
                commands.skipped.push((doc.path, why));
                continue;
            }
        };
        let description = description.unwrap_or_else(|| first_line(&doc.body));
        commands.list.push(Command {
            name: doc.name,
            description,
            hint,
            model,
            allowed,
            body: doc.body,
            path: doc.path,
            origin: doc.origin,
        });
    }
    for (doc, by) in overridden {
        commands.skipped.push((
            doc.path,
            format!("/{} is taken by {}", doc.name, by.display()),
        ));
    }
    (commands, warnings)
}

/// The body's first line that says something, for a command without a
/// description.
fn first_line(body: &str) -> String {
    let line = body
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    crate::host::text::clip(line, 80)
}

/// The typed arguments' words: split at spaces, quotes grouping (`"two
/// words"` is one), the quotes themselves dropped.
pub fn words(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote = None;
    let mut any = false;
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => match chars.next() {
                Some(next) => current.push(next),
                None => current.push('\\'),
            },
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
                any = false;
            }
            (None, c) => current.push(c),
        }
    }
    if any || !current.is_empty() {
        words.push(current);
    }
    words
}

/// The body with `$ARGUMENTS` and `$1`..`$9` put in. A body that names
/// neither gets the arguments appended, so nothing typed is lost.
pub fn with_arguments(body: &str, args: &str) -> String {
    let words = words(args);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            used = true;
            rest = tail;
        } else if let Some(d) = after.bytes().next().filter(|b| (b'1'..=b'9').contains(b)) {
            let index = usize::from(d - b'1');
            out.push_str(words.get(index).map_or("", String::as_str));
            used = true;
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    if !used && !args.trim().is_empty() {
        out = format!("{}\n\nARGUMENTS: {}", out.trim_end(), args.trim());
    }
    out
}

/// A part of a body: text as it is, a file to put in, or a command whose
/// output to put in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    /// `@PATH`: at the start or after a space, up to the next space,
    /// trailing punctuation left out.
    File(&'a str),
    /// `` !`COMMAND` ``.
    Shell(&'a str),
}

/// Splits `text` into its pieces.
pub fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut at = 0;
    let bytes = text.as_bytes();
    while at < bytes.len() {
        let follows_space = at == 0 || bytes[at - 1].is_ascii_whitespace();
        if bytes[at] == b'!' && text[at + 1..].starts_with('`') {
            if let Some(end) = text[at + 2..].find('`') {
                let command = &text[at + 2..at + 2 + end];
                if !command.trim().is_empty() {
                    out.push(Piece::Text(&text[start..at]));
                    out.push(Piece::Shell(command));
                    at += end + 3;
                    start = at;
                    continue;
                }
            }
        }
        if bytes[at] == b'@' && follows_space {
            let len = text[at + 1..]
                .find(|c: char| c.is_whitespace() || c == '`')
                .unwrap_or(text.len() - at - 1);
            let path = text[at + 1..at + 1 + len]
                .trim_end_matches(['.', ',', ';', ':', ')', '!', '?', '"', '\'']);
            if !path.is_empty() && !path.starts_with('@') {
                out.push(Piece::Text(&text[start..at]));
                out.push(Piece::File(path));
                at += 1 + path.len();
                start = at;
                continue;
            }
        }
        at += text[at..].chars().next().map_or(1, char::len_utf8);
    }
    out.push(Piece::Text(&text[start..]));
    out.retain(|p| *p != Piece::Text(""));
    out
}

/// Claude Code's tool names in `allowed-tools`, as ours (decision 83's
/// table), and its `Bash(git add:*)` prefix form as our `*`.
pub fn rule_text(item: &str) -> Vec<String> {
    let (tool, pattern) = match item.split_once('(') {
        Some((tool, rest)) => (tool.trim(), Some(rest)),
        None => (item.trim(), None),
    };
    let tools: &[&str] = match tool {
        "Bash" => &["bash"],
        "Read" => &["file_read"],
        "Write" => &["file_write"],
        "Edit" | "MultiEdit" => &["file_edit", "apply_patch"],
        "Glob" => &["glob"],
        "Grep" => &["grep"],
        "WebFetch" => &["web_fetch"],
        "WebSearch" => &["web_search_brave", "web_search_google"],
        _ => return vec![item.trim().to_string()],
    };
    tools
        .iter()
        .map(|t| match pattern {
            Some(p) => {
                let p = p.trim_end_matches(')');
                let p = p
                    .strip_suffix(":*")
                    .map_or(p.to_string(), |s| format!("{s}*"));
                format!("{t}({p})")
            }
            None => t.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_group_quotes() {
        assert_eq!(
            words(r#"fix "the login bug" 'in src' x"#),
            ["fix", "the login bug", "in src", "x"]
        );
        assert_eq!(words(r#"a "" b"#), ["a", "", "b"]);
        assert_eq!(words(r#""say \"hi\"""#), [r#"say "hi""#]);
        assert!(words("   ").is_empty());
    }

    #[test]
    fn arguments_and_positions_are_put_in() {
        let body = "Fix bug $1 in $2 ($ARGUMENTS); $3 is empty; $ stays, $0 stays, $HOME stays";
        assert_eq!(
            with_arguments(body, r#"42 "src/a b.rs""#),
            r#"Fix bug 42 in src/a b.rs (42 "src/a b.rs");  is empty; $ stays, $0 stays, $HOME stays"#
        );
        assert_eq!(
            with_arguments("Review it.\n", "carefully"),
            "Review it.\n\nARGUMENTS: carefully"
        );
        assert_eq!(with_arguments("Review it.\n", ""), "Review it.\n");
        // An argument is not read again: its `$1` stays as typed.
        assert_eq!(with_arguments("$ARGUMENTS", "$1"), "$1");
    }

    #[test]
    fn pieces_find_files_and_commands() {
        use Piece::*;
        assert_eq!(
            pieces("See @src/main.rs, and !`git status`. Mail me@x.org; @@no; !`` stays"),
            [
                Text("See "),
                File("src/main.rs"),
                Text(", and "),
                Shell("git status"),
                Text(". Mail me@x.org; @@no; !`` stays")
            ]
        );
        assert_eq!(pieces("@notes.txt"), [File("notes.txt")]);
        assert_eq!(pieces("!`unclosed"), [Text("!`unclosed")]);
    }

    #[test]
    fn claude_rules_become_ours() {
        assert_eq!(rule_text("Bash(git add:*)"), ["bash(git add*)"]);
        assert_eq!(rule_text("Edit"), ["file_edit", "apply_patch"]);
        assert_eq!(rule_text("file_read(src/**)"), ["file_read(src/**)"]);
    }
}
