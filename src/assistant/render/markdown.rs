//! The model's markdown as a terminal shows it, streamed: text arrives in
//! pieces, and each part is drawn as soon as it is complete. A paragraph,
//! a heading or a rule is drawn line by line as each line ends; a fenced
//! code block likewise, coloured; a list or a quote line by line as later
//! lines settle the earlier ones; a table when it ends, at a blank line
//! (unless the next line is indented, which continues a list item). Complete blocks
//! go through pulldown-cmark (CommonMark plus tables, strikethrough and
//! task lists).
//!
//! Three forms: `Raw` passes the text through unchanged (a pipe or a file
//! gets exactly what the model wrote); `Plain` lays it out (bullets,
//! numbered items, quote bars, table grids) without any escape sequence,
//! for a terminal under `NO_COLOR`; `Colour` adds bold headings, italics,
//! links and syntax colour. In both drawn forms the model's own control
//! characters are shown, not obeyed (`visible`, decision 59).

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::highlight::Code;
use super::{visible, width, Paint};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Raw,
    Plain,
    Colour,
}

/// A fenced code block being streamed.
struct Fence {
    marker: char,
    len: usize,
    indent: usize,
    code: Code,
}

/// A streaming markdown renderer: `push` the model's text as it comes,
/// print what it returns, `finish` at the end of the reply.
pub struct Markdown {
    form: Form,
    width: usize,
    /// The line still being received.
    partial: String,
    /// The lines of the block being collected.
    block: Vec<String>,
    /// A blank line came after what was last seen.
    blank: bool,
    /// The source set `block` apart from what was drawn before it.
    block_gap: bool,
    /// A paragraph is streaming: each of its lines is drawn as it ends.
    paragraph: bool,
    /// What of `block` (a list or a quote) is already drawn: lines that
    /// later lines cannot change.
    shown: String,
    fence: Option<Fence>,
    /// Something has been drawn, so the next block is set apart by a
    /// blank line where the source had one.
    drawn: bool,
}

impl Markdown {
    pub fn new(form: Form, width: usize) -> Markdown {
        Markdown {
            form,
            width: width.clamp(20, 200),
            partial: String::new(),
            block: Vec::new(),
            blank: false,
            block_gap: false,
            paragraph: false,
            shown: String::new(),
            fence: None,
            drawn: false,
        }
    }

