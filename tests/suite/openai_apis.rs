//! Both OpenAI APIs against loopback servers, through the real binary:
//! the same acceptance cases (the seed task, limits, errors, the timeout,
//! structured output) run once with `--api chat` and once with
//! `--api responses`, each server speaking its API's documented stream
//! byte for byte; then what only the Responses API has — parallel
//! `function_call` items, reasoning items sent back unchanged, and its
//! terminal events (`response.incomplete`, `response.failed`, `error`).

#![allow(clippy::unwrap_used)]

use crate::support::run::Run;
use crate::support::shell::sample_path;
use crate::support::sse::openai as chat;
use crate::support::sse::responses;
use crate::support::sse::{request_bodies, sse};

use std::time::Duration;

use pretty_assertions::assert_eq;
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

const BOTH: [Api; 2] = [Api::Chat, Api::Responses];

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

#[tokio::test(flavor = "multi_thread")]
async fn the_seed_task_on_both_apis() {
    for api in BOTH {
        let server = MockServer::start().await;
        let first = api.calls(
            "Let me read the file first.",
            &[("call_seed_1", "read_file", "{\"path\": \"sample.ts\"}")],
        );
        Mock::given(method("POST"))
            .and(path(api.path()))
            .and(header("authorization", format!("Bearer {KEY}").as_str()))
            .respond_with(sse(first))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path(api.path()))
            .respond_with(sse(api.text(&[
                "`first([])` returns ",
                "`undefined`: indexing past the end ",
                "of an array does not throw.",
            ])))
            .mount(&server)
            .await;

        let output = seed(api, &base(&server))
            .args(["--timeout", "20s"])
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(output.stdout(), format!("{REPLY}\n"), "{api:?}");
        output.assert_key_absent(KEY);

        let bodies = request_bodies(&server).await;
        assert_eq!(bodies.len(), 2, "{api:?}");
        let turn = conversation(api, &bodies[1]);
        let sample = std::fs::read_to_string(sample_path()).unwrap();
        match api {
            Api::Chat => {
                assert_eq!(turn.len(), 3, "{turn:#?}");
                assert_eq!(turn[1]["tool_calls"][0]["id"], "call_seed_1");
                assert_eq!(turn[2]["tool_call_id"], "call_seed_1");
            }
            Api::Responses => {
                assert_eq!(bodies[0]["store"], false);
                assert_eq!(bodies[0]["stream"], true);
                assert_eq!(bodies[0]["include"], json!(["reasoning.encrypted_content"]));
                assert_eq!(bodies[1]["instructions"], bodies[0]["instructions"]);
                let tool = bodies[0]["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|tool| tool["name"] == "read_file")
                    .unwrap();
                assert_eq!(tool["type"], "function");
                assert!(tool["parameters"].is_object(), "{tool}");
                assert_eq!(turn.len(), 4, "{turn:#?}");
                assert_eq!(turn[0]["role"], "user");
                assert!(turn[0]["content"].as_str().unwrap().contains(SEED_PROMPT));
                assert_eq!(
                    turn[1],
                    json!({"type": "message", "role": "assistant",
                           "content": "Let me read the file first."})
                );
                assert_eq!(
                    turn[2],
                    json!({"type": "function_call", "call_id": "call_seed_1",
                           "name": "read_file", "arguments": "{\"path\":\"sample.ts\"}"})
                );
                assert_eq!(turn[3]["type"], "function_call_output");
                assert_eq!(turn[3]["call_id"], "call_seed_1");
                let result = turn[3]["output"].as_str().unwrap();
                for line in sample.lines() {
                    assert!(result.contains(line), "tool result lacks {line:?}");
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_turn_limit_on_both_apis_exits_3() {
    for api in BOTH {
        let server = serve(
            api,
            vec![sse(api.calls(
                "Reading.",
                &[("call_1", "read_file", "{\"path\": \"sample.ts\"}")],
            ))],
        )
        .await;
        let output = seed(api, &base(&server))
            .args(["--max-turns", "1"])
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(3),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(request_bodies(&server).await.len(), 1, "{api:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_output_limit_on_both_apis_exits_5_and_names_the_apis_field() {
    for api in BOTH {
        let server = serve(api, vec![sse(api.length("The answer is"))]).await;
        let output = seed(api, &base(&server))
            .args(["--max-tokens", "3"])
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(5),
            "{api:?}: {}",
            output.stderr()
        );
        let body = &request_bodies(&server).await[0];
        let field = match api {
            Api::Chat => "max_completion_tokens",
            Api::Responses => "max_output_tokens",
        };
        assert_eq!(body[field], 3, "{api:?}: {body}");
        assert_eq!(body.get("max_tokens"), None, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_on_both_apis_exit_1_retried_as_the_driver_says() {
    for api in BOTH {
        // 401: no retry, the server's words, never the key.
        let server = serve(
            api,
            vec![chat::http_error(
                401,
                &format!("Incorrect API key provided: {KEY}."),
            )],
        )
        .await;
        let output = seed(api, &base(&server))
            .args(["--retries", "2"])
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(1),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(request_bodies(&server).await.len(), 1);
        let last = output.last_line();
        assert!(
            last.contains("401") && last.contains("Incorrect API key"),
            "{last}"
        );
        output.assert_key_absent(KEY);

        // 500s: every retry used, then exit 1.
        let server = serve(api, vec![chat::http_error(500, "The server had an error.")]).await;
        let output = seed(api, &base(&server))
            .args(["--retries", "1"])
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(1),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(request_bodies(&server).await.len(), 2, "{api:?}");
        assert!(
            output.last_line().contains("HTTP 500"),
            "{}",
            output.stderr()
        );

        // A cut stream: exit 1, the incomplete-reply words, no retry.
        let server = serve(api, vec![sse(api.cut("An answer that never ends"))]).await;
        let output = seed(api, &base(&server))
            .args(["--retries", "2"])
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(1),
            "{api:?}: {}",
            output.stderr()
        );
        assert!(
            output.last_line().contains("the reply is incomplete"),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(request_bodies(&server).await.len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limited_once_then_served_on_both_apis() {
    for api in BOTH {
        let server = serve(
            api,
            vec![
                chat::http_error(429, "Rate limit reached").insert_header("retry-after", "1"),
                sse(api.text(&[REPLY])),
            ],
        )
        .await;
        let output = seed(api, &base(&server))
            .args(["--retries", "2"])
            .output_async()
            .await;
        let elapsed = output.elapsed;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(output.stdout(), format!("{REPLY}\n"));
        assert_eq!(request_bodies(&server).await.len(), 2);
        assert!(
            elapsed >= Duration::from_secs(1),
            "retry-after: {elapsed:?}"
        );
        assert!(output.stderr().contains("429"), "{}", output.stderr());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_server_on_both_apis_is_cut_by_the_timeout_with_124() {
    for api in BOTH {
        let server = serve(
            api,
            vec![sse(api.text(&[REPLY])).set_delay(Duration::from_secs(10))],
        )
        .await;
        let output = seed(api, &base(&server))
            .args(["--timeout", "1s"])
            .output_async()
            .await;
        let elapsed = output.elapsed;
        assert_eq!(
            output.status.code(),
            Some(124),
            "{api:?}: {}",
            output.stderr()
        );
        assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
        output.assert_key_absent(KEY);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn structured_output_on_both_apis_asks_for_the_schema() {
    let schema = json!({
        "type": "object",
        "properties": {"verdict": {"enum": ["pass", "fail"]}},
        "required": ["verdict"],
        "additionalProperties": false
    });
    for api in BOTH {
        let dir = tempfile::tempdir().unwrap();
        let schema_path = dir.path().join("schema.json");
        std::fs::write(&schema_path, schema.to_string()).unwrap();
        let server = serve(api, vec![sse(api.text(&[r#"{"verdict":"pass"}"#]))]).await;
        let schema_arg = schema_path.display().to_string();
        let output = seed(api, &base(&server))
            .args(["--tools", "none", "--output-schema", &schema_arg])
            .prompt("Is it good?")
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(output.stdout(), "{\"verdict\":\"pass\"}\n");
        let body = &request_bodies(&server).await[0];
        let format = match api {
            Api::Chat => {
                let format = &body["response_format"];
                assert_eq!(format["type"], "json_schema");
                format["json_schema"].clone()
            }
            Api::Responses => {
                let format = body["text"]["format"].clone();
                assert_eq!(format["type"], "json_schema");
                format
            }
        };
        assert_eq!(format["name"], "leash_output", "{body}");
        assert_eq!(format["schema"], schema, "{body}");
        assert_eq!(format["strict"], true, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn parallel_function_calls_are_answered_by_call_id() {
    let api = Api::Responses;
    let server = serve(
        api,
        vec![
            sse(api.calls(
                "Reading both.",
                &[
                    ("call_a", "read_file", "{\"path\": \"sample.ts\"}"),
                    ("call_b", "list_dir", "{\"path\": \".\"}"),
                ],
            )),
            sse(api.text(&[REPLY])),
        ],
    )
    .await;
    let output = seed(api, &base(&server)).output_async().await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    let bodies = request_bodies(&server).await;
    let turn = conversation(api, &bodies[1]);
    let kinds: Vec<_> = turn.iter().map(|item| item["type"].clone()).collect();
    assert_eq!(
        kinds,
        json!([
            "message",
            "message",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output"
        ])
        .as_array()
        .unwrap()
        .clone()
    );
    assert_eq!(turn[2]["call_id"], "call_a");
    assert_eq!(turn[3]["call_id"], "call_b");
    assert_eq!(turn[3]["name"], "list_dir");
    assert_eq!(turn[4]["call_id"], "call_a");
    assert_eq!(turn[5]["call_id"], "call_b");
    assert!(
        turn[4]["output"].as_str().unwrap().contains("first"),
        "{}",
        turn[4]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn reasoning_items_go_back_byte_for_byte_in_the_next_request() {
    let api = Api::Responses;
    let first = responses::Reply::new()
        .reasoning("I should read the file.", "gAAAAABo-encrypted-chain-1==")
        .calls(&[("call_r", "read_file", "{\"path\": \"sample.ts\"}")])
        .completed(200, 0, 30);
    let second = responses::Reply::new()
        .reasoning("", "gAAAAABo-encrypted-chain-2==")
        .message(&[REPLY])
        .completed(400, 128, 20);
    let server = serve(
        api,
        vec![sse(first), sse(second), sse(api.text(&["unused"]))],
    )
    .await;
    let output = seed(api, &base(&server))
        .args([
            "--follow-up",
            "And first([1])?",
            "--events",
            "jsonl",
            "-s",
            "Be brief.",
        ])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 3);
    let first_item =
        responses::reasoning_item(0, "I should read the file.", "gAAAAABo-encrypted-chain-1==");
    let second_item = responses::reasoning_item(0, "", "gAAAAABo-encrypted-chain-2==");
    let raw = |i: usize| String::from_utf8(requests[i].body.clone()).unwrap();
    // Exactly the bytes the server sent, in both later requests.
    assert!(raw(1).contains(&first_item.to_string()), "{}", raw(1));
    assert!(raw(2).contains(&first_item.to_string()), "{}", raw(2));
    assert!(raw(2).contains(&second_item.to_string()), "{}", raw(2));
    // Every request repeats the one before it as an exact prefix: the
    // same instructions and tools, and its input items byte for byte.
    #[derive(serde::Deserialize)]
    struct Wire<'a> {
        #[serde(borrow)]
        instructions: &'a serde_json::value::RawValue,
        #[serde(borrow)]
        tools: &'a serde_json::value::RawValue,
        #[serde(borrow)]
        input: Vec<&'a serde_json::value::RawValue>,
    }
    let bodies: Vec<String> = (0..3).map(raw).collect();
    let wires: Vec<Wire<'_>> = bodies
        .iter()
        .map(|body| serde_json::from_str(body).unwrap())
        .collect();
    for pair in wires.windows(2) {
        assert_eq!(pair[0].instructions.get(), pair[1].instructions.get());
        assert_eq!(pair[0].tools.get(), pair[1].tools.get());
        let (before, after) = (&pair[0].input, &pair[1].input);
        assert!(after.len() > before.len());
        for (a, b) in before.iter().zip(after.iter()) {
            assert_eq!(a.get(), b.get(), "an earlier item changed");
        }
    }
    let turn = conversation(api, &serde_json::from_str(&raw(1)).unwrap());
    assert_eq!(
        turn[1], first_item,
        "the reasoning item comes before its call"
    );
    assert_eq!(turn[2]["type"], "function_call");
    // The summary is shown as thinking.
    assert!(
        output.stderr().contains("I should read the file."),
        "{}",
        output.stderr()
    );
    // Cached input is reported apart.
    let usage: Vec<Value> = output
        .stderr()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "message_end" && event["message"]["role"] == "assistant")
        .map(|event| event["message"]["usage"].clone())
        .collect();
    assert_eq!(usage[1]["cacheRead"], 128, "{usage:?}");
    assert_eq!(usage[1]["input"], 272, "{usage:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_and_error_events_exit_1_with_the_servers_message() {
    let api = Api::Responses;
    let failed = responses::Reply::new()
        .message(&["Half an ans"])
        .failed(&format!("The model crashed near {KEY}."));
    let error = responses::error_event("server_is_overloaded", "Try again later.");
    for (body, words) in [(failed, "The model crashed"), (error, "Try again later.")] {
        let server = serve(api, vec![sse(body)]).await;
        let output = seed(api, &base(&server))
            .args(["--retries", "2"])
            .output_async()
            .await;
        assert_eq!(output.status.code(), Some(1), "{}", output.stderr());
        let last = output.last_line();
        assert!(last.contains(words), "{last}");
        assert_eq!(request_bodies(&server).await.len(), 1, "not retried");
        output.assert_key_absent(KEY);
    }
}

/// A `response.completed` whose response says `failed` is the server's
/// error (exit 1, its message on the last line), not an answer; one that
/// says `incomplete` at the output limit is a cut-off answer (exit 5).
#[tokio::test(flavor = "multi_thread")]
async fn a_completed_event_whose_status_failed_is_an_error_not_an_answer() {
    let api = Api::Responses;
    let mut failed = responses::response("failed", json!([]), Value::Null);
    failed["error"] = json!({"code": "server_error", "message": "The model fell over."});
    let failed = responses::Reply::new()
        .message(&["Half an ans"])
        .event("response.completed", json!({"response": failed}))
        .body();
    let server = serve(api, vec![sse(failed)]).await;
    let output = seed(api, &base(&server))
        .args(["--retries", "2"])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(1), "{}", output.stderr());
    assert!(
        output.last_line().contains("The model fell over."),
        "{}",
        output.stderr()
    );
    assert_eq!(output.stdout(), "");
    output.assert_key_absent(KEY);

    let mut cut = responses::response("incomplete", json!([]), responses::usage(40, 0, 3, 0));
    cut["incomplete_details"] = json!({"reason": "max_output_tokens"});
    let cut = responses::Reply::new()
        .message(&["Half an ans"])
        .event("response.completed", json!({"response": cut}))
        .body();
    let server = serve(api, vec![sse(cut)]).await;
    let output = seed(api, &base(&server)).output_async().await;
    assert_eq!(output.status.code(), Some(5), "{}", output.stderr());
}

#[tokio::test(flavor = "multi_thread")]
async fn leash_api_selects_responses_and_other_providers_refuse_it() {
    let server = serve(Api::Responses, vec![sse(responses::text_reply(&[REPLY]))]).await;
    let output = Run::new()
        .env("LEASH_API", "responses")
        .env("OPENAI_API_KEY", KEY)
        .args([
            "--base-url",
            &base(&server),
            "-m",
            "gpt-test",
            "--no-stdin",
            "hi",
        ])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    assert_eq!(request_bodies(&server).await.len(), 1);

    let output = Run::new()
        .env("ANTHROPIC_API_KEY", "sk-ant-x")
        .args([
            "--api",
            "responses",
            "--provider",
            "anthropic",
            "--no-stdin",
            "hi",
        ])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(2), "{}", output.stderr());
    assert!(output.last_line().contains("--api"), "{}", output.stderr());
}
