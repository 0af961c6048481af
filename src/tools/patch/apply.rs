//! Applying an update's chunks to a file's content (decision 67): finding
//! each chunk's lines in four steps (exactly; ignoring trailing whitespace;
//! ignoring leading and trailing whitespace; with Unicode dashes, quotes
//! and spaces read as ASCII), refusing a chunk whose lines occur twice
//! (decision 103), and writing the result with the file's own line endings.
//!
//! The file is held as lines of its own bytes: a line the patch does not
//! replace is written back byte for byte (its `\r\n` or `\n`, bytes that are
//! not UTF-8); a new line gets the file's line ending (that of its first
//! line), so a CRLF file stays CRLF; a UTF-8 byte order mark stays in
//! front. The last line keeps a missing final newline unless the patch
//! replaces it or adds lines after it.
//!
//! Exact matches are looked up in an index of where each line the chunks
//! name occurs in the file (one pass over the file per update, hashing only
//! lines of a length some chunk line has, into a table as small as the
//! patch), anchored on the chunk's rarest line: a 200-chunk patch of a
//! 100,000-line file costs that pass plus a few comparisons per chunk, and
//! checking that a chunk occurs only once rescans nothing. The looser steps
//! scan, and run only when the exact step found nothing.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::parse::Chunk;
use crate::error::ErrorCode;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A file's content as lines of its own bytes.
pub struct Text<'a> {
    bom: bool,
    /// Each line without its ending, and its ending (`\n`, `\r\n`, or
    /// nothing for a last line without one).
    lines: Vec<(&'a [u8], &'a [u8])>,
    /// The ending new lines get.
    ending: &'a [u8],
}

