//! `--provider vertex` through the real binary against a loopback Vertex
//! AI (docs/src/vertex.md "Google Vertex AI"): the mock is a token
//! endpoint that checks a service account's JWT assertion as Google's
//! does (grant type, audience, scope, and the RS256 signature against the
//! account's public key; a bad one gets Google's `invalid_grant`) and the
//! two publishers' streaming addresses, which answer only the token it
//! issued. The official SDKs accept it (`google-genai` with
//! `vertexai=True`, `anthropic`'s `AnthropicVertex`, each through
//! `google-auth`'s own JWT), so leash is tested against the wire they speak.

#![allow(clippy::unwrap_used)]

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::signature::{KeyPair, RSA_PKCS1_2048_8192_SHA256, RsaKeyPair, UnparsedPublicKey};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::support::run::Run;
use crate::support::sdk;
use crate::support::sse::{anthropic, gemini, sse};

const PROJECT: &str = "leash-proj-1";
const LOCATION: &str = "us-central1";
const EMAIL: &str = "leash-ci@leash-proj-1.iam.gserviceaccount.com";
/// An `authorized_user`'s refresh token and client secret.
const REFRESH: &str = "1//refresh-token-SECRET-abcdef0123";
const CLIENT_SECRET: &str = "client-secret-SECRET-0123456789";
/// The access token the mock issues.
const TOKEN: &str = "ya29.vertex-integration-ACCESS-TOKEN-0123456789";
const GEMINI_PATH: &str = "/v1/projects/leash-proj-1/locations/us-central1/publishers/google/models/gemini-test:streamGenerateContent";
const CLAUDE_PATH: &str = "/v1/projects/leash-proj-1/locations/us-central1/publishers/anthropic/models/claude-test:streamRawPredict";

/// A PEM's DER.
fn der(pem: &str) -> Vec<u8> {
    let body: String = pem
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    STANDARD.decode(body).unwrap()
}

/// Google's token endpoint for one service account: the assertion's
/// RS256 signature is checked against the account's public key, its
/// audience is Google's token endpoint (as google-auth signs it, whatever
/// the file's `token_uri`).
struct TokenEndpoint {
    public_key: Vec<u8>,
    audience: String,
}

impl Respond for TokenEndpoint {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let refuse = |error: &str, description: &str| {
            ResponseTemplate::new(400)
                .set_body_json(json!({"error": error, "error_description": description}))
        };
        let form: Vec<(String, String)> = url_pairs(&request.body);
        let field = |name: &str| {
            form.iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        };
        if field("grant_type").as_deref() == Some("refresh_token") {
            return match field("refresh_token").as_deref() == Some(REFRESH)
                && field("client_secret").as_deref() == Some(CLIENT_SECRET)
            {
                true => ResponseTemplate::new(200)
                    .set_body_json(json!({"access_token": TOKEN, "expires_in": 3599})),
                false => refuse("invalid_grant", "Bad Request"),
            };
        }
        if field("grant_type").as_deref() != Some("urn:ietf:params:oauth:grant-type:jwt-bearer") {
            return refuse("unsupported_grant_type", "Invalid grant_type: ");
        }
        let Some(assertion) = field("assertion") else {
            return refuse("invalid_request", "Missing required parameter: assertion");
        };
        let parts: Vec<&str> = assertion.split('.').collect();
        let [header, claims, signature] = parts[..] else {
            return refuse(
                "invalid_grant",
                "Invalid JWT: Token must be a short-lived token",
            );
        };
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap_or_default())
                .unwrap_or_default();
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap_or_default())
                .unwrap_or_default();
        let signature = URL_SAFE_NO_PAD.decode(signature).unwrap_or_default();
        let signed = assertion.rsplit_once('.').unwrap().0;
        let verified = UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, &self.public_key)
            .verify(signed.as_bytes(), &signature)
            .is_ok();
        if header["alg"] != "RS256" || !verified {
            return refuse("invalid_grant", "Invalid JWT Signature.");
        }
        if claims["aud"] != self.audience.as_str() || claims["iss"] != EMAIL {
            return refuse("invalid_grant", "Invalid JWT: audience or issuer");
        }
        let scopes = claims["scope"].as_str().unwrap_or_default();
        if !scopes.contains("https://www.googleapis.com/auth/cloud-platform") {
            return refuse("invalid_scope", "Invalid OAuth scope.");
        }
        ResponseTemplate::new(200).set_body_json(
            json!({"access_token": TOKEN, "expires_in": 3599, "token_type": "Bearer"}),
        )
    }
}

