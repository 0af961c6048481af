//! The first pass over a page: what the converter must know before it
//! writes anything. The `<title>`, the `<base href>`, the element that
//! marks the main content (the first `<main>`, else the first
//! `role="main"`, else the page's only `<article>`), the parts of the
//! article found inside it, or in the whole page when none marks it (the
//! counts Readability needs are kept here, the rules are in `readable`;
//! decision 90), and the blocks inside the article to leave out: the
//! boxes readers leave out, and the blocks made of links (decisions 74
//! and 102 in docs/decisions.md, the rule in docs/web-fetch.md):
//!
//! > A block of the main content (a list, an item, a paragraph, a table, a
//! > `div`, a `section`, ...) holding at least `MIN_LINKS` links whose text
//! > is more than half of its text is left out, unless it holds more than
//! > half of the main content's text outside links, or `MAX_COMMAS`
//! > commas with a third of its text outside links.
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
//! stack of open elements as the converter (`tags::kept_before_start_counted`,
//! `tags::closed_by_end`), and hands on the start tags of the blocks to
//! leave out, counted in document order as the converter counts them. The
//! counts are running totals (bytes of text, of link text, links) read at
//! a block's start and end, so a block costs the same at any depth.

use super::readable::{self, Block, Candidate, Paragraph};
use super::tags::{
    closed_by_end_tag, kept_before_start_counted, Element, OpenCounts, Tag, MAX_DEPTH,
};
use super::text::collapse_spaces;
use super::tokenizer::{self, attr, Token, Tokenizer};

/// The fewest links a block leaves out for: a paragraph with a few
/// references or a short list of sources stays.
pub const MIN_LINKS: usize = 5;

/// A block with this many commas and a third of its text outside links
/// is prose, however many links it holds (a list of references, a
/// paragraph of citations), as Readability counts it; a list of names
/// that commas separate is not.
pub const MAX_COMMAS: usize = 10;

/// A list this long, holding more text than the article found, makes the
/// page a list (a directory, a documentation index, search results).
pub const MIN_LIST_ITEMS: usize = 10;

/// What the first pass finds.
#[derive(Debug, Default)]
pub struct Survey {
    pub title: Option<String>,
    pub base: Option<String>,
    /// The main content's start tag, counted from 1 in document order;
    /// on a page that marks none, the parts of its article (`readable`),
    /// in document order. Empty: the whole page.
    pub main: Vec<usize>,
    /// The start tags of the blocks to leave out, ascending: the outermost
    /// link-dense blocks of the main content.
    pub dropped: Vec<usize>,
}

/// Running totals over the page, in bytes of trimmed text, and counts.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    text: usize,
    link_text: usize,
    links: usize,
    commas: usize,
    paragraphs: usize,
    items: usize,
    images: usize,
    inputs: usize,
    embeds: usize,
    heading_text: usize,
    list_text: usize,
    /// Terms of definition lists (`dt`), which make a list as items do.
    terms: usize,
}

impl Totals {
    /// What Readability counts of the element that started at `start`.
    fn block_since(&self, start: &Totals) -> Block {
        Block {
            text: self.text - start.text,
            link_text: self.link_text - start.link_text,
            commas: self.commas - start.commas,
            paragraphs: self.paragraphs - start.paragraphs,
            items: self.items - start.items,
            images: self.images - start.images,
            inputs: self.inputs - start.inputs,
            embeds: self.embeds - start.embeds,
            heading_text: self.heading_text - start.heading_text,
            list_text: self.list_text - start.list_text,
        }
    }
}

struct Counted<'a> {
    tag: Tag,
    name: &'a str,
    attrs: &'a str,
    ordinal: usize,
    at_start: Totals,
    /// Readability's score, once a paragraph inside gave it one; tracked:
    /// a paragraph scored somewhere inside (its parts may be chosen).
    score: Option<f32>,
    /// The score counting paragraphs inside boxes too: Readability's
    /// second attempt, for a page whose boxes hold all its paragraphs.
    loose: Option<f32>,
    tracked: bool,
    /// A block opened directly inside; element children.
    block_inside: bool,
    children: usize,
    /// Its class or role names a box (`readable::is_unlikely`).
    unlikely: bool,
    /// A link with a destination: its text is link text.
    link: bool,
    /// Tables: cells in the row being read, the most in any row, and
    /// whether a table opened inside this one.
    row_cells: usize,
    columns: usize,
    nested: bool,
    /// A `div`'s text outside its blocks since its last block: Readability
    /// wraps such a run in a paragraph of its own.
    run: Run,
}