    /// A piece of the reply; returns what can be drawn now.
    pub fn push(&mut self, piece: &str) -> String {
        if self.form == Form::Raw {
            return piece.to_string();
        }
        self.partial.push_str(piece);
        let mut out = String::new();
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            // The model's escapes are shown, not obeyed, before ours are
            // added (decision 59); a line is whole here, CRLF included.
            self.line(&visible(line.trim_end_matches(['\n', '\r'])), &mut out);
        }
        out
    }

    /// The end of the reply: draws what is left, ending on a new line.
    pub fn finish(&mut self) -> String {
        if self.form == Form::Raw {
            return String::new();
        }
        let mut out = String::new();
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&visible(&line), &mut out);
        }
        if let Some(fence) = self.fence.take() {
            // An unclosed fence: close it, so the colour ends.
            let _ = fence;
            out.push_str(&self.paint().sgr("2", "```"));
            out.push('\n');
        }
        self.flush(&mut out);
        self.blank = false;
        self.drawn = false;
        out
    }

    fn paint(&self) -> Paint {
        Paint {
            on: self.form == Form::Colour,
        }
    }

    fn line(&mut self, line: &str, out: &mut String) {
        if let Some(fence) = &mut self.fence {
            if closes(line, fence.marker, fence.len) {
                let shown = line.trim_start();
                out.push_str(&self.paint().sgr("2", shown));
                out.push('\n');
                self.fence = None;
                self.drawn = true;
            } else {
                let code = strip_indent(line, fence.indent);
                if self.form == Form::Colour {
                    out.push_str(&fence.code.line(code));
                } else {
                    out.push_str(code);
                }
                out.push('\n');
            }
            return;
        }
        if line.trim().is_empty() {
            if !self.block.is_empty() || self.drawn {
                self.blank = true;
            }
            self.paragraph = false;
            return;
        }
        if self.paragraph {
            if !starts_block(line) {
                // A paragraph's lines are drawn one by one, so text appears
                // as it streams (emphasis spanning two lines is the price).
                out.push_str(&self.render(line));
                return;
            }
            self.paragraph = false;
        }
        let indented = line.starts_with([' ', '\t']);
        if self.blank && indented && !self.block.is_empty() {
            // A list item's later paragraph or nested list: same block.
            self.block.push(String::new());
            self.block.push(line.to_string());
            self.blank = false;
            self.draw_settled(out);
            return;
        }
        if let Some((marker, len, indent, info)) = opens(line) {
            self.flush(out);
            self.gap(out);
            let shown = line.trim_start();
            out.push_str(&self.paint().sgr("2", shown));
            out.push('\n');
            self.fence = Some(Fence {
                marker,
                len,
                indent,
                code: if self.form == Form::Colour {
                    Code::new(info)
                } else {
                    Code::new("")
                },
            });
            self.drawn = true;
            return;
        }
        if self.blank {
            self.flush(out);
        }
        if self.block.is_empty() && (is_heading(line) || is_rule(line)) {
            self.gap(out);
            out.push_str(&self.render(line));
            self.drawn = true;
            return;
        }
        if self.block.is_empty() && !starts_block(line) && indent_of(line) < 4 {
            self.gap(out);
            out.push_str(&self.render(line));
            self.drawn = true;
            self.paragraph = true;
            return;
        }
        if self.block.is_empty() {
            self.block_gap = self.blank && self.drawn;
            self.blank = false;
        }
        self.block.push(line.to_string());
        self.draw_settled(out);
    }

    /// Draws what of a list or a quote being collected can no longer
    /// change: all it renders to but its last line (a lazy continuation
    /// could still extend that). A table waits for its end, since each row
    /// can widen its columns.
    fn draw_settled(&mut self, out: &mut String) {
        let first = self.block[0].trim_start_matches(' ');
        if first.starts_with(['|', '<']) || !starts_block(&self.block[0]) {
            return;
        }
        let drawn = self.render(&self.block.join("\n"));
        let settled = match drawn.trim_end_matches('\n').rfind('\n') {
            Some(end) => &drawn[..=end],
            None => return,
        };
        if let Some(new) = settled.strip_prefix(self.shown.as_str()) {
            if !new.is_empty() {
                if self.shown.is_empty() && self.block_gap {
                    out.push('\n');
                }
                out.push_str(new);
                self.shown = settled.to_string();
                self.drawn = true;
            }
        }
    }

    /// A blank line before the next thing drawn, where the source had one.
    fn gap(&mut self, out: &mut String) {
        if self.blank && self.drawn {
            out.push('\n');
        }
        self.blank = false;
    }

    fn flush(&mut self, out: &mut String) {
        if self.block.is_empty() {
            return;
        }
        let source = self.block.join("\n");
        self.block.clear();
        let shown = std::mem::take(&mut self.shown);
        if self.block_gap && shown.is_empty() {
            out.push('\n');
        }
        let drawn = self.render(&source);
        // What was drawn while the block came in is a prefix of the whole
        // (`draw_settled` draws only lines that cannot change).
        let rest = match drawn.strip_prefix(shown.as_str()) {
            Some(rest) => rest,
            // Should the whole differ after all, the lines on the screen
            // stay; only those after them are drawn, never twice.
            None => {
                let lines = shown.matches('\n').count();
                drawn.splitn(lines + 1, '\n').nth(lines).unwrap_or("")
            }
        };
        out.push_str(rest);
        self.drawn = true;
    }

    /// One complete block of markdown, drawn; ends with a newline.
    fn render(&self, source: &str) -> String {
        let mut options = Options::empty();
        options.insert(Options::ENABLE_TABLES);
        options.insert(Options::ENABLE_STRIKETHROUGH);
        options.insert(Options::ENABLE_TASKLISTS);
        let mut writer = Writer::new(self.paint(), self.width);
        for event in Parser::new_ext(source, options) {
            writer.event(event);
        }
        writer.done()
    }
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// Whether `line` starts something other than a paragraph's text: a list
/// item, a quote, a table row, a heading, HTML, a fence or a rule.
fn starts_block(line: &str) -> bool {
    if indent_of(line) > 3 {
        return false;
    }
    let rest = line.trim_start_matches(' ');
    let bullet =
        ["- ", "* ", "+ "].iter().any(|b| rest.starts_with(b)) || ["-", "*", "+"].contains(&rest);
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let numbered =
        (1..=9).contains(&digits) && [". ", ") "].iter().any(|m| rest[digits..].starts_with(m));
    bullet
        || numbered
        || rest.starts_with(['>', '|', '#', '<'])
        || opens(line).is_some()
        || is_rule(line)
}

