//! The manual's review and edit recipes run as written inside the hostile
//! checkout (docs/src/security.md "Running on an untrusted checkout"), on both provider
//! mocks, with every tool on, `--allow-write`, an operator hook and operator
//! MCP servers: nothing planted is read, run, sent or changed.

use super::*;

const REPLY: &str = "No bugs found.";

/// The first statement of a recipe: a trailing `&& git diff` is the
/// operator's own git, which reads the checkout's config by git's design,
/// not leash's.
fn leash_part(recipe: &str) -> String {
    match recipe.find("&& git diff") {
        Some(cut) => recipe[..cut]
            .trim_end()
            .trim_end_matches('\\')
            .trim_end()
            .to_owned(),
        None => recipe.to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_the_review_and_edit_recipes_take_nothing_from_a_hostile_checkout() {
    review_and_edit(Provider::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_the_review_and_edit_recipes_take_nothing_from_a_hostile_checkout() {
    review_and_edit(Provider::Anthropic).await;
}

async fn review_and_edit(provider: Provider) {
    let checkout = Checkout::new();
    let t = checkout.t().to_path_buf();
    let outside = t.join("outside/secret.txt").display().to_string();
    let marker = |name: &str| t.join("markers").join(name).display().to_string();

    // The review: every read, view and write a hostile prompt could ask
    // for, in one batch, next to the calls that must work.
    let review: Vec<(&str, &str, Value)> = vec![
        ("c_diff", "git", json!({"command": "diff"})),
        ("c_status", "git", json!({"command": "status"})),
        ("c_log", "git", json!({"command": "log", "args": ["-p"]})),
        ("c_grep", "grep", json!({"pattern": "first"})),
        ("c_env", "mcp__t__env", json!({})),
        ("c_sum", "mcp__ev__get-sum", json!({"a": 2, "b": 3})),
        ("r_dotenv", "read_file", json!({"path": ".env"})),
        ("r_parent", "read_file", json!({"path": "../.env"})),
        ("r_link", "read_file", json!({"path": "escape/secret.txt"})),
        ("r_abs", "read_file", json!({"path": outside})),
        ("r_fifo", "read_file", json!({"path": "fifo"})),
        (
            "g_link",
            "grep",
            json!({"pattern": "SECRET", "path": "escape"}),
        ),
        (
            "s_blob",
            "git",
            json!({"command": "show", "args": [checkout.dotenv_blob]}),
        ),
        (
            "s_path",
            "git",
            json!({"command": "show", "args": ["HEAD:.env"]}),
        ),
        (
            "w_bare",
            "write_file",
            json!({"path": "vendor/x.git/hooks/post-checkout",
            "content": format!("#!/bin/sh\ntouch {}\n", marker("x-hook"))}),
        ),
        (
            "w_git",
            "write_file",
            json!({"path": ".git/hooks/pre-push",
            "content": format!("#!/bin/sh\ntouch {}\n", marker("pre-push"))}),
        ),
        (
            "e_bare",
            "edit_file",
            json!({"path": "vendor/x.git/config", "old": "[core]",
            "new": format!("[core]\n\tpager = touch {}", marker("x-pager"))}),
        ),
        (
            "w_link",
            "write_file",
            json!({"path": "escape/pwned.txt", "content": "pwned"}),
        ),
        (
            "w_up",
            "write_file",
            json!({"path": "../pwned.txt", "content": "pwned"}),
        ),
    ];
    let before = checkout.untouched();
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        provider.endpoint(),
        vec![provider.calls(&review), provider.text(REPLY)],
    )
    .await;
    let script = recipe("review-searches");
    let output = {
        let (checkout, uri) = (&checkout, server.uri());
        tokio::task::block_in_place(|| checkout.run(&script, provider, &uri, None))
    };
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("{REPLY}\n"));
    checkout.assert_nothing_escaped(&output, &before);

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    // The parent's `.env` chose nothing (its model, provider, tools).
    assert_eq!(bodies[0]["model"], provider.model());
    let sent = serde_json::to_string(&bodies).unwrap();
    for secret in [OUTSIDE_SECRET, DOTENV_SECRET, KEY] {
        assert!(!sent.contains(secret), "{secret} reached the model");
    }
    let results = provider.results(&bodies[1]);
    assert_eq!(results.len(), review.len(), "{results:?}");
    // The views that must work did: the diff, the grep, the servers.
    assert!(
        results["c_diff"].contains("first() + 1"),
        "{}",
        results["c_diff"]
    );
    assert!(
        results["c_grep"].contains("lib.rs:1:fn first()"),
        "{}",
        results["c_grep"]
    );
    assert!(results["c_sum"].contains('5'), "{}", results["c_sum"]);
    let server_env: Value = serde_json::from_str(&results["c_env"]).unwrap();
    let server_env = server_env.as_object().unwrap();
    assert!(server_env.contains_key("PATH"), "{server_env:?}");
    let server_env = server_env
        .iter()
        .map(|(name, value)| format!("{name}={}", value.as_str().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join("\n");
    for planted in planted_values(&t) {
        assert!(
            !server_env.contains(&planted),
            "{planted} reached the MCP server"
        );
    }
    assert!(!t.join("work/pwned.txt").exists());

    // The edit: the fix lands, the writes that lead out or into a git
    // directory do not.
    let edit: Vec<(&str, &str, Value)> = vec![
        (
            "e_fix",
            "edit_file",
            json!({"path": "lib.rs", "old": "old_line()", "new": "new_line()"}),
        ),
        (
            "w_head",
            "write_file",
            json!({"path": "vendor/x.git/HEAD", "content": "ref: refs/heads/evil\n"}),
        ),
        (
            "e_git",
            "edit_file",
            json!({"path": ".git/config", "old": "[core]", "new": "[core]\n\tbare = true"}),
        ),
        (
            "w_env",
            "write_file",
            json!({"path": ".env", "content": "LEASH_ALLOW_WRITE=1\n"}),
        ),
        ("c_env", "mcp__t__env", json!({})),
    ];
    let before = checkout.untouched();
    let dotenv = std::fs::read(checkout.repo().join(".env")).unwrap();
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        provider.endpoint(),
        vec![provider.calls(&edit), provider.text("Fixed.")],
    )
    .await;
    let script = leash_part(&recipe("fix-edits"));
    let output = {
        let (checkout, uri) = (&checkout, server.uri());
        tokio::task::block_in_place(|| {
            checkout.run(
                &script,
                provider,
                &uri,
                Some("read_file,list_dir,grep,find,git"),
            )
        })
    };
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Fixed.\n");
    checkout.assert_nothing_escaped(&output, &before);
    assert_eq!(
        std::fs::read_to_string(checkout.repo().join("lib.rs")).unwrap(),
        "fn first() -> u32 {\n    new_line()\n}\n"
    );
    assert_eq!(std::fs::read(checkout.repo().join(".env")).unwrap(), dotenv);
    let sent = serde_json::to_string(&request_bodies(&server).await).unwrap();
    assert!(!sent.contains(KEY) && !sent.contains(DOTENV_SECRET));
}