/// Text read directly in a `div` (or in the inline elements inside it).
#[derive(Debug, Default, Clone, Copy)]
struct Run {
    /// The start tag the run began after.
    start: usize,
    text: usize,
    commas: usize,
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
        self.holds_tags(other.start, other.end)
    }

    /// Are start tags `start..=end` inside it?
    fn holds_tags(&self, start: usize, end: usize) -> bool {
        self.start <= start && end <= self.end
    }

    /// Is it inside one of `parts`?
    fn inside(&self, parts: &[readable::Part]) -> bool {
        parts
            .iter()
            .any(|p| p.start <= self.start && self.end <= p.end)
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

/// The first word of the element's class, hashed, for telling the
/// blocks of one class (None: no class).
fn class_word(attrs: &str) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let class = attr(attrs, "class")?;
    let word = class.split_ascii_whitespace().next()?;
    let mut hasher = std::hash::DefaultHasher::new();
    word.hash(&mut hasher);
    Some(hasher.finish())
}

/// A paragraph that scored: its start tag and its text, all that the
/// test of a short article needs. Elements nest, so a paragraph that
/// starts inside an element ends inside it. A page is at most 10 MiB, so
/// its tags and bytes count in 32 bits: a long page scores tens of
/// thousands of paragraphs, and this list is a part of the pass's peak.
#[derive(Debug, Clone, Copy)]
struct Scored {
    start: u32,
    text: u32,
}

impl Scored {
    fn of(span: &Span) -> Scored {
        let small = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Scored {
            start: small(span.start),
            text: small(span.text),
        }
    }
}

#[derive(Default)]
struct Pass<'a> {
    stack: Vec<Counted<'a>>,
    /// The open `p`, `li`, `dt`/`dd` and `a`, so that most start tags
    /// skip a search of the stack that cannot find anything.
    counts: OpenCounts,
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
    /// Open elements that are boxes, headings, lists.
    unlikely: usize,
    in_heading: usize,
    in_list: usize,
    /// The page's title, and the text of the `h1` or `h2` being read: one
    /// that says what the title says is left out.
    title: readable::Title,
    heading: Option<String>,
    /// The stack index of the `div` whose run the text being read joins:
    /// no block is open inside it.
    run_owner: Option<usize>,
    /// The last text read ends with a full stop (for a paragraph's).
    sentence: bool,
    /// What a page without a main element needs (`readable`).
    candidates: Vec<Candidate>,
    /// The paragraphs of prose, which may join the article beside it.
    paragraphs: Vec<Paragraph>,
    /// Boxes, and blocks an article is cleaned of.
    boxes: Vec<Span>,
    cleaned: Vec<Span>,
    /// Lists of `MIN_LIST_ITEMS` items or more outside boxes.
    lists: Vec<Span>,
    /// The paragraphs that scored, and those inside boxes.
    scored: Vec<Scored>,
    scored_sums: Vec<usize>,
    boxed: Vec<Scored>,
}

