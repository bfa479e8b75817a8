//! The faux script parser on any text, and every script it accepts played
//! through the loop's message assembly: no panic, a usage error for what
//! does not parse, and replies that end as the script says.

#![no_main]

use leash_protocol::StopReason;
use leash_protocol::StreamEvent;
use leash_faux::{FauxProvider, Script};
use leash_provider::{Provider, Request};
use leash_fuzz::{assemble, collect_checked};
use libfuzzer_sys::fuzz_target;

/// Requests played per script: enough to pass its end (and `repeatLast`).
const MAX_REQUESTS: usize = 6;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mut script) = Script::parse(text, "fuzz.json") else {
        return;
    };
    // Delays are real waits; played without them.
    for response in &mut script.responses {
        response.delay_ms = 0;
        response.chunk_delay_ms = 0;
    }
    let expected: Vec<_> = script.responses.clone();
    let provider = FauxProvider::new(script);
    let request = Request {
        transcript: &[],
        model: "faux",
        system: "system",
        messages: &[],
        tools: &[],
        options: Default::default(),
    };
    for number in 0..MAX_REQUESTS.min(expected.len() + 2) {
        let events = collect_checked(provider.stream(request));
        let message = assemble(events.clone());
        let Some(response) = expected.get(number) else {
            continue;
        };
        match (&response.error, events.last()) {
            (Some(error), Some(StreamEvent::Error(text))) => assert_eq!(error, text),
            (None, Some(StreamEvent::Done(_))) => {
                assert_ne!(message.stop_reason, StopReason::Error);
                assert_eq!(message.tool_calls().count(), response.tool_calls.len());
            }
            (error, last) => panic!("script error {error:?} but the stream ended {last:?}"),
        }
    }
});
