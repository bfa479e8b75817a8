//! The provider against loopback servers.

use super::*;
use crate::Provider;
use futures::StreamExt;
use leash_protocol::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::time::Duration;

use crate::anthropic::testing::*;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};
#[tokio::test]
async fn seed_round_trip_sends_tool_use_and_tool_result_with_headers() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .and(header("content-type", "application/json"))
        .respond_with(sse(TEXT_REPLY))
        .expect(1)
        .mount(&server)
        .await;
    let messages = vec![
        user("What does sample.ts export?"),
        assistant(vec![call(
            "toolu_01A",
            "read_file",
            json!({"path": "sample.ts"}),
        )]),
        result("toolu_01A", "export const answer = 42;\n", false),
    ];
    let events = run(&provider(&server, 0), &messages).await;
    assert_eq!(
        events,
        vec![
            usage(25, 1, 0, 0),
            StreamEvent::Text("Hello".to_string()),
            usage(25, 15, 0, 0),
            StreamEvent::Done(StopReason::Stop),
        ]
    );
    let sent = bodies(&server).await;
    assert_eq!(
        sent[0],
        json!({
            "model": "claude-test",
            "max_tokens": 8192,
            "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "What does sample.ts export?"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_01A", "name": "read_file", "input": {"path": "sample.ts"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "export const answer = 42;\n", "is_error": false,
                     "cache_control": {"type": "ephemeral"}}
                ]}
            ],
            "tools": [{
                "name": "read_file",
                "description": "Read a UTF-8 file under the root",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                "cache_control": {"type": "ephemeral"}
            }],
            "stream": true
        })
    );
}

#[tokio::test]
async fn tool_use_reply_in_many_fragments_over_http() {
    let body = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":40,\"cache_read_input_tokens\":100,\"cache_creation_input_tokens\":0,\"output_tokens\":1}}}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Reading.\"}}\n\n\
event: content_block_stop\n\
data: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01B\",\"name\":\"read_file\",\"input\":{}}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\"\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\": \\\"sample\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\".ts\\\"}\"}}\n\n\
event: content_block_stop\n\
data: {\"type\":\"content_block_stop\",\"index\":1}\n\n\
event: message_delta\n\
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":30}}\n\n\
event: message_stop\n\
data: {\"type\":\"message_stop\"}\n\n";
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(body))
        .mount(&server)
        .await;
    let events = run(&provider(&server, 0), &[user("q")]).await;
    let fragments: String = events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::ToolCallArgs { key: 1, fragment } => Some(fragment.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(fragments, r#"{"path": "sample.ts"}"#);
    assert_eq!(events[0], usage(40, 1, 100, 0));
    assert_eq!(events[1], StreamEvent::Text("Reading.".to_string()));
    assert_eq!(
        events[2],
        StreamEvent::ToolCallStart {
            key: 1,
            id: "toolu_01B".to_string(),
            name: "read_file".to_string()
        }
    );
    assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::ToolUse)));
}

#[tokio::test]
async fn thinking_is_received_with_its_signature_and_sent_back() {
    let body = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_3\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Check the file.\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCgIYAhIM1gbcDa9GJwZA\"}}\n\n\
event: content_block_stop\n\
data: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: message_delta\n\
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7}}\n\n\
event: message_stop\n\
data: {\"type\":\"message_stop\"}\n\n";
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(body))
        .mount(&server)
        .await;
    let messages = vec![
        user("q"),
        assistant(vec![
            AssistantContent::Thinking {
                thinking: "Earlier thought.".to_string(),
                signature: Some("c2lnMQ==".to_string()),
                redacted: false,
            },
            call("toolu_1", "read_file", json!({"path": "a"})),
        ]),
        result("toolu_1", "A", false),
    ];
    let events = run(&provider(&server, 0), &messages).await;
    assert_eq!(
        events[1..3],
        [
            StreamEvent::Thinking("Check the file.".to_string()),
            StreamEvent::ThinkingSignature("EqQBCgIYAhIM1gbcDa9GJwZA".to_string()),
        ]
    );
    let sent = bodies(&server).await;
    assert_eq!(
        sent[0]["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "Earlier thought.", "signature": "c2lnMQ=="})
    );
}

#[tokio::test]
async fn mid_stream_overloaded_error_ends_the_reply_with_its_message() {
    let body = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_4\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Par\"}}\n\n\
event: error\n\
data: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(body))
        .mount(&server)
        .await;
    let events = run(&provider(&server, 2), &[user("q")]).await;
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Error(
            "the provider reported an error mid-stream: Overloaded (overloaded_error)".to_string()
        ))
    );
    // The body was used: never retried.
    assert_eq!(bodies(&server).await.len(), 1);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::Retry { .. }))
    );
}

#[tokio::test]
async fn status_529_is_retried_once_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(529)
                .insert_header("retry-after", "0")
                .set_body_raw(
                    error_body("overloaded_error", "Overloaded"),
                    "application/json",
                ),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse(TEXT_REPLY))
        .mount(&server)
        .await;
    let events = run(&provider(&server, 2), &[user("q")]).await;
    assert_eq!(bodies(&server).await.len(), 2);
    let retries: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::Retry {
                attempt, reason, ..
            } => Some((*attempt, reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 1, "{events:?}");
    assert_eq!(retries[0].0, 1);
    assert!(retries[0].1.contains("529"), "{}", retries[0].1);
    assert!(retries[0].1.contains("Overloaded"), "{}", retries[0].1);
    assert_eq!(
        events
            .first()
            .map(|e| matches!(e, StreamEvent::Retry { .. })),
        Some(true)
    );
    assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::Stop)));
}

