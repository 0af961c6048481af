//! HTML to markdown for web_fetch: what a model reads best, in one pass.
//!
//! Two passes over the page's tokens (`tokenizer`), no tree: the first
//! (`survey`) finds the title, `<base href>`, the element that marks the
//! main content (`<main>`, else `role="main"`, else the only `<article>`)
//! or, on a page that marks none, where its article is (`readable`), and
//! the blocks to leave out inside it (decision 74); the second keeps a
//! stack of the open elements, closes the ones HTML closes
//! by itself (`<p>` before a block, `<li>` before the next item, cells
//! before the next row), and writes markdown as elements open and close
//! (`writer`), handing it on in pieces as it goes (`Plan::write`).
//! Memory is the page, the open elements and the markdown not yet handed
//! on; nesting deeper than `MAX_DEPTH` is flattened (deeper elements count
//! as text only), so no page is refused.
//!
//! When the page marks its main content, or its article was found, only
//! what is inside it is written: navigation, headers, footers, asides,
//! forms and banners outside it are left out; inside it, the blocks that
//! the first pass names are left out too. Everywhere, elements that are not content are
//! left out with their text: scripts, styles, templates, `<nav>`, forms'
//! buttons and selects, SVG and MathML, and elements the page hides
//! (`hidden`, `aria-hidden="true"`, `display: none`).
//!
//! The markdown: ATX headings; `**bold**`, `*em*`, `` `code` ``; lists
//! with `* ` and `1. `; `> ` quotes; fenced code blocks with the language
//! a class names; GFM tables for data tables, the cells' content one
//! after another for layout tables; `**term**` and `: definition` for
//! `<dl>`; `![alt](url)` images, iframes and media as links; `<br>` as a
//! hard break; no HTML at all. Links and images are absolute (against the
//! page's URL or its `<base href>`), written as the page wrote them; links
//! without `href`, `javascript:` links, links to a place in the page and
//! `data:` URIs keep only their text.

use std::borrow::Cow;

use super::survey::Survey;
use super::tags::{
    closed_by_end_tag, kept_before_start_counted, Element, OpenCounts, Tag, MAX_DEPTH,
};
use super::text::collapse_spaces;
use super::tokenizer::{self, attr, holds, StartTag, Token, Tokenizer};
use super::url::{resolve, scheme_of};
use super::writer::{destination, longest_run, Writer};

#[derive(Debug, PartialEq, Eq)]
pub struct Page {
    pub title: String,
    pub markdown: String,
}

/// How much markdown the document's writer gathers before handing it on:
/// enough that the hand-offs cost nothing beside the conversion, little
/// beside a page.
pub const PIECE: usize = 32 * 1024;

/// What the first pass finds, owned, so that it can be kept beside the
/// page until the markdown is written.
#[derive(Debug)]
pub struct Plan {
    /// The page's `<title>`, its spaces collapsed; empty without one.
    pub title: String,
    /// What relative URLs resolve against.
    base: String,
    /// The page's own address without its fragment: a link to it with a
    /// fragment is a link to a place in the page.
    page: String,
    /// The main content's start tag, or the parts of the article of a
    /// page that marks none; empty: the whole page (see `survey`).
    main: Vec<usize>,
    /// The blocks to leave out (see `survey`).
    dropped: Vec<usize>,
}

impl Plan {
    /// The first pass over `html`, fetched from `url`.
    pub fn of(html: &str, url: &str) -> Plan {
        let survey = Survey::of(html);
        let base = survey
            .base
            .as_deref()
            .filter(|b| !matches!(scheme_of(b), Some(s) if !is_web(s)))
            .map_or_else(|| url.to_string(), |b| resolve(url, b));
        Plan {
            title: survey.title.unwrap_or_default(),
            base,
            page: without_fragment(url).to_string(),
            main: survey.main,
            dropped: survey.dropped,
        }
    }

