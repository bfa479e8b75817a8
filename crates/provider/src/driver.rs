//! The one HTTP driver both wire formats run on (rust-genai's adapter
//! split): a [`WireFormat`] says where a request goes, which headers and
//! body it carries and how a reply's SSE events decode; [`HttpProvider`]
//! does everything else the same way for every format — build the request
//! once, send it with the retries of ARCHITECTURE.md §2.4 (a `Retry` event, then the
//! back-off of [`retry`]), check that the reply is an event stream, feed its
//! events to the format's decoder and yield what it makes as it arrives.
//!
//! It must never retry once a byte of a response body was used, and never
//! let the key into an event: every `Error` and `Retry` text is redacted on
//! its way out.

mod decoder;
mod gate;
mod observed;
pub mod retry;

pub use decoder::{Flow, WireDecoder, broken_body, cut_off, provider_error, unreadable_event};
pub use gate::{RateGate, RateHint};

#[cfg(test)]
mod tests;

use std::marker::PhantomData;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};

use super::sse::{self, SseError, SseEvent};
use super::{ApiKey, HttpSettings, Provider, Request, StreamEvent, http};

/// What one API's wire format is: the endpoint, the headers, the request
/// body and the decoder of its streamed reply. No I/O: the driver sends.
pub trait WireFormat: Send + Sync + 'static {
    /// The provider's name as it appears in messages.
    const NAME: &'static str;
    /// The API base when the configuration gives none (an empty base URL).
    const DEFAULT_BASE_URL: &'static str;
    /// The decoder of one streamed reply.
    type Decoder: WireDecoder;

    /// The path of the streaming endpoint, appended to the base URL.
    fn path() -> &'static str;

    /// The headers this format sends on every request besides
    /// `content-type` and `accept` (an API version).
    fn headers() -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// The header that carries a (non-empty) key: its name and value.
    fn key_header(key: &str) -> (&'static str, String);

    /// The JSON body of one request.
    fn body(request: &Request<'_>, settings: &HttpSettings) -> serde_json::Result<Vec<u8>>;

    /// The URL one request for `model` goes to: by default the base URL
    /// with [`WireFormat::path`]; a cloud that names the model (Azure's
    /// deployment, Gemini's model) or a query in the URL says its own.
    fn url(settings: &HttpSettings, model: &str) -> String
    where
        Self: Sized,
    {
        let _ = model;
        endpoint::<Self>(&settings.base_url)
    }

    /// The media type the reply is asked for (`accept`).
    fn accept() -> &'static str {
        "text/event-stream"
    }

    /// Authenticates the built request itself (Bedrock's SigV4), or says
    /// it did not (`Ok(false)`): then the key goes in [`WireFormat::key_header`].
    fn sign(request: &mut reqwest::Request, settings: &HttpSettings) -> Result<bool, String> {
        let _ = (request, settings);
        Ok(false)
    }

    /// The events of a reply's body: server-sent events, or a framing of
    /// the API's own read into the same (name, data) pairs.
    fn events(response: reqwest::Response) -> BoxStream<'static, Result<SseEvent, SseError>> {
        sse::events(response)
    }
}

/// The URL a request of `F` goes to: the base (or `F`'s default when it
/// is empty) with the endpoint's path; a trailing slash on the base is fine.
pub fn endpoint<F: WireFormat>(base_url: &str) -> String {
    let base = base_url.trim();
    let base = if base.is_empty() {
        F::DEFAULT_BASE_URL
    } else {
        base
    };
    format!("{}{}", base.trim_end_matches('/'), F::path())
}

/// A model behind an HTTP API that speaks the wire format `F`.
pub struct HttpProvider<F> {
    settings: HttpSettings,
    /// The HTTP client, or why it could not be set up (reported by the
    /// first request).
    client: Result<reqwest::Client, String>,
    format: PhantomData<fn() -> F>,
}

impl<F> Clone for HttpProvider<F> {
    fn clone(&self) -> Self {
        HttpProvider {
            settings: self.settings.clone(),
            client: self.client.clone(),
            format: PhantomData,
        }
    }
}

impl<F> std::fmt::Debug for HttpProvider<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider")
            .field("settings", &self.settings)
            .field("client", &self.client)
            .finish()
    }
}

