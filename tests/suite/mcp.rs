//! MCP servers (README "MCP servers"): the real binary with real servers
//! installed from npm by `make mcp-servers` (tests/mcp: the reference
//! `server-everything` over stdio and streamable HTTP, and a small server
//! of our own on the official SDK, `test-server.mjs`). No server is mocked.
//!
//! Strict startup (exit 8 naming the server and why), tools offered as
//! `mcp__NAME__TOOL` whose results reach the next request, a server dying
//! mid-run, a message past the 16 MiB cap, no server process left after
//! any exit (0, 124, 130, 143, 8, a second signal), and the run's key
//! never in a server's environment.

use crate::support::run::{last_line, stderr, stdout};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use wiremock::MockServer;

use crate::support::shell::{Workspace, tool_call};
use crate::support::sse::openai::*;
use crate::support::sse::{request_bodies, serve_in_order};

const KEY: &str = "sk-proj-mcp-SECRET-0123456789";

fn mcp_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp")
}

/// The reference server's entry point, installed by `make mcp-servers`.
fn everything() -> PathBuf {
    let path = mcp_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run `make mcp-servers` (npm ci in tests/mcp)",
        path.display()
    );
    path
}

/// `--mcp` for the reference server over stdio.
fn everything_flag(name: &str) -> String {
    format!("{name}=node {} stdio", everything().display())
}

/// `--mcp` for our own test server.
fn test_server_flag(name: &str) -> String {
    everything();
    format!(
        "{name}=node {}",
        mcp_dir().join("test-server.mjs").display()
    )
}

/// Running: a zombie waiting for its reaper counts as gone.
pub(super) fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// Waits (at most 3 s) until none of `pids` runs.
pub(super) fn assert_gone(pids: &[u32]) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while pids.iter().any(|pid| alive(*pid)) {
        assert!(Instant::now() < deadline, "still running: {pids:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `signal` (`-TERM`, `-INT`) to `child` with `kill`.
fn send(child: &Child, signal: &str) {
    let killed = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success(), "kill {signal} failed");
}

/// The pids the test server wrote to `file` (itself and its helper),
/// waiting for it to appear.
fn server_pids(file: &Path) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(file)
            && text.ends_with('\n')
        {
            return text
                .split_whitespace()
                .map(|pid| pid.parse().unwrap())
                .collect();
        }
        assert!(Instant::now() < deadline, "the server wrote no pid file");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The JSON lines among stderr's of a `--events jsonl` run: unlike
/// [`crate::support::run::events`], a line that is not JSON is skipped.
fn json_events(output: &Output) -> Vec<Value> {
    stderr(output)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

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

/// An MCP server in streamable-HTTP mode, until stopped.
struct HttpServer(Child);

impl HttpServer {
    /// server-everything on `port`.
    fn start(port: u16) -> Self {
        let mut command = Command::new("node");
        command
            .arg(everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string());
        Self::spawn(command).0
    }

    /// Our own test server answering POSTs as `mode` ("sse" or "json"),
    /// with the port it chose.
    fn test_server(mode: &str) -> (Self, u16) {
        everything();
        let mut command = Command::new("node");
        command
            .arg(mcp_dir().join("test-server.mjs"))
            .env("MCP_HTTP", mode);
        let (server, port) = Self::spawn(command);
        (server, port.expect("the test server names its port"))
    }

    /// Starts `command` and waits for its "listening on port N" line.
    fn spawn(mut command: Command) -> (Self, Option<u16>) {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut port = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some((_, after)) = line.split_once("listening on port") {
                port = after.trim().parse().ok();
                break;
            }
        }
        // Keep draining its stderr so it never blocks.
        std::thread::spawn(move || lines.for_each(drop));
        (HttpServer(child), port)
    }

    fn stop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A run that needs no tool call: the faux model answers at once.
fn answer_at_once(ws: &Workspace) -> assert_cmd::Command {
    let mut cmd = ws.faux(json!({"responses": [{"text": "never"}]}));
    cmd.args(["--no-stdin", "-q"]);
    cmd
}

#[test]
fn a_server_that_fails_to_start_ends_the_run_with_exit_8_naming_it() {
    let ws = Workspace::new();
    let cases = [
        (
            "gone=leash-no-such-mcp-server --flag",
            "leash: MCP server 'gone' cannot start 'leash-no-such-mcp-server': No such file",
        ),
        (
            "crash=sh -c 'echo listening >&2; echo config missing >&2; exit 3'",
            "leash: MCP server 'crash' exited (exit status: 3) before listing its tools; \
             its last stderr line: config missing",
        ),
        (
            // It starts, but the name of one of its tools cannot be offered.
            "a-server-name-of-thirty-two-char=node SERVER stdio",
            "longer than the providers' 64 characters",
        ),
    ];
    for (flag, expected) in cases {
        let flag = flag.replace("SERVER", &everything().display().to_string());
        let started = Instant::now();
        let output = answer_at_once(&ws)
            .args(["--mcp", &flag, "--mcp", &everything_flag("fine")])
            .arg("hi")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(8), "{flag}: {}", stderr(&output));
        assert!(
            last_line(&output).contains(expected),
            "{flag}: {}",
            last_line(&output)
        );
        assert!(stdout(&output).is_empty());
        assert!(started.elapsed() < Duration::from_secs(8), "{flag}");
    }
}

#[test]
fn a_server_that_never_answers_ends_the_run_with_exit_8_after_the_mcp_timeout() {
    let ws = Workspace::new();
    let pid_file = ws.path("mute.pid");
    let flag = format!(
        "mute=sh -c 'echo $$ > {}; exec sleep 30'",
        pid_file.display()
    );
    let started = Instant::now();
    let output = answer_at_once(&ws)
        .args(["--mcp-timeout", "1s", "--mcp", &flag])
        .arg("hi")
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(8), "{}", stderr(&output));
    assert_eq!(
        last_line(&output),
        "leash: MCP server 'mute' did not start and list its tools within --mcp-timeout 1s"
    );
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "{took:?}"
    );
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_gone(&[pid]);
}