    /// The second pass: the markdown of `html` (the page `of` was given),
    /// handed to `out` front to back in pieces of at least `piece` bytes
    /// (the last one shorter), as it is written: the pieces put together
    /// are the markdown, whatever `piece` is.
    pub fn write(&self, html: &str, piece: usize, out: &mut dyn FnMut(&str)) {
        let mut written = false;
        Converter::new(html, self, &self.main, &self.dropped).run(piece, &mut |text| {
            written |= !text.is_empty();
            out(text)
        });
        if !written && !self.main.is_empty() {
            // A main element with nothing in it: the page's body is better
            // than nothing.
            Converter::new(html, self, &[], &[]).run(piece, out);
        }
    }
}

fn without_fragment(url: &str) -> &str {
    url.split_once('#').map_or(url, |(page, _)| page)
}

fn is_web(scheme: &str) -> bool {
    scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")
}

/// What closing an element does, decided when it opened.
#[derive(Debug)]
enum Kind {
    /// Nothing (inline elements, and everything outside what is written).
    Plain,
    Block,
    Heading,
    Mark(&'static str),
    Code,
    Link(String),
    Quote,
    List,
    Item,
    Term,
    Definition,
    Pre,
    Table,
    Cell,
    Caption,
    /// An iframe, embed, object, video or audio: a link to its source.
    Media {
        label: String,
        url: Option<String>,
    },
}

struct Open<'a> {
    tag: Tag,
    name: &'a str,
    attrs: &'a str,
    kind: Kind,
}

impl Element for Open<'_> {
    fn tag(&self) -> Tag {
        self.tag
    }
    fn name(&self) -> &str {
        self.name
    }
}

struct List {
    ordered: bool,
    next: i64,
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    caption: String,
    /// Tables inside its cells: a layout table.
    nested: bool,
}

struct Pre {
    text: String,
    lang: Option<String>,
}

struct Converter<'a> {
    html: &'a str,
    base: &'a str,
    page: &'a str,
    /// The start tags of the blocks to leave out, ascending, and how many
    /// of them lie behind.
    dropped: &'a [usize],
    dropped_seen: usize,
    /// The start tags of the parts of the page to write, ascending (see
    /// `Plan::main`); empty: all of it.
    target: &'a [usize],
    ordinal: usize,
    stack: Vec<Open<'a>>,
    /// The kinds of open elements that start tags close, counted.
    counts: OpenCounts,
    /// The document's writer, then one per table cell being written.
    writers: Vec<Writer>,
    tables: Vec<Table>,
    lists: Vec<List>,
    pre: Option<Pre>,
    /// Code spans open: markers inside them are text.
    code: usize,
    /// Bold and emphasis open: inside bold, bold again adds nothing.
    strong: usize,
    em: usize,
    /// The stack index of an element whose content is left out.
    skip_from: Option<usize>,
    /// The stack index of the main content while inside it.
    main_at: Option<usize>,
    scratch: String,
    /// The last start tag was `xmp` or `plaintext`, whose raw text is text.
    raw_is_text: bool,
}

impl<'a> Converter<'a> {
    fn new(html: &'a str, plan: &'a Plan, target: &'a [usize], dropped: &'a [usize]) -> Self {
        Converter {
            html,
            base: &plan.base,
            page: &plan.page,
            dropped,
            dropped_seen: 0,
            target,
            ordinal: 0,
            stack: Vec::new(),
            counts: OpenCounts::default(),
            writers: vec![Writer::default()],
            tables: Vec::new(),
            lists: Vec::new(),
            pre: None,
            code: 0,
            strong: 0,
            em: 0,
            skip_from: None,
            main_at: None,
            scratch: String::new(),
            raw_is_text: false,
        }
    }

    /// Converts, handing the markdown to `out` in pieces (see
    /// `Plan::write`).
    fn run(mut self, piece: usize, out: &mut dyn FnMut(&str)) {
        for token in Tokenizer::new(self.html) {
            match token {
                Token::Text(text) => self.text(text),
                Token::Raw(text) => {
                    // xmp and plaintext: preformatted text as written; the
                    // raw text of scripts, styles, iframes is no content.
                    if self.raw_is_text && self.rendering() {
                        if let Some(pre) = &mut self.pre {
                            pre.text.push_str(text);
                        }
                    }
                }
                Token::Start(tag) => self.start(tag),
                Token::End(name) => self.end(name),
            }
            // The document's writer: the cells' writers stay whole until
            // their table is written into it.
            if let Some(document) = self.writers.first_mut() {
                if document.held() >= piece {
                    document.drain(piece, out);
                }
            }
        }
        self.pop_to(0);
        self.writers.truncate(1);
        let rest = self.writers.pop().map(Writer::finish).unwrap_or_default();
        if !rest.is_empty() {
            out(&rest);
        }
    }

