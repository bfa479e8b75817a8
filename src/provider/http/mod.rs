//! The HTTP layer the providers share: one client, one `send` that turns
//! every failure into a message a person understands (status, the
//! provider's own error text, or the connection problem), and the retry
//! schedule (which failures, how long to wait, when to give up).
//!
//! It must never let the API key into a message — every message passes
//! through [`redact`] —, never read an error body without a bound, and
//! never wait without bound for response headers. It never retries by
//! itself: the provider decides, because only it knows whether the body of
//! a response was already used.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{CONTENT_TYPE, HeaderMap, LOCATION, RETRY_AFTER};
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::{ApiKey, HttpSettings};

/// How long establishing a connection (TCP and TLS) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the server may take to send the response headers once the
/// request is sent (as long as a stream may stay silent: some servers only
/// answer once the model produced its first token).
pub const HEADERS_TIMEOUT: Duration = super::sse::IDLE_TIMEOUT;

/// How much of an error response's body is read.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// How much of an unrecognised error body goes into a message.
const SNIPPET_CHARS: usize = 200;

/// The wait before the first retry; it doubles for each further retry.
const BACKOFF_BASE: Duration = Duration::from_millis(500);

/// The longest computed backoff (before jitter).
const BACKOFF_CAP: Duration = Duration::from_secs(8);

/// The longest `retry-after` honoured as given; a longer one falls back to
/// the computed backoff, as the official OpenAI and Anthropic SDKs do.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);

/// The HTTP client for provider requests: rustls, a connect timeout, no
/// total timeout (the run's abort timer bounds a request by dropping it),
/// and no redirects (a redirected POST would silently become a GET; the
/// failure message names the new location instead).
///
/// A server's certificate is trusted when it chains to a root of the
/// system's store, of `SSL_CERT_FILE` / `SSL_CERT_DIR` when set (read the
/// OpenSSL way, by `rustls-native-certs`: a corporate proxy's CA, a
/// self-signed local server), or of the Mozilla roots built in (a
/// container without a CA bundle still reaches the public APIs). No
/// OpenSSL is involved. Building fails only when those files hold
/// certificates and none of them can be read.
pub fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("leash/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|err| {
            format!(
                "could not set up TLS (check SSL_CERT_FILE / SSL_CERT_DIR): {}",
                root_cause(&err)
            )
        })
}

/// A request that got no usable response: why, in words, and whether and
/// when it may be tried again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HttpFailure {
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// What went wrong, for people; never holds the API key.
    pub message: String,
    /// The server's `retry-after` / `retry-after-ms`, when it sent one.
    pub retry_after: Option<Duration>,
    /// Whether trying again may help (408/409/429/5xx, connection failures).
    pub retryable: bool,
}

/// Sends one request. A 2xx response is returned with its body untouched;
/// anything else becomes an [`HttpFailure`] whose message says what the
/// server or the connection said, with `key` redacted.
pub async fn send(
    client: &reqwest::Client,
    request: reqwest::Request,
    key: Option<&ApiKey>,
) -> Result<reqwest::Response, HttpFailure> {
    send_within(client, request, key, HEADERS_TIMEOUT).await
}

/// [`send`], waiting at most `headers_timeout` for the response headers.
/// A server that sends none in time is a retryable failure.
pub async fn send_within(
    client: &reqwest::Client,
    request: reqwest::Request,
    key: Option<&ApiKey>,
    headers_timeout: Duration,
) -> Result<reqwest::Response, HttpFailure> {
    let target = display_url(request.url());
    let response = match tokio::time::timeout(headers_timeout, client.execute(request)).await {
        Ok(Ok(response)) => response,
        Ok(Err(err)) => return Err(connection_failure(&err, &target, key)),
        Err(_) => {
            let message = format!(
                "{target} sent no response within {}s",
                headers_timeout.as_secs_f64()
            );
            return Err(HttpFailure {
                status: None,
                message: redact(&message, key),
                retry_after: None,
                retryable: true,
            });
        }
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers(), SystemTime::now());
    let retryable = should_retry(status.as_u16(), response.headers());
    let location = location(status, response.headers());
    let body = read_bounded(response, ERROR_BODY_LIMIT).await;
    let mut message = status_message(status.as_u16(), &body, &target);
    if let Some(location) = location {
        message.push_str(&format!(
            " (redirected to {location}; use that as the base URL)"
        ));
    }
    Err(HttpFailure {
        status: Some(status.as_u16()),
        message: redact(&message, key),
        retry_after,
        retryable,
    })
}

