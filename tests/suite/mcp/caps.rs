//! What an MCP server may send (docs/src/mcp.md "MCP servers"): a message past the
//! cap is an error result and the server, or the HTTP session, is stopped.

use super::*;
use pretty_assertions::assert_eq;

/// A stdio MCP server on nothing but Node: two tools, `big` answering
/// with one 17 MiB line, `small` with a word; its pid in `BIG_PID_FILE`.
/// (The registry servers cannot be made to send such a line.)
const BIG_SERVER: &str = r#"
const fs = require("fs");
const readline = require("readline");
fs.writeFileSync(process.env.BIG_PID_FILE, `${process.pid}\n`);
const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const empty = { type: "object", properties: {} };
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  let result;
  if (m.method === "initialize") {
    result = {
      protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: "big", version: "1.0.0" },
    };
  } else if (m.method === "tools/list") {
    result = {
      tools: [
        { name: "big", description: "A 17 MiB answer.", inputSchema: empty },
        { name: "small", description: "A small answer.", inputSchema: empty },
      ],
    };
  } else if (m.method === "tools/call") {
    const text = m.params.name === "big" ? "x".repeat(17 * 1024 * 1024) : "small";
    result = { content: [{ type: "text", text }] };
  } else {
    send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: m.method } });
    return;
  }
  send({ jsonrpc: "2.0", id: m.id, result });
});
"#;

#[test]
fn a_message_past_the_cap_is_an_error_result_and_the_server_is_stopped() {
    let ws = Workspace::new();
    let server = ws.write("big-server.cjs", BIG_SERVER);
    let pid_file = ws.path("big.pid");
    let output = ws
        .faux(json!({"responses": [
            {"toolCalls": [tool_call("mcp__b__big", json!({}))]},
            {"toolCalls": [tool_call("mcp__b__small", json!({}))]},
            {"text": "carried on"}
        ]}))
        .env("BIG_PID_FILE", &pid_file)
        .args(["--no-stdin", "--events", "jsonl", "--timeout", "60s"])
        .args(["--mcp", &format!("b=node {}", server.display())])
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", last_line(&output));
    assert_eq!(stdout(&output), "carried on\n");
    let ends: Vec<Value> = json_events(&output)
        .into_iter()
        .filter(|event| event["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 2);
    // The call that got the long line, and the next call to the stopped
    // server: nothing of the 17 MiB was kept, both say why.
    for end in &ends {
        assert_eq!(end["isError"], true, "{end}");
        assert_eq!(
            end["result"]["content"][0]["text"],
            "MCP server 'b' sent a message larger than the 16 MiB cap on one MCP \
             message (MAX_MESSAGE_BYTES); the server was stopped"
        );
    }
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_gone(&[pid]);
}

#[test]
fn an_http_servers_message_past_the_cap_is_an_error_result_and_the_session_closed() {
    // Both ways a streamable HTTP server answers: an SSE stream, and one
    // JSON body. The call does not wait for the timer (`-t 60s`).
    for mode in ["sse", "json"] {
        let (mut server, port) = HttpServer::test_server(mode);
        let ws = Workspace::new();
        let config = ws.write(
            "mcp.json",
            &json!({"mcpServers": {"b": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}}})
                .to_string(),
        );
        let started = Instant::now();
        let output = ws
            .faux(json!({"responses": [
                {"toolCalls": [tool_call("mcp__b__big", json!({}))]},
                {"toolCalls": [tool_call("mcp__b__small", json!({}))]},
                {"text": "carried on"}
            ]}))
            .args([
                "--no-stdin",
                "--events",
                "jsonl",
                "--timeout",
                "60s",
                "--tools",
                "none",
            ])
            .arg("--mcp-config")
            .arg(&config)
            .arg("hi")
            .output()
            .unwrap();
        server.stop();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{mode}: {}",
            last_line(&output)
        );
        assert!(
            started.elapsed() < Duration::from_secs(50),
            "{mode}: waited for the timer"
        );
        assert_eq!(stdout(&output), "carried on\n");
        let ends: Vec<Value> = json_events(&output)
            .into_iter()
            .filter(|event| event["type"] == "tool_execution_end")
            .collect();
        assert_eq!(ends.len(), 2, "{mode}");
        // The call that got the big message, and the next call, which is
        // never sent: nothing of the 17 MiB was kept, both say why.
        for end in &ends {
            assert_eq!(end["isError"], true, "{mode}: {end}");
            assert_eq!(
                end["result"]["content"][0]["text"],
                "MCP server 'b' sent a message larger than the 16 MiB cap on one MCP \
                 message (MAX_MESSAGE_BYTES); the session was closed",
                "{mode}"
            );
        }
    }
}