#[test]
fn a_server_that_dies_mid_run_gives_an_error_result_and_the_run_goes_on() {
    let ws = Workspace::new();
    let output = ws
        .faux(json!({"responses": [
            {"toolCalls": [tool_call("mcp__t__die", json!({}))]},
            {"toolCalls": [tool_call("mcp__t__env", json!({}))]},
            {"text": "carried on"}
        ]}))
        .args([
            "--no-stdin",
            "--events",
            "jsonl",
            "--mcp",
            &test_server_flag("t"),
        ])
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "carried on\n");
    let notices: Vec<Value> = json_events(&output)
        .into_iter()
        .filter(|event| event["type"] == "notice")
        .collect();
    assert_eq!(notices[0]["message"], "MCP servers started: t (6 tools)");
    let ends: Vec<Value> = json_events(&output)
        .into_iter()
        .filter(|event| event["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 2);
    // The call it died in, and the next call, both say how it went.
    for end in &ends {
        assert_eq!(end["isError"], true, "{end}");
        assert_eq!(
            end["result"]["content"][0]["text"],
            "MCP server 't' exited (exit status: 9) during the call; \
             its last stderr line: dying on purpose"
        );
    }
}

/// leash with the test server (writing its pids) calling its `slow` tool,
/// as a child with its events read line by line.
fn slow_call(ws: &Workspace, extra: &[&str]) -> (Child, Vec<u32>) {
    let pid_file = ws.path("server.pid");
    let script = ws.script(json!({"responses": [
        {"toolCalls": [tool_call("mcp__t__slow", json!({}))]},
        {"text": "never"}
    ]}));
    let mut child = ws
        .child()
        .env("MCP_PID_FILE", &pid_file)
        .args(["--provider", "faux", "--faux-script"])
        .arg(script)
        .args([
            "--no-stdin",
            "--events",
            "jsonl",
            "--mcp",
            &test_server_flag("t"),
        ])
        .args(extra)
        .arg("hi")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = server_pids(&pid_file);
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|pid| alive(*pid)));
    // Wait until the slow call runs.
    let stderr = child.stderr.take().unwrap();
    for line in BufReader::new(stderr).lines() {
        if line.unwrap().contains("\"tool_execution_start\"") {
            break;
        }
    }
    (child, pids)
}

