//! The HTTP layer against loopback servers, its messages.

use super::*;
use pretty_assertions::assert_eq;

const URL: &str = "http://127.0.0.1:9/v1/messages";

#[test]
fn error_messages_from_each_providers_body() {
    let openai = r#"{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}"#;
    assert_eq!(
        status_message(401, openai, URL),
        "HTTP 401 Unauthorized: Incorrect API key provided."
    );
    let anthropic =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    assert_eq!(
        status_message(529, anthropic, URL),
        "HTTP 529 Overloaded: Overloaded"
    );
    assert_eq!(
        status_message(404, r#"{"error":"model 'x' not found"}"#, URL),
        "HTTP 404 Not Found for POST http://127.0.0.1:9/v1/messages: model 'x' not found"
    );
    assert_eq!(
        status_message(404, r#"{"detail":"Not Found"}"#, URL),
        "HTTP 404 Not Found for POST http://127.0.0.1:9/v1/messages: Not Found"
    );
    assert_eq!(
        status_message(
            502,
            "<html>\n <head><title>502 Bad Gateway</title></head>\n</html>",
            URL
        ),
        "HTTP 502 Bad Gateway: <html> <head><title>502 Bad Gateway</title></head> </html>"
    );
    assert_eq!(status_message(503, "", URL), "HTTP 503 Service Unavailable");
    assert_eq!(status_message(599, "x", URL), "HTTP 599: x");
    assert_eq!(
        status_message(400, r#"{"error":{"code":42}}"#, URL),
        r#"HTTP 400 Bad Request: {"error":{"code":42}}"#
    );
}

#[test]
fn snippets_are_short_and_cut_on_a_character() {
    let long = "é".repeat(500);
    let cut = snippet(&long);
    assert_eq!(cut.chars().count(), SNIPPET_CHARS + 1);
    assert!(cut.ends_with('…'));
}

#[tokio::test]
async fn connection_refused_is_retryable_and_names_the_server() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let client = client(Tls::None).unwrap();
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions?key=sk-x");
    let request = client.post(&url).build().unwrap();
    let failure = send(&client, request, Some(&ApiKey::new("sk-x")))
        .await
        .unwrap_err();
    assert_eq!(failure.status, None);
    assert!(failure.retryable);
    assert!(
        failure.message.starts_with(&format!(
            "could not connect to http://127.0.0.1:{port}/v1/chat/completions: "
        )),
        "{}",
        failure.message
    );
    assert!(!failure.message.contains("sk-x"));
}

#[tokio::test]
async fn an_error_status_reads_the_body_and_redacts_the_key() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "2")
                .set_body_raw(
                    r#"{"error":{"message":"Rate limit for key sk-live-42 reached"}}"#,
                    "application/json",
                ),
        )
        .mount(&server)
        .await;
    let client = client(Tls::None).unwrap();
    let request = client.post(server.uri()).build().unwrap();
    let failure = send(&client, request, Some(&ApiKey::new("sk-live-42")))
        .await
        .unwrap_err();
    assert_eq!(
        failure,
        HttpFailure {
            status: Some(429),
            message: "HTTP 429 Too Many Requests: Rate limit for key *** reached".to_string(),
            retry_after: Some(Duration::from_secs(2)),
            retryable: true,
            rate_hint: Default::default(),
        }
    );
}

#[tokio::test]
async fn a_server_that_never_answers_is_a_retryable_failure_after_the_timeout() {
    // Accepts the connection, reads nothing, answers nothing.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/messages", listener.local_addr().unwrap());
    let hold = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(10)).await;
        drop(socket);
    });
    let client = client(Tls::None).unwrap();
    let request = client.post(&url).build().unwrap();
    let started = std::time::Instant::now();
    let failure = send_within(&client, request, None, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        failure.message,
        format!("{url} sent no response within 0.3s")
    );
    assert!(failure.retryable);
    hold.abort();
}

async fn served(template: wiremock::ResponseTemplate) -> Result<String, HttpFailure> {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer};
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(template)
        .mount(&server)
        .await;
    let client = client(Tls::None).unwrap();
    let request = client.post(server.uri()).build().unwrap();
    let key = ApiKey::new("sk-echoed-key");
    let response = send(&client, request, Some(&key)).await?;
    let response = event_stream(response, Some(&key)).await?;
    Ok(response.text().await.unwrap())
}

