//! What the person sees is what runs (decision 59): the one function that
//! every string a model or a tool supplied passes through on its way to the
//! terminal. A terminal obeys the characters it is sent: an escape sequence
//! can erase a line, move the cursor up and overwrite a question, clear the
//! screen or set the window title; a carriage return or backspaces can
//! write over what was shown; a bidirectional override can make `rm x`
//! read as something else; a zero-width character can hide a difference.
//! So those characters are shown, not obeyed: ESC as `\e`, CR as `\r`, any
//! other C0 or C1 control, DEL, and the characters that reorder or hide
//! text as `<U+XXXX>`. Tab and newline are kept: they are layout, and they
//! move the cursor only forward.
//!
//! Our own colour codes are added after this, by `Paint`, to text that has
//! already passed through it: the renderer's escapes are ours, the model's
//! are shown.

use std::borrow::Cow;

/// Whether `c` would act on the terminal, or hide or reorder text, rather
/// than show as itself.
pub fn is_hidden(c: char) -> bool {
    match c {
        '\t' | '\n' => false,
        // C0, DEL and C1.
        '\0'..='\x1f' | '\x7f'..='\u{9f}' => true,
        // Bidirectional marks, embeddings, overrides and isolates.
        '\u{061c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}' => true,
        // Zero-width and invisible characters: spaces, joiners, the word
        // joiner and invisible operators, the byte-order mark, the soft
        // hyphen, fillers that draw nothing.
        '\u{00ad}'
        | '\u{034f}'
        | '\u{115f}'
        | '\u{1160}'
        | '\u{17b4}'
        | '\u{17b5}'
        | '\u{180e}'
        | '\u{200b}'..='\u{200d}'
        | '\u{2060}'..='\u{2064}'
        | '\u{3164}'
        | '\u{feff}'
        | '\u{ffa0}' => true,
        // Line and paragraph separators (some terminals break the line),
        // interlinear annotations, and the tag characters, which draw
        // nothing and can carry hidden text.
        '\u{2028}' | '\u{2029}' | '\u{fff9}'..='\u{fffb}' | '\u{e0000}'..='\u{e007f}' => true,
        _ => false,
    }
}

/// Whether `text` holds any character that `visible` would rewrite.
pub fn hides(text: &str) -> bool {
    text.chars().any(is_hidden)
}

/// `text` with every hidden character shown: ESC as `\e`, CR as `\r`, the
/// others as `<U+XXXX>`. Borrowed when there is nothing to rewrite, which
/// is nearly always.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !hides(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\x1b' => out.push_str("\\e"),
            '\r' => out.push_str("\\r"),
            c if is_hidden(c) => out.push_str(&format!("<U+{:04X}>", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_and_layout_is_kept() {
        assert_eq!(visible("echo hi"), "echo hi");
        assert!(matches!(visible("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(
            visible("rm -rf ~\x1b[2K\r\x1b[1Aecho harmless"),
            r"rm -rf ~\e[2K\r\e[1Aecho harmless"
        );
        assert_eq!(
            visible("\x1b]0;title\x07x\x08\x7f"),
            r"\e]0;title<U+0007>x<U+0008><U+007F>"
        );
        assert_eq!(visible("\u{9b}2J"), "<U+009B>2J");
        assert_eq!(visible("a\u{202e}b\u{2066}c"), "a<U+202E>b<U+2066>c");
        assert_eq!(visible("x\u{200b}y\u{feff}"), "x<U+200B>y<U+FEFF>");
        assert_eq!(visible("\u{e0041}"), "<U+E0041>");
        assert_eq!(visible("\0"), "<U+0000>");
        // Ordinary text of any script stays as it is.
        assert_eq!(
            visible("héllo wörld 日本 مرحبا 🦀"),
            "héllo wörld 日本 مرحبا 🦀"
        );
    }

    #[test]
    fn what_is_hidden() {
        assert!(hides("a\rb"));
        assert!(hides("\u{2069}"));
        assert!(!hides("tab\tand\nnewline"));
        assert!(!hides("\\e is text"));
        for c in [
            '\x00', '\x1f', '\x7f', '\u{80}', '\u{9f}', '\u{200d}', '\u{202c}',
        ] {
            assert!(is_hidden(c), "{c:?}");
        }
        for c in [' ', '~', '\u{a0}', 'é', '\u{fe0f}'] {
            assert!(!is_hidden(c), "{c:?}");
        }
    }
}
