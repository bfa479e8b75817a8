//! `--provider bedrock` through the real binary against a loopback
//! Bedrock (docs/src/bedrock.md "Amazon Bedrock"): the mock answers only
//! at `/model/{modelId}/converse-stream` to a request whose SigV4
//! signature it computes again with the caller's secret, as the service
//! does, and streams `application/vnd.amazon.eventstream` frames. The
//! official `boto3` client's `converse_stream` is first run against the
//! same mock (its signature accepted, its frames read), so leash is tested
//! against the wire boto3 speaks.

#![allow(clippy::unwrap_used)]

use crate::support::run::Run;
use crate::support::sdk;
use crate::support::shell::sample_path;
use crate::support::sigv4::Known;
use crate::support::sse::bedrock::*;

use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer};

const SECRET: &str = "bedrock-SECRET-access-key-0123456789abcdef";
const TOKEN: &str = "bedrock-SESSION-token-FQoGZXIvYXdzE0123456789";
const MODEL_PATH: &str = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream";
const MISMATCH: &str = "The request signature we calculated does not match the signature you provided. \
     Check your AWS Secret Access Key and signing method. Consult the service documentation for details.";

fn known(token: Option<&str>) -> Known {
    Known {
        access_key_id: "AKIDLEASHTEST".into(),
        secret_access_key: SECRET.into(),
        session_token: token.map(str::to_owned),
        region: "us-east-1".into(),
    }
}

/// The mock: `replies` in order at the model's address for requests
/// signed by `caller`; anything else gets the service's 403.
async fn bedrock(replies: Vec<Vec<u8>>, caller: Known) -> MockServer {
    let server = MockServer::start().await;
    let last = replies.len().saturating_sub(1);
    for (i, reply) in replies.into_iter().enumerate() {
        let mock = Mock::given(method("POST"))
            .and(path(MODEL_PATH))
            .and(caller.clone())
            .respond_with(eventstream(reply));
        match i < last {
            true => mock.up_to_n_times(1).mount(&server).await,
            false => mock.mount(&server).await,
        }
    }
    Mock::given(method("POST"))
        .respond_with(aws_error(403, "InvalidSignatureException", MISMATCH))
        .mount(&server)
        .await;
    server
}

fn call_then_answer() -> Vec<Vec<u8>> {
    let mut call = start();
    call.extend(text(0, "Let me read it."));
    call.extend(stop_block(0));
    call.extend(tool_use(
        1,
        "tooluse_Seed01",
        "read_file",
        &["{\"path\": ", "\"sample.ts\"}"],
    ));
    call.extend(finish("tool_use", 120, 20, 0));
    let mut answer = start();
    answer.extend(text(0, "It returns "));
    answer.extend(text(0, "undefined."));
    answer.extend(stop_block(0));
    answer.extend(finish("end_turn", 40, 10, 200));
    vec![call, answer]
}

fn boto3_args(server: &MockServer, secret: &str, token: &str) -> Vec<String> {
    [
        server.uri().as_str(),
        "us-east-1",
        "AKIDLEASHTEST",
        secret,
        token,
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    ]
    .map(str::to_owned)
    .to_vec()
}

