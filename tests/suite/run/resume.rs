//! `--resume TRANSCRIPT` against the real binary and the provider mocks
//! (README "Resume"): a chain of three steps resends the earlier requests
//! as an exact prefix and builds one transcript; another provider or API
//! is resumed only when it can be done faithfully; a corrupted or cut
//! transcript is a usage error naming its line before any request.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use crate::support::run::{Outcome, Run};
use crate::support::sse::{anthropic, openai, request_bodies, responses, serve_in_order};

use serde_json::{Value, json};
use wiremock::MockServer;

/// A root with one file, and where the transcript goes.
struct Steps {
    dir: tempfile::TempDir,
}

impl Steps {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bug.txt"), "off by one in first()\n").unwrap();
        Steps { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn lines(&self, name: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.path(name)).unwrap();
        assert!(text.ends_with('\n'));
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

/// One step: `run` with the root, JSON output and the prompt.
fn step(run: Run, steps: &Steps, extra: &[&Path], prompt: &str) -> Outcome {
    let mut run = run.arg("--root").arg(steps.dir.path()).args([
        "--no-stdin",
        "--output",
        "json",
        "--events",
        "jsonl",
    ]);
    for arg in extra {
        run = run.arg(arg);
    }
    run.prompt(prompt).output()
}

fn flag_path(flag: &str, path: PathBuf) -> Vec<PathBuf> {
    vec![PathBuf::from(flag), path]
}

/// `value` without Anthropic's `cache_control` markers: the breakpoint
/// moves to the newest block on every request, within a run too, and is
/// not part of the cached prefix.
fn unmarked(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| *key != "cache_control")
                .map(|(key, value)| (key.clone(), unmarked(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

/// The conversation part of a request body, and the rest of it.
fn split(body: &Value, key: &str) -> (Vec<Value>, Value) {
    let mut rest = unmarked(body);
    let messages = rest
        .as_object_mut()
        .unwrap()
        .remove(key)
        .unwrap()
        .as_array()
        .unwrap()
        .clone();
    (messages, rest)
}

/// Request `later` repeats request `earlier` exactly: the same tools,
/// system and options, and its conversation as a prefix.
fn assert_prefix(bodies: &[Value], earlier: usize, later: usize, key: &str) {
    let (before, before_rest) = split(&bodies[earlier], key);
    let (after, after_rest) = split(&bodies[later], key);
    assert_eq!(
        before_rest, after_rest,
        "request {later} changed more than {key}"
    );
    assert!(after.len() > before.len(), "{after:?}");
    assert_eq!(
        after[..before.len()],
        before[..],
        "request {later} is no exact prefix"
    );
}

fn json_of(outcome: &Outcome) -> Value {
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    serde_json::from_str(&outcome.stdout()).unwrap()
}

/// Three steps on one wire; `replies` are the server's four answers (a
/// tool call, then a reply, for step one; one reply for each other step).
async fn chain_of_three(
    run: impl Fn(&MockServer) -> Run,
    endpoint: &str,
    key: &str,
    replies: Vec<String>,
) {
    let server = MockServer::start().await;
    serve_in_order(&server, endpoint, replies).await;
    let steps = Steps::new();
    let t = steps.path("t.jsonl");
    let first = step(
        run(&server),
        &steps,
        &[Path::new("--transcript"), &t],
        "find the bug",
    );
    let first = json_of(&first);
    assert_eq!(first["turns"], 2);
    assert!(first.get("restoredTurns").is_none(), "{first}");
    let resume: Vec<PathBuf> = [
        flag_path("--resume", t.clone()),
        flag_path("--transcript", t.clone()),
    ]
    .concat();
    let args: Vec<&Path> = resume.iter().map(PathBuf::as_path).collect();
    let second = json_of(&step(run(&server), &steps, &args, "now fix it"));
    assert_eq!(
        (second["turns"].clone(), second["restoredTurns"].clone()),
        (json!(1), json!(2))
    );
    let third = json_of(&step(run(&server), &steps, &args, "explain the fix"));
    assert_eq!(
        (third["turns"].clone(), third["restoredTurns"].clone()),
        (json!(1), json!(3))
    );

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 4);
    assert_prefix(&bodies, 1, 2, key);
    assert_prefix(&bodies, 2, 3, key);

    let lines = steps.lines("t.jsonl");
    let roles: Vec<&str> = lines.iter().map(|l| l["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "session",
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "session",
            "user",
            "assistant",
            "session",
            "user",
            "assistant"
        ]
    );
    assert_eq!(lines[0]["schemaVersion"], 1);
    assert!(lines[0].get("resumed").is_none());
    assert_eq!(lines[5]["resumed"]["lines"], 5);
    assert_eq!(lines[5]["resumed"]["turns"], 2);
    assert_eq!(lines[8]["resumed"]["lines"], 8);
    assert_eq!(lines[9]["content"][0]["text"], "explain the fix");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_of_three_steps_on_chat_completions_resends_an_exact_prefix() {
    let call = openai::body(
        &[
            openai::role(),
            openai::call_start(0, "call_1", "read_file"),
            openai::call_args(0, "{\"path\":\"bug.txt\"}"),
            openai::finish("tool_calls"),
        ],
        true,
    );
    let replies = vec![
        call,
        openai::text_reply(&["found it"]),
        openai::text_reply(&["fixed"]),
        openai::text_reply(&["explained"]),
    ];
    chain_of_three(Run::openai, "/v1/chat/completions", "messages", replies).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_of_three_steps_on_responses_resends_an_exact_prefix() {
    let call = responses::Reply::new()
        .reasoning("thinking about it", "ENCRYPTED-1")
        .calls(&[("call_1", "read_file", "{\"path\":\"bug.txt\"}")])
        .completed(10, 0, 5);
    let replies = vec![
        call,
        responses::Reply::new()
            .reasoning("more", "ENCRYPTED-2")
            .message(&["found it"])
            .completed(10, 0, 5),
        responses::text_reply(&["fixed"]),
        responses::text_reply(&["explained"]),
    ];
    chain_of_three(Run::responses, "/v1/responses", "input", replies).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_of_three_steps_on_anthropic_resends_an_exact_prefix() {
    let call = [
        anthropic::message_start(10),
        anthropic::tool_use_block(0, "toolu_1", "read_file", &["{\"path\":\"bug.txt\"}"]),
        anthropic::message_delta("tool_use", 5),
        anthropic::message_stop(),
    ]
    .concat();
    let replies = vec![
        call,
        anthropic::text_reply("found it"),
        anthropic::text_reply("fixed"),
        anthropic::text_reply("explained"),
    ];
    chain_of_three(Run::anthropic, "/v1/messages", "messages", replies).await;
}
