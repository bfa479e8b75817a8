//! What every wire format's decoder is held to: the [`WireDecoder`]
//! trait each one implements directly, the one notion of "the stream is
//! over" ([`Flow`]), and the words every decoder uses for the endings they
//! share (an event that is not JSON, a body cut off or broken, the
//! provider's own error), so a script reads one message whatever the API.
//!
//! It must never do I/O, and never word a shared ending on its own in a
//! decoder: a new shared ending gets its function here.

use super::super::sse::SseError;
use super::super::{INCOMPLETE, StreamEvent, http};

/// Whether the stream goes on after one event: the one notion of "the
/// stream is over" every decoder and the driver share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// More events may come.
    Continue,
    /// The final `Done` or `Error` was produced; the driver stops reading.
    End,
}

/// A wire format's decoder state machine: pure, no I/O, fed one SSE event
/// at a time. Each of its three ways in ends the stream with exactly one
/// `Done` or `Error` when it returns (or, for `decode_event`, says)
/// [`Flow::End`].
pub trait WireDecoder: Default + Send + 'static {
    /// Decodes one event (`event` its name, `data` its payload) into `out`;
    /// [`Flow::End`] once the reply is complete and the stream must end.
    fn decode_event(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Flow;
    /// The body could not be read further: the last events, ending with
    /// `Done` or `Error`.
    fn body_failed(&mut self, error: &SseError, out: &mut Vec<StreamEvent>);
    /// The body ended: the last events, ending with `Done` or `Error`.
    fn body_ended(&mut self, out: &mut Vec<StreamEvent>);
}

/// An event whose `data` could not be read: not JSON at all, or JSON of a
/// shape the API does not send. The same words on every wire, with the
/// parser's reason and the start of the data.
pub fn unreadable_event(err: &serde_json::Error, data: &str) -> StreamEvent {
    let what = if err.is_data() {
        "an event of an unexpected shape"
    } else {
        "an event that is not JSON"
    };
    StreamEvent::Error(format!(
        "the provider sent {what} ({err}): {}",
        http::snippet(data)
    ))
}

/// The body ended before the reply did; `missing` names what the wire
/// should have sent to end it (`no message_stop`).
pub fn cut_off(missing: &str) -> StreamEvent {
    StreamEvent::Error(format!("the stream was cut off ({missing}); {INCOMPLETE}"))
}

/// The body could not be read further before the reply was whole.
pub fn broken_body(error: &SseError) -> StreamEvent {
    StreamEvent::Error(format!("{error}; {INCOMPLETE}"))
}

/// The provider's own error, sent in the stream: its `message` (already
/// made printable by the caller).
pub fn provider_error(message: &str) -> StreamEvent {
    StreamEvent::Error(format!(
        "the provider reported an error mid-stream: {message}"
    ))
}
