//! The registry check (docs/src/tracing.md "Conventions"): every attribute
//! leash emits — on the spans of a run with a tool call, a hook, a failed
//! request, a 429, MCP calls and a batch — is read against the
//! conventions' attribute registries of the version leash follows,
//! vendored in tests/data/semconv (and leash's own, `leash.yaml` there), by
//! tests/support/semconv_check.py: its name, its type, an enum's value.
//! Every metric point of the same runs is read against the conventions'
//! metric definitions (`gen-ai-metrics.yaml`, `gen-ai-metrics.md`): name,
//! instrument, unit, attributes, required ones, enum values, buckets.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;
use crate::support::otlp::{Mode, venv_python};
use crate::support::sse::{openai, sse};

fn registry_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/semconv")
}

/// The checker's verdict on the spans in `spans`: passed, and what it said.
fn check(spans: &Path) -> (bool, String) {
    check_with(spans, None)
}

/// The checker's verdict on `spans` and the metric points in `metrics`.
fn check_with(spans: &Path, metrics: Option<&Path>) -> (bool, String) {
    let output = Command::new(venv_python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/semconv_check.py"))
        .arg(registry_dir())
        .arg(spans)
        .args(metrics)
        .output()
        .expect("run the registry check (make otlp-receiver installs its PyYAML)");
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), said)
}

#[tokio::test]
async fn every_attribute_leash_emits_is_the_conventions_name_type_and_value() {
    let receiver = Receiver::start(Mode::Ok);
    let dir = tempfile::tempdir().unwrap();
    // A tool call and a failing hook; a failed run.
    let hook = dir.path().join("hook.sh");
    std::fs::write(&hook, "#!/bin/sh\ncat >/dev/null\nexit 3\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    traced(seed_task(), &receiver)
        .arg("--hook")
        .arg(format!("after-tool-call={}", hook.display()))
        .output();
    // The same with content capture: the messages' shape is checked too.
    traced(seed_task(), &receiver)
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        .output();
    traced(failing_run(), &receiver).output();
    // MCP calls, one that fails.
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/test-server.mjs");
    let mcp = Run::faux(json!([
        {"toolCalls": [
            {"id": "a", "name": "mcp__t__small", "arguments": {}},
            {"id": "b", "name": "mcp__t__fail", "arguments": {"city": "x"}}
        ]},
        {"text": "done"}
    ]))
    .args(["--no-stdin", "--tools", "none", "--mcp"])
    .arg(format!("t=node {}", server.display()))
    .prompt("go")
    .timeout(Duration::from_secs(60));
    traced(mcp, &receiver).output();
    // A real provider: a reply with its HTTP facts, then a 429.
    let model = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(openai::text_reply(&["hi"])).insert_header("x-request-id", "r1"))
        .up_to_n_times(1)
        .mount(&model)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(429).set_body_json(openai::error_json("slow")))
        .mount(&model)
        .await;
    for _ in 0..2 {
        let run = Run::openai(&model)
            .key("sk-test-key-1234567890")
            .args([
                "--retries",
                "0",
                "--max-tokens",
                "50",
                "--temperature",
                "0.2",
            ])
            .prompt("hello");
        traced(run, &receiver).output_async().await;
    }
    // A batch, with a wait at its rate gate.
    let input = dir.path().join("items.jsonl");
    std::fs::write(&input, "one\ntwo\n").unwrap();
    let batch = Run::faux(json!([{"text": "done"}]))
        .command_word("batch")
        .arg(&input)
        .args(["--tools", "none", "--shard", "0/1"])
        .timeout(Duration::from_secs(60));
    traced(batch, &receiver).output();
    let names = crate::support::otlp::names(&receiver.spans());
    for expected in [
        "invoke_agent leash",
        "execute_tool read_file",
        "hook after-tool-call",
        "execute_tool mcp__t__fail",
        "initialize",
        "invoke_workflow leash batch",
    ] {
        assert!(
            names.iter().any(|name| name == expected),
            "{expected} in {names:?}"
        );
    }
    let (passed, said) = check_with(receiver.spans_file(), Some(&receiver.metrics_file()));
    assert!(passed, "{said}");
    for attribute in [
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
        "gen_ai.client.operation.time_to_first_chunk",
        "gen_ai.token.type",
        "error.type",
        "gen_ai.response.finish_reasons",
        "jsonrpc.request.id",
        "server.port",
        "gen_ai.input.messages",
    ] {
        assert!(
            said.contains(attribute),
            "{attribute} was not checked: {said}"
        );
    }
}