impl<'a> Text<'a> {
    pub fn new(content: &'a [u8]) -> Text<'a> {
        let bom = content.starts_with(BOM);
        let body = if bom { &content[BOM.len()..] } else { content };
        let mut lines = Vec::with_capacity(memchr::memchr_iter(b'\n', body).count() + 1);
        let mut start = 0;
        for at in memchr::memchr_iter(b'\n', body) {
            let end = if at > start && body[at - 1] == b'\r' {
                at - 1
            } else {
                at
            };
            lines.push((&body[start..end], &body[end..=at]));
            start = at + 1;
        }
        if start < body.len() {
            lines.push((&body[start..], &body[body.len()..]));
        }
        let ending = lines
            .first()
            .map(|l| l.1)
            .filter(|e| !e.is_empty())
            .unwrap_or(b"\n");
        Text { bom, lines, ending }
    }
}

/// Why a chunk did not apply: the code and the message (without the
/// operation, which the caller names).
pub type Failure = (ErrorCode, String);

/// The content after every chunk, in order: each chunk is looked for from
/// where the previous one ended.
pub fn apply(text: &Text, chunks: &[Chunk]) -> Result<Vec<u8>, Failure> {
    let finder = Finder::new(text, chunks);
    let n = text.lines.len();
    let mut cursor = 0;
    // (start line, lines replaced, new lines), in file order once sorted.
    let mut edits: Vec<(usize, usize, &[String])> = Vec::with_capacity(chunks.len());
    for (k, chunk) in chunks.iter().enumerate() {
        let name = || chunk_name(k, chunks.len(), chunk);
        if let Some(context) = &chunk.context {
            match finder.first_line(context, cursor) {
                Some(at) => cursor = at + 1,
                None => {
                    return Err((
                        ErrorCode::NotFound,
                        format!(
                            "{}: the line '{context}' that '@@' names is not in the file{}\n{}",
                            name(),
                            after(cursor),
                            nearest(text, std::slice::from_ref(context), cursor)
                        ),
                    ))
                }
            }
        }
        if chunk.old.is_empty() {
            // Pure addition: after the `@@` line when there is one,
            // else at the end of the file.
            let at = if chunk.context.is_some() && !chunk.end_of_file {
                cursor
            } else {
                n
            };
            edits.push((at, 0, &chunk.new));
            cursor = at;
            continue;
        }
        let (mut old, mut new) = (&chunk.old[..], &chunk.new[..]);
        let mut found = finder.find(old, cursor, chunk.end_of_file);
        // A blank line the model put after the chunk's last line, which the
        // file does not have there.
        if found.is_none() && old.len() > 1 && old.last().is_some_and(|l| l.trim().is_empty()) {
            old = &old[..old.len() - 1];
            if new.last().is_some_and(|l| l.trim().is_empty()) {
                new = &new[..new.len() - 1];
            }
            found = finder.find(old, cursor, chunk.end_of_file);
        }
        match found {
            Some((at, None)) => {
                edits.push((at, old.len(), new));
                cursor = at + old.len();
            }
            Some((first, Some(second))) => {
                return Err((
                    ErrorCode::NotUnique,
                    format!(
                        "{}: its lines occur more than once{} (at lines {} and {}), so the \
                         place is ambiguous: add context lines around the change, or an \
                         '@@ LINE' header naming a line above it, such as its function's \
                         signature",
                        name(),
                        after(cursor),
                        first + 1,
                        second + 1
                    ),
                ))
            }
            None => {
                let where_ = if chunk.end_of_file {
                    " at the end of the file".to_string()
                } else {
                    after(cursor)
                };
                return Err((
                    ErrorCode::NotFound,
                    format!(
                        "{}: could not find these lines{where_}, even ignoring whitespace and \
                         Unicode punctuation:\n{}\n{}",
                        name(),
                        quoted(&chunk.old),
                        nearest(text, &chunk.old, cursor)
                    ),
                ));
            }
        }
    }
    edits.sort_by_key(|e| e.0);
    Ok(render(text, &edits))
}

/// `chunk 2 of 3 (@@ fn main)`.
fn chunk_name(k: usize, of: usize, chunk: &Chunk) -> String {
    match &chunk.context {
        Some(c) => format!("chunk {} of {of} (@@ {c})", k + 1),
        None => format!("chunk {} of {of}", k + 1),
    }
}

fn after(cursor: usize) -> String {
    if cursor == 0 {
        String::new()
    } else {
        format!(" after line {cursor} (where the chunk before it ended)")
    }
}

fn quoted(lines: &[String]) -> String {
    let mut out: Vec<String> = lines.iter().take(12).map(|l| format!("  {l}")).collect();
    if lines.len() > 12 {
        out.push(format!("  ... ({} more lines)", lines.len() - 12));
    }
    out.join("\n")
}

/// The file's lines most like `wanted`: the window where the most of its
/// lines are equal ignoring whitespace and punctuation (the first such from
/// `cursor` on, else from the start), shown with their line numbers.
fn nearest(text: &Text, wanted: &[String], cursor: usize) -> String {
    let n = text.lines.len();
    if n == 0 {
        return "The file is empty.".to_string();
    }
    let keys: Vec<String> = wanted.iter().map(|w| loose(w)).collect();
    let file: Vec<String> = text.lines.iter().map(|l| loose(&lossy(l.0))).collect();
    let mut best = (0usize, 0usize); // (score, start)
    let starts = (cursor.min(n - 1)..n).chain(0..cursor.min(n));
    for start in starts {
        let score = keys
            .iter()
            .enumerate()
            .filter(|(j, k)| {
                file.get(start + j)
                    .is_some_and(|l| l == *k && !k.is_empty())
            })
            .count();
        if score > best.0 {
            best = (score, start);
        }
    }
    if best.0 == 0 {
        // No line in common: the closest line to the first one wanted, by
        // the characters they share at their start.
        let first = keys
            .iter()
            .find(|k| !k.is_empty())
            .cloned()
            .unwrap_or_default();
        let (mut score, mut at) = (0, cursor.min(n - 1));
        for (i, line) in file.iter().enumerate() {
            let shared = line
                .chars()
                .zip(first.chars())
                .take_while(|(a, b)| a == b)
                .count();
            if shared > score {
                (score, at) = (shared, i);
            }
        }
        if score < 3 {
            return "No line of the file resembles them.".to_string();
        }
        best.1 = at;
    }
    let from = best.1.saturating_sub(1);
    let to = (best.1 + wanted.len().clamp(1, 12) + 1).min(n);
    let shown: Vec<String> = (from..to)
        .map(|i| format!("  {:>6} | {}", i + 1, lossy(text.lines[i].0)))
        .collect();
    format!(
        "The file's nearest lines ({}-{}):\n{}",
        from + 1,
        to,
        shown.join("\n")
    )
}

fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// A line as the last step compares it: trimmed, with Unicode dashes,
/// quotes and spaces as their ASCII forms.
fn loose(line: &str) -> String {
    line.trim().chars().map(ascii_form).collect()
}

/// The ASCII form of the punctuation models and editors swap in.
fn ascii_form(c: char) -> char {
    match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        c => c,
    }
}

