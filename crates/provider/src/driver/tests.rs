//! The driver once, with a trivial wire format: what it sends, how it
//! retries, that it redacts what leaves it, and that it hands the body to
//! the format's decoder as it arrives. The formats' own tests cover their
//! request bodies and decoders.

use std::time::Duration;

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;
use crate::testing::{bodies, user};
use leash_protocol::StopReason;

const KEY: &str = "sk-driver-test-SECRET-42";

/// A format whose decoder turns each event's data into text, `[DONE]`
/// into the end, and the end of the body into an error quoting the last
/// data (so a key echoed by the server reaches an error).
struct Echo;

#[derive(Default)]
struct EchoDecoder {
    last: String,
}

impl WireDecoder for EchoDecoder {
    fn decode_event(&mut self, _event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Flow {
        if data == "[DONE]" {
            out.push(StreamEvent::Done(StopReason::Stop));
            return Flow::End;
        }
        self.last = data.to_owned();
        out.push(StreamEvent::Text(data.to_owned()));
        Flow::Continue
    }
    fn body_failed(&mut self, error: &SseError, out: &mut Vec<StreamEvent>) {
        out.push(StreamEvent::Error(error.to_string()));
    }
    fn body_ended(&mut self, out: &mut Vec<StreamEvent>) {
        out.push(StreamEvent::Error(format!("cut off after {}", self.last)));
    }
}

impl WireFormat for Echo {
    const NAME: &'static str = "echo";
    const DEFAULT_BASE_URL: &'static str = "http://127.0.0.1:9/base";
    type Decoder = EchoDecoder;

    fn path() -> &'static str {
        "/echo"
    }
    fn headers() -> &'static [(&'static str, &'static str)] {
        &[("x-format", "echo-1")]
    }
    fn key_header(key: &str) -> (&'static str, String) {
        ("x-key", key.to_owned())
    }
    fn body(request: &Request<'_>, _settings: &HttpSettings) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&json!({"model": request.model}))
    }
}

fn settings(base_url: &str, key: Option<&str>, retries: u32) -> HttpSettings {
    HttpSettings {
        retries,
        ..HttpSettings::new(base_url, key.map(ApiKey::new))
    }
}

async fn run(settings: HttpSettings) -> Vec<StreamEvent> {
    let provider = HttpProvider::<Echo>::new(settings);
    assert_eq!(provider.name(), "echo");
    let messages = [user("hi")];
    provider
        .stream(Request {
            transcript: &[],
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
            options: Default::default(),
        })
        // The response's data for the observer has its own test.
        .filter(|event| std::future::ready(!matches!(event, StreamEvent::Provider(_))))
        .collect()
        .await
}

fn sse(body: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.as_bytes().to_vec(), "text/event-stream")
}

fn text(text: &str) -> StreamEvent {
    StreamEvent::Text(text.to_owned())
}

#[test]
fn the_endpoint_is_the_base_and_the_formats_path() {
    assert_eq!(endpoint::<Echo>("http://h:1/v1"), "http://h:1/v1/echo");
    assert_eq!(endpoint::<Echo>(" http://h:1/v1/ "), "http://h:1/v1/echo");
    assert_eq!(endpoint::<Echo>(""), "http://127.0.0.1:9/base/echo");
}

#[tokio::test]
async fn the_formats_request_is_sent_and_its_decoder_reads_the_reply() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/echo"))
        .and(header("x-format", "echo-1"))
        .and(header("x-key", KEY))
        .and(header("content-type", "application/json"))
        .and(header("accept", "text/event-stream"))
        .respond_with(sse(
            "data: a\n\n: keep-alive\n\ndata: b\n\ndata: [DONE]\n\n",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let events = run(settings(&format!("{}/v1/", server.uri()), Some(KEY), 0)).await;
    assert_eq!(
        events,
        vec![text("a"), text("b"), StreamEvent::Done(StopReason::Stop)]
    );
    assert_eq!(bodies(&server).await, vec![json!({"model": "m"})]);
}

#[tokio::test]
async fn no_key_or_an_empty_one_sends_no_key_header() {
    for key in [None, Some("")] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(sse("data: [DONE]\n\n"))
            .mount(&server)
            .await;
        let events = run(settings(&server.uri(), key, 0)).await;
        assert_eq!(events, vec![StreamEvent::Done(StopReason::Stop)]);
        let requests = server.received_requests().await.unwrap_or_default();
        assert!(requests[0].headers.get("x-key").is_none(), "{key:?}");
    }
}

