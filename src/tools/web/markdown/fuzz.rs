//! Random and mutated HTML (see `crate::fuzzing`) for the tokenizer and
//! the converter: never a panic, every token a piece of the page, the
//! markdown the same whatever size of pieces it is handed out in, and no
//! larger than the page allows (memory bounded by the input).

use proptest::prelude::*;

use super::super::tokenizer::{attr, decode, Token, Tokenizer};
use super::*;
use crate::fuzzing::config;

/// Pages made mostly of the pieces HTML is made of, broken anywhere.
fn page() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        proptest::sample::select(vec![
            "<p>",
            "</p>",
            "<a href=\"/x?a=1&amp;b=2\">",
            "</a>",
            "<main>",
            "</main>",
            "<article>",
            "<h2>",
            "</h2>",
            "<ul><li>",
            "</li></ul>",
            "<table><tr><td>",
            "</td></tr></table>",
            "<pre><code class=\"language-rust\">",
            "</code></pre>",
            "<script>",
            "</script>",
            "<style>",
            "</style>",
            "<!--",
            "-->",
            "<img src=x alt=\"y\">",
            "<br>",
            "<div hidden>",
            "</div>",
            "<nav>",
            "</nav>",
            "<base href=\"https://b.example/\">",
            "<title>",
            "</title>",
            "&amp;",
            "&lt;",
            "&#x1F600;",
            "&#0;",
            "&nbsp;",
            "&bogus;",
            "<",
            ">",
            "\"",
            "'",
            "=",
            " ",
            "\n",
            "*",
            "_",
            "`",
            "#",
            "[",
            "]",
            "(",
            ")",
            "\\",
            "é",
            "😀",
            "<svg><a href=y>",
            "</svg>",
            "<textarea>",
            "<!DOCTYPE html>",
            "<![CDATA[",
        ])
        .prop_map(str::to_string),
        ".{0,6}",
    ];
    proptest::collection::vec(piece, 0..80).prop_map(|p| p.concat())
}

fn markdown(html: &str, piece: usize) -> String {
    let plan = Plan::of(html, "https://example.com/dir/page.html");
    let mut out = String::new();
    plan.write(html, piece, &mut |text| out.push_str(text));
    out
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn tokens_are_pieces_of_the_page(html in page()) {
        let range = html.as_ptr() as usize..=html.as_ptr() as usize + html.len();
        let mut count = 0;
        for token in Tokenizer::new(&html) {
            count += 1;
            prop_assert!(count <= html.len() + 1, "more tokens than bytes");
            let text = match token {
                Token::Text(t) | Token::Raw(t) | Token::End(t) => t,
                Token::Start(tag) => {
                    let _ = attr(tag.attrs, "href");
                    let _ = attr(tag.attrs, "class");
                    tag.name
                }
            };
            prop_assert!(range.contains(&(text.as_ptr() as usize)));
            let _ = decode(text, false);
            let _ = decode(text, true);
        }
    }

    #[test]
    fn the_markdown_does_not_depend_on_its_pieces(html in page(), piece in 1usize..64) {
        let whole = markdown(&html, usize::MAX);
        prop_assert_eq!(markdown(&html, piece), whole.clone());
        // Links made absolute lengthen a page; nothing else should.
        let bound = 8 * html.len() + 64;
        prop_assert!(whole.len() <= bound, "{} bytes of markdown from {}", whole.len(), html.len());
    }
}
