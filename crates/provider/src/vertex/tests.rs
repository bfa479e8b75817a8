//! The addresses, the Claude body, and the credentials file's hostile forms.

use super::credentials::{Credentials, checked_url};
use super::*;
use leash_protocol::Message;
use pretty_assertions::assert_eq;

fn settings(base: &str, project: &str, location: &str) -> HttpSettings {
    HttpSettings {
        google: Some(GoogleCloud {
            project: project.into(),
            location: location.into(),
        }),
        ..HttpSettings::new(base, None)
    }
}

#[test]
fn each_publisher_has_its_address_and_global_has_no_region() {
    assert_eq!(
        VertexGemini::url(&settings("", "p-1", "us-central1"), "gemini-2.5-flash"),
        "https://us-central1-aiplatform.googleapis.com/v1/projects/p-1/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        VertexClaude::url(&settings("", "p-1", "global"), "claude-sonnet-4-5@20250929"),
        "https://aiplatform.googleapis.com/v1/projects/p-1/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
    );
    assert_eq!(
        VertexGemini::url(&settings("http://127.0.0.1:9/", "p", "eu"), "g"),
        "http://127.0.0.1:9/v1/projects/p/locations/eu/publishers/google/models/g:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        place::endpoint("eu"),
        "https://aiplatform.eu.rep.googleapis.com"
    );
    // A hostile model name stays one segment.
    assert_eq!(
        VertexClaude::url(
            &settings("https://h.example", "p", "l"),
            "claude-x/../../y?z#w"
        ),
        "https://h.example/v1/projects/p/locations/l/publishers/anthropic/models/claude-x%2F..%2F..%2Fy%3Fz%23w:streamRawPredict"
    );
    assert!(is_claude("claude-opus-4-1") && !is_claude("gemini-2.5-pro"));
    assert!(!place::valid_name("evil.example/x?", false));
    assert!(!place::valid_name("US-CENTRAL1", false));
    assert!(place::valid_name("example.com:my-project", true));
}

#[test]
fn the_claude_body_has_the_vertex_version_and_no_model() {
    let messages = [Message::user_text("hi")];
    let request = Request {
        model: "claude-sonnet-4-5",
        system: "",
        messages: &messages,
        tools: &[],
        transcript: &[],
        options: Default::default(),
    };
    let body = VertexClaude::body(&request, &HttpSettings::new("", None)).unwrap();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["anthropic_version"], "vertex-2023-10-16");
    assert!(body.get("model").is_none(), "{body}");
    assert_eq!(body["stream"], true);
    assert_eq!(
        VertexClaude::key_header("t"),
        ("authorization", "Bearer t".to_owned())
    );
}

#[test]
fn a_file_s_addresses_must_be_https_or_loopback() {
    let ok = |url: &str| checked_url(Some(url.into()), "", "token_uri");
    assert!(ok("https://oauth2.googleapis.com/token").is_ok());
    assert!(ok("http://127.0.0.1:8080/token").is_ok());
    assert!(ok("http://[::1]:8080/token").is_ok());
    assert!(ok("http://localhost/token").is_ok());
    for hostile in [
        "http://evil.example/token",
        "http://127.0.0.1.evil.example/token",
        "file:///etc/passwd",
        "https://user:pw@oauth2.googleapis.com/token",
        "not a url",
        "gopher://127.0.0.1/",
    ] {
        let error = ok(hostile).unwrap_err();
        assert!(error.contains("token_uri"), "{hostile}: {error}");
    }
    assert_eq!(
        checked_url(None, "https://d.example", "f").unwrap(),
        "https://d.example"
    );
}

#[test]
fn a_broken_file_is_named_without_its_values() {
    let error = Credentials::parse("{\"type\": \"service_account\", \"private_key\": \"SECRET-ISH\", \"client_email\": \"a@b\"}").unwrap_err();
    assert!(error.contains("not a PKCS#8 PEM"), "{error}");
    assert!(!error.contains("SECRET-ISH"));
    let error = Credentials::parse("{\"type\": \"impersonated_service_account\"}").unwrap_err();
    assert!(error.contains("impersonated_service_account"), "{error}");
    let error = Credentials::parse("SECRET-ISH").unwrap_err();
    assert!(!error.contains("SECRET-ISH"), "{error}");
    let external = r#"{"type": "external_account", "audience": "//iam/x", "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": "http://evil.example/token", "credential_source": {"file": "/tmp/t"}}"#;
    let error = Credentials::parse(external).unwrap_err();
    assert!(error.contains("\"token_url\""), "{error}");
    let external = r#"{"type": "external_account", "audience": "//iam/x", "subject_token_type": "t",
        "credential_source": {"url": "https://token.actions.example/x", "headers": {"Authorization": "Bearer abc"},
        "format": {"type": "json", "subject_token_field_name": "value"}}}"#;
    let parsed = Credentials::parse(external).unwrap();
    assert_eq!(
        parsed.secrets(),
        vec![leash_protocol::secret::ApiKey::new("Bearer abc")]
    );
}
