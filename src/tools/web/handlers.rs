//! Our html2md tag handlers (web-tools.md, "HTML to Markdown Conversion";
//! spec README, decision 14): html2md is customised through its own
//! handler table, never by patching its output.
//!
//! - `h1`..`h6`: ATX headings (`## Heading`) on one line; html2md writes
//!   setext underlines for `h1`/`h2` and closing hashes for the rest.
//! - `table`: html2md renders every cell twice, recursively, so each level
//!   of nested tables doubles the work: a 1 KB page of 14 nested tables ran
//!   out of memory. Ours renders each cell once. A data table becomes a
//!   compact GFM table (`| a | b |`); a layout table (one column, or tables
//!   inside its cells) becomes its cells' content, one block after another.
//! - `blockquote`, `li`: html2md prefixes or indents each line by inserting
//!   into the middle of the output, which is quadratic in the element's
//!   size; ours rewrites the element's text once. Each nesting level
//!   still rewrites its inner text, so only the outer MAX_PREFIXED levels
//!   are prefixed or indented: deeper ones (a page of 1000 nested quotes
//!   never finished) add their text as it is.
//! - `q` is an inline quotation ("..."), `cite` plain text; html2md made
//!   both block quotes.

use std::collections::HashMap;

use html2md::dummy::DummyHandler;
use html2md::{Handle, NodeData, StructuredPrinter, TagHandler, TagHandlerFactory};

use super::markdown::{collapse_blank_lines, collapse_spaces};

type Handlers = HashMap<String, Box<dyn TagHandlerFactory>>;

thread_local! {
    static HANDLERS: Handlers = handlers();
}

fn handlers() -> Handlers {
    let mut table: Handlers = HashMap::new();
    for level in 1..=6 {
        table.insert(format!("h{level}"), Box::new(AtxHeading::default));
    }
    table.insert("table".into(), Box::new(Table::default));
    table.insert("blockquote".into(), Box::new(BlockQuote::default));
    table.insert("li".into(), Box::new(ListItem::default));
    table.insert("q".into(), Box::new(InlineQuote::default));
    table.insert("cite".into(), Box::new(DummyHandler::default));
    table
}

/// html2md's walk over `node` with our handlers.
pub fn walk(node: &Handle, printer: &mut StructuredPrinter) {
    HANDLERS.with(|handlers| html2md::walk(node, printer, handlers));
}

fn name_of(node: &Handle) -> Option<&str> {
    match &node.data {
        NodeData::Element { name, .. } => Some(&name.local),
        _ => None,
    }
}

/// `<h1>`..`<h6>` as one ATX line: `#`..`######`, a space, the heading's
/// text with its line breaks made spaces; an empty heading leaves nothing.
#[derive(Default)]
struct AtxHeading {
    marker_at: usize,
    text_at: usize,
}

impl TagHandler for AtxHeading {
    fn handle(&mut self, tag: &Handle, printer: &mut StructuredPrinter) {
        let level = name_of(tag)
            .and_then(|name| name.get(1..))
            .and_then(|digit| digit.parse().ok())
            .unwrap_or(1);
        printer.append_str("\n\n");
        self.marker_at = printer.data.len();
        printer.append_str(&"#".repeat(level));
        printer.append_str(" ");
        self.text_at = printer.data.len();
    }

    fn after_handle(&mut self, printer: &mut StructuredPrinter) {
        let text = collapse_spaces(&printer.data[self.text_at..]);
        if text.is_empty() {
            printer.data.truncate(self.marker_at);
        } else {
            printer.data.truncate(self.text_at);
            printer.append_str(&text);
        }
        printer.append_str("\n\n");
    }
}

/// The nesting depth up to which quotes are prefixed and list items
/// indented; each level rewrites its inner text once.
const MAX_PREFIXED: usize = 16;

/// How many elements named `name` enclose the one being handled.
fn nesting(printer: &StructuredPrinter, name: &str) -> usize {
    printer.parent_chain.iter().filter(|t| *t == name).count()
}

/// Each line of the quoted text prefixed with `> ` (`>` alone on blanks).
#[derive(Default)]
struct BlockQuote {
    start: usize,
    too_deep: bool,
}

impl TagHandler for BlockQuote {
    fn handle(&mut self, _tag: &Handle, printer: &mut StructuredPrinter) {
        self.too_deep = nesting(printer, "blockquote") >= MAX_PREFIXED;
        printer.append_str("\n\n");
        self.start = printer.data.len();
    }

    fn after_handle(&mut self, printer: &mut StructuredPrinter) {
        if self.too_deep {
            printer.append_str("\n\n");
            return;
        }
        let inner = collapse_blank_lines(&printer.data.split_off(self.start));
        for line in inner.lines() {
            printer.append_str(if line.is_empty() { ">" } else { "> " });
            printer.append_str(line);
            printer.append_str("\n");
        }
        printer.append_str("\n");
    }
}

