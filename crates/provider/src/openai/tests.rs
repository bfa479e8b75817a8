//! The provider against loopback servers.

use super::*;
use crate::Provider;
use futures::StreamExt;
use leash_protocol::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::time::Duration;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::openai::testing::*;

#[tokio::test]
async fn a_streamed_reply_and_the_request_that_asked_for_it() {
    let server = server_replying(sse_reply(&[
        text_delta("Hi"),
        text_delta(" there"),
        finish("stop"),
        done(),
    ]))
    .await;
    let events = run(
        settings(&format!("{}/v1/", server.uri()), Some("sk-test")),
        &[user("hello")],
    )
    .await;
    assert_eq!(
        events,
        vec![
            StreamEvent::Text("Hi".to_string()),
            StreamEvent::Text(" there".to_string()),
            StreamEvent::Done(StopReason::Stop),
        ]
    );
    let requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 1);
    let headers = &requests[0].headers;
    assert_eq!(headers.get("authorization").unwrap(), "Bearer sk-test");
    assert_eq!(headers.get("content-type").unwrap(), "application/json");
    assert_eq!(headers.get("accept").unwrap(), "text/event-stream");
    let body = &bodies(&server).await[0];
    assert_eq!(body["stream"], json!(true));
    assert_eq!(
        body["messages"],
        json!([{"role":"system","content":"Be brief."},{"role":"user","content":"hello"}])
    );
}

#[tokio::test]
async fn no_key_no_authorization_header() {
    let server = server_replying(sse_reply(&[text_delta("x"), finish("stop"), done()])).await;
    let events = run(
        settings(&format!("{}/v1", server.uri()), None),
        &[user("hello")],
    )
    .await;
    assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::Stop)));
    let requests = server.received_requests().await.unwrap_or_default();
    assert!(requests[0].headers.get("authorization").is_none());
}

#[tokio::test]
async fn tool_calls_usage_and_reasoning_from_a_server() {
    let usage =
        json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}})
            .to_string();
    let server = server_replying(sse_reply(&[
        json!({"choices":[{"delta":{"reasoning_content":"need the file"}}]}).to_string(),
        call_delta(0, Some("call_1"), Some("read_file"), ""),
        call_delta(0, None, None, "{\"path\":"),
        call_delta(0, None, None, "\"sample.ts\"}"),
        finish("tool_calls"),
        usage,
        done(),
    ]))
    .await;
    let events = run(
        settings(&format!("{}/v1", server.uri()), Some("sk-test")),
        &[user("read")],
    )
    .await;
    assert_eq!(
        events,
        vec![
            StreamEvent::Thinking("need the file".to_string()),
            StreamEvent::ToolCallStart {
                key: 0,
                id: "call_1".to_string(),
                name: "read_file".to_string()
            },
            StreamEvent::ToolCallArgs {
                key: 0,
                fragment: "{\"path\":".to_string()
            },
            StreamEvent::ToolCallArgs {
                key: 0,
                fragment: "\"sample.ts\"}".to_string()
            },
            StreamEvent::Usage(Usage {
                input: 10,
                output: 5,
                cache_read: 0,
                cache_write: 0,
                total_tokens: 15,
                cost: None,
            }),
            StreamEvent::Done(StopReason::ToolUse),
        ]
    );
}

#[tokio::test]
async fn failures_of_the_stream_end_it_with_an_error() {
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![text_delta("a")],
            "the stream was cut off (no finish_reason, no [DONE])",
        ),
        (vec![text_delta("a"), done()], crate::NO_STOP_REASON),
        (
            vec![text_delta("a"), "not json".to_string()],
            "the provider sent an event that is not JSON",
        ),
        (
            vec![json!({"error":{"message":"boom"}}).to_string()],
            "the provider reported an error mid-stream: boom",
        ),
        (
            vec![finish("content_filter"), done()],
            "the provider's content filter stopped the reply",
        ),
    ];
    for (payloads, want) in cases {
        let server = server_replying(sse_reply(&payloads)).await;
        let events = run(
            settings(&format!("{}/v1", server.uri()), Some("sk-test")),
            &[user("x")],
        )
        .await;
        match events.last() {
            Some(StreamEvent::Error(message)) => {
                assert!(message.starts_with(want), "{message}")
            }
            other => panic!("{want}: {other:?}"),
        }
        assert_eq!(
            events
                .iter()
                .filter(|event| matches!(event, StreamEvent::Error(_)))
                .count(),
            1
        );
    }
}

#[tokio::test]
async fn an_error_status_with_the_providers_message_and_never_the_key() {
    let server = server_replying(ResponseTemplate::new(401).set_body_raw(
            r#"{"error":{"message":"Incorrect API key provided: sk-secret-777.","type":"invalid_request_error"}}"#,
            "application/json",
        ))
        .await;
    let events = run(
        settings(&format!("{}/v1", server.uri()), Some("sk-secret-777")),
        &[user("x")],
    )
    .await;
    assert_eq!(
        events,
        vec![StreamEvent::Error(
            "HTTP 401 Unauthorized: Incorrect API key provided: ***.".to_string()
        )]
    );
    assert_eq!(
        server.received_requests().await.unwrap_or_default().len(),
        1,
        "401 is not retried"
    );
    assert!(!format!("{events:?}").contains("sk-secret-777"));
}