#[tokio::test]
async fn a_failure_is_retried_with_the_same_body_then_served() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_raw(r#"{"error":{"message":"slow down"}}"#, "application/json"),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse("data: ok\n\ndata: [DONE]\n\n"))
        .mount(&server)
        .await;
    let events = run(settings(&server.uri(), Some(KEY), 2)).await;
    assert_eq!(
        events,
        vec![
            StreamEvent::Retry {
                attempt: 1,
                delay_ms: 0,
                reason: "HTTP 429 Too Many Requests: slow down".to_owned()
            },
            text("ok"),
            StreamEvent::Done(StopReason::Stop),
        ]
    );
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1]);
}

#[tokio::test]
async fn retries_run_out_and_a_refusal_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_raw("oops", "text/plain"))
        .mount(&server)
        .await;
    let mut retrying = settings(&server.uri(), Some(KEY), 2);
    retrying.deadline = Some(tokio::time::Instant::now() + Duration::from_secs(60));
    let events = run(retrying).await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(matches!(events[1], StreamEvent::Retry { attempt: 2, .. }));
    assert_eq!(
        events[2],
        StreamEvent::Error("HTTP 500 Internal Server Error: oops (after 2 retries)".to_owned())
    );

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401))
        .mount(&server)
        .await;
    let events = run(settings(&server.uri(), Some(KEY), 3)).await;
    assert_eq!(
        events,
        vec![StreamEvent::Error("HTTP 401 Unauthorized".to_owned())]
    );
    assert_eq!(bodies(&server).await.len(), 1);
}

#[tokio::test]
async fn the_key_is_redacted_from_retries_and_from_the_decoders_errors() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(503)
                .insert_header("retry-after", "0")
                .set_body_raw(format!("bad key {KEY}"), "text/plain"),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse(&format!("data: echo {KEY}\n\n")))
        .mount(&server)
        .await;
    let events = run(settings(&server.uri(), Some(KEY), 1)).await;
    assert_eq!(
        events,
        vec![
            StreamEvent::Retry {
                attempt: 1,
                delay_ms: 0,
                reason: "HTTP 503 Service Unavailable: bad key ***".to_owned()
            },
            // Text is the model's own; only errors and retries quote a server.
            text(&format!("echo {KEY}")),
            StreamEvent::Error("cut off after echo ***".to_owned()),
        ]
    );
}

#[tokio::test]
async fn a_request_that_cannot_be_built_is_an_error_not_a_panic() {
    let events = run(settings("not a url", Some(KEY), 2)).await;
    let [StreamEvent::Error(message)] = events.as_slice() else {
        panic!("{events:?}");
    };
    assert!(
        message.starts_with("invalid base URL not a url/echo: "),
        "{message}"
    );
    let events = run(settings("http://127.0.0.1:9", Some("sk-a\nb"), 2)).await;
    assert_eq!(
        events,
        vec![StreamEvent::Error(
            "the API key holds characters an HTTP header cannot carry".to_owned()
        )]
    );
}

/// The observer's data (`StreamEvent::Provider`, Pi's
/// `onProviderStreamEvent`): once the headers arrive, the status and the
/// request id and rate-limit counters, before any decoded event; nothing
/// else the server set, and never the key.
#[tokio::test]
async fn the_response_status_and_its_noted_headers_go_to_the_observer_first() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            sse("data: a\n\ndata: [DONE]\n\n")
                .insert_header("x-request-id", "req_7")
                .insert_header("x-ratelimit-remaining-requests", "59")
                .insert_header("set-cookie", "session=private")
                .insert_header("openai-processing-ms", KEY),
        )
        .mount(&server)
        .await;
    let provider = HttpProvider::<Echo>::new(settings(&server.uri(), Some(KEY), 0));
    let messages = [user("hi")];
    let events: Vec<StreamEvent> = provider
        .stream(Request {
            transcript: &[],
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
            options: Default::default(),
        })
        .collect()
        .await;
    assert_eq!(
        events,
        vec![
            StreamEvent::Provider(json!({
                "type": "response",
                "status": 200,
                "headers": {
                    "openai-processing-ms": "***",
                    "x-ratelimit-remaining-requests": "59",
                    "x-request-id": "req_7"
                }
            })),
            text("a"),
            StreamEvent::Done(StopReason::Stop),
        ]
    );
}