/// An `application/x-www-form-urlencoded` body's pairs.
fn url_pairs(body: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(body);
    let url = reqwest::Url::parse(&format!("http://x/?{text}")).unwrap();
    url.query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The mock: the token endpoint at `/token` for the account whose key is
/// `pem`, and `replies` in order at `path` for requests bearing [`TOKEN`];
/// any other gets Google's 401.
async fn vertex(pem: &str, at: &str, replies: Vec<String>) -> MockServer {
    let server = MockServer::start().await;
    let pair = RsaKeyPair::from_pkcs8(&der(pem)).unwrap();
    Mock::given(method("POST"))
        .and(path("/token"))
        .respond_with(TokenEndpoint {
            public_key: pair.public_key().as_ref().to_vec(),
            audience: "https://oauth2.googleapis.com/token".to_owned(),
        })
        .mount(&server)
        .await;
    let last = replies.len().saturating_sub(1);
    for (i, reply) in replies.into_iter().enumerate() {
        let mut mock = Mock::given(method("POST"))
            .and(path(at))
            .and(header("authorization", format!("Bearer {TOKEN}").as_str()));
        if at.ends_with(":streamGenerateContent") {
            mock = mock.and(query_param("alt", "sse"));
        }
        let mock = mock.respond_with(sse(reply));
        match i < last {
            true => mock.up_to_n_times(1).mount(&server).await,
            false => mock.mount(&server).await,
        }
    }
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({"error": {
            "code": 401,
            "message": "Request had invalid authentication credentials. Expected OAuth 2 access token.",
            "status": "UNAUTHENTICATED"
        }})))
        .mount(&server)
        .await;
    server
}

/// A service account file for the key `pem`, exchanged at `server`.
fn account_file(dir: &std::path::Path, server: &MockServer, pem: &str) -> std::path::PathBuf {
    let file = dir.join("sa.json");
    let account = json!({
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": "0123abcd",
        "private_key": pem,
        "client_email": EMAIL,
        "client_id": "1234567890",
        "token_uri": format!("{}/token", server.uri()),
    });
    std::fs::write(&file, account.to_string()).unwrap();
    file
}

/// A run at `server` on `model`, with the account file and the project
/// and location exported.
fn run(server: &MockServer, model: &str, file: &std::path::Path) -> Run {
    Run::provider("vertex", server.uri(), model)
        .no_key()
        .env("GOOGLE_APPLICATION_CREDENTIALS", file)
        .env("GOOGLE_CLOUD_PROJECT", PROJECT)
        .env("GOOGLE_CLOUD_LOCATION", LOCATION)
}

fn gemini_round_trip() -> Vec<String> {
    vec![
        gemini::body(&[
            gemini::call("read_file", json!({"path": "sample.ts"}), None),
            gemini::finish("STOP", 120, 0, 20, 0),
        ]),
        gemini::body(&[
            gemini::text("It returns undefined."),
            gemini::finish("STOP", 300, 100, 10, 0),
        ]),
    ]
}

