//! Server-sent events: turns an HTTP response body (a stream of byte
//! chunks) into a stream of SSE events, one `event` name and `data` payload
//! each. A thin wrapper over `eventsource-stream`, which does the framing;
//! this module adds what a client of an untrusted server needs on top: a
//! cap on the size of one event and of the whole response, an idle timeout,
//! a prompt error for bytes that are not UTF-8, and typed errors.
//!
//! It must never buffer without bound, never wait without bound for a
//! server that went silent, never panic on what a server sends, and never
//! go on after an error: the first `Err` is the last item.

use std::borrow::Cow;
use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

use eventsource_stream::{EventStream, EventStreamError};
use futures::stream::{BoxStream, Stream, StreamExt};

/// The default cap on the size of one event (its lines, terminators not
/// counted). Real events are a few hundred bytes; this only stops a broken
/// or hostile server from growing the buffer forever. It is checked before
/// a byte is buffered, so a longer line costs at most this much memory.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The default cap on the bytes of one whole response body. A real reply is
/// a few hundred kilobytes at most (output tokens are capped); this bounds
/// the memory an endless stream can make leash hold before the abort timer
/// fires.
pub const MAX_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;

/// How long a response body may stay silent (no byte at all) before the
/// reply counts as failed. Generous, because a reasoning model may think
/// for minutes before its first token; the run's abort timer is usually
/// shorter and fires first.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// The bounds one response is read within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes one event may hold.
    pub max_event_bytes: usize,
    /// The most bytes the whole body may hold.
    pub max_response_bytes: u64,
    /// The longest silence between two chunks; `None` waits forever.
    pub idle_timeout: Option<Duration>,
}

impl Default for Limits {
    /// The limits every provider response is read within.
    fn default() -> Self {
        Limits {
            max_event_bytes: MAX_EVENT_BYTES,
            max_response_bytes: MAX_RESPONSE_BYTES,
            idle_timeout: Some(IDLE_TIMEOUT),
        }
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name; `message` when the server gave none.
    pub event: String,
    /// The `data:` payload; several `data:` lines are joined with `\n`.
    pub data: String,
}

/// Why an event stream could not be read further.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// The connection failed while the body was being read.
    #[error("the connection failed while reading the response: {0}")]
    Transport(String),
    /// The body holds bytes that are not UTF-8.
    #[error("the response stream is not valid UTF-8")]
    InvalidUtf8,
    /// One event grew past the cap.
    #[error(
        "the response stream holds an event larger than {} (the cap on one event); the server is broken or not an LLM API",
        size(*limit as u64)
    )]
    EventTooLarge {
        /// The cap that was passed.
        limit: usize,
    },
    /// The whole body grew past the cap.
    #[error(
        "the response is larger than {} (the cap on one reply); the server is broken or not an LLM API",
        size(*limit)
    )]
    ResponseTooLarge {
        /// The cap that was passed.
        limit: u64,
    },
    /// No byte arrived for too long.
    #[error("the server sent nothing for {}s; gave up waiting", .after.as_secs())]
    Idle {
        /// The silence that was waited out.
        after: Duration,
    },
    /// The framing could not be parsed.
    #[error("the response stream is not a valid event stream: {0}")]
    Malformed(String),
}

/// A byte count for people: `16 MiB`, or bytes when not a whole MiB.
fn size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// The events of an HTTP response body, read within [`Limits::default`].
/// Dropping the stream drops the response, which closes the connection.
pub fn events(response: reqwest::Response) -> BoxStream<'static, Result<SseEvent, SseError>> {
    with_limits(
        response
            .bytes_stream()
            .map(|chunk| chunk.map_err(|err| super::http::root_cause(&err))),
        Limits::default(),
    )
}

/// The events of any byte stream (the seam the unit tests and benchmarks
/// use), with `max_event_bytes` as the cap on one event and no other limit.
pub fn from_bytes<S, B, E>(
    bytes: S,
    max_event_bytes: usize,
) -> BoxStream<'static, Result<SseEvent, SseError>>
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: Display + Send + 'static,
{
    with_limits(
        bytes,
        Limits {
            max_event_bytes,
            max_response_bytes: u64::MAX,
            idle_timeout: None,
        },
    )
}

