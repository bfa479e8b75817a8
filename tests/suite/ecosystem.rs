//! leash among shells, terminals and pipelines (issue 7), on the real
//! binary and the scripted model: the published schemas against real
//! output, completions and the man page, the command-word rule, `--help`,
//! configuration layers and `leash config`, terminal manners on a pipe,
//! and `--output-last-message`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

use crate::support::run::{stderr, stdout};
use crate::support::shell;

use std::collections::BTreeSet;

use serde_json::{Value, json};
use shell::{Workspace, copy_sample, has, tool_call};

// ---------------------------------------------------------------- schemas

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
    ] {
        assert!(!events.is_valid(&broken), "{broken}");
    }
    assert!(!result.is_valid(&json!({"status": "ok", "reply": 3})));
}

// ---------------------------------------------------- completions and man

#[test]
fn completions_for_every_shell_and_a_man_page() {
    let ws = Workspace::new();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let output = ws.leash().args(["completions", shell]).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{shell}: {output:?}");
        let script = stdout(&output);
        for word in ["max-turns", "output-last-message", "completions", "schema"] {
            assert!(script.contains(word), "{shell} completions lack {word}");
        }
    }
    let bash = ws.leash().args(["completions", "bash"]).output().unwrap();
    let path = ws.write("leash.bash", &stdout(&bash));
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    assert!(check.status.success(), "{check:?}");
    if has("zsh") {
        let zsh = ws.leash().args(["completions", "zsh"]).output().unwrap();
        let path = ws.write("_leash", &stdout(&zsh));
        let check = std::process::Command::new("zsh")
            .arg("-n")
            .arg(&path)
            .output()
            .unwrap();
        assert!(check.status.success(), "{check:?}");
    }
    let output = ws.leash().arg("man").output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let page = stdout(&output);
    assert!(page.contains(".TH leash 1"), "{page}");
    assert!(page.contains(".SH \"EXIT STATUS\""));
    assert!(page.contains("LEASH_MAX_TURNS"));
    // Bad arguments to a command are usage errors.
    let output = ws.leash().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let output = ws.leash().args(["schema", "nope"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_command_word_is_a_prompt_unless_it_comes_first() {
    let ws = Workspace::new();
    let transcript = ws.path("transcript.jsonl");
    for args in [vec!["--", "man"], vec!["-q", "man"], vec!["schema events"]] {
        let output = ws
            .faux(json!([{"text": "ok"}]))
            .arg("--transcript")
            .arg(&transcript)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{args:?}: {output:?}");
        assert_eq!(stdout(&output), "ok\n");
        let first = std::fs::read_to_string(&transcript).unwrap();
        let first: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
        assert_eq!(
            first["content"][0]["text"],
            *args.last().unwrap(),
            "{args:?}"
        );
    }
}

#[test]
fn help_is_short_complete_and_the_same_three_ways() {
    let ws = Workspace::new();
    let help = |args: &[&str]| {
        let output = ws.leash().args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        stdout(&output)
    };
    // `-h`: one screen (tests/suite/first_minutes), the essential flags,
    // the commands and the exit codes by name.
    let short = help(&["-h"]);
    assert!(short.lines().count() <= 24, "{short}");
    // `--help` and `help`: the same full text, with every flag, what each
    // exit code means and where settings come from.
    let long = help(&["--help"]);
    assert_eq!(long, help(&["help"]));
    assert!(
        long.lines().all(|line| line.chars().count() <= 100),
        "{long}"
    );
    for word in [
        "-q, --quiet",
        "--allow-write",
        "--max-turns <N>",
        "config",
        "completions SHELL",
        "man",
        "schema KIND",
    ] {
        assert!(short.contains(word), "{word} missing from -h:\n{short}");
        assert!(long.contains(word), "{word} missing from --help:\n{long}");
    }
    for word in [
        "--color <WHEN>",
        "--stream",
        "--output-last-message <FILE>",
        "--hook <EVENT=COMMAND>",
        "--mcp-config <FILE>",
        "--max-cost <USD>",
        "config [OPTIONS]",
    ] {
        assert!(!short.contains(word), "{word} in -h:\n{short}");
        assert!(long.contains(word), "{word} missing from --help:\n{long}");
    }
    assert!(short.contains("124 timeout"), "{short}");
    assert!(short.contains("leash --help"), "{short}");
    for word in ["124  timeout", "8    mcp", "config.toml", "NO_COLOR"] {
        assert!(long.contains(word), "{word} missing:\n{long}");
    }
    assert!(help(&["help", "config"]).contains("Usage: leash config [OPTIONS]"));
}

// ---------------------------------------------------------- configuration

/// A script that calls a tool once, then answers: exit 3 at `max-turns = 1`,
/// exit 0 above.
fn two_turns() -> Value {
    json!([
        {"toolCalls": [tool_call("list_dir", json!({}))]},
        {"text": "done"}
    ])
}

fn code(output: &std::process::Output) -> i32 {
    output.status.code().unwrap()
}

#[test]
fn settings_layer_flag_then_env_then_dotenv_then_file_then_default() {
    let ws = Workspace::new();
    // Default: 4 turns.
    assert_eq!(code(&ws.faux(two_turns()).arg("go").output().unwrap()), 0);
    // Config file below the default's place: 1 turn.
    ws.config_file("max-turns = 1\n");
    assert_eq!(code(&ws.faux(two_turns()).arg("go").output().unwrap()), 3);
    // A .env supplies only keys and model selection, not max-turns: its
    // layer is tested with LEASH_MODEL in dotenv_trust.rs.
    // The environment above .env.
    let output = ws
        .faux(two_turns())
        .env("LEASH_MAX_TURNS", "1")
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(code(&output), 3);
    // The flag above all.
    let output = ws
        .faux(two_turns())
        .env("LEASH_MAX_TURNS", "1")
        .args(["--max-turns", "4", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0);
}

/// `leash config` as `key -> (value, source)`.
fn config_listing(output: &std::process::Output) -> Vec<(String, String, String)> {
    stdout(output)
        .lines()
        .filter(|line| {
            !line.starts_with("# leash")
                && !line.starts_with("# (")
                && !line.starts_with("# config file")
                && !line.starts_with("# .env")
        })
        .map(|line| {
            let (left, source) = line.split_once("  # ").unwrap();
            let left = left.trim_end();
            let (key, value) = match left.strip_prefix("# ") {
                // The key, listed as a comment.
                Some(key) if key.contains(" = ") => {
                    let (key, value) = key.split_once(" = ").unwrap();
                    (key.to_owned(), value.to_owned())
                }
                Some(key) => (key.to_owned(), String::new()),
                None => {
                    let (key, value) = left.split_once(" = ").unwrap();
                    (key.to_owned(), value.to_owned())
                }
            };
            (key, value, source.to_owned())
        })
        .collect()
}

fn setting<'a>(listing: &'a [(String, String, String)], key: &str) -> (&'a str, &'a str) {
    listing
        .iter()
        .find(|(k, _, _)| k == key)
        .map(|(_, value, source)| (value.as_str(), source.as_str()))
        .unwrap_or_else(|| panic!("{key} not listed"))
}

#[test]
fn leash_config_names_every_source_and_never_prints_the_key() {
    let ws = Workspace::new();
    let config = ws.config_file(
        "model = \"gpt-4.1\"\nmax-turns = 8\nretries = 5\ntimeout = \"1m\"\nopenai-api-key = \"sk-from-file\"\n",
    );
    ws.write(
        ".env",
        "LEASH_MODEL=gpt-from-dotenv\nOPENAI_API_KEY=sk-live-secret-in-dotenv\n",
    );
    let output = ws
        .leash()
        .args(["config", "--max-turns", "6"])
        .env("LEASH_RETRIES", "3")
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{output:?}");
    let text = stdout(&output);
    assert!(
        text.contains(&format!("# config file: {}", config.display())),
        "{text}"
    );
    let listing = config_listing(&output);
    assert_eq!(setting(&listing, "max-turns"), ("6", "flag"));
    assert_eq!(setting(&listing, "retries"), ("3", "env LEASH_RETRIES"));
    assert_eq!(setting(&listing, "timeout"), ("\"1m\"", "config file"));
    assert_eq!(
        setting(&listing, "model"),
        ("\"gpt-from-dotenv\"", ".env LEASH_MODEL")
    );
    assert_eq!(setting(&listing, "max-same-call"), ("2", "default"));
    assert_eq!(setting(&listing, "provider"), ("\"openai\"", "default"));
    assert_eq!(
        setting(&listing, "api-key"),
        ("\"***\"", ".env OPENAI_API_KEY")
    );
    let everything = format!("{text}{}", stderr(&output));
    assert!(!everything.contains("sk-live-secret"), "{everything}");
    assert!(!everything.contains("sk-from-file"), "{everything}");
    // Without .env the file's key is used, still redacted.
    std::fs::remove_file(ws.path(".env")).unwrap();
    let output = ws.leash().arg("config").output().unwrap();
    let listing = config_listing(&output);
    assert_eq!(setting(&listing, "api-key"), ("\"***\"", "config file"));
    assert!(!stdout(&output).contains("sk-from-file"));
}

#[test]
fn leash_config_reports_what_the_run_would_refuse() {
    let ws = Workspace::new();
    let output = ws
        .leash()
        .args(["config", "-m", "claude-haiku-4-5"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    let listing = config_listing(&output);
    assert_eq!(
        setting(&listing, "provider"),
        ("\"anthropic\"", "default: a claude* model")
    );
    assert_eq!(setting(&listing, "api-key").0, "");
    assert!(
        stderr(&output).starts_with("leash: ANTHROPIC_API_KEY is not set"),
        "{output:?}"
    );
}

#[test]
fn a_broken_config_file_is_a_usage_error_in_the_chosen_format() {
    let ws = Workspace::new();
    let path = ws.config_file("max_turns = 3\n");
    let output = ws.faux(json!([{"text": "hi"}])).arg("hi").output().unwrap();
    assert_eq!(code(&output), 2);
    let last = stderr(&output).lines().last().unwrap().to_owned();
    assert_eq!(
        last,
        format!(
            "leash: config file {}: unknown key 'max_turns' (did you mean 'max-turns'?) \
             (keys are the long flag names, e.g. max-turns, and api-key, openai-api-key, \
             anthropic-api-key, openai-base-url, anthropic-base-url)",
            path.display()
        )
    );
    ws.config_file("max-turns = \"many\"\n");
    let output = ws
        .faux(json!([{"text": "hi"}]))
        .args(["--output", "json", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(result["status"], "usage");
    assert!(
        result["errorMessage"]
            .as_str()
            .unwrap()
            .contains("max-turns: must be a whole number"),
        "{result}"
    );
}

// ------------------------------------------------------ terminal manners

#[test]
fn a_piped_stderr_gets_no_colour_no_indicator_and_no_stream() {
    let ws = Workspace::new();
    let script = json!([
        {"text": "Looking.", "toolCalls": [tool_call("read_file", json!({"path": "missing"}))], "delayMs": 50},
        {"text": "A streamed answer.", "error": "then it broke", "chunkDelayMs": 10}
    ]);
    let plain = ws.faux(script.clone()).arg("hi").output().unwrap();
    assert_eq!(code(&plain), 1);
    let text = stderr(&plain);
    assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text:?}");
    // --stream and --color auto change nothing on a pipe, nor do NO_COLOR or TERM.
    for args in [
        vec!["--stream"],
        vec!["--color", "auto"],
        vec!["--color", "never"],
    ] {
        let output = ws
            .faux(script.clone())
            .args(&args)
            .env("TERM", "xterm-256color")
            .arg("hi")
            .output()
            .unwrap();
        let other = stderr(&output);
        // Durations vary: `12ms`, `3 ms`, `(3 ms)`.
        let strip = |s: &str| {
            let words: Vec<&str> = s.split_whitespace().collect();
            words
                .iter()
                .enumerate()
                .filter(|(i, word)| {
                    let number = word
                        .trim_start_matches('(')
                        .starts_with(|c: char| c.is_ascii_digit());
                    let unit = words.get(i + 1).is_some_and(|next| next.starts_with("ms"));
                    !(number && (unit || word.contains("ms")))
                })
                .map(|(_, word)| *word)
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(strip(&other), strip(&text), "{args:?}");
    }
    // --color always colours even a pipe, and even with NO_COLOR set.
    let output = ws
        .faux(script)
        .args(["--color", "always", "hi"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let coloured = stderr(&output);
    assert!(coloured.contains("\u{1b}["), "{coloured:?}");
    assert!(coloured.lines().last().unwrap().contains("leash: "));
    // Stdout holds the reply alone in every case (here: nothing, it failed).
    assert_eq!(stdout(&output), "");
}

// ------------------------------------------------- --output-last-message

#[test]
fn the_last_message_file_holds_the_reply_and_only_after_success() {
    let ws = Workspace::new();
    let file = ws.write("answer.md", "a stale answer from yesterday\n");
    let output = ws
        .faux(json!([{"text": "Fresh answer."}]))
        .arg("--output-last-message")
        .arg(&file)
        .args(["--output", "json", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "Fresh answer.\n");
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(result["reply"], "Fresh answer.");

    std::fs::write(&file, "stale\n").unwrap();
    let output = ws
        .faux(json!([{"text": "half", "error": "boom"}]))
        .env("LEASH_OUTPUT_LAST_MESSAGE", &file)
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(code(&output), 1);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "");

    let output = ws
        .faux(json!([{"text": "never"}]))
        .args(["--output-last-message", "no/such/dir/answer.md", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output)
            .lines()
            .last()
            .unwrap()
            .starts_with("leash: cannot write --output-last-message no/such/dir/answer.md: "),
        "{output:?}"
    );
}
