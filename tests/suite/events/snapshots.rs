//! Snapshots (insta) of what a run prints: stdout, the exit code and the
//! event stream on stderr, as `--events text` and `--events jsonl`, for the
//! seed task on the scripted model and for a tool round trip on each HTTP
//! provider. Times, durations and ids are redacted; everything else is
//! compared byte for byte with the reviewed `.snap` files in `snapshots/`.
//!
//! A missing or different snapshot fails the test. Under `CI=true` insta
//! writes nothing; elsewhere it leaves a `.snap.new` beside the old one for
//! `cargo insta review` (or rename it by hand once the change is meant).

use std::process::Output;

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use crate::support::shell::{Workspace, copy_sample};
use crate::support::sse::{anthropic, openai};

const SEED_PROMPT: &str = "Read sample.ts and explain what first([]) returns, and why.";
const KEY: &str = "sk-snapshot-SECRET-24680";

/// What varies from run to run, replaced before comparing: times,
/// durations and ids (and the key, which must not appear at all).
const REDACTIONS: [(&str, &str); 7] = [
    (r#""timestamp":\d+"#, r#""timestamp":"[time]""#),
    (r#""(durationMs|delayMs)":\d+"#, r#""$1":"[duration]""#),
    (r#""(id|toolCallId)":"[^"]*""#, r#""$1":"[id]""#),
    (r"\b\d+ms\b", "[duration]"),
    (r"\b\d+ ms\b", "[duration]"),
    (r"\b(call|toolu)_\w+", "[id]"),
    (KEY, "[key]"),
];

/// Compares the run's output with snapshot `name`, redacted.
fn assert_run_snapshot(name: &str, output: &Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let shown = format!(
        "exit: {:?}\n--- stdout\n{stdout}--- stderr\n{stderr}",
        output.status.code()
    );
    let mut settings = insta::Settings::clone_current();
    for (pattern, replacement) in REDACTIONS {
        settings.add_filter(pattern, replacement);
    }
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(name, shown));
}

/// Every stderr line is one JSON object; the last is `run_end` with `status`.
fn assert_jsonl(output: &Output, status: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let events: Vec<Value> = stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_end", "{stderr}");
    assert_eq!(last["status"], status, "{stderr}");
}

/// The seed task on the scripted model (`fixtures/demo.json`): one
/// `read_file` round trip, then the answer.
fn seed_run(events: &str) -> Output {
    let ws = Workspace::new();
    copy_sample(ws.dir.path());
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo.json");
    ws.leash()
        .args(["--provider", "faux", "--faux-script"])
        .arg(script)
        .args(["--no-stdin", "--events", events, SEED_PROMPT])
        .output()
        .unwrap()
}

#[test]
fn the_seed_task_as_text_events() {
    let output = seed_run("text");
    assert_eq!(output.status.code(), Some(0));
    assert_run_snapshot("seed_task_text", &output);
}

#[test]
fn the_seed_task_as_jsonl_events() {
    let output = seed_run("jsonl");
    assert_jsonl(&output, "ok");
    assert_run_snapshot("seed_task_jsonl", &output);
}

/// `leash --provider PROVIDER` against `server` on the seed task, with
/// `sample.ts` in the workspace.
async fn http_run(provider: &'static str, base_url: String, events: &'static str) -> Output {
    tokio::task::spawn_blocking(move || {
        let ws = Workspace::new();
        copy_sample(ws.dir.path());
        let key_var = match provider {
            "openai" => "OPENAI_API_KEY",
            _ => "ANTHROPIC_API_KEY",
        };
        let output = ws
            .leash()
            .env(key_var, KEY)
            .args(["--provider", provider, "--base-url", &base_url, "-m", "m"])
            .args(["--no-stdin", "--timeout", "20s", "--events", events])
            .arg(SEED_PROMPT)
            .output()
            .unwrap();
        drop(ws);
        output
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_openai_tool_round_trip_as_jsonl_events() {
    use openai::*;
    let server = MockServer::start().await;
    let first = body(
        &[
            role(),
            text("Let me read the file first."),
            call_start(0, "call_snap_1", "read_file"),
            call_args(0, "{\"path\": "),
            call_args(0, "\"sample.ts\"}"),
            finish("tool_calls"),
            usage(300, 40),
        ],
        true,
    );
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(first))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(text_reply(&["`first([])` returns ", "`undefined`."])))
        .mount(&server)
        .await;

    let output = http_run("openai", format!("{}/v1", server.uri()), "jsonl").await;
    assert_jsonl(&output, "ok");
    assert_run_snapshot("openai_tool_round_trip_jsonl", &output);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_anthropic_tool_round_trip_as_text_events() {
    use anthropic::*;
    let server = MockServer::start().await;
    let first = [
        message_start(300),
        text_block(0, &["Let me read ", "the file first."]),
        tool_use_block(
            1,
            "toolu_01Snap",
            "read_file",
            &["{\"path\": ", "\"sample.ts\"}"],
        ),
        message_delta("tool_use", 40),
        message_stop(),
    ]
    .concat();
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(sse(first))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(sse(text_reply("`first([])` returns `undefined`.")))
        .mount(&server)
        .await;

    let output = http_run("anthropic", server.uri(), "text").await;
    assert_eq!(output.status.code(), Some(0));
    assert_run_snapshot("anthropic_tool_round_trip_text", &output);
}
