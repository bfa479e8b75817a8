//! What a `before_tool_call` or `after_tool_call` hook decides
//! (docs/src/hooks.md "Hooks"): allow, block with a reason, terminate the batch, replace the
//! arguments or the result, and exit 2 as a block.

use super::*;

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
