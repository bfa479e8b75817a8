//! `--reasoning-effort` (docs/src/usage.md "Usage"): the level reaches each wire as
//! that wire's own field, a request without it is the body it always was,
//! the level is layered like the other run flags (environment, config
//! file; a `.env` may not set it), and the result, `run_end` and the
//! transcript's session line record it when set.

// A failed setup step (temp dir, spawn, JSON shape) should fail the test loudly.
#![allow(clippy::unwrap_used)]

use crate::support::run::Run;
use crate::support::sse::{anthropic, openai, request_bodies, responses, sse};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

/// The three HTTP wires, each with a mock answering one text reply.
#[derive(Debug, Clone, Copy)]
enum Wire {
    Chat,
    Responses,
    Anthropic,
}

const WIRES: [Wire; 3] = [Wire::Chat, Wire::Responses, Wire::Anthropic];

/// The request fields a reasoning level could become, on any wire.
const REASONING_FIELDS: [&str; 3] = ["reasoning_effort", "reasoning", "thinking"];

impl Wire {
    async fn server(self) -> MockServer {
        let server = MockServer::start().await;
        let (endpoint, reply) = match self {
            Wire::Chat => ("/v1/chat/completions", openai::text_reply(&["ok"])),
            Wire::Responses => ("/v1/responses", responses::text_reply(&["ok"])),
            Wire::Anthropic => ("/v1/messages", anthropic::text_reply("ok")),
        };
        Mock::given(method("POST"))
            .and(path(endpoint))
            .respond_with(sse(reply))
            .mount(&server)
            .await;
        server
    }

    fn run(self, server: &MockServer) -> Run {
        let run = match self {
            Wire::Chat => Run::openai(server).args(["--api", "chat"]),
            Wire::Responses => Run::responses(server),
            Wire::Anthropic => Run::anthropic(server),
        };
        run.args(["--no-stdin", "--tools", "none", "--output", "json"])
            .args(["--max-tokens", "100"])
            .prompt("hi")
    }
}

