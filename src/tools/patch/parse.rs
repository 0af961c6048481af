//! The patch format of decision 67, read into operations. Nothing here
//! touches a file: the host may parse a patch to learn which paths a call
//! may change (`apply_patch::paths`) without running it.
//!
//! The reading is as lenient as the models that write it need (docs/apply-patch.md):
//! markers are recognised with the whitespace around them ignored; a patch
//! wrapped in a shell heredoc (`<<'EOF'` ... `EOF`) is unwrapped; the first
//! chunk of an update may omit its `@@`; a blank line inside a chunk is an
//! empty context line; a unified-diff range after `@@` (`@@ -3,7 +3,8 @@`)
//! is a plain `@@`. Anything else that is not the format is an error naming
//! the patch's line.

/// One operation of a patch, in the order written.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Add {
        path: String,
        lines: Vec<String>,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        move_to: Option<String>,
        chunks: Vec<Chunk>,
    },
}

impl Op {
    pub fn path(&self) -> &str {
        match self {
            Op::Add { path, .. } | Op::Delete { path } | Op::Update { path, .. } => path,
        }
    }

    /// The operation as the patch names it, for messages:
    /// `Update File: src/a.rs`.
    pub fn header(&self) -> String {
        match self {
            Op::Add { path, .. } => format!("Add File: {path}"),
            Op::Delete { path } => format!("Delete File: {path}"),
            Op::Update {
                path,
                move_to: Some(to),
                ..
            } => format!("Update File: {path} (Move to: {to})"),
            Op::Update { path, .. } => format!("Update File: {path}"),
        }
    }
}

/// One `@@` chunk of an update: the line to find first, the lines it
/// expects (context and removed, in order) and the lines that replace them
/// (context and added).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chunk {
    pub context: Option<String>,
    pub old: Vec<String>,
    pub new: Vec<String>,
    /// `*** End of File`: the lines must be the file's last.
    pub end_of_file: bool,
    pub added: usize,
    pub removed: usize,
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// A patch that is not in the format: the message names the patch's line.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError(pub String);

/// Reads a whole patch. An empty patch (no operation) is an error: it is
/// never what the model meant.
pub fn parse(text: &str) -> Result<Vec<Op>, ParseError> {
    let mut lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let mut first = 0;
    while first < lines.len() && lines[first].trim().is_empty() {
        first += 1;
    }
    let mut lines = &lines[first..];
    // A heredoc as a shell would be given it: `<<'EOF'` ... `EOF`.
    if let (Some(open), Some(close)) = (lines.first(), lines.last()) {
        let open = open.trim();
        let tag = open
            .strip_prefix("<<")
            .map(|t| t.trim().trim_matches(|c| c == '\'' || c == '"'));
        if lines.len() >= 2 && tag.is_some_and(|t| !t.is_empty() && t == close.trim()) {
            lines = &lines[1..lines.len() - 1];
        }
    }
    match lines.first() {
        Some(l) if l.trim() == BEGIN => {}
        Some(l) => {
            return Err(ParseError(format!(
                "the first line of the patch must be '{BEGIN}', not '{}'",
                l.trim()
            )))
        }
        None => {
            return Err(ParseError(format!(
                "the patch is empty: it must start with '{BEGIN}'"
            )))
        }
    }
    match lines.last() {
        Some(l) if lines.len() >= 2 && l.trim() == END => {}
        _ => {
            return Err(ParseError(format!(
                "the last line of the patch must be '{END}'"
            )))
        }
    }
    let body = &lines[1..lines.len() - 1];
    let mut reader = Reader { lines: body, at: 0 };
    let mut ops = Vec::new();
    while let Some(line) = reader.peek() {
        let marker = line.trim();
        if marker.is_empty() {
            reader.at += 1;
        } else if let Some(path) = marker.strip_prefix(ADD) {
            reader.at += 1;
            let path = path_of(path, &reader)?;
            let mut content = Vec::new();
            while let Some(line) = reader.peek() {
                match line.strip_prefix('+') {
                    Some(text) => content.push(text.to_string()),
                    None => break,
                }
                reader.at += 1;
            }
            ops.push(Op::Add {
                path,
                lines: content,
            });
        } else if let Some(path) = marker.strip_prefix(DELETE) {
            reader.at += 1;
            ops.push(Op::Delete {
                path: path_of(path, &reader)?,
            });
        } else if let Some(path) = marker.strip_prefix(UPDATE) {
            reader.at += 1;
            let path = path_of(path, &reader)?;
            let move_to = match reader.peek().map(str::trim) {
                Some(l) if l.starts_with(MOVE) => {
                    reader.at += 1;
                    Some(path_of(&l[MOVE.len()..], &reader)?)
                }
                _ => None,
            };
            let chunks = reader.chunks(&path)?;
            ops.push(Op::Update {
                path,
                move_to,
                chunks,
            });
        } else {
            return Err(reader.error(format!(
                "'{marker}' is not an operation: expected '{ADD} PATH', '{DELETE} PATH' or \
                 '{UPDATE} PATH'"
            )));
        }
    }
    if ops.is_empty() {
        return Err(ParseError(
            "the patch holds no operation: nothing to do".to_string(),
        ));
    }
    Ok(ops)
}

