use super::*;

const URL: &str = "https://example.com/docs/page.html";

/// Converts a decoded HTML page fetched from `url`, the markdown whole.
fn convert(html: &str, url: &str) -> Page {
    let plan = Plan::of(html, url);
    let mut markdown = String::new();
    plan.write(html, PIECE, &mut |piece| markdown.push_str(piece));
    Page {
        title: plan.title,
        markdown,
    }
}

/// The markdown of `html`, checked to be the same when it is handed on
/// after every token (pieces of at least one byte) as when whole.
pub(super) fn md(html: &str) -> String {
    let whole = convert(html, URL).markdown;
    let mut pieces = Vec::new();
    Plan::of(html, URL).write(html, 1, &mut |piece| pieces.push(piece.to_string()));
    assert_eq!(pieces.concat(), whole, "pieces {pieces:?}");
    assert!(!pieces.iter().any(String::is_empty));
    whole
}

#[test]
fn spec_elements() {
    assert_eq!(
        md(
            "<p>A <a href=\"https://x.org/a\">link</a>, <strong>bold</strong>, \
            <b>b</b>, <em>em</em>, <i>i</i>, <code>c()</code>.</p>\
            <ul><li>one</li><li>two</li></ul><ol><li>first</li></ol>"
        ),
        "A [link](https://x.org/a), **bold**, **b**, *em*, *i*, `c()`.\n\n\
         * one\n* two\n\n1. first"
    );
}

#[test]
fn headings_are_atx_on_one_line() {
    assert_eq!(
        md("<h1>One</h1><h2>Two</h2><h3>Three <em>x</em></h3><h6>Six</h6>"),
        "# One\n\n## Two\n\n### Three *x*\n\n###### Six"
    );
    assert_eq!(
        md("<h2>Split<br>over\n lines</h2><p>p</p>"),
        "## Split over lines\n\np"
    );
    assert_eq!(md("<h2> </h2><p>p</p>"), "p");
    assert_eq!(md("<h2><div>a</div><p>b</p></h2>"), "## a b");
}

#[test]
fn no_raw_html_passes_through() {
    let out = md(
        "<p>E = mc<sup>2</sup>, H<sub>2</sub>O, <span style=\"x\">span</span>, \
                  <abbr title=\"t\">abbr</abbr>, <font color=red>font</font>, <u>u</u></p>\
                  <details><summary>More</summary><p>hidden detail</p></details>\
                  <my-widget>custom</my-widget><center>centred</center>",
    );
    assert_eq!(
        out,
        "E = mc2, H2O, span, abbr, font, u\n\nMore\n\nhidden detail\n\ncustom\n\ncentred"
    );
    assert!(!out.contains('<'));
}

#[test]
fn images_are_markdown_with_absolute_urls() {
    assert_eq!(
        md("<p><img src=\"../img/a.png\" alt=\"A [chart]\" width=\"10\" height=\"20\"> \
            <img src=\"//cdn.example.org/b.png\"> <img alt=\"no source\"></p>"),
        "![A \\[chart\\]](https://example.com/img/a.png) ![](https://cdn.example.org/b.png) no source"
    );
    // Lazy images name their source in data-src.
    assert_eq!(
        md("<img src=\"data:image/gif;base64,R0lGOD\" data-src=\"/real.jpg\" alt=\"x\">"),
        "![x](https://example.com/real.jpg)"
    );
    // WordPress's lazy loader names it in data-lazy-src.
    assert_eq!(
        md("<img src=\"data:image/svg+xml,%3Csvg%3E\" data-lazy-src=\"/jam.jpg\" alt=\"Jam\">"),
        "![Jam](https://example.com/jam.jpg)"
    );
}

#[test]
fn data_uris_are_dropped_and_the_alt_text_stays() {
    let big = "A".repeat(1 << 20);
    let out = md(&format!(
        "<p>Before <img src=\"data:image/png;base64,{big}\" alt=\"a plot\"> after. \
         <a href=\"data:text/html,hi\">data link</a></p>"
    ));
    assert_eq!(out, "Before a plot after. data link");
}

