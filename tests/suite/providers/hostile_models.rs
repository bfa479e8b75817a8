//! Hostile models against the real binary (docs/src/security.md "Security and limits"): hundreds of tool calls
//! in one message, a call with 10 MB of arguments, arguments that are not
//! an object, unknown tools, the same call repeated forever. Every call gets
//! one `isError` result that says why; the repeat guard and the turn limit
//! end what would never end; nothing panics.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::hostile;
use crate::support::run::{last_line, stderr, stdout, tool_ends};
use crate::support::sse::openai as openai_support;

use hostile::*;
use serde_json::{Value, json};

/// The tool-call cap per message and the argument cap (see
/// docs/src/security.md "Security and limits").
const MAX_CALLS: usize = 64;
const MAX_ARGUMENT_BYTES: usize = 1024 * 1024;

fn result_text(end: &Value) -> String {
    end["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn hundreds_of_tool_calls_in_one_message_run_up_to_the_cap_and_each_gets_a_result() {
    let ws = Workspace::new();
    let calls: Vec<Value> = (0..300)
        .map(|i| json!({"id": format!("c{i}"), "name": "read_file", "arguments": {"path": "sample.ts", "limit": i % 50 + 1}}))
        .collect();
    let (output, _) = run(ws
        .faux(json!([{"toolCalls": calls}, {"text": "read them"}]))
        .args(["--events", "jsonl", "go"]));
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", last_line(&output));
    assert_eq!(stdout(&output), "read them\n");
    let ends = tool_ends(&output);
    assert_eq!(ends.len(), 300);
    let ran: Vec<&str> = ends
        .iter()
        .filter(|end| end["isError"] == false)
        .map(|end| end["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(ran.len(), MAX_CALLS);
    // Ends come in completion order; the first 64 calls in the model's
    // order are the ones that ran.
    for i in 0..MAX_CALLS {
        assert!(ran.contains(&format!("c{i}").as_str()), "c{i} did not run");
    }
    for end in ends.iter().filter(|end| end["isError"] == true) {
        assert_eq!(end["isError"], true);
        assert!(end.get("durationMs").is_none(), "never ran: {end}");
        assert!(
            result_text(end).starts_with("not executed: the reply holds more than 64 tool calls"),
            "{end}"
        );
    }
}

#[test]
fn hundreds_of_tool_calls_streamed_by_a_server_are_answered_in_the_next_request() {
    use openai_support::{body, call_args, call_start, finish, role, text_reply};
    let mut chunks = vec![role()];
    for i in 0..200 {
        chunks.push(call_start(i, &format!("call_{i}"), "list_dir"));
        chunks.push(call_args(i, "{}"));
    }
    chunks.push(finish("tool_calls"));
    let first = body(&chunks, true);
    let second = text_reply(&["listed"]);
    let server = HostileServer::start(vec![
        responder(move |_, conn| {
            conn.respond(200, "text/event-stream", first.as_bytes());
        }),
        responder(move |_, conn| {
            conn.respond(200, "text/event-stream", second.as_bytes());
        }),
    ]);
    let ws = Workspace::new();
    let (output, _) = run(ws
        .http("openai", &format!("{}/v1", server.url()), "sk-models")
        .arg("list"));
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let sent: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let results: Vec<&Value> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(
        results.len(),
        200,
        "one result per call, in the next request"
    );
}

#[test]
fn ten_megabytes_of_arguments_are_refused_without_running_the_tool() {
    let ws = Workspace::new();
    let huge = "a/".repeat(5 * 1024 * 1024);
    let (output, elapsed) = run(ws
        .faux(json!([
            {"toolCalls": [{"id": "big", "name": "read_file", "arguments": {"path": huge}}]},
            {"text": "gave up"}
        ]))
        .args(["--transcript", "t.jsonl", "go"]));
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", last_line(&output));
    assert!(elapsed.as_secs() < 20, "{elapsed:?}");
    let transcript = std::fs::read_to_string(ws.path("t.jsonl")).unwrap();
    let messages = assert_jsonl(&transcript, "transcript");
    let result = messages.iter().find(|m| m["role"] == "toolResult").unwrap();
    assert_eq!(result["isError"], true);
    assert!(result.get("durationMs").is_none());
    assert_eq!(
        result["content"][0]["text"],
        format!(
            "Invalid arguments for read_file: they are larger than {MAX_ARGUMENT_BYTES} bytes, the most one call may carry"
        )
    );
}

#[test]
fn arguments_that_are_not_an_object_and_unknown_tools_are_error_results() {
    let ws = Workspace::new();
    let long_name = "x".repeat(10_000);
    let calls = json!([
        {"id": "array", "name": "read_file", "arguments": [1, 2]},
        {"id": "string", "name": "read_file", "arguments": "sample.ts"},
        {"id": "number", "name": "list_dir", "arguments": 42},
        {"id": "null", "name": "list_dir", "argumentsRaw": "null"},
        {"id": "broken", "name": "read_file", "argumentsRaw": "{\"path\": \"sample"},
        {"id": "wrong", "name": "read_file", "arguments": {"path": 7, "extra": true}},
        {"id": "unknown", "name": "rm_rf", "arguments": {"path": "/"}},
        {"id": "long", "name": long_name, "arguments": {}}
    ]);
    let (output, _) = run(ws
        .faux(json!([{"toolCalls": calls}, {"text": "ok"}]))
        .args(["--events", "jsonl", "go"]));
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", last_line(&output));
    let ends = tool_ends(&output);
    let text_of = |id: &str| {
        let end = ends.iter().find(|end| end["toolCallId"] == id).unwrap();
        assert_eq!(end["isError"], true, "{end}");
        assert!(end.get("durationMs").is_none(), "never ran: {end}");
        result_text(end)
    };
    assert_eq!(
        text_of("array"),
        "Invalid arguments for read_file: the arguments must be a JSON object, got an array"
    );
    // A JSON string is the one shape the assembler keeps for text that
    // did not parse; a model's `"sample.ts"` is reported the same way.
    assert!(text_of("string").starts_with("Invalid arguments for read_file: the arguments"));
    assert_eq!(
        text_of("number"),
        "Invalid arguments for list_dir: the arguments must be a JSON object, got a number"
    );
    assert_eq!(
        text_of("null"),
        "Invalid arguments for list_dir: the arguments must be a JSON object, got null"
    );
    assert_eq!(
        text_of("broken"),
        "Invalid arguments for read_file: the arguments are not valid JSON: {\"path\": \"sample"
    );
    assert!(text_of("wrong").starts_with("Invalid arguments for read_file: "));
    assert_eq!(text_of("unknown"), "Tool rm_rf not found");
    assert_eq!(
        text_of("long"),
        format!("Tool {}… not found", "x".repeat(100))
    );
}

#[test]
fn the_same_call_repeated_forever_is_ended_by_the_repeat_guard() {
    let ws = Workspace::new();
    let script = json!({
        "responses": [{"toolCalls": [{"name": "read_file", "arguments": {"path": "sample.ts"}}]}],
        "repeatLast": true
    });
    let (output, elapsed) = run(ws.faux(script).arg("go"));
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(elapsed.as_secs() < 10);
    assert!(
        last_line(&output).ends_with(
            "blocked: read_file was already called 2 times with these exact arguments and no file changed since, so those results still hold; use them; raise the limit with --max-same-call N"
        ),
        "{}",
        last_line(&output)
    );
}

#[test]
fn the_same_call_repeated_forever_is_ended_by_the_turn_limit_when_the_guard_allows_it() {
    let ws = Workspace::new();
    let script = json!({
        "responses": [{"toolCalls": [{"name": "list_dir", "arguments": {}}]}],
        "repeatLast": true
    });
    let (output, _) =
        run(ws
            .faux(script)
            .args(["--max-same-call", "1000", "--max-turns", "6", "go"]));
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert_eq!(
        last_line(&output),
        "leash: turn limit reached after 6 turns; task not confirmed complete; raise it with --max-turns N"
    );
}
