//! Decision 90's rules, one test each: where the article is looked for,
//! what inside a marked main element goes, short articles, text in every
//! script, pages that are lists, and pages with nothing to choose from.

use super::tests::{md, unmarked, ARTICLE};

/// A blog post in `<main>` as a CMS writes it: the post, then an author
/// box, related cards, a newsletter box, a share bar, "read more" and the
/// comments with their form.
fn blog(post: &str) -> String {
    let comments: String = (0..6)
        .map(|i| {
            format!(
                "<li class=\"comment\"><div class=\"comment-body\"><p>Reader {i} writes a \
                 comment that is prose, long enough, with a comma, to be scored.</p></div></li>"
            )
        })
        .collect();
    format!(
        "<body><nav><a href=\"/\">Home</a></nav><main>\
         <article class=\"post\"><h1>The post</h1><div class=\"entry-content\">{post}</div>\
         <div class=\"share-tools\"><a href=\"/s/fb\">Facebook</a></div></article>\
         <div class=\"author-bio\"><p>The author writes about gardens, at length, and has \
         for many years, with opinions.</p></div>\
         <div class=\"related-posts\"><div class=\"card\"><h3><a href=\"/r/1\">Another post</a>\
         </h3><p>A summary of another post, long enough, with a comma, to score.</p></div></div>\
         <div class=\"newsletter\"><p>Sign up for the newsletter, weekly, free, and never \
         spam.</p><form><input type=\"email\"></form></div>\
         <div class=\"read-more\"><p>Read more: a story about something else, at length.</p></div>\
         <div id=\"comments\"><ol>{comments}</ol><div id=\"respond\"><form><p>Leave a reply, \
         your email address will not be published.</p><textarea></textarea></form></div></div>\
         </main></body>"
    )
}

#[test]
fn inside_a_main_element_what_readers_leave_out_goes() {
    let out = md(&blog(&ARTICLE.repeat(6)));
    assert!(out.starts_with("The article says"), "{out}");
    assert!(out.ends_with("so that it is the page."), "{out}");
    for gone in [
        "Facebook",
        "author",
        "Another",
        "newsletter",
        "Read more",
        "Reader",
        "reply",
        "Home",
    ] {
        assert!(!out.contains(gone), "{gone}: {out}");
    }
}

#[test]
fn a_short_article_that_clearly_wins_is_the_article() {
    // Under 500 bytes, and nothing outside it scores half as much.
    assert!(ARTICLE.len() < 500);
    let out = md(&blog(ARTICLE));
    assert!(out.starts_with("The article says"), "{out}");
    assert!(!out.contains("Reader") && !out.contains("Another"), "{out}");
    let out = md(&unmarked(ARTICLE));
    assert!(out.starts_with("The article says"), "{out}");
    for gone in ["Home", "sidebar", "comment"] {
        assert!(!out.contains(gone), "{gone}: {out}");
    }
}

#[test]
fn a_short_article_with_a_rival_is_widened_to_the_main_content_and_cleaned() {
    // Two short stories of the same weight: neither clearly wins, so the
    // main content is kept, cleaned as an article is (its share bar goes).
    let story = |n: usize| {
        format!(
            "<div class=\"story\"><p>Story {n} tells, in words of its own, a short piece of \
             news, with a comma.</p></div>"
        )
    };
    let page = format!(
        "<body><nav><a href=\"/\">Home</a></nav><main>{}{}\
         <div class=\"share\"><a href=\"/s\">Share</a></div></main>\
         <div class=\"menu\"><p>Outside the main element, a paragraph, with commas, long.</p>\
         </div></body>",
        story(1),
        story(2)
    );
    let out = md(&page);
    assert!(out.contains("Story 1") && out.contains("Story 2"), "{out}");
    assert!(!out.contains("Share") && !out.contains("Outside"), "{out}");
}

#[test]
fn when_nothing_scores_the_main_content_is_kept_whole_less_its_link_boxes() {
    // Short lines only (no paragraph of 25 bytes): nothing scores.
    let page = "<body><p>Outside it.</p><main><h1>Title</h1><p>Short.</p><div>Also short.</div>\
                <ul><li><a href=\"/1\">one</a></li><li><a href=\"/2\">two</a></li>\
                <li><a href=\"/3\">three</a></li><li><a href=\"/4\">four</a></li>\
                <li><a href=\"/5\">five</a></li></ul><p>The end, at last, of all of it.</p>\
                <p>And more words, so the links are not the page.</p></main></body>";
    let out = md(page);
    assert!(out.starts_with("# Title\n\nShort.\n\nAlso short."), "{out}");
    assert!(!out.contains("Outside") && !out.contains("three"), "{out}");
}

