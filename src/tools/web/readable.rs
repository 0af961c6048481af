//! Where the article is, inside the element that marks the main content
//! (`<main>`, `role="main"`, a single `<article>`) or in the whole page
//! when none does, and what inside it is not article: the rules of
//! Readability, Mozilla's reader view, which is what MCP fetch and most
//! readers keep of a page, with the boxes readers also leave out, worked
//! on the first pass's running counts instead of a tree (decisions 90 and
//! 107 in docs/decisions.md, the rules in docs/web-fetch.md).
//!
//! - Elements whose class or id name a box (`comment`, `sidebar`,
//!   `related`, `footer`, `share`, ...: `UNLIKELY`, unless they also name
//!   content: `MAYBE`) or whose role is a menu, navigation or dialog,
//!   `<nav>`, `<footer>`, `<aside>`, and author boxes, bylines, newsletter
//!   and "read more" blocks whatever else they name (`names::BOXES`), are not
//!   scored and not kept.
//! - Every paragraph (`p`, `pre`, `td`, `section`, `h2`-`h6`, a `div`
//!   with no block inside, and a run of text written straight into a
//!   `div` between its blocks) of 25 bytes of text or more scores `1 + its
//!   commas + one per 100 bytes (at most 3)`, given to its parent whole,
//!   its grandparent half, and three more ancestors a third of it per
//!   level. An ancestor starts from its kind (`div` 5, `pre`, `td` and
//!   `blockquote` 3, lists and forms -3, headings -5) and its class and id
//!   (25 for each that names content, -25 for each that names a box).
//! - The element scoring most, its score times the share of its text
//!   outside links, holds the article; where three of its near rivals
//!   (three quarters of its score) share an ancestor, that ancestor does;
//!   the parent of either takes over while it scores more, or holds
//!   nothing else. Its siblings that score a fifth of it (at least 10)
//!   and its sibling paragraphs of prose (over 80 bytes, under a quarter
//!   links) join it, and so do blocks anywhere that score as much and
//!   whose class begins with the same word as its own (an article split
//!   around an advertisement).
//! - Inside, as Readability cleans an article: footers, asides and other
//!   embeds than video are left out; headings `h1` and `h2` whose class
//!   names a box; small share bars; pictures' captions and credits; and forms, tables that are not data,
//!   lists and `div`s with fewer than 10 commas whose class names a box,
//!   or whose text is mostly links (a fifth, or half when the class names
//!   content), or that hold more inputs than a third of their paragraphs,
//!   more pictures than twice their paragraphs, or one short embed; but
//!   never a block holding most of the article's text outside links (the
//!   blocks inside it are looked at instead).
//!
//! An article shorter than `MIN_ARTICLE` bytes is kept only when it
//! clearly wins (`Article::clear`, and `survey` checks its share of the
//! scored prose); commas and full stops are those of every script.

use super::names::{self, BOXES, BYLINE, CAPTION, MAYBE, NEGATIVE, POSITIVE, UNLIKELY};
use super::tags::Tag;
use super::tokenizer::attr;

/// The least text, in bytes, that a chosen article must hold.
pub const MIN_ARTICLE: usize = 500;

/// A paragraph over this many bytes is prose, not a caption, a headline
/// or a teaser.
pub const PROSE: usize = 80;

const UNLIKELY_ROLES: [&str; 7] = [
    "menu",
    "menubar",
    "complementary",
    "navigation",
    "alert",
    "alertdialog",
    "dialog",
];

/// The word sets (`names`) the element's class and id name, each alone:
/// Readability matches the two joined by a space, and none of its
/// fragments spans the space.
fn named(attrs: &str) -> u8 {
    ["class", "id"]
        .iter()
        .filter_map(|name| attr(attrs, name))
        .fold(0, |sets, value| sets | names::sets(&value))
}

