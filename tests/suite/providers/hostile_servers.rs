//! Hostile servers against the real binary (docs/src/security.md "Security and limits"): a server that never
//! sends headers, sends headers then nothing, streams without end, sends a
//! 100 MB line, bytes that are not UTF-8, HTML or JSON instead of an event
//! stream, or a redirect. Each ends with a clear last line, exit 1 or 124,
//! no panic, and never the key. Memory is measured in `hardening_memory.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::hostile;
use crate::support::run::{last_line, stderr, stdout};
use crate::support::sse::anthropic as anthropic_sse;
use crate::support::sse::openai as openai_support;

use std::time::Duration;

use hostile::*;
use serde_json::json;

const KEY: &str = "sk-hardening-servers-7Qx2Lm9Vb4";

/// Runs `leash` on `provider` against `server` with `args`; checks that it
/// ended calmly with `code` and without the key; returns the output.
fn expect(
    provider: &str,
    server: &HostileServer,
    args: &[&str],
    code: i32,
) -> (std::process::Output, Duration) {
    let ws = Workspace::new();
    let base = match provider {
        "openai" => format!("{}/v1", server.url()),
        _ => server.url(),
    };
    let (output, elapsed) = run(ws.http(provider, &base, KEY).args(args).arg("question"));
    assert_calm(&output);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{provider}: {}",
        stderr(&output)
    );
    assert!(!contains(&output.stdout, KEY) && !contains(&output.stderr, KEY));
    (output, elapsed)
}

#[test]
fn a_server_that_never_sends_headers_is_cut_by_the_timer() {
    for provider in ["openai", "anthropic"] {
        let server = HostileServer::always(|_, conn| conn.hold());
        let (output, elapsed) = expect(provider, &server, &["--timeout", "1s"], 124);
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
        assert_eq!(
            last_line(&output),
            "leash: timed out after 1s; raise it with -t/--timeout DURATION"
        );
    }
}

#[test]
fn headers_then_nothing_is_cut_by_the_timer() {
    for provider in ["openai", "anthropic"] {
        let server = HostileServer::always(|_, conn| {
            if conn.head(200, "text/event-stream", &[]) {
                conn.hold();
            }
        });
        let (output, elapsed) = expect(provider, &server, &["--timeout", "1s"], 124);
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
        assert_eq!(
            last_line(&output),
            "leash: timed out after 1s; raise it with -t/--timeout DURATION"
        );
    }
}

#[test]
fn an_endless_stream_of_keep_alives_is_cut_by_the_timer() {
    let server = HostileServer::always(|_, conn| {
        if conn.head(200, "text/event-stream", &[]) {
            conn.flood(b": keep-alive\n\n");
        }
    });
    let (output, elapsed) = expect("openai", &server, &["--timeout", "1s"], 124);
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert_eq!(
        last_line(&output),
        "leash: timed out after 1s; raise it with -t/--timeout DURATION"
    );
}

#[test]
fn a_line_of_100_mb_fails_at_the_event_cap_with_a_clear_error() {
    // Sent in 64 KiB pieces: neither side ever holds the line.
    let server = HostileServer::always(|_, conn| {
        if conn.head(200, "text/event-stream", &[]) && conn.send(b"data: ") {
            let piece = vec![b'x'; 64 * 1024];
            for _ in 0..1600 {
                if !conn.send(&piece) {
                    return;
                }
            }
            conn.send(b"\n\n");
        }
    });
    for provider in ["openai", "anthropic"] {
        let (output, _) = expect(provider, &server, &["--timeout", "20s"], 1);
        let last = last_line(&output);
        assert!(
            last.contains("holds an event larger than 16 MiB (the cap on one event)"),
            "{provider}: {last}"
        );
    }
}

