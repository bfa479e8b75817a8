//! The provider against loopback servers: the same driver as the other
//! formats, on `{base}/responses`.

use super::testing::*;
use super::*;
use crate::protocol::*;
use crate::provider::Provider;
use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

async fn run(settings: HttpSettings, messages: &[Message]) -> Vec<StreamEvent> {
    ResponsesProvider::new(settings)
        .stream(request(messages, &[read_file_tool()]))
        .collect()
        .await
}

#[tokio::test]
async fn a_streamed_reply_and_the_request_that_asked_for_it() {
    let events = Events::default()
        .created()
        .message_added(0)
        .text(0, "Hi")
        .text(0, " there")
        .completed(wire_usage(10, 2, 0, 0));
    let server = server_replying(sse_reply(&events)).await;
    let events = run(
        settings(&format!("{}/v1/", server.uri()), Some("sk-test")),
        &[user("hello")],
    )
    .await;
    assert_eq!(
        events[..2],
        [
            StreamEvent::Text("Hi".into()),
            StreamEvent::Text(" there".into())
        ]
    );
    assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::Stop)));
    let requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 1);
    let headers = &requests[0].headers;
    assert_eq!(headers.get("authorization").unwrap(), "Bearer sk-test");
    assert_eq!(headers.get("accept").unwrap(), "text/event-stream");
    let body = &bodies(&server).await[0];
    assert_eq!(body["store"], json!(false));
    assert_eq!(body["instructions"], json!("Be brief."));
    assert_eq!(
        body["input"],
        json!([{"type": "message", "role": "user", "content": "hello"}])
    );
}

#[tokio::test]
async fn a_failed_response_is_an_error_without_the_key() {
    let events = Events::default().failed("Bad key sk-test-SECRET in the request.");
    let server = server_replying(sse_reply(&events)).await;
    let events = run(
        settings(&format!("{}/v1", server.uri()), Some("sk-test-SECRET")),
        &[user("hello")],
    )
    .await;
    let Some(StreamEvent::Error(message)) = events.last() else {
        panic!("{events:?}");
    };
    assert!(message.contains("Bad key"), "{message}");
    assert!(!message.contains("sk-test-SECRET"), "{message}");
}

#[tokio::test]
async fn rate_limited_then_served() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            wiremock::ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_string(r#"{"error":{"message":"slow down"}}"#),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse_reply(
            &Events::default().text(0, "ok").completed(json!(null)),
        ))
        .mount(&server)
        .await;
    let events = run(
        settings(&format!("{}/v1", server.uri()), None),
        &[user("hello")],
    )
    .await;
    assert!(
        matches!(events[0], StreamEvent::Retry { attempt: 1, .. }),
        "{events:?}"
    );
    assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::Stop)));
    assert_eq!(bodies(&server).await.len(), 2);
}

/// Every seed of the `responses_stream` fuzz target, cut after every
/// byte: no panic, exactly one `Done` or `Error`, and it comes last.
#[tokio::test]
async fn every_prefix_of_every_fuzz_seed_ends_with_one_terminal_event() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/responses_stream");
    let mut seeds = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        let body = &data[1..];
        seeds += 1;
        for cut in 0..=body.len() {
            let chunks: Vec<Result<Vec<u8>, String>> = body[..cut]
                .chunks(5)
                .map(|chunk| Ok(chunk.to_vec()))
                .collect();
            let events: Vec<StreamEvent> = decode(sse::from_bytes(
                futures::stream::iter(chunks),
                sse::MAX_EVENT_BYTES,
            ))
            .collect()
            .await;
            let terminal =
                |event: &StreamEvent| matches!(event, StreamEvent::Done(_) | StreamEvent::Error(_));
            assert_eq!(
                events.iter().filter(|e| terminal(e)).count(),
                1,
                "{events:?}"
            );
            assert!(events.last().is_some_and(terminal), "{events:?}");
        }
    }
    assert!(seeds >= 5, "the seeds are found");
}
