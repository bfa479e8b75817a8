//! `--provider gemini` through the real binary against a loopback Gemini
//! API (docs/src/gemini.md "Gemini"): the mock answers only at
//! `/v1beta/models/{model}:streamGenerateContent?alt=sse` with the key in
//! `x-goog-api-key`, refuses any other key with Google's 400, and the
//! official `google-genai` SDK accepts it (the first test), so leash is
//! tested against the wire that SDK speaks.

#![allow(clippy::unwrap_used)]

use crate::support::run::Run;
use crate::support::sdk;
use crate::support::shell::sample_path;
use crate::support::sse::gemini::*;
use crate::support::sse::sse;

use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "AIza-gemini-integration-SECRET-0123456789";
const MODEL_PATH: &str = "/v1beta/models/gemini-test:streamGenerateContent";
/// A thought signature: opaque base64, as the API sends it.
const SIGNATURE: &str = "c2lnbmVkLXRob3VnaHQ=";
/// Google's answer to a wrong key, as the service words it.
const INVALID: &str = "API key not valid. Please pass a valid API key.";

/// The mock: `replies` in order at the model's address, for requests with
/// [`KEY`] in `x-goog-api-key` and `alt=sse`; any other key gets Google's
/// 400.
async fn gemini(replies: Vec<String>) -> MockServer {
    let server = MockServer::start().await;
    let last = replies.len().saturating_sub(1);
    for (i, reply) in replies.into_iter().enumerate() {
        let mock = Mock::given(method("POST"))
            .and(path(MODEL_PATH))
            .and(query_param("alt", "sse"))
            .and(header("x-goog-api-key", KEY))
            .respond_with(sse(reply));
        match i < last {
            true => mock.up_to_n_times(1).mount(&server).await,
            false => mock.mount(&server).await,
        }
    }
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": {
            "code": 400, "message": INVALID, "status": "INVALID_ARGUMENT",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]
        }})))
        .mount(&server)
        .await;
    server
}