#[test]
fn bytes_that_are_not_utf8_end_the_reply_with_an_error() {
    // Each wire's own shape up to the bad bytes, so they are the only
    // fault: an OpenAI chunk sent to the Anthropic decoder failed on its
    // shape first whenever the two events arrived in separate reads.
    let server = HostileServer::always(|request, conn| {
        conn.head(200, "text/event-stream", &[]);
        if request.head.contains("/messages") {
            conn.send(anthropic_sse::message_start(1).as_bytes());
            conn.send(
                anthropic_sse::event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0,
                           "content_block": {"type": "text", "text": ""}}),
                )
                .as_bytes(),
            );
            conn.send(
                b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n",
            );
            conn.send(
                b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\xff\xfe\"}}\n\n",
            );
        } else {
            conn.send(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n");
            conn.send(
                b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\xfe\"}}]}\n\n",
            );
            conn.send(b"data: [DONE]\n\n");
        }
    });
    for provider in ["openai", "anthropic"] {
        let (output, _) = expect(provider, &server, &[], 1);
        assert!(
            last_line(&output).contains("the response stream is not valid UTF-8"),
            "{provider}: {}",
            stderr(&output)
        );
        assert_eq!(stdout(&output), "", "no partial reply on stdout");
    }
}

#[test]
fn html_instead_of_an_event_stream_is_named() {
    let page = "<!doctype html>\n<html><head><title>Sign in</title></head><body>Sign in to continue</body></html>";
    let ok = HostileServer::always(move |_, conn| {
        conn.respond(200, "text/html; charset=utf-8", page.as_bytes());
    });
    for provider in ["openai", "anthropic"] {
        let (output, _) = expect(provider, &ok, &[], 1);
        assert!(
            last_line(&output).ends_with(
                "HTTP 200 OK with HTML instead of an event stream (is the base URL the API's address?): <!doctype html> <html><head><title>Sign in</title></head><body>Sign in to continue</body></html>"
            ),
            "{provider}: {}",
            last_line(&output)
        );
    }
    assert_eq!(ok.connections(), 2, "not retried");
    let bad_gateway = HostileServer::always(move |_, conn| {
        conn.respond(502, "text/html", page.as_bytes());
    });
    let (output, _) = expect("openai", &bad_gateway, &["--retries", "1"], 1);
    let last = last_line(&output);
    assert!(
        last.contains("HTTP 502 Bad Gateway: <!doctype html>") && last.ends_with("(after 1 retry)"),
        "{last}"
    );
}

#[test]
fn json_instead_of_an_event_stream_is_named() {
    let completion = json!({
        "id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]
    });
    let server = HostileServer::always(move |_, conn| {
        conn.respond(200, "application/json", completion.to_string().as_bytes());
    });
    let (output, _) = expect("openai", &server, &[], 1);
    assert!(
        last_line(&output).contains(
            "HTTP 200 OK with JSON instead of an event stream (the server may not support streaming): {\"choices\":"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_redirect_is_not_followed_and_names_the_new_place() {
    let server = HostileServer::always(|_, conn| {
        conn.head(
            307,
            "text/plain",
            &[
                ("location", "https://elsewhere.example/v1/chat/completions"),
                ("content-length", "0"),
            ],
        );
    });
    let (output, _) = expect("openai", &server, &[], 1);
    assert!(
        last_line(&output).ends_with(
            "HTTP 307 Temporary Redirect (redirected to https://elsewhere.example/v1/chat/completions; use that as the base URL)"
        ),
        "{}",
        last_line(&output)
    );
    assert_eq!(server.connections(), 1, "neither followed nor retried");
}

#[test]
fn a_stream_that_stops_mid_reply_without_its_end_is_an_error() {
    let server = HostileServer::always(|_, conn| {
        conn.head(200, "text/event-stream", &[]);
        conn.send(
            openai_support::body(
                &[openai_support::role(), openai_support::text("half an ans")],
                false,
            )
            .as_bytes(),
        );
    });
    let (output, _) = expect("openai", &server, &[], 1);
    assert!(
        last_line(&output).ends_with(
            "the stream was cut off (no finish_reason, no [DONE]); the reply is incomplete"
        ),
        "{}",
        stderr(&output)
    );
}
