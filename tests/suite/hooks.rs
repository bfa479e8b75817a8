//! `--hook`, `--hook-timeout`, `--deny-tool` and `--allow-tool` (README
//! "Hooks"): the real binary with hook scripts written to the workspace
//! (sh and python3), on the faux model and against the OpenAI and
//! Anthropic mocks. Every failure of a hook must fail closed and show on
//! the event stream; a hook must never hang the run.

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

#[test]
fn an_allowing_hook_sees_the_call_and_lets_it_run() {
    let ws = Workspace::new();
    let seen = ws.path("seen.json");
    let hook = sh_hook(
        &ws,
        "allow.sh",
        "before-tool-call",
        &format!("cat > '{}'\necho '{{}}'", seen.display()),
    );
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![call("read_file", json!({"path": "sample.ts"}))]),
        &["--hook", &hook],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "done\n");
    let ends = tool_ends(&output);
    assert!(!ends[0].1 && ends[0].0.contains("first"), "{ends:?}");
    let input: Value = serde_json::from_str(&std::fs::read_to_string(seen).unwrap()).unwrap();
    assert_eq!(input["event"], "before-tool-call");
    assert_eq!(input["turn"], 1);
    assert_eq!(input["toolCall"]["name"], "read_file");
    assert_eq!(input["toolCall"]["arguments"], json!({"path": "sample.ts"}));
    assert!(input["toolCall"]["id"].is_string());
    assert!(input["usage"]["totalTokens"].is_u64());
    assert_eq!(
        input["cwd"],
        ws.path("").display().to_string().trim_end_matches('/')
    );
}

#[test]
fn a_block_answers_the_call_with_the_reason_and_the_run_goes_on() {
    let ws = Workspace::new();
    let hook = sh_hook(
        &ws,
        "block.sh",
        "before-tool-call",
        r#"echo '{"block": true, "reason": "no reading today"}'"#,
    );
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![call("read_file", json!({"path": "sample.ts"}))]),
        &["--hook", &hook],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(tool_ends(&output), [("no reading today".to_owned(), true)]);
    assert!(hook_failures(&output).is_empty());
}

#[test]
fn block_with_terminate_on_every_call_of_a_batch_exits_4() {
    let ws = Workspace::new();
    let hook = sh_hook(
        &ws,
        "stop.sh",
        "before-tool-call",
        r#"echo '{"block": true, "reason": "stop here", "terminate": true}'"#,
    );
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![
            call("read_file", json!({"path": "sample.ts"})),
            call("list_dir", json!({})),
        ]),
        &["--hook", &hook],
    );
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert_eq!(
        tool_ends(&output),
        [
            ("stop here".to_owned(), true),
            ("stop here".to_owned(), true)
        ]
    );
    let end = events(&output).pop().unwrap();
    assert_eq!(end["status"], "terminated");
    assert!(
        end["message"].as_str().unwrap().ends_with(": stop here"),
        "{end}"
    );
}

#[test]
fn terminate_on_only_part_of_a_batch_does_not_end_the_run() {
    let ws = Workspace::new();
    let hook = sh_hook(
        &ws,
        "some.sh",
        "before-tool-call",
        r#"grep -q list_dir && echo '{"block": true, "terminate": true}' || true"#,
    );
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![
            call("read_file", json!({"path": "sample.ts"})),
            call("list_dir", json!({})),
        ]),
        &["--hook", &hook],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let ends = tool_ends(&output);
    assert!(!ends[0].1);
    assert!(
        ends[1].1
            && ends[1]
                .0
                .starts_with("blocked by hook #1 (before-tool-call="),
        "{ends:?}"
    );
}

#[test]
fn a_hook_may_replace_the_arguments_and_the_next_hook_sees_them() {
    if !crate::support::shell::has("python3") {
        return;
    }
    let ws = Workspace::new();
    ws.write("root/other.txt", "REPLACED CONTENT\n");
    let rewrite = script(
        &ws,
        "rewrite.py",
        "#!/usr/bin/env python3\nimport json, sys\n\
         call = json.load(sys.stdin)['toolCall']\n\
         if call['arguments'].get('path') == 'sample.ts':\n\
         \x20   print(json.dumps({'arguments': {'path': 'other.txt'}}))\n",
    );
    let seen = ws.path("second.json");
    let second = sh_hook(
        &ws,
        "second.sh",
        "before-tool-call",
        &format!("cat > '{}'", seen.display()),
    );
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![call("read_file", json!({"path": "sample.ts"}))]),
        &[
            "--hook",
            &format!("before-tool-call=python3 {}", rewrite.display()),
            "--hook",
            &second,
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let ends = tool_ends(&output);
    assert!(
        ends[0].0.contains("REPLACED CONTENT") && !ends[0].1,
        "{ends:?}"
    );
    let input: Value = serde_json::from_str(&std::fs::read_to_string(seen).unwrap()).unwrap();
    assert_eq!(input["toolCall"]["arguments"], json!({"path": "other.txt"}));
}

