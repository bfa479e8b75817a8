//! The conventions' values and the exporter's rules, one test each,
//! through the real binary: a request with cached tokens and its HTTP
//! facts, a 429, a run cut by its timer, a failed hook and the hook's own
//! `TRACEPARENT`, an MCP stdio server's own `TRACEPARENT` and a failed MCP
//! call, a batch of 200 items exported as they finish, gzip,
//! `OTEL_TRACES_EXPORTER=none` and the sampler.

use std::time::Duration;

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;
use crate::support::otlp::{Mode, names, span};
use crate::support::sse::openai;
use crate::support::sse::sse;

fn chats(spans: &[Value]) -> Vec<&Value> {
    spans
        .iter()
        .filter(|span| {
            span["name"]
                .as_str()
                .unwrap_or_default()
                .starts_with("chat ")
        })
        .collect()
}

/// A reply whose usage counts 40 of its 100 prompt tokens as cached.
fn cached_reply() -> String {
    let mut usage = openai::usage(100, 10);
    usage["usage"]["prompt_tokens_details"] = json!({"cached_tokens": 40});
    openai::body(
        &[
            openai::role(),
            openai::text("hi"),
            openai::finish("stop"),
            usage,
        ],
        true,
    )
}

#[tokio::test]
async fn a_chat_holds_the_conventions_request_and_response_facts() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(cached_reply()))
        .mount(&server)
        .await;
    let receiver = Receiver::start(Mode::Ok);
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(&schema, r#"{"type": "object"}"#).unwrap();
    let run = Run::openai(&server)
        .key("sk-test-key-1234567890")
        .args([
            "--max-tokens",
            "300",
            "--temperature",
            "0.5",
            "--output-schema",
        ])
        .arg(&schema)
        .prompt("hello");
    let outcome = traced(run, &receiver).output_async().await;
    let spans = receiver.spans();
    let chat = chats(&spans)[0];
    // Every input token, the cached ones too.
    assert_eq!(attr(chat, "gen_ai.usage.input_tokens"), 100, "{chat}");
    assert_eq!(attr(chat, "gen_ai.usage.cache_read.input_tokens"), 40);
    let port = server.address().port();
    assert_eq!(attr(chat, "server.address"), "127.0.0.1");
    assert_eq!(attr(chat, "server.port"), i64::from(port));
    assert_eq!(attr(chat, "gen_ai.request.stream"), true);
    assert_eq!(attr(chat, "gen_ai.response.id"), "chatcmpl-test");
    assert!(
        attr(chat, "gen_ai.response.time_to_first_chunk").is_f64(),
        "{chat}"
    );
    assert_eq!(attr(chat, "gen_ai.request.max_tokens"), 300);
    assert_eq!(attr(chat, "gen_ai.request.temperature"), 0.5);
    assert_eq!(attr(chat, "gen_ai.output.type"), "json");
    // The run's count is its requests' (the schema's correction is a second).
    let root = span(&spans, "invoke_agent leash");
    let requests: i64 = chats(&spans)
        .iter()
        .map(|chat| attr(chat, "gen_ai.usage.input_tokens").as_i64().unwrap())
        .sum();
    assert_eq!(attr(root, "gen_ai.usage.input_tokens"), requests);
    // The model request carries its span's trace context.
    let received = server.received_requests().await.unwrap();
    let chat = chats(&spans)
        .into_iter()
        .min_by_key(|chat| {
            chat["startTimeUnixNano"]
                .as_str()
                .unwrap()
                .parse::<u128>()
                .unwrap()
        })
        .unwrap();
    let sent = received[0]
        .headers
        .get("traceparent")
        .unwrap()
        .to_str()
        .unwrap();
    assert_eq!(
        sent,
        format!(
            "00-{}-{}-01",
            chat["traceId"].as_str().unwrap(),
            chat["spanId"].as_str().unwrap()
        ),
        "{}",
        outcome.stderr()
    );
}

#[tokio::test]
async fn a_429_is_the_requests_and_the_runs_error_type() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(429).set_body_json(openai::error_json("slow down")))
        .mount(&server)
        .await;
    let receiver = Receiver::start(Mode::Ok);
    let run = Run::openai(&server)
        .key("sk-test-key-1234567890")
        .args(["--retries", "0"])
        .prompt("hello");
    let outcome = traced(run, &receiver).output_async().await;
    assert_ne!(outcome.code(), Some(0));
    let spans = receiver.spans();
    let chat = chats(&spans)[0];
    assert_eq!(attr(chat, "error.type"), "429", "{chat}");
    assert_eq!(attr(chat, "http.response.status_code"), 429);
    assert_eq!(chat["status"]["code"], "STATUS_CODE_ERROR");
    let root = span(&spans, "invoke_agent leash");
    assert_eq!(attr(root, "error.type"), "429");
}

