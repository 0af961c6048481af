//! POSIX bracket expressions (`[abc]`, `[!a-z]`, `[^[:alpha:]_]`, `[]x]`),
//! translated into the class syntax of the `regex` crate. Globs and POSIX ERE
//! share them (decision 6), with two differences the `Flavor` carries: a glob
//! negates with `!` (or `^`) and lets `\` quote the next character, while in
//! ERE only `^` negates and `\` is an ordinary member, as POSIX says.

/// Which language the bracket expression belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Glob,
    Ere,
}

/// The POSIX character classes; the `regex` crate knows each by the same name.
const CLASSES: &[&str] = &[
    "alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space",
    "upper", "xdigit",
];

/// Why a bracket expression is malformed, in words a model can act on.
pub type Reason = String;

/// One member before it is written out: a character (possibly the start of
/// a range) or a named class.
enum Member {
    Char(char),
    Class(String),
}

/// Translates the bracket expression whose `[` is at `chars[open]`.
/// Returns the `regex` class and the index just after the closing `]`.
pub fn translate(chars: &[char], open: usize, flavor: Flavor) -> Result<(String, usize), Reason> {
    let unclosed = || match flavor {
        Flavor::Glob => "unclosed '['".to_string(),
        Flavor::Ere => "Unmatched [, [^, [:, [., or [=".to_string(),
    };
    let mut i = open + 1;
    let mut out = String::from("[");
    match chars.get(i) {
        Some('^') => {
            out.push('^');
            i += 1;
        }
        Some('!') if flavor == Flavor::Glob => {
            out.push('^');
            i += 1;
        }
        _ => {}
    }
    let first = i;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(unclosed());
        };
        if c == ']' && i > first {
            out.push(']');
            return Ok((out, i + 1));
        }
        let (first_member, next) = member(chars, i, flavor).ok_or_else(unclosed)??;
        i = next;
        let low = match first_member {
            Member::Char(c) => c,
            Member::Class(name) => {
                out.push_str(&format!("[:{name}:]"));
                continue;
            }
        };
        // `a-z` is a range unless the `-` is the last member (`[a-]`).
        let is_range = chars.get(i) == Some(&'-') && chars.get(i + 1).is_some_and(|&c| c != ']');
        if !is_range {
            push_literal(&mut out, low);
            continue;
        }
        let (high, next) = member(chars, i + 1, flavor).ok_or_else(unclosed)??;
        let Member::Char(high) = high else {
            return Err(format!("a range cannot end in a class: '{low}-'"));
        };
        if high < low {
            return Err(format!("range '{low}-{high}' is reversed"));
        }
        push_literal(&mut out, low);
        out.push('-');
        push_literal(&mut out, high);
        i = next;
    }
}

/// Reads one member at `chars[i]`. `None` when the expression ends inside
/// it (unclosed); `Some(Err)` when it is malformed.
fn member(chars: &[char], i: usize, flavor: Flavor) -> Option<Result<(Member, usize), Reason>> {
    let c = *chars.get(i)?;
    if c == '\\' && flavor == Flavor::Glob {
        let quoted = *chars.get(i + 1)?;
        return Some(Ok((Member::Char(quoted), i + 2)));
    }
    if c != '[' {
        return Some(Ok((Member::Char(c), i + 1)));
    }
    let kind = match chars.get(i + 1) {
        Some(&k @ (':' | '.' | '=')) => k,
        _ => return Some(Ok((Member::Char('['), i + 1))),
    };
    // `[:name:]`, `[.c.]` or `[=c=]`: find the matching `k]`.
    let body_start = i + 2;
    let end = (body_start..chars.len().saturating_sub(1))
        .find(|&j| chars[j] == kind && chars[j + 1] == ']')?;
    let body: String = chars[body_start..end].iter().collect();
    let next = end + 2;
    Some(match kind {
        ':' if CLASSES.contains(&body.as_str()) => Ok((Member::Class(body), next)),
        ':' => Err(format!(
            "unknown character class '[:{body}:]' (known: {})",
            CLASSES.join(", ")
        )),
        _ => {
            // A collating symbol or equivalence class of one character is
            // that character; multi-character ones need a locale we do not
            // emulate.
            let mut it = body.chars();
            match (it.next(), it.next()) {
                (Some(one), None) => Ok((Member::Char(one), next)),
                _ => Err(format!(
                    "unsupported collating element '[{kind}{body}{kind}]': only single characters"
                )),
            }
        }
    })
}

