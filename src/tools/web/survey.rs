//! The first pass over a page: what the converter must know before it
//! writes anything. The `<title>`, the `<base href>`, the element that
//! marks the main content (the first `<main>`, else the first
//! `role="main"`, else the page's only `<article>`), and the blocks of the
//! main content made of links, which the second pass leaves out (decision
//! 74 in docs/decisions.md, the rule in docs/web-fetch.md):
//!
//! > A block of the main content (a list, an item, a paragraph, a table, a
//! > `div`, a `section`, ...) holding at least `MIN_LINKS` links whose text
//! > is more than half of its text is left out, unless it holds more than
//! > half of the main content's text outside links.
//!
//! Navigation boxes, "see also" lists, tag clouds, share bars, tables of
//! contents and lists of names are such blocks. A block that holds most of
//! the text outside links holds the article itself, however many links
//! surround it: it stays, and the blocks inside it are looked at instead.
//!
//! The rule's edges: a data table (two columns or more, no table in its
//! cells: the converter writes it as a GFM table) and everything in it are
//! data, never left out, however many download links its rows hold; and
//! when what would remain is less than a quarter of the main content's
//! text, the links are the page itself (a sitemap, a link directory) and
//! none is left out.
//!
//! A block's link density is known only at its end, and the converter
//! writes as it goes, so this pass measures every block, with the same
//! stack of open elements as the converter (`tags::kept_before_start`,
//! `tags::closed_by_end`), and hands on the start tags of the blocks to
//! leave out, counted in document order as the converter counts them. The
//! counts are running totals (bytes of text, of link text, links) read at
//! a block's start and end, so a block costs the same at any depth.

use memchr::memmem;

use super::markdown::MAX_DEPTH;
use super::tags::{closed_by_end, kept_before_start, Element, Tag};
use super::text::collapse_spaces;
use super::tokenizer::{self, attr, Token, Tokenizer};

/// The fewest links a block leaves out for: a paragraph with a few
/// references or a short list of sources stays.
pub const MIN_LINKS: usize = 5;

/// What the first pass finds.
#[derive(Debug, Default)]
pub struct Survey {
    pub title: Option<String>,
    pub base: Option<String>,
    /// The main content's start tag, counted from 1 in document order.
    pub main: Option<usize>,
    /// The start tags of the blocks to leave out, ascending: the outermost
    /// link-dense blocks of the main content.
    pub dropped: Vec<usize>,
}

/// Running totals over the page, in bytes of trimmed text.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    text: usize,
    link_text: usize,
    links: usize,
}

struct Counted<'a> {
    tag: Tag,
    name: &'a str,
    ordinal: usize,
    at_start: Totals,
    /// A link with a destination: its text is link text.
    link: bool,
    /// Tables: cells in the row being read, the most in any row, and
    /// whether a table opened inside this one.
    row_cells: usize,
    columns: usize,
    nested: bool,
}

impl Element for Counted<'_> {
    fn tag(&self) -> Tag {
        self.tag
    }
    fn name(&self) -> &str {
        self.name
    }
}

/// Start tags `start..=end` and the text between them.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    text: usize,
    link_text: usize,
}

impl Span {
    /// The text that is not link text.
    fn other_text(&self) -> usize {
        self.text - self.link_text
    }

    fn holds(&self, other: &Span) -> bool {
        self.start <= other.start && other.end <= self.end
    }
}

/// The blocks the rule looks at: every block but the page's frame
/// (`html`, `body`, `main`, `article`), headings, code blocks and the
/// parts of a table (a table goes whole or not at all).
fn is_candidate(tag: Tag) -> bool {
    tag.is_block()
        && !matches!(
            tag,
            Tag::Html
                | Tag::Body
                | Tag::Main
                | Tag::Article
                | Tag::Heading(_)
                | Tag::Pre
                | Tag::Hr
                | Tag::Caption
                | Tag::TableSection
                | Tag::Tr
                | Tag::Td
                | Tag::Th
                | Tag::Dt
        )
}

#[derive(Default)]
struct Pass<'a> {
    stack: Vec<Counted<'a>>,
    /// Stack indices of the open tables, innermost last.
    tables: Vec<usize>,
    totals: Totals,
    /// Links open around the text being read.
    in_link: usize,
    ordinal: usize,
    dense: Vec<Span>,
    data_tables: Vec<Span>,
    /// The first `<main>`, the first `role="main"`, the first `<article>`:
    /// their start tags, then their spans once closed.
    watched: [Option<usize>; 3],
    watched_spans: [Option<Span>; 3],
}

impl<'a> Pass<'a> {
    fn start(&mut self, tag: Tag, name: &'a str, attrs: &'a str) {
        if tag == Tag::Source {
            return;
        }
        if let Some(keep) = kept_before_start(&self.stack, tag) {
            self.pop_to(keep);
        }
        if tag.is_void() || self.stack.len() >= MAX_DEPTH {
            return;
        }
        let index = self.stack.len();
        match tag {
            Tag::Table => {
                if let Some(&outer) = self.tables.last() {
                    self.stack[outer].nested = true;
                }
                self.tables.push(index);
            }
            Tag::Tr => {
                if let Some(&table) = self.tables.last() {
                    self.stack[table].row_cells = 0;
                }
            }
            Tag::Td | Tag::Th => {
                if let Some(&table) = self.tables.last() {
                    let table = &mut self.stack[table];
                    table.row_cells += 1;
                    table.columns = table.columns.max(table.row_cells);
                }
            }
            _ => {}
        }
        let link = tag == Tag::A && attr(attrs, "href").is_some_and(|h| !h.trim().is_empty());
        if link {
            self.totals.links += 1;
            self.in_link += 1;
        }
        self.stack.push(Counted {
            tag,
            name,
            ordinal: self.ordinal,
            at_start: self.totals,
            link,
            row_cells: 0,
            columns: 0,
            nested: false,
        });
    }