fn claude_round_trip() -> Vec<String> {
    vec![
        anthropic::tool_call_reply("toolu_1", "read_file", r#"{"path":"sample.ts"}"#),
        anthropic::text_reply("It returns undefined."),
    ]
}

/// Nothing secret in what the run printed or wrote.
fn assert_clean(output: &crate::support::run::Outcome, pem: &str, written: &str) {
    output.assert_key_absent(TOKEN);
    let line = pem.lines().nth(3).unwrap();
    for text in [output.stdout(), output.stderr(), written.to_owned()] {
        assert!(!text.contains(TOKEN) && !text.contains(line));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_sdks_accept_the_mock() {
    let pem = sdk::rsa_key();
    let dir = tempfile::tempdir().unwrap();
    let server = vertex(&pem, GEMINI_PATH, vec![gemini::text_reply(&["Hel", "lo"])]).await;
    let file = account_file(dir.path(), &server, &pem);
    let env = vec![(
        "GOOGLE_APPLICATION_CREDENTIALS".to_owned(),
        file.display().to_string(),
    )];
    let args = vec![
        server.uri(),
        PROJECT.into(),
        LOCATION.into(),
        "gemini-test".into(),
    ];
    let out = sdk::run("google.genai", "vertex_gemini", args, env.clone()).await;
    assert_eq!(out["text"], "Hello", "{out}");
    assert_eq!(out["finish"], "STOP");

    let server = vertex(&pem, CLAUDE_PATH, claude_round_trip()).await;
    let file = account_file(dir.path(), &server, &pem);
    let env = vec![(
        "GOOGLE_APPLICATION_CREDENTIALS".to_owned(),
        file.display().to_string(),
    )];
    let args = || {
        vec![
            server.uri(),
            PROJECT.into(),
            LOCATION.into(),
            "claude-test".into(),
        ]
    };
    let first = sdk::run("anthropic", "anthropic_vertex", args(), env.clone()).await;
    assert_eq!(first["stop"], "tool_use", "{first}");
    assert_eq!(
        first["calls"],
        json!([{"name": "read_file", "input": {"path": "sample.ts"}}])
    );
    let second = sdk::run("anthropic", "anthropic_vertex", args(), env).await;
    assert_eq!(second["text"], "It returns undefined.", "{second}");
    // What the SDK sent: a version in the body, no model. (anthropic
    // 2.17.0 sends its own API version, "2026-10-21"; Google's Vertex
    // documentation and leash send "vertex-2023-10-16".)
    let sent: Vec<Value> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|request| request.url.path() == CLAUDE_PATH)
        .map(|request| serde_json::from_slice(&request.body).unwrap())
        .collect();
    assert!(sent[0]["anthropic_version"].is_string(), "{}", sent[0]);
    assert!(sent[0].get("model").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gemini_tool_round_trip_with_one_token_and_no_secret_out() {
    let pem = sdk::rsa_key();
    let dir = tempfile::tempdir().unwrap();
    let server = vertex(&pem, GEMINI_PATH, gemini_round_trip()).await;
    let file = account_file(dir.path(), &server, &pem);
    let transcript = dir.path().join("t.jsonl");
    let output = run(&server, "gemini-test", &file)
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
    assert_eq!(result["provider"], "vertex");
    assert_eq!(result["usage"]["input"], 320);
    assert_eq!(result["usage"]["cacheRead"], 100);
    assert_eq!(result["usage"]["output"], 30);
    assert_clean(
        &output,
        &pem,
        &std::fs::read_to_string(&transcript).unwrap(),
    );
    let requests = server.received_requests().await.unwrap();
    let tokens = requests.iter().filter(|r| r.url.path() == "/token").count();
    assert_eq!(tokens, 1, "the token is cached for the run");
    let second: Value = serde_json::from_slice(&requests.last().unwrap().body).unwrap();
    let response = &second["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "read_file");
    assert!(
        response["response"]["output"]
            .as_str()
            .unwrap()
            .contains("first")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claude_tool_round_trip_on_the_anthropic_publisher() {
    let pem = sdk::rsa_key();
    let dir = tempfile::tempdir().unwrap();
    let server = vertex(&pem, CLAUDE_PATH, claude_round_trip()).await;
    let file = account_file(dir.path(), &server, &pem);
    let transcript = dir.path().join("t.jsonl");
    let output = run(&server, "claude-test", &file)
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
    assert_eq!(result["usage"]["input"], 20);
    assert_eq!(result["usage"]["output"], 10);
    assert_clean(
        &output,
        &pem,
        &std::fs::read_to_string(&transcript).unwrap(),
    );
    let bodies: Vec<Value> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.url.path() == CLAUDE_PATH)
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["anthropic_version"], "vertex-2023-10-16");
    assert!(bodies[0].get("model").is_none(), "{}", bodies[0]);
    assert_eq!(
        bodies[1]["messages"][2]["content"][0]["type"],
        "tool_result"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cut_replies_exit_5_and_the_schema_is_asked() {
    let pem = sdk::rsa_key();
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","required":["answer"],"properties":{"answer":{"type":"integer"}}}"#,
    )
    .unwrap();

    let cut = gemini::body(&[
        gemini::text("Partial"),
        gemini::finish("MAX_TOKENS", 10, 0, 5, 0),
    ]);
    let server = vertex(&pem, GEMINI_PATH, vec![cut]).await;
    let file = account_file(dir.path(), &server, &pem);
    let output = run(&server, "gemini-test", &file)
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(5), "{}", output.stderr());

    let cut = [
        anthropic::message_start(10),
        anthropic::text_block(0, &["Partial"]),
        anthropic::message_delta("max_tokens", 5),
        anthropic::message_stop(),
    ]
    .concat();
    let server = vertex(&pem, CLAUDE_PATH, vec![cut]).await;
    let file = account_file(dir.path(), &server, &pem);
    let output = run(&server, "claude-test", &file)
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(5), "{}", output.stderr());

    let server = vertex(
        &pem,
        GEMINI_PATH,
        vec![gemini::text_reply(&["{\"answer\": 42}"])],
    )
    .await;
    let file = account_file(dir.path(), &server, &pem);
    let output = run(&server, "gemini-test", &file)
        .args(["--no-stdin", "--output-schema"])
        .arg(&schema)
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    assert_eq!(output.stdout(), "{\"answer\": 42}\n");
    let body: Value = serde_json::from_slice(
        &server
            .received_requests()
            .await
            .unwrap()
            .last()
            .unwrap()
            .body,
    )
    .unwrap();
    assert_eq!(
        body["generationConfig"]["responseMimeType"],
        "application/json"
    );
    assert_eq!(
        body["generationConfig"]["responseJsonSchema"]["required"],
        json!(["answer"])
    );

    let server = vertex(
        &pem,
        CLAUDE_PATH,
        vec![anthropic::text_reply("{\"answer\": 42}")],
    )
    .await;
    let file = account_file(dir.path(), &server, &pem);
    let output = run(&server, "claude-test", &file)
        .args(["--no-stdin", "--output-schema"])
        .arg(&schema)
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    assert_eq!(output.stdout(), "{\"answer\": 42}\n");
    let body: Value = serde_json::from_slice(
        &server
            .received_requests()
            .await
            .unwrap()
            .last()
            .unwrap()
            .body,
    )
    .unwrap();
    assert_eq!(
        body["output_config"]["format"]["schema"]["required"],
        json!(["answer"]),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_signature_exits_1_with_google_s_reason_and_missing_values_exit_2() {
    let pem = sdk::rsa_key();
    let other = sdk::rsa_key();
    let dir = tempfile::tempdir().unwrap();
    for (model, at) in [("gemini-test", GEMINI_PATH), ("claude-test", CLAUDE_PATH)] {
        // The mock knows `pem`; the file holds another account's key.
        let server = vertex(&pem, at, vec![gemini::text_reply(&["x"])]).await;
        let file = account_file(dir.path(), &server, &other);
        let output = run(&server, model, &file)
            .args(["--no-stdin"])
            .prompt("q")
            .output_async()
            .await;
        assert_eq!(output.code(), Some(1), "{}", output.stderr());
        assert!(
            output
                .stderr()
                .contains("invalid_grant: Invalid JWT Signature."),
            "{}",
            output.stderr()
        );
        assert_clean(&output, &other, "");
    }

    let server = vertex(&pem, GEMINI_PATH, vec![]).await;
    let file = account_file(dir.path(), &server, &pem);
    let output = Run::provider("vertex", server.uri(), "gemini-test")
        .no_key()
        .env("GOOGLE_CLOUD_PROJECT", PROJECT)
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(2));
    assert!(
        output
            .last_line()
            .contains("GOOGLE_APPLICATION_CREDENTIALS (or GOOGLE_OAUTH_ACCESS_TOKEN) is not set"),
        "{}",
        output.stderr()
    );

    // A project only the service account file names is taken; none at all is named.
    let bare = dir.path().join("bare.json");
    let mut account: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    account.as_object_mut().unwrap().remove("project_id");
    std::fs::write(&bare, account.to_string()).unwrap();
    let output = run(&server, "gemini-test", &bare)
        .env_remove("GOOGLE_CLOUD_PROJECT")
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(2));
    assert!(
        output
            .last_line()
            .contains("--provider vertex needs a project: set GOOGLE_CLOUD_PROJECT"),
        "{}",
        output.stderr()
    );

    // A hostile location and token_uri are refused before any request.
    let output = run(&server, "gemini-test", &file)
        .env("GOOGLE_CLOUD_LOCATION", "evil.example/x?")
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(2));
    assert!(
        output.last_line().contains("is not a location name"),
        "{}",
        output.stderr()
    );
    account["token_uri"] = "http://evil.example/token".into();
    std::fs::write(&bare, account.to_string()).unwrap();
    let output = run(&server, "gemini-test", &bare)
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(2));
    assert!(
        output
            .last_line()
            .contains("\"token_uri\" leash will not send a credential to"),
        "{}",
        output.stderr()
    );
    assert_clean(&output, &pem, "");
    assert_eq!(server.received_requests().await.unwrap().len(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_checkout_s_env_may_not_name_the_credentials_or_the_project() {
    let pem = sdk::rsa_key();
    let dir = tempfile::tempdir().unwrap();
    let server = vertex(&pem, GEMINI_PATH, vec![gemini::text_reply(&["x"])]).await;
    let file = account_file(dir.path(), &server, &pem);
    for line in [
        format!("GOOGLE_APPLICATION_CREDENTIALS={}", file.display()),
        format!("GOOGLE_CLOUD_PROJECT={PROJECT}"),
    ] {
        std::fs::write(dir.path().join(".env"), format!("{line}\n")).unwrap();
        let mut run = run(&server, "gemini-test", &file).current_dir(dir.path());
        let name = line.split('=').next().unwrap();
        run = run.env_remove(name);
        let output = run.args(["--no-stdin"]).prompt("q").output_async().await;
        assert_eq!(output.code(), Some(2), "{}", output.stderr());
        assert!(
            output
                .last_line()
                .contains(&format!("sets {name}, which a .env may not set")),
            "{}",
            output.stderr()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_access_token_given_directly_and_no_secret_in_the_trace() {
    use crate::support::otlp::{Mode, Receiver};
    let pem = sdk::rsa_key();
    let dir = tempfile::tempdir().unwrap();
    let server = vertex(&pem, CLAUDE_PATH, vec![anthropic::text_reply("hi")]).await;
    let output = Run::provider("vertex", server.uri(), "claude-test")
        .key(TOKEN)
        .env("GOOGLE_CLOUD_PROJECT", PROJECT)
        .env("GOOGLE_CLOUD_LOCATION", LOCATION)
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    assert_eq!(output.stdout().trim(), "hi");

    let server = vertex(&pem, GEMINI_PATH, gemini_round_trip()).await;
    let file = account_file(dir.path(), &server, &pem);
    let receiver = Receiver::start(Mode::Ok);
    let output = run(&server, "gemini-test", &file)
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
            .any(|span| span["attributes"]["gen_ai.provider.name"] == "gcp.vertex_ai"),
        "{spans:?}"
    );
    let raw = String::from_utf8_lossy(&receiver.raw()).into_owned();
    let line = pem.lines().nth(3).unwrap();
    assert!(!raw.contains(TOKEN) && !raw.contains(line));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_credentials_file_under_the_root_is_hidden_from_the_tools() {
    let pem = sdk::rsa_key();
    let root = tempfile::tempdir().unwrap();
    let replies = vec![
        gemini::body(&[
            gemini::call("read_file", json!({"path": "sa.json"}), None),
            gemini::call("grep", json!({"pattern": "PRIVATE KEY"}), None),
            gemini::finish("STOP", 10, 0, 5, 0),
        ]),
        gemini::text_reply(&["done"]),
    ];
    let server = vertex(&pem, GEMINI_PATH, replies).await;
    // Where google-github-actions/auth writes it: in the workspace.
    let file = account_file(root.path(), &server, &pem);
    let output = run(&server, "gemini-test", &file)
        .args(["--no-stdin", "--tools", "read_file,grep", "--root"])
        .arg(root.path())
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let requests = server.received_requests().await.unwrap();
    let last = String::from_utf8_lossy(&requests.last().unwrap().body).into_owned();
    assert!(
        last.contains("is a credentials file, which holds secrets"),
        "{last}"
    );
    assert!(last.contains("No matches"), "{last}");
    let line = pem.lines().nth(3).unwrap();
    for request in &requests {
        assert!(!String::from_utf8_lossy(&request.body).contains(line));
    }
}

/// GitHub's request token (a secret the credentials file holds).
const REQUEST_TOKEN: &str = "ghs-actions-id-token-request-SECRET-42";
/// GitHub's OIDC token, the subject token.
const OIDC: &str = "eyJhbGciOiJSUzI1NiJ9.github-oidc-SECRET.sig";
/// What the Security Token Service issues.
const FEDERATED: &str = "ya29.federated-sts-SECRET-token-777";
const AUDIENCE: &str =
    "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/gh/providers/gh";
const IMPERSONATE: &str =
    "/v1/projects/-/serviceAccounts/ci@leash-proj-1.iam.gserviceaccount.com:generateAccessToken";

/// Workload identity federation on `server`, as Google answers it:
/// GitHub's OIDC endpoint (the request token in a header), the STS
/// exchange of that token for [`FEDERATED`], and the service account's
/// `generateAccessToken` with it, which gives [`TOKEN`].
async fn federation(server: &MockServer) {
    Mock::given(method("GET"))
        .and(path("/oidc"))
        .and(query_param("audience", "https://iam.googleapis.com/x"))
        .and(header(
            "authorization",
            format!("Bearer {REQUEST_TOKEN}").as_str(),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"count": 1, "value": OIDC})))
        .with_priority(1)
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path("/sts"))
        .and(wiremock::matchers::body_string_contains(
            "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange",
        ))
        .and(wiremock::matchers::body_string_contains(format!("subject_token={OIDC}")))
        .and(wiremock::matchers::body_string_contains(
            "audience=%2F%2Fiam.googleapis.com%2Fprojects%2F123",
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "access_token": FEDERATED, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "token_type": "Bearer", "expires_in": 3600})))
        .with_priority(1)
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path(IMPERSONATE))
        .and(header(
            "authorization",
            format!("Bearer {FEDERATED}").as_str(),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "accessToken": TOKEN, "expireTime": "2099-01-01T00:00:00Z"})))
        .with_priority(1)
        .mount(server)
        .await;
}