/// `* item` or `N. item`, continuation lines indented to the text.
#[derive(Default)]
struct ListItem {
    start: usize,
    indent: usize,
    in_list: bool,
    too_deep: bool,
}

impl TagHandler for ListItem {
    fn handle(&mut self, _tag: &Handle, printer: &mut StructuredPrinter) {
        let list = printer
            .parent_chain
            .iter()
            .rev()
            .find(|tag| matches!(tag.as_str(), "ul" | "ol" | "menu"))
            .cloned();
        if !printer.data.ends_with('\n') {
            printer.append_str("\n");
        }
        self.in_list = list.is_some();
        self.too_deep = nesting(printer, "li") >= MAX_PREFIXED;
        let marker = match list.as_deref() {
            Some("ol") => {
                // The names of the list's children walked so far.
                let before = printer
                    .siblings
                    .get(&printer.parent_chain.len())
                    .map_or(0, |names| names.iter().filter(|n| *n == "li").count());
                format!("{}. ", before + 1)
            }
            Some(_) => "* ".to_string(),
            None => String::new(),
        };
        self.indent = marker.len();
        printer.append_str(&marker);
        self.start = printer.data.len();
    }

    fn after_handle(&mut self, printer: &mut StructuredPrinter) {
        if !self.in_list || self.too_deep {
            printer.append_str("\n");
            return;
        }
        let inner = printer.data.split_off(self.start);
        let mut lines = inner.trim_start_matches(['\n', ' ']).split('\n');
        printer.append_str(lines.next().unwrap_or(""));
        let pad = " ".repeat(self.indent);
        for line in lines {
            printer.append_str("\n");
            if !line.trim().is_empty() {
                printer.append_str(&pad);
                printer.append_str(line);
            }
        }
    }
}

/// `<q>` as "quoted" inline text.
#[derive(Default)]
struct InlineQuote;

impl TagHandler for InlineQuote {
    fn handle(&mut self, _tag: &Handle, printer: &mut StructuredPrinter) {
        printer.append_str("\"");
    }
    fn after_handle(&mut self, printer: &mut StructuredPrinter) {
        printer.append_str("\"");
    }
}

/// Tables, each cell rendered once (see the module comment).
#[derive(Default)]
struct Table;

impl TagHandler for Table {
    fn handle(&mut self, tag: &Handle, printer: &mut StructuredPrinter) {
        printer.append_str("\n\n");
        let children = tag.children.borrow();
        if let Some(caption) = children.iter().find(|c| name_of(c) == Some("caption")) {
            printer.append_str(&cell_text(caption));
            printer.append_str("\n\n");
        }
        let rows = rows(&children);
        let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
        if columns == 0 {
            return;
        }
        if columns == 1 || rows.iter().flatten().any(holds_table) {
            for cell in rows.iter().flatten() {
                walk(cell, printer);
                printer.append_str("\n\n");
            }
            return;
        }
        for (i, row) in rows.iter().enumerate() {
            printer.append_str("|");
            for column in 0..columns {
                let text = row.get(column).map(cell_text).unwrap_or_default();
                printer.append_str(" ");
                printer.append_str(&text.replace('|', "\\|"));
                printer.append_str(if text.is_empty() { "|" } else { " |" });
            }
            printer.append_str("\n");
            if i == 0 {
                printer.append_str("|");
                printer.append_str(&" --- |".repeat(columns));
                printer.append_str("\n");
            }
        }
        printer.append_str("\n");
    }

    fn after_handle(&mut self, _printer: &mut StructuredPrinter) {}

    fn skip_descendants(&self) -> bool {
        true
    }
}

/// The cells of each row of a table (rows in `thead`/`tbody`/`tfoot` too,
/// but not those of tables nested in cells).
fn rows(table_children: &[Handle]) -> Vec<Vec<Handle>> {
    let mut rows = Vec::new();
    let mut add = |tr: &Handle| {
        let cells = tr.children.borrow();
        rows.push(
            cells
                .iter()
                .filter(|c| matches!(name_of(c), Some("td" | "th")))
                .cloned()
                .collect(),
        );
    };
    for child in table_children {
        match name_of(child) {
            Some("tr") => add(child),
            Some("thead" | "tbody" | "tfoot") => {
                for tr in child.children.borrow().iter() {
                    if name_of(tr) == Some("tr") {
                        add(tr);
                    }
                }
            }
            _ => {}
        }
    }
    rows
}

fn holds_table(cell: &Handle) -> bool {
    let mut stack: Vec<Handle> = cell.children.borrow().clone();
    while let Some(node) = stack.pop() {
        if name_of(&node) == Some("table") {
            return true;
        }
        stack.extend(node.children.borrow().iter().cloned());
    }
    false
}

/// A cell's markdown on one line.
fn cell_text(cell: &Handle) -> String {
    let mut printer = StructuredPrinter::default();
    walk(cell, &mut printer);
    collapse_spaces(&printer.data)
}
