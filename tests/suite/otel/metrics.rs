//! The GenAI client metrics (docs/src/tracing.md "Metrics") through the
//! real binary, exported to the receiver's `/v1/metrics`: a run with a
//! tool call (two requests, cached tokens counted as input), a 429's
//! `error.type`, a batch aggregated into one export (with traces off),
//! `OTEL_METRICS_EXPORTER=none`, and the metrics' own endpoint, gzip and
//! temporality variables.

use std::time::Duration;

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;
use crate::support::otlp::Mode;
use crate::support::sse::{openai, sse};

const KEY: &str = "sk-test-key-1234567890";

/// The token histogram's advised boundaries (gen-ai-metrics.md).
const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The points of metric `name`.
fn points<'a>(metrics: &'a [Value], name: &str) -> Vec<&'a Value> {
    metrics
        .iter()
        .filter(|point| point["name"] == name)
        .collect()
}

/// The one point of `name` whose attribute `key` is `value`.
fn point<'a>(metrics: &'a [Value], name: &str, key: &str, value: &str) -> &'a Value {
    let found: Vec<&Value> = points(metrics, name)
        .into_iter()
        .filter(|point| point["attributes"][key] == value)
        .collect();
    assert_eq!(found.len(), 1, "{name} {key}={value}: {metrics:?}");
    found[0]
}

/// A streamed reply with a usage chunk whose `cached` prompt tokens were
/// read from the cache.
fn reply(chunks: Vec<Value>, prompt: u64, cached: u64, completion: u64) -> String {
    let mut usage = openai::usage(prompt, completion);
    usage["usage"]["prompt_tokens_details"] = json!({"cached_tokens": cached});
    let mut all = vec![openai::role()];
    all.extend(chunks);
    all.push(usage);
    openai::body(&all, true)
}

/// A model that asks for `read_file` once (100 prompt tokens, 40 cached),
/// then answers (200 prompt tokens, 150 cached).
async fn tool_calling_model() -> MockServer {
    let server = MockServer::start().await;
    let call = reply(
        vec![
            openai::call_start(0, "call_1", "read_file"),
            openai::call_args(0, r#"{"path": "sample.ts"}"#),
            openai::finish("tool_calls"),
        ],
        100,
        40,
        10,
    );
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(call))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let answer = reply(
        vec![openai::text("done"), openai::finish("stop")],
        200,
        150,
        20,
    );
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(answer))
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn a_run_with_a_tool_call_records_both_requests_and_every_input_token() {
    let server = tool_calling_model().await;
    let receiver = Receiver::start(Mode::Ok);
    let run = Run::openai(&server)
        .key(KEY)
        .arg("--root")
        .arg(fixtures())
        .args(["--tools", "read_file"])
        .prompt("Read sample.ts");
    let outcome = traced(run, &receiver).output_async().await;
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let metrics = receiver.metrics();
    let durations = points(&metrics, "gen_ai.client.operation.duration");
    assert_eq!(durations.len(), 1, "{metrics:?}");
    let duration = durations[0];
    assert_eq!(duration["count"], 2, "two chat requests: {duration}");
    assert_eq!(duration["unit"], "s");
    assert_eq!(duration["kind"], "histogram");
    assert_eq!(duration["temporality"], "cumulative");
    assert_eq!(duration["explicitBounds"][0], 0.01);
    assert_eq!(duration["explicitBounds"][13], 81.92);
    let port = i64::from(server.address().port());
    let attributes = &duration["attributes"];
    assert_eq!(attributes["gen_ai.operation.name"], "chat");
    assert_eq!(attributes["gen_ai.provider.name"], "openai");
    assert_eq!(attributes["gen_ai.request.model"], "gpt-test");
    assert_eq!(attributes["gen_ai.response.model"], "gpt-test");
    assert_eq!(attributes["server.address"], "127.0.0.1");
    assert_eq!(attributes["server.port"], port);
    assert!(attributes.get("error.type").is_none(), "{attributes}");
    // Streaming requests: the time to their first chunk, same attributes.
    let first = points(&metrics, "gen_ai.client.operation.time_to_first_chunk");
    assert_eq!(first.len(), 1, "{metrics:?}");
    assert_eq!(first[0]["count"], 2);
    assert_eq!(first[0]["unit"], "s");
    assert_eq!(first[0]["attributes"], duration["attributes"]);
    // Input tokens hold the cached ones (as gen_ai.usage.input_tokens does):
    // 100 + 200 sent, 40 + 150 of them from the cache.
    let input = point(
        &metrics,
        "gen_ai.client.token.usage",
        "gen_ai.token.type",
        "input",
    );
    assert_eq!(input["count"], 2, "{input}");
    assert_eq!(input["sum"], 300.0, "{input}");
    assert_eq!(input["unit"], "{token}");
    let bounds: Vec<f64> = serde_json::from_value(input["explicitBounds"].clone()).unwrap();
    assert_eq!(bounds, TOKEN_BUCKETS);
    // 100 lands in (64, 256], 200 in the same bucket.
    assert_eq!(input["bucketCounts"][4], 2, "{input}");
    let output = point(
        &metrics,
        "gen_ai.client.token.usage",
        "gen_ai.token.type",
        "output",
    );
    assert_eq!(output["sum"], 30.0, "{output}");
    assert_eq!(output["attributes"]["server.port"], port);
    assert_eq!(input["scope"]["name"], "leash");
    assert_eq!(
        input["scope"]["schemaUrl"],
        "https://opentelemetry.io/schemas/1.41.0"
    );
    assert_eq!(input["resource"]["service.name"], "leash");
    // Exported once, at the end; the key in no byte.
    let raw = receiver.raw();
    let text = String::from_utf8_lossy(&raw);
    assert_eq!(text.matches("POST /v1/metrics").count(), 1, "{text}");
    assert!(!text.contains(KEY));
}

