//! The SSE line parser (the WHATWG `text/event-stream` grammar): bytes in,
//! whole events out, no I/O. It checks every chunk before a byte of it is
//! parsed — the cap on the whole body, UTF-8 (an invalid byte fails at
//! once, not at the end of the body), the cap on one event — then parses
//! the lines the chunk completes; an unfinished line waits for the next
//! chunk. Every leading byte order mark is skipped (not only the one the
//! grammar allows). CR, LF and CRLF all end a line, also when a CRLF is
//! cut between two chunks. The events never depend on where the chunks
//! were cut; the first error ends the body.

use std::borrow::Cow;

use super::{SseError, SseEvent};

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The parser state of one body.
#[derive(Debug)]
pub(super) struct Parser {
    /// The cap on one event's line bytes.
    limit: usize,
    /// The cap on the whole body.
    total_limit: u64,
    /// Bytes of the body so far.
    total: u64,
    /// Bytes of the event being received (line content, not terminators).
    event_len: usize,
    /// Whether the current line holds anything yet (for `event_len`).
    line_has_content: bool,
    /// The previous byte was a CR, so an LF now belongs to the same
    /// terminator (for `event_len`).
    count_after_cr: bool,
    /// The start of a UTF-8 character cut off at the end of the last chunk.
    carry: Vec<u8>,
    /// The start of the body is past (no byte order mark can follow).
    past_head: bool,
    /// The first bytes, while they may still be a byte order mark.
    head: Vec<u8>,
    /// The unfinished last line, held back until its terminator arrives.
    partial: Vec<u8>,
    /// The last line parsed ended with a CR: an LF right after it is the
    /// rest of that terminator, not an empty line.
    after_cr: bool,
    /// The `event:` name of the event being built; empty for `message`.
    name: String,
    /// The `data:` lines of the event being built, each followed by LF.
    data: String,
}

impl Parser {
    /// A parser whose events hold at most `limit` line bytes, reading a
    /// body of at most `total_limit` bytes.
    pub(super) fn new(limit: usize, total_limit: u64) -> Self {
        Parser {
            limit,
            total_limit,
            total: 0,
            event_len: 0,
            line_has_content: false,
            count_after_cr: false,
            carry: Vec::new(),
            past_head: false,
            head: Vec::new(),
            partial: Vec::new(),
            after_cr: false,
            name: String::new(),
            data: String::new(),
        }
    }

    /// Checks one chunk and appends the events it completes to `out`. At
    /// the end of the body an unfinished line or event stays behind: it was
    /// cut off.
    pub(super) fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        self.total = self.total.saturating_add(chunk.len() as u64);
        if self.total > self.total_limit {
            return Err(SseError::ResponseTooLarge {
                limit: self.total_limit,
            });
        }
        let chunk = if self.past_head {
            Cow::Borrowed(chunk)
        } else {
            Cow::Owned(self.strip_bom(chunk))
        };
        self.check_utf8(&chunk)?;
        self.count(&chunk)?;
        let Some(end) = chunk.iter().rposition(|&b| b == b'\n' || b == b'\r') else {
            self.partial.extend_from_slice(&chunk);
            return Ok(());
        };
        if self.partial.is_empty() {
            self.lines(&chunk[..=end], out)?;
        } else {
            let mut lines = std::mem::take(&mut self.partial);
            lines.extend_from_slice(&chunk[..=end]);
            self.lines(&lines, out)?;
        }
        self.partial.extend_from_slice(&chunk[end + 1..]);
        Ok(())
    }

    /// Parses whole lines (`bytes` ends with a terminator).
    fn lines(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut rest = bytes;
        while let Some(at) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let terminator = rest[at];
            if at == 0 && terminator == b'\n' && self.after_cr {
                self.after_cr = false;
            } else {
                self.after_cr = terminator == b'\r';
                self.line(&rest[..at], out)?;
            }
            rest = &rest[at + 1..];
        }
        Ok(())
    }

    /// One line: a blank line ends the event, `:` starts a comment, else a
    /// `field: value` (one space after the colon is dropped). Only `event`
    /// and `data` matter here; `id`, `retry` and unknown fields are skipped.
    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return Ok(()),
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                self.data.push_str(text(value)?);
                self.data.push('\n');
            }
            b"event" => {
                self.name.clear();
                self.name.push_str(text(value)?);
            }
            _ => {}
        }
        Ok(())
    }

    /// The end of an event: dispatched when it has data, dropped (with its
    /// name) when it has none.
    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.data.is_empty() {
            self.name.clear();
            return;
        }
        self.data.pop();
        let event = if self.name.is_empty() {
            "message".to_owned()
        } else {
            std::mem::take(&mut self.name)
        };
        out.push(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
        });
    }

    /// Every leading byte order mark goes, not only the first the SSE
    /// grammar allows.
    fn strip_bom(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.head.extend_from_slice(chunk);
        while self.head.starts_with(BOM) {
            self.head.drain(..BOM.len());
        }
        if BOM.starts_with(&self.head) {
            // Empty, or a mark cut by the end of the chunk: wait for more.
            return Vec::new();
        }
        self.past_head = true;
        std::mem::take(&mut self.head)
    }

    fn check_utf8(&mut self, chunk: &[u8]) -> Result<(), SseError> {
        let joined;
        let bytes = if self.carry.is_empty() {
            chunk
        } else {
            let mut buffer = std::mem::take(&mut self.carry);
            buffer.extend_from_slice(chunk);
            joined = buffer;
            &joined
        };
        match std::str::from_utf8(bytes) {
            Ok(_) => Ok(()),
            // A character cut at the end of the chunk: keep its start.
            Err(err) if err.error_len().is_none() => {
                self.carry = bytes[err.valid_up_to()..].to_vec();
                Ok(())
            }
            Err(_) => Err(SseError::InvalidUtf8),
        }
    }

    /// Counts line bytes since the last blank line (the end of an event).
    fn count(&mut self, chunk: &[u8]) -> Result<(), SseError> {
        for &byte in chunk {
            match byte {
                b'\n' if self.count_after_cr => self.count_after_cr = false,
                b'\r' | b'\n' => {
                    if !self.line_has_content {
                        self.event_len = 0;
                    }
                    self.line_has_content = false;
                    self.count_after_cr = byte == b'\r';
                }
                _ => {
                    self.count_after_cr = false;
                    self.line_has_content = true;
                    self.event_len += 1;
                    if self.event_len > self.limit {
                        return Err(SseError::EventTooLarge { limit: self.limit });
                    }
                }
            }
        }
        Ok(())
    }
}

/// A field value as text. Whole lines of a checked body are UTF-8 (a
/// terminator never sits inside a character), so this never fails in
/// practice; it is an error rather than a panic all the same.
fn text(value: &[u8]) -> Result<&str, SseError> {
    std::str::from_utf8(value).map_err(|_| SseError::InvalidUtf8)
}