impl<F: WireFormat> HttpProvider<F> {
    /// A provider for `settings.base_url` (or the format's default when empty).
    pub fn new(settings: HttpSettings) -> Self {
        let client = match &settings.client {
            Some(shared) => Ok(shared.clone()),
            None => http::client(http::Tls::for_url(&endpoint::<F>(&settings.base_url))),
        };
        HttpProvider {
            settings,
            client,
            format: PhantomData,
        }
    }

    /// The HTTP request for `request`, built once and cloned per attempt.
    fn http_request(
        &self,
        request: &Request<'_>,
    ) -> Result<(reqwest::Client, reqwest::Request), String> {
        let client = self.client.clone()?;
        let body = F::body(request, &self.settings)
            .map_err(|err| format!("could not encode the request: {err}"))?;
        let url = F::url(&self.settings, request.model);
        let parsed =
            reqwest::Url::parse(&url).map_err(|err| format!("invalid base URL {url}: {err}"))?;
        let mut builder = client
            .post(parsed)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, F::accept());
        for (name, value) in F::headers() {
            builder = builder.header(*name, *value);
        }
        let mut request = builder.body(body).build().map_err(|err| {
            format!(
                "could not build the request to {url}: {}",
                http::root_cause(&err)
            )
        })?;
        if F::sign(&mut request, &self.settings)? {
            return Ok((client, request));
        }
        if let Some(key) = self
            .settings
            .api_key
            .as_ref()
            .map(ApiKey::expose)
            .filter(|key| !key.is_empty())
        {
            let (name, value) = F::key_header(key);
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                "the API key holds characters an HTTP header cannot carry".to_owned()
            })?;
            value.set_sensitive(true);
            request
                .headers_mut()
                .insert(HeaderName::from_static(name), value);
        }
        Ok((client, request))
    }
}

impl<F: WireFormat> Provider for HttpProvider<F> {
    fn name(&self) -> &str {
        F::NAME
    }