/// A fence opener: its character, length, indentation and info string.
fn opens(line: &str) -> Option<(char, usize, usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[indent..];
    let marker = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = rest.len() - rest.trim_start_matches(marker).len();
    if len < 3 {
        return None;
    }
    let info = rest[len..].trim();
    // A backtick fence's info string holds no backtick (CommonMark).
    if marker == '`' && info.contains('`') {
        return None;
    }
    Some((marker, len, indent, info))
}

fn closes(line: &str, marker: char, len: usize) -> bool {
    let rest = line.trim();
    let run = rest.len() - rest.trim_start_matches(marker).len();
    run >= len && rest.len() == run
}

fn strip_indent(line: &str, indent: usize) -> &str {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    &line[spaces.min(indent)..]
}

fn is_heading(line: &str) -> bool {
    let rest = line.trim_start_matches(' ');
    if line.len() - rest.len() > 3 {
        return false;
    }
    let hashes = rest.len() - rest.trim_start_matches('#').len();
    let after = &rest[hashes..];
    (1..=6).contains(&hashes) && (after.is_empty() || after.starts_with([' ', '\t']))
}

fn is_rule(line: &str) -> bool {
    let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    compact.len() >= 3
        && ['-', '*', '_']
            .iter()
            .any(|m| compact.chars().all(|c| c == *m))
        && line.len() - line.trim_start().len() <= 3
}

/// A list being drawn: its next number (None: bullets).
struct List {
    next: Option<u64>,
}

/// A table being collected, drawn whole at its end.
#[derive(Default)]
struct Table {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<String>>,
    head_rows: usize,
}

/// Walks one block's events and writes the terminal form.
struct Writer {
    paint: Paint,
    width: usize,
    out: String,
    /// Inline styles in force (SGR codes), innermost last.
    styles: Vec<&'static str>,
    lists: Vec<List>,
    /// The width of each open list item's marker, for its later lines.
    item_indents: Vec<usize>,
    quotes: usize,
    at_line_start: bool,
    /// The next line starts with a list marker already written.
    after_marker: bool,
    /// A paragraph (or other block) ended inside this block.
    ended_block: bool,
    links: Vec<String>,
    table: Option<Table>,
    cell: String,
    code: Option<Code>,
    /// The code block open is an indented one (no fence lines to draw).
    code_indented: bool,
    heading: Option<HeadingLevel>,
}

impl Writer {
    fn new(paint: Paint, width: usize) -> Writer {
        Writer {
            paint,
            width,
            out: String::new(),
            styles: Vec::new(),
            lists: Vec::new(),
            item_indents: Vec::new(),
            quotes: 0,
            at_line_start: true,
            after_marker: false,
            ended_block: false,
            links: Vec::new(),
            table: None,
            cell: String::new(),
            code: None,
            code_indented: false,
            heading: None,
        }
    }

    fn done(mut self) -> String {
        if !self.at_line_start {
            self.out.push('\n');
        }
        self.out
    }

    /// The prefix of a new line: quote bars, then list indentation.
    fn prefix(&self) -> String {
        let bar = if self.paint.on { "│ " } else { "> " };
        let mut p = String::new();
        for _ in 0..self.quotes {
            p.push_str(&self.paint.sgr("2", bar));
        }
        if !self.after_marker {
            p.push_str(&" ".repeat(self.item_indents.iter().sum()));
        }
        p
    }

    fn newline(&mut self) {
        if self.table.is_some() {
            self.cell.push(' ');
            return;
        }
        self.out.push('\n');
        self.at_line_start = true;
        self.after_marker = false;
    }

    fn end_line(&mut self) {
        if !self.at_line_start {
            self.newline();
        }
    }

    /// Text in the styles in force; line breaks keep the prefix.
    fn write(&mut self, text: &str) {
        let code = self.styles.join(";");
        for (i, piece) in text.split('\n').enumerate() {
            if i > 0 {
                self.newline();
            }
            if piece.is_empty() {
                continue;
            }
            let styled = self.paint.sgr(&code, piece);
            if let Some(link) = self.links.last_mut() {
                link.push_str(piece);
            }
            if self.table.is_some() {
                self.cell.push_str(&styled);
                continue;
            }
            if self.at_line_start {
                let prefix = self.prefix();
                self.out.push_str(&prefix);
                self.at_line_start = false;
                self.after_marker = false;
            }
            self.out.push_str(&styled);
        }
    }