/// The `external_account` file google-github-actions/auth writes, for
/// the [`federation`] on `server`.
fn federation_file(dir: &std::path::Path, server: &MockServer) -> std::path::PathBuf {
    let file = dir.join("gha-creds-1.json");
    let uri = server.uri();
    std::fs::write(
        &file,
        json!({
            "type": "external_account",
            "audience": AUDIENCE,
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": format!("{uri}/sts"),
            "service_account_impersonation_url": format!("{uri}{IMPERSONATE}"),
            "credential_source": {
                "url": format!("{uri}/oidc?audience=https://iam.googleapis.com/x"),
                "headers": {"Authorization": format!("Bearer {REQUEST_TOKEN}")},
                "format": {"type": "json", "subject_token_field_name": "value"}
            }
        })
        .to_string(),
    )
    .unwrap();
    file
}

/// Workload identity federation as google-github-actions/auth sets it up,
/// through the SDK and then leash, against the same mock.
#[tokio::test(flavor = "multi_thread")]
async fn an_external_account_federates_then_impersonates() {
    let pem = sdk::rsa_key();
    let dir = tempfile::tempdir().unwrap();
    let server = vertex(&pem, GEMINI_PATH, vec![gemini::text_reply(&["federated"])]).await;
    federation(&server).await;
    let file = federation_file(dir.path(), &server);
    let env = vec![(
        "GOOGLE_APPLICATION_CREDENTIALS".to_owned(),
        file.display().to_string(),
    )];
    let args = vec![
        server.uri(),
        PROJECT.into(),
        LOCATION.into(),
        "gemini-test".into(),
    ];
    let out = sdk::run("google.genai", "vertex_gemini", args, env).await;
    assert_eq!(out["text"], "federated", "{out}");

    let output = run(&server, "gemini-test", &file)
        .args(["--no-stdin", "--events", "jsonl"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    assert_eq!(output.stdout().trim(), "federated");
    for secret in [REQUEST_TOKEN, OIDC, FEDERATED, TOKEN] {
        output.assert_key_absent(secret);
    }
    let requests = server.received_requests().await.unwrap();
    let count = |at: &str| requests.iter().filter(|r| r.url.path() == at).count();
    // One exchange each for the SDK and for leash.
    assert_eq!(
        (count("/oidc"), count("/sts"), count(IMPERSONATE)),
        (2, 2, 2)
    );

    // A refused exchange names STS's reason and none of the secrets.
    let server = vertex(&pem, CLAUDE_PATH, vec![]).await;
    Mock::given(method("GET"))
        .and(path("/oidc"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"value": OIDC})))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/sts"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "error": "invalid_grant",
            "error_description": format!("The audience in ID Token [{OIDC}] does not match the expected audience.")})))
        .with_priority(1)
        .mount(&server)
        .await;
    let uri = server.uri();
    std::fs::write(&file, json!({
        "type": "external_account", "audience": AUDIENCE,
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": format!("{uri}/sts"),
        "credential_source": {"url": format!("{uri}/oidc"), "headers": {"Authorization": format!("Bearer {REQUEST_TOKEN}")},
                              "format": {"type": "json", "subject_token_field_name": "value"}}
    }).to_string()).unwrap();
    let output = run(&server, "claude-test", &file)
        .args(["--no-stdin"])
        .prompt("q")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(1), "{}", output.stderr());
    assert!(
        output
            .last_line()
            .contains("invalid_grant: The audience in ID Token [***] does not match"),
        "{}",
        output.stderr()
    );
    output.assert_key_absent(OIDC);
    output.assert_key_absent(REQUEST_TOKEN);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_s_refresh_token_and_a_batch_share_one_token() {
    let pem = sdk::rsa_key();
    let dir = tempfile::tempdir().unwrap();
    let server = vertex(&pem, GEMINI_PATH, vec![gemini::text_reply(&["ok"])]).await;
    let file = dir.path().join("adc.json");
    std::fs::write(
        &file,
        json!({
            "type": "authorized_user", "client_id": "123.apps.googleusercontent.com",
            "client_secret": CLIENT_SECRET, "refresh_token": REFRESH,
            "token_uri": format!("{}/token", server.uri()),
        })
        .to_string(),
    )
    .unwrap();
    let items = dir.path().join("items.jsonl");
    std::fs::write(&items, "one\ntwo\nthree\n").unwrap();
    let output = run(&server, "gemini-test", &file)
        .command_word("batch")
        .arg(&items)
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    assert_eq!(
        output.stdout().matches("\"reply\":\"ok\"").count(),
        3,
        "{}",
        output.stdout()
    );
    let requests = server.received_requests().await.unwrap();
    assert_eq!(
        requests.iter().filter(|r| r.url.path() == "/token").count(),
        1
    );
    assert_eq!(
        requests
            .iter()
            .filter(|r| r.url.path() == GEMINI_PATH)
            .count(),
        3
    );
    for secret in [REFRESH, CLIENT_SECRET, TOKEN] {
        output.assert_key_absent(secret);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn leash_config_shows_each_value_s_layer_and_no_token() {
    let output = Run::new()
        .command_word("config")
        .args(["--provider", "vertex", "-m", "claude-sonnet-4-5"])
        .env("GOOGLE_CLOUD_PROJECT", PROJECT)
        .env("CLOUD_ML_REGION", "europe-west4")
        .env("GOOGLE_APPLICATION_CREDENTIALS", "/ci/gha-creds-1.json")
        .env("GOOGLE_OAUTH_ACCESS_TOKEN", TOKEN)
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let text = output.stdout();
    for wanted in [
        "# base-url = \"https://europe-west4-aiplatform.googleapis.com\"",
        "# api-key = \"***\"",
        "# env GOOGLE_OAUTH_ACCESS_TOKEN",
        "cloud-ml-region = \"europe-west4\"",
        "# google-cloud-project = \"leash-proj-1\"",
        "# google-application-credentials = \"/ci/gha-creds-1.json\"",
        "# env GOOGLE_APPLICATION_CREDENTIALS",
    ] {
        assert!(text.contains(wanted), "{wanted}: {text}");
    }
    output.assert_key_absent(TOKEN);

    let output = Run::new()
        .command_word("config")
        .args(["--provider", "vertex"])
        .env("GOOGLE_APPLICATION_CREDENTIALS", "/ci/gha-creds-1.json")
        .output_async()
        .await;
    let text = output.stdout();
    assert!(
        text.contains("# api-key")
            && text.contains(
                "an access token: set GOOGLE_OAUTH_ACCESS_TOKEN, or the credentials file below"
            ),
        "{text}"
    );
    assert!(
        text.contains("# base-url = \"https://aiplatform.googleapis.com\""),
        "{text}"
    );
}