#[test]
fn the_check_refuses_an_unknown_attribute_a_wrong_type_and_a_wrong_enum_value() {
    let dir = tempfile::tempdir().unwrap();
    let spans = dir.path().join("spans.jsonl");
    let bad = json!({"name": "chat m", "attributes": {
        "gen_ai.usage.input_tokens": 3,
        "mcp.server.name": "ev",
        "gen_ai.request.max_tokens": "300",
        "gen_ai.operation.name": "chatting",
        "gen_ai.response.finish_reasons": ["tool_calls"],
        "error.type": "aborted",
    }, "events": []});
    std::fs::write(&spans, format!("{bad}\n")).unwrap();
    let (passed, said) = check(&spans);
    assert!(!passed, "{said}");
    for problem in [
        "mcp.server.name is in no registry",
        "gen_ai.request.max_tokens is a string, the registry says int",
        "gen_ai.operation.name='chatting' is no member",
        "finish reason 'tool_calls'",
        "error.type='aborted' is no member",
    ] {
        assert!(said.contains(problem), "{problem:?} not in {said}");
    }
    assert!(!said.contains("input_tokens"), "{said}");
}

#[test]
fn the_check_refuses_a_metric_off_the_conventions() {
    let dir = tempfile::tempdir().unwrap();
    let spans = dir.path().join("spans.jsonl");
    std::fs::write(&spans, "").unwrap();
    let metrics = dir.path().join("metrics.jsonl");
    let buckets = [
        0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    ];
    let good = json!({"name": "gen_ai.client.operation.duration", "unit": "s", "kind": "histogram",
        "attributes": {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai"},
        "sum": 0.5, "explicitBounds": buckets});
    let lines = [
        good.clone(),
        json!({"name": "gen_ai.client.tokens", "unit": "{token}", "kind": "histogram", "attributes": {}}),
        json!({"name": "gen_ai.client.token.usage", "unit": "token", "kind": "sum", "sum": 2.5,
            "attributes": {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                "gen_ai.token.type": "cached", "server.address": "h", "leash.turns": 2},
            "explicitBounds": [1.0, 10.0]}),
        json!({"name": "gen_ai.client.operation.duration", "unit": "ms", "kind": "histogram",
            "attributes": {"gen_ai.provider.name": "openai"}, "sum": 1.0, "explicitBounds": buckets}),
    ];
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&metrics, text).unwrap();
    let (passed, said) = check_with(&spans, Some(&metrics));
    assert!(!passed, "{said}");
    for problem in [
        "metric gen_ai.client.tokens is not one the conventions define",
        "metric gen_ai.client.token.usage is a sum, the conventions say histogram",
        "metric gen_ai.client.token.usage has unit 'token'",
        "gen_ai.token.type='cached' is no member",
        "metric gen_ai.client.token.usage: leash.turns is not one of its attributes",
        "server.port is missing beside server.address",
        "metric gen_ai.client.token.usage: buckets [1.0, 10.0] are not the advised",
        "an int metric with sum 2.5",
        "metric gen_ai.client.operation.duration has unit 'ms'",
        "metric gen_ai.client.operation.duration: required gen_ai.operation.name is missing",
    ] {
        assert!(said.contains(problem), "{problem:?} not in {said}");
    }
    // The good point alone passes.
    std::fs::write(&metrics, format!("{good}\n")).unwrap();
    let (passed, said) = check_with(&spans, Some(&metrics));
    assert!(passed, "{said}");
}
