//! The run's contract on the scripted model (ARCHITECTURE.md §2): exit
//! codes, the stdout/stderr split, events, JSON output, stdin rules,
//! transcripts; stdin and signals in [`input`].

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

mod input;

use crate::support::shell::{Workspace, copy_sample};

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const SEED_PROMPT: &str = "Read sample.ts and explain what first([]) returns, and why.";

/// A temp working directory holding a copy of `sample.ts`, for the scripts.
fn workspace() -> Workspace {
    let ws = Workspace::new();
    copy_sample(ws.dir.path());
    ws
}

fn seed_script() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn seed_reply() -> String {
    seed_script()["responses"][1]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn stderr_lines(output: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn tool_call(name: &str, args: Value) -> Value {
    json!({"toolCalls": [{"name": name, "arguments": args}]})
}

// ---------------------------------------------------------------- success

#[test]
fn the_seed_task_prints_the_reply_alone_on_stdout_and_the_events_on_stderr() {
    let ws = workspace();
    let output = ws
        .faux(seed_script())
        // No stdin: the test harness's empty pipe would be said on stderr.
        .args(["--no-stdin", "-s", "Read the file before explaining."])
        .arg(SEED_PROMPT)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        String::from_utf8(output.stdout.clone()).unwrap(),
        seed_reply() + "\n"
    );
    let lines = stderr_lines(&output);
    let shape: Vec<String> = lines
        .iter()
        .map(|line| {
            // Durations vary; keep the event and its subject.
            line.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            "[model] Let me",
            "[tool] read_file sample.ts",
            "[turn 1] 1",
            "[turn 2] answer",
            "[run_end] ok ·",
        ]
    );
    assert!(
        lines[1].starts_with("[tool] read_file sample.ts ok "),
        "{}",
        lines[1]
    );
    assert!(lines[1].ends_with(" ms"), "{}", lines[1]);
}

#[test]
fn the_file_text_reaches_the_model_as_the_tool_result() {
    let ws = workspace();
    let transcript = ws.path("transcript.jsonl");
    ws.faux(seed_script())
        .arg("--transcript")
        .arg(&transcript)
        .arg(SEED_PROMPT)
        .assert()
        .code(0);
    let messages: Vec<Value> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line["role"] != "session")
        .collect();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, vec!["user", "assistant", "toolResult", "assistant"]);
    let result = &messages[2];
    assert_eq!(result["toolCallId"], "call_1");
    assert_eq!(result["isError"], false);
    assert!(result["durationMs"].is_u64());
    let sample = std::fs::read_to_string(ws.path("sample.ts")).unwrap();
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(sample.trim())
    );
}

// ---------------------------------------------------------------- exit codes