#[test]
fn the_timer_stops_the_servers_process_tree() {
    let ws = Workspace::new();
    let (mut child, pids) = slow_call(&ws, &["--timeout", "2s"]);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(124));
    assert_gone(&pids);
}

#[test]
fn sigterm_stops_the_servers_process_tree() {
    let ws = Workspace::new();
    let (mut child, pids) = slow_call(&ws, &["--timeout", "20s"]);
    let started = Instant::now();
    send(&child, "-TERM");
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_gone(&pids);
}

#[test]
fn sigterm_while_a_server_starts_stops_it() {
    let ws = Workspace::new();
    let pid_file = ws.path("mute.pid");
    let flag = format!(
        "mute=sh -c 'echo $$ > {}; exec sleep 30'",
        pid_file.display()
    );
    let script = ws.script(json!({"responses": [{"text": "never"}]}));
    let mut child = ws
        .child()
        .args(["--provider", "faux", "--faux-script"])
        .arg(script)
        .args(["--no-stdin", "-q", "--mcp-timeout", "20s", "--mcp", &flag])
        .arg("hi")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = server_pids(&pid_file);
    send(&child, "-TERM");
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert_gone(&pids);
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

#[test]
fn a_server_that_exits_on_end_of_input_after_its_start_timed_out_is_said_to_have_timed_out() {
    let ws = Workspace::new();
    // Never answers, and exits (0) when leash gives up and closes its stdin.
    let output = answer_at_once(&ws)
        .args([
            "--mcp-timeout",
            "1s",
            "--mcp",
            "eof=sh -c 'cat > /dev/null'",
        ])
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(8), "{}", stderr(&output));
    assert_eq!(
        last_line(&output),
        "leash: MCP server 'eof' did not start and list its tools within --mcp-timeout 1s"
    );
}

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

#[test]
fn a_normal_end_and_sigint_stop_the_servers_process_tree() {
    let ws = Workspace::new();
    let pid_file = ws.path("server.pid");
    let output = answer_at_once(&ws)
        .env("MCP_PID_FILE", &pid_file)
        .args(["--mcp", &test_server_flag("t")])
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_gone(&server_pids(&pid_file));

    let ws = Workspace::new();
    let (mut child, pids) = slow_call(&ws, &["--timeout", "20s"]);
    send(&child, "-INT");
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_gone(&pids);
}

#[test]
fn a_second_signal_while_the_servers_stop_still_kills_them() {
    let ws = Workspace::new();
    let leader_file = ws.path("leader.pid");
    let pid_file = ws.path("server.pid");
    // The group's leader ignores SIGTERM (and so does the sleep it runs
    // once the server is gone): only SIGKILL ends it.
    let flag = format!(
        "t=sh -c \"trap '' TERM; echo $$ > {}; node {}; sleep 300\"",
        leader_file.display(),
        mcp_dir().join("test-server.mjs").display()
    );
    everything();
    let script = ws.script(json!({"responses": [
        {"toolCalls": [tool_call("mcp__t__slow", json!({}))]},
        {"text": "never"}
    ]}));
    let mut child = ws
        .child()
        .env("MCP_PID_FILE", &pid_file)
        .args(["--provider", "faux", "--faux-script"])
        .arg(script)
        .args(["--no-stdin", "--events", "jsonl", "--mcp", &flag, "hi"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pids = server_pids(&pid_file);
    let stderr = child.stderr.take().unwrap();
    for line in BufReader::new(stderr).lines() {
        if line.unwrap().contains("\"tool_execution_start\"") {
            break;
        }
    }
    let leader: u32 = std::fs::read_to_string(&leader_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    pids.push(leader);
    for _ in 0..2 {
        send(&child, "-TERM");
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert_gone(&pids);
}
