//! Plain text from HTML, for the places that want words, not markdown: a
//! search result's snippet (`Rust <strong>async</strong> &amp; more`) and
//! a page's title.

use super::tokenizer::{decode_into, Token, Tokenizer};

/// Every run of whitespace made one space, none at either end.
pub fn collapse_spaces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The text of an HTML fragment: tags dropped, entities decoded,
/// whitespace collapsed.
pub fn fragment_text(html: &str) -> String {
    if !html.contains(['<', '&']) {
        return collapse_spaces(html);
    }
    let mut text = String::with_capacity(html.len());
    for token in Tokenizer::new(html) {
        if let Token::Text(t) = token {
            decode_into(t, false, &mut text);
        }
    }
    collapse_spaces(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments() {
        assert_eq!(
            fragment_text("Learn <strong>Rust</strong> &amp; <em>async</em>\n  today"),
            "Learn Rust & async today"
        );
        assert_eq!(fragment_text("plain  text"), "plain text");
        assert_eq!(fragment_text("a &lt;b&gt; &#x27;c&#x27;"), "a <b> 'c'");
        assert_eq!(fragment_text("x<script>bad()</script> y"), "x y");
    }

    #[test]
    fn spaces() {
        assert_eq!(collapse_spaces("  a \n\t b  "), "a b");
        assert_eq!(collapse_spaces(""), "");
    }
}
