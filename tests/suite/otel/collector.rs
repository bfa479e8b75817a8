//! What traces cost the run: nothing when off (nothing connects), no key
//! in any byte sent, and a dead, slow or refusing collector changes
//! neither the exit code nor stdout, with one stderr line and a bounded
//! delay.

use std::net::TcpListener;
use std::time::Duration;

use super::*;
use crate::support::otlp::Mode;

const KEY: &str = "sk-otel-test-key-0123456789abcdef";

#[test]
fn nothing_is_exported_or_connected_when_traces_are_off() {
    let receiver = Receiver::start(Mode::Ok);
    // Everything but an endpoint: off.
    let unset = seed_task()
        .env("OTEL_SERVICE_NAME", "x")
        .env("OTEL_EXPORTER_OTLP_HEADERS", "a=b")
        .env("TRACEPARENT", TRACEPARENT)
        .output();
    assert_eq!(unset.code(), Some(0), "{}", unset.stderr());
    // OTEL_SDK_DISABLED wins over an endpoint.
    let disabled = traced(seed_task(), &receiver)
        .env("OTEL_SDK_DISABLED", "true")
        .output();
    assert_eq!(disabled.code(), Some(0), "{}", disabled.stderr());
    // A checkout's .env cannot send the run's traces anywhere.
    let checkout = tempfile::tempdir().unwrap();
    std::fs::write(
        checkout.path().join(".env"),
        format!("OTEL_EXPORTER_OTLP_ENDPOINT={}\n", receiver.endpoint()),
    )
    .unwrap();
    let dotenv = seed_task().current_dir(checkout.path()).output();
    assert_eq!(dotenv.code(), Some(0), "{}", dotenv.stderr());
    assert_eq!(receiver.connections(), 0);
    assert!(receiver.spans().is_empty());
    for outcome in [&unset, &disabled, &dotenv] {
        assert!(!outcome.stderr().contains("trace"), "{}", outcome.stderr());
    }
}

#[test]
fn the_key_is_in_no_exported_byte() {
    let receiver = Receiver::start(Mode::Ok);
    let outcome = traced(failing_run(), &receiver)
        .env("OPENAI_API_KEY", KEY)
        .env("LEASH_API_KEY", KEY)
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            format!("authorization=Bearer%20collector-token,x-leak={KEY}"),
        )
        .env("OTEL_RESOURCE_ATTRIBUTES", format!("team=ops,leak={KEY}"))
        .output();
    assert_eq!(outcome.code(), Some(1));
    let raw = receiver.raw();
    assert!(!raw.is_empty(), "spans were exported");
    assert!(
        !raw.windows(KEY.len()).any(|bytes| bytes == KEY.as_bytes()),
        "the key was exported"
    );
    let raw = String::from_utf8_lossy(&raw).into_owned();
    assert!(
        raw.to_lowercase()
            .contains("authorization: bearer collector-token"),
        "{raw}"
    );
    let spans = receiver.spans();
    assert_eq!(spans[0]["resource"]["team"], "ops");
    assert_eq!(spans[0]["resource"].get("leak"), None);
    outcome.assert_key_absent(KEY);
    assert!(!outcome.stderr().contains("collector-token"));
}

#[test]
fn the_key_is_in_no_captured_message_or_new_attribute() {
    let receiver = Receiver::start(Mode::Ok);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, format!("the key is {KEY}\n")).unwrap();
    let script = json!([
        {"toolCalls": [{"id": format!("call-{KEY}"), "name": "read_file", "arguments": {"path": "notes.txt", "note": KEY}}]},
        {"text": format!("it is {KEY}")}
    ]);
    let outcome = traced(Run::faux(script), &receiver)
        .arg("--root")
        .arg(dir.path())
        .args(["--system", &format!("never say {KEY}")])
        .env("OPENAI_API_KEY", KEY)
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        .env("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
        .prompt(format!("read notes.txt, then repeat {KEY}"))
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let spans = receiver.spans();
    let chat = spans
        .iter()
        .find(|span| span["attributes"].get("gen_ai.output.messages").is_some())
        .expect("content was captured");
    let input = chat["attributes"]["gen_ai.input.messages"]
        .as_str()
        .unwrap();
    assert!(input.contains("read notes.txt, then repeat ***"), "{input}");
    let raw = receiver.raw();
    assert!(
        !raw.windows(KEY.len()).any(|bytes| bytes == KEY.as_bytes()),
        "the key was exported"
    );
}

