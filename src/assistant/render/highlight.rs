//! Syntax colour for code blocks, line by line so a block streams as it
//! arrives. syntect with its bundled Sublime grammars (about fifty
//! languages) and themes, compiled in; a terminal session loads them in
//! the background at start (`warm_up`), anything else on the first code
//! block, so neither waits for them. Terminals that
//! say they take 24-bit colour (`COLORTERM`) get the theme's exact colours,
//! others the nearest of the 256-colour palette.

use std::sync::OnceLock;

use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Style, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

struct Loaded {
    syntaxes: SyntaxSet,
    theme: Theme,
    truecolor: bool,
}

fn loaded() -> &'static Loaded {
    static LOADED: OnceLock<Loaded> = OnceLock::new();
    LOADED.get_or_init(|| {
        let mut themes = ThemeSet::load_defaults();
        let theme = themes
            .themes
            .remove("base16-ocean.dark")
            .unwrap_or_default();
        let truecolor = std::env::var("COLORTERM")
            .is_ok_and(|v| v.eq_ignore_ascii_case("truecolor") || v.eq_ignore_ascii_case("24bit"));
        Loaded {
            syntaxes: SyntaxSet::load_defaults_newlines(),
            theme,
            truecolor,
        }
    })
}

/// Loads the grammars and themes on a thread of their own (about a
/// tenth of a second), so the first code block of a reply does not wait.
pub fn warm_up() {
    std::thread::spawn(|| {
        loaded();
    });
}

/// One code block's highlighter; keeps the grammar's state from line to
/// line (a string or comment that spans lines stays coloured).
pub struct Code {
    lines: Option<HighlightLines<'static>>,
}

impl Code {
    /// A highlighter for `lang` (a fence's info string: `rust`, `py`,
    /// `sh`, ...); an unknown or missing language is left uncoloured.
    pub fn new(lang: &str) -> Code {
        let token = lang.split([' ', ',', '{']).next().unwrap_or("").trim();
        if token.is_empty() {
            return Code { lines: None };
        }
        let loaded = loaded();
        let syntax = loaded
            .syntaxes
            .find_syntax_by_token(token)
            .or_else(|| loaded.syntaxes.find_syntax_by_extension(token));
        Code {
            lines: syntax.map(|s| HighlightLines::new(s, &loaded.theme)),
        }
    }

    /// `line` (without its newline) in colour.
    pub fn line(&mut self, line: &str) -> String {
        let Some(lines) = self.lines.as_mut() else {
            return line.to_string();
        };
        let loaded = loaded();
        let with_newline = format!("{line}\n");
        let Ok(ranges) = lines.highlight_line(&with_newline, &loaded.syntaxes) else {
            return line.to_string();
        };
        let mut out = String::with_capacity(line.len() * 2);
        for (style, piece) in ranges {
            let piece = piece.trim_end_matches('\n');
            if piece.is_empty() {
                continue;
            }
            out.push_str(&format!(
                "\x1b[{}m{piece}\x1b[0m",
                sgr(style, loaded.truecolor)
            ));
        }
        out
    }
}

fn sgr(style: Style, truecolor: bool) -> String {
    let c = style.foreground;
    let mut code = if truecolor {
        format!("38;2;{};{};{}", c.r, c.g, c.b)
    } else {
        let level = |v: u8| (u16::from(v) * 5 + 127) / 255;
        format!(
            "38;5;{}",
            16 + 36 * level(c.r) + 6 * level(c.g) + level(c.b)
        )
    };
    if style.font_style.contains(FontStyle::BOLD) {
        code.push_str(";1");
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        code.push_str(";3");
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_are_coloured_unknown_ones_not() {
        let mut rust = Code::new("rust");
        let line = rust.line("fn main() {}");
        assert!(line.contains("\x1b[38;"), "{line:?}");
        assert_eq!(super::super::width(&line), "fn main() {}".len());
        let mut none = Code::new("no-such-language");
        assert_eq!(none.line("x = 1"), "x = 1");
        assert_eq!(Code::new("").line("x"), "x");
    }
}
