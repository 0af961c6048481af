//! What an element's class or id names: a box a reader leaves out, content,
//! or a share bar, by the word lists Readability matches (and ours,
//! `BOXES`), and whether an embed's source is a video. Each list is a set
//! of lowercase fragments found anywhere in the value, ASCII letters in
//! either case, as Readability's case-insensitive patterns find them.
//!
//! Readability writes these as regular expressions; here they are plain
//! fragments matched in one pass over the value, because compiling the
//! patterns (Unicode case folding, then a lazy automaton built as it
//! reads) cost every fetch of a real page about as much as converting
//! half a megabyte of it.

use std::sync::LazyLock;

/// Readability's `unlikelyCandidates`: a box, unless the value also names
/// content (`MAYBE`).
pub const UNLIKELY: u8 = 1;
/// Readability's `okMaybeItsACandidate`.
pub const MAYBE: u8 = 2;
/// Readability's `positive`: names content (+25).
pub const POSITIVE: u8 = 4;
/// Readability's `negative`: names a box (-25).
pub const NEGATIVE: u8 = 8;
/// Boxes Readability keeps but a reader does not want: author boxes,
/// bylines, newsletter sign-ups, "read more", recommendations, comment
/// forms, comment threads called responses, a forum post's signature and
/// a `modal` dialog, which pages hide until it is opened (decisions 128
/// and 140); naming content does not save them.
pub const BOXES: u8 = 16;
/// Readability's `byline`: names the author's line, left out when short.
pub const BYLINE: u8 = 32;
/// A picture's caption or credit, left out when short (decision 147).
pub const CAPTION: u8 = 64;

const FRAGMENTS: &[(&str, u8)] = &[
    ("-ad-", UNLIKELY | NEGATIVE),
    ("ai2html", UNLIKELY),
    ("banner", UNLIKELY | NEGATIVE),
    ("breadcrumbs", UNLIKELY),
    ("combx", UNLIKELY | NEGATIVE),
    ("comment", UNLIKELY | NEGATIVE),
    ("community", UNLIKELY),
    ("cover-wrap", UNLIKELY),
    ("disqus", UNLIKELY),
    ("extra", UNLIKELY),
    ("footer", UNLIKELY | NEGATIVE),
    ("gdpr", UNLIKELY | NEGATIVE),
    ("header", UNLIKELY),
    ("legends", UNLIKELY),
    ("menu", UNLIKELY),
    ("related", UNLIKELY | NEGATIVE),
    ("remark", UNLIKELY),
    ("replies", UNLIKELY),
    ("rss", UNLIKELY),
    ("shoutbox", UNLIKELY | NEGATIVE),
    ("sidebar", UNLIKELY | NEGATIVE),
    ("skyscraper", UNLIKELY | NEGATIVE),
    ("social", UNLIKELY),
    ("sponsor", UNLIKELY | NEGATIVE),
    ("supplemental", UNLIKELY),
    ("ad-break", UNLIKELY),
    ("agegate", UNLIKELY),
    ("pagination", UNLIKELY | POSITIVE),
    ("pager", UNLIKELY),
    ("popup", UNLIKELY),
    ("yom-remote", UNLIKELY),
    ("and", MAYBE),
    ("article", MAYBE | POSITIVE),
    ("body", MAYBE | POSITIVE),
    ("column", MAYBE),
    ("content", MAYBE | POSITIVE),
    ("main", MAYBE | POSITIVE),
    ("mathjax", MAYBE),
    ("shadow", MAYBE),
    ("entry", POSITIVE),
    ("hentry", POSITIVE),
    ("h-entry", POSITIVE),
    ("page", POSITIVE),
    ("post", POSITIVE),
    ("text", POSITIVE),
    ("blog", POSITIVE),
    ("story", POSITIVE),
    ("hidden", NEGATIVE),
    ("com-", NEGATIVE),
    ("contact", NEGATIVE),
    ("masthead", NEGATIVE),
    ("media", NEGATIVE),
    ("meta", NEGATIVE),
    ("outbrain", NEGATIVE | BOXES),
    ("promo", NEGATIVE),
    ("scroll", NEGATIVE),
    ("share", NEGATIVE),
    ("shopping", NEGATIVE),
    ("tags", NEGATIVE),
    ("widget", NEGATIVE),
    ("author-bio", BOXES),
    ("authorbio", BOXES),
    ("author-box", BOXES),
    ("authorbox", BOXES),
    ("author-card", BOXES),
    ("authorcard", BOXES),
    ("author-info", BOXES),
    ("authorinfo", BOXES),
    ("author-profile", BOXES),
    ("authorprofile", BOXES),
    ("about-the-author", BOXES),
    ("byline", BOXES | BYLINE),
    ("author", BYLINE),
    ("dateline", BYLINE),
    ("writtenby", BYLINE),
    ("newsletter", BOXES),
    ("subscribe", BOXES),
    ("signup", BOXES),
    ("sign-up", BOXES),
    ("read-more", BOXES),
    ("readmore", BOXES),
    ("more-stories", BOXES),
    ("recirc", BOXES),
    ("recommend", BOXES),
    ("taboola", BOXES),
    ("respond", BOXES),
    ("reply-form", BOXES),
    ("replyform", BOXES),
    ("up-next", BOXES),
    ("upnext", BOXES),
    ("responses", BOXES),
    ("signature", BOXES),
    ("modal", BOXES),
    ("caption", CAPTION),
    ("credit", CAPTION),
];