#[test]
fn a_run_cut_by_its_timer_says_timeout_on_every_open_span() {
    let receiver = Receiver::start(Mode::Ok);
    let run = Run::faux(json!([{"text": "late", "delayMs": 5000}]))
        .args(["--timeout", "700ms"])
        .prompt("go");
    let outcome = traced(run, &receiver).output();
    assert_ne!(outcome.code(), Some(0));
    let spans = receiver.spans();
    let root = span(&spans, "invoke_agent leash");
    assert_eq!(attr(root, "leash.status"), "timeout");
    assert_eq!(attr(root, "error.type"), "timeout");
    let chat = chats(&spans)[0];
    assert_eq!(attr(chat, "error.type"), "timeout", "{chat}");
    assert_eq!(chat["status"]["code"], "STATUS_CODE_ERROR");
}

#[test]
fn a_hook_gets_its_own_spans_traceparent_and_a_failed_one_its_error_type() {
    let receiver = Receiver::start(Mode::Ok);
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("traceparent");
    let hook = dir.path().join("hook.sh");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat >/dev/null\nprintf '%s' \"$TRACEPARENT\" > {}\nexit 3\n",
            seen.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let outcome = traced(seed_task(), &receiver)
        .env("TRACEPARENT", TRACEPARENT)
        .arg("--hook")
        .arg(format!("after-tool-call={}", hook.display()))
        .output();
    let spans = receiver.spans();
    let hook = span(&spans, "hook after-tool-call");
    assert_eq!(
        attr(hook, "leash.hook.outcome"),
        "failed",
        "{}",
        outcome.stderr()
    );
    assert_eq!(attr(hook, "error.type"), "_OTHER");
    assert_eq!(hook["status"]["code"], "STATUS_CODE_ERROR");
    let tool = span(&spans, "execute_tool read_file");
    assert_eq!(hook["parentSpanId"], tool["spanId"]);
    let seen = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(
        seen,
        format!(
            "00-{}-{}-01",
            hook["traceId"].as_str().unwrap(),
            hook["spanId"].as_str().unwrap()
        ),
        "the hook saw its own span, not the caller's"
    );
}

fn test_server() -> String {
    let server = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/test-server.mjs");
    assert!(
        server.with_file_name("node_modules").exists(),
        "run `make mcp-servers` (npm ci in tests/mcp)"
    );
    format!("t=node {}", server.display())
}

#[test]
fn an_mcp_server_gets_its_own_spans_traceparent_and_a_failed_call_its_error_type() {
    let receiver = Receiver::start(Mode::Ok);
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t.jsonl");
    let run = Run::faux(json!([
        {"toolCalls": [
            {"id": "call_env", "name": "mcp__t__env", "arguments": {}},
            {"id": "call_fail", "name": "mcp__t__fail", "arguments": {"city": "x"}}
        ]},
        {"text": "done"}
    ]))
    .args(["--no-stdin", "--tools", "none", "--mcp"])
    .arg(test_server())
    .arg("--transcript")
    .arg(&transcript)
    .env("TRACEPARENT", TRACEPARENT)
    .prompt("go")
    .timeout(Duration::from_secs(60));
    let outcome = traced(run, &receiver).output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let spans = receiver.spans();
    let start = span(&spans, "initialize");
    let own = format!(
        "00-{}-{}-01",
        start["traceId"].as_str().unwrap(),
        start["spanId"].as_str().unwrap()
    );
    let said = std::fs::read_to_string(&transcript).unwrap();
    assert!(said.contains(&own), "the server's TRACEPARENT is not {own}");
    assert!(
        !said.contains(TRACEPARENT),
        "the server saw the caller's span"
    );
    let failed = span(&spans, "execute_tool mcp__t__fail");
    assert_eq!(attr(failed, "error.type"), "tool_error", "{failed}");
    assert_eq!(failed["status"]["code"], "STATUS_CODE_ERROR");
    let env = span(&spans, "execute_tool mcp__t__env");
    assert_ne!(
        attr(env, "jsonrpc.request.id"),
        attr(failed, "jsonrpc.request.id")
    );
    assert_eq!(
        attr(env, "gen_ai.tool.description"),
        "The server's environment as JSON."
    );
}

