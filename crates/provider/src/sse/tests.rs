//! The SSE decoder on every cut of a body, and its limits.

use super::*;
use futures::stream;
use pretty_assertions::assert_eq;

fn event(data: &str) -> SseEvent {
    SseEvent {
        event: "message".to_string(),
        data: data.to_string(),
    }
}

async fn collect(chunks: Vec<Vec<u8>>, limit: usize) -> Vec<Result<SseEvent, SseError>> {
    let bytes = stream::iter(chunks.into_iter().map(Ok::<_, String>));
    from_bytes(bytes, limit).collect().await
}

/// Every way of cutting `body` in two, and in single bytes, gives `want`.
async fn assert_all_splits(body: &[u8], want: Vec<Result<SseEvent, SseError>>) {
    for cut in 0..=body.len() {
        let chunks = vec![body[..cut].to_vec(), body[cut..].to_vec()];
        assert_eq!(collect(chunks, MAX_EVENT_BYTES).await, want, "cut at {cut}");
    }
    let bytewise = body.iter().map(|b| vec![*b]).collect();
    assert_eq!(
        collect(bytewise, MAX_EVENT_BYTES).await,
        want,
        "byte by byte"
    );
}

#[tokio::test]
async fn events_survive_any_split_mid_line_and_mid_character() {
    let body =
        "data: {\"a\":\"héllo ✓ 🦀\"}\n\n: keep-alive\n\nevent: ping\ndata: x\n\ndata: [DONE]\n\n";
    assert_all_splits(
        body.as_bytes(),
        vec![
            Ok(event("{\"a\":\"héllo ✓ 🦀\"}")),
            Ok(SseEvent {
                event: "ping".to_string(),
                data: "x".to_string(),
            }),
            Ok(event("[DONE]")),
        ],
    )
    .await;
}

#[tokio::test]
async fn crlf_and_multi_line_data() {
    let body = b"data: one\r\ndata: two\r\n\r\ndata: three\r\rdata: four\n\n";
    assert_all_splits(
        body,
        vec![Ok(event("one\ntwo")), Ok(event("three")), Ok(event("four"))],
    )
    .await;
}

#[tokio::test]
async fn a_lone_cr_ends_an_event_without_waiting_for_the_next_byte() {
    // The CR ends the line at once; an LF that follows (in any later
    // chunk) is the rest of the same terminator, not another line.
    let body = b"data: a\r\r";
    assert_all_splits(body, vec![Ok(event("a"))]).await;
    let bytes = stream::iter(vec![Ok::<_, String>(b"event: x\rdata: b\r\r".to_vec())])
        .chain(stream::pending());
    let mut events = from_bytes(bytes, MAX_EVENT_BYTES);
    let first = tokio::time::timeout(Duration::from_secs(5), events.next()).await;
    assert_eq!(
        first,
        Ok(Some(Ok(SseEvent {
            event: "x".to_string(),
            data: "b".to_string()
        })))
    );
    let split = vec![
        b"data: c\r".to_vec(),
        b"\ndata: d\r".to_vec(),
        b"\n\r\n".to_vec(),
    ];
    assert_eq!(
        collect(split, MAX_EVENT_BYTES).await,
        vec![Ok(event("c\nd"))]
    );
}

#[tokio::test]
async fn one_large_read_of_many_events_decodes_every_event_in_order() {
    // Loopback reads hold hundreds of events in one chunk.
    let body: String = (0..10_000).map(|i| format!("data: {i}\r\n\r\n")).collect();
    let got = collect(vec![body.into_bytes()], MAX_EVENT_BYTES).await;
    assert_eq!(got.len(), 10_000);
    assert!(
        got.iter()
            .enumerate()
            .all(|(i, e)| *e == Ok(event(&i.to_string())))
    );
}

#[tokio::test]
async fn an_unterminated_last_event_is_dropped() {
    let got = collect(vec![b"data: a\n\ndata: b\n".to_vec()], MAX_EVENT_BYTES).await;
    assert_eq!(got, vec![Ok(event("a"))]);
}

#[tokio::test]
async fn invalid_utf8_fails_at_once() {
    let got = collect(
        vec![b"data: a\n\ndata: \xff".to_vec(), b"b\n\n".to_vec()],
        MAX_EVENT_BYTES,
    )
    .await;
    assert_eq!(got, vec![Err(SseError::InvalidUtf8)]);
}

