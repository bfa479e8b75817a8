//! The two ends of a stream too long to keep: its first bytes (where a
//! compiler's first error is) and its last (where a test run's summary
//! is), each at most a cap, and the count of everything that went by, so
//! a note can say how much was dropped between them. Nothing but the two
//! ends is ever held.

/// The first and last bytes of a stream, and how much went by.
#[derive(Debug, Default)]
pub struct Tail {
    keep: usize,
    /// The stream's first bytes, at most `head_keep`.
    head: Vec<u8>,
    head_keep: usize,
    kept: Vec<u8>,
    total_bytes: u64,
    newlines: u64,
    last_byte: Option<u8>,
}

/// The stream cut to whole lines: its first lines, its last, and what was
/// dropped between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// The first lines kept (empty when nothing was dropped, or no head
    /// was asked for).
    pub head: String,
    /// Lines in `head`.
    pub head_lines: u64,
    /// The last lines kept, or the whole stream (UTF-8, invalid bytes
    /// replaced).
    pub text: String,
    /// Bytes dropped between the head and the text.
    pub dropped_bytes: u64,
    /// Lines dropped between the head and the text.
    pub dropped_lines: u64,
    /// Every byte that went by.
    pub total_bytes: u64,
    /// Every line that went by (a last line without a newline counts).
    pub total_lines: u64,
}

impl Tail {
    /// A tail that keeps at most `keep` bytes.
    pub fn new(keep: usize) -> Tail {
        Tail {
            keep,
            ..Tail::default()
        }
    }

    /// A tail that also keeps the stream's first `head` bytes.
    pub fn with_head(keep: usize, head: usize) -> Tail {
        Tail {
            keep,
            head_keep: head,
            ..Tail::default()
        }
    }

