//! Decision 74's link boxes as built (decision 102), one test each: what
//! goes, the rule's edges, data tables, pages made of links, and what is
//! never a box.

use super::tests::{md, ARTICLE};

/// `n` list items, each one link.
fn link_items(n: usize, path: &str) -> String {
    (0..n)
        .map(|i| format!("<li><a href=\"/{path}/{i}\">{path} {i}</a></li>"))
        .collect()
}

#[test]
fn link_dense_blocks_of_the_main_content_are_left_out() {
    let page = format!(
        "<main>{}<ul class=\"share\">{}</ul>\
         <div class=\"tags\">Tags: <a href=\"/t/a\">rust</a> <a href=\"/t/b\">html</a> \
         <a href=\"/t/c\">markdown</a> <a href=\"/t/d\">models</a> <a href=\"/t/e\">tokens</a></div>\
         <div class=\"toc\"><ol>{}</ol></div>\
         <h2>See also</h2><ul>{}</ul><p>The end of the article, in its words.</p></main>",
        ARTICLE.repeat(6),
        link_items(5, "share"),
        (0..6)
            .map(|i| format!("<li><a href=\"#s{i}\">Section {i}</a></li>"))
            .collect::<String>(),
        link_items(8, "related"),
    );
    let out = md(&page);
    assert!(out.starts_with("The article says"), "{out}");
    assert!(
        out.ends_with("## See also\n\nThe end of the article, in its words."),
        "{out}"
    );
    for gone in ["share", "Tags", "rust", "Section", "related", "]("] {
        assert!(!out.contains(gone), "{gone}: {out}");
    }
}

#[test]
fn the_rule_s_edges_four_links_and_half_the_text() {
    // Four links are a short list of sources, whatever their share.
    let four = format!("<main>{ARTICLE}<ul>{}</ul></main>", link_items(4, "src"));
    assert!(md(&four).contains("* [src 3](https://example.com/src/3)"));
    // Five links whose text is exactly half of the block's stay; a
    // byte more of link text and the block goes.
    let block = |link_word: &str| {
        let links: String = (0..5)
            .map(|i| format!("<a href=\"/l/{i}\">{link_word}</a> "))
            .collect();
        format!(
            "<main>{ARTICLE}<p>{links}<span>{}</span></p></main>",
            "x".repeat(5 * 4)
        )
    };
    assert!(md(&block("abcd")).contains("[abcd](https://example.com/l/4)"));
    assert!(!md(&block("abcde")).contains("abcde"));
    // A paragraph of links (a tag line) goes; a paragraph of prose with as
    // many links stays.
    let tags = format!(
        "<main>{ARTICLE}<p>{}</p></main>",
        (0..6)
            .map(|i| format!("<a href=\"/p/{i}\">tag {i}</a> "))
            .collect::<String>()
    );
    assert!(!md(&tags).contains("tag"));
    let prose = format!(
        "<main>{ARTICLE}<p>{}</p></main>",
        (0..6)
            .map(|i| format!("Claim number {i} rests on <a href=\"/p/{i}\">this</a>. "))
            .collect::<String>()
    );
    assert!(md(&prose).contains("Claim number 5 rests on [this](https://example.com/p/5)."));
}

#[test]
fn a_block_holding_the_article_stays_and_its_link_boxes_go() {
    // A page without a main element whose wrapper is mostly links (menus,
    // footers, a long list of names): the wrapper holds the article's
    // text, so it stays, and the link boxes inside it go.
    let article = ARTICLE.repeat(6);
    let names: String = (0..100)
        .map(|i| format!("<a href=\"/users/{i}\">reader{i}</a>, "))
        .collect();
    let page = format!(
        "<body><div id=\"wrap\"><ul>{}</ul>{article}<p class=\"kudos\">{names}</p>\
         <div class=\"footer\"><ul>{}</ul></div></div></body>",
        link_items(12, "menu"),
        link_items(9, "footer")
    );
    let out = md(&page);
    assert_eq!(out, md(&format!("<body>{article}</body>")), "{out}");
}