/// The four ways a line of a chunk can equal a line of the file, in the
/// order tried.
#[derive(Clone, Copy)]
enum Step {
    Exact,
    TrimEnd,
    Trim,
    Loose,
}

impl Step {
    fn equal(self, file: &[u8], wanted: &str) -> bool {
        match self {
            Step::Exact => file == wanted.as_bytes(),
            Step::TrimEnd => lossy(file).trim_end() == wanted.trim_end(),
            Step::Trim => lossy(file).trim() == wanted.trim(),
            Step::Loose => {
                let file = lossy(file);
                let (a, b) = (file.trim(), wanted.trim());
                a.chars().map(ascii_form).eq(b.chars().map(ascii_form))
            }
        }
    }
}

const STEPS: [Step; 4] = [Step::Exact, Step::TrimEnd, Step::Trim, Step::Loose];

/// Where a chunk's lines are, and where else (a second place, if any).
type Found = Option<(usize, Option<usize>)>;

/// Looks lines up in a file: exact lines through an index of where each
/// line the chunks name occurs, the other steps by scanning.
struct Finder<'t, 'a, 'c> {
    text: &'t Text<'a>,
    /// Each distinct line of the chunks (context and expected lines): the
    /// file's lines equal to it, ascending. Only these are indexed, so the
    /// table stays small (cache-resident) however long the file.
    index: HashMap<&'c [u8], Vec<u32>, BuildHasherDefault<LineHasher>>,
}

impl<'t, 'a, 'c> Finder<'t, 'a, 'c> {
    fn new(text: &'t Text<'a>, chunks: &'c [Chunk]) -> Self {
        let mut index: HashMap<&'c [u8], Vec<u32>, _> = HashMap::default();
        // The lengths the chunks' lines have: most of the file's lines are
        // passed over without being hashed.
        let mut lengths = [false; 256];
        let mut long = false;
        for line in chunks.iter().flat_map(|c| c.context.iter().chain(&c.old)) {
            index.entry(line.as_bytes()).or_default();
            match lengths.get_mut(line.len()) {
                Some(seen) => *seen = true,
                None => long = true,
            }
        }
        if !index.is_empty() {
            for (i, (line, _)) in text.lines.iter().enumerate() {
                if !lengths.get(line.len()).copied().unwrap_or(long) {
                    continue;
                }
                if let Some(at) = index.get_mut(*line) {
                    at.push(i as u32);
                }
            }
        }
        Finder { text, index }
    }

