//! Where hooks come from (docs/src/hooks.md "Hooks", docs/src/configuration.md "Configuration"): bad hook
//! flags are one-line usage errors, the config file's `[hooks]` table, and
//! `LEASH_HOOK` against the config file.

use super::*;

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
