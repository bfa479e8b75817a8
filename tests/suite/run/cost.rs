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

use crate::support::run::{Outcome, Run};
use crate::support::sse::{anthropic, openai, responses, serve_in_order};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use wiremock::MockServer;

const BREAKPOINT: &str = r#","cache_control":{"type":"ephemeral"}"#;

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

/// The prefix rule of this file's header, between two consecutive bodies.
fn assert_prefix(before: &str, after: &str, moving_breakpoint: bool) {
    let head = before
        .strip_suffix("]}")
        .unwrap_or_else(|| panic!("messages are not the last field: {before}"));
    let head = match moving_breakpoint {
        true => {
            let tail = format!("{BREAKPOINT}}}]}}");
            let cut = head
                .strip_suffix(&tail)
                .unwrap_or_else(|| panic!("no breakpoint on the last block: {head}"));
            format!("{cut}}}]}}")
        }
        false => head.to_owned(),
    };
    assert!(after.len() > head.len(), "{after}");
    assert_eq!(
        &after[..head.len()],
        head,
        "turn N+1 does not repeat turn N"
    );
    assert_eq!(&after[head.len()..head.len() + 1], ",");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_request_repeats_the_one_before_as_an_exact_prefix_on_every_provider() {
    for (api, extra) in [
        (Api::OpenAi, vec!["--prompt-cache-key", "repo-1"]),
        (Api::Responses, vec!["--prompt-cache-key", "repo-1"]),
        (Api::Anthropic, vec![]),
        (Api::Anthropic, vec!["--no-cache"]),
    ] {
        let server = three_turns(api).await;
        let mut args = vec!["-s", "You are terse.", "--max-turns", "5"];
        args.extend(extra.iter().copied());
        args.push("Read sample.ts, then list the directory.");
        let output = on(&server, api).args(&args).output_async().await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{api:?}: {}",
            output.stderr()
        );
        let bodies = raw_bodies(&server).await;
        assert_eq!(bodies.len(), 3, "{api:?}");
        if api != Api::Anthropic {
            let first: Value = serde_json::from_str(&bodies[0]).unwrap();
            assert_eq!(first["prompt_cache_key"], "repo-1", "{api:?}");
        }
        let moving = api == Api::Anthropic && extra.is_empty();
        assert_prefix(&bodies[0], &bodies[1], moving);
        assert_prefix(&bodies[1], &bodies[2], moving);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_breakpoints_sit_on_the_last_tool_the_system_and_the_last_block() {
    let server = three_turns(Api::Anthropic).await;
    let output = on(&server, Api::Anthropic)
        .args([
            "-s",
            "You are terse.",
            "Read sample.ts, then list the directory.",
        ])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    let ephemeral = json!({"type": "ephemeral"});
    for body in anthropic::request_bodies(&server).await {
        let tools = body["tools"].as_array().unwrap();
        let (last_tool, others) = tools.split_last().unwrap();
        assert_eq!(last_tool["cache_control"], ephemeral);
        assert!(
            others
                .iter()
                .all(|tool| tool.get("cache_control").is_none())
        );
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}])
        );
        let messages = body["messages"].as_array().unwrap();
        let (last, earlier) = messages.split_last().unwrap();
        let (last_block, earlier_blocks) =
            last["content"].as_array().unwrap().split_last().unwrap();
        assert_eq!(last_block["cache_control"], ephemeral);
        assert!(
            earlier_blocks
                .iter()
                .all(|b| b.get("cache_control").is_none())
        );
        for message in earlier {
            for block in message["content"].as_array().unwrap() {
                assert!(block.get("cache_control").is_none(), "{body}");
            }
        }
        // Three breakpoints; the API allows four.
        assert_eq!(body.to_string().matches("cache_control").count(), 3);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_cache_removes_every_breakpoint_in_flag_variable_and_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("leash");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "no-cache = true\n").unwrap();
    for (args, env) in [
        (vec!["--no-cache", "Read sample.ts."], vec![]),
        (vec!["Read sample.ts."], vec![("LEASH_NO_CACHE", "1")]),
        (
            vec!["Read sample.ts."],
            vec![("XDG_CONFIG_HOME", dir.path().to_str().unwrap())],
        ),
    ] {
        let server = three_turns(Api::Anthropic).await;
        let mut args = args;
        args.splice(0..0, ["-s", "You are terse."]);
        let output = on(&server, Api::Anthropic)
            .envs(env.iter().copied())
            .args(&args)
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{env:?}: {}",
            output.stderr()
        );
        for body in raw_bodies(&server).await {
            assert!(!body.contains("cache_control"), "{env:?}: {body}");
            assert!(body.contains(r#""system":"You are terse.""#), "{body}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_gets_the_prompt_cache_key_only_when_set() {
    let server = three_turns(Api::OpenAi).await;
    let output = on(&server, Api::OpenAi)
        .envs([("LEASH_PROMPT_CACHE_KEY", "repo-7")])
        .args(["Read sample.ts."])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    for body in openai::request_bodies(&server).await {
        assert_eq!(body["prompt_cache_key"], "repo-7");
        assert!(!body.to_string().contains("cache_control"));
    }
    let server = three_turns(Api::OpenAi).await;
    let output = on(&server, Api::OpenAi)
        .args(["Read sample.ts."])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    for body in raw_bodies(&server).await {
        assert!(!body.contains("prompt_cache_key"), "{body}");
    }
}

/// (input, output, cacheRead, cacheWrite) of a usage object.
fn counts(usage: &Value) -> [u64; 4] {
    ["input", "output", "cacheRead", "cacheWrite"].map(|key| usage[key].as_u64().unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn cached_tokens_are_reported_per_turn_and_for_the_run() {
    for (api, turns, total) in [
        (
            Api::Anthropic,
            [[10, 20, 0, 1000], [10, 20, 1000, 200], [10, 10, 1200, 200]],
            [30, 50, 2200, 1400],
        ),
        (
            Api::OpenAi,
            [[1000, 20, 0, 0], [200, 20, 1000, 0], [200, 10, 1200, 0]],
            [1400, 50, 2200, 0],
        ),
    ] {
        let server = three_turns(api).await;
        let args = [
            "--output",
            "json",
            "--events",
            "jsonl",
            "Read sample.ts, then list the directory.",
        ];
        let output = on(&server, api).args(args).output_async().await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{api:?}: {}",
            output.stderr()
        );
        let result = result(&output);
        assert_eq!(counts(&result["usage"]), total, "{api:?}");
        let per_turn: Vec<[u64; 4]> = result["turnUsage"]
            .as_array()
            .unwrap()
            .iter()
            .map(counts)
            .collect();
        assert_eq!(per_turn, turns, "{api:?}");
        assert_eq!(result.get("cost"), None, "no price, no cost");
        let events = output.events();
        let run_end = events.last().unwrap();
        assert_eq!(run_end["type"], "run_end");
        assert_eq!(run_end["usage"], result["usage"]);
        assert_eq!(run_end["turnUsage"], result["turnUsage"]);
        let turn_ends: Vec<[u64; 4]> = of_type(&events, "turn_end")
            .iter()
            .map(|event| counts(&event["message"]["usage"]))
            .collect();
        assert_eq!(turn_ends, turns, "{api:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_price_reports_the_cost_of_each_turn_and_of_the_run() {
    let server = three_turns(Api::Anthropic).await;
    // $3 input, $15 output, $0.30 cache read, $3.75 cache write per 1M.
    let args = [
        "--price",
        "3,15,0.3,3.75",
        "--output",
        "json",
        "--events",
        "jsonl",
        "Read sample.ts, then list the directory.",
    ];
    let output = on(&server, Api::Anthropic).args(args).output_async().await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    let result = result(&output);
    // Turn 1: 10×3 + 20×15 + 1000×3.75 = 4080 µ$; turn 2: 30 + 300 + 300 +
    // 750 = 1380; turn 3: 30 + 150 + 360 + 750 = 1290 (per million tokens).
    let costs: Vec<f64> = result["turnUsage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|turn| turn["cost"].as_f64().unwrap())
        .collect();
    assert_eq!(costs, [0.00408, 0.00138, 0.00129]);
    assert_eq!(result["cost"].as_f64(), Some(0.00675));
    let events = output.events();
    assert_eq!(events.last().unwrap()["cost"].as_f64(), Some(0.00675));
    let turn_costs: Vec<f64> = of_type(&events, "turn_end")
        .iter()
        .map(|event| event["cost"].as_f64().unwrap())
        .collect();
    assert_eq!(turn_costs, costs);

    // The same run with text events: each turn_end line and the run_end line.
    let server = three_turns(Api::Anthropic).await;
    let output = on(&server, Api::Anthropic)
        .args(["--price", "3,15,0.3,3.75", "Read sample.ts."])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    let text = output.stderr();
    assert!(
        text.contains(
            "[turn 1] 1 tool call · tokens: 10 input, 20 output, 0 cache read, 1000 cache write · cost $0.004080\n"
        ),
        "{text}"
    );
    assert!(
        text.ends_with(
            "[run_end] ok · 3 turns · tokens: 30 input, 50 output, 2200 cache read, 1400 cache write · cost $0.006750\n"
        ),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_config_file_prices_the_model_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("leash");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "price = \"100,100\"\n[prices]\n\"gpt-test\" = \"2,8,0.5\"\n",
    )
    .unwrap();
    let server = three_turns(Api::OpenAi).await;
    let output = on(&server, Api::OpenAi)
        .envs([("XDG_CONFIG_HOME", dir.path().to_str().unwrap())])
        .args(["--output", "json", "Read sample.ts."])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    // 1400 input × $2 + 50 output × $8 + 2200 cached × $0.50, per 1M.
    assert_eq!(result(&output)["cost"].as_f64(), Some(0.0043));
}

#[tokio::test(flavor = "multi_thread")]
async fn max_cost_stops_the_run_with_exit_7_and_names_the_cost_budget() {
    for api in [Api::OpenAi, Api::Anthropic] {
        let server = three_turns(api).await;
        // A dollar per token: the first turn is already over a dollar.
        let args = [
            "--price",
            "1000000,1000000",
            "--max-cost",
            "1.5",
            "--max-turns",
            "5",
            "Read sample.ts.",
        ];
        let output = on(&server, api).args(args).output_async().await;
        assert_eq!(
            output.status.code(),
            Some(7),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(
            raw_bodies(&server).await.len(),
            1,
            "no request after the budget"
        );
        let text = output.stderr();
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with("leash: cost budget used up: $")
                && last.ends_with(" of $1.500000 after 1 turn; raise it with --max-cost USD"),
            "{api:?}: {last}"
        );
    }
    let server = three_turns(Api::OpenAi).await;
    let output = on(&server, Api::OpenAi)
        .envs([("LEASH_PRICE", "1000000,0"), ("LEASH_MAX_COST", "0.5")])
        .args(["--events", "jsonl", "--output", "json", "Read sample.ts."])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(7), "{}", output.stderr());
    let run_end = output.events().pop().unwrap();
    assert_eq!(run_end["status"], "budget");
    assert_eq!(
        run_end["message"],
        "cost budget used up: $1000.000000 of $0.500000 after 1 turn; raise it with --max-cost USD"
    );
    assert_eq!(result(&output)["cost"].as_f64(), Some(1000.0));
}

#[tokio::test(flavor = "multi_thread")]
async fn max_cost_without_a_price_is_a_usage_error() {
    let server = three_turns(Api::OpenAi).await;
    let output = on(&server, Api::OpenAi)
        .args(["--max-cost", "1", "hi"])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(2), "{}", output.stderr());
    assert!(
        output
            .stderr()
            .starts_with("leash: --max-cost needs a price"),
        "{}",
        output.stderr()
    );
    assert!(raw_bodies(&server).await.is_empty());
    let output = on(&server, Api::OpenAi)
        .args(["--price", "2", "hi"])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(2), "{}", output.stderr());
    assert!(
        output.stderr().contains("invalid price '2'"),
        "{}",
        output.stderr()
    );
}