    /// Is the element of start tag `ordinal` a block to leave out? The
    /// ordinals come in ascending order, so this walks the list once.
    fn is_dropped(&mut self, ordinal: usize) -> bool {
        while self
            .dropped
            .get(self.dropped_seen)
            .is_some_and(|&d| d < ordinal)
        {
            self.dropped_seen += 1;
        }
        self.dropped.get(self.dropped_seen) == Some(&ordinal)
    }

    fn rendering(&self) -> bool {
        self.skip_from.is_none() && (self.target.is_empty() || self.main_at.is_some())
    }

    fn writer(&mut self) -> &mut Writer {
        self.writers
            .last_mut()
            .expect("the document's writer stays")
    }

    fn text(&mut self, text: &str) {
        if !self.rendering() {
            return;
        }
        if let Some(pre) = &mut self.pre {
            tokenizer::decode_into(text, false, &mut pre.text);
            return;
        }
        if tokenizer::find_byte(b'&', text.as_bytes()).is_none() {
            self.writer().text(text);
            return;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        tokenizer::decode_into(text, false, &mut scratch);
        // A non-breaking space written as `&nbsp;` separates like a space.
        if scratch.contains('\u{a0}') {
            scratch = scratch.replace('\u{a0}', " ");
        }
        // `&lt;em&gt;` is text on the page; in markdown `<em>` would be
        // raw HTML, so a `<` that could open a tag is escaped (not in a
        // code span, where a backslash would show).
        if self.code == 0 && scratch.contains('<') {
            scratch = escape_tags(&scratch);
        }
        self.writer().text(&scratch);
        self.scratch = scratch;
    }

    fn start(&mut self, tag: StartTag<'a>) {
        self.ordinal += 1;
        let kind = Tag::of(tag.name);
        self.raw_is_text = kind == Tag::Pre;
        if kind == Tag::Source {
            self.source(tag.attrs);
            return;
        }
        self.close_implied(kind);
        if kind.is_void() {
            if self.rendering() {
                self.void(kind, tag.attrs);
            }
            return;
        }
        if self.stack.len() >= MAX_DEPTH {
            return;
        }
        let index = self.stack.len();
        if self.main_at.is_none() && self.target.binary_search(&self.ordinal).is_ok() {
            self.main_at = Some(index);
        }
        if self.is_dropped(self.ordinal) && self.rendering() {
            self.skip_from = Some(index);
        }
        let open = if self.rendering() {
            self.open(kind, tag.attrs, index)
        } else {
            Kind::Plain
        };
        self.counts.push(kind);
        self.stack.push(Open {
            tag: kind,
            name: tag.name,
            attrs: tag.attrs,
            kind: open,
        });
    }

    fn end(&mut self, name: &str) {
        let tag = Tag::of(name);
        if tag == Tag::Br {
            if self.rendering() {
                self.void(Tag::Br, "");
            }
            return;
        }
        let found = closed_by_end_tag(&self.stack, name, tag);
        match found {
            Some(i) => self.pop_to(i),
            // `</p>` without a `<p>` is an empty paragraph.
            None if tag == Tag::P && self.rendering() => self.writer().block(),
            None => {}
        }
    }

    /// Closes what HTML closes before `tag` opens.
    fn close_implied(&mut self, tag: Tag) {
        if let Some(i) = kept_before_start_counted(&self.stack, tag, &self.counts) {
            self.pop_to(i);
        }
    }

    fn pop_to(&mut self, len: usize) {
        while self.stack.len() > len {
            let open = self.stack.pop().expect("longer than len");
            self.counts.pop(open.tag);
            let index = self.stack.len();
            self.close(open);
            if self.skip_from == Some(index) {
                self.skip_from = None;
            }
            if self.main_at == Some(index) {
                self.main_at = None;
            }
        }
    }

    /// What opening `tag` writes, and what closing it will.
    fn open(&mut self, tag: Tag, attrs: &'a str, index: usize) -> Kind {
        if self.pre.is_some() {
            if tag == Tag::Code {
                let lang = attr(attrs, "class").and_then(|c| language(&c));
                if let Some(pre) = self.pre.as_mut().filter(|p| p.lang.is_none()) {
                    pre.lang = lang;
                }
            }
            return Kind::Plain;
        }
        if is_hidden(attrs) {
            self.skip_from = Some(index);
            return Kind::Plain;
        }
        match tag {
            Tag::Hidden
            | Tag::Head
            | Tag::Title
            | Tag::Template
            | Tag::Svg
            | Tag::Math
            | Tag::Nav
            | Tag::Button
            | Tag::Select
            | Tag::Option => {
                self.skip_from = Some(index);
                Kind::Plain
            }
            Tag::Dialog if attr(attrs, "open").is_none() => {
                self.skip_from = Some(index);
                Kind::Plain
            }
            Tag::Iframe | Tag::Object | Tag::Video | Tag::Audio => {
                self.skip_from = Some(index);
                let src = if tag == Tag::Object { "data" } else { "src" };
                let label = attr(attrs, "title")
                    .or_else(|| attr(attrs, "aria-label"))
                    .map(|t| collapse_spaces(&t))
                    .filter(|t| !t.is_empty())
                    .unwrap_or_else(|| media_label(tag).to_string());
                Kind::Media {
                    label,
                    url: attr(attrs, src).and_then(|s| self.target_url(&s)),
                }
            }
            Tag::Heading(level) => {
                self.writer().open_heading(level as usize);
                Kind::Heading
            }
            Tag::B | Tag::Strong if self.code == 0 && self.strong == 0 => {
                self.strong += 1;
                self.writer().open_mark("**");
                Kind::Mark("**")
            }
            Tag::Em | Tag::I if self.code == 0 && self.em == 0 => {
                self.em += 1;
                self.writer().open_mark("*");
                Kind::Mark("*")
            }
            Tag::Q => {
                self.writer().open_mark("\"");
                Kind::Mark("\"")
            }
            Tag::Code if self.code == 0 => {
                self.code += 1;
                self.writer().open_code();
                Kind::Code
            }
            Tag::A => match attr(attrs, "href").and_then(|h| self.link_url(&h)) {
                Some(url) => {
                    self.writer().open_link();
                    Kind::Link(url)
                }
                None => Kind::Plain,
            },
            Tag::Blockquote => {
                self.writer().open_quote();
                Kind::Quote
            }
            Tag::Ul | Tag::Ol => {
                let next = attr(attrs, "start")
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(1);
                self.lists.push(List {
                    ordered: tag == Tag::Ol,
                    next,
                });
                if self.writer().in_item() {
                    self.writer().line();
                } else {
                    self.writer().block();
                }
                Kind::List
            }
            Tag::Li => match self.lists.last_mut() {
                Some(list) => {
                    let marker = if list.ordered {
                        let n = list.next;
                        list.next = list.next.saturating_add(1);
                        format!("{n}. ")
                    } else {
                        "* ".to_string()
                    };
                    self.writer().open_item(marker);
                    Kind::Item
                }
                None => {
                    self.writer().block();
                    Kind::Block
                }
            },
            Tag::Dt => {
                self.writer().block();
                self.writer().open_mark("**");
                Kind::Term
            }
            Tag::Dd => {
                self.writer().open_item(": ".to_string());
                Kind::Definition
            }
            Tag::Pre => {
                self.writer().block();
                let mut lang = attr(attrs, "class").and_then(|c| language(&c));
                // Highlighters name the language on a wrapper or two.
                for open in self.stack.iter().rev().take(3) {
                    if lang.is_some() {
                        break;
                    }
                    lang = attr(open.attrs, "class").and_then(|c| language(&c));
                }
                self.pre = Some(Pre {
                    text: String::new(),
                    lang,
                });
                Kind::Pre
            }
            Tag::Table => {
                if self.writers.len() > 1 {
                    if let Some(outer) = self.tables.last_mut() {
                        outer.nested = true;
                    }
                }
                self.writer().block();
                self.tables.push(Table::default());
                Kind::Table
            }
            Tag::Tr if !self.tables.is_empty() => {
                if let Some(table) = self.tables.last_mut() {
                    table.rows.push(Vec::new());
                }
                Kind::Plain
            }
            Tag::Td | Tag::Th if !self.tables.is_empty() => {
                if let Some(table) = self.tables.last_mut() {
                    if table.rows.is_empty() {
                        table.rows.push(Vec::new());
                    }
                }
                self.writers.push(Writer::default());
                Kind::Cell
            }
            Tag::Caption if !self.tables.is_empty() => {
                self.writers.push(Writer::default());
                Kind::Caption
            }
            t if t.is_block() => {
                self.writer().block();
                Kind::Block
            }
            _ => Kind::Plain,
        }
    }

    fn close(&mut self, open: Open<'a>) {
        match open.kind {
            Kind::Plain => {}
            Kind::Block => self.writer().block(),
            Kind::Heading => self.writer().close_heading(),
            Kind::Mark(mark) => {
                match mark {
                    "**" => self.strong -= 1,
                    "*" => self.em -= 1,
                    _ => {}
                }
                self.writer().close_mark(mark);
            }
            Kind::Code => {
                self.code -= 1;
                self.writer().close_code();
            }
            Kind::Link(url) => self.writer().close_link(&url),
            Kind::Quote => self.writer().close_quote(),
            Kind::List => {
                self.lists.pop();
                if self.writer().in_item() {
                    self.writer().line();
                } else {
                    self.writer().block();
                }
            }
            Kind::Item => self.writer().close_item(),
            Kind::Term => {
                self.writer().close_mark("**");
                self.writer().line();
            }
            Kind::Definition => {
                self.writer().close_item();
                self.writer().block();
            }
            Kind::Pre => {
                if let Some(pre) = self.pre.take() {
                    let block = code_block(pre);
                    self.writer().block_text(&block);
                }
            }
            Kind::Table => {
                if let Some(table) = self.tables.pop() {
                    let text = render_table(table);
                    self.writer().block_text(&text);
                }
            }
            Kind::Cell => {
                let cell = self.pop_writer();
                if let Some(row) = self.tables.last_mut().and_then(|t| t.rows.last_mut()) {
                    row.push(cell);
                }
            }
            Kind::Caption => {
                let caption = self.pop_writer();
                if let Some(table) = self.tables.last_mut() {
                    table.caption = caption;
                }
            }
            Kind::Media { label, url } => {
                if let Some(url) = url {
                    let link = format!("[{}]({})", escape_label(&label), destination(&url));
                    // A word of its own: two embeds (a frameset's frames)
                    // never run together.
                    self.writer().space();
                    self.writer().word(&link);
                    self.writer().space();
                }
            }
        }
    }

    fn pop_writer(&mut self) -> String {
        if self.writers.len() > 1 {
            self.writers.pop().map(Writer::finish).unwrap_or_default()
        } else {
            String::new()
        }
    }

    /// `<br>`, `<img>`, `<hr>`, `<embed>` and the other void elements.
    fn void(&mut self, tag: Tag, attrs: &str) {
        if let Some(pre) = &mut self.pre {
            if tag == Tag::Br {
                pre.text.push('\n');
            }
            return;
        }
        match tag {
            Tag::Br => self.writer().hard_break(),
            Tag::Hr => {
                self.writer().block();
                self.writer().word("---");
                self.writer().block();
            }
            Tag::Img => self.image(attrs),
            Tag::Embed => {
                if let Some(url) = attr(attrs, "src").and_then(|s| self.target_url(&s)) {
                    let label = attr(attrs, "title")
                        .map(|t| collapse_spaces(&t))
                        .filter(|t| !t.is_empty())
                        .unwrap_or_else(|| media_label(tag).to_string());
                    let link = format!("[{}]({})", escape_label(&label), destination(&url));
                    // A word of its own: two embeds (a frameset's frames)
                    // never run together.
                    self.writer().space();
                    self.writer().word(&link);
                    self.writer().space();
                }
            }
            _ => {}
        }
    }

    /// `<source>` inside `<video>` or `<audio>`: the source it links to.
    fn source(&mut self, attrs: &str) {
        let Some(index) = self.skip_from else {
            return;
        };
        let url = attr(attrs, "src").and_then(|s| self.target_url(&s));
        if let Some(Kind::Media {
            url: slot @ None, ..
        }) = self.stack.get_mut(index).map(|o| &mut o.kind)
        {
            *slot = url;
        }
    }

    fn image(&mut self, attrs: &str) {
        let alt = attr(attrs, "alt")
            .map(|a| collapse_spaces(&a))
            .unwrap_or_default();
        let src = ["src", "data-src", "data-lazy-src", "data-original"]
            .iter()
            .filter_map(|name| attr(attrs, name))
            .find_map(|s| self.target_url(&s));
        match src {
            Some(url) => {
                let image = format!("![{}]({})", escape_label(&alt), destination(&url));
                self.writer().word(&image);
            }
            None => self.writer().text(&alt),
        }
    }

    /// Where a link points, absolute; None for the places `target_url`
    /// refuses and for a place in the page itself (`#section`, or the
    /// page's own address with a fragment): the model is reading the page,
    /// and such a link's text is all it needs of it.
    fn link_url(&self, href: &str) -> Option<String> {
        if href
            .trim_start_matches(|c: char| c.is_ascii_whitespace())
            .starts_with('#')
        {
            return None;
        }
        let url = self.target_url(href)?;
        match tokenizer::find_byte(b'#', url.as_bytes()) {
            Some(hash) if url[..hash] == *self.page => None,
            _ => Some(url),
        }
    }

    /// Where a link or source points, absolute; None for nothing, for
    /// `javascript:` and for `data:` (an answer must not carry a
    /// megabyte of base64).
    fn target_url(&self, href: &str) -> Option<String> {
        let href = href.trim_matches(|c: char| c.is_ascii_whitespace());
        if href.is_empty() {
            return None;
        }
        if let Some(scheme) = scheme_of(href) {
            if ["javascript", "data", "vbscript"]
                .iter()
                .any(|s| s.eq_ignore_ascii_case(scheme))
            {
                return None;
            }
            return Some(href.to_string());
        }
        Some(resolve(self.base, href))
    }
}

fn media_label(tag: Tag) -> &'static str {
    match tag {
        Tag::Video => "Video",
        Tag::Audio => "Audio",
        Tag::Iframe => "Embedded page",
        _ => "Embedded content",
    }
}

