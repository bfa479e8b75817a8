//! The SSE decoder on any bytes, cut into chunks anywhere: no panic, the
//! first error is the last item, no event holds more than the cap, and
//! the events do not depend on where the chunks were cut.

#![no_main]

use futures::StreamExt;
use leash_provider::sse::{SseError, SseEvent};
use leash_fuzz::{FUZZ_EVENT_CAP, chunks, sse_events};
use libfuzzer_sys::fuzz_target;

fn decode(chunks: Vec<Vec<u8>>) -> (Vec<SseEvent>, Option<SseError>) {
    let items: Vec<Result<SseEvent, SseError>> =
        futures::executor::block_on(sse_events(chunks).collect());
    let mut events = Vec::new();
    let mut error = None;
    for (i, item) in items.iter().enumerate() {
        match item {
            Ok(event) => {
                assert!(error.is_none(), "an event after an error");
                assert!(event.data.len() <= FUZZ_EVENT_CAP, "data past the cap");
                assert!(event.event.len() <= FUZZ_EVENT_CAP, "name past the cap");
                events.push(event.clone());
            }
            Err(err) => {
                assert_eq!(i + 1, items.len(), "the error is the last item");
                error = Some(err.clone());
            }
        }
    }
    (events, error)
}

fuzz_target!(|data: &[u8]| {
    let cut = chunks(data);
    let whole = vec![data.get(1..).unwrap_or_default().to_vec()];
    let (cut_events, cut_error) = decode(cut);
    let (whole_events, whole_error) = decode(whole);
    if cut_error.is_none() && whole_error.is_none() {
        assert_eq!(
            cut_events, whole_events,
            "the events depend on the chunking"
        );
    } else {
        // An error ends the stream where it is seen, which depends on the
        // chunking; the events before it agree.
        let shorter = cut_events.len().min(whole_events.len());
        assert_eq!(cut_events[..shorter], whole_events[..shorter]);
    }
});