fn call_then_answer() -> Vec<String> {
    vec![
        body(&[
            thought("Reading the file first.", SIGNATURE),
            call("read_file", json!({"path": "sample.ts"}), Some(SIGNATURE)),
            finish("STOP", 120, 0, 20, 30),
        ]),
        body(&[
            text("It returns "),
            text("undefined."),
            finish("STOP", 300, 100, 10, 0),
        ]),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_sdk_accepts_the_mock() {
    let server = gemini(call_then_answer()).await;
    let args = || vec![server.uri(), KEY.to_owned(), "gemini-test".to_owned()];
    let first = sdk::run("google.genai", "gemini", args(), vec![]).await;
    assert_eq!(first["finish"], "STOP", "{first}");
    assert_eq!(
        first["calls"],
        json!([{"name": "read_file", "args": {"path": "sample.ts"}}])
    );
    assert_eq!(first["thoughts"], "Reading the file first.");
    assert_eq!(first["signatures"], json!([SIGNATURE, SIGNATURE]));
    assert_eq!(first["usage"]["thoughts_token_count"], 30);
    let second = sdk::run("google.genai", "gemini", args(), vec![]).await;
    assert_eq!(second["text"], "It returns undefined.", "{second}");
    assert_eq!(second["usage"]["cached_content_token_count"], 100);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_round_trip_reads_the_file_and_keeps_the_key_out() {
    let server = gemini(call_then_answer()).await;
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t.jsonl");
    let output = Run::gemini(&server)
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
        .args(["--reasoning-effort", "low", "--transcript"])
        .arg(&transcript)
        .prompt("What does first([]) return?")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let result: Value = serde_json::from_str(output.stdout().trim()).unwrap();
    assert_eq!(result["reply"], "It returns undefined.");
    assert_eq!(result["provider"], "gemini");
    // input: 120 + (300 - 100); cached 100; output: 20 + 30 thoughts + 10.
    assert_eq!(result["usage"]["input"], 320);
    assert_eq!(result["usage"]["cacheRead"], 100);
    assert_eq!(result["usage"]["output"], 60);
    output.assert_key_absent(KEY);
    let written = std::fs::read_to_string(&transcript).unwrap();
    assert!(!written.contains(KEY));
    assert!(
        written.contains("\"api\":\"gemini-generate-content\""),
        "{written}"
    );

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(
        first["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 2048, "includeThoughts": true})
    );
    let names: Vec<&str> = first["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"read_file"), "{names:?}");
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let contents = second["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 3, "{contents:#?}");
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"path": "sample.ts"}},
                                            "thoughtSignature": SIGNATURE}]})
    );
    let response = &contents[2]["parts"][0]["functionResponse"];
    assert_eq!(contents[2]["role"], "user");
    assert_eq!(response["name"], "read_file");
    assert!(response.get("id").is_none(), "{response}");
    let sample = std::fs::read_to_string(sample_path()).unwrap();
    let first_line = sample.lines().next().unwrap();
    assert!(
        response["response"]["output"]
            .as_str()
            .unwrap()
            .contains(first_line)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_reply_exits_5_and_a_safety_stop_exits_1() {
    let cut = body(&[text("Partial"), finish("MAX_TOKENS", 10, 0, 5, 0)]);
    let server = gemini(vec![cut]).await;
    let output = Run::gemini(&server)
        .key(KEY)
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(5), "{}", output.stderr());

    let blocked = body(&[text("Partial"), finish("SAFETY", 10, 0, 5, 0)]);
    let server = gemini(vec![blocked]).await;
    let output = Run::gemini(&server)
        .key(KEY)
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(1), "{}", output.stderr());
    assert!(
        output.last_line().contains("finishReason: SAFETY"),
        "{}",
        output.stderr()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_output_schema_is_asked_as_response_json_schema() {
    let server = gemini(vec![text_reply(&["{\"answer\": ", "42}"])]).await;
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    let wanted = json!({"type": "object", "required": ["answer"], "properties": {"answer": {"type": "integer"}}});
    std::fs::write(&schema, wanted.to_string()).unwrap();
    let output = Run::gemini(&server)
        .key(KEY)
        .args(["--no-stdin", "--output-schema"])
        .arg(&schema)
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    assert_eq!(output.stdout(), "{\"answer\": 42}\n");
    let requests = server.received_requests().await.unwrap();
    let sent: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(
        sent["generationConfig"]["responseMimeType"],
        "application/json"
    );
    assert_eq!(sent["generationConfig"]["responseJsonSchema"], wanted);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_key_exits_1_with_googles_reason() {
    let server = gemini(vec![text_reply(&["never"])]).await;
    let wrong = "AIza-WRONG-gemini-SECRET-9876543210";
    let output = Run::gemini(&server)
        .key(wrong)
        .args(["--no-stdin", "--retries", "0"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(1), "{}", output.stderr());
    assert!(
        output.last_line().contains("HTTP 400"),
        "{}",
        output.stderr()
    );
    assert!(output.last_line().contains(INVALID), "{}", output.stderr());
    output.assert_key_absent(wrong);
}

#[tokio::test(flavor = "multi_thread")]
async fn google_api_key_is_the_fallback() {
    let server = gemini(vec![text_reply(&["ok"])]).await;
    let output = Run::gemini(&server)
        .no_key()
        .env("GOOGLE_API_KEY", KEY)
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    assert_eq!(output.stdout(), "ok\n");
}

#[test]
fn a_missing_key_is_named_with_exit_2_and_config_shows_the_layers() {
    let output = Run::new()
        .args(["--provider", "gemini", "--no-stdin", "q"])
        .output();
    assert_eq!(output.code(), Some(2));
    assert!(
        output.last_line().contains("GEMINI_API_KEY is not set"),
        "{}",
        output.stderr()
    );

    let output = Run::new()
        .command_word("config")
        .env("GOOGLE_API_KEY", KEY)
        .args(["--provider", "gemini"])
        .output();
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let text = output.stdout();
    assert!(text.contains("# env GOOGLE_API_KEY"), "{text}");
    assert!(text.contains("model = \"gemini-2.5-flash\""), "{text}");
    assert!(
        text.contains("https://generativelanguage.googleapis.com"),
        "{text}"
    );
    output.assert_key_absent(KEY);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_key_is_in_no_trace() {
    use crate::support::otlp::{Mode, Receiver};
    let server = gemini(call_then_answer()).await;
    let receiver = Receiver::start(Mode::Ok);
    let output = Run::gemini(&server)
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
            .any(|span| span["attributes"]["gen_ai.provider.name"] == "gcp.gemini"),
        "{spans:?}"
    );
    let raw = String::from_utf8_lossy(&receiver.raw()).into_owned();
    assert!(!raw.contains(KEY));
}