#[test]
fn commas_and_full_stops_of_every_script_count() {
    use super::super::readable::{commas, ends_sentence};
    assert_eq!(commas("a, b"), 1);
    assert_eq!(commas("東京、大阪，名古屋、福岡"), 3);
    assert_eq!(commas("القاهرة، الإسكندرية"), 1);
    assert!(ends_sentence("梅雨明けとなった。"));
    assert!(ends_sentence("A sentence."));
    assert!(!ends_sentence("A heading"));
    // A list of references in Chinese, most of it links: its ideographic
    // commas make it prose, which stays, as the English one does.
    let references: String = (0..12)
        .map(|i| format!("<li>作者{i}、出版社、<a href=\"/r/{i}\">标题{i}</a>，二〇二〇年。</li>"))
        .collect();
    let page = format!(
        "<main>{}<ol class=\"refs\">{references}</ol></main>",
        ARTICLE.repeat(6)
    );
    let out = md(&page);
    assert!(out.contains("作者11、出版社、[标题11]"), "{out}");
}

#[test]
fn a_page_of_text_without_spaces_is_an_article() {
    // Japanese paragraphs, no spaces, no ASCII commas: scored as prose.
    let paragraph = "<p>気象庁は十六日、関東甲信地方が梅雨明けしたとみられると発表した。\
                     平年より三日早く、昨年より二日遅い梅雨明けとなった。</p>";
    let page = format!(
        "<body><div class=\"gnav\"><a href=\"/\">トップ</a></div><div class=\"body-text\">{}</div>\
         <div class=\"ranking\"><ol><li><a href=\"/1\">ランキング一位の記事の見出し</a></li></ol>\
         </div></body>",
        paragraph.repeat(4)
    );
    let out = md(&page);
    assert!(out.starts_with("気象庁は十六日"), "{out}");
    assert!(
        !out.contains("トップ") && !out.contains("ランキング"),
        "{out}"
    );
}

#[test]
fn a_page_that_is_a_list_keeps_its_list() {
    // A documentation index: an introduction, then a list of modules
    // (links with summaries) longer than any article found.
    let items: String = (0..12)
        .map(|i| {
            format!("<li><a href=\"/m/{i}\">module{i}</a>: what module {i} does, in a line.</li>")
        })
        .collect();
    let page = format!(
        "<body><main><h1>Module index</h1><p>This index lists the modules of the library, \
         with a summary of each.</p><ul>{items}</ul></main></body>"
    );
    let out = md(&page);
    assert!(out.starts_with("# Module index\n\nThis index"), "{out}");
    assert!(
        out.contains("* [module11](https://example.com/m/11): what"),
        "{out}"
    );
    // Search results: each a title, an address and a snippet.
    let results: String = (0..10)
        .map(|i| {
            format!(
                "<li><h3><a href=\"https://site{i}.example/\">Result {i}</a></h3>\
                 <cite>site{i}.example</cite><p>The snippet of result {i}, which says \
                 something about the query, with a comma.</p></li>"
            )
        })
        .collect();
    let page = format!(
        "<body><form role=\"search\"><input name=\"q\"></form><main><ol>{results}</ol></main>\
         </body>"
    );
    let out = md(&page);
    assert!(
        out.contains("[Result 0]") && out.contains("[Result 9]"),
        "{out}"
    );
    assert!(out.contains("The snippet of result 9"), "{out}");
}

#[test]
fn when_boxes_hold_every_paragraph_all_paragraphs_score_and_boxes_inside_still_go() {
    // A layout whose wrapper is named like a box (`sidebar`) holds the
    // post and its comments: nothing outside the boxes scores, so all
    // paragraphs score, and the comment thread inside what is found goes.
    let comments: String = (0..4)
        .map(|i| {
            format!(
                "<div class=\"comment\"><p>Reader {i} writes a comment that is prose, long \
                 enough, with a comma, to be scored.</p></div>"
            )
        })
        .collect();
    let page = format!(
        "<body><div role=\"main\"><div class=\"layout-with-sidebar-right\">\
         <div class=\"pane\"><h1>The post</h1><div class=\"post-body\">{}</div>\
         <div class=\"comments\">{comments}</div></div></div></div></body>",
        ARTICLE.repeat(4)
    );
    let out = md(&page);
    assert!(out.contains("The article says"), "{out}");
    assert!(!out.contains("Reader"), "{out}");
}

