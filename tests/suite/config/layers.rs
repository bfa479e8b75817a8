//! Configuration layers (docs/src/configuration.md "Configuration"): flag, then environment,
//! then `.env`, then the config file, then the default; `leash config`
//! names every source, never prints the key and reports what a run would
//! refuse; a broken config file is a usage error in the chosen format.

use crate::support::run::{code, stderr, stdout};
use crate::support::shell;

use serde_json::{Value, json};
use shell::{Workspace, tool_call};

/// A script that calls a tool once, then answers: exit 3 at `max-turns = 1`,
/// exit 0 above.
fn two_turns() -> Value {
    json!([
        {"toolCalls": [tool_call("list_dir", json!({}))]},
        {"text": "done"}
    ])
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
    // layer is tested with LEASH_MODEL in dotenv_policy.rs.
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
                && !line.starts_with("# traces")
                && !line.starts_with("# metrics")
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
             anthropic-api-key, azure-openai-api-key, gemini-api-key, google-api-key, \
             aws-bearer-token-bedrock, aws-secret-access-key, aws-session-token, \
             google-oauth-access-token, openai-base-url, anthropic-base-url, azure-openai-endpoint, \
             google-gemini-base-url, aws-endpoint-url-bedrock-runtime, google-vertex-base-url, \
             openai-api-version, aws-access-key-id, aws-region, aws-default-region, \
             aws-endpoint-url, google-cloud-location, cloud-ml-region)",
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
