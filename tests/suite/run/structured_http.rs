//! `--output-schema` and `--max-tokens-total` through the real HTTP
//! providers: what each API is asked for, the corrective turn as the
//! server sees it, and the budget counted from the usage servers report.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

use crate::support::run::Run;
use crate::support::sse::anthropic as anthropic_support;
use crate::support::sse::openai as openai_support;

use std::path::PathBuf;
use std::process::Output;

use serde_json::{Value, json};
use tempfile::TempDir;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-structured-SECRET-0123456789";

fn schema_file(dir: &TempDir) -> PathBuf {
    let path = dir.path().join("schema.json");
    let schema = json!({
        "type": "object",
        "properties": {"verdict": {"enum": ["pass", "fail"]}},
        "required": ["verdict"],
        "additionalProperties": false
    });
    std::fs::write(&path, schema.to_string()).unwrap();
    path
}

/// Runs the binary against `server` and returns its output.
async fn run(provider: &str, server: &MockServer, args: Vec<String>) -> Output {
    let base = match provider {
        "openai" => format!("{}/v1", server.uri()),
        _ => server.uri(),
    };
    let key_var = match provider {
        "openai" => "OPENAI_API_KEY",
        _ => "ANTHROPIC_API_KEY",
    };
    let provider = provider.to_owned();
    tokio::task::spawn_blocking(move || {
        // Its own directory and HOME: no `.env`, config file or variable
        // of the developer's may change a result.
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Run::new().home(dir.path()).command();
        cmd.current_dir(dir.path());
        cmd.env(key_var, KEY)
            .args([
                "--provider",
                &provider,
                "--base-url",
                &base,
                "-m",
                "test-model",
            ])
            .args(["--no-stdin", "--timeout", "20s"])
            .args(args)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// Mounts `replies` as successive responses.
async fn script(server: &MockServer, replies: Vec<ResponseTemplate>) {
    let count = replies.len();
    for (i, reply) in replies.into_iter().enumerate() {
        let mock = Mock::given(method("POST")).respond_with(reply);
        if i + 1 < count {
            mock.up_to_n_times(1).mount(server).await;
        } else {
            mock.mount(server).await;
        }
    }
}

fn openai_text(text: &str) -> ResponseTemplate {
    openai_support::sse(openai_support::text_reply(&[text]))
}

fn anthropic_text(text: &str) -> ResponseTemplate {
    anthropic_support::sse(anthropic_support::text_reply(text))
}

async fn bodies(provider: &str, server: &MockServer) -> Vec<Value> {
    match provider {
        "openai" => openai_support::request_bodies(server).await,
        _ => anthropic_support::request_bodies(server).await,
    }
}

fn schema_args(dir: &TempDir) -> Vec<String> {
    vec![
        "--tools".into(),
        "none".into(),
        "--output-schema".into(),
        schema_file(dir).display().to_string(),
        "Is it good?".into(),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_is_asked_for_the_schema_and_a_valid_reply_is_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    script(&server, vec![openai_text(r#"{"verdict":"pass"}"#)]).await;
    let output = run("openai", &server, schema_args(&dir)).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        output.stdout, b"{\"verdict\":\"pass\"}\n",
        "as the model wrote it"
    );
    let sent = bodies("openai", &server).await;
    let format = &sent[0]["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "leash_output");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(
        format["json_schema"]["schema"]["required"],
        json!(["verdict"])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_is_asked_for_the_schema_through_output_config() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    script(&server, vec![anthropic_text(r#"{"verdict":"fail"}"#)]).await;
    let output = run("anthropic", &server, schema_args(&dir)).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let sent = bodies("anthropic", &server).await;
    assert_eq!(sent[0]["output_config"]["format"]["type"], "json_schema");
    assert_eq!(
        sent[0]["output_config"]["format"]["schema"]["properties"]["verdict"],
        json!({"enum": ["pass", "fail"]})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_corrective_turn_carries_the_validation_errors_on_both_providers() {
    for provider in ["openai", "anthropic"] {
        let dir = tempfile::tempdir().unwrap();
        let server = MockServer::start().await;
        let (bad, good) = match provider {
            "openai" => (
                openai_text(r#"{"verdict":"maybe"}"#),
                openai_text(r#"{"verdict":"pass"}"#),
            ),
            _ => (
                anthropic_text(r#"{"verdict":"maybe"}"#),
                anthropic_text(r#"{"verdict":"pass"}"#),
            ),
        };
        script(&server, vec![bad, good]).await;
        let output = run(provider, &server, schema_args(&dir)).await;
        assert_eq!(output.status.code(), Some(0), "{provider}: {output:?}");
        let sent = bodies(provider, &server).await;
        assert_eq!(sent.len(), 2, "{provider}");
        let last_user = sent[1]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .unwrap()
            .to_string();
        assert!(last_user.contains("at /verdict"), "{provider}: {last_user}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_twice_exits_6_on_both_providers() {
    for provider in ["openai", "anthropic"] {
        let dir = tempfile::tempdir().unwrap();
        let server = MockServer::start().await;
        let bad = match provider {
            "openai" => openai_text("no JSON here"),
            _ => anthropic_text("no JSON here"),
        };
        script(&server, vec![bad]).await;
        let output = run(provider, &server, schema_args(&dir)).await;
        assert_eq!(output.status.code(), Some(6), "{provider}: {output:?}");
        assert!(output.stdout.is_empty());
        assert_eq!(bodies(provider, &server).await.len(), 2, "{provider}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_budget_counts_the_usage_the_server_reports() {
    // OpenAI: each reply asks for a tool and reports 300 + 40 tokens.
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a").unwrap();
    // Distinct paths (".", "./.", ...) so the repeat guard stays out of it.
    let call = |n: usize| {
        let args = json!({"path": format!(".{}", "/.".repeat(n))}).to_string();
        openai_support::sse(openai_support::body(
            &[
                openai_support::call_start(0, &format!("call_{n}"), "list_dir"),
                openai_support::call_args(0, &args),
                openai_support::finish("tool_calls"),
                openai_support::usage(300, 40),
            ],
            true,
        ))
    };
    script(
        &server,
        vec![call(1), call(2), call(3), openai_text("done")],
    )
    .await;
    let args = vec![
        "--tools".to_owned(),
        "list_dir".to_owned(),
        "--root".to_owned(),
        dir.path().display().to_string(),
        "--max-turns".to_owned(),
        "10".to_owned(),
        "--max-tokens-total".to_owned(),
        "500".to_owned(),
        "go".to_owned(),
    ];
    let output = run("openai", &server, args).await;
    assert_eq!(output.status.code(), Some(7), "{output:?}");
    // 340 after the first turn is within budget; 680 after the second is not.
    assert_eq!(bodies("openai", &server).await.len(), 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.lines().last().unwrap(),
        "leash: token budget used up: 680 of 500 tokens after 2 turns; raise it with --max-tokens-total N"
    );
}
