//! `reply` is exactly what `--output text` prints (docs/src/events.md "The JSON
//! result"): after a turn limit, a terminated batch, a timeout, a provider
//! error or an interrupt text mode prints nothing, and so `reply` is empty;
//! what the model was saying when the run stopped is `lastAssistantText`.
//! Batch result lines follow the same rule.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::shell::Workspace;

const HALFWAY: &str = "Looking around.";

/// A turn that says something half-way and asks for a tool.
fn looking_around() -> Value {
    json!({"text": HALFWAY, "toolCalls": [{"name": "list_dir", "arguments": {}}]})
}

/// Each non-ok ending a script can give: (name, flags, script, exit code).
fn endings() -> Vec<(&'static str, Vec<&'static str>, Value, i32)> {
    vec![
        (
            "turn_limit",
            vec!["--max-turns", "1"],
            json!([looking_around()]),
            3,
        ),
        (
            "terminated",
            vec!["--max-same-call", "1"],
            json!({"responses": [looking_around()], "repeatLast": true}),
            4,
        ),
        (
            // The timer fires while a hook holds the tool's result.
            "timeout",
            vec!["-t", "1", "--hook", "after-tool-call=sleep 5"],
            json!([looking_around(), {"text": "late"}]),
            124,
        ),
        (
            "error",
            vec![],
            json!([{"text": HALFWAY, "error": "boom"}]),
            1,
        ),
    ]
}

fn json_result(stdout: &[u8]) -> Value {
    serde_json::from_slice(stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(stdout)))
}

#[test]
fn reply_is_empty_on_every_non_ok_ending_as_text_mode_prints_nothing() {
    for (status, flags, script, code) in endings() {
        let ws = Workspace::new();
        let text = ws
            .faux(script.clone())
            .args(&flags)
            .arg("go")
            .output()
            .unwrap();
        assert_eq!(text.status.code(), Some(code), "{status}: {text:?}");
        assert_eq!(text.stdout, b"", "{status}: text mode prints nothing");
        let json = ws
            .faux(script)
            .args(&flags)
            .args(["--output", "json", "go"])
            .output()
            .unwrap();
        assert_eq!(json.status.code(), Some(code), "{status}");
        let result = json_result(&json.stdout);
        assert_eq!(result["status"], status, "{result}");
        assert_eq!(result["reply"], "", "{status}: {result}");
        assert_eq!(result["lastAssistantText"], HALFWAY, "{status}: {result}");
    }
}

#[test]
fn reply_is_empty_after_an_interrupt() {
    let ws = Workspace::new();
    let script = ws.script(json!([looking_around(), {"text": "late"}]));
    let transcript = ws.path("t.jsonl");
    let child = ws
        .child()
        .args(["--provider", "faux", "--faux-script"])
        .arg(&script)
        .args(["--hook", "after-tool-call=sleep 20"])
        .arg("--transcript")
        .arg(&transcript)
        .args(["--output", "json", "go"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the half-way text is in the transcript.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&transcript).is_ok_and(|t| t.contains(HALFWAY)) {
        assert!(Instant::now() < deadline, "the first turn never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    let result = json_result(&output.stdout);
    assert_eq!(result["status"], "interrupted");
    assert_eq!(result["reply"], "");
    assert_eq!(result["lastAssistantText"], HALFWAY);
}

#[test]
fn an_answer_is_both_reply_and_last_assistant_text() {
    let ws = Workspace::new();
    let output = ws
        .faux(json!([{"text": "Done."}]))
        .args(["--output", "json", "go"])
        .output()
        .unwrap();
    let result = json_result(&output.stdout);
    assert_eq!(
        (&result["reply"], &result["lastAssistantText"]),
        (&json!("Done."), &json!("Done."))
    );
}

#[test]
fn batch_lines_follow_the_same_rule() {
    for (status, flags, script, _) in endings() {
        let ws = Workspace::new();
        let input = ws.write("items.jsonl", "{\"id\": \"a\", \"prompt\": \"go\"}\n");
        let script = ws.script(script);
        let output = ws
            .leash()
            .arg("batch")
            .arg(&input)
            .args(["--provider", "faux", "--faux-script"])
            .arg(&script)
            .args(&flags)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line: Value = serde_json::from_str(stdout.lines().next().unwrap_or("{}")).unwrap();
        assert_eq!(line["status"], status, "{line}");
        assert_eq!(line["reply"], "", "{status}: {line}");
        assert_eq!(line["lastAssistantText"], HALFWAY, "{status}: {line}");
    }
}