#[test]
fn exit_2_blocks_with_stderr_as_the_reason() {
    let ws = Workspace::new();
    let hook = sh_hook(
        &ws,
        "exit2.sh",
        "before-tool-call",
        "echo '  policy says no  ' >&2\nexit 2",
    );
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![call("read_file", json!({"path": "sample.ts"}))]),
        &["--hook", &hook],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(tool_ends(&output), [("policy says no".to_owned(), true)]);
    assert!(hook_failures(&output).is_empty());
}

#[test]
fn a_crashing_or_babbling_hook_fails_closed_naming_the_hook() {
    let ws = Workspace::new();
    for (body, problem) in [
        (
            "echo boom >&2\nexit 1",
            "failed: exited with status 1: boom",
        ),
        ("kill -KILL $$", "failed: was killed by a signal"),
        ("echo sure", "failed: its output is not a JSON object"),
        (
            r#"echo '{"blocked": true}'"#,
            "failed: its output is not the JSON",
        ),
    ] {
        let hook = sh_hook(&ws, "crash.sh", "before-tool-call", body);
        let (output, _) = faux_run(
            &ws,
            calls_then_done(vec![call("read_file", json!({"path": "sample.ts"}))]),
            &["--hook", &hook],
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let ends = tool_ends(&output);
        let (text, is_error) = &ends[0];
        assert!(*is_error, "{body}: {text}");
        assert!(text.starts_with("hook #1 (before-tool-call="), "{text}");
        assert!(text.contains("crash.sh) "), "{text}");
        assert!(text.contains(problem), "{body}: {text}");
        assert!(text.ends_with("; the call was blocked"), "{text}");
        let failures = hook_failures(&output);
        assert_eq!(failures.len(), 1, "{body}");
        assert_eq!(failures[0]["event"], "before-tool-call");
        assert_eq!(failures[0]["reason"], text.as_str());
        assert!(failures[0]["toolCallId"].is_string());
    }
    // A program that is gone by the time it runs (hook #1 removes #2)
    // fails closed too.
    let second = sh_hook(&ws, "second.sh", "before-tool-call", "echo '{}'");
    let first = sh_hook(
        &ws,
        "first.sh",
        "before-tool-call",
        &format!("rm '{}'", ws.path("second.sh").display()),
    );
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![call("list_dir", json!({}))]),
        &["--hook", &first, "--hook", &second],
    );
    let ends = tool_ends(&output);
    assert!(
        ends[0].0.starts_with("hook #2 (before-tool-call="),
        "{ends:?}"
    );
    assert!(
        ends[0].1 && ends[0].0.contains("failed: could not start: "),
        "{ends:?}"
    );
}

#[test]
fn the_text_event_stream_shows_a_failed_hook() {
    let ws = Workspace::new();
    let hook = sh_hook(&ws, "crash.sh", "before-tool-call", "exit 7");
    let mut cmd = ws.faux(calls_then_done(vec![call("list_dir", json!({}))]));
    cmd.args(["--hook", &hook, "go"]);
    let (output, _) = run(&mut cmd);
    assert_eq!(output.status.code(), Some(0));
    let err = stderr(&output);
    assert!(
        err.lines()
            .any(|line| line.starts_with("leash: hook #1 (before-tool-call=")
                && line.ends_with("failed: exited with status 7; the call was blocked")),
        "{err}"
    );
}

