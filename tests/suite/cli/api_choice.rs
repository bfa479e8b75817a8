//! The OpenAI API follows the model when `--api` is not given: the
//! `gpt-5*` and o-series models go to the Responses API, every other model
//! to Chat Completions; an explicit `--api chat` with such a model says
//! `--api responses` exists. Through the binary, against both mocks.

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use crate::support::sse::{openai as chat, responses, sse};

const KEY: &str = "sk-proj-api-by-model-0123456789";

/// A server answering both APIs, each in its own wire format.
async fn both_apis() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(chat::text_reply(&["from chat"])))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(sse(responses::text_reply(&["from responses"])))
        .mount(&server)
        .await;
    server
}

/// `leash -m MODEL go` (and `extra`) against `server`; its output and the
/// paths it asked for.
async fn run(
    server: &MockServer,
    model: &str,
    extra: &[&str],
) -> (std::process::Output, Vec<String>) {
    let ws = super::workspace();
    let mut cmd = ws.child();
    cmd.env("OPENAI_API_KEY", KEY)
        .args(["--base-url", &format!("{}/v1", server.uri())])
        .args(["-m", model, "--no-stdin", "--tools", "none"])
        .args(extra)
        .arg("go");
    let output = tokio::task::spawn_blocking(move || {
        let output = cmd.output().unwrap();
        drop(ws);
        output
    })
    .await
    .unwrap();
    let paths = server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|request| request.url.path().to_owned())
        .collect();
    (output, paths)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_responses_model_goes_to_the_responses_api_without_asking() {
    for model in ["gpt-5-mini", "gpt-5", "o3", "o4-mini", "o1-pro"] {
        let server = both_apis().await;
        let (output, paths) = run(&server, model, &[]).await;
        assert_eq!(output.status.code(), Some(0), "{model}: {output:?}");
        assert_eq!(output.stdout, b"from responses\n", "{model}");
        assert_eq!(paths, ["/v1/responses"], "{model}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn other_models_stay_on_chat_completions() {
    for model in ["gpt-4.1-mini", "gpt-4o", "qwen3:8b", "omni-local"] {
        let server = both_apis().await;
        let (output, paths) = run(&server, model, &[]).await;
        assert_eq!(output.status.code(), Some(0), "{model}: {output:?}");
        assert_eq!(paths, ["/v1/chat/completions"], "{model}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_explicit_chat_is_kept_and_names_the_responses_api() {
    let server = both_apis().await;
    let (output, paths) = run(&server, "gpt-5-mini", &["--api", "chat"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(paths, ["/v1/chat/completions"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--api responses"), "{stderr}");
    // The notice is one of the run's events.
    let server = both_apis().await;
    let (output, _) = run(
        &server,
        "gpt-5-mini",
        &["--api", "chat", "--events", "jsonl"],
    )
    .await;
    let notices: Vec<Value> = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "notice")
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0]["message"]
            .as_str()
            .unwrap()
            .contains("--api responses")
    );
    // A model of Chat Completions on chat: nothing to say.
    let server = both_apis().await;
    let (output, _) = run(&server, "gpt-4.1-mini", &["--api", "chat"]).await;
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("--api"),
        "{output:?}"
    );
}

#[test]
fn leash_config_shows_the_api_and_why() {
    let ws = super::workspace();
    let output = ws
        .leash()
        .env("OPENAI_API_KEY", KEY)
        .args(["config", "-m", "o3-mini"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    let line = text
        .lines()
        .find(|line| line.starts_with("# api = "))
        .unwrap();
    assert!(line.starts_with("# api = \"responses\""), "{line}");
    assert!(line.contains("o-series"), "{line}");
    let output = ws
        .leash()
        .env("OPENAI_API_KEY", KEY)
        .args(["config", "-m", "gpt-4.1"])
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.lines()
            .any(|line| line.starts_with("# api = \"chat\"")),
        "{text}"
    );
}