/// Is the element a box that is never the article (see the module)?
/// `name`: its name, for the elements HTML itself names boxes.
pub fn is_unlikely(tag: Tag, name: &str, attrs: &str) -> bool {
    if tag == Tag::Nav
        || (tag == Tag::Block
            && (name.eq_ignore_ascii_case("footer") || name.eq_ignore_ascii_case("aside")))
    {
        return true;
    }
    if attrs.is_empty() || matches!(tag, Tag::Body | Tag::Html | Tag::A) {
        return false;
    }
    let sets = named(attrs);
    // A section's id is most often its heading's words (`#why-we-subscribe`),
    // so our box words are read from its class only.
    let boxes = if name.eq_ignore_ascii_case("section") {
        attr(attrs, "class").map_or(0, |c| names::sets(&c))
    } else {
        sets
    };
    if boxes & BOXES != 0 {
        return true;
    }
    if attr(attrs, "role").is_some_and(|r| {
        let r = r.trim();
        UNLIKELY_ROLES.iter().any(|u| u.eq_ignore_ascii_case(r))
    }) {
        return true;
    }
    sets & UNLIKELY != 0 && sets & MAYBE == 0
}

/// What the class and id say: 25 for each that names content, -25 for
/// each that names a box.
pub fn class_weight(attrs: &str) -> f32 {
    let mut weight = 0.0;
    for name in ["class", "id"] {
        if let Some(value) = attr(attrs, name).filter(|v| !v.is_empty()) {
            let sets = names::sets(&value);
            if sets & NEGATIVE != 0 {
                weight -= 25.0;
            }
            if sets & POSITIVE != 0 {
                weight += 25.0;
            }
        }
    }
    weight
}

/// The most text, in bytes, of a byline Readability leaves out.
pub const MAX_BYLINE: usize = 100;

/// Does the element name the author's line: its class or id (`author`,
/// `byline`, `dateline`, `writtenby`), `rel="author"` or an `itemprop`
/// naming the author? Left out when under `MAX_BYLINE` bytes of text.
pub fn is_byline(attrs: &str) -> bool {
    !attrs.is_empty()
        && (named(attrs) & BYLINE != 0
            || attr(attrs, "rel").is_some_and(|r| r.trim().eq_ignore_ascii_case("author"))
            || attr(attrs, "itemprop").is_some_and(|p| p.contains("author")))
}

/// The most text, in bytes, of a caption or credit named by its class
/// or id that is left out.
pub const MAX_CAPTION: usize = 300;

/// Is the element a picture's caption or credit: a `figcaption`, or a
/// class or id naming a `caption` or a `credit` (under `MAX_CAPTION`
/// bytes; `text`: its text)? Readers keep the words of the article, not
/// what is said of its pictures (decision 147).
pub fn is_caption(name: &str, attrs: &str, text: usize) -> bool {
    name.eq_ignore_ascii_case("figcaption")
        || (text < MAX_CAPTION && !attrs.is_empty() && named(attrs) & CAPTION != 0)
}

/// The page's title as a heading is compared with it: its words
/// (lowercase runs of letters and digits).
#[derive(Debug, Default)]
pub struct Title(Vec<String>);

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

impl Title {
    pub fn of(title: &str) -> Title {
        Title(words(title).collect())
    }

    /// Does the heading say what the title says: more than three quarters
    /// of its words' text (joined by spaces, as Readability measures) are
    /// the title's words? Readability leaves such an `h1` or `h2` out of
    /// the article: the title is given beside it.
    pub fn said_by(&self, heading: &str) -> bool {
        let (mut all, mut own, mut count) = (0, 0, 0);
        for word in words(heading) {
            count += 1;
            all += word.len() + 1;
            if !self.0.contains(&word) {
                own += word.len() + 1;
            }
        }
        if self.0.is_empty() || count == 0 {
            return false;
        }
        // The spaces between the words: one fewer than the words, each
        // counted with its word above.
        let own = own.saturating_sub(usize::from(own > 0));
        (own as f32) < 0.25 * (all - 1) as f32
    }
}

/// Does the class or id name a share bar?
pub fn is_share(attrs: &str) -> bool {
    ["class", "id"]
        .iter()
        .any(|name| attr(attrs, name).is_some_and(|v| names::names_share(&v)))
}

/// Is the embedded source a video, which an article keeps?
pub fn is_video(attrs: &str) -> bool {
    ["src", "data"]
        .iter()
        .filter_map(|name| attr(attrs, name))
        .any(|src| names::is_video_source(&src))
}

/// An ancestor's score before its paragraphs add to it.
pub fn base_score(tag: Tag, name: &str) -> f32 {
    match tag {
        Tag::Pre | Tag::Td | Tag::Blockquote => 3.0,
        Tag::Ol | Tag::Ul | Tag::Dl | Tag::Dd | Tag::Dt | Tag::Li => -3.0,
        Tag::Heading(_) | Tag::Th => -5.0,
        Tag::Block if name.eq_ignore_ascii_case("div") => 5.0,
        Tag::Block if name.eq_ignore_ascii_case("address") || name.eq_ignore_ascii_case("form") => {
            -3.0
        }
        _ => 0.0,
    }
}

