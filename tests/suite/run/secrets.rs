//! The API key never leaves leash (docs/src/security.md "Security and limits"): every failure scenario runs
//! against a loopback server with a recognisable key and every output on —
//! `--output json` on stdout, `--events jsonl` on stderr, `--transcript` —
//! and the key is looked for in all of it. Servers echo the request (the
//! `Authorization` / `x-api-key` header included) in error bodies, SSE error
//! events, retry reasons, redirects and HTML pages; the key is also wrong.
//! `--help` and `leash config` are searched too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::hostile;
use crate::support::run::{last_line, stderr, stdout};
use crate::support::sse::openai as openai_support;

use hostile::*;
use serde_json::json;

const KEY: &str = "sk-live-SECRET-4f9c2e7a1b";

/// The request head as the server read it, headers and all, as JSON text.
fn echo(request: &RawRequest) -> String {
    json!(format!("{} {}", request.head, request.body_text())).to_string()
}

/// One failure scenario: what the server does, and the exit codes allowed.
struct Scenario {
    name: &'static str,
    server: fn() -> HostileServer,
    codes: &'static [i32],
    args: &'static [&'static str],
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "wrong key, echoed in a JSON error",
            server: || {
                HostileServer::always(|_, conn| {
                    let body = json!({"error": {"message": format!("Incorrect API key provided: {KEY}."), "type": "invalid_request_error"}});
                    conn.respond(401, "application/json", body.to_string().as_bytes());
                })
            },
            codes: &[1],
            args: &[],
        },
        Scenario {
            name: "the whole request echoed in an error body",
            server: || {
                HostileServer::always(|request, conn| {
                    let body = format!("{{\"error\":{{\"message\":{}}}}}", echo(request));
                    conn.respond(400, "application/json", body.as_bytes());
                })
            },
            codes: &[1],
            args: &[],
        },
        Scenario {
            name: "the request echoed as plain text",
            server: || {
                HostileServer::always(|request, conn| {
                    conn.respond(500, "text/plain", request.head.as_bytes());
                })
            },
            codes: &[1],
            args: &["--retries", "0"],
        },
        Scenario {
            name: "the request echoed in retry reasons",
            server: || {
                HostileServer::always(|request, conn| {
                    let body = format!("{{\"error\":{}}}", echo(request));
                    let length = body.len().to_string();
                    conn.head(
                        429,
                        "application/json",
                        &[("retry-after", "0"), ("content-length", &length)],
                    );
                    conn.send(body.as_bytes());
                })
            },
            codes: &[1],
            args: &["--retries", "2"],
        },
        Scenario {
            name: "the request echoed in an SSE error event",
            server: || {
                HostileServer::always(|request, conn| {
                    conn.head(200, "text/event-stream", &[]);
                    let partial = openai_support::body(&[openai_support::text("Hel")], false);
                    conn.send(partial.as_bytes());
                    let error = format!(
                        "event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"api_error\",\"message\":{}}}}}\n\n",
                        echo(request)
                    );
                    conn.send(error.as_bytes());
                })
            },
            codes: &[1],
            args: &[],
        },
        Scenario {
            name: "the request echoed in an HTML page",
            server: || {
                HostileServer::always(|request, conn| {
                    let page = format!("<html><body><pre>{}</pre></body></html>", request.head);
                    conn.respond(200, "text/html", page.as_bytes());
                })
            },
            codes: &[1],
            args: &[],
        },
        Scenario {
            name: "a redirect to a URL holding the key",
            server: || {
                HostileServer::always(|_, conn| {
                    let location = format!("https://elsewhere.example/v1?key={KEY}");
                    conn.head(
                        302,
                        "text/plain",
                        &[("location", &location), ("content-length", "0")],
                    );
                })
            },
            codes: &[1],
            args: &[],
        },
        Scenario {
            name: "bytes that are not UTF-8 after an echo",
            server: || {
                HostileServer::always(|request, conn| {
                    conn.head(200, "text/event-stream", &[]);
                    conn.send(
                        format!(": {}\n\n", request.head.replace(['\r', '\n'], " ")).as_bytes(),
                    );
                    conn.send(b"data: \xff\xfe\n\n");
                })
            },
            codes: &[1],
            args: &[],
        },
        Scenario {
            name: "a server that never answers",
            server: || HostileServer::always(|_, conn| conn.hold()),
            codes: &[124],
            args: &["--timeout", "1s"],
        },
        Scenario {
            name: "a stream cut mid-reply",
            server: || {
                HostileServer::always(|_, conn| {
                    conn.head(200, "text/event-stream", &[]);
                    conn.send(
                        openai_support::body(&[openai_support::text("half")], false).as_bytes(),
                    );
                })
            },
            codes: &[1],
            args: &[],
        },
        Scenario {
            name: "the request body echoed as the reply (it holds no key)",
            server: || {
                HostileServer::always(|request, conn| {
                    let reply = openai_support::text_reply(&[&request.body_text()]);
                    conn.respond(200, "text/event-stream", reply.as_bytes());
                })
            },
            codes: &[0, 1],
            args: &[],
        },
    ]
}