#[test]
fn short_bylines_signatures_dialogs_and_responses_go() {
    // A forum post's line "by ... »", its signature, a dialog the page
    // shows when asked, and a thread of responses under a post; a long paragraph whose class names the
    // author is prose and stays.
    let responses: String = (0..3)
        .map(|i| {
            format!(
                "<div class=\"response\"><p>Responder {i} answers the post at length, with \
                 a comma, as readers do.</p></div>"
            )
        })
        .collect();
    let long = "A note from the author that runs long, in full sentences, about why the \
                post was written, and for whom, and what came of it.";
    let page = format!(
        "<body><main><div class=\"post\"><p class=\"author\">by <b>someone</b> » Sat Jun 13, \
         2026 9:10 am</p><div class=\"content\">{}</div><p class=\"author-note\">{long}</p>\
         <div class=\"signature\">Ride safe, keep the rubber side down</div>\
         <div class=\"modal fade\"><div class=\"modal-body\"><p>Your account is not approved \
         yet, so request approval first.</p></div></div></div>\
         <section class=\"responses\">{responses}</section></main></body>",
        ARTICLE.repeat(4)
    );
    let out = md(&page);
    assert!(out.starts_with("The article says"), "{out}");
    assert!(out.contains("A note from the author"), "{out}");
    for gone in ["someone", "Ride safe", "approved", "Responder"] {
        assert!(!out.contains(gone), "{gone}: {out}");
    }
}

#[test]
fn an_article_split_around_an_advertisement_keeps_both_parts() {
    // Each part in a wrapper of its own, an advertisement between; the
    // second part scores most, the first joins it by its class's first
    // word, and the card of the same wrapper's aside does not.
    let part = |n: usize, paragraphs: usize| {
        format!(
            "<div class=\"story-wrap\"><div class=\"story-body story-body-{n}\">{}</div>\
             <aside class=\"cards\"><p>Another story, with a summary, long enough to \
             score.</p></aside></div>",
            format!("<p>Part {n} of the story goes on, in words of its own, with a comma.</p>")
                .repeat(paragraphs)
        )
    };
    let page = format!(
        "<body><main><article>{}<div class=\"ad\"><p>An advertisement, short.</p></div>{}\
         </article></main></body>",
        part(1, 3),
        part(2, 8)
    );
    let out = md(&page);
    assert!(out.starts_with("Part 1 of the story"), "{out}");
    assert!(out.ends_with("with a comma."), "{out}");
    assert!(out.contains("Part 2"), "{out}");
    assert!(
        !out.contains("Another story") && !out.contains("advertisement"),
        "{out}"
    );
}

/// A news site's page around `story`: a menu of `links` links, fifteen
/// headlines (each its own short paragraph), and the menu again.
fn news_site(story: &str, links: usize) -> String {
    let menu: String = (0..links)
        .map(|i| format!("<li><a href=\"/section/{i}\">Section number {i}</a></li>"))
        .collect();
    let headlines: String = (0..15)
        .map(|i| {
            format!(
                "<div class=\"box\"><div class=\"teaser\"><p>Headline {i} about something, \
                 with a comma.</p></div></div>"
            )
        })
        .collect();
    format!(
        "<body><div class=\"top\"><ul>{menu}</ul></div><div class=\"page\">{story}</div>{headlines}<div class=\"bottom\"><ul>{menu}</ul></div></body>"
    )
}

#[test]
fn text_written_straight_into_a_div_beside_blocks_scores_as_paragraphs() {
    // The story's sentences sit in the div itself, split by empty divs
    // standing in for line breaks: Readability wraps each run in a
    // paragraph, and so it scores.
    let story = "<div class=\"body\">The son of a former president was stabbed to death on \
                 Tuesday, and another man was hurt trying to stop the attacker, the police \
                 said.<div class=\"br\"></div>The attack came during a talk he gave at the \
                 clinic where he worked, in the west of the city.<div class=\"br\"></div>\
                 A man of 57 was arrested.</div>";
    let out = md(&news_site(story, 40));
    assert!(out.starts_with("The son of a former"), "{out}");
    assert!(out.ends_with("A man of 57 was arrested."), "{out}");
    assert!(
        !out.contains("Section") && !out.contains("Headline"),
        "{out}"
    );
}

#[test]
fn a_short_story_among_headlines_still_clearly_wins() {
    // The headlines score, but they are not prose (80 bytes or less): the
    // story under 500 bytes holds the text of the prose that scored.
    let story = format!("<div class=\"story\">{ARTICLE}{ARTICLE}</div>");
    let out = md(&news_site(&story, 40));
    assert!(out.starts_with("The article says"), "{out}");
    assert!(
        !out.contains("Section") && !out.contains("Headline"),
        "{out}"
    );
}

#[test]
fn a_long_article_is_the_article_on_a_page_made_mostly_of_links() {
    // Three quarters of the page is link boxes, yet the article found is
    // long: it is not a sitemap.
    let story = format!("<div class=\"story\">{}</div>", ARTICLE.repeat(4));
    let out = md(&news_site(&story, 200));
    assert!(out.starts_with("The article says"), "{out}");
    assert!(!out.contains("Section"), "{out}");
}