/// The events of any byte stream, read within `limits`. With an idle
/// timeout it must be polled inside a tokio runtime.
pub fn with_limits<S, B, E>(
    bytes: S,
    limits: Limits,
) -> BoxStream<'static, Result<SseEvent, SseError>>
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: Display + Send + 'static,
{
    let mut guard = Guard::new(limits.max_event_bytes, limits.max_response_bytes);
    let checked = idle_bounded(bytes, limits.idle_timeout)
        .map(move |chunk| match chunk {
            Ok(chunk) => guard.admit(chunk.as_ref()),
            Err(err) => Err(err),
        })
        .flat_map(|admitted| futures::stream::iter(one_line_each(admitted)));
    let mut inner = Box::pin(EventStream::new(checked));
    Box::pin(async_stream::stream! {
        while let Some(item) = inner.next().await {
            match item {
                Ok(event) => yield Ok(SseEvent { event: event.event, data: event.data }),
                Err(err) => {
                    yield Err(sse_error(err));
                    return;
                }
            }
        }
    })
}

/// The framing library copies the rest of its buffer after every line it
/// takes (`String::split_off`), which is quadratic in the size of one item
/// (a 400 KB loopback read of small events went at ~90 MB/s); so it gets
/// one line per item, each a view into the shared chunk.
fn one_line_each(admitted: Result<Vec<u8>, SseError>) -> Vec<Result<Line, SseError>> {
    let bytes = match admitted {
        Ok(bytes) => Arc::new(bytes),
        Err(err) => return vec![Err(err)],
    };
    let mut items = Vec::new();
    let mut start = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        // A CR directly followed by LF ends one line, not two.
        if byte == b'\n' || (byte == b'\r' && bytes.get(at + 1) != Some(&b'\n')) {
            items.push(Ok(Line {
                bytes: Arc::clone(&bytes),
                start,
                end: at + 1,
            }));
            start = at + 1;
        }
    }
    if start < bytes.len() {
        items.push(Ok(Line {
            end: bytes.len(),
            bytes,
            start,
        }));
    }
    items
}

/// One line of an admitted chunk, shared rather than copied.
struct Line {
    bytes: Arc<Vec<u8>>,
    start: usize,
    end: usize,
}

impl AsRef<[u8]> for Line {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[self.start..self.end]
    }
}

/// The chunks of `bytes`, with transport errors typed, ending in
/// [`SseError::Idle`] when no chunk arrives within `idle`.
fn idle_bounded<S, B, E>(
    bytes: S,
    idle: Option<Duration>,
) -> impl Stream<Item = Result<B, SseError>>
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: Display + Send + 'static,
{
    async_stream::stream! {
        let mut bytes = Box::pin(bytes);
        loop {
            let next = match idle {
                Some(after) => match tokio::time::timeout(after, bytes.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        yield Err(SseError::Idle { after });
                        return;
                    }
                },
                None => bytes.next().await,
            };
            match next {
                Some(Ok(chunk)) => yield Ok(chunk),
                Some(Err(err)) => {
                    yield Err(SseError::Transport(err.to_string()));
                    return;
                }
                None => return,
            }
        }
    }
}

/// Maps the framing library's error onto ours.
fn sse_error(err: EventStreamError<SseError>) -> SseError {
    match err {
        EventStreamError::Transport(err) => err,
        // The guard rejects invalid bytes and passes whole lines only, so
        // this is not expected; mapped all the same.
        EventStreamError::Utf8(_) => SseError::InvalidUtf8,
        EventStreamError::Parser(err) => SseError::Malformed(err.to_string()),
    }
}

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Checks the raw bytes before the framing library sees them. It bounds the
/// size of one event; rejects invalid UTF-8 at once (the library would
/// buffer an invalid byte until the end of the body); removes a leading
/// byte order mark (the library slices it at a byte that is not a
/// character boundary, which panics); and passes on whole lines only (the
/// library re-parses an unfinished line from its start on every chunk,
/// which is quadratic in the length of a line).
#[derive(Debug)]
struct Guard {
    limit: usize,
    /// The cap on the whole body.
    total_limit: u64,
    /// Bytes of the body so far.
    total: u64,
    /// Bytes of the event being received (line content, not terminators).
    event_len: usize,
    /// Whether the current line holds anything yet.
    line_has_content: bool,
    /// The previous byte was a CR, so an LF now belongs to the same terminator.
    after_cr: bool,
    /// The start of a UTF-8 character cut off at the end of the last chunk.
    carry: Vec<u8>,
    /// The start of the body is past (no byte order mark can follow).
    past_head: bool,
    /// The first bytes, while they may still be a byte order mark.
    head: Vec<u8>,
    /// The unfinished last line, held back until its terminator arrives.
    partial: Vec<u8>,
}

