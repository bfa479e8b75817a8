//! One `read_file` excerpt: the lines to show read from the file (never
//! more than one cut's worth held), the rest only counted, and the text the
//! model sees with its read-on note.

use std::io::{self, BufRead, BufReader, Read};

use tokio_util::sync::CancellationToken;

use super::{BINARY_SNIFF_BYTES, MAX_BYTES, MAX_LINES, ReadFileError};

/// The read buffer; also how often a long read looks at its cancel token.
pub(super) const READ_BUFFER_BYTES: usize = 64 * 1024;

/// What stopped the excerpt before the end of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cut {
    /// Nothing: the excerpt reaches the end of the file.
    None,
    /// The caller's `limit`.
    Limit,
    /// [`MAX_LINES`].
    Lines,
    /// [`MAX_BYTES`], between lines.
    Bytes,
    /// The first line alone is longer than [`MAX_BYTES`] (from where the
    /// excerpt starts in it); a piece of it is shown.
    LongLine {
        /// The whole line's length in bytes.
        len: u64,
    },
}

/// The part of a file one call shows.
#[derive(Debug, PartialEq)]
pub(super) struct Excerpt {
    pub(super) text: String,
    /// 1-based number of the first line shown (0 for an empty file).
    pub(super) first: u64,
    /// The byte of the first line where the text starts (0: its start).
    pub(super) start: u64,
    /// How many lines are shown (a cut long line counts).
    pub(super) shown: u64,
    /// How many lines the file has.
    pub(super) total: u64,
    pub(super) cut: Cut,
}

/// Where an excerpt starts: a 1-based line, and a byte in it (0 for the
/// line's start; more to read on inside a line longer than the cut).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Start {
    pub(super) line: u64,
    pub(super) byte: u64,
}

/// Reads lines `start.line..` of `source` (the first from `start.byte`
/// on), at most `limit` (capped by [`MAX_LINES`]) and [`MAX_BYTES`], then
/// streams the rest only to count its lines. `path` is for error messages.
pub(super) fn read_excerpt<R: Read>(
    mut source: R,
    path: &str,
    start: Start,
    limit: Option<u64>,
    cancel: &CancellationToken,
) -> Result<Excerpt, ReadFileError> {
    let offset = start.line;
    let io_error = |source| ReadFileError::Io {
        path: path.to_string(),
        source,
    };
    let mut head = Vec::new();
    (&mut source)
        .take(BINARY_SNIFF_BYTES)
        .read_to_end(&mut head)
        .map_err(io_error)?;
    if head.contains(&0) {
        return Err(ReadFileError::Binary {
            path: path.to_string(),
        });
    }
    let mut lines = LineReader {
        inner: BufReader::with_capacity(READ_BUFFER_BYTES, io::Cursor::new(head).chain(source)),
        cancel,
        path,
    };
    let mut scratch = Vec::new();
    let mut consumed: u64 = 0;
    while consumed + 1 < offset && lines.next(&mut scratch, 0)?.is_some() {
        consumed += 1;
    }
    let mut skipped = 0u64;
    if start.byte > 0 && consumed + 1 == offset {
        skipped = lines.skip_in_line(start.byte)?;
        if skipped < start.byte {
            let rest = lines.next(&mut scratch, 0)?.unwrap_or(0);
            return Err(ReadFileError::PastLineEnd {
                path: path.to_string(),
                line: offset,
                byte_offset: start.byte,
                len: skipped + rest,
            });
        }
        skipped += lines.skip_continuation_bytes()?;
    }

    let wanted = limit.map_or(MAX_LINES, |l| l.min(MAX_LINES));
    let mut body = Vec::new();
    let mut shown = 0u64;
    let mut cut = Cut::None;
    loop {
        if shown == wanted {
            cut = match limit {
                Some(l) if l <= MAX_LINES => Cut::Limit,
                _ => Cut::Lines,
            };
            break;
        }
        let start = body.len();
        let Some(len) = lines.next(&mut body, MAX_BYTES)? else {
            break;
        };
        consumed += 1;
        if start as u64 + len <= MAX_BYTES as u64 {
            shown += 1;
            continue;
        }
        if shown == 0 {
            shown = 1;
            cut = Cut::LongLine { len: skipped + len };
        } else {
            body.truncate(start);
            cut = Cut::Bytes;
        }
        break;
    }
    while lines.next(&mut scratch, 0)?.is_some() {
        consumed += 1;
    }
    let total = consumed;

    if shown == 0 {
        if offset > 1 {
            return Err(ReadFileError::PastEnd {
                path: path.to_string(),
                offset,
                lines: total,
            });
        }
        return Ok(Excerpt {
            text: String::new(),
            first: 0,
            start: 0,
            shown: 0,
            total,
            cut: Cut::None,
        });
    }
    let text = utf8_text(body, path, offset, cut)?;
    Ok(Excerpt {
        text,
        first: offset,
        start: skipped,
        shown,
        total,
        cut,
    })
}

