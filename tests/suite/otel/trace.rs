//! What a trace holds: the span tree of the seed task, a failed run's
//! error, the caller's `TRACEPARENT`, a batch as one trace, the HTTP
//! attributes of a real request, and what `leash config` shows.

use std::time::Duration;

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use super::*;
use crate::support::otlp::{Mode, names, span};
use crate::support::sse::{openai, sse};

#[test]
fn the_seed_task_is_one_trace_of_the_run_its_requests_and_its_tool_call() {
    let receiver = Receiver::start(Mode::Ok);
    let outcome = traced(seed_task(), &receiver).output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let spans = receiver.spans();
    assert_eq!(spans.len(), 4, "{:?}", names(&spans));
    let root = span(&spans, "invoke_agent leash");
    assert_eq!(root["parentSpanId"], "", "the run is the trace's root");
    assert_eq!(root["kind"], "SPAN_KIND_INTERNAL");
    assert_eq!(attr(root, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(attr(root, "gen_ai.provider.name"), "faux");
    assert_eq!(attr(root, "leash.exit_code"), 0);
    assert_eq!(attr(root, "leash.status"), "ok");
    assert_eq!(attr(root, "leash.turns"), 2);
    assert!(attr(root, "gen_ai.usage.input_tokens").is_i64());
    assert_eq!(
        root["status"].get("code"),
        None,
        "an ok run is not an error"
    );
    assert_eq!(root["resource"]["service.name"], "leash");
    for span in &spans {
        assert_eq!(span["traceId"], root["traceId"], "one trace");
    }
    let chats: Vec<&Value> = spans
        .iter()
        .filter(|span| span["name"].as_str().unwrap().starts_with("chat "))
        .collect();
    assert_eq!(chats.len(), 2, "{:?}", names(&spans));
    for chat in &chats {
        assert_eq!(chat["parentSpanId"], root["spanId"]);
        assert_eq!(chat["kind"], "SPAN_KIND_CLIENT");
        assert_eq!(attr(chat, "gen_ai.operation.name"), "chat");
        assert!(attr(chat, "gen_ai.response.model").is_string());
        assert!(attr(chat, "gen_ai.usage.output_tokens").is_i64());
    }
    let reasons: Vec<&Value> = chats
        .iter()
        .map(|chat| attr(chat, "gen_ai.response.finish_reasons"))
        .collect();
    assert!(reasons.contains(&&json!(["tool_call"])), "{reasons:?}");
    assert!(reasons.contains(&&json!(["stop"])), "{reasons:?}");
    let tool = span(&spans, "execute_tool read_file");
    assert_eq!(tool["parentSpanId"], root["spanId"]);
    assert_eq!(attr(tool, "gen_ai.tool.name"), "read_file");
    assert_eq!(attr(tool, "gen_ai.tool.call.id"), "call_1");
    assert_eq!(attr(tool, "leash.tool.outcome"), "ok");
    assert_eq!(attr(tool, "gen_ai.tool.type"), "function");
    assert!(
        attr(tool, "gen_ai.tool.description")
            .as_str()
            .is_some_and(|text| !text.is_empty()),
        "{tool}"
    );
    assert!(attr(tool, "leash.tool.duration_ms").is_i64());
    // The agent, its version and one conversation id on the run and its requests.
    assert_eq!(
        attr(root, "gen_ai.agent.version"),
        env!("CARGO_PKG_VERSION")
    );
    let conversation = attr(root, "gen_ai.conversation.id");
    assert!(conversation.is_string(), "{root}");
    assert!(
        chats
            .iter()
            .all(|chat| attr(chat, "gen_ai.conversation.id") == conversation)
    );
    // The tracer's version and schema, the SDK on the resource.
    assert_eq!(root["scope"]["name"], "leash");
    assert_eq!(root["scope"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        root["scope"]["schemaUrl"],
        "https://opentelemetry.io/schemas/1.41.0"
    );
    assert_eq!(root["resource"]["telemetry.sdk.language"], "rust");
    assert_eq!(root["resource"]["telemetry.sdk.name"], "opentelemetry");
    assert!(root["resource"]["telemetry.sdk.version"].is_string());
    // Children of a span of the same process are local children: OTLP's
    // flags say "the parent is known" (0x100) and not "remote" (0x200).
    for child in chats.iter().chain([&tool]) {
        let flags = child["flags"].as_u64().unwrap_or(0);
        assert_eq!(flags & 0x300, 0x100, "{child}");
    }
    // The tool ran between the two requests.
    let start = |span: &Value| {
        span["startTimeUnixNano"]
            .as_str()
            .unwrap()
            .parse::<u128>()
            .unwrap()
    };
    let end = |span: &Value| {
        span["endTimeUnixNano"]
            .as_str()
            .unwrap()
            .parse::<u128>()
            .unwrap()
    };
    let (first, second) = match start(chats[0]) < start(chats[1]) {
        true => (chats[0], chats[1]),
        false => (chats[1], chats[0]),
    };
    assert!(end(first) <= start(tool) && end(tool) <= start(second));
    // No content: neither the prompt, the file nor the reply.
    let raw = String::from_utf8_lossy(&receiver.raw()).into_owned();
    for content in ["first([])", "sample.ts", "undefined", "Read the exercise"] {
        assert!(!raw.contains(content), "{content:?} was exported");
    }
    assert_eq!(
        outcome.stderr().matches("traces").count(),
        0,
        "{}",
        outcome.stderr()
    );
}

#[test]
fn a_failed_run_is_an_error_span_with_its_reason() {
    let receiver = Receiver::start(Mode::Ok);
    let outcome = traced(failing_run(), &receiver).output();
    assert_eq!(outcome.code(), Some(1));
    let spans = receiver.spans();
    let root = span(&spans, "invoke_agent leash");
    assert_eq!(root["status"]["code"], "STATUS_CODE_ERROR");
    assert!(
        root["status"]["message"]
            .as_str()
            .unwrap()
            .contains("scripted failure"),
        "{root}"
    );
    assert_eq!(attr(root, "leash.exit_code"), 1);
    // No HTTP status: the conventions' fallback value.
    assert_eq!(attr(root, "error.type"), "_OTHER");
    let chat = spans
        .iter()
        .find(|span| span["name"].as_str().unwrap().starts_with("chat "))
        .unwrap();
    assert_eq!(chat["status"]["code"], "STATUS_CODE_ERROR");
    assert_eq!(
        attr(chat, "gen_ai.response.finish_reasons"),
        &json!(["error"])
    );
    assert_eq!(attr(chat, "error.type"), "_OTHER");
}

#[test]
fn traceparent_makes_the_run_a_child_of_the_callers_span() {
    let receiver = Receiver::start(Mode::Ok);
    let outcome = traced(seed_task(), &receiver)
        .env("TRACEPARENT", TRACEPARENT)
        .env("TRACESTATE", "ci=1")
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let spans = receiver.spans();
    let root = span(&spans, "invoke_agent leash");
    assert_eq!(root["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(root["parentSpanId"], "00f067aa0ba902b7");
    assert_eq!(root["traceState"], "ci=1");
    assert!(spans.iter().all(|span| span["traceId"] == root["traceId"]));
}

#[test]
fn a_batch_shard_is_one_trace_under_the_callers_span() {
    let receiver = Receiver::start(Mode::Ok);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("items.jsonl");
    std::fs::write(
        &input,
        "{\"id\": \"a\", \"prompt\": \"one\"}\n{\"id\": \"b\", \"prompt\": \"two\"}\n{\"id\": \"c\", \"prompt\": \"three\"}\n",
    )
    .unwrap();
    let run = Run::faux(json!([{"text": "done"}]))
        .command_word("batch")
        .arg(&input)
        .args(["--tools", "none", "--shard", "0/2"])
        .env("TRACEPARENT", TRACEPARENT)
        .timeout(Duration::from_secs(60));
    let outcome = traced(run, &receiver).output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let spans = receiver.spans();
    let batch = span(&spans, "invoke_workflow leash batch");
    assert_eq!(batch["parentSpanId"], "00f067aa0ba902b7");
    assert_eq!(attr(batch, "leash.batch.shard"), "0/2");
    assert_eq!(attr(batch, "leash.exit_code"), 0);
    let items: Vec<&Value> = spans
        .iter()
        .filter(|span| span["name"] == "invoke_agent leash")
        .collect();
    let mut ids: Vec<&str> = items
        .iter()
        .map(|item| attr(item, "leash.batch.item.id").as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["a", "c"], "shard 0/2 takes items 0 and 2");
    for item in &items {
        assert_eq!(item["parentSpanId"], batch["spanId"]);
    }
    assert!(
        spans
            .iter()
            .all(|span| span["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736"),
        "one trace"
    );
}

#[tokio::test]
async fn a_model_requests_span_has_the_http_answers_status_and_request_id() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(openai::text_reply(&["hi"])).insert_header("x-request-id", "req_77"))
        .mount(&server)
        .await;
    let receiver = Receiver::start(Mode::Ok);
    let run = Run::openai(&server)
        .key("sk-test-key-1234567890")
        .prompt("hello");
    let outcome = traced(run, &receiver).output_async().await;
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let spans = receiver.spans();
    let chat = spans
        .iter()
        .find(|span| span["name"].as_str().unwrap().starts_with("chat "))
        .unwrap_or_else(|| panic!("{:?}", names(&spans)));
    assert_eq!(attr(chat, "http.response.status_code"), 200);
    assert_eq!(attr(chat, "leash.provider.request_id"), "req_77");
    assert_eq!(attr(chat, "gen_ai.provider.name"), "openai");
    assert!(!String::from_utf8_lossy(&receiver.raw()).contains("sk-test-key-1234567890"));
}

#[test]
fn leash_config_shows_where_traces_go_without_header_values() {
    let outcome = Run::faux(json!([{"text": "x"}]))
        .command_word("config")
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://collector.example:4318",
        )
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20tok-secret-9",
        )
        .env("OTEL_SERVICE_NAME", "ci-agent")
        .output();
    let stdout = outcome.stdout();
    assert!(
        stdout.contains("# traces: http://collector.example:4318/v1/traces (http/protobuf"),
        "{stdout}"
    );
    assert!(
        stdout.contains("# traces service.name: ci-agent"),
        "{stdout}"
    );
    assert!(
        stdout.contains("authorization (values not shown)"),
        "{stdout}"
    );
    assert!(!stdout.contains("tok-secret-9") && !outcome.stderr().contains("tok-secret-9"));
    let off = Run::faux(json!([{"text": "x"}]))
        .command_word("config")
        .output();
    assert!(off.stdout().contains("# traces: off"), "{}", off.stdout());
}

#[test]
fn a_hook_is_a_span_under_the_tool_call_it_judged() {
    let receiver = Receiver::start(Mode::Ok);
    let dir = tempfile::tempdir().unwrap();
    let hook = dir.path().join("allow.sh");
    std::fs::write(&hook, "#!/bin/sh\ncat >/dev/null\necho '{}'\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let outcome = traced(seed_task(), &receiver)
        .arg("--hook")
        .arg(format!("before-tool-call={}", hook.display()))
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let spans = receiver.spans();
    let tool = span(&spans, "execute_tool read_file");
    let hook = span(&spans, "hook before-tool-call");
    assert_eq!(hook["parentSpanId"], tool["spanId"]);
    assert_eq!(hook["traceId"], tool["traceId"]);
    assert_eq!(attr(hook, "leash.hook.number"), 1);
    assert_eq!(attr(hook, "leash.hook.outcome"), "answered");
    assert_eq!(attr(hook, "gen_ai.tool.call.id"), "call_1");
    assert!(!String::from_utf8_lossy(&receiver.raw()).contains("allow.sh"));
}

#[test]
fn an_mcp_tools_call_is_its_tool_calls_span_with_the_mcp_attributes() {
    let everything = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        everything.exists(),
        "{} is missing: run `make mcp-servers` (npm ci in tests/mcp)",
        everything.display()
    );
    let receiver = Receiver::start(Mode::Ok);
    let run = Run::faux(json!([
        {"toolCalls": [{"id": "call_sum", "name": "mcp__ev__get-sum", "arguments": {"a": 2, "b": 3}}]},
        {"text": "five"}
    ]))
    .args(["--no-stdin", "--tools", "none", "--mcp"])
    .arg(format!("ev=node {} stdio", everything.display()))
    .prompt("add")
    .timeout(Duration::from_secs(60));
    let outcome = traced(run, &receiver).output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let spans = receiver.spans();
    // The conventions: no second span over the same interval.
    assert!(
        !names(&spans)
            .iter()
            .any(|name| name.starts_with("tools/call")),
        "{:?}",
        names(&spans)
    );
    let tool = span(&spans, "execute_tool mcp__ev__get-sum");
    assert_eq!(attr(tool, "mcp.method.name"), "tools/call");
    assert_eq!(attr(tool, "leash.mcp.server"), "ev");
    assert_eq!(attr(tool, "gen_ai.tool.type"), "extension");
    assert_eq!(attr(tool, "network.transport"), "pipe");
    assert!(attr(tool, "jsonrpc.request.id").is_string(), "{tool}");
    assert!(attr(tool, "mcp.protocol.version").is_string(), "{tool}");
    assert_eq!(attr(tool, "mcp.server.name"), &Value::Null);
    assert_eq!(attr(tool, "leash.tool.outcome"), "ok");
    let start = span(&spans, "initialize");
    assert_eq!(attr(start, "mcp.method.name"), "initialize");
    assert_eq!(attr(start, "leash.mcp.server"), "ev");
    let root = span(&spans, "invoke_agent leash");
    assert_eq!(start["parentSpanId"], root["spanId"]);
}

#[tokio::test]
async fn a_wait_at_the_batchs_rate_gate_is_an_event_of_the_items_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(openai::text_reply(&["ok"])))
        .mount(&server)
        .await;
    let receiver = Receiver::start(Mode::Ok);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("items.jsonl");
    std::fs::write(&input, "one\ntwo\nthree\n").unwrap();
    // 600 a minute: one request every 100 ms, so the later items wait.
    let run = Run::openai(&server)
        .key("sk-test-key-1234567890")
        .command_word("batch")
        .arg(&input)
        .args(["--tools", "none", "--parallel", "3", "--rate", "600"])
        .timeout(Duration::from_secs(60));
    let outcome = traced(run, &receiver).output_async().await;
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let spans = receiver.spans();
    let waits: Vec<&Value> = spans
        .iter()
        .filter(|span| span["name"].as_str().unwrap().starts_with("chat "))
        .flat_map(|chat| chat["events"].as_array().into_iter().flatten())
        .filter(|event| event["name"] == "rate_gate.wait")
        .collect();
    assert!(!waits.is_empty(), "{spans:?}");
    assert!(
        waits
            .iter()
            .all(|wait| attr(wait, "leash.rate_gate.waited_ms").as_i64() > Some(0))
    );
}
