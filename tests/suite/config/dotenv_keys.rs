//! A `.env` never redirects the key (docs/src/configuration.md "Configuration"): a `.env`
//! base URL or key never beats an exported one, an exported key never goes
//! to a `.env` base URL unless the user says so, and `--env-file` /
//! `--no-env-file` choose or skip the file.

use super::*;

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
        last_line(&output).starts_with("leash: cannot read --env-file missing.env: "),
        "{}",
        stderr(&output)
    );
}