/// Whether a failed response may be tried again. The server's
/// `x-should-retry: true` / `false` decides when it sent one, ahead of the
/// status, as in the official OpenAI and Anthropic SDKs (any other value
/// is ignored); else [`is_retryable_status`].
fn should_retry(status: u16, headers: &HeaderMap) -> bool {
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

/// Checks that a successful response is an event stream before a byte of
/// it is used. A body the server labels HTML, JSON or XML is not (a login
/// page of a proxy, a server that ignores `stream: true`): it becomes a
/// failure that says what came instead, quoting the start of the body with
/// `key` redacted. A missing or any other content type is read as a stream.
pub async fn event_stream(
    response: reqwest::Response,
    key: Option<&ApiKey>,
) -> Result<reqwest::Response, HttpFailure> {
    let status = response.status();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let Some(kind) = content_type.as_deref().and_then(not_an_event_stream) else {
        return Ok(response);
    };
    let body = read_bounded(response, ERROR_BODY_LIMIT).await;
    let detail = match kind {
        "JSON" => provider_error_message(&body).unwrap_or_else(|| snippet(&body)),
        _ => snippet(&body),
    };
    let hint = match kind {
        "JSON" => "the server may not support streaming",
        _ => "is the base URL the API's address?",
    };
    let head = format!("HTTP {status} with {kind} instead of an event stream ({hint})");
    let message = if detail.is_empty() {
        head
    } else {
        format!("{head}: {detail}")
    };
    Err(HttpFailure {
        status: Some(status.as_u16()),
        message: redact(&message, key),
        retry_after: None,
        retryable: false,
    })
}

/// What a content type says the body is, when that is surely not an event
/// stream.
fn not_an_event_stream(content_type: &str) -> Option<&'static str> {
    let media = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if media == "text/html" || media == "application/xhtml+xml" {
        Some("HTML")
    } else if media == "application/json" || media.ends_with("+json") {
        Some("JSON")
    } else if media.ends_with("/xml") || media.ends_with("+xml") {
        Some("XML")
    } else {
        None
    }
}

/// Whether a response with this status may succeed when tried again:
/// timeouts, conflicts, rate limits and server errors (529 is Anthropic's
/// "overloaded"). 400/401/403/404 and the other 4xx never will.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500..=599)
}

/// How long to wait before retry number `retry` (1 for the first), or
/// `None` to give up: the failure is not retryable, the retries are used
/// up, or the wait would end past the run's deadline. The wait is the
/// server's `retry-after` when it gave a reasonable one, else exponential
/// backoff (500 ms × 2^(retry-1), at most 8 s) with ±25% jitter.
pub fn retry_delay(failure: &HttpFailure, retry: u32, settings: &HttpSettings) -> Option<Duration> {
    match retry_plan(failure, retry, settings) {
        RetryPlan::After(delay) => Some(delay),
        RetryPlan::GiveUp | RetryPlan::PastDeadline(_) => None,
    }
}

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