#[tokio::test]
async fn a_429_records_the_requests_duration_with_its_error_type() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(429).set_body_json(openai::error_json("slow down")))
        .mount(&server)
        .await;
    let receiver = Receiver::start(Mode::Ok);
    let run = Run::openai(&server)
        .key(KEY)
        .args(["--retries", "0"])
        .prompt("hello");
    let outcome = traced(run, &receiver).output_async().await;
    assert_ne!(outcome.code(), Some(0));
    let metrics = receiver.metrics();
    let duration = point(
        &metrics,
        "gen_ai.client.operation.duration",
        "error.type",
        "429",
    );
    assert_eq!(duration["count"], 1, "{duration}");
    assert_eq!(duration["attributes"]["gen_ai.provider.name"], "openai");
    // No usage was reported: no token point (the conventions: MUST NOT).
    assert!(
        points(&metrics, "gen_ai.client.token.usage").is_empty(),
        "{metrics:?}"
    );
}

#[test]
fn a_batch_exports_its_items_requests_aggregated_once_even_without_traces() {
    let receiver = Receiver::start(Mode::Ok);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("items.jsonl");
    let lines: String = (0..12).map(|i| format!("item {i}\n")).collect();
    std::fs::write(&input, lines).unwrap();
    let run = Run::faux(json!([{"text": "done", "usage": {"input": 7, "output": 3}}]))
        .command_word("batch")
        .arg(&input)
        .args(["--tools", "none", "--parallel", "4"])
        .env("OTEL_TRACES_EXPORTER", "none")
        .timeout(Duration::from_secs(60));
    let outcome = traced(run, &receiver).output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert!(receiver.spans().is_empty(), "traces are off");
    let metrics = receiver.metrics();
    let duration = points(&metrics, "gen_ai.client.operation.duration");
    assert_eq!(duration.len(), 1, "{metrics:?}");
    assert_eq!(duration[0]["count"], 12);
    assert_eq!(duration[0]["attributes"]["gen_ai.provider.name"], "faux");
    // The scripted model does not stream over HTTP: no first-chunk time.
    assert!(points(&metrics, "gen_ai.client.operation.time_to_first_chunk").is_empty());
    let input = point(
        &metrics,
        "gen_ai.client.token.usage",
        "gen_ai.token.type",
        "input",
    );
    assert_eq!(input["sum"], 84.0, "{input}");
    assert_eq!(receiver.requests(), 1, "one export, at the batch's end");
}

#[tokio::test]
async fn metrics_alone_hand_no_trace_context_on() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(openai::text_reply(&["hi"])))
        .mount(&server)
        .await;
    let receiver = Receiver::start(Mode::Ok);
    let run = Run::openai(&server)
        .key(KEY)
        .env("OTEL_TRACES_EXPORTER", "none")
        .prompt("hello");
    let outcome = traced(run, &receiver).output_async().await;
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert_eq!(
        points(&receiver.metrics(), "gen_ai.client.operation.duration").len(),
        1
    );
    let received = server.received_requests().await.unwrap();
    assert!(received[0].headers.get("traceparent").is_none());
}