    /// The positions of an exact line (one of the chunks'), ascending, from
    /// `from` on.
    fn positions(&self, line: &str, from: usize) -> impl Iterator<Item = usize> + '_ {
        let all = self
            .index
            .get(line.as_bytes())
            .map_or(&[][..], Vec::as_slice);
        let start = all.partition_point(|&p| (p as usize) < from);
        all[start..].iter().map(|&p| p as usize)
    }

    /// The first line from `from` on that equals `line` at the earliest
    /// step that finds one.
    fn first_line(&self, line: &str, from: usize) -> Option<usize> {
        if let Some(at) = self.positions(line, from).next() {
            return Some(at);
        }
        STEPS[1..].iter().find_map(|step| {
            (from..self.text.lines.len()).find(|&i| step.equal(self.text.lines[i].0, line))
        })
    }

    /// Where `pattern` occurs from `from` on (at the very end of the file
    /// only, when `end`), at the earliest step that finds it anywhere;
    /// with a second place when it occurs twice at that step.
    fn find(&self, pattern: &[String], from: usize, end: bool) -> Found {
        let n = self.text.lines.len();
        let m = pattern.len();
        if m > n || from > n - m {
            return None;
        }
        let lines = &self.text.lines;
        let fits = |step: Step, start: usize| {
            pattern
                .iter()
                .zip(&lines[start..start + m])
                .all(|(p, l)| step.equal(l.0, p))
        };
        if end {
            return STEPS
                .iter()
                .any(|&s| fits(s, n - m))
                .then_some((n - m, None));
        }
        // Exact: anchored on the pattern's rarest line.
        let anchor = pattern
            .iter()
            .enumerate()
            .map(|(j, p)| (self.index.get(p.as_bytes()).map_or(0, Vec::len), j))
            .min();
        if let Some((count, j)) = anchor {
            if count > 0 {
                let mut places = self
                    .positions(&pattern[j], from + j)
                    .filter(|&p| p - j + m <= n)
                    .map(|p| p - j)
                    .filter(|&start| fits(Step::Exact, start));
                if let Some(first) = places.next() {
                    return Some((first, places.next()));
                }
            }
        }
        for &step in &STEPS[1..] {
            let mut places = (from..=n - m).filter(|&start| fits(step, start));
            if let Some(first) = places.next() {
                return Some((first, places.next()));
            }
        }
        None
    }
}

/// The new content: the file's lines with each edit's lines in place of
/// the ones it replaces.
fn render(text: &Text, edits: &[(usize, usize, &[String])]) -> Vec<u8> {
    let old: usize = text.lines.iter().map(|l| l.0.len() + l.1.len()).sum();
    let new: usize = edits
        .iter()
        .flat_map(|e| e.2)
        .map(|l| l.len() + text.ending.len())
        .sum();
    let mut out = Vec::with_capacity(BOM.len() + old + new + text.ending.len());
    if text.bom {
        out.extend_from_slice(BOM);
    }
    // A last line without ending that more lines now follow needs one.
    let mut open = false;
    let mut put = |out: &mut Vec<u8>, line: &[u8], ending: &[u8]| {
        if open {
            out.extend_from_slice(text.ending);
        }
        out.extend_from_slice(line);
        out.extend_from_slice(ending);
        open = ending.is_empty();
    };
    let mut pos = 0;
    for &(start, len, new) in edits {
        for &(line, ending) in &text.lines[pos..start] {
            put(&mut out, line, ending);
        }
        for line in new {
            put(&mut out, line.as_bytes(), text.ending);
        }
        pos = start + len;
    }
    for &(line, ending) in &text.lines[pos..] {
        put(&mut out, line, ending);
    }
    out
}

/// A fast hash for the line index (lines are not attacker-chosen keys that
/// could make a table degrade on purpose: the worst a patch can do is a
/// slow answer): eight bytes at a time, multiply and rotate.
#[derive(Default)]
struct LineHasher(u64);

impl Hasher for LineHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes(w.try_into().unwrap_or_default()));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    fn finish(&self) -> u64 {
        // The multiplications carry differences only upwards; the table
        // takes its bucket from the low bits, so fold the high ones down
        // (MurmurHash3's finaliser), or similar lines collide.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

impl LineHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(context: Option<&str>, old: &[&str], new: &[&str]) -> Chunk {
        Chunk {
            context: context.map(str::to_string),
            old: old.iter().map(|s| s.to_string()).collect(),
            new: new.iter().map(|s| s.to_string()).collect(),
            ..Chunk::default()
        }
    }