/// Is an element of this kind a paragraph that scores? `block_inside`:
/// a block opened inside it (a `div` is a paragraph only without one).
pub fn is_paragraph(tag: Tag, name: &str, block_inside: bool) -> bool {
    match tag {
        Tag::P | Tag::Pre | Tag::Td => true,
        Tag::Heading(level) => level >= 2,
        Tag::Block => {
            name.eq_ignore_ascii_case("section")
                || (!block_inside && name.eq_ignore_ascii_case("div"))
        }
        _ => false,
    }
}

/// The commas of every script in `text`, as Readability counts them
/// (the Latin, Arabic, full-width, small and ideographic ones): a
/// paragraph of Chinese or Japanese is prose by its commas as English is.
pub fn commas(text: &str) -> usize {
    // One plain pass over the bytes, counting ASCII commas and noting any
    // byte of a longer character: most runs are short and ASCII, where
    // memchr's setup and a walk over characters cost more.
    // Eight bytes at a time: the high bit of each comma byte, set exactly
    // (no carry crosses a byte), and the bytes' high bits together.
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let bytes = text.as_bytes();
    let (mut ascii, mut high) = (0, 0u64);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        high |= word;
        let x = word ^ (LOW * u64::from(b','));
        let comma = !(((x & !HIGH) + !HIGH) | x) & HIGH;
        if comma != 0 {
            ascii += comma.count_ones() as usize;
        }
    }
    for &b in words.remainder() {
        ascii += usize::from(b == b',');
        high |= u64::from(b);
    }
    if high & HIGH == 0 {
        return ascii;
    }
    ascii
        + text
            .chars()
            .filter(|c| {
                matches!(
                    c,
                    '\u{060C}'
                        | '\u{FE50}'
                        | '\u{FE10}'
                        | '\u{FE11}'
                        | '\u{2E41}'
                        | '\u{2E34}'
                        | '\u{2E32}'
                        | '\u{FF0C}'
                        | '\u{3001}'
                        | '\u{FF64}'
                )
            })
            .count()
}

/// Does `text` end with a full stop, in any script (Latin, ideographic
/// and full-width, Devanagari, Arabic)?
pub fn ends_sentence(text: &str) -> bool {
    text.ends_with([
        '.', '\u{3002}', '\u{FF0E}', '\u{FF61}', '\u{0964}', '\u{06D4}',
    ])
}

/// What a paragraph of `text` bytes holding `commas` commas gives.
pub fn paragraph_score(text: usize, commas: usize) -> f32 {
    1.0 + commas as f32 + (text / 100).min(3) as f32
}

/// What a paragraph gives its ancestor `level` steps up (0: its parent).
pub fn share(score: f32, level: usize) -> f32 {
    match level {
        0 => score,
        1 => score / 2.0,
        _ => score / (level * 3) as f32,
    }
}

/// An element around a paragraph that scored: its start tag's ordinal,
/// the ordinal of its last start tag inside (`end`), its parent's, its
/// score (the five nearest ancestors of a paragraph have one) and its
/// counts.
#[derive(Debug, Clone, Copy)]
pub struct Candidate {
    pub ordinal: usize,
    pub end: usize,
    pub parent: usize,
    pub score: Option<f32>,
    /// The score counting the paragraphs inside boxes as well.
    pub loose: Option<f32>,
    /// The first word of its class, hashed (None: no class).
    pub class: Option<u64>,
    pub text: usize,
    pub link_text: usize,
    /// Element children, void ones included.
    pub children: usize,
    /// `html` or `body`: the page's frame, never the article.
    pub frame: bool,
}

impl Candidate {
    fn link_density(&self) -> f32 {
        if self.text == 0 {
            0.0
        } else {
            self.link_text as f32 / self.text as f32
        }
    }

    /// The score as the choice weighs it: what links take is taken off.
    fn weighed(&self) -> Option<f32> {
        self.score.map(|s| s * (1.0 - self.link_density()))
    }
}

/// A `<p>`, which may join the article as its sibling.
#[derive(Debug, Clone, Copy)]
pub struct Paragraph {
    pub ordinal: usize,
    pub end: usize,
    pub parent: usize,
    pub text: usize,
    pub link_text: usize,
    /// Its text ends with a full stop.
    pub sentence: bool,
}

