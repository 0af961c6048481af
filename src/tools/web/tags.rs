//! The HTML elements the converter tells apart, and what HTML says about
//! each: void or not, block or inline, and which open elements a start tag
//! closes by itself (`<p>` before a block, `<li>` before the next item).

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
    /// `noscript`, `textarea`, `frameset`, ...
    Hidden,
    /// Other block elements (`div`, `section`, `header`, `figure`, ...).
    Block,
    /// Other void elements (`meta`, `input`, `wbr`, ...).
    Void,
    /// Everything else: inline, or unknown (`span`, `abbr`, `my-widget`).
    Inline,
}

impl Tag {
    pub fn of(name: &str) -> Tag {
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
            b"embed" => Tag::Embed,
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
            | b"frameset" | b"canvas" | b"map" => Tag::Hidden,
            b"address" | b"aside" | b"center" | b"div" | b"fieldset" | b"figcaption"
            | b"figure" | b"footer" | b"form" | b"header" | b"hgroup" | b"legend" | b"search"
            | b"section" | b"summary" => Tag::Block,
            b"area" | b"col" | b"input" | b"keygen" | b"link" | b"meta" | b"param" | b"track"
            | b"wbr" | b"frame" => Tag::Void,
            _ => Tag::Inline,
        }
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
/// they see the same elements.
pub fn kept_before_start<E: Element>(stack: &[E], tag: Tag) -> Option<usize> {
    let p = if tag.closes_p() {
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
        Tag::Li => find_tag(
            stack,
            |t| t == Tag::Li,
            |t| matches!(t, Tag::Ul | Tag::Ol) || t.is_scope_boundary(),
        ),
        Tag::Dt | Tag::Dd => find_tag(
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
        Tag::A => find_tag(stack, |t| t == Tag::A, Tag::is_scope_boundary),
        Tag::Option => top_is(|t| t == Tag::Option),
        _ => None,
    };
    other.or(p)
}

/// The open element an end tag named `name` closes (with the ones opened
/// after it): the nearest of its name (any heading for a heading), never
/// reaching out of a table cell; a table part's end tag never out of its
/// table. None: the end tag closes nothing.
pub fn closed_by_end<E: Element>(stack: &[E], name: &str) -> Option<usize> {
    let tag = Tag::of(name);
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
