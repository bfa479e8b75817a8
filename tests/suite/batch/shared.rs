//! What the items share: one rate gate (a 429 with `retry-after` pauses
//! the other items too, requests timestamped by the mock), the batch's
//! token budget, and MCP servers started once.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::*;

/// Answers `template` and notes when each request came, by marker.
struct Timed {
    template: ResponseTemplate,
    marker: &'static str,
    log: Arc<Mutex<Vec<(&'static str, Instant)>>>,
}

impl Respond for Timed {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        self.log.lock().unwrap().push((self.marker, Instant::now()));
        self.template.clone()
    }
}

#[tokio::test]
async fn a_refusal_with_retry_after_pauses_every_item() {
    let server = MockServer::start().await;
    let log = Arc::new(Mutex::new(Vec::new()));
    let timed = |marker, template| Timed {
        template,
        marker,
        log: Arc::clone(&log),
    };
    let endpoint = "/v1/chat/completions";
    let refused = ResponseTemplate::new(429)
        .insert_header("retry-after", "1")
        .set_body_json(openai::error_json("slow down"));
    Mock::given(method("POST"))
        .and(path(endpoint))
        .and(body_string_contains("alpha"))
        .respond_with(timed("alpha refused", refused))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    for (marker, delay) in [("alpha", 0), ("beta", 300), ("gamma", 0)] {
        let reply = sse(openai::text_reply(&["ok"])).set_delay(Duration::from_millis(delay));
        Mock::given(method("POST"))
            .and(path(endpoint))
            .and(body_string_contains(marker))
            .respond_with(timed(marker, reply))
            .with_priority(2)
            .mount(&server)
            .await;
    }
    let (_dir, path) = input("alpha\nbeta\ngamma\n");
    let outcome = batch(&server, Api::OpenAi, &path, &["--parallel", "2"])
        .output_async()
        .await;
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let log = log.lock().unwrap().clone();
    let at = |marker: &str| log.iter().find(|(m, _)| *m == marker).unwrap().1;
    // gamma starts when beta ends (~300 ms), while the gate is paused by
    // alpha's refusal: it waits for the retry-after as alpha does.
    let waited = at("gamma").duration_since(at("alpha refused"));
    assert!(
        waited >= Duration::from_millis(900),
        "gamma after {waited:?}: {log:?}"
    );
    assert_eq!(super::summary(&outcome)["ok"].as_u64(), Some(3));
}

#[tokio::test]
async fn the_batch_budget_stops_starting_items() {
    let server = MockServer::start().await;
    // Each reply uses 60 tokens (50 in, 10 out).
    serve(
        &server,
        Api::OpenAi,
        &[answer("task", 0, Reply::Text("ok"))],
    )
    .await;
    let (_dir, path) = input("task a\ntask b\ntask c\ntask d\n");
    let outcome = batch(
        &server,
        Api::OpenAi,
        &path,
        &["--parallel", "1", "--max-tokens-total", "100"],
    )
    .output_async()
    .await;
    assert_eq!(outcome.code(), Some(9), "{}", outcome.stderr());
    let lines = lines(&outcome);
    let statuses: Vec<&str> = lines
        .iter()
        .map(|l| l["status"].as_str().unwrap())
        .collect();
    // The second item starts with the 40 tokens left; a run that answers
    // in its first turn ends ok (a budget ends only a run that goes on),
    // and after it the batch has used 120 of its 100: no item starts.
    assert_eq!(statuses, ["ok", "ok"]);
    let summary = super::summary(&outcome);
    assert_eq!(summary["notStarted"].as_u64(), Some(2), "{summary}");
    assert_eq!(summary["tokens"].as_u64(), Some(120), "{summary}");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[test]
fn mcp_servers_start_once_for_every_item() {
    let server = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/test-server.mjs");
    if !crate::support::shell::has("node") || !server.exists() {
        eprintln!("skipped: no node for the MCP test server");
        return;
    }
    let (dir, path) = input("one\ntwo\nthree\n");
    let starts = dir.path().join("starts");
    let mcp = format!(
        "t=sh -c 'echo started >> {}; exec node {}'",
        starts.display(),
        server.display()
    );
    let script = serde_json::json!({"responses": [
        {"toolCalls": [{"id": "c1", "name": "mcp__t__small", "arguments": {}}]},
        {"text": "done"}
    ]});
    let outcome = crate::support::run::Run::faux(script)
        .command_word("batch")
        .arg(&path)
        .args(["--tools", "none", "--mcp", &mcp])
        .timeout(Duration::from_secs(60))
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let lines = lines(&outcome);
    assert_eq!(lines.len(), 3);
    assert!(
        lines
            .iter()
            .all(|l| l["turns"] == 2 && l["reply"] == "done"),
        "{lines:?}"
    );
    assert_eq!(std::fs::read_to_string(&starts).unwrap(), "started\n");
}
