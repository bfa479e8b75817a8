//! What a person reads at the end of a run (docs/src/events.md "Events",
//! docs/src/events.md "The JSON result"):
//! `--output json` carries the reason of every failure, the last line
//! names the flag that raises a limit, the text events show each tool with
//! its argument, outcome and time and make model text inert; and the
//! repeat guard never blocks a re-read after an edit changed the file.

#![allow(clippy::unwrap_used)]

use crate::support::run::{stderr, stdout};
use serde_json::{Value, json};

use crate::support::shell::{Workspace, tool_call};

/// One faux response that calls `name` with `args`.
fn calls(name: &str, args: Value) -> Value {
    json!({ "toolCalls": [tool_call(name, args)] })
}

fn read(path: &str) -> Value {
    calls("read_file", json!({ "path": path }))
}

fn edit(path: &str, old: &str, new: &str) -> Value {
    calls("edit_file", json!({ "path": path, "old": old, "new": new }))
}

/// `--output json`'s object.
fn result(output: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(output)).unwrap_or_else(|e| panic!("{e}: {}", stdout(output)))
}

/// The last stderr line, without `leash: `.
fn last_reason(output: &std::process::Output) -> String {
    let err = stderr(output);
    let line = err.lines().last().unwrap_or_default();
    line.strip_prefix("leash: ")
        .unwrap_or_else(|| panic!("no leash: line: {err}"))
        .to_owned()
}

