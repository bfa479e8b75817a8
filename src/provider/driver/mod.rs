//! One HTTP provider request as a stream, the driver both wire formats
//! share: send with the retries of SPEC 2.4 (a `Retry` event, then the
//! back-off), then feed the response's SSE events to the format's decoder
//! and yield what it produces as it arrives.
//!
//! It must never retry once a byte of a response body was used, and never
//! let the key into an event: every `Error` and `Retry` text is redacted on
//! its way out.

use futures::StreamExt;
use futures::stream::BoxStream;

use super::sse::{self, SseError, SseEvent};
use super::{ApiKey, HttpSettings, StreamEvent, http};

/// The SSE events of one response body.
pub type SseStream = BoxStream<'static, Result<SseEvent, SseError>>;

/// A wire format's decoder state machine: pure, no I/O, fed one SSE event
/// at a time.
pub trait WireDecoder: Default + Send + 'static {
    /// Decodes one event (`event` its name, `data` its payload) into `out`;
    /// `true` once the reply is complete and the stream must end.
    fn decode_event(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) -> bool;
    /// The body could not be read further: the last events, ending with
    /// `Done` or `Error`.
    fn body_failed(&mut self, error: &SseError, out: &mut Vec<StreamEvent>);
    /// The body ended: the last events, ending with `Done` or `Error`.
    fn body_ended(&mut self, out: &mut Vec<StreamEvent>);
}

/// The stream of one response body: SSE events in, [`StreamEvent`]s out,
/// ending with exactly one `Done` or `Error` whatever the events are (as
/// long as the decoder keeps its contract). No redaction here: the driver
/// redacts what leaves it.
pub fn decode_with<D, S>(events: S) -> BoxStream<'static, StreamEvent>
where
    D: WireDecoder,
    S: futures::Stream<Item = Result<SseEvent, SseError>> + Send + 'static,
{
    Box::pin(async_stream::stream! {
        let mut events = Box::pin(events);
        let mut decoder = D::default();
        let mut out = Vec::new();
        loop {
            let complete = match events.next().await {
                Some(Ok(event)) => decoder.decode_event(&event.event, &event.data, &mut out),
                Some(Err(error)) => {
                    decoder.body_failed(&error, &mut out);
                    true
                }
                None => {
                    decoder.body_ended(&mut out);
                    true
                }
            };
            for event in out.drain(..) {
                yield event;
            }
            if complete {
                return;
            }
        }
    })
}

/// Sends `prepared` (the client and the request, built once and cloned
/// per attempt) and streams what
/// `decode` makes of the body. The stream ends with exactly one `Done` or
/// `Error` as long as `decode` does.
pub fn stream_response(
    prepared: Result<(reqwest::Client, reqwest::Request), String>,
    settings: HttpSettings,
    decode: fn(SseStream) -> BoxStream<'static, StreamEvent>,
) -> BoxStream<'static, StreamEvent> {
    Box::pin(async_stream::stream! {
        let key = settings.api_key.as_ref();
        let (client, request) = match prepared {
            Ok(prepared) => prepared,
            Err(message) => {
                yield StreamEvent::Error(http::redact(&message, key));
                return;
            }
        };

        // Retries happen only here, before any byte of a body was used.
        let mut retry = 0;
        let response = loop {
            let Some(attempt) = request.try_clone() else {
                yield StreamEvent::Error("could not repeat the request".to_owned());
                return;
            };
            let failure = match http::send(&client, attempt, key).await {
                Ok(response) => break response,
                Err(failure) => failure,
            };
            retry += 1;
            let reason = http::redact(&failure.message, key);
            let delay = match http::retry_plan(&failure, retry, &settings) {
                http::RetryPlan::After(delay) => delay,
                plan => {
                    yield StreamEvent::Error(http::gave_up_message(&reason, retry - 1, plan));
                    return;
                }
            };
            yield StreamEvent::Retry {
                attempt: retry,
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                reason,
            };
            tokio::time::sleep(delay).await;
        };
        let response = match http::event_stream(response, key).await {
            Ok(response) => response,
            Err(failure) => {
                yield StreamEvent::Error(http::redact(&failure.message, key));
                return;
            }
        };

        let mut events = decode(sse::events(response));
        while let Some(event) = events.next().await {
            yield redact_event(event, key);
        }
    })
}

/// Errors can quote what a server sent back; the key is taken out of them
/// as the last step before they leave the provider.
fn redact_event(event: StreamEvent, key: Option<&ApiKey>) -> StreamEvent {
    match event {
        StreamEvent::Error(message) => StreamEvent::Error(http::redact(&message, key)),
        StreamEvent::Retry {
            attempt,
            delay_ms,
            reason,
        } => StreamEvent::Retry {
            attempt,
            delay_ms,
            reason: http::redact(&reason, key),
        },
        other => other,
    }
}
