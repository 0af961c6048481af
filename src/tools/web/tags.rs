//! The HTML elements the converter tells apart, and what HTML says about
//! each: void or not, block or inline, and which open elements a start tag
//! closes by itself (`<p>` before a block, `<li>` before the next item).

/// Elements nested deeper than this are flattened: their start and end
/// tags are ignored and their text joins the element around them. Both
/// passes keep the same stack, so both read the limit here.
pub const MAX_DEPTH: usize = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    A,
    Article,
    Audio,
    B,
    Base,
    Blockquote,
    Body,
    Br,
    Button,
    Caption,
    Code,
    Dd,
    Details,
    Dialog,
    Dl,
    Dt,
    Em,
    Embed,
    Head,
    Heading(u8),
    Hr,
    Html,
    I,
    Iframe,
    Img,
    Li,
    Main,
    Math,
    Nav,
    Object,
    Ol,
    Option,
    P,
    Pre,
    Q,
    Select,
    Source,
    Strong,
    Svg,
    Table,
    TableSection,
    Td,
    Template,
    Th,
    Title,
    Tr,
    Ul,
    Video,
    /// Elements whose content is never text: `script`, `style`,
    /// `noscript`, `textarea`, `noframes`, ...
    Hidden,
    /// Other block elements (`div`, `section`, `header`, `figure`, ...).
    Block,
    /// Other void elements (`meta`, `input`, `wbr`, ...).
    Void,
    /// Everything else: inline, or unknown (`span`, `abbr`, `my-widget`).
    Inline,
}

impl Tag {
    /// The kind of the element named `name`, in any case.
    pub fn of(name: &str) -> Tag {
        let bytes = name.as_bytes();
        if bytes.len() > 8 {
            // The three names longer than eight bytes.
            return if name.eq_ignore_ascii_case("blockquote") {
                Tag::Blockquote
            } else if name.eq_ignore_ascii_case("figcaption") {
                Tag::Block
            } else if name.eq_ignore_ascii_case("plaintext") {
                Tag::Pre
            } else {
                Tag::Inline
            };
        }
        let Some(key) = key(bytes) else {
            return Tag::Inline;
        };
        // One comparison of a number per name, which the compiler makes a
        // search over sorted numbers.
        macro_rules! by_key {
            ($($($name:literal)|+ => $tag:expr,)*) => {
                $(if $(key == const { pack($name) })||+ {
                    return $tag;
                })*
            };
        }
        by_key! {
            b"a" => Tag::A,
            b"article" => Tag::Article,
            b"audio" => Tag::Audio,
            b"b" => Tag::B,
            b"base" => Tag::Base,
            b"body" => Tag::Body,
            b"br" => Tag::Br,
            b"button" => Tag::Button,
            b"caption" => Tag::Caption,
            b"code" | b"kbd" | b"samp" | b"tt" => Tag::Code,
            b"dd" => Tag::Dd,
            b"details" => Tag::Details,
            b"dialog" => Tag::Dialog,
            b"dl" => Tag::Dl,
            b"dt" => Tag::Dt,
            b"em" => Tag::Em,
            // A frame is an embedded page: a frameset page is its frames.
            b"embed" | b"frame" => Tag::Embed,
            b"head" => Tag::Head,
            b"h1" => Tag::Heading(1),
            b"h2" => Tag::Heading(2),
            b"h3" => Tag::Heading(3),
            b"h4" => Tag::Heading(4),
            b"h5" => Tag::Heading(5),
            b"h6" => Tag::Heading(6),
            b"hr" => Tag::Hr,
            b"html" => Tag::Html,
            b"i" => Tag::I,
            b"iframe" => Tag::Iframe,
            b"img" | b"image" => Tag::Img,
            b"li" => Tag::Li,
            b"main" => Tag::Main,
            b"math" => Tag::Math,
            b"nav" => Tag::Nav,
            b"object" => Tag::Object,
            b"ol" => Tag::Ol,
            b"option" | b"optgroup" => Tag::Option,
            b"p" => Tag::P,
            b"pre" | b"listing" | b"xmp" => Tag::Pre,
            b"q" => Tag::Q,
            b"select" | b"datalist" => Tag::Select,
            b"source" => Tag::Source,
            b"strong" => Tag::Strong,
            b"svg" => Tag::Svg,
            b"table" => Tag::Table,
            b"thead" | b"tbody" | b"tfoot" => Tag::TableSection,
            b"td" => Tag::Td,
            b"template" => Tag::Template,
            b"th" => Tag::Th,
            b"title" => Tag::Title,
            b"tr" => Tag::Tr,
            b"ul" | b"menu" | b"dir" => Tag::Ul,
            b"video" => Tag::Video,
            b"script" | b"style" | b"noscript" | b"textarea" | b"noembed" | b"noframes"
            | b"canvas" | b"map" => Tag::Hidden,
            b"address" | b"aside" | b"center" | b"div" | b"fieldset"
            | b"figure" | b"footer" | b"form" | b"header" | b"hgroup" | b"legend" | b"search"
            | b"section" | b"summary" | b"frameset" => Tag::Block,
            b"area" | b"col" | b"input" | b"keygen" | b"link" | b"meta" | b"param" | b"track"
            | b"wbr" => Tag::Void,
        }
        Tag::Inline
    }

