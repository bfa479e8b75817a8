//! `--hook`, `--hook-timeout`, `--deny-tool` and `--allow-tool`
//! (docs/src/hooks.md "Hooks"): the real binary with hook scripts written to the workspace
//! (sh and python3), on the faux model and against the OpenAI and
//! Anthropic mocks. Every failure of a hook must fail closed and show on
//! the event stream; a hook must never hang the run.

mod failures;
mod finish_turn;
mod flags;
mod patterns;
mod providers;
mod verdicts;

use crate::support::run::{events, last_line, stderr, stdout};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::MockServer;

use crate::support::hostile::{Workspace, assert_calm, run};
use crate::support::sse::{anthropic, openai, request_bodies, serve_in_order};

/// Writes an executable script `name` in the workspace.
fn script(ws: &Workspace, name: &str, text: &str) -> PathBuf {
    let path = ws.write(name, text);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// An sh hook with `body`, as a `--hook EVENT=PATH` value.
fn sh_hook(ws: &Workspace, name: &str, event: &str, body: &str) -> String {
    let path = script(ws, name, &format!("#!/bin/sh\n{body}\n"));
    format!("{event}={}", path.display())
}

fn call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}

/// A faux model that calls `calls` in one turn, then answers "done".
fn calls_then_done(calls: Vec<Value>) -> Value {
    json!([{"toolCalls": calls}, {"text": "done"}])
}

/// Every `tool_execution_end` in the model's order of the calls (a
/// parallel batch ends in any order): (result text, isError).
fn tool_ends(output: &Output) -> Vec<(String, bool)> {
    let events = events(output);
    let order: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "tool_execution_start")
        .map(|event| &event["toolCallId"])
        .collect();
    let mut ends: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "tool_execution_end")
        .collect();
    ends.sort_by_key(|event| order.iter().position(|id| **id == event["toolCallId"]));
    ends.into_iter()
        .map(|event| {
            let text = event["result"]["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|block| block["text"].as_str().unwrap_or_default().to_owned())
                .collect::<String>();
            (text, event["isError"].as_bool().unwrap())
        })
        .collect()
}

fn hook_failures(output: &Output) -> Vec<Value> {
    events(output)
        .into_iter()
        .filter(|event| event["type"] == "hook_failed")
        .collect()
}

/// `leash` on the faux model with `responses`, JSONL events and `args`.
fn faux_run(ws: &Workspace, responses: Value, args: &[&str]) -> (Output, Duration) {
    let mut cmd = ws.faux(responses);
    cmd.args(["--events", "jsonl", "--timeout", "30s"])
        .args(args)
        .arg("go");
    let (output, elapsed) = run(&mut cmd);
    assert_calm(&output);
    (output, elapsed)
}