impl<'a> Pass<'a> {
    fn start(&mut self, tag: Tag, name: &'a str, attrs: &'a str) {
        if tag == Tag::Source {
            return;
        }
        if let Some(keep) = kept_before_start_counted(&self.stack, tag, &self.counts) {
            self.pop_to(keep);
        }
        if let Some(parent) = self.stack.last_mut() {
            parent.children += 1;
            parent.block_inside |= tag.is_block();
        }
        // A block ends the run of the div it opens in.
        if tag.is_block() {
            if let Some(owner) = self.run_owner {
                self.stack[owner].block_inside = true;
                self.end_run(owner);
            }
        }
        match tag {
            Tag::P => self.totals.paragraphs += 1,
            Tag::Li => self.totals.items += 1,
            Tag::Dt => self.totals.terms += 1,
            Tag::Img => self.totals.images += 1,
            Tag::Embed => self.totals.embeds += 1,
            Tag::Iframe | Tag::Object if !readable::is_video(attrs) => self.totals.embeds += 1,
            Tag::Void if name.eq_ignore_ascii_case("input") => self.totals.inputs += 1,
            _ => {}
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
        let unlikely = readable::is_unlikely(tag, name, attrs);
        self.unlikely += usize::from(unlikely);
        self.in_heading += usize::from(matches!(tag, Tag::Heading(_)));
        if matches!(tag, Tag::Heading(1 | 2)) {
            self.heading = Some(String::new());
        }
        self.in_list += usize::from(matches!(tag, Tag::Ul | Tag::Ol));
        self.counts.push(tag);
        self.stack.push(Counted {
            tag,
            name,
            attrs,
            ordinal: self.ordinal,
            at_start: self.totals,
            score: None,
            loose: None,
            tracked: false,
            block_inside: false,
            children: 0,
            unlikely,
            link,
            row_cells: 0,
            columns: 0,
            nested: false,
            run: Run::default(),
        });
        if tag == Tag::Block && name.eq_ignore_ascii_case("div") {
            self.run_owner = Some(index);
        } else if tag.is_block() {
            self.run_owner = None;
        }
    }

    /// A div's run of text, ended by a block or the div's end, scores as
    /// the paragraph Readability makes of it, given to the div.
    fn end_run(&mut self, owner: usize) {
        let run = std::mem::take(&mut self.stack[owner].run);
        if run.text < 25 {
            return;
        }
        self.totals.paragraphs += 1;
        let span = Span {
            start: run.start,
            end: run.start,
            text: run.text,
            link_text: 0,
        };
        let score = readable::paragraph_score(run.text, run.commas);
        self.give(owner + 1, &span, score);
    }

    /// A paragraph's score, given to the open elements below `depth`:
    /// the innermost whole, and so on up (`readable::share`).
    fn give(&mut self, depth: usize, span: &Span, score: f32) {
        let strict = self.unlikely == 0;
        let paragraph = Scored::of(span);
        if strict {
            self.scored.push(paragraph);
        } else {
            self.boxed.push(paragraph);
        }
        for (level, ancestor) in self.stack[..depth].iter_mut().rev().enumerate() {
            if level < 5 {
                let base = match (ancestor.score, ancestor.loose) {
                    (Some(_), Some(_)) => 0.0,
                    _ => {
                        readable::base_score(ancestor.tag, ancestor.name)
                            + readable::class_weight(ancestor.attrs)
                    }
                };
                let share = readable::share(score, level);
                if strict {
                    *ancestor.score.get_or_insert(base) += share;
                }
                *ancestor.loose.get_or_insert(base) += share;
            } else if ancestor.tracked {
                // So are the ones around it.
                break;
            }
            ancestor.tracked = true;
        }
    }

    fn text(&mut self, text: &str) {
        let text = text.trim_ascii();
        let n = text.len();
        if n == 0 {
            return;
        }
        self.totals.text += n;
        let commas = readable::commas(text);
        self.totals.commas += commas;
        if let Some(owner) = self.run_owner {
            let run = &mut self.stack[owner].run;
            if run.text == 0 {
                run.start = self.ordinal;
            }
            run.text += n;
            run.commas += commas;
        }
        self.sentence = readable::ends_sentence(text);
        if self.in_link > 0 {
            self.totals.link_text += n;
        }
        if self.in_heading > 0 {
            self.totals.heading_text += n;
            // A heading this long is no title's.
            if let Some(heading) = self.heading.as_mut().filter(|h| h.len() < 1024) {
                heading.push_str(&tokenizer::decode(text, false));
                heading.push(' ');
            }
        }
        if self.in_list > 0 {
            self.totals.list_text += n;
        }
    }

    fn pop_to(&mut self, len: usize) {
        while self.stack.len() > len {
            let top = self.stack.len() - 1;
            if self.run_owner == Some(top) && self.stack[top].block_inside {
                self.end_run(top);
            }
            let open = self.stack.pop().expect("longer than len");
            // Text after a block is its parent's, a div's run again.
            if open.tag.is_block() || self.run_owner == Some(top) {
                self.run_owner = self.stack.last().and_then(|p| {
                    (p.tag == Tag::Block && p.name.eq_ignore_ascii_case("div"))
                        .then_some(self.stack.len() - 1)
                });
            }
            self.counts.pop(open.tag);
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
                let commas = self.totals.commas - open.at_start.commas;
                let prose = commas >= MAX_COMMAS && span.other_text() * 3 >= span.text;
                if links >= MIN_LINKS && span.link_text * 2 > span.text && !prose {
                    self.dense.push(span);
                }
            }
            self.readability(&open, span, data);
        }
    }

