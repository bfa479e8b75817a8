//! The real binary against a loopback Chat Completions server: the seed
//! task end to end, and how HTTP failures, retries, broken streams, a
//! stalled server and a missing key end the run (ARCHITECTURE.md §2.1, §2.4).

// A failed setup step (temp dir, spawn, JSON shape) should fail the test loudly.
#![allow(clippy::unwrap_used)]

use crate::support::run::Run;
use crate::support::shell::sample_path;
use crate::support::sse::openai as openai_support;

use std::time::Duration;

use openai_support::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer};

const KEY: &str = "sk-proj-integration-SECRET-123456789";
const SEED_PROMPT: &str = "Read sample.ts and explain what first([]) returns, and why.";
const REPLY: &str =
    "`first([])` returns `undefined`: indexing past the end of an array does not throw.";

/// The base URL of a mock server, as users write it.
fn base(server: &MockServer) -> String {
    format!("{}/v1", server.uri())
}

/// The seed task on the OpenAI provider at `base_url`.
fn seed(base_url: &str) -> Run {
    Run::provider("openai", base_url, "gpt-test")
        .args(["--root", "fixtures", "--no-stdin"])
        .prompt(SEED_PROMPT)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_seed_task_reads_the_file_and_prints_the_reply() {
    let server = MockServer::start().await;
    let first = body(
        &[
            role(),
            text("Let me read the file first."),
            call_start(0, "call_seed_1", "read_file"),
            call_args(0, "{\"pa"),
            call_args(0, "th\": \"sam"),
            call_args(0, "ple.ts\"}"),
            finish("tool_calls"),
            usage(300, 40),
        ],
        true,
    );
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(sse(first))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(text_reply(&[
            "`first([])` returns ",
            "`undefined`: indexing past the end ",
            "of an array does not throw.",
        ])))
        .mount(&server)
        .await;

    let output = seed(&base(&server))
        .key(KEY)
        .args(["--timeout", "20s"])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "stderr: {}", output.stderr());
    assert_eq!(output.stdout(), format!("{REPLY}\n"));
    output.assert_key_absent(KEY);

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["model"], "gpt-test");
    assert_eq!(bodies[0]["stream"], true);
    assert_eq!(bodies[0]["stream_options"], json!({"include_usage": true}));
    let tools: Vec<_> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            (
                tool["type"].as_str().unwrap(),
                tool["function"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(tools.contains(&("function", "read_file")), "{tools:?}");

    let messages = bodies[1]["messages"].as_array().unwrap();
    let roles: Vec<_> = messages
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles.iter().filter(|role| **role != "system").count(),
        3,
        "{messages:#?}"
    );
    let conversation: Vec<_> = messages
        .iter()
        .filter(|message| message["role"] != "system")
        .collect();
    assert_eq!(conversation[0]["role"], "user");
    assert!(
        conversation[0]["content"]
            .as_str()
            .unwrap()
            .contains(SEED_PROMPT)
    );
    assert_eq!(
        *conversation[1],
        json!({"role": "assistant", "content": "Let me read the file first.", "tool_calls": [
            {"id": "call_seed_1", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"path\":\"sample.ts\"}"}}
        ]})
    );
    assert_eq!(conversation[2]["role"], "tool");
    assert_eq!(conversation[2]["tool_call_id"], "call_seed_1");
    let content = conversation[2]["content"].as_str().unwrap();
    let sample = std::fs::read_to_string(sample_path()).unwrap();
    for line in sample.lines() {
        assert!(
            content.contains(line),
            "tool result lacks {line:?}: {content}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limited_once_then_served_exits_0() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            http_error(429, "Rate limit reached for gpt-test").insert_header("retry-after", "1"),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse(text_reply(&[REPLY])))
        .mount(&server)
        .await;
    let output = seed(&base(&server))
        .key(KEY)
        .args(["--retries", "2"])
        .output_async()
        .await;
    let elapsed = output.elapsed;
    assert_eq!(output.status.code(), Some(0), "stderr: {}", output.stderr());
    assert_eq!(output.stdout(), format!("{REPLY}\n"));
    assert_eq!(request_bodies(&server).await.len(), 2);
    assert!(
        elapsed >= Duration::from_secs(1),
        "retry-after not honoured: {elapsed:?}"
    );
    assert!(
        output.stderr().contains("429"),
        "no retry shown: {}",
        output.stderr()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn status_401_exits_1_without_retry_and_without_the_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(http_error(
            401,
            &format!("Incorrect API key provided: {KEY}."),
        ))
        .mount(&server)
        .await;
    let output = seed(&base(&server))
        .key(KEY)
        .args(["--retries", "2"])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(1), "stderr: {}", output.stderr());
    assert_eq!(request_bodies(&server).await.len(), 1);
    let last = output.last_line();
    assert!(
        last.contains("401") && last.contains("Incorrect API key provided"),
        "{}",
        output.stderr()
    );
    assert_eq!(output.stdout(), "");
    output.assert_key_absent(KEY);
}

#[tokio::test(flavor = "multi_thread")]
async fn server_errors_exhaust_the_retries_and_exit_1() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(http_error(
            500,
            "The server had an error while processing your request.",
        ))
        .mount(&server)
        .await;
    let output = seed(&base(&server))
        .key(KEY)
        .args(["--retries", "2", "--events", "jsonl"])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(1), "stderr: {}", output.stderr());
    assert_eq!(request_bodies(&server).await.len(), 3);
    let retries: Vec<serde_json::Value> = output
        .stderr()
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| event["type"] == "retry")
        .collect();
    assert_eq!(retries.len(), 2, "{}", output.stderr());
    assert_eq!(retries[0]["attempt"], 1);
    assert_eq!(retries[1]["attempt"], 2);
    assert!(
        output.last_line().contains("HTTP 500"),
        "{}",
        output.stderr()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_cut_before_the_end_exits_1_without_retry() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(body(
            &[role(), text("An answer that never ends")],
            false,
        )))
        .mount(&server)
        .await;
    let output = seed(&base(&server))
        .key(KEY)
        .args(["--retries", "2"])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(1), "stderr: {}", output.stderr());
    assert!(output.last_line().contains("[DONE]"), "{}", output.stderr());
    assert_eq!(request_bodies(&server).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_cut_by_the_token_limit_exits_5() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(body(
            &[role(), text("The answer is"), finish("length")],
            true,
        )))
        .mount(&server)
        .await;
    let output = seed(&base(&server))
        .key(KEY)
        .args(["--max-tokens", "3"])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(5), "stderr: {}", output.stderr());
    // The name the o-series accepts; they refuse `max_tokens`.
    let body = &request_bodies(&server).await[0];
    assert_eq!(body["max_completion_tokens"], 3);
    assert_eq!(body.get("max_tokens"), None, "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_server_is_cut_by_the_timeout_with_exit_124() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(text_reply(&[REPLY])).set_delay(Duration::from_secs(10)))
        .mount(&server)
        .await;
    let output = seed(&base(&server))
        .key(KEY)
        .args(["--timeout", "1s"])
        .output_async()
        .await;
    let elapsed = output.elapsed;
    assert_eq!(
        output.status.code(),
        Some(124),
        "stderr: {}",
        output.stderr()
    );
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    output.assert_key_absent(KEY);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_key_for_a_remote_server_is_a_usage_error() {
    let output = seed("https://api.example.invalid/v1")
        .no_key()
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(2), "stderr: {}", output.stderr());
    assert!(
        output.last_line().contains("OPENAI_API_KEY"),
        "{}",
        output.stderr()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_local_server_needs_no_key_and_gets_no_authorization() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(text_reply(&[REPLY])))
        .mount(&server)
        .await;
    let output = seed(&format!("{}/", base(&server)))
        .no_key()
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "stderr: {}", output.stderr());
    assert_eq!(output.stdout(), format!("{REPLY}\n"));
    let requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].headers.get("authorization").is_none());
}