/// A fragment's bytes and the sets it stands for.
type Fragment = (&'static [u8], u8);

/// The fragments by their first byte, so that each position of a value
/// is checked against the few that can start there.
static BY_FIRST: LazyLock<Vec<Vec<Fragment>>> = LazyLock::new(|| {
    let mut table = vec![Vec::new(); 128];
    for &(fragment, sets) in FRAGMENTS {
        table[usize::from(fragment.as_bytes()[0])].push((fragment.as_bytes(), sets));
    }
    table
});

/// The sets whose fragments `value` holds, one bit each (`UNLIKELY`, ...).
pub fn sets(value: &str) -> u8 {
    let bytes = value.as_bytes();
    let table = &*BY_FIRST;
    let mut found = 0;
    for i in 0..bytes.len() {
        let first = bytes[i].to_ascii_lowercase();
        let Some(fragments) = table.get(usize::from(first)) else {
            continue;
        };
        for &(fragment, sets) in fragments {
            if bytes[i..]
                .get(..fragment.len())
                .is_some_and(|b| b.eq_ignore_ascii_case(fragment))
            {
                found |= sets;
            }
        }
    }
    // Readability's negative pattern also holds `hid` as a word of its own.
    if value
        .split(' ')
        .any(|word| word.eq_ignore_ascii_case("hid"))
    {
        found |= NEGATIVE;
    }
    found
}

/// A word character, as a regular expression's `\b` sees one.
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Does the value name a share bar: `share` or `sharedaddy` standing as a
/// word, or between underscores (`post_share_bar`)?
pub fn names_share(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("share").map(|i| from + i) {
        from = at + 1;
        let before = lower[..at].chars().next_back();
        if before.is_some_and(|c| is_word(c) && c != '_') {
            continue;
        }
        for word in ["share", "sharedaddy"] {
            if !lower[at..].starts_with(word) {
                continue;
            }
            let after = lower[at + word.len()..].chars().next();
            if after.is_none_or(|c| !is_word(c) || c == '_') {
                return true;
            }
        }
    }
    false
}

/// The hosts whose embeds are videos an article keeps.
const VIDEO_HOSTS: [&str; 8] = [
    "dailymotion.com",
    "youtube.com",
    "youtube-nocookie.com",
    "player.vimeo.com",
    "v.qq.com",
    "archive.org",
    "upload.wikimedia.org",
    "player.twitch.tv",
];

/// Is the source (`src` or `data`) a video, that is `//` then one of the
/// video hosts, after an optional `www.`?
pub fn is_video_source(src: &str) -> bool {
    let lower = src.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("//").map(|i| from + i) {
        from = at + 1;
        let rest = &lower[at + 2..];
        let rest = rest.strip_prefix("www.").unwrap_or(rest);
        if VIDEO_HOSTS.iter().any(|host| rest.starts_with(host)) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_are_found_anywhere_in_either_case() {
        assert_eq!(sets("comments") & UNLIKELY, UNLIKELY);
        assert_eq!(
            sets("Post-Comments") & (UNLIKELY | POSITIVE),
            UNLIKELY | POSITIVE
        );
        assert_eq!(sets("comment-content") & MAYBE, MAYBE);
        assert_eq!(sets("entry-content"), MAYBE | POSITIVE);
        assert_eq!(sets("author-box") & BOXES, BOXES);
        assert_eq!(sets("responsesWrapper") & BOXES, BOXES);
        assert_eq!(sets("responsive-image") & BOXES, 0);
        assert_eq!(sets("col-lg-12 modal fade") & BOXES, BOXES);
        assert_eq!(sets("post-author"), POSITIVE | BYLINE);
        assert_eq!(sets("wp-caption-text"), POSITIVE | CAPTION);
        assert_eq!(sets("photo-credit") & CAPTION, CAPTION);
        assert_eq!(sets(""), 0);
        assert_eq!(sets("ÉTÉ"), 0);
    }

    #[test]
    fn hid_counts_only_as_a_word() {
        assert_eq!(sets("hid"), NEGATIVE);
        assert_eq!(sets("x hid y"), NEGATIVE);
        assert_eq!(sets("HID y"), NEGATIVE);
        assert_eq!(sets("hide"), 0);
        assert_eq!(sets("xhid"), 0);
    }

    #[test]
    fn share_bars_are_named_by_the_word() {
        assert!(names_share("share"));
        assert!(names_share("share-bar"));
        assert!(names_share("post_share_bar"));
        assert!(names_share("sharedaddy sd-block"));
        assert!(names_share("Social Share"));
        assert!(!names_share("shared-content"));
        assert!(!names_share("timeshare"));
        assert!(!names_share("shareholders"));
    }

    #[test]
    fn videos_are_known_hosts_after_two_slashes() {
        assert!(is_video_source("https://www.youtube.com/embed/x"));
        assert!(is_video_source("//player.vimeo.com/video/1"));
        assert!(is_video_source("HTTPS://YOUTUBE-NOCOOKIE.COM/embed/x"));
        assert!(is_video_source("https://example.com/?u=//v.qq.com/x"));
        assert!(!is_video_source("https://example.com/youtube.com"));
        assert!(!is_video_source("https://ads.example.com/frame"));
    }
}
