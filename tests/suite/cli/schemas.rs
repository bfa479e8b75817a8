//! The published JSON schemas (docs/src/shells.md "JSON Schemas"): real events and
//! results of every kind of run match them, and they refuse what leash
//! never writes.

use crate::support::run::{stderr, stdout};
use crate::support::shell;

use std::collections::BTreeSet;

use serde_json::{Value, json};
use shell::{Workspace, copy_sample, tool_call};

fn validator(kind: &str) -> jsonschema::Validator {
    let ws = Workspace::new();
    let output = ws.leash().args(["schema", kind]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let schema: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    jsonschema::validator_for(&schema).unwrap()
}

fn errors(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect()
}

/// One run of every kind, each with the exit code it must end with.
fn runs(ws: &Workspace) -> Vec<(&'static str, Vec<String>, Value, i32)> {
    let schema = ws.write("answer.schema.json", r#"{"type": "object"}"#);
    let schema = schema.to_str().unwrap().to_owned();
    let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        (
            "success with a tool",
            args(&["Explain sample.ts"]),
            json!([
                {"text": "Reading.", "toolCalls": [tool_call("read_file", json!({"path": "sample.ts"}))]},
                {"text": "It returns undefined."}
            ]),
            0,
        ),
        (
            "tool errors",
            args(&["Read a missing file"]),
            json!([
                {"toolCalls": [
                    tool_call("read_file", json!({"path": "missing.ts"})),
                    tool_call("no_such_tool", json!({})),
                    {"name": "read_file", "argumentsRaw": "{not json"}
                ]},
                {"text": "Those failed."}
            ]),
            0,
        ),
        (
            "provider error",
            args(&["hi"]),
            json!([{"text": "Partial", "error": "upstream exploded"}]),
            1,
        ),
        (
            "timeout",
            args(&["--timeout", "300ms", "hi"]),
            json!([{"text": "too late", "delayMs": 5000}]),
            124,
        ),
        (
            "turn limit",
            args(&["--max-turns", "2", "list forever"]),
            json!({"responses": [{"toolCalls": [tool_call("list_dir", json!({}))]}], "repeatLast": true}),
            3,
        ),
        (
            "terminated batch",
            args(&["--max-same-call", "0", "list"]),
            json!([{"toolCalls": [tool_call("list_dir", json!({}))]}]),
            4,
        ),
        (
            "thinking, cut off",
            args(&["think"]),
            json!([{"thinking": "Let me think.", "text": "The answer is", "stop": "length"}]),
            5,
        ),
        (
            "output schema",
            args(&["--output-schema", &schema, "json please"]),
            json!([{"text": "{\"answer\": 42}"}]),
            0,
        ),
        (
            "reasoning effort",
            args(&["--reasoning-effort", "high", "hi"]),
            json!([{"text": "ok"}]),
            0,
        ),
        (
            "usage error",
            args(&["--timeout", "soon", "hi"]),
            json!([{"text": "never asked"}]),
            2,
        ),
    ]
}

#[test]
fn real_events_and_results_of_every_kind_of_run_match_the_published_schemas() {
    let events = validator("events");
    let result = validator("result");
    let ws = Workspace::new();
    copy_sample(ws.dir.path());
    let mut seen = BTreeSet::new();
    for (name, args, script, code) in runs(&ws) {
        let output = ws
            .faux(script)
            .args(["--events", "jsonl", "--output", "json"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(code), "{name}: {output:?}");
        let stderr = stderr(&output);
        assert!(!stderr.is_empty(), "{name}: no events");
        for line in stderr.lines() {
            let event: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {line}"));
            let problems = errors(&events, &event);
            assert!(problems.is_empty(), "{name}: {line}\n{problems:#?}");
            seen.insert(event["type"].as_str().unwrap().to_owned());
        }
        let last: Value = serde_json::from_str(stderr.lines().last().unwrap()).unwrap();
        assert_eq!(last["type"], "run_end", "{name}");
        let object: Value = serde_json::from_str(&stdout(&output)).unwrap();
        let problems = errors(&result, &object);
        assert!(problems.is_empty(), "{name}: {object}\n{problems:#?}");
        assert_eq!(object["exitCode"], code, "{name}");
    }
    for kind in [
        "agent_start",
        "turn_start",
        "message_start",
        "message_update",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "turn_end",
        "agent_end",
        "run_end",
    ] {
        assert!(seen.contains(kind), "no {kind} event was checked");
    }
}

#[test]
fn the_schemas_refuse_what_leash_never_writes() {
    let events = validator("events");
    let result = validator("result");
    let run_end = json!({
        "type": "run_end", "status": "ok", "exitCode": 0, "message": "", "turns": 1,
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
        "turnUsage": [{"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2}],
        "durationMs": 5
    });
    assert!(events.is_valid(&run_end));
    let mut priced = run_end.clone();
    priced["cost"] = json!(0.5);
    priced["turnUsage"][0]["cost"] = json!(0.5);
    assert!(events.is_valid(&priced));
    for broken in [
        json!({"type": "no_such_event"}),
        json!({"type": "run_end", "status": "ok"}),
        {
            let mut bad = run_end.clone();
            bad["status"] = json!("fine");
            bad
        },
        json!({"type": "agent_start", "schemaVersion": "1"}),
        // The library's system and custom roles never reach an event line.
        json!({"type": "message_end", "message": {"role": "system", "content": "x", "timestamp": 0}}),
        json!({"type": "message_end", "message": {"role": "notification", "text": "x"}}),
    ] {
        assert!(!events.is_valid(&broken), "{broken}");
    }
    assert!(!result.is_valid(&json!({"status": "ok", "reply": 3})));
    // `reasoningEffort` is a level's name; `off` is never written.
    let mut ok = json!({
        "status": "ok", "exitCode": 0, "reply": "hi", "lastAssistantText": "hi",
        "stopReason": "stop", "turns": 1, "usage": run_end["usage"], "turnUsage": run_end["turnUsage"], "durationMs": 3,
        "provider": "faux", "model": "faux", "changedFiles": [], "attachments": []
    });
    let mut effort = run_end.clone();
    for (level, valid) in [("high", true), ("off", false), ("extreme", false)] {
        effort["reasoningEffort"] = json!(level);
        ok["reasoningEffort"] = json!(level);
        assert_eq!(events.is_valid(&effort), valid, "{effort}");
        assert_eq!(result.is_valid(&ok), valid, "{ok}");
    }
}
