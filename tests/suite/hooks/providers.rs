//! Hooks on the HTTP providers (docs/src/hooks.md "Hooks"): a block reason reaches the
//! next request on OpenAI, replaced arguments run on Anthropic, and a key a
//! hook writes reaches neither the model nor the events.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn on_openai_a_block_reason_reaches_the_next_request() {
    let server = MockServer::start().await;
    let first = openai::body(
        &[
            openai::role(),
            openai::call_start(0, "call_1", "read_file"),
            openai::call_args(0, "{\"path\": \"sample.ts\"}"),
            openai::finish("tool_calls"),
        ],
        true,
    );
    serve_in_order(
        &server,
        "/v1/chat/completions",
        vec![first, openai::text_reply(&["ok"])],
    )
    .await;
    let ws = Workspace::new();
    let hook = sh_hook(
        &ws,
        "exit2.sh",
        "before-tool-call",
        "echo 'not on Fridays' >&2; exit 2",
    );
    let mut cmd = ws.http(
        "openai",
        &format!("{}/v1", server.uri()),
        "sk-test-KEY-1234567890",
    );
    cmd.args(["--hook", &hook, "--timeout", "20s", "go"]);
    let output = tokio::task::spawn_blocking(move || run(&mut cmd).0)
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let tool = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool["tool_call_id"], "call_1");
    assert!(
        tool["content"].to_string().contains("not on Fridays"),
        "{tool}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn on_anthropic_the_tool_runs_with_replaced_arguments_and_the_key_stays_out() {
    let server = MockServer::start().await;
    let first = anthropic::tool_call_reply("toolu_1", "read_file", "{\"path\": \"sample.ts\"}");
    serve_in_order(
        &server,
        "/v1/messages",
        vec![first, anthropic::text_reply("ok")],
    )
    .await;
    let ws = Workspace::new();
    ws.write("root/other.txt", "REPLACED CONTENT\n");
    let env_seen = ws.path("env.txt");
    let hook = sh_hook(
        &ws,
        "rewrite.sh",
        "before-tool-call",
        &format!(
            "env > '{}'\necho '{{\"arguments\": {{\"path\": \"other.txt\"}}}}'",
            env_seen.display()
        ),
    );
    let key = "sk-ant-test-KEY-1234567890";
    let mut cmd = ws.http("anthropic", &server.uri(), key);
    cmd.args(["--hook", &hook, "--timeout", "20s", "go"]);
    let output = tokio::task::spawn_blocking(move || run(&mut cmd).0)
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let text = bodies[1]["messages"].to_string();
    assert!(text.contains("REPLACED CONTENT"), "{text}");
    let env = std::fs::read_to_string(env_seen).unwrap();
    assert!(!env.contains(key), "the key reached the hook's environment");
}

/// A hook has no key in its environment (not under another name either),
/// and a key it finds elsewhere (here: a file) and writes into a reason,
/// a result or its stderr reaches neither the model nor the events.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_a_hook_writes_reaches_neither_the_model_nor_the_events() {
    const KEY: &str = "sk-test-HOOK-LEAK-0123456789";
    let server = MockServer::start().await;
    let first = openai::body(
        &[
            openai::role(),
            openai::call_start(0, "call_1", "read_file"),
            openai::call_args(0, "{\"path\": \"sample.ts\"}"),
            openai::call_start(1, "call_2", "list_dir"),
            openai::call_args(1, "{}"),
            openai::finish("tool_calls"),
        ],
        true,
    );
    serve_in_order(
        &server,
        "/v1/chat/completions",
        vec![first, openai::text_reply(&["ok"])],
    )
    .await;
    let ws = Workspace::new();
    let stash = ws.write("stash.txt", KEY);
    // read_file is blocked with the key as the reason; list_dir's result
    // is replaced by the key; and the environment is searched for it.
    let before = sh_hook(
        &ws,
        "before.sh",
        "before-tool-call",
        &format!(
            "input=$(cat)\ncase \"$input\" in *read_file*) \
             printf '{{\"block\": true, \"reason\": \"%s and env: %s\"}}' \"$(cat {})\" \"$(env | grep -c HOOK-LEAK)\";; esac",
            stash.display()
        ),
    );
    let after = sh_hook(
        &ws,
        "after.sh",
        "after-tool-call",
        &format!(
            "cat >/dev/null; printf '{{\"content\": \"%s\"}}' \"$(cat {})\"",
            stash.display()
        ),
    );
    let mut cmd = ws.http("openai", &format!("{}/v1", server.uri()), KEY);
    cmd.env("COPY_OF_THE_KEY", KEY).args([
        "--hook",
        &before,
        "--hook",
        &after,
        "--events",
        "jsonl",
        "--timeout",
        "20s",
        "go",
    ]);
    let output = tokio::task::spawn_blocking(move || run(&mut cmd).0)
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let second = bodies[1].to_string();
    assert!(!second.contains(KEY), "{second}");
    // The block reason arrived, key hidden, and no variable held the key.
    assert!(second.contains("*** and env: 0"), "{second}");
    assert!(!stderr(&output).contains(KEY));
    assert!(!stdout(&output).contains(KEY));
}