#[tokio::test]
async fn status_401_is_not_retried_and_the_key_stays_out() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_raw(
            error_body("authentication_error", &format!("invalid x-api-key {KEY}")),
            "application/json",
        ))
        .mount(&server)
        .await;
    let events = run(&provider(&server, 3), &[user("q")]).await;
    assert_eq!(bodies(&server).await.len(), 1);
    assert_eq!(events.len(), 1, "{events:?}");
    match &events[0] {
        StreamEvent::Error(message) => {
            assert!(message.contains("401"), "{message}");
            assert!(message.contains("invalid x-api-key"), "{message}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
    assert_key_absent(&events);
}

#[tokio::test]
async fn a_stream_cut_before_message_stop_is_an_error() {
    let cut = TEXT_REPLY
        .split("event: message_stop")
        .next()
        .unwrap_or_default();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(cut))
        .mount(&server)
        .await;
    let events = run(&provider(&server, 2), &[user("q")]).await;
    assert_eq!(events[1], StreamEvent::Text("Hello".to_string()));
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Error(message)) if message.contains("(no message_stop)")
    ));
    assert_eq!(bodies(&server).await.len(), 1);
}

#[tokio::test]
async fn refusal_and_max_tokens_over_http() {
    for (reason, want) in [
        (
            "refusal",
            StreamEvent::Error("the model refused to answer (stop_reason: refusal)".to_string()),
        ),
        ("max_tokens", StreamEvent::Done(StopReason::Length)),
    ] {
        let body = TEXT_REPLY.replace("end_turn", reason);
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(sse(&body))
            .mount(&server)
            .await;
        let events = run(&provider(&server, 0), &[user("q")]).await;
        assert_eq!(events.last(), Some(&want), "{reason}");
    }
}

#[tokio::test]
async fn the_key_never_reaches_an_event_even_when_echoed() {
    let body = format!(
        "event: error\ndata: {}\n\n",
        error_body("api_error", &format!("bad key {KEY}"))
    );
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(500)
                .insert_header("retry-after", "0")
                .set_body_raw(
                    error_body("api_error", &format!("echo {KEY}")),
                    "application/json",
                ),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse(&body))
        .mount(&server)
        .await;
    let events = run(&provider(&server, 1), &[user("q")]).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(matches!(&events[0], StreamEvent::Retry { .. }));
    assert!(matches!(&events[1], StreamEvent::Error(m) if m.contains("bad key ***")));
    assert_key_absent(&events);
}

#[tokio::test]
async fn retries_run_out_with_the_last_failure() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_raw(
                    error_body("rate_limit_error", "slow down"),
                    "application/json",
                ),
        )
        .mount(&server)
        .await;
    let events = run(&provider(&server, 2), &[user("q")]).await;
    assert_eq!(bodies(&server).await.len(), 3);
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Error(m)) if m.contains("429") && m.contains("slow down")
    ));
}

/// A one-connection server that sends a 200 and `body_start`, then
/// either closes the connection (`then_close`) or stalls and reports
/// whether the client closed it.
async fn raw_server(
    body_start: &'static str,
    then_close: bool,
) -> (String, tokio::sync::oneshot::Receiver<bool>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buffer = [0u8; 4096];
        // Read headers and the (small) body: up to a pause in the input.
        while let Ok(Ok(n)) =
            tokio::time::timeout(Duration::from_millis(100), socket.read(&mut buffer)).await
        {
            if n == 0 {
                break;
            }
            request.extend_from_slice(&buffer[..n]);
        }
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let chunk = format!("{:x}\r\n{body_start}\r\n", body_start.len());
        socket.write_all(head.as_bytes()).await.unwrap();
        socket.write_all(chunk.as_bytes()).await.unwrap();
        socket.flush().await.unwrap();
        if then_close {
            drop(socket);
            return;
        }
        // Stall; the client dropping its stream must close the socket.
        let closed = matches!(
            tokio::time::timeout(Duration::from_secs(2), socket.read(&mut buffer)).await,
            Ok(Ok(0) | Err(_))
        );
        let _ = closed_tx.send(closed);
    });
    (base, closed_rx)
}

const FIRST_DELTA: &str = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_5\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n";

fn raw_provider(base: String) -> AnthropicProvider {
    AnthropicProvider::new(HttpSettings {
        base_url: base,
        api_key: Some(super::super::ApiKey::new(KEY)),
        retries: 2,
        ..settings()
    })
}

#[tokio::test]
async fn events_arrive_as_they_come_and_dropping_the_stream_closes_the_connection() {
    let (base, closed) = raw_server(FIRST_DELTA, false).await;
    let provider = raw_provider(base);
    let messages = [user("q")];
    let mut stream = provider.stream(Request {
        transcript: &[],
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        options: Default::default(),
    });
    // The server stalls after the first delta; it must arrive anyway.
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match tokio::time::timeout(Duration::from_secs(2), stream.next()).await {
            Ok(Some(StreamEvent::Provider(_))) => {}
            Ok(Some(event)) => seen.push(event),
            other => panic!("stream stalled or ended: {other:?} after {seen:?}"),
        }
    }
    assert_eq!(seen[1], StreamEvent::Text("Hi".to_string()));
    drop(stream);
    assert_eq!(closed.await.ok(), Some(true), "connection left open");
}

#[tokio::test]
async fn a_connection_cut_mid_body_is_an_error_and_not_retried() {
    let (base, _closed) = raw_server(FIRST_DELTA, true).await;
    let events = run(&raw_provider(base), &[user("q")]).await;
    assert_eq!(events[1], StreamEvent::Text("Hi".to_string()));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::Retry { .. }))
    );
    assert!(
        matches!(events.last(), Some(StreamEvent::Error(m)) if m.contains("connection")),
        "{events:?}"
    );
    assert_eq!(events.len(), 3, "{events:?}");
}