    /// Takes more of the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let room = self.head_keep.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
        self.total_bytes += u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        self.newlines += u64::try_from(bytes.iter().filter(|b| **b == b'\n').count()).unwrap_or(0);
        self.last_byte = bytes.last().copied();
        let start = bytes.len().saturating_sub(self.keep);
        self.kept.extend_from_slice(&bytes[start..]);
        // Compacted at twice the cap: each byte is moved at most once.
        if self.kept.len() > self.keep.saturating_mul(2).max(1) {
            let excess = self.kept.len() - self.keep;
            self.kept.drain(..excess);
        }
    }

    /// The first whole lines within `head_bytes` and `head_lines` and the
    /// last within the rest of `max_bytes` and `max_lines`; the whole
    /// stream when it fits.
    pub fn cut_ends(
        &self,
        (max_bytes, max_lines): (usize, usize),
        (head_bytes, head_lines): (usize, usize),
    ) -> Cut {
        let whole = self.cut(max_bytes, max_lines);
        if whole.dropped_bytes == 0 || head_bytes == 0 || head_lines == 0 {
            return whole;
        }
        let mut head = &self.head[..self.head.len().min(head_bytes)];
        // Whole lines only, at most `head_lines`.
        let ends: Vec<usize> = head
            .iter()
            .enumerate()
            .filter(|(_, byte)| **byte == b'\n')
            .map(|(at, _)| at + 1)
            .take(head_lines)
            .collect();
        head = &head[..ends.last().copied().unwrap_or(0)];
        let head_count = u64::try_from(ends.len()).unwrap_or(0);
        let head_len = u64::try_from(head.len()).unwrap_or(0);
        let mut tail = self.cut(
            max_bytes.saturating_sub(head.len()),
            max_lines.saturating_sub(ends.len()),
        );
        // The tail never reaches back into the head. Counted in the
        // stream's bytes: the text may be longer (an invalid byte becomes
        // a three-byte U+FFFD).
        let tail_start = tail.dropped_bytes;
        if tail_start < head_len {
            return whole;
        }
        tail.head = String::from_utf8_lossy(head).into_owned();
        tail.head_lines = head_count;
        tail.dropped_bytes -= head_len;
        tail.dropped_lines = tail.dropped_lines.saturating_sub(head_count);
        tail
    }

    /// The last whole lines within `max_bytes` and `max_lines`.
    pub fn cut(&self, max_bytes: usize, max_lines: usize) -> Cut {
        let total_lines = self.newlines + u64::from(self.last_byte.is_some_and(|b| b != b'\n'));
        let mut start = self.kept.len().saturating_sub(max_bytes.min(self.keep));
        let dropped_some = u64::try_from(start).unwrap_or(0) + self.dropped_before() > 0;
        if dropped_some
            && let Some(newline) = self.kept[start..].iter().position(|b| *b == b'\n')
            && start + newline + 1 < self.kept.len()
        {
            // Start at a line's beginning.
            start += newline + 1;
        }
        let mut kept = &self.kept[start..];
        let lines_kept = |bytes: &[u8]| {
            u64::try_from(bytes.iter().filter(|b| **b == b'\n').count()).unwrap_or(0)
                + u64::from(bytes.last().is_some_and(|b| *b != b'\n'))
        };
        let max_lines = u64::try_from(max_lines).unwrap_or(u64::MAX);
        // Past `max_lines`: the first lines dropped, found in one pass (a
        // count per dropped line made 50 kB of empty lines cost seconds).
        let excess = lines_kept(kept).saturating_sub(max_lines);
        if excess > 0 {
            let after = kept
                .iter()
                .enumerate()
                .filter(|(_, byte)| **byte == b'\n')
                .nth(usize::try_from(excess - 1).unwrap_or(usize::MAX))
                .map(|(at, _)| at + 1)
                // Fewer newlines (a cap of 0 lines): the unended last line stays.
                .unwrap_or_else(|| {
                    kept.iter()
                        .rposition(|b| *b == b'\n')
                        .map_or(0, |at| at + 1)
                });
            kept = &kept[after..];
        }
        let kept_bytes = u64::try_from(kept.len()).unwrap_or(0);
        let kept_lines = lines_kept(kept);
        Cut {
            head: String::new(),
            head_lines: 0,
            text: String::from_utf8_lossy(kept).into_owned(),
            dropped_bytes: self.total_bytes - kept_bytes,
            dropped_lines: total_lines.saturating_sub(kept_lines),
            total_bytes: self.total_bytes,
            total_lines,
        }
    }

    fn dropped_before(&self) -> u64 {
        self.total_bytes - u64::try_from(self.kept.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_never_wraps_the_counts() {
        // Every invalid byte widens to three in the text; the counts stay
        // the stream's (the fuzz target shell_args found the wrap).
        let stream: Vec<u8> = b"\xff\xfe\xff\xfe\n".repeat(20);
        for keep in [8, 16, 40, 60, 90] {
            for head in [0, 4, 12, 30] {
                let mut tail = Tail::with_head(keep, head);
                tail.push(&stream);
                for (max_bytes, max_lines, head_lines) in
                    [(keep, 5, 2), (keep / 2, 100, 1), (keep, 1, 0)]
                {
                    let cut = tail.cut_ends((max_bytes, max_lines), (head, head_lines));
                    assert!(
                        cut.dropped_bytes <= cut.total_bytes,
                        "{keep} {head}: {cut:?}"
                    );
                    assert!(
                        cut.dropped_lines <= cut.total_lines,
                        "{keep} {head}: {cut:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn many_empty_lines_are_cut_in_linear_time() {
        let mut tail = Tail::with_head(50 * 1024, 10 * 1024);
        tail.push(&[b'\n'; 200_000]);
        let started = std::time::Instant::now();
        let cut = tail.cut_ends((50 * 1024, 2000), (10 * 1024, 200));
        assert!(
            started.elapsed() < std::time::Duration::from_millis(500),
            "{:?}",
            started.elapsed()
        );
        assert_eq!((cut.head_lines, cut.text.len()), (200, 1800));
        assert_eq!(cut.dropped_lines, 200_000 - 2000);
    }

    #[test]
    fn a_short_stream_is_kept_whole() {
        let mut tail = Tail::new(100);
        tail.push(b"one\ntwo");
        let cut = tail.cut(100, 10);
        assert_eq!(cut.text, "one\ntwo");
        assert_eq!(
            (cut.dropped_bytes, cut.dropped_lines, cut.total_lines),
            (0, 0, 2)
        );
    }

    #[test]
    fn a_long_stream_keeps_its_last_whole_lines_and_counts_the_rest() {
        let mut tail = Tail::new(20);
        for i in 0..1000 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        let cut = tail.cut(20, 1000);
        assert_eq!(cut.text, "line 998\nline 999\n");
        assert_eq!(cut.dropped_lines, 998);
        assert_eq!(cut.total_bytes, cut.dropped_bytes + 18);
        let by_lines = tail.cut(20, 1);
        assert_eq!(by_lines.text, "line 999\n");
        assert_eq!(by_lines.dropped_lines, 999);
    }

    #[test]
    fn a_long_stream_keeps_its_first_lines_too_and_counts_the_middle() {
        let mut tail = Tail::with_head(30, 20);
        tail.push(b"error: first\n");
        for i in 0..1000 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        // 19 bytes hold "error: first\n" and part of "line 0\n": whole
        // lines only.
        let cut = tail.cut_ends((40, 100), (19, 5));
        assert_eq!(cut.head, "error: first\n");
        assert_eq!(cut.head_lines, 1);
        assert_eq!(cut.text, "line 998\nline 999\n");
        assert_eq!(cut.dropped_lines, 998);
        assert_eq!(
            cut.total_bytes,
            cut.dropped_bytes + 13 + u64::try_from(cut.text.len()).unwrap()
        );
        // A stream that fits is whole, with no head apart.
        let mut short = Tail::with_head(100, 20);
        short.push(b"a\nb\n");
        let cut = short.cut_ends((100, 10), (20, 5));
        assert_eq!((cut.head.as_str(), cut.text.as_str()), ("", "a\nb\n"));
    }
}