#[test]
fn a_hanging_hook_is_ended_by_its_timeout_and_the_run_goes_on() {
    let ws = Workspace::new();
    let hook = sh_hook(&ws, "hang.sh", "before-tool-call", "sleep 30");
    let (output, elapsed) = faux_run(
        &ws,
        calls_then_done(vec![call("list_dir", json!({}))]),
        &["--hook", &hook, "--hook-timeout", "500ms"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    let ends = tool_ends(&output);
    assert!(
        ends[0].1 && ends[0].0.contains("failed: timed out after 500ms"),
        "{ends:?}"
    );
    assert_eq!(hook_failures(&output).len(), 1);
}

#[test]
fn the_run_timeout_ends_a_run_whose_hook_hangs_and_kills_the_hook() {
    let ws = Workspace::new();
    let pid_file = ws.path("pid");
    let hook = sh_hook(
        &ws,
        "hang.sh",
        "before-tool-call",
        &format!("sleep 60 &\necho $! > '{}'\nwait", pid_file.display()),
    );
    let mut cmd = ws.faux(calls_then_done(vec![call("list_dir", json!({}))]));
    cmd.args([
        "--hook",
        &hook,
        "--hook-timeout",
        "60s",
        "--timeout",
        "1s",
        "go",
    ]);
    let (output, elapsed) = run(&mut cmd);
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(124), "{}", stderr(&output));
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    assert!(last_line(&output).contains("timed out after 1s"));
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(
        gone(&pid),
        "the hook's sleep {} outlived the run",
        pid.trim()
    );
}

#[test]
fn after_tool_call_replaces_the_result_and_fails_closed() {
    let ws = Workspace::new();
    let seen = ws.path("after.json");
    let hook = sh_hook(
        &ws,
        "after.sh",
        "after-tool-call",
        &format!(
            "cat > '{}'\necho '{{\"content\": \"[withheld by policy]\", \"isError\": true}}'",
            seen.display()
        ),
    );
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![call("read_file", json!({"path": "sample.ts"}))]),
        &["--hook", &hook],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        tool_ends(&output),
        [("[withheld by policy]".to_owned(), true)]
    );
    let input: Value = serde_json::from_str(&std::fs::read_to_string(seen).unwrap()).unwrap();
    assert_eq!(input["event"], "after-tool-call");
    assert!(
        input["result"]["content"]
            .as_str()
            .unwrap()
            .contains("first")
    );
    assert_eq!(input["result"]["isError"], false);

    let crash = sh_hook(&ws, "after-crash.sh", "after-tool-call", "exit 1");
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![call("read_file", json!({"path": "sample.ts"}))]),
        &["--hook", &crash],
    );
    let ends = tool_ends(&output);
    assert!(ends[0].1, "{ends:?}");
    assert!(
        ends[0].0.starts_with("hook #1 (after-tool-call="),
        "{ends:?}"
    );
    assert!(
        ends[0]
            .0
            .ends_with("failed: exited with status 1; its result was withheld")
    );
    assert!(
        !ends[0].0.contains("first"),
        "the tool's output leaked: {ends:?}"
    );
    assert_eq!(hook_failures(&output)[0]["event"], "after-tool-call");
}