#[test]
fn a_batch_of_200_items_at_8_in_parallel_exports_every_item_as_it_goes() {
    let receiver = Receiver::start(Mode::Ok);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("items.jsonl");
    let lines: String = (0..200).map(|i| format!("item {i}\n")).collect();
    std::fs::write(&input, lines).unwrap();
    let run = Run::faux(json!([{"text": "done"}]))
        .command_word("batch")
        .arg(&input)
        .args(["--tools", "none", "--parallel", "8"])
        // 401 spans through a queue of 256: all of them only if they
        // leave as items end.
        .env("OTEL_BSP_MAX_QUEUE_SIZE", "256")
        .env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "32")
        .timeout(Duration::from_secs(120));
    let outcome = traced(run, &receiver).output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let spans = receiver.spans();
    let items = spans
        .iter()
        .filter(|span| span["name"] == "invoke_agent leash")
        .count();
    assert_eq!(items, 200, "{:?}", names(&spans).len());
    assert_eq!(chats(&spans).len(), 200);
    // Sent in batches as items finished, not in one go at the end.
    assert!(
        receiver.requests() >= 13,
        "{} requests",
        receiver.requests()
    );
    assert!(
        !outcome.stderr().contains("dropped"),
        "{}",
        outcome.stderr()
    );
    let batch = span(&spans, "invoke_workflow leash batch");
    assert_eq!(attr(batch, "gen_ai.workflow.name"), "leash batch");
    assert_eq!(attr(batch, "leash.batch.items"), 200);
    assert_eq!(attr(batch, "leash.batch.parallel"), 8);
}

#[test]
fn gzip_bodies_when_asked() {
    let receiver = Receiver::start(Mode::Ok);
    let outcome = traced(seed_task(), &receiver)
        .env("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip")
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert_eq!(receiver.spans().len(), 4);
    let raw = String::from_utf8_lossy(&receiver.raw()).to_lowercase();
    assert!(raw.contains("content-encoding: gzip"), "{raw}");
}

#[test]
fn no_exporter_and_an_unsampled_caller_export_nothing() {
    let receiver = Receiver::start(Mode::Ok);
    let none = traced(seed_task(), &receiver)
        .env("OTEL_TRACES_EXPORTER", "none")
        .output();
    assert_eq!(none.code(), Some(0), "{}", none.stderr());
    let unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("traceparent");
    let hook = dir.path().join("hook.sh");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat >/dev/null\nprintf '%s' \"$TRACEPARENT\" > {}\necho '{{}}'\n",
            seen.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let parent_off = traced(seed_task(), &receiver)
        .env("TRACEPARENT", unsampled)
        .arg("--hook")
        .arg(format!("before-tool-call={}", hook.display()))
        .output();
    assert_eq!(parent_off.code(), Some(0), "{}", parent_off.stderr());
    // The decision travels on: the hook's span is in the trace, unsampled.
    let seen = std::fs::read_to_string(&seen).unwrap();
    assert!(
        seen.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-") && seen.ends_with("-00"),
        "{seen}"
    );
    let off = traced(seed_task(), &receiver)
        .env("OTEL_TRACES_SAMPLER", "always_off")
        .output();
    assert_eq!(off.code(), Some(0), "{}", off.stderr());
    // No span; the metrics, which have their own variables, still go.
    assert!(receiver.spans().is_empty());
    assert!(!receiver.metrics().is_empty());
    // `always_on` ignores the caller's decision.
    let on = traced(seed_task(), &receiver)
        .env("TRACEPARENT", unsampled)
        .env("OTEL_TRACES_SAMPLER", "always_on")
        .output();
    assert_eq!(on.code(), Some(0), "{}", on.stderr());
    assert_eq!(receiver.spans().len(), 4);
    // `leash config` says what an unsampled caller means.
    let config = Run::faux(json!([{"text": "x"}]))
        .command_word("config")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("TRACEPARENT", unsampled)
        .output();
    assert!(
        config
            .stdout()
            .contains("nothing is exported: TRACEPARENT says its trace is not sampled"),
        "{}",
        config.stdout()
    );
    let config = Run::faux(json!([{"text": "x"}]))
        .command_word("config")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_TRACES_EXPORTER", "none")
        .output();
    assert!(
        config
            .stdout()
            .contains("traces: off (OTEL_TRACES_EXPORTER=none)"),
        "{}",
        config.stdout()
    );
}

