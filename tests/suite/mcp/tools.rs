//! MCP servers' tools (docs/src/mcp.md "MCP servers"): offered to the model over
//! stdio and streamable HTTP, their results reaching the next request, and
//! `leash config` listing the servers without their secrets.

use super::*;
use pretty_assertions::assert_eq;

const KEY: &str = "sk-proj-mcp-SECRET-0123456789";

#[tokio::test(flavor = "multi_thread")]
async fn stdio_servers_tools_are_offered_and_their_results_reach_the_next_request() {
    let server = MockServer::start().await;
    let first = body(
        &[
            role(),
            call_start(0, "call_sum", "mcp__ev__get-sum"),
            call_args(0, r#"{"a": 2, "b": 3}"#),
            call_start(1, "call_env", "mcp__t__env"),
            call_args(1, "{}"),
            finish("tool_calls"),
        ],
        true,
    );
    serve_in_order(
        &server,
        "/v1/chat/completions",
        vec![first, text_reply(&["five"])],
    )
    .await;
    let ws = Workspace::new();
    let mut cmd = ws.leash();
    cmd.env("OPENAI_API_KEY", KEY)
        // A copy of the key under another name is stripped too.
        .env("MY_COPY_OF_THE_KEY", KEY)
        .args([
            "--provider",
            "openai",
            "--base-url",
            &format!("{}/v1", server.uri()),
        ])
        .args(["-m", "gpt-test", "--no-stdin", "--timeout", "20s"])
        .args([
            "--mcp",
            &everything_flag("ev"),
            "--mcp",
            &test_server_flag("t"),
        ])
        .arg("Add 2 and 3.");
    let output = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "five\n");

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    // Offered in addition to the file tools, with the server's own schema.
    let tools = bodies[0]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"read_file"), "{names:?}");
    assert!(
        names.contains(&"mcp__t__env") && names.contains(&"mcp__t__fail"),
        "{names:?}"
    );
    let sum = tools
        .iter()
        .find(|t| t["function"]["name"] == "mcp__ev__get-sum")
        .unwrap();
    assert!(!sum["function"]["description"].as_str().unwrap().is_empty());
    assert_eq!(sum["function"]["parameters"]["required"], json!(["a", "b"]));

    let results: Vec<&Value> = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["content"], "The sum of 2 and 3 is 5.");
    // The key never reached the server's environment (nor the variables
    // named after the providers or leash).
    let env: Value = serde_json::from_str(results[1]["content"].as_str().unwrap()).unwrap();
    let env = env.as_object().unwrap();
    assert!(env.contains_key("PATH"), "{env:?}");
    assert!(!env.contains_key("OPENAI_API_KEY") && !env.contains_key("MY_COPY_OF_THE_KEY"));
    assert!(!env.keys().any(|name| name.starts_with("LEASH_")));
    assert!(!serde_json::to_string(&bodies).unwrap().contains(KEY));
}

#[test]
fn the_streamable_http_transport_reaches_server_everything() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut http = HttpServer::start(port);
    let ws = Workspace::new();
    let config = ws.write(
        "mcp.json",
        &json!({"mcpServers": {"web": {
            "type": "http",
            "url": format!("http://127.0.0.1:{port}/mcp"),
            "headers": {"X-Leash-Test": "${HOME}"}
        }}})
        .to_string(),
    );
    let output = ws
        .faux(json!({"responses": [
            {"toolCalls": [tool_call("mcp__web__echo", json!({"message": "over HTTP"}))]},
            {"text": "done"}
        ]}))
        .args([
            "--no-stdin",
            "--events",
            "jsonl",
            "--tools",
            "none",
            "--mcp-config",
        ])
        .arg(&config)
        .arg("echo")
        .output()
        .unwrap();
    http.stop();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let end = json_events(&output)
        .into_iter()
        .find(|event| event["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["isError"], false, "{end}");
    assert_eq!(end["result"]["content"][0]["text"], "Echo: over HTTP");
}

#[test]
fn leash_config_lists_the_servers_without_their_secrets() {
    let ws = Workspace::new();
    let config = ws.write(
        "mcp.json",
        r#"{"mcpServers": {"gh": {"url": "https://api.example.test/mcp",
            "headers": {"Authorization": "Bearer ${GH_TOKEN_FOR_TEST}"}},
            "fs": {"command": "npx", "args": ["-y", "server-filesystem", "."], "env": {"T": "secret-value"}}}}"#,
    );
    ws.write("s.json", r#"{"responses": [{"text": "x"}]}"#);
    let output = ws
        .leash()
        .env("GH_TOKEN_FOR_TEST", "ghp-secret")
        .args([
            "config",
            "--provider",
            "faux",
            "--faux-script",
            "s.json",
            "--mcp-config",
        ])
        .arg(&config)
        .args(["--mcp", "local=node server.mjs"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("# mcp = \"fs: stdio: npx -y server-filesystem . (env: T)\""),
        "{text}"
    );
    assert!(
        text.contains(
            "# mcp = \"gh: http: https://api.example.test/mcp (headers: Authorization)\""
        ),
        "{text}"
    );
    assert!(
        text.contains("# mcp = \"local: stdio: node server.mjs\""),
        "{text}"
    );
    assert!(!text.contains("secret"), "{text}");
}