#[test]
fn metrics_none_sends_none_and_leash_config_says_so() {
    let receiver = Receiver::start(Mode::Ok);
    let outcome = traced(seed_task(), &receiver)
        .env("OTEL_METRICS_EXPORTER", "none")
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert!(!receiver.spans().is_empty(), "traces still go");
    assert!(receiver.metrics().is_empty());
    let raw = receiver.raw();
    assert!(!String::from_utf8_lossy(&raw).contains("/v1/metrics"));
    let config = Run::faux(json!([{"text": "x"}]))
        .command_word("config")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_METRICS_EXPORTER", "none")
        .output();
    assert!(
        config
            .stdout()
            .contains("# metrics: off (OTEL_METRICS_EXPORTER=none)"),
        "{}",
        config.stdout()
    );
    // Both off: nothing connects.
    let quiet = Receiver::start(Mode::Ok);
    let outcome = traced(seed_task(), &quiet)
        .env("OTEL_METRICS_EXPORTER", "none")
        .env("OTEL_TRACES_EXPORTER", "none")
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert_eq!(quiet.connections(), 0);
}

#[test]
fn the_metrics_own_endpoint_gzip_and_delta_temporality() {
    let receiver = Receiver::start(Mode::Ok);
    let outcome = seed_task()
        .env(
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            format!("{}/custom/v1/metrics", receiver.endpoint()),
        )
        .env("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "gzip")
        .env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    // Only the metrics' endpoint is set: no traces.
    assert!(receiver.spans().is_empty());
    let metrics = receiver.metrics();
    let duration = points(&metrics, "gen_ai.client.operation.duration");
    assert_eq!(duration[0]["count"], 2, "{metrics:?}");
    assert_eq!(duration[0]["temporality"], "delta");
    let raw = String::from_utf8_lossy(&receiver.raw()).into_owned();
    assert!(raw.contains("POST /custom/v1/metrics"), "{raw}");
    assert!(
        raw.to_ascii_lowercase().contains("content-encoding: gzip"),
        "{raw}"
    );
    let config = Run::faux(json!([{"text": "x"}]))
        .command_word("config")
        .env(
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "https://otel.example/v1/metrics",
        )
        .output();
    assert!(
        config.stdout().contains(
            "# metrics: https://otel.example/v1/metrics (http/protobuf, from \
             OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)"
        ),
        "{}",
        config.stdout()
    );
}

#[test]
fn a_slow_collector_holds_the_run_no_longer_than_the_metrics_timeout() {
    let receiver = Receiver::start(Mode::Slow);
    let started = std::time::Instant::now();
    let outcome = traced(seed_task(), &receiver)
        .env("OTEL_TRACES_EXPORTER", "none")
        .env("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "300")
        .output();
    let took = started.elapsed();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert!(
        outcome.stderr().contains(&format!(
            "leash: metrics not exported to {}/v1/metrics: it did not answer within 300 ms",
            receiver.endpoint()
        )),
        "{}",
        outcome.stderr()
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(receiver.requests(), 1);
}

#[test]
fn a_request_cut_by_the_runs_timer_is_a_timeout_within_the_last_word() {
    let receiver = Receiver::start(Mode::Ok);
    let run = Run::faux(json!([{"text": "late", "delayMs": 5000}]))
        .args(["--timeout", "700ms"])
        .prompt("go");
    let started = std::time::Instant::now();
    let outcome = traced(run, &receiver).output();
    assert_eq!(outcome.code(), Some(124), "{}", outcome.stderr());
    assert!(started.elapsed() < Duration::from_secs(3));
    let metrics = receiver.metrics();
    let duration = point(
        &metrics,
        "gen_ai.client.operation.duration",
        "error.type",
        "timeout",
    );
    assert_eq!(duration["count"], 1);
    let seconds = duration["sum"].as_f64().unwrap();
    assert!((0.2..3.0).contains(&seconds), "{seconds}");
    assert!(
        points(&metrics, "gen_ai.client.token.usage").is_empty(),
        "{metrics:?}"
    );
}
