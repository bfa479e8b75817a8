//! What an event stream yields: one event, or the one reason it could
//! not be read further. Below the stream and its line parser, which both
//! speak it.

use std::time::Duration;

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
}

/// A byte count for people: `16 MiB`, or bytes when not a whole MiB.
fn size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}