#[test]
fn iframes_embeds_and_media_are_links() {
    assert_eq!(
        md("<iframe src=\"https://www.youtube.com/embed/x\" title=\"Talk\">fallback</iframe>\
            <embed src=\"/flash.swf\">\
            <video controls><source src=\"/v.mp4\" type=\"video/mp4\">Your browser cannot play it.</video>\
            <audio src=\"a.mp3\"></audio><object data=\"/doc.pdf\">fallback text</object>"),
        "[Talk](https://www.youtube.com/embed/x) [Embedded content](https://example.com/flash.swf) \
         [Video](https://example.com/v.mp4) [Audio](https://example.com/docs/a.mp3) \
         [Embedded content](https://example.com/doc.pdf)"
    );
}

#[test]
fn anchors_without_href_and_javascript_links_are_text() {
    assert_eq!(
        md("<p><a name=\"top\"></a><a id=\"s1\">Section</a> and \
            <a href=\"javascript:void(0)\">menu</a>, <a href=\" JavaScript:go()\">go</a>, \
            <a href=\"\">empty</a>, <a href=\"#\">top</a></p>"),
        "Section and menu, go, empty, top"
    );
}

#[test]
fn relative_links_are_absolute_and_hrefs_are_kept_as_written() {
    assert_eq!(
        md(
            "<p><a href=\"intro.html\">a</a> <a href=\"/root?q=a%20b&amp;x=%2F\">b</a> \
            <a href=\"#frag\">c</a> <a href=\"?page=2\">d</a> \
            <a href=\"https://other.org/caf%C3%A9\">e</a> <a href=\"mailto:me@x.org\">f</a> \
            <a href=\"a b.html\">g</a></p>"
        ),
        "[a](https://example.com/docs/intro.html) [b](https://example.com/root?q=a%20b&x=%2F) \
         c [d](https://example.com/docs/page.html?page=2) \
         [e](https://other.org/caf%C3%A9) [f](mailto:me@x.org) \
         [g](<https://example.com/docs/a b.html>)"
    );
}

#[test]
fn base_href_is_the_base() {
    let page = "<head><base href=\"https://cdn.example.net/v2/\"></head>\
                <p><a href=\"guide/\">g</a> <img src=\"/i.png\" alt=\"i\"></p>";
    assert_eq!(
        md(page),
        "[g](https://cdn.example.net/v2/guide/) ![i](https://cdn.example.net/i.png)"
    );
    // A relative base is resolved against the page's URL first.
    assert_eq!(
        md("<base href=\"/other/\"><a href=\"x\">x</a>"),
        "[x](https://example.com/other/x)"
    );
    assert_eq!(
        md("<base href=\"javascript:alert(1)\"><a href=\"x\">x</a>"),
        "[x](https://example.com/docs/x)"
    );
}

#[test]
fn links_around_blocks_keep_the_blocks_and_link_once() {
    assert_eq!(
        md(
            "<a href=\"/post/1\"><h3>First post</h3><p>Its summary.</p></a>\
            <a href=\"/post/2\"><div><img src=\"/t.png\" alt=\"thumb\"></div><p>Second</p></a>"
        ),
        "### [First post](https://example.com/post/1)\n\nIts summary.\n\n\
         [![thumb](https://example.com/t.png)](https://example.com/post/2)\n\nSecond"
    );
    assert_eq!(
        md("<ul><li><a href=\"/x\"><p>item</p><p>more</p></a></li></ul>"),
        "* [item](https://example.com/x)\n\n  more"
    );
    assert_eq!(
        md("<a href=\"/c\"><pre>code</pre><p>p</p></a>"),
        "```\ncode\n```\n\np\n\n<https://example.com/c>"
    );
}

#[test]
fn definition_lists() {
    assert_eq!(
        md(
            "<dl><dt>Term</dt><dd>Its definition.</dd><dt>Other</dt><dt>Alias</dt>\
            <dd><p>One</p><p>Two</p></dd></dl><p>after</p>"
        ),
        "**Term**\n: Its definition.\n\n**Other**\n\n**Alias**\n: One\n\n  Two\n\nafter"
    );
    // Unclosed dt and dd close each other.
    assert_eq!(
        md("<dl><dt>a<dd>b<dt>c<dd>d</dl>"),
        "**a**\n: b\n\n**c**\n: d"
    );
}

#[test]
fn adjacent_blocks_are_separated_by_a_blank_line() {
    assert_eq!(
        md("<div>one</div><div>two</div><section>three</section>four<p>five</p>\
            <span>six</span><header>seven</header><figure><img src=\"/f.png\" alt=\"f\">\
            <figcaption>cap</figcaption></figure>"),
        "one\n\ntwo\n\nthree\n\nfour\n\nfive\n\nsix\n\nseven\n\n![f](https://example.com/f.png)\n\ncap"
    );
    assert_eq!(md("<p>a<p>b<div>c</div>"), "a\n\nb\n\nc");
}

