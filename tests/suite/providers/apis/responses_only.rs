//! What only the Responses API has (docs/src/providers.md "Providers"): parallel
//! `function_call` items answered by call id, reasoning items sent back
//! unchanged, its terminal events, and `--api` / `LEASH_API` choosing it.

use super::*;
use pretty_assertions::assert_eq;

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