    /// Elements that never have content or an end tag.
    pub fn is_void(self) -> bool {
        matches!(
            self,
            Tag::Br | Tag::Img | Tag::Hr | Tag::Base | Tag::Embed | Tag::Source | Tag::Void
        )
    }

    /// Elements that start and end a block of text.
    pub fn is_block(self) -> bool {
        matches!(
            self,
            Tag::Article
                | Tag::Blockquote
                | Tag::Body
                | Tag::Caption
                | Tag::Dd
                | Tag::Details
                | Tag::Dialog
                | Tag::Dl
                | Tag::Dt
                | Tag::Heading(_)
                | Tag::Hr
                | Tag::Html
                | Tag::Li
                | Tag::Main
                | Tag::Nav
                | Tag::Ol
                | Tag::P
                | Tag::Pre
                | Tag::Table
                | Tag::TableSection
                | Tag::Td
                | Tag::Th
                | Tag::Tr
                | Tag::Ul
                | Tag::Block
        )
    }

    /// Start tags that close an open `<p>` first.
    pub fn closes_p(self) -> bool {
        self.is_block()
            && !matches!(
                self,
                Tag::Body
                    | Tag::Html
                    | Tag::Caption
                    | Tag::Td
                    | Tag::Th
                    | Tag::Tr
                    | Tag::TableSection
            )
    }

    /// Where the search for an open element to close stops (HTML's
    /// "scope"): an element outside a table cell is not closed from
    /// inside it.
    pub fn is_scope_boundary(self) -> bool {
        matches!(
            self,
            Tag::Table | Tag::Td | Tag::Th | Tag::Caption | Tag::Html | Tag::Template | Tag::Object
        )
    }

    pub fn is_table_part(self) -> bool {
        matches!(
            self,
            Tag::Table | Tag::TableSection | Tag::Tr | Tag::Td | Tag::Th | Tag::Caption
        )
    }
}

/// A name of at most eight bytes as a number, its bytes in order from
/// the lowest (the rest zero), as `key` makes one of a lowercase name.
const fn pack(name: &[u8]) -> u64 {
    assert!(name.len() <= 8);
    let mut key = 0u64;
    let mut i = 0;
    while i < name.len() {
        key |= (name[i] as u64) << (8 * i);
        i += 1;
    }
    key
}

/// `pack` of `name` (at most eight bytes) lowercased; None for a name
/// holding a NUL, which zero padding would make another name.
fn key(name: &[u8]) -> Option<u64> {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte below `n` (at most 0x80), exactly.
    let below = |word: u64, n: u8| !(((word & !HIGH) + LOW * u64::from(0x80 - n)) | word) & HIGH;
    let n = name.len();
    if n == 0 {
        return None;
    }
    // Loaded in pieces that overlap where they must (a copy into a
    // buffer read whole would make the read wait for the copy).
    let word = if n >= 4 {
        let four = |at: usize| {
            let mut b = [0; 4];
            b.copy_from_slice(&name[at..at + 4]);
            u64::from(u32::from_le_bytes(b))
        };
        four(0) | four(n - 4) << (8 * (n - 4))
    } else {
        let byte = |at: usize| u64::from(name[at]) << (8 * at);
        byte(0) | byte(n / 2) | byte(n - 1)
    };
    let used = u64::MAX >> (64 - 8 * n);
    if below(word, 1) & used != 0 {
        return None;
    }
    let upper = !below(word, b'A') & below(word, b'Z' + 1);
    Some(word | (upper >> 2))
}

/// An open element as the two passes over a page keep it: its kind and
/// the name it was written with (an end tag closes an element by name).
pub trait Element {
    fn tag(&self) -> Tag;
    fn name(&self) -> &str;
}

