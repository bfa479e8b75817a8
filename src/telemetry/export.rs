//! The one export of a run's (or a batch's) spans, at its end: the spans
//! the SDK finished are kept in memory by [`Collect`] and sent in one go by
//! the official OTLP exporter over http/protobuf, through leash's own
//! reqwest client ([`LeashHttp`]), on the run's own runtime — no
//! background thread, no retry, and at most [`FLUSH_BUDGET`] however the
//! collector behaves. *Never* prints a header value, the API key or what a
//! collector answered.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, RetryPolicy, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter as _, SpanProcessor};

use super::settings::Exporting;

/// The longest the export at the end may take, all requests together.
pub const FLUSH_BUDGET: Duration = Duration::from_secs(1);

/// Spans per request: a batch of many items is sent in several.
const SPANS_PER_REQUEST: usize = 512;

/// The most of a collector's answer read (it is never shown).
const ANSWER_CAP: usize = 64 * 1024;

/// The SDK's span processor that only keeps each finished span, for the
/// one export at the end.
#[derive(Debug, Default, Clone)]
pub struct Collect {
    spans: Arc<Mutex<Vec<SpanData>>>,
}

impl Collect {
    /// Every span finished so far, taken.
    pub fn take(&self) -> Vec<SpanData> {
        std::mem::take(&mut *self.spans.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl SpanProcessor for Collect {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        self.spans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// opentelemetry-http's client, answered by leash's own reqwest client;
/// it notes why a request failed in words leash chose (never the URL, a
/// header or the collector's answer). It sends the headers leash chose
/// (the settings', a key-holding one left out), never others: the
/// exporter would add `OTEL_EXPORTER_OTLP_HEADERS` as read again.
struct LeashHttp {
    client: reqwest::Client,
    headers: reqwest::header::HeaderMap,
    failure: Arc<Mutex<Option<String>>>,
}

// The header values may carry tokens.
impl std::fmt::Debug for LeashHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeashHttp").finish_non_exhaustive()
    }
}

/// The settings' headers as reqwest sends them; one that is not a valid
/// header is left out.
fn header_map(headers: &[(String, String)]) -> reqwest::header::HeaderMap {
    use reqwest::header::{HeaderName, HeaderValue};
    headers
        .iter()
        .filter_map(|(name, value)| {
            Some((
                HeaderName::from_bytes(name.as_bytes()).ok()?,
                HeaderValue::from_str(value).ok()?,
            ))
        })
        .collect()
}

impl LeashHttp {
    fn note(&self, why: String) {
        *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(why);
    }
}

#[async_trait::async_trait]
impl HttpClient for LeashHttp {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let mut headers = self.headers.clone();
        for name in [
            reqwest::header::CONTENT_TYPE,
            reqwest::header::CONTENT_ENCODING,
        ] {
            if let Some(value) = parts.headers.get(&name) {
                headers.insert(name, value.clone());
            }
        }
        let sent = self
            .client
            .request(parts.method, parts.uri.to_string())
            .headers(headers)
            .body(body)
            .send()
            .await;
        let mut response = match sent {
            Ok(response) => response,
            Err(error) => {
                let why = match (error.is_timeout(), error.is_connect()) {
                    (true, _) => "it did not answer in time",
                    (false, true) => "cannot connect",
                    (false, false) => "the request failed",
                };
                self.note(why.to_owned());
                return Err(why.into());
            }
        };
        let status = response.status();
        if !status.is_success() {
            self.note(format!("it answered HTTP {}", status.as_u16()));
        }
        let mut answer = Vec::new();
        while answer.len() < ANSWER_CAP {
            match response.chunk().await {
                Ok(Some(chunk)) => answer.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(_) => {
                    self.note("its answer broke off".to_owned());
                    return Err("its answer broke off".into());
                }
            }
        }
        let mut built = Response::builder().status(status.as_u16());
        if let Some(kind) = response.headers().get(reqwest::header::CONTENT_TYPE) {
            built = built.header(reqwest::header::CONTENT_TYPE, kind);
        }
        built
            .body(Bytes::from(answer))
            .map_err(|_| HttpError::from("the collector's answer is not HTTP"))
    }
}

/// The endpoint as it may be shown: no user, password or query (they
/// may carry a token).
pub fn shown_endpoint(endpoint: &str) -> String {
    let (scheme, rest) = endpoint.split_once("://").unwrap_or(("", endpoint));
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.rsplit('@').next().unwrap_or(authority);
    format!("{scheme}://{host}{path}")
}

/// Sends `spans` to the collector within `budget` (at most
/// [`FLUSH_BUDGET`]); on failure, the one line that says so.
pub async fn export(
    spans: Vec<SpanData>,
    exporting: &Exporting,
    resource: &Resource,
    budget: Duration,
) -> Result<(), String> {
    if spans.is_empty() {
        return Ok(());
    }
    let budget = budget.min(FLUSH_BUDGET);
    let shown = shown_endpoint(&exporting.endpoint);
    let failure = Arc::new(Mutex::new(None));
    let client = reqwest::Client::builder()
        .timeout(budget)
        .connect_timeout(budget)
        .build()
        .map_err(|_| format!("traces not exported to {shown}: cannot build the HTTP client"))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(LeashHttp {
            client,
            headers: header_map(&exporting.headers),
            failure: Arc::clone(&failure),
        })
        .with_endpoint(exporting.endpoint.clone())
        .with_protocol(Protocol::HttpBinary)
        .with_timeout(budget)
        .with_retry_policy(RetryPolicy::disabled())
        .build();
    let mut exporter = match exporter {
        Ok(exporter) => exporter,
        // Its message may quote a header: only its kind is said.
        Err(_) => {
            return Err(format!(
                "traces not exported to {shown}: the exporter refused its settings \
                 (check OTEL_EXPORTER_OTLP_* in the environment)"
            ));
        }
    };
    exporter.set_resource(resource);
    let sent = tokio::time::timeout(budget, async {
        let mut spans = spans;
        while !spans.is_empty() {
            let rest = spans.split_off(spans.len().min(SPANS_PER_REQUEST));
            if exporter.export(spans).await.is_err() {
                return false;
            }
            spans = rest;
        }
        true
    })
    .await;
    let why = match sent {
        Ok(true) => return Ok(()),
        Ok(false) => failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_else(|| "the export failed".to_owned()),
        Err(_) => format!("it did not answer within {} ms", budget.as_millis()),
    };
    Err(format!("traces not exported to {shown}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shown_endpoint_has_no_credentials_or_query() {
        assert_eq!(
            shown_endpoint("https://user:tok@otel.example:4318/v1/traces?key=abc"),
            "https://otel.example:4318/v1/traces"
        );
        assert_eq!(
            shown_endpoint("http://127.0.0.1:4318/v1/traces"),
            "http://127.0.0.1:4318/v1/traces"
        );
    }
}
