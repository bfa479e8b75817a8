//! The endings every wire shares read the same on all three decoders
//! (docs/src/providers.md "Providers"): an event that is not JSON, a body cut off, a body
//! that broke. Fed through each format's public `decode`, as the fuzz
//! targets are.

use futures::StreamExt;
use futures::stream::{self, BoxStream};

use super::sse::{SseError, SseEvent};
use super::{StreamEvent, anthropic, openai, openai_responses};

type Decode = fn(BoxStream<'static, Result<SseEvent, SseError>>) -> BoxStream<'static, StreamEvent>;

/// Each wire's decoder, with the name of an event it reads.
fn wires() -> [(&'static str, Decode); 3] {
    [
        ("message", |events| openai::decode(events)),
        ("content_block_delta", |events| anthropic::decode(events)),
        ("message", |events| openai_responses::decode(events)),
    ]
}

/// The last event `decode` makes of `items`.
async fn last(decode: Decode, items: Vec<Result<SseEvent, SseError>>) -> String {
    let events: Vec<StreamEvent> = decode(stream::iter(items).boxed()).collect().await;
    match events.last() {
        Some(StreamEvent::Error(message)) => message.clone(),
        other => panic!("no error at the end: {other:?}"),
    }
}

#[tokio::test]
async fn an_event_that_is_not_json_reads_the_same_on_every_wire() {
    for (name, decode) in wires() {
        let event = SseEvent {
            event: name.to_owned(),
            data: "{not json".to_owned(),
        };
        let message = last(decode, vec![Ok(event)]).await;
        assert!(
            message.starts_with("the provider sent an event that is not JSON (")
                && message.ends_with("): {not json"),
            "{name}: {message}"
        );
    }
}

#[tokio::test]
async fn a_body_cut_off_or_broken_reads_the_same_on_every_wire() {
    for (name, decode) in wires() {
        let cut = last(decode, vec![]).await;
        assert!(
            cut.starts_with("the stream was cut off (")
                && cut.ends_with("); the reply is incomplete"),
            "{name}: {cut}"
        );
        let broken = last(decode, vec![Err(SseError::InvalidUtf8)]).await;
        assert_eq!(
            broken, "the response stream is not valid UTF-8; the reply is incomplete",
            "{name}"
        );
    }
}