/// The shown bytes as text. A long line cut at [`MAX_BYTES`] may end in
/// half a character, which is dropped; anything else not UTF-8 (or a NUL
/// past the sniffed start) means the file is not text.
fn utf8_text(body: Vec<u8>, path: &str, first: u64, cut: Cut) -> Result<String, ReadFileError> {
    let not_utf8 = |bytes: &[u8], valid: usize| ReadFileError::NotUtf8 {
        path: path.to_string(),
        line: first + newlines(&bytes[..valid]),
    };
    if body.contains(&0) {
        return Err(ReadFileError::Binary {
            path: path.to_string(),
        });
    }
    match String::from_utf8(body) {
        Ok(text) => Ok(text),
        Err(err) => {
            let bad = err.utf8_error();
            let mut bytes = err.into_bytes();
            if !matches!(cut, Cut::LongLine { .. }) || bad.error_len().is_some() {
                return Err(not_utf8(&bytes, bad.valid_up_to()));
            }
            bytes.truncate(bad.valid_up_to());
            String::from_utf8(bytes).map_err(|e| {
                let valid = e.utf8_error().valid_up_to();
                not_utf8(e.as_bytes(), valid)
            })
        }
    }
}

fn newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

impl Excerpt {
    /// The last line shown (0 for an empty file).
    pub(super) fn last(&self) -> u64 {
        (self.first + self.shown).saturating_sub(1)
    }

    /// Whether the text begins or ends inside a line (a piece of a line
    /// longer than the cut).
    pub(super) fn cut_piece(&self) -> bool {
        self.start > 0 || matches!(self.cut, Cut::LongLine { .. })
    }

    /// Whether one of read_file's own limits (not the caller's) cut it.
    pub(super) fn truncated(&self) -> bool {
        match self.cut {
            Cut::LongLine { .. } => true,
            Cut::Lines | Cut::Bytes => self.last() < self.total,
            Cut::None | Cut::Limit => false,
        }
    }
}

/// The text the model sees: the lines as they are in the file, then, when
/// there is more to read, a blank line and a note that says how.
pub(super) fn render(excerpt: &Excerpt) -> String {
    if excerpt.total == 0 {
        return "[empty file]".to_string();
    }
    let Some(note) = read_on_note(excerpt) else {
        return excerpt.text.clone();
    };
    let mut out = String::with_capacity(excerpt.text.len() + note.len() + 2);
    out.push_str(&excerpt.text);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&note);
    out
}

/// The note after a cut excerpt, or `None` when it reaches the end.
fn read_on_note(excerpt: &Excerpt) -> Option<String> {
    let (first, last, total) = (excerpt.first, excerpt.last(), excerpt.total);
    let read_on = format!("call read_file with offset={} to read on", last + 1);
    if let Cut::LongLine { len } = excerpt.cut {
        let from = excerpt.start;
        let to = from + excerpt.text.len() as u64;
        let next_line = if last < total {
            format!(", or offset={} for the next line", last + 1)
        } else {
            String::new()
        };
        return Some(format!(
            "[truncated: line {first} is {len} bytes long; showed its bytes {from}-{}; call \
             read_file with offset={first} and byte_offset={to} to read on inside it{next_line}]",
            to.saturating_sub(1)
        ));
    }
    if last >= total {
        return None;
    }
    let prefix = if excerpt.cut == Cut::Limit {
        ""
    } else {
        "truncated: "
    };
    let range = if first == last {
        format!("line {first}")
    } else {
        format!("lines {first}-{last}")
    };
    Some(format!("[{prefix}showed {range} of {total}; {read_on}]"))
}

/// Reads a file line by line without ever holding more of a line than the
/// caller keeps, and stops when the run is cancelled.
struct LineReader<'a, R> {
    inner: R,
    cancel: &'a CancellationToken,
    path: &'a str,
}

