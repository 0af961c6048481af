//! Keeping the head and the tail of a stream of bytes whose size is not known
//! in advance: the first `head_cap` bytes, a ring of the last `tail_cap`, and
//! the count of everything. The host keeps each tool output this way under its
//! cap, and the bash tool keeps the command's output this way under the cap
//! the host told it, so memory stays bounded by the caps, never by the output.
//! One implementation, so both cut the same way.

/// The first and last bytes of a stream, and how many there were.
#[derive(Debug, Clone)]
pub struct HeadTail {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    ring: Vec<u8>,
    /// Where the ring's oldest byte is once it is full (0 while filling).
    ring_start: usize,
    total: u64,
}

impl HeadTail {
    pub fn new(head_cap: usize, tail_cap: usize) -> Self {
        HeadTail {
            head_cap,
            tail_cap,
            head: Vec::new(),
            ring: Vec::new(),
            ring_start: 0,
            total: 0,
        }
    }

    /// Keeps every byte.
    pub fn unbounded() -> Self {
        HeadTail::new(usize::MAX, 0)
    }

    pub fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        let to_head = self
            .head_cap
            .saturating_sub(self.head.len())
            .min(data.len());
        self.head.extend_from_slice(&data[..to_head]);
        data = &data[to_head..];
        let cap = self.tail_cap;
        if data.is_empty() || cap == 0 {
            return;
        }
        if data.len() >= cap {
            self.ring.clear();
            self.ring.extend_from_slice(&data[data.len() - cap..]);
            self.ring_start = 0;
            return;
        }
        let to_fill = (cap - self.ring.len()).min(data.len());
        self.ring.extend_from_slice(&data[..to_fill]);
        data = &data[to_fill..];
        while !data.is_empty() {
            let n = (cap - self.ring_start).min(data.len());
            self.ring[self.ring_start..self.ring_start + n].copy_from_slice(&data[..n]);
            self.ring_start = (self.ring_start + n) % cap;
            data = &data[n..];
        }
    }

    /// Bytes the stream carried in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes dropped between the head and the tail.
    pub fn omitted(&self) -> u64 {
        self.total - (self.head.len() + self.ring.len()) as u64
    }

    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The kept tail, oldest byte first.
    pub fn tail(&self) -> Vec<u8> {
        let mut tail = self.ring.clone();
        tail.rotate_left(self.ring_start);
        tail
    }

    /// The head and the tail, taken apart without copying the head.
    pub fn into_parts(mut self) -> (Vec<u8>, Vec<u8>) {
        self.ring.rotate_left(self.ring_start);
        (self.head, self.ring)
    }
}

/// The end of the last whole UTF-8 character of `bytes`: a head cut inside
/// a character would show a U+FFFD the file does not have.
pub fn char_end(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=3.min(len) {
        let b = bytes[len - back];
        if b & 0xC0 != 0x80 {
            let need = match b {
                0xF0..=0xF7 => 4,
                0xE0..=0xEF => 3,
                0xC0..=0xDF => 2,
                _ => 1,
            };
            return if need > back { len - back } else { len };
        }
    }
    len
}

/// The start of the first whole UTF-8 character of `bytes` (a tail cut
/// inside one skips its continuation bytes).
pub fn char_start(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|&&b| b & 0xC0 == 0x80)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(head: usize, tail: usize, chunks: &[&[u8]]) -> (Vec<u8>, Vec<u8>, u64, u64) {
        let mut c = HeadTail::new(head, tail);
        for chunk in chunks {
            c.push(chunk);
        }
        let (total, omitted) = (c.total(), c.omitted());
        let (h, t) = c.into_parts();
        (h, t, total, omitted)
    }

    #[test]
    fn keeps_head_and_a_ring_of_the_tail() {
        let (h, t, total, omitted) = parts(4, 3, &[b"abc", b"defgh", b"ij", b"klmnop"]);
        assert_eq!(
            (&h[..], &t[..], total, omitted),
            (&b"abcd"[..], &b"nop"[..], 16, 9)
        );
        // One chunk larger than everything, and a ring that wraps many times.
        let (h, t, ..) = parts(3, 3, &[b"abcdefghijklmnopq"]);
        assert_eq!((&h[..], &t[..]), (&b"abc"[..], &b"opq"[..]));
        let chunks: Vec<&[u8]> = b"0123456789abcdefghij".chunks(1).collect();
        let (h, t, _, omitted) = parts(2, 5, &chunks);
        assert_eq!((&h[..], &t[..], omitted), (&b"01"[..], &b"fghij"[..], 13));
    }

    #[test]
    fn everything_under_the_caps_and_unbounded() {
        let (h, t, total, omitted) = parts(4, 4, &[b"abc", b"defg"]);
        assert_eq!(
            (&h[..], &t[..], total, omitted),
            (&b"abcd"[..], &b"efg"[..], 7, 0)
        );
        let mut all = HeadTail::unbounded();
        all.push(b"abc");
        all.push(&[b'x'; 100_000]);
        assert_eq!((all.head().len(), all.omitted()), (100_003, 0));
        assert!(all.tail().is_empty());
    }

    #[test]
    fn a_zero_tail_keeps_only_the_head() {
        let (h, t, total, omitted) = parts(1, 0, &[b"ab"]);
        assert_eq!(
            (&h[..], &t[..], total, omitted),
            (&b"a"[..], &b""[..], 2, 1)
        );
    }
}
