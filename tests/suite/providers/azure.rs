//! `--provider azure` through the real binary against a loopback Azure
//! OpenAI (docs/src/azure.md "Azure OpenAI"): the mock answers
//! only at the deployment's address with the `api-version` query and the
//! key in `api-key`, as Azure does, and the official `openai` SDK's
//! `AzureOpenAI` client accepts it (the first test), so leash is tested
//! against the wire that SDK speaks.

#![allow(clippy::unwrap_used)]

use crate::support::run::Run;
use crate::support::sdk;
use crate::support::shell::sample_path;
use crate::support::sse::openai::*;
use crate::support::sse::responses::Reply;

use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "azure-integration-SECRET-0123456789abcdef";
const DEPLOYMENT: &str = "dep-1";
const CHAT_PATH: &str = "/openai/deployments/dep-1/chat/completions";
const GA: &str = "2024-10-21";

/// Azure's answer to a wrong key, as the service words it.
const DENIED: &str = "Access denied due to invalid subscription key or wrong API endpoint. \
     Make sure to provide a valid key for an active subscription and use a correct regional \
     API endpoint for your resource.";

/// The mock: `replies` in order at the chat address of [`DEPLOYMENT`] with
/// `version`, for requests with [`KEY`] in `api-key`; any other key gets
/// Azure's 401.
async fn azure(replies: Vec<String>, version: &str) -> MockServer {
    let server = MockServer::start().await;
    mount(&server, CHAT_PATH, version, replies).await;
    server
}

async fn mount(server: &MockServer, at: &str, version: &str, replies: Vec<String>) {
    let last = replies.len().saturating_sub(1);
    for (i, reply) in replies.into_iter().enumerate() {
        let mut mock = Mock::given(method("POST"))
            .and(path(at))
            .and(header("api-key", KEY));
        if !version.is_empty() {
            mock = mock.and(query_param("api-version", version));
        }
        let mock = mock.respond_with(sse(reply));
        match i < last {
            true => mock.up_to_n_times(1).mount(server).await,
            false => mock.mount(server).await,
        }
    }
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(401)
                .set_body_json(json!({"error": {"code": "401", "message": DENIED}})),
        )
        .mount(server)
        .await;
}