#[test]
fn finish_turn_can_continue_and_end() {
    if !crate::support::shell::has("python3") {
        return;
    }
    let ws = Workspace::new();
    let gate = script(
        &ws,
        "gate.py",
        "#!/usr/bin/env python3\nimport json, sys\nturn = json.load(sys.stdin)\n\
         if turn['turn'] == 1 and turn['message']['role'] == 'assistant':\n\
         \x20   print(json.dumps({'action': 'continue'}))\n",
    );
    let hook = format!("finish-turn={}", gate.display());
    let two = json!([{"text": "first"}, {"text": "second"}]);
    let (output, _) = faux_run(&ws, two.clone(), &["--hook", &hook]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "second\n");
    // `continue` never goes past the turn limit: the answer is not
    // confirmed complete (exit 3).
    let (output, _) = faux_run(&ws, two.clone(), &["--hook", &hook, "--max-turns", "1"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let end = events(&output).pop().unwrap();
    assert_eq!(
        end["message"],
        "turn limit reached after 1 turn; task not confirmed complete; raise it with --max-turns N"
    );

    // Exit 2 blocks the end, as a stop hook's does elsewhere: one more
    // turn, with stderr as a message for the model.
    let again = sh_hook(
        &ws,
        "again.sh",
        "finish-turn",
        "grep -q '\"turn\":1,' || exit 0\necho 'the tests still fail' >&2\nexit 2",
    );
    let (output, _) = faux_run(&ws, two, &["--hook", &again]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "second\n");
    let users: Vec<Value> = events(&output)
        .into_iter()
        .filter(|event| event["type"] == "message_end" && event["message"]["role"] == "user")
        .map(|event| event["message"]["content"][0]["text"].clone())
        .collect();
    assert_eq!(users, [json!("go"), json!("the tests still fail")]);

    let end = sh_hook(&ws, "end.sh", "finish-turn", r#"echo '{"action": "end"}'"#);
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![call("list_dir", json!({}))]),
        &["--hook", &end],
    );
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let turns = events(&output)
        .iter()
        .filter(|event| event["type"] == "turn_end")
        .count();
    assert_eq!(turns, 1);
}

#[test]
fn a_failed_finish_turn_hook_ends_the_run_with_exit_4() {
    let ws = Workspace::new();
    let hook = sh_hook(
        &ws,
        "gate.sh",
        "finish-turn",
        "echo '{\"action\": \"later\"}'",
    );
    let (output, _) = faux_run(&ws, json!([{"text": "an answer"}]), &["--hook", &hook]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let end = events(&output).pop().unwrap();
    assert_eq!(end["status"], "terminated");
    let message = end["message"].as_str().unwrap();
    assert!(message.contains("hook #1 (finish-turn="), "{message}");
    assert!(message.ends_with("; the run was ended"), "{message}");
    assert_eq!(hook_failures(&output)[0]["event"], "finish-turn");
}

/// With `-q` (`--events none`) a failed `finish-turn` hook is said once,
/// as the last line, not also as an event line before it.
#[test]
fn with_q_a_failed_finish_turn_hook_is_said_once() {
    let ws = Workspace::new();
    let hook = sh_hook(&ws, "gate.sh", "finish-turn", "echo boom >&2; exit 1");
    let mut cmd = ws.faux(json!([{"text": "an answer"}]));
    cmd.args(["-q", "--hook", &hook, "go"]);
    let (output, _) = run(&mut cmd);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let err = stderr(&output);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("leash: hook #1 (finish-turn=")
            && lines[0].ends_with("; the run was ended"),
        "{err}"
    );
}

#[test]
fn deny_and_allow_patterns_block_with_a_stock_reason() {
    let ws = Workspace::new();
    ws.write("root/keys/server.pem", "-----BEGIN PRIVATE KEY-----\n");
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![
            call("read_file", json!({"path": "keys/server.pem"})),
            call("read_file", json!({"path": "sample.ts"})),
            call("list_dir", json!({"path": "keys"})),
        ]),
        &[
            "--deny-tool",
            "read_file(path=**/*.pem)",
            "--deny-tool",
            "list_*",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let ends = tool_ends(&output);
    assert_eq!(
        ends[0],
        (
            "blocked: this call of read_file is denied by --deny-tool read_file(path=**/*.pem); \
             do not retry it"
                .to_owned(),
            true
        )
    );
    assert!(!ends[1].1 && ends[1].0.contains("first"));
    assert!(ends[2].1 && ends[2].0.contains("--deny-tool list_*"));
    assert!(!stderr(&output).contains("BEGIN PRIVATE KEY"));

    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![
            call("read_file", json!({"path": "sample.ts"})),
            call("list_dir", json!({})),
        ]),
        &["--allow-tool", "list_dir"],
    );
    let ends = tool_ends(&output);
    assert!(
        ends[0].1
            && ends[0]
                .0
                .contains("matches no --allow-tool pattern (allowed: list_dir)")
    );
    assert!(!ends[1].1);
}

