//! The streamable HTTP transport's client: `rmcp`'s own reqwest client,
//! request for request, plus what a client of an untrusted server needs
//! and that one lacks — the cap on one message, `MAX_MESSAGE_BYTES`,
//! like a stdio server's line and a provider's SSE event. A JSON reply
//! body and each SSE event are measured as the bytes arrive, before the
//! SDK buffers them: past the cap the request fails, [`Overflow`] is set
//! (the call waiting for the answer gives up at once), and every later
//! request to the server is refused, so the server is done for the run.
//!
//! It must never hold more than one message's cap (and one network
//! chunk) of a server's bytes.

use std::borrow::Cow;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};

use leash_child::lines::Overflow;

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;

/// Why a request to an HTTP server failed on leash's side.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The connection or the HTTP exchange failed.
    #[error(transparent)]
    Http(#[from] reqwest::Error),
    /// One message (a JSON body, an SSE event) went past the cap.
    #[error("the server sent a message larger than the cap of {cap} bytes")]
    TooLarge {
        /// The cap that was passed.
        cap: usize,
    },
    /// An earlier message went past the cap: nothing more is sent.
    #[error("the server sent a message past the cap earlier; it is no longer asked")]
    Closed,
}

type Failed = StreamableHttpError<HttpError>;

/// `rmcp`'s reqwest client with a cap on one message; clones share the
/// connection pool and the overflow.
#[derive(Clone)]
pub struct CappedHttpClient {
    inner: reqwest::Client,
    cap: usize,
    overflow: Overflow,
    /// Where the session's id is noted, for the trace.
    session: Arc<std::sync::Mutex<Option<String>>>,
}

impl CappedHttpClient {
    /// Requests through `inner`, refusing a message past `cap` bytes;
    /// `overflow` is set when one was.
    pub fn new(inner: reqwest::Client, cap: usize, overflow: Overflow) -> Self {
        CappedHttpClient {
            inner,
            cap,
            overflow,
            session: Arc::default(),
        }
    }

    /// The same client, noting the session's id in `session`.
    pub fn with_session(mut self, session: Arc<std::sync::Mutex<Option<String>>>) -> Self {
        self.session = session;
        self
    }

    fn note_session(&self, id: &str) {
        *self
            .session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(id.to_owned());
    }

    fn refuse_after_overflow(&self) -> Result<(), Failed> {
        match self.overflow.happened() {
            true => Err(StreamableHttpError::Client(HttpError::Closed)),
            false => Ok(()),
        }
    }

    fn too_large(&self) -> HttpError {
        self.overflow.set();
        HttpError::TooLarge { cap: self.cap }
    }

    /// A JSON body, read chunk by chunk while it stays within the cap.
    async fn capped_body(&self, response: reqwest::Response) -> Result<Vec<u8>, HttpError> {
        if response
            .content_length()
            .is_some_and(|length| length > self.cap as u64)
        {
            return Err(self.too_large());
        }
        let mut body = Vec::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk?;
            if body.len() + chunk.len() > self.cap {
                return Err(self.too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// The events of an SSE body, each refused past the cap before the
    /// SSE decoder buffers it.
    fn capped_events(
        &self,
        response: reqwest::Response,
    ) -> BoxStream<'static, Result<Sse, SseError>> {
        let client = self.clone();
        let mut sizer = EventSizer::new(self.cap);
        let mut chunks = response.bytes_stream();
        let bytes = async_stream::stream! {
            while let Some(chunk) = chunks.next().await {
                match chunk {
                    Ok(chunk) => match sizer.feed(&chunk) {
                        Ok(()) => yield Ok(chunk),
                        Err(TooLarge) => {
                            yield Err(client.too_large());
                            return;
                        }
                    },
                    Err(error) => {
                        yield Err(HttpError::Http(error));
                        return;
                    }
                }
            }
        };
        SseStream::from_bytes_stream(bytes).boxed()
    }
}

/// One event went past the cap.
#[derive(Debug, PartialEq, Eq)]
pub struct TooLarge;

/// The size of the SSE event being received, across chunks: the bytes
/// of its lines since the last blank line, terminators not counted (the
/// measure the provider SSE decoder caps, `provider::sse`). Public for
/// the fuzz target only.
#[derive(Debug)]
pub struct EventSizer {
    cap: usize,
    size: usize,
    at_line_start: bool,
    after_cr: bool,
}

impl EventSizer {
    /// Measures events against `cap` bytes.
    pub fn new(cap: usize) -> Self {
        EventSizer {
            cap,
            size: 0,
            at_line_start: true,
            after_cr: false,
        }
    }

    /// Takes the next chunk; `Err` once the current event passed the cap.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), TooLarge> {
        for &byte in chunk {
            match byte {
                // The second half of a CRLF ends nothing new.
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    if self.at_line_start {
                        // A blank line: the event is complete.
                        self.size = 0;
                    }
                    self.at_line_start = true;
                    self.after_cr = byte == b'\r';
                }
                _ => {
                    self.at_line_start = false;
                    self.after_cr = false;
                    self.size += 1;
                    if self.size > self.cap {
                        return Err(TooLarge);
                    }
                }
            }
        }
        Ok(())
    }
}

