//! The `finish_turn` hook (docs/src/hooks.md "Hooks"): continue or end the run, and a
//! failed `finish_turn` hook ends it with exit 4, said once.

use super::*;

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