    /// A block starts: on its own line, set apart from a block before it.
    fn open_block(&mut self) {
        self.end_line();
        if self.ended_block && !self.after_marker {
            let prefix = self.prefix();
            self.out.push_str(prefix.trim_end());
            self.out.push('\n');
        }
        self.ended_block = false;
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                if let Some(code) = self.code.as_mut() {
                    // An indented code block, or a fence inside a quote.
                    let lines: Vec<String> = text
                        .trim_end_matches('\n')
                        .split('\n')
                        .map(|l| code.line(l))
                        .collect();
                    for line in lines {
                        self.write_raw_line(&line);
                    }
                } else {
                    self.write(&text);
                }
            }
            Event::Code(text) => {
                if self.paint.on {
                    self.styles.push("36");
                    self.write(&text);
                    self.styles.pop();
                } else {
                    self.write(&format!("`{text}`"));
                }
            }
            Event::InlineMath(text) | Event::DisplayMath(text) => self.write(&text),
            Event::Html(text) | Event::InlineHtml(text) => self.write(text.trim_end_matches('\n')),
            Event::FootnoteReference(name) => self.write(&format!("[^{name}]")),
            Event::SoftBreak | Event::HardBreak => self.newline(),
            Event::Rule => {
                self.open_block();
                let rule = "─".repeat(self.width.min(60));
                let rule = self.paint.sgr("2", &rule);
                self.write_raw_line(&rule);
                self.ended_block = true;
            }
            Event::TaskListMarker(done) => self.write(if done { "[x] " } else { "[ ] " }),
        }
    }

    /// One whole line, already styled, with the prefix.
    fn write_raw_line(&mut self, line: &str) {
        self.end_line();
        let prefix = self.prefix();
        self.out.push_str(&prefix);
        self.out.push_str(line);
        self.out.push('\n');
        self.at_line_start = true;
        self.after_marker = false;
    }

    fn start(&mut self, tag: Tag) {
        match tag {
            Tag::Paragraph => self.open_block(),
            Tag::Heading { level, .. } => {
                self.open_block();
                self.heading = Some(level);
                let n = heading_number(level);
                if self.paint.on {
                    self.styles.push(match n {
                        1 => "1;4;35",
                        2 => "1;35",
                        _ => "1",
                    });
                } else {
                    self.write(&format!("{} ", "#".repeat(n)));
                }
            }
            Tag::BlockQuote(_) => {
                self.open_block();
                self.quotes += 1;
            }
            Tag::CodeBlock(kind) => {
                self.open_block();
                let lang = match &kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                let fence = matches!(kind, CodeBlockKind::Fenced(_));
                if fence {
                    let line = self.paint.sgr("2", &format!("```{lang}"));
                    self.write_raw_line(&line);
                }
                self.code = Some(if self.paint.on {
                    Code::new(&lang)
                } else {
                    Code::new("")
                });
                self.code_indented = !fence;
                if !fence {
                    self.item_indents.push(4);
                }
            }
            Tag::HtmlBlock => self.open_block(),
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.open_block();
                } else {
                    self.end_line();
                }
                self.lists.push(List { next: start });
            }
            Tag::Item => {
                self.end_line();
                let depth = self.lists.len();
                let list = self.lists.last_mut().expect("an item is in a list");
                let marker = match list.next.as_mut() {
                    Some(n) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    None => match depth {
                        1 => "• ",
                        2 => "◦ ",
                        _ => "▪ ",
                    }
                    .to_string(),
                };
                let shown = if self.paint.on && list.next.is_none() {
                    self.paint.sgr("36", &marker)
                } else {
                    marker.clone()
                };
                let prefix = self.prefix();
                self.out.push_str(&prefix);
                self.out.push_str(&shown);
                self.item_indents.push(width(&marker));
                self.at_line_start = true;
                self.after_marker = true;
                self.ended_block = false;
            }
            Tag::Table(alignments) => {
                self.open_block();
                self.table = Some(Table {
                    alignments,
                    ..Table::default()
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = self.table.as_mut() {
                    table.rows.push(Vec::new());
                }
            }
            Tag::TableCell => self.cell.clear(),
            Tag::Emphasis => self.styles.push("3"),
            Tag::Strong => self.styles.push("1"),
            Tag::Strikethrough => self.styles.push("9"),
            Tag::Superscript | Tag::Subscript => self.styles.push(""),
            Tag::Link { dest_url, .. } => {
                self.styles.push("4;34");
                // The url, then the text, which `write` collects on top.
                self.links.push(dest_url.to_string());
                self.links.push(String::new());
            }
            Tag::Image { dest_url, .. } => {
                self.write("[image: ");
                self.links.push(dest_url.to_string());
                self.links.push(String::new());
            }
            Tag::FootnoteDefinition(name) => {
                self.open_block();
                self.write(&format!("[^{name}]: "));
            }
            Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.open_block(),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock | TagEnd::FootnoteDefinition => {
                self.end_line();
                self.ended_block = true;
            }
            TagEnd::Heading(_) => {
                if self.paint.on {
                    self.styles.pop();
                }
                self.heading = None;
                self.end_line();
                self.ended_block = true;
            }
            TagEnd::BlockQuote(_) => {
                self.end_line();
                self.quotes = self.quotes.saturating_sub(1);
                self.ended_block = true;
            }
            TagEnd::CodeBlock => {
                self.code = None;
                if self.code_indented {
                    self.item_indents.pop();
                    self.code_indented = false;
                } else {
                    let line = self.paint.sgr("2", "```");
                    self.write_raw_line(&line);
                }
                self.ended_block = true;
            }
            TagEnd::List(_) => {
                self.end_line();
                self.lists.pop();
                self.ended_block = true;
            }
            TagEnd::Item => {
                self.end_line();
                self.item_indents.pop();
                self.ended_block = false;
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    let drawn = draw_table(&table, self.paint);
                    for line in drawn.lines() {
                        self.write_raw_line(line);
                    }
                }
                self.ended_block = true;
            }
            TagEnd::TableHead => {
                if let Some(table) = self.table.as_mut() {
                    table.head_rows = table.rows.len();
                }
            }
            TagEnd::TableRow => {}
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.cell);
                let head = self.table.as_ref().is_some_and(|t| t.head_rows == 0);
                let cell = if head {
                    self.paint.sgr("1", &cell)
                } else {
                    cell
                };
                if let Some(row) = self.table.as_mut().and_then(|t| t.rows.last_mut()) {
                    row.push(cell);
                }
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                let text = self.links.pop().unwrap_or_default();
                let url = self.links.pop().unwrap_or_default();
                if !url.is_empty() && text != url && !url.starts_with('#') {
                    let shown = self.paint.sgr("2", &format!(" ({url})"));
                    self.write_styled(&shown);
                }
            }
            TagEnd::Image => {
                let _text = self.links.pop();
                let url = self.links.pop().unwrap_or_default();
                self.write("]");
                if !url.is_empty() {
                    let shown = self.paint.sgr("2", &format!(" ({url})"));
                    self.write_styled(&shown);
                }
            }
            TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_) => self.end_line(),
        }
    }

    /// Text already styled, outside the styles in force.
    fn write_styled(&mut self, styled: &str) {
        let saved = std::mem::take(&mut self.styles);
        let links = std::mem::take(&mut self.links);
        if self.table.is_some() {
            self.cell.push_str(styled);
        } else {
            if self.at_line_start {
                let prefix = self.prefix();
                self.out.push_str(&prefix);
                self.at_line_start = false;
                self.after_marker = false;
            }
            self.out.push_str(styled);
        }
        self.styles = saved;
        self.links = links;
    }
}