/// The README's deny recipe judges the path the tool will open, not its
/// spelling: every other way to write a denied path (`./`, a trailing
/// `/`, `//`, `/./`, the absolute path inside the root) is denied too,
/// and an allow pattern lets a spelled-out allowed path through.
#[test]
fn patterns_judge_the_normalised_path_so_no_spelling_bypasses_them() {
    let ws = Workspace::new();
    ws.write("root/keys/server.pem", "-----BEGIN PRIVATE KEY-----\n");
    ws.write("root/x.pem", "-----BEGIN PRIVATE KEY-----\n");
    ws.write("root/secret/s.txt", "TOP-SECRET-TEXT\n");
    ws.write("root/docs/a.md", "docs\n");
    let root = ws.path("root").display().to_string();
    let denied = [
        "x.pem/".to_owned(),
        "./x.pem".to_owned(),
        "keys//server.pem".to_owned(),
        "keys/./server.pem".to_owned(),
        "./keys/server.pem/".to_owned(),
        format!("{root}/keys/server.pem"),
        format!("{root}//x.pem"),
        "./secret/s.txt".to_owned(),
        "secret//s.txt".to_owned(),
        "secret/./s.txt".to_owned(),
        "secret/s.txt/".to_owned(),
        "./secret/./s.txt".to_owned(),
        format!("{root}/secret/s.txt"),
        format!("{root}/./secret/s.txt"),
    ];
    let mut calls: Vec<Value> = denied
        .iter()
        .map(|path| call("read_file", json!({"path": path})))
        .collect();
    calls.push(call("read_file", json!({"path": "./sample.ts"})));
    calls.push(call(
        "read_file",
        json!({"path": format!("{root}/sample.ts")}),
    ));
    let (output, _) = faux_run(
        &ws,
        calls_then_done(calls),
        &[
            "--deny-tool",
            "read_file(path=**/*.pem)",
            "--deny-tool",
            "read_file(path=secret/**)",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let ends = tool_ends(&output);
    assert_eq!(ends.len(), denied.len() + 2);
    for (path, (text, is_error)) in denied.iter().zip(&ends) {
        assert!(
            *is_error && text.contains("is denied by --deny-tool read_file(path="),
            "{path} was not denied: {text}"
        );
    }
    for (text, is_error) in &ends[denied.len()..] {
        assert!(!is_error && text.contains("first"), "{text}");
    }
    let err = stderr(&output);
    assert!(!err.contains("BEGIN PRIVATE KEY") && !err.contains("TOP-SECRET"));

    // Allow patterns see the same normalised path.
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![
            call("read_file", json!({"path": "./docs//a.md"})),
            call("read_file", json!({"path": format!("{root}/docs/a.md")})),
            call("read_file", json!({"path": "docs/../secret/s.txt"})),
            call("list_dir", json!({"path": "docs/"})),
        ]),
        &[
            "--allow-tool",
            "read_file(path=docs/**)",
            "--allow-tool",
            "list_dir(path=docs)",
        ],
    );
    let ends = tool_ends(&output);
    assert!(!ends[0].1 && ends[0].0.contains("docs"), "{:?}", ends[0]);
    assert!(!ends[1].1 && ends[1].0.contains("docs"), "{:?}", ends[1]);
    assert!(ends[2].1, "{:?}", ends[2]);
    assert!(!ends[3].1, "{:?}", ends[3]);
    assert!(!stderr(&output).contains("TOP-SECRET"));
}

/// A checkout can plant a symlink inside the root that leads to what a
/// pattern guards: a pattern judges the file the link leads to.
#[test]
fn patterns_judge_where_a_planted_symlink_leads() {
    let ws = Workspace::new();
    ws.write("root/secret/s.txt", "TOP-SECRET-TEXT\n");
    ws.write("root/docs/a.md", "docs\n");
    std::os::unix::fs::symlink("../secret", ws.path("root/docs/notes")).unwrap();
    std::os::unix::fs::symlink("../secret/s.txt", ws.path("root/docs/key.md")).unwrap();
    let through_links = [
        call("read_file", json!({"path": "docs/notes/s.txt"})),
        call("read_file", json!({"path": "docs/key.md"})),
        call("grep", json!({"pattern": "SECRET", "path": "docs/notes"})),
    ];
    let mut calls = through_links.to_vec();
    calls.push(call("read_file", json!({"path": "docs/a.md"})));
    let (output, _) = faux_run(
        &ws,
        calls_then_done(calls),
        &[
            "--deny-tool",
            "read_file(path=secret/**)",
            "--deny-tool",
            "grep(path=secret)",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let ends = tool_ends(&output);
    for (text, is_error) in &ends[..through_links.len()] {
        assert!(
            *is_error && text.contains("is denied by --deny-tool"),
            "{text}"
        );
    }
    assert!(!ends[3].1 && ends[3].0.contains("docs"), "{:?}", ends[3]);
    assert!(!stderr(&output).contains("TOP-SECRET"));

    // An allow pattern on docs/ lets through only what lies in docs/.
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![
            call("read_file", json!({"path": "docs/notes/s.txt"})),
            call("read_file", json!({"path": "docs/key.md"})),
            call("read_file", json!({"path": "docs/a.md"})),
        ]),
        &["--allow-tool", "read_file(path=docs/**)"],
    );
    let ends = tool_ends(&output);
    assert!(
        ends[0].1 && ends[0].0.contains("matches no --allow-tool"),
        "{:?}",
        ends[0]
    );
    assert!(
        ends[1].1 && ends[1].0.contains("matches no --allow-tool"),
        "{:?}",
        ends[1]
    );
    assert!(!ends[2].1, "{:?}", ends[2]);
    assert!(!stderr(&output).contains("TOP-SECRET"));
}