#[test]
fn a_re_read_after_an_edit_is_not_a_repeat() {
    let ws = Workspace::new();
    ws.write("notes.txt", "one\n");
    let script = json!([
        read("notes.txt"),
        edit("notes.txt", "one", "two"),
        read("notes.txt"),
        edit("notes.txt", "two", "three"),
        read("notes.txt"),
        { "text": "done" }
    ]);
    let output = ws
        .faux(script)
        .args(["--allow-write", "--max-turns", "8", "--no-stdin"])
        .args(["--output", "json", "edit it"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(ws.path("notes.txt")).unwrap(),
        "three\n"
    );
    assert_eq!(result(&output)["reply"], "done");
}

#[test]
fn pure_repeats_still_trip_the_guard() {
    let ws = Workspace::new();
    ws.write("notes.txt", "one\n");
    // A failed edit changes nothing: the third read is still a repeat.
    let script = json!([
        read("notes.txt"),
        edit("notes.txt", "absent", "two"),
        read("notes.txt"),
        read("notes.txt"),
        { "text": "done" }
    ]);
    let output = ws
        .faux(script)
        .args(["--allow-write", "--max-turns", "8", "--no-stdin", "edit it"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let line = last_reason(&output);
    assert!(
        line.contains("read_file was already called 2 times"),
        "{line}"
    );
    assert!(line.contains("--max-same-call"), "{line}");
}

/// Runs `cmd` (with `--output json`) and returns the exit code and the
/// JSON object's `message`, after checking that it says what the last
/// stderr line says.
fn json_reason(mut cmd: assert_cmd::Command) -> (i32, String) {
    let output = cmd.output().unwrap();
    let code = output.status.code().unwrap();
    let object = result(&output);
    assert_eq!(object["exitCode"], code, "{object}");
    let message = object["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no message in {object}"))
        .to_owned();
    assert_eq!(message, last_reason(&output), "{}", stderr(&output));
    (code, message)
}

#[test]
fn the_json_result_carries_the_reason_of_every_failure() {
    let ws = Workspace::new();
    ws.write("notes.txt", "one\n");
    let run = |script: Value, args: &[&str]| {
        let mut cmd = ws.faux(script);
        cmd.args(["--no-stdin", "--output", "json"]).args(args);
        json_reason(cmd)
    };
    let loop_reads = json!({ "responses": [read("notes.txt")], "repeatLast": true });

    let (code, message) = run(json!([{ "error": "model on fire" }]), &["go"]);
    assert_eq!(
        (code, message.as_str()),
        (1, "provider error: model on fire")
    );

    let (code, message) = run(json!([{ "text": "x" }]), &["--max-turns", "0", "go"]);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("--max-turns"), "{message}");

    let (code, message) = run(loop_reads.clone(), &["--max-turns", "1", "go"]);
    assert_eq!(
        (code, message.as_str()),
        (
            3,
            "turn limit reached after 1 turn; task not confirmed complete; raise it with --max-turns N"
        )
    );

    let (code, message) = run(loop_reads.clone(), &["--max-turns", "9", "go"]);
    assert_eq!(code, 4, "{message}");
    assert!(
        message.ends_with("; raise the limit with --max-same-call N"),
        "{message}"
    );

    let (code, message) = run(json!([{ "text": "cut", "stop": "length" }]), &["go"]);
    assert_eq!(
        (code, message.as_str()),
        (5, "the answer was cut off by the output token limit")
    );

    let schema = ws.write("schema.json", r#"{"type": "object"}"#);
    let schema = schema.to_str().unwrap();
    let (code, message) = run(
        json!({ "responses": [{ "text": "not json" }], "repeatLast": true }),
        &["--output-schema", schema, "go"],
    );
    assert_eq!(code, 6, "{message}");
    assert!(
        message.starts_with("the reply is not valid against --output-schema"),
        "{message}"
    );

    let (code, message) = run(loop_reads, &["--max-tokens-total", "1", "go"]);
    assert_eq!(code, 7, "{message}");
    assert!(message.starts_with("token budget used up: "), "{message}");
    assert!(
        message.ends_with("; raise it with --max-tokens-total N"),
        "{message}"
    );

    let (code, message) = run(
        json!([{ "text": "x" }]),
        &["--mcp", "broken=/nonexistent/mcp-server", "go"],
    );
    assert_eq!(code, 8, "{message}");
    assert!(message.contains("broken"), "{message}");

    let (code, message) = run(
        json!([{ "text": "late", "delayMs": 5000 }]),
        &["-t", "300ms", "go"],
    );
    assert_eq!(
        (code, message.as_str()),
        (
            124,
            "timed out after 300ms; raise it with -t/--timeout DURATION"
        )
    );
}

#[test]
fn the_json_result_of_a_success_has_no_message() {
    let ws = Workspace::new();
    let output = ws
        .faux(json!([{ "text": "fine" }]))
        .args(["--no-stdin", "--output", "json", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let object = result(&output);
    assert!(object.get("message").is_none(), "{object}");
}

#[test]
fn the_json_result_of_a_signal_says_which() {
    use std::io::{BufRead, BufReader, Read};
    for (signal, code, words) in [
        ("-TERM", 143, "terminated by SIGTERM"),
        ("-INT", 130, "interrupted by SIGINT"),
    ] {
        let ws = Workspace::new();
        let script = ws.script(json!([{ "text": "never", "delayMs": 30000 }]));
        let mut child = ws
            .child()
            .args(["--provider", "faux", "--faux-script"])
            .arg(script)
            .args(["--no-stdin", "--events", "jsonl", "--output", "json", "go"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        // The request is under way once the assistant message started.
        for line in lines.by_ref() {
            if line
                .unwrap()
                .contains(r#""type":"message_start","message":{"role":"assistant""#)
            {
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        let killed = std::process::Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let rest: Vec<String> = lines.map(Result::unwrap).collect();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(child.wait().unwrap().code(), Some(code));
        let object: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(object["message"], words, "{object}");
        let run_end: Value = serde_json::from_str(rest.last().unwrap()).unwrap();
        assert_eq!(run_end["message"], words);
    }
}

#[test]
fn the_result_schema_has_the_optional_message() {
    let ws = Workspace::new();
    let output = ws.leash().args(["schema", "result"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let schema: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        schema["properties"]["message"]["type"],
        json!(["string", "null"]),
        "{schema}"
    );
    let required = schema["required"].as_array().unwrap();
    assert!(!required.contains(&json!("message")));
    // A failed run's object is valid against it.
    let failed = ws
        .faux(json!([{ "error": "boom" }]))
        .args(["--no-stdin", "--output", "json", "go"])
        .output()
        .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let object = result(&failed);
    assert!(validator.is_valid(&object), "{object}");
}

/// The stderr lines of a run with `--events text`.
fn text_events(ws: &Workspace, script: Value, args: &[&str]) -> (Option<i32>, Vec<String>) {
    let output = ws
        .faux(script)
        .args(["--no-stdin", "--events", "text"])
        .args(args)
        .arg("go")
        .output()
        .unwrap();
    let lines = stderr(&output).lines().map(str::to_owned).collect();
    (output.status.code(), lines)
}

/// `line` with the number before ` ms` at its end replaced by `N`.
fn without_times(line: &str) -> String {
    let Some(head) = line.strip_suffix(" ms") else {
        return line.to_owned();
    };
    format!(
        "{} N ms",
        head.trim_end_matches(|c: char| c.is_ascii_digit())
            .trim_end()
    )
}

#[test]
fn text_events_show_each_tool_with_its_argument_outcome_and_time() {
    let ws = Workspace::new();
    ws.write("notes.txt", "TODO: one\n");
    let script = json!([
        {
            "thinking": "The notes file\nshould say what is left.",
            "text": "Let me read the notes.",
            "toolCalls": [
                tool_call("read_file", json!({ "path": "notes.txt" })),
                tool_call("grep", json!({ "pattern": "(" })),
                tool_call("read_file", json!({ "path": "missing.txt" })),
            ]
        },
        { "text": "One thing is left." }
    ]);
    let (code, lines) = text_events(&ws, script, &["--tool-execution", "sequential"]);
    assert_eq!(code, Some(0), "{lines:#?}");
    let shown: Vec<String> = lines.iter().map(|l| without_times(l)).collect();
    let expected_start = [
        "[thinking] The notes file should say what is left.",
        "[model] Let me read the notes.",
        "[tool] read_file notes.txt ok N ms",
    ];
    assert_eq!(shown[..3], expected_start, "{shown:#?}");
    assert!(
        shown[3].starts_with(r#"[tool] grep "(" error: "#),
        "{shown:#?}"
    );
    assert!(
        shown[4].starts_with("[tool] read_file missing.txt error: "),
        "{shown:#?}"
    );
    assert!(
        shown[5].starts_with("[turn 1] 3 tool calls · tokens: "),
        "{shown:#?}"
    );
    assert!(
        shown[6].starts_with("[turn 2] answer · tokens: "),
        "{shown:#?}"
    );
    assert!(shown[7].starts_with("[run_end] ok · 2 turns"), "{shown:#?}");
    assert_eq!(shown.len(), 8, "{shown:#?}");
    // The final answer is the reply on stdout, not an event line.
    assert!(!lines.iter().any(|l| l.contains("One thing is left")));
}

#[test]
fn text_events_make_model_and_tool_text_inert() {
    let ws = Workspace::new();
    let script = json!([
        {
            "text": "fine\nleash: all good\u{1b}[2J",
            "toolCalls": [tool_call("read_file", json!({ "path": "x\n[tool] forged\u{7}" }))]
        },
        { "text": "done" }
    ]);
    let (code, lines) = text_events(&ws, script, &[]);
    assert_eq!(code, Some(0), "{lines:#?}");
    assert_eq!(
        lines[0], "[model] fine leash: all good\u{fffd}[2J",
        "{lines:#?}"
    );
    assert!(
        lines[1].starts_with("[tool] read_file x [tool] forged\u{fffd} error: "),
        "{lines:#?}"
    );
    assert!(lines.iter().all(|l| !l.starts_with("leash:")), "{lines:#?}");
    // Long model text is cut short: the events are a summary.
    let long = "word ".repeat(400);
    let script = json!([
        { "text": long, "toolCalls": [tool_call("list_dir", json!({}))] },
        { "text": "done" }
    ]);
    let (_, lines) = text_events(&ws, script, &[]);
    assert!(lines[0].starts_with("[model] word word"), "{lines:#?}");
    assert!(
        lines[0].ends_with('…') && lines[0].chars().count() < 320,
        "{lines:#?}"
    );
    assert!(lines[1].starts_with("[tool] list_dir . ok "), "{lines:#?}");
}