fn heading_number(level: HeadingLevel) -> usize {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// A table in a box of line-drawing characters, columns aligned as the
/// markdown asks.
fn draw_table(table: &Table, paint: Paint) -> String {
    let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; columns];
    for row in &table.rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(width(cell));
        }
    }
    let rule = |left: &str, mid: &str, right: &str| {
        let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
        paint.sgr("2", &format!("{left}{}{right}", parts.join(mid)))
    };
    let bar = paint.sgr("2", "│");
    let mut out = String::new();
    out.push_str(&rule("┌", "┬", "┐"));
    out.push('\n');
    for (r, row) in table.rows.iter().enumerate() {
        out.push_str(&bar);
        for (i, w) in widths.iter().enumerate() {
            let cell = row.get(i).map(String::as_str).unwrap_or("");
            let pad = w - width(cell);
            let (left, right) = match table.alignments.get(i) {
                Some(Alignment::Right) => (pad, 0),
                Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                _ => (0, pad),
            };
            out.push_str(&format!(
                " {}{cell}{} {bar}",
                " ".repeat(left),
                " ".repeat(right)
            ));
        }
        out.push('\n');
        if r + 1 == table.head_rows && r + 1 < table.rows.len() {
            out.push_str(&rule("├", "┼", "┤"));
            out.push('\n');
        }
    }
    out.push_str(&rule("└", "┴", "┘"));
    out.push('\n');
    out
}