#[test]
fn a_replacement_cannot_slip_past_a_deny_pattern() {
    let ws = Workspace::new();
    ws.write("root/a.pem", "secret\n");
    let hook = sh_hook(
        &ws,
        "sneak.sh",
        "before-tool-call",
        r#"echo '{"arguments": {"path": "a.pem"}}'"#,
    );
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![call("read_file", json!({"path": "sample.ts"}))]),
        &["--deny-tool", "read_file(path=**/*.pem)", "--hook", &hook],
    );
    let ends = tool_ends(&output);
    assert!(
        ends[0].1 && ends[0].0.contains("denied by --deny-tool"),
        "{ends:?}"
    );
}

#[test]
fn bad_hook_flags_are_one_line_usage_errors() {
    let ws = Workspace::new();
    for (args, expected) in [
        (
            vec!["--hook", "./policy.sh"],
            "invalid --hook './policy.sh': expected EVENT=COMMAND",
        ),
        (vec!["--hook", "before=./x"], "unknown event 'before'"),
        (
            vec!["--hook", "finish-turn=./missing.sh --x"],
            "invalid --hook 'finish-turn=./missing.sh --x': ./missing.sh is not an executable file",
        ),
        (
            vec!["--deny-tool", "read_file(path=*.pem"],
            "invalid --deny-tool 'read_file(path=*.pem'",
        ),
        (vec!["--allow-tool", "read_file([)"], "invalid --allow-tool"),
        (vec!["--hook-timeout", "0"], "invalid --hook-timeout '0'"),
    ] {
        let mut cmd = ws.faux(json!([{"text": "x"}]));
        cmd.args(&args).arg("go");
        let (output, _) = run(&mut cmd);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        let err = stderr(&output);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

#[test]
fn hooks_come_from_the_config_file_as_a_table() {
    let ws = Workspace::new();
    let block = script(
        &ws,
        "block.sh",
        "#!/bin/sh\necho '{\"block\": true, \"reason\": \"from the config file\"}'\n",
    );
    ws.write(
        "config/leash/config.toml",
        format!(
            "hook-timeout = \"5s\"\ndeny-tool = [\"grep\"]\n[hook]\nbefore-tool-call = [\"{}\"]\n",
            block.display()
        ),
    );
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![
            call("grep", json!({"pattern": "x"})),
            call("list_dir", json!({})),
        ]),
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let ends = tool_ends(&output);
    assert!(ends[0].0.contains("--deny-tool grep"), "{ends:?}");
    assert_eq!(ends[1], ("from the config file".to_owned(), true));
}

#[tokio::test(flavor = "multi_thread")]
async fn on_openai_a_block_reason_reaches_the_next_request() {
    let server = MockServer::start().await;
    let first = openai::body(
        &[
            openai::role(),
            openai::call_start(0, "call_1", "read_file"),
            openai::call_args(0, "{\"path\": \"sample.ts\"}"),
            openai::finish("tool_calls"),
        ],
        true,
    );
    serve_in_order(
        &server,
        "/v1/chat/completions",
        vec![first, openai::text_reply(&["ok"])],
    )
    .await;
    let ws = Workspace::new();
    let hook = sh_hook(
        &ws,
        "exit2.sh",
        "before-tool-call",
        "echo 'not on Fridays' >&2; exit 2",
    );
    let mut cmd = ws.http(
        "openai",
        &format!("{}/v1", server.uri()),
        "sk-test-KEY-1234567890",
    );
    cmd.args(["--hook", &hook, "--timeout", "20s", "go"]);
    let output = tokio::task::spawn_blocking(move || run(&mut cmd).0)
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let tool = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool["tool_call_id"], "call_1");
    assert!(
        tool["content"].to_string().contains("not on Fridays"),
        "{tool}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn on_anthropic_the_tool_runs_with_replaced_arguments_and_the_key_stays_out() {
    let server = MockServer::start().await;
    let first = [
        anthropic::message_start(10),
        anthropic::tool_use_block(0, "toolu_1", "read_file", &["{\"path\": \"sample.ts\"}"]),
        anthropic::message_delta("tool_use", 5),
        anthropic::message_stop(),
    ]
    .concat();
    serve_in_order(
        &server,
        "/v1/messages",
        vec![first, anthropic::text_reply("ok")],
    )
    .await;
    let ws = Workspace::new();
    ws.write("root/other.txt", "REPLACED CONTENT\n");
    let env_seen = ws.path("env.txt");
    let hook = sh_hook(
        &ws,
        "rewrite.sh",
        "before-tool-call",
        &format!(
            "env > '{}'\necho '{{\"arguments\": {{\"path\": \"other.txt\"}}}}'",
            env_seen.display()
        ),
    );
    let key = "sk-ant-test-KEY-1234567890";
    let mut cmd = ws.http("anthropic", &server.uri(), key);
    cmd.args(["--hook", &hook, "--timeout", "20s", "go"]);
    let output = tokio::task::spawn_blocking(move || run(&mut cmd).0)
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let text = bodies[1]["messages"].to_string();
    assert!(text.contains("REPLACED CONTENT"), "{text}");
    let env = std::fs::read_to_string(env_seen).unwrap();
    assert!(!env.contains(key), "the key reached the hook's environment");
}

/// Whether the process `pid` is gone (or a zombie about to be reaped by
/// init), waiting up to a second.
fn gone(pid: &str) -> bool {
    let stat = PathBuf::from(format!("/proc/{}/stat", pid.trim()));
    (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        std::fs::read_to_string(&stat).map_or(true, |text| text.contains(") Z"))
    })
}