    /// Readability's view of an element that closes: a paragraph's score
    /// for its ancestors, the element's own score, and whether an article
    /// would be cleaned of it (`readable`).
    fn readability(&mut self, open: &Counted<'a>, span: Span, data: bool) {
        self.in_heading -= usize::from(matches!(open.tag, Tag::Heading(_)));
        self.in_list -= usize::from(matches!(open.tag, Tag::Ul | Tag::Ol));
        if open.unlikely {
            self.unlikely -= 1;
            self.boxes.push(span);
            return;
        }
        if self.unlikely == 0 && matches!(open.tag, Tag::Ul | Tag::Ol | Tag::Dl) {
            let items = self.totals.items - open.at_start.items;
            let terms = self.totals.terms - open.at_start.terms;
            if items + terms >= MIN_LIST_ITEMS {
                self.lists.push(span);
            }
        }
        let parent = self.stack.last().map_or(0, |p| p.ordinal);
        if span.text >= 25 && readable::is_paragraph(open.tag, open.name, open.block_inside) {
            let commas = self.totals.commas - open.at_start.commas;
            let score = readable::paragraph_score(span.text, commas);
            self.give(self.stack.len(), &span, score);
        }
        if open.tracked {
            self.candidates.push(Candidate {
                ordinal: open.ordinal,
                end: span.end,
                parent,
                score: open.score,
                loose: open.loose,
                class: class_word(open.attrs),
                text: span.text,
                link_text: span.link_text,
                children: open.children,
                frame: matches!(open.tag, Tag::Html | Tag::Body),
            });
        }
        // Readability reads a div with no block inside as a paragraph.
        let div_paragraph =
            open.tag == Tag::Block && !open.block_inside && open.name.eq_ignore_ascii_case("div");
        if div_paragraph {
            self.totals.paragraphs += 1;
        }
        if open.tag == Tag::P || div_paragraph {
            let paragraph = Paragraph {
                ordinal: open.ordinal,
                end: span.end,
                parent,
                text: span.text,
                link_text: span.link_text,
                sentence: self.sentence,
            };
            if paragraph.is_prose() {
                self.paragraphs.push(paragraph);
            }
        }
        if self.cleans(open, &span, data) {
            self.cleaned.push(span);
        }
        if matches!(open.tag, Tag::Heading(1 | 2)) {
            self.heading = None;
        }
    }

    /// Would Readability clean an article of this element?
    fn cleans(&self, open: &Counted<'a>, span: &Span, data: bool) -> bool {
        let is = |n: &str| open.name.eq_ignore_ascii_case(n);
        match open.tag {
            Tag::Iframe | Tag::Object => !readable::is_video(open.attrs),
            Tag::Heading(1 | 2) => {
                readable::class_weight(open.attrs) < 0.0
                    || self
                        .heading
                        .as_deref()
                        .is_some_and(|heading| self.title.said_by(heading))
            }
            Tag::Block if is("footer") || is("aside") => true,
            // Links, tables and the marks inside text are never captions
            // (a picture's table holds the picture too; its cell may be).
            Tag::Block | Tag::P | Tag::Inline | Tag::Td | Tag::Th
                if readable::is_caption(open.name, open.attrs, span.text) =>
            {
                true
            }
            _ if span.text < 500
                && tokenizer::holds(open.attrs.as_bytes(), b"share")
                && readable::is_share(open.attrs) =>
            {
                true
            }
            _ if span.text < readable::MAX_BYLINE && readable::is_byline(open.attrs) => true,
            Tag::Table if !data => self.cleaned_out(open),
            Tag::Ul => self.cleaned_out(open),
            Tag::Block if is("div") || is("form") || is("fieldset") => self.cleaned_out(open),
            _ => false,
        }
    }

    fn cleaned_out(&self, open: &Counted<'a>) -> bool {
        let block = self.totals.block_since(&open.at_start);
        let weight = readable::class_weight(open.attrs);
        readable::cleaned_out(&block, weight, open.tag == Tag::Ul)
    }

