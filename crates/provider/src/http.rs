//! The HTTP layer under the driver: one client, one `send` that turns
//! every failure into a message a person understands (status, the
//! provider's own error text, or the connection problem) together with
//! what the response's headers say (`headers.rs`: the server's
//! `retry-after` and `x-should-retry`, which the driver's retry plan acts
//! on, and the announced rate limits), the check that a reply is an event
//! stream, and [`redact`].
//!
//! It must never let the API key into a message — every message passes
//! through [`redact`] —, never read an error body without a bound, and
//! never wait without bound for response headers. It never retries by
//! itself: the driver decides, because only it knows whether the body of
//! a response was already used.

use std::time::{Duration, SystemTime};

use reqwest::header::{CONTENT_TYPE, HeaderMap, LOCATION};
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::ApiKey;
use headers::RateHint;
pub use leash_protocol::secret::redact;

mod cause;
pub mod headers;

pub(crate) use cause::root_cause;

/// How long establishing a connection (TCP and TLS) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a response body may stay silent (no byte at all) before the
/// reply counts as failed. Generous, because a reasoning model may think
/// for minutes before its first token; the run's abort timer is usually
/// shorter and fires first.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// How long the server may take to send the response headers once the
/// request is sent (as long as a stream may stay silent: some servers only
/// answer once the model produced its first token).
pub const HEADERS_TIMEOUT: Duration = IDLE_TIMEOUT;

/// How much of an error response's body is read.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// How much of an unrecognised error body goes into a message.
const SNIPPET_CHARS: usize = 200;

/// Whether a client needs certificate roots: not for a plain `http://`
/// endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    /// An `https://` endpoint: the system's roots and the built-in ones.
    Roots,
    /// A plain `http://` endpoint: no roots are read.
    None,
}

impl Tls {
    /// What `url` needs.
    pub fn for_url(url: &str) -> Tls {
        match url.trim_start().get(..7) {
            Some(scheme) if scheme.eq_ignore_ascii_case("http://") => Tls::None,
            _ => Tls::Roots,
        }
    }
}

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
///
/// `Tls::None` (a plain `http://` base URL: a local server, a proxy on
/// loopback) loads no roots at all: reading the system's store costs a
/// few milliseconds of start-up — most of the time to the first request —
/// and a client that never follows a redirect never leaves `http://`.
pub fn client(tls: Tls) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .tls_built_in_root_certs(tls == Tls::Roots)
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
    /// The rate limits the server announced with the failure.
    pub rate_hint: RateHint,
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
    let mut request = request;
    // Traced: the model request's span goes with it (docs/src/tracing.md).
    if let Some(traceparent) =
        leash_protocol::trace_context::traceparent(leash_protocol::trace_context::Scope::Model)
        && let Ok(value) = reqwest::header::HeaderValue::from_str(&traceparent)
    {
        request.headers_mut().insert("traceparent", value);
    }
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
                rate_hint: RateHint::default(),
            });
        }
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = headers::retry_after(response.headers(), SystemTime::now());
    let rate_hint = RateHint::from_headers(response.headers());
    let retryable = headers::should_retry(status.as_u16(), response.headers());
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
        rate_hint,
    })
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
        rate_hint: RateHint::default(),
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
            rate_hint: RateHint::default(),
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
        rate_hint: RateHint::default(),
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

#[cfg(test)]
mod tests;
