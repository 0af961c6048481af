//! HTML to markdown for web_fetch (web-tools.md, "HTML to Markdown
//! Conversion"; spec README, decision 14; issue 3).
//!
//! html5ever parses the page (as browsers do: it never rejects a page), the
//! title is taken from `<title>`, and the elements whose text is not page
//! content — `<script>`, `<style>`, `<nav>`, `<noscript>`, `<template>`,
//! `<title>` — and all comments are removed from the tree *before* html2md
//! walks it, so none of their text can reach the markdown. Headings are
//! ATX (`## Heading`) through a custom html2md tag handler, not by rewriting
//! its setext output. Finally whitespace is collapsed: no trailing blanks,
//! no runs of blank lines.

use std::collections::HashMap;

use html2md::{Handle, NodeData, RcDom, StructuredPrinter, TagHandler, TagHandlerFactory};
use html5ever::tendril::TendrilSink;
use html5ever::{parse_document, ParseOpts};

/// Elements whose content is never part of the page's text.
const REMOVED: &[&str] = &["script", "style", "nav", "noscript", "template", "title"];

/// Deeper nesting than this is refused: html2md walks the tree recursively
/// and a hostile page must not overflow the stack. Browsers stop nesting at
/// 512 levels; real pages stay far below.
pub const MAX_DEPTH: usize = 1024;

#[derive(Debug, PartialEq, Eq)]
pub struct Page {
    pub title: String,
    pub markdown: String,
}

/// Converts a decoded HTML page. The error says why it cannot be converted.
pub fn convert(html: &str) -> Result<Page, String> {
    let dom = parse_document(RcDom::default(), ParseOpts::default()).one(html);
    let title = find_title(&dom.document);
    prune(&dom.document)?;
    let mut handlers: HashMap<String, Box<dyn TagHandlerFactory>> = HashMap::new();
    for level in 1..=6 {
        handlers.insert(format!("h{level}"), Box::new(AtxHeading::default));
    }
    let mut printer = StructuredPrinter::default();
    html2md::walk(&dom.document, &mut printer, &handlers);
    Ok(Page {
        title: title.unwrap_or_default(),
        markdown: collapse_blank_lines(&printer.data),
    })
}

/// The first `<title>`'s text, in document order.
fn find_title(root: &Handle) -> Option<String> {
    let mut stack = vec![root.clone()];
    while let Some(node) = stack.pop() {
        if let NodeData::Element { name, .. } = &node.data {
            if &*name.local == "title" {
                return Some(collapse_spaces(&text_of(&node)));
            }
        }
        stack.extend(node.children.borrow().iter().rev().cloned());
    }
    None
}

/// Removes comments and the `REMOVED` elements from the tree and checks its
/// depth. Iterative, so any depth is safe here.
fn prune(root: &Handle) -> Result<(), String> {
    let mut stack = vec![(root.clone(), 0usize)];
    while let Some((node, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(format!(
                "elements are nested more than {MAX_DEPTH} levels deep"
            ));
        }
        node.children
            .borrow_mut()
            .retain(|child| match &child.data {
                NodeData::Comment { .. } => false,
                NodeData::Element { name, .. } => !REMOVED.contains(&&*name.local),
                _ => true,
            });
        for child in node.children.borrow().iter() {
            stack.push((child.clone(), depth + 1));
        }
    }
    Ok(())
}

/// All the text under `node`, in document order.
pub fn text_of(node: &Handle) -> String {
    let mut text = String::new();
    let mut stack = vec![node.clone()];
    while let Some(node) = stack.pop() {
        if let NodeData::Text { contents } = &node.data {
            text.push_str(&contents.borrow());
        }
        stack.extend(node.children.borrow().iter().rev().cloned());
    }
    text
}

/// The text of an HTML fragment (`Rust <strong>async</strong> &amp; more`):
/// tags dropped, entities decoded, whitespace collapsed.
pub fn fragment_text(html: &str) -> String {
    if !html.contains(['<', '&']) {
        return collapse_spaces(html);
    }
    let dom = parse_document(RcDom::default(), ParseOpts::default()).one(html);
    collapse_spaces(&text_of(&dom.document))
}