fn path_of(text: &str, reader: &Reader) -> Result<String, ParseError> {
    let path = text.trim();
    if path.is_empty() {
        return Err(reader.error_before("the operation names no path".to_string()));
    }
    Ok(path.to_string())
}

/// The operations' lines (between the Begin and End markers) and a cursor.
struct Reader<'a> {
    lines: &'a [&'a str],
    at: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.lines.get(self.at).copied()
    }

    /// An error about the current line; lines are counted from the Begin
    /// marker, which is line 1.
    fn error(&self, message: String) -> ParseError {
        ParseError(format!("patch line {}: {message}", self.at + 2))
    }

    fn error_before(&self, message: String) -> ParseError {
        ParseError(format!("patch line {}: {message}", self.at + 1))
    }

    /// The chunks of an update, up to the next operation.
    fn chunks(&mut self, path: &str) -> Result<Vec<Chunk>, ParseError> {
        let mut chunks = Vec::new();
        while let Some(line) = self.peek() {
            let trimmed = line.trim();
            if trimmed.is_empty() && !chunks.is_empty() {
                self.at += 1;
                continue;
            }
            if trimmed.starts_with("***") && trimmed != END_OF_FILE {
                break;
            }
            let context = if trimmed == "@@" {
                self.at += 1;
                None
            } else if let Some(rest) = line.strip_prefix("@@ ") {
                self.at += 1;
                if is_unified_range(rest) {
                    None
                } else {
                    Some(rest.to_string())
                }
            } else if chunks.is_empty() {
                None
            } else {
                return Err(self.error(format!(
                    "expected '@@' to start the next chunk of '{path}', not '{line}'"
                )));
            };
            let mut chunk = Chunk {
                context,
                ..Chunk::default()
            };
            let start = self.at;
            // Literally empty lines at the chunk's end so far.
            let mut blanks = 0;
            while let Some(line) = self.peek() {
                if line.trim() == END_OF_FILE {
                    chunk.end_of_file = true;
                    self.at += 1;
                    break;
                }
                match line.chars().next() {
                    None => {
                        chunk.old.push(String::new());
                        chunk.new.push(String::new());
                        blanks += 1;
                        self.at += 1;
                        continue;
                    }
                    Some(' ') => {
                        chunk.old.push(line[1..].to_string());
                        chunk.new.push(line[1..].to_string());
                    }
                    Some('-') => {
                        chunk.old.push(line[1..].to_string());
                        chunk.removed += 1;
                    }
                    Some('+') => {
                        chunk.new.push(line[1..].to_string());
                        chunk.added += 1;
                    }
                    Some(_) if self.at == start => {
                        return Err(self.error(format!(
                            "'{line}' in a chunk of '{path}': every line of a chunk starts \
                             with ' ' (context), '-' (removed) or '+' (added)"
                        )));
                    }
                    Some(_) => break,
                }
                blanks = 0;
                self.at += 1;
            }
            if self.at == start {
                return Err(self.error(format!("a chunk of '{path}' holds no lines")));
            }
            // Blank lines before the next operation are separators, not
            // context the file must end with.
            if !chunk.end_of_file && self.peek().is_none_or(|l| l.trim().starts_with("***")) {
                chunk.old.truncate(chunk.old.len() - blanks);
                chunk.new.truncate(chunk.new.len() - blanks);
            }
            chunks.push(chunk);
        }
        if chunks.is_empty() {
            return Err(self.error_before(format!(
                "the update of '{path}' holds no chunk: give '@@' and the lines to change"
            )));
        }
        Ok(chunks)
    }
}

