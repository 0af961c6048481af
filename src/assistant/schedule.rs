//! The order in which one reply's tool calls run: consecutive read-only
//! calls together, every other call alone, after everything before it has
//! ended and before anything after it starts. A reply "write a file, then
//! read it" therefore always reads what was written, while a burst of reads
//! and searches still runs at once. Pure.

use std::ops::Range;

/// The calls of one reply in groups, in the model's order: each range runs
/// at once, and a range starts only when the one before it has ended.
/// `read_only[i]` says whether call `i` only reads.
pub fn batches(read_only: &[bool]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for (i, &reads) in read_only.iter().enumerate() {
        match out.last_mut() {
            // A read joins the reads right before it.
            Some(last) if reads && read_only[last.start] => last.end = i + 1,
            _ => out.push(i..i + 1),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The batches of calls written as `r` (read-only) and `w` (any other),
    /// as (start, end) pairs.
    fn of(pattern: &str) -> Vec<(usize, usize)> {
        let read_only: Vec<bool> = pattern.chars().map(|c| c == 'r').collect();
        batches(&read_only)
            .into_iter()
            .map(|r| (r.start, r.end))
            .collect()
    }

    #[test]
    fn reads_together_everything_else_alone_in_order() {
        assert_eq!(of(""), Vec::<(usize, usize)>::new());
        assert_eq!(of("r"), [(0, 1)]);
        assert_eq!(of("w"), [(0, 1)]);
        assert_eq!(of("rrr"), [(0, 3)]);
        assert_eq!(of("www"), [(0, 1), (1, 2), (2, 3)]);
        assert_eq!(of("wr"), [(0, 1), (1, 2)]);
        assert_eq!(of("rrwrrw"), [(0, 2), (2, 3), (3, 5), (5, 6)]);
        assert_eq!(of("rwwr"), [(0, 1), (1, 2), (2, 3), (3, 4)]);
    }

    #[test]
    fn every_call_once_in_order() {
        let read_only = [true, false, true, true, false, false, true];
        let flat: Vec<usize> = batches(&read_only).into_iter().flatten().collect();
        assert_eq!(flat, (0..read_only.len()).collect::<Vec<_>>());
    }
}