    /// The outermost link-dense blocks inside `scope` (one element, or
    /// the parts of an article), outside every data table and holding at
    /// most half of its text outside links; None when what would remain
    /// is under a quarter of its text: the links are the page.
    fn link_boxes(&mut self, scope: &[Span]) -> Option<Vec<usize>> {
        let text: usize = scope.iter().map(|s| s.text).sum();
        let other: usize = scope.iter().map(|s| s.other_text()).sum();
        let dense = self
            .dense
            .iter()
            .filter(|d| d.other_text() * 2 <= other)
            .copied()
            .collect();
        self.outermost(scope, dense, text, &|_, d| d.text)
    }

    /// The outermost of `blocks` inside `scope` and outside every data
    /// table, as start tags; None when what would remain of the scope's
    /// `total` (as `weigh` counts it) is under a quarter of it: then the
    /// blocks are the page (a sitemap, a directory), not boxes in it.
    fn outermost(
        &mut self,
        scope: &[Span],
        mut blocks: Vec<Span>,
        total: usize,
        weigh: &dyn Fn(&Self, &Span) -> usize,
    ) -> Option<Vec<usize>> {
        // Data tables hold no table, so they never nest: sorted by start,
        // the one that could hold a block is the last to start before it.
        self.data_tables.sort_unstable_by_key(|t| t.start);
        let tables = &self.data_tables;
        let in_data = |d: &Span| {
            let before = tables.partition_point(|t| t.start <= d.start);
            before > 0 && tables[before - 1].holds(d)
        };
        blocks.retain(|d| scope.iter().any(|s| d.start > s.start && s.holds(d)) && !in_data(d));
        blocks.sort_unstable_by_key(|d| (d.start, std::cmp::Reverse(d.end)));
        let mut outermost: Vec<Span> = Vec::new();
        for d in blocks {
            if !outermost.last().is_some_and(|o| o.holds(&d)) {
                outermost.push(d);
            }
        }
        let gone: usize = outermost.iter().map(|d| weigh(self, d)).sum();
        if (total - gone.min(total)) * 4 < total {
            return None;
        }
        Some(outermost.iter().map(|d| d.start).collect())
    }

    /// The text of the paragraphs that scored inside `span` (`scored` in
    /// document order, `scored_sums` its running totals).
    fn scored_in(&self, span: &Span) -> usize {
        let from = self
            .scored
            .partition_point(|p| (p.start as usize) < span.start);
        let to = self
            .scored
            .partition_point(|p| (p.start as usize) <= span.end);
        self.scored_sums[to] - self.scored_sums[from]
    }