/// Appends `c` as a literal class member, escaped where the `regex` crate's
/// class syntax would read it as an operator (`]`, `\`, `-`, `^`, `&&`, ...).
fn push_literal(out: &mut String, c: char) {
    let mut buf = [0u8; 4];
    out.push_str(&regex::escape(c.encode_utf8(&mut buf)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pattern: &str, flavor: Flavor) -> Result<(String, usize), Reason> {
        let chars: Vec<char> = pattern.chars().collect();
        translate(&chars, 0, flavor)
    }

    fn class(pattern: &str, flavor: Flavor) -> String {
        let (class, end) = t(pattern, flavor).unwrap();
        assert_eq!(end, pattern.chars().count(), "{pattern} consumed whole");
        class
    }

    #[test]
    fn sets_ranges_and_negation() {
        assert_eq!(class("[abc]", Flavor::Glob), "[abc]");
        assert_eq!(class("[a-z]", Flavor::Glob), "[a-z]");
        assert_eq!(class("[!a-z]", Flavor::Glob), "[^a-z]");
        assert_eq!(class("[^a-z]", Flavor::Glob), "[^a-z]");
        assert_eq!(class("[^a]", Flavor::Ere), "[^a]");
        assert_eq!(class("[!a]", Flavor::Ere), "[!a]", "'!' is a member in ERE");
    }

    #[test]
    fn leading_and_trailing_specials_are_members() {
        assert_eq!(class("[]a]", Flavor::Ere), r"[\]a]");
        assert_eq!(class("[^]a]", Flavor::Ere), r"[^\]a]");
        assert_eq!(class("[!]]", Flavor::Glob), r"[^\]]");
        assert_eq!(class("[a-]", Flavor::Glob), r"[a\-]");
        assert_eq!(class("[-a]", Flavor::Glob), r"[\-a]");
        assert_eq!(class("[&&~~]", Flavor::Ere), r"[\&\&\~\~]");
        assert_eq!(class("[[]", Flavor::Ere), r"[\[]");
    }

    #[test]
    fn backslash_quotes_in_globs_but_is_a_member_in_ere() {
        assert_eq!(class(r"[\]]", Flavor::Glob), r"[\]]");
        assert_eq!(class(r"[\n]", Flavor::Ere), r"[\\n]");
        // In ERE the first `]` after `\` closes the expression.
        assert_eq!(t(r"[\]]", Flavor::Ere).unwrap(), (r"[\\]".to_string(), 3));
    }

    #[test]
    fn classes_collating_symbols_and_equivalence_classes() {
        assert_eq!(class("[[:alpha:]_]", Flavor::Ere), "[[:alpha:]_]");
        assert_eq!(
            class("[^[:space:][:digit:]]", Flavor::Ere),
            "[^[:space:][:digit:]]"
        );
        assert_eq!(class("[[.-.]a]", Flavor::Ere), r"[\-a]");
        assert_eq!(class("[[=e=]]", Flavor::Glob), "[e]");
        assert_eq!(class("[[.a.]-c]", Flavor::Glob), "[a-c]");
    }

    #[test]
    fn the_end_index_points_past_the_bracket() {
        assert_eq!(t("[ab]cd", Flavor::Glob).unwrap(), ("[ab]".to_string(), 4));
        let chars: Vec<char> = "x[ab]".chars().collect();
        assert_eq!(translate(&chars, 1, Flavor::Ere).unwrap().1, 5);
    }

    #[test]
    fn malformed_expressions_say_what_is_wrong() {
        assert_eq!(t("[abc", Flavor::Glob).unwrap_err(), "unclosed '['");
        assert_eq!(t("[", Flavor::Glob).unwrap_err(), "unclosed '['");
        assert_eq!(t("[]", Flavor::Glob).unwrap_err(), "unclosed '['");
        assert_eq!(t("[a\\", Flavor::Glob).unwrap_err(), "unclosed '['");
        assert_eq!(
            t("[abc", Flavor::Ere).unwrap_err(),
            "Unmatched [, [^, [:, [., or [="
        );
        assert_eq!(
            t("[z-a]", Flavor::Ere).unwrap_err(),
            "range 'z-a' is reversed"
        );
        assert!(t("[[:foo:]]", Flavor::Ere)
            .unwrap_err()
            .starts_with("unknown character class '[:foo:]'"));
        assert!(t("[[.ch.]]", Flavor::Ere)
            .unwrap_err()
            .starts_with("unsupported collating element"));
        assert_eq!(t("[[:alpha:", Flavor::Glob).unwrap_err(), "unclosed '['");
        assert!(t("[a-[:digit:]]", Flavor::Ere).is_err());
    }

    #[test]
    fn translations_compile_and_match_as_posix_says() {
        let cases = [
            ("[]a]", "]", true),
            ("[]a]", "b", false),
            ("[^]a]", "b", true),
            (r"[\n]", "\\", true),
            (r"[\n]", "n", true),
            (r"[\n]", "\n", false),
            ("[[:upper:]]", "Q", true),
            ("[[:upper:]]", "q", false),
            ("[a-]", "-", true),
            ("[é-ë]", "ê", true),
        ];
        for (pattern, hay, expected) in cases {
            let re = regex::Regex::new(&format!("^{}$", class(pattern, Flavor::Ere))).unwrap();
            assert_eq!(re.is_match(hay), expected, "{pattern} on {hay:?}");
        }
    }
}