/// Runs `run` against `wire`'s mock; returns the one request body and the
/// `--output json` object.
async fn one_request(wire: Wire, extra: &[&str], env: &[(&str, &str)]) -> (Value, Value) {
    let server = wire.server().await;
    let mut run = wire.run(&server).args(extra);
    for (name, value) in env {
        run = run.env(name, value);
    }
    let output = run.output_async().await;
    assert_eq!(output.code(), Some(0), "{wire:?}: {}", output.stderr());
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 1, "{wire:?}");
    let result = serde_json::from_str(output.stdout().trim()).unwrap();
    (bodies.into_iter().next().unwrap(), result)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_level_reaches_every_wire_as_its_own_field() {
    for wire in WIRES {
        let (body, result) = one_request(wire, &["--reasoning-effort", "low"], &[]).await;
        match wire {
            Wire::Chat => {
                assert_eq!(body["reasoning_effort"], "low", "{body}");
                assert_eq!(body["max_completion_tokens"], 100, "{body}");
            }
            Wire::Responses => {
                assert_eq!(body["reasoning"], json!({"effort": "low"}), "{body}");
                assert_eq!(body["max_output_tokens"], 100, "{body}");
            }
            Wire::Anthropic => {
                assert_eq!(
                    body["thinking"],
                    json!({"type": "enabled", "budget_tokens": 2048}),
                    "{body}"
                );
                // The budget comes on top of the answer's room.
                assert_eq!(body["max_tokens"], 100 + 2048, "{body}");
            }
        }
        assert_eq!(result["reasoningEffort"], "low", "{wire:?}: {result}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_level_no_request_carries_a_reasoning_field() {
    for wire in WIRES {
        for extra in [&[][..], &["--reasoning-effort", "off"][..]] {
            let (body, result) = one_request(wire, extra, &[]).await;
            let object = body.as_object().unwrap();
            for field in REASONING_FIELDS {
                assert!(!object.contains_key(field), "{wire:?} {extra:?}: {body}");
            }
            if let Wire::Anthropic = wire {
                assert_eq!(body["max_tokens"], 100, "{body}");
            }
            let result = result.as_object().unwrap();
            assert!(!result.contains_key("reasoningEffort"), "{result:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_level_is_layered_like_the_other_run_flags() {
    let wire = Wire::Chat;
    let from_env = [("LEASH_REASONING_EFFORT", "high")];
    let (body, _) = one_request(wire, &[], &from_env).await;
    assert_eq!(body["reasoning_effort"], "high", "{body}");
    // The flag beats the environment.
    let (body, _) = one_request(wire, &["--reasoning-effort", "minimal"], &from_env).await;
    assert_eq!(body["reasoning_effort"], "minimal", "{body}");

    // The config file's key is the flag's long name.
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("leash")).unwrap();
    std::fs::write(
        config.path().join("leash/config.toml"),
        "reasoning-effort = \"xhigh\"\n",
    )
    .unwrap();
    let server = wire.server().await;
    let output = wire
        .run(&server)
        .config_home(config.path())
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let body = &request_bodies(&server).await[0];
    assert_eq!(body["reasoning_effort"], "xhigh", "{body}");
}

#[test]
fn a_level_leash_does_not_know_is_a_usage_error() {
    let output = Run::faux(json!([{"text": "ok"}]))
        .args(["--no-stdin", "--reasoning-effort", "extreme", "hi"])
        .output();
    assert_eq!(output.code(), Some(2), "{}", output.stderr());
    assert!(output.stdout().is_empty());
    let stderr = output.stderr();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("leash: invalid value 'extreme' for '--reasoning-effort <LEVEL>'"),
        "{stderr}"
    );
    assert!(
        stderr.contains("off, minimal, low, medium, high, xhigh"),
        "{stderr}"
    );

    // A checkout's `.env` chooses no level: it would spend the operator's
    // tokens.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".env"), "LEASH_REASONING_EFFORT=high\n").unwrap();
    let output = Run::faux(json!([{"text": "ok"}]))
        .current_dir(dir.path())
        .args(["--no-stdin", "hi"])
        .output();
    assert_eq!(output.code(), Some(2), "{}", output.stderr());
    assert!(
        output.last_line().contains(
            "pass --reasoning-effort, export LEASH_REASONING_EFFORT, \
             or set reasoning-effort in the config file"
        ),
        "{}",
        output.last_line()
    );
}

#[test]
fn the_faux_model_takes_the_level_and_the_run_records_it() {
    let run = |extra: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("t.jsonl");
        let output = Run::faux(json!([{"text": "ok"}]))
            .args(["--no-stdin", "--output", "json", "--events", "jsonl"])
            .arg("--transcript")
            .arg(&transcript)
            .args(extra)
            .prompt("hi")
            .output();
        assert_eq!(output.code(), Some(0), "{}", output.stderr());
        let result: Value = serde_json::from_str(output.stdout().trim()).unwrap();
        let run_end = output.events().last().unwrap().clone();
        let text = std::fs::read_to_string(&transcript).unwrap();
        let session: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        (result, run_end, session)
    };
    let (result, run_end, session) = run(&["--reasoning-effort", "medium"]);
    assert_eq!(result["reply"], "ok");
    assert_eq!(result["reasoningEffort"], "medium", "{result}");
    assert_eq!(run_end["type"], "run_end");
    assert_eq!(run_end["reasoningEffort"], "medium", "{run_end}");
    assert_eq!(session["role"], "session");
    assert_eq!(session["reasoningEffort"], "medium", "{session}");

    // Unset (or off): none of the three holds the field.
    for extra in [&[][..], &["--reasoning-effort", "off"][..]] {
        let (result, run_end, session) = run(extra);
        for value in [&result, &run_end, &session] {
            assert!(
                !value.as_object().unwrap().contains_key("reasoningEffort"),
                "{value}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batchs_level_reaches_every_items_request_and_line() {
    let server = Wire::Chat.server().await;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("items.jsonl");
    std::fs::write(&input, "first\n{\"id\": \"b\", \"prompt\": \"second\"}\n").unwrap();
    let output = Run::openai(&server)
        .command_word("batch")
        .arg(&input)
        .args([
            "--api",
            "chat",
            "--tools",
            "none",
            "--reasoning-effort",
            "medium",
        ])
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    for body in &bodies {
        assert_eq!(body["reasoning_effort"], "medium", "{body}");
    }
    let stdout = output.stdout();
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    for line in &lines {
        assert_eq!(line["reasoningEffort"], "medium", "{line}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_says_it_leaves_the_temperature_out_with_a_level() {
    let notices = |stderr: &str| -> Vec<String> {
        stderr
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|event| event["type"] == "notice")
            .map(|event| event["message"].as_str().unwrap().to_owned())
            .collect()
    };
    for (wire, level, said) in [
        (Wire::Anthropic, "low", true),
        (Wire::Anthropic, "off", false),
        (Wire::Chat, "low", false),
    ] {
        let server = wire.server().await;
        let output = wire
            .run(&server)
            .args(["--temperature", "0.2", "--reasoning-effort", level])
            .args(["--events", "jsonl"])
            .output_async()
            .await;
        assert_eq!(output.code(), Some(0), "{wire:?}: {}", output.stderr());
        let body = &request_bodies(&server).await[0];
        // Sent exactly when no notice says it is not.
        assert_eq!(body.get("temperature").is_none(), said, "{wire:?}: {body}");
        let expected: Vec<String> = said
            .then(|| {
                "--temperature is not sent: Anthropic takes no temperature with thinking on \
                 (--reasoning-effort)"
                    .to_owned()
            })
            .into_iter()
            .collect();
        assert_eq!(notices(&output.stderr()), expected, "{wire:?} {level}");
    }
}