    /// What of `scope` (the main element, or the whole page) is kept:
    /// the start tags of the parts (empty: all of `scope`, which is then
    /// `main`) and of the blocks left out inside them (decision 90).
    fn extract(&mut self, scope: Span, main: Option<usize>) -> (Vec<usize>, Vec<usize>) {
        let whole = |dropped| (main.into_iter().collect(), dropped);
        // None: a page of links, if no article is found in it.
        let link_boxes = self.link_boxes(&[scope]);
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.retain(|c| scope.holds_tags(c.ordinal, c.end));
        // Closed innermost first: in document order for the lookups.
        candidates.sort_unstable_by_key(|c| c.ordinal);
        let mut paragraphs = std::mem::take(&mut self.paragraphs);
        paragraphs.retain(|p| scope.holds_tags(p.ordinal, p.end));
        // No paragraph outside the boxes scores (every one sits in an
        // element named like a box): all paragraphs score, as in
        // Readability's second attempt, and the boxes inside the article
        // found are still left out. Nothing scores: the whole of it, less
        // its link boxes.
        let article = match readable::choose(&candidates, &paragraphs) {
            Some(article) => article,
            None => {
                for c in &mut candidates {
                    c.score = c.loose;
                }
                self.scored.append(&mut self.boxed);
                match readable::choose(&candidates, &paragraphs) {
                    Some(article) => article,
                    None => return whole(link_boxes.unwrap_or_default()),
                }
            }
        };
        self.scored.sort_unstable_by_key(|p| p.start);
        self.scored_sums = std::iter::once(0)
            .chain(self.scored.iter().scan(0, |sum, p| {
                *sum += p.text as usize;
                Some(*sum)
            }))
            .collect();
        let text = article.text();
        // An article clearly wins when nothing outside it weighs half as
        // much and it holds most of the text of the paragraphs of prose
        // that scored (a lone paragraph beside headings, lists and code is
        // not the page's article; a story among a news site's headlines
        // is).
        let scored = |inside: &dyn Fn(usize) -> bool| -> usize {
            self.scored
                .iter()
                .filter(|p| p.text as usize > readable::PROSE && inside(p.start as usize))
                .map(|p| p.text as usize)
                .sum()
        };
        let all = scored(&|start| scope.holds_tags(start, start));
        let held = scored(&|start| {
            article
                .parts
                .iter()
                .any(|p| p.start <= start && start <= p.end)
        });
        let clear = article.clear && held * 2 > all;
        // Unless it does, a list longer than the article, and not a menu
        // (at least half its text outside links), is what the page is; and
        // unless it is long or clearly wins, so are the links of a page
        // made of them (a sitemap, a link directory).
        let list = self.lists.iter().any(|l| {
            scope.holds(l)
                && l.text > text
                && l.link_text * 2 <= l.text
                && !l.inside(&article.parts)
        });
        if !clear && list {
            return whole(link_boxes.unwrap_or_default());
        }
        let widened = text < readable::MIN_ARTICLE && !clear;
        if link_boxes.is_none() && widened {
            return whole(Vec::new());
        }
        let parts: Vec<Span> = if widened {
            vec![scope]
        } else {
            article
                .parts
                .iter()
                .map(|p| Span {
                    start: p.start,
                    end: p.end,
                    text: p.text,
                    link_text: p.link_text,
                })
                .collect()
        };
        // A block holding most of the article's own words is the article,
        // whatever its class or counts say: the blocks inside it are
        // looked at instead.
        let other: usize = parts.iter().map(|s| s.other_text()).sum();
        let mut blocks = std::mem::take(&mut self.boxes);
        blocks.append(&mut self.cleaned);
        blocks.extend(self.dense.iter().copied());
        blocks.retain(|b| b.other_text() * 2 <= other);
        // What would be left out is weighed by the article's own words,
        // the paragraphs that scored: a comment thread three times as long
        // as the post it follows still goes.
        let held: usize = parts.iter().map(|p| self.scored_in(p)).sum();
        let dropped = match self.outermost(&parts, blocks, held, &|pass, d| pass.scored_in(d)) {
            Some(dropped) => dropped,
            None => self.link_boxes(&parts).unwrap_or_default(),
        };
        if widened {
            return whole(dropped);
        }
        (parts.iter().map(|p| p.start).collect(), dropped)
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
                        && tokenizer::holds(tag.attrs.as_bytes(), b"main")
                        && attr(tag.attrs, "role")
                            .is_some_and(|r| r.trim().eq_ignore_ascii_case("main"))
                    {
                        pass.watched[1] = Some(ordinal);
                    }
                    pass.start(kind, tag.name, tag.attrs);
                }
                Token::Raw(text) if in_title => {
                    survey.title = Some(collapse_spaces(&tokenizer::decode(text, false)));
                    pass.title = readable::Title::of(survey.title.as_deref().unwrap_or(""));
                    in_title = false;
                }
                Token::Text(text) => {
                    in_title = false;
                    pass.text(text);
                }
                Token::End(name) => {
                    in_title = false;
                    let tag = Tag::of(name);
                    if tag != Tag::Br {
                        if let Some(i) = closed_by_end_tag(&pass.stack, name, tag) {
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
        let main = pass.watched[0].or(pass.watched[1]).or(article);
        let scope = [0, 1, 2]
            .into_iter()
            .find(|&i| pass.watched[i].is_some() && pass.watched[i] == main)
            .and_then(|i| spans[i]);
        // A main element without text (an `<article>` of metadata in the
        // head) marks nothing: the article is looked for in the page.
        let (main, scope) = match scope {
            Some(span) if span.text == 0 => (None, None),
            _ => (main, scope),
        };
        let whole = Span {
            start: 0,
            end: usize::MAX,
            text: pass.totals.text,
            link_text: pass.totals.link_text,
        };
        (survey.main, survey.dropped) = pass.extract(scope.unwrap_or(whole), main);
        survey
    }
}
