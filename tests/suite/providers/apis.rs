//! Both OpenAI APIs against loopback servers, through the real binary:
//! the same acceptance cases (the seed task, limits, errors, the timeout,
//! structured output) run once with `--api chat` and once with
//! `--api responses`, each server speaking its API's documented stream
//! byte for byte; then what only the Responses API has — parallel
//! `function_call` items, reasoning items sent back unchanged, and its
//! terminal events (`response.incomplete`, `response.failed`, `error`).

#![allow(clippy::unwrap_used)]

mod both;
mod responses_only;

use crate::support::run::Run;
use crate::support::shell::sample_path;
use crate::support::sse::openai as chat;
use crate::support::sse::responses;
use crate::support::sse::{request_bodies, sse};

use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-proj-apis-SECRET-0123456789";

const SEED_PROMPT: &str = "Read sample.ts and explain what first([]) returns, and why.";

const REPLY: &str =
    "`first([])` returns `undefined`: indexing past the end of an array does not throw.";

/// One of the two OpenAI APIs, with its replies in its own wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    Chat,
    Responses,
}

impl Api {
    fn flag(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Responses => "responses",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Responses => "/v1/responses",
        }
    }

    fn text(self, deltas: &[&str]) -> String {
        match self {
            Api::Chat => chat::text_reply(deltas),
            Api::Responses => responses::text_reply(deltas),
        }
    }

    /// Text, then the calls `(id, name, arguments)`.
    fn calls(self, text: &str, calls: &[(&str, &str, &str)]) -> String {
        match self {
            Api::Chat => {
                let mut chunks = vec![chat::role(), chat::text(text)];
                for (index, (id, name, arguments)) in calls.iter().enumerate() {
                    chunks.push(chat::call_start(index, id, name));
                    let cut = arguments.len() / 2;
                    chunks.push(chat::call_args(index, &arguments[..cut]));
                    chunks.push(chat::call_args(index, &arguments[cut..]));
                }
                chunks.push(chat::finish("tool_calls"));
                chunks.push(chat::usage(300, 40));
                chat::body(&chunks, true)
            }
            Api::Responses => responses::Reply::new()
                .message(&[text])
                .calls(calls)
                .completed(300, 0, 40),
        }
    }

    /// A reply cut by the output limit.
    fn length(self, text: &str) -> String {
        match self {
            Api::Chat => chat::body(
                &[chat::role(), chat::text(text), chat::finish("length")],
                true,
            ),
            Api::Responses => responses::Reply::new()
                .message(&[text])
                .incomplete("max_output_tokens"),
        }
    }

    /// A stream that stops mid-reply.
    fn cut(self, text: &str) -> String {
        match self {
            Api::Chat => chat::body(&[chat::role(), chat::text(text)], false),
            Api::Responses => responses::Reply::new().message(&[text]).body(),
        }
    }
}

/// The seed task on `api` at `base_url`, with [`KEY`].
fn seed(api: Api, base_url: &str) -> Run {
    Run::provider("openai", base_url, "gpt-test")
        .key(KEY)
        .args(["--api", api.flag(), "--root", "fixtures", "--no-stdin"])
        .prompt(SEED_PROMPT)
}

fn base(server: &MockServer) -> String {
    format!("{}/v1", server.uri())
}

/// A server whose successive requests to `api`'s path get `replies`
/// (the last one for every request after).
async fn serve(api: Api, replies: Vec<ResponseTemplate>) -> MockServer {
    let server = MockServer::start().await;
    let count = replies.len();
    for (i, reply) in replies.into_iter().enumerate() {
        let mock = Mock::given(method("POST"))
            .and(path(api.path()))
            .respond_with(reply);
        if i + 1 < count {
            mock.up_to_n_times(1).mount(&server).await;
        } else {
            mock.mount(&server).await;
        }
    }
    server
}

/// The conversation items of a request: Chat's `messages` without the
/// system message, or the Responses `input`.
fn conversation(api: Api, body: &Value) -> Vec<Value> {
    match api {
        Api::Chat => body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|message| message["role"] != "system")
            .cloned()
            .collect(),
        Api::Responses => body["input"].as_array().unwrap().clone(),
    }
}
