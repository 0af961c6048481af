//! How the assistant draws things for a person: the model's markdown
//! (`markdown`), code colour (`highlight`), the unified diff of a file a
//! tool changed (`diff`), and the one-line account of each tool call
//! (`calls`). Each takes a `Paint` that says whether colour is on, so the
//! same code writes the coloured terminal form and the plain one. Every
//! string a model or a tool supplied goes through `visible` before it is
//! painted (decision 59).

pub mod calls;
pub mod diff;
pub mod highlight;
pub mod markdown;
pub mod visible;

pub use visible::visible;

use unicode_width::UnicodeWidthStr;

/// Whether and how to colour: off for a stream that is not a terminal and
/// under `NO_COLOR`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Paint {
    pub on: bool,
}

impl Paint {
    #[cfg(test)]
    pub const OFF: Paint = Paint { on: false };
    #[cfg(test)]
    pub const ON: Paint = Paint { on: true };

    /// `text` in SGR `code` (`"1"` bold, `"31"` red, ...), or as it is.
    pub fn sgr(self, code: &str, text: &str) -> String {
        if self.on && !code.is_empty() && !text.is_empty() {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// On for a stream that is a terminal, unless `NO_COLOR` is set.
    pub fn for_stream(is_terminal: bool) -> Paint {
        Paint {
            on: is_terminal && !no_color(),
        }
    }

    pub fn dim(self, text: &str) -> String {
        self.sgr("2", text)
    }
    pub fn dim_yellow(self, text: &str) -> String {
        self.sgr("2;33", text)
    }
    pub fn red(self, text: &str) -> String {
        self.sgr("31", text)
    }
    pub fn green(self, text: &str) -> String {
        self.sgr("32", text)
    }
    pub fn cyan(self, text: &str) -> String {
        self.sgr("36", text)
    }
    pub fn bold(self, text: &str) -> String {
        self.sgr("1", text)
    }
}

/// True when the person asked for no colour (`NO_COLOR` set and not empty).
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// The columns `text` takes on a terminal, escape sequences left out.
pub fn width(text: &str) -> usize {
    let mut visible = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: ESC [ parameters final-byte.
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
        } else {
            visible.push(c);
        }
    }
    UnicodeWidthStr::width(visible.as_str())
}

/// The terminal's width in columns (80 when it cannot be asked).
pub fn terminal_width() -> usize {
    // SAFETY: TIOCGWINSZ fills a plain winsize struct, or fails.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize into `size`, which outlives the call.
    let rc = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
    if rc == 0 && size.ws_col > 0 {
        usize::from(size.ws_col)
    } else {
        80
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_skips_escapes_and_counts_wide_characters() {
        assert_eq!(width("\x1b[1;31mab\x1b[0m"), 2);
        assert_eq!(width("日本"), 4);
        assert_eq!(Paint::OFF.sgr("1", "x"), "x");
        assert_eq!(Paint::ON.sgr("1", "x"), "\x1b[1mx\x1b[0m");
    }
}
