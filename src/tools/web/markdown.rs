//! HTML to markdown for web_fetch (web-tools.md, "HTML to Markdown
//! Conversion"; spec README, decision 14; issue 3).
//!
//! html5ever parses the page (as browsers do: it never rejects a page), the
//! title is taken from `<title>`, and the elements whose text is not page
//! content — `<script>`, `<style>`, `<nav>`, `<noscript>`, `<template>`,
//! `<title>` — and all comments are removed from the tree *before* html2md
//! walks it, so none of their text can reach the markdown. html2md walks
//! the tree with our tag handlers (`handlers.rs`: ATX headings, linear
//! tables, quotes and list items). Finally whitespace is collapsed: no
//! trailing blanks, no runs of blank lines.

use html2md::{Handle, NodeData, RcDom, StructuredPrinter};
use html5ever::tendril::TendrilSink;
use html5ever::{parse_document, ParseOpts};

use super::handlers;

/// Elements whose content is never part of the page's text.
const REMOVED: &[&str] = &["script", "style", "nav", "noscript", "template", "title"];

/// Elements whose text keeps its line breaks.
const PREFORMATTED: &[&str] = &["pre", "textarea", "listing", "plaintext", "xmp"];

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
    let mut printer = StructuredPrinter::default();
    handlers::walk(&dom.document, &mut printer);
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