#[test]
fn the_turn_limit_exits_3_and_says_so() {
    let ws = workspace();
    let script = json!([
        tool_call("read_file", json!({"path": "sample.ts", "limit": 1})),
        tool_call("read_file", json!({"path": "sample.ts", "limit": 2})),
        tool_call("read_file", json!({"path": "sample.ts", "limit": 3})),
        tool_call("read_file", json!({"path": "sample.ts", "limit": 4})),
        {"text": "never asked"}
    ]);
    let output = ws
        .faux(script)
        .args(["--max-turns", "4", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(
        stderr_lines(&output).last().unwrap(),
        "leash: turn limit reached after 4 turns; task not confirmed complete; raise it with --max-turns N"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn a_text_answer_in_the_last_turn_is_a_success() {
    let ws = workspace();
    let script = json!([
        tool_call("list_dir", json!({})),
        {"text": "done"}
    ]);
    let output = ws
        .faux(script)
        .args(["--max-turns", "2", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(output.stdout, b"done\n");
}

#[test]
fn a_repeated_identical_call_is_blocked_and_terminates_with_4() {
    let ws = workspace();
    let script = json!({
        "responses": [tool_call("read_file", json!({"path": "sample.ts"}))],
        "repeatLast": true
    });
    let output = ws
        .faux(script)
        .args(["--max-turns", "10", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4));
    let lines = stderr_lines(&output);
    assert!(
        lines.iter().any(|l| l
            == "[tool] read_file sample.ts error: blocked: read_file was already called 2 times with these exact arguments and no file changed since, so those results still hold; use them"),
        "{lines:#?}"
    );
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("leash: the run ended after a terminated tool batch without an answer"),
        "{lines:#?}"
    );
}

#[test]
fn a_cut_off_answer_exits_5() {
    let ws = workspace();
    let output = ws
        .faux(json!([{"text": "The answer is", "stop": "length"}]))
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(5));
    assert_eq!(output.stdout, b"The answer is\n");
    assert_eq!(
        stderr_lines(&output).last().unwrap(),
        "leash: the answer was cut off by the output token limit"
    );
}

#[test]
fn a_provider_error_exits_1_with_the_error_in_words() {
    let ws = workspace();
    let output = ws
        .faux(json!([{"error": "HTTP 503 Service Unavailable: overloaded"}]))
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr_lines(&output).last().unwrap(),
        "leash: provider error: HTTP 503 Service Unavailable: overloaded"
    );
}

#[test]
fn the_abort_timer_exits_124_in_about_a_second() {
    let ws = workspace();
    let started = Instant::now();
    let output = ws
        .faux(json!([{"text": "too late", "delayMs": 20000}]))
        .args(["--timeout", "1s", "go"])
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(output.status.code(), Some(124));
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    let lines = stderr_lines(&output);
    assert_eq!(
        lines.last().unwrap(),
        "leash: timed out after 1s; raise it with -t/--timeout DURATION"
    );
    // The run still ended cleanly.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("[turn 1] aborted · tokens:")),
        "{lines:#?}"
    );
}

#[test]
fn a_missing_key_is_a_usage_error() {
    let ws = workspace();
    let output = ws
        .leash()
        .args(["--provider", "openai", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr_lines(&output).last().unwrap(),
        "leash: OPENAI_API_KEY is not set (needed by --provider openai); set it in the environment or in .env, \
         or try leash offline without a key: leash --provider faux \"hi\""
    );
}

#[test]
fn bad_flags_and_unknown_providers_are_usage_errors() {
    let ws = workspace();
    ws.leash()
        .args(["--max-turns", "zero", "go"])
        .assert()
        .code(2);
    ws.leash()
        .args(["--provider", "mistral", "go"])
        .assert()
        .code(2);
    ws.leash()
        .args(["--timeout", "soon", "--provider", "faux", "go"])
        .assert()
        .code(2);
    let output = ws
        .faux(json!([{"text": "x"}]))
        .args(["--tools", "read_file,shell", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr_lines(&output).last().unwrap(),
        "leash: unknown tool 'shell' in --tools (known: read_file, list_dir, grep, find, git, write_file, edit_file, bash with --allow-exec, or none)"
    );
}

#[test]
fn an_invalid_script_is_a_usage_error_naming_the_problem() {
    let ws = workspace();
    let output = ws
        .faux(json!([{"txt": "typo"}]))
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let last = stderr_lines(&output).last().unwrap().clone();
    assert!(last.contains("unknown field `txt`"), "{last}");
}

#[test]
fn a_root_that_does_not_exist_is_a_usage_error() {
    let ws = workspace();
    let output = ws
        .faux(json!([{"text": "x"}]))
        .args(["--root", "no/such/dir", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr_lines(&output)
            .last()
            .unwrap()
            .starts_with("leash: invalid --root no/such/dir")
    );
}

// ---------------------------------------------------------------- formats

#[test]
fn output_json_is_one_object_with_the_result_fields() {
    let ws = workspace();
    let output = ws
        .faux(seed_script())
        .args(["--no-stdin", "--output", "json", "-q", SEED_PROMPT])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stderr.is_empty(), "quiet run wrote to stderr");
    let text = String::from_utf8(output.stdout).unwrap();
    assert_eq!(text.lines().count(), 1);
    let result: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(result["status"], "ok");
    assert_eq!(result["exitCode"], 0);
    assert_eq!(result["reply"], seed_reply().as_str());
    assert_eq!(result["stopReason"], "stop");
    assert_eq!(result["turns"], 2);
    assert_eq!(result["provider"], "faux");
    assert_eq!(result["model"], "faux");
    assert!(result["durationMs"].is_u64());
    assert!(result["usage"]["totalTokens"].as_u64().unwrap() > 0);
    assert!(result.get("errorMessage").is_none());
}

#[test]
fn output_json_reports_failures_too() {
    let ws = workspace();
    let output = ws
        .faux(json!([{"error": "boom"}]))
        .args(["--output", "json", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["status"], "error");
    assert_eq!(result["exitCode"], 1);
    assert_eq!(result["errorMessage"], "boom");
    assert_eq!(result["stopReason"], "error");
}

/// A timed-out run's `errorMessage` says it timed out, as `message` does,
/// not the cut stream's "Operation aborted" (docs/src/events.md "The JSON result").
#[test]
fn output_json_on_a_timeout_says_timed_out() {
    let ws = workspace();
    let output = ws
        .faux(json!([{"text": "never", "delayMs": 30000}]))
        .args(["--timeout", "300ms", "--output", "json", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(124));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["status"], "timeout");
    assert_eq!(result["stopReason"], "aborted");
    let error = result["errorMessage"].as_str().unwrap();
    assert!(error.starts_with("timed out after 300ms"), "{error}");
    assert_eq!(result["errorMessage"], result["message"]);
}

#[test]
fn events_jsonl_are_json_lines_from_agent_start_to_run_end() {
    let ws = workspace();
    let output = ws
        .faux(seed_script())
        .args(["--events", "jsonl", SEED_PROMPT])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let events: Vec<Value> = String::from_utf8(output.stderr)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        events[0],
        json!({"type": "agent_start", "schemaVersion": 1})
    );
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for expected in [
        "turn_start",
        "message_start",
        "message_update",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "turn_end",
        "agent_end",
    ] {
        assert!(types.contains(&expected), "{expected} missing");
    }
    let update = events
        .iter()
        .find(|e| e["type"] == "message_update")
        .unwrap();
    assert!(update["assistantMessageEvent"]["contentIndex"].is_u64());
    assert!(
        update.get("message").is_none(),
        "updates must not repeat the message"
    );
    let start = events
        .iter()
        .find(|e| e["type"] == "tool_execution_start")
        .unwrap();
    assert_eq!(start["toolCallId"], "call_1");
    assert_eq!(start["toolName"], "read_file");
    assert_eq!(start["args"], json!({"path": "sample.ts"}));
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["isError"], false);
    assert!(end["durationMs"].is_u64());
    let turn_end = events.iter().find(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(turn_end["toolResults"].as_array().unwrap().len(), 1);
    assert_eq!(turn_end["message"]["stopReason"], "toolUse");
    let agent_end = events.iter().find(|e| e["type"] == "agent_end").unwrap();
    assert_eq!(agent_end["messages"].as_array().unwrap().len(), 4);
    let run_end = events.last().unwrap();
    assert_eq!(run_end["type"], "run_end");
    assert_eq!(run_end["status"], "ok");
    assert_eq!(run_end["exitCode"], 0);
    assert_eq!(run_end["turns"], 2);
    assert!(run_end["usage"]["input"].is_u64());
    assert!(run_end["durationMs"].is_u64());
    assert!(run_end["message"].is_string());
}

#[test]
fn with_jsonl_events_the_last_line_of_a_failure_is_run_end() {
    let ws = workspace();
    let output = ws
        .faux(json!([{"text": "cut", "stop": "length"}]))
        .args(["--events", "jsonl", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(5));
    let last: Value = serde_json::from_str(stderr_lines(&output).last().unwrap()).unwrap();
    assert_eq!(last["type"], "run_end");
    assert_eq!(last["status"], "length");
    assert_eq!(last["exitCode"], 5);
    assert_eq!(
        last["message"],
        "the answer was cut off by the output token limit"
    );
}

#[test]
fn help_lists_the_exit_codes_and_version_prints() {
    let ws = workspace();
    let output = ws.leash().arg("--help").output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let help = String::from_utf8(output.stdout).unwrap();
    for row in [
        "0    ok",
        "3    turn_limit",
        "4    terminated",
        "5    length",
        "124  timeout",
        "130  interrupted",
    ] {
        assert!(help.contains(row), "help lacks {row}");
    }
    let version = ws.leash().arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8(version.stdout).unwrap(),
        format!("leash {}\n", env!("CARGO_PKG_VERSION"))
    );
}
