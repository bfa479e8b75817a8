//! The `application/vnd.amazon.eventstream` framing of a ConverseStream
//! body, read into the (name, data) pairs every decoder takes: an event's
//! `:event-type` and its JSON payload; an exception as
//! `exception:{:exception-type}` with its payload; an error message as
//! `error:{:error-code}` with its `:error-message`. The frames themselves
//! (prelude, CRCs, headers) are decoded by AWS's `aws-smithy-eventstream`.
//!
//! It must never buffer without bound (a frame's announced length is
//! checked before its bytes are kept), never wait without bound for a
//! silent server, and never go on after an error.

use aws_smithy_eventstream::frame::read_message_from;
use aws_smithy_types::event_stream::{HeaderValue, Message};
use bytes::BytesMut;
use futures::StreamExt;
use futures::stream::BoxStream;

use crate::sse::{IDLE_TIMEOUT, MAX_EVENT_BYTES, MAX_RESPONSE_BYTES, SseError, SseEvent};

/// The events of a response body.
pub fn events(response: reqwest::Response) -> BoxStream<'static, Result<SseEvent, SseError>> {
    from_bytes(
        response
            .bytes_stream()
            .map(|chunk| chunk.map_err(|err| crate::http::root_cause(&err))),
        Some(IDLE_TIMEOUT),
    )
}

/// The events of any byte stream (the seam the unit tests use), each
/// frame at most [`MAX_EVENT_BYTES`], the whole at most
/// [`MAX_RESPONSE_BYTES`], no chunk later than `idle` after the last.
pub fn from_bytes<S, B, E>(
    bytes: S,
    idle: Option<std::time::Duration>,
) -> BoxStream<'static, Result<SseEvent, SseError>>
where
    S: futures::Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    Box::pin(async_stream::stream! {
        let mut bytes = Box::pin(bytes);
        let mut buffer = BytesMut::new();
        let mut total: u64 = 0;
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
            let chunk = match next {
                Some(Ok(chunk)) => chunk,
                Some(Err(err)) => {
                    yield Err(SseError::Transport(err.to_string()));
                    return;
                }
                None => {
                    if !buffer.is_empty() {
                        yield Err(SseError::Transport("the body ended inside an event-stream frame".to_owned()));
                    }
                    return;
                }
            };
            let chunk = chunk.as_ref();
            total = total.saturating_add(chunk.len() as u64);
            if total > MAX_RESPONSE_BYTES {
                yield Err(SseError::ResponseTooLarge { limit: MAX_RESPONSE_BYTES });
                return;
            }
            buffer.extend_from_slice(chunk);
            // Each frame starts with its total length: judged before the
            // frame is waited for, so a hostile length costs nothing.
            while buffer.len() >= 4 {
                let announced = u32::from_be_bytes([buffer[0], buffer[1], buffer[2], buffer[3]]) as usize;
                if announced > MAX_EVENT_BYTES {
                    yield Err(SseError::EventTooLarge { limit: MAX_EVENT_BYTES });
                    return;
                }
                if buffer.len() < announced {
                    break;
                }
                let mut frame = buffer.split_to(announced).freeze();
                match read_message_from(&mut frame) {
                    Ok(message) => yield Ok(event_of(&message)),
                    Err(err) => {
                        yield Err(SseError::Transport(format!("a broken event-stream frame ({err})")));
                        return;
                    }
                }
            }
        }
    })
}

/// One frame as a (name, data) pair.
fn event_of(message: &Message) -> SseEvent {
    let header = |name: &str| {
        message
            .headers()
            .iter()
            .find(|header| header.name().as_str() == name)
            .and_then(|header| match header.value() {
                HeaderValue::String(value) => Some(value.as_str().to_owned()),
                _ => None,
            })
    };
    let payload = String::from_utf8_lossy(message.payload()).into_owned();
    match header(":message-type").as_deref() {
        Some("exception") => SseEvent {
            event: format!(
                "exception:{}",
                header(":exception-type").unwrap_or_default()
            ),
            data: payload,
        },
        Some("error") => SseEvent {
            event: format!("error:{}", header(":error-code").unwrap_or_default()),
            data: header(":error-message").unwrap_or(payload),
        },
        _ => SseEvent {
            event: header(":event-type").unwrap_or_default(),
            data: payload,
        },
    }
}