/// `-3,7 +3,8 @@` (with or without the closing `@@`): a unified diff's
/// range, which locates nothing in this format.
fn is_unified_range(text: &str) -> bool {
    let mut parts = text.split_whitespace();
    let range = |p: Option<&str>, sign: char| {
        p.and_then(|p| p.strip_prefix(sign)).is_some_and(|r| {
            !r.is_empty()
                && r.split(',')
                    .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    range(parts.next(), '-')
        && range(parts.next(), '+')
        && matches!(parts.next(), None | Some("@@"))
        && parts.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Vec<Op> {
        parse(text).unwrap_or_else(|e| panic!("{e:?}"))
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err().0
    }

    #[test]
    fn reads_every_operation() {
        let ops = ok(
            "*** Begin Patch\n*** Add File: a.txt\n+one\n+\n*** Delete File: b\n\
             *** Update File: c\n*** Move to: d/c\n@@ fn main\n ctx\n-old\n+new\n\
             @@\n-x\n*** End of File\n*** End Patch\n",
        );
        assert_eq!(ops.len(), 3);
        assert_eq!(
            ops[0],
            Op::Add {
                path: "a.txt".into(),
                lines: vec!["one".into(), "".into()]
            }
        );
        assert_eq!(ops[1], Op::Delete { path: "b".into() });
        let Op::Update {
            path,
            move_to,
            chunks,
        } = &ops[2]
        else {
            panic!()
        };
        assert_eq!((path.as_str(), move_to.as_deref()), ("c", Some("d/c")));
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].context.as_deref(), Some("fn main"));
        assert_eq!(chunks[0].old, ["ctx", "old"]);
        assert_eq!(chunks[0].new, ["ctx", "new"]);
        assert_eq!((chunks[0].added, chunks[0].removed), (1, 1));
        assert!(!chunks[0].end_of_file && chunks[1].end_of_file);
        assert_eq!(chunks[1].old, ["x"]);
        assert!(chunks[1].new.is_empty());
    }

    #[test]
    fn lenient_where_models_are_loose() {
        // Padded markers, CRLF, a heredoc, a first chunk without @@, a
        // unified range after @@, blank lines between operations.
        let ops = ok(
            "<<'EOF'\r\n *** Begin Patch \r\n  *** Update File: f\r\n-a\r\n+b\r\n\
             @@ -10,3 +10,3 @@\r\n-c\r\n+d\r\n\r\n*** Delete File: g\r\n*** End Patch \r\nEOF\r\n",
        );
        let Op::Update { chunks, .. } = &ops[0] else {
            panic!()
        };
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].context, None);
        assert_eq!(chunks[1].context, None);
        assert_eq!(chunks[1].old, ["c"]);
        assert_eq!(ops[1], Op::Delete { path: "g".into() });
    }

    #[test]
    fn a_blank_line_inside_a_chunk_is_context() {
        let ops = ok("*** Begin Patch\n*** Update File: f\n@@\n a\n\n-b\n*** End Patch");
        let Op::Update { chunks, .. } = &ops[0] else {
            panic!()
        };
        assert_eq!(chunks[0].old, ["a", "", "b"]);
    }

    #[test]
    fn bad_patches_are_named() {
        assert!(err("*** Update File: f\n*** End Patch").contains("first line"));
        assert!(err("*** Begin Patch\n*** Delete File: f\n").contains("last line"));
        assert!(err("").contains("empty"));
        assert!(err("*** Begin Patch\n*** End Patch").contains("no operation"));
        let e = err("*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch");
        assert!(
            e.starts_with("patch line 2: '*** Frobnicate File: foo' is not an operation"),
            "{e}"
        );
        let e = err("*** Begin Patch\n*** Update File: foo\n*** End Patch");
        assert!(e.contains("holds no chunk"), "{e}");
        let e = err("*** Begin Patch\n*** Update File: foo\n@@\n*** End Patch");
        assert!(e.contains("holds no lines"), "{e}");
        let e = err("*** Begin Patch\n*** Update File: foo\n@@\nbad\n*** End Patch");
        assert!(e.starts_with("patch line 4: 'bad'"), "{e}");
        let e = err("*** Begin Patch\n*** Update File: foo\n@@\n-a\nbad\n*** End Patch");
        assert!(e.contains("expected '@@'"), "{e}");
        assert!(err("*** Begin Patch\n*** Add File: \n*** End Patch").contains("no path"));
    }

    #[test]
    fn unified_ranges() {
        assert!(is_unified_range("-3,7 +3,8 @@"));
        assert!(is_unified_range("-1 +1"));
        assert!(!is_unified_range("fn main() {"));
        assert!(!is_unified_range("-x +y @@"));
    }
}