/// The seed task without traces: what a traced run must still print.
fn untraced() -> (Option<i32>, String) {
    let outcome = seed_task().output();
    (outcome.code(), outcome.stdout())
}

fn assert_one_line_and_same_result(outcome: &crate::support::run::Outcome, why: &str) {
    let (code, stdout) = untraced();
    assert_eq!(outcome.code(), code);
    assert_eq!(outcome.stdout(), stdout);
    let stderr = outcome.stderr();
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("traces not exported"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", outcome.stderr());
    assert!(lines[0].contains(why), "{}", lines[0]);
    assert!(!outcome.stderr().contains("tok-9"), "{}", outcome.stderr());
}

#[test]
fn a_dead_collector_changes_neither_exit_nor_stdout() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let outcome = seed_task()
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        )
        .env("OTEL_EXPORTER_OTLP_HEADERS", "authorization=tok-9")
        .output();
    assert_one_line_and_same_result(&outcome, "cannot connect");
    assert!(
        outcome.elapsed < Duration::from_secs(5),
        "{:?}",
        outcome.elapsed
    );
}

#[test]
fn a_slow_collector_costs_at_most_the_timeout_variable() {
    let receiver = Receiver::start(Mode::Slow);
    let quick = seed_task().output().elapsed;
    let outcome = traced(seed_task(), &receiver)
        .env("OTEL_EXPORTER_OTLP_HEADERS", "authorization=tok-9")
        .env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1000")
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "30000")
        // The metrics would wait the general 30 s (their own timeout is
        // tested in metrics.rs).
        .env("OTEL_METRICS_EXPORTER", "none")
        .output();
    assert_one_line_and_same_result(&outcome, "did not answer within 1000 ms");
    assert!(receiver.connections() >= 1);
    let added = outcome.elapsed.saturating_sub(quick);
    assert!(added < Duration::from_millis(1800), "{added:?} added");
    assert!(
        added >= Duration::from_millis(900),
        "the flush waited {added:?}"
    );
}

#[test]
fn a_slow_collector_within_the_timeout_variable_gets_every_span() {
    let receiver = Receiver::start(Mode::Delay(1500));
    let outcome = traced(seed_task(), &receiver)
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "4000")
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert!(!outcome.stderr().contains("traces"), "{}", outcome.stderr());
    assert_eq!(receiver.spans().len(), 4);
    // The same collector, a timeout shorter than its delay: one line.
    let receiver = Receiver::start(Mode::Delay(1500));
    let outcome = traced(seed_task(), &receiver)
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "300")
        .output();
    assert_one_line_and_same_result(&outcome, "did not answer within 300 ms");
}

#[test]
fn a_slow_collector_never_holds_a_run_past_its_timer() {
    let receiver = Receiver::start(Mode::Slow);
    let outcome = traced(seed_task(), &receiver)
        .args(["--timeout", "400ms"])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert!(
        outcome.elapsed < Duration::from_millis(1000),
        "{:?}",
        outcome.elapsed
    );
}

#[test]
fn a_refusing_collector_is_one_line() {
    let receiver = Receiver::start(Mode::Refuse);
    let outcome = traced(seed_task(), &receiver)
        .env("OTEL_EXPORTER_OTLP_HEADERS", "authorization=tok-9")
        .output();
    assert_one_line_and_same_result(&outcome, "HTTP 503");
}

#[test]
fn grpc_is_one_line_and_the_run_goes_on() {
    let receiver = Receiver::start(Mode::Ok);
    let outcome = traced(seed_task(), &receiver)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .output();
    let (code, stdout) = untraced();
    assert_eq!((outcome.code(), outcome.stdout()), (code, stdout));
    assert_eq!(
        outcome.stderr().matches("http/protobuf only").count(),
        1,
        "{}",
        outcome.stderr()
    );
    assert_eq!(receiver.connections(), 0);
}
