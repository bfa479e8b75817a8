//! What leash passes on between a server and the user, against the real
//! binary (docs/src/providers.md "Providers", README "Exit codes"; ARCHITECTURE.md §2.1): a stream that never
//! says how the reply ended is an error with the same words on both
//! providers; a mid-stream error leaves the same result on both; Anthropic
//! `redacted_thinking` goes back unchanged; `--output-schema` prints the
//! JSON as the model wrote it; a 404 names the URL asked; the server's
//! `x-should-retry` is obeyed; a short key does not mangle messages.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::hostile;
use crate::support::run::Run;
use crate::support::run::{last_line, stderr, stdout};
use crate::support::sse::anthropic as anthropic_support;
use crate::support::sse::openai as openai_support;

use anthropic_support as anthropic;
use hostile::*;
use openai_support as openai;
use serde_json::{Value, json};

const KEY: &str = "sk-wire-fidelity-SECRET-4242";

/// The base URL of `server` for `provider`, as users write it.
fn base(provider: &str, server: &HostileServer) -> String {
    match provider {
        "openai" => format!("{}/v1", server.url()),
        _ => server.url(),
    }
}

/// A server answering every request with `body` as an event stream.
fn streaming(body: String) -> HostileServer {
    HostileServer::always(move |_, conn| {
        conn.respond(200, "text/event-stream", body.as_bytes());
    })
}

/// `leash --provider PROVIDER` against `server`, asked one question.
fn ask(provider: &str, server: &HostileServer, key: &str) -> Run {
    let ws = Workspace::new();
    ws.http_run(provider, &base(provider, server), key)
        .keep(ws)
        .prompt("question")
}

fn anthropic_text_start(index: usize) -> String {
    anthropic::event(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    )
}

fn anthropic_text_delta(index: usize, text: &str) -> String {
    anthropic::event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
    )
}

#[test]
fn a_stream_that_never_says_how_the_reply_ended_is_an_incomplete_reply() {
    let cases = [
        (
            "openai: content then [DONE]",
            "openai",
            openai::body(&[openai::role(), openai::text("An answer")], true),
        ),
        ("openai: [DONE] alone", "openai", openai::body(&[], true)),
        (
            "anthropic: message_stop without message_delta",
            "anthropic",
            [
                anthropic::message_start(5),
                anthropic_text_start(0),
                anthropic_text_delta(0, "An answer"),
                anthropic::content_block_stop(0),
                anthropic::message_stop(),
            ]
            .concat(),
        ),
    ];
    for (case, provider, body) in cases {
        let server = streaming(body);
        let output = ask(provider, &server, KEY)
            .args(["--retries", "2"])
            .output();
        assert_calm(&output);
        assert_eq!(output.status.code(), Some(1), "{case}: {}", stderr(&output));
        assert_eq!(
            last_line(&output),
            "leash: provider error: the stream ended without a stop reason; the reply is incomplete",
            "{case}"
        );
        assert_eq!(stdout(&output), "", "{case}: no partial answer on stdout");
        assert_eq!(
            server.connections(),
            1,
            "{case}: a used body is not retried"
        );
    }
}

#[test]
fn a_mid_stream_error_leaves_the_same_result_on_both_providers() {
    let openai_body = openai::body(
        &[
            openai::role(),
            openai::text("Partial "),
            openai::text("answer"),
        ],
        false,
    ) + "data: {\"error\":{\"message\":\"boom\"}}\n\n";
    let anthropic_body = [
        anthropic::message_start(5),
        anthropic_text_start(0),
        anthropic_text_delta(0, "Partial "),
        anthropic_text_delta(0, "answer"),
        anthropic::error_event("", "boom"),
    ]
    .concat();
    let results: Vec<Value> = [("openai", openai_body), ("anthropic", anthropic_body)]
        .into_iter()
        .map(|(provider, body)| {
            let server = streaming(body);
            let output = ask(provider, &server, KEY)
                .args(["--output", "json"])
                .output();
            assert_calm(&output);
            assert_eq!(output.status.code(), Some(1), "{provider}");
            serde_json::from_slice(&output.stdout).unwrap()
        })
        .collect();
    for field in [
        "status",
        "exitCode",
        "reply",
        "lastAssistantText",
        "stopReason",
        "errorMessage",
        "turns",
    ] {
        assert_eq!(
            results[0][field], results[1][field],
            "{field}: {results:#?}"
        );
    }
    // Text mode prints nothing after an error, and `reply` is that.
    assert_eq!(results[0]["reply"], "");
    assert_eq!(results[0]["lastAssistantText"], "Partial answer");
    assert_eq!(
        results[0]["errorMessage"],
        "the provider reported an error mid-stream: boom"
    );
}

