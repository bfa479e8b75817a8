//! Flags and their values (docs/src/configuration.md "Configuration", README "Exit codes"): a bad
//! flag keeps the failure contract, a repeated flag's last value wins, a
//! system-prompt file flag beats the other layers, a system message may
//! start with `-`, fractional timeouts and boolean words are accepted,
//! and a control character in the key is named without showing it.

use super::*;

#[test]
fn a_bad_flag_keeps_the_failure_contract() {
    let ws = Workspace::new();
    let output = ws.leash().args(["--bogus", "hi"]).output().unwrap();
    assert_eq!(code(&output), 2);
    assert!(output.stdout.is_empty());
    assert!(
        last_line(&output).starts_with("leash: unexpected argument '--bogus' found"),
        "{}",
        stderr(&output)
    );
    // --events jsonl and --output json are honoured although parsing failed
    // (after the bad flag, and with `=`).
    let output = ws
        .leash()
        .args([
            "--max-turns",
            "x",
            "--events=jsonl",
            "--output",
            "json",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    let end: Value = serde_json::from_str(&last_line(&output)).unwrap();
    assert_eq!(end["type"], "run_end");
    assert_eq!(end["exitCode"], 2);
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid value 'x' for '--max-turns <N>'"),
        "{end}"
    );
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["status"], "usage");
    // A flag's value is not taken for a flag; from the environment too.
    let output = ws
        .leash()
        .env("LEASH_OUTPUT", "json")
        .args(["-s", "--events", "--bogus", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(last_line(&output).starts_with("leash: "));
    assert_eq!(
        serde_json::from_slice::<Value>(&output.stdout).unwrap()["status"],
        "usage"
    );
    // --help and --version still print and succeed.
    ws.leash().arg("--version").assert().code(0);
}

#[test]
fn a_repeated_flag_the_last_one_wins() {
    let ws = Workspace::new();
    let two_turns = json!([
        {"toolCalls": [tool_call("list_dir", json!({}))]},
        {"text": "done"}
    ]);
    ws.faux(two_turns.clone())
        .args(["--max-turns", "1", "--max-turns", "4", "--no-stdin", "go"])
        .assert()
        .code(0)
        .stdout("done\n");
    ws.faux(two_turns)
        .args(["--max-turns", "4", "--max-turns", "1", "--no-stdin", "go"])
        .assert()
        .code(3);
    // Repeatable flags still add up.
    let transcript = ws.path("t.jsonl");
    ws.faux(json!([{"text": "1"}, {"text": "2"}, {"text": "3"}]))
        .args(["--follow-up", "a", "--follow-up", "b", "--no-stdin", "go"])
        .arg("--transcript")
        .arg(&transcript)
        .assert()
        .code(0)
        .stdout("3\n");
}

#[test]
fn a_system_file_flag_beats_leash_system_from_the_environment_or_the_config_file() {
    let ws = Workspace::new();
    let file = ws.write("system.md", "from the file");
    let script = json!([{"text": "ok"}]);
    ws.faux(script.clone())
        .env("LEASH_SYSTEM", "from the environment")
        .arg("--system-file")
        .arg(&file)
        .args(["--no-stdin", "hi"])
        .assert()
        .code(0);
    ws.config_file("system = \"from the config file\"\n");
    let output = ws
        .leash()
        .args(["config", "--system-file"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        listed(&output, "system").contains("(overridden by system-file)"),
        "{}",
        stdout(&output)
    );
    ws.faux(script)
        .arg("--system-file")
        .arg(&file)
        .args(["--no-stdin", "hi"])
        .assert()
        .code(0);
    // Both on one command line is a mistake, said so.
    let output = ws
        .faux(json!([{"text": "ok"}]))
        .args(["-s", "x", "--system-file"])
        .arg(&file)
        .args(["--no-stdin", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert_eq!(
        last_line(&output),
        "leash: --system and --system-file cannot be used together; pass one"
    );
}

#[test]
fn a_fractional_timeout_and_boolean_words_are_accepted() {
    let ws = Workspace::new();
    ws.faux(json!([{"text": "ok"}]))
        .args(["-t", "0.5", "--no-stdin", "hi"])
        .assert()
        .code(0)
        .stdout("ok\n");
    for value in ["1", "yes", "true", "0", "no", "false"] {
        ws.faux(json!([{"text": "ok"}]))
            .env("LEASH_STREAM", value)
            .args(["--no-stdin", "hi"])
            .assert()
            .code(0);
    }
    let output = ws
        .leash()
        .env("LEASH_STREAM", "1")
        .args(["config", "--base-url", "http://localhost:1"])
        .output()
        .unwrap();
    assert!(listed(&output, "stream").starts_with("stream = true"));
}

#[test]
fn a_control_character_in_the_key_is_named_and_not_shown() {
    let ws = Workspace::new();
    let output = ws
        .leash()
        .env("OPENAI_API_KEY", "sk-secret-part\nrest")
        .args(["--base-url", "http://127.0.0.1:9", "--no-stdin", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert_eq!(
        last_line(&output),
        "leash: the key from env OPENAI_API_KEY holds a control character (U+000A); \
         check for a stray newline or escape in it"
    );
    assert!(!format!("{output:?}").contains("secret-part"));
}

#[test]
fn leash_configs_last_line_is_made_inert_like_a_runs() {
    // A path is the user's, but it reaches the terminal: an escape
    // sequence or a line break in it must not drive the terminal or
    // forge a second `leash:` line.
    let ws = Workspace::new();
    let path = "/nonexistent/\u{1b}[31mred\nleash: forged.json";
    let output = ws
        .leash()
        .args(["config", "--mcp-config", path, "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    let text = stderr(&output);
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("leash:")).count(),
        1,
        "{text:?}"
    );
    assert!(
        last_line(&output).starts_with(
            "leash: cannot read --mcp-config /nonexistent/\u{fffd}[31mred leash: forged.json"
        ),
        "{text:?}"
    );
}

#[test]
fn a_system_message_may_start_with_a_hyphen() {
    // A Markdown bullet list (the GitHub Action's `system` input,
    // docs/src/github-action.md "What the Action checks"), after a space or an `=`.
    let ws = Workspace::new();
    let transcript = ws.path("t.jsonl");
    let cases: [&[&str]; 3] = [
        &["-s", "- Read first.\n- Never invent."],
        &["--system", "- Read first.\n- Never invent."],
        &["--system=- Read first.\n- Never invent."],
    ];
    for args in cases {
        let _ = std::fs::remove_file(&transcript);
        ws.faux(json!([{"text": "ok"}]))
            .args(args)
            .arg("--transcript")
            .arg(&transcript)
            .args(["--no-stdin", "hi"])
            .assert()
            .code(0)
            .stdout("ok\n");
        let text = std::fs::read_to_string(&transcript).unwrap();
        let session: serde_json::Value =
            serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(session["system"], "- Read first.\n- Never invent.");
    }
}