/// Text with every `<` that could start an HTML tag, comment or
/// declaration (`<a`, `</`, `<!`, `<?`) written `\<`.
fn escape_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        let next = rest[i + 1..].bytes().next();
        if next.is_some_and(|b| b.is_ascii_alphabetic() || matches!(b, b'/' | b'!' | b'?')) {
            out.push('\\');
        }
        out.push('<');
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
    out
}

/// Link and image text: brackets escaped so they cannot end it early.
fn escape_label(text: &str) -> Cow<'_, str> {
    if text.contains(['[', ']']) {
        Cow::Owned(text.replace('[', "\\[").replace(']', "\\]"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Is the element hidden from readers: `hidden`, `aria-hidden="true"`,
/// or an inline style of `display: none` / `visibility: hidden`?
fn is_hidden(attrs: &str) -> bool {
    let bytes = attrs.as_bytes();
    if bytes.len() < 6 {
        // Too short for `hidden` or `style=...none`.
        return false;
    }
    let hidden = holds(bytes, b"hidden");
    if !hidden && !holds(bytes, b"none") {
        return false;
    }
    if hidden
        && (attr(attrs, "hidden").is_some()
            || attr(attrs, "aria-hidden").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")))
    {
        return true;
    }
    attr(attrs, "style").is_some_and(|style| {
        let style: String = style
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect::<String>()
            .to_ascii_lowercase();
        style.contains("display:none") || style.contains("visibility:hidden")
    })
}

/// A fenced code block, its language from the classes it was found with.
fn code_block(pre: Pre) -> String {
    let text = pre.text.replace("\r\n", "\n").replace('\r', "\n");
    // Blank lines before the first line of code say nothing (HTML itself
    // drops the newline right after `<pre>`); indentation stays.
    let first_line = text
        .find(|c: char| !c.is_whitespace())
        .map_or(text.len(), |i| text[..i].rfind('\n').map_or(0, |n| n + 1));
    let text = text[first_line..].trim_end();
    if text.is_empty() {
        return String::new();
    }
    let fence = "`".repeat(longest_run(text, '`').max(2) + 1);
    let lang = pre.lang.unwrap_or_default();
    format!("{fence}{lang}\n{text}\n{fence}")
}

/// The language a `class` attribute names: `language-x`, `lang-x`,
/// `highlight-source-x`, `highlight-x`, `sourceCode x`, or a bare known
/// name.
fn language(class: &str) -> Option<String> {
    const KNOWN: &[&str] = &[
        "bash",
        "c",
        "clojure",
        "cpp",
        "csharp",
        "css",
        "dart",
        "diff",
        "dockerfile",
        "elixir",
        "erlang",
        "fish",
        "fsharp",
        "go",
        "graphql",
        "haskell",
        "html",
        "ini",
        "java",
        "javascript",
        "js",
        "json",
        "jsx",
        "julia",
        "kotlin",
        "latex",
        "lisp",
        "lua",
        "makefile",
        "markdown",
        "matlab",
        "nginx",
        "nix",
        "objc",
        "ocaml",
        "perl",
        "php",
        "powershell",
        "protobuf",
        "python",
        "r",
        "ruby",
        "rust",
        "scala",
        "scheme",
        "scss",
        "shell",
        "sh",
        "sql",
        "swift",
        "toml",
        "ts",
        "tsx",
        "typescript",
        "xml",
        "yaml",
        "zig",
        "console",
    ];
    let clean = |name: &str| -> Option<String> {
        let name = name.to_ascii_lowercase();
        (!name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '#' | '-' | '_' | '.')))
        .then_some(name)
    };
    let tokens: Vec<&str> = class.split_ascii_whitespace().collect();
    for token in &tokens {
        let lower = token.to_ascii_lowercase();
        for prefix in ["language-", "lang-", "highlight-source-", "highlight-"] {
            if let Some(name) = lower.strip_prefix(prefix) {
                return clean(name);
            }
        }
    }
    if tokens.iter().any(|t| t.eq_ignore_ascii_case("sourceCode")) {
        if let Some(name) = tokens
            .iter()
            .find(|t| !t.eq_ignore_ascii_case("sourceCode"))
        {
            return clean(name);
        }
    }
    tokens
        .iter()
        .find(|t| KNOWN.iter().any(|k| k.eq_ignore_ascii_case(t)))
        .and_then(|t| clean(t))
}

/// A data table as a GFM table (its first row the header); a layout
/// table (one column, or tables in its cells) as its cells, one block
/// after another.
fn render_table(table: Table) -> String {
    let mut out = table.caption;
    let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
    if columns == 0 {
        return out;
    }
    let separate = |out: &mut String| {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
    };
    if table.nested || columns == 1 {
        for cell in table.rows.into_iter().flatten().filter(|c| !c.is_empty()) {
            separate(&mut out);
            out.push_str(&cell);
        }
        return out;
    }
    let rows: Vec<Vec<String>> = table
        .rows
        .iter()
        .map(|row| row.iter().map(|cell| one_line(cell)).collect::<Vec<_>>())
        .filter(|row| row.iter().any(|c| !c.is_empty()))
        .collect();
    for (i, row) in rows.iter().enumerate() {
        if i == 0 {
            separate(&mut out);
        } else {
            out.push('\n');
        }
        out.push('|');
        for column in 0..columns {
            let text = row.get(column).map_or("", String::as_str);
            out.push(' ');
            out.push_str(text);
            out.push_str(if text.is_empty() { "|" } else { " |" });
        }
        if i == 0 {
            out.push_str("\n|");
            out.push_str(&" --- |".repeat(columns));
        }
    }
    out
}

/// A cell's markdown on one line, its pipes escaped.
fn one_line(cell: &str) -> String {
    collapse_spaces(&cell.replace("\\\n", " ")).replace('|', "\\|")
}

#[cfg(test)]
mod article_tests;
#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod link_box_tests;
#[cfg(test)]
mod tests;