impl Paragraph {
    /// Prose that joins the article beside it: over `PROSE` bytes with
    /// under a quarter links, or shorter, without a link, ending a
    /// sentence. Only such paragraphs are kept for the choice, so a page
    /// of a hundred thousand tiny ones costs nothing for them.
    pub fn is_prose(&self) -> bool {
        let density = self.link_text as f32 / self.text.max(1) as f32;
        (self.text > PROSE && density < 0.25)
            || (self.text > 0 && self.text <= PROSE && self.link_text == 0 && self.sentence)
    }
}

/// A chosen part of the page: start tags `start..=end` and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub start: usize,
    pub end: usize,
    pub text: usize,
    pub link_text: usize,
}

impl Part {
    fn of(start: usize, end: usize, text: usize, link_text: usize) -> Part {
        Part {
            start,
            end,
            text,
            link_text,
        }
    }
}

/// What `choose` finds: the article's parts, in document order, and
/// whether it clearly wins (no element outside it weighs half as much).
#[derive(Debug, Clone, PartialEq)]
pub struct Article {
    pub parts: Vec<Part>,
    pub clear: bool,
}

impl Article {
    /// The parts' text, in bytes.
    pub fn text(&self) -> usize {
        self.parts.iter().map(|p| p.text).sum()
    }
}

/// The article: the element that holds it and the siblings that join it.
/// None when no element scored or the best is the page's frame.
pub fn choose(candidates: &[Candidate], paragraphs: &[Paragraph]) -> Option<Article> {
    let by_ordinal = |ordinal: usize| {
        candidates
            .binary_search_by_key(&ordinal, |c| c.ordinal)
            .ok()
            .map(|i| &candidates[i])
            .filter(|c| !c.frame)
    };
    let mut ranked: Vec<(&Candidate, f32)> = candidates
        .iter()
        .filter(|c| !c.frame)
        .filter_map(|c| Some((c, c.weighed()?)))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    let &(mut top, best) = ranked.first()?;
    if best <= 0.0 {
        return None;
    }
    let ancestors = |c: &Candidate| {
        let mut chain = Vec::new();
        let mut at = by_ordinal(c.parent);
        while let Some(a) = at {
            chain.push(a.ordinal);
            at = by_ordinal(a.parent);
        }
        chain
    };
    // Three near rivals inside one ancestor: the article is the ancestor.
    let rivals: Vec<Vec<usize>> = ranked[1..ranked.len().min(5)]
        .iter()
        .filter(|(_, score)| *score >= 0.75 * best)
        .map(|(c, _)| ancestors(c))
        .collect();
    if rivals.len() >= 3 {
        for ancestor in ancestors(top) {
            if rivals.iter().filter(|r| r.contains(&ancestor)).count() >= 3 {
                top = by_ordinal(ancestor).expect("an ancestor is tracked");
                break;
            }
        }
    }
    // A parent scoring more than the way up holds more of the article.
    let score = top.weighed().unwrap_or(0.0);
    let threshold = score / 3.0;
    let mut last = score;
    let mut at = by_ordinal(top.parent);
    while let Some(parent) = at {
        at = by_ordinal(parent.parent);
        let Some(score) = parent.weighed() else {
            continue;
        };
        if score < threshold {
            break;
        }
        if score > last {
            top = parent;
            break;
        }
        last = score;
    }
    // A parent holding nothing else is the article as much.
    while let Some(parent) = by_ordinal(top.parent).filter(|p| p.children == 1) {
        top = parent;
    }
    let threshold = (top.weighed().unwrap_or(0.0) * 0.2).max(10.0);
    let mut parts = vec![Part::of(top.ordinal, top.end, top.text, top.link_text)];
    for c in candidates {
        if c.parent == top.parent
            && c.ordinal != top.ordinal
            && c.weighed().is_some_and(|s| s >= threshold)
        {
            parts.push(Part::of(c.ordinal, c.end, c.text, c.link_text));
        }
    }
    for p in paragraphs {
        if p.parent != top.parent || p.ordinal == top.ordinal {
            continue;
        }
        if p.is_prose() {
            parts.push(Part::of(p.ordinal, p.end, p.text, p.link_text));
        }
    }
    // An article split around an advertisement or a picture continues in
    // blocks of its own class elsewhere: the ones that score as a sibling
    // must join it.
    if top.class.is_some() {
        for c in candidates {
            let apart = |parts: &[Part]| parts.iter().all(|p| c.end < p.start || c.ordinal > p.end);
            if c.class == top.class
                && !c.frame
                && c.weighed().is_some_and(|s| s >= threshold)
                && apart(&parts)
            {
                parts.push(Part::of(c.ordinal, c.end, c.text, c.link_text));
            }
        }
    }
    parts.sort_unstable_by_key(|p| p.start);
    parts.dedup_by_key(|p| p.start);
    // A rival is an element neither inside the article nor around it.
    let best = top.weighed().unwrap_or(0.0);
    let clear = !candidates.iter().any(|c| {
        !c.frame
            && c.weighed().is_some_and(|s| s * 2.0 > best)
            && parts.iter().all(|p| c.end < p.start || c.ordinal > p.end)
    });
    Some(Article { parts, clear })
}

