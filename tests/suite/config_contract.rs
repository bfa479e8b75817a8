//! Issue 11, the configuration side: a `.env` never redirects a key,
//! usage errors keep the failure contract, every file input is bounded,
//! checks happen before stdin is read, and the config file is validated
//! like the flags. The real binary, isolated (support/shell.rs); loopback
//! servers record where a key went (support/hostile.rs).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

use crate::support::hostile;
use crate::support::run::{last_line, stderr, stdout};
use crate::support::shell;

use std::process::Stdio;
use std::time::{Duration, Instant};

use hostile::HostileServer;
use serde_json::{Value, json};
use shell::{Workspace, tool_call};

const KEY: &str = "sk-exported-KEY-7c1d";

/// A server that records the request and answers 400 (not retried).
fn recorder() -> HostileServer {
    HostileServer::always(|_, conn| {
        conn.respond(
            400,
            "application/json",
            br#"{"error":{"message":"recorded","type":"invalid_request_error"}}"#,
        );
    })
}

/// The `Authorization` header of every request `server` read.
fn auth(server: &HostileServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter_map(|request| request.header("authorization"))
        .collect()
}

fn code(output: &std::process::Output) -> i32 {
    output.status.code().unwrap()
}

/// `key = value  # source` of `leash config`, by key (comments included).
fn listed(output: &std::process::Output, key: &str) -> String {
    stdout(output)
        .lines()
        .find(|line| line.starts_with(&format!("{key} ")) || line.starts_with(&format!("# {key} ")))
        .unwrap_or_else(|| panic!("{key} not listed:\n{}", stdout(output)))
        .to_owned()
}

// ------------------------------------------------------------- item 1