/// The open element nearest the top of `stack` that `want` matches,
/// unless an element that `stop` matches comes first.
fn find<E: Element>(
    stack: &[E],
    want: impl Fn(&E) -> bool,
    stop: impl Fn(Tag) -> bool,
) -> Option<usize> {
    for (i, open) in stack.iter().enumerate().rev() {
        if want(open) {
            return Some(i);
        }
        if stop(open.tag()) {
            return None;
        }
    }
    None
}

fn find_tag<E: Element>(
    stack: &[E],
    want: impl Fn(Tag) -> bool,
    stop: impl Fn(Tag) -> bool,
) -> Option<usize> {
    find(stack, |o| want(o.tag()), stop)
}

/// How many of the open elements stay open when `tag` starts: HTML closes
/// an open `<p>` before a block, an `<li>` before the next item, `<dt>`
/// and `<dd>` before each other, cells and rows before the next ones, a
/// heading before another, a link before another link. None: all stay.
/// Both passes over a page cut their stacks by this one rule, so that
/// they see the same elements. (Both passes call the counted form; this
/// one, which always searches, is what the tests hold it to.)
#[cfg(test)]
pub fn kept_before_start<E: Element>(stack: &[E], tag: Tag) -> Option<usize> {
    kept_before_start_counted(stack, tag, &OpenCounts::UNKNOWN)
}

/// How many elements of the kinds `kept_before_start` searches for are
/// open: when none is, its search would find nothing, so it is skipped
/// (most start tags close nothing, and most blocks start with no `<p>`
/// open, which the search would learn by walking the whole stack).
#[derive(Debug, Clone, Default)]
pub struct OpenCounts {
    p: usize,
    li: usize,
    dt_dd: usize,
    a: usize,
}

impl OpenCounts {
    /// Counts that skip no search.
    #[cfg(test)]
    const UNKNOWN: OpenCounts = OpenCounts {
        p: 1,
        li: 1,
        dt_dd: 1,
        a: 1,
    };

    fn count(&mut self, tag: Tag) -> Option<&mut usize> {
        match tag {
            Tag::P => Some(&mut self.p),
            Tag::Li => Some(&mut self.li),
            Tag::Dt | Tag::Dd => Some(&mut self.dt_dd),
            Tag::A => Some(&mut self.a),
            _ => None,
        }
    }

    /// An element of kind `tag` was pushed on the stack.
    pub fn push(&mut self, tag: Tag) {
        if let Some(n) = self.count(tag) {
            *n += 1;
        }
    }

    /// An element of kind `tag` was popped off the stack.
    pub fn pop(&mut self, tag: Tag) {
        if let Some(n) = self.count(tag) {
            *n -= 1;
        }
    }
}

/// `kept_before_start` for a stack whose elements `counts` counts.
pub fn kept_before_start_counted<E: Element>(
    stack: &[E],
    tag: Tag,
    counts: &OpenCounts,
) -> Option<usize> {
    let p = if tag.closes_p() && counts.p > 0 {
        let button_scope = |t: Tag| t.is_scope_boundary() || t == Tag::Button;
        find_tag(stack, |t| t == Tag::P, button_scope)
    } else {
        None
    };
    let stack = &stack[..p.unwrap_or(stack.len())];
    let top_is = |want: fn(Tag) -> bool| {
        stack
            .last()
            .filter(|o| want(o.tag()))
            .map(|_| stack.len() - 1)
    };
    let other = match tag {
        Tag::Li if counts.li > 0 => find_tag(
            stack,
            |t| t == Tag::Li,
            |t| matches!(t, Tag::Ul | Tag::Ol) || t.is_scope_boundary(),
        ),
        Tag::Dt | Tag::Dd if counts.dt_dd > 0 => find_tag(
            stack,
            |t| matches!(t, Tag::Dt | Tag::Dd),
            |t| t == Tag::Dl || t.is_scope_boundary(),
        ),
        Tag::Tr => find_tag(
            stack,
            |t| matches!(t, Tag::Tr | Tag::Td | Tag::Th),
            |t| t == Tag::Table,
        ),
        Tag::Td | Tag::Th => find_tag(
            stack,
            |t| matches!(t, Tag::Td | Tag::Th),
            |t| matches!(t, Tag::Tr | Tag::Table),
        ),
        Tag::TableSection => find_tag(
            stack,
            |t| {
                matches!(
                    t,
                    Tag::TableSection | Tag::Tr | Tag::Td | Tag::Th | Tag::Caption
                )
            },
            |t| t == Tag::Table,
        ),
        Tag::Heading(_) => top_is(|t| matches!(t, Tag::Heading(_))),
        Tag::A if counts.a > 0 => find_tag(stack, |t| t == Tag::A, Tag::is_scope_boundary),
        Tag::Option => top_is(|t| t == Tag::Option),
        _ => None,
    };
    other.or(p)
}

