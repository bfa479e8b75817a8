//! Server-sent events: turns an HTTP response body (a stream of byte
//! chunks) into a stream of SSE events, one `event` name and `data` payload
//! each. The framing is leash's own small line parser (`parser`, fuzzed
//! by `fuzz/fuzz_targets/sse_decoder.rs`), with what a client of an
//! untrusted server needs built in: a cap on the size of one event and of
//! the whole response, an idle timeout, a prompt error for bytes that are
//! not UTF-8, and typed errors.
//!
//! It must never buffer without bound, never wait without bound for a
//! server that went silent, never panic on what a server sends, and never
//! go on after an error: the first `Err` is the last item.

use std::fmt::Display;
use std::time::Duration;

use parser::Parser;

use futures::stream::{BoxStream, Stream, StreamExt};

mod event;
mod parser;

pub use event::{SseError, SseEvent};

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

/// How long a response body may stay silent before the reply counts as
/// failed: the HTTP layer's bound, which the headers wait under too.
pub use crate::http::IDLE_TIMEOUT;

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
    let mut parser = Parser::new(limits.max_event_bytes, limits.max_response_bytes);
    let mut chunks = Box::pin(idle_bounded(bytes, limits.idle_timeout));
    Box::pin(async_stream::stream! {
        let mut out = Vec::new();
        while let Some(chunk) = chunks.next().await {
            let fed = match chunk {
                Ok(chunk) => parser.feed(chunk.as_ref(), &mut out),
                Err(err) => Err(err),
            };
            for event in out.drain(..) {
                yield Ok(event);
            }
            if let Err(err) = fed {
                yield Err(err);
                return;
            }
        }
    })
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

#[cfg(test)]
mod tests;
