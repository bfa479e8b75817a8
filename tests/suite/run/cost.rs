//! Prompt caching and cost, the real binary against loopback OpenAI Chat
//! Completions, OpenAI Responses and Anthropic Messages servers: where the cache
//! breakpoints go (and `--no-cache`), `prompt_cache_key`, that each turn's
//! request is a byte prefix of the next, cached tokens in the usage
//! reports, `--price` and `--max-cost`.
//!
//! "Prefix", precisely: a request body's fields are all the same on every
//! turn except `messages` (`input` on Responses), which is last; so turn N's body without its
//! closing `]}` — and, on Anthropic, without the breakpoint on its last
//! message's last block, which moves to the new last block — must be the
//! first bytes of turn N+1's body, followed by the `,` that starts turn
//! N+1's new messages.

#![allow(clippy::unwrap_used)]

mod caching;
mod pricing;

use crate::support::run::{Outcome, Run};
use crate::support::sse::{anthropic, openai, responses, serve_in_order};

use serde_json::{Value, json};
use wiremock::MockServer;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Api {
    OpenAi,
    /// OpenAI with `--api responses`.
    Responses,
    Anthropic,
}

fn result(output: &Outcome) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("stdout is not JSON; stderr: {}", output.stderr()))
}

/// A run on `api` at `server`, with the fixtures as its root.
fn on(server: &MockServer, api: Api) -> Run {
    let run = match api {
        Api::OpenAi => Run::openai(server).key("sk-cost-test"),
        Api::Responses => Run::responses(server).key("sk-cost-test"),
        Api::Anthropic => Run::anthropic(server).key("sk-ant-cost-test"),
    };
    run.args(["--root", "fixtures", "--no-stdin", "--timeout", "20s"])
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The raw bodies the server received, in order.
async fn raw_bodies(server: &MockServer) -> Vec<String> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|request| String::from_utf8(request.body.clone()).unwrap())
        .collect()
}

/// An OpenAI reply calling `name` with `args`, its usage with `cached`
/// prompt tokens.
fn openai_call(id: &str, name: &str, args: &str, prompt: u64, cached: u64) -> String {
    openai::body(
        &[
            openai::role(),
            openai::call_start(0, id, name),
            openai::call_args(0, args),
            openai::finish("tool_calls"),
            openai_usage(prompt, cached, 20),
        ],
        true,
    )
}

fn openai_text(text: &str, prompt: u64, cached: u64) -> String {
    openai::body(
        &[
            openai::role(),
            openai::text(text),
            openai::finish("stop"),
            openai_usage(prompt, cached, 10),
        ],
        true,
    )
}

/// The usage chunk with `prompt_tokens_details.cached_tokens`.
fn openai_usage(prompt: u64, cached: u64, completion: u64) -> Value {
    json!({
        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached}
        }
    })
}

/// `message_start` with the cache counts as the API reports them.
fn anthropic_start(input: u64, read: u64, written: u64) -> String {
    anthropic::event(
        "message_start",
        json!({
            "type": "message_start",
            "message": {
                "id": "msg_cost", "type": "message", "role": "assistant", "content": [],
                "model": "claude-test", "stop_reason": null, "stop_sequence": null,
                "usage": {
                    "input_tokens": input, "cache_read_input_tokens": read,
                    "cache_creation_input_tokens": written, "output_tokens": 1
                }
            }
        }),
    )
}

fn anthropic_call(id: &str, name: &str, args: &str, usage: (u64, u64, u64)) -> String {
    [
        anthropic_start(usage.0, usage.1, usage.2),
        anthropic::tool_use_block(0, id, name, &[args]),
        anthropic::message_delta("tool_use", 20),
        anthropic::message_stop(),
    ]
    .concat()
}

fn anthropic_text(text: &str, usage: (u64, u64, u64)) -> String {
    [
        anthropic_start(usage.0, usage.1, usage.2),
        anthropic::text_block(0, &[text]),
        anthropic::message_delta("end_turn", 10),
        anthropic::message_stop(),
    ]
    .concat()
}

/// A server that answers with `replies` in order (the last one for every
/// request after).
async fn server(api: Api, replies: Vec<String>) -> MockServer {
    let server = MockServer::start().await;
    let endpoint = match api {
        Api::OpenAi => "/v1/chat/completions",
        Api::Responses => "/v1/responses",
        Api::Anthropic => "/v1/messages",
    };
    serve_in_order(&server, endpoint, replies).await;
    server
}

/// Three turns: `read_file`, then `list_dir`, then an answer. Usage per
/// turn: (uncached input, cache read, cache write) on Anthropic; (prompt,
/// cached) on OpenAI.
async fn three_turns(api: Api) -> MockServer {
    let replies = match api {
        Api::OpenAi => vec![
            openai_call("call_1", "read_file", r#"{"path":"sample.ts"}"#, 1000, 0),
            openai_call("call_2", "list_dir", "{}", 1200, 1000),
            openai_text("done", 1400, 1200),
        ],
        Api::Responses => vec![
            responses::Reply::new()
                .calls(&[("call_1", "read_file", r#"{"path":"sample.ts"}"#)])
                .completed(1000, 0, 20),
            responses::Reply::new()
                .calls(&[("call_2", "list_dir", "{}")])
                .completed(1200, 1000, 20),
            responses::Reply::new()
                .message(&["done"])
                .completed(1400, 1200, 10),
        ],
        Api::Anthropic => vec![
            anthropic_call(
                "toolu_1",
                "read_file",
                r#"{"path":"sample.ts"}"#,
                (10, 0, 1000),
            ),
            anthropic_call("toolu_2", "list_dir", "{}", (10, 1000, 200)),
            anthropic_text("done", (10, 1200, 200)),
        ],
    };
    server(api, replies).await
}

/// (input, output, cacheRead, cacheWrite) of a usage object.
fn counts(usage: &Value) -> [u64; 4] {
    ["input", "output", "cacheRead", "cacheWrite"].map(|key| usage[key].as_u64().unwrap())
}
