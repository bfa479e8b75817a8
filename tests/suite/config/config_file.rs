//! The config file (docs/src/configuration.md "Configuration"): validated like the flags,
//! never a source of the key (not even a pasted `leash config` listing), and
//! the listing written back is a config file a run takes.

use super::*;

#[test]
fn the_config_file_is_validated_like_the_flags() {
    let ws = Workspace::new();
    let run = || {
        ws.faux(json!([{"text": "x"}]))
            .args(["--no-stdin", "hi"])
            .output()
            .unwrap()
    };
    let path = ws.config_file("max-turns = \"8\"\n");
    let output = run();
    assert_eq!(code(&output), 2);
    assert_eq!(
        last_line(&output),
        format!(
            "leash: config file {}: max-turns: must be a whole number, without quotes",
            path.display()
        )
    );
    ws.config_file("timeout = \"forever\"\n");
    let last = last_line(&run());
    assert!(
        last.starts_with(&format!(
            "leash: config file {}: timeout: invalid --timeout 'forever'",
            path.display()
        )),
        "{last}"
    );
    ws.config_file("retries = 1\nmodel = \"a\"\n\n# again\nretries = 2\n");
    let last = last_line(&run());
    assert_eq!(
        last,
        format!(
            "leash: config file {}: line 5: duplicate key 'retries' (set once per file)",
            path.display()
        )
    );
}

#[test]
fn leash_config_pasted_as_a_config_file_never_sets_the_key() {
    let ws = Workspace::new();
    let output = ws
        .leash()
        .env("OPENAI_API_KEY", KEY)
        .args(["config", "--base-url", "http://localhost:1"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(listed(&output, "api-key").starts_with("# api-key = \"***\""));
    // The whole listing is a valid config file, and sets no key.
    ws.config_file(&stdout(&output));
    let output = ws.leash().arg("config").output().unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(listed(&output, "api-key").starts_with("# api-key "));
    assert!(listed(&output, "api-key").contains("# unset"));
    assert!(!stdout(&output).contains(KEY));
}

// ----------------------------------------- the listing as a config file

/// A provider mock that answers every request with `body` (an SSE reply
/// in the provider's format).
fn answering(body: String) -> HostileServer {
    HostileServer::always(move |_, conn| {
        conn.respond(200, "text/event-stream", body.as_bytes());
    })
}

#[test]
fn the_config_listing_written_back_is_a_config_file_a_run_takes() {
    use crate::support::sse::{anthropic, openai, responses};
    let cases: [(&str, &[&str], &str, String, &str); 3] = [
        (
            "openai",
            &[],
            "OPENAI",
            openai::text_reply(&["pong"]),
            "/v1/chat/completions",
        ),
        (
            "anthropic",
            &[],
            "ANTHROPIC",
            anthropic::text_reply("pong"),
            "/v1/messages",
        ),
        (
            "openai",
            &["--api", "responses"],
            "OPENAI",
            responses::Reply::new()
                .message(&["pong"])
                .completed(1, 0, 1),
            "/v1/responses",
        ),
    ];
    for (provider, extra, prefix, reply, endpoint) in cases {
        let ws = Workspace::new();
        let key = format!("{prefix}_API_KEY");
        let url = format!("{prefix}_BASE_URL");
        let mut args = vec!["config", "--provider", provider];
        args.extend_from_slice(extra);
        let case = format!("{provider} {extra:?}");
        // The defaults (the provider's own base URL among them) are
        // commented out, and the file the listing makes is accepted.
        let listing = ws.leash().args(&args).env(&key, KEY).output().unwrap();
        assert_eq!(code(&listing), 0, "{case}: {}", stderr(&listing));
        let text = stdout(&listing);
        assert!(
            listed(&listing, "base-url").starts_with("# base-url = \"https://"),
            "{text}"
        );
        let api = match extra.is_empty() {
            true => "# api = \"chat\"",
            false => "api = \"responses\"",
        };
        assert!(listed(&listing, "api").starts_with(api), "{text}");
        ws.config_file(&text);
        let again = ws.leash().arg("config").env(&key, KEY).output().unwrap();
        assert_eq!(code(&again), 0, "{case}:\n{text}\n{}", stderr(&again));
        assert!(
            listed(&again, "provider").starts_with(&format!("provider = \"{provider}\"")),
            "{case}: {}",
            stdout(&again)
        );
        if !extra.is_empty() {
            assert!(listed(&again, "api").starts_with("api = \"responses\""));
        }
        // Made against a server of the user's own, the listing runs there.
        let server = answering(reply);
        let base = match provider {
            "anthropic" => server.url(),
            _ => format!("{}/v1", server.url()),
        };
        let listing = ws
            .leash()
            .args(&args)
            .env(&key, KEY)
            .env(&url, &base)
            .output()
            .unwrap();
        assert_eq!(code(&listing), 0, "{case}: {}", stderr(&listing));
        ws.config_file(&stdout(&listing));
        let run = ws
            .leash()
            .env(&key, KEY)
            .env(&url, &base)
            .args(["--no-stdin", "hi"])
            .output()
            .unwrap();
        assert_eq!(
            code(&run),
            0,
            "{case}:\n{}\n{}",
            stdout(&listing),
            stderr(&run)
        );
        assert_eq!(stdout(&run), "pong\n", "{case}");
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{case}");
        assert!(
            requests[0].head.starts_with(&format!("POST {endpoint} ")),
            "{case}: {}",
            requests[0].head
        );
    }
}