/// The whole of `text` drawn at once (a reply shown again on resume).
pub fn render(text: &str, form: Form, width: usize) -> String {
    let mut md = Markdown::new(form, width);
    let mut out = md.push(text);
    out.push_str(&md.finish());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> String {
        render(text, Form::Plain, 80)
    }

    #[test]
    fn raw_passes_through() {
        let mut md = Markdown::new(Form::Raw, 80);
        assert_eq!(md.push("# a\n**b**"), "# a\n**b**");
        assert_eq!(md.finish(), "");
    }

    #[test]
    fn plain_layout_of_each_element() {
        assert_eq!(
            plain("# Title\n\nSome *em* and **strong**."),
            "# Title\n\nSome em and strong.\n"
        );
        assert_eq!(plain("- a\n- b\n  - c\n"), "• a\n• b\n  ◦ c\n");
        assert_eq!(plain("3. x\n4. y"), "3. x\n4. y\n");
        assert_eq!(plain("> quoted\n> text"), "> quoted\n> text\n");
        assert_eq!(
            plain("Use `ls` [docs](https://x.org)."),
            "Use `ls` docs (https://x.org).\n"
        );
        assert_eq!(plain("---"), format!("{}\n", "─".repeat(60)));
        assert_eq!(plain("- [x] done\n- [ ] todo"), "• [x] done\n• [ ] todo\n");
        assert_eq!(
            plain("| a | bb |\n|---|--:|\n| 1 | 2 |"),
            "┌───┬────┐\n│ a │ bb │\n├───┼────┤\n│ 1 │  2 │\n└───┴────┘\n"
        );
        assert_eq!(
            plain("```rust\nfn x() {}\n```"),
            "```rust\nfn x() {}\n```\n"
        );
        assert_eq!(plain("one\n\n\n\ntwo"), "one\n\ntwo\n");
        assert_eq!(plain("text\n- item\n\nafter"), "text\n• item\n\nafter\n");
        assert_eq!(plain("1. a\n10. b"), "1. a\n2. b\n");
    }

    #[test]
    fn loose_list_items_stay_one_list() {
        assert_eq!(
            plain("1. first\n\n   more about it\n\n2. second"),
            "1. first\n\n   more about it\n\n2. second\n"
        );
    }

    #[test]
    fn streams_blocks_as_they_complete() {
        let mut md = Markdown::new(Form::Plain, 80);
        assert_eq!(md.push("# He"), "");
        assert_eq!(md.push("ading\nA para"), "# Heading\n");
        // A paragraph's lines show as each ends; a list waits for its end.
        assert_eq!(md.push("graph\nand more"), "A paragraph\n");
        assert_eq!(md.push("\n\n- item\n"), "and more\n");
        // A list's items show as the next one starts.
        assert_eq!(md.push("- second\n"), "\n• item\n");
        assert_eq!(md.push("\n```sh\nls\n"), "• second\n\n```sh\nls\n");
        assert_eq!(md.push("```\nend"), "```\n");
        assert_eq!(md.finish(), "end\n");
    }

    #[test]
    fn any_chunking_draws_the_same() {
        let text = "# T\n\npara one\nline two\n\n- a\n  - b\n- c\n\n1. x\n\n   more\n\n2. y\n\n\
                    > q1\n> q2\n\n| h | i |\n|---|---|\n| 1 | 2 |\n\n```py\nx = 1\n```\ntail";
        for form in [Form::Plain, Form::Colour] {
            let whole = render(text, form, 80);
            for size in [1, 2, 3, 7, 64] {
                let mut md = Markdown::new(form, 80);
                let mut streamed = String::new();
                let chars: Vec<char> = text.chars().collect();
                for piece in chars.chunks(size) {
                    streamed += &md.push(&piece.iter().collect::<String>());
                }
                streamed += &md.finish();
                assert_eq!(streamed, whole, "{form:?} in pieces of {size}");
            }
        }
    }

    #[test]
    fn colour_styles_inline_and_highlights_code() {
        let out = render(
            "## Hi\n\n**b** `c`\n\n```rust\nlet x = 1;\n```",
            Form::Colour,
            80,
        );
        assert!(
            out.starts_with("\x1b[1;35mHi\x1b[0m\n\n\x1b[1mb\x1b[0m \x1b[36mc\x1b[0m\n"),
            "{out:?}"
        );
        assert!(out.contains("\x1b[38;"), "{out:?}");
    }
}
