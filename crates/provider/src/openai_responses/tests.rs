//! The provider against loopback servers: the same driver as the other
//! formats, on `{base}/responses`.

use super::testing::*;
use super::*;
use crate::Provider;
use futures::StreamExt;
use leash_protocol::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

async fn run(settings: HttpSettings, messages: &[Message]) -> Vec<StreamEvent> {
    ResponsesProvider::new(settings)
        .stream(request(messages, &[read_file_tool()]))
        // The response's data for the observer has its own test.
        .filter(|event| std::future::ready(!matches!(event, StreamEvent::Provider(_))))
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
        .completed(usage(10, 0, 2, 0));
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
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/responses_stream");
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

/// Decoded, assembled as the loop does, and sent back: two reasoning
/// items in one reply (each with a streamed summary) stay two thinking
/// blocks and go back as two items, each exactly as received, in order.
#[test]
fn two_reasoning_items_in_a_row_go_back_as_two_items() {
    use crate::driver::WireDecoder;
    use leash_agent::assistant_stream::MessageBuilder;

    let first = reasoning_parts(0, &["One."], Some("enc-1"));
    let second = reasoning_parts(1, &["Two."], Some("enc-2"));
    let events = Events::default()
        .reasoning_added(0)
        .summary(0, 0, "One.")
        .item_done(0, first.clone())
        .reasoning_added(1)
        .summary(1, 0, "Two.")
        .item_done(1, second.clone())
        .call_added(2, "call_1", "read_file")
        .call_done(2, "call_1", "read_file", "{}")
        .completed(json!(null));
    let mut decoder = super::decode::Decoder::default();
    let mut decoded = Vec::new();
    for (kind, data) in events.payloads() {
        decoder.decode_event(&kind, &data, &mut decoded);
    }
    let mut builder = MessageBuilder::new("openai", "gpt-test");
    let mut updates = Vec::new();
    for event in decoded {
        match event {
            StreamEvent::Done(stop) => builder.end(stop, None, &mut updates),
            other => builder.apply(other, &mut updates),
        }
    }
    let message = builder.into_message();
    let messages = vec![user("go"), Message::Assistant(message)];
    let settings = settings("http://x/v1", None);
    let body = super::request::request_body(&request(&messages, &[]), &settings);
    let text = serde_json::to_string(&body).unwrap();
    let at = |item: &Value| text.find(&item.to_string()).unwrap();
    assert!(at(&first) < at(&second), "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    let kinds: Vec<&str> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["message", "reasoning", "reasoning", "function_call"]
    );
}