impl<R: BufRead> LineReader<'_, R> {
    /// Consumes up to `count` bytes of the current line, never its `\n`.
    /// Returns how many were consumed (fewer: the line ended first).
    fn skip_in_line(&mut self, count: u64) -> Result<u64, ReadFileError> {
        let mut skipped = 0u64;
        while skipped < count {
            let buf = self.fill()?;
            if buf.is_empty() {
                break;
            }
            let room = usize::try_from(count - skipped).unwrap_or(usize::MAX);
            let take = buf
                .iter()
                .take(room)
                .position(|&b| b == b'\n')
                .unwrap_or(buf.len().min(room));
            let ended = take < buf.len().min(room);
            self.inner.consume(take);
            skipped += take as u64;
            if ended {
                break;
            }
        }
        Ok(skipped)
    }

    /// Consumes the UTF-8 continuation bytes (at most 3) at the reader's
    /// position, so a piece starting inside a character starts at the next
    /// whole one. Returns how many were consumed.
    fn skip_continuation_bytes(&mut self) -> Result<u64, ReadFileError> {
        let mut skipped = 0u64;
        while skipped < 3 {
            let buf = self.fill()?;
            match buf.first() {
                Some(&b) if (0x80..0xC0).contains(&b) => {
                    self.inner.consume(1);
                    skipped += 1;
                }
                _ => break,
            }
        }
        Ok(skipped)
    }

    /// The reader's buffer, refilled when empty; stops when cancelled.
    fn fill(&mut self) -> Result<&[u8], ReadFileError> {
        loop {
            if self.cancel.is_cancelled() {
                return Err(ReadFileError::cancelled());
            }
            match self.inner.fill_buf() {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(ReadFileError::Io {
                        path: self.path.to_string(),
                        source,
                    });
                }
            }
        }
        self.inner.fill_buf().map_err(|source| ReadFileError::Io {
            path: self.path.to_string(),
            source,
        })
    }

    /// Consumes the next line (with its `\n`), appending its bytes to `out`
    /// only while `out` is shorter than `keep`. Returns the line's full
    /// length, or `None` at the end of the file.
    fn next(&mut self, out: &mut Vec<u8>, keep: usize) -> Result<Option<u64>, ReadFileError> {
        let mut len = 0u64;
        loop {
            if self.cancel.is_cancelled() {
                return Err(ReadFileError::cancelled());
            }
            let buf = match self.inner.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(ReadFileError::Io {
                        path: self.path.to_string(),
                        source,
                    });
                }
            };
            if buf.is_empty() {
                return Ok((len > 0).then_some(len));
            }
            let (take, ends) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            let room = keep.saturating_sub(out.len()).min(take);
            out.extend_from_slice(&buf[..room]);
            self.inner.consume(take);
            len += take as u64;
            if ends {
                return Ok(Some(len));
            }
        }
    }
}

/// The excerpt reader on streams no file system could give.
#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly
mod tests {
    use super::*;
    use crate::Interrupted;

    const LINE_ONE: Start = Start { line: 1, byte: 0 };

    #[test]
    fn an_endless_stream_stops_when_cancelled() {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            trigger.cancel();
        });
        let err = read_excerpt(io::repeat(b'x'), "endless", LINE_ONE, None, &cancel).unwrap_err();
        canceller.join().unwrap();
        assert!(
            matches!(
                err,
                ReadFileError::Interrupted(Interrupted::Cancelled { tool: "read_file" })
            ),
            "{err:?}"
        );
    }

    #[test]
    fn a_huge_single_line_keeps_only_the_cut() {
        let source = io::repeat(b'y').take(20 * 1024 * 1024);
        let excerpt =
            read_excerpt(source, "huge", LINE_ONE, None, &CancellationToken::new()).unwrap();
        assert_eq!(excerpt.text.len(), MAX_BYTES);
        assert!(excerpt.text.capacity() < 2 * MAX_BYTES + READ_BUFFER_BYTES);
        assert_eq!(excerpt.total, 1);
        assert_eq!(
            excerpt.cut,
            Cut::LongLine {
                len: 20 * 1024 * 1024
            }
        );
    }

    #[test]
    fn crlf_lines_are_kept_as_they_are() {
        let excerpt = read_excerpt(
            io::Cursor::new("a\r\nb\r\n"),
            "crlf",
            LINE_ONE,
            None,
            &CancellationToken::new(),
        )
        .unwrap();
        assert_eq!(render(&excerpt), "a\r\nb\r\n");
        assert_eq!(excerpt.total, 2);
    }
}
