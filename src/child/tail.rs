//! The tail of a stream too long to keep: the last bytes, at most a cap,
//! and the count of everything that went by, so a note can say how much
//! was dropped. Nothing but the kept tail is ever held.

/// The last bytes of a stream, and how much went by.
#[derive(Debug, Default)]
pub struct Tail {
    keep: usize,
    kept: Vec<u8>,
    total_bytes: u64,
    newlines: u64,
    last_byte: Option<u8>,
}

/// The tail cut to whole lines: the text, and what was dropped before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// The kept text (UTF-8, invalid bytes replaced).
    pub text: String,
    /// Bytes dropped from the start.
    pub dropped_bytes: u64,
    /// Lines dropped from the start.
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

    /// Takes more of the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
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
        while lines_kept(kept) > max_lines {
            match kept.iter().position(|b| *b == b'\n') {
                Some(newline) => kept = &kept[newline + 1..],
                None => break,
            }
        }
        let kept_bytes = u64::try_from(kept.len()).unwrap_or(0);
        let kept_lines = lines_kept(kept);
        Cut {
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
}
