//! The real binary against a loopback Anthropic Messages API: the seed task
//! end to end, and how stream errors, HTTP failures, retries and a stalled
//! server end the run (ARCHITECTURE.md §2.1, §2.4).

// A failed setup step (temp dir, spawn, JSON shape) should fail the test loudly.
#![allow(clippy::unwrap_used)]

use crate::support::run::Run;
use crate::support::shell::sample_path;
use crate::support::sse::anthropic as anthropic_support;

use std::time::Duration;

use anthropic_support::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer};

const KEY: &str = "sk-ant-integration-SECRET-987654321";
const SEED_PROMPT: &str = "Read sample.ts and explain what first([]) returns, and why.";
const REPLY: &str =
    "`first([])` returns `undefined`: indexing past the end of an array does not throw.";

/// The seed task on the Anthropic mock at `server`, with [`KEY`].
fn seed(server: &MockServer) -> Run {
    Run::anthropic(server)
        .key(KEY)
        .args(["--root", "fixtures", "--no-stdin"])
        .prompt(SEED_PROMPT)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_seed_task_reads_the_file_and_prints_the_reply() {
    let server = MockServer::start().await;
    let first = [
        message_start(300),
        text_block(0, &["Let me read ", "the file first."]),
        ping(),
        tool_use_block(
            1,
            "toolu_01Seed",
            "read_file",
            &["{\"pa", "th\": \"sam", "ple.ts\"}"],
        ),
        message_delta("tool_use", 40),
        message_stop(),
    ]
    .concat();
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(sse(first))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(sse(text_reply(REPLY)))
        .mount(&server)
        .await;

    let output = seed(&server)
        .args(["--timeout", "20s"])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "stderr: {}", output.stderr());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("{REPLY}\n")
    );
    output.assert_key_absent(KEY);

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["stream"], true);
    assert_eq!(bodies[0]["model"], "claude-test");
    assert!(bodies[0]["max_tokens"].as_u64().is_some_and(|n| n > 0));
    let names: Vec<_> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"read_file"), "{names:?}");

    let messages = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Let me read the file first."},
            {"type": "tool_use", "id": "toolu_01Seed", "name": "read_file", "input": {"path": "sample.ts"}}
        ]})
    );
    assert_eq!(messages[2]["role"], "user");
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(results[0]["tool_use_id"], "toolu_01Seed");
    assert_eq!(results[0]["is_error"], false);
    let sample = std::fs::read_to_string(sample_path()).unwrap();
    let content = results[0]["content"].as_str().unwrap();
    for line in sample.lines() {
        assert!(
            content.contains(line),
            "tool result lacks {line:?}: {content}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mid_stream_overloaded_error_exits_1() {
    let server = MockServer::start().await;
    let body = [
        message_start(10),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Part"}}),
        ),
        error_event("overloaded_error", "Overloaded"),
    ]
    .concat();
    Mock::given(method("POST"))
        .respond_with(sse(body))
        .mount(&server)
        .await;
    let output = seed(&server).args(["--retries", "2"]).output_async().await;
    assert_eq!(output.status.code(), Some(1), "stderr: {}", output.stderr());
    assert!(
        output.last_line().contains("Overloaded"),
        "{}",
        output.stderr()
    );
    // The body was used: no retry.
    assert_eq!(request_bodies(&server).await.len(), 1);
    output.assert_key_absent(KEY);
}

#[tokio::test(flavor = "multi_thread")]
async fn status_529_then_success_exits_0() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            http_error(529, "overloaded_error", "Overloaded").insert_header("retry-after", "0"),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse(text_reply(REPLY)))
        .mount(&server)
        .await;
    let output = seed(&server).args(["--retries", "2"]).output_async().await;
    assert_eq!(output.status.code(), Some(0), "stderr: {}", output.stderr());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("{REPLY}\n")
    );
    assert_eq!(request_bodies(&server).await.len(), 2);
    assert!(
        output.stderr().contains("529"),
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
            "authentication_error",
            &format!("invalid x-api-key: {KEY}"),
        ))
        .mount(&server)
        .await;
    let output = seed(&server)
        .args(["--retries", "2", "--events", "jsonl"])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(1), "stderr: {}", output.stderr());
    assert_eq!(request_bodies(&server).await.len(), 1);
    assert!(output.stderr().contains("401"), "{}", output.stderr());
    assert!(
        output.stderr().contains("invalid x-api-key"),
        "{}",
        output.stderr()
    );
    output.assert_key_absent(KEY);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_cut_before_message_stop_exits_1() {
    let server = MockServer::start().await;
    let body = [
        message_start(10),
        text_block(0, &["An answer that never ends"]),
        message_delta("end_turn", 5),
    ]
    .concat();
    Mock::given(method("POST"))
        .respond_with(sse(body))
        .mount(&server)
        .await;
    let output = seed(&server).args(["--retries", "2"]).output_async().await;
    assert_eq!(output.status.code(), Some(1), "stderr: {}", output.stderr());
    assert!(
        output.last_line().contains("message_stop"),
        "{}",
        output.stderr()
    );
    assert_eq!(request_bodies(&server).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_server_is_cut_by_the_timeout_with_exit_124() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(text_reply(REPLY)).set_delay(Duration::from_secs(30)))
        .mount(&server)
        .await;
    let output = seed(&server).args(["--timeout", "1s"]).output_async().await;
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