#[tokio::test(flavor = "multi_thread")]
async fn boto3_is_accepted_by_the_mock_and_a_wrong_secret_is_not() {
    let server = bedrock(call_then_answer(), known(Some(TOKEN))).await;
    let first = sdk::run(
        "boto3",
        "bedrock",
        boto3_args(&server, SECRET, TOKEN),
        vec![],
    )
    .await;
    assert_eq!(first["stop"], "tool_use", "{first}");
    assert_eq!(
        first["calls"],
        json!([{"id": "tooluse_Seed01", "name": "read_file", "input": "{\"path\": \"sample.ts\"}"}])
    );
    assert_eq!(first["usage"]["inputTokens"], 120);
    let second = sdk::run(
        "boto3",
        "bedrock",
        boto3_args(&server, SECRET, TOKEN),
        vec![],
    )
    .await;
    assert_eq!(second["text"], "It returns undefined.", "{second}");
    assert_eq!(second["usage"]["cacheReadInputTokens"], 200);
    // The mock checks what the service checks: boto3 with a wrong secret
    // or without the session token is refused.
    let wrong = sdk::run(
        "boto3",
        "bedrock",
        boto3_args(&server, "not-the-secret", TOKEN),
        vec![],
    )
    .await;
    assert_eq!(wrong["error"], "InvalidSignatureException", "{wrong}");
    let no_token = sdk::run("boto3", "bedrock", boto3_args(&server, SECRET, ""), vec![]).await;
    assert_eq!(no_token["error"], "InvalidSignatureException", "{no_token}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_tool_round_trip_reads_the_file_and_keeps_the_secrets_out() {
    let server = bedrock(call_then_answer(), known(Some(TOKEN))).await;
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t.jsonl");
    let output = Run::bedrock(&server)
        .key(SECRET)
        .env("AWS_SESSION_TOKEN", TOKEN)
        .args([
            "--root",
            "fixtures",
            "--no-stdin",
            "--events",
            "jsonl",
            "--output",
            "json",
            "--transcript",
        ])
        .arg(&transcript)
        .prompt("What does first([]) return?")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let result: Value = serde_json::from_str(output.stdout().trim()).unwrap();
    assert_eq!(result["reply"], "It returns undefined.");
    assert_eq!(result["provider"], "bedrock");
    assert_eq!(result["usage"]["input"], 160);
    assert_eq!(result["usage"]["output"], 30);
    assert_eq!(result["usage"]["cacheRead"], 200);
    for secret in [SECRET, TOKEN] {
        output.assert_key_absent(secret);
        assert!(
            !std::fs::read_to_string(&transcript)
                .unwrap()
                .contains(secret)
        );
    }
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].headers.get("accept").unwrap(),
        "application/vnd.amazon.eventstream"
    );
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert!(first.get("modelId").is_none());
    let tools = first["toolConfig"]["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .any(|tool| tool["toolSpec"]["name"] == "read_file")
    );
    assert_eq!(
        tools.last().unwrap(),
        &json!({"cachePoint": {"type": "default"}})
    );
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [
            {"text": "Let me read it."},
            {"toolUse": {"toolUseId": "tooluse_Seed01", "name": "read_file", "input": {"path": "sample.ts"}}}
        ]})
    );
    let result = &messages[2]["content"][0]["toolResult"];
    assert_eq!(result["toolUseId"], "tooluse_Seed01");
    assert_eq!(result["status"], "success");
    let sample = std::fs::read_to_string(sample_path()).unwrap();
    let first_line = sample.lines().next().unwrap();
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(first_line)
    );
    assert_eq!(
        messages[2]["content"][1],
        json!({"cachePoint": {"type": "default"}})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_reply_exits_5_and_an_exception_exits_1() {
    let mut cut = start();
    cut.extend(text(0, "Partial"));
    cut.extend(finish("max_tokens", 10, 5, 0));
    let server = bedrock(vec![cut], known(None)).await;
    let output = Run::bedrock(&server)
        .key(SECRET)
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(5), "{}", output.stderr());

    let mut failing = start();
    failing.extend(text(0, "Part"));
    failing.extend(exception(
        "throttlingException",
        "Too many tokens, please wait before trying again.",
    ));
    let server = bedrock(vec![failing], known(None)).await;
    let output = Run::bedrock(&server)
        .key(SECRET)
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(1), "{}", output.stderr());
    assert!(
        output
            .last_line()
            .contains("Too many tokens, please wait before trying again. (throttlingException)"),
        "{}",
        output.stderr()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_output_schema_is_asked_and_checked() {
    let server = bedrock(vec![text_reply(&["{\"answer\": ", "42}"])], known(None)).await;
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        json!({"type": "object", "required": ["answer"], "properties": {"answer": {"type": "integer"}}}).to_string(),
    )
    .unwrap();
    let output = Run::bedrock(&server)
        .key(SECRET)
        .args(["--no-stdin", "--output-schema"])
        .arg(&schema)
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    assert_eq!(output.stdout(), "{\"answer\": 42}\n");
    let requests = server.received_requests().await.unwrap();
    let sent: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let system = sent["system"].to_string();
    assert!(
        system.contains("JSON Schema") && system.contains("\\\"answer\\\""),
        "{system}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_secret_exits_1_with_the_services_reason() {
    let server = bedrock(vec![text_reply(&["never"])], known(None)).await;
    let wrong = "bedrock-WRONG-secret-9876543210";
    let output = Run::bedrock(&server)
        .key(wrong)
        .args(["--no-stdin", "--retries", "0"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(1), "{}", output.stderr());
    assert!(
        output.last_line().contains("HTTP 403"),
        "{}",
        output.stderr()
    );
    assert!(
        output
            .last_line()
            .contains("The request signature we calculated does not match")
    );
    output.assert_key_absent(wrong);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bedrock_api_key_goes_as_a_bearer_token() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(MODEL_PATH))
        .and(header("authorization", "Bearer ABSKbedrock-api-key-SECRET"))
        .respond_with(eventstream(text_reply(&["ok"])))
        .mount(&server)
        .await;
    let output = Run::bedrock(&server)
        .no_key()
        .env("AWS_BEARER_TOKEN_BEDROCK", "ABSKbedrock-api-key-SECRET")
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    assert_eq!(output.stdout(), "ok\n");
    output.assert_key_absent("ABSKbedrock-api-key-SECRET");
}

#[test]
fn missing_credentials_a_region_or_a_model_are_named_with_exit_2() {
    let run = || Run::new().args(["--provider", "bedrock", "--no-stdin"]);
    let none = run()
        .env("AWS_REGION", "us-east-1")
        .args(["-m", "m", "q"])
        .output();
    assert_eq!(none.code(), Some(2));
    assert!(
        none.last_line()
            .contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
        "{}",
        none.stderr()
    );
    let no_id = run()
        .env("AWS_REGION", "us-east-1")
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .args(["-m", "m", "q"])
        .output();
    assert_eq!(no_id.code(), Some(2));
    assert!(
        no_id.last_line().contains("AWS_ACCESS_KEY_ID is not set"),
        "{}",
        no_id.stderr()
    );
    no_id.assert_key_absent(SECRET);
    let no_region = run()
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .args(["-m", "m", "q"])
        .output();
    assert_eq!(no_region.code(), Some(2));
    assert!(
        no_region.last_line().contains("AWS_REGION"),
        "{}",
        no_region.stderr()
    );
    let no_model = run().env("AWS_REGION", "us-east-1").arg("q").output();
    assert_eq!(no_model.code(), Some(2));
    assert!(
        no_model.last_line().contains("-m MODEL"),
        "{}",
        no_model.stderr()
    );
}

#[test]
fn leash_config_shows_the_region_and_endpoint_with_their_layers() {
    let output = Run::new()
        .command_word("config")
        .env("AWS_DEFAULT_REGION", "eu-west-3")
        .env("AWS_ACCESS_KEY_ID", "AKIDLEASHTEST")
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_SESSION_TOKEN", TOKEN)
        .args(["--provider", "bedrock", "-m", "m"])
        .output();
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let text = output.stdout();
    assert!(
        text.contains("base-url = \"https://bedrock-runtime.eu-west-3.amazonaws.com\""),
        "{text}"
    );
    assert!(
        text.contains("aws-default-region = \"eu-west-3\""),
        "{text}"
    );
    assert!(text.contains("# env AWS_DEFAULT_REGION"), "{text}");
    assert!(text.contains("# env AWS_SECRET_ACCESS_KEY"), "{text}");
    output.assert_key_absent(SECRET);
    output.assert_key_absent(TOKEN);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_secrets_are_in_no_trace() {
    use crate::support::otlp::{Mode, Receiver};
    let server = bedrock(call_then_answer(), known(Some(TOKEN))).await;
    let receiver = Receiver::start(Mode::Ok);
    let output = Run::bedrock(&server)
        .key(SECRET)
        .env("AWS_SESSION_TOKEN", TOKEN)
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
            .any(|span| span["attributes"]["gen_ai.provider.name"] == "aws.bedrock"),
        "{spans:?}"
    );
    let raw = String::from_utf8_lossy(&receiver.raw()).into_owned();
    assert!(!raw.contains(SECRET) && !raw.contains(TOKEN));
}