/// Removes comments and the `REMOVED` elements from the tree, checks its
/// depth, and turns line breaks in text outside `<pre>` into spaces, as a
/// browser shows them (html2md would drop a text node's leading line break,
/// gluing `<b>x</b>\ny` into `**x**y`). Iterative, so any depth is safe.
fn prune(root: &Handle) -> Result<(), String> {
    let mut stack = vec![(root.clone(), 0usize, false)];
    while let Some((node, depth, preformatted)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(format!(
                "elements are nested more than {MAX_DEPTH} levels deep"
            ));
        }
        if let NodeData::Text { contents } = &node.data {
            let mut text = contents.borrow_mut();
            if !preformatted && text.contains(['\n', '\r', '\t']) {
                *text = text.replace(['\n', '\r', '\t'], " ").as_str().into();
            }
            continue;
        }
        let preformatted = preformatted
            || matches!(&node.data, NodeData::Element { name, .. } if PREFORMATTED.contains(&&*name.local));
        node.children
            .borrow_mut()
            .retain(|child| match &child.data {
                NodeData::Comment { .. } => false,
                NodeData::Element { name, .. } => !REMOVED.contains(&&*name.local),
                _ => true,
            });
        for child in node.children.borrow().iter() {
            stack.push((child.clone(), depth + 1, preformatted));
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

/// Every run of whitespace made one space, none at either end.
pub fn collapse_spaces(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Outside code fences: trailing whitespace removed from every line, blank
/// lines at either end dropped, every run of blank lines made one, and the
/// single space html2md leaves where a text node began a line dropped (list
/// continuations are indented by two or more and stay). Inside a fence
/// every line stays as it is: in code, blank lines and spaces can matter.
pub fn collapse_blank_lines(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank_before = false;
    let mut in_fence = false;
    for raw in markdown.split('\n') {
        let fence = raw.trim_start().starts_with("```");
        if in_fence && !fence {
            out.push('\n');
            out.push_str(raw);
            continue;
        }
        let mut line = raw.trim_end();
        if fence {
            in_fence = !in_fence;
        } else if line.starts_with(' ') && !line.starts_with("  ") {
            line = &line[1..];
        }
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
    fn line_breaks_in_text_are_spaces_outside_pre() {
        assert_eq!(
            md("<p><strong>Chapter 5</strong>\ndiscusses\n  structs.</p><pre>a\n  b</pre>"),
            "**Chapter 5** discusses structs.\n\n```\na\n  b\n```"
        );
    }

    #[test]
    fn tables() {
        assert_eq!(
            md(
                "<table><caption>Sizes</caption><thead><tr><th>Name</th><th>Size</th></tr></thead>\
                <tbody><tr><td><b>a</b></td><td>1 | 2</td></tr><tr><td>b</td></tr></tbody></table>"
            ),
            "Sizes\n\n| Name | Size |\n| --- | --- |\n| **a** | 1 \\| 2 |\n| b | |"
        );
        // Layout tables: one column, or tables within cells.
        assert_eq!(
            md("<table><tr><td><h2>Title</h2><p>Body</p></td></tr></table>"),
            "## Title\n\nBody"
        );
        assert_eq!(
            md("<table><tr><td>menu</td><td><table><tr><td>x</td><td>y</td></tr></table></td></tr></table>"),
            "menu\n\n| x | y |\n| --- | --- |"
        );
        assert_eq!(md("<table></table><p>after</p>"), "after");
    }

    #[test]
    fn nested_tables_cost_linear_time() {
        // html2md's own handler doubles its work per level: 2^40 here.
        let depth = 40;
        let page = format!(
            "{}inner{}",
            "<table><tr><td>a</td><td>".repeat(depth),
            "</td></tr><tr><td>x</td><td>y</td></tr></table>".repeat(depth)
        );
        let out = md(&page);
        assert!(out.starts_with("a\n\na\n\n"), "{out}");
        assert!(out.contains("inner"));
    }

    #[test]
    fn quotes_and_list_items() {
        assert_eq!(
            md("<blockquote><p>one</p><p>two</p><blockquote>deep</blockquote></blockquote>"),
            "> one\n>\n> two\n>\n> > deep"
        );
        assert_eq!(
            md("<p>He said <q>hi</q> in <cite>Book</cite>.</p>"),
            "He said \"hi\" in Book."
        );
        assert_eq!(
            md("<ol><li><p>first</p><p>more</p></li><li>second<ul><li>inner</li></ul></li></ol>"),
            "1. first\n\n   more\n\n2. second\n   * inner"
        );
        let many: String = (1..=12).map(|i| format!("<li>{i}</li>")).collect();
        assert!(md(&format!("<ol>{many}</ol>")).ends_with("11. 11\n12. 12"));
        // A huge quote or list item is rewritten once, not per line.
        let lines = "<br>line".repeat(50_000);
        assert_eq!(
            md(&format!("<blockquote>{lines}</blockquote>"))
                .lines()
                .count(),
            50_000
        );
        assert_eq!(
            md(&format!("<ul><li>{lines}</li></ul>")).lines().count(),
            50_000
        );
    }

    #[test]
    fn deep_quotes_and_lists_are_prefixed_only_so_deep() {
        // 1000 nested quotes around a big text never finished: every level
        // rewrote all of it.
        let text = "word ".repeat(1000);
        let html = format!(
            "{}{text}{}",
            "<blockquote>".repeat(1000),
            "</blockquote>".repeat(1000)
        );
        // html2md recurses per level: more stack than a test thread has.
        let deep_md = |html: String| {
            std::thread::Builder::new()
                .stack_size(512 << 20)
                .spawn(move || md(&html))
                .unwrap()
                .join()
                .unwrap()
        };
        let out = deep_md(html);
        assert!(
            out.starts_with(&format!("{}word", "> ".repeat(16))),
            "{}",
            &out[..80]
        );
        let html = format!("{}x{}", "<ul><li>".repeat(100), "</li></ul>".repeat(100));
        let out = deep_md(html);
        let widest = out.lines().map(|l| l.len() - l.trim_start().len()).max();
        assert!(widest <= Some(2 * 16), "{widest:?}\n{out}");
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
            "a\n\nb\n\nc"
        );
        assert_eq!(
            collapse_blank_lines("* item\n  more\n```\n code\n\n\n\n```\n x"),
            "* item\n  more\n```\n code\n\n\n\n```\nx"
        );
        assert_eq!(
            collapse_blank_lines("```\na  \n\n\n\n  b\n```"),
            "```\na  \n\n\n\n  b\n```"
        );
        assert!(md("<pre>x\n\n\n\ny</pre>").contains("x\n\n\n\ny"));
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