#[test]
fn br_is_a_hard_line_break() {
    assert_eq!(
        md("<p>Street 1<br>City<br/>Country</p><p>a<br><br>b<br></p>"),
        "Street 1\\\nCity\\\nCountry\n\na\n\nb"
    );
    assert_eq!(md("<p><br>x</p>"), "x");
    assert_eq!(md("<blockquote>a<br>b</blockquote>"), "> a\\\n> b");
}

#[test]
fn code_blocks_take_their_language_from_classes() {
    let cases = [
        ("<pre><code class=\"language-rust\">fn main() {}</code></pre>", "rust"),
        ("<pre class=\"lang-go\">x</pre>", "go"),
        ("<div class=\"highlight highlight-source-python\"><pre>x</pre></div>", "python"),
        ("<div class=\"highlight-console notranslate\"><div class=\"highlight\"><pre>x</pre></div></div>", "console"),
        ("<div class=\"sourceCode\"><pre class=\"sourceCode haskell\"><code>x</code></pre></div>", "haskell"),
        ("<pre class=\"rust rust-example-rendered\"><code>x</code></pre>", "rust"),
        ("<pre><code class=\"hljs\">x</code></pre>", ""),
        ("<pre>x</pre>", ""),
    ];
    for (html, lang) in cases {
        let out = md(html);
        let first = out.lines().next().unwrap();
        assert_eq!(first, format!("```{lang}"), "{html}\n{out}");
    }
    assert_eq!(
        md("<pre><code class=\"language-js\"><span class=\"k\">let</span> a = 1;\n\n\n  b &lt; 2</code></pre>"),
        "```js\n<span>let</span> a = 1;\n\n\n  b < 2\n```".replace("<span>", "").replace("</span>", "")
    );
    // Backticks inside need a longer fence; an empty block is nothing.
    assert_eq!(md("<pre>a ``` b</pre>"), "````\na ``` b\n````");
    assert_eq!(md("<pre>\n\n</pre><p>x</p>"), "x");
    assert_eq!(
        md("<pre>\nfirst\nsecond\n</pre>"),
        "```\nfirst\nsecond\n```"
    );
}

#[test]
fn deep_nesting_is_flattened() {
    let deep = format!(
        "{}text{}",
        "<div>".repeat(100_000),
        "</div>".repeat(100_000)
    );
    assert_eq!(md(&deep), "text");
    let quotes = format!(
        "{}{}{}",
        "<blockquote>".repeat(1000),
        "word ".repeat(1000),
        "</blockquote>".repeat(1000)
    );
    let out = md(&quotes);
    assert!(
        out.starts_with(&format!("{}word", "> ".repeat(16))),
        "{}",
        &out[..80]
    );
    let lists = format!("{}x{}", "<ul><li>".repeat(100), "</li></ul>".repeat(100));
    let out = md(&lists);
    let widest = out.lines().map(|l| l.len() - l.trim_start().len()).max();
    assert!(widest <= Some(2 * 16), "{widest:?}\n{out}");
}

#[test]
fn main_content_leaves_out_what_is_around_it() {
    let page = "<header><h1>Site</h1></header><nav>menu</nav>\
                <div id=\"cookie\">We use cookies <button>OK</button></div>\
                <main><h1>Article</h1><p>Body <aside>inside aside</aside></p>\
                <form><label>kept</label></form></main>\
                <aside>related</aside><footer>(c) site</footer>";
    assert_eq!(md(page), "# Article\n\nBody\n\ninside aside\n\nkept");
    // role="main" when there is no <main>.
    assert_eq!(
        md("<div>banner</div><div role=\"main\"><p>content</p></div><div>footer</div>"),
        "content"
    );
    // A single article when neither.
    assert_eq!(
        md("<div>banner</div><article><p>story</p></article><div>footer</div>"),
        "story"
    );
    // Several articles and no main: the whole body.
    assert_eq!(
        md("<div>banner</div><article>one</article><article>two</article>"),
        "banner\n\none\n\ntwo"
    );
    // A main with several articles keeps them all.
    assert_eq!(
        md("<p>x</p><main><article>one</article><article>two</article></main><p>y</p>"),
        "one\n\ntwo"
    );
    // <main> wins over role="main" and an article elsewhere.
    assert_eq!(
        md("<div role=\"main\">r</div><article>a</article><main>m</main>"),
        "m"
    );
    // An empty main leaves the body whole rather than nothing.
    assert_eq!(md("<main></main><p>text</p>"), "text");
    // No landmark: the body whole.
    assert_eq!(md("<div>a</div><footer>b</footer>"), "a\n\nb");
}