/// [`retry_delay`], saying why there is no retry.
pub fn retry_plan(failure: &HttpFailure, retry: u32, settings: &HttpSettings) -> RetryPlan {
    if !failure.retryable || retry == 0 || retry > settings.retries {
        return RetryPlan::GiveUp;
    }
    let delay = match failure.retry_after {
        Some(wait) if wait <= RETRY_AFTER_CAP => wait,
        _ => jittered(backoff(retry), rand::random_range(0.75..=1.25)),
    };
    let ends = tokio::time::Instant::now().checked_add(delay);
    match settings.deadline {
        Some(deadline) if ends.is_none_or(|ends| ends >= deadline) => {
            RetryPlan::PastDeadline(delay)
        }
        _ => RetryPlan::After(delay),
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

/// Keys at least this long are redacted wherever they occur; shorter ones
/// only where they stand as a whole token (see [`redact`]).
pub const SHORT_KEY_CHARS: usize = 8;

/// `text` with the key replaced by `***`, so a server that echoes the key
/// (in an error body, a URL) cannot leak it.
///
/// A real key is long and random, so every occurrence is replaced. A key
/// shorter than [`SHORT_KEY_CHARS`] characters (a local server's `x` or
/// `test`) would otherwise turn "text" into "***" and "latest" into
/// "la***" all over a message: such a key is replaced only where it
/// stands as a whole token, not inside a longer word (neighbours that
/// are letters, digits, `-` or `_` make it part of one), and one made of
/// no letter or digit at all is left alone. A short key is no secret
/// worth the name; it still never appears on its own.
pub fn redact(text: &str, key: Option<&ApiKey>) -> String {
    let Some(secret) = key.map(ApiKey::expose).filter(|secret| !secret.is_empty()) else {
        return text.to_string();
    };
    if secret.chars().count() >= SHORT_KEY_CHARS {
        return text.replace(secret, "***");
    }
    if !secret.chars().any(char::is_alphanumeric) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (at, _) in text.match_indices(secret) {
        let end = at + secret.len();
        let before = text[..at].chars().next_back();
        let after = text[end..].chars().next();
        if !before.is_some_and(is_token_char) && !after.is_some_and(is_token_char) {
            out.push_str(&text[copied..at]);
            out.push_str("***");
            copied = end;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// A character that continues a word or a key (`sk-ab_12`), for telling a
/// short key on its own from one inside a longer token.
fn is_token_char(c: char) -> bool {
    c.is_alphanumeric() || c == '-' || c == '_'
}

/// The message a provider put in an error body: `error.message` (OpenAI,
/// Anthropic and most compatible servers), or `error` / `message` /
/// `detail` as plain strings (Ollama, vLLM, FastAPI servers). `None` when
/// the body is not JSON or holds none of these.
pub fn provider_error_message(body: &str) -> Option<String> {
    let parsed: ErrorBody = serde_json::from_str(body).ok()?;
    let from_error = match parsed.error {
        Some(ErrorField::Object {
            message: Some(Text::Text(message)),
        }) => Some(message),
        Some(ErrorField::Text(message)) => Some(message),
        _ => None,
    };
    [
        from_error,
        parsed.message.and_then(Text::into_string),
        parsed.detail.and_then(Text::into_string),
    ]
    .into_iter()
    .flatten()
    .map(|message| message.trim().to_string())
    .find(|message| !message.is_empty())
}

/// `body` as a one-line excerpt of at most a few hundred characters.
pub fn snippet(body: &str) -> String {
    let collapsed = body.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(SNIPPET_CHARS) {
        Some((cut, _)) => format!("{}…", &collapsed[..cut]),
        None => collapsed,
    }
}

/// The innermost cause of an error, which says what actually happened
/// ("Connection refused (os error 111)"); the outer layers only say where.
pub(crate) fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = err;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

/// An error body as providers send it; every field is optional because
/// compatible servers each do it differently.
#[derive(Debug, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    error: Option<ErrorField>,
    #[serde(default)]
    message: Option<Text>,
    #[serde(default)]
    detail: Option<Text>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ErrorField {
    Text(String),
    Object {
        #[serde(default)]
        message: Option<Text>,
    },
    Other(IgnoredAny),
}

/// A field that is useful only when it is a string.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Text {
    Text(String),
    Other(IgnoredAny),
}

impl Text {
    fn into_string(self) -> Option<String> {
        match self {
            Text::Text(text) => Some(text),
            Text::Other(_) => None,
        }
    }
}

/// `HTTP 401 Unauthorized: <what the provider said>`. A 404 or 405 is
/// most often a base URL that points to the wrong place, so it names the
/// URL that was asked (`url`, without query or credentials).
fn status_message(status: u16, body: &str, url: &str) -> String {
    let reason = match status {
        529 => "Overloaded",
        _ => reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|status| status.canonical_reason())
            .unwrap_or(""),
    };
    let mut head = format!("HTTP {status} {reason}").trim_end().to_string();
    if matches!(status, 404 | 405) {
        head.push_str(&format!(" for POST {url}"));
    }
    let detail = provider_error_message(body).unwrap_or_else(|| snippet(body));
    if detail.is_empty() {
        head
    } else {
        format!("{head}: {detail}")
    }
}

/// A failure before any response: the connection could not be made, or it
/// broke before the response headers arrived.
fn connection_failure(err: &reqwest::Error, target: &str, key: Option<&ApiKey>) -> HttpFailure {
    if let Some(problem) = certificate_problem(err) {
        // The same certificate will be refused the same way next time.
        let message = format!(
            "the TLS certificate of {target} is not trusted ({problem}); {}",
            certificate_hint()
        );
        return HttpFailure {
            status: None,
            message: redact(&message, key),
            retry_after: None,
            retryable: false,
        };
    }
    let cause = root_cause(err);
    let message = if err.is_connect() || err.is_timeout() {
        format!("could not connect to {target}: {cause}")
    } else {
        format!("request to {target} failed: {cause}")
    };
    HttpFailure {
        status: None,
        message: redact(&message, key),
        retry_after: None,
        // A request that could not even be built will not build next time.
        retryable: !err.is_builder(),
    }
}

/// What rustls said about the server's certificate, when the handshake
/// failed on it. The rustls error sits inside `io::Error`s (two, with
/// hyper-rustls), which hide what they wrap from `source()`: each one is
/// opened too.
fn certificate_problem(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut current = Some(err);
    while let Some(error) = current {
        let mut inner = Some(error);
        while let Some(candidate) = inner {
            if let Some(
                tls @ (rustls::Error::InvalidCertificate(_)
                | rustls::Error::NoCertificatesPresented),
            ) = candidate.downcast_ref::<rustls::Error>()
            {
                return Some(tls.to_string());
            }
            inner = candidate
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
                .map(|wrapped| wrapped as &(dyn std::error::Error + 'static));
        }
        current = error.source();
    }
    None
}

/// How to make a certificate trusted, given what is set.
fn certificate_hint() -> String {
    let set: Vec<String> = ["SSL_CERT_FILE", "SSL_CERT_DIR"]
        .into_iter()
        .filter_map(|name| {
            let value = std::env::var_os(name)?;
            (!value.is_empty()).then(|| format!("{name}={}", value.to_string_lossy()))
        })
        .collect();
    if set.is_empty() {
        "for a private CA or a self-signed server, point SSL_CERT_FILE at its certificate (PEM)"
            .to_string()
    } else {
        format!(
            "{} does not hold a certificate it chains to",
            set.join(" and ")
        )
    }
}

/// The URL without credentials, query or fragment: enough to tell which
/// server was meant, nothing that may hold a secret.
fn display_url(url: &reqwest::Url) -> String {
    format!("{}{}", url.origin().ascii_serialization(), url.path())
}

/// Where a redirect points, for the message.
fn location(status: reqwest::StatusCode, headers: &HeaderMap) -> Option<String> {
    if !status.is_redirection() {
        return None;
    }
    let value = headers.get(LOCATION)?.to_str().ok()?;
    Some(snippet(value))
}

/// The first `limit` bytes of the body, lossily decoded; whatever arrived
/// when reading fails.
async fn read_bounded(mut response: reqwest::Response, limit: usize) -> String {
    let mut body = Vec::new();
    while body.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                body.extend_from_slice(&chunk[..chunk.len().min(limit - body.len())])
            }
            Ok(None) | Err(_) => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The server's requested wait: `retry-after-ms` (OpenAI) wins over
/// `retry-after` (seconds or an HTTP date, RFC 9110).
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
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
        let at = parse_http_date(value)?;
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

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the one date format
/// servers may send today. The obsolete RFC 850 and asctime forms are not
/// read; such a header is ignored and the computed backoff is used.
fn parse_http_date(value: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = value.split_whitespace().collect();
    let [_weekday, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let day: u32 = day.parse().ok()?;
    let month = 1 + [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|name| name == month)? as u32;
    let year: i64 = year.parse().ok()?;
    let mut clock = time.split(':').map(|part| part.parse::<u64>().ok());
    let (Some(Some(hour)), Some(Some(minute)), Some(Some(second)), None) =
        (clock.next(), clock.next(), clock.next(), clock.next())
    else {
        return None;
    };
    if !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let days = u64::try_from(days_from_civil(year, month, day)).ok()?;
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second;
    UNIX_EPOCH.checked_add(Duration::from_secs(seconds))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_from_march = i64::from((month + 9) % 12);
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use reqwest::header::HeaderValue;

    fn settings(retries: u32) -> HttpSettings {
        HttpSettings {
            base_url: "http://127.0.0.1:1".to_string(),
            api_key: None,
            retries,
            max_tokens: None,
            temperature: None,
            deadline: None,
            output_schema: None,
        }
    }

    fn failure(status: u16, retry_after: Option<Duration>) -> HttpFailure {
        HttpFailure {
            status: Some(status),
            message: format!("HTTP {status}"),
            retry_after,
            retryable: is_retryable_status(status),
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
        assert_eq!(
            parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"),
            Some(UNIX_EPOCH)
        );
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2000 12:00:00 GMT"),
            Some(UNIX_EPOCH + Duration::from_secs(951_825_600))
        );
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), None);
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 25:49:37 GMT"), None);
        assert_eq!(parse_http_date("Sun, 06 Foo 1994 08:49:37 GMT"), None);
        assert_eq!(parse_http_date("Wed, 31 Dec 1969 23:59:59 GMT"), None);
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
                let delay = retry_delay(&failure, retry, &settings(6)).unwrap_or_default();
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
            retry_delay(&failure(429, Some(Duration::from_secs(3))), 1, &settings),
            Some(Duration::from_secs(3))
        );
        let long = retry_delay(&failure(429, Some(Duration::from_secs(3600))), 1, &settings)
            .unwrap_or_default();
        assert!(long <= Duration::from_millis(625), "{long:?}");
    }

    #[test]
    fn giving_up() {
        let settings = settings(2);
        assert_eq!(retry_delay(&failure(401, None), 1, &settings), None);
        assert_eq!(
            retry_delay(&failure(400, Some(Duration::from_secs(1))), 1, &settings),
            None
        );
        assert!(retry_delay(&failure(500, None), 2, &settings).is_some());
        assert_eq!(retry_delay(&failure(500, None), 3, &settings), None);
        assert_eq!(
            retry_delay(&failure(500, None), 1, &self::settings(0)),
            None
        );
    }

    #[tokio::test]
    async fn no_wait_past_the_deadline() {
        let mut settings = settings(2);
        settings.deadline = Some(tokio::time::Instant::now() + Duration::from_secs(2));
        assert_eq!(
            retry_delay(&failure(429, Some(Duration::from_secs(5))), 1, &settings),
            None
        );
        assert_eq!(
            retry_delay(&failure(429, Some(Duration::from_secs(1))), 1, &settings),
            Some(Duration::from_secs(1))
        );
        settings.deadline = Some(tokio::time::Instant::now());
        assert_eq!(retry_delay(&failure(500, None), 1, &settings), None);
    }

    #[test]
    fn redaction_replaces_every_occurrence() {
        let key = ApiKey::new("sk-secret-123");
        assert_eq!(
            redact("bad key sk-secret-123 (sk-secret-123)", Some(&key)),
            "bad key *** (***)"
        );
        assert_eq!(redact("nothing here", Some(&key)), "nothing here");
        assert_eq!(redact("sk-secret-123", None), "sk-secret-123");
        assert_eq!(redact("text", Some(&ApiKey::new(""))), "text");
    }

    #[test]
    fn a_short_key_is_redacted_only_as_a_whole_token() {
        let key = ApiKey::new("test");
        assert_eq!(
            redact(
                "HTTP 401: invalid key test; the latest test-suite (test)",
                Some(&key)
            ),
            "HTTP 401: invalid key ***; the latest test-suite (***)"
        );
        assert_eq!(redact("test", Some(&key)), "***");
        assert_eq!(redact("key=test&x=1", Some(&key)), "key=***&x=1");
        assert_eq!(redact("testtest", Some(&key)), "testtest");
        let x = ApiKey::new("x");
        assert_eq!(
            redact("could not connect to http://127.0.0.1:9/v1: x", Some(&x)),
            "could not connect to http://127.0.0.1:9/v1: ***"
        );
        assert_eq!(
            redact("max tokens exceeded", Some(&x)),
            "max tokens exceeded"
        );
        // No letter or digit: nothing a redaction could protect.
        assert_eq!(redact("a - b", Some(&ApiKey::new("-"))), "a - b");
        assert_eq!(redact("a b", Some(&ApiKey::new(" "))), "a b");
        // Eight characters and more: every occurrence, inside words too.
        let long = ApiKey::new("abcdefgh");
        assert_eq!(redact("xabcdefghx", Some(&long)), "x***x");
        // Multi-byte neighbours are read as characters.
        assert_eq!(redact("ékeyé key", Some(&ApiKey::new("key"))), "ékeyé ***");
    }

    const URL: &str = "http://127.0.0.1:9/v1/messages";

    #[test]
    fn error_messages_from_each_providers_body() {
        let openai = r#"{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        assert_eq!(
            status_message(401, openai, URL),
            "HTTP 401 Unauthorized: Incorrect API key provided."
        );
        let anthropic =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            status_message(529, anthropic, URL),
            "HTTP 529 Overloaded: Overloaded"
        );
        assert_eq!(
            status_message(404, r#"{"error":"model 'x' not found"}"#, URL),
            "HTTP 404 Not Found for POST http://127.0.0.1:9/v1/messages: model 'x' not found"
        );
        assert_eq!(
            status_message(404, r#"{"detail":"Not Found"}"#, URL),
            "HTTP 404 Not Found for POST http://127.0.0.1:9/v1/messages: Not Found"
        );
        assert_eq!(
            status_message(
                502,
                "<html>\n <head><title>502 Bad Gateway</title></head>\n</html>",
                URL
            ),
            "HTTP 502 Bad Gateway: <html> <head><title>502 Bad Gateway</title></head> </html>"
        );
        assert_eq!(status_message(503, "", URL), "HTTP 503 Service Unavailable");
        assert_eq!(status_message(599, "x", URL), "HTTP 599: x");
        assert_eq!(
            status_message(400, r#"{"error":{"code":42}}"#, URL),
            r#"HTTP 400 Bad Request: {"error":{"code":42}}"#
        );
    }

    #[test]
    fn snippets_are_short_and_cut_on_a_character() {
        let long = "é".repeat(500);
        let cut = snippet(&long);
        assert_eq!(cut.chars().count(), SNIPPET_CHARS + 1);
        assert!(cut.ends_with('…'));
    }

    #[tokio::test]
    async fn connection_refused_is_retryable_and_names_the_server() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let client = client().unwrap();
        let url = format!("http://127.0.0.1:{port}/v1/chat/completions?key=sk-x");
        let request = client.post(&url).build().unwrap();
        let failure = send(&client, request, Some(&ApiKey::new("sk-x")))
            .await
            .unwrap_err();
        assert_eq!(failure.status, None);
        assert!(failure.retryable);
        assert!(
            failure.message.starts_with(&format!(
                "could not connect to http://127.0.0.1:{port}/v1/chat/completions: "
            )),
            "{}",
            failure.message
        );
        assert!(!failure.message.contains("sk-x"));
    }

    #[tokio::test]
    async fn an_error_status_reads_the_body_and_redacts_the_key() {
        use wiremock::matchers::method;
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(429)
                    .insert_header("retry-after", "2")
                    .set_body_raw(
                        r#"{"error":{"message":"Rate limit for key sk-live-42 reached"}}"#,
                        "application/json",
                    ),
            )
            .mount(&server)
            .await;
        let client = client().unwrap();
        let request = client.post(server.uri()).build().unwrap();
        let failure = send(&client, request, Some(&ApiKey::new("sk-live-42")))
            .await
            .unwrap_err();
        assert_eq!(
            failure,
            HttpFailure {
                status: Some(429),
                message: "HTTP 429 Too Many Requests: Rate limit for key *** reached".to_string(),
                retry_after: Some(Duration::from_secs(2)),
                retryable: true,
            }
        );
    }

    #[tokio::test]
    async fn a_server_that_never_answers_is_a_retryable_failure_after_the_timeout() {
        // Accepts the connection, reads nothing, answers nothing.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/messages", listener.local_addr().unwrap());
        let hold = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            tokio::time::sleep(Duration::from_secs(10)).await;
            drop(socket);
        });
        let client = client().unwrap();
        let request = client.post(&url).build().unwrap();
        let started = std::time::Instant::now();
        let failure = send_within(&client, request, None, Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(
            failure.message,
            format!("{url} sent no response within 0.3s")
        );
        assert!(failure.retryable);
        hold.abort();
    }

    async fn served(template: wiremock::ResponseTemplate) -> Result<String, HttpFailure> {
        use wiremock::matchers::method;
        use wiremock::{Mock, MockServer};
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(template)
            .mount(&server)
            .await;
        let client = client().unwrap();
        let request = client.post(server.uri()).build().unwrap();
        let key = ApiKey::new("sk-echoed-key");
        let response = send(&client, request, Some(&key)).await?;
        let response = event_stream(response, Some(&key)).await?;
        Ok(response.text().await.unwrap())
    }

    #[tokio::test]
    async fn a_success_that_is_not_an_event_stream_says_what_came_instead() {
        use wiremock::ResponseTemplate;
        let html = ResponseTemplate::new(200).set_body_raw(
            "<html><body>Please log in, sk-echoed-key</body></html>",
            "text/html; charset=utf-8",
        );
        let failure = served(html).await.unwrap_err();
        assert_eq!(
            failure.message,
            "HTTP 200 OK with HTML instead of an event stream (is the base URL the API's address?): <html><body>Please log in, ***</body></html>"
        );
        assert!(!failure.retryable);
        let json = ResponseTemplate::new(200).set_body_raw(
            r#"{"error":{"message":"streaming is not supported"}}"#,
            "application/json",
        );
        assert_eq!(
            served(json).await.unwrap_err().message,
            "HTTP 200 OK with JSON instead of an event stream (the server may not support streaming): streaming is not supported"
        );
        // An event stream, or a body without a content type, is read.
        let sse = ResponseTemplate::new(200).set_body_raw("data: x\n\n", "text/event-stream");
        assert_eq!(served(sse).await.unwrap(), "data: x\n\n");
        let bare = ResponseTemplate::new(200).set_body_bytes("data: y\n\n");
        assert_eq!(served(bare).await.unwrap(), "data: y\n\n");
    }

    #[test]
    fn content_types_that_are_surely_not_event_streams() {
        for (content_type, kind) in [
            ("text/html", Some("HTML")),
            ("TEXT/HTML; charset=UTF-8", Some("HTML")),
            ("application/json", Some("JSON")),
            ("application/problem+json", Some("JSON")),
            ("text/xml", Some("XML")),
            ("text/event-stream", None),
            ("text/event-stream; charset=utf-8", None),
            ("text/plain", None),
            ("application/octet-stream", None),
            ("", None),
        ] {
            assert_eq!(not_an_event_stream(content_type), kind, "{content_type}");
        }
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

    #[tokio::test]
    async fn a_redirect_is_not_followed_and_says_where_it_points() {
        use wiremock::matchers::method;
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(301).insert_header("location", "https://example.com/v1"),
            )
            .mount(&server)
            .await;
        let client = client().unwrap();
        let request = client.post(server.uri()).build().unwrap();
        let failure = send(&client, request, None).await.unwrap_err();
        assert_eq!(
            failure.message,
            "HTTP 301 Moved Permanently (redirected to https://example.com/v1; use that as the base URL)"
        );
        assert!(!failure.retryable);
    }
}