#[test]
fn a_dotenv_base_url_never_beats_an_exported_one_or_gets_the_key() {
    let ws = Workspace::new();
    let (good, evil) = (recorder(), recorder());
    ws.write(".env", &format!("LEASH_BASE_URL={}/v1\n", evil.url()));
    let output = ws
        .leash()
        .env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", format!("{}/v1", good.url()))
        .args(["--no-stdin", "-q", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    assert_eq!(evil.connections(), 0);
    assert_eq!(auth(&good), [format!("Bearer {KEY}")]);
}

#[test]
fn a_dotenv_key_never_beats_an_exported_key_of_another_name() {
    let ws = Workspace::new();
    let server = recorder();
    ws.write(".env", "LEASH_API_KEY=sk-planted-in-dotenv\n");
    let output = ws
        .leash()
        .env("OPENAI_API_KEY", KEY)
        .args(["--base-url", &server.url(), "--no-stdin", "-q", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    assert_eq!(auth(&server), [format!("Bearer {KEY}")]);
}

#[test]
fn an_exported_key_never_goes_to_a_base_url_from_dotenv_unless_the_user_says_so() {
    let ws = Workspace::new();
    let evil = recorder();
    ws.write(".env", &format!("LEASH_BASE_URL={}\n", evil.url()));
    let run = |args: &[&str]| {
        ws.leash()
            .env("OPENAI_API_KEY", KEY)
            .args(["--no-stdin", "--events", "jsonl", "--output", "json"])
            .args(args)
            .arg("hi")
            .output()
            .unwrap()
    };
    let output = run(&[]);
    assert_eq!(code(&output), 2);
    assert_eq!(evil.connections(), 0);
    let end: Value = serde_json::from_str(&last_line(&output)).unwrap();
    assert_eq!(end["type"], "run_end");
    let message = end["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "refusing to send the key from env OPENAI_API_KEY to the base URL http://127.0.0.1:"
        ) && message.contains("from .env LEASH_BASE_URL"),
        "{message}"
    );
    assert!(!format!("{output:?}").contains(KEY));
    // The user says so: the flag.
    let output = run(&["--trust-base-url"]);
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    assert_eq!(auth(&evil), [format!("Bearer {KEY}")]);
    // A .env cannot say so for itself.
    ws.write(
        ".env",
        &format!("LEASH_BASE_URL={}\nLEASH_TRUST_BASE_URL=1\n", evil.url()),
    );
    assert_eq!(code(&run(&[])), 2);
    assert_eq!(evil.connections(), 1);
}

#[test]
fn env_file_flags_choose_or_skip_the_dotenv() {
    let ws = Workspace::new();
    ws.write(".env", "LEASH_MODEL=model-7\n");
    let other = ws.write("ci.env", "LEASH_MODEL=model-9\n");
    let config = |args: &[&str], vars: &[(&str, &str)]| {
        let mut cmd = ws.leash();
        cmd.arg("config").args(["--base-url", "http://localhost:1"]);
        cmd.args(args).envs(vars.iter().copied()).output().unwrap()
    };
    let output = config(&[], &[]);
    let read = |path: &std::path::Path| {
        format!(
            "# .env: {} (read as data; uses LEASH_MODEL)",
            path.display()
        )
    };
    assert!(
        stdout(&output).contains(&read(&ws.path(".env").canonicalize().unwrap()))
            || stdout(&output).contains(&read(&ws.path(".env"))),
        "{}",
        stdout(&output)
    );
    assert!(listed(&output, "model").contains("= \"model-7\""));
    let output = config(&["--no-env-file"], &[]);
    assert!(stdout(&output).contains("# .env: not read (--no-env-file)"));
    assert!(listed(&output, "model").contains("# default"));
    let output = config(&[], &[("LEASH_NO_ENV_FILE", "1")]);
    assert!(stdout(&output).contains("# .env: not read (LEASH_NO_ENV_FILE)"));
    let output = config(&["--env-file", other.to_str().unwrap()], &[]);
    assert!(
        listed(&output, "model").contains("= \"model-9\""),
        "{}",
        stdout(&output)
    );
    assert!(listed(&output, "model").contains("# .env LEASH_MODEL"));
    // The flag beats the variable.
    let output = config(
        &["--env-file", other.to_str().unwrap()],
        &[("LEASH_NO_ENV_FILE", "1")],
    );
    assert!(listed(&output, "model").contains("= \"model-9\""));
    // A missing --env-file is a usage error naming it, for runs too.
    let output = ws
        .faux(json!([{"text": "x"}]))
        .args(["--env-file", "missing.env", "--no-stdin", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(
        last_line(&output).starts_with("leash: cannot read the env file missing.env: "),
        "{}",
        stderr(&output)
    );
}

// ------------------------------------------------------------- item 8

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

// ------------------------------------------------------------- item 9

#[test]
fn endless_file_inputs_are_refused_naming_the_file() {
    let ws = Workspace::new();
    let started = Instant::now();
    for flag in ["--system-file", "--output-schema"] {
        let output = ws
            .faux(json!([{"text": "x"}]))
            .args([flag, "/dev/zero", "--no-stdin", "hi"])
            .output()
            .unwrap();
        assert_eq!(code(&output), 2, "{flag}");
        assert_eq!(
            last_line(&output),
            format!("leash: cannot read {flag} /dev/zero: it is larger than 16777216 bytes")
        );
    }
    let output = ws
        .leash()
        .args(["--faux-script", "/dev/zero", "--no-stdin", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(last_line(&output).contains("--faux-script /dev/zero: it is larger than"));
    std::os::unix::fs::symlink("/dev/zero", ws.path("home/.config/leash/config.toml"))
        .or_else(|_| {
            std::fs::create_dir_all(ws.path("home/.config/leash"))?;
            std::os::unix::fs::symlink("/dev/zero", ws.path("home/.config/leash/config.toml"))
        })
        .unwrap();
    let output = ws
        .faux(json!([{"text": "x"}]))
        .args(["--no-stdin", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(
        last_line(&output).starts_with("leash: cannot read the config file ")
            && last_line(&output).ends_with("config.toml: it is larger than 16777216 bytes"),
        "{}",
        last_line(&output)
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

// ------------------------------------------------------------ item 10

#[test]
fn bad_paths_are_reported_before_stdin_is_read() {
    let ws = Workspace::new();
    let script = ws.script(json!([{"text": "x"}]));
    for bad in [
        ["--root", "/nonexistent"],
        ["--transcript", "/nonexistent/t.jsonl"],
        ["--output-last-message", "/nonexistent/last.txt"],
    ] {
        // --stdin waits for a pipe nobody writes to, up to the timeout.
        // Through the one launcher, then a deliberately empty environment.
        let mut cmd = crate::support::run::Run::new()
            .home(ws.path("home"))
            .command();
        let mut child = cmd
            .current_dir(ws.dir.path())
            .env_clear()
            .env("HOME", ws.path("home"))
            .env("XDG_CONFIG_HOME", ws.path("home/.config"))
            .args(["--provider", "faux", "--faux-script"])
            .arg(&script)
            .args(["--stdin", "-t", "20s"])
            .args(bad)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _open = child.stdin.take();
        let started = Instant::now();
        let output = child.wait_with_output().unwrap();
        assert!(started.elapsed() < Duration::from_secs(5), "{bad:?} waited");
        assert_eq!(output.status.code(), Some(2), "{bad:?}");
        let last = last_line(&output);
        assert!(last.contains(bad[1]), "{bad:?}: {last}");
    }
    // `leash config` runs the same checks.
    let output = ws
        .leash()
        .args([
            "config",
            "--base-url",
            "http://localhost:1",
            "--root",
            "/nonexistent",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(last_line(&output).starts_with("leash: invalid --root /nonexistent: "));
}

// ------------------------------------------------------------ item 11

#[test]
fn the_config_file_is_validated_like_the_flags() {
    let ws = Workspace::new();
    let run = || {
        ws.faux(json!([{"text": "x"}]))
            .args(["--no-stdin", "hi"])
            .output()
            .unwrap()
    };
    let path = ws.config_file("max-turns = \"8\"\n");
    let output = run();
    assert_eq!(code(&output), 2);
    assert_eq!(
        last_line(&output),
        format!(
            "leash: config file {}: max-turns: must be a whole number, without quotes",
            path.display()
        )
    );
    ws.config_file("timeout = \"forever\"\n");
    let last = last_line(&run());
    assert!(
        last.starts_with(&format!(
            "leash: config file {}: timeout: invalid --timeout 'forever'",
            path.display()
        )),
        "{last}"
    );
    ws.config_file("retries = 1\nmodel = \"a\"\n\n# again\nretries = 2\n");
    let last = last_line(&run());
    assert_eq!(
        last,
        format!(
            "leash: config file {}: line 5: duplicate key 'retries' (set once per file)",
            path.display()
        )
    );
}

#[test]
fn leash_config_pasted_as_a_config_file_never_sets_the_key() {
    let ws = Workspace::new();
    let output = ws
        .leash()
        .env("OPENAI_API_KEY", KEY)
        .args(["config", "--base-url", "http://localhost:1"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(listed(&output, "api-key").starts_with("# api-key = \"***\""));
    // The whole listing is a valid config file, and sets no key.
    ws.config_file(&stdout(&output));
    let output = ws.leash().arg("config").output().unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(listed(&output, "api-key").starts_with("# api-key "));
    assert!(listed(&output, "api-key").contains("# unset"));
    assert!(!stdout(&output).contains(KEY));
}

// ------------------------------------------------------ item 16 (config)

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

// ----------------------------------------- the listing as a config file

/// A provider mock that answers every request with `body` (an SSE reply
/// in the provider's format).
fn answering(body: String) -> HostileServer {
    HostileServer::always(move |_, conn| {
        conn.respond(200, "text/event-stream", body.as_bytes());
    })
}

#[test]
fn the_config_listing_written_back_is_a_config_file_a_run_takes() {
    use crate::support::sse::{anthropic, openai, responses};
    let cases: [(&str, &[&str], &str, String, &str); 3] = [
        (
            "openai",
            &[],
            "OPENAI",
            openai::text_reply(&["pong"]),
            "/v1/chat/completions",
        ),
        (
            "anthropic",
            &[],
            "ANTHROPIC",
            anthropic::text_reply("pong"),
            "/v1/messages",
        ),
        (
            "openai",
            &["--api", "responses"],
            "OPENAI",
            responses::Reply::new()
                .message(&["pong"])
                .completed(1, 0, 1),
            "/v1/responses",
        ),
    ];
    for (provider, extra, prefix, reply, endpoint) in cases {
        let ws = Workspace::new();
        let key = format!("{prefix}_API_KEY");
        let url = format!("{prefix}_BASE_URL");
        let mut args = vec!["config", "--provider", provider];
        args.extend_from_slice(extra);
        let case = format!("{provider} {extra:?}");
        // The defaults (the provider's own base URL among them) are
        // commented out, and the file the listing makes is accepted.
        let listing = ws.leash().args(&args).env(&key, KEY).output().unwrap();
        assert_eq!(code(&listing), 0, "{case}: {}", stderr(&listing));
        let text = stdout(&listing);
        assert!(
            listed(&listing, "base-url").starts_with("# base-url = \"https://"),
            "{text}"
        );
        let api = match extra.is_empty() {
            true => "# api = \"chat\"",
            false => "api = \"responses\"",
        };
        assert!(listed(&listing, "api").starts_with(api), "{text}");
        ws.config_file(&text);
        let again = ws.leash().arg("config").env(&key, KEY).output().unwrap();
        assert_eq!(code(&again), 0, "{case}:\n{text}\n{}", stderr(&again));
        assert!(
            listed(&again, "provider").starts_with(&format!("provider = \"{provider}\"")),
            "{case}: {}",
            stdout(&again)
        );
        if !extra.is_empty() {
            assert!(listed(&again, "api").starts_with("api = \"responses\""));
        }
        // Made against a server of the user's own, the listing runs there.
        let server = answering(reply);
        let base = match provider {
            "anthropic" => server.url(),
            _ => format!("{}/v1", server.url()),
        };
        let listing = ws
            .leash()
            .args(&args)
            .env(&key, KEY)
            .env(&url, &base)
            .output()
            .unwrap();
        assert_eq!(code(&listing), 0, "{case}: {}", stderr(&listing));
        ws.config_file(&stdout(&listing));
        let run = ws
            .leash()
            .env(&key, KEY)
            .env(&url, &base)
            .args(["--no-stdin", "hi"])
            .output()
            .unwrap();
        assert_eq!(
            code(&run),
            0,
            "{case}:\n{}\n{}",
            stdout(&listing),
            stderr(&run)
        );
        assert_eq!(stdout(&run), "pong\n", "{case}");
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{case}");
        assert!(
            requests[0].head.starts_with(&format!("POST {endpoint} ")),
            "{case}: {}",
            requests[0].head
        );
    }
}