#[test]
fn hidden_and_non_content_elements_leave_no_text() {
    let page = convert(
        "<html><head><title> The\n Title </title><style>.s{color:red}</style>\
         <script>var secret = 1;</script></head><body>\
         <nav><a href=/>Home</a> menu</nav><!-- a comment -->\
         <noscript>enable js</noscript><template><p>tpl</p></template>\
         <svg><title>icon</title><text>svg text</text></svg>\
         <div hidden>hidden</div><span aria-hidden=\"true\">aria</span>\
         <p style=\"display: none\">styled</p><select><option>opt</option></select>\
         <p>Body <script>inline()</script>text<button>Copy</button></p></body></html>",
        URL,
    );
    assert_eq!(page.title, "The Title");
    assert_eq!(page.markdown, "Body text");
}

#[test]
fn attribute_text_is_searched_as_memmem_would() {
    for hay in [
        "",
        "h",
        "hidde",
        "hidden",
        "hhidden",
        "hidhidden x",
        r#"href="/a.html" class="x hidden""#,
        r#"style="display:nonE; x:none""#,
        "non",
    ] {
        for needle in ["hidden", "none", "h"] {
            assert_eq!(
                holds(hay.as_bytes(), needle.as_bytes()),
                hay.contains(needle),
                "{hay:?} {needle:?}"
            );
        }
    }
}

#[test]
fn first_title_wins_and_missing_title_is_empty() {
    assert_eq!(convert("<p>x</p>", URL).title, "");
    let page = convert("<title>A &amp; B</title><p>x<title>C</title></p>", URL);
    assert_eq!(page.title, "A & B");
    assert_eq!(page.markdown, "x");
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
    // Unclosed cells and rows close each other; a br in a cell is a space.
    assert_eq!(
        md("<table><tr><td>a<td>b<br>c<tr><td>d<td>e</table>"),
        "| a | b c |\n| --- | --- |\n| d | e |"
    );
}