#[test]
fn sigterm_ends_a_run_whose_hook_hangs_at_once_and_kills_the_hook() {
    let ws = Workspace::new();
    let pid_file = ws.path("pid");
    let hook = sh_hook(
        &ws,
        "hang.sh",
        "after-tool-call",
        &format!("sleep 60 &\necho $! > '{}'\nwait", pid_file.display()),
    );
    let mut cmd = ws.faux(calls_then_done(vec![call("list_dir", json!({}))]));
    cmd.args([
        "--hook",
        &hook,
        "--hook-timeout",
        "60s",
        "--timeout",
        "60s",
        "go",
    ]);
    let child = cmd.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while std::fs::read_to_string(&pid_file).map_or(true, |pid| !pid.ends_with('\n')) {
        assert!(
            std::time::Instant::now() < deadline,
            "the hook never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let signalled = std::time::Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(143), "{}", stderr(&output));
    assert!(
        signalled.elapsed() < Duration::from_secs(2),
        "{:?}",
        signalled.elapsed()
    );
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(
        gone(&pid),
        "the hook's sleep {} outlived the run",
        pid.trim()
    );
}

#[test]
fn leash_hook_holds_one_hook_and_beats_the_config_file_as_a_whole() {
    let ws = Workspace::new();
    let from_file = sh_hook(
        &ws,
        "file.sh",
        "before-tool-call",
        r#"echo '{"block": true, "reason": "from the file"}'"#,
    );
    let from_env = sh_hook(
        &ws,
        "env.sh",
        "before-tool-call",
        r#"echo '{"block": true, "reason": "from LEASH_HOOK"}'"#,
    );
    ws.write(
        "config/leash/config.toml",
        format!("hook = [{}]\n", serde_json::to_string(&from_file).unwrap()),
    );
    let mut cmd = ws.faux(calls_then_done(vec![call("list_dir", json!({}))]));
    cmd.env("LEASH_HOOK", &from_env)
        .args(["--events", "jsonl", "go"]);
    let (output, _) = run(&mut cmd);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(tool_ends(&output), [("from LEASH_HOOK".to_owned(), true)]);
}

/// The code block after `<!-- recipe: NAME -->` in the README.
fn recipe(name: &str) -> String {
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    let marker = format!("<!-- recipe: {name} -->");
    let after = &readme[readme.find(&marker).unwrap()..];
    let body = &after[after.find("```").unwrap()..];
    let start = body.find('\n').unwrap() + 1;
    let end = body[start..].find("```").unwrap();
    body[start..start + end].to_owned()
}

#[test]
fn the_readme_pem_recipes_block_the_key_and_let_the_rest_through() {
    use crate::support::shell;
    let mut recipes = vec!["pem-deny"];
    if shell::has("python3") {
        recipes.push("pem-hook");
    }
    for name in recipes {
        let ws = shell::Workspace::new();
        ws.write("keys/server.pem", "-----BEGIN PRIVATE KEY-----\n");
        ws.write("tls.md", "TLS terminates at the proxy.\n");
        ws.write("policy.py", &recipe("pem-policy"));
        let script = ws.script(calls_then_done(vec![
            call("read_file", json!({"path": "keys/server.pem"})),
            call("read_file", json!({"path": "tls.md"})),
        ]));
        let output = ws
            .bash(&recipe(name))
            .env("LEASH_FAUX_SCRIPT", script)
            .env("LEASH_EVENTS", "jsonl")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{name}: {}", stderr(&output));
        let ends = tool_ends(&output);
        assert!(ends[0].1, "{name}: {ends:?}");
        assert!(!ends[0].0.contains("PRIVATE KEY"), "{name}: {ends:?}");
        assert!(
            !ends[1].1 && ends[1].0.contains("TLS terminates"),
            "{name}: {ends:?}"
        );
        assert!(!stderr(&output).contains("PRIVATE KEY"), "{name}");
    }
}

/// A hook has no key in its environment (not under another name either),
/// and a key it finds elsewhere (here: a file) and writes into a reason,
/// a result or its stderr reaches neither the model nor the events.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_a_hook_writes_reaches_neither_the_model_nor_the_events() {
    const KEY: &str = "sk-test-HOOK-LEAK-0123456789";
    let server = MockServer::start().await;
    let first = openai::body(
        &[
            openai::role(),
            openai::call_start(0, "call_1", "read_file"),
            openai::call_args(0, "{\"path\": \"sample.ts\"}"),
            openai::call_start(1, "call_2", "list_dir"),
            openai::call_args(1, "{}"),
            openai::finish("tool_calls"),
        ],
        true,
    );
    serve_in_order(
        &server,
        "/v1/chat/completions",
        vec![first, openai::text_reply(&["ok"])],
    )
    .await;
    let ws = Workspace::new();
    let stash = ws.write("stash.txt", KEY);
    // read_file is blocked with the key as the reason; list_dir's result
    // is replaced by the key; and the environment is searched for it.
    let before = sh_hook(
        &ws,
        "before.sh",
        "before-tool-call",
        &format!(
            "input=$(cat)\ncase \"$input\" in *read_file*) \
             printf '{{\"block\": true, \"reason\": \"%s and env: %s\"}}' \"$(cat {})\" \"$(env | grep -c HOOK-LEAK)\";; esac",
            stash.display()
        ),
    );
    let after = sh_hook(
        &ws,
        "after.sh",
        "after-tool-call",
        &format!(
            "cat >/dev/null; printf '{{\"content\": \"%s\"}}' \"$(cat {})\"",
            stash.display()
        ),
    );
    let mut cmd = ws.http("openai", &format!("{}/v1", server.uri()), KEY);
    cmd.env("COPY_OF_THE_KEY", KEY).args([
        "--hook",
        &before,
        "--hook",
        &after,
        "--events",
        "jsonl",
        "--timeout",
        "20s",
        "go",
    ]);
    let output = tokio::task::spawn_blocking(move || run(&mut cmd).0)
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let second = bodies[1].to_string();
    assert!(!second.contains(KEY), "{second}");
    // The block reason arrived, key hidden, and no variable held the key.
    assert!(second.contains("*** and env: 0"), "{second}");
    assert!(!stderr(&output).contains(KEY));
    assert!(!stdout(&output).contains(KEY));
}

#[test]
fn a_hook_s_grandchild_is_gone_after_exits_0_124_130_and_143() {
    for exit in [0, 124, 130, 143] {
        let ws = Workspace::new();
        let pid_file = ws.path("pid");
        let body = if exit == 0 {
            // Answers at once, leaving a helper behind.
            format!(
                "sleep 300 >/dev/null 2>&1 &\necho $! > '{}'\necho '{{}}'",
                pid_file.display()
            )
        } else {
            format!("sleep 300 &\necho $! > '{}'\nwait", pid_file.display())
        };
        let hook = sh_hook(&ws, "hook.sh", "before-tool-call", &body);
        let mut cmd = ws.faux(calls_then_done(vec![call("list_dir", json!({}))]));
        let timeout = if exit == 124 { "1s" } else { "60s" };
        cmd.args(["--hook", &hook, "--hook-timeout", "60s"])
            .args(["--timeout", timeout, "go"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = cmd.spawn().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        while std::fs::read_to_string(&pid_file).map_or(true, |pid| !pid.ends_with('\n')) {
            assert!(std::time::Instant::now() < deadline, "{exit}: no hook ran");
            std::thread::sleep(Duration::from_millis(20));
        }
        let signal = match exit {
            130 => Some("-INT"),
            143 => Some("-TERM"),
            _ => None,
        };
        if let Some(signal) = signal {
            let sent = std::process::Command::new("kill")
                .args([signal, &child.id().to_string()])
                .status()
                .unwrap();
            assert!(sent.success());
        }
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(exit), "{}", stderr(&output));
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        assert!(
            gone(&pid),
            "{exit}: the hook's sleep {} outlived leash",
            pid.trim()
        );
    }
}