#[tokio::test]
async fn a_success_that_is_not_an_event_stream_says_what_came_instead() {
    use wiremock::ResponseTemplate;
    let html = ResponseTemplate::new(200).set_body_raw(
        "<html><body>Please log in, sk-echoed-key</body></html>",
        "text/html; charset=utf-8",
    );
    let failure = served(html).await.unwrap_err();
    assert_eq!(
        failure.message,
        "HTTP 200 OK with HTML instead of an event stream (is the base URL the API's address?): <html><body>Please log in, ***</body></html>"
    );
    assert!(!failure.retryable);
    let json = ResponseTemplate::new(200).set_body_raw(
        r#"{"error":{"message":"streaming is not supported"}}"#,
        "application/json",
    );
    assert_eq!(
        served(json).await.unwrap_err().message,
        "HTTP 200 OK with JSON instead of an event stream (the server may not support streaming): streaming is not supported"
    );
    // An event stream, or a body without a content type, is read.
    let sse = ResponseTemplate::new(200).set_body_raw("data: x\n\n", "text/event-stream");
    assert_eq!(served(sse).await.unwrap(), "data: x\n\n");
    let bare = ResponseTemplate::new(200).set_body_bytes("data: y\n\n");
    assert_eq!(served(bare).await.unwrap(), "data: y\n\n");
}

#[test]
fn content_types_that_are_surely_not_event_streams() {
    for (content_type, kind) in [
        ("text/html", Some("HTML")),
        ("TEXT/HTML; charset=UTF-8", Some("HTML")),
        ("application/json", Some("JSON")),
        ("application/problem+json", Some("JSON")),
        ("text/xml", Some("XML")),
        ("text/event-stream", None),
        ("text/event-stream; charset=utf-8", None),
        ("text/plain", None),
        ("application/octet-stream", None),
        ("", None),
    ] {
        assert_eq!(not_an_event_stream(content_type), kind, "{content_type}");
    }
}

#[tokio::test]
async fn a_redirect_is_not_followed_and_says_where_it_points() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(301).insert_header("location", "https://example.com/v1"),
        )
        .mount(&server)
        .await;
    let client = client(Tls::None).unwrap();
    let request = client.post(server.uri()).build().unwrap();
    let failure = send(&client, request, None).await.unwrap_err();
    assert_eq!(
        failure.message,
        "HTTP 301 Moved Permanently (redirected to https://example.com/v1; use that as the base URL)"
    );
    assert!(!failure.retryable);
}

#[test]
fn only_a_plain_http_url_goes_without_roots() {
    assert_eq!(Tls::for_url("http://127.0.0.1:8080/v1"), Tls::None);
    assert_eq!(Tls::for_url("HTTP://localhost/v1"), Tls::None);
    assert_eq!(Tls::for_url("https://api.openai.com/v1"), Tls::Roots);
    assert_eq!(Tls::for_url("http"), Tls::Roots);
    assert_eq!(Tls::for_url(""), Tls::Roots);
}

/// A plain-http client reads no certificate file: an unreadable
/// `SSL_CERT_FILE` cannot fail a run against a local server, while an
/// https client still says what is wrong with it.
#[test]
fn a_plain_http_client_reads_no_roots() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.pem");
    std::fs::write(
        &broken,
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "http::tests::client_in_child", "--nocapture"])
        .env("LEASH_CLIENT_CHILD", "1")
        .env("SSL_CERT_FILE", &broken)
        .env_remove("SSL_CERT_DIR")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("plain: ok"), "{text}");
    assert!(text.contains("https: error"), "{text}");
}

/// Run by [`a_plain_http_client_reads_no_roots`] in a child process (the
/// roots are read from the environment, which a test must not change in
/// its own process).
#[test]
#[allow(clippy::print_stdout)] // the child's answer to its parent test
fn client_in_child() {
    if std::env::var_os("LEASH_CLIENT_CHILD").is_none() {
        return;
    }
    let plain = client(Tls::None).map(|_| "ok").unwrap_or("error");
    let https = client(Tls::Roots).map(|_| "ok").unwrap_or("error");
    println!("plain: {plain}; https: {https}");
}