#[test]
fn deeply_nested_link_lists_go_whole() {
    let mut list = link_items(3, "leaf");
    for depth in 0..40 {
        list = format!("<ul><li><a href=\"/d/{depth}\">level {depth}</a>{list}</li></ul>");
    }
    let article = ARTICLE.repeat(6);
    let out = md(&format!(
        "<main>{article}<div>{list}</div><p>After.</p></main>"
    ));
    assert_eq!(
        out,
        format!("{}\n\nAfter.", md(&format!("<main>{article}</main>")))
    );
    // Unclosed items and lists close as HTML closes them: the same.
    let unclosed: String = (0..40)
        .map(|i| format!("<ul><li><a href=\"/u/{i}\">u {i}</a><li><a href=\"/v/{i}\">v</a>"))
        .collect();
    let out = md(&format!("<main>{article}<div>{unclosed}</div></main>"));
    assert!(
        !out.contains("](") && out.starts_with("The article"),
        "{out}"
    );
}

#[test]
fn data_tables_of_links_are_data() {
    let rows: String = (1..=8)
        .map(|i| {
            format!(
                "<tr><td>1.{i}</td><td><a href=\"/r/1.{i}.tar.gz\">tar.gz</a> \
                 <a href=\"/r/1.{i}.zip\">zip</a></td></tr>"
            )
        })
        .collect();
    let out = md(&format!(
        "<main>{ARTICLE}<table><tr><th>Version</th><th>Download</th></tr>{rows}</table></main>"
    ));
    assert!(out.contains("| Version | Download |"), "{out}");
    assert!(out.contains(
        "| 1.8 | [tar.gz](https://example.com/r/1.8.tar.gz) [zip](https://example.com/r/1.8.zip) |"
    ));
    // A list of links inside a data table's cell is the table's data too.
    let in_cell = format!(
        "<main>{ARTICLE}<table><tr><td>Mirrors</td><td><ul>{}</ul></td></tr></table></main>",
        link_items(6, "mirror")
    );
    assert!(md(&in_cell).contains("[mirror 5](https://example.com/mirror/5)"));
    // A one-column table of links is a layout table, and so is one with a
    // table in its cells: navigation, left out.
    let column: String = (0..6)
        .map(|i| format!("<tr><td><a href=\"/c/{i}\">column {i}</a></td></tr>"))
        .collect();
    let out = md(&format!("<main>{ARTICLE}<table>{column}</table></main>"));
    assert!(!out.contains("column"), "{out}");
    let navbox = format!(
        "<main>{ARTICLE}<table><tr><th>Topics</th><td><table><tr><td>{}</td><td>x</td></tr>\
         </table></td></tr></table></main>",
        (0..6)
            .map(|i| format!("<a href=\"/n/{i}\">topic {i}</a> "))
            .collect::<String>()
    );
    let out = md(&navbox);
    assert!(!out.contains("topic") && !out.contains("Topics"), "{out}");
}

#[test]
fn a_page_made_of_links_keeps_them() {
    // A sitemap: the links are the page's content; left out, nothing of
    // it would remain but its heading.
    let sitemap = format!(
        "<main><h1>Sitemap</h1><p>Every page.</p><ul>{}</ul></main>",
        link_items(50, "page")
    );
    let out = md(&sitemap);
    assert!(out.starts_with("# Sitemap\n\nEvery page.\n\n* [page 0](https://example.com/page/0)"));
    assert!(out.ends_with("* [page 49](https://example.com/page/49)"));
    // A link directory without a main element: its body is the content.
    let directory = format!(
        "<body><div><ul>{}</ul></div><div><ul>{}</ul></div></body>",
        link_items(10, "a"),
        link_items(10, "b")
    );
    let out = md(&directory);
    assert!(out.contains("[a 9](") && out.contains("[b 9]("), "{out}");
    // What remains is the page's text when it is a quarter of it or more:
    // then the link-dense blocks go.
    let half = format!(
        "<main><p>{}</p><ul>{}</ul></main>",
        "word ".repeat(40),
        link_items(10, "n")
    );
    assert!(!md(&half).contains("]("));
    // The edge: ten links of 9 bytes (90) beside 30 bytes of text leave a
    // quarter and go; beside 29 bytes, less than a quarter, and stay.
    let edge = |own: usize| {
        let links: String = (0..10)
            .map(|i| format!("<li><a href=\"/e/{i}\">link{i:05}</a></li>"))
            .collect();
        md(&format!(
            "<main><p>{}</p><ul>{links}</ul></main>",
            "y".repeat(own)
        ))
    };
    assert_eq!(edge(30), "y".repeat(30));
    assert!(edge(29).ends_with("* [link00009](https://example.com/e/9)"));
}

