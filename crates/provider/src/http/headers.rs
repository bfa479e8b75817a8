//! What a response's headers say, read by the HTTP layer as it arrives:
//! about trying again (`x-should-retry`, the retryable statuses and the
//! server's requested wait, which the retry plan acts on) and the rate
//! limits the provider announced (`RateHint`, which the rate gate paces
//! by). Below both, so neither the client nor the driver reaches into
//! the other for them.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};

/// Whether a response with this status may succeed when tried again:
/// timeouts, conflicts, rate limits and server errors (529 is Anthropic's
/// "overloaded"). 400/401/403/404 and the other 4xx never will.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500..=599)
}

/// Whether a failed response may be tried again. The server's
/// `x-should-retry: true` / `false` decides when it sent one, ahead of the
/// status, as in the official OpenAI and Anthropic SDKs (any other value
/// is ignored); else [`is_retryable_status`].
pub(crate) fn should_retry(status: u16, headers: &HeaderMap) -> bool {
    let hint = headers
        .get("x-should-retry")
        .and_then(|value| value.to_str().ok())
        .map(str::trim);
    match hint {
        Some("true") => true,
        Some("false") => false,
        _ => is_retryable_status(status),
    }
}

/// The server's requested wait: `retry-after-ms` (OpenAI) wins over
/// `retry-after` (seconds, or an HTTP date as RFC 9110 gives it, read by
/// `httpdate`; a date in the past is no wait).
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(parse_seconds) {
        return Some(ms / 1000);
    }
    let value = header(RETRY_AFTER.as_str())?;
    parse_seconds(value).or_else(|| {
        let at = httpdate::parse_http_date(value).ok()?;
        Some(at.duration_since(now).unwrap_or(Duration::ZERO))
    })
}

/// A non-negative number of seconds (fractions allowed) as a duration.
fn parse_seconds(value: &str) -> Option<Duration> {
    if !value.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let seconds: f64 = value.parse().ok()?;
    Duration::try_from_secs_f64(seconds).ok()
}

/// A rate limit a provider announced in its headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateHint {
    /// Requests per minute.
    pub requests_per_minute: Option<u32>,
    /// Tokens per minute.
    pub tokens_per_minute: Option<u64>,
}

impl RateHint {
    /// The limits OpenAI (`x-ratelimit-limit-*`) and Anthropic
    /// (`anthropic-ratelimit-*-limit`) send with every response.
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let number = |names: &[&str]| {
            names.iter().find_map(|name| {
                headers
                    .get(*name)
                    .and_then(|value| value.to_str().ok())
                    .and_then(|value| value.trim().parse::<u64>().ok())
                    .filter(|limit| *limit > 0)
            })
        };
        RateHint {
            requests_per_minute: number(&[
                "x-ratelimit-limit-requests",
                "anthropic-ratelimit-requests-limit",
            ])
            .map(|limit| u32::try_from(limit).unwrap_or(u32::MAX)),
            tokens_per_minute: number(&[
                "x-ratelimit-limit-tokens",
                "anthropic-ratelimit-tokens-limit",
            ]),
        }
    }
}
