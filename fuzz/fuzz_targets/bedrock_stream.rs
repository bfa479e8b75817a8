//! Bedrock's ConverseStream body: the event-stream frames and the decoder
//! behind them, then the loop's message assembly. The first byte picks
//! the form: even, the rest is the body's raw bytes (the framing itself:
//! preludes, CRCs, lengths); odd, the rest is NUL-separated pairs of an
//! event type and its JSON payload, framed with correct CRCs (every
//! fourth pair an exception, every ninth an error message), so inputs
//! reach the decoder. Either way cut into chunks by the next byte: no
//! panic, exactly one `Done` or `Error` at the end, and a message
//! consistent with its deltas.

#![no_main]

use futures::stream;
use leash_provider::bedrock;
use leash_fuzz::{assemble, chunks, collect_checked, event_frame};
use libfuzzer_sys::fuzz_target;

fn framed(data: &[u8]) -> Vec<u8> {
    let parts: Vec<&[u8]> = data.split(|byte| *byte == 0).collect();
    let mut body = Vec::new();
    for (n, pair) in parts.chunks(2).enumerate() {
        let name = pair[0];
        let payload = pair.get(1).copied().unwrap_or_default();
        let frame = match n % 9 {
            8 => event_frame(
                &[
                    (":message-type", b"error"),
                    (":error-code", name),
                    (":error-message", payload),
                ],
                b"",
            ),
            n if n % 4 == 3 => event_frame(
                &[(":message-type", b"exception"), (":exception-type", name)],
                payload,
            ),
            _ => event_frame(
                &[(":message-type", b"event"), (":event-type", name)],
                payload,
            ),
        };
        body.extend_from_slice(&frame);
    }
    body
}

fuzz_target!(|data: &[u8]| {
    let Some((&form, rest)) = data.split_first() else {
        return;
    };
    let body = match form % 2 {
        0 => rest.to_vec(),
        _ => match rest.split_first() {
            Some((&size, pairs)) => [vec![size], framed(pairs)].concat(),
            None => return,
        },
    };
    let cut = chunks(&body);
    let bytes = stream::iter(cut.into_iter().map(Ok::<_, String>));
    let events = collect_checked(bedrock::decode(bytes));
    assemble(events);
});