    fn stream(&self, request: Request<'_>) -> BoxStream<'static, StreamEvent> {
        let prepared = self.http_request(&request);
        let Some(source) = self.settings.token.clone() else {
            return stream_response::<F::Decoder>(prepared, self.settings.clone(), F::events);
        };
        // The token is got (or taken from its cache) when the request is
        // sent, then rides in the key header and is redacted like a key.
        let settings = self.settings.clone();
        Box::pin(async_stream::stream! {
            let token = match source.token().await {
                Ok(token) => token,
                Err(message) => {
                    yield StreamEvent::Error(message);
                    return;
                }
            };
            let prepared = prepared.and_then(|(client, mut request)| {
                let (name, value) = F::key_header(token.expose());
                let mut value = HeaderValue::from_str(&value)
                    .map_err(|_| "the access token holds characters an HTTP header cannot carry".to_owned())?;
                value.set_sensitive(true);
                request.headers_mut().insert(HeaderName::from_static(name), value);
                Ok((client, request))
            });
            let settings = HttpSettings { api_key: Some(token), ..settings };
            let mut events = stream_response::<F::Decoder>(prepared, settings, F::events);
            while let Some(event) = events.next().await {
                yield event;
            }
        })
    }
}

/// The stream of one response body: SSE events in, [`StreamEvent`]s out,
/// ending with exactly one `Done` or `Error` whatever the events are (as
/// long as the decoder keeps its contract). No redaction here: the driver
/// redacts what leaves it.
pub fn decode_with<D, S>(events: S) -> BoxStream<'static, StreamEvent>
where
    D: WireDecoder,
    S: futures::Stream<Item = Result<SseEvent, SseError>> + Send + 'static,
{
    Box::pin(async_stream::stream! {
        let mut events = Box::pin(events);
        let mut decoder = D::default();
        let mut out = Vec::new();
        let mut first = true;
        loop {
            let flow = match events.next().await {
                Some(Ok(event)) => {
                    // For the run's trace: the response's id, from its first event.
                    if first {
                        first = false;
                        if let Some(id) = observed::response_id(&event.data) {
                            yield StreamEvent::Provider(serde_json::json!({"type": "response_id", "id": id}));
                        }
                    }
                    decoder.decode_event(&event.event, &event.data, &mut out)
                }
                Some(Err(error)) => {
                    decoder.body_failed(&error, &mut out);
                    Flow::End
                }
                None => {
                    decoder.body_ended(&mut out);
                    Flow::End
                }
            };
            for event in out.drain(..) {
                yield event;
            }
            if flow == Flow::End {
                return;
            }
        }
    })
}

/// Sends `prepared` (the client and the request, built once and cloned
/// per attempt) and streams what the decoder `D` makes of the body. The
/// stream ends with exactly one `Done` or `Error` as long as `D` does.
fn stream_response<D: WireDecoder>(
    prepared: Result<(reqwest::Client, reqwest::Request), String>,
    settings: HttpSettings,
    framing: fn(reqwest::Response) -> BoxStream<'static, Result<SseEvent, SseError>>,
) -> BoxStream<'static, StreamEvent> {
    Box::pin(async_stream::stream! {
        let key = settings.api_key.as_ref();
        // The secrets besides the key a message could quote (a session token).
        let others = settings.other_secrets();
        let redact = |text: &str| leash_protocol::secret::redact_keys(&http::redact(text, key), &others);
        let (client, request) = match prepared {
            Ok(prepared) => prepared,
            Err(message) => {
                yield StreamEvent::Error(redact(&message));
                return;
            }
        };

        // Retries happen only here, before any byte of a body was used.
        let mut retry = 0;
        let response = loop {
            let Some(attempt) = request.try_clone() else {
                yield StreamEvent::Error("could not repeat the request".to_owned());
                return;
            };
            if let Some(gate) = &settings.gate {
                let queued = std::time::Instant::now();
                gate.admit().await;
                // A wait at the shared gate, for the run's trace.
                let waited = u64::try_from(queued.elapsed().as_millis()).unwrap_or(u64::MAX);
                if waited > 0 {
                    yield StreamEvent::Provider(serde_json::json!({"type": "rate_gate", "waited_ms": waited}));
                }
            }
            let failure = match http::send(&client, attempt, key).await {
                Ok(response) => {
                    if let Some(gate) = &settings.gate {
                        gate.answered(RateHint::from_headers(response.headers()));
                    }
                    break response;
                }
                Err(failure) => failure,
            };
            retry += 1;
            let reason = redact(&failure.message);
            let plan = retry::plan(&failure, retry, &settings);
            if let (Some(gate), Some(429 | 503)) = (&settings.gate, failure.status) {
                // Every request that shares the gate waits, not only this one.
                // Its wait is the retry rule's capped one, also when this
                // request gives up: a server's number alone never parks the
                // other holders past the cap.
                let wait = match plan {
                    retry::RetryPlan::After(delay) | retry::RetryPlan::PastDeadline(delay) => delay,
                    retry::RetryPlan::GiveUp => retry::capped_wait(failure.retry_after, retry),
                };
                gate.refused(wait, failure.rate_hint);
            }
            let delay = match plan {
                retry::RetryPlan::After(delay) => delay,
                plan => {
                    // For the run's trace: the request failed for good.
                    yield StreamEvent::Provider(serde_json::json!({"type": "failed", "status": failure.status}));
                    yield StreamEvent::Error(retry::gave_up_message(&reason, retry - 1, plan));
                    return;
                }
            };
            yield StreamEvent::Retry {
                attempt: retry,
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                reason,
            };
            tokio::time::sleep(delay).await;
        };
        yield StreamEvent::Provider(observed::response_data(
            response.status().as_u16(),
            response.headers(),
            key,
        ));
        let response = match http::event_stream(response, key).await {
            Ok(response) => response,
            Err(failure) => {
                yield StreamEvent::Error(redact(&failure.message));
                return;
            }
        };

        let mut events = decode_with::<D, _>(framing(response));
        let mut used = leash_protocol::Usage::default();
        while let Some(event) = events.next().await {
            if let StreamEvent::Usage(usage) = &event {
                used.merge(usage);
            }
            yield redact_event(event, &redact);
        }
        if let Some(gate) = &settings.gate {
            gate.spent(used.total_tokens);
        }
    })
}

/// Errors can quote what a server sent back; the key is taken out of them
/// as the last step before they leave the provider.
fn redact_event(event: StreamEvent, redact: &impl Fn(&str) -> String) -> StreamEvent {
    match event {
        StreamEvent::Error(message) => StreamEvent::Error(redact(&message)),
        StreamEvent::Retry {
            attempt,
            delay_ms,
            reason,
        } => StreamEvent::Retry {
            attempt,
            delay_ms,
            reason: redact(&reason),
        },
        other => other,
    }
}
