//! Decision 90 through the real binary: a blog post in `<main>` comes
//! without what readers leave out, a short story without the page around
//! it, and pages with nothing to choose from (all comments, all links, all
//! pictures, one `<pre>`, a frameset, 10,000 tiny paragraphs, 10,000
//! levels of nesting) give a sensible answer, never an empty one.

use super::{fetch_url, serve, success};
use crate::common::http::{Reply, Server};

fn content_of(html: String) -> (String, Server) {
    let server = serve(Reply::html(html));
    let answer = success(&fetch_url(&server.url("/page")));
    (answer["content"].as_str().unwrap().to_string(), server)
}

#[test]
fn a_post_in_main_comes_without_its_comments_and_boxes() {
    let post: String = (0..6)
        .map(|i| {
            format!(
                "<p>Paragraph {i} of the post says what the post is about, at some length, \
                 with a comma or two, as posts do.</p>"
            )
        })
        .collect();
    let comments: String = (0..8)
        .map(|i| {
            format!(
                "<li class=\"comment\"><p>Comment {i}: a reader agrees, at length, with a \
                 comma, and says so.</p><a href=\"?replytocom={i}\">Reply</a></li>"
            )
        })
        .collect();
    let (content, _server) = content_of(format!(
        "<title>Post</title><header><a href=\"/\">Blog</a></header><main id=\"main\">\
         <article class=\"post\"><h1>The post</h1><div class=\"entry-content\">{post}</div>\
         </article><div class=\"author-box\"><p>About the author, who writes, a lot, \
         about posts.</p></div><div class=\"jp-relatedposts\"><h3><a href=\"/r\">Related \
         post</a></h3><p>In \"Things\", a category.</p></div><div id=\"comments\" \
         class=\"comments-area\"><ol>{comments}</ol><div id=\"respond\"><form><p>Leave a \
         Reply</p><textarea></textarea></form></div></div></main>"
    ));
    assert!(content.starts_with("Paragraph 0 of the post"), "{content}");
    assert!(content.ends_with("as posts do."), "{content}");
    for gone in ["Blog", "author", "Related", "Comment", "Reply"] {
        assert!(!content.contains(gone), "{gone}: {content}");
    }
}

#[test]
fn a_short_story_comes_without_the_page_around_it() {
    let latest: String = (0..8)
        .map(|i| format!("<li><a href=\"/n/{i}\">Another story number {i}</a></li>"))
        .collect();
    let (content, _server) = content_of(format!(
        "<title>Fire</title><nav><a href=\"/\">News</a></nav><main><article>\
         <h1>Fire contained</h1><div class=\"story-body\"><p>Firefighters contained a grass \
         fire near the reservoir on Tuesday, the county said.</p><p>No one was hurt, and the \
         trail will stay closed until Thursday.</p></div></article><section><h2>Latest</h2>\
         <ul>{latest}</ul></section></main><footer><p>Copyright the Gazette, all rights \
         reserved, for ever.</p></footer>"
    ));
    assert_eq!(
        content,
        "# Fire contained\n\nFirefighters contained a grass fire near the reservoir on Tuesday, the county \
         said.\n\nNo one was hurt, and the trail will stay closed until Thursday."
    );
}

#[test]
fn a_page_of_comments_only_keeps_them() {
    let comments: String = (0..20)
        .map(|i| format!("<div class=\"comment\"><p>Comment {i} says something, at length, with a comma.</p></div>"))
        .collect();
    let (content, _server) = content_of(format!("<div id=\"comments\">{comments}</div>"));
    assert!(content.starts_with("Comment 0 says"), "{content}");
    assert!(content.contains("Comment 19 says"), "{content}");
}

#[test]
fn a_page_of_links_only_keeps_them() {
    let links: String = (0..50)
        .map(|i| format!("<p><a href=\"/l/{i}\">Link {i}</a></p>"))
        .collect();
    let (content, _server) = content_of(format!("<body>{links}</body>"));
    assert_eq!(content.matches("](").count(), 50, "{content}");
}

#[test]
fn a_page_of_pictures_only_keeps_them() {
    let images: String = (0..30)
        .map(|i| format!("<div><img src=\"/i/{i}.jpg\" alt=\"Picture {i}\"></div>"))
        .collect();
    let (content, _server) = content_of(format!("<body>{images}</body>"));
    assert_eq!(content.matches("![Picture").count(), 30, "{content}");
}

#[test]
fn a_single_pre_is_kept_exactly() {
    let code = "fn main() {\n    println!(\"hello, world\");\n}";
    let (content, _server) = content_of(format!("<body><pre>{code}</pre></body>"));
    assert_eq!(content, format!("```\n{code}\n```"));
}

#[test]
fn a_frameset_gives_its_frames() {
    let (content, server) = content_of(
        "<html><frameset cols=\"20%,80%\"><frame src=\"menu.html\" title=\"Menu\">\
         <frame src=\"body.html\"><noframes>Your browser does not show frames.</noframes>\
         </frameset></html>"
            .to_string(),
    );
    let root = server.url("");
    assert_eq!(
        content,
        format!("[Menu]({root}/menu.html) [Embedded content]({root}/body.html)")
    );
}

#[test]
fn ten_thousand_tiny_paragraphs_are_all_kept() {
    let paragraphs: String = (0..10_000).map(|i| format!("<p>p{i}</p>")).collect();
    let (content, _server) = content_of(format!("<body>{paragraphs}</body>"));
    assert!(content.starts_with("p0\n\np1\n\n"), "{}", &content[..100]);
    assert!(content.ends_with("p9999"));
    assert_eq!(content.matches("\n\n").count(), 9_999);
}

#[test]
fn nesting_ten_thousand_deep_keeps_the_text() {
    let page = format!(
        "<body>{}<p>The text at the bottom of it all, with a comma, long enough.</p>{}</body>",
        "<div>".repeat(10_000),
        "</div>".repeat(10_000)
    );
    let (content, _server) = content_of(page);
    assert_eq!(
        content,
        "The text at the bottom of it all, with a comma, long enough."
    );
}
