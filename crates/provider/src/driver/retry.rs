//! The retry policy of the driver (ARCHITECTURE.md §2.4): which failures are tried
//! again, how long to wait (the server's `retry-after`, else exponential
//! back-off with jitter), and when to give up — the retries are used up,
//! or the wait would end past the run's deadline.
//!
//! Pure apart from the clock and the jitter; it never sends anything.

use std::time::Duration;

use super::super::HttpSettings;
use super::super::http::HttpFailure;

pub use crate::http::headers::retry_after;

/// The wait before the first retry; it doubles for each further retry.
const BACKOFF_BASE: Duration = Duration::from_millis(500);

/// The longest computed backoff (before jitter).
pub const BACKOFF_CAP: Duration = Duration::from_secs(8);

/// The longest `retry-after` honoured as given; a longer one falls back to
/// the computed backoff, as the official OpenAI and Anthropic SDKs do.
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryPlan {
    /// Try again after this wait.
    After(Duration),
    /// Not retryable, or the retries are used up.
    GiveUp,
    /// A retry would be allowed, but its wait would end past the run's
    /// abort timer; giving up at once beats a wait the timer cuts.
    PastDeadline(Duration),
}

/// What to do before retry number `retry` (1 for the first): give up when
/// the failure is not retryable, the retries are used up, or the wait would
/// end past the run's deadline. The wait is the server's `retry-after`
/// when it gave a reasonable one, else exponential backoff (500 ms ×
/// 2^(retry-1), at most 8 s) with ±25% jitter.
pub fn plan(failure: &HttpFailure, retry: u32, settings: &HttpSettings) -> RetryPlan {
    if !failure.retryable || retry == 0 || retry > settings.retries {
        return RetryPlan::GiveUp;
    }
    let delay = capped_wait(failure.retry_after, retry);
    let ends = tokio::time::Instant::now().checked_add(delay);
    match settings.deadline {
        Some(deadline) if ends.is_none_or(|ends| ends >= deadline) => {
            RetryPlan::PastDeadline(delay)
        }
        _ => RetryPlan::After(delay),
    }
}

/// The wait before retry number `retry` whatever else is decided: the
/// server's `retry-after` when it is at most [`RETRY_AFTER_CAP`], else the
/// computed back-off with jitter. The one rule both a single run's retry
/// and the batch's shared gate follow, so no server number, however
/// large, parks a request (or every request behind a gate) past 60 s.
pub fn capped_wait(retry_after: Option<Duration>, retry: u32) -> Duration {
    match retry_after {
        Some(wait) if wait <= RETRY_AFTER_CAP => wait,
        // `fastrand`: jitter needs no cryptographic randomness.
        _ => jittered(backoff(retry), 0.75 + fastrand::f64() * 0.5),
    }
}

/// [`plan`] as the wait alone: `None` to give up, for whatever reason.
#[cfg(test)]
fn delay(failure: &HttpFailure, retry: u32, settings: &HttpSettings) -> Option<Duration> {
    match plan(failure, retry, settings) {
        RetryPlan::After(delay) => Some(delay),
        RetryPlan::GiveUp | RetryPlan::PastDeadline(_) => None,
    }
}

/// The final error after the last attempt: the failure, how often it was
/// retried, and why no further retry was made when the timer forbade it.
pub fn gave_up_message(message: &str, retries: u32, plan: RetryPlan) -> String {
    let mut out = match retries {
        0 => message.to_string(),
        1 => format!("{message} (after 1 retry)"),
        n => format!("{message} (after {n} retries)"),
    };
    if let RetryPlan::PastDeadline(delay) = plan {
        out.push_str(&format!(
            "; not retried: waiting {:.1}s would pass the run's timeout",
            delay.as_secs_f64()
        ));
    }
    out
}

/// The backoff before retry number `retry`, without jitter.
fn backoff(retry: u32) -> Duration {
    let doublings = retry.saturating_sub(1).min(16);
    BACKOFF_BASE.saturating_mul(1 << doublings).min(BACKOFF_CAP)
}