#[test]
fn redacted_thinking_is_kept_and_sent_back_unchanged() {
    const DATA: &str = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP+Q==";
    let first = [
        anthropic::message_start(10),
        anthropic::event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "redacted_thinking", "data": DATA}}),
        ),
        anthropic::content_block_stop(0),
        anthropic::tool_use_block(1, "toolu_1", "list_dir", &["{}"]),
        anthropic::message_delta("tool_use", 7),
        anthropic::message_stop(),
    ]
    .concat();
    let second = anthropic::text_reply("Two files.");
    let server = HostileServer::start(vec![
        responder(move |_, conn| {
            conn.respond(200, "text/event-stream", first.as_bytes());
        }),
        responder(move |_, conn| {
            conn.respond(200, "text/event-stream", second.as_bytes());
        }),
    ]);
    let output = ask("anthropic", &server, KEY)
        .args(["--events", "jsonl"])
        .output();
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Two files.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let sent: Value = serde_json::from_str(&requests[1].body_text()).unwrap();
    assert_eq!(sent["messages"][1]["role"], "assistant");
    assert_eq!(
        sent["messages"][1]["content"][0],
        json!({"type": "redacted_thinking", "data": DATA}),
        "{sent:#}"
    );
    // The block is kept in the message (Pi's shape: a thinking block with
    // a placeholder, the data as its signature, `redacted: true`).
    let events = assert_jsonl(&stderr(&output), "events");
    let first_reply = events
        .iter()
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(
        first_reply["message"]["content"][0],
        json!({"type": "thinking", "thinking": "[Reasoning redacted]", "signature": DATA, "redacted": true})
    );
}

#[test]
fn the_output_schema_reply_is_printed_as_the_model_wrote_it() {
    let reply = r#"{"zeta": 1.50, "id": 123456789012345678901234567890, "huge": 1e400, "tags": ["b", "a"]}"#;
    let ws = Workspace::new();
    let schema = ws.write(
        "schema.json",
        json!({"type": "object", "required": ["id", "huge"],
               "properties": {"id": {"type": "integer"}, "huge": {"type": "number"}}})
        .to_string(),
    );
    let script = json!([{"text": reply}]);
    let (text, _) = run(ws
        .faux(script.clone())
        .arg("--output-schema")
        .arg(&schema)
        .arg("q"));
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    assert_eq!(stdout(&text), format!("{reply}\n"));
    let (json_out, _) = run(ws
        .faux(script)
        .arg("--output-schema")
        .arg(&schema)
        .args(["--output", "json", "q"]));
    assert_eq!(json_out.status.code(), Some(0), "{}", stderr(&json_out));
    let result = stdout(&json_out);
    assert!(
        result.contains(
            r#","output":{"zeta":1.50,"id":123456789012345678901234567890,"huge":1e400,"tags":["b","a"]},"#
        ),
        "{result}"
    );
    assert_eq!(result.lines().count(), 1, "{result}");
}

#[test]
fn a_404_names_the_url_that_was_asked_without_the_key() {
    for (provider, path) in [
        ("openai", "/v1/chat/completions"),
        ("anthropic", "/v1/messages"),
    ] {
        let server = HostileServer::always(|_, conn| {
            conn.respond(404, "text/plain", b"404 page not found");
        });
        let ws = Workspace::new();
        // A key in the URL's user part, as some gateways take it.
        let url = base(provider, &server).replace("http://", &format!("http://user:{KEY}@"));
        let (output, _) = run(ws.http(provider, &url, KEY).args(["--retries", "2", "q"]));
        assert_calm(&output);
        assert_eq!(output.status.code(), Some(1), "{provider}");
        assert_eq!(
            last_line(&output),
            format!(
                "leash: provider error: HTTP 404 Not Found for POST {}{path}: 404 page not found",
                server.url()
            ),
            "{provider}"
        );
        assert!(!contains(&output.stderr, KEY));
        assert_eq!(server.connections(), 1, "{provider}: a 404 is not retried");
    }
}

#[test]
fn x_should_retry_false_stops_a_retry_and_true_asks_for_one() {
    let refused = HostileServer::always(|_, conn| {
        let body = br#"{"error":{"message":"overloaded, do not retry"}}"#;
        let length = body.len().to_string();
        conn.head(
            503,
            "application/json",
            &[("x-should-retry", "false"), ("content-length", &length)],
        );
        conn.send(body);
    });
    let output = ask("openai", &refused, KEY)
        .args(["--retries", "3"])
        .output();
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(refused.connections(), 1, "{}", stderr(&output));
    assert!(
        last_line(&output).contains("HTTP 503"),
        "{}",
        last_line(&output)
    );

    let reply = anthropic::text_reply("Served.");
    let asked = HostileServer::start(vec![
        responder(|_, conn| {
            let body = anthropic::error_json("invalid_request_error", "try again")
                .to_string()
                .into_bytes();
            let length = body.len().to_string();
            conn.head(
                400,
                "application/json",
                &[
                    ("x-should-retry", "true"),
                    ("retry-after", "0"),
                    ("content-length", &length),
                ],
            );
            conn.send(&body);
        }),
        responder(move |_, conn| {
            conn.respond(200, "text/event-stream", reply.as_bytes());
        }),
    ]);
    let output = ask("anthropic", &asked, KEY)
        .args(["--retries", "1"])
        .output();
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Served.\n");
    assert_eq!(asked.connections(), 2);
}

#[test]
fn a_short_key_does_not_mangle_messages() {
    let server = HostileServer::always(|_, conn| {
        let body = br#"{"error":{"message":"invalid key test: the latest test-suite rejects it"}}"#;
        conn.respond(401, "application/json", body);
    });
    let output = ask("openai", &server, "test").output();
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        last_line(&output),
        "leash: provider error: HTTP 401 Unauthorized: invalid key ***: the latest test-suite rejects it"
    );
}