/// What Readability counts of a block it may clean out of an article.
#[derive(Debug, Default, Clone, Copy)]
pub struct Block {
    pub text: usize,
    pub link_text: usize,
    pub commas: usize,
    pub paragraphs: usize,
    pub items: usize,
    pub images: usize,
    pub inputs: usize,
    pub embeds: usize,
    pub heading_text: usize,
    pub list_text: usize,
}

/// Does an article leave out this form, table that is not data, list or
/// `div` (`weight`: its class weight; `list`: it is a list)?
pub fn cleaned_out(b: &Block, weight: f32, list: bool) -> bool {
    if weight < 0.0 {
        return true;
    }
    if b.commas >= 10 {
        return false;
    }
    let list = list || b.list_text * 10 > b.text * 9;
    let density = b.link_text as f32 / b.text.max(1) as f32;
    let headings = b.heading_text as f32 / b.text.max(1) as f32;
    (b.images > 1 && b.paragraphs * 2 < b.images)
        || (!list && b.items > b.paragraphs + 100)
        || b.inputs > b.paragraphs / 3
        || (!list
            && headings < 0.9
            && b.text < 25
            && (b.images == 0 || b.images > 2)
            && density > 0.0)
        || (!list && weight < 25.0 && density > 0.2)
        || (weight >= 25.0 && density > 0.5)
        || (b.embeds == 1 && b.text < 75)
        || b.embeds > 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(ordinal: usize, end: usize, parent: usize, score: f32, text: usize) -> Candidate {
        Candidate {
            ordinal,
            end,
            parent,
            score: Some(score),
            loose: Some(score),
            class: None,
            text,
            link_text: 0,
            children: 2,
            frame: false,
        }
    }

    #[test]
    fn prose_is_long_with_few_links_or_short_ending_a_sentence() {
        let p = |text, link_text, sentence| Paragraph {
            ordinal: 1,
            end: 2,
            parent: 0,
            text,
            link_text,
            sentence,
        };
        assert!(p(81, 20, false).is_prose());
        assert!(!p(81, 21, false).is_prose());
        assert!(p(30, 0, true).is_prose());
        assert!(!p(30, 0, false).is_prose());
        assert!(!p(30, 5, true).is_prose());
        assert!(!p(0, 0, true).is_prose());
    }

    #[test]
    fn a_heading_says_the_title_when_its_words_are_the_titles() {
        let title = "Grass fire near Millbrook reservoir contained | Millbrook Gazette";
        assert!(Title::of(title).said_by("Grass fire near Millbrook reservoir contained"));
        assert!(Title::of(title).said_by("Grass Fire Near Millbrook Reservoir, Contained!"));
        // One word of its own in five: still the title's (0.17 of its text).
        assert!(Title::of(title).said_by("Grass fire near Millbrook reservoir now contained"));
        assert!(!Title::of(title).said_by("What the fire department said"));
        assert!(!Title::of(title).said_by("Reservoir trail closed until Thursday"));
        assert!(!Title::of("").said_by("Anything"));
        assert!(!Title::of(title).said_by("…"));
        assert!(Title::of("欲張りなイヌ - 福娘童話集").said_by("欲張りなイヌ"));
    }

    #[test]
    fn boxes_are_named_by_class_or_role_and_content_names_win() {
        assert!(is_unlikely(Tag::Block, "div", r#"class="comments""#));
        assert!(is_unlikely(Tag::Block, "div", r#"id="sidebar""#));
        assert!(is_unlikely(Tag::Ul, "ul", r#"role="navigation""#));
        assert!(!is_unlikely(
            Tag::Block,
            "div",
            r#"class="comment-content""#
        ));
        assert!(!is_unlikely(Tag::Block, "div", r#"class="story""#));
        assert!(!is_unlikely(Tag::Body, "body", r#"class="sidebar""#));
        assert!(!is_unlikely(Tag::Block, "div", ""));
        // Our box words whatever else is named; a section's id is its
        // heading's words.
        assert!(is_unlikely(
            Tag::Block,
            "div",
            r#"class="post-content author-bio""#
        ));
        assert!(is_unlikely(Tag::Block, "div", r#"id="respond""#));
        assert!(is_unlikely(Tag::Block, "section", r#"class="responses""#));
        assert!(!is_unlikely(
            Tag::Block,
            "section",
            r#"id="scriptable-responses-from-humans""#
        ));
    }

    #[test]
    fn class_weight_counts_class_and_id() {
        assert_eq!(class_weight(r#"class="post" id="comments""#), 0.0);
        assert_eq!(class_weight(r#"class="entry-content""#), 25.0);
        assert_eq!(class_weight(r#"class="share widget" id="promo""#), -50.0);
        assert_eq!(class_weight(""), 0.0);
    }

    #[test]
    fn the_best_scorer_and_its_worthy_siblings_are_the_article() {
        // 1 body > 2 div (article, 40) + 9 div (box, 2) + 12 p (prose).
        let candidates = [
            Candidate {
                frame: true,
                ..candidate(1, 20, 0, 50.0, 900)
            },
            candidate(2, 8, 1, 40.0, 600),
            candidate(9, 11, 1, 2.0, 30),
        ];
        let paragraphs = [Paragraph {
            ordinal: 12,
            end: 12,
            parent: 1,
            text: 120,
            link_text: 0,
            sentence: true,
        }];
        let parts = choose(&candidates, &paragraphs).unwrap().parts;
        let starts: Vec<usize> = parts.iter().map(|p| p.start).collect();
        assert_eq!(starts, [2, 12]);
    }

    #[test]
    fn an_ancestor_scoring_more_than_the_way_up_takes_over_and_links_weigh_nothing() {
        // 2 (45) > 3 (30) > 4 (50); 9 scores most, but is all links.
        let candidates = [
            candidate(2, 30, 1, 45.0, 1000),
            candidate(3, 8, 2, 30.0, 600),
            candidate(4, 8, 3, 50.0, 500),
            Candidate {
                link_text: 900,
                ..candidate(9, 12, 2, 90.0, 1000)
            },
        ];
        let parts = choose(&candidates, &[]).unwrap().parts;
        assert_eq!(parts[0].start, 2);
    }

    #[test]
    fn nothing_is_chosen_without_a_score() {
        assert!(choose(&[], &[]).is_none());
    }

    #[test]
    fn cleaning_spares_prose_and_lists_and_takes_link_boxes() {
        let prose = Block {
            text: 400,
            link_text: 40,
            commas: 3,
            paragraphs: 3,
            ..Block::default()
        };
        assert!(!cleaned_out(&prose, 0.0, false));
        let links = Block {
            link_text: 200,
            ..prose
        };
        assert!(cleaned_out(&links, 0.0, false));
        assert!(!cleaned_out(&links, 0.0, true));
        assert!(!cleaned_out(
            &Block {
                commas: 12,
                ..links
            },
            0.0,
            false
        ));
        assert!(cleaned_out(&prose, -25.0, false));
        let form = Block { inputs: 3, ..prose };
        assert!(cleaned_out(&form, 0.0, false));
    }

    #[test]
    fn commas_are_counted_wherever_the_eight_byte_steps_fall() {
        for at in 0..24 {
            for comma in [",", "、", "，"] {
                let text = format!("{}{comma}{}", "a".repeat(at), "b".repeat(24 - at));
                assert_eq!(commas(&text), 1, "{text}");
                let text = format!("{}{comma}{comma}x,{}", "é".repeat(at), "-".repeat(at % 9));
                assert_eq!(commas(&text), 3, "{text}");
            }
        }
        // Bytes beside a comma's (`+`, `-`, `\u{ac}`) are not commas.
        assert_eq!(commas("++--..\u{ac}\u{ac}++--..,"), 1);
    }
}