#[test]
fn a_main_element_without_text_marks_nothing() {
    // An `<article>` of metadata only: the article is looked for in the page.
    let page = format!(
        "<head><article><meta itemprop=\"headline\" content=\"x\"></article></head>{}",
        news_site(
            &format!("<div class=\"story\">{}</div>", ARTICLE.repeat(3)),
            40
        )
    );
    let out = md(&page);
    assert!(out.starts_with("The article says"), "{out}");
    assert!(!out.contains("Section"), "{out}");
}

#[test]
fn a_comment_thread_longer_than_the_post_still_goes() {
    // What is left out is weighed by the post's own paragraphs: comments
    // three times as long as the post do not make the post the boxes.
    let comments: String = (0..12)
        .map(|i| {
            format!(
                "<li class=\"comment\"><p>Reader {i} writes a long comment, prose with commas, \
                 that goes on and on, as comments on an open thread do, at length.</p></li>"
            )
        })
        .collect();
    let page = format!(
        "<body><div class=\"post\"><h1>Open thread</h1>{ARTICLE}\
         <div id=\"comments\" class=\"comments-area\"><ol>{comments}</ol></div></div></body>"
    );
    let out = md(&page);
    assert!(out.contains("The article says"), "{out}");
    assert!(!out.contains("Reader"), "{out}");
}

#[test]
fn pictures_captions_and_credits_go_with_what_the_article_says_kept() {
    // A figure's caption, a caption named by its class and a photo credit
    // go; a long block whose class happens to say `caption` stays.
    let long = "A block named like a caption but holding a paragraph of the article: \
                it goes on, with commas, well past what any caption of a picture says, \
                and so it is read as the article's own words, which it is, all of them, \
                from the first to the last, however it is named by the page that holds \
                it, and whatever its class says about it.";
    assert!(long.len() >= super::super::readable::MAX_CAPTION);
    let page = format!(
        "<body><main>{}<figure><img src=\"/a.jpg\" alt=\"A harbour\">\
         <figcaption>Boats in the harbour at dawn, seen from the pier.</figcaption></figure>\
         <p class=\"wp-caption-text\">The pier, rebuilt in 1990.</p>\
         <span class=\"photo-credit\">Photo: Jane Doe / Agency</span>\
         <table class=\"tr-caption-container\"><tr><td><img src=\"/b.png\" alt=\"Board\"></td>\
         </tr><tr><td class=\"tr-caption\">Block diagram of the board</td></tr></table>\
         <div class=\"caption-like\"><p>{long}</p></div>{}</main></body>",
        ARTICLE.repeat(3),
        ARTICLE
    );
    let out = md(&page);
    assert!(
        out.contains("![A harbour](https://example.com/a.jpg)"),
        "{out}"
    );
    assert!(out.contains("![Board](https://example.com/b.png)"), "{out}");
    for gone in ["Boats", "rebuilt", "Jane Doe", "Block diagram"] {
        assert!(!out.contains(gone), "{gone}: {out}");
    }
    assert!(out.contains("A block named like a caption"), "{out}");
}

#[test]
fn a_menu_longer_than_the_article_does_not_make_the_page_a_list() {
    // A city's site: a menu of sixty links, a news item that does not
    // clearly win (a box about the city scores half as much), no main
    // element. The menu is links, not a directory: the item is the article.
    let menu: String = (0..60)
        .map(|i| format!("<li><a href=\"/s/{i}\">Council service {i}</a></li>"))
        .collect();
    let rival = "<p>The city, founded long ago, sits by the river, with parks, schools, \
                 and a market, and welcomes visitors all year round.</p>";
    let page = format!(
        "<body><div class=\"top\"><ul>{menu}</ul></div>\
         <div class=\"news\">{}</div><div class=\"side\"><div class=\"col\">\
         <div class=\"city\">{rival}{rival}</div></div></div></body>",
        ARTICLE.repeat(5)
    );
    let out = md(&page);
    assert!(out.starts_with("The article says"), "{out}");
    assert!(
        !out.contains("Council service") && !out.contains("The city"),
        "{out}"
    );
}

#[test]
fn a_heading_that_says_what_the_title_says_goes() {
    // The title is given beside the content; a heading that repeats it
    // (give or take the site's name and a word) is left out, as
    // Readability leaves it, and other headings stay.
    let page = format!(
        "<head><title>The harbour at dawn | The Gazette</title></head><body><main>\
         <h1>The Harbour at Dawn</h1>{}<h2>What the fishermen say</h2>{}</main></body>",
        ARTICLE.repeat(3),
        ARTICLE
    );
    let out = md(&page);
    assert!(out.starts_with("The article says"), "{out}");
    assert!(out.contains("## What the fishermen say"), "{out}");
}