    fn text(&mut self, text: &str) {
        let n = text.trim_ascii().len();
        self.totals.text += n;
        if self.in_link > 0 {
            self.totals.link_text += n;
        }
    }

    fn pop_to(&mut self, len: usize) {
        while self.stack.len() > len {
            let open = self.stack.pop().expect("longer than len");
            if open.link {
                self.in_link -= 1;
            }
            if self.tables.last() == Some(&self.stack.len()) {
                self.tables.pop();
            }
            let span = Span {
                start: open.ordinal,
                end: self.ordinal,
                text: self.totals.text - open.at_start.text,
                link_text: self.totals.link_text - open.at_start.link_text,
            };
            for (watched, slot) in self.watched.iter().zip(&mut self.watched_spans) {
                if *watched == Some(open.ordinal) {
                    *slot = Some(span);
                }
            }
            let data = open.tag == Tag::Table && open.columns >= 2 && !open.nested;
            if data {
                self.data_tables.push(span);
            } else if is_candidate(open.tag) {
                let links = self.totals.links - open.at_start.links;
                if links >= MIN_LINKS && span.link_text * 2 > span.text {
                    self.dense.push(span);
                }
            }
        }
    }

    /// The outermost dense blocks inside `scope`, outside every data table
    /// and holding at most half of its text outside links; none when what
    /// would remain is under a quarter of its text.
    fn dropped(mut self, scope: Span) -> Vec<usize> {
        // Data tables hold no table, so they never nest: sorted by start,
        // the one that could hold a block is the last to start before it.
        self.data_tables.sort_unstable_by_key(|t| t.start);
        let tables = &self.data_tables;
        let in_data = |d: &Span| {
            let before = tables.partition_point(|t| t.start <= d.start);
            before > 0 && tables[before - 1].holds(d)
        };
        self.dense.retain(|d| {
            d.start > scope.start
                && scope.holds(d)
                && d.other_text() * 2 <= scope.other_text()
                && !in_data(d)
        });
        self.dense.sort_unstable_by_key(|d| d.start);
        let mut outermost: Vec<Span> = Vec::new();
        for d in self.dense {
            if !outermost.last().is_some_and(|o| o.holds(&d)) {
                outermost.push(d);
            }
        }
        let text: usize = outermost.iter().map(|d| d.text).sum();
        // What would remain is under a quarter of the text: the links are
        // the page (a sitemap, a directory), not boxes in it.
        if (scope.text - text.min(scope.text)) * 4 < scope.text {
            return Vec::new();
        }
        outermost.iter().map(|d| d.start).collect()
    }
}

impl Survey {
    pub fn of(html: &str) -> Survey {
        let mut survey = Survey::default();
        let mut pass = Pass::default();
        let mut articles = 0;
        let mut in_title = false;
        for token in Tokenizer::new(html) {
            match token {
                Token::Start(tag) => {
                    pass.ordinal += 1;
                    let ordinal = pass.ordinal;
                    in_title = false;
                    let kind = Tag::of(tag.name);
                    match kind {
                        Tag::Main if pass.watched[0].is_none() => pass.watched[0] = Some(ordinal),
                        Tag::Article => {
                            articles += 1;
                            pass.watched[2].get_or_insert(ordinal);
                        }
                        Tag::Base if survey.base.is_none() => {
                            survey.base = attr(tag.attrs, "href")
                                .map(|h| h.trim().to_string())
                                .filter(|h| !h.is_empty());
                        }
                        Tag::Title if survey.title.is_none() => {
                            in_title = true;
                            survey.title = Some(String::new());
                        }
                        _ => {}
                    }
                    if pass.watched[1].is_none()
                        && memmem::find(tag.attrs.as_bytes(), b"main").is_some()
                        && attr(tag.attrs, "role")
                            .is_some_and(|r| r.trim().eq_ignore_ascii_case("main"))
                    {
                        pass.watched[1] = Some(ordinal);
                    }
                    pass.start(kind, tag.name, tag.attrs);
                }
                Token::Raw(text) if in_title => {
                    survey.title = Some(collapse_spaces(&tokenizer::decode(text, false)));
                    in_title = false;
                }
                Token::Text(text) => {
                    in_title = false;
                    pass.text(text);
                }
                Token::End(name) => {
                    in_title = false;
                    if Tag::of(name) != Tag::Br {
                        if let Some(i) = closed_by_end(&pass.stack, name) {
                            pass.pop_to(i);
                        }
                    }
                }
                Token::Raw(_) => in_title = false,
            }
        }
        pass.pop_to(0);
        let article = if articles == 1 { pass.watched[2] } else { None };
        let spans = pass.watched_spans;
        survey.main = pass.watched[0].or(pass.watched[1]).or(article);
        let scope = [0, 1, 2]
            .into_iter()
            .find(|&i| pass.watched[i].is_some() && pass.watched[i] == survey.main)
            .and_then(|i| spans[i])
            .unwrap_or(Span {
                start: 0,
                end: usize::MAX,
                text: pass.totals.text,
                link_text: pass.totals.link_text,
            });
        survey.dropped = pass.dropped(scope);
        survey
    }
}
