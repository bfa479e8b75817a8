//! `grep` and `find` through the real binary on both provider mocks: a
//! model that searches the tree, then answers. Both are offered by
//! default, and the results reach the next request as the model's tool
//! results (sorted, relative to the root).

// A failed setup step (temp dir, spawn, JSON shape) should fail the test loudly.
#![allow(clippy::unwrap_used)]

use crate::support::run::Run;
use crate::support::sse::{anthropic, openai, serve_in_order};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use wiremock::MockServer;

const PROMPT: &str = "Where is first() defined?";
const REPLY: &str = "In sample.ts, line 3.";
const GREP_RESULT: &str = "sample.ts:3:export function first<T>(items: T[]): T {";
const FIND_RESULT: &str = "sample.ts";

/// The tool names a request offered.
fn offered(body: &Value, name_of: impl Fn(&Value) -> &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| name_of(tool).as_str().unwrap().to_owned())
        .collect()
}

/// `leash` on `provider` at `base_url` with the fixtures as its root and
/// the default tools.
fn ask(provider: &str, base_url: String) -> Run {
    Run::provider(provider, base_url, "m")
        .key("sk-search-tools-test")
        .args(["--root", "fixtures", "--no-stdin", "--timeout", "20s"])
        .prompt(PROMPT)
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_a_model_greps_and_finds_then_answers() {
    let server = MockServer::start().await;
    let grep_args = json!({"pattern": r"function\s+first", "context": 0}).to_string();
    let find_args = json!({"pattern": "**/*.ts"}).to_string();
    let first = openai::body(
        &[
            openai::role(),
            openai::call_start(0, "call_grep", "grep"),
            openai::call_args(0, &grep_args),
            openai::call_start(1, "call_find", "find"),
            openai::call_args(1, &find_args),
            openai::finish("tool_calls"),
        ],
        true,
    );
    serve_in_order(
        &server,
        "/v1/chat/completions",
        vec![first, openai::text_reply(&[REPLY])],
    )
    .await;
    let output = ask("openai", format!("{}/v1", server.uri()))
        .output_async()
        .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("{REPLY}\n")
    );

    let bodies = openai::request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        offered(&bodies[0], |tool| &tool["function"]["name"]),
        ["read_file", "list_dir", "grep", "find"]
    );
    let results: Vec<(String, String)> = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("call_grep".to_owned(), GREP_RESULT.to_owned()),
            ("call_find".to_owned(), FIND_RESULT.to_owned())
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_a_model_greps_and_finds_then_answers() {
    let server = MockServer::start().await;
    let grep_args =
        json!({"pattern": "FUNCTION FIRST", "ignore_case": true, "literal": true}).to_string();
    let find_args = json!({"pattern": "*.ts", "path": "."}).to_string();
    let first = [
        anthropic::message_start(100),
        anthropic::tool_use_block(0, "toolu_grep", "grep", &[&grep_args]),
        anthropic::tool_use_block(1, "toolu_find", "find", &[&find_args]),
        anthropic::message_delta("tool_use", 20),
        anthropic::message_stop(),
    ]
    .concat();
    serve_in_order(
        &server,
        "/v1/messages",
        vec![first, anthropic::text_reply(REPLY)],
    )
    .await;
    let output = ask("anthropic", server.uri()).output_async().await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("{REPLY}\n")
    );

    let bodies = anthropic::request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        offered(&bodies[0], |tool| &tool["name"]),
        ["read_file", "list_dir", "grep", "find"]
    );
    let messages = bodies[1]["messages"].as_array().unwrap();
    let results: Vec<(String, bool, String)> = messages[2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["tool_use_id"].as_str().unwrap().to_owned(),
                r["is_error"].as_bool().unwrap(),
                r["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("toolu_grep".to_owned(), false, GREP_RESULT.to_owned()),
            ("toolu_find".to_owned(), false, FIND_RESULT.to_owned())
        ]
    );
}