fn collapse_spaces(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Trailing whitespace removed from every line, blank lines at either end
/// dropped, and every run of blank lines made one.
pub fn collapse_blank_lines(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank_before = false;
    for line in markdown.split('\n') {
        let line = line.trim_end();
        if line.is_empty() {
            blank_before = !out.is_empty();
            continue;
        }
        if blank_before {
            out.push_str("\n\n");
        } else if !out.is_empty() {
            out.push('\n');
        }
        blank_before = false;
        out.push_str(line);
    }
    out
}

/// `<h1>`..`<h6>` as one ATX line: `#`..`######`, a space, the heading's
/// text with its line breaks made spaces; an empty heading leaves nothing.
#[derive(Default)]
struct AtxHeading {
    level: usize,
    marker_at: usize,
    text_at: usize,
}

impl TagHandler for AtxHeading {
    fn handle(&mut self, tag: &Handle, printer: &mut StructuredPrinter) {
        self.level = match &tag.data {
            NodeData::Element { name, .. } => name.local[1..].parse().unwrap_or(1),
            _ => 1,
        };
        printer.append_str("\n\n");
        self.marker_at = printer.data.len();
        printer.append_str(&"#".repeat(self.level));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn md(html: &str) -> String {
        convert(html).unwrap().markdown
    }

    #[test]
    fn headings_are_atx() {
        assert_eq!(
            md("<h1>One</h1><h2>Two</h2><h3>Three <em>x</em></h3><h6>Six</h6>"),
            "# One\n\n## Two\n\n### Three *x*\n\n###### Six"
        );
        assert_eq!(
            md("<h2>Split<br>over\n lines</h2><p>p</p>"),
            "## Split over lines\n\np"
        );
        assert_eq!(md("<h2> </h2><p>p</p>"), "p");
    }

    #[test]
    fn spec_elements() {
        let out = md(
            "<p>A <a href=\"https://x.org/a\">link</a>, <strong>bold</strong>, \
                      <b>b</b>, <em>em</em>, <i>i</i>, <code>c()</code>.</p>\
                      <ul><li>one</li><li>two</li></ul><ol><li>first</li></ol>",
        );
        assert_eq!(
            out,
            "A [link](https://x.org/a), **bold**, **b**, *em*, *i*, `c()`.\n\n\
             * one\n* two\n\n1. first"
        );
    }

    #[test]
    fn hidden_elements_and_comments_leave_no_text() {
        let page = convert(
            "<html><head><title> The\n Title </title><style>.s{color:red}</style>\
             <script>var secret = 1;</script></head><body>\
             <nav><a href=/>Home</a> menu</nav><!-- a comment -->\
             <noscript>enable js</noscript><template><p>tpl</p></template>\
             <p>Body <script>inline()</script>text</p></body></html>",
        )
        .unwrap();
        assert_eq!(page.title, "The Title");
        assert_eq!(page.markdown, "Body text");
    }

    #[test]
    fn first_title_wins_and_missing_title_is_empty() {
        assert_eq!(convert("<p>x</p>").unwrap().title, "");
        let page = convert("<title>A &amp; B</title><p>x<title>C</title></p>").unwrap();
        assert_eq!(page.title, "A & B");
        assert_eq!(page.markdown, "x");
        // Document order, whatever the nesting.
        let page =
            convert("<body><div><p><title>deep</title></p></div><title>late</title>").unwrap();
        assert_eq!(page.title, "deep");
    }

    #[test]
    fn blank_lines_collapse() {
        assert_eq!(
            collapse_blank_lines("\n\n a  \n\n\n\n b\t\n \n\u{a0}\nc\n\n"),
            " a\n\n b\n\nc"
        );
        let out = md("<div><p>a</p><div><div><p>b</p></div></div><br><br><br><p>c</p></div>");
        assert_eq!(out, "a\n\nb\n\nc");
    }

    #[test]
    fn deep_nesting_is_refused_not_a_crash() {
        let deep = "<div>".repeat(MAX_DEPTH + 10);
        let err = convert(&deep).unwrap_err();
        assert_eq!(err, "elements are nested more than 1024 levels deep");
        let fine = format!("{}x", "<div>".repeat(200));
        assert_eq!(md(&fine), "x");
    }

    #[test]
    fn fragments() {
        assert_eq!(
            fragment_text("Learn <strong>Rust</strong> &amp; <em>async</em>\n  today"),
            "Learn Rust & async today"
        );
        assert_eq!(fragment_text("plain  text"), "plain text");
        assert_eq!(fragment_text("a &lt;b&gt; &#x27;c&#x27;"), "a <b> 'c'");
    }
}
