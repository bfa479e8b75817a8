//! The openai provider's decoder and the loop's message assembly, fed any
//! SSE body cut into any chunks: no panic, exactly one `Done` or `Error`
//! at the end, and a message consistent with the deltas it was built from.

#![no_main]

use leash_fuzz::{assemble, chunks, collect_checked, sse_events};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let events = collect_checked(leash_provider::openai::decode(sse_events(chunks(data))));
    assemble(events);
});
