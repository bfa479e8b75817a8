//! `--resume TRANSCRIPT` against the real binary and the provider mocks
//! (docs/src/resume.md "Resume"): a chain of three steps resends the earlier requests
//! as an exact prefix and builds one transcript; another provider or API
//! is resumed only when it can be done faithfully; a corrupted or cut
//! transcript is a usage error naming its line before any request.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod attach;
mod refused;

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

/// The message of a run's `run_end` line.
fn usage_message(outcome: &Outcome) -> String {
    let end: Value = serde_json::from_str(&outcome.last_line()).unwrap();
    assert_eq!(end["type"], "run_end");
    end["message"].as_str().unwrap().to_owned()
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
) -> Vec<Value> {
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
    let second = step(run(&server), &steps, &args, "now fix it");
    assert_eq!(second.events().last().unwrap()["restoredTurns"], 2);
    let second = json_of(&second);
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
    bodies
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
    let _ = chain_of_three(Run::openai, "/v1/chat/completions", "messages", replies).await;
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
    let _ = chain_of_three(Run::responses, "/v1/responses", "input", replies).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_of_three_steps_on_anthropic_resends_an_exact_prefix() {
    let thinking = [
        anthropic::event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "thinking", "thinking": ""}}),
        ),
        anthropic::event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "thinking_delta", "thinking": "read it first"}}),
        ),
        anthropic::event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "signature_delta", "signature": "SIGNED-1"}}),
        ),
        anthropic::content_block_stop(0),
    ]
    .concat();
    let call = [
        anthropic::message_start(10),
        thinking,
        anthropic::tool_use_block(1, "toolu_1", "read_file", &["{\"path\":\"bug.txt\"}"]),
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
    let bodies = chain_of_three(Run::anthropic, "/v1/messages", "messages", replies).await;
    // The signed thinking goes back as received, three steps later.
    let thinking =
        json!({"type": "thinking", "thinking": "read it first", "signature": "SIGNED-1"});
    assert_eq!(bodies[3]["messages"][1]["content"][0], thinking);
}

/// Step one on Responses: a reasoning item and a call `call_id`, then a
/// reply; returns the transcript's path.
async fn responses_step(steps: &Steps, call_id: &str) -> PathBuf {
    let server = MockServer::start().await;
    let replies = vec![
        responses::Reply::new()
            .reasoning("thinking about it", "ENCRYPTED-1")
            .calls(&[(call_id, "read_file", "{\"path\":\"bug.txt\"}")])
            .completed(10, 0, 5),
        responses::text_reply(&["found it"]),
    ];
    serve_in_order(&server, "/v1/responses", replies).await;
    let t = steps.path("t.jsonl");
    json_of(&step(
        Run::responses(&server),
        steps,
        &[Path::new("--transcript"), &t],
        "find",
    ));
    t
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_resumed_on_anthropic_drops_the_reasoning_with_a_notice() {
    let steps = Steps::new();
    let t = responses_step(&steps, "call_1").await;
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        "/v1/messages",
        vec![anthropic::text_reply("fixed")],
    )
    .await;
    let t2 = steps.path("t2.jsonl");
    let args = [Path::new("--resume"), &t, Path::new("--transcript"), &t2];
    let outcome = step(Run::anthropic(&server), &steps, &args, "fix it");
    let result = json_of(&outcome);
    assert_eq!(result["restoredTurns"], 2);
    assert!(
        outcome.stderr().contains("thinking block(s)"),
        "{}",
        outcome.stderr()
    );
    let bodies = request_bodies(&server).await;
    let sent = bodies[0]["messages"].to_string();
    assert!(sent.contains("\"id\":\"call_1\"") && sent.contains("\"tool_use_id\":\"call_1\""));
    assert!(
        !sent.contains("thinking") && !sent.contains("ENCRYPTED"),
        "{sent}"
    );
    // The new file holds the whole conversation: the old lines, unchanged.
    let old = std::fs::read_to_string(&t).unwrap();
    let new = std::fs::read_to_string(&t2).unwrap();
    assert!(new.starts_with(&old));
    let roles: Vec<Value> = steps.lines("t2.jsonl")[5..]
        .iter()
        .map(|l| l["role"].clone())
        .collect();
    assert_eq!(roles, [json!("session"), json!("user"), json!("assistant")]);
    assert_eq!(steps.lines("t2.jsonl")[5]["api"], "anthropic-messages");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_id_anthropic_cannot_take_is_refused_before_any_request() {
    let steps = Steps::new();
    let t = responses_step(&steps, "call:1").await;
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        "/v1/messages",
        vec![anthropic::text_reply("fixed")],
    )
    .await;
    let outcome = step(
        Run::anthropic(&server),
        &steps,
        &[Path::new("--resume"), &t],
        "fix it",
    );
    assert_eq!(outcome.code(), Some(2), "{}", outcome.stderr());
    let last = usage_message(&outcome);
    assert!(
        last.contains("line 3:") && last.contains("\"call:1\""),
        "{last}"
    );
    assert!(last.contains("provider and API that wrote it"), "{last}");
    assert!(request_bodies(&server).await.is_empty());
}

#[test]
fn the_readme_two_step_recipe_builds_one_transcript() {
    let ws = crate::support::shell::Workspace::new();
    let script = ws.script(json!({"responses": [{"text": "done"}], "repeatLast": true}));
    let output = ws
        .bash(&crate::suite::cli::recipes::recipe("resume-chain"))
        .env("LEASH_PROVIDER", "faux")
        .env("LEASH_FAUX_SCRIPT", script)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = std::fs::read_to_string(ws.path(".out/t.jsonl")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let roles: Vec<&str> = lines.iter().map(|l| l["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "session",
            "user",
            "assistant",
            "session",
            "user",
            "assistant"
        ]
    );
    assert_eq!(lines[3]["resumed"]["turns"], 1);
    assert_eq!(lines[4]["content"][0]["text"], "now fix what you found");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_system_message_comes_from_the_transcript_unless_one_is_given() {
    let server = MockServer::start().await;
    let replies = ["one", "two", "three"].map(|text| openai::text_reply(&[text]));
    serve_in_order(&server, "/v1/chat/completions", replies.to_vec()).await;
    let steps = Steps::new();
    let t = steps.path("t.jsonl");
    let first = Run::openai(&server).args(["-s", "be terse"]);
    json_of(&step(
        first,
        &steps,
        &[Path::new("--transcript"), &t],
        "find",
    ));
    let args = [Path::new("--resume"), &t, Path::new("--transcript"), &t];
    json_of(&step(Run::openai(&server), &steps, &args, "fix"));
    let third = Run::openai(&server).args(["-s", "be kind"]);
    json_of(&step(third, &steps, &args, "explain"));
    let bodies = request_bodies(&server).await;
    let system = |n: usize| bodies[n]["messages"][0].clone();
    assert_eq!(system(1), json!({"role": "system", "content": "be terse"}));
    assert_eq!(system(2), json!({"role": "system", "content": "be kind"}));
    let sessions: Vec<Value> = steps
        .lines("t.jsonl")
        .into_iter()
        .filter(|line| line["role"] == "session")
        .map(|line| line["system"].clone())
        .collect();
    assert_eq!(
        sessions,
        [json!("be terse"), json!("be terse"), json!("be kind")]
    );
}