#[test]
fn content_is_captured_only_when_asked_in_the_conventions_shape() {
    let receiver = Receiver::start(Mode::Ok);
    let outcome = traced(seed_task(), &receiver)
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let spans = receiver.spans();
    let first = chats(&spans)
        .into_iter()
        .find(|chat| attr(chat, "gen_ai.response.finish_reasons") == &json!(["tool_call"]))
        .unwrap();
    let input: Value =
        serde_json::from_str(attr(first, "gen_ai.input.messages").as_str().unwrap()).unwrap();
    assert_eq!(input[0]["role"], "user");
    assert_eq!(input[0]["parts"][0]["type"], "text");
    assert!(
        input[0]["parts"][0]["content"]
            .as_str()
            .unwrap()
            .contains("first([])")
    );
    let output: Value =
        serde_json::from_str(attr(first, "gen_ai.output.messages").as_str().unwrap()).unwrap();
    assert_eq!(output[0]["finish_reason"], "tool_call");
    let parts = output[0]["parts"].as_array().unwrap();
    assert!(
        parts
            .iter()
            .any(|part| part["type"] == "tool_call" && part["name"] == "read_file")
    );
    let system: Value =
        serde_json::from_str(attr(first, "gen_ai.system_instructions").as_str().unwrap()).unwrap();
    assert_eq!(
        system,
        json!([{"type": "text", "content": "Read the exercise file first."}])
    );
    let tool = span(&spans, "execute_tool read_file");
    assert!(
        attr(tool, "gen_ai.tool.call.arguments")
            .as_str()
            .unwrap()
            .contains("sample.ts")
    );
    assert!(attr(tool, "gen_ai.tool.call.result").is_string());
    // The second request's input holds the tool's answer.
    let second = chats(&spans)
        .into_iter()
        .find(|chat| attr(chat, "gen_ai.response.finish_reasons") == &json!(["stop"]))
        .unwrap();
    let input: Value =
        serde_json::from_str(attr(second, "gen_ai.input.messages").as_str().unwrap()).unwrap();
    assert_eq!(input[2]["role"], "tool");
    assert_eq!(input[2]["parts"][0]["type"], "tool_call_response");
    assert_eq!(input[2]["parts"][0]["id"], "call_1");
    let config = Run::faux(json!([{"text": "x"}]))
        .command_word("config")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .output();
    assert!(
        config.stdout().contains("message content not captured"),
        "{}",
        config.stdout()
    );
}

/// Our test server over streamable HTTP: the child and its port.
fn http_test_server() -> (std::process::Child, u16) {
    use std::io::BufRead;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/test-server.mjs");
    let mut child = std::process::Command::new("node")
        .arg(script)
        .env("MCP_HTTP", "json")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let port = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.split_once("listening on port")?.1.trim().parse().ok())
        .expect("the test server names its port");
    std::thread::spawn(move || lines.for_each(drop));
    (child, port)
}

#[test]
fn an_mcp_call_carries_its_spans_trace_context_in_meta_and_over_http() {
    let (mut server, port) = http_test_server();
    let receiver = Receiver::start(Mode::Ok);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"h": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}}})
            .to_string(),
    )
    .unwrap();
    let transcript = dir.path().join("t.jsonl");
    let run = Run::faux(json!([
        {"toolCalls": [
            {"id": "call_http", "name": "mcp__h__trace", "arguments": {}},
            {"id": "call_pipe", "name": "mcp__t__trace", "arguments": {}}
        ]},
        {"text": "done"}
    ]))
    .args(["--no-stdin", "--tools", "none", "--mcp-config"])
    .arg(&config)
    .arg("--mcp")
    .arg(test_server())
    .arg("--transcript")
    .arg(&transcript)
    .prompt("go")
    .timeout(Duration::from_secs(60));
    let outcome = traced(run, &receiver).output();
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let spans = receiver.spans();
    let own = |name: &str| {
        let tool = span(&spans, name);
        format!(
            "00-{}-{}-01",
            tool["traceId"].as_str().unwrap(),
            tool["spanId"].as_str().unwrap()
        )
    };
    let results: Vec<Value> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line["role"] == "toolResult")
        .collect();
    let said = |id: &str| -> Value {
        let result = results
            .iter()
            .find(|line| line["toolCallId"] == id)
            .unwrap();
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
    };
    let http = said("call_http");
    assert_eq!(
        http["meta"]["traceparent"],
        own("execute_tool mcp__h__trace")
    );
    assert_eq!(http["header"], own("execute_tool mcp__h__trace"));
    let pipe = said("call_pipe");
    assert_eq!(
        pipe["meta"]["traceparent"],
        own("execute_tool mcp__t__trace")
    );
    let tool = span(&spans, "execute_tool mcp__h__trace");
    assert_eq!(attr(tool, "network.transport"), "tcp");
    assert_eq!(attr(tool, "server.address"), "127.0.0.1");
    assert_eq!(attr(tool, "server.port"), i64::from(port));
    assert!(attr(tool, "mcp.session.id").is_string(), "{tool}");
}
