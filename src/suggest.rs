//! "Did you mean ...?": the nearest known name to a mistyped one, for every
//! place that refuses a name (a tool, a subcommand, an option, a slash
//! command). Plain edit distance over a handful of candidates; a name is
//! suggested only when it is close enough that the typo is plausible, so a
//! word that is simply unknown gets no misleading guess.

/// The candidate closest to `typed`, when it is a plausible typo of it: at
/// most one edit for short names, two for longer ones (case ignored, `-`
/// and `_` alike, so `file-read` finds `file_read`). Ties go to the first
/// candidate, so callers list their names in the order they prefer.
pub fn nearest<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let norm = |s: &str| -> Vec<char> {
        s.chars()
            .map(|c| {
                if c == '_' {
                    '-'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect()
    };
    let typed_n = norm(typed);
    let limit = if typed_n.len() <= 4 { 1 } else { 2 };
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        if candidate == typed {
            // Not a typo: the name exists, and failed for another reason.
            continue;
        }
        let d = distance(&typed_n, &norm(candidate));
        if d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// " Did you mean 'X'?" or nothing, ready to append to an error message.
pub fn did_you_mean<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    nearest(typed, candidates)
        .map(|c| format!(" Did you mean '{c}'?"))
        .unwrap_or_default()
}

/// Optimal string alignment distance: insertions, deletions, substitutions
/// and swaps of two neighbours (the commonest typo) each cost one.
fn distance(a: &[char], b: &[char]) -> usize {
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plausible_typos_only() {
        let names = ["tools", "schema", "call"];
        assert_eq!(nearest("toosl", names), Some("tools"));
        assert_eq!(nearest("tool", names), Some("tools"));
        assert_eq!(nearest("cal", names), Some("call"));
        assert_eq!(nearest("shcema", names), Some("schema"));
        assert_eq!(nearest("frobnicate", names), None);
        assert_eq!(nearest("xy", names), None);
        let tools = ["file-read", "file-write", "grep"];
        assert_eq!(nearest("file_raed", tools), Some("file-read"));
        assert_eq!(nearest("FILE-READ", tools), Some("file-read"));
        assert_eq!(nearest("gerp", tools), Some("grep"));
        assert_eq!(did_you_mean("gerp", tools), " Did you mean 'grep'?");
        assert_eq!(did_you_mean("zzzz", tools), "");
    }
}