#[test]
fn the_rule_looks_inside_the_main_content_only() {
    // Outside the main element nothing is written anyway; inside it the
    // main element itself is never the block left out.
    let page = format!(
        "<ul>{}</ul><main><ul>{}</ul><p>{}</p></main>",
        link_items(9, "outside"),
        link_items(9, "inside"),
        "word ".repeat(60)
    );
    let out = md(&page);
    assert!(out.starts_with("word word"), "{out}");
    assert!(!out.contains("outside") && !out.contains("inside"));
    // Without a main element, the whole body is the scope.
    let body = format!(
        "<p>{}</p><ul>{}</ul>",
        "word ".repeat(60),
        link_items(9, "x")
    );
    assert!(!md(&body).contains("]("));
}

#[test]
fn in_page_links_are_their_text() {
    assert_eq!(
        md(
            "<p><a href=\"#notes\">note</a>, <a href=\" #top\">top</a>, \
            <a href=\"https://example.com/docs/page.html#x\">here</a>, \
            <a href=\"page.html#y\">same</a>, <a href=\"other.html#z\">there</a>, \
            <a href=\"https://example.com/docs/page.html\">the page</a></p>"
        ),
        "note, top, here, same, [there](https://example.com/docs/other.html#z), \
         [the page](https://example.com/docs/page.html)"
    );
    // Footnote marks stay readable as text.
    assert_eq!(
        md("<p>Claim.<sup><a href=\"#cite_note-1\">[1]</a></sup></p>"),
        "Claim.[1]"
    );
}

#[test]
fn a_link_around_a_heading_keeps_it_a_heading() {
    for level in 1..=6 {
        let hashes = "#".repeat(level);
        assert_eq!(
            md(&format!(
                "<a href=\"/p\"><h{level}>Title</h{level}></a><p>Next</p>"
            )),
            format!("{hashes} [Title](https://example.com/p)\n\nNext")
        );
        assert_eq!(
            md(&format!(
                "<p>Before</p><a href=\"/p\"> <h{level}>Title <em>it</em></h{level}> <p>Summary</p></a>"
            )),
            format!("Before\n\n{hashes} [Title *it*](https://example.com/p)\n\nSummary")
        );
    }
    // A link inside a heading, as before.
    assert_eq!(
        md("<h2><a href=\"/p\">Title</a></h2>"),
        "## [Title](https://example.com/p)"
    );
}

#[test]
fn tags_written_as_text_stay_text() {
    assert_eq!(
        md(
            "<p>Allowed: &lt;em&gt; &lt;/p&gt; &lt;!-- x --&gt; a &lt; b, 1&lt;2 \
            <code>&lt;div&gt;</code></p>"
        ),
        "Allowed: \\<em> \\</p> \\<!-- x --> a < b, 1<2 `<div>`"
    );
}

#[test]
fn link_lists_between_data_tables_go_and_those_in_them_stay() {
    let table = |i: usize, cell: &str| {
        format!("<table><tr><th>Name {i}</th><th>Links</th></tr><tr><td>x</td><td>{cell}</td></tr></table>")
    };
    let mut page = format!("<main>{}", ARTICLE.repeat(6));
    for i in 0..4 {
        let inside = format!("<ul>{}</ul>", link_items(6, &format!("in{i}")));
        page += &table(i, if i % 2 == 0 { &inside } else { "none" });
        page += &format!("<ul>{}</ul>", link_items(6, &format!("out{i}")));
    }
    let out = md(&(page + "</main>"));
    assert!(
        out.contains("[in0 5](") && out.contains("[in2 5]("),
        "{out}"
    );
    assert!(!out.contains("out"), "{out}");
    assert_eq!(out.matches("| Name").count(), 4);
}