fn call_then_answer() -> Vec<String> {
    let call = body(
        &[
            role(),
            call_start(0, "call_az_1", "read_file"),
            call_args(0, "{\"path\": \"sample.ts\"}"),
            finish("tool_calls"),
            usage(120, 20),
        ],
        true,
    );
    vec![call, text_reply(&["It returns ", "undefined."])]
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_sdk_accepts_the_mock() {
    let server = azure(call_then_answer(), GA).await;
    let args = |mode: &str| {
        vec![
            server.uri(),
            KEY.to_owned(),
            DEPLOYMENT.to_owned(),
            GA.to_owned(),
            mode.to_owned(),
        ]
    };
    let first = sdk::run("openai", "azure", args("chat"), vec![]).await;
    assert_eq!(first["finish"], "tool_calls", "{first}");
    assert_eq!(
        first["calls"],
        json!([{"id": "call_az_1", "name": "read_file", "arguments": "{\"path\": \"sample.ts\"}"}])
    );
    assert_eq!(first["usage"]["prompt_tokens"], 120);
    let second = sdk::run("openai", "azure", args("chat"), vec![]).await;
    assert_eq!(second["text"], "It returns undefined.", "{second}");

    // The same mock refuses the SDK with a wrong key.
    let preview = "2025-04-01-preview";
    let responses = MockServer::start().await;
    let reply = Reply::new()
        .message(&["Hello", " there"])
        .completed(30, 0, 4);
    mount(&responses, "/openai/responses", preview, vec![reply]).await;
    let args = vec![
        responses.uri(),
        KEY.to_owned(),
        DEPLOYMENT.to_owned(),
        preview.to_owned(),
        "responses".to_owned(),
    ];
    let out = sdk::run("openai", "azure", args, vec![]).await;
    assert_eq!(out["text"], "Hello there", "{out}");
    assert_eq!(out["usage"]["input_tokens"], 30);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_round_trip_reads_the_file_and_keeps_the_key_out() {
    let server = azure(call_then_answer(), GA).await;
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t.jsonl");
    let output = Run::azure(&server)
        .key(KEY)
        .args([
            "--root",
            "fixtures",
            "--no-stdin",
            "--events",
            "jsonl",
            "--output",
            "json",
        ])
        .arg("--transcript")
        .arg(&transcript)
        .prompt("What does first([]) return?")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let result: Value = serde_json::from_str(output.stdout().trim()).unwrap();
    assert_eq!(result["reply"], "It returns undefined.");
    assert_eq!(result["provider"], "azure");
    assert_eq!(result["usage"]["input"], 170);
    assert_eq!(result["usage"]["output"], 30);
    output.assert_key_absent(KEY);
    let written = std::fs::read_to_string(&transcript).unwrap();
    assert!(!written.contains(KEY));
    assert!(
        written.contains("\"api\":\"azure-openai-chat\""),
        "{written}"
    );

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].url.query(),
        Some("api-version=2024-10-21"),
        "the GA default"
    );
    assert!(requests[0].headers.get("authorization").is_none());
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    assert_eq!(second["model"], DEPLOYMENT);
    let result_message = &second["messages"].as_array().unwrap()[2];
    assert_eq!(result_message["role"], "tool");
    assert_eq!(result_message["tool_call_id"], "call_az_1");
    let sample = std::fs::read_to_string(sample_path()).unwrap();
    let first_line = sample.lines().next().unwrap();
    assert!(
        result_message["content"]
            .as_str()
            .unwrap()
            .contains(first_line)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_reply_exits_5() {
    let cut = body(
        &[role(), text("Partial"), finish("length"), usage(10, 5)],
        true,
    );
    let server = azure(vec![cut], GA).await;
    let output = Run::azure(&server)
        .key(KEY)
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(5), "{}", output.stderr());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_output_schema_is_asked_and_the_api_version_is_the_users() {
    let reply = text_reply(&["{\"answer\": ", "42}"]);
    let server = azure(vec![reply], "2025-04-01-preview").await;
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        json!({"type": "object", "required": ["answer"], "properties": {"answer": {"type": "integer"}}})
            .to_string(),
    )
    .unwrap();
    let output = Run::azure(&server)
        .key(KEY)
        .env("OPENAI_API_VERSION", "2025-04-01-preview")
        .args(["--no-stdin", "--output-schema"])
        .arg(&schema)
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    assert_eq!(output.stdout(), "{\"answer\": 42}\n");
    let requests = server.received_requests().await.unwrap();
    let sent: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(sent["response_format"]["type"], "json_schema");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_responses_api_takes_the_v1_route_without_a_version() {
    let server = MockServer::start().await;
    let reply = Reply::new().message(&["Hi"]).completed(20, 5, 2);
    mount(&server, "/openai/v1/responses", "", vec![reply]).await;
    let output = Run::azure(&server)
        .key(KEY)
        .args(["--api", "responses", "--no-stdin", "--output", "json"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let result: Value = serde_json::from_str(output.stdout().trim()).unwrap();
    assert_eq!(result["reply"], "Hi");
    assert_eq!(result["usage"]["cacheRead"], 5);
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].url.query(), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_key_exits_1_with_azures_reason() {
    let server = azure(vec![text_reply(&["never"])], GA).await;
    let wrong = "azure-WRONG-key-SECRET-9876543210";
    let output = Run::azure(&server)
        .key(wrong)
        .args(["--no-stdin", "--retries", "0"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(1), "{}", output.stderr());
    assert!(
        output.last_line().contains("HTTP 401"),
        "{}",
        output.stderr()
    );
    assert!(
        output
            .last_line()
            .contains("Access denied due to invalid subscription key")
    );
    output.assert_key_absent(wrong);
}

#[test]
fn a_missing_key_endpoint_or_deployment_is_named_with_exit_2() {
    let run = || Run::new().args(["--provider", "azure", "--no-stdin"]);
    let no_key = run()
        .env("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com")
        .args(["-m", "d", "q"])
        .output();
    assert_eq!(no_key.code(), Some(2));
    assert!(
        no_key
            .last_line()
            .contains("AZURE_OPENAI_API_KEY is not set"),
        "{}",
        no_key.stderr()
    );
    let no_endpoint = run()
        .env("AZURE_OPENAI_API_KEY", KEY)
        .args(["-m", "d", "q"])
        .output();
    assert_eq!(no_endpoint.code(), Some(2));
    assert!(
        no_endpoint.last_line().contains("AZURE_OPENAI_ENDPOINT"),
        "{}",
        no_endpoint.stderr()
    );
    let no_model = run()
        .env("AZURE_OPENAI_API_KEY", KEY)
        .env("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com")
        .arg("q")
        .output();
    assert_eq!(no_model.code(), Some(2));
    assert!(
        no_model.last_line().contains("-m DEPLOYMENT"),
        "{}",
        no_model.stderr()
    );
    no_model.assert_key_absent(KEY);
}

#[test]
fn leash_config_shows_where_each_azure_value_came_from() {
    let output = Run::new()
        .command_word("config")
        .env("AZURE_OPENAI_API_KEY", KEY)
        .env("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com")
        .env("OPENAI_API_VERSION", "2025-04-01-preview")
        .args(["--provider", "azure", "-m", "d"])
        .output();
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let text = output.stdout();
    assert!(
        text.contains("base-url = \"https://res.openai.azure.com\""),
        "{text}"
    );
    assert!(text.contains("# env AZURE_OPENAI_ENDPOINT"), "{text}");
    assert!(text.contains("# env AZURE_OPENAI_API_KEY"), "{text}");
    assert!(
        text.contains("openai-api-version = \"2025-04-01-preview\""),
        "{text}"
    );
    assert!(text.contains("# env OPENAI_API_VERSION"), "{text}");
    output.assert_key_absent(KEY);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_key_is_in_no_trace() {
    use crate::support::otlp::{Mode, Receiver};
    let server = azure(call_then_answer(), GA).await;
    let receiver = Receiver::start(Mode::Ok);
    let output = Run::azure(&server)
        .key(KEY)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .args(["--root", "fixtures", "--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let spans = receiver.spans();
    assert!(
        spans
            .iter()
            .any(|span| span["attributes"]["gen_ai.provider.name"] == "azure.ai.openai"),
        "{spans:?}"
    );
    let raw = String::from_utf8_lossy(&receiver.raw()).into_owned();
    assert!(!raw.contains(KEY));
}