#[test]
fn nested_tables_cost_linear_time() {
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
    // The blank line before a quote is not part of it.
    assert_eq!(
        md("<ol><li><h4>Name</h4><blockquote><p>text</p></blockquote></li></ol>"),
        "1. #### Name\n\n   > text"
    );
    assert_eq!(md("<p>a</p><blockquote>b</blockquote>"), "a\n\n> b");
    assert_eq!(
        md("<p>He said <q>hi</q> in <cite>Book</cite>.</p>"),
        "He said \"hi\" in Book."
    );
    assert_eq!(
        md("<ol><li><p>first</p><p>more</p></li><li>second<ul><li>inner</li></ul></li></ol>"),
        "1. first\n\n   more\n\n2. second\n   * inner"
    );
    assert_eq!(
        md("<ol start=\"7\"><li>seven<li>eight</ol>"),
        "7. seven\n8. eight"
    );
    let many: String = (1..=12).map(|i| format!("<li>{i}</li>")).collect();
    assert!(md(&format!("<ol>{many}</ol>")).ends_with("11. 11\n12. 12"));
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
fn whitespace_and_markers() {
    assert_eq!(
        md("<p><strong>Chapter 5</strong>\ndiscusses\n  structs.</p><pre>a\n  b</pre>"),
        "**Chapter 5** discusses structs.\n\n```\na\n  b\n```"
    );
    assert_eq!(
        md("<p>a<b> b </b>c <i></i>d&nbsp;&nbsp;e</p>"),
        "a **b** c d e"
    );
    assert_eq!(md("<p><code>a `tick`</code></p>"), "`` a `tick` ``");
    assert_eq!(md("<p><code><b>not bold</b></code></p>"), "`not bold`");
    let out = md("<div><p>a</p><div><div><p>b</p></div></div><br><br><br><p>c</p></div>");
    assert_eq!(out, "a\n\nb\n\nc");
}

#[test]
fn hr_and_entities() {
    assert_eq!(
        md("<p>a &amp; b &lt;tag&gt; &copy; &#x1F600;</p><hr><p>c</p>"),
        // `<tag>` is text: escaped, or markdown would read a tag.
        "a & b \\<tag> © 😀\n\n---\n\nc"
    );
}

#[test]
fn tag_soup_never_panics() {
    // Random documents from fragments that exercise every rule, nested and
    // closed in any order; a fixed seed, so a failure reproduces.
    // Often enough that one page in twenty holds an article of 500 bytes.
    const LONG: &str = "The article's own words go on, clause after clause, with commas, \
         until a paragraph scores, and then a little further. ";
    const PARTS: &[&str] = &[
        "<p>",
        "</p>",
        "<div>",
        "</div>",
        "<a href=\"x\">",
        "<a href='#y'>",
        "<a>",
        "</a>",
        "<b>",
        "</b>",
        "<i>",
        "</i>",
        "<code>",
        "</code>",
        "<pre class=\"language-rust\">",
        "</pre>",
        "<ul>",
        "</ul>",
        "<ol start=3>",
        "</ol>",
        "<li>",
        "</li>",
        "<dl>",
        "<dt>",
        "<dd>",
        "</dl>",
        "<table>",
        "</table>",
        "<tr>",
        "<td>",
        "</td>",
        "<th>",
        "<caption>",
        "<blockquote>",
        "</blockquote>",
        "<h2>",
        "</h2>",
        "<br>",
        "<hr>",
        "<img src=i alt=\"[x]\">",
        "<img src=\"data:x\">",
        "<iframe src=f>",
        "</iframe>",
        "<video><source src=v>",
        "</video>",
        "<main>",
        "</main>",
        "<article>",
        "</article>",
        "<nav>",
        "</nav>",
        "<script>",
        "</script>",
        "<svg>",
        "</svg>",
        "<span hidden>",
        "</span>",
        "<!--",
        "-->",
        "&amp;",
        "&#x1F600;",
        "&nbsp;",
        "&",
        "<",
        ">",
        "`",
        "*",
        "word ",
        " ",
        "\n",
        "é",
        "\u{a0}",
        "<base href=/b/>",
        "<title>",
        "</title>",
        "<textarea>",
        "<q>",
        "</q>",
        "<details>",
        "<summary>",
        "</tbody>",
        "<tbody>",
        "<<",
        "</ x>",
        "<!",
        "<?",
        "<a ",
        "=\"",
        "'",
        "</",
        "<p/>",
        "<x-y z=1>",
        "</x-y>",
        "&#",
        "&am",
        "<pre>",
        "<select>",
        "<option>",
        // Readability's view of a page without a main element (decision
        // 107): boxes by class and role, scoring blocks, cleaned blocks,
        // and prose long enough to score and to make an article.
        "<div class=\"comments\">",
        "<div class=\"post-content\">",
        "<div id=sidebar>",
        "<ul role=navigation>",
        "<section>",
        "</section>",
        "<footer>",
        "</footer>",
        "<aside>",
        "<form>",
        "<input>",
        "<div class=share>",
        "<h1 class=meta>",
        LONG,
        LONG,
        LONG,
        LONG,
        LONG,
        LONG,
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut total = 0;
    let mut next = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize
    };
    for _ in 0..20_000 {
        let mut html = String::new();
        for _ in 0..next() % 60 {
            html.push_str(PARTS[next() % PARTS.len()]);
        }
        total += html.len();
        let out = md(&html);
        assert!(!out.starts_with(['\n', ' ']), "{html:?} -> {out:?}");
        assert!(!out.ends_with(['\n', ' ']), "{html:?} -> {out:?}");
        // Code blocks keep their blank lines; prose never has two.
        let prose = out.split("```").step_by(2).collect::<Vec<_>>().join("x");
        assert!(!prose.contains("\n\n\n"), "{html:?} -> {out:?}");
        assert!(!out.contains("data:"), "{html:?} -> {out:?}");
    }
    assert!(total > 1_000_000, "{total}");
}

#[test]
fn without_a_main_element_the_article_is_where_readability_finds_it() {
    let out = md(&unmarked(&ARTICLE.repeat(6)));
    assert!(out.starts_with("The article says"), "{out}");
    assert!(out.ends_with("so that it is the page."), "{out}");
    for gone in ["Home", "sidebar", "comment"] {
        assert!(!out.contains(gone), "{gone}: {out}");
    }
}

#[test]
fn sibling_paragraphs_of_prose_join_the_article_and_boxes_in_it_go() {
    // The article's div scores most; the paragraphs beside it are prose
    // and join it; inside it a footer, an aside and a share bar go.
    let page = format!(
        "<body><div class=\"wrap\"><div class=\"entry\">{}\
         <div class=\"share\"><a href=\"/s/1\">Share</a></div>\
         <aside><p>An aside of some length that talks about something else entirely.</p></aside>\
         <footer><p>Filed under nothing in particular, by nobody at all, today.</p></footer>\
         </div><p>A paragraph beside the article, in the same words as the article, long \
         enough to be prose and not a caption.</p><p><a href=\"/next\">Next story</a></p>\
         </div></body>",
        ARTICLE.repeat(5)
    );
    let out = md(&page);
    assert!(
        out.ends_with("long enough to be prose and not a caption."),
        "{out}"
    );
    for gone in ["Share", "aside", "Filed", "Next story"] {
        assert!(!out.contains(gone), "{gone}: {out}");
    }
}

#[test]
fn a_list_of_references_stays_and_a_list_of_names_goes() {
    // Both are mostly links with many commas; the references have a third
    // of their text and more outside the links, the names do not.
    let references: String = (0..12)
        .map(|i| {
            format!(
                "<li>Author {i}, Someone (2020). <a href=\"/r/{i}\">A title, {i}</a>. \
                 The Publisher, Somewhere.</li>"
            )
        })
        .collect();
    let names: String = (0..12)
        .map(|i| format!("<a href=\"/u/{i}\">reader number {i}</a>, "))
        .collect();
    let page = format!(
        "<main>{}<ol class=\"references\">{references}</ol><p class=\"kudos\">{names}</p></main>",
        ARTICLE.repeat(6)
    );
    let out = md(&page);
    assert!(
        out.contains("Author 11, Someone (2020). [A title, 11]"),
        "{out}"
    );
    assert!(!out.contains("reader number"), "{out}");
}

#[test]
fn a_block_holding_most_of_the_article_is_never_cleaned_out() {
    // An article of `<br>`-separated lines in a div, beside tracking
    // pictures: by Readability's counts (pictures, no paragraph) the div
    // would go; it holds the article, so only its boxes do.
    let lines: String = (0..8)
        .map(|i| {
            format!(
                "Line {i} of the story goes on in the story's own words and is long enough.<br>"
            )
        })
        .collect();
    let page = format!(
        "<body><div class=\"nav\"><a href=\"/\">Home</a></div><div class=\"wrap\">\
         <div>{lines}<img src=\"/t1.gif\"><img src=\"/t2.gif\">\
         <img src=\"/t3.gif\"></div><div class=\"share\"><a href=\"/s\">Share</a></div>\
         </div></body>"
    );
    let out = md(&page);
    assert!(out.starts_with("Line 0 of the story"), "{out}");
    assert!(out.contains("Line 7 of the story"), "{out}");
    assert!(!out.contains("Share") && !out.contains("Home"), "{out}");
}

#[test]
fn a_sitemap_without_a_main_element_keeps_its_links() {
    // No paragraph scores, so no article is chosen, and the link-box rule's
    // quarter guard keeps a page that is all links whole.
    let items: String = (0..40)
        .map(|i| format!("<li><a href=\"/s/{i}\">Section number {i} of the site</a></li>"))
        .collect();
    let out = md(&format!("<body><h1>Sitemap</h1><ul>{items}</ul></body>"));
    assert!(
        out.starts_with("# Sitemap\n\n* [Section number 0 of the site]"),
        "{out}"
    );
    assert_eq!(out.matches("](").count(), 40, "{out}");
}

pub(super) const ARTICLE: &str = "<p>The article says a good deal in its own words, more than any \
    navigation box around it, and goes on for a while so that it is the page.</p>";

/// A page that marks no main content: a menu, a sidebar of prose, the
/// article in a `div` of its own, and `comments`.
pub(super) fn unmarked(article: &str) -> String {
    format!(
        "<body><div class=\"menu\"><a href=\"/\">Home</a> <a href=\"/news\">News</a></div>\
         <div class=\"sidebar\"><p>The sidebar's own prose, about other stories, is long \
         enough to be a paragraph, with a comma, or two.</p></div>\
         <div class=\"post\">{article}</div>\
         <div class=\"comments\"><p>A reader's comment, which is prose as well, long enough, \
         with commas, to score, were it not a comment.</p></div></body>"
    )
}