impl Guard {
    fn new(limit: usize, total_limit: u64) -> Self {
        Guard {
            limit,
            total_limit,
            total: 0,
            event_len: 0,
            line_has_content: false,
            after_cr: false,
            carry: Vec::new(),
            past_head: false,
            head: Vec::new(),
            partial: Vec::new(),
        }
    }

    /// Checks one chunk and returns the whole lines it completes (without
    /// a leading byte order mark). At the end of the body an unfinished
    /// line stays behind: it could not have completed an event anyway.
    fn admit(&mut self, chunk: &[u8]) -> Result<Vec<u8>, SseError> {
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
            return Ok(Vec::new());
        };
        let mut lines = std::mem::take(&mut self.partial);
        lines.extend_from_slice(&chunk[..=end]);
        self.partial.extend_from_slice(&chunk[end + 1..]);
        Ok(lines)
    }

    /// Every leading byte order mark goes, not only the first the SSE
    /// grammar allows: the framing library would panic on a second one.
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
    /// CR, LF and CRLF all end a line, as in the SSE grammar.
    fn count(&mut self, chunk: &[u8]) -> Result<(), SseError> {
        for &byte in chunk {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' | b'\n' => {
                    if !self.line_has_content {
                        self.event_len = 0;
                    }
                    self.line_has_content = false;
                    self.after_cr = byte == b'\r';
                }
                _ => {
                    self.after_cr = false;
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

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;
    use pretty_assertions::assert_eq;

    fn event(data: &str) -> SseEvent {
        SseEvent {
            event: "message".to_string(),
            data: data.to_string(),
        }
    }

    async fn collect(chunks: Vec<Vec<u8>>, limit: usize) -> Vec<Result<SseEvent, SseError>> {
        let bytes = stream::iter(chunks.into_iter().map(Ok::<_, String>));
        from_bytes(bytes, limit).collect().await
    }

    /// Every way of cutting `body` in two, and in single bytes, gives `want`.
    async fn assert_all_splits(body: &[u8], want: Vec<Result<SseEvent, SseError>>) {
        for cut in 0..=body.len() {
            let chunks = vec![body[..cut].to_vec(), body[cut..].to_vec()];
            assert_eq!(collect(chunks, MAX_EVENT_BYTES).await, want, "cut at {cut}");
        }
        let bytewise = body.iter().map(|b| vec![*b]).collect();
        assert_eq!(
            collect(bytewise, MAX_EVENT_BYTES).await,
            want,
            "byte by byte"
        );
    }

    #[tokio::test]
    async fn events_survive_any_split_mid_line_and_mid_character() {
        let body = "data: {\"a\":\"héllo ✓ 🦀\"}\n\n: keep-alive\n\nevent: ping\ndata: x\n\ndata: [DONE]\n\n";
        assert_all_splits(
            body.as_bytes(),
            vec![
                Ok(event("{\"a\":\"héllo ✓ 🦀\"}")),
                Ok(SseEvent {
                    event: "ping".to_string(),
                    data: "x".to_string(),
                }),
                Ok(event("[DONE]")),
            ],
        )
        .await;
    }

    #[tokio::test]
    async fn crlf_and_multi_line_data() {
        // A lone CR at the very end of the body stays undecided (it may be
        // the start of a CRLF), so the last event ends with LF.
        let body = b"data: one\r\ndata: two\r\n\r\ndata: three\r\rdata: four\n\n";
        assert_all_splits(
            body,
            vec![Ok(event("one\ntwo")), Ok(event("three")), Ok(event("four"))],
        )
        .await;
    }

    #[tokio::test]
    async fn one_large_read_of_many_events_decodes_every_event_in_order() {
        // Loopback reads hold hundreds of events; each line is handed to
        // the framing library on its own (see `one_line_each`).
        let body: String = (0..10_000).map(|i| format!("data: {i}\r\n\r\n")).collect();
        let got = collect(vec![body.into_bytes()], MAX_EVENT_BYTES).await;
        assert_eq!(got.len(), 10_000);
        assert!(
            got.iter()
                .enumerate()
                .all(|(i, e)| *e == Ok(event(&i.to_string())))
        );
    }

    #[tokio::test]
    async fn an_unterminated_last_event_is_dropped() {
        let got = collect(vec![b"data: a\n\ndata: b\n".to_vec()], MAX_EVENT_BYTES).await;
        assert_eq!(got, vec![Ok(event("a"))]);
    }

    #[tokio::test]
    async fn invalid_utf8_fails_at_once() {
        let got = collect(
            vec![b"data: a\n\ndata: \xff".to_vec(), b"b\n\n".to_vec()],
            MAX_EVENT_BYTES,
        )
        .await;
        assert_eq!(got, vec![Err(SseError::InvalidUtf8)]);
    }

    #[tokio::test]
    async fn a_line_cut_by_the_end_of_the_body_goes_with_its_half_character() {
        let got = collect(vec![b"data: a\n\ndata: \xe2\x9c".to_vec()], MAX_EVENT_BYTES).await;
        assert_eq!(got, vec![Ok(event("a"))]);
    }

    #[tokio::test]
    async fn an_event_past_the_cap_is_an_error_and_the_last_item() {
        let got = collect(
            vec![
                b"data: 12345\n\n".to_vec(),
                b"data: 1234567890\n\ndata: x\n\n".to_vec(),
            ],
            12,
        )
        .await;
        assert_eq!(
            got,
            vec![
                Ok(event("12345")),
                Err(SseError::EventTooLarge { limit: 12 })
            ]
        );
    }

    #[tokio::test]
    async fn the_cap_counts_one_event_not_the_whole_body() {
        let body = "data: 1234\n\n".repeat(100).into_bytes();
        let got = collect(vec![body], 16).await;
        assert_eq!(got.len(), 100);
        assert!(got.iter().all(Result::is_ok));
    }

    #[tokio::test]
    async fn the_whole_response_is_capped_too() {
        let bytes = stream::iter(
            vec![b"data: 1234\n\n".to_vec(); 10]
                .into_iter()
                .map(Ok::<_, String>),
        );
        let limits = Limits {
            max_event_bytes: 100,
            max_response_bytes: 36,
            idle_timeout: None,
        };
        let got: Vec<_> = with_limits(bytes, limits).collect().await;
        assert_eq!(
            got,
            vec![
                Ok(event("1234")),
                Ok(event("1234")),
                Ok(event("1234")),
                Err(SseError::ResponseTooLarge { limit: 36 })
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_server_ends_the_stream_after_the_idle_timeout() {
        let bytes =
            stream::iter(vec![Ok::<_, String>(b"data: a\n\n".to_vec())]).chain(stream::pending());
        let limits = Limits {
            idle_timeout: Some(Duration::from_secs(5)),
            ..Limits::default()
        };
        let started = tokio::time::Instant::now();
        let got: Vec<_> = with_limits(bytes, limits).collect().await;
        assert_eq!(
            got,
            vec![
                Ok(event("a")),
                Err(SseError::Idle {
                    after: Duration::from_secs(5)
                })
            ]
        );
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }

    #[test]
    fn limit_errors_say_what_was_passed_in_words() {
        assert_eq!(
            SseError::EventTooLarge {
                limit: MAX_EVENT_BYTES
            }
            .to_string(),
            "the response stream holds an event larger than 16 MiB (the cap on one event); the server is broken or not an LLM API"
        );
        assert_eq!(
            SseError::ResponseTooLarge { limit: 1000 }.to_string(),
            "the response is larger than 1000 bytes (the cap on one reply); the server is broken or not an LLM API"
        );
        assert_eq!(
            SseError::Idle {
                after: IDLE_TIMEOUT
            }
            .to_string(),
            "the server sent nothing for 300s; gave up waiting"
        );
    }

    #[tokio::test]
    async fn a_transport_error_ends_the_stream() {
        let chunks = vec![
            Ok(b"data: a\n\n".to_vec()),
            Err("connection reset".to_string()),
            Ok(b"data: b\n\n".to_vec()),
        ];
        let got: Vec<_> = from_bytes(stream::iter(chunks), MAX_EVENT_BYTES)
            .collect()
            .await;
        assert_eq!(
            got,
            vec![
                Ok(event("a")),
                Err(SseError::Transport("connection reset".to_string()))
            ]
        );
    }

    #[tokio::test]
    async fn leading_byte_order_marks_are_skipped_without_a_panic() {
        let body = b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: \xef\xbb\xbfb\n\n";
        let want = vec![Ok(event("a")), Ok(event("\u{feff}b"))];
        assert_all_splits(body, want).await;
        let got = collect(
            vec![b"\xef\xbc\x81: x\n\ndata: c\n\n".to_vec()],
            MAX_EVENT_BYTES,
        )
        .await;
        assert_eq!(got, vec![Ok(event("c"))]);
    }

    #[tokio::test]
    async fn a_leading_byte_order_mark_split_across_chunks() {
        let got = collect(
            vec![b"\xef\xbb".to_vec(), b"\xbfdata: a\n\n".to_vec()],
            MAX_EVENT_BYTES,
        )
        .await;
        assert_eq!(got, vec![Ok(event("a"))]);
    }
}