#[tokio::test]
async fn a_bad_request_is_not_retried() {
    let server = server_replying(ResponseTemplate::new(400).set_body_raw(
        r#"{"error":{"message":"Unknown model gpt-test"}}"#,
        "application/json",
    ))
    .await;
    let events = run(
        settings(&format!("{}/v1", server.uri()), Some("sk-test")),
        &[user("x")],
    )
    .await;
    assert_eq!(
        events,
        vec![StreamEvent::Error(
            "HTTP 400 Bad Request: Unknown model gpt-test".to_string()
        )]
    );
    assert_eq!(
        server.received_requests().await.unwrap_or_default().len(),
        1
    );
}

#[tokio::test]
async fn rate_limited_then_served() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_raw(
                    r#"{"error":{"message":"Rate limit reached"}}"#,
                    "application/json",
                ),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse_reply(&[text_delta("ok"), finish("stop"), done()]))
        .mount(&server)
        .await;
    let started = std::time::Instant::now();
    let events = run(
        settings(&format!("{}/v1", server.uri()), Some("sk-test")),
        &[user("x")],
    )
    .await;
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(
        events,
        vec![
            StreamEvent::Retry {
                attempt: 1,
                delay_ms: 1000,
                reason: "HTTP 429 Too Many Requests: Rate limit reached".to_string()
            },
            StreamEvent::Text("ok".to_string()),
            StreamEvent::Done(StopReason::Stop),
        ]
    );
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1], "the retry sends the same body");
}

#[tokio::test]
async fn server_errors_are_retried_until_the_retries_are_used_up() {
    let server =
        server_replying(ResponseTemplate::new(500).set_body_raw("oops", "text/plain")).await;
    let mut settings = settings(&format!("{}/v1", server.uri()), Some("sk-test"));
    settings.retries = 2;
    let events = run(settings, &[user("x")]).await;
    assert_eq!(events.len(), 3);
    assert!(matches!(events[0], StreamEvent::Retry { attempt: 1, .. }));
    assert!(matches!(events[1], StreamEvent::Retry { attempt: 2, .. }));
    assert_eq!(
        events[2],
        StreamEvent::Error("HTTP 500 Internal Server Error: oops (after 2 retries)".to_string())
    );
    assert_eq!(
        server.received_requests().await.unwrap_or_default().len(),
        3
    );
}

#[tokio::test]
async fn no_retry_that_would_wait_past_the_deadline() {
    let server =
        server_replying(ResponseTemplate::new(503).insert_header("retry-after", "5")).await;
    let mut settings = settings(&format!("{}/v1", server.uri()), Some("sk-test"));
    settings.deadline = Some(tokio::time::Instant::now() + Duration::from_secs(2));
    let events = run(settings, &[user("x")]).await;
    assert_eq!(
        events,
        vec![StreamEvent::Error(
            "HTTP 503 Service Unavailable; not retried: waiting 5.0s would pass the run's timeout"
                .to_string()
        )]
    );
}

#[tokio::test]
async fn connection_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    drop(listener);
    let mut settings = settings(&base, Some("sk-test"));
    settings.retries = 1;
    let events = run(settings, &[user("x")]).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(
        matches!(&events[0], StreamEvent::Retry { attempt: 1, reason, .. } if reason.starts_with("could not connect to"))
    );
    let StreamEvent::Error(message) = &events[1] else {
        panic!("{events:?}");
    };
    assert!(
        message.starts_with(&format!("could not connect to {base}/chat/completions: ")),
        "{message}"
    );
    assert!(message.ends_with("(after 1 retry)"), "{message}");
}

#[tokio::test]
async fn an_invalid_base_url_is_an_error_not_a_panic() {
    let events = run(settings("not a url", Some("sk-test")), &[user("x")]).await;
    let [StreamEvent::Error(message)] = events.as_slice() else {
        panic!("{events:?}");
    };
    assert!(
        message.starts_with("invalid base URL not a url/chat/completions"),
        "{message}"
    );
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = vec![0u8; 64 * 1024];
        let _ = socket.read(&mut request).await.unwrap();
        let first = format!("data: {}\n\n", text_delta("first"));
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let chunk = format!("{:x}\r\n{first}\r\n", first.len());
        socket
            .write_all(format!("{head}{chunk}").as_bytes())
            .await
            .unwrap();
        // The stream never ends; the client must hang up.
        let mut rest = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut rest)).await
    });
    let provider = OpenAiProvider::new(settings(&base, Some("sk-test")));
    let messages = [user("x")];
    let mut stream = provider.stream(request(&messages, &[]));
    // First the response's data for the observer (no header of note here).
    assert_eq!(
        stream.next().await,
        Some(StreamEvent::Provider(serde_json::json!({
            "type": "response", "status": 200, "headers": {}
        })))
    );
    // Then the response's id, from its first event.
    assert!(matches!(
        stream.next().await,
        Some(StreamEvent::Provider(data)) if data["type"] == "response_id"
    ));
    assert_eq!(
        stream.next().await,
        Some(StreamEvent::Text("first".to_string()))
    );
    drop(stream);
    let closed = server.await.unwrap();
    assert!(
        matches!(closed, Ok(Ok(_))),
        "the connection stayed open: {closed:?}"
    );
}