impl StreamableHttpClient for CappedHttpClient {
    type Error = HttpError;

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failed> {
        self.refuse_after_overflow()?;
        let mut request = self
            .inner
            .get(uri.as_ref())
            .header(ACCEPT, [EVENT_STREAM_MIME_TYPE, JSON_MIME_TYPE].join(", "))
            .header(HEADER_SESSION_ID, session_id.as_ref());
        if let Some(last_event_id) = last_event_id {
            request = request.header(HEADER_LAST_EVENT_ID, last_event_id);
        }
        if let Some(token) = auth_token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(client_error)?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let response = response.error_for_status().map_err(client_error)?;
        match response.headers().get(CONTENT_TYPE) {
            Some(kind)
                if kind
                    .as_bytes()
                    .starts_with(EVENT_STREAM_MIME_TYPE.as_bytes())
                    || kind.as_bytes().starts_with(JSON_MIME_TYPE.as_bytes()) => {}
            other => {
                return Err(StreamableHttpError::UnexpectedContentType(
                    other.map(|kind| String::from_utf8_lossy(kind.as_bytes()).into_owned()),
                ));
            }
        }
        Ok(self.capped_events(response))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
    ) -> Result<(), Failed> {
        let mut request = self.inner.delete(uri.as_ref());
        if let Some(token) = auth_token {
            request = request.bearer_auth(token);
        }
        let response = request
            .header(HEADER_SESSION_ID, session_id.as_ref())
            .send()
            .await
            .map_err(client_error)?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response.error_for_status().map_err(client_error)?;
        Ok(())
    }

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        self.refuse_after_overflow()?;
        let mut request = self
            .inner
            .post(uri.as_ref())
            .header(ACCEPT, [EVENT_STREAM_MIME_TYPE, JSON_MIME_TYPE].join(", "));
        if let Some(token) = auth_token {
            request = request.bearer_auth(token);
        }
        if let Some(session_id) = session_id {
            self.note_session(&session_id);
            request = request.header(HEADER_SESSION_ID, session_id.as_ref());
        }
        // A traced request's span (its `params._meta.traceparent`, set by
        // the tool call) is the HTTP request's `traceparent` too.
        if let Some(traceparent) = meta_traceparent(&message) {
            request = request.header("traceparent", traceparent);
        }
        let body = serde_json::to_vec(&message)?;
        let response = request
            .header(CONTENT_TYPE, JSON_MIME_TYPE)
            .body(body)
            .send()
            .await
            .map_err(client_error)?;
        if response.status() == reqwest::StatusCode::UNAUTHORIZED
            && let Some(header) = response.headers().get(WWW_AUTHENTICATE)
        {
            let header = header.to_str().map_err(|_| {
                StreamableHttpError::UnexpectedServerResponse(Cow::from(
                    "invalid www-authenticate header value",
                ))
            })?;
            return Err(StreamableHttpError::AuthRequired(AuthRequiredError {
                www_authenticate_header: header.to_owned(),
            }));
        }
        if matches!(
            response.status(),
            reqwest::StatusCode::ACCEPTED | reqwest::StatusCode::NO_CONTENT
        ) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        let session_id = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        if let Some(id) = &session_id {
            self.note_session(id);
        }
        let kind = response.headers().get(CONTENT_TYPE).cloned();
        match kind {
            Some(kind)
                if kind
                    .as_bytes()
                    .starts_with(EVENT_STREAM_MIME_TYPE.as_bytes()) =>
            {
                Ok(StreamableHttpPostResponse::Sse(
                    self.capped_events(response),
                    session_id,
                ))
            }
            Some(kind) if kind.as_bytes().starts_with(JSON_MIME_TYPE.as_bytes()) => {
                let body = self
                    .capped_body(response)
                    .await
                    .map_err(StreamableHttpError::Client)?;
                let message: ServerJsonRpcMessage = serde_json::from_slice(&body)?;
                Ok(StreamableHttpPostResponse::Json(message, session_id))
            }
            other => Err(StreamableHttpError::UnexpectedContentType(
                other.map(|kind| String::from_utf8_lossy(kind.as_bytes()).into_owned()),
            )),
        }
    }
}

/// The `traceparent` a request carries in `params._meta`, when it is a
/// valid header value.
fn meta_traceparent(message: &ClientJsonRpcMessage) -> Option<reqwest::header::HeaderValue> {
    let rmcp::model::JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let rmcp::model::ClientRequest::CallToolRequest(call) = &request.request else {
        return None;
    };
    let meta = call.params.meta.as_ref()?;
    let traceparent = meta.0.get("traceparent")?.as_str()?;
    reqwest::header::HeaderValue::from_str(traceparent).ok()
}

fn client_error(error: reqwest::Error) -> Failed {
    StreamableHttpError::Client(HttpError::Http(error))
}