    fn run(content: &str, chunks: &[Chunk]) -> Result<String, Failure> {
        apply(&Text::new(content.as_bytes()), chunks).map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn the_four_steps() {
        let c = |old: &str| [chunk(None, &[old], &["X"])];
        assert_eq!(run("a\nb\n", &c("b")).unwrap(), "a\nX\n");
        assert_eq!(run("a\nb  \t\n", &c("b")).unwrap(), "a\nX\n");
        assert_eq!(run("a\n    b\n", &c("b ")).unwrap(), "a\nX\n");
        assert_eq!(
            run(
                "a\nx \u{2014} \u{201C}q\u{201D}\u{00A0}\u{2019}\n",
                &c("x - \"q\" '")
            )
            .unwrap(),
            "a\nX\n"
        );
        // An earlier step wins over a later one, wherever it is.
        assert_eq!(run(" b\nb\n", &c("b")).unwrap(), " b\nX\n");
    }

    #[test]
    fn crlf_bom_and_missing_final_newline_are_kept() {
        let c = [chunk(None, &["b"], &["B", "C"])];
        assert_eq!(run("a\r\nb\r\nc\r\n", &c).unwrap(), "a\r\nB\r\nC\r\nc\r\n");
        assert_eq!(run("\u{FEFF}a\nb\nc", &c).unwrap(), "\u{FEFF}a\nB\nC\nc");
        // Replacing the last line, or adding after it, ends it.
        assert_eq!(run("a\nb", &c).unwrap(), "a\nB\nC\n");
        assert_eq!(
            run("a\nb", &[chunk(None, &[], &["z"])]).unwrap(),
            "a\nb\nz\n"
        );
    }

    #[test]
    fn context_lines_pure_additions_and_end_of_file() {
        let text = "fn a() {\n    x\n}\nfn b() {\n    x\n}\n";
        let edited = run(text, &[chunk(Some("fn b() {"), &["    x"], &["    y"])]).unwrap();
        assert_eq!(edited, "fn a() {\n    x\n}\nfn b() {\n    y\n}\n");
        let added = run(text, &[chunk(Some("fn b() {"), &[], &["    // b"])]).unwrap();
        assert_eq!(added, "fn a() {\n    x\n}\nfn b() {\n    // b\n    x\n}\n");
        let mut end = chunk(None, &["}"], &["} // end"]);
        end.end_of_file = true;
        assert!(run(text, &[end]).unwrap().ends_with("    x\n} // end\n"));
        // Chunks apply in order, each looked for (and checked to be
        // unique) after the one before.
        let two = [
            chunk(None, &["fn a() {", "    x"], &["fn a() {", "1"]),
            chunk(None, &["    x"], &["2"]),
        ];
        assert_eq!(run(text, &two).unwrap(), "fn a() {\n1\n}\nfn b() {\n2\n}\n");
    }

    #[test]
    fn a_trailing_blank_line_the_file_lacks_is_dropped() {
        let c = [chunk(None, &["b", ""], &["B", ""])];
        assert_eq!(run("a\nb\n", &c).unwrap(), "a\nB\n");
    }

    #[test]
    fn twice_is_ambiguous_and_missing_is_named() {
        let text = "fn a() {\n    x\n}\nfn b() {\n    x\n}\n";
        let (code, message) = run(text, &[chunk(None, &["    x"], &["y"])]).unwrap_err();
        assert_eq!(code, ErrorCode::NotUnique);
        assert!(message.contains("at lines 2 and 5"), "{message}");
        let (code, message) =
            run(text, &[chunk(None, &["fn c() {", "    x"], &["y"])]).unwrap_err();
        assert_eq!(code, ErrorCode::NotFound);
        assert!(
            message.starts_with("chunk 1 of 1: could not find"),
            "{message}"
        );
        assert!(message.contains("  fn c() {\n      x\n"), "{message}");
        assert!(message.contains("nearest lines"), "{message}");
        assert!(message.contains("     2 |     x"), "{message}");
        let (_, message) = run(text, &[chunk(Some("fn z()"), &["x"], &["y"])]).unwrap_err();
        assert!(message.contains("'fn z()' that '@@' names"), "{message}");
    }

    #[test]
    fn lines_that_are_not_utf8_stay_as_they_were() {
        let content = b"\xff\xfe\nold\n";
        let out = apply(&Text::new(content), &[chunk(None, &["old"], &["new"])]).unwrap();
        assert_eq!(out, b"\xff\xfe\nnew\n");
    }
}
