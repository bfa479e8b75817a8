//! `--output-schema` and `--max-tokens-total` on the scripted model: the
//! corrective turn, exit 6, exit 7, and what stdout holds.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

use crate::support::run::last_line;
use crate::support::shell::Workspace;

use std::path::Path;

use assert_cmd::Command;
use serde_json::{Value, json};

/// `leash` on the scripted model with `script`, stdin not read.
fn faux(ws: &Workspace, script: Value) -> Command {
    let mut cmd = ws.faux(script);
    cmd.arg("--no-stdin");
    cmd
}

/// The messages of a transcript.
fn read_transcript(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line["role"] != "session")
        .collect()
}

fn verdict_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"verdict": {"enum": ["pass", "fail"]}},
        "required": ["verdict"],
        "additionalProperties": false
    })
}

#[test]
fn a_valid_reply_is_printed_as_json_alone() {
    let ws = Workspace::new();
    let schema = ws.write("schema.json", &verdict_schema().to_string());
    let output = faux(&ws, json!([{"text": "{\"verdict\": \"pass\"}"}]))
        .arg("--output-schema")
        .arg(&schema)
        .arg("Is it good?")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(stdout, "{\"verdict\": \"pass\"}\n", "as the model wrote it");
}

#[test]
fn with_output_json_the_value_is_embedded_as_output() {
    let ws = Workspace::new();
    let schema = ws.write("schema.json", &verdict_schema().to_string());
    let output = faux(
        &ws,
        json!([{"text": "```json\n{\"verdict\": \"fail\"}\n```"}]),
    )
    .arg("--output-schema")
    .arg(&schema)
    .args(["--output", "json", "Is it good?"])
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["output"], json!({"verdict": "fail"}));
    assert_eq!(result["status"], "ok");
}

#[test]
fn an_invalid_reply_gets_one_corrective_turn_carrying_the_errors() {
    let ws = Workspace::new();
    let schema = ws.write("schema.json", &verdict_schema().to_string());
    let transcript = ws.dir.path().join("t.jsonl");
    let output = faux(
        &ws,
        json!([{"text": "It passes."}, {"text": "{\"verdict\": \"pass\"}"}]),
    )
    .arg("--output-schema")
    .arg(&schema)
    .arg("--transcript")
    .arg(&transcript)
    .arg("Is it good?")
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "{\"verdict\": \"pass\"}\n"
    );
    let messages = read_transcript(&transcript);
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, vec!["user", "assistant", "user", "assistant"]);
    let correction = messages[2]["content"][0]["text"].as_str().unwrap();
    assert!(
        correction.contains("the reply is not a single JSON value"),
        "{correction}"
    );
}

#[test]
fn invalid_twice_exits_6_listing_the_errors() {
    let ws = Workspace::new();
    let schema = ws.write("schema.json", &verdict_schema().to_string());
    let output = faux(&ws, json!([{"text": "{\"verdict\": \"maybe\"}"}, {"text": "{\"verdict\": \"perhaps\"}"}, {"text": "never asked"}]))
        .arg("--output-schema")
        .arg(&schema)
        .arg("Is it good?")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(6));
    assert!(output.stdout.is_empty());
    let last = last_line(&output);
    assert!(
        last.starts_with("leash: the reply is not valid against --output-schema after one corrective turn: at /verdict: "),
        "{last}"
    );
}

#[test]
fn an_invalid_answer_in_the_last_turn_gets_no_corrective_turn() {
    let ws = Workspace::new();
    let schema = ws.write("schema.json", &verdict_schema().to_string());
    let output = faux(
        &ws,
        json!([{"text": "nope"}, {"text": "{\"verdict\": \"pass\"}"}]),
    )
    .arg("--output-schema")
    .arg(&schema)
    .args(["--max-turns", "1", "Is it good?"])
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(6));
}

#[test]
fn a_schema_that_is_not_a_json_schema_is_a_usage_error_before_any_request() {
    let ws = Workspace::new();
    let schema = ws.write("schema.json", &json!({"type": 12}).to_string());
    // The script would fail if a request were made: it has no responses.
    let output = faux(&ws, json!([]))
        .arg("--output-schema")
        .arg(&schema)
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(last_line(&output).contains("is not a valid JSON Schema"));
    let not_json = ws.dir.path().join("broken.json");
    std::fs::write(&not_json, "{").unwrap();
    faux(&ws, json!([]))
        .arg("--output-schema")
        .arg(&not_json)
        .arg("go")
        .assert()
        .code(2);
}

fn read_turn(n: u64) -> Value {
    json!({"toolCalls": [{"name": "list_dir", "arguments": {"path": format!("d{n}")}}],
           "usage": {"input": 60, "output": 40}})
}

#[test]
fn the_budget_stops_the_run_in_the_turn_it_is_exceeded_and_not_earlier() {
    let ws = Workspace::new();
    for n in 1..=4 {
        std::fs::create_dir(ws.dir.path().join(format!("d{n}"))).unwrap();
    }
    let transcript = ws.dir.path().join("t.jsonl");
    let output = faux(
        &ws,
        json!([read_turn(1), read_turn(2), read_turn(3), read_turn(4), {"text": "done"}]),
    )
    .args([
        "--max-tokens-total",
        "250",
        "--max-turns",
        "10",
        "--output",
        "json",
    ])
    .arg("--transcript")
    .arg(&transcript)
    .arg("go")
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(7), "{output:?}");
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["status"], "budget");
    assert_eq!(result["turns"], 3);
    assert_eq!(result["usage"]["totalTokens"], 300);
    assert_eq!(
        last_line(&output),
        "leash: token budget used up: 300 of 250 tokens after 3 turns; raise it with --max-tokens-total N"
    );
    // Three requests: 100, 200 (under), 300 (over) — then no fourth.
    let assistants = read_transcript(&transcript)
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    assert_eq!(assistants, 3);
}

#[test]
fn a_final_answer_over_the_budget_still_stands() {
    let ws = Workspace::new();
    let output = faux(
        &ws,
        json!([{"text": "done", "usage": {"input": 500, "output": 10}}]),
    )
    .args(["--max-tokens-total", "100", "--events", "jsonl", "go"])
    .output()
    .unwrap();
    // Over budget, but there was no further request to stop: the answer stands.
    assert_eq!(output.status.code(), Some(0));
    let run_end: Value = serde_json::from_str(&last_line(&output)).unwrap();
    assert_eq!(run_end["usage"]["totalTokens"], 510);
}