/// Asserts `KEY` is in none of `outputs`.
fn assert_no_key(what: &str, outputs: &[(&str, &[u8])]) {
    for (name, bytes) in outputs {
        assert!(!contains(bytes, KEY), "{what}: the key is in {name}");
    }
}

#[test]
fn the_key_is_in_no_output_of_any_failure() {
    for scenario in scenarios() {
        for provider in ["openai", "anthropic"] {
            let server = (scenario.server)();
            let base = match provider {
                "openai" => format!("{}/v1", server.url()),
                _ => server.url(),
            };
            let ws = Workspace::new();
            let (output, _) = run(ws
                .http(provider, &base, KEY)
                .args(scenario.args)
                .args(["--output", "json", "--events", "jsonl"])
                .args(["--transcript", "t.jsonl", "question"]));
            let what = format!("{provider}: {}", scenario.name);
            assert_calm(&output);
            let code = output.status.code().unwrap();
            assert!(
                scenario.codes.contains(&code),
                "{what}: exit {code}: {}",
                last_line(&output)
            );
            // The server did get the key: the echo was real.
            let sent = server.requests().iter().any(|r| r.head.contains(KEY));
            assert!(sent, "{what}: the key was never sent");
            let transcript = std::fs::read(ws.path("t.jsonl")).unwrap_or_default();
            assert_no_key(
                &what,
                &[
                    ("stdout (--output json)", &output.stdout),
                    ("stderr (--events jsonl)", &output.stderr),
                    ("the transcript", &transcript),
                ],
            );
            assert_jsonl(&stdout(&output), "stdout");
            assert_jsonl(&stderr(&output), "stderr");
        }
    }
}

#[test]
fn the_key_is_in_no_text_event_line_either() {
    let server = HostileServer::always(|request, conn| {
        conn.respond(401, "text/plain", request.head.as_bytes());
    });
    let ws = Workspace::new();
    let (output, _) = run(ws
        .http("openai", &format!("{}/v1", server.url()), KEY)
        .arg("question"));
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        last_line(&output).contains("Bearer ***"),
        "{}",
        last_line(&output)
    );
    assert_no_key(
        "text events",
        &[("stdout", &output.stdout), ("stderr", &output.stderr)],
    );
}

#[test]
fn help_config_and_faux_runs_never_show_the_key() {
    let ws = Workspace::new();
    for args in [
        vec!["--help"],
        vec!["-h"],
        vec!["config"],
        vec!["--provider", "openai", "config"],
    ] {
        let (output, _) = run(ws
            .leash()
            .env("OPENAI_API_KEY", KEY)
            .env("ANTHROPIC_API_KEY", KEY)
            .env("LEASH_API_KEY", KEY)
            .args(&args));
        assert_calm(&output);
        assert_no_key(
            &format!("{args:?}"),
            &[("stdout", &output.stdout), ("stderr", &output.stderr)],
        );
    }
    let (output, _) = run(ws
        .faux(json!([{"text": "partial", "error": "scripted failure"}]))
        .env("OPENAI_API_KEY", KEY)
        .args(["--output", "json", "--events", "jsonl", "go"]));
    assert_eq!(output.status.code(), Some(1));
    assert_no_key(
        "faux",
        &[("stdout", &output.stdout), ("stderr", &output.stderr)],
    );
}