/// `delay` scaled by the jitter `factor`.
fn jittered(delay: Duration, factor: f64) -> Duration {
    Duration::try_from_secs_f64(delay.as_secs_f64() * factor).unwrap_or(delay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::headers::{is_retryable_status, should_retry};
    use pretty_assertions::assert_eq;
    use reqwest::header::{HeaderMap, HeaderValue};
    use std::time::UNIX_EPOCH;

    fn settings(retries: u32) -> HttpSettings {
        HttpSettings {
            retries,
            ..HttpSettings::new("http://127.0.0.1:1", None)
        }
    }

    fn failure(status: u16, retry_after: Option<Duration>) -> HttpFailure {
        HttpFailure {
            status: Some(status),
            message: format!("HTTP {status}"),
            retry_after,
            retryable: is_retryable_status(status),
            rate_hint: Default::default(),
        }
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn statuses_that_are_retried() {
        for status in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(is_retryable_status(status), "{status}");
        }
        for status in [200, 301, 400, 401, 403, 404, 413, 422] {
            assert!(!is_retryable_status(status), "{status}");
        }
    }

    #[test]
    fn x_should_retry_decides_ahead_of_the_status() {
        let hint = |value| headers(&[("x-should-retry", value)]);
        assert!(!should_retry(503, &hint("false")));
        assert!(!should_retry(429, &hint("false")));
        assert!(should_retry(400, &hint("true")));
        assert!(should_retry(409, &hint(" true ")));
        // Any other value, or none: the status decides.
        assert!(should_retry(503, &hint("no")));
        assert!(!should_retry(400, &hint("TRUE")));
        assert!(should_retry(503, &HeaderMap::new()));
        assert!(!should_retry(404, &HeaderMap::new()));
    }

    #[test]
    fn retry_after_in_seconds_milliseconds_and_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_770); // Sun, 06 Nov 1994 08:49:30 GMT
        let at = |pairs| retry_after(&headers(pairs), now);
        assert_eq!(at(&[("retry-after", "1")]), Some(Duration::from_secs(1)));
        assert_eq!(
            at(&[("retry-after", " 2.5 ")]),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(
            at(&[("retry-after-ms", "250")]),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            at(&[("retry-after", "30"), ("retry-after-ms", "1500")]),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            at(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            at(&[("retry-after", "Sun, 06 Nov 1994 08:00:00 GMT")]),
            Some(Duration::ZERO)
        );
        assert_eq!(at(&[("retry-after", "soon")]), None);
        assert_eq!(at(&[("retry-after", "-3")]), None);
        assert_eq!(at(&[("retry-after", "1e400")]), None);
        assert_eq!(
            at(&[("retry-after-ms", "abc"), ("retry-after", "2")]),
            Some(Duration::from_secs(2))
        );
        assert_eq!(at(&[]), None);
    }

    #[test]
    fn http_dates() {
        // RFC 9110's three date forms, read by `httpdate`; a date before
        // `now` is no wait, a malformed or pre-1970 date is no date.
        let at = |value| retry_after(&headers(&[("retry-after", value)]), UNIX_EPOCH);
        assert_eq!(at("Thu, 01 Jan 1970 00:00:00 GMT"), Some(Duration::ZERO));
        assert_eq!(
            at("Tue, 29 Feb 2000 12:00:00 GMT"),
            Some(Duration::from_secs(951_825_600))
        );
        assert_eq!(
            at("Sunday, 06-Nov-94 08:49:37 GMT"),
            Some(Duration::from_secs(784_111_777))
        );
        assert_eq!(
            at("Sun Nov  6 08:49:37 1994"),
            Some(Duration::from_secs(784_111_777))
        );
        assert_eq!(at("Sun, 06 Nov 1994 25:49:37 GMT"), None);
        assert_eq!(at("Sun, 06 Foo 1994 08:49:37 GMT"), None);
        assert_eq!(at("Wed, 31 Dec 1969 23:59:59 GMT"), None);
    }

    #[test]
    fn backoff_doubles_from_half_a_second_and_is_capped() {
        assert_eq!(backoff(1), Duration::from_millis(500));
        assert_eq!(backoff(2), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(2));
        assert_eq!(backoff(5), Duration::from_secs(8));
        assert_eq!(backoff(u32::MAX), BACKOFF_CAP);
        assert_eq!(
            jittered(Duration::from_secs(2), 0.75),
            Duration::from_millis(1500)
        );
    }

    #[test]
    fn retry_delays_stay_within_the_jitter_bounds() {
        let failure = failure(503, None);
        for retry in 1..=6 {
            let base = backoff(retry);
            for _ in 0..200 {
                let delay = delay(&failure, retry, &settings(6)).unwrap_or_default();
                assert!(
                    delay >= base.mul_f64(0.75) && delay <= base.mul_f64(1.25),
                    "{retry}: {delay:?}"
                );
            }
        }
    }

    #[test]
    fn the_servers_retry_after_is_used_when_reasonable() {
        let settings = settings(2);
        assert_eq!(
            delay(&failure(429, Some(Duration::from_secs(3))), 1, &settings),
            Some(Duration::from_secs(3))
        );
        let long =
            delay(&failure(429, Some(Duration::from_secs(3600))), 1, &settings).unwrap_or_default();
        assert!(long <= Duration::from_millis(625), "{long:?}");
    }

    #[test]
    fn giving_up() {
        let settings = settings(2);
        assert_eq!(delay(&failure(401, None), 1, &settings), None);
        assert_eq!(
            delay(&failure(400, Some(Duration::from_secs(1))), 1, &settings),
            None
        );
        assert!(delay(&failure(500, None), 2, &settings).is_some());
        assert_eq!(delay(&failure(500, None), 3, &settings), None);
        assert_eq!(delay(&failure(500, None), 1, &self::settings(0)), None);
    }

    #[tokio::test]
    async fn no_wait_past_the_deadline() {
        let mut settings = settings(2);
        settings.deadline = Some(tokio::time::Instant::now() + Duration::from_secs(2));
        assert_eq!(
            delay(&failure(429, Some(Duration::from_secs(5))), 1, &settings),
            None
        );
        assert_eq!(
            delay(&failure(429, Some(Duration::from_secs(1))), 1, &settings),
            Some(Duration::from_secs(1))
        );
        settings.deadline = Some(tokio::time::Instant::now());
        assert_eq!(delay(&failure(500, None), 1, &settings), None);
    }

    #[test]
    fn giving_up_says_why_when_the_timer_forbids_the_wait() {
        assert_eq!(
            gave_up_message(
                "HTTP 429",
                0,
                RetryPlan::PastDeadline(Duration::from_secs(5))
            ),
            "HTTP 429; not retried: waiting 5.0s would pass the run's timeout"
        );
        assert_eq!(
            gave_up_message("HTTP 500", 2, RetryPlan::GiveUp),
            "HTTP 500 (after 2 retries)"
        );
    }
}