/// The open element an end tag named `name` closes (with the ones opened
/// after it): the nearest of its name (any heading for a heading), never
/// reaching out of a table cell; a table part's end tag never out of its
/// table. None: the end tag closes nothing. (The passes call
/// `closed_by_end_tag` with the kind they looked up already.)
#[cfg(test)]
pub fn closed_by_end<E: Element>(stack: &[E], name: &str) -> Option<usize> {
    closed_by_end_tag(stack, name, Tag::of(name))
}

/// `closed_by_end` for an end tag whose kind, `Tag::of(name)`, is known.
pub fn closed_by_end_tag<E: Element>(stack: &[E], name: &str, tag: Tag) -> Option<usize> {
    if tag.is_table_part() {
        find(
            stack,
            |o| o.name().eq_ignore_ascii_case(name),
            |t| matches!(t, Tag::Table | Tag::Template | Tag::Html),
        )
    } else {
        find(
            stack,
            |o| {
                o.name().eq_ignore_ascii_case(name)
                    || matches!((o.tag(), tag), (Tag::Heading(_), Tag::Heading(_)))
            },
            Tag::is_scope_boundary,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Tag::of` as it was first written: one match of lowercase names.
    fn of_by_match(name: &str) -> Tag {
        let mut buf = [0u8; 12];
        if name.len() > buf.len() {
            return Tag::Inline;
        }
        let lower = &mut buf[..name.len()];
        lower.copy_from_slice(name.as_bytes());
        lower.make_ascii_lowercase();
        match &*lower {
            b"a" => Tag::A,
            b"article" => Tag::Article,
            b"audio" => Tag::Audio,
            b"b" => Tag::B,
            b"base" => Tag::Base,
            b"blockquote" => Tag::Blockquote,
            b"body" => Tag::Body,
            b"br" => Tag::Br,
            b"button" => Tag::Button,
            b"caption" => Tag::Caption,
            b"code" | b"kbd" | b"samp" | b"tt" => Tag::Code,
            b"dd" => Tag::Dd,
            b"details" => Tag::Details,
            b"dialog" => Tag::Dialog,
            b"dl" => Tag::Dl,
            b"dt" => Tag::Dt,
            b"em" => Tag::Em,
            // A frame is an embedded page: a frameset page is its frames.
            b"embed" | b"frame" => Tag::Embed,
            b"head" => Tag::Head,
            b"h1" => Tag::Heading(1),
            b"h2" => Tag::Heading(2),
            b"h3" => Tag::Heading(3),
            b"h4" => Tag::Heading(4),
            b"h5" => Tag::Heading(5),
            b"h6" => Tag::Heading(6),
            b"hr" => Tag::Hr,
            b"html" => Tag::Html,
            b"i" => Tag::I,
            b"iframe" => Tag::Iframe,
            b"img" | b"image" => Tag::Img,
            b"li" => Tag::Li,
            b"main" => Tag::Main,
            b"math" => Tag::Math,
            b"nav" => Tag::Nav,
            b"object" => Tag::Object,
            b"ol" => Tag::Ol,
            b"option" | b"optgroup" => Tag::Option,
            b"p" => Tag::P,
            b"pre" | b"listing" | b"xmp" | b"plaintext" => Tag::Pre,
            b"q" => Tag::Q,
            b"select" | b"datalist" => Tag::Select,
            b"source" => Tag::Source,
            b"strong" => Tag::Strong,
            b"svg" => Tag::Svg,
            b"table" => Tag::Table,
            b"thead" | b"tbody" | b"tfoot" => Tag::TableSection,
            b"td" => Tag::Td,
            b"template" => Tag::Template,
            b"th" => Tag::Th,
            b"title" => Tag::Title,
            b"tr" => Tag::Tr,
            b"ul" | b"menu" | b"dir" => Tag::Ul,
            b"video" => Tag::Video,
            b"script" | b"style" | b"noscript" | b"textarea" | b"noembed" | b"noframes"
            | b"canvas" | b"map" => Tag::Hidden,
            b"address" | b"aside" | b"center" | b"div" | b"fieldset" | b"figcaption"
            | b"figure" | b"footer" | b"form" | b"header" | b"hgroup" | b"legend" | b"search"
            | b"section" | b"summary" | b"frameset" => Tag::Block,
            b"area" | b"col" | b"input" | b"keygen" | b"link" | b"meta" | b"param" | b"track"
            | b"wbr" => Tag::Void,
            _ => Tag::Inline,
        }
    }

    #[test]
    fn names_by_key_as_by_match() {
        let known = [
            "a",
            "article",
            "audio",
            "b",
            "base",
            "blockquote",
            "body",
            "br",
            "button",
            "caption",
            "code",
            "kbd",
            "samp",
            "tt",
            "dd",
            "details",
            "dialog",
            "dl",
            "dt",
            "em",
            "embed",
            "head",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "hr",
            "html",
            "i",
            "iframe",
            "img",
            "image",
            "li",
            "main",
            "math",
            "nav",
            "object",
            "ol",
            "option",
            "optgroup",
            "p",
            "pre",
            "listing",
            "xmp",
            "plaintext",
            "q",
            "select",
            "datalist",
            "source",
            "strong",
            "svg",
            "table",
            "thead",
            "tbody",
            "tfoot",
            "td",
            "template",
            "th",
            "title",
            "tr",
            "ul",
            "menu",
            "dir",
            "video",
            "script",
            "style",
            "noscript",
            "textarea",
            "noembed",
            "noframes",
            "frameset",
            "canvas",
            "map",
            "address",
            "aside",
            "center",
            "div",
            "fieldset",
            "figcaption",
            "figure",
            "footer",
            "form",
            "header",
            "hgroup",
            "legend",
            "search",
            "section",
            "summary",
            "area",
            "col",
            "input",
            "keygen",
            "link",
            "meta",
            "param",
            "track",
            "wbr",
            "frame",
        ];
        let mut names: Vec<String> = Vec::new();
        for name in known {
            names.push(name.to_string());
            names.push(name.to_ascii_uppercase());
            let mut mixed: Vec<char> = name.chars().collect();
            mixed[0] = mixed[0].to_ascii_uppercase();
            names.push(mixed.into_iter().collect());
            // Near misses: a byte more, a byte less, a NUL, a byte that
            // lowercasing must not touch.
            names.push(format!("{name}x"));
            names.push(format!("{name}\0"));
            names.push(format!("\0{name}"));
            names.push(name[1..].to_string());
            names.push(format!("{name}\u{e9}"));
            names.push(name.replace('a', "\u{c1}"));
            names.push(name.replace('a', "@").replace('z', "[").replace('h', "`"));
        }
        names.extend(
            [
                "",
                "span",
                "my-widget",
                "h7",
                "h0",
                "\0",
                "ab\0\0",
                "abcdefghi",
            ]
            .map(String::from),
        );
        for name in &names {
            assert_eq!(Tag::of(name), of_by_match(name), "{name:?}");
        }
    }

    struct Named(Tag, &'static str);

    impl Element for Named {
        fn tag(&self) -> Tag {
            self.0
        }
        fn name(&self) -> &str {
            self.1
        }
    }

    #[test]
    fn counted_starts_close_what_the_search_closes() {
        // Random mis-nested start and end tags: paragraphs in buttons and
        // cells, items outside lists, links in links, unclosed everything.
        let names = [
            "p", "li", "ul", "ol", "dt", "dd", "dl", "a", "table", "td", "th", "tr", "tbody",
            "caption", "button", "div", "h2", "h3", "option", "span", "template", "object", "br",
            "P", "LI", "A",
        ];
        let mut seed = 11u64;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for _ in 0..200 {
            let mut stack = vec![Named(Tag::Html, "html"), Named(Tag::Body, "body")];
            let mut counts = OpenCounts::default();
            for open in &stack {
                counts.push(open.0);
            }
            for _ in 0..300 {
                let name = names[next(names.len())];
                let tag = Tag::of(name);
                let len = if next(3) == 0 {
                    closed_by_end(&stack, name)
                } else {
                    let searched = kept_before_start(&stack, tag);
                    assert_eq!(kept_before_start_counted(&stack, tag, &counts), searched);
                    searched
                };
                for open in stack.drain(len.unwrap_or(usize::MAX).min(stack.len())..) {
                    counts.pop(open.0);
                }
                if !tag.is_void() && next(4) > 0 {
                    counts.push(tag);
                    stack.push(Named(tag, name));
                }
            }
        }
    }
}
