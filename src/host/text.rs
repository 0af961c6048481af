//! Text cut to fit a line or a message, for the person and the model: one way
//! to clip and one way to fold whitespace, so every short form the host shows
//! reads the same.

/// `text` split after at most `max` characters: what is kept, what is cut.
pub fn split_chars(text: &str, max: usize) -> (&str, &str) {
    match text.char_indices().nth(max) {
        Some((at, _)) => text.split_at(at),
        None => (text, ""),
    }
}

/// At most `max` characters of `text`; when cut, `…` is the last of them.
pub fn clip(text: &str, max: usize) -> String {
    match split_chars(text, max) {
        (kept, "") => kept.to_string(),
        _ => format!("{}…", split_chars(text, max.saturating_sub(1)).0),
    }
}

/// `text` on one line: every run of whitespace one space, none at the ends.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_counts_characters_not_bytes() {
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("abcd", 3), "ab…");
        assert_eq!(clip(&"é".repeat(10), 4), "ééé…");
        assert_eq!(split_chars("héllo", 2), ("hé", "llo"));
        assert_eq!(split_chars("hi", 5), ("hi", ""));
    }

    #[test]
    fn one_line_folds_whitespace() {
        assert_eq!(one_line("  a\n\tb   c \n"), "a b c");
    }
}