#[tokio::test]
async fn a_line_cut_by_the_end_of_the_body_goes_with_its_half_character() {
    let got = collect(vec![b"data: a\n\ndata: \xe2\x9c".to_vec()], MAX_EVENT_BYTES).await;
    assert_eq!(got, vec![Ok(event("a"))]);
}

#[tokio::test]
async fn an_event_past_the_cap_is_an_error_and_the_last_item() {
    let got = collect(
        vec![
            b"data: 12345\n\n".to_vec(),
            b"data: 1234567890\n\ndata: x\n\n".to_vec(),
        ],
        12,
    )
    .await;
    assert_eq!(
        got,
        vec![
            Ok(event("12345")),
            Err(SseError::EventTooLarge { limit: 12 })
        ]
    );
}

#[tokio::test]
async fn the_cap_counts_one_event_not_the_whole_body() {
    let body = "data: 1234\n\n".repeat(100).into_bytes();
    let got = collect(vec![body], 16).await;
    assert_eq!(got.len(), 100);
    assert!(got.iter().all(Result::is_ok));
}

#[tokio::test]
async fn the_whole_response_is_capped_too() {
    let bytes = stream::iter(
        vec![b"data: 1234\n\n".to_vec(); 10]
            .into_iter()
            .map(Ok::<_, String>),
    );
    let limits = Limits {
        max_event_bytes: 100,
        max_response_bytes: 36,
        idle_timeout: None,
    };
    let got: Vec<_> = with_limits(bytes, limits).collect().await;
    assert_eq!(
        got,
        vec![
            Ok(event("1234")),
            Ok(event("1234")),
            Ok(event("1234")),
            Err(SseError::ResponseTooLarge { limit: 36 })
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_ends_the_stream_after_the_idle_timeout() {
    let bytes =
        stream::iter(vec![Ok::<_, String>(b"data: a\n\n".to_vec())]).chain(stream::pending());
    let limits = Limits {
        idle_timeout: Some(Duration::from_secs(5)),
        ..Limits::default()
    };
    let started = tokio::time::Instant::now();
    let got: Vec<_> = with_limits(bytes, limits).collect().await;
    assert_eq!(
        got,
        vec![
            Ok(event("a")),
            Err(SseError::Idle {
                after: Duration::from_secs(5)
            })
        ]
    );
    assert_eq!(started.elapsed(), Duration::from_secs(5));
}

#[test]
fn limit_errors_say_what_was_passed_in_words() {
    assert_eq!(
        SseError::EventTooLarge {
            limit: MAX_EVENT_BYTES
        }
        .to_string(),
        "the response stream holds an event larger than 16 MiB (the cap on one event); the server is broken or not an LLM API"
    );
    assert_eq!(
        SseError::ResponseTooLarge { limit: 1000 }.to_string(),
        "the response is larger than 1000 bytes (the cap on one reply); the server is broken or not an LLM API"
    );
    assert_eq!(
        SseError::Idle {
            after: IDLE_TIMEOUT
        }
        .to_string(),
        "the server sent nothing for 300s; gave up waiting"
    );
}

#[tokio::test]
async fn a_transport_error_ends_the_stream() {
    let chunks = vec![
        Ok(b"data: a\n\n".to_vec()),
        Err("connection reset".to_string()),
        Ok(b"data: b\n\n".to_vec()),
    ];
    let got: Vec<_> = from_bytes(stream::iter(chunks), MAX_EVENT_BYTES)
        .collect()
        .await;
    assert_eq!(
        got,
        vec![
            Ok(event("a")),
            Err(SseError::Transport("connection reset".to_string()))
        ]
    );
}

#[tokio::test]
async fn leading_byte_order_marks_are_skipped_without_a_panic() {
    let body = b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: \xef\xbb\xbfb\n\n";
    let want = vec![Ok(event("a")), Ok(event("\u{feff}b"))];
    assert_all_splits(body, want).await;
    let got = collect(
        vec![b"\xef\xbc\x81: x\n\ndata: c\n\n".to_vec()],
        MAX_EVENT_BYTES,
    )
    .await;
    assert_eq!(got, vec![Ok(event("c"))]);
}

#[tokio::test]
async fn a_leading_byte_order_mark_split_across_chunks() {
    let got = collect(
        vec![b"\xef\xbb".to_vec(), b"\xbfdata: a\n\n".to_vec()],
        MAX_EVENT_BYTES,
    )
    .await;
    assert_eq!(got, vec![Ok(event("a"))]);
}
