//! The retry and rate-limit headers on any bytes: no panic, no overflow;
//! the wait the retry rule takes is at most the cap whatever the server
//! said, and a gate refused with it (after any announced limits and any
//! token count) never holds a request past the cap either. The server's
//! own number, uncapped, may reach the gate: its arithmetic holds too.

#![no_main]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leash_provider::driver::retry::{RETRY_AFTER_CAP, capped_wait, retry_after};
use leash_provider::driver::{RateGate, RateHint};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;

/// The headers the input's parts are given to, in order.
const NAMES: [&str; 8] = [
    "retry-after",
    "retry-after-ms",
    "x-ratelimit-limit-requests",
    "x-ratelimit-limit-tokens",
    "anthropic-ratelimit-requests-limit",
    "anthropic-ratelimit-tokens-limit",
    "x-should-retry",
    "retry-after",
];

fuzz_target!(|data: &[u8]| {
    // The first byte: the retry number; then NUL-separated header values.
    let Some((&retry, rest)) = data.split_first() else {
        return;
    };
    let mut headers = HeaderMap::new();
    for (name, value) in NAMES.iter().zip(rest.split(|byte| *byte == 0)) {
        if let Ok(value) = HeaderValue::from_bytes(value) {
            headers.append(HeaderName::from_static(name), value);
        }
    }
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let server = retry_after(&headers, now);
    let _ = retry_after(&headers, SystemTime::UNIX_EPOCH);
    let wait = capped_wait(server, u32::from(retry));
    assert!(wait <= RETRY_AFTER_CAP, "{server:?} became {wait:?}");
    let hint = RateHint::from_headers(&headers);
    let spent = rest
        .iter()
        .fold(0u64, |sum, byte| sum.rotate_left(8) | u64::from(*byte));
    let gate = RateGate::new(hint.requests_per_minute, hint.tokens_per_minute);
    gate.answered(hint);
    gate.spent(spent);
    gate.spent(u64::MAX);
    gate.refused(wait, hint);
    assert!(
        gate.wait_ahead() <= RETRY_AFTER_CAP,
        "{:?} after a wait of {wait:?}",
        gate.wait_ahead()
    );
    let _ = gate.refusals();
    gate.refused(server.unwrap_or(Duration::MAX), hint);
    let _ = gate.wait_ahead();
});
